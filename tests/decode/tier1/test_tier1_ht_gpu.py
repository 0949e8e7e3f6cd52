"""HT code-blocks (ITU-T T.814) on the CUDA tier-1 decoder against numba, bit for bit.

The kernel's HT path (decode/tier1/cuda/ht_decode.cuh, called by tier1.cu) runs on the two back
ends of test_tier1_gpu.py: "cuda" (the GPU; marked gpu) and "host" (tier1.cu built for the host
by g++).  Compared with numba's decode_codeblocks: the status and every sample of `out`.

Blocks: the HT encoder's cleanup segments (encode/tier1/ht.py) of every shape class (1 x 1,
4 x 1024, 1024 x 4, 64 x 64, odd sizes) at planes 0..29 behind placeholder passes, with 1, 2
or 3 passes (refinement segments of random bytes: any bytes are SigProp / MagRef data), with
and without the vertically causal bit, ROI; every truncation point; random bytes; HT and EBCOT
rows in one table; the real HT blocks of the Part-15 conformance streams and of the IMF HTJ2K
sample, whole and mutated (test_htj2k_fuzz's mutations).  Bigger sweeps are marked slow.  The
last test decodes every Part-15 conformance stream with Decoder("cuda") against the CPU.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cinegpu.decode import tier1 as t1
from cinegpu.encode.tier1 import encode_codeblock, segments
from cinegpu.encode.tier1.ht import ht_encode_block, make_ht_enc_scratch
from conftest import CONFORMANCE, DCP_SAMPLES, cuda_or_host
from helpers.fuzz import ht_blocks, ht_layout, ht_stream_path, mutate_ht_block
from helpers.tier1_decoder import Batch, compare, decode_cuda, decode_host

HT = t1.CBLK_HT
HT_STREAMS = CONFORMANCE / "htj2k" / "codestreams"
IMF_HT = DCP_SAMPLES / "photon-imf-htj2k-1080p"
needs_ht_streams = pytest.mark.skipif(not HT_STREAMS.is_dir(), reason="../shared/conformance is absent")
#: every Part-15 conformance stream (36 in ../shared)
ALL_STREAMS = sorted(p.stem for p in HT_STREAMS.glob("*.j2k")) if HT_STREAMS.is_dir() else []

#: (h, w): every shape class of T.800 A.6.1 (sides <= 1024, area <= 4096), odd sizes among them
SHAPES = [(1, 1), (1, 2), (2, 1), (3, 3), (4, 1024), (1024, 4), (64, 64), (5, 7), (13, 9),
          (33, 31), (1, 37), (37, 1), (3, 64), (63, 65), (2, 2048 // 2)]


#: the kernel on the GPU, or compiled for the host (as test_tier1_gpu.py's fixture)
backend = cuda_or_host(decode_cuda, decode_host)


def ht_cleanup(rng, shape, plane, bits, density):
    """(cleanup bytes, K) of a random block coded by the HT encoder at `plane`, its magnitudes
    below 2^bits (bits <= 30), or None when nothing is significant at that plane."""
    h, w = shape
    mag = rng.integers(0, 1 << bits, shape, dtype=np.int64) * (rng.random(shape) < density)
    v = np.where(rng.random(shape) < 0.5, -mag, mag).astype(np.int32)
    out = np.zeros(w * h * 5 + 64, np.uint8)
    n = ht_encode_block(v.ravel(), 0, w, w, h, plane, out, 0, *make_ht_enc_scratch())
    assert n >= 0, "the encoder's segment is too long"
    return (bytes(out[:n]), bits) if n else None


def add_ht(batch, rng, shape, plane, bits, density, nref, style=HT, roishift=0, placeholders=None):
    """A cleanup at `plane` (after K - 1 - plane placeholder sets, K = bits) and `nref`
    refinement passes of random bytes; False when the block has nothing at that plane."""
    coded = ht_cleanup(rng, shape, plane, bits, density)
    if coded is None:
        return False
    cup, k = coded
    t = k - 1 - plane if placeholders is None else placeholders
    lengths, passes, data = [len(cup)], [3 * t + 1], cup
    if nref:
        ref = rng.bytes(int(rng.integers(0, 2 * shape[0] * shape[1] // 8 + 3)))
        lengths.append(len(ref))
        passes.append(nref)
        data += ref
    batch.add(np.frombuffer(data, np.uint8), lengths, passes, shape, t + plane + 1,
              int(rng.integers(0, 4)), style, roishift)
    return True


def test_ht_shapes_planes_and_passes(backend):
    """Every shape, planes 0..29, 1 / 2 / 3 passes, vertically causal or not, ROI."""
    rng = np.random.default_rng(1)
    batch = Batch(stride=1024)
    planes = list(range(30))
    for s, shape in enumerate(SHAPES):
        for nref in (0, 1, 2):
            for vcausal in (0, t1.CBLK_VCAUSAL):
                plane = planes[(3 * s + nref + vcausal) % 30]
                bits = int(rng.integers(plane + 1, 31))
                add_ht(batch, rng, shape, plane, bits, [1.0, 0.3, 0.02][nref], nref,
                       HT | vcausal, roishift=int(rng.integers(0, 3)) * (s % 5 == 0))
    for plane in planes:  # each plane with the most magnitude bits it can hold
        add_ht(batch, rng, (16, 16), plane, 30, 0.5, plane % 3)
    status, out = batch.compare(backend)
    assert out.any()
    # refinement after a cleanup at plane 0 is flagged (0x01); nothing else may fail
    assert not (status & ~t1.STATUS_TOO_MANY_PASSES).any()


def test_ht_every_truncation_point(backend):
    """A block's cleanup and refinement segments cut at every length, and extra passes."""
    rng = np.random.default_rng(2)
    batch = Batch(stride=64)
    for shape, nref in [((9, 7), 2), ((16, 16), 1), ((4, 30), 2), ((2, 2), 0)]:
        cup, k = ht_cleanup(rng, shape, 2, 12, 0.6)
        ref = rng.bytes(40)
        for n in range(len(cup) + 1):
            batch.add(np.frombuffer(cup[:n] + ref, np.uint8), [n, len(ref)], [1, nref], shape,
                      3, 0, HT)
        for n in range(len(ref) + 1):
            batch.add(np.frombuffer(cup + ref[:n], np.uint8), [len(cup), n], [1, nref], shape,
                      3, 0, HT | t1.CBLK_VCAUSAL)
        for passes in ([1, 3], [4, 2], [2, 1], [0, 1], [3, 1], [1, 0]):  # odd pass counts
            batch.add(np.frombuffer(cup + ref, np.uint8), [len(cup), len(ref)], passes, shape,
                      k - 1, 1, HT)
    status, _ = batch.compare(backend)
    assert (status & t1.STATUS_HT).any() and (status == 0).any()


