"""The one error family of the decoder.

Bad input, whatever it is, raises a subclass of :class:`CodestreamError`
carrying the byte offset where the problem was found and what was expected
there. Nothing else (``struct.error``, ``IndexError``, ``ZeroDivisionError``)
may escape :func:`cinegpu.decode.decode`.
"""

from __future__ import annotations


class CodestreamError(ValueError):
    """A codestream or JP2 file that cannot be decoded.

    ``offset`` is the byte offset in the input (``None`` when not tied to one
    place); ``what`` is the plain message without the offset.
    """

    def __init__(self, what: str, offset: int | None = None) -> None:
        self.what = what
        self.offset = offset
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{what}{where}")


class TruncatedCodestream(CodestreamError):
    """The data ends before a segment, packet or box that it announces."""


class InvalidSegment(CodestreamError):
    """A marker segment or packet whose contents break ISO/IEC 15444-1."""


class MisplacedMarker(CodestreamError):
    """A marker where the codestream syntax (T.800 Annex A.3) allows none."""


class UnsupportedFeature(CodestreamError):
    """Legal input that this decoder does not handle (yet), e.g. Part 15."""


class LimitExceeded(UnsupportedFeature):
    """Legal input whose decode would cost more than allowed (``cinegpu.decode.limits``).

    Raised before anything large is allocated: an image of more samples than ``max_pixels``,
    a decode needing more than ``max_memory`` bytes, more plan and packet work than the
    input's size allows; and instead of a ``MemoryError`` when an allocation fails anyway.
    ``needed`` and ``limit`` hold the two figures compared (samples, bytes or work units).
    """

    def __init__(self, what: str, offset: int | None = None, *, needed: int | None = None,
                 limit: int | None = None) -> None:
        self.needed = needed
        self.limit = limit
        super().__init__(what, offset)
