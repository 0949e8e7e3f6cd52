"""Little CMS 2 (lcms2) through ctypes: an ICC profile (ICC.1) applied to numpy samples.

This is the colour engine ``opj_decompress`` uses for a JP2 file's ICC profile (colr METH 2
or 3, ISO/IEC 15444-1 I.5.3.3), so calling it gives what OpenJPEG writes. The library is the
system's ``liblcms2.so.2`` (``ctypes.util.find_library``), else the copy that Pillow's wheel
bundles (``pillow.libs/liblcms2-*.so*``); without either, :func:`library` raises
:class:`~cinegpu.media.errors.UnsupportedMedia`. A profile lcms2 cannot read, or a transform
it cannot build, raises :class:`~cinegpu.media.errors.CorruptMedia`. Every profile and
transform handle is closed before a function returns, also when it fails.

Samples are 8-bit (``uint8``, TYPE_*_8) or 16-bit (``uint16``, TYPE_*_16: 0..65535 is the
profile's full device range), interleaved: shape (..., 3) for RGB, (...) for grey.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os

import numpy as np

from cinegpu.media.errors import CorruptMedia, UnsupportedMedia

__all__ = ["GRAY", "RGB", "colour_space", "grey_profile", "library", "rgb_profile", "to_srgb"]

#: ICC.1 Table 19 colour space signatures (the profile header's data colour space)
RGB, GRAY = "RGB", "GRAY"

# lcms2.h pixel formats: COLORSPACE_SH(pt) | CHANNELS_SH(n) | BYTES_SH(b) = pt << 16 | n << 3 | b
_PT_GRAY, _PT_RGB = 3, 4


def _pixel_type(space: str, itemsize: int) -> int:
    pt, n = (_PT_RGB, 3) if space == RGB else (_PT_GRAY, 1)
    return pt << 16 | n << 3 | itemsize


class _xyY(ctypes.Structure):
    """cmsCIExyY: a chromaticity (x, y) and luminance Y."""

    _fields_ = [("x", ctypes.c_double), ("y", ctypes.c_double), ("Y", ctypes.c_double)]


_PROTOTYPES = {  # name: (restype, argtypes), as declared in lcms2.h
    "cmsOpenProfileFromMem": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_uint32]),
    "cmsCreate_sRGBProfile": (ctypes.c_void_p, []),
    "cmsCreateRGBProfile": (ctypes.c_void_p, [ctypes.POINTER(_xyY), ctypes.POINTER(_xyY * 3),
                                              ctypes.POINTER(ctypes.c_void_p * 3)]),
    "cmsCreateGrayProfile": (ctypes.c_void_p, [ctypes.POINTER(_xyY), ctypes.c_void_p]),
    "cmsBuildGamma": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_double]),
    "cmsFreeToneCurve": (None, [ctypes.c_void_p]),
    "cmsSetHeaderRenderingIntent": (None, [ctypes.c_void_p, ctypes.c_uint32]),
    "cmsSaveProfileToMem": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32)]),
    "cmsCloseProfile": (ctypes.c_int, [ctypes.c_void_p]),
    "cmsGetColorSpace": (ctypes.c_uint32, [ctypes.c_void_p]),
    "cmsGetHeaderRenderingIntent": (ctypes.c_uint32, [ctypes.c_void_p]),
    "cmsCreateTransform": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                             ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]),
    "cmsDoTransform": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32]),
    "cmsDeleteTransform": (None, [ctypes.c_void_p]),
}


def _candidates() -> list[str]:
    found = ctypes.util.find_library("lcms2")
    names = [found] if found else []
    try:
        import PIL
    except ImportError:
        return names
    libs = os.path.join(os.path.dirname(os.path.dirname(PIL.__file__)), "pillow.libs")
    return names + sorted(glob.glob(os.path.join(libs, "liblcms2-*.so*")))


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The loaded lcms2, its functions typed; :class:`UnsupportedMedia` when none is found."""
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
            for fn, (restype, argtypes) in _PROTOTYPES.items():
                getattr(lib, fn).restype = restype
                getattr(lib, fn).argtypes = argtypes
        except (OSError, AttributeError):
            continue
        return lib
    raise UnsupportedMedia(None, "Little CMS 2 (liblcms2) is not installed: ICC profiles cannot be applied")


class _Profile:
    """An open profile handle, closed on leaving the ``with`` block."""

    def __init__(self, lib: ctypes.CDLL, handle: int | None, failure: str):
        if not handle:
            raise CorruptMedia(None, failure)
        self.lib, self.handle = lib, handle

    def __enter__(self) -> int:
        return self.handle

    def __exit__(self, *exc) -> None:
        self.lib.cmsCloseProfile(self.handle)


def _open(icc: bytes) -> _Profile:
    """The profile in ``icc`` (ICC.1 bytes, header first), to use in a ``with`` block."""
    lib = library()
    handle = lib.cmsOpenProfileFromMem(icc, len(icc)) if icc else None
    return _Profile(lib, handle, "lcms2 cannot read the ICC profile")


def _signature(value: int) -> str:
    return value.to_bytes(4, "big").decode("latin-1").strip()


def colour_space(icc: bytes) -> str:
    """The profile's data colour space (ICC.1 7.2.6, Table 19), e.g. ``"RGB"``, ``"GRAY"``,
    ``"CMYK"``, ``"Lab"``."""
    lib = library()
    with _open(icc) as h:
        return _signature(lib.cmsGetColorSpace(h))


