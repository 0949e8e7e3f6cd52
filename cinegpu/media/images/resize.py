"""Resizing an image for mastering: a separable Lanczos filter (a = 3), as Pillow's
``Image.resize(..., Image.LANCZOS)`` computes it (``libImaging/Resample.c``, ``precompute_coeffs``).

An output pixel ``j`` of an axis of ``n_out`` pixels resized from ``n_in`` has its centre at
``(j + 0.5) * n_in / n_out`` in input pixels (pixel ``i`` covers ``[i, i + 1)``); its weights
are ``L((i + 0.5 - centre) / s)`` over the input pixels within ``a * s`` of it, with
``L(x) = sinc(x) sinc(x / a)`` for ``|x| < a`` (else 0) and ``s = max(1, n_in / n_out)``: the
kernel widened when shrinking, so that it filters out what the smaller picture cannot hold.
Taps past the picture's edge are dropped and the rest normalised to sum to 1 (Pillow's edge
rule), so a flat picture stays flat to the edge.  Only the output pixels ``start`` ..
``start + count - 1`` are computed: ``--scale fill`` resamples just what it keeps.

:func:`resample_fast` is what mastering runs: two numba passes (``_rows``, ``_columns``; the
GIL released, so the encoder threads fit frames side by side), the twins of the numpy
:func:`resample`, which the tests hold them to (the same float32 products summed in the same
order).  Their GPU twins (:mod:`.resize_gpu`, bit for bit) resize the frames of a master on
the GPU.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["LANCZOS_A", "lanczos", "lanczos_taps", "resample", "resample_fast"]

#: lobes of the Lanczos kernel (pixels of support each side at scale 1)
LANCZOS_A = 3


def lanczos(x: np.ndarray, a: int = LANCZOS_A) -> np.ndarray:
    """The Lanczos kernel ``sinc(x) sinc(x / a)`` for ``|x| < a``, else 0 (float64; ``x``
    in pixels of the output grid)."""
    x = np.asarray(x, np.float64)
    return np.where(np.abs(x) < a, np.sinc(x) * np.sinc(x / a), 0.0)


def lanczos_taps(n_in: int, n_out: int, start: int = 0, count: int | None = None,
                 a: int = LANCZOS_A) -> tuple[np.ndarray, np.ndarray]:
    """(indices, weights) of output pixels ``start`` .. ``start + count - 1`` (default all
    ``n_out``) of an axis resized from ``n_in`` to ``n_out`` pixels: two (count, taps) arrays,
    int64 input indices (clamped into 0 .. n_in - 1; a clamped tap weighs 0) and float32
    weights summing to 1 on each row."""
    count = n_out - start if count is None else count
    if n_in < 1 or n_out < 1 or start < 0 or count < 0 or start + count > n_out:
        raise ValueError(f"cannot resize {n_in} pixels to {n_out} (output {start}+{count})")
    ratio = n_in / n_out                         # input pixels per output pixel
    stretch = max(1.0, ratio)
    support = a * stretch
    centres = (np.arange(start, start + count) + 0.5) * ratio
    first = np.floor(centres - support + 0.5).astype(np.int64)
    idx = first[:, None] + np.arange(int(np.ceil(2 * support)) + 1)[None, :]
    w = lanczos((idx + 0.5 - centres[:, None]) / stretch, a)
    w[(idx < 0) | (idx >= n_in)] = 0.0
    w /= w.sum(axis=1, keepdims=True)
    return np.clip(idx, 0, n_in - 1), w.astype(np.float32)


def resample(image: np.ndarray, n_out: int, axis: int, start: int = 0,
             count: int | None = None) -> np.ndarray:
    """Output pixels ``start`` .. ``start + count - 1`` of ``image`` resized along ``axis``
    to ``n_out`` pixels (:func:`lanczos_taps`), float32; where the axis already has
    ``n_out`` pixels, those pixels as they are (a view)."""
    n_in = image.shape[axis]
    count = n_out - start if count is None else count
    if n_in == n_out:
        return image[(slice(None),) * axis + (slice(start, start + count),)]
    idx, w = lanczos_taps(n_in, n_out, start, count)
    shape = [1] * image.ndim
    shape[axis] = count
    out = np.zeros(image.shape[:axis] + (count,) + image.shape[axis + 1:], np.float32)
    for k in range(idx.shape[1]):
        weights = w[:, k]
        if not weights.any():
            continue
        out += np.take(image, idx[:, k], axis=axis) * weights.reshape(shape)
    return out


def resample_fast(image: np.ndarray, n_out: int, axis: int, start: int = 0,
                  count: int | None = None) -> np.ndarray:
    """:func:`resample` of an (H, W, C) float32 ``image`` along ``axis`` 0 or 1, by the numba
    passes: the same taps, the same float32 products summed in the same order."""
    n_in = image.shape[axis]
    count = n_out - start if count is None else count
    if n_in == n_out:
        return image[(slice(None),) * axis + (slice(start, start + count),)]
    if image.ndim != 3 or axis not in (0, 1):
        raise ValueError(f"resample_fast takes (H, W, C) images along axis 0 or 1, not "
                         f"{image.shape} along {axis}")
    idx, w = lanczos_taps(n_in, n_out, start, count)
    src = np.asarray(image, np.float32)
    shape = (count,) + src.shape[1:] if axis == 0 else (src.shape[0], count, src.shape[2])
    src = np.ascontiguousarray(src).reshape(src.shape[0], -1)      # rows flat: (H, W * C)
    out = np.zeros(shape, np.float32)
    (_rows if axis == 0 else _columns)(src, idx, w, out.reshape(shape[0], -1))
    return out


@njit(cache=True, nogil=True)
def _rows(src, idx, w, out):                  # pragma: no cover  (numba)
    """out[j] = sum over k of w[j, k] * src[idx[j, k]] (axis 0, each row flat: (H, W * C)),
    tap by tap as :func:`resample`."""
    for j in range(idx.shape[0]):
        dst = out[j]
        for k in range(idx.shape[1]):
            wk = w[j, k]
            if wk == 0:
                continue
            row = src[idx[j, k]]
            for x in range(row.shape[0]):
                dst[x] += row[x] * wk


@njit(cache=True, nogil=True)
def _columns(src, idx, w, out):               # pragma: no cover  (numba)
    """out[:, j] = sum over k of w[j, k] * src[:, idx[j, k]] (axis 1; ``src`` (H, W * C) and
    ``out`` (H, n * C) flat, C channels), tap by tap as :func:`resample`."""
    channels = out.shape[1] // idx.shape[0]
    for y in range(src.shape[0]):
        row, dst = src[y], out[y]
        for j in range(idx.shape[0]):
            o = j * channels
            for k in range(idx.shape[1]):
                wk = w[j, k]
                if wk == 0:
                    continue
                i = idx[j, k] * channels
                for c in range(channels):
                    dst[o + c] += row[i + c] * wk
