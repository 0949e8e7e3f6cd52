"""COD and COC, coding style default and per component (T.800 A.6.1, A.6.2)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment, UnsupportedFeature
from .reader import SegmentReader

#: Progression orders of Table A.16, by their SGcod value.
PROGRESSIONS = ("LRCP", "RLCP", "RPCL", "PCRL", "CPRL")
#: Largest number of decomposition levels (A.6.1: 0..32).
MAX_LEVELS = 32

SCOD_PRECINCTS = 0x01  #: user-defined precinct sizes follow
SCOD_SOP = 0x02  #: SOP marker segments may be used
SCOD_EPH = 0x04  #: EPH markers are used

#: Code-block style bits 6-7 (T.814 A.2, Table A.4): 0x40 every code-block is an HT block,
#: 0xC0 each code-block is HT or EBCOT ("mixed", told apart in its first packet, B.3).
CBLK_HT = 0x40
CBLK_HT_MIXED = 0xC0
#: Part-1 style bits that split an EBCOT block into several codeword segments (Table D.9).
_SEGMENTING = 0x01 | 0x04


@dataclass(frozen=True)
class SPcod:
    """Per-component coding parameters (Table A.15), shared by COD and COC.

    ``xcb``/``ycb`` are the code-block size exponents (width = 2**xcb),
    ``precincts`` the (PPx, PPy) exponent pair per resolution, lowest first.
    """

    levels: int
    xcb: int
    ycb: int
    cblk_style: int
    reversible: bool
    precincts: tuple[tuple[int, int], ...]

    @property
    def ht(self) -> bool:
        """Code-blocks are (or may be, when mixed) HT blocks of ISO/IEC 15444-15."""
        return bool(self.cblk_style & CBLK_HT)


@dataclass(frozen=True)
class COD:
    """Coding style default: Scod, SGcod and the default SPcod."""

    Scod: int
    progression: int
    layers: int
    mct: int
    spcod: SPcod

    @property
    def sop(self) -> bool:
        return bool(self.Scod & SCOD_SOP)

    @property
    def eph(self) -> bool:
        return bool(self.Scod & SCOD_EPH)

    @property
    def progression_name(self) -> str:
        return PROGRESSIONS[self.progression]


@dataclass(frozen=True)
class COC:
    """Coding style of one component, overriding COD's SPcod."""

    component: int
    spcod: SPcod


def _parse_spcod(r: SegmentReader, user_precincts: bool, name: str) -> SPcod:
    at = r.pos
    levels = r.u8()
    xcb, ycb = r.u8() + 2, r.u8() + 2
    style = r.u8()
    transform = r.u8()
    if levels > MAX_LEVELS:
        raise InvalidSegment(f"{name}: {levels} decomposition levels, at most {MAX_LEVELS}", at)
    if xcb > 10 or ycb > 10 or xcb + ycb > 12:
        raise InvalidSegment(f"{name}: code-block size 2^{xcb} x 2^{ycb} breaks A.6.1", at + 1)
    if style & 0xC0 == 0x80:
        raise InvalidSegment(f"{name}: reserved code-block style bits 0x{style:02X}", at + 3)
    if style & 0xC0 == CBLK_HT_MIXED and style & _SEGMENTING:
        # B.3 tells a mixed block's kind from one length field, which such EBCOT blocks lack
        raise UnsupportedFeature(f"{name}: mixed HT and EBCOT code-blocks (ISO/IEC 15444-15) with "
                                 f"BYPASS or TERMALL are not supported", at + 3)
    if transform > 1:
        raise UnsupportedFeature(f"{name}: wavelet transform {transform} (Part 2) is not supported", at + 4)
    if user_precincts:
        packed = [r.u8() for _ in range(levels + 1)]
        precincts = tuple((p & 0xF, p >> 4) for p in packed)
        if any((px == 0 or py == 0) for px, py in precincts[1:]):
            raise InvalidSegment(f"{name}: precinct exponent 0 above resolution 0", at + 5)
    else:
        precincts = ((15, 15),) * (levels + 1)
    return SPcod(levels, xcb, ycb, style, transform == 1, precincts)


def parse_cod(r: SegmentReader) -> COD:
    at = r.pos
    Scod = r.u8()
    if Scod & ~0x07:
        raise InvalidSegment(f"COD: reserved Scod bits 0x{Scod:02X}", at)
    progression, layers, mct = r.u8(), r.u16(), r.u8()
    if progression >= len(PROGRESSIONS):
        raise InvalidSegment(f"COD: progression order {progression} is not one of Table A.16", at + 1)
    if layers == 0:
        raise InvalidSegment("COD: zero quality layers", at + 2)
    if mct > 1:
        raise UnsupportedFeature(f"COD: multiple component transform {mct} (Part 2)", at + 4)
    spcod = _parse_spcod(r, bool(Scod & SCOD_PRECINCTS), "COD")
    r.finish()
    return COD(Scod, progression, layers, mct, spcod)


def parse_coc(r: SegmentReader, csiz: int) -> COC:
    at = r.pos
    component = r.u8() if csiz < 257 else r.u16()
    if component >= csiz:
        raise InvalidSegment(f"COC: component {component} of {csiz}", at)
    Scoc = r.u8()
    if Scoc & ~0x01:
        raise InvalidSegment(f"COC: reserved Scoc bits 0x{Scoc:02X}", at)
    spcod = _parse_spcod(r, bool(Scoc & SCOD_PRECINCTS), "COC")
    r.finish()
    return COC(component, spcod)
