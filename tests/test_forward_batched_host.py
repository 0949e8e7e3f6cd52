"""The encoder's batched, fused forward kernels and its one-pass sample check
(encode/cuda/forward.cu: colour_f32_* / colour_i32_*, sd97_cols_c / sd53_cols_c,
sd97_rows_q / sd53_rows_q, image_extremes_*) compiled as C++ for the host
(encode/cuda/host_emulation.cpp, g++ -ffp-contract=off) against their numpy twins, bit for
bit (float32 compared as int32 views, so -0.0 and NaN payloads count):

* colour: every input type (u8, u16, i16, i32), 1-3 components, mct on and off, both
  reversible (int32 shift, RCT) and irreversible (float32 shift, ICT), the components of an
  interleaved image read in place (a tile cropped out of it) and separate planes, against
  ``cinegpu.encode.forward.tile_planes``; the same with IMF's code-value step on (scale,
  peak: samples below 0 and over ``top`` clipped, several ``top`` and bits), against
  ``tile_planes(..., code_values=)``, whose ``code_value_samples`` is the host's
  ``rint(peak unit_scale(s, top))``;
* VER_SD (``*_cols_c``): 1-3 components of different data, lengths 1, 2, odd, one and
  several segments, widths not a multiple of the tile's, both parities, against
  ``_sd_97`` / ``_sd_53`` along axis 0 (low rows, then high rows);
* HOR_SD with quantisation (``*_rows_q``): both filters, LL kept as a plane or quantised,
  vertical low halves of every size (0, m, and between with m odd), lengths 1, odd, even and
  several segments, both parities, 1-3 components each with its own band offsets and steps,
  against ``_sd_97`` / ``_sd_53`` along axis 1 and ``quantize_band``; the flat buffer is
  preset to a sentinel and must hold it everywhere but the bands written;
* ``image_extremes_*``: every sample type, 1-4 components, the type's extreme values,
  against numpy's per-component min / max.

Every kernel runs on its launch grid of encode/gpu.py, on a one-block grid (its block loops)
and in reversed thread order; the threads of a block run phase by phase between barriers,
so a missing ``__syncthreads`` fails, and output buffers are padded with sentinels, so a
wrong component stride or a stray write fails.  Skipped without g++.
"""

from __future__ import annotations

import ctypes
import itertools
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from cinegpu.decode.transform.dwt import _sd_53, _sd_97
from cinegpu.encode.forward import (code_value_samples, code_value_step, quantize_band,
                                    tile_planes)

from conftest import host_build

CXX = shutil.which("g++")
SOURCE = Path(__file__).resolve().parents[1] / "cinegpu" / "encode" / "cuda" / "host_emulation.cpp"
pytestmark = pytest.mark.skipif(CXX is None, reason="g++ not installed: no host build")

THREADS = 256                      # encode/gpu.py's block size
SDC_S, SD_S, SD_ROWS = 32, 64, 32  # forward.cu's column segments, row segments, rows a block
SENTINEL = np.int32(0x7FC0BEEF)     # a NaN as float32: any write over it shows
PAD = 5                             # samples between component planes in the buffers

#: (grid, threads, reverse): encode/gpu.py's launch, one block per component, reversed order
GRIDS = [("gpu", THREADS, False), ("one", THREADS, True), ("gpu", 96, True)]
GRID_IDS = ["gpu", "one-reversed", "gpu-96-reversed"]
SD_THREADS = 32                     # encode/gpu.py's block size for the rows' 1D_SD kernels
SDC_THREADS = 128                   # and for the columns' (a thread a column)
#: the same for the 1D_SD kernels: gpu.py's launch (a thread a line), then more threads
#: than lines and fewer, reversed
SD_GRIDS = [("gpu", SD_THREADS, False), ("one", SD_THREADS, True), ("gpu", 96, True),
            ("gpu", 5, True)]
SD_GRID_IDS = ["gpu", "one-reversed", "gpu-96-reversed", "gpu-5-reversed"]
#: the columns' (gpu.py: SDC_THREADS a block), then a warp, and fewer threads than columns
COLS_GRIDS = [("gpu", SDC_THREADS, False), ("one", SDC_THREADS, True), ("gpu", 32, True),
              ("gpu", 5, True)]
COLS_GRID_IDS = ["gpu", "one-reversed", "gpu-32-reversed", "gpu-5-reversed"]


@pytest.fixture(scope="module")
def lib():
    return host_build(SOURCE, "-ffp-contract=off")


