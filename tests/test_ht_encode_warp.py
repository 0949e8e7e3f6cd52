"""The warp-parallel HT cleanup-pass encoding kernel (ht_enc_blocks_warp in
encode/cuda/ht_encode_warp.cuh, included by ht_encode.cu; T.814 clause 7: one warp per
code-block of at most 64 x 64 samples) against its numba twin encode/tier1/ht.py, byte for
byte: every block's segment and length against ht_encode_block (the whole output region
compared, so a byte written outside a segment fails too), and the launcher's split
(encode/tier1/ht_gpu_plan.py split_rows: the warp kernel where a block fits, the one-thread
ht_enc_blocks for the rest) against ht_encode_rows' whole tuple.

Two back ends: "host" (the .cu built by g++ through ht_encode_warp_host.cpp, whose lanes are
the cooperative contexts of host_warp.h meeting at every warp intrinsic), so CI without a GPU
checks the kernel's own code, and "cuda" (ht_encode_rows_cuda on the device, marked gpu).
Cases: every block shape up to 64 x 64 (odd widths and heights, 1-sample blocks), planes
0..29, all-zero, single-sample, sparse, dense, sign-only and extreme-magnitude blocks, MagSgn
of all ones (a 0xFF every other byte: the lanes' byte steps at their shortest), rows
out of order and repeated, grids with fewer warps than blocks, larger blocks left to the
one-thread kernel, and the tiles of a real frame.  A deliberately wrong table must change the
bytes.  Skipped without g++.
"""

from __future__ import annotations

import ctypes
import shutil
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode.tier1.codeblock import CB_HEIGHT, CB_WIDTH
from cinegpu.encode.tier1.ht import ht_encode_rows
from cinegpu.encode.tier1.ht_gpu_plan import assemble, capacity_offsets, kernel_tables, \
    split_rows, warp_limits

from conftest import host_build
from test_ht_encode_host import FILL, _tile, assert_same_rows, emulate, numba_region, pack, \
    random_block

CXX = shutil.which("g++")
CUDA = Path(__file__).resolve().parents[1] / "cinegpu" / "encode" / "cuda"
NO_GXX = pytest.mark.skipif(CXX is None, reason="g++ not installed: no host build")
GPU = pytest.mark.gpu


@pytest.fixture(scope="module")
def wlib():
    if CXX is None:
        pytest.skip("g++ not installed: no host build")
    return host_build(CUDA / "ht_encode_warp_host.cpp", "-ffp-contract=off")


@pytest.fixture(scope="module")
def tlib():
    if CXX is None:
        pytest.skip("g++ not installed: no host build")
    return host_build(CUDA / "ht_encode_host.cpp", "-ffp-contract=off")


# ------------------------------------------------------------------------------ helpers

def outputs(cb, rows):
    """What a launch over cb[rows] writes into: (capacity offsets, a region of FILL bytes,
    lengths of -99)."""
    cap_off = capacity_offsets(cb, rows)
    return cap_off, np.full(int(cap_off[-1]), FILL, np.uint8), np.full(rows.shape[0], -99, np.int64)


def emulate_warp(wlib, flat, cb, rows, drops, grid=3, tables=None):
    """ht_enc_blocks_warp over cb[rows] on ``grid`` CUDA blocks -> (region, cap_off, lens)."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    drops = np.ascontiguousarray(drops, np.int64)
    cap_off, region, lens = outputs(cb, rows)
    tables = kernel_tables() if tables is None else tables
    rc = wlib.htw_emulate(ctypes.c_void_p(flat.ctypes.data), ctypes.c_void_p(cb.ctypes.data),
                          ctypes.c_int(cb.shape[1]), ctypes.c_int(rows.shape[0]),
                          *(ctypes.c_void_p(a.ctypes.data)
                            for a in (rows, drops, cap_off, region, lens, *tables)),
                          ctypes.c_int(grid))
    assert rc == 0, f"htw_emulate: {rc}"
    return region, cap_off, lens


def host_rows(wlib, tlib, flat, cb, rows, drops, kernel="auto", grid=3):
    """ht_encode_rows_cuda's steps on the host: split_rows, each kernel on its rows (into one
    region, lengths scattered as the launcher does), assemble -> ht_encode_rows' tuple."""
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.asarray(rows, np.int64)
    drops = np.asarray(drops, np.int64)
    cap_off, region, lens = outputs(cb, rows)
    warp, thread = split_rows(cb, rows, kernel)
    for sel, run in ((warp, lambda r, d: emulate_warp(wlib, flat, cb, r, d, grid)),
                     (thread, lambda r, d: emulate(tlib, flat, cb, r, d, grid, 8))):
        if sel.size:
            sub_region, sub_off, sub_lens = run(rows[sel], drops[sel])
            for k, j in enumerate(sel):  # each block's region moved to its place
                region[cap_off[j]:cap_off[j + 1]] = sub_region[sub_off[k]:sub_off[k + 1]]
            lens[sel] = sub_lens
    return assemble(region, cap_off, lens, drops)


