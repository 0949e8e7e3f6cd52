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

import functools
from typing import Sequence

import numpy as np

from . import level_shift as _np_level_shift
from . import mct as _np_mct
from .display import xyz_to_rgb
from .dwt import Level, _check_level
from .dwt_numba import last_level_53_rct, last_level_97_ict, level_53, level_97
from .flat_numba import (
    idwt_53_flat,
    idwt_97_flat,
    mct_53_flat,
    mct_97_flat,
    samples_53_flat,
    samples_97_flat,
    samples_batch_flat,
)
from .frame_numba import frame_samples
from .fused import as_samples
from .layout import BATCH_COLS, BATCH_OUT, BATCH_ROWS, FlatLayout, FlatLayoutBatch, FrameLayout
from .pointwise_numba import (
    dequantize_f32,
    dequantize_i32,
    ict,
    ict_samples,
    rct,
    rct_samples,
    to_samples_f,
    to_samples_i,
)

__all__ = [
    "dequantize",
    "dequantize_idwt",
    "component_samples_flat",
    "components_samples_flat",
    "dequantize_idwt_flat",
    "frame_samples_flat",
    "idwt_53",
    "idwt_97",
    "inverse_ict",
    "inverse_mct_to_samples",
    "inverse_rct",
    "reconstruct_mct",
    "reconstruct_mct_flat",
    "to_samples",
    "xyz_to_rgb",
]

def _c(a, dtype=None):
    """C-contiguous ndarray (of ``dtype``), copying only when needed."""
    return np.ascontiguousarray(a, dtype=dtype)


# ------------------------------------------------------ quantisation --------


def dequantize(coeffs: np.ndarray, delta: float, reversible: bool) -> np.ndarray:
    """T.800 E.1; see :func:`..quantization.dequantize` (same result, bit for bit)."""
    v = _c(coeffs, np.int32)
    out = np.empty(v.shape, np.int32 if reversible else np.float32)
    if reversible:
        dequantize_i32(v.reshape(-1), out.reshape(-1))
    else:
        dequantize_f32(v.reshape(-1), np.float32(delta / 2.0), out.reshape(-1))
    return out


# ------------------------------------------------------------- IDWT ---------


def _bands(ll, levels, dtype, scales):
    """C-contiguous bands: of ``dtype``, or int32 tier-1 output when ``scales``."""
    t = dtype if scales is None else np.int32
    return _c(ll, t), [(_c(hl, t), _c(lh, t), _c(hh, t), rect) for hl, lh, hh, rect in levels]


def _dq(j, scales, dtype):
    """Dequantisation arguments of the kernels for level j (coarsest 0).

    9/7: float32 Δb / 2 per band, 1.0 for a band already float (the LL of
    every level but the first is the level below).  5/3: 1 to halve on load.
    """
    if dtype == np.float32:
        ds = [None if j or scales is None else scales[0]]
        ds += [None] * 3 if scales is None else scales[1 + 3 * j : 4 + 3 * j]
        return np.array([1.0 if d is None else np.float32(d / 2.0) for d in ds], np.float32)
    return np.array([0] * 4 if scales is None else [int(j == 0), 1, 1, 1], np.int32)


def _idwt(ll, levels, dtype, scales):
    """Level loop shared by the IDWTs; ``scales``: the step sizes of
    :func:`dequantize_idwt` (bands int32), or None (bands of ``dtype``)."""
    level = level_97 if dtype == np.float32 else level_53
    a, levels = _bands(ll, levels, dtype, scales)
    if scales is not None and not levels:
        return dequantize(a, scales[0], dtype == np.int32)
    for j, (hl, lh, hh, rect) in enumerate(levels):
        _check_level(a, hl, lh, hh, rect)
        u0, v0, u1, v1 = rect
        out = np.empty((v1 - v0, u1 - u0), dtype)
        level(a, hl, lh, hh, _dq(j, scales, dtype), u0, v0, out)
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
    return _mct(rct, np.int32, y0, y1, y2, out)


def inverse_ict(y0, y1, y2, *, out=None):
    """T.800 G.3; see :func:`..mct.inverse_ict`.  ``out``: three float32
    arrays (may be the inputs)."""
    return _mct(ict, np.float32, y0, y1, y2, out)


# ------------------------------------------------------ DC shift, clip ------


def _bounds(precision: int, signed: bool):
    if signed:
        return 0, -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    return 1 << (precision - 1), 0, (1 << precision) - 1


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
    kernel = to_samples_f if x.dtype == np.float32 else to_samples_i
    kernel(x.reshape(-1), shift, lo, hi, out.reshape(-1))
    return out