def test_ht_scup_limits(backend):
    """Scup (the last 12 bits of the cleanup segment, T.814 7.1) at and past its limits."""
    rng = np.random.default_rng(7)
    batch = Batch(stride=64)
    for lcup, scup in [(4100, 4079), (4100, 4080), (4100, 4095), (4079, 4079), (30, 30),
                       (30, 31), (30, 2), (30, 1), (30, 0), (2, 2), (1, 1)]:
        coded = bytearray(rng.bytes(lcup))
        coded[-1] = scup >> 4
        if lcup >= 2:
            coded[-2] = (coded[-2] & 0xF0) | (scup & 0xF)
        batch.add(np.frombuffer(bytes(coded), np.uint8), [lcup], [1], (32, 32), 12, 0, HT)
    status, _ = batch.compare(backend)
    bad = [1, 2, 5, 7, 8, 10]  # Scup > 4079, Scup > Lcup, Scup < 2, Lcup < 2: nothing decoded
    assert (status[bad] == t1.STATUS_HT).all()


def random_ht_rows(rng, batch, count, max_side=40):
    """Rows of random bytes with HT styles; half of the cleanups get a plausible Scup."""
    for _ in range(count):
        h, w = int(rng.integers(1, max_side + 1)), int(rng.integers(1, max_side + 1))
        nseg = int(rng.integers(0, 4))
        seg = rng.integers(0, 200, nseg)
        coded = bytearray(rng.bytes(int(seg.sum())))
        if nseg and seg[0] >= 2 and rng.random() < 0.5:
            scup = int(rng.integers(2, min(int(seg[0]), 4079) + 1))
            coded[seg[0] - 1] = scup >> 4
            coded[seg[0] - 2] = (coded[seg[0] - 2] & 0xF0) | (scup & 0xF)
        style = HT | int(rng.choice([0, t1.CBLK_VCAUSAL, t1.CBLK_HT_MIXED, 0x3F]))
        batch.add(np.frombuffer(bytes(coded), np.uint8), seg, rng.integers(0, 7, nseg), (h, w),
                  int(rng.integers(0, 32)), int(rng.integers(0, 4)), style,
                  int(rng.integers(0, 3)))


@pytest.mark.parametrize("flags_in", ["shared", "global"])
def test_ht_random_bytes(backend, flags_in):
    rng = np.random.default_rng(3)
    batch = Batch(stride=64)
    random_ht_rows(rng, batch, 300)
    status, _ = batch.compare(backend, flags_in=flags_in)
    assert (status & t1.STATUS_HT).any() and (status == 0).any()


def test_ht_and_ebcot_rows_in_one_table(backend):
    rng = np.random.default_rng(4)
    batch = Batch(stride=128)
    for i, shape in enumerate([(64, 64), (5, 7), (1, 1), (32, 32), (17, 3), (3, 17)]):
        v = rng.integers(-500, 500, shape).astype(np.int32)
        style = [0, t1.CBLK_BYPASS, t1.CBLK_VCAUSAL, t1.CBLK_RESET | t1.CBLK_TERMALL][i % 4]
        coded, rates, _, num_bps = encode_codeblock(v, i % 4, style)
        batch.add(coded, *segments(rates, style), shape, num_bps, i % 4, style)
        add_ht(batch, rng, shape, i % 5, 14, 0.5, i % 3, HT | (style & t1.CBLK_VCAUSAL))
    random_ht_rows(rng, batch, 20)
    status, out = batch.compare(backend, interleave=True)
    assert out.any()


