"""The HT byte budget's per-plane figures (encode/tier1/ht.py ht_plane_figures; T.814 clause
7.3: the squared error of a cleanup at plane d, reconstructed at the midpoint, and the bits
it is estimated to cost, quad by quad with its neighbours) and their GPU twin, the kernel ht_plane_figures_warp of
encode/cuda/ht_figures.cu (one warp per code-block, exact integer sums), float64 for float64,
bit for bit (the arrays' bytes compared).

The numba function against the definition in its docstring (numpy, in floats: every value
is an integer or a quarter below 2^53, so exact); the kernel built by g++ as C++ for the host
(ht_figures_host.cpp, its lanes the cooperative contexts of host_warp.h meeting at
__syncwarp) against the numba function, so CI checks the kernel's own code without a GPU:
shapes 1 x 1 .. 64 x 64 and 4 x 1024, 1024 x 4, 1 x 1024, magnitudes from 0 to 2^31 (and
the largest figures, near 2^52, at dmax 20), dmax 0, 1, 5, 20, rows out of order, repeated
and zero-sized, random row strides with large values in the gaps, grids with fewer and more
warps than blocks, the tiles of a real frame; dmax outside 0..20 and blocks of more than
1024 quads refused.  The "cuda" tests
(marked gpu) run the same cases through ht_plane_figures_cuda on a device.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cinegpu.decode.tier1.codeblock import CB_HEIGHT, CB_OUT, CB_STRIDE, CB_WIDTH
from cinegpu.encode.ht import DMAX
from cinegpu.encode.tier1.ht import FIGURES_DMAX, FIGURES_QUADS, ht_plane_figures
from cinegpu.encode.tier1.ht_gpu_plan import figures_args, figures_limits
from conftest import PACKAGE, host_library, needs_cxx
from helpers.ht_encoder import pack, random_block, synthetic_tile

SOURCE = PACKAGE / "encode" / "cuda" / "ht_figures_host.cpp"
NO_GXX = needs_cxx
GPU = pytest.mark.gpu
UNWRITTEN = -7.0  # what the output arrays hold before the kernel: any left fails the check
TOP = (1 << 31) - 1


@pytest.fixture(scope="module")
def lib():
    return host_library(SOURCE)


# ------------------------------------------------------------------------------ helpers

def emulate(lib, flat, cb, rows, dmax, grid=3):
    """ht_plane_figures_warp over cb[rows] on ``grid`` CUDA blocks -> (dist, bits)."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    shape = (rows.shape[0], dmax + 1)
    dist, bits = np.full(shape, UNWRITTEN), np.full(shape, UNWRITTEN)
    rc = lib.htf_emulate(*(ctypes.c_void_p(a.ctypes.data) for a in (flat, cb)),
                         ctypes.c_int(cb.shape[1]), ctypes.c_int(rows.shape[0]),
                         ctypes.c_void_p(rows.ctypes.data), ctypes.c_int(dmax),
                         *(ctypes.c_void_p(a.ctypes.data) for a in (dist, bits)),
                         ctypes.c_int(grid))
    assert rc == 0, f"htf_emulate: {rc}"
    return dist, bits


def assert_same(got, want):
    """(dist, bits) pairs equal bit for bit, shapes and dtypes too."""
    for g, w, name in zip(got, want, ("dist", "bits")):
        assert g.dtype == w.dtype == np.float64 and g.shape == w.shape, name
        if g.tobytes() != w.tobytes():
            bad = np.argwhere(g != w)[:5]
            raise AssertionError(f"{name} differs at (row, d) {bad.tolist()}: "
                                 f"{g[tuple(bad.T)]} != {w[tuple(bad.T)]}")