def _sample_bounds(precisions, signed):
    """int64[3] DC shifts and clip bounds of three components (G.1.2); the arrays are shared
    between calls (cached by the precisions and signs): read them, never write them."""
    return _sample_bounds_of(tuple(int(p) for p in precisions), tuple(bool(sg) for sg in signed))


@functools.lru_cache(maxsize=256)
def _sample_bounds_of(precisions: tuple, signed: tuple):
    if len(precisions) != 3 or len(signed) != 3 or not all(1 <= p <= 24 for p in precisions):
        raise ValueError(f"need three precisions of 1..24 bits, got {precisions}")
    return tuple(np.array(v, np.int64) for v in zip(*(_bounds(p, sg) for p, sg in zip(precisions, signed))))


def inverse_mct_to_samples(y0, y1, y2, precisions: Sequence[int], signed: Sequence[bool]):
    """``to_samples(c, precisions[i], signed[i])`` of ``inverse_rct/ict(y0, y1, y2)``.

    int32 inputs take the RCT (G.2), float32 ones the ICT (G.3); one pass,
    three int32 arrays out, bit for bit the composition of the twin's
    functions.  Precisions 1..24 are compiled; deeper ones (which the compiled
    kernels' float32 and int32 bounds do not take) go to the numpy twins, as
    in :func:`to_samples`.
    """
    reversible = np.asarray(y0).dtype.kind in "iu"
    dtype = np.int32 if reversible else np.float32
    ys = [_c(y, dtype) for y in (y0, y1, y2)]
    if not (ys[0].shape == ys[1].shape == ys[2].shape):
        raise ValueError(f"components differ in shape: {[y.shape for y in ys]}")
    if max(precisions) > 24:
        planes = _np_mct.inverse_rct(*ys) if reversible else _np_mct.inverse_ict(*ys)
        return tuple(_np_level_shift.to_samples(y, p, sg) for y, p, sg in zip(planes, precisions, signed))
    s, lo, hi = _sample_bounds(precisions, signed)
    out = tuple(np.empty(ys[0].shape, np.int32) for _ in range(3))
    kernel = rct_samples if reversible else ict_samples
    kernel(*(y.reshape(-1) for y in ys), s, lo, hi, *(o.reshape(-1) for o in out))
    return out


def reconstruct_mct(comps, reversible: bool, precisions: Sequence[int], signed: Sequence[bool]):
    """Components 0-2 of a tile under the multiple component transformation.

    ``comps``: three ``(ll, levels, deltas)`` as :func:`dequantize_idwt` takes
    them (int32 tier-1 output).  Returns three int32 sample arrays, bit for
    bit ``inverse_mct_to_samples(*(dequantize_idwt(*c, reversible) for c in
    comps), precisions, signed)``; the finest level of the three components
    and the MCT run row by row together, so that level's reconstructed
    values never reach memory (precisions of more than 24 bits: level by level, as
    :func:`inverse_mct_to_samples` takes them).
    """
    if len(comps) != 3:
        raise ValueError(f"need three components, got {len(comps)}")
    rects = {tuple(c[1][-1][3]) if c[1] else None for c in comps}
    rect = rects.pop() if len(rects) == 1 else None
    if rect is None or rect[3] - rect[1] < 2 or rect[2] - rect[0] < 1 or max(precisions) > 24:  # not fused
        planes = [dequantize_idwt(ll, levels, deltas, reversible) for ll, levels, deltas in comps]
        return inverse_mct_to_samples(*planes, precisions, signed)
    dtype = np.int32 if reversible else np.float32
    last = []
    for ll, levels, deltas in comps:
        if len(deltas) != 1 + 3 * len(levels):
            raise ValueError(f"need {1 + 3 * len(levels)} step sizes, got {len(deltas)}")
        deltas = list(deltas)
        nlev = len(levels)
        hl, lh, hh, _ = _bands(ll, levels[-1:], dtype, deltas)[1][0]
        if nlev == 1:
            a = _c(ll, np.int32)
        else:
            a = _idwt(ll, levels[:-1], dtype, deltas[: 1 + 3 * (nlev - 1)])
        _check_level(a, hl, lh, hh, rect)
        last.append((a, hl, lh, hh, _dq(nlev - 1, deltas, dtype)))
    s, lo, hi = _sample_bounds(precisions, signed)
    u0, v0, u1, v1 = rect
    out = tuple(np.empty((v1 - v0, u1 - u0), np.int32) for _ in range(3))
    kernel = last_level_53_rct if reversible else last_level_97_ict
    kernel(*last, u0, v0, s, lo, hi, *out)
    return out


