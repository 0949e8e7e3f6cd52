"""PPM and PPT, packed packet headers (T.800 A.7.4, A.7.5)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment
from .reader import SegmentReader


@dataclass(frozen=True)
class PPM:
    """Zppm and the raw Nppm/Ippm bytes; tile-part headers are split out
    later because one tile-part's Nppm may straddle two PPM segments."""

    Zppm: int
    data: bytes


def parse_ppm(r: SegmentReader) -> PPM:
    return PPM(r.u8(), r.rest())


@dataclass(frozen=True)
class PPT:
    Zppt: int
    data: bytes


def parse_ppt(r: SegmentReader) -> PPT:
    return PPT(r.u8(), r.rest())


def split_ppm(segments: list[PPM]) -> list[bytes]:
    """The packed headers of each tile-part, in codestream order (A.7.4).

    PPM segments are joined in Zppm order; the result is a list of the
    Ippm runs announced by the Nppm fields.
    """
    data = b"".join(s.data for s in sorted(segments, key=lambda s: s.Zppm))
    out, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise InvalidSegment("PPM: Nppm cut short")
        n = int.from_bytes(data[pos : pos + 4], "big")
        pos += 4
        if pos + n > len(data):
            raise InvalidSegment(f"PPM: Nppm {n} runs past the packed headers")
        out.append(data[pos : pos + n])
        pos += n
    return out
