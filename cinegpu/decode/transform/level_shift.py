"""Inverse DC level shift and clipping to the component's precision (T.800 G.1.2).

The last step of reconstruction: unsigned components get 2^(Ssiz-1) added
back (G-2), then every sample is clipped to the range its precision allows
(what ``opj_decompress`` writes).
"""

from __future__ import annotations

import numpy as np

__all__ = ["sample_bounds", "to_samples"]


def sample_bounds(precision: int, signed: bool) -> tuple[int, int, int]:
    """(shift, lo, hi) of T.800 G.1.2: the DC shift added back and the clip range."""
    if signed:
        return 0, -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    return 1 << (precision - 1), 0, (1 << precision) - 1


def to_samples(x: np.ndarray, precision: int, signed: bool) -> np.ndarray:
    """Component samples (int32) from reconstructed values, T.800 G.1.2.

    ``x``: int32 (5/3 path) or float32 (9/7 path; rounded half to even first,
    as ``lrintf`` in OpenJPEG's opj_tcd_dc_level_shift_decode).  ``precision``:
    bits per sample (Ssiz + 1).  Unsigned: add 2^(p-1), clip to [0, 2^p - 1];
    signed: clip to [-2^(p-1), 2^(p-1) - 1].
    """
    x = np.asarray(x)
    shift, lo, hi = sample_bounds(precision, signed)
    if x.dtype.kind == "f":
        # float32 holds every integer of the range exactly up to 24 bits
        ftype = np.float32 if precision <= 24 else np.float64
        v = np.rint(x.astype(ftype, copy=False))
        v[np.isnan(v)] = lo - shift
        np.clip(v, lo - shift, hi - shift, out=v)
        return v.astype(np.int32) + np.int32(shift)
    v = np.clip(x, lo - shift, hi - shift).astype(np.int32, copy=False)
    return v + np.int32(shift)
