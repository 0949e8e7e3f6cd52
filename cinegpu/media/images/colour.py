"""Mastering colour: RGB (Rec.709, P3-D65, DCI-P3) or X'Y'Z' input -> DCI X'Y'Z' 12-bit code values.

The inverse of the display transform in :mod:`cinegpu.decode.transform.display` (same primaries,
same matrix construction, same display gammas), so an image mastered from ``p3d65`` and shown with
``--primaries p3d65`` comes back as it went in (SMPTE ST 428-1, RP 431-2; libdcp
``src/rgb_xyz.cc`` for the same chain):

    RGB  = V ^ gamma                         input transfer: rec709 2.4 (BT.1886, zero black),
                                             p3d65 and dcip3 2.6
    XYZ  = M_RGB->XYZ(primaries, white) RGB  relative, white Y = 1
    CV   = 4095 * clip(XYZ * 48 / 52.37, 0, 1) ^ (1 / 2.6)     (ST 428-1 encoding, 12 bit)

``dcip3`` is DCI-P3 with the DCI white point (x, y = 0.314, 0.351); ``xyz`` means the input
already holds X'Y'Z' code values (only rescaled to 12 bits).
"""

from __future__ import annotations

import numpy as np

from cinegpu.decode.transform.display import DCI_GAMMA, DCI_PEAK_RATIO, PRIMARIES

__all__ = ["COLORSPACES", "SAMPLINGS", "rgb_to_xyz_matrix", "rgb_to_ycbcr", "to_xyz12",
           "xyz12_parameters", "ycbcr_levels"]

DCI_WHITE = (0.314, 0.351)
INPUT_PRIMARIES = dict(PRIMARIES, dcip3=(PRIMARIES["p3d65"][0], PRIMARIES["p3d65"][1],
                                        PRIMARIES["p3d65"][2], DCI_WHITE))
INPUT_GAMMA = {"rec709": 2.4, "p3d65": 2.6, "dcip3": 2.6}
COLORSPACES = ("rec709", "p3d65", "dcip3", "xyz")
#: IMF picture samplings: R'G'B' 4:4:4 as given, or Y'CbCr 4:4:4 / 4:2:2 (ST 2067-21 Table 3)
SAMPLINGS = ("rgb", "ycbcr444", "ycbcr422")
#: Luma coefficients (Kr, Kb) of the Y'CbCr coding equations: Rec. ITU-R BT.709-6 item 3.2,
#: BT.601-7 item 2.5.1, BT.2020-2 Table 4 (non-constant luminance)
LUMA_WEIGHTS = {"bt709": (0.2126, 0.0722), "bt601": (0.299, 0.114), "bt2020": (0.2627, 0.0593)}
#: The Y'CbCr that IMF pictures are written in, by colour space
YCBCR_COEFFICIENTS = {"rec709": LUMA_WEIGHTS["bt709"]}


def rgb_to_xyz_matrix(colorspace: str) -> np.ndarray:
    """3x3 float64 matrix, linear RGB -> relative XYZ (RGB white -> Y = 1); as the display
    module builds its XYZ -> RGB matrix, of which this is the inverse for rec709 and p3d65."""
    if colorspace not in INPUT_PRIMARIES:
        raise ValueError(f"colorspace must be one of {COLORSPACES}, got {colorspace!r}")
    r, g, b, w = INPUT_PRIMARIES[colorspace]

    def xyz(c):
        x, y = c
        return np.array([x / y, 1.0, (1.0 - x - y) / y])

    p = np.stack([xyz(r), xyz(g), xyz(b)], axis=1)
    return p * np.linalg.solve(p, xyz(w))


def to_xyz12(image: np.ndarray, colorspace: str = "rec709") -> np.ndarray:
    """(H, W, 3) uint16 X'Y'Z' code values 0..4095 from an (H, W, 3) image of floats 0..1.

    ``colorspace``: ``rec709``, ``p3d65``, ``dcip3`` (RGB, display-encoded) or ``xyz``.
    Arithmetic in float32; out-of-range values are clipped.
    """
    img = np.asarray(image, dtype=np.float32)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"want an (H, W, 3) image, got shape {img.shape}")
    in_gamma, m, inv_gamma = xyz12_parameters(colorspace)
    if in_gamma <= 0:
        return np.rint(np.clip(img, 0.0, 1.0) * 4095.0).astype(np.uint16)
    lin = np.power(np.clip(img, 0.0, 1.0), in_gamma)
    out = np.empty(img.shape, np.uint16)
    for ch in range(3):
        v = lin[..., 0] * m[ch, 0]
        v += lin[..., 1] * m[ch, 1]
        v += lin[..., 2] * m[ch, 2]
        np.clip(v, 0.0, 1.0, out=v)
        np.power(v, inv_gamma, out=v)
        v *= np.float32(4095.0)
        out[..., ch] = np.rint(v)
    return out


