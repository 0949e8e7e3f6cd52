"""Fuzzing: mutated codestreams raise only CodestreamError, and never hang.

Issue 2, "Must show" 3: bad input raises a CodestreamError subclass (or a ValueError for bad
arguments) naming the problem and its byte offset, never another exception. Seed streams are the small
Part-1 conformance codestreams in ../shared/conformance (plus a few mutations
of the large ones) and small streams made here by ``opj_compress``. Each
mutation (bit flips, byte changes, truncations, marker-segment lengths, Psot,
SIZ fields, duplicated and removed segments, inserted bytes) is derived from
``random.Random(f"{seed}/{index}")`` so a failure names what reproduces it:

    from test_fuzz import mutate; data, what = mutate(seed_bytes, "p0_01/17")

Each mutated stream must decode or raise a :class:`CodestreamError`
subclass; nothing else (IndexError, numpy's ValueError, ZeroDivisionError,
MemoryError, numba errors...) and within ``TIME_LIMIT_S`` seconds each.
Truncated streams decoded in resilient mode (``strict=False``) keep the
intact stream's component shapes.
"""

from __future__ import annotations

import random
import struct
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import CodestreamError, decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder

from peers import Image, encode, have
from conftest import SHARED

CODESTREAMS = SHARED / "conformance" / "part1" / "codestreams"

#: Seconds one mutated stream may take to decode (or fail); 4x the intact decode for large streams.
TIME_LIMIT_S = 3.0
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
]


# --------------------------------------------------------------- mutations

def _segments(data: bytes) -> list[tuple[int, int, int]]:
    """(code, offset, length) of the marker segments of an intact stream."""
    return [m for m in parse_codestream(data).markers if m[2] > 0]


