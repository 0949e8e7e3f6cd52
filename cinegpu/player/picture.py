"""Decoded components -> the RGBA16 picture the texture targets take.

X'Y'Z' content (DCPs, DCI-profile codestreams) goes through the DCI output
transform (:func:`cinegpu.decode.transform.xyz_to_rgb`, or its CuPy twin on
the CUDA back end); other content is taken as RGB (3 components) or grey
(1), each scaled from its precision to 16 bits: round(v * 65535 / (2^p - 1)).
Three components whose second and third are sub-sampled alike, by whole factors across and
down (4:2:2 as IMF carries it, 4:2:0 as video tools write J2K sequences, 4:1:1; OpenJPEG too takes
such streams for Y'CbCr), are Y'CbCr, and so are three of one size where the media says so
(an IMF track's CDCI descriptor): narrow-range Rec. ITU-R BT.709 code values, the chroma
brought to the luma's size (co-sited, as a component's samples lie on the reference grid,
T.800 B.2: chroma sample k on luma sample f k, the ones between interpolated linearly; for a
factor of 2, the mean of their neighbours), then R'G'B' (:func:`ycbcr_to_rgba16`).  Alpha is
opaque (65535).  Components it cannot show (fewer than three for X'Y'Z', other differing
sizes) raise :class:`~cinegpu.media.errors.UnsupportedMedia`.
"""

from __future__ import annotations

import numpy as np

from cinegpu.decode.codestream import dci
from cinegpu.decode.transform import xyz_to_rgb
from cinegpu.interop.xyz import XYZPlanes
from cinegpu.media.errors import UnsupportedMedia
from cinegpu.media.images.colour import YCBCR_COEFFICIENTS

__all__ = ["COLOURS", "DCI_RSIZ", "chroma_factors", "is_xyz", "rgba16_reference", "ycbcr_to_rgba16",
           "PictureConverter"]

COLOURS = ("auto", "xyz", "rgb")
#: Rsiz values of the DCI profiles (T.800 Amd 1: 2K and 4K digital cinema).
DCI_RSIZ = frozenset(p.Rsiz for p in dci.PROFILES.values())
_XYZ_KINDS = frozenset({"dcp-smpte", "dcp-interop", "smpte", "interop", "dcp"})


def is_xyz(colour: str, kind: str | None, rsiz: int | None) -> bool:
    """Whether to treat the content as X'Y'Z': ``colour`` "xyz"/"rgb" decide; "auto" looks at
    the source kind (a DCP) and the codestream's Rsiz (a DCI profile)."""
    if colour not in COLOURS:
        raise ValueError(f"colour must be one of {COLOURS}, got {colour!r}")
    if colour != "auto":
        return colour == "xyz"
    return (kind or "") in _XYZ_KINDS or (rsiz is not None and (rsiz & 0x7FFF) in DCI_RSIZ)


def _scale16(c, precision: int, xp):
    top = (1 << precision) - 1
    v = xp.clip(c.astype(xp.float64), 0, top) * (65535.0 / top)
    return xp.rint(v).astype(xp.uint16)


def rgba16_reference(components, precisions, xyz: bool, primaries: str = "p3d65", xp=np):
    """(H, W, 4) uint16 picture of decoded ``components`` (numpy, or CuPy with ``xp=cupy``)."""
    if xyz:
        if len(components) < 3:
            raise UnsupportedMedia(None, f"X'Y'Z' needs 3 components, got {len(components)}")
        convert = xyz_to_rgb
        if xp is not np:
            from cinegpu.decode.transform.cuda_backend import xyz_to_rgb as convert  # noqa: PLC0415  (optional: CuPy)
        return convert(*components[:3], primaries=primaries, out_bits=16, alpha=True, in_bits=int(precisions[0]))
    if len(components) >= 3:
        planes = [_scale16(xp.asarray(c), p, xp) for c, p in zip(components[:3], precisions[:3])]
    elif len(components) >= 1:
        planes = [_scale16(xp.asarray(components[0]), precisions[0], xp)] * 3
    else:
        raise UnsupportedMedia(None, "no components")
    h, w = planes[0].shape
    out = xp.empty((h, w, 4), xp.uint16)
    for ch, p in enumerate(planes):
        out[..., ch] = p
    out[..., 3] = 65535
    return out