def check(wlib, flat, cb, rows=None, drops=None, grid=3):
    """Warp kernel == numba for blocks cb[rows] at planes drops: the region and lengths
    block by block, and ht_encode_rows' tuple.  Returns the lengths."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.arange(cb.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    drops = np.zeros(len(rows), np.int64) if drops is None else np.asarray(drops, np.int64)
    region, cap_off, lens = emulate_warp(wlib, flat, cb, rows, drops, grid)
    want_region, want_lens = numba_region(flat, cb, rows, drops, cap_off)
    np.testing.assert_array_equal(lens, want_lens)
    np.testing.assert_array_equal(region, want_region)
    assert_same_rows(assemble(region, cap_off, lens, drops), ht_encode_rows(flat, cb, rows, drops))
    return lens


def structured_blocks(rng, h, w, p):
    """All zero, one sample (each corner and the middle), sparse, dense, sign-only and
    extreme blocks of h x w at plane p."""
    top, bottom = (1 << 31) - 1, -(1 << 31)
    out = [np.zeros((h, w), np.int64)]
    for y, x in ((0, 0), (h - 1, w - 1), (0, w - 1), (h - 1, 0), (h // 2, w // 2)):
        a = np.zeros((h, w), np.int64)
        a[y, x] = rng.choice([1, -1]) * int(rng.integers(1 << p, 1 << min(31, p + 12)))
        out.append(a)
    sparse = random_block(rng, h, w, min(31, p + 10))
    sparse *= rng.random((h, w)) < 0.03
    out.append(sparse)
    out.append(rng.choice([-1, 1], size=(h, w)) * rng.integers(1 << p, 1 << min(31, p + 9),
                                                                 size=(h, w)))
    out.append(rng.choice([-1, 1], size=(h, w)) << p)
    out.append(rng.choice([top, bottom, top >> 1, -(top >> 1), 0], size=(h, w)))
    return out


# ------------------------------------------------------------------------------ host tests

@NO_GXX
def test_limits(wlib):
    warps, max_w, max_h = warp_limits()
    assert warps * 32 == 128 and (max_w, max_h) == (64, 64)
    assert 0 < wlib.htw_shared_bytes() * warps <= 48 * 1024  # static shared memory


@pytest.mark.slow
@NO_GXX
def test_every_shape(wlib):
    """Every w x h with w, h in 1..64 (4096 blocks), at planes 0..29 in turn."""
    rng = np.random.default_rng(17)
    shapes = [(h, w) for h in range(1, 65) for w in range(1, 65)]
    drops = np.arange(len(shapes)) % 30
    blocks = [random_block(rng, h, w, min(31, int(p) + int(rng.integers(1, 10))))
              for (h, w), p in zip(shapes, drops)]
    flat, cb = pack(blocks, rng)
    lens = check(wlib, flat, cb, drops=drops, grid=16)
    assert (lens > 0).sum() > 3000


@NO_GXX
@pytest.mark.parametrize("p", range(30))
def test_planes(wlib, p):
    """Each plane 0..29 over full, odd, thin and 1-sample shapes of random data."""
    rng = np.random.default_rng(200 + p)
    shapes = [(64, 64), (63, 63), (1, 64), (64, 1), (1, 1), (2, 2), (3, 5), (33, 17), (17, 63),
              (2, 63), (63, 2)]
    blocks = [random_block(rng, h, w, min(31, p + k)) for h, w in shapes for k in (1, 4, 12)]
    flat, cb = pack(blocks, rng)
    lens = check(wlib, flat, cb, drops=np.full(len(blocks), p), grid=2)
    np.testing.assert_array_equal(lens > 0, [(np.abs(b) >> p).any() for b in blocks])


@NO_GXX
@pytest.mark.parametrize("shape", [(64, 64), (1, 1), (1, 64), (64, 1), (5, 3), (31, 33),
                                   (2, 47), (63, 64)])
def test_structured(wlib, shape):
    rng = np.random.default_rng(shape[0] * 100 + shape[1])
    blocks, drops = [], []
    for p in (0, 1, 7, 29):
        b = structured_blocks(rng, *shape, p)
        blocks += b
        drops += [p] * len(b)
    flat, cb = pack(blocks, rng)
    lens = check(wlib, flat, cb, drops=drops)
    assert (lens[::len(blocks) // 4] == 0).all()  # the all-zero ones
    assert (lens > 0).sum() >= len(blocks) // 2


@NO_GXX
def test_magsgn_all_ones(wlib):
    """Blocks whose MagSgn bits are all 1 (every sample -2^k: v = 2^(k+1) - 1), so that every
    other MagSgn byte is 0xFF and the lanes' steps stand one byte at a time (7.3.2's 7-bit
    byte after each), and blocks mixing such runs with random ones."""
    rng = np.random.default_rng(60)
    blocks = []
    for k in (0, 1, 6, 7, 15, 30):
        for h, w in ((64, 64), (1, 64), (63, 31), (3, 3)):
            blocks.append(np.full((h, w), -(1 << k), np.int64))
            mixed = np.where(rng.random((h, w)) < 0.5, -(1 << k), random_block(rng, h, w, k + 1))
            blocks.append(mixed)
    flat, cb = pack(blocks, rng)
    lens = check(wlib, flat, cb, drops=np.zeros(len(blocks), np.int64), grid=4)
    coded = ht_encode_rows(flat, cb, np.arange(len(blocks)), np.zeros(len(blocks), np.int64))[0]
    assert (lens > 0).all() and (coded == 0xFF).sum() > 10000


@NO_GXX
def test_rows_out_of_order_and_empty(wlib):
    """Rows taking blocks out of order, some twice; zero-sized rows of the table; no rows."""
    rng = np.random.default_rng(21)
    blocks = [random_block(rng, int(rng.integers(1, 65)), int(rng.integers(1, 65)),
                           int(rng.integers(1, 16))) for _ in range(30)]
    flat, cb = pack(blocks, rng)
    cb[3, CB_WIDTH] = 0
    cb[7, CB_HEIGHT] = 0
    rows = rng.integers(0, 30, size=45)
    lens = check(wlib, flat, cb, rows=rows, drops=rng.integers(0, 4, size=45), grid=2)
    assert (lens[np.isin(rows, [3, 7])] == 0).all()
    assert len(check(wlib, flat, cb, rows=np.zeros(0), drops=np.zeros(0))) == 0


@NO_GXX
@pytest.mark.parametrize("grid", [1, 2, 5, 40])
def test_grid_shapes(wlib, grid):
    """Fewer warps than blocks (grid-stride) and more."""
    rng = np.random.default_rng(30 + grid)
    blocks = [random_block(rng, int(rng.integers(1, 65)), int(rng.integers(1, 65)),
                           int(rng.integers(1, 20))) for _ in range(37)]
    flat, cb = pack(blocks, rng)
    check(wlib, flat, cb, drops=rng.integers(0, 3, size=37), grid=grid)


@NO_GXX
def test_larger_blocks_refused(wlib):
    """A block over 64 x 64 samples gets HT_TOO_LONG from the warp kernel, and the launcher
    never gives it one (split_rows; 'warp' refuses it)."""
    rng = np.random.default_rng(40)
    blocks = [random_block(rng, 8, 8, 9), random_block(rng, 1, 1024, 9),
              random_block(rng, 65, 32, 9), random_block(rng, 64, 64, 9)]
    flat, cb = pack(blocks, rng)
    rows, drops = np.arange(4), np.zeros(4, np.int64)
    _, _, lens = emulate_warp(wlib, flat, cb, rows, drops)
    assert list(lens[1:3]) == [-1, -1] and lens[0] > 0 and lens[3] > 0
    warp, thread = split_rows(cb, rows)
    assert list(warp) == [0, 3] and list(thread) == [1, 2]
    assert split_rows(cb, rows, "thread")[0].size == 0
    with pytest.raises(ValueError):
        split_rows(cb, rows, "warp")
    with pytest.raises(ValueError):
        split_rows(cb, rows, "lanes")


@NO_GXX
@pytest.mark.parametrize("kernel", ["auto", "thread"])
def test_launcher_split(wlib, tlib, kernel):
    """Blocks of both kernels in one call, among them 1024-long ones and illegal sizes (the
    early return): ht_encode_rows' whole tuple."""
    rng = np.random.default_rng(50)
    shapes = [(64, 64), (1, 1024), (1024, 4), (1, 1), (33, 17), (2, 63), (4, 1024), (64, 64)]
    blocks = [random_block(rng, h, w, 12) for h, w in shapes]
    flat, cb = pack(blocks, rng)
    rows = np.arange(len(blocks))
    drops = rng.integers(0, 4, size=len(rows))
    assert_same_rows(host_rows(wlib, tlib, flat, cb, rows, drops, kernel),
                     ht_encode_rows(flat, cb, rows, drops))
    bad = np.vstack([cb, cb[:1]])
    bad[-1, CB_WIDTH], bad[-1, CB_HEIGHT] = 65, 64  # illegal: the early return
    rows = np.array([0, 8, 1, 2])
    drops = np.zeros(4, np.int64)
    assert_same_rows(host_rows(wlib, tlib, flat, bad, rows, drops, kernel),
                     ht_encode_rows(flat, bad, rows, drops))


