"""What ``cinegpu decode`` writes for a JP2 file's colour space: the picture a user expects.

:func:`cinegpu.decode.decode` returns a JP2 file's raw channels (after palette and cdef). An
image file wants display colours, so :func:`for_display` converts them as ``opj_decompress``
does before it writes a PNG or TIFF (OpenJPEG's ``src/bin/common/color.c``), from the first
Colour Specification box (T.800 I.5.3.3):

- sRGB (EnumCS 16), greyscale (17), no colr: as decoded.
- sYCC (18): chroma upsampled to the luma's size (each chroma sample repeated over the luma
  samples it covers, any integer subsampling; OpenJPEG does 4:2:0, 4:2:2 and 4:4:4 the same
  way), then the sYCC matrix of IEC 61966-2-1 Amd 1 with OpenJPEG's rounding (towards zero),
  clipped to the luma's precision.
- e-sYCC (24): OpenJPEG's matrix (components of one size only).
- CMYK (12): to 8-bit RGB, R = 255 (1 - C)(1 - K) and so on (OpenJPEG's formula); a TIFF keeps
  the four channels as a separated (CMYK) TIFF, as ``opj_decompress`` writes it.
- CIELab (14, T.801 M.11.7.4, with its range/offset parameters or the defaults): Lab (D50) to
  16-bit sRGB in numpy (the CIE formulas and the Bradford-adapted sRGB matrix, which is what
  OpenJPEG's lcms2 transform computes).
- an ICC profile (METH 2 or 3, ICC.1): applied to sRGB through lcms2 (``media/lcms2.py``, the
  library ``opj_decompress`` calls) at the profile's rendering intent, for an RGB profile over
  three channels (and more: alpha) and a grey one over one channel (+ alpha), which becomes RGB
  as in ``opj_decompress``; the channels unsigned, of one precision of 1 to 16 bits. 8-bit
  samples go through lcms2's 8-bit transform (TYPE_RGB_8, TYPE_GRAY_8 to TYPE_RGB_8), as
  ``opj_decompress`` does, so the two agree exactly; any other precision is scaled to lcms2's
  16 bits (v * 65535 / (2**bits - 1), rounded), transformed (TYPE_RGB_16, TYPE_GRAY_16 to
  TYPE_RGB_16) and scaled back to its own precision, rounded. 16-bit RGB is what
  ``opj_decompress`` writes, exactly; for 1 to 7 and 9 to 15 bits ``opj_decompress`` 2.5 hands
  lcms2 the samples unscaled (a 12-bit 4095 read as 4095/65535, so the picture comes out dark
  and wrong), and grey above 8 bits it transforms as 8-bit bytes: there cinegpu keeps the
  colours right and does not match it. Profiles of other colour spaces (CMYK, Lab, YCbCr, ...) are not applied.

A bare codestream (.j2c/.j2k) names no colour space. ``opj_decompress`` takes one of three
components whose chroma is sub-sampled (component 0 sampled alike across and down, component 1
not every sample across) for sYCC and converts it as above; :func:`codestream_for_display` does
the same, with a note saying it guessed, and writes any other as decoded.

A case that cannot be converted (other colour spaces, sizes or depths the conversion does not
take) is written as decoded with a one-line note saying why; nothing fails. Channels after the
colour ones (alpha) are kept as they are, after the converted colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cinegpu.decode.jp2 import JP2Header
from cinegpu.media.errors import MediaError
from cinegpu.media.images import lcms2

SRGB, GREY, SYCC, CMYK, CIELAB, ESYCC = 16, 17, 18, 12, 14, 24
NAMES = {0: "bi-level", 1: "YCbCr(1)", 3: "YCbCr(2)", 4: "YCbCr(3)", 9: "PhotoYCC", 11: "CMY",
         12: "CMYK", 13: "YCCK", 14: "CIELab", 15: "bi-level(2)", 16: "sRGB", 17: "greyscale",
         18: "sYCC", 19: "CIEJab", 20: "e-sRGB", 21: "ROMM-RGB", 22: "YPbPr(1125/60)",
         23: "YPbPr(1250/50)", 24: "e-sYCC"}


@dataclass
class Picture:
    """Components ready for :func:`cinegpu.media.images.write.write_image`."""

    components: list[np.ndarray]
    bits: list[int]
    signed: list[bool]
    alpha: int | None = None  #: index of the opacity channel
    photometric: str | None = None  #: a TIFF photometric other than the default ("separated")
    notes: list[str] = field(default_factory=list)  #: one line each: what was not converted, why


def for_display(components: list[np.ndarray], bits: list[int], signed: list[bool],
                header: JP2Header | None, *, alpha: int | None = None, tiff: bool = False,
                origins: list[tuple[int, int]] | None = None, sampling=None) -> Picture:
    """The picture to write for a JP2 file's decoded channels (see the module's docstring).

    ``bits``/``signed``: each channel's precision; ``alpha``: the opacity channel's index
    (``Frame.alpha``); ``tiff``: the output is TIFF (CMYK is kept); ``origins``: (x, y) of each
    channel's first sample on its own sampling grid (SIZ: ceil(XOsiz / XRsiz), reduced), for
    sYCC chroma siting (default: all 0); ``sampling``: each channel's (XRsiz, YRsiz) where the
    channels are the components (None: the ratios are taken from the sizes)."""
    pic = Picture(list(components), list(bits), list(signed), alpha)
    if header is None or not components:
        return pic
    if header.icc_profile is not None:
        _icc(pic, header.icc_profile)
    elif header.colourspace in (None, SRGB, GREY):
        pass
    elif header.colourspace == SYCC:
        _sycc(pic, origins or [(0, 0)] * len(components), sampling)
    elif header.colourspace == ESYCC:
        _esycc(pic)
    elif header.colourspace == CMYK:
        if tiff:
            if len(components) >= 4 and _same_shape(components[:4]):
                pic.photometric = "separated"
        else:
            _cmyk(pic)
    elif header.colourspace == CIELAB:
        _cielab(pic, header.lab)
    else:
        cs = header.colourspace
        pic.notes.append(f"colour space {cs} ({NAMES.get(cs, 'unknown')}) written as decoded")
    return pic


def codestream_for_display(components: list[np.ndarray], bits: list[int], signed: list[bool],
                           sampling: list[tuple[int, int]], *, alpha: int | None = None,
                           origins: list[tuple[int, int]] | None = None) -> Picture:
    """The picture to write for a bare codestream's components (no JP2 header: see the module's
    docstring). ``sampling``: each component's (XRsiz, YRsiz) of SIZ (A.5.1); ``origins`` as
    in :func:`for_display`."""
    pic = Picture(list(components), list(bits), list(signed), alpha)
    if len(components) == 3 and sampling[0][0] == sampling[0][1] and sampling[1][0] != 1:
        _sycc(pic, origins or [(0, 0)] * 3, sampling)
        if not pic.notes:
            pic.notes.append("a codestream names no colour space: three components with sub-sampled chroma "
                             "taken for sYCC and converted to RGB, as opj_decompress does")
    return pic


def _same_shape(arrays) -> bool:
    return len({a.shape for a in arrays}) == 1


def _replace(pic: Picture, n: int, new: list[np.ndarray], bits: int) -> None:
    """The first ``n`` channels become ``new`` (unsigned ``bits``-bit); the rest are kept."""
    pic.components[:n] = new
    pic.bits[:n] = [bits] * len(new)
    pic.signed[:n] = [False] * len(new)
    if pic.alpha is not None and pic.alpha >= n:
        pic.alpha += len(new) - n


def _dtype(bits: int):
    return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.int32


# ---------------------------------------------------------------- sYCC

def upsample(chroma: np.ndarray, shape: tuple[int, int], origin: tuple[int, int],
             chroma_origin: tuple[int, int], factor: tuple[int, int] | None = None) -> np.ndarray:
    """``chroma`` repeated onto the luma's grid: luma sample x (at grid position origin + x)
    takes the chroma sample covering it, floor((origin + x) / f) - chroma_origin, clamped to the
    edges, where f is ``factor`` (x, y: the chroma's sub-sampling over the luma's, SIZ's
    XRsiz and YRsiz) or, not given, the luma's size over the chroma's rounded up (which an
    odd origin can make wrong: give the factor where SIZ is known)."""
    index = []
    for axis in (0, 1):
        n, m = shape[axis], chroma.shape[axis]
        f = factor[1 - axis] if factor is not None else max(1, -(-n // m)) if m else 1
        pos = (origin[1 - axis] + np.arange(n)) // f - chroma_origin[1 - axis]
        index.append(np.clip(pos, 0, max(m - 1, 0)))
    return chroma[np.ix_(index[0], index[1])]


def _factors(sampling) -> list:
    """Each channel's (x, y) sub-sampling over the first's, from SIZ's (XRsiz, YRsiz) of each
    (None: not known, or not a whole ratio)."""
    if sampling is None:
        return [None] * 3
    (x0, y0), out = sampling[0], []
    for x, y in sampling[:3]:
        out.append((x // x0, y // y0) if x % x0 == 0 and y % y0 == 0 else None)
    return out


def _sycc(pic: Picture, origins: list[tuple[int, int]], sampling=None) -> None:
    c = pic.components
    if len(c) < 3 or any(pic.signed[:3]) or any(a.size == 0 for a in c[:3]):
        pic.notes.append("sYCC with fewer than 3 unsigned channels written as decoded")
        return
    prec = pic.bits[0]
    y = c[0].astype(np.int64)
    factors = _factors(sampling)
    cb = upsample(c[1], y.shape, origins[0], origins[1], factors[1]).astype(np.float64) - (1 << (prec - 1))
    cr = upsample(c[2], y.shape, origins[0], origins[2], factors[2]).astype(np.float64) - (1 << (prec - 1))
    top = (1 << prec) - 1
    # OpenJPEG's sycc_to_rgb: the chroma terms truncated towards zero, then clipped
    r = y + np.trunc(1.402 * cr).astype(np.int64)
    g = y - np.trunc(0.344 * cb + 0.714 * cr).astype(np.int64)
    b = y + np.trunc(1.772 * cb).astype(np.int64)
    _replace(pic, 3, [np.clip(v, 0, top).astype(_dtype(prec)) for v in (r, g, b)], prec)


def _esycc(pic: Picture) -> None:
    c = pic.components
    if len(c) < 3 or not _same_shape(c[:3]):
        pic.notes.append("e-sYCC with subsampled or missing channels written as decoded")
        return
    prec = pic.bits[0]
    flip, top = np.float32(1 << (prec - 1)), (1 << prec) - 1
    y, cb, cr = (a.astype(np.float32) for a in c[:3])
    if not pic.signed[1]:
        cb = cb - flip
    if not pic.signed[2]:
        cr = cr - flip
    f = np.float32
    r = y - f(0.0000368) * cb + f(1.40199) * cr + f(0.5)
    g = f(1.0003) * y - f(0.344125) * cb - f(0.7141128) * cr + f(0.5)
    b = f(0.999823) * y + f(1.77204) * cb - f(0.000008) * cr + f(0.5)
    _replace(pic, 3, [np.clip(np.trunc(v), 0, top).astype(_dtype(prec)) for v in (r, g, b)], prec)


# ---------------------------------------------------------------- CMYK

def _cmyk(pic: Picture) -> None:
    c = pic.components
    if len(c) < 4 or not _same_shape(c[:4]):
        pic.notes.append("CMYK with subsampled or missing channels written as decoded")
        return
    f = np.float32
    # OpenJPEG's color_cmyk_to_rgb, in float32 as there: 255 (1 - C)(1 - K), truncated
    inv = [f(1) - c[k].astype(f) * (f(1) / f((1 << pic.bits[k]) - 1)) for k in range(4)]
    rgb = [np.clip(np.trunc(f(255) * inv[k] * inv[3]), 0, 255).astype(np.uint8) for k in range(3)]
    _replace(pic, 4, rgb, 8)


# -------------------------------------------------------------- CIELab

#: CIE Lab white point of the ICC profile connection space (D50), and XYZ (D50) to linear sRGB
#: (the sRGB primaries adapted to D50 with the Bradford transform, as in an ICC sRGB profile)
D50 = (0.9642, 1.0, 0.8249)
XYZ_D50_TO_SRGB = np.array([[3.1338561, -1.6168667, -0.4906146],
                            [-0.9787684, 1.9161415, 0.0334540],
                            [0.0719453, -0.2289914, 1.4052427]])


def lab_to_srgb16(L: np.ndarray, a: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """CIE L*a*b* (D50, floats) to 16-bit sRGB (uint16 R, G, B), clipped to the gamut."""
    fy = (L + 16.0) / 116.0
    fx, fz = fy + a / 500.0, fy - b / 200.0

    def finv(t):
        return np.where(t > 6.0 / 29.0, t ** 3, 3 * (6.0 / 29.0) ** 2 * (t - 4.0 / 29.0))

    xyz = np.stack([finv(fx) * D50[0], finv(fy) * D50[1], finv(fz) * D50[2]])
    lin = np.tensordot(XYZ_D50_TO_SRGB, xyz, axes=1).clip(0.0, 1.0)
    enc = np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055)
    return [np.rint(v * 65535.0).clip(0, 65535).astype(np.uint16) for v in enc]


def _cielab(pic: Picture, params: tuple[int, ...] | None) -> None:
    c = pic.components
    if len(c) != 3 or not _same_shape(c):
        pic.notes.append("CIELab needs 3 channels of one size: written as decoded")
        return
    p0, p1, p2 = pic.bits[:3]
    if params is None:  # the defaults of T.801 M.11.7.4 (as OpenJPEG takes them)
        rl, ol, ra, oa, rb, ob = 100, 0, 170, 2.0 ** (p1 - 1), 200, 2.0 ** (p2 - 2) + 2.0 ** (p2 - 3)
    else:
        rl, ol, ra, oa, rb, ob = params[:6]

    def scale(v, r, o, p):
        lo = -(r * o) / (2.0 ** p - 1)
        return lo + v.astype(np.float64) * r / (2.0 ** p - 1)

    rgb = lab_to_srgb16(scale(c[0], rl, ol, p0), scale(c[1], ra, oa, p1), scale(c[2], rb, ob, p2))
    _replace(pic, 3, rgb, 16)


# ----------------------------------------------------------------- ICC

def _icc(pic: Picture, icc: bytes) -> None:
    """The ICC profile applied to the colour channels through lcms2 (``media/lcms2.py``), to
    sRGB at the profile's rendering intent, as ``opj_decompress`` does; see the module's
    docstring for the precisions."""

    try:
        space = lcms2.colour_space(icc)
    except MediaError as exc:
        pic.notes.append(f"ICC profile not applied: {exc.reason}")
        return
    n = {lcms2.RGB: 3, lcms2.GRAY: 1}.get(space)
    if n is None:
        pic.notes.append(f"ICC profile of colour space {space!r} not applied (RGB and grey are)")
        return
    c = pic.components
    if len(c) < n or not _same_shape(c[:n]):
        pic.notes.append(f"ICC profile ({space}) not applied: {n} channels of one size needed")
        return
    if any(pic.signed[:n]) or len(set(pic.bits[:n])) != 1 or not 1 <= pic.bits[0] <= 16:
        pic.notes.append(f"ICC profile not applied: unsigned channels of one precision (1 to 16 bits) "
                         f"needed, not {pic.bits[:n]} bits, signed {pic.signed[:n]}")
        return
    bits = pic.bits[0]
    pixels = np.stack(c[:n], axis=-1) if n > 1 else c[0]
    try:
        if bits == 8:
            out = lcms2.to_srgb(icc, pixels.astype(np.uint8))
        else:
            out = _from16(lcms2.to_srgb(icc, _to16(pixels, bits)), bits)
    except MediaError as exc:
        pic.notes.append(f"ICC profile not applied: {exc.reason}")
        return
    _replace(pic, n, [np.ascontiguousarray(out[..., k]) for k in range(3)], bits)


def _to16(samples: np.ndarray, bits: int) -> np.ndarray:
    """``bits``-bit samples on lcms2's 16-bit scale: v * 65535 / (2**bits - 1), rounded."""
    top = (1 << bits) - 1
    v = np.clip(samples.astype(np.int64), 0, top)
    return ((v * 65535 + top // 2) // top).astype(np.uint16)


def _from16(samples: np.ndarray, bits: int) -> np.ndarray:
    """16-bit samples back to ``bits`` bits: v * (2**bits - 1) / 65535, rounded."""
    top = (1 << bits) - 1
    return ((samples.astype(np.int64) * top + 32767) // 65535).astype(_dtype(bits))