def _tile_calls(data: bytes):
    """Each tile's (coded, table, seg_lengths, seg_passes, out size) from the decoder's tier-2."""
    from cinegpu.decode.decoder import Decoder

    d = Decoder("cpu")
    segs, _ = d.tier2(d.prepare(data))
    for s in segs:
        t = s.table
        if not t.shape[0]:
            continue
        rows = np.maximum(t[:, t1.CB_HEIGHT] - 1, 0)
        end = t[:, t1.CB_OUT] + rows * t[:, t1.CB_STRIDE] + t[:, t1.CB_WIDTH]
        yield s.coded, t, s.seg_lengths, s.seg_passes, int(end.max())


@needs_ht_streams
def test_stream_count():
    assert len(ALL_STREAMS) == 36 and set(QUICK_STREAMS) <= set(ALL_STREAMS) | {"hifi_ht1_02"}


#: Part-15 streams whose blocks the quick test takes: SigProp/MagRef, vertically causal, mixed
QUICK_STREAMS = ["ds0_ht_01_b11", "ds1_ht_06_b11", "ds0_hm_15_b8", "ds0_ht_16_b11", "hifi_ht1_02"]


def _compare_mutated_blocks(backend, name, data, *, blocks, trials):
    """``trials`` rounds of up to ``blocks`` of the stream's HT blocks (picked once), each
    mutated as test_htj2k_fuzz does, laid out as one table and compared on ``backend``."""
    rows, coded = ht_blocks(data)
    if not rows:
        return
    picks = random.Random(name).sample(range(len(rows)), min(len(rows), blocks))
    for trial in range(trials):
        mutated = [mutate_ht_block(random.Random(f"{name}/{trial}/{b}"), rows[b], coded[b])
                   for b in picks]
        compare(backend, *ht_layout([m[0] for m in mutated], [m[1] for m in mutated]))


@needs_ht_streams
@pytest.mark.parametrize("name", QUICK_STREAMS)
def test_ht_conformance_blocks(backend, name):
    """Real HT blocks, whole (status 0) and mutated as test_htj2k_fuzz does."""
    for coded, table, sl, sp, size in _tile_calls(ht_stream_path(name).read_bytes()):
        status, _ = compare(backend, coded, table, sl, sp, size)
        assert not status.any()
    _compare_mutated_blocks(backend, name, ht_stream_path(name).read_bytes(), blocks=40, trials=8)


@pytest.mark.slow
@needs_ht_streams
@pytest.mark.parametrize("name", ALL_STREAMS)
def test_ht_conformance_blocks_fuzz(backend, name):
    """Every Part-15 stream's tiles, and a few hundred mutations of its blocks."""
    data = (HT_STREAMS / f"{name}.j2k").read_bytes()
    for coded, table, sl, sp, size in _tile_calls(data):
        compare(backend, coded, table, sl, sp, size)
    _compare_mutated_blocks(backend, name, data, blocks=60, trials=6)


@pytest.mark.slow
def test_ht_random_sweep(backend):
    """Thousands of random HT rows, and encoder blocks at every plane and shape."""
    rng = np.random.default_rng(6)
    for _ in range(10):
        batch = Batch(stride=1024)
        random_ht_rows(rng, batch, 500, max_side=64)
        for shape in SHAPES:
            plane = int(rng.integers(0, 30))
            add_ht(batch, rng, shape, plane, int(rng.integers(plane + 1, 31)), rng.random(),
                   int(rng.integers(0, 3)), HT | int(rng.choice([0, t1.CBLK_VCAUSAL])))
        batch.compare(backend)


@pytest.mark.slow
@pytest.mark.skipif(not IMF_HT.is_dir(), reason="../shared/dcp-samples is absent")
def test_ht_imf_frame(backend):
    """A 1080p IMF HTJ2K frame's tiles."""
    from cinegpu.media import open_source

    with open_source(IMF_HT) as src:
        data = bytes(src.frame(7))
    for coded, table, sl, sp, size in _tile_calls(data):
        assert table[:, t1.CB_STYLE].any()
        status, out = compare(backend, coded, table, sl, sp, size)
        assert not status.any() and out.any()


# -- the whole decoder ------------------------------------------------------------------------

@pytest.mark.gpu
@needs_ht_streams
@pytest.mark.parametrize("name", ALL_STREAMS)
def test_part15_streams_gpu_tier1_match_the_cpu(name):
    """Decoder("cuda") with the GPU tier-1 gives the CPU decoder's samples exactly."""
    from cinegpu.decode.decoder import Decoder

    data = (HT_STREAMS / f"{name}.j2k").read_bytes()
    gpu = Decoder("cuda")
    assert gpu.gpu_tier1 and gpu.tier1_on_gpu(gpu.prepare(data))
    want = Decoder("cpu").decode(data).components
    got = gpu.decode(data).components
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape and g.dtype == w.dtype, f"component {k}"
        np.testing.assert_array_equal(g, w, err_msg=f"component {k}")
