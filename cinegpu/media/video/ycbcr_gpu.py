"""A frame's Y'CbCr planes (:class:`.ycbcr.YCbCrPlanes`) sent up as decoded and made R'G'B'
on the GPU by ``cuda/ycbcr.cu``, the twin of :func:`.ycbcr.to_rgb48` bit for bit (the
gpu-marked tests hold it to that).  Mastering on the GPU takes a video frame this way
(:meth:`cinegpu.jobs.frame_encode.FrameEncoders.encode_fitted`).  Importing this module needs
CuPy.
"""

from __future__ import annotations

from pathlib import Path

import cupy
import numpy as np

from cinegpu.decode import nvrtc

from .ycbcr import YCbCrPlanes, coefficients

__all__ = ["pack", "to_rgb48_on_device"]

SOURCE = Path(__file__).with_name("cuda") / "ycbcr.cu"


def pack(p: YCbCrPlanes, buffer) -> np.ndarray:
    """The three planes of ``p`` one after the other, rows packed, as uint16, in the array
    ``buffer(shape, dtype)`` gives (a page-locked one: it goes up without another copy)."""
    h, w = p.y.shape
    cw = p.cb.shape[1]
    flat = buffer((h * (w + 2 * cw),), np.uint16)
    flat[:h * w].reshape(h, w)[...] = p.y
    flat[h * w:h * (w + cw)].reshape(h, cw)[...] = p.cb
    flat[h * (w + cw):].reshape(h, cw)[...] = p.cr
    return flat


def to_rgb48_on_device(packed, p: YCbCrPlanes):
    """:func:`.ycbcr.to_rgb48` of ``p`` from ``packed`` (:func:`pack`'s array of it, a CuPy
    array on the current device): an (H, W, 3) uint16 CuPy array, on the current stream."""
    h, w = p.y.shape
    cw = p.cb.shape[1]
    src = cupy.asarray(packed, dtype=cupy.uint16)
    out = cupy.empty((h, w, 3), cupy.uint16)
    nvrtc.launch_1d(nvrtc.kernel(SOURCE, "ycbcr_to_rgb48"), h * w,
                    (src, cupy.asarray(coefficients(p)), out, cupy.int64(h), cupy.int64(w),
                     cupy.int64(cw), cupy.int32(p.shift)))
    return out