def chroma_factors(components) -> tuple[int, int] | None:
    """(down, across): the whole factors by which the second and third of ``components`` are
    sub-sampled alike against the first (each size the first's divided by the factor, rounded
    up, as T.800 B-2 gives a component's size from the grid); (1, 1) for three of one size;
    None where there are fewer than three or no such factors."""
    if len(components) < 3 or components[1].shape != components[2].shape:
        return None
    factors = []
    for n, m in zip(components[0].shape, components[1].shape):
        f = -(-n // m) if m else 0      # the least f with ceil(n / f) <= m: the one, if any, giving m
        if not f or -(-n // f) != m:
            return None
        factors.append(f)
    return factors[0], factors[1]


def _upsampled(c, n: int, f: int, axis: int, xp):
    """``c`` brought to ``n`` samples along ``axis`` from every ``f``-th: sample k is sample
    f k (co-sited); the ``r``-th after it (f k + r) is ((f - r) c[k] + r c[k + 1]) / f, the last
    sample standing for its missing next (float32)."""
    if f == 1:
        return c
    c = xp.moveaxis(c, axis, 0)
    nxt = xp.concatenate([c[1:], c[-1:]])           # each sample's next co-sited one
    full = xp.empty((n, *c.shape[1:]), c.dtype)
    for r in range(f):
        k = len(range(r, n, f))
        if r == 0:
            full[0::f] = c[:k]
        else:
            full[r::f] = (c[:k] * c.dtype.type(f - r) + nxt[:k] * c.dtype.type(r)) * c.dtype.type(1.0 / f)
    return xp.moveaxis(full, 0, axis)


def ycbcr_to_rgba16(components, precisions, xp=np):
    """(H, W, 4) uint16 R'G'B' of narrow-range BT.709 Y'CbCr ``components`` at ``precisions[0]``
    bits, the chroma sub-sampled by whole factors or not (:func:`chroma_factors`; 4:2:2, 4:2:0,
    4:4:4, ...): Y' = (D / 2^(n-8) - 16) / 219, Cb, Cr = (D / 2^(n-8) - 128) / 224,
    R' = Y' + 2 (1 - Kr) Cr, B' = Y' + 2 (1 - Kb) Cb, G' from Y' (BT.709 items 3.2-3.5)."""
    factors = chroma_factors(components)
    if factors is None:
        raise UnsupportedMedia(None, f"Y'CbCr of components {[c.shape for c in components[:3]]}: chroma not "
                                     "sub-sampled by whole factors")
    kr, kb = YCBCR_COEFFICIENTS["rec709"]
    f = xp.float32
    k = float(1 << (int(precisions[0]) - 8))

    def normalised(c, offset, scale):           # code values -> Y' 0..1 or C -0.5..0.5
        v = xp.asarray(c).astype(f)
        v -= f(offset * k)
        v *= f(1.0 / (scale * k))
        return v

    y = normalised(components[0], 16.0, 219.0)
    h, w = y.shape

    def chroma(c):
        c = normalised(c, 128.0, 224.0)
        return _upsampled(_upsampled(c, h, factors[0], 0, xp), w, factors[1], 1, xp)

    cb, cr = chroma(components[1]), chroma(components[2])
    out = xp.empty((h, w, 4), xp.uint16)
    r = y + f(2.0 * (1.0 - kr)) * cr
    b = y + f(2.0 * (1.0 - kb)) * cb
    g = (y - f(kr) * r - f(kb) * b) * f(1.0 / (1.0 - kr - kb))
    for ch, v in enumerate((r, g, b)):
        xp.clip(v, f(0), f(1), out=v)
        v *= f(65535)
        out[..., ch] = xp.rint(v)
    out[..., 3] = 65535
    return out


class PictureConverter:
    """Turns a decoded :class:`~cinegpu.decode.decoder.Frame` into an RGBA16 picture.

    ``device``: produce CuPy arrays (the CUDA back end) rather than numpy.
    Of components of differing sizes, Y'CbCr of chroma sub-sampled by whole factors is shown
    (see the module docstring); others are not supported by this path.
    """

    def __init__(self, xyz: bool, primaries: str = "p3d65", device: bool = False,
                 ycbcr: bool = False, planar: bool = False) -> None:
        self.xyz, self.primaries, self.device = xyz, primaries, device
        #: the media says Y'CbCr (an IMF CDCI descriptor): 4:4:4 is converted too
        self.ycbcr = ycbcr
        #: X'Y'Z' host pictures come as :class:`~cinegpu.interop.xyz.XYZPlanes`, which the
        #: display converts (the host target and the presenter's shader), not as RGBA16
        self.planar = planar and xyz and not device

    def __call__(self, components, precisions):
        if self.ycbcr and len(components) >= 3 and \
                len({c.shape for c in components[:3]}) == 1:
            if self.device:
                import cupy  # noqa: PLC0415  (optional: CuPy)
                return ycbcr_to_rgba16(components, precisions, xp=cupy)
            return ycbcr_to_rgba16(components, precisions)
        if len({c.shape for c in components[:3]}) > 1:
            if self.xyz or chroma_factors(components) is None:
                raise UnsupportedMedia(None, f"components of different sizes {[c.shape for c in components]}")
            if self.device:
                import cupy  # noqa: PLC0415  (optional: CuPy)
                return ycbcr_to_rgba16(components, precisions, xp=cupy)
            return ycbcr_to_rgba16(components, precisions)
        if self.device:
            import cupy  # noqa: PLC0415  (optional: CuPy)
            return rgba16_reference([cupy.asarray(c) for c in components], precisions, self.xyz,
                                    self.primaries, xp=cupy)
        if self.planar:
            if len(components) < 3:
                raise UnsupportedMedia(None, f"X'Y'Z' needs 3 components, got {len(components)}")
            return XYZPlanes(tuple(components[:3]), int(precisions[0]), self.primaries)
        return rgba16_reference(components, precisions, self.xyz, self.primaries)
