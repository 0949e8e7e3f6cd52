"""numba kernel that reconstructs every tile-component of a frame into its component planes.

:mod:`.flat_numba` runs one tile-component (or components 0-2 under the MCT) a call; a frame
of 225 tiles (p1_05) or of 257 components (p0_13) then still pays a Python call, a result
array and a copy into the picture for each.  :func:`frame_samples` walks a
:class:`.layout.FrameLayout`'s rows in one call: each tile-component is dequantised (E.1),
inverse transformed (F.3), colour transformed with its two partners where the tile has the
MCT (G.2, G.3), DC shifted and clipped (G.1.2) and written at its place in its component's
plane, all planes in one int32 buffer.  The kernels are those of :mod:`.flat_numba` and
:mod:`.pointwise_numba` in the same order as the per-tile calls
(:func:`~.cpu_backend.component_samples_flat`, :func:`~.cpu_backend.reconstruct_mct_flat`,
:func:`~.cpu_backend.reconstruct_mct`), so the samples are theirs bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .dwt_numba import _JIT
from .flat_numba import idwt_53_flat, idwt_97_flat, mct_53_flat, mct_97_flat
from .layout import (
    FRAME_BAND0,
    FRAME_COLS,
    FRAME_DST,
    FRAME_HI,
    FRAME_LEVELS,
    FRAME_LO,
    FRAME_MCT,
    FRAME_RECT0,
    FRAME_REVERSIBLE,
    FRAME_ROWS,
    FRAME_SHIFT,
    FRAME_STRIDE,
)
from .pointwise_numba import dequantize_f32, dequantize_i32, ict_samples, rct_samples, to_samples_f, to_samples_i

__all__ = ["frame_samples"]


@njit(**_JIT)
def _plane_97(coeffs, bands, rects, dq97, dq0, items, i):
    """Tile-component ``i`` dequantised and inverse 9/7 transformed: float32, flat."""
    b0, r0, nlev = items[i, FRAME_BAND0], items[i, FRAME_RECT0], items[i, FRAME_LEVELS]
    if nlev == 0:  # the LL band alone (E.1)
        o, n = bands[b0, 0], bands[b0, 1] * bands[b0, 2]
        f = np.empty(n, np.float32)
        dequantize_f32(coeffs[o : o + n], dq0[i], f)
        return f
    return idwt_97_flat(coeffs, bands[b0 : b0 + 1 + 3 * nlev], rects[r0 : r0 + nlev],
                        dq97[r0 : r0 + nlev], nlev).reshape(-1)


@njit(**_JIT)
def _plane_53(coeffs, bands, rects, q53, items, i):
    """Tile-component ``i`` inverse 5/3 transformed (tier-1's values halved on load): int32, flat."""
    b0, r0, nlev = items[i, FRAME_BAND0], items[i, FRAME_RECT0], items[i, FRAME_LEVELS]
    if nlev == 0:
        o, n = bands[b0, 0], bands[b0, 1] * bands[b0, 2]
        a = np.empty(n, np.int32)
        dequantize_i32(coeffs[o : o + n], a)
        return a
    return idwt_53_flat(coeffs, bands[b0 : b0 + 1 + 3 * nlev], rects[r0 : r0 + nlev],
                        q53[r0 : r0 + nlev], nlev).reshape(-1)


@njit(**_JIT)
def _component(coeffs, bands, rects, dq97, q53, dq0, items, i, out):
    """Tile-component ``i`` without the MCT, written row by row into its place in ``out``."""
    rows, cols, dst, stride = items[i, FRAME_ROWS], items[i, FRAME_COLS], items[i, FRAME_DST], \
        items[i, FRAME_STRIDE]
    shift, lo, hi = items[i, FRAME_SHIFT], items[i, FRAME_LO], items[i, FRAME_HI]
    if items[i, FRAME_REVERSIBLE]:
        a = _plane_53(coeffs, bands, rects, q53, items, i)
        for y in range(rows):
            to_samples_i(a[y * cols : (y + 1) * cols], shift, lo, hi, out[dst + y * stride : dst + y * stride + cols])
    else:
        f = _plane_97(coeffs, bands, rects, dq97, dq0, items, i)
        for y in range(rows):
            to_samples_f(f[y * cols : (y + 1) * cols], shift, lo, hi, out[dst + y * stride : dst + y * stride + cols])


@njit(**_JIT)
def _fusable(rects, items, i):
    """Whether components ``i``..``i + 2`` take the fused finest level + MCT of
    :func:`.flat_numba.mct_97_flat` (each >= 2 levels, one finest rectangle of >= 2 rows)."""
    last = items[i, FRAME_RECT0] + items[i, FRAME_LEVELS] - 1
    for k in range(i, i + 3):
        if items[k, FRAME_LEVELS] < 2:
            return False
        lk = items[k, FRAME_RECT0] + items[k, FRAME_LEVELS] - 1
        for j in range(4):
            if rects[lk, j] != rects[last, j]:
                return False
    return rects[last, 3] - rects[last, 1] >= 2 and rects[last, 2] - rects[last, 0] >= 1


@njit(**_JIT)
def _mct(coeffs, bands, rects, dq97, q53, dq0, items, i, out):
    """Components 0-2 of a tile (rows ``i``..``i + 2``, one size) under the MCT, written into
    their places in ``out``: the fused finest level where :func:`_fusable`, else each
    component's planes and then the inverse RCT/ICT with the DC shift."""
    rows, cols = items[i, FRAME_ROWS], items[i, FRAME_COLS]
    s, lo, hi = np.empty(3, np.int64), np.empty(3, np.int64), np.empty(3, np.int64)
    for k in range(3):
        s[k], lo[k], hi[k] = items[i + k, FRAME_SHIFT], items[i + k, FRAME_LO], items[i + k, FRAME_HI]
    # planes that lie whole in ``out`` (a tile as wide as its components: one tile a frame, as
    # DCI frames are) are written there in place; others go through planes of their own, placed
    # after (a fresh plane of a 4K component is 35 MB that the system maps anew on every frame)
    direct = _whole(items, i, cols)
    if direct:
        r, g, b = _in_out(out, items, i, rows, cols), _in_out(out, items, i + 1, rows, cols), \
            _in_out(out, items, i + 2, rows, cols)
    else:
        r = np.empty((rows, cols), np.int32)
        g = np.empty((rows, cols), np.int32)
        b = np.empty((rows, cols), np.int32)
    rev = items[i, FRAME_REVERSIBLE]
    if _fusable(rects, items, i):
        b0, r0, n0 = items[i, FRAME_BAND0], items[i, FRAME_RECT0], items[i, FRAME_LEVELS]
        b1, r1, n1 = items[i + 1, FRAME_BAND0], items[i + 1, FRAME_RECT0], items[i + 1, FRAME_LEVELS]
        b2, r2, n2 = items[i + 2, FRAME_BAND0], items[i + 2, FRAME_RECT0], items[i + 2, FRAME_LEVELS]
        if rev:
            mct_53_flat(coeffs, bands[b0 : b0 + 1 + 3 * n0], rects[r0 : r0 + n0], q53[r0 : r0 + n0],
                        bands[b1 : b1 + 1 + 3 * n1], rects[r1 : r1 + n1], q53[r1 : r1 + n1],
                        bands[b2 : b2 + 1 + 3 * n2], rects[r2 : r2 + n2], q53[r2 : r2 + n2], s, lo, hi, r, g, b)
        else:
            mct_97_flat(coeffs, bands[b0 : b0 + 1 + 3 * n0], rects[r0 : r0 + n0], dq97[r0 : r0 + n0],
                        bands[b1 : b1 + 1 + 3 * n1], rects[r1 : r1 + n1], dq97[r1 : r1 + n1],
                        bands[b2 : b2 + 1 + 3 * n2], rects[r2 : r2 + n2], dq97[r2 : r2 + n2], s, lo, hi, r, g, b)
    elif rev:
        rct_samples(_plane_53(coeffs, bands, rects, q53, items, i), _plane_53(coeffs, bands, rects, q53, items, i + 1),
                    _plane_53(coeffs, bands, rects, q53, items, i + 2), s, lo, hi,
                    r.reshape(-1), g.reshape(-1), b.reshape(-1))
    else:
        ict_samples(_plane_97(coeffs, bands, rects, dq97, dq0, items, i),
                    _plane_97(coeffs, bands, rects, dq97, dq0, items, i + 1),
                    _plane_97(coeffs, bands, rects, dq97, dq0, items, i + 2), s, lo, hi,
                    r.reshape(-1), g.reshape(-1), b.reshape(-1))
    if not direct:
        _place(r, items, i, out)
        _place(g, items, i + 1, out)
        _place(b, items, i + 2, out)


@njit(**_JIT)
def _whole(items, i, cols):
    """Whether the places of components ``i``..``i + 2`` in ``out`` are whole planes (rows
    ``cols`` samples apart), so that they can be written in place."""
    for k in range(i, i + 3):
        if items[k, FRAME_STRIDE] != cols:
            return False
    return True


@njit(**_JIT)
def _in_out(out, items, i, rows, cols):
    """The place of tile-component ``i`` in ``out`` as a (rows, cols) view (a whole plane)."""
    dst = items[i, FRAME_DST]
    return out[dst : dst + rows * cols].reshape((rows, cols))


@njit(**_JIT)
def _place(plane, items, i, out):
    """Copy a tile-component's samples (rows x cols) to its place in ``out``."""
    dst, stride = items[i, FRAME_DST], items[i, FRAME_STRIDE]
    for y in range(plane.shape[0]):
        out[dst + y * stride : dst + y * stride + plane.shape[1]] = plane[y]


@njit(**_JIT)
def frame_samples(coeffs, bands, rects, dq97, q53, dq0, items, out):
    """Samples of every row of a :class:`.layout.FrameLayout` (its arrays; ``coeffs``: the
    frame's flat int32 buffer, ``out``: the int32 buffer of its component planes), in row
    order; a row flagged ``FRAME_MCT`` is taken with the two after it."""
    i = np.int64(0)     # not a literal 0: every kernel below would compile twice (literal, int64)
    while i < items.shape[0]:
        if items[i, FRAME_MCT]:
            _mct(coeffs, bands, rects, dq97, q53, dq0, items, i, out)
            i += 3
        else:
            _component(coeffs, bands, rects, dq97, q53, dq0, items, i, out)
            i += 1
