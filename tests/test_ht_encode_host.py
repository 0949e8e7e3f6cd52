"""The HT cleanup-pass encoding kernel (encode/cuda/ht_encode.cu, ht_enc_blocks; T.814
clause 7) compiled as C++ for the host (encode/cuda/ht_encode_host.cpp, g++) against its
numba twin (encode/tier1/ht.py), byte for byte: every block's segment and length against
ht_encode_block (the whole output buffer compared, so a byte written outside a segment
fails too), and the wrapper's host steps (encode/tier1/ht_gpu_plan.py) against
ht_encode_rows.  Blocks of every width x height in 1..64 and the 1024-long shapes, planes
0, 1, 5, 20, 29, empty blocks, sign-only blocks, magnitudes up to 2^31 - 1, illegal sizes
(HT_TOO_LONG from both), grids with more and fewer threads than blocks, and the tiles of a
real frame; the final copy (ht_gather) against the host gather.  A deliberately wrong table
must change the bytes.  Skipped without g++.

Legal blocks cannot reach Scup > 4079 (MEL + VLC of 4096 samples stay below ~1.4 KB), so
the too-long status is met through illegal block sizes, which both twins refuse with it.
"""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode.tier1.codeblock import CB_COLUMNS, CB_HEIGHT, CB_OUT, CB_STRIDE, CB_WIDTH
from cinegpu.encode.tier1.ht import HT_TOO_LONG, ht_encode_block, ht_encode_rows, \
    make_ht_enc_scratch
from cinegpu.encode.tier1.ht_gpu_plan import assemble, capacity_offsets, kernel_tables, \
    scratch_pitch, segment_offsets

from conftest import host_build

CXX = shutil.which("g++")
SOURCE = Path(__file__).resolve().parents[1] / "cinegpu" / "encode" / "cuda" / "ht_encode_host.cpp"
pytestmark = pytest.mark.skipif(CXX is None, reason="g++ not installed: no host build")

PLANES = (0, 1, 5, 20, 29)
FILL = 0xA5  # what the output buffers hold before coding: bytes outside segments stay so


@pytest.fixture(scope="module")
def lib():
    lib = host_build(SOURCE, "-ffp-contract=off")
    lib.hte_scratch_bytes.restype = ctypes.c_longlong
    return lib


# ------------------------------------------------------------------------------ helpers

def emulate(lib, flat, cb, rows, drops, grid=4, threads=16, tables=None):
    """ht_enc_blocks over cb[rows] on a grid x threads launch -> (region, cap_off, lens)."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    drops = np.ascontiguousarray(drops, np.int64)
    cap_off = capacity_offsets(cb, rows)
    region = np.full(int(cap_off[-1]), FILL, np.uint8)
    lens = np.full(rows.shape[0], -99, np.int64)
    pitch = scratch_pitch()
    scratch = np.zeros(grid * threads * pitch, np.uint8)
    tables = kernel_tables() if tables is None else tables
    ptrs = [ctypes.c_void_p(a.ctypes.data) for a in (flat, cb)]
    rc = lib.hte_emulate(*ptrs, ctypes.c_int(cb.shape[1]), ctypes.c_int(rows.shape[0]),
                         *(ctypes.c_void_p(a.ctypes.data)
                           for a in (rows, drops, cap_off, region, lens, scratch)),
                         ctypes.c_longlong(pitch),
                         *(ctypes.c_void_p(t.ctypes.data) for t in tables),
                         ctypes.c_int(grid), ctypes.c_int(threads))
    assert rc == 0
    return region, cap_off, lens


def gather(lib, region, cap_off, lens, drops, grid=4, threads=16):
    """ht_gather of the blocks' segments in block order, or None with a block too long (the
    wrapper then gathers the whole region on the host)."""
    stop, coded_off, *_ = segment_offsets(lens, drops)
    if stop < lens.shape[0]:
        return None
    coded = np.full(int(coded_off[-1]), FILL, np.uint8)
    assert lib.hte_gather(*(ctypes.c_void_p(a.ctypes.data) for a in (region, cap_off, coded_off)),
                          ctypes.c_int(lens.shape[0]), ctypes.c_void_p(coded.ctypes.data),
                          ctypes.c_int(grid), ctypes.c_int(threads)) == 0
    return coded


def numba_region(flat, cb, rows, drops, cap_off):
    """ht_encode_block of each block cb[rows[j]] at cap_off[j] of a FILL buffer."""
    region = np.full(int(cap_off[-1]), FILL, np.uint8)
    lens = np.zeros(len(rows), np.int64)
    scratch = make_ht_enc_scratch()
    for j, r in enumerate(cb[rows]):
        if r[CB_WIDTH] > 0 and r[CB_HEIGHT] > 0:
            lens[j] = ht_encode_block(flat, r[CB_OUT], r[CB_STRIDE], r[CB_WIDTH], r[CB_HEIGHT],
                                      drops[j], region, cap_off[j], *scratch)
    return region, lens


def check(lib, flat, cb, rows=None, drops=None, grid=4, threads=16):
    """Kernel == numba for blocks cb[rows] at planes drops: per block and as a tile.
    Returns the lengths."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.arange(cb.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    drops = np.zeros(len(rows), np.int64) if drops is None else np.asarray(drops, np.int64)
    region, cap_off, lens = emulate(lib, flat, cb, rows, drops, grid, threads)
    want_region, want_lens = numba_region(flat, cb, rows, drops, cap_off)
    np.testing.assert_array_equal(lens, want_lens)
    np.testing.assert_array_equal(region, want_region)
    want = ht_encode_rows(flat, cb, rows, drops)
    assert_same_rows(assemble(region, cap_off, lens, drops), want)
    coded = gather(lib, region, cap_off, lens, drops, grid, threads)
    if coded is not None:                    # the GPU's gather: the same bytes
        np.testing.assert_array_equal(coded, want[0])
    return lens


