"""ISO/IEC 15444-4 conformance: every Part-1 class-0 and class-1 case, and the HTJ2K streams.

Cases come from ../shared/conformance/MANIFEST.tsv (read by tests/conformance.py):
class 1 decodes every component; class 0 decodes component 0 alone, without
the inverse MCT, at the listed reduce level, and compares its 8 most
significant bits. A component passes when its peak error and MSE are within
the listed tolerances.

The HTJ2K rows (ISO/IEC 15444-15 streams of T.803, ``htj2k/`` and
``hifi_ht1_02``) are class-1 cases checked the same way. Streams that this
decoder cannot decode yet are listed in ``HT_UNSUPPORTED`` with what they
need; they must raise UnsupportedFeature naming it, and every other present
HT stream must pass.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import UnsupportedFeature, decode
from cinegpu.decode.codestream.header import parse_codestream

from conformance import CONFORMANCE, load_cases
from conftest import present
from pgx import read_pgx

if not (CONFORMANCE / "MANIFEST.tsv").exists():
    pytest.skip("../shared/conformance is not present beside the checkout", allow_module_level=True)

PART1 = [c for c in load_cases("part1") + load_cases("hifi/codestreams/hifi_p1")]
PRESENT = [c for c in PART1 if not c.missing]


def test_case_count():
    # 22 profile-0/1 codestreams + p0_07 (absent from the snapshot) + hifi_p1_02:
    # 26 class-0 rows (25 present), 24 class-1 rows (23 present).
    assert len(PART1) == 50
    assert len(PRESENT) == 48
    assert sum(c.klass == "class0" for c in PRESENT) == 25


BACKENDS = [
    "cpu",
    # the plain reference and auto (the CPU again without CUDA) run in CI's slow pass
    pytest.param("numpy", marks=pytest.mark.slow),
    pytest.param("auto", marks=pytest.mark.slow),  # the GPU where there is one
    pytest.param("cuda", marks=pytest.mark.gpu),  # skipped without CUDA (conftest.py)
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", PRESENT, ids=lambda c: c.id)
def test_conformance(case, backend):
    data = present(case.path, *(CONFORMANCE / r for r in case.references)).read_bytes()
    if case.klass == "class0":
        out = decode(data, reduce=case.reduce, components=[0], backend=backend, strict=True)
    else:
        out = decode(data, reduce=case.reduce, backend=backend, strict=True)
    assert len(out) >= len(case.references)
    precision = parse_codestream(data).siz.precision(0)
    for k, ref_name in enumerate(case.references):
        ref = read_pgx(CONFORMANCE / ref_name)
        got = out[k].astype(np.int64)
        if case.klass == "class0":
            got = got >> max(precision - 8, 0)
            if case.window:
                x0, y0, x1, y1 = case.window
                got = got[y0:y1, x0:x1]
        assert got.shape == ref.shape, f"component {k}"
        err = np.abs(got - ref)
        peak, mse = int(err.max()), float((err.astype(np.float64) ** 2).mean())
        assert peak <= case.peak[k], f"component {k}: peak {peak} > {case.peak[k]}"
        assert mse <= case.mse[k], f"component {k}: MSE {mse:.4f} > {case.mse[k]}"


HT = load_cases("htj2k") + load_cases("hifi/codestreams/hifi_ht1")
HT_PRESENT = [c for c in HT if not c.missing]
#: HT streams expected to raise UnsupportedFeature, by file name, with (a regex of) the
#: feature the error must name. Empty: every present HT stream decodes. A stream added here
#: must still be refused by name; one missing from it must pass its tolerances.
HT_UNSUPPORTED: dict[str, str] = {}


def test_htj2k_case_count():
    # 36 codestreams in htj2k/ (ds0_ht_*, ds0_hm_*, ds1_ht_*) + hifi_ht1_02, plus 4 rows of
    # streams left out of the snapshot (ds0_ht_07/08_b15/b16); ds0_ht_07_b11 is present but
    # its reference (c1p0_07) is not.
    assert len(HT) == 41
    assert len(HT_PRESENT) == 36
    assert {Path(c.file.split()[0]).name for c in HT if c.missing} == {
        "ds0_ht_07_b11.j2k", "ds0_ht_07_b15.j2k", "ds0_ht_07_b16.j2k",
        "ds0_ht_08_b15.j2k", "ds0_ht_08_b16.j2k"}
    assert set(HT_UNSUPPORTED) <= {Path(c.file).name for c in HT_PRESENT}


def _ht_id(case) -> str:
    return Path(case.file.split()[0]).stem


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", HT_PRESENT, ids=_ht_id)
def test_htj2k_conformance(case, backend):
    data = present(case.path, *(CONFORMANCE / r for r in case.references)).read_bytes()
    name = Path(case.file).name
    if name in HT_UNSUPPORTED:
        with pytest.raises(UnsupportedFeature, match=HT_UNSUPPORTED[name]):
            decode(data, reduce=case.reduce, backend=backend, strict=True)
        return
    out = decode(data, reduce=case.reduce, backend=backend, strict=True)
    assert len(out) >= len(case.references)
    for k, ref_name in enumerate(case.references):
        ref = read_pgx(CONFORMANCE / ref_name)
        got = out[k].astype(np.int64)
        assert got.shape == ref.shape, f"component {k}"
        err = np.abs(got - ref)
        peak, mse = int(err.max()), float((err.astype(np.float64) ** 2).mean())
        assert peak <= case.peak[k], f"component {k}: peak {peak} > {case.peak[k]}"
        assert mse <= case.mse[k], f"component {k}: MSE {mse:.4f} > {case.mse[k]}"


def test_htj2k_without_reference_decodes():
    # ds0_ht_07_b11 (2048 x 2048, 256 tiles, 8 layers): no reference in the snapshot, so
    # only its geometry is checked; the peers' cross-check is in test_htj2k_peers.py
    path = present(CONFORMANCE / "htj2k" / "codestreams" / "ds0_ht_07_b11.j2k")
    out = decode(path.read_bytes(), strict=True)
    assert [c.shape for c in out] == [(2048, 2048)] * 3
    assert all(c.dtype == np.int16 for c in out) and out[0].std() > 10
