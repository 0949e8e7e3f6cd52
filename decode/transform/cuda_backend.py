"""CuPy back end of the reconstruction stage: the numpy API on device arrays.

Same functions and arguments as :mod:`cinegpu.decode.transform` (numpy, the
twin every kernel is tested against), taking and returning ``cupy`` arrays.
5/3 + RCT results equal the twins' bit for bit; 9/7 + ICT to float32 rounding
(the kernels avoid fused multiply-adds), so samples within 1 code value.

Inverse DWT per level (T.800 F.3.2): one launch lifts every row of both
halves (HOR_SR, ``idwt*_rows``) into a (mL + mH) x N plane, a transpose
turns its columns into rows, a second launch lifts those (VER_SR) and a
last transpose restores row order: 4 launches a level.
"""

from __future__ import annotations

import functools
from typing import Sequence

import cupy
import numpy as np

from . import display
from .dwt import Level, _band_sizes
from .gpu import kernel, launch_1d

__all__ = [
    "dequantize",
    "idwt_53",
    "idwt_97",
    "inverse_ict",
    "inverse_rct",
    "to_samples",
    "xyz_to_rgb",
]

_I32 = np.int32
_ROW_THREADS = 256
_DEFAULT_SMEM = 48 * 1024  # bytes of dynamic shared memory without opting in


def _dev(a, dtype):
    """C-contiguous device array of ``dtype`` (copies only when needed)."""
    return cupy.ascontiguousarray(cupy.asarray(a, dtype=dtype))


def dequantize(coeffs, delta: float, reversible: bool):
    """T.800 E.1 on the GPU; see :func:`..quantization.dequantize`."""
    v = _dev(coeffs, cupy.int32)
    if reversible:
        out = cupy.empty_like(v)
        launch_1d(kernel("pointwise", "dequantize_reversible_i32"), v.size, (v, out, np.int64(v.size)))
        return out
    out = cupy.empty(v.shape, cupy.float32)
    k = kernel("pointwise", "dequantize_irreversible_f32")
    launch_1d(k, v.size, (v, out, np.float32(delta / 2.0), np.int64(v.size)))
    return out


