"""Codestream writer: the marker segments of T.800 Annex A, as bytes.

One function per marker (family), each returning the whole segment (marker
code, length, parameters) in the byte layout of the clause it cites.  The
field names follow the spec (``Rsiz``, ``Scod``, ``SPcod``...), as the
decoder's dataclasses in :mod:`cinegpu.decode.codestream` do; marker codes
come from the decoder's table.
"""

from __future__ import annotations

import struct
from typing import Sequence

from cinegpu.decode.codestream import imf
from cinegpu.decode.codestream import markers as M

from .quant import steps_for

__all__ = [
    "cod",
    "com",
    "eoc",
    "main_header",
    "poc",
    "qcd",
    "siz",
    "soc",
    "sod",
    "sot",
    "tlm",
    "TLM_ENTRY_BYTES",
    "SOT_BYTES",
]

#: Bytes of one tile-part entry of our TLM (Ttlm 8 bit, Ptlm 32 bit; Stlm 0x50).
TLM_ENTRY_BYTES = 5
#: Bytes of an SOT marker segment (A.4.2), SOD excluded.
SOT_BYTES = 12


def _segment(code: int, body: bytes) -> bytes:
    """Marker code, Lxxx (the length counts itself and the body, not the marker), body."""
    if len(body) + 2 > 0xFFFF:
        raise ValueError(f"marker segment 0x{code:04X} longer than 65535 bytes")
    return struct.pack(">HH", code, len(body) + 2) + body


def soc() -> bytes:
    """SOC, start of codestream (A.4.1)."""
    return struct.pack(">H", M.SOC)


def eoc() -> bytes:
    """EOC, end of codestream (A.4.4)."""
    return struct.pack(">H", M.EOC)


def sod() -> bytes:
    """SOD, start of data (A.4.3)."""
    return struct.pack(">H", M.SOD)


def siz(*, Rsiz: int, Xsiz: int, Ysiz: int, XOsiz: int, YOsiz: int, XTsiz: int, YTsiz: int,
        XTOsiz: int, YTOsiz: int, precisions: Sequence[int], signed: Sequence[bool],
        XRsiz: Sequence[int], YRsiz: Sequence[int]) -> bytes:
    """SIZ, image and tile size (A.5.1, Table A.9): Ssiz = precision - 1, bit 7 signed."""
    body = struct.pack(">HIIIIIIIIH", Rsiz, Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz, XTOsiz,
                       YTOsiz, len(precisions))
    for p, s, dx, dy in zip(precisions, signed, XRsiz, YRsiz):
        if not 1 <= p <= 38:
            raise ValueError(f"component precision {p} not in 1..38")
        body += struct.pack(">BBB", (p - 1) | (0x80 if s else 0), dx, dy)
    return _segment(M.SIZ, body)


def cod(*, progression: int, layers: int, mct: int, levels: int, xcb: int, ycb: int,
        cblk_style: int, reversible: bool, precincts: Sequence[tuple[int, int]] | None,
        sop: bool = False, eph: bool = False) -> bytes:
    """COD, coding style default (A.6.1, Tables A.12-A.15, A.21).

    ``xcb``/``ycb`` are code-block exponents (width 2**xcb); ``precincts`` the
    (PPx, PPy) exponents per resolution, lowest first, or None for the
    default 2**15 (Scod bit 0 clear).
    """
    Scod = (1 if precincts is not None else 0) | (2 if sop else 0) | (4 if eph else 0)
    body = struct.pack(">BBHB", Scod, progression, layers, mct)
    body += struct.pack(">BBBBB", levels, xcb - 2, ycb - 2, cblk_style, 1 if reversible else 0)
    if precincts is not None:
        if len(precincts) != levels + 1:
            raise ValueError("need one precinct size per resolution")
        body += bytes((ppx & 0xF) | ((ppy & 0xF) << 4) for ppx, ppy in precincts)
    return _segment(M.COD, body)


def qcd(*, style: int, guard_bits: int, steps: Sequence[tuple[int, int]]) -> bytes:
    """QCD, quantization default (A.6.4, Tables A.28-A.30).

    ``style`` 0 (none: 8-bit exponents), 1 (scalar derived: the LL pair only)
    or 2 (scalar expounded: a 16-bit (epsilon << 11 | mu) per subband).
    """
    if not 0 <= guard_bits <= 7:
        raise ValueError(f"guard bits {guard_bits} not in 0..7")
    body = bytes([(guard_bits << 5) | style])
    if style == 0:
        body += bytes((eps & 0x1F) << 3 for eps, _ in steps)
    else:
        pairs = steps[:1] if style == 1 else steps
        for eps, mu in pairs:
            if not (0 <= eps <= 31 and 0 <= mu <= 2047):
                raise ValueError(f"step size (epsilon {eps}, mu {mu}) out of range")
            body += struct.pack(">H", (eps << 11) | mu)
    return _segment(M.QCD, body)


