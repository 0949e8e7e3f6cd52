"""POC, progression order change (T.800 A.6.6)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment
from .cod import PROGRESSIONS
from .reader import SegmentReader


@dataclass(frozen=True)
class Progression:
    """One progression: resolutions [RSpoc, REpoc), components [CSpoc, CEpoc),
    layers [0, LYEpoc), in order Ppoc (an index of Table A.16)."""

    RSpoc: int
    CSpoc: int
    LYEpoc: int
    REpoc: int
    CEpoc: int
    Ppoc: int


def parse_poc(r: SegmentReader, csiz: int) -> tuple[Progression, ...]:
    wide = csiz >= 257
    size = 9 if wide else 7
    at = r.pos
    if r.remaining == 0 or r.remaining % size:
        raise InvalidSegment(f"POC: length is not a multiple of {size}", at)
    out = []
    while r.remaining:
        rs = r.u8()
        cs = r.u16() if wide else r.u8()
        lye = r.u16()
        re = r.u8()
        ce = r.u16() if wide else r.u8()
        ce = ce or (16384 if wide else 256)  # CEpoc 0 means 256 (or 16384)
        p = r.u8()
        if p >= len(PROGRESSIONS):
            raise InvalidSegment(f"POC: progression order {p} is not in Table A.16", r.pos - 1)
        out.append(Progression(rs, cs, lye, re, ce, p))
    r.finish()
    return tuple(out)