def _transpose(a):
    rows, cols = a.shape
    out = cupy.empty((cols, rows), a.dtype)
    if a.size:
        grid = ((cols + 31) // 32, (rows + 31) // 32)
        kernel("dwt", "transpose_b32")(grid, (32, 8), (a, out, _I32(rows), _I32(cols)))
    return out


def _rows(name, lo_a, hi_a, rows_a, lo_b, hi_b, lo_stride, hi_stride, nl, nh, p, out):
    """Lift ``out.shape[0]`` lines of nl + nh samples (1D_SR), one block each."""
    n = nl + nh
    if not (out.shape[0] and n):
        return
    smem = n * 4
    k = kernel("dwt", name)
    if smem > _DEFAULT_SMEM:
        if smem > cupy.cuda.Device().attributes.get("MaxSharedMemoryPerBlockOptin", _DEFAULT_SMEM):
            raise ValueError(f"a line of {n} samples does not fit in shared memory")
        k.max_dynamic_shared_size_bytes = smem
    args = (lo_a, hi_a, _I32(rows_a), lo_b, hi_b, _I32(lo_stride), _I32(hi_stride),
            _I32(nl), _I32(nh), _I32(p), out, _I32(out.shape[1]))
    k((out.shape[0],), (_ROW_THREADS,), args, shared_mem=smem)


def _idwt(ll, levels: Sequence[Level], dtype, name: str):
    a = _dev(ll, dtype)
    for hl, lh, hh, rect in levels:
        hl, lh, hh = (_dev(b, dtype) for b in (hl, lh, hh))
        u0, v0, u1, v1 = rect
        nl, nh = _band_sizes(u0, u1)
        ml, mh = _band_sizes(v0, v1)
        for tag, band, want in (("ll", a, (ml, nl)), ("hl", hl, (ml, nh)),
                                ("lh", lh, (mh, nl)), ("hh", hh, (mh, nh))):
            if band.shape != want:
                raise ValueError(f"{tag} band is {band.shape}, resolution {rect} needs {want} (T.800 F.3.3)")
        n, m = u1 - u0, v1 - v0
        tb = cupy.empty((m, n), dtype)  # HOR_SR: low rows on top, high rows below
        _rows(name, a, hl, ml, lh, hh, nl, nh, nl, nh, u0 & 1, tb)
        tbt = _transpose(tb)
        res_t = cupy.empty((n, m), dtype)  # VER_SR on the transposed plane
        # high-pass part of line c starts at tbt[c, ml]: pass a contiguous 1-D view
        _rows(name, tbt, tbt.ravel()[ml:], n, tbt, tbt, m, m, ml, mh, v0 & 1, res_t)
        a = _transpose(res_t)
    return a


def idwt_53(ll, levels: Sequence[Level]):
    """Inverse 5/3 DWT on the GPU (int32); see :func:`..dwt.idwt_53`."""
    return _idwt(ll, levels, cupy.int32, "idwt53_rows_i32")


def idwt_97(ll, levels: Sequence[Level]):
    """Inverse 9/7 DWT on the GPU (float32); see :func:`..dwt.idwt_97`."""
    return _idwt(ll, levels, cupy.float32, "idwt97_rows_f32")


def _mct(name, dtype, y0, y1, y2, out):
    ys = [_dev(y, dtype) for y in (y0, y1, y2)]
    if out is None:
        out = tuple(cupy.empty_like(ys[0]) for _ in range(3))
    n = ys[0].size
    launch_1d(kernel("pointwise", name), n, (*ys, *out, np.int64(n)))
    return out


def inverse_rct(y0, y1, y2, *, out=None):
    """T.800 G.2 on the GPU; ``out``: three int32 arrays (may be the inputs)."""
    return _mct("inverse_rct_i32", cupy.int32, y0, y1, y2, out)


def inverse_ict(y0, y1, y2, *, out=None):
    """T.800 G.3 on the GPU; ``out``: three float32 arrays (may be the inputs)."""
    return _mct("inverse_ict_f32", cupy.float32, y0, y1, y2, out)


def to_samples(x, precision: int, signed: bool):
    """T.800 G.1.2 on the GPU; see :func:`..level_shift.to_samples`."""
    x = cupy.ascontiguousarray(cupy.asarray(x))
    if signed:
        shift, lo, hi = 0, -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    else:
        shift, lo, hi = 1 << (precision - 1), 0, (1 << precision) - 1
    out = cupy.empty(x.shape, cupy.int32)
    if x.dtype.kind == "f":
        if precision > 24:
            raise ValueError("float path supports precision <= 24 bits")
        name, x = "to_samples_f32", x.astype(cupy.float32, copy=False)
    else:
        name, x = "to_samples_i32", x.astype(cupy.int32, copy=False)
    launch_1d(kernel("pointwise", name), x.size, (x, out, _I32(shift), _I32(lo), _I32(hi), np.int64(x.size)))
    return out


@functools.lru_cache(maxsize=None)
def _display_constants(device_id: int, primaries: str, in_bits: int):
    with cupy.cuda.Device(device_id):
        lut = cupy.asarray(display.xyz_decode_lut(in_bits))
        m = cupy.asarray(display.xyz_to_rgb_matrix(primaries).astype(np.float32).ravel())
    return lut, m


def xyz_to_rgb(x, y, z, *, primaries: str = "p3d65", out_bits: int = 16, alpha: bool = False,
               in_bits: int = 12, out=None):
    """DCI output transform on the GPU; see :func:`..display.xyz_to_rgb`.

    ``out``: optional C-contiguous uint16 device array (H, W, 3 or 4) to
    write into (e.g. a mapped RGBA16 texture buffer); returned.
    """
    if not 1 <= out_bits <= 16:
        raise ValueError(f"out_bits must be 1..16, got {out_bits}")
    inv_gamma = np.float32(1.0 / display.display_gamma(primaries))
    planes = [_dev(c, cupy.int32) for c in (x, y, z)]
    channels = 4 if alpha else 3
    shape = planes[0].shape + (channels,)
    if out is None:
        out = cupy.empty(shape, cupy.uint16)
    elif out.shape != shape or out.dtype != cupy.uint16 or not out.flags.c_contiguous:
        raise ValueError(f"out must be C-contiguous uint16 {shape}, got {out.dtype} {out.shape}")
    lut, m = _display_constants(cupy.cuda.Device().id, primaries, in_bits)
    n = planes[0].size
    args = (*planes, lut, m, _I32((1 << in_bits) - 1), inv_gamma,
            np.float32((1 << out_bits) - 1), _I32(channels), out, np.int64(n))
    launch_1d(kernel("pointwise", "xyz_to_rgb_u16"), n, args)
    return out
