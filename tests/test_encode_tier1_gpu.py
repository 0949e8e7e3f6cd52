"""The GPU tier-1 encoder (cinegpu.encode.tier1.gpu, encode/cuda/tier1_encode.cu) against the
numba tile encoder (encode_tile), byte for byte: coded bytes and offsets, per-pass rates and
offsets, K, and per-pass distortions exactly (==, same double sums in the same order).

Every case runs on two back ends: "cuda" (the kernels on the GPU; marked gpu, skipped without
CuPy or a device) and "host" (the same .cu compiled as C++ by g++, tier1_encode_host.cpp,
with the wrapper's steps from gpu_plan; skipped without g++), so the kernels' logic is checked
on CPU-only CI too.  Cases: odd block sizes and every orientation under every style, the
largest and thinnest blocks, every K from 0 to 30, |v| = 2^30 - 1, the K > 30 error, the
overflow fallback (forced tiny regions), scratch layouts, and a 2K DCI frame's real tile.

GPU run (timing printed by test_bench_real_tile):
    python3 -m pytest -q -s -p no:cacheprovider -m gpu tests/test_encode_tier1_gpu.py
"""

from __future__ import annotations

import ctypes
import functools
import shutil

import numpy as np
import pytest

from cinegpu.decode import tier1
from cinegpu.decode.tier1.gpu import lookup_tables
from cinegpu.encode.tier1 import gpu_plan as plan
from cinegpu.encode.tier1.tile import encode_tile

from conftest import have_cuda, host_build

cupy = None
if have_cuda():
    import cupy

GPU = pytest.mark.gpu  # skipped without CUDA (conftest.py)
CXX = shutil.which("g++")

B, R, T, V, P, S = (tier1.CBLK_BYPASS, tier1.CBLK_RESET, tier1.CBLK_TERMALL, tier1.CBLK_VCAUSAL,
                    tier1.CBLK_PTERM, tier1.CBLK_SEGSYM)
STYLES = [0, B, R, T, V, S, P, B | T, B | R | V | S, R | T | S, B | P, 0x3F]


def _host_library():
    """tier1_encode.cu built for the host (tier1_encode_host.cpp), loaded with ctypes."""
    return host_build(plan.CUDA_SOURCE.with_name("tier1_encode_host.cpp"), "-ffp-contract=off")


def _ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


class HostKernel:
    """A kernel of tier1_encode.cu run by the host emulation, called as CuPy's RawKernel:
    k(grid, block, args) with numpy arrays and np.int32 scalars."""

    def __init__(self, lib, name):
        self.lib, self.name = lib, name

    @staticmethod
    def _arg(a):
        if isinstance(a, np.ndarray):
            assert a.flags.c_contiguous
            return _ptr(a)
        assert isinstance(a, np.int32), type(a)
        return ctypes.c_int32(int(a))

    def __call__(self, grid, block, args):
        args = list(args)
        if self.name == "t1enc_code_blocks":
            assert block == (plan.BLOCK_THREADS,) and 1 <= args[19] <= 32
            del args[19:21]  # lanes, next_row: the emulation runs one lane per warp
            rng = np.random.default_rng(0)  # scratch starts dirty: the kernel must clear it
            for a in args[14:17]:
                a[:] = rng.integers(0, 1 << 16, a.size).astype(a.dtype)
            self.lib.t1enc_emulate_code(*map(self._arg, args))
        else:
            getattr(self.lib, self.name.replace("t1enc_", "t1enc_emulate_"))(
                *map(self._arg, args), ctypes.c_int32(grid[0]), ctypes.c_int32(block[0]))


def encode_host(flat, cb, style, rows=None, *, max_capacity=None, max_slots=5,
                interleave=True, info=None, floor=0):
    """gpu.py's launch and result on the host: gpu_plan.queue_tile with numpy arrays and the
    host-emulated kernels, then gpu_plan.collect."""
    lib = _host_library()
    kernels = tuple(HostKernel(lib, name) for name in plan.KERNELS)
    cb = np.ascontiguousarray(cb, np.int64)
    if rows is not None:
        cb = cb[np.ascontiguousarray(rows, np.int64)]
    flat = np.ascontiguousarray(flat)
    assert flat.dtype == np.int32
    cb = plan.check_table(cb, flat.size)
    nslots = plan.slots(cb, 1, 1 << 20, 256 << 20, max_slots)
    outputs, _ = plan.queue_tile(np, kernels, lookup_tables(), flat, cb, style, nslots, 1,
                                 interleave, max_capacity, floor)
    if info is not None:
        info["status"] = outputs[-1].copy()
    return plan.collect(outputs, np.asarray, lambda: flat, cb, style, floor)