def _ptr(a: np.ndarray | None) -> ctypes.c_void_p:
    return ctypes.c_void_p(None if a is None else a.ctypes.data)


def _ints(*v):
    return [ctypes.c_int(int(x)) for x in v]


def _lls(*v):
    return [ctypes.c_longlong(int(x)) for x in v]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.int32) if a.dtype == np.float32 else a


def _assert_bits(want: np.ndarray, got: np.ndarray, what=""):
    assert want.shape == got.shape and want.dtype == got.dtype, what
    np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=str(what))


def _sentinel(size: int, dtype) -> np.ndarray:
    return np.full(size, SENTINEL, np.int32).view(dtype)


# ------------------------------------------------------------------ colour -------

#: input type: (code in colour_emulate, [(precisions, signed, low, high) per case])
COLOUR_INPUTS = {
    np.uint8: (0, [((8, 8, 8), False, 0, 255)]),
    np.uint16: (1, [((12, 10, 16), False, 0, 4095), ((16, 16, 16), False, 0, 65535)]),
    np.int16: (2, [((12, 12, 12), True, -2048, 2047), ((16, 16, 16), True, -32768, 32767)]),
    # the int32 copies of other inputs: unsigned 12-bit, and signed across (and past) 2^24
    np.int32: (3, [((12, 12, 12), False, 0, 4095),
                   ((31, 31, 31), True, -(1 << 30), 1 << 30)]),
}


def _plan(h: int, w: int, ncomp: int):
    """What tile_planes reads of a TilePlan: components 0 .. ncomp - 1 of one (h, w) tile."""
    return SimpleNamespace(components=[SimpleNamespace(c=c, x0=0, y0=0, x1=w, y1=h)
                                       for c in range(ncomp)])