def assert_same_rows(got, want):
    """ht_encode_rows' tuples equal (dtypes too); after an early return, the coded prefix."""
    assert len(got) == len(want) == 6
    early = want[5].shape[0] == 0 and want[1].shape[0] > 1
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype, i
        if i == 0 and early:
            n = int(want[1].max())
            assert a.shape == b.shape
            np.testing.assert_array_equal(a[:n], b[:n])
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"item {i}")


def pack(blocks, rng, gap=True):
    """(flat, cb) of 2-D blocks laid out one after the other, each with a random row stride
    of w..w+3 and random large values in the gaps (which the coder must not read)."""
    parts, rows, at = [], [], 0
    for a in blocks:
        h, w = a.shape
        stride = w + (int(rng.integers(0, 4)) if gap else 0)
        buf = rng.integers(-(1 << 31) + 1, 1 << 31, size=(h, stride), dtype=np.int64)
        buf[:, :w] = a
        parts.append(buf.ravel())
        r = np.zeros(CB_COLUMNS, np.int64)
        r[CB_OUT], r[CB_WIDTH], r[CB_HEIGHT], r[CB_STRIDE] = at, w, h, stride
        rows.append(r)
        at += h * stride
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return flat.astype(np.int32), np.array(rows, np.int64).reshape(-1, CB_COLUMNS)


def random_block(rng, h, w, k):
    """Random magnitudes below 2^k, some zeros, mixed scales (as test_ht_encode.py)."""
    a = rng.integers(-(1 << k) + 1, 1 << k, size=(h, w), dtype=np.int64)
    a *= rng.random((h, w)) < rng.random()
    return a >> rng.integers(0, k + 1, size=(h, w))


# ------------------------------------------------------------------------------ tests

def test_scratch_pitch(lib):
    pitch = scratch_pitch()
    assert lib.hte_scratch_bytes() == pitch
    assert pitch % 128 == 0
    assert pitch >= sum(a.nbytes for a in make_ht_enc_scratch())


def test_every_shape(lib):
    """Every w x h with w, h in 1..64 (4096 blocks), each at a plane of PLANES."""
    rng = np.random.default_rng(7)
    shapes = [(h, w) for h in range(1, 65) for w in range(1, 65)]
    drops = rng.choice(PLANES, size=len(shapes))
    blocks = [random_block(rng, h, w, min(31, int(p) + int(rng.integers(1, 8))))
              for (h, w), p in zip(shapes, drops)]
    flat, cb = pack(blocks, rng)
    lens = check(lib, flat, cb, drops=drops, grid=8, threads=16)
    assert (lens > 0).sum() > 3000