def encode_cuda(flat, cb, style, rows=None, *, info=None, **kw):
    from cinegpu.encode.tier1 import gpu  # noqa: PLC0415

    kw.setdefault("warp", False)  # this file checks the one-thread-per-block kernel
    return gpu.encode_tile_cuda(cupy.asarray(flat), cb, style, rows, **kw)


@pytest.fixture(params=[pytest.param("cuda", marks=GPU),
                        pytest.param("host", marks=pytest.mark.skipif(
                            CXX is None, reason="no g++ to build the host emulation"))])
def backend(request):
    return encode_cuda if request.param == "cuda" else encode_host


def assert_same(got, want):
    names = ("coded", "coded_off", "rates", "rate_off", "dists", "num_bps")
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)  # dists too: exact
    assert len(got) == 6


def compare(encode, flat, cb, style, rows=None, **kw):
    want = encode_tile(flat, cb, style, rows, kw.get("floor", 0))
    got = encode(flat, cb, style, rows, **kw)
    assert_same(got, want)
    return want


class Tile:
    """Blocks packed into one flat int32 buffer with a plan-like table (rows stride apart)."""

    def __init__(self):
        self.parts, self.rows, self.size = [], [], 0

    def add(self, v, orient, pad=3):
        h, w = v.shape
        stride = w + pad
        buf = np.full((max(h, 1), stride), 12345, np.int32)  # samples outside the block
        buf[:h, :w] = v
        row = np.zeros(tier1.CB_COLUMNS, np.int64)
        row[[tier1.CB_ORIENT, tier1.CB_OUT, tier1.CB_WIDTH, tier1.CB_HEIGHT, tier1.CB_STRIDE]] = \
            orient, self.size, w, h, stride
        self.rows.append(row)
        self.parts.append(buf.ravel())
        self.size += buf.size

    @property
    def flat(self):
        return np.concatenate(self.parts + [np.zeros(1, np.int32)])

    @property
    def cb(self):
        return np.array(self.rows, np.int64).reshape(-1, tier1.CB_COLUMNS)


def random_block(rng, shape, bits, density):
    mag = rng.integers(0, 1 << bits, shape, dtype=np.int64) if bits else np.zeros(shape, np.int64)
    sign = np.where(rng.random(shape) < 0.5, -1, 1)
    return (mag * sign * (rng.random(shape) < density)).astype(np.int32)