@NO_GXX
@pytest.mark.parametrize("reversible", [True, False])
def test_real_tile(wlib, reversible):
    flat, cb = _tile(reversible)
    nb = cb.shape[0]
    assert nb > 100 and (cb[:, CB_WIDTH] <= 64).all() and (cb[:, CB_HEIGHT] <= 64).all()
    rng = np.random.default_rng(9)
    for drops in (np.zeros(nb, np.int64), rng.integers(0, 6, size=nb)):
        lens = check(wlib, flat, cb, drops=drops, grid=8)
        assert (lens > 0).sum() > nb // 2


@NO_GXX
def test_wrong_tables_change_the_bytes(wlib):
    """The comparison can fail: a VLC row or a MEL exponent off gives other bytes."""
    rng = np.random.default_rng(10)
    blocks = [random_block(rng, 64, 64, 12), random_block(rng, 32, 16, 6)]
    flat, cb = pack(blocks, rng)
    rows, drops = np.arange(2), np.zeros(2, np.int64)
    right = emulate_warp(wlib, flat, cb, rows, drops)
    vlc0, vlc1, mel = (t.copy() for t in kernel_tables())
    vlc1[np.flatnonzero(vlc1 > 0)] ^= 1
    vlc0[np.flatnonzero(vlc0 > 0)] ^= 1
    mel[:] = mel[::-1]
    good = kernel_tables()
    for tables in ((vlc0, good[1], good[2]), (good[0], vlc1, good[2]), (good[0], good[1], mel)):
        wrong = emulate_warp(wlib, flat, cb, rows, drops, tables=tables)
        assert not np.array_equal(wrong[0], right[0])


