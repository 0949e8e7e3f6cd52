"""RGN, region of interest (T.800 A.6.3; max-shift method, Annex H)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment
from .reader import SegmentReader


@dataclass(frozen=True)
class RGN:
    """Crgn, Srgn (0: implicit max-shift) and SPrgn, the shift in bit-planes."""

    component: int
    Srgn: int
    SPrgn: int


def parse_rgn(r: SegmentReader, csiz: int) -> RGN:
    at = r.pos
    component = r.u8() if csiz < 257 else r.u16()
    if component >= csiz:
        raise InvalidSegment(f"RGN: component {component} of {csiz}", at)
    srgn, shift = r.u8(), r.u8()
    if srgn != 0:
        raise InvalidSegment(f"RGN: ROI style {srgn} is not in Table A.25", at + 1)
    r.finish()
    return RGN(component, srgn, shift)