def mutate(data: bytes, key: str) -> tuple[bytes, str]:
    """One reproducible mutation of ``data`` named by ``key``; (bytes, description)."""
    rng = random.Random(key)
    segs = _segments(data)
    n = len(data)
    head = min(n, max(segs[-1][1] + segs[-1][2] + 2 if segs else 64, 64))  # main + first tile header
    kind = rng.choice(["flip", "flip", "flips", "byte", "byte", "truncate", "length", "length", "psot",
                       "siz", "segbyte", "segbyte", "dup", "remove", "insert"])
    b = bytearray(data)
    if kind in ("flip", "flips"):
        out = []
        for _ in range(1 if kind == "flip" else rng.randint(2, 6)):
            p = rng.randrange(head) if rng.random() < 0.6 else rng.randrange(n)
            bit = rng.randrange(8)
            b[p] ^= 1 << bit
            out.append(f"{p}:{bit}")
        return bytes(b), f"flip bits {' '.join(out)}"
    if kind == "byte":
        p = rng.randrange(head) if rng.random() < 0.6 else rng.randrange(n)
        v = rng.choice([0x00, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)])
        b[p] = v
        return bytes(b), f"byte {p} = 0x{v:02X}"
    if kind == "truncate":
        p = rng.randrange(1, n)
        return bytes(b[:p]), f"truncate at {p}"
    if kind == "length" and segs:
        code, off, length = rng.choice(segs)
        v = rng.choice([0, 1, 2, 3, length - 1, length + 1, length + 7, 0xFFFF, rng.randrange(65536)]) & 0xFFFF
        struct.pack_into(">H", b, off + 2, v)
        return bytes(b), f"length of 0x{code:04X} at {off}: {length} -> {v}"
    if kind == "psot":
        sots = [s for s in segs if s[0] == 0xFF90]
        if sots:
            code, off, _ = rng.choice(sots)
            old = struct.unpack_from(">I", b, off + 6)[0]
            v = rng.choice([0, 1, 12, 13, 14, old - 1, old + 1, old * 2, n, 0xFFFFFFFF, rng.randrange(1 << 32)])
            v &= 0xFFFFFFFF
            struct.pack_into(">I", b, off + 6, v)
            return bytes(b), f"Psot of SOT at {off}: {old} -> {v}"
    if kind == "siz":
        # Rsiz, Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz, XTOsiz, YTOsiz, Csiz, then per component
        fields = [(6, 2), (8, 4), (12, 4), (16, 4), (20, 4), (24, 4), (28, 4), (32, 4), (36, 4), (40, 2)]
        csiz = struct.unpack_from(">H", b, 40)[0]
        fields += [(42 + 3 * c + k, 1) for c in range(min(csiz, 4)) for k in range(3)]
        pos, size = rng.choice(fields)
        old = int.from_bytes(b[pos : pos + size], "big")
        top = (1 << (8 * size)) - 1
        v = rng.choice([0, 1, 2, old - 1, old + 1, old * 2, old // 2, top, top >> 1, rng.randrange(top + 1)])
        v = max(0, min(v, top))
        b[pos : pos + size] = v.to_bytes(size, "big")
        return bytes(b), f"SIZ field at {pos} ({size} bytes): {old} -> {v}"
    if kind == "segbyte" and segs:
        code, off, length = rng.choice(segs)
        p = off + 4 + rng.randrange(max(length - 2, 1))
        p = min(p, n - 1)
        v = rng.randrange(256)
        b[p] = v
        return bytes(b), f"byte {p} in segment 0x{code:04X} at {off} = 0x{v:02X}"
    if kind == "dup" and segs:
        code, off, length = rng.choice(segs)
        seg = data[off : off + 2 + length]
        return data[: off + 2 + length] + seg + data[off + 2 + length :], f"duplicate 0x{code:04X} at {off}"
    if kind == "remove" and segs:
        code, off, length = rng.choice([s for s in segs if s[1] > 2] or segs)
        return data[:off] + data[off + 2 + length :], f"remove 0x{code:04X} at {off}"
    p = rng.randrange(n)
    junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return data[:p] + junk + data[p:], f"insert {junk.hex()} at {p}"


def check_one(data: bytes, *, strict: bool = True, limit: float = TIME_LIMIT_S, **kw) -> tuple[str | None, float]:
    """(None or what went wrong, seconds) for decoding ``data``."""
    t0 = time.perf_counter()
    try:
        if strict:
            decode(data, **kw)
        else:
            Decoder().decode(data, strict=False, **kw)
    except CodestreamError:
        pass
    except Exception as exc:  # noqa: BLE001 - anything else is the failure we look for
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{type(exc).__name__}: {exc} ({Path(tb.filename).name}:{tb.lineno})", time.perf_counter() - t0
    dt = time.perf_counter() - t0
    if dt > limit:
        return f"took {dt:.1f} s (limit {limit:.1f} s)", dt
    return None, dt


def fuzz(name: str, data: bytes, count: int) -> None:
    decode(data)  # the intact stream decodes (and numba is compiled) first
    t0 = time.perf_counter()
    decode(data)
    limit = max(TIME_LIMIT_S, 4 * (time.perf_counter() - t0))  # large streams (p1_05: ~2.4 s) get 4x their own time
    failures, slowest = [], (0.0, "")
    for i in range(count):
        key = f"{name}/{i}"
        mutated, what = mutate(data, key)
        strict = i % 4 != 3  # every 4th mutation in resilient mode
        problem, dt = check_one(mutated, strict=strict, limit=limit)
        slowest = max(slowest, (dt, key))
        if problem:
            failures.append(f"{key} [{what}; strict={strict}]: {problem}")
    summary = f"{len(failures)} of {count} mutations of {name} failed (slowest {slowest[0]:.2f} s: {slowest[1]})"
    assert not failures, summary + ":\n" + "\n".join(failures[:15])


# ------------------------------------------------------------------- tests

def test_seed_count():
    if not CONFORMANCE:
        pytest.skip(f"{CODESTREAMS} is not present beside the checkout")
    assert len(CONFORMANCE) == 22
    assert sum(p.stat().st_size <= SMALL for p in CONFORMANCE) == 15
    assert len(OPJ_SEEDS) == 6


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
def test_fuzz_opj(opj_streams, name):
    fuzz(name, opj_streams[name], MUTATIONS_OPJ)


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
            except Exception as exc:  # noqa: BLE001
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
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{name} flips/{i}: {type(exc).__name__}: {exc}")
                continue
            got = [c.shape for c in frame.components]
            if got != shapes:
                failures.append(f"{name} flips/{i}: shapes {got}, intact {shapes}")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:20])


# -------------------------------------------------------------- hypothesis

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

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
    segs = _segments(data)
    main_end = next(off for code, off, _ in segs if code == 0xFF90)
    for prefix in (data[: segs[1][1]], data[:main_end]):
        problem, _ = check_one(prefix + tail)
        assert problem is None, f"prefix {len(prefix)} bytes + {tail.hex()}: {problem}"
