"""numba kernels that reconstruct a whole tile-component from the flat buffer in one call.

The level kernels of :mod:`.dwt_numba` take one decomposition level a call; a tile of
small tile-components (225 tiles of 8 resolutions in p1_05, 257 components in p0_13)
then spends its time in Python between calls.  These loops run every level of a
tile-component (and, for components 0-2 under a multiple component transformation,
the fused finest level + MCT + DC shift of :func:`.dwt_numba.last_level_97_ict`)
inside one compiled call, reading the bands straight out of the flat coefficient
buffer as a :class:`.layout.FlatLayout` places them.  Same kernels, same order of
operations, so the results are those of the per-level calls bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .dwt_numba import _JIT, last_level_53_rct, last_level_97_ict, level_53, level_97
from .pointwise_numba import to_samples_f, to_samples_i

__all__ = ["idwt_53_flat", "idwt_97_flat", "mct_53_flat", "mct_97_flat", "samples_53_flat",
           "samples_97_flat",
           "samples_batch_flat"]


@njit(**_JIT)
def _band(coeffs, bands, k):
    """Band ``k`` of ``bands`` (offset, height, width) as a 2-D view of the flat buffer."""
    o, h, w = bands[k, 0], bands[k, 1], bands[k, 2]
    return coeffs[o : o + h * w].reshape((h, w))


@njit(**_JIT)
def idwt_97_flat(coeffs, bands, rects, dq, nlev):
    """The first ``nlev`` (>= 1) 9/7 levels (F.3.2), dequantised on load (E.1): float32."""
    a = np.empty((rects[0, 3] - rects[0, 1], rects[0, 2] - rects[0, 0]), np.float32)
    k = np.int64(0)     # not literals 0..3: _band compiles once
    level_97(_band(coeffs, bands, k), _band(coeffs, bands, k + 1), _band(coeffs, bands, k + 2), _band(coeffs, bands, k + 3),
             dq[0], rects[0, 0], rects[0, 1], a)
    for j in range(1, nlev):
        out = np.empty((rects[j, 3] - rects[j, 1], rects[j, 2] - rects[j, 0]), np.float32)
        level_97(a, _band(coeffs, bands, 1 + 3 * j), _band(coeffs, bands, 2 + 3 * j), _band(coeffs, bands, 3 + 3 * j),
                 dq[j], rects[j, 0], rects[j, 1], out)
        a = out
    return a


@njit(**_JIT)
def idwt_53_flat(coeffs, bands, rects, q, nlev):
    """The first ``nlev`` (>= 1) 5/3 levels (F.3.2), tier-1 output halved on load: int32."""
    a = np.empty((rects[0, 3] - rects[0, 1], rects[0, 2] - rects[0, 0]), np.int32)
    k = np.int64(0)     # not literals 0..3: _band compiles once
    level_53(_band(coeffs, bands, k), _band(coeffs, bands, k + 1), _band(coeffs, bands, k + 2), _band(coeffs, bands, k + 3),
             q[0], rects[0, 0], rects[0, 1], a)
    for j in range(1, nlev):
        out = np.empty((rects[j, 3] - rects[j, 1], rects[j, 2] - rects[j, 0]), np.int32)
        level_53(a, _band(coeffs, bands, 1 + 3 * j), _band(coeffs, bands, 2 + 3 * j), _band(coeffs, bands, 3 + 3 * j),
                 q[j], rects[j, 0], rects[j, 1], out)
        a = out
    return a


@njit(**_JIT)
def _last_97(coeffs, bands, rects, dq):
    n = rects.shape[0]
    a = idwt_97_flat(coeffs, bands, rects, dq, n - 1)
    k = 3 * n - 2
    return a, _band(coeffs, bands, k), _band(coeffs, bands, k + 1), _band(coeffs, bands, k + 2), dq[n - 1]


@njit(**_JIT)
def _last_53(coeffs, bands, rects, q):
    n = rects.shape[0]
    a = idwt_53_flat(coeffs, bands, rects, q, n - 1)
    k = 3 * n - 2
    return a, _band(coeffs, bands, k), _band(coeffs, bands, k + 1), _band(coeffs, bands, k + 2), q[n - 1]


@njit(**_JIT)
def mct_97_flat(coeffs, b0, r0, d0, b1, r1, d1, b2, r2, d2, s, lo, hi, r, g, b):
    """Components 0-2 (each of >= 2 levels, the same finest rectangle of >= 2 rows): every
    level but the finest, then :func:`.dwt_numba.last_level_97_ict` into ``r, g, b``."""
    u0, v0 = r0[-1, 0], r0[-1, 1]
    last_level_97_ict(_last_97(coeffs, b0, r0, d0), _last_97(coeffs, b1, r1, d1), _last_97(coeffs, b2, r2, d2),
                      u0, v0, s, lo, hi, r, g, b)


@njit(**_JIT)
def mct_53_flat(coeffs, b0, r0, q0, b1, r1, q1, b2, r2, q2, s, lo, hi, r, g, b):
    """:func:`mct_97_flat` for 5/3 components and the RCT."""
    u0, v0 = r0[-1, 0], r0[-1, 1]
    last_level_53_rct(_last_53(coeffs, b0, r0, q0), _last_53(coeffs, b1, r1, q1), _last_53(coeffs, b2, r2, q2),
                      u0, v0, s, lo, hi, r, g, b)


@njit(**_JIT)
def samples_97_flat(coeffs, bands, rects, dq, nlev, shift, lo, hi):
    """:func:`idwt_97_flat`, then the DC shift and clip (G.1.2) of :func:`.pointwise_numba.to_samples_f`,
    in one call: int32 samples."""
    a = idwt_97_flat(coeffs, bands, rects, dq, nlev)
    out = np.empty(a.shape, np.int32)
    to_samples_f(a.reshape(-1), shift, lo, hi, out.reshape(-1))
    return out


@njit(**_JIT)
def samples_53_flat(coeffs, bands, rects, q, nlev, shift, lo, hi):
    """:func:`idwt_53_flat`, then :func:`.pointwise_numba.to_samples_i` in place: int32 samples."""
    a = idwt_53_flat(coeffs, bands, rects, q, nlev)
    flat = a.reshape(-1)
    to_samples_i(flat, shift, lo, hi, flat)
    return a


@njit(**_JIT)
def samples_batch_flat(coeffs, bands, rects, dq97, q53, meta, out):
    """:func:`samples_53_flat` / :func:`samples_97_flat` of every tile-component of a
    :class:`.layout.FlatLayoutBatch` (``meta`` rows as its columns say) into its slice of
    ``out`` (int32): the same kernels in the same order, one call for the lot."""
    for i in range(meta.shape[0]):
        b0, r0, nlev, rev = meta[i, 0], meta[i, 1], meta[i, 2], meta[i, 3]
        shift, lo, hi, off = meta[i, 4], meta[i, 5], meta[i, 6], meta[i, 7]
        n = meta[i, 8] * meta[i, 9]
        bnd = bands[b0 : b0 + 1 + 3 * nlev]
        rc = rects[r0 : r0 + nlev]
        dst = out[off : off + n]
        if rev:
            a = idwt_53_flat(coeffs, bnd, rc, q53[r0 : r0 + nlev], nlev)
            to_samples_i(a.reshape(-1), shift, lo, hi, dst)
        else:
            f = idwt_97_flat(coeffs, bnd, rc, dq97[r0 : r0 + nlev], nlev)
            to_samples_f(f.reshape(-1), shift, lo, hi, dst)
