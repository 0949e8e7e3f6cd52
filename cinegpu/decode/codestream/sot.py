"""SOT, start of tile-part (T.800 A.4.2)."""

from __future__ import annotations

from dataclasses import dataclass

from .reader import SegmentReader


@dataclass(frozen=True)
class SOT:
    """Isot (tile index), Psot (tile-part length from the SOT marker's first
    byte to the end of its data; 0 = up to EOC), TPsot, TNsot (0 = unknown)."""

    Isot: int
    Psot: int
    TPsot: int
    TNsot: int


def parse_sot(r: SegmentReader) -> SOT:
    sot = SOT(r.u16(), r.u32(), r.u8(), r.u8())
    r.finish()
    return sot
