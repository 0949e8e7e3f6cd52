"""The encoder's 1D_SD kernels (encode/cuda/forward.cu: sd97_cols, sd97_rows, sd53_cols_i32,
sd53_rows_i32) compiled as C++ for the host (encode/cuda/host_emulation.cpp, g++) against
their numpy twins ``_sd_97`` / ``_sd_53`` (T.800 F.4.8.2 / F.4.8.1), bit for bit: every odd
length 1..67 and 2, 4, 64, 66, 1000, 1001 along the transform, both parities p of the first
sample, columns and rows, line counts across the kernels' tile widths, on the launch grid
and block size of encode/gpu.py (32 threads, a thread a line, run phase by phase between
barriers, so a missing __syncthreads fails), on a one-block grid (the kernels' block loops) and with other
block sizes and thread orders.  Skipped without g++.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cinegpu.decode.transform.dwt import _sd_53, _sd_97
from conftest import PACKAGE, host_library, needs_cxx

SOURCE = PACKAGE / "encode" / "cuda" / "host_emulation.cpp"
pytestmark = needs_cxx

LENGTHS = list(range(1, 68, 2)) + [2, 4, 64, 66, 1000, 1001]
SDC_S, SD_S, SD_ROWS = 32, 64, 32  # forward.cu's column segments, row segments, rows a block


def test_case_count():
    assert len(LENGTHS) == 40


@pytest.fixture(scope="module")
def lib():
    return host_library(SOURCE)


def sd_host(lib, x: np.ndarray, p: int, axis: int, grid: str = "gpu", threads: int | None = None,
            reverse: bool = False):
    """1D_SD of a 2-D plane along ``axis`` by the host-built kernel -> (lo, hi); ``threads``
    a block, gpu.py's by default (128 for columns, a warp for rows)."""
    threads = threads or (128 if axis == 0 else 32)
    filt = 97 if x.dtype == np.float32 else 53
    x = np.ascontiguousarray(x)
    n, lines = (x.shape[0], x.shape[1]) if axis == 0 else (x.shape[1], x.shape[0])
    nl = (n - p + 1) // 2
    if axis == 0:
        lo, hi = np.full((nl, lines), 7, x.dtype), np.full((n - nl, lines), 7, x.dtype)
    else:
        lo, hi = np.full((lines, nl), 7, x.dtype), np.full((lines, n - nl), 7, x.dtype)
    tiles = -(-lines // (threads if axis == 0 else SD_ROWS))   # gpu.py's grid: a thread a column
    segs = -(-n // (SDC_S if axis == 0 else SD_S))
    gx, gy = (tiles, segs) if axis == 0 else (segs, tiles)
    if grid == "one":
        gx = gy = 1
    ptr = [ctypes.c_void_p(a.ctypes.data) for a in (x, lo, hi)]
    rc = lib.sd_emulate(filt, int(axis == 0), *ptr, *(ctypes.c_int(v) for v in
                        (n, lines, p, gx, gy, threads, int(reverse))))
    assert rc == 0
    return lo, hi


def _lines(n: int) -> int:
    """A line count per length: across one, several and partial tiles, small for long lines."""
    return 3 if n >= 1000 else (1, 5, 9, 33, 40)[n % 5]


def _assert_same(want, got):
    for a, b in zip(want, got):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(b.view(np.int32), a.view(np.int32))  # bits, -0.0 too


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("p", [0, 1])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_sd97_host_matches_numpy(lib, axis, p):
    rng = np.random.default_rng(97 + 2 * axis + p)
    for n in LENGTHS:
        shape = (n, _lines(n)) if axis == 0 else (_lines(n), n)
        x = (rng.normal(0, 500, shape) * rng.choice([1e-3, 1, 1e4], shape)).astype(np.float32)
        _assert_same(_sd_97(x, p, axis), sd_host(lib, x, p, axis))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("p", [0, 1])
def test_sd53_host_matches_numpy(lib, axis, p):
    rng = np.random.default_rng(53 + 2 * axis + p)
    for n in LENGTHS:
        shape = (n, _lines(n)) if axis == 0 else (_lines(n), n)
        x = rng.integers(-(1 << 13), 1 << 13, shape).astype(np.int32)
        _assert_same(_sd_53(x, p, axis), sd_host(lib, x, p, axis))


@pytest.mark.parametrize("axis", [0, 1])
def test_sd53_host_wraps_as_numpy(lib, axis):
    """int32 extremes: the additions wrap modulo 2^32 as numpy's."""
    rng = np.random.default_rng(5)
    for n, p in [(1, 1), (2, 0), (67, 1), (130, 0)]:
        shape = (n, 37) if axis == 0 else (11, n)
        x = rng.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
        x.flat[::7] = np.int32(2**31 - 1)
        with np.errstate(over="ignore"):
            want = _sd_53(x, p, axis)
        _assert_same(want, sd_host(lib, x, p, axis))


@pytest.mark.parametrize("filt", ["97", "53"])
def test_sd_host_one_block_grid(lib, filt):
    """A grid smaller than the tiles: each block loops over line groups and segments."""
    rng = np.random.default_rng(1)
    sd = _sd_97 if filt == "97" else _sd_53
    for axis in (0, 1):
        for n, p in [(1, 1), (2, 1), (65, 0), (200, 1)]:
            shape = (n, 70) if axis == 0 else (19, n)
            x = rng.normal(0, 900, shape).astype(np.float32 if filt == "97" else np.int32)
            _assert_same(sd(x, p, axis), sd_host(lib, x, p, axis, grid="one"))


@pytest.mark.parametrize("filt", ["97", "53"])
@pytest.mark.parametrize("threads,reverse", [(1, False), (7, True), (96, True), (256, True),
                                             (1024, False)])
def test_sd_host_block_sizes_and_orders(lib, filt, threads, reverse):
    """Any block size works (the phases loop in steps of blockDim.x), in either thread order."""
    rng = np.random.default_rng(threads)
    sd = _sd_97 if filt == "97" else _sd_53
    for axis in (0, 1):
        for n, p in [(1, 0), (3, 1), (67, 1), (130, 0)]:
            shape = (n, 41) if axis == 0 else (13, n)
            x = rng.normal(0, 900, shape).astype(np.float32 if filt == "97" else np.int32)
            _assert_same(sd(x, p, axis), sd_host(lib, x, p, axis, threads=threads,
                                                 reverse=reverse))


@pytest.mark.parametrize("gx,threads,reverse", [(1, 1, False), (3, 32, True), (7, 256, False)])
def test_bit_length_histogram_host_matches_numba(lib, gx, threads, reverse):
    # early stop's statistic: every bit length 0..32, |INT_MIN| included, one call adding
    # to counts already there
    from cinegpu.encode.early_stop import _histogram
    rng = np.random.default_rng(gx)
    v = np.concatenate([rng.integers(-(1 << 20), 1 << 20, 3000), (1 << np.arange(31)) - 1,
                        -(1 << np.arange(31)), [-(1 << 31), (1 << 31) - 1, 0, 0]]).astype(np.int32)
    want = np.arange(33, dtype=np.int64)
    _histogram(v, want)
    got = np.arange(33, dtype=np.uint64)
    rc = lib.hist_emulate(ctypes.c_void_p(v.ctypes.data), ctypes.c_longlong(v.size),
                          ctypes.c_void_p(got.ctypes.data), ctypes.c_int(gx),
                          ctypes.c_int(threads), ctypes.c_int(int(reverse)))
    assert rc == 0
    np.testing.assert_array_equal(got.astype(np.int64), want)
    assert want[32] == 32 + 1                          # |INT_MIN| alone


#: plane_extremes_* of forward.cu in extremes_emulate's code order (u8, i8, u16, i16, u32, i32, i64)
EXTREMES_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64]


@pytest.mark.parametrize("code,dtype", list(enumerate(EXTREMES_DTYPES)),
                         ids=[np.dtype(d).name for d in EXTREMES_DTYPES])
@pytest.mark.parametrize("grid,threads,reverse", [((1, 1), 1, False), ((3, 5), 32, True),
                                                  ((2, 40), 256, False)])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_plane_extremes_host_matches_numpy(lib, code, dtype, grid, threads, reverse):
    """The input sample check's kernel (the (min, max) of one component of an interleaved
    image, read in place through its strides, negative ones included) against numpy, over
    each dtype's whole range and over planes whose extremes sit in one corner."""
    rng = np.random.default_rng(code)
    info = np.iinfo(dtype)
    img = rng.integers(info.min, info.max, size=(37, 53, 3), dtype=dtype, endpoint=True)
    img[36, 52, 1], img[0, 0, 2] = info.min, info.max
    narrow = np.full((9, 70, 4), 7, dtype)
    narrow[8, 69, 3] = 9
    views = [img[..., 0], img[::-1, :, 1], img[:, ::-2, 2], narrow[..., 3], narrow[:1, :1, 0]]
    for v in views:
        out = np.array([info.max if dtype == np.int64 else np.iinfo(np.int64).max,
                        np.iinfo(np.int64).min], np.int64)
        rs, ps = (s // v.itemsize for s in v.strides)
        rc = lib.extremes_emulate(ctypes.c_int(code), ctypes.c_void_p(v.ctypes.data),
                                  ctypes.c_longlong(v.shape[0]), ctypes.c_longlong(v.shape[1]),
                                  ctypes.c_longlong(rs), ctypes.c_longlong(ps),
                                  ctypes.c_void_p(out.ctypes.data), ctypes.c_int(grid[0]),
                                  ctypes.c_int(grid[1]), ctypes.c_int(threads),
                                  ctypes.c_int(int(reverse)))
        assert rc == 0
        assert (int(out[0]), int(out[1])) == (int(v.min()), int(v.max())), (v.strides, out)
