"""DCI output transform: X'Y'Z' code values -> display RGB code values.

Digital cinema images carry X'Y'Z' (SMPTE ST 428-1): 12-bit code values
CV = 4095 (L / 52.37)^(1/2.6) of absolute CIE XYZ luminance L in cd/m2.
For a monitor we take peak white (48 cd/m2) as relative 1.0:

    XYZ = (CV / 4095)^2.6 * 52.37 / 48                      (decode gamma)
    RGB = M_XYZ->RGB(primaries, D65) . XYZ                   (3x3 matrix)
    RGB = clip(RGB, 0, 1)                                    (out-of-gamut clipped)
    V   = RGB^(1 / gamma_display)                           (display encoding)
    out = round(V * (2^out_bits - 1))                        (half to even)

No chromatic adaptation: colours are reproduced absolutely, so DCI white
(x, y = 0.314, 0.351) shows slightly green on a D65 display, as on a
calibrated P3-D65 mastering monitor.

Display encodings (documented choice): ``"rec709"`` uses the BT.1886
reference EOTF with a zero black level, i.e. a pure 1/2.4 power;
``"p3d65"`` uses 1/2.6, the gamma of a DCI projector / P3-D65 theatrical
mastering display (SMPTE RP 431-2).  [The same choices as libdcp's
src/rgb_xyz.cc and src/colour_conversion.cc.]

Primaries (CIE 1931 xy) and the matrices derived from them here (rounded):

    rec709  R 0.640 0.330  G 0.300 0.600  B 0.150 0.060  W D65 0.3127 0.3290
            XYZ->RGB [[ 3.2410 -1.5374 -0.4986]
                      [-0.9692  1.8760  0.0416]
                      [ 0.0556 -0.2040  1.0570]]
    p3d65   R 0.680 0.320  G 0.265 0.690  B 0.150 0.060  W D65 0.3127 0.3290
            XYZ->RGB [[ 2.4935 -0.9314 -0.4027]
                      [-0.8295  1.7627  0.0236]
                      [ 0.0358 -0.0762  0.9569]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["DCI_PEAK_RATIO", "PRIMARIES", "display_gamma", "xyz_decode_lut", "xyz_to_rgb_matrix", "xyz_to_rgb"]

# 52.37 / 48: the X'Y'Z' encoding range over peak white (ST 428-1).
DCI_PEAK_RATIO = 52.37 / 48.0
DCI_GAMMA = 2.6
D65 = (0.3127, 0.3290)
PRIMARIES = {
    "rec709": ((0.640, 0.330), (0.300, 0.600), (0.150, 0.060), D65),
    "p3d65": ((0.680, 0.320), (0.265, 0.690), (0.150, 0.060), D65),
}
_DISPLAY_GAMMA = {"rec709": 2.4, "p3d65": 2.6}


def display_gamma(primaries: str) -> float:
    """Exponent of the display EOTF used for ``primaries`` (2.4 or 2.6)."""
    return _DISPLAY_GAMMA[_check(primaries)]


def _check(primaries: str) -> str:
    if primaries not in PRIMARIES:
        raise ValueError(f"primaries must be one of {sorted(PRIMARIES)}, got {primaries!r}")
    return primaries


def xyz_to_rgb_matrix(primaries: str) -> np.ndarray:
    """3x3 float64 matrix taking relative XYZ (white Y = 1) to linear RGB.

    Built from the xy chromaticities: the columns of RGB->XYZ are the
    primaries' XYZ (x/y, 1, (1-x-y)/y) scaled so that RGB (1, 1, 1) is the
    white point with Y = 1; the result is its inverse.
    """
    r, g, b, w = PRIMARIES[_check(primaries)]

    def xyz(c):
        x, y = c
        return np.array([x / y, 1.0, (1.0 - x - y) / y])

    p = np.stack([xyz(r), xyz(g), xyz(b)], axis=1)
    s = np.linalg.solve(p, xyz(w))
    return np.linalg.inv(p * s)


def xyz_decode_lut(in_bits: int = 12) -> np.ndarray:
    """float32 table: X'Y'Z' code value -> relative linear XYZ (peak white Y = 1)."""
    cv = np.arange(1 << in_bits, dtype=np.float64) / ((1 << in_bits) - 1)
    return (cv**DCI_GAMMA * DCI_PEAK_RATIO).astype(np.float32)


def xyz_to_rgb(
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    *,
    primaries: str = "p3d65",
    out_bits: int = 16,
    alpha: bool = False,
    in_bits: int = 12,
) -> np.ndarray:
    """Display code values (H, W, 3), or (H, W, 4) with opaque alpha, uint16.

    ``x, y, z``: integer X'Y'Z' code values (``in_bits``, 12 for DCI; values
    outside the range are clipped).  ``primaries``: ``"p3d65"`` or
    ``"rec709"``.  ``out_bits``: 1..16, the output code value range
    0 .. 2^out_bits - 1.  Arithmetic in float32 (as the GPU twin).
    """
    if not 1 <= out_bits <= 16:
        raise ValueError(f"out_bits must be 1..16, got {out_bits}")
    m = xyz_to_rgb_matrix(primaries).astype(np.float32)
    inv_gamma = np.float32(1.0 / display_gamma(primaries))
    scale = np.float32((1 << out_bits) - 1)
    lut = xyz_decode_lut(in_bits)
    top = (1 << in_bits) - 1
    lin = [lut[np.clip(np.asarray(c), 0, top)] for c in (x, y, z)]
    out = np.empty(lin[0].shape + (4 if alpha else 3,), np.uint16)
    for ch in range(3):
        v = lin[0] * m[ch, 0]
        v += lin[1] * m[ch, 1]
        v += lin[2] * m[ch, 2]
        np.clip(v, 0.0, 1.0, out=v)
        np.power(v, inv_gamma, out=v)
        v *= scale
        out[..., ch] = np.rint(v)
    if alpha:
        out[..., 3] = int(scale)
    return out
