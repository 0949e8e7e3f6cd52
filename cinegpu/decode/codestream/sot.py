"""SOT, start of tile-part (T.800 A.4.2)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SOT:
    """Isot (tile index), Psot (tile-part length from the SOT marker's first
    byte to the end of its data; 0 = up to EOC), TPsot, TNsot (0 = unknown)."""

    Isot: int
    Psot: int
    TPsot: int
    TNsot: int


def sot_at(data, at: int) -> SOT:
    """The SOT whose body (Isot u16, Psot u32, TPsot u8, TNsot u8; after Lsot) starts at byte
    ``at`` of ``data``, read in place: the caller has checked that its 8 bytes are there
    (a codestream has one SOT a tile-part, thousands of them)."""
    return SOT((data[at] << 8) | data[at + 1], int.from_bytes(data[at + 2 : at + 6], "big"), data[at + 6],
               data[at + 7])