@pytest.mark.parametrize("p", PLANES)
def test_planes_long_shapes(lib, p):
    rng = np.random.default_rng(100 + p)
    shapes = [(64, 64), (1, 1024), (1024, 1), (2, 1024), (1024, 2), (4, 1024), (1024, 4),
              (3, 1023), (1023, 3), (5, 819), (63, 65), (1, 1), (2, 2), (3, 3)]
    blocks = [random_block(rng, h, w, min(31, p + k)) for h, w in shapes for k in (1, 3, 11)]
    flat, cb = pack(blocks, rng)
    lens = check(lib, flat, cb, drops=np.full(len(blocks), p), grid=2, threads=8)
    np.testing.assert_array_equal(lens > 0, [(np.abs(b) >> p).any() for b in blocks])
    assert (lens > 0).sum() > 30


def test_empty_blocks(lib):
    """All zero, or nothing at or above the plane: length 0, nothing written."""
    rng = np.random.default_rng(3)
    blocks = [np.zeros((64, 64), np.int64), np.zeros((1, 7), np.int64),
              rng.integers(-31, 32, size=(33, 17)), rng.integers(-1, 2, size=(64, 64))]
    flat, cb = pack(blocks, rng)
    lens = check(lib, flat, cb, drops=[0, 3, 5, 1])
    assert (lens == 0).all()
    # zero-sized rows of the table are empty too
    cb0 = np.vstack([cb, cb[:1]])
    cb0[-1, CB_WIDTH] = 0
    assert check(lib, flat, cb0, drops=[0, 3, 5, 1, 0])[-1] == 0


def test_sign_only_blocks(lib):
    """Every sample significant: +-1, all +, all -, +-2^p at plane p."""
    rng = np.random.default_rng(4)
    blocks, drops = [], []
    for h, w in ((64, 64), (1, 64), (64, 1), (7, 9), (32, 32)):
        s = rng.choice([-1, 1], size=(h, w))
        for a, p in ((s, 0), (np.abs(s), 0), (-np.abs(s), 0), (s << 5, 5), (s << 29, 29),
                     (s * ((1 << 30) - 1), 29)):
            blocks.append(a)
            drops.append(p)
    flat, cb = pack(blocks, rng)
    lens = check(lib, flat, cb, drops=drops)
    assert (lens > 0).all()


def test_extreme_magnitudes(lib):
    rng = np.random.default_rng(5)
    top, bottom = (1 << 30) - 1, -(1 << 31) + 1
    blocks = [np.full((64, 64), top), np.full((64, 64), bottom),
              np.full((64, 64), (1 << 31) - 1), np.full((3, 5), -(1 << 31)),
              rng.choice([top, bottom, 1, -1, 0], size=(64, 64)),
              rng.integers(bottom, 1 << 31, size=(64, 64)),
              rng.integers(bottom, 1 << 31, size=(4, 1024))]
    lone = np.zeros((64, 64), np.int64)
    lone[63, 63] = bottom
    blocks.append(lone)
    flat, cb = pack(blocks, rng)
    for p in (0, 1, 29):
        check(lib, flat, cb, drops=np.full(len(blocks), p))


def test_too_long_blocks(lib):
    """Illegal sizes (w or h > 1024, w * h > 4096): HT_TOO_LONG from both twins, and
    ht_encode_rows' early return from the wrapper's steps."""
    rng = np.random.default_rng(6)
    blocks = [random_block(rng, 8, 8, 9), random_block(rng, 65, 64, 9),
              random_block(rng, 16, 16, 9), random_block(rng, 1, 1025, 9),
              random_block(rng, 1025, 1, 9), random_block(rng, 64, 65, 9)]
    flat, cb = pack(blocks, rng)
    lens = check(lib, flat, cb, drops=np.zeros(len(blocks)))
    assert list(lens[[1, 3, 4, 5]]) == [HT_TOO_LONG] * 4 and lens[0] > 0 and lens[2] > 0


@pytest.mark.parametrize("grid,threads", [(1, 1), (1, 3), (2, 5), (7, 9), (40, 1)])
def test_grid_shapes(lib, grid, threads):
    """More threads than blocks (40 blocks on 63 threads) and fewer (grid-stride), and rows
    taking blocks out of order, some twice."""
    rng = np.random.default_rng(8)
    blocks = [random_block(rng, int(rng.integers(1, 65)), int(rng.integers(1, 65)),
                           int(rng.integers(1, 16))) for _ in range(40)]
    flat, cb = pack(blocks, rng)
    drops = rng.integers(0, 3, size=40)
    check(lib, flat, cb, drops=drops, grid=grid, threads=threads)
    rows = rng.integers(0, 40, size=25)
    check(lib, flat, cb, rows=rows, drops=drops[:25], grid=grid, threads=threads)


