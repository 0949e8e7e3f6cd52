"""The sample-parallel GPU tier-1 kernel (t1enc_code_blocks_warp in encode/cuda/tier1_encode.cu:
one warp per code-block of at most 32 x 32 samples, the lanes deciding a stripe's passes
together, lane 0 MQ-coding) against the numba tile encoder, byte for byte: coded bytes and
offsets, per-pass rates, K and per-pass distortions exactly.

Two back ends: "cuda" (on the GPU, marked gpu) and "host" (the .cu built by g++ through
tier1_warp_host.cpp, whose lanes are cooperative contexts meeting at every warp intrinsic), so
CI without a GPU checks the same kernel.  Cases: random blocks of 1..32 x 1..32 samples under
every style the kernel takes, every K to 30 and the largest magnitudes, early-stop floors with
forced overflow, empty rows, the K > 30 error, a real DCI-shaped tile, and what it refuses.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cinegpu.decode import tier1
from cinegpu.decode.tier1.gpu import lookup_tables
from cinegpu.encode.tier1 import gpu_plan as plan
from cinegpu.encode.tier1.tile import encode_tile
from conftest import cuda_or_host, have_cuda, host_library
from helpers.tier1_encoder import (
    HostKernel,
    Tile,
    assert_same,
    dci_tile,
    every_k_tile,
    host_kernels_library,
    random_block,
)

cupy = None
if have_cuda():
    import cupy

B, R, T, V, P, S = (tier1.CBLK_BYPASS, tier1.CBLK_RESET, tier1.CBLK_TERMALL, tier1.CBLK_VCAUSAL,
                    tier1.CBLK_PTERM, tier1.CBLK_SEGSYM)
WARP_STYLES = [0, R, T, S, P, R | T | S, R | T | P | S]


class WarpHostKernel:
    """t1enc_code_blocks_warp run by tier1_warp_host.cpp, called as CuPy's RawKernel."""

    def __init__(self):
        self.lib = host_library(plan.CUDA_SOURCE.with_name("tier1_warp_host.cpp"))

    def __call__(self, grid, block, args):
        assert block == (plan.BLOCK_THREADS,)
        rc = self.lib.t1w_emulate(*map(HostKernel._arg, args), ctypes.c_int32(grid[0]))
        assert rc == 0, f"t1w_emulate: {rc}"


def encode_host(flat, cb, style, *, floor=0, max_capacity=None, grid=3, info=None):
    """gpu.py's launch and result with the warp kernel, on the host (``grid`` CUDA blocks of
    four warps: fewer warps than blocks, so warps take several blocks)."""
    old = host_kernels_library()
    kernels = tuple(HostKernel(old, n) for n in plan.KERNELS[:3]) + (WarpHostKernel(),)
    flat = np.ascontiguousarray(flat)
    cb = plan.check_table(np.ascontiguousarray(cb, np.int64), flat.size)
    assert plan.warp_eligible(cb, style)
    outputs, _ = plan.queue_tile(np, kernels, lookup_tables(), flat, cb, style, 0, 1, True,
                                 max_capacity, floor, None, grid)
    if info is not None:
        info["status"] = outputs[-1].copy()
    return plan.collect(outputs, np.asarray, lambda: flat, cb, style, floor)


def encode_cuda(flat, cb, style, *, floor=0, max_capacity=None, grid=None, info=None):
    from cinegpu.encode.tier1 import gpu

    return gpu.launch_tile(cupy.asarray(flat), cb, style, floor=floor, warp=True,
                           max_capacity=max_capacity).result()


#: the warp kernel on the GPU (marked gpu) or its host emulation (skipped without g++)
backend = cuda_or_host(encode_cuda, encode_host)


def compare(encode, flat, cb, style, **kw):
    want = encode_tile(flat, cb, style, None, kw.get("floor", 0))
    assert_same(encode(flat, cb, style, **kw), want)
    return want


def small_tile(seed, count=12, max_bits=14):
    """Random blocks of 1..32 x 1..32 samples, dense to sparse, every orientation."""
    rng = np.random.default_rng(seed)
    tile = Tile()
    for n in range(count):
        h, w = int(rng.integers(1, 33)), int(rng.integers(1, 33))
        bits = int(rng.integers(0, max_bits + 1))
        tile.add(random_block(rng, (h, w), bits, [1.0, 0.4, 0.05][n % 3]), n % 4)
    return tile


@pytest.mark.parametrize("style", WARP_STYLES)
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_random_blocks_every_style(backend, style):
    for seed in range(2):
        tile = small_tile(100 * style + seed)
        compare(backend, tile.flat, tile.cb, style, grid=1 + seed)


