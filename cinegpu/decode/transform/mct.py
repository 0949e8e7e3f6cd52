"""Multiple component transformations (T.800 Annex G.2, G.3).

Components 0, 1, 2 of a tile are transformed together when ``SGcod`` (COD
multiple component transformation) is 1: the reversible component
transformation (RCT) with the 5/3 filter, the irreversible one (ICT) with
the 9/7.  Applied after the inverse DWT and before the DC level shift.
"""

from __future__ import annotations

import numpy as np

__all__ = ["forward_ict", "forward_rct", "inverse_ict", "inverse_rct"]

# T.800 G.3 (G-7 / G-8).  float32 literals and evaluation order as in
# OpenJPEG's opj_mct_decode_real, so results agree bit for bit.
_ICT_R_V = np.float32(1.402)
_ICT_G_U = np.float32(0.34413)
_ICT_G_V = np.float32(0.71414)
_ICT_B_U = np.float32(1.772)


def inverse_rct(y0, y1, y2):
    """Inverse RCT, T.800 G.2 (G-6): int32 (Y0, Y1, Y2) -> int32 (R, G, B).

    G = Y0 - floor((Y2 + Y1) / 4); R = Y2 + G; B = Y1 + G.
    """
    y0 = np.asarray(y0, dtype=np.int32)
    y1 = np.asarray(y1, dtype=np.int32)
    y2 = np.asarray(y2, dtype=np.int32)
    g = y0 - ((y1 + y2) >> 2)
    return y2 + g, g, y1 + g


def forward_rct(r, g, b):
    """Forward RCT, T.800 G.2 (G-5): int32 (R, G, B) -> int32 (Y0, Y1, Y2).

    Y0 = floor((R + 2G + B) / 4); Y1 = B - G; Y2 = R - G.
    """
    r = np.asarray(r, dtype=np.int32)
    g = np.asarray(g, dtype=np.int32)
    b = np.asarray(b, dtype=np.int32)
    return (r + 2 * g + b) >> 2, b - g, r - g


def inverse_ict(y0, y1, y2):
    """Inverse ICT, T.800 G.3 (G-8): float32 (Y, Cb, Cr) -> float32 (R, G, B).

    R = Y + 1.402 Cr; G = Y - 0.34413 Cb - 0.71414 Cr; B = Y + 1.772 Cb,
    evaluated left to right in float32 (as OpenJPEG).
    """
    y = np.asarray(y0, dtype=np.float32)
    u = np.asarray(y1, dtype=np.float32)
    v = np.asarray(y2, dtype=np.float32)
    r = y + v * _ICT_R_V
    g = y - u * _ICT_G_U
    g -= v * _ICT_G_V
    b = y + u * _ICT_B_U
    return r, g, b


def forward_ict(r, g, b):
    """Forward ICT, T.800 G.3 (G-7): float32 (R, G, B) -> float32 (Y, Cb, Cr)."""
    r = np.asarray(r, dtype=np.float32)
    g = np.asarray(g, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    y = np.float32(0.299) * r + np.float32(0.587) * g + np.float32(0.114) * b
    cb = np.float32(-0.16875) * r - np.float32(0.33126) * g + np.float32(0.5) * b
    cr = np.float32(0.5) * r - np.float32(0.41869) * g - np.float32(0.08131) * b
    return y, cb, cr
