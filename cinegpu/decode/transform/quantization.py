"""Inverse quantisation of tier-1 output (T.800 Annex E.1).

Tier-1 hands over each code-block as int32 values that hold **twice** the
reconstructed quantisation index: one fractional bit, sign applied (what
OpenJPEG's ``opj_t1_decode_cblk`` leaves in its buffer).  The reconstruction
point of E.1.1.2 (with r = 1/2 for a partially decoded magnitude) is already
in that fractional bit, so dequantisation is a single scale:

* reversible (5/3, E.1.2: Δb = 1): the integer coefficient is that value
  divided by two, truncated toward zero (C division, as OpenJPEG's
  ``datap[i] /= 2``);
* irreversible (9/7, E.1.1.1): ``value * (Δb / 2)`` in float32, where
  Δb = 2^(Rb - εb) (1 + μb / 2^11) and Rb includes the band gain of
  Table E.1 (log2 of 1, 2, 2, 4 for LL, HL, LH, HH).
"""

from __future__ import annotations

import numpy as np

__all__ = ["dequantize", "quantize"]


def dequantize(coeffs: np.ndarray, delta: float, reversible: bool) -> np.ndarray:
    """Wavelet coefficients of one subband from tier-1 output (T.800 E.1).

    ``coeffs``: int32 holding 2 x the reconstructed quantisation index.
    ``delta``: the band's step size Δb (E-3), in coefficient units; ignored
    when ``reversible``.  Returns int32 (reversible) or float32 (irreversible).
    """
    v = np.asarray(coeffs, dtype=np.int32)
    if reversible:
        # trunc(v / 2): add 1 to negative values before the arithmetic shift
        return (v - (v >> 31)) >> 1
    return v.astype(np.float32) * np.float32(delta / 2.0)


def quantize(coeffs: np.ndarray, delta: float) -> np.ndarray:
    """Deadzone scalar quantisation of E.1 seen from the encoder (int32 indices).

    q = sign(c) floor(|c| / Δb).  The encoder's tier-1 codes these indices;
    a decoder sees them back as 2q +/- 1 (or 2q after every pass).
    """
    c = np.asarray(coeffs, dtype=np.float64)
    return (np.sign(c) * np.floor(np.abs(c) / delta)).astype(np.int32)