# ------------------------------------------------------------------------------ GPU tests

def _cuda():
    from conftest import require_cuda  # noqa: PLC0415
    require_cuda()
    from cinegpu.encode.tier1.ht_gpu import ht_encode_rows_cuda  # noqa: PLC0415
    return ht_encode_rows_cuda


@GPU
@pytest.mark.parametrize("kernel", ["auto", "warp"])
def test_gpu_every_shape(kernel):
    """The real kernel through the launcher: every w x h up to 64 x 64, planes 0..29."""
    encode = _cuda()
    rng = np.random.default_rng(17)
    shapes = [(h, w) for h in range(1, 65) for w in range(1, 65)]
    drops = np.arange(len(shapes)) % 30
    blocks = [random_block(rng, h, w, min(31, int(p) + int(rng.integers(1, 10))))
              for (h, w), p in zip(shapes, drops)]
    for p in (0, 5, 29):
        blocks += structured_blocks(rng, 64, 64, p) + structured_blocks(rng, 7, 33, p)
    drops = np.concatenate([drops, np.repeat([0, 5, 29], 20)])
    flat, cb = pack(blocks, rng)
    rows = np.arange(len(blocks), dtype=np.int64)
    assert_same_rows(encode(flat, cb, rows, drops, kernel=kernel),
                     ht_encode_rows(flat, cb, rows, drops))


