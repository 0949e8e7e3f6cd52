"""numba CPU back end of the reconstruction stage: the numpy API, compiled.

Same functions and arguments as :mod:`cinegpu.decode.transform` (the numpy
twin, which stays the reference), on numpy arrays, single-threaded and
releasing the GIL.  Results equal the twin's bit for bit, 5/3 + RCT and
9/7 + ICT alike: the float32 operations are the twin's, in its order, with no
fused multiply-adds (``fastmath=False``).  The inverse DWTs are streaming
line-based kernels (:mod:`.dwt_numba`).

Two fused entry points go beyond the twin's API, for a decoder that wants
fewer passes over a frame (each equal to the composition it replaces):

* :func:`dequantize_idwt` -- ``idwt(dequantize(band) for every band)``, the
  dequantisation done as each band row is loaded;
* :func:`inverse_mct_to_samples` -- inverse RCT/ICT, DC level shift, rounding,
  clipping and the cast to int32 in one pass over the three components.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit

from . import level_shift as _np_level_shift
from .display import xyz_to_rgb
from .dwt import Level, _band_sizes, _check_level
from .dwt_numba import level_53, level_97
from .mct import _ICT_B_U, _ICT_G_U, _ICT_G_V, _ICT_R_V

__all__ = [
    "dequantize",
    "dequantize_idwt",
    "idwt_53",
    "idwt_97",
    "inverse_ict",
    "inverse_mct_to_samples",
    "inverse_rct",
    "to_samples",
    "xyz_to_rgb",
]

_JIT = dict(cache=True, nogil=True, fastmath=False)


def _c(a, dtype=None):
    """C-contiguous ndarray (of ``dtype``), copying only when needed."""
    return np.ascontiguousarray(a, dtype=dtype)


# ------------------------------------------------------ quantisation --------


@njit(**_JIT)
def _dequantize_f32(v, scale, out):
    for i in range(v.shape[0]):
        out[i] = np.float32(v[i]) * scale


@njit(**_JIT)
def _dequantize_i32(v, out):
    for i in range(v.shape[0]):
        x = v[i]
        out[i] = (x - (x >> 31)) >> 1


def dequantize(coeffs: np.ndarray, delta: float, reversible: bool) -> np.ndarray:
    """T.800 E.1; see :func:`..quantization.dequantize` (same result, bit for bit)."""
    v = _c(coeffs, np.int32)
    out = np.empty(v.shape, np.int32 if reversible else np.float32)
    if reversible:
        _dequantize_i32(v.reshape(-1), out.reshape(-1))
    else:
        _dequantize_f32(v.reshape(-1), np.float32(delta / 2.0), out.reshape(-1))
    return out


# ------------------------------------------------------------- IDWT ---------


def _idwt(ll, levels, dtype, scales):
    """Level loop shared by the IDWTs; ``scales``: per band (ll first, then
    hl, lh, hh of each level) the dequantisation argument of the kernels."""
    level = level_97 if dtype == np.float32 else level_53
    if scales is None:
        a = _c(ll, dtype)
        levels = [(_c(hl, dtype), _c(lh, dtype), _c(hh, dtype), rect) for hl, lh, hh, rect in levels]
    else:
        a = _c(ll, np.int32)
        levels = [(_c(hl, np.int32), _c(lh, np.int32), _c(hh, np.int32), rect) for hl, lh, hh, rect in levels]
        if not levels:
            return dequantize(a, scales[0], dtype == np.int32)
    for j, (hl, lh, hh, rect) in enumerate(levels):
        _check_level(a, hl, lh, hh, rect)
        u0, v0, u1, v1 = rect
        if dtype == np.float32:  # factors Δb / 2, 1.0 for bands already float
            ds = [None if j or scales is None else scales[0]]
            ds += [None] * 3 if scales is None else scales[1 + 3 * j : 4 + 3 * j]
            dq = np.array([1.0 if d is None else np.float32(d / 2.0) for d in ds], np.float32)
        else:  # 1: halve on load (reversible E.1.2)
            dq = np.array([int(j == 0), 1, 1, 1] if scales is not None else [0] * 4, np.int32)
        out = np.empty((v1 - v0, u1 - u0), dtype)
        level(a, hl, lh, hh, dq, u0, v0, out)
        a = out
    return a


def idwt_53(ll: np.ndarray, levels: Sequence[Level]) -> np.ndarray:
    """Inverse 5/3 DWT (int32); see :func:`..dwt.idwt_53` (same result, bit for bit)."""
    return _idwt(ll, levels, np.int32, None)


def idwt_97(ll: np.ndarray, levels: Sequence[Level]) -> np.ndarray:
    """Inverse 9/7 DWT (float32); see :func:`..dwt.idwt_97` (same result, bit for bit)."""
    return _idwt(ll, levels, np.float32, None)


def dequantize_idwt(ll: np.ndarray, levels: Sequence[Level], deltas: Sequence[float],
                    reversible: bool) -> np.ndarray:
    """``idwt(dequantize(ll), [dequantize(hl), ... per level])`` in one pass a level.

    ``ll`` and the bands of ``levels``: int32 tier-1 output (2 x the index,
    T.800 E.1), laid out as for :func:`idwt_53`; ``deltas``: the step size
    Δb of every band, LL first then HL, LH, HH of each level, coarsest first
    (ignored when ``reversible``).  Returns what ``idwt_53`` (reversible) or
    ``idwt_97`` returns for the dequantised bands, bit for bit.
    """
    if len(deltas) != 1 + 3 * len(levels):
        raise ValueError(f"need {1 + 3 * len(levels)} step sizes, got {len(deltas)}")
    return _idwt(ll, levels, np.int32 if reversible else np.float32, list(deltas))


# -------------------------------------------------------------- MCT ---------


@njit(**_JIT)
def _rct(y0, y1, y2, r, g, b):
    for i in range(y0.shape[0]):
        gg = y0[i] - ((y1[i] + y2[i]) >> 2)
        r[i] = y2[i] + gg
        g[i] = gg
        b[i] = y1[i] + gg


@njit(**_JIT)
def _ict(y0, y1, y2, r, g, b):
    for i in range(y0.shape[0]):
        y = y0[i]
        u = y1[i]
        v = y2[i]
        r[i] = y + v * _ICT_R_V
        gg = y - u * _ICT_G_U
        g[i] = gg - v * _ICT_G_V
        b[i] = y + u * _ICT_B_U


def _mct(kernel, dtype, y0, y1, y2, out):
    ys = [_c(y, dtype) for y in (y0, y1, y2)]
    if not (ys[0].shape == ys[1].shape == ys[2].shape):
        raise ValueError(f"components differ in shape: {[y.shape for y in ys]}")
    if out is None:
        out = tuple(np.empty(ys[0].shape, dtype) for _ in range(3))
    for o in out:
        if o.shape != ys[0].shape or o.dtype != dtype or not o.flags.c_contiguous:
            raise ValueError(f"out must be three C-contiguous {np.dtype(dtype)} {ys[0].shape} arrays")
    kernel(*(y.reshape(-1) for y in ys), *(o.reshape(-1) for o in out))
    return tuple(out)


def inverse_rct(y0, y1, y2, *, out=None):
    """T.800 G.2; see :func:`..mct.inverse_rct`.  ``out``: three int32 arrays
    (may be the inputs)."""
    return _mct(_rct, np.int32, y0, y1, y2, out)


def inverse_ict(y0, y1, y2, *, out=None):
    """T.800 G.3; see :func:`..mct.inverse_ict`.  ``out``: three float32
    arrays (may be the inputs)."""
    return _mct(_ict, np.float32, y0, y1, y2, out)


# ------------------------------------------------------ DC shift, clip ------


def _bounds(precision: int, signed: bool):
    if signed:
        return 0, -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    return 1 << (precision - 1), 0, (1 << precision) - 1


@njit(inline="always")
def _sample_f(v, shift, lo, hi):
    """G.1.2 for one float: round half to even, NaN -> lo, clip, shift."""
    v = np.rint(v)
    if v != v:
        return np.int32(lo)
    if v < lo - shift:
        return np.int32(lo)
    if v > hi - shift:
        return np.int32(hi)
    return np.int32(np.int32(v) + shift)


@njit(inline="always")
def _sample_i(v, shift, lo, hi):
    if v < lo - shift:
        return np.int32(lo)
    if v > hi - shift:
        return np.int32(hi)
    return np.int32(v + shift)


@njit(**_JIT)
def _to_samples_f(x, shift, lo, hi, out):
    for i in range(x.shape[0]):
        out[i] = _sample_f(x[i], shift, lo, hi)


@njit(**_JIT)
def _to_samples_i(x, shift, lo, hi, out):
    for i in range(x.shape[0]):
        out[i] = _sample_i(x[i], shift, lo, hi)


def to_samples(x: np.ndarray, precision: int, signed: bool) -> np.ndarray:
    """T.800 G.1.2; see :func:`..level_shift.to_samples` (same result, bit for bit).

    float32 (precision <= 24) and int32 inputs are compiled; other dtypes and
    precisions go to the numpy twin.
    """
    x = np.asarray(x)
    if precision > 24 or x.dtype not in (np.float32, np.int32):
        return _np_level_shift.to_samples(x, precision, signed)
    x = _c(x)
    shift, lo, hi = _bounds(precision, signed)
    out = np.empty(x.shape, np.int32)
    kernel = _to_samples_f if x.dtype == np.float32 else _to_samples_i
    kernel(x.reshape(-1), shift, lo, hi, out.reshape(-1))
    return out


@njit(**_JIT)
def _ict_samples(y0, y1, y2, s, lo, hi, r, g, b):
    for i in range(y0.shape[0]):
        y = y0[i]
        u = y1[i]
        v = y2[i]
        r[i] = _sample_f(y + v * _ICT_R_V, s[0], lo[0], hi[0])
        gg = y - u * _ICT_G_U
        g[i] = _sample_f(gg - v * _ICT_G_V, s[1], lo[1], hi[1])
        b[i] = _sample_f(y + u * _ICT_B_U, s[2], lo[2], hi[2])


@njit(**_JIT)
def _rct_samples(y0, y1, y2, s, lo, hi, r, g, b):
    for i in range(y0.shape[0]):
        gg = y0[i] - ((y1[i] + y2[i]) >> 2)
        r[i] = _sample_i(y2[i] + gg, s[0], lo[0], hi[0])
        g[i] = _sample_i(gg, s[1], lo[1], hi[1])
        b[i] = _sample_i(y1[i] + gg, s[2], lo[2], hi[2])


def inverse_mct_to_samples(y0, y1, y2, precisions: Sequence[int], signed: Sequence[bool]):
    """``to_samples(c, precisions[i], signed[i])`` of ``inverse_rct/ict(y0, y1, y2)``.

    int32 inputs take the RCT (G.2), float32 ones the ICT (G.3); one pass,
    three int32 arrays out, bit for bit the composition of the twin's
    functions.  Precisions 1..24.
    """
    reversible = np.asarray(y0).dtype.kind in "iu"
    dtype = np.int32 if reversible else np.float32
    ys = [_c(y, dtype) for y in (y0, y1, y2)]
    if not (ys[0].shape == ys[1].shape == ys[2].shape):
        raise ValueError(f"components differ in shape: {[y.shape for y in ys]}")
    if not all(1 <= p <= 24 for p in precisions) or len(precisions) != 3 or len(signed) != 3:
        raise ValueError(f"need three precisions of 1..24 bits, got {precisions}")
    s, lo, hi = (np.array(v, np.int64) for v in zip(*(_bounds(p, sg) for p, sg in zip(precisions, signed))))
    out = tuple(np.empty(ys[0].shape, np.int32) for _ in range(3))
    kernel = _rct_samples if reversible else _ict_samples
    kernel(*(y.reshape(-1) for y in ys), s, lo, hi, *(o.reshape(-1) for o in out))
    return out
