"""numba element-wise kernels of the reconstruction stage (flat arrays).

T.800 E.1 dequantisation, G.2/G.3 inverse RCT/ICT, G.1.2 DC level shift and
clipping, and their fusions; each the numpy twin's arithmetic, element by
element (float32, no fused multiply-adds), so results agree bit for bit.
Also used row by row by the fused frame kernels of :mod:`.dwt_numba`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .mct import _ICT_B_U, _ICT_G_U, _ICT_G_V, _ICT_R_V

__all__ = [
    "dequantize_f32",
    "dequantize_i32",
    "ict",
    "ict_samples",
    "rct",
    "rct_samples",
    "sample_f",
    "sample_i",
    "to_samples_f",
    "to_samples_i",
]

_JIT = dict(cache=True, nogil=True, fastmath=False)


@njit(**_JIT)
def dequantize_f32(v, scale, out):
    for i in range(v.shape[0]):
        out[i] = np.float32(v[i]) * scale


@njit(**_JIT)
def dequantize_i32(v, out):
    for i in range(v.shape[0]):
        x = v[i]
        out[i] = (x - (x >> 31)) >> 1


@njit(**_JIT)
def rct(y0, y1, y2, r, g, b):
    for i in range(y0.shape[0]):
        gg = y0[i] - ((y1[i] + y2[i]) >> 2)
        r[i] = y2[i] + gg
        g[i] = gg
        b[i] = y1[i] + gg


@njit(**_JIT)
def ict(y0, y1, y2, r, g, b):
    for i in range(y0.shape[0]):
        y = y0[i]
        u = y1[i]
        v = y2[i]
        r[i] = y + v * _ICT_R_V
        gg = y - u * _ICT_G_U
        g[i] = gg - v * _ICT_G_V
        b[i] = y + u * _ICT_B_U


@njit(inline="always")
def sample_f(v, shift, lo, hi):
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
def sample_i(v, shift, lo, hi):
    if v < lo - shift:
        return np.int32(lo)
    if v > hi - shift:
        return np.int32(hi)
    return np.int32(v + shift)


@njit(**_JIT)
def to_samples_f(x, shift, lo, hi, out):
    for i in range(x.shape[0]):
        out[i] = sample_f(x[i], shift, lo, hi)


@njit(**_JIT)
def to_samples_i(x, shift, lo, hi, out):
    for i in range(x.shape[0]):
        out[i] = sample_i(x[i], shift, lo, hi)


@njit(**_JIT)
def ict_samples(y0, y1, y2, s, lo, hi, r, g, b):
    for i in range(y0.shape[0]):
        y = y0[i]
        u = y1[i]
        v = y2[i]
        r[i] = sample_f(y + v * _ICT_R_V, s[0], lo[0], hi[0])
        gg = y - u * _ICT_G_U
        g[i] = sample_f(gg - v * _ICT_G_V, s[1], lo[1], hi[1])
        b[i] = sample_f(y + u * _ICT_B_U, s[2], lo[2], hi[2])


@njit(**_JIT)
def rct_samples(y0, y1, y2, s, lo, hi, r, g, b):
    for i in range(y0.shape[0]):
        gg = y0[i] - ((y1[i] + y2[i]) >> 2)
        r[i] = sample_i(y2[i] + gg, s[0], lo[0], hi[0])
        g[i] = sample_i(gg, s[1], lo[1], hi[1])
        b[i] = sample_i(y1[i] + gg, s[2], lo[2], hi[2])
