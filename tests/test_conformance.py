"""ISO/IEC 15444-4 Part-1 conformance: every class-0 and class-1 case.

Cases come from ../shared/conformance/MANIFEST.tsv (see MANIFEST_NOTES.md):
class 1 decodes every component; class 0 decodes component 0 alone, without
the inverse MCT, at the listed reduce level, and compares its 8 most
significant bits. A component passes when its peak error and MSE are within
the listed tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import UnsupportedFeature, decode
from cinegpu.decode.codestream.header import parse_codestream

from conformance import CONFORMANCE, load_cases
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


def _cuda_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


BACKENDS = [
    "cpu",
    "numpy",
    "auto",  # the CPU without CUDA (CI), the GPU where there is one
    pytest.param("cuda", marks=[pytest.mark.gpu,
                                pytest.mark.skipif(not _cuda_available(), reason="no CUDA device / CuPy")]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", PRESENT, ids=lambda c: c.id)
def test_conformance(case, backend):
    data = case.path.read_bytes()
    if case.klass == "class0":
        out = decode(data, reduce=case.reduce, components=[0], backend=backend)
    else:
        out = decode(data, reduce=case.reduce, backend=backend)
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


HT = sorted((CONFORMANCE / "htj2k" / "codestreams").glob("*.j2k")) + [
    CONFORMANCE / "hifi" / "codestreams" / "hifi_ht1_02.j2k"
]


@pytest.mark.parametrize("path", HT, ids=lambda p: p.stem)
def test_htj2k_is_refused_by_name(path):
    with pytest.raises(UnsupportedFeature, match="15444-15"):
        decode(path.read_bytes())
