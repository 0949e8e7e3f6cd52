"""JPEG 2000 Part-1 decoding (ISO/IEC 15444-1 | ITU-T T.800).

    >>> from cinegpu.decode import decode
    >>> components = decode(open("frame.j2c", "rb").read())

:func:`decode` returns a list of 2-D numpy integer arrays, one per component
(for a JP2 file with a palette, one per palette column, I.5.3.4-I.5.3.6), each
at the component's own size divided by ``2**reduce``, holding the samples after
the inverse multiple component transform (G.2, G.3), DC level shift (G.1) and
clipping to the component's precision (Ssiz, A.5.1): ``uint8`` up to 8 bits,
``uint16`` up to 16, else ``int32`` (signed components: ``int8``, ``int16``,
``int32``). For a JP2 file the channels are put in the order its Channel Definition box
(cdef, I.5.3.6) gives: colour channels by association, then opacity. No JP2 colour space
(colr) conversion is applied: ``cinegpu decode`` does that when it writes an image
(``cinegpu.media.images.jp2_colour``). The default back
end is ``"cpu"`` (numba); ``"cuda"``, ``"auto"`` and ``"numpy"`` are the others.
"""

from . import kernel_cache  # noqa: F401  installs numba's cache locator before any kernel is defined

from .errors import (
    BackendUnavailable,
    CodestreamError,
    InvalidSegment,
    LenientWarning,
    LimitExceeded,
    MisplacedMarker,
    PipelineError,
    TruncatedCodestream,
    UnsupportedFeature,
    WorkerCrashed,
)
from .request import DecodeRequest
from .strictness import Fault, Strictness

__all__ = [
    "BackendUnavailable",
    "CodestreamError",
    "DecodeRequest",
    "Fault",
    "InvalidSegment",
    "LenientWarning",
    "LimitExceeded",
    "MisplacedMarker",
    "PipelineError",
    "Strictness",
    "TruncatedCodestream",
    "UnsupportedFeature",
    "WorkerCrashed",
    "decode",
]


def __getattr__(name: str):
    # decode() pulls in numba; keep `import cinegpu.decode` cheap for the
    # error classes and the header parser.
    if name == "decode":
        from .api import decode

        return decode
    raise AttributeError(name)