def poc(progressions: Sequence[tuple[int, int, int, int, int, int]], csiz: int) -> bytes:
    """POC, progression order change (A.6.6, Table A.32): rows (RSpoc, CSpoc, LYEpoc,
    REpoc, CEpoc, Ppoc); CSpoc/CEpoc are 16 bit when Csiz >= 257."""
    wide = csiz >= 257
    body = b""
    for rs, cs, lye, re, ce, p in progressions:
        if wide:
            body += struct.pack(">BHHBHB", rs, cs, lye, re, ce, p)
        else:
            body += struct.pack(">BBHBBB", rs, cs, lye, re, ce & 0xFF, p)
    return _segment(M.POC, body)


def tlm(entries: Sequence[tuple[int, int]], Ztlm: int = 0) -> bytes:
    """TLM, tile-part lengths (A.7.1): Stlm 0x50 (ST = 1: 8-bit Ttlm tile index,
    SP = 1: 32-bit Ptlm tile-part length); ``entries`` (Ttlm, Ptlm)."""
    body = struct.pack(">BB", Ztlm, 0x50)
    for t, length in entries:
        body += struct.pack(">BI", t, length)
    return _segment(M.TLM, body)


def com(text: str) -> bytes:
    """COM, comment (A.9.2): Rcom 1 (ISO/IEC 8859-15 text)."""
    return _segment(M.COM, struct.pack(">H", 1) + text.encode("latin-1"))


def cap_ht(*, B: int, reversible: bool) -> bytes:
    """CAP (15444-1 A.5.2) of an HT-only codestream: Pcap bit 15 and the Ccap15 word of
    T.814 A.3 (Table A.3: HTONLY, SINGLEHT, RGNFREE, HOMOGENEOUS, HTIRV when irreversible,
    MAGB from B, the largest magnitude bit-planes of any band, :func:`imf.ccap15_magb`)."""
    ccap15 = (0 if reversible else 0x20) | imf.ccap15_magb(B)
    return _segment(M.CAP, struct.pack(">IH", 1 << (32 - 15), ccap15))


def sot(*, Isot: int, Psot: int, TPsot: int, TNsot: int) -> bytes:
    """SOT, start of tile-part (A.4.2): Psot counts from the SOT marker to the end of
    the tile-part's data."""
    return _segment(M.SOT, struct.pack(">HIBB", Isot, Psot, TPsot, TNsot))


def main_header(params, base_step: float, tlm_entries) -> bytes:
    """SOC, SIZ, COD, QCD, [POC], [TLM], COM (A.4-A.9) for ``params`` (an
    :class:`~cinegpu.encode.presets.Params`); ``base_step`` scales the QCD step sizes (E.1),
    ``tlm_entries`` are (tile index, tile-part length in bytes) pairs or None."""
    steps = steps_for(params.levels, params.precisions[0], params.reversible,
                      mct=bool(params.mct), base=base_step, derived=params.quant_style == 1,
                      max_b=params.max_B, guard_bits=params.guard_bits)
    out = soc()
    out += siz(Rsiz=params.Rsiz, Xsiz=params.width, Ysiz=params.height, XOsiz=0, YOsiz=0,
                  XTsiz=params.tile[0], YTsiz=params.tile[1], XTOsiz=0, YTOsiz=0,
                  precisions=params.precisions, signed=params.signed, XRsiz=params.XRsiz,
                  YRsiz=params.YRsiz)
    if params.cblk_style & 0x40:  # HT code-blocks (ISO/IEC 15444-15): CAP after SIZ
        out += cap_ht(B=imf.ht_magb_b(steps, params.guard_bits, params.levels,
                                      params.reversible), reversible=params.reversible)
    out += cod(progression=params.progression, layers=params.layers, mct=params.mct,
                  levels=params.levels, xcb=params.xcb, ycb=params.ycb,
                  cblk_style=params.cblk_style, reversible=params.reversible,
                  precincts=params.precincts)
    out += qcd(style=params.quant_style, guard_bits=params.guard_bits, steps=steps)
    if params.pocs:
        out += poc(params.pocs, params.ncomp)
    if params.tlm and tlm_entries is not None:
        out += tlm(tlm_entries)
    if params.comment:
        out += com(params.comment)
    return out
