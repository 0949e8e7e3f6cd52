"""Fuzzing: mutated codestreams raise only CodestreamError, and never hang.

Issue 2, "Must show" 3: bad input raises a CodestreamError subclass (or a ValueError for bad
arguments) naming the problem and its byte offset, never another exception. Seed streams are the small
Part-1 conformance codestreams in ../shared/conformance (plus a few mutations
of the large ones) and small streams made here by ``opj_compress``. Each
mutation (bit flips, byte changes, truncations, marker-segment lengths, Psot,
SIZ fields, duplicated and removed segments, inserted bytes) is derived from
``random.Random(f"{seed}/{index}")`` so a failure names what reproduces it:

    from helpers.fuzz import mutate; data, what = mutate(seed_bytes, "p0_01/17")

Each mutated stream must decode or raise a :class:`CodestreamError`
subclass; nothing else (IndexError, numpy's ValueError, ZeroDivisionError,
MemoryError, numba errors...) and within ``TIME_LIMIT_S`` seconds each.
Truncated streams decoded in resilient mode (``strict=False``) keep the
intact stream's component shapes.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from cinegpu.decode import CodestreamError, decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from conftest import SHARED
from helpers.fuzz import TIME_LIMIT_S, check_one, fuzz, marker_segments, mutate
from helpers.peers import Image, encode, have

CODESTREAMS = SHARED / "conformance" / "part1" / "codestreams"

#: Conformance streams up to this size get the full number of mutations.
SMALL = 40_000
MUTATIONS_SMALL = 220
MUTATIONS_LARGE = 12
MUTATIONS_OPJ = 160

CONFORMANCE = sorted(CODESTREAMS.glob("*.j2k")) if CODESTREAMS.is_dir() else []

#: Small streams made by opj_compress: (name, image, args).
OPJ_SEEDS = [
    ("opj-rgb-tiles-sop-eph", Image(w=33, h=29), ["-n", "3", "-t", "17,13", "-SOP", "-EPH", "-r", "8,2,1"]),
    ("opj-gray-modes-I", Image(w=31, h=27, n=1), ["-n", "3", "-M", "63", "-I", "-b", "8,8"]),
    ("opj-poc-prec", Image(w=35, h=30), ["-n", "3", "-c", "[16,16]", "-POC", "T1=0,0,1,3,3,CPRL/T1=0,0,2,3,3,LRCP", "-r", "6,1"]),
    ("opj-tp-tlm-plt", Image(w=40, h=30), ["-n", "3", "-t", "20,15", "-TP", "R", "-TLM", "-PLT", "-d", "3,5"]),
    ("opj-sub-roi", Image(w=37, h=23, n=2, bits=12, fmt="raw", sub=((1, 1), (2, 2)), seed=3),
     ["-n", "2", "-ROI", "c=0,U=3"]),
    ("opj-signed-pgx", Image(w=29, h=31, n=1, bits=12, signed=True, fmt="pgx", seed=4), ["-n", "4", "-p", "RPCL"]),
    ("opj-20bit-pgx", Image(w=31, h=27, n=1, bits=20, fmt="pgx", seed=5), ["-n", "3", "-r", "6,1", "-I"]),
]


# --------------------------------------------------------------- mutations

# ------------------------------------------------------------------- tests

def test_seed_count():
    if not CONFORMANCE:
        pytest.skip(f"{CODESTREAMS} is not present beside the checkout")
    assert len(CONFORMANCE) == 22
    assert sum(p.stat().st_size <= SMALL for p in CONFORMANCE) == 15
    assert len(OPJ_SEEDS) == 7


@pytest.mark.slow
@pytest.mark.skipif(not CONFORMANCE, reason="../shared/conformance is not present beside the checkout")
@pytest.mark.parametrize("path", CONFORMANCE, ids=lambda p: p.stem)
def test_fuzz_conformance(path):
    data = path.read_bytes()
    fuzz(path.stem, data, MUTATIONS_SMALL if len(data) <= SMALL else MUTATIONS_LARGE)


@pytest.fixture(scope="module")
def opj_streams(tmp_path_factory):
    if not have("opj_compress"):
        pytest.skip("opj_compress is not installed")
    out = {}
    for name, img, args in OPJ_SEEDS:
        folder = tmp_path_factory.mktemp(name)
        out[name] = encode("opj", img, args, folder).read_bytes()
    return out


@pytest.mark.parametrize("name", [s[0] for s in OPJ_SEEDS])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_fuzz_opj(opj_streams, name):
    fuzz(name, opj_streams[name], MUTATIONS_OPJ)


#: Mutations of each seed stream decoded with a decode area (test_fuzz_areas).
MUTATIONS_AREA = 60


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::cinegpu.decode.errors.LenientWarning")
def test_fuzz_areas(opj_streams):
    """Mutated streams decoded with a decode area (its tiles alone, a mask of their code-blocks):
    a CodestreamError, or a ValueError for an area the mutated SIZ puts outside the image;
    nothing else, nothing slow."""
    problems = []
    for name, data in _seed_streams(opj_streams).items():
        for i in range(MUTATIONS_AREA):
            key = f"{name}/area{i}"
            mutated, what = mutate(data, key)
            rng = random.Random(key)
            siz = parse_codestream(data).siz
            x0, y0 = rng.randrange(siz.XOsiz, siz.Xsiz), rng.randrange(siz.YOsiz, siz.Ysiz)
            area = (x0, y0, rng.randint(x0 + 1, siz.Xsiz), rng.randint(y0 + 1, siz.Ysiz))
            t0 = time.perf_counter()
            try:
                decode(mutated, area=area, reduce=rng.choice([0, 0, 1]), strict=rng.random() < 0.5)
            except CodestreamError:
                pass
            except ValueError as exc:
                if "decode area" not in str(exc):
                    problems.append(f"{key} [{what}] area {area}: {exc!r}")
            except Exception as exc:  # noqa: BLE001 - anything else is the failure looked for
                problems.append(f"{key} [{what}] area {area}: {type(exc).__name__}: {exc}")
            if time.perf_counter() - t0 > TIME_LIMIT_S:
                problems.append(f"{key} [{what}] area {area}: took {time.perf_counter() - t0:.1f} s")
    assert not problems, "\n".join(problems[:15])


def _seed_streams(opj_streams) -> dict[str, bytes]:
    out = dict(opj_streams)
    out.update({p.stem: p.read_bytes() for p in CONFORMANCE if p.stat().st_size <= SMALL})
    return out


@pytest.mark.slow
def test_resilient_truncation_keeps_shapes(opj_streams):
    """Cut at many points: resilient decoding keeps every component's shape.

    A cut inside the main header may raise CodestreamError; a cut after it
    must not raise, and the frame must report the damage.
    """
    failures = []
    for name, data in sorted(_seed_streams(opj_streams).items()):
        shapes = [c.shape for c in decode(data)]
        cs = parse_codestream(data)
        first_sot = min(p.offset for t in cs.tiles.values() for p in t.parts)
        rng = random.Random(name)
        cuts = sorted({*np.linspace(1, len(data) - 1, 24).astype(int).tolist(),
                       *(rng.randrange(first_sot, len(data)) for _ in range(16)),
                       first_sot, first_sot + 1, first_sot + 12, len(data) - 2, len(data) - 1})
        for cut in cuts:
            t0 = time.perf_counter()
            try:
                frame = Decoder().decode(data[:cut], strict=False)
            except CodestreamError as exc:
                if cut > first_sot:
                    failures.append(f"{name} cut at {cut} (tile data from {first_sot}): raised {exc!r}")
                continue
            except Exception as exc:  # any exception is a finding, recorded
                failures.append(f"{name} cut at {cut}: {type(exc).__name__}: {exc}")
                continue
            dt = time.perf_counter() - t0
            got = [c.shape for c in frame.components]
            if got != shapes:
                failures.append(f"{name} cut at {cut}: shapes {got}, intact {shapes}")
            if dt > TIME_LIMIT_S:
                failures.append(f"{name} cut at {cut}: {dt:.1f} s")
            if cut < len(data) - 2 and not (frame.damaged or frame.warnings):
                failures.append(f"{name} cut at {cut} of {len(data)}: no damage reported")
    kinds = {k: sum(k in f for f in failures) for k in ("raised", "Error:", "shapes", "no damage", " s")}
    assert not failures, f"{len(failures)} failures {kinds}:\n" + "\n".join(failures[:40])


@pytest.mark.slow
def test_resilient_flips_in_tile_data(opj_streams):
    """Bit flips in coded data (after the headers): resilient decoding returns
    the intact shapes, with at most the damaged tiles reported."""
    failures = []
    for name, data in sorted(_seed_streams(opj_streams).items()):
        shapes = [c.shape for c in decode(data)]
        cs = parse_codestream(data)
        bodies = [(p.start, p.end) for t in cs.tiles.values() for p in t.parts if p.end > p.start]
        rng = random.Random("flips/" + name)
        for i in range(12):
            b = bytearray(data)
            start, end = rng.choice(bodies)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(start, end)] ^= 1 << rng.randrange(8)
            try:
                frame = Decoder().decode(bytes(b), strict=False)
            except Exception as exc:  # any exception is a finding, recorded
                failures.append(f"{name} flips/{i}: {type(exc).__name__}: {exc}")
                continue
            got = [c.shape for c in frame.components]
            if got != shapes:
                failures.append(f"{name} flips/{i}: shapes {got}, intact {shapes}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:20])


# -------------------------------------------------------------- hypothesis

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402  (after importorskip: hypothesis)
from hypothesis import strategies as st  # noqa: E402  (after importorskip: hypothesis)

_SMALL_SEEDS = ["p0_11", "p0_12", "p1_07", "p0_09", "p0_14", "p1_01"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    which=st.sampled_from(_SMALL_SEEDS),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.floats(0, 1, exclude_max=True)),
    reduce=st.integers(0, 2),
    layers=st.one_of(st.none(), st.integers(1, 3)),
)
def test_hypothesis_edits(which, edits, cut, reduce, layers):
    path = CODESTREAMS / f"{which}.j2k"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    b = bytearray(path.read_bytes())
    for where, value in edits:
        b[int(where * len(b))] = value
    if cut is not None:
        b = b[: max(1, int(cut * len(b)))]
    problem, _ = check_one(bytes(b), reduce=reduce, layers=layers)
    assert problem is None, f"{which} edits={edits} cut={cut} reduce={reduce} layers={layers}: {problem}"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.binary(min_size=0, max_size=200))
def test_hypothesis_after_soc_siz(tail):
    """Arbitrary bytes after an intact SOC + SIZ (+ COD + QCD) prefix."""
    path = CODESTREAMS / "p0_11.j2k"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    data = path.read_bytes()
    segs = marker_segments(data)
    main_end = next(off for code, off, _ in segs if code == 0xFF90)
    for prefix in (data[: segs[1][1]], data[:main_end]):
        problem, _ = check_one(prefix + tail)
        assert problem is None, f"prefix {len(prefix)} bytes + {tail.hex()}: {problem}"


#: Seeds of the differential harness whose streams are edited structurally, then mutated
#: (test_fuzz_structural_edits).
STRUCTURAL_SEEDS = range(60_100, 60_160)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::cinegpu.decode.errors.LenientWarning")
def test_fuzz_structural_edits(tmp_path):
    """Other tools' streams edited as damaged files come (tests/helpers/structural.py: markers
    added, tile-parts dropped, repeated, swapped, cut), then mutated, decoded strict and lenient:
    a CodestreamError or a picture, nothing else, nothing slow (a SIZ of 29 bits under the MCT
    raised a ValueError here)."""
    import shutil

    from helpers.differential import ENCODERS, available, made_streams
    from helpers.structural import edits

    tools = tuple(t for t in ENCODERS if t != "cinegpu" and available(t))
    if not tools:
        pytest.skip("none of opj_compress, grk_compress, ojph_compress and ffmpeg is installed")
    problems, decoded = [], 0
    for seed, _, data, folder in made_streams(STRUCTURAL_SEEDS, tools, tmp_path, cut_share=0.0):
        shutil.rmtree(folder)
        try:
            edited = list(edits(data, seed))
        except CodestreamError:
            continue        # a stream we refuse intact (the differential tests judge it)
        for name, stream in edited:
            for k in range(3):
                try:
                    mutated, what = mutate(stream, f"{seed}/{name}/{k}")
                except CodestreamError:     # mutate reads the segments, strictly: the edit as it is
                    mutated, what = stream, "no mutation"
                for strict in (True, False):
                    decoded += 1
                    problem, _ = check_one(mutated, strict=strict)
                    if problem:
                        problems.append(f"seed {seed}, {name}, {what}, strict={strict}: {problem}")
    assert decoded > 1_000
    assert not problems, "\n".join(problems[:15])