def xyz12_parameters(colorspace: str) -> tuple[np.float32, np.ndarray, np.float32]:
    """(input gamma, 3x3 float32 matrix linear RGB -> XYZ / (52.37 / 48), 1 / 2.6) of
    :func:`to_xyz12`, shared with the GPU twin (:func:`cinegpu.encode.gpu.rgb_to_xyz12`).
    ``xyz`` input has no transform: its input gamma is 0."""
    if colorspace == "xyz":
        return np.float32(0.0), np.eye(3, dtype=np.float32), np.float32(1.0)
    if colorspace not in INPUT_GAMMA:
        raise ValueError(f"colorspace must be one of {COLORSPACES}, got {colorspace!r}")
    m = (rgb_to_xyz_matrix(colorspace) / DCI_PEAK_RATIO).astype(np.float32)
    return np.float32(INPUT_GAMMA[colorspace]), m, np.float32(1.0 / DCI_GAMMA)


def ycbcr_levels(bits: int) -> tuple[int, int, int]:
    """(black, white, colour range) of narrow-range Y'CbCr code values at ``bits`` (BT.709 Table
    4: 16 and 235 for luma, 240 - 16 + 1 chroma levels, times 2^(bits - 8)): the CDCI
    descriptor's BlackRefLevel, WhiteReflevel and ColorRange (10 bits: 64, 940, 897)."""
    k = 1 << (bits - 8)
    return 16 * k, 235 * k, 224 * k + 1


def rgb_to_ycbcr(image: np.ndarray, bits: int, sampling: str = "ycbcr444",
                 colorspace: str = "rec709") -> list[np.ndarray]:
    """Narrow-range Y'CbCr code values (uint16 planes Y', Cb, Cr) of the display-encoded R'G'B'
    ``image`` ((H, W, 3) floats 0..1), Rec. ITU-R BT.709 items 3.2-3.5:

        Y' = Kr R' + (1 - Kr - Kb) G' + Kb B'       Cb = (B' - Y') / (2 (1 - Kb))
        Cr = (R' - Y') / (2 (1 - Kr))               D = round((219 Y' + 16) 2^(n-8)),
                                                    round((224 C + 128) 2^(n-8)), clipped to n bits

    ``sampling`` "ycbcr422": Cb and Cr keep every other column (ceil(W / 2) of them), each the
    [1, 2, 1] / 4 average around its co-sited luma column (edges repeated), as ST 2067-21 and
    the CDCI descriptor's ColorSiting "CoSiting" say."""
    if sampling not in ("ycbcr444", "ycbcr422"):
        raise ValueError(f"sampling must be ycbcr444 or ycbcr422, got {sampling!r}")
    if colorspace not in YCBCR_COEFFICIENTS:
        raise ValueError(f"Y'CbCr is written for {tuple(YCBCR_COEFFICIENTS)} only, got {colorspace!r}")
    kr, kb = YCBCR_COEFFICIENTS[colorspace]
    f = np.float32
    rgb = np.clip(np.asarray(image, f), f(0), f(1))          # float32: 12-bit codes are exact
    y = rgb @ np.array([kr, 1.0 - kr - kb, kb], f)
    cb = (rgb[..., 2] - y) * f(1.0 / (2.0 * (1.0 - kb)))
    cr = (rgb[..., 0] - y) * f(1.0 / (2.0 * (1.0 - kr)))
    if sampling == "ycbcr422":
        cb, cr = _cosited_half(cb), _cosited_half(cr)
    k, top = float(1 << (bits - 8)), (1 << bits) - 1
    out = []
    for v, scale, offset in ((y, 219.0, 16.0), (cb, 224.0, 128.0), (cr, 224.0, 128.0)):
        v *= f(scale * k)
        v += f(offset * k)
        np.rint(v, out=v)
        out.append(np.clip(v, 0, top).astype(np.uint16))
    return out


def _cosited_half(c: np.ndarray) -> np.ndarray:
    """Every other column of ``c``, filtered [1, 2, 1] / 4 (edge columns repeated)."""
    padded = np.concatenate([c[:, :1], c, c[:, -1:]], axis=1)
    n = -(-c.shape[1] // 2)
    q = c.dtype.type(0.25)
    return (padded[:, 0:2 * n:2] + padded[:, 2:2 * n + 2:2]) * q + padded[:, 1:2 * n:2] * (q + q)