def _tile(reversible: bool):
    """The first tile's flat indices and code-block table of a synthetic 12-bit frame."""
    from cinegpu.encode import Encoder, EncoderSettings
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode.encoder import _precisions, _split, make_params

    img = synthetic_frame(384, 256, bits=12)
    enc = Encoder(EncoderSettings.of(profile="generic", codec="htj2k", backend="cpu", reversible=reversible))
    comps = _split(img)
    precs, sgn = _precisions(comps, 12, False)
    params = make_params([c.shape for c in comps], precs, sgn, enc.coding)
    _, plans = enc._geometry(params)
    flats = enc._forward(comps, params, plans)
    return flats[0], np.ascontiguousarray(plans[0].cb, np.int64)


@pytest.mark.parametrize("reversible", [True, False])
def test_real_tile(lib, reversible):
    flat, cb = _tile(reversible)
    nb = cb.shape[0]
    assert flat.dtype == np.int32 and nb > 100
    rng = np.random.default_rng(9)
    for drops in (np.zeros(nb, np.int64), rng.integers(0, 6, size=nb)):
        lens = check(lib, flat, cb, drops=drops, grid=3, threads=32)
        assert (lens > 0).sum() > nb // 2


def test_wrong_tables_change_the_bytes(lib):
    """The comparison can fail: a VLC row or a MEL exponent off gives other bytes."""
    rng = np.random.default_rng(10)
    blocks = [random_block(rng, 64, 64, 12), random_block(rng, 32, 16, 6)]
    flat, cb = pack(blocks, rng)
    rows, drops = np.arange(2), np.zeros(2, np.int64)
    right = emulate(lib, flat, cb, rows, drops)
    vlc0, vlc1, mel = (t.copy() for t in kernel_tables())
    used = np.flatnonzero(vlc1 > 0)
    vlc1[used] ^= 1  # each codeword's first bit
    mel[:] = mel[::-1]
    for tables in ((vlc0, vlc1, kernel_tables()[2]), (kernel_tables()[0], kernel_tables()[1],
                                                     mel)):
        wrong = emulate(lib, flat, cb, rows, drops, tables=tables)
        assert not np.array_equal(wrong[0], right[0])


def test_no_rows(lib):
    rng = np.random.default_rng(11)
    flat, cb = pack([random_block(rng, 4, 4, 5)], rng)
    assert len(check(lib, flat, cb, rows=np.zeros(0), drops=np.zeros(0))) == 0


def test_segment_offsets_tables():
    """segment_offsets: the coded offsets are the running sum of the lengths up to the first
    block too long (-1), rates list the non-empty blocks' lengths in order with rate_off
    counting them, num_bps is plane + 1 for the non-empty blocks; past the stop all zero."""
    rng = np.random.default_rng(7)
    for trial in range(200):
        nb = int(rng.integers(0, 40))
        lens = rng.integers(0, 30, nb).astype(np.int64)
        lens[rng.random(nb) < 0.3] = 0
        if nb and trial % 3 == 0:
            lens[rng.integers(0, nb)] = -1
        drops = rng.integers(0, 9, nb).astype(np.int64)
        stop, coded_off, rates, rate_off, num_bps = segment_offsets(lens, drops)
        bad = np.flatnonzero(lens < 0)
        assert stop == (int(bad[0]) if bad.size else nb)
        n = lens[:stop]
        assert np.array_equal(coded_off, np.concatenate(([0], np.cumsum(n), np.zeros(nb - stop))))
        assert np.array_equal(rate_off, np.concatenate(([0], np.cumsum(n > 0),
                                                        np.zeros(nb - stop))))
        assert np.array_equal(rates[:int((n > 0).sum())], n[n > 0]) and \
            not rates[int((n > 0).sum()):].any()
        assert np.array_equal(num_bps, np.concatenate((np.where(n > 0, drops[:stop] + 1, 0),
                                                       np.zeros(nb - stop))))
        assert all(a.dtype == np.int64 for a in (coded_off, rates, rate_off, num_bps))