# ------------------------------------------------- from the flat buffer -----


def dequantize_idwt_flat(coeffs: np.ndarray, layout: FlatLayout, reversible: bool) -> np.ndarray:
    """``dequantize_idwt(*layout.args(coeffs), reversible)``, every level in one compiled call
    (:mod:`.flat_numba`); ``coeffs``: the tile's flat int32 buffer, C-contiguous."""
    if not layout.levels:
        return dequantize_idwt(*layout.args(coeffs), reversible)
    if reversible:
        return idwt_53_flat(coeffs, layout.bands, layout.rects, layout.q53, layout.levels)
    return idwt_97_flat(coeffs, layout.bands, layout.rects, layout.dq97, layout.levels)


def component_samples_flat(coeffs: np.ndarray, layout: FlatLayout, reversible: bool, precision: int,
                           signed: bool) -> np.ndarray:
    """``to_samples(dequantize_idwt_flat(coeffs, layout, reversible), precision, signed)`` in one
    compiled call where the component has levels and precision <= 24 (same samples, bit for
    bit: the same kernels in the same order)."""
    if not layout.levels or precision > 24:
        return to_samples(dequantize_idwt_flat(coeffs, layout, reversible), precision, signed)
    shift, lo, hi = _bounds(precision, signed)
    if reversible:
        return samples_53_flat(coeffs, layout.bands, layout.rects, layout.q53, layout.levels, shift, lo, hi)
    return samples_97_flat(coeffs, layout.bands, layout.rects, layout.dq97, layout.levels, shift, lo, hi)


def components_samples_flat(coeffs: np.ndarray, batch: FlatLayoutBatch) -> list:
    """:func:`component_samples_flat` of every component of ``batch`` in one compiled call
    (int32 planes, views of one buffer; the same kernels in the same order)."""
    out = np.empty(batch.samples, np.int32)
    samples_batch_flat(coeffs, batch.bands, batch.rects, batch.dq97, batch.q53, batch.meta, out)
    return [out[o : o + h * w].reshape(h, w) for o, h, w in batch.meta[:, [BATCH_OUT, BATCH_ROWS, BATCH_COLS]].tolist()]


def reconstruct_mct_flat(coeffs: np.ndarray, layouts: Sequence[FlatLayout], reversible: bool,
                         precisions: Sequence[int], signed: Sequence[bool], dtype=None):
    """``reconstruct_mct([l.args(coeffs) for l in layouts], ...)`` in one compiled call where
    the three components have two levels or more and one finest rectangle of two rows or more
    and precisions of at most 24 bits (else through :func:`reconstruct_mct`); the samples as
    ``dtype`` (None: int32)."""
    if len(layouts) != 3:
        raise ValueError(f"need three components, got {len(layouts)}")
    l0, l1, l2 = layouts
    if (min(l0.levels, l1.levels, l2.levels) < 2 or max(precisions) > 24
            or not (np.array_equal(l0.rects[-1], l1.rects[-1]) and np.array_equal(l0.rects[-1], l2.rects[-1]))
            or l0.size[0] < 2 or l0.size[1] < 1):
        return as_samples(reconstruct_mct([lay.args(coeffs) for lay in layouts], reversible, precisions, signed),
                          dtype)
    h, w = l0.size
    s, lo, hi = _sample_bounds(precisions, signed)
    out = tuple(np.empty((h, w), np.int32) for _ in range(3))
    if reversible:
        mct_53_flat(coeffs, l0.bands, l0.rects, l0.q53, l1.bands, l1.rects, l1.q53, l2.bands, l2.rects, l2.q53,
                    s, lo, hi, *out)
    else:
        mct_97_flat(coeffs, l0.bands, l0.rects, l0.dq97, l1.bands, l1.rects, l1.dq97, l2.bands, l2.rects, l2.dq97,
                    s, lo, hi, *out)
    return as_samples(out, dtype)


def frame_samples_flat(coeffs: np.ndarray, layout: FrameLayout, out: np.ndarray) -> None:
    """Every tile-component of a frame into its place in ``out`` (int32, ``layout.samples``), in
    one compiled call (:func:`.frame_numba.frame_samples`): the samples of
    :func:`component_samples_flat` and :func:`reconstruct_mct_flat`, bit for bit.
    ``coeffs``: the frame's flat int32 buffer, C-contiguous."""
    frame_samples(coeffs, layout.bands, layout.rects, layout.dq97, layout.q53, layout.dq0, layout.items, out)
