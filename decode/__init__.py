"""JPEG 2000 Part-1 decoding (ISO/IEC 15444-1 | ITU-T T.800).

    >>> from cinegpu.decode import decode
    >>> components = decode(open("frame.j2c", "rb").read())

:func:`decode` returns one 2-D integer array per component, at the
component's own size, after the inverse colour transform, DC level shift and
clipping: what ``opj_decompress`` writes per component.
"""

from .errors import (
    BackendUnavailable,
    CodestreamError,
    InvalidSegment,
    LimitExceeded,
    MisplacedMarker,
    PipelineError,
    TruncatedCodestream,
    UnsupportedFeature,
    WorkerCrashed,
)

__all__ = [
    "BackendUnavailable",
    "CodestreamError",
    "InvalidSegment",
    "LimitExceeded",
    "MisplacedMarker",
    "PipelineError",
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
