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