def to_srgb(icc: bytes, pixels: np.ndarray) -> np.ndarray:
    """``pixels`` in the profile's RGB or grey space to sRGB (lcms2's built-in profile, IEC
    61966-2-1), at the profile's rendering intent, as ``opj_decompress`` transforms.

    ``pixels``: uint8 or uint16 samples (the type's full range), shape (..., 3) for an RGB
    profile, (...) for a grey one. Returns shape (..., 3) of the same type. :class:`CorruptMedia`
    when lcms2 cannot read the profile or build the transform, or the profile is of another
    colour space."""
    lib = library()
    if pixels.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"8- or 16-bit unsigned samples expected, not {pixels.dtype}")
    srgb_handle = lib.cmsCreate_sRGBProfile()
    with _Profile(lib, srgb_handle, "lcms2 cannot make its sRGB profile") as srgb, _open(icc) as src:
        space = _signature(lib.cmsGetColorSpace(src))
        if space not in (RGB, GRAY):
            raise CorruptMedia(None, f"an ICC profile of colour space {space!r}: RGB or grey expected")
        if space == RGB and pixels.shape[-1:] != (3,):
            raise ValueError(f"RGB samples of shape (..., 3) expected, not {pixels.shape}")
        out = np.empty(pixels.shape if space == RGB else pixels.shape + (3,), pixels.dtype)
        size = pixels.dtype.itemsize
        transform = lib.cmsCreateTransform(src, _pixel_type(space, size), srgb, _pixel_type(RGB, size),
                                           lib.cmsGetHeaderRenderingIntent(src), 0)
        if not transform:
            raise CorruptMedia(None, "lcms2 cannot build a transform from the ICC profile to sRGB")
        try:
            _run(lib, transform, np.ascontiguousarray(pixels), out, 1 if space == GRAY else 3)
        finally:
            lib.cmsDeleteTransform(transform)
    return out


def _run(lib: ctypes.CDLL, transform: int, src: np.ndarray, dst: np.ndarray, channels: int) -> None:
    """cmsDoTransform over ``src`` into ``dst`` (contiguous), at most 2**24 pixels a call (its
    pixel count is a 32-bit number)."""
    flat_in, flat_out = src.reshape(-1, channels), dst.reshape(-1, 3)
    step = 1 << 24
    for start in range(0, flat_in.shape[0], step):
        a, b = flat_in[start:start + step], flat_out[start:start + step]
        lib.cmsDoTransform(transform, a.ctypes.data, b.ctypes.data, a.shape[0])


def rgb_profile(white: tuple[float, float], primaries: tuple[tuple[float, float], ...],
                gamma: float, intent: int = 0) -> bytes:
    """A matrix/TRC RGB display profile (ICC.1 F.3) in memory: the ``white`` point and the red,
    green and blue ``primaries`` as CIE xy chromaticities, one power-law ``gamma`` for the
    three channels, and the header's rendering ``intent``. Used to make test files with a
    profile other than sRGB (e.g. Adobe RGB (1998): D65, (0.64, 0.33), (0.21, 0.71),
    (0.15, 0.06), gamma 563/256)."""
    lib = library()
    wp = _xyY(white[0], white[1], 1.0)
    prim = (_xyY * 3)(*(_xyY(x, y, 1.0) for x, y in primaries))
    with _gamma(lib, gamma) as curve:
        curves = (ctypes.c_void_p * 3)(curve, curve, curve)
        handle = lib.cmsCreateRGBProfile(ctypes.byref(wp), ctypes.byref(prim), ctypes.byref(curves))
    return _saved(lib, handle, intent)


def grey_profile(white: tuple[float, float], gamma: float, intent: int = 0) -> bytes:
    """A monochrome display profile (ICC.1 F.2, grey TRC) in memory: the ``white`` point's CIE
    xy chromaticity, a power-law ``gamma`` and the header's rendering ``intent``."""
    lib = library()
    wp = _xyY(white[0], white[1], 1.0)
    with _gamma(lib, gamma) as curve:
        handle = lib.cmsCreateGrayProfile(ctypes.byref(wp), curve)
    return _saved(lib, handle, intent)


class _gamma:
    """A cmsToneCurve y = x ** gamma, freed on leaving the ``with`` block."""

    def __init__(self, lib: ctypes.CDLL, gamma: float):
        self.lib, self.curve = lib, lib.cmsBuildGamma(None, gamma)
        if not self.curve:
            raise CorruptMedia(None, f"lcms2 cannot build a gamma {gamma} curve")

    def __enter__(self) -> int:
        return self.curve

    def __exit__(self, *exc) -> None:
        self.lib.cmsFreeToneCurve(self.curve)


def _saved(lib: ctypes.CDLL, handle: int | None, intent: int) -> bytes:
    """The bytes of a new profile ``handle`` with its header's rendering ``intent``; the
    handle is closed."""
    with _Profile(lib, handle, "lcms2 cannot make the profile asked for") as h:
        lib.cmsSetHeaderRenderingIntent(h, intent)
        size = ctypes.c_uint32(0)
        if lib.cmsSaveProfileToMem(h, None, ctypes.byref(size)):
            buf = ctypes.create_string_buffer(size.value)
            if lib.cmsSaveProfileToMem(h, buf, ctypes.byref(size)):
                return buf.raw[:size.value]
    raise CorruptMedia(None, "lcms2 cannot save the profile")