def odd_tile(seed, count=24, max_bits=16):
    rng = np.random.default_rng(seed)
    tile = Tile()
    for n in range(count):
        h = int(rng.integers(1, 68))
        w = int(rng.integers(1, min(67, 4096 // h) + 1))
        bits = int(rng.integers(0, max_bits + 1))
        tile.add(random_block(rng, (h, w), bits, [1.0, 0.4, 0.05][n % 3]), n % 4)
    return tile


def every_k_tile(singles: int) -> Tile:
    """Blocks of every K from 0 (all zero) to 30, |v| = 2^30 - 1 of both signs, and
    ``singles`` one-sample blocks near 2^30 (a pass's distortion is then one gain: the rounding
    of e^2 near 2^62 shows)."""
    rng = np.random.default_rng(30)
    tile = Tile()
    for k in range(31):
        v = random_block(rng, (9, 11), k, 0.6)
        if k:
            v[4, 5] = -((1 << k) - 1) if k % 2 else (1 << (k - 1))
        tile.add(v, k % 4)
    top = (1 << 30) - 1
    tile.add(np.array([[top, -top], [1, 0], [-top, top - 1]], np.int32), 3)
    tile.add(np.full((17, 5), -top, np.int32), 1)
    for v in rng.integers(1 << 26, 1 << 30, singles):
        tile.add(np.array([[v]], np.int32), 0)
    return tile


def test_case_counts():
    assert len(STYLES) == 12


@pytest.mark.parametrize("style", STYLES)
def test_odd_sizes_every_style(backend, style):
    """Random blocks of 1..67 x 1..67 samples (area <= 4096), all orientations."""
    tile = odd_tile(style)
    compare(backend, tile.flat, tile.cb, style)


@pytest.mark.parametrize("style", [0, B | T, B | R | V | S])
def test_large_and_thin_blocks(backend, style):
    rng = np.random.default_rng(7)
    tile = Tile()
    for orient, shape in enumerate([(64, 64), (32, 32), (4, 1024), (1024, 4)]):
        tile.add(random_block(rng, shape, 11, 0.5), orient)
        tile.add(random_block(rng, shape, 3, 0.02), 3 - orient)
    compare(backend, tile.flat, tile.cb, style)


@pytest.mark.parametrize("style", [0, B, 0x3F])
def test_every_k_and_largest_magnitudes(backend, style):
    """K from 0 (all-zero block) to 30, and |v| = 2^30 - 1 of both signs."""
    tile = every_k_tile(64)
    want = compare(backend, tile.flat, tile.cb, style)
    assert want[5].tolist()[:33] == list(range(31)) + [30, 30]


@pytest.mark.parametrize("floor", [1, 4, 9, 17])
@pytest.mark.parametrize("style", [0, B | T, R | T | S])
def test_early_stop_floor(backend, style, floor):
    """Blocks coded only down to bit-plane ``floor`` (early stop): the kernel equals numba,
    blocks with K <= floor code nothing, and the overflow fallback keeps the floor."""
    tile = odd_tile(40 + floor)
    want = compare(backend, tile.flat, tile.cb, style, floor=floor)
    k = want[5]
    np.testing.assert_array_equal(np.diff(want[3]), np.where(k > floor, 3 * (k - floor) - 2, 0))
    compare(backend, tile.flat, tile.cb, style, floor=floor, max_capacity=40)


def test_empty_rows_and_tables(backend):
    tile = odd_tile(3, count=4)
    cb = tile.cb
    cb[1, tier1.CB_WIDTH] = 0
    cb[2, tier1.CB_HEIGHT] = 0
    compare(backend, tile.flat, cb, 0)
    compare(backend, tile.flat, cb[:0], 0)


@pytest.mark.parametrize("value", [-(1 << 30), 1 << 30, -(1 << 31), (1 << 31) - 1])
def test_k_above_30_raises(backend, value):
    tile = odd_tile(4, count=5)
    flat = tile.flat
    flat[tile.cb[3, tier1.CB_OUT] + 1] = value
    with pytest.raises(ValueError, match="2\\^30"):
        encode_tile(flat, tile.cb, 0)
    with pytest.raises(ValueError, match="2\\^30"):
        backend(flat, tile.cb, 0)


@pytest.mark.parametrize("cap", [1, 16, 120, 300])
def test_overflow_falls_back_to_numba(backend, cap):
    """Regions forced small: the blocks that do not fit come from numba, spliced in order."""
    tile = odd_tile(5, count=16, max_bits=12)
    for style in (0, B | T):
        want = compare(backend, tile.flat, tile.cb, style, max_capacity=cap)
        lengths = np.diff(want[1])
        assert (lengths > cap).any()  # the kernel cannot have produced these bytes
        if cap > 16:  # and some blocks come from the kernel
            assert ((lengths > 0) & (lengths < cap)).any()


def test_overflow_status_and_row_subsets():
    if CXX is None:
        pytest.skip("no g++ to build the host emulation")
    tile = odd_tile(6, count=12)
    info = {}
    compare(encode_host, tile.flat, tile.cb, B, max_capacity=200, info=info)
    assert (info["status"] == plan.STATUS_OVERFLOW).any() and (info["status"] == 0).any()
    compare(encode_host, tile.flat, tile.cb, B, rows=np.array([7, 2, 2, 11, 0]))


@pytest.mark.parametrize("layout", [dict(max_slots=1), dict(max_slots=3, interleave=False),
                                    dict(max_slots=64, interleave=True)])
def test_scratch_layouts(backend, layout):
    tile = odd_tile(8, count=10)
    compare(backend, tile.flat, tile.cb, R | V, **layout)


def test_table_checks():
    flat = np.zeros(100, np.int32)
    cb = np.zeros((2, tier1.CB_COLUMNS), np.int64)
    cb[:, [tier1.CB_WIDTH, tier1.CB_HEIGHT, tier1.CB_STRIDE]] = 10
    plan.check_table(cb, 100)
    for col, value in [(tier1.CB_OUT, 1), (tier1.CB_OUT, -1), (tier1.CB_STRIDE, -1),
                       (tier1.CB_WIDTH, 1025), (tier1.CB_HEIGHT, 1 << 40),
                       (tier1.CB_STRIDE, 1 << 62)]:
        bad = cb.copy()
        bad[1, col] = value
        with pytest.raises(ValueError, match="row 1"):
            plan.check_table(bad, flat.size)
    with pytest.raises(ValueError, match="columns"):
        plan.check_table(cb[:, :5], 100)
    # capacities: none for K = 0; the bound covers every K <= 30
    caps = plan.block_capacity(np.array([4096, 4096, 1]), np.array([0, 30, 1]))
    assert caps.tolist() == [0, 64 + 16 * 88 + 4096 * 31 // 4, 64 + 16 + 1]
    assert plan.capacity_bound(cb) == 2 * int(plan.block_capacity(100, 30))


# -- a real tile: the plan and coefficients of a 2K DCI frame ----------------------------------

@functools.lru_cache(maxsize=None)
def dci_tile(width=2048, height=1080, **opts):
    """(flat, cb, style) of a frame's tile after the project's forward stage: a DCI 2K frame
    by default, else a generic one with ``opts``."""
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode.encoder import Encoder, EncoderSettings, _as_components
    from cinegpu.encode.presets import make_params

    img = synthetic_frame(width, height, seed=1)
    with Encoder(EncoderSettings.of(backend="cpu", **(opts or {"profile": "dci-2k"}))) as enc:
        comps, precs, sgn = _as_components(img, 12, None)
        params = make_params([x.shape for x in comps], precs, sgn, enc.coding)
        cs, plans = enc._geometry(params)
        flats = enc._forward(comps, params, plans)
        params, cs, plans, flats = enc._guard_bits(params, cs, plans, flats)
    assert len(plans) == 1
    return flats[0], plans[0].cb, params.cblk_style


def _real_tile_check(encode, tile, style, min_blocks):
    flat, cb, tile_style = tile
    style = tile_style if style is None else style
    assert cb.shape[0] > min_blocks
    info = {}
    kw = dict(info=info) if encode is encode_host else {}
    want = compare(encode, flat, cb, style, max_slots=64, **kw)
    assert want[5].max() > 8 and want[0].size > 20 * min_blocks
    if info:  # the capacity holds every block of real content: no fallback
        assert not info["status"].any()


@pytest.mark.parametrize("style", [None, B | T | V])
def test_real_small_tile(backend, style):
    """A 9/7 tile of DCI's shape (5 levels, 32 x 32 blocks), small enough for every run."""
    tile = dci_tile(320, 176, levels=5, codeblock=(32, 32), bitrate=250e6)
    _real_tile_check(backend, tile, style, 100)


@pytest.fixture(params=[pytest.param("cuda", marks=GPU),
                        pytest.param("host", marks=[pytest.mark.slow, pytest.mark.skipif(
                            CXX is None, reason="no g++ to build the host emulation")])])
def backend_2k(request):
    return encode_cuda if request.param == "cuda" else encode_host


@pytest.mark.parametrize("style", [None, B | T | V])
def test_real_2k_tile(backend_2k, style):
    """The tile of a 2K DCI frame (forward stage as the encoder runs it), DCI's style and a
    bypass/termall/vcausal one; slow on the host emulation (~10 s)."""
    _real_tile_check(backend_2k, dci_tile(), style, 1000)


@pytest.mark.gpu
def test_launch_is_asynchronous_and_options():
    """launch_tile on a stream: same tuple; tuning options change only the speed."""
    from cinegpu.encode.tier1 import gpu  # noqa: PLC0415

    flat, cb, style = dci_tile()
    want = encode_tile(flat, cb, style)
    flat_dev = cupy.asarray(flat)
    stream = cupy.cuda.Stream(non_blocking=True)
    pending = [gpu.launch_tile(flat_dev, cb, style, stream=stream, **kw)
               for kw in [{}, dict(warp=True), dict(warp=False), dict(lanes=1, warp=False),
                          dict(lanes=1, interleave=False, warp=False), dict(lanes=7, warp=False),
                          dict(max_slots=100, warp=False),
                          dict(scratch_bytes=1 << 20, warp=False)]]
    for p in pending:
        assert_same(p.result(), want)
    assert_same(gpu.encode_tile_cuda(flat, cb, style), want)  # numpy input
    rows = np.arange(5, 400, 3)
    assert_same(gpu.encode_tile_cuda(flat_dev, cb, style, rows), encode_tile(flat, cb, style, rows))
    with pytest.raises(TypeError):
        gpu.launch_tile(flat_dev.astype(cupy.int64), cb, style)


@pytest.mark.gpu
def test_bench_real_tile():
    """Timing, printed (pytest -s): numba encode_tile vs the GPU (launch to result)."""
    import time

    from cinegpu.encode.tier1 import gpu  # noqa: PLC0415

    flat, cb, style = dci_tile()
    flat_dev = cupy.asarray(flat)

    def best(fn, n=5):
        t = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            t.append(time.perf_counter() - t0)
        return min(t) * 1e3

    ms = best(lambda: encode_tile(flat, cb, style), 3)
    line = f"2K DCI tile, {cb.shape[0]} blocks: numba {ms:.1f} ms"
    for kw in [dict(warp=True), dict(warp=False), dict(lanes=1, interleave=False, warp=False),
               dict(lanes=8, warp=False)]:
        gpu.launch_tile(flat_dev, cb, style, **kw).result()
        ms = best(lambda: gpu.launch_tile(flat_dev, cb, style, **kw).result())
        line += f" | cuda {kw or 'default'} {ms:.1f} ms"
    print(line)
