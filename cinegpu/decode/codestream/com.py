"""COM (T.800 A.9.2) and CRG (A.9.1): informative segments."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment
from .reader import SegmentReader


@dataclass(frozen=True)
class COM:
    """Rcom (0: binary, 1: Latin-1 text) and the comment bytes."""

    Rcom: int
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("latin-1") if self.Rcom == 1 else self.data.hex()


def parse_com(r: SegmentReader) -> COM:
    return COM(r.u16(), r.rest())


@dataclass(frozen=True)
class CRG:
    """Component offsets (Xcrg, Ycrg) in 1/65536 of a sample; informative."""

    offsets: tuple[tuple[int, int], ...]


def parse_crg(r: SegmentReader, csiz: int) -> CRG:
    if r.remaining != 4 * csiz:
        raise InvalidSegment("CRG: length does not match Csiz", r.pos)
    return CRG(tuple((r.u16(), r.u16()) for _ in range(csiz)))