def check(lib, flat, cb, rows=None, dmax=DMAX, grid=3):
    """Kernel == numba for blocks cb[rows] up to dmax planes; returns the figures."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.arange(cb.shape[0], dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
    want = ht_plane_figures(flat, cb, rows, dmax)
    assert_same(emulate(lib, flat, cb, rows, dmax, grid), want)
    return want


def _bitlen(v):
    """Bit lengths of an int64 array of values 0 <= v < 2^34."""
    return sum((v >> k) > 0 for k in range(34))


def definition(flat, cb, rows, dmax):
    """ht_plane_figures as its docstring defines it, in numpy: per plane d the error
    a - (mu + 1/2) 2^d of each sample with mu = a >> d > 0 (else a) squared and summed; and per
    quad (the block padded with zeros to even sizes) n (U - 1) + 7 bits and the U-VLC term's
    bitlen(U - kappa) + 1 where n > 0, else 1/2 bit beside a significant neighbour (left, or
    the three above) or 1/4; nothing for a block with no mu > 0."""
    dist, bits = np.zeros((len(rows), dmax + 1)), np.zeros((len(rows), dmax + 1))
    for j, r in enumerate(cb[rows]):
        w, h, off, stride = (int(r[c]) for c in (CB_WIDTH, CB_HEIGHT, CB_OUT, CB_STRIDE))
        idx = off + np.arange(h)[:, None] * stride + np.arange(w)[None, :]
        block = np.abs(flat[idx].astype(np.int64))
        a = block.ravel()
        qh, qw = (h + 1) // 2, (w + 1) // 2
        pad = np.zeros((2 * qh, 2 * qw), np.int64)
        pad[:h, :w] = block
        quads = pad.reshape(qh, 2, qw, 2).transpose(0, 2, 1, 3).reshape(qh, qw, 4)
        amax = quads.max(axis=2) if quads.size else np.zeros((qh, qw), np.int64)
        left = np.zeros_like(amax)
        left[:, 1:] = amax[:, :-1]
        wide = np.zeros((qh + 1, qw + 2), np.int64)
        wide[1:, 1:-1] = amax
        above = np.maximum(np.maximum(wide[:-1, :-2], wide[:-1, 1:-1]), wide[:-1, 2:])
        not_first = (np.arange(qh) > 0)[:, None]
        for d in range(dmax + 1):
            mu = a >> d
            e = np.where(mu > 0, a - (mu + 0.5) * 2.0 ** d, a.astype(np.float64))
            dist[j, d] = (e * e).sum()
            if a.size == 0 or a.max() >> d == 0:
                continue
            n = ((quads >> d) > 0).sum(axis=2)
            big = np.where(amax >> d > 0, _bitlen(np.maximum(2 * (amax >> d) - 1, 0)), 0)
            t = above >> d
            kappa = np.where(not_first & (n > 1) & (t > 0),
                             np.maximum(1, _bitlen(np.maximum(2 * t - 1, 0)) - 1), 1)
            u = big - kappa
            full = 8 * (n * (big - 1) + 7) + np.where(u > 0, 8 * (_bitlen(np.maximum(u, 0)) + 1), 0)
            empty = np.where(((left >> d) | t) > 0, 4, 2)
            bits[j, d] = np.where(n > 0, full, empty).sum() / 8.0
    return dist, bits


def mixed_blocks(rng):
    """Random blocks of the HT tests' shapes at magnitudes below 2^k, k from 1 to 31, and
    blocks at the extremes: all zero, +-(2^31 - 1), -2^31, 2^20 - 1 and 2^20 (the largest
    figures at dmax 20), lone large samples."""
    shapes = [(1, 1), (2, 2), (3, 5), (1, 64), (64, 1), (33, 17), (63, 63), (64, 64),
              (4, 1024), (1024, 4), (1, 1024)]
    blocks = [random_block(rng, h, w, k) for h, w in shapes for k in (1, 6, 13, 21, 31)]
    blocks += [np.zeros((64, 64), np.int64), np.full((64, 64), TOP), np.full((64, 64), -TOP),
               np.full((5, 7), -(1 << 31)), np.full((64, 64), (1 << 20) - 1),
               np.full((1024, 4), -(1 << 20)), np.full((64, 64), 1 << 20),
               rng.choice([TOP, -(1 << 31), 1, -1, 0, (1 << 20) - 1], size=(64, 64)),
               rng.integers(-(1 << 31), 1 << 31, size=(4, 1024))]
    lone = np.zeros((64, 64), np.int64)
    lone[63, 0] = -(1 << 31)
    blocks.append(lone)
    return blocks


# ------------------------------------------------------------------------------ numba

def test_numba_matches_the_definition():
    rng = np.random.default_rng(1)
    blocks = mixed_blocks(rng)
    flat, cb = pack(blocks, rng)
    rows = np.arange(len(blocks), dtype=np.int64)
    for dmax in (0, 1, 20):
        assert_same(ht_plane_figures(flat, cb, rows, dmax), definition(flat, cb, rows, dmax))
    dist, _ = ht_plane_figures(flat, cb, rows, 20)
    assert dist.max() > 2.0 ** 51  # the bound's corner is reached


def test_dmax_limits(lib):
    """FIGURES_DMAX is the kernel's HTF_DMAX and covers rate control's DMAX; dmax outside
    0..FIGURES_DMAX is refused by numba and the launcher's checks, and the kernel writes
    nothing for it."""
    assert figures_limits()[0] == FIGURES_DMAX == lib.htf_limit(0) >= DMAX
    warps = figures_limits()[1]
    assert warps == lib.htf_limit(1) == 4
    assert 0 < lib.htf_limit(2) * warps <= 48 * 1024  # static shared memory
    rng = np.random.default_rng(2)
    flat, cb = pack([random_block(rng, 8, 8, 9)], rng)
    rows = np.zeros(1, np.int64)
    for dmax in (-1, FIGURES_DMAX + 1):
        with pytest.raises(ValueError):
            ht_plane_figures(flat, cb, rows, dmax)
        with pytest.raises(ValueError):
            figures_args(cb, rows, dmax)
    with pytest.raises(ValueError):
        figures_args(cb[0], rows, 3)
    dist, bits = emulate(lib, flat, cb, rows, FIGURES_DMAX + 1)
    assert (dist == UNWRITTEN).all() and (bits == UNWRITTEN).all()


def test_quad_limit(lib):
    """FIGURES_QUADS (1024, the most quads of a legal code-block) is the kernel's HTF_QUADS; a
    block of more quads is refused by numba and the launcher's checks, and the kernel writes
    nothing for it (the blocks beside it are still right): 1024 x 3 and 2048 x 1 have 1024
    quads, 1024 x 5 and 2049 x 1 more."""
    assert lib.htf_limit(3) == FIGURES_QUADS == 1024
    rng = np.random.default_rng(3)
    shapes = [(3, 1024), (5, 1024), (1, 2048), (1, 2049), (3, 5)]
    flat, cb = pack([random_block(rng, h, w, 9) for h, w in shapes], rng)
    rows = np.arange(len(shapes), dtype=np.int64)
    for bad in (rows, rows[1:2], rows[3:4]):
        with pytest.raises(ValueError, match="1024 quads"):
            ht_plane_figures(flat, cb, bad, DMAX)
        with pytest.raises(ValueError, match="1024 quads"):
            figures_args(cb, bad, DMAX)
    dist, bits = emulate(lib, flat, cb, rows, DMAX)
    good = [0, 2, 4]
    assert (dist[[1, 3]] == UNWRITTEN).all() and (bits[[1, 3]] == UNWRITTEN).all()
    assert_same((dist[good], bits[good]), ht_plane_figures(flat, cb, rows[good], DMAX))


# ------------------------------------------------------------------------------ host build

@NO_GXX
@pytest.mark.parametrize("dmax", [0, 1, 5, 20])
def test_mixed_blocks(lib, dmax):
    rng = np.random.default_rng(10 + dmax)
    blocks = mixed_blocks(rng)
    flat, cb = pack(blocks, rng)
    dist, bits = check(lib, flat, cb, dmax=dmax, grid=5)
    assert (dist[:, -1] > 0).sum() > len(blocks) // 2


@NO_GXX
@pytest.mark.parametrize("dmax", [0, 1, 20])
def test_shapes(lib, dmax):
    """Odd and thin shapes up to 64 x 64 (a lane taking samples of several rows), plane by
    plane at magnitudes just above and below it."""
    rng = np.random.default_rng(20 + dmax)
    shapes = [(h, w) for h in (1, 2, 3, 7, 31, 32, 33, 64) for w in (1, 2, 5, 31, 32, 33, 64)]
    blocks = [random_block(rng, h, w, int(rng.integers(1, 24))) for h, w in shapes]
    flat, cb = pack(blocks, rng)
    check(lib, flat, cb, dmax=dmax, grid=7)


@NO_GXX
def test_every_shape(lib):
    """Every w x h with w, h in 1..64 (4096 blocks), dmax 20."""
    rng = np.random.default_rng(30)
    blocks = [random_block(rng, h, w, int(rng.integers(1, 32)))
              for h in range(1, 65) for w in range(1, 65)]
    flat, cb = pack(blocks, rng)
    check(lib, flat, cb, grid=16)


@NO_GXX
@pytest.mark.parametrize("grid", [1, 2, 40])
def test_rows_and_grids(lib, grid):
    """Rows out of order and repeated, zero-sized rows (figures of an empty block), no rows;
    fewer warps than blocks (grid-stride) and more."""
    rng = np.random.default_rng(40 + grid)
    blocks = [random_block(rng, int(rng.integers(1, 65)), int(rng.integers(1, 65)),
                           int(rng.integers(1, 32))) for _ in range(30)]
    flat, cb = pack(blocks, rng)
    cb[3, CB_WIDTH] = 0
    cb[7, CB_HEIGHT] = 0
    rows = rng.integers(0, 30, size=45)
    dist, bits = check(lib, flat, cb, rows=rows, grid=grid)
    empty = np.isin(rows, [3, 7])
    assert (dist[empty] == 0).all() and (bits[empty] == 0).all()
    dist, bits = check(lib, flat, cb, rows=np.zeros(0), grid=grid)
    assert dist.shape == bits.shape == (0, DMAX + 1)


@NO_GXX
def test_strides_and_offsets(lib):
    """The same blocks packed with and without gaps between rows (large values there, which
    must not be read) give the same figures."""
    rng = np.random.default_rng(50)
    blocks = [random_block(rng, h, w, 25) for h, w in ((64, 64), (17, 3), (4, 1024), (1, 9))]
    tight = check(lib, *pack(blocks, np.random.default_rng(51), gap=False))
    flat, cb = pack(blocks, np.random.default_rng(52), gap=True)
    assert (cb[:, CB_STRIDE] > cb[:, CB_WIDTH]).any()
    assert_same(check(lib, flat, cb), tight)


@NO_GXX
@pytest.mark.parametrize("reversible", [True, False])
def test_real_tile(lib, reversible):
    flat, cb = synthetic_tile(reversible)
    assert cb.shape[0] > 100
    dist, _ = check(lib, flat, cb, grid=8)
    assert (np.diff(dist, axis=1) >= 0).mean() > 0.9  # dropping planes mostly costs quality


# ------------------------------------------------------------------------------ GPU

def _cuda():
    from conftest import require_cuda
    cupy = require_cuda()
    from cinegpu.encode.tier1.ht_gpu import ht_plane_figures_cuda
    return cupy, ht_plane_figures_cuda


@GPU
@pytest.mark.parametrize("dmax", [0, 1, 20])
def test_gpu_mixed_blocks(dmax):
    """ht_plane_figures_cuda == numba, from host and device arrays, rows out of order and
    repeated, on a stream of its own."""
    cupy, figures = _cuda()
    rng = np.random.default_rng(60 + dmax)
    blocks = mixed_blocks(rng)
    blocks += [random_block(rng, int(rng.integers(1, 65)), int(rng.integers(1, 65)),
                            int(rng.integers(1, 32))) for _ in range(300)]
    flat, cb = pack(blocks, rng)
    rows = np.arange(len(blocks), dtype=np.int64)
    want = ht_plane_figures(flat, cb, rows, dmax)
    assert_same(figures(flat, cb, rows, dmax), want)
    assert_same(figures(cupy.asarray(flat), cb, rows, dmax), want)
    sub = rng.integers(0, len(blocks), size=200)
    stream = cupy.cuda.Stream(non_blocking=True)
    assert_same(figures(cupy.asarray(flat), cb, sub, dmax, stream),
                ht_plane_figures(flat, cb, sub, dmax))


@GPU
def test_gpu_every_shape_and_tiles():
    """Every w x h up to 64 x 64, zero-sized rows, no rows, and the tiles of a real frame."""
    cupy, figures = _cuda()
    rng = np.random.default_rng(70)
    blocks = [random_block(rng, h, w, int(rng.integers(1, 32)))
              for h in range(1, 65) for w in range(1, 65)]
    flat, cb = pack(blocks, rng)
    cb[5, CB_WIDTH] = 0
    rows = np.arange(len(blocks), dtype=np.int64)
    assert_same(figures(cupy.asarray(flat), cb, rows, DMAX),
                ht_plane_figures(flat, cb, rows, DMAX))
    assert_same(figures(flat, cb, rows[:0], DMAX), ht_plane_figures(flat, cb, rows[:0], DMAX))
    with pytest.raises(ValueError):
        figures(flat, cb, rows, FIGURES_DMAX + 1)
    with pytest.raises(TypeError):
        figures(cupy.asarray(flat, cupy.int64), cb, rows, DMAX)
    for reversible in (True, False):
        flat, cb = synthetic_tile(reversible)
        rows = np.arange(cb.shape[0], dtype=np.int64)
        assert_same(figures(cupy.asarray(flat), cb, rows, DMAX),
                    ht_plane_figures(flat, cb, rows, DMAX))