def colour_host(lib, comps, rs: int, ps: int, h: int, w: int, shifts, mct: int,
                reversible: bool, grid: str, threads: int, reverse: bool, step=(1.0, 0.0)):
    """colour_{i32,f32}_<in> of the component views ``comps`` (sharing one buffer's strides
    rs, ps, or separate planes) -> (out buffer, cs): planes at out[c * cs:]; ``step``: the
    code-value step's (scale, peak), peak 0 none."""
    ncomp = len(comps)
    code = COLOUR_INPUTS[comps[0].dtype.type][0]
    cs = h * w + PAD
    out = _sentinel(3 * cs + PAD, np.int32 if reversible else np.float32)
    x = [comps[min(i, ncomp - 1)] for i in range(3)]
    gx, gy = (min(-(-w // threads), 64), h) if grid == "gpu" else (1, 1)
    sh = [ctypes.c_double(shifts[min(i, ncomp - 1)]) for i in range(3)]
    rc = lib.colour_emulate(*_ints(code, reversible), *(_ptr(a) for a in x), *_lls(rs, ps),
                            *_ints(h, w, ncomp, mct), *sh, _ptr(out), *_lls(cs),
                            *(ctypes.c_float(v) for v in step), *_ints(gx, gy, threads, reverse))
    assert rc == 0
    return out, cs


def _assert_colour_planes(want, out: np.ndarray, cs: int, what):
    """colour_host's planes (component c at out[c * cs:]) are ``want`` to the bit, and the
    padding between planes and past the last one is untouched."""
    mask = np.ones(out.size, bool)
    for c, plane in enumerate(want):
        _assert_bits(plane.ravel(), out[c * cs:c * cs + plane.size], what)
        mask[c * cs:c * cs + plane.size] = False
    assert (out.view(np.int32)[mask] == SENTINEL).all(), what


@pytest.mark.parametrize("reversible", [False, True], ids=["f32", "i32"])
@pytest.mark.parametrize("grid,threads,reverse", [("gpu", THREADS, False), ("gpu", THREADS, True),
                                                  ("one", 32, True)],
                         ids=["gpu", "gpu-reversed", "one-32-reversed"])
def test_colour_host_matches_tile_planes(lib, reversible, grid, threads, reverse):
    rng = np.random.default_rng(7 + reversible)
    h, w = 5, 37
    for dtype, (_, cases) in COLOUR_INPUTS.items():
        for precisions, signed, lo, hi in cases:
            for ncomp in (1, 2, 3):
                big = rng.integers(lo, hi, (h + 3, w + 4, ncomp), dtype=np.int64,
                                   endpoint=True).astype(dtype)
                big[1, 1, :], big[h, w, :] = lo, hi          # the range's ends in the tile
                big[2, 2, :] = (lo, hi, 0)[:ncomp]
                tile = big[1:1 + h, 1:1 + w]
                layouts = {
                    # the components of an interleaved image, a tile cropped out of it
                    "interleaved": [tile[..., c] for c in range(ncomp)],
                    # separate contiguous planes (rows reversed: other data)
                    "planes": [np.ascontiguousarray(tile[::-1, :, c]) for c in range(ncomp)],
                }
                for name, comps in layouts.items():
                    rs, ps = (s // comps[0].itemsize for s in comps[0].strides)
                    shifts = [0 if signed else 1 << (precisions[c] - 1) for c in range(ncomp)]
                    for mct in (0, 1):
                        with np.errstate(over="ignore"):
                            want = tile_planes(comps, _plan(h, w, ncomp), precisions,
                                               [signed] * ncomp, mct and ncomp == 3, reversible)
                        out, cs = colour_host(lib, comps, rs, ps, h, w, shifts, mct,
                                              reversible, grid, threads, reverse)
                        what = (np.dtype(dtype).name, precisions, ncomp, name, mct)
                        _assert_colour_planes(want, out, cs, what)


#: the code-value step's cases per input type: (top, bits, low, high) with samples drawn
#: from low..high, so below 0 and over top (clipped) where the type has room
CODE_VALUE_CASES = {
    np.uint8: [(255.0, 8, 0, 255), (255.0, 12, 0, 255), (200.0, 10, 0, 255)],
    np.uint16: [(65535.0, 12, 0, 65535), (65535.0, 16, 0, 65535), (1023.0, 10, 0, 1200),
                (4095.0, 12, 0, 65535)],
    np.int16: [(32767.0, 12, -32768, 32767), (1023.0, 10, -50, 1100)],
    np.int32: [(float((1 << 24) + 3), 12, -(1 << 25), (1 << 25) + 7), (65535.0, 16, -9, 70000)],
}


def test_code_value_samples_are_the_hosts():
    """The twin's code values are FrameEncoders' host IMF path's, rint(peak unit_scale(s))."""
    from cinegpu.media.images.frames import unit_scale
    rng = np.random.default_rng(11)
    for dtype, cases in CODE_VALUE_CASES.items():
        for top, bits, lo, hi in cases:
            x = rng.integers(lo, hi, (9, 31), dtype=np.int64, endpoint=True).astype(dtype)
            want = np.rint(unit_scale(x, top) * np.float32((1 << bits) - 1)).astype(np.int32)
            got = code_value_samples(x, code_value_step(top, bits))
            _assert_bits(want, got, (np.dtype(dtype).name, top, bits))
            assert got.min() >= 0 and got.max() <= (1 << bits) - 1


@pytest.mark.parametrize("reversible", [False, True], ids=["f32", "i32"])
@pytest.mark.parametrize("grid,threads,reverse", [("gpu", THREADS, False), ("one", 32, True)],
                         ids=["gpu", "one-32-reversed"])
def test_colour_host_code_values_match_tile_planes(lib, reversible, grid, threads, reverse):
    """The colour kernels with IMF's code-value step (scale, peak) on: every input type, 1-3
    components, mct on and off, an interleaved image read in place and separate planes, as
    tile_planes(..., code_values=) (code_values' int32 planes, then the old colour step)."""
    rng = np.random.default_rng(17 + reversible)
    h, w = 5, 37
    runs = 0
    for dtype, cases in CODE_VALUE_CASES.items():
        for top, bits, lo, hi in cases:
            step = code_value_step(top, bits)
            for ncomp in (1, 2, 3):
                big = rng.integers(lo, hi, (h + 3, w + 4, ncomp), dtype=np.int64,
                                   endpoint=True).astype(dtype)
                big[1, 1, :], big[h, w, :] = lo, hi          # the range's ends in the tile
                big[2, 2, :] = (lo, hi, 0)[:ncomp]
                big[3, 3, :] = (int(top), 0, int(top))[:ncomp]    # white exactly
                tile = big[1:1 + h, 1:1 + w]
                layouts = {"interleaved": [tile[..., c] for c in range(ncomp)],
                           "planes": [np.ascontiguousarray(tile[::-1, :, c])
                                      for c in range(ncomp)]}
                precisions = (bits,) * ncomp
                shifts = [1 << (bits - 1)] * ncomp
                for name, comps in layouts.items():
                    rs, ps = (st // comps[0].itemsize for st in comps[0].strides)
                    for mct in (0, 1):
                        want = tile_planes(comps, _plan(h, w, ncomp), precisions,
                                           [False] * ncomp, mct and ncomp == 3, reversible,
                                           code_values=step)
                        out, cs = colour_host(lib, comps, rs, ps, h, w, shifts, mct,
                                              reversible, grid, threads, reverse, step)
                        what = (np.dtype(dtype).name, top, bits, ncomp, name, mct)
                        _assert_colour_planes(want, out, cs, what)
                        runs += 1
    assert runs == sum(map(len, CODE_VALUE_CASES.values())) * 3 * 2 * 2


# -------------------------------------------------------------- VER_SD (cols_c) ------

#: (n, w): lengths 1, 2, odd, one segment exactly, several segments (with and without the
#: extension in a window); widths across blocks
COLS_SHAPES = [(1, 5), (2, 33), (3, 1), (9, 31), (32, 32), (64, 130), (67, 40), (131, 17)]


def cols_c_host(lib, x: np.ndarray, p: int, grid: str, threads: int, reverse: bool):
    """sd{97,53}_cols_c of the (ncomp, n, w) stack ``x`` (planes PAD samples apart) ->
    the output buffer and its component stride."""
    filt = 97 if x.dtype == np.float32 else 53
    ncomp, n, w = x.shape
    cs = n * w + PAD
    buf = _sentinel(ncomp * cs, x.dtype)
    buf.view(np.int32)[:] = np.random.default_rng(n).integers(-9, 9, buf.size)  # not x
    for z in range(ncomp):
        buf[z * cs:z * cs + n * w] = x[z].ravel()
    out = _sentinel(ncomp * cs + PAD, x.dtype)
    gx, gy = (-(-w // threads), -(-n // SDC_S)) if grid == "gpu" else (1, 1)
    rc = lib.sd_cols_c_emulate(*_ints(filt), _ptr(buf), _ptr(out), *_lls(cs),
                               *_ints(n, w, p, gx, gy, ncomp, threads, reverse))
    assert rc == 0
    return out, cs


@pytest.mark.parametrize("filt", ["97", "53"])
@pytest.mark.parametrize("grid,threads,reverse", COLS_GRIDS, ids=COLS_GRID_IDS)
def test_sd_cols_c_host_matches_numpy(lib, filt, grid, threads, reverse):
    rng = np.random.default_rng(11 + threads + reverse)
    sd = _sd_97 if filt == "97" else _sd_53
    for n, w in COLS_SHAPES:
        for p in (0, 1):
            for nc in (1, 2, 3):
                if filt == "97":
                    x = (rng.normal(0, 500, (nc, n, w)) *
                         rng.choice([1e-3, 1, 1e4], (nc, n, w))).astype(np.float32)
                else:
                    x = rng.integers(-(1 << 13), 1 << 13, (nc, n, w)).astype(np.int32)
                out, cs = cols_c_host(lib, x, p, grid, threads, reverse)
                mask = np.ones(out.size, bool)
                for z in range(nc):
                    lo, hi = sd(x[z], p, 0)
                    want = np.concatenate([lo, hi], axis=0).ravel()   # low rows, high rows
                    _assert_bits(want, out[z * cs:z * cs + n * w], (n, w, p, nc, z))
                    mask[z * cs:z * cs + n * w] = False
                assert (out.view(np.int32)[mask] == SENTINEL).all(), (n, w, p, nc)


# ------------------------------------------------------- HOR_SD + quantisation -------

#: (m rows, n samples, vertical low halves nlv): n = 1, 2, odd, even, several segments;
#: m odd with nlv between 0 and m, nlv = 0 and m, m across row groups
ROWS_CASES = [(1, 1, (1, 0)), (5, 2, (3, 0)), (7, 9, (4, 3, 7)), (9, 67, (5, 4)),
              (3, 130, (2, 1)), (17, 33, (9,)), (4, 64, (2,)), (3, 203, (2,))]


def rows_q_host(lib, x: np.ndarray, p: int, nlv: int, ll_q: int, deltas: np.ndarray,
                grid: str, threads: int, reverse: bool, rng):
    """sd{97,53}_rows_q of the (ncomp, m, n) stack ``x`` -> (ll buffer, llcs, flat, offs):
    every component's four bands at their own places of a sentinel-filled flat buffer."""
    filt = 97 if x.dtype == np.float32 else 53
    ncomp, m, n = x.shape
    nl = (n - p + 1) // 2
    nh = n - nl
    sizes = [nlv * nl, nlv * nh, (m - nlv) * nl, (m - nlv) * nh]   # LL, HL, LH, HH
    # the bands of all components in a shuffled order, gaps of 0-3 samples between them
    offs = np.zeros((ncomp, 4), np.int64)
    at = int(rng.integers(0, 4))
    for i in rng.permutation(4 * ncomp):
        offs[i // 4, i % 4] = at
        at += sizes[i % 4] + int(rng.integers(0, 4))
    flat = np.full(at + PAD, SENTINEL, np.int32)
    xcs = m * n + PAD
    buf = np.zeros(ncomp * xcs, x.dtype)
    buf.view(np.int32)[:] = rng.integers(-9, 9, buf.size)                      # not x
    for z in range(ncomp):
        buf[z * xcs:z * xcs + m * n] = x[z].ravel()
    llcs = nlv * nl + PAD
    ll = _sentinel(ncomp * llcs + PAD, x.dtype)
    inv = (1.0 / deltas).astype(np.float32)     # as quantize_band: np.float32(1.0 / delta)
    gx, gy = (-(-n // SD_S), -(-m // SD_ROWS)) if grid == "gpu" else (1, 1)
    tops = np.zeros(4 * ncomp, np.uint32)
    rc = lib.sd_rows_q_emulate(*_ints(filt), _ptr(buf), *_lls(xcs), *_ints(n, m, p, nlv),
                               _ptr(ll), *_lls(llcs), _ptr(flat), _ptr(offs), _ptr(inv),
                               *_ints(ll_q), _ptr(tops), *_ints(gx, gy, ncomp, threads, reverse))
    assert rc == 0
    return ll, llcs, flat, offs, tops.reshape(ncomp, 4)


@pytest.mark.parametrize("filt", ["97", "53"])
@pytest.mark.parametrize("grid,threads,reverse", SD_GRIDS, ids=SD_GRID_IDS)
def test_sd_rows_q_host_matches_numpy(lib, filt, grid, threads, reverse):
    rng = np.random.default_rng(23 + threads + reverse)
    sd = _sd_97 if filt == "97" else _sd_53
    reversible = filt == "53"
    for m, n, nlvs in ROWS_CASES:
        for nlv, p, ll_q, ncomp in itertools.product(nlvs, (0, 1), (0, 1), (1, 2, 3)):
            if filt == "97":
                x = (rng.normal(0, 300, (ncomp, m, n)) *
                     rng.choice([1e-3, 1, 100], (ncomp, m, n))).astype(np.float32)
                x[..., ::5] = 0.0
            else:
                x = rng.integers(-(1 << 13), 1 << 13, (ncomp, m, n)).astype(np.int32)
            deltas = rng.uniform(0.05, 9.0, (ncomp, 4))
            ll, llcs, flat, offs, tops = rows_q_host(lib, x, p, nlv, ll_q, deltas, grid,
                                                     threads, reverse, rng)
            want_tops = np.zeros((ncomp, 4), np.uint32)
            want_flat = np.full(flat.size, SENTINEL, np.int32)
            want_ll = _sentinel(ll.size, x.dtype)
            for z in range(ncomp):
                lo, hi = sd(x[z], p, 1)
                bands = (lo[:nlv], hi[:nlv], lo[nlv:], hi[nlv:])   # LL HL LH HH
                for j, band in enumerate(bands):
                    if j == 0 and not ll_q:
                        want_ll[z * llcs:z * llcs + band.size] = band.ravel()
                        continue
                    q = quantize_band(band, deltas[z, j], reversible).ravel()
                    want_flat[offs[z, j]:offs[z, j] + q.size] = q
                    if q.size:      # as band_absmax_i32: |INT_MIN| exact, as unsigned
                        want_tops[z, j] = np.abs(q.astype(np.int64)).max()
            what = (m, n, nlv, p, ll_q, ncomp)
            _assert_bits(want_flat, flat, what)
            _assert_bits(want_ll, ll, what)
            np.testing.assert_array_equal(tops, want_tops, err_msg=str(what))


# ---------------------------------------------------------------- image_extremes -------

#: image_extremes_* in image_extremes_emulate's code order (u8, i8, u16, i16, u32, i32, i64)
EXTREMES_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64]


def extremes_host(lib, code: int, img: np.ndarray, gx: int, threads: int, reverse: bool):
    ncomp = img.shape[-1]
    out = np.empty(2 * ncomp, np.int64)
    out[0::2], out[1::2] = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    rc = lib.image_extremes_emulate(*_ints(code), _ptr(img), *_lls(img.size),
                                    *_ints(ncomp), _ptr(out), *_ints(gx, threads, reverse))
    assert rc == 0
    return out.reshape(ncomp, 2)


@pytest.mark.parametrize("code,dtype", list(enumerate(EXTREMES_DTYPES)),
                         ids=[np.dtype(d).name for d in EXTREMES_DTYPES])
def test_image_extremes_host_matches_numpy(lib, code, dtype):
    rng = np.random.default_rng(code)
    info = np.iinfo(dtype)
    for ncomp in (1, 2, 3, 4):
        threads = THREADS - THREADS % ncomp
        whole = rng.integers(info.min, info.max, (13, 29, ncomp), dtype=dtype, endpoint=True)
        whole[12, 28, ncomp - 1], whole[0, 0, 0] = info.min, info.max
        whole[5, 7, ncomp // 2] = info.max
        narrow = rng.integers(-3, 4, (11, 9, ncomp)).astype(dtype)   # wraps for unsigned
        narrow[..., 0] = 5                                           # a constant component
        narrow[10, 8, ncomp - 1] = info.min
        # sorted components of 2 * threads samples each: their maxima (or, reversed, minima)
        # in the last element, read by the last thread of a block (every grid)
        ramp = np.sort(rng.integers(info.min, info.max, (2 * threads, ncomp), dtype=dtype,
                                    endpoint=True), axis=0)
        ramp[0], ramp[-1] = info.min, info.max
        for img in (whole, narrow, whole[:1, :1].copy(), ramp, ramp[::-1].copy()):
            need = -(-img.size // threads)
            want = np.stack([img[..., c].min() for c in range(ncomp)]), \
                np.stack([img[..., c].max() for c in range(ncomp)])
            want = np.stack(want, axis=1).astype(np.int64)
            # enough blocks and more (the idle ones too), fewer (the grid-stride loop), one
            for gx, reverse in ((need + 1, False), (max(1, need // 3), True), (1, False),
                                (1, True)):
                got = extremes_host(lib, code, img, gx, threads, reverse)
                np.testing.assert_array_equal(got, want, err_msg=str((ncomp, img.shape, gx,
                                                                      reverse)))


@pytest.mark.parametrize("gx,threads,reverse", [(1, 1, False), (3, 32, True), (2, 256, False)])
def test_band_clip_host_matches_numpy(lib, gx, threads, reverse):
    """band_clip_i32 clips every band to [-lim, lim] (np.clip); band_clip_over_i32 only the
    bands whose given maximum is over the limit, leaving the others unread (a band whose
    stated maximum is at its limit keeps its larger samples)."""
    rng = np.random.default_rng(gx + threads)
    off = np.array([0, 40, 40, 47, 300], np.int64)
    length = np.array([40, 0, 7, 253, 1], np.int64)
    lim = np.array([5, 9, 0, 100, 3], np.int32)
    flat = rng.integers(-300, 300, 301).astype(np.int32)
    flat[0] = np.iinfo(np.int32).min + 1
    tops = np.array([301, 0, 0, 100, 9], np.uint32)   # band 3 said to fit: left alone
    for over in (False, True):
        got = flat.copy()
        rc = lib.band_clip_emulate(_ptr(got), _ptr(off), _ptr(length), _ptr(lim),
                                   _ptr(tops if over else None), *_ints(5, gx, threads, reverse))
        assert rc == 0
        want = flat.copy()
        for b, (o, n, m) in enumerate(zip(off, length, lim)):
            if not over or tops[b] > m:
                np.clip(want[o:o + n], -m, m, out=want[o:o + n])
        np.testing.assert_array_equal(got, want)
        assert (got[47:300] != np.clip(flat[47:300], -100, 100)).any() == over


def test_host_entry_points_reject_bad_arguments(lib):
    x = np.zeros(8, np.int32)
    out = np.zeros(8, np.int64)
    assert lib.image_extremes_emulate(*_ints(0), _ptr(x), *_lls(8), *_ints(3), _ptr(out),
                                      *_ints(1, 256, 0)) == -1     # 256 % 3 != 0
    assert lib.image_extremes_emulate(*_ints(0), _ptr(x), *_lls(8), *_ints(5), _ptr(out),
                                      *_ints(1, 255, 0)) == -1     # ncomp > 4
    assert lib.sd_cols_c_emulate(*_ints(42), _ptr(x), _ptr(x), *_lls(0),
                                 *_ints(1, 1, 0, 1, 1, 1, 256, 0)) == -1
