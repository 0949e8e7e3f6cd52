"""SOT, start of tile-part (T.800 A.4.2)."""

from __future__ import annotations

from typing import NamedTuple


class SOT(NamedTuple):
    """Isot (tile index), Psot (tile-part length from the SOT marker's first
    byte to the end of its data; 0 = up to EOC), TPsot, TNsot (0 = unknown).
    A named tuple: a codestream may have thousands of tile-parts, and one of these is made
    for each in a fraction of a frozen dataclass's time."""

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