def test_full_blocks_and_sparse_runs(backend):
    """Full 32 x 32 blocks (32 lanes, 8 stripes) from noise to a few isolated samples (long
    cleanup runs), and a block whose significance spreads along a diagonal chain (many rounds
    of the significance propagation's fixed point)."""
    rng = np.random.default_rng(11)
    tile = Tile()
    for density in (1.0, 0.3, 0.02, 0.002):
        tile.add(random_block(rng, (32, 32), 12, density), int(density * 10) % 4)
    chain = np.zeros((32, 32), np.int32)
    chain[0, 0] = 4095
    for k in range(1, 32):
        chain[k % 32, k] = 1 << (k % 6)
        chain[(k + 3) % 32, k] = -(3 << (k % 5))
    tile.add(chain, 0)
    tile.add(chain.T.copy(), 2)
    compare(backend, tile.flat, tile.cb, 0)


@pytest.mark.parametrize("style", [0, R | T | S])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_every_k_and_largest_magnitudes(backend, style):
    tile = every_k_tile(16)
    want = compare(backend, tile.flat, tile.cb, style)
    assert want[5].tolist()[:31] == list(range(31))


@pytest.mark.parametrize("floor", [1, 4, 9])
def test_early_stop_floor_and_overflow(backend, floor):
    tile = small_tile(40 + floor)
    compare(backend, tile.flat, tile.cb, 0, floor=floor)
    info = {}
    kw = dict(info=info) if backend is encode_host else {}
    want = compare(backend, tile.flat, tile.cb, 0, floor=floor, max_capacity=40, **kw)
    if info:  # some blocks overflowed their region and came from numba
        assert (info["status"] == plan.STATUS_OVERFLOW).any()
        assert (np.diff(want[1]) > 40).any()


def test_empty_rows_and_tables(backend):
    tile = small_tile(3, count=4)
    cb = tile.cb
    cb[1, tier1.CB_WIDTH] = 0
    cb[2, tier1.CB_HEIGHT] = 0
    compare(backend, tile.flat, cb, 0)
    compare(backend, tile.flat, cb[:0], 0)


@pytest.mark.parametrize("value", [-(1 << 30), -(1 << 31), (1 << 31) - 1])
def test_k_above_30_raises(backend, value):
    tile = small_tile(4, count=5)
    flat = tile.flat
    flat[tile.cb[3, tier1.CB_OUT] + 1] = value
    with pytest.raises(ValueError, match="2\\^30"):
        backend(flat, tile.cb, 0)


#: as ``backend``, the host emulation marked slow too (a real tile)
backend_real = cuda_or_host(encode_cuda, encode_host, slow_host=True)


def test_real_small_tile(backend_real):
    """A 9/7 tile of DCI's shape (5 levels, 32 x 32 blocks) after the project's forward stage."""
    flat, cb, style = dci_tile(320, 176, levels=5, codeblock=(32, 32), bitrate=250e6)
    assert cb.shape[0] > 100 and plan.warp_eligible(cb, style)
    want = compare(backend_real, flat, cb, style, grid=8)
    assert want[5].max() > 8


def test_what_the_warp_kernel_refuses():
    """Blocks wider or taller than 32, and the BYPASS and VCAUSAL styles, stay with the
    one-thread-per-block kernel."""
    tile = small_tile(5, count=3)
    assert plan.warp_eligible(tile.cb, 0) and plan.warp_eligible(tile.cb, R | T | P | S)
    assert not plan.warp_eligible(tile.cb, B) and not plan.warp_eligible(tile.cb, V)
    wide = Tile()
    wide.add(np.ones((4, 33), np.int32), 0)
    assert not plan.warp_eligible(wide.cb, 0)
    tall = Tile()
    tall.add(np.ones((64, 16), np.int32), 0)
    assert not plan.warp_eligible(tall.cb, 0)
    assert plan.warp_eligible(tile.cb[:0], 0)


@pytest.mark.gpu
def test_refused_launch_and_default_choice():
    from cinegpu.encode.tier1 import gpu

    tall = Tile()
    tall.add(np.arange(64 * 16, dtype=np.int32).reshape(64, 16), 1)
    with pytest.raises(ValueError, match="32 x 32"):
        gpu.launch_tile(cupy.asarray(tall.flat), tall.cb, 0, warp=True)
    # the default takes whichever kernel fits; both give numba's results
    assert_same(gpu.encode_tile_cuda(tall.flat, tall.cb, 0), encode_tile(tall.flat, tall.cb, 0))
    flat, cb, style = dci_tile()
    assert_same(gpu.encode_tile_cuda(flat, cb, style), encode_tile(flat, cb, style))
