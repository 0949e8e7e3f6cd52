"""The CPU decoder's per-frame paths against its per-tile ones.

``Decoder.entropy_decode`` reads every tile of a frame through tier-2 and tier-1 together
(:mod:`cinegpu.decode.frame_entropy`) and ``Decoder.reconstruct`` rebuilds a whole frame in one
compiled call (``reconstruct.frame_layout``); :func:`cinegpu.decode.tile.decode_tile` and
``reconstruct_tile`` do the same one tile at a time. Both must give the same samples, the same
tile reports (packets read, faults, concealed blocks) and the same errors, on the conformance
streams and on damaged copies of them, strict and resilient."""

from __future__ import annotations

import random
import types

import numpy as np
import pytest

from cinegpu.decode import tile as T
from cinegpu.decode.codestream.header import tile_part_ppm_headers
from cinegpu.decode.decoder import Decoder
from helpers.conformance import CONFORMANCE

# one tile; 4x4 tiles; PPM; PPT; tile-parts; 225 tiles; 257 components; ROI; HT
QUICK = ["part1/codestreams/p0_01.j2k", "part1/codestreams/p0_04.j2k",
         "part1/codestreams/p0_09.j2k", "part1/codestreams/p1_04.j2k", "part1/codestreams/p1_05.j2k",
         "part1/codestreams/p0_13.j2k", "part1/codestreams/p0_03.j2k", "htj2k/codestreams/ds0_ht_01_b11.j2k"]
pytestmark = pytest.mark.skipif(not (CONFORMANCE / "part1").is_dir(), reason="../shared/conformance is absent")


def _per_tile_entropy(self, prep, out=None):
    """Decoder.entropy_decode as it was: one decode_tile call per tile."""
    coeffs = np.empty(prep.size, np.int32) if out is None else out
    ppm = tile_part_ppm_headers(prep.cs)
    reports = [T.missing_tile_report(t, prep.cs.siz.num_tiles) for t in prep.missing]
    for plan, off in zip(prep.plans, prep.offsets):
        _, report = T.decode_tile(prep.cs, plan, prep.cs.tiles.get(plan.index), layers=prep.layers, ppm=ppm,
                                  policy=prep.policy, out=coeffs[off : off + plan.coeff_size])
        reports.append(report)
    return coeffs, reports


@pytest.fixture(scope="module")
def decoders():
    frame = Decoder("cpu")
    per_tile = Decoder("cpu")
    per_tile.frame_layout = lambda prep: None            # reconstruct_tile, tile by tile
    per_tile.entropy_decode = types.MethodType(_per_tile_entropy, per_tile)
    return frame, per_tile


def _outcome(decoder, data, **options):
    try:
        f = decoder.decode(data, **options)
    except Exception as exc:        # noqa: BLE001 (the error itself is compared)
        return f"{type(exc).__name__}: {exc}", None
    reports = [(r.tile, r.packets_read, r.packets_total, [str(x) for x in r.faults], r.concealed_blocks)
               for r in f.reports]
    return f.components, reports


def _same(decoders, data, **options):
    (a, ra), (b, rb) = (_outcome(d, data, **options) for d in decoders)
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert ra == rb
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.dtype == q.dtype and p.shape == q.shape and np.array_equal(p, q)


def _same_when_damaged(decoders, data, rng, copies):
    """:func:`_same` on ``copies`` damaged copies of ``data`` (1-4 bytes changed, three in ten
    also cut short), resilient and strict."""
    for _ in range(copies):
        m = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            m[rng.randrange(len(m))] = rng.randrange(256)
        if rng.random() < 0.3:
            m = m[: rng.randrange(len(m))]
        _same(decoders, bytes(m), strict=False)
        _same(decoders, bytes(m))


def _streams(names):
    paths = [CONFORMANCE / n for n in names]
    return [p for p in paths if p.exists()]


@pytest.mark.parametrize("path", _streams([n for n in QUICK if "p1_05" not in n]), ids=lambda p: p.stem)
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_frame_paths_equal_per_tile_paths(decoders, path):
    """(p1_05's 225 tiles take seconds tile by tile: its undamaged cases run in the slow pass)"""
    data = path.read_bytes()
    for options in (dict(), dict(reduce=1), dict(layers=1), dict(strict=False)):
        _same(decoders, data, **options)


@pytest.mark.parametrize("path", _streams([n for n in QUICK if "p1_05" not in n]), ids=lambda p: p.stem)
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_damaged_frames_fail_alike(decoders, path):
    """Bytes changed and streams cut: the same samples, reports or error, strict and resilient."""
    _same_when_damaged(decoders, path.read_bytes(), random.Random(path.stem), 6)


@pytest.mark.slow
def test_every_conformance_stream_and_many_damaged_copies(decoders):
    paths = sorted(CONFORMANCE.glob("*/codestreams/*.j2[kc]"))
    assert paths
    rng = random.Random(1)
    for path in paths:
        data = path.read_bytes()
        for options in (dict(), dict(reduce=1), dict(reduce=2), dict(layers=1), dict(strict=False)):
            _same(decoders, data, **options)
        _same_when_damaged(decoders, data, rng, 12)
