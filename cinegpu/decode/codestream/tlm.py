"""Pointer markers TLM, PLM and PLT (T.800 A.7.1-A.7.3).

The decoder does not need them (it walks tile-parts and packets), but it
parses and checks them, and ``cinegpu info`` reports them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import InvalidSegment
from .reader import SegmentReader


@dataclass(frozen=True)
class TLM:
    """Ztlm and the (Ttlm, Ptlm) pairs: tile index (None if implied) and
    tile-part length in bytes."""

    Ztlm: int
    entries: tuple[tuple[int | None, int], ...]


def parse_tlm(r: SegmentReader) -> TLM:
    at = r.pos
    z, s = r.u8(), r.u8()
    st, sp = (s >> 4) & 3, (s >> 6) & 1
    if st == 3 or s & 0x8F:
        raise InvalidSegment(f"TLM: Stlm 0x{s:02X} is not in Table A.35", at + 1)
    size = st + (4 if sp else 2)
    if r.remaining % size:
        raise InvalidSegment("TLM: length is not a whole number of entries", at)
    # (Ttlm, Ptlm) pairs unpacked in one pass (a reel's every frame has one TLM)
    pairs = struct.iter_unpack(">" + ("", "B", "H")[st] + ("I" if sp else "H"), r.data[r.pos : r.end])
    entries = tuple(pairs) if st else tuple((None, p) for (p,) in pairs)
    r.pos = r.end
    return TLM(z, entries)


@dataclass(frozen=True)
class PacketLengths:
    """PLM or PLT: the index (Zplm/Zplt) and the packet lengths, in bytes.

    PLM's per-tile-part grouping is flattened; lengths are the 7-bit
    continuation-coded Iplt values of A.7.3.
    """

    index: int
    lengths: tuple[int, ...]


def _lengths(r: SegmentReader, name: str, end: int) -> list[int]:
    out, value, open_ = [], 0, False
    while r.pos < end:
        b = r.u8()
        value = (value << 7) | (b & 0x7F)
        open_ = bool(b & 0x80)
        if not open_:
            out.append(value)
            value = 0
        elif value >> 32:
            raise InvalidSegment(f"{name}: packet length over 32 bits", r.pos)
    if open_:
        raise InvalidSegment(f"{name}: last packet length is unterminated", r.pos)
    return out


def parse_plt(r: SegmentReader) -> PacketLengths:
    z = r.u8()
    return PacketLengths(z, tuple(_lengths(r, "PLT", r.end)))


def parse_plm(r: SegmentReader) -> PacketLengths:
    z = r.u8()
    lengths: list[int] = []
    while r.remaining:
        n = r.u32()
        if n > r.remaining:
            raise InvalidSegment("PLM: Nplm runs past the segment", r.pos - 4)
        lengths += _lengths(r, "PLM", r.pos + n)
    return PacketLengths(z, tuple(lengths))
