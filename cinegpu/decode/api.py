"""``decode()``: one call from codestream (or JP2 file) bytes to component arrays."""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

import numpy as np

from .decoder import Decoder, Frame
from .errors import LenientWarning
from .limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_PIXELS
from .request import DecodeRequest

#: Decoders kept per thread, one per (back end, max_pixels, max_memory), least recently used first out.
DECODERS_PER_THREAD = 4

# The one piece of module state: each thread's decoders, so that calls of decode() on a
# sequence of frames reuse their plans (Decoder caches them per header) as a Decoder would.
_per_thread = threading.local()


def cached_decoder(backend: str, max_pixels: int | None, max_memory: int | None) -> Decoder:
    """This thread's :class:`Decoder` for these settings (made on first use, at most
    :data:`DECODERS_PER_THREAD` kept per thread)."""
    decoders = getattr(_per_thread, "decoders", None)
    if decoders is None:
        decoders = _per_thread.decoders = OrderedDict()
    key = (backend, max_pixels, max_memory)
    decoder = decoders.get(key)
    if decoder is None:
        decoder = decoders[key] = Decoder(backend, max_pixels=max_pixels, max_memory=max_memory)
        while len(decoders) > DECODERS_PER_THREAD:
            decoders.popitem(last=False)
    else:
        decoders.move_to_end(key)
    return decoder


def decode(data, *, reduce: int = 0, layers: int | None = None, backend: str = "cpu",
           strict: bool = False, components=None, area=None, max_pixels: int | None = DEFAULT_MAX_PIXELS,
           max_memory: int | None = DEFAULT_MAX_MEMORY, request: DecodeRequest | None = None) -> list[np.ndarray]:
    """Decode a JPEG 2000 codestream (.j2c/.j2k) or JP2 file (.jp2).

    Returns one 2-D integer array per component at its own size (divided by
    2**reduce), after the inverse colour transform, DC level shift and
    clipping to the component's precision. ``layers`` decodes only the first
    N quality layers. Decoding is lenient by default, as OpenJPEG, Grok and FFmpeg decode:
    what breaks ISO/IEC 15444-1 in a way they decode is decoded as they decode it, damage
    (data cut short, a broken packet stream) is concealed (zeros), and each is warned with a
    :class:`~cinegpu.decode.errors.LenientWarning` naming what was passed over; input that
    cannot be decoded at all raises :class:`CodestreamError`. ``strict=True`` raises on the
    first departure instead (what ``cinegpu check --decode`` does). ``components``
    selects and orders the components returned (the inverse MCT is then
    skipped unless components 0-2 are all selected).

    For a JP2 file (.jp2) the arrays are the raw channels: a palette (pclr/cmap) is applied
    and the channels are put in the Channel Definition box's order (cdef: colour channels by
    association, R G B or Y Cb Cr, then opacity), but no colour space is converted: sYCC stays
    Y, Cb, Cr (chroma at its own, subsampled size), CMYK stays four channels, CIELab stays
    L, a, b, and an ICC profile (colr method 2/3) is not applied (``JP2Header.icc_profile``
    holds it; :func:`cinegpu.decode.jp2.read_jp2` gives the header). ``cinegpu decode``
    converts them for display when it writes an image (``cinegpu.media.images.jp2_colour``).
    ``Decoder.decode`` returns a ``Frame`` whose ``alpha`` names the opacity channel. With
    ``components`` given, cdef is not applied (the indices are the codestream's).
    What OpenJPEG and Grok tolerate in a JP2 file's boxes is decoded with a
    :class:`~cinegpu.decode.errors.LenientWarning` (see ``read_jp2``).

    ``backend``: "cpu" (the default: numba kernels), "cuda" (CuPy kernels;
    :class:`UnsupportedFeature` without a device), "auto" (CUDA where CuPy finds a
    device, else the CPU) or "numpy" (the plain reference).

    ``max_pixels`` caps one component's samples at the decoded resolution (default 2**27),
    ``max_memory`` the bytes the decode is estimated to need (default 4 GiB); None lifts
    either. Beyond them, or beyond the work the input's size allows, :class:`LimitExceeded`
    (an :class:`UnsupportedFeature`) is raised before anything large is allocated; see
    :mod:`cinegpu.decode.limits` for the rules.

    ``area``: (x0, y0, x1, y1), a rectangle of the reference grid (the image's coordinates, its
    offset included, at full resolution) to decode instead of the whole image, as
    ``opj_decompress -d`` decodes it: each component's samples in it (B-2), those of the tiles
    that meet it, the others not read (:mod:`cinegpu.decode.area`). An area reaching outside the
    image is cut to it, as OpenJPEG cuts it; ValueError where it is empty or wholly outside.

    ``request``: ``reduce``, ``layers``, ``strict``, ``components`` and ``area`` as one
    :class:`~cinegpu.decode.request.DecodeRequest` instead (then leave those keywords out).

    A call reuses what an earlier call of the same thread with the same ``backend`` and limits
    planned for the same headers (see :func:`cached_decoder`), so decoding a sequence of frames
    costs their tier-2, tier-1 and reconstruction only.
    """
    request = DecodeRequest.given(request, reduce=reduce, layers=layers, strict=strict, components=components,
                                  area=area)
    frame = cached_decoder(backend, max_pixels, max_memory).decode(data, request=request)
    warn_passed_over(frame)
    return frame.components


#: Lines :func:`warn_passed_over` warns with at most, the rest counted in one more.
WARNED_LINES = 8


def warn_passed_over(frame: Frame, stacklevel: int = 3) -> None:
    """One :class:`~cinegpu.decode.errors.LenientWarning` per distinct line of what a lenient
    decode tolerated or concealed (the codestream's warnings, then each tile's faults), at most
    :data:`WARNED_LINES` of them and a count of the rest."""
    faults = frame.passed_over()
    if not faults:
        return
    lines = list(dict.fromkeys(f.line() for f in faults))
    for line in lines[:WARNED_LINES]:
        warnings.warn(LenientWarning(line), stacklevel=stacklevel)
    if len(lines) > WARNED_LINES:
        warnings.warn(LenientWarning(f"and {len(lines) - WARNED_LINES} more"), stacklevel=stacklevel)