@GPU
def test_gpu_mixed_and_early_return():
    """Warp and one-thread blocks in one call (1024-long ones), and an illegal size."""
    encode = _cuda()
    rng = np.random.default_rng(50)
    shapes = [(64, 64), (1, 1024), (1024, 4), (1, 1), (33, 17), (2, 63), (4, 1024)] * 20
    blocks = [random_block(rng, h, w, 12) for h, w in shapes]
    flat, cb = pack(blocks, rng)
    rows = rng.permutation(len(blocks)).astype(np.int64)
    drops = rng.integers(0, 6, size=len(rows))
    for kernel in ("auto", "thread"):
        assert_same_rows(encode(flat, cb, rows, drops, kernel=kernel),
                         ht_encode_rows(flat, cb, rows, drops))
    with pytest.raises(ValueError):
        encode(flat, cb, rows, drops, kernel="warp")
    bad = np.vstack([cb, cb[:1]])
    bad[-1, CB_WIDTH], bad[-1, CB_HEIGHT] = 65, 64
    rows = np.array([0, len(blocks), 1, 2], np.int64)
    assert_same_rows(encode(flat, bad, rows, np.zeros(4, np.int64)),
                     ht_encode_rows(flat, bad, rows, np.zeros(4, np.int64)))


@GPU
@pytest.mark.parametrize("reversible", [True, False])
def test_gpu_real_tile(reversible):
    encode = _cuda()
    flat, cb = _tile(reversible)
    nb = cb.shape[0]
    rng = np.random.default_rng(9)
    rows = np.arange(nb, dtype=np.int64)
    for drops in (np.zeros(nb, np.int64), rng.integers(0, 6, size=nb)):
        for kernel in ("warp", "thread"):
            assert_same_rows(encode(flat, cb, rows, drops, kernel=kernel),
                             ht_encode_rows(flat, cb, rows, drops))


@GPU
@pytest.mark.parametrize("opts", [{"reversible": True}, {"bitrate": 2_000_000, "fps": 24},
                                  {"reversible": True, "codeblock": (32, 32)}],
                         ids=["lossless", "budget", "32x32"])
def test_gpu_encoder_kernels_agree(opts):
    """EncoderSettings(codec="htj2k") on the GPU writes the same codestream with either kernel, and
    the CPU path's."""
    _cuda()
    from cinegpu.encode import Encoder, EncoderSettings  # noqa: PLC0415
    from cinegpu.bench.encode import synthetic_frame  # noqa: PLC0415
    img = synthetic_frame(392, 264, bits=12)
    out = {}
    for backend, kernel in (("cpu", "auto"), ("cuda", "auto"), ("cuda", "thread")):
        with Encoder(EncoderSettings.of(codec="htj2k", backend=backend, ht_kernel=kernel, **opts)) as enc:
            out[backend, kernel] = enc.encode(img, bits=12)
    assert out["cuda", "auto"] == out["cuda", "thread"] == out["cpu", "auto"]
