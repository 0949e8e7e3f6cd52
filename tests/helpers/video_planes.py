"""Y'CbCr planes for the conversion's tests (cinegpu/media/video/ycbcr.py and its GPU twin):
noise over the whole code range with hard chroma edges, and the cases both sides run."""

from __future__ import annotations

import numpy as np

from cinegpu.media.video.ycbcr import MATRICES, YCbCrPlanes


def random_planes(seed: int, h: int, w: int, bits: int, shift: int, matrix: int, full: bool,
                  edges: bool = True) -> YCbCrPlanes:
    """Planes of noise over the whole code range, hard chroma edges in half the rows."""
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bits == 8 else np.uint16
    top = (1 << bits) - 1
    cw = -(-w >> shift)
    y = rng.integers(0, top + 1, (h, w)).astype(dtype)
    cb, cr = (rng.integers(0, top + 1, (h, cw)).astype(dtype) for _ in range(2))
    if edges:
        cb[::2] = np.where(np.arange(cw) % 7 < 3, top, 0).astype(dtype)
    kr, kb = MATRICES[matrix]
    return YCbCrPlanes(y, cb, cr, bits, shift, kr, kb, full)


CASES = [(bits, shift, matrix, full) for bits in (8, 10, 12, 16) for shift in (0, 1)
         for matrix, full in ((1, False), (5, False), (9, True), (1, True))]
