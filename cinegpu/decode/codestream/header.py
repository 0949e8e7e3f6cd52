"""The codestream walk: main header, tile-parts, EOC (T.800 A.3, A.4).

:func:`parse_codestream` reads every marker segment through a dispatch table
and returns a :class:`Codestream`: the main header's segments, and for each
tile its header segments and the byte ranges of its tile-part bodies.
Coded data is not touched here; tier-2 reads it later. With ``main_only``
the walk stops at the end of the main header (the first SOT), for callers
that need the header's facts (a track file's picture descriptor) and not the
tile-parts. This is the one model of a main header: media's profile checks
and its MXF writer read it too (:meth:`Codestream.segment_body` gives a
segment's bytes as stored).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Callable

from ..errors import CodestreamError, InvalidSegment, MisplacedMarker, TruncatedCodestream, UnsupportedFeature
from ..strictness import Fault, Strictness
from . import markers as M
from .cod import COC, COD, SPcod, parse_coc, parse_cod
from .com import COM, CRG, parse_com, parse_crg
from .poc import Progression, parse_poc
from .ppm import PPM, PPT, parse_ppm, parse_ppt, split_ppm
from .qcd import QCC, Quantization, parse_qcc, parse_qcd
from .reader import SegmentReader, read_u16
from .rgn import RGN, parse_rgn
from .siz import CAP, SIZ, parse_cap, parse_siz
from .sot import SOT
from .tlm import TLM, PacketLengths, parse_plm, parse_plt, parse_tlm

#: Most tile-parts one codestream may hold (every loop over input is bounded).
MAX_TILE_PARTS = 1 << 20


@dataclass
class Segments:
    """The marker segments of one header (main, or one tile's), as parsed."""

    cod: COD | None = None
    coc: dict[int, COC] = field(default_factory=dict)
    qcd: Quantization | None = None
    qcc: dict[int, QCC] = field(default_factory=dict)
    rgn: dict[int, RGN] = field(default_factory=dict)
    poc: list[Progression] = field(default_factory=list)
    com: list[COM] = field(default_factory=list)
    tlm: list[TLM] = field(default_factory=list)
    plm: list[PacketLengths] = field(default_factory=list)
    plt: list[PacketLengths] = field(default_factory=list)
    ppm: list[PPM] = field(default_factory=list)
    ppt: list[PPT] = field(default_factory=list)
    crg: CRG | None = None
    cap: CAP | None = None

    def shallow_copy(self) -> Segments:
        """A new Segments holding the same segment objects (what ``copy.copy`` makes, without
        its reduce protocol: a reel's every frame makes one, MainHeaderCache)."""
        other = Segments.__new__(Segments)
        other.__dict__.update(self.__dict__)
        return other


@dataclass
class TilePart:
    """One tile-part: its SOT and the byte range [start, end) of its body."""

    sot: SOT
    offset: int
    start: int
    end: int


@dataclass
class Tile:
    """A tile's header segments (from all its tile-parts) and its parts."""

    index: int
    header: Segments = field(default_factory=Segments)
    parts: list[TilePart] = field(default_factory=list)


@dataclass
class Codestream:
    """A parsed codestream: ``siz``, the main header and the tiles present."""

    siz: SIZ
    main: Segments
    tiles: dict[int, Tile]
    markers: list[tuple[int, int, int]]  #: (code, offset, length) in stream order
    #: what was skipped or cut (both modes) and, lenient, the faults passed over; each prints
    #: as one line of text
    warnings: list[Fault]
    data: bytes | memoryview
    #: Byte offset where the main header ends: its first SOT, else EOC, else (a header cut
    #: short, not strict) where the segment cut short begins (A.3).
    main_end: int
    #: Parsed with ``main_only``: ``tiles`` is empty because the tile-parts were not read.
    main_only: bool = False
    #: The :class:`MainHeaderCache` entry whose main header this one matched or made (the
    #: same object for the frames of a reel, whose TLM, PLM, PPM and COM alone may differ:
    #: the same SIZ, COD, COC, QCD, QCC, RGN, POC, CRG and CAP); None where none did.
    header_key: object = None
    #: The codestream this one is a view of (a decode area's tiles only, ``decode/area.py``),
    #: whose tile-parts PPM's packed headers follow (A.7.4); None for a whole one.
    whole: Codestream | None = None

    # --- the main header as stored (A.4.1: SOC, SIZ, then segments up to the first SOT)
    @property
    def main_markers(self) -> list[tuple[int, int, int]]:
        """The main header's (code, offset, length), SOC and SIZ first, in stream order."""
        return [m for m in self.markers if m[1] < self.main_end]

    def segment_body(self, code: int) -> bytes | None:
        """The body (after Lxxx, A.1.4) of the main header's first ``code`` segment, as
        stored, or None where the main header has none: for writers that repeat a segment
        verbatim, e.g. the JPEG 2000 picture sub-descriptor of ST 422."""
        for c, offset, length in self.main_markers:
            if c == code and length >= 2:
                return bytes(self.data[offset + 4 : offset + 2 + length])
        return None

    @property
    def tile_part_count(self) -> int:
        """Tile-parts read (0 with ``main_only``)."""
        return sum(len(t.parts) for t in self.tiles.values())

    # --- the precedence rules of A.6: tile COC > tile COD > main COC > main COD
    def cod(self, tile: Tile | None) -> COD:
        if tile is not None and tile.header.cod is not None:
            return tile.header.cod
        assert self.main.cod is not None
        return self.main.cod

    def spcod(self, tile: Tile | None, c: int) -> SPcod:
        if tile is not None:
            if c in tile.header.coc:
                return tile.header.coc[c].spcod
            if tile.header.cod is not None:
                return tile.header.cod.spcod
        if c in self.main.coc:
            return self.main.coc[c].spcod
        return self.cod(None).spcod

    def quantization(self, tile: Tile | None, c: int) -> Quantization:
        if tile is not None:
            if c in tile.header.qcc:
                return tile.header.qcc[c].quantization
            if tile.header.qcd is not None:
                return tile.header.qcd
        if c in self.main.qcc:
            return self.main.qcc[c].quantization
        assert self.main.qcd is not None
        return self.main.qcd

    def roi_shift(self, tile: Tile | None, c: int) -> int:
        if tile is not None and c in tile.header.rgn:
            return tile.header.rgn[c].SPrgn
        return self.main.rgn[c].SPrgn if c in self.main.rgn else 0

    def progressions(self, tile: Tile | None) -> list[Progression]:
        """The POC progressions in force for ``tile``, or [].

        A.6.6 says a tile's POC overrides the main header's; OpenJPEG (the
        reference decoder here) and Grok instead append the tile's
        progressions to the main header's, and Grok writes streams that only
        decode that way. Packets already emitted are skipped either way, so
        appending decodes both kinds of stream written in practice.
        """
        if tile is not None and tile.header.poc:
            return self.main.poc + tile.header.poc
        return self.main.poc


# Where each marker may appear: "main" header, "first" tile-part header only,
# or "tile" (any tile-part header). Parsers take (reader, siz).
_Parser = Callable[[SegmentReader, SIZ], object]
_TABLE: dict[int, tuple[str, str, _Parser]] = {
    M.CAP: ("main", "cap", lambda r, s: parse_cap(r)),
    M.COD: ("main first", "cod", lambda r, s: parse_cod(r)),
    M.COC: ("main first", "coc", lambda r, s: parse_coc(r, s.Csiz)),
    M.QCD: ("main first", "qcd", lambda r, s: parse_qcd(r)),
    M.QCC: ("main first", "qcc", lambda r, s: parse_qcc(r, s.Csiz)),
    M.RGN: ("main first", "rgn", lambda r, s: parse_rgn(r, s.Csiz)),
    M.POC: ("main tile", "poc", lambda r, s: parse_poc(r, s.Csiz)),
    M.TLM: ("main", "tlm", lambda r, s: parse_tlm(r)),
    M.PLM: ("main", "plm", lambda r, s: parse_plm(r)),
    M.PLT: ("tile", "plt", lambda r, s: parse_plt(r)),
    M.PPM: ("main", "ppm", lambda r, s: parse_ppm(r)),
    M.PPT: ("tile", "ppt", lambda r, s: parse_ppt(r)),
    M.CRG: ("main", "crg", lambda r, s: parse_crg(r, s.Csiz)),
    M.COM: ("main tile", "com", lambda r, s: parse_com(r)),
}


#: Segments the decode does without (A.7 pointer segments, A.9 informational ones): a malformed
#: one is ignored when decoding leniently.
INFORMATIVE = frozenset((M.TLM, M.PLM, M.PLT, M.CRG, M.COM))

#: Each table marker's scopes, split once.
_SCOPES = {code: frozenset(where.split()) for code, (where, _, _) in _TABLE.items()}


def _store(seg: Segments, attr: str, value: object) -> None:
    if attr in ("coc", "qcc", "rgn"):
        getattr(seg, attr)[value.component] = value  # type: ignore[attr-defined]
    elif attr == "poc":
        seg.poc.extend(value)  # type: ignore[arg-type]
    elif attr in ("com", "tlm", "plm", "plt", "ppm", "ppt"):
        getattr(seg, attr).append(value)
    else:
        setattr(seg, attr, value)


def _read_segments(data, pos: int, scope: str, siz: SIZ, seg: Segments, cs_markers, warnings,
                   stop: tuple[int, ...], policy: Strictness | None = None) -> int:
    """Parse marker segments from ``pos`` until a marker in ``stop``; return its offset.

    A COD, COC, QCD, QCC or RGN in a tile-part header after the tile's first (A.4.2 allows
    them only there) raises :class:`MisplacedMarker`, or, under a lenient ``policy``, is
    tolerated and applied to the tile, as OpenJPEG applies it (it overrides what the tile
    had: OpenJPEG decodes a tile once all its parts are read)."""
    n = len(data)
    unknown = None      # the offset of an unknown marker not yet followed by a known one
    while True:
        code = read_u16(data, pos, "a header marker")
        if code in stop:
            return pos
        if code < 0xFF00:
            error = InvalidSegment(f"expected a marker, found 0x{code:04X}", pos)
            if unknown is None or policy is None:
                raise error
            pos, unknown = _resync(data, unknown, stop, error, policy, warnings), None
            continue
        if 0xFF30 <= code <= 0xFF3F:  # reserved markers without a segment (A.1.3)
            pos, unknown = pos + 2, pos
            continue
        entry = _TABLE.get(code)
        length = read_u16(data, pos + 2, f"the length of {M.name(code)}")
        end = pos + 2 + length
        if length < 2 or end > n:
            error = InvalidSegment(f"{M.name(code)}: segment length {length} below 2", pos + 2) if length < 2 \
                else TruncatedCodestream(f"{M.name(code)}: segment of {length} bytes runs past the end", pos)
            if entry is None and policy is not None and code not in (M.SOC, M.SIZ, M.SOD, M.EOC, M.SOP, M.EPH):
                # an unknown marker's length that cannot be right: OpenJPEG never reads it
                pos, unknown = _resync(data, pos, stop, error, policy, warnings), None
                continue
            raise error
        cs_markers.append((code, pos, length))
        if entry is None:
            if code in (M.SOC, M.SIZ, M.SOD, M.EOC, M.SOP, M.EPH):
                raise MisplacedMarker(f"{M.name(code)} inside a {scope} header", pos)
            warnings.append(Fault(InvalidSegment(f"skipped unknown marker {M.name(code)}", pos)))
            unknown = pos
        else:
            unknown = None
            where, attr, parser = entry
            allowed = _SCOPES[code]
            if scope not in allowed and not (scope == "first" and "tile" in allowed):
                error = MisplacedMarker(f"{M.name(code)} is not allowed in a {scope} header", pos)
                if policy is None or scope != "tile" or "first" not in allowed:
                    raise error
                policy.tolerate(error, warnings, text=f"{M.name(code)} in a tile-part header after the "
                                                      f"tile's first at byte {pos}, applied to the tile as "
                                                      "OpenJPEG applies it")
            reader = SegmentReader(data, pos + 4, end, M.NAMES[code])
            try:
                value = parser(reader, siz)
            except InvalidSegment as exc:
                if code not in INFORMATIVE or policy is None:
                    raise
                # a segment the decode does without, whose length holds: stepped over
                # (OpenJPEG reads no COM or PLM content, nor PLT's to decode)
                policy.tolerate(exc, warnings, text=f"{exc}; the segment is ignored")
            else:
                _store(seg, attr, value)
        pos = end


def _resync(data, unknown: int, stop: tuple[int, ...], error: CodestreamError, policy: Strictness,
            warnings) -> int:
    """Where the header goes on after bytes that are no marker segment following the unknown
    marker at ``unknown``: the next known marker (one of ``stop`` or a segment this parser
    reads) among the two-byte words after it, as OpenJPEG's decoder looks for it whatever
    the unknown marker's length says (its ``opj_j2k_read_unk``). Strict, or where none follows,
    raises ``error``; lenient, tolerated with a warning naming the bytes skipped."""
    for at in range(unknown + 2, len(data) - 1, 2):
        code = (data[at] << 8) | data[at + 1]
        if code in stop or code in _TABLE:
            policy.tolerate(error, warnings, text=f"{at - unknown - 2} bytes after the unknown marker "
                                                  f"{M.name((data[unknown] << 8) | data[unknown + 1])} at byte "
                                                  f"{unknown} skipped to the {M.name(code)} at byte {at}, as "
                                                  "OpenJPEG skips them")
            return at
    raise error


#: Main-header segments that may differ from frame to frame of one reel without changing how
#: it decodes beyond their own content: the tile-part lengths (TLM, A.7.1), packet lengths
#: (PLM, A.7.2), packed packet headers (PPM, A.7.4) and comments (COM, A.9.2).
PER_FRAME_MARKERS = frozenset((M.TLM, M.PLM, M.PPM, M.COM))
#: Main-header segments :meth:`MainHeaderCache.find` walks at most before it leaves a header
#: to the full parse (a main header has a handful; PPM may come in many).
WALK_SEGMENTS = 1024


class _HeaderEntry:
    """One cached main header: its bytes, its segments but the per-frame ones
    (:data:`PER_FRAME_MARKERS`) one after another, and ``(siz, main, markers, warnings, pos)``."""

    __slots__ = ("head", "stable", "parsed")

    def __init__(self, head: bytes, stable: bytes | None, parsed: tuple):
        self.head, self.stable, self.parsed = head, stable, parsed


class MainHeaderCache:
    """The parsed main headers (SIZ to the first SOT, A.3) of the latest few codestreams, so
    that the frames of a sequence, which share theirs, parse only their tile-parts.  Owned by
    a decoder (one thread at a time); entries are found by comparing bytes, never by hash.

    A frame whose main header differs from a cached one in its TLM, PLM, PPM and COM segments
    alone (:data:`PER_FRAME_MARKERS`: a DCI frame's TLM lists its own tile-part lengths, so
    no two frames of a reel have the same main header) takes the cached parse of the others
    and parses those segments of its own; a cached header that gave warnings is reused only
    byte for byte."""

    def __init__(self, size: int = 4):
        self._size = size
        self._items: list[_HeaderEntry] = []

    def find(self, data) -> tuple | None:
        """``(siz, main, markers, warnings, pos, entry)`` of the cached main header ``data``
        starts with (its next marker an SOT), or None; ``entry`` identifies the cached header
        (:attr:`Codestream.header_key`)."""
        for item in self._items:
            n = len(item.head)
            if data[n:n + 2] == _SOT_BYTES and data[:n] == item.head:
                return (*item.parsed, item)
        if not any(item.stable is not None for item in self._items):
            return None
        walked = _walk_main(data)
        if walked is None:
            return None
        segments, pos, stable = walked
        for item in self._items:
            if item.stable == stable:
                return _with_frame_segments(data, item, segments, pos)
        return None

    def add(self, data, pos: int, parsed: tuple) -> _HeaderEntry:
        """Keep ``parsed`` for the main header ``data[:pos]``; returns its entry."""
        if len(self._items) >= self._size:
            self._items.pop(0)
        walked = None if parsed[3] else _walk_main(data)
        entry = _HeaderEntry(bytes(data[:pos]), None if walked is None else walked[2], parsed)
        self._items.append(entry)
        return entry


def _walk_main(data) -> tuple[list[tuple[int, int, int]], int, bytes] | None:
    """The main header's segments after SIZ as (code, offset, length), the offset of its first
    SOT and its segments but the per-frame ones joined (SIZ included), or None where the walk
    meets anything the full parse should judge (no SOC/SIZ, a marker without a segment, a
    segment cut short, no SOT within :data:`WALK_SEGMENTS` segments)."""
    n = len(data)
    if n < 6 or data[0] != 0xFF or data[1] != 0x4F or data[2] != 0xFF or data[3] != 0x51:
        return None
    pos = 4 + ((data[4] << 8) | data[5])
    keep = [data[2:pos]]
    segments = []
    for _ in range(WALK_SEGMENTS):
        if pos + 4 > n or data[pos] != 0xFF:
            return None
        code = 0xFF00 | data[pos + 1]
        if code == M.SOT:
            return segments, pos, b"".join(keep)
        if 0xFF30 <= code <= 0xFF3F or code not in _TABLE:
            return None
        length = (data[pos + 2] << 8) | data[pos + 3]
        end = pos + 2 + length
        if length < 2 or end > n:
            return None
        segments.append((code, pos, length))
        if code not in PER_FRAME_MARKERS:
            keep.append(data[pos:end])
        pos = end
    return None


def _with_frame_segments(data, item: _HeaderEntry, segments, pos: int) -> tuple | None:
    """``item``'s parse with this frame's own per-frame segments (:data:`PER_FRAME_MARKERS`)
    parsed into a copy of its main header, or None where one of them does not parse (the
    full parse then says what is wrong)."""
    siz, cached, _, _, _ = item.parsed
    main = cached.shallow_copy()    # shares the plan-shaping segments, parsed once
    main.com, main.tlm, main.plm, main.ppm = [], [], [], []
    markers = [(M.SOC, 0, 0), (M.SIZ, 2, (data[4] << 8) | data[5])]
    try:
        for code, at, length in segments:
            markers.append((code, at, length))
            if code in PER_FRAME_MARKERS:
                _, attr, parser = _TABLE[code]
                _store(main, attr, parser(SegmentReader(data, at + 4, at + 2 + length, M.NAMES[code]), siz))
    except CodestreamError:
        return None
    return siz, main, markers, (), pos, item


_SOT_BYTES = M.SOT.to_bytes(2, "big")
#: an SOT marker segment, A.4.2: the marker, Lsot, Isot, Psot, TPsot, TNsot
_SOT_SEGMENT = struct.Struct(">HHHIBB")
_SOD_BYTES = M.SOD.to_bytes(2, "big")


def parse_codestream(data: bytes | memoryview, *, strict: bool | Strictness = True,
                     main_only: bool = False, cache: MainHeaderCache | None = None) -> Codestream:
    """Walk a raw codestream (starting with SOC) into a :class:`Codestream`.

    In strict mode a tile-part running past the end of the data raises
    :class:`TruncatedCodestream`; otherwise it is cut at the end and a
    :class:`~cinegpu.decode.strictness.Fault` is recorded in ``warnings``, so
    the decoder can conceal what is missing (``strict``: a bool or a
    :class:`~cinegpu.decode.strictness.Strictness`).
    ``main_only``: stop at the end of the main header; no tile-part is read.
    ``cache``: a :class:`MainHeaderCache` to reuse (and keep) whole main headers.
    """
    policy = Strictness.of(strict)
    hit = cache.find(data) if cache is not None else None
    if hit is not None:
        siz, main, markers, warnings, pos, entry = hit
        cs_markers, warnings = list(markers), list(warnings)
        tiles = {} if main_only else _read_tile_parts(data, pos, siz, cs_markers, warnings, policy)
        cs = Codestream(siz, main, tiles, cs_markers, warnings, data, pos, main_only, entry)
        _check_components(cs)
        return cs
    if read_u16(data, 0, "the SOC marker") != M.SOC:
        raise MisplacedMarker("codestream does not start with SOC (FF4F)", 0)
    if read_u16(data, 2, "the SIZ marker") != M.SIZ:
        raise MisplacedMarker("SIZ must follow SOC", 2)
    length = read_u16(data, 4, "the length of SIZ")
    if 6 + length - 2 > len(data):
        raise TruncatedCodestream("SIZ runs past the end", 2)
    siz = parse_siz(SegmentReader(data, 6, 4 + length, "SIZ"))
    cs_markers: list[tuple[int, int, int]] = [(M.SOC, 0, 0), (M.SIZ, 2, length)]
    warnings: list[Fault] = []
    main = Segments()
    cut_short = False
    try:
        pos = _read_segments(data, 4 + length, "main", siz, main, cs_markers, warnings, (M.SOT, M.EOC), policy)
    except TruncatedCodestream as exc:
        # lenient: a main header with its COD and QCD is enough for a (blank) picture
        if main.cod is None or main.qcd is None:
            raise
        policy.fault(exc, warnings, text=f"main header cut short ({exc}); no tile data")
        pos, cut_short = exc.offset or len(data), True
    if main.cod is None:
        raise InvalidSegment("main header has no COD", pos)
    if main.qcd is None:
        raise InvalidSegment("main header has no QCD", pos)
    entry = None
    if cache is not None and not cut_short and data[pos:pos + 2] == _SOT_BYTES and \
            not any(f.tolerated for f in warnings):     # a strict parse of the same bytes raises
        entry = cache.add(data, pos, (siz, main, tuple(cs_markers), tuple(warnings), pos))
    tiles = {} if cut_short or main_only else _read_tile_parts(data, pos, siz, cs_markers, warnings, policy)
    cs = Codestream(siz, main, tiles, cs_markers, warnings, data, pos, main_only, entry)
    _check_components(cs)
    return cs


def _read_tile_parts(data, pos: int, siz: SIZ, cs_markers, warnings: list[Fault],
                     policy: Strictness) -> dict[int, Tile]:
    """The tile-parts from ``pos`` to EOC (A.4.2). Lenient, a damaged one ends the walk, a
    tile-part out of order ends its tile's (the others read on), and tile-parts after every tile
    has all its parts are ignored, as OpenJPEG ignores them."""
    n = len(data)
    tiles: dict[int, Tile] = {}
    broken: set[int] = set()    # tiles a part of which is missing: their later parts are skipped
    whole_tiles = 0             # tiles with all the parts their TNsot counts
    num_tiles = siz.num_tiles
    for _ in range(MAX_TILE_PARTS):
        if pos + 2 > n:
            warnings.append(Fault(TruncatedCodestream("no EOC marker: data ends", n)))
            return tiles
        code = (data[pos] << 8) | data[pos + 1]     # its 2 bytes are there (checked above)
        if code == M.EOC:
            cs_markers.append((code, pos, 0))
            if pos + 2 != n:
                warnings.append(Fault(InvalidSegment(f"{n - pos - 2} bytes after EOC", pos + 2),
                                      text=f"{n - pos - 2} bytes after EOC ignored"))
            return tiles
        if code != M.SOT:
            policy.fault(MisplacedMarker(f"expected SOT or EOC, found {M.name(code)}", pos), warnings,
                         text=f"expected SOT or EOC at byte {pos}; rest ignored")
            return tiles
        if pos + 12 > n:
            policy.fault(TruncatedCodestream("SOT runs past the end", pos), warnings,
                         text=f"SOT at byte {pos} cut short; rest ignored")
            return tiles
        # A.4.2: Lsot, Isot, Psot, TPsot, TNsot after the marker; its 12 bytes are there (checked above)
        _, length, isot, psot, tpsot, tnsot = _SOT_SEGMENT.unpack_from(data, pos)
        sot = SOT(isot, psot, tpsot, tnsot)
        if length != 10 or sot.Isot >= num_tiles:
            # lenient: the tiles read so far are kept (a damaged SOT: where the rest lies is unknown)
            policy.fault(InvalidSegment(f"SOT: Lsot {length}, must be 10", pos + 2) if length != 10 else
                         InvalidSegment(f"SOT: tile {sot.Isot} of {num_tiles}", pos + 4), warnings,
                         text=f"SOT at byte {pos} damaged; rest of the codestream ignored")
            return tiles
        cs_markers.append((code, pos, length))
        if sot.Isot in broken and 0 < sot.Psot <= n - pos:     # a later part of a tile with one missing
            pos += sot.Psot
            continue
        tile = tiles.get(sot.Isot)
        if tile is None:
            tile = Tile(sot.Isot)       # in ``tiles`` once a part of it is read
        due = len(tile.parts)
        if sot.TPsot != due:
            # TPsot is 8 bits (A.4.2: at most 255 tile-parts); OpenJPEG's encoder writes more, its
            # count wrapping past 255, and its decoder reads them in order
            if not (due >= 256 and sot.TPsot == due % 256):
                step = _misplaced_part(sot, tile, pos, n, whole_tiles == num_tiles, policy, warnings)
                if step is _Misplaced.STOP:
                    return tiles
                if step is _Misplaced.BREAK:
                    broken.add(sot.Isot)
                pos += sot.Psot
                continue
            if due == 256:
                policy.tolerate(InvalidSegment(f"SOT: tile {sot.Isot} part {sot.TPsot} where part {due} was due",
                                               pos + 8), warnings, tile=sot.Isot,
                                text=f"tile {sot.Isot} has more than 255 tile-parts (TPsot wraps to 0 at byte "
                                     f"{pos + 8}); read in order, as OpenJPEG reads them")
            sot = sot._replace(TPsot=due)
        scope = "first" if sot.TPsot == 0 else "tile"
        try:
            if data[pos + 12 : pos + 14] == _SOD_BYTES:     # a tile-part header without segments
                sod = pos + 12
            else:
                sod = _read_segments(data, pos + 12, scope, siz, tile.header, cs_markers, warnings, (M.SOD,),
                                     policy)
        except CodestreamError as exc:
            # lenient: keep the tiles read so far, drop this damaged tile-part
            policy.fault(exc, warnings, tile=sot.Isot,
                         text=f"tile {sot.Isot} part {sot.TPsot}: {exc}; rest of the codestream ignored")
            return tiles
        cs_markers.append((M.SOD, sod, 0))
        end = pos + sot.Psot if sot.Psot else _last_eoc(data)
        if sot.Psot and sot.Psot < sod + 2 - pos:
            policy.fault(InvalidSegment(f"SOT: Psot {sot.Psot} ends inside the tile-part header", pos + 6), warnings,
                         tile=sot.Isot, text=f"tile {sot.Isot} part {sot.TPsot}: Psot {sot.Psot} ends inside its "
                                             "header; rest of the codestream ignored")
            return tiles
        if end > n:
            policy.fault(TruncatedCodestream(f"tile-part of {sot.Psot} bytes runs past the end", pos), warnings,
                         tile=sot.Isot, text=f"tile {sot.Isot} part {sot.TPsot} cut short by {end - n} bytes")
            end = n
        tiles[sot.Isot] = tile
        tile.parts.append(TilePart(sot, pos, sod + 2, end))
        whole_tiles += len(tile.parts) == tile.parts[0].sot.TNsot
        pos = end
    raise InvalidSegment(f"more than {MAX_TILE_PARTS} tile-parts", pos)


class _Misplaced(enum.Enum):
    """What a lenient walk of the tile-parts does with one out of order (A.4.2)."""

    STOP = "the walk ends: what lies after it is not read"
    SKIP = "this tile-part is skipped"
    BREAK = "this tile-part and its tile's later ones are skipped; the other tiles read on"


def _misplaced_part(sot: SOT, tile: Tile, pos: int, n: int, all_whole: bool, policy: Strictness,
                    warnings: list[Fault]) -> _Misplaced:
    """A tile-part of ``tile`` at byte ``pos`` whose TPsot is not the part due (one missing before
    it, or one repeated), ``n`` the codestream's length; ``all_whole``: every tile has all its
    parts already. Recorded as a fault (strict raises) or tolerated where nothing is lost:

    * after every tile is whole: OpenJPEG's decoder reads no further, nor do we (STOP);
    * a part of a tile already whole: ignored (SKIP);
    * else the tile's packets from here cannot be placed: the tile keeps the parts read (the
      rest concealed) and the other tiles go on (BREAK), or, where Psot does not say where the
      next tile-part lies, the walk ends (STOP)."""
    if all_whole:
        policy.tolerate(InvalidSegment(f"SOT: tile {sot.Isot} part {sot.TPsot} after every tile's last part", pos),
                        warnings, text=f"{n - pos} bytes after every tile's last tile-part ignored (a tile-part of "
                                       f"tile {sot.Isot} at byte {pos}), as OpenJPEG ignores them")
        return _Misplaced.STOP
    error = InvalidSegment(f"SOT: tile {sot.Isot} part {sot.TPsot} where part {len(tile.parts)} was due", pos + 8)
    whole = 0 < sot.Psot <= n - pos
    if whole and _complete(tile):
        policy.tolerate(error, warnings, tile=sot.Isot, text=f"{error}, after the tile's last part; ignored")
        return _Misplaced.SKIP
    policy.fault(error, warnings, tile=sot.Isot, text=f"{error}; " + (
        "this and the tile's later parts ignored" if whole else "rest of the codestream ignored"))
    return _Misplaced.BREAK if whole else _Misplaced.STOP


def _complete(tile: Tile) -> bool:
    """Whether ``tile`` has all the parts its first part's TNsot counts (0: not known)."""
    return bool(tile.parts) and 0 < tile.parts[0].sot.TNsot <= len(tile.parts)


def _last_eoc(data) -> int:
    """Psot = 0: the last tile-part runs to the EOC marker (A.4.2)."""
    n = len(data)
    return n - 2 if n >= 2 and data[n - 2] == 0xFF and data[n - 1] == 0xD9 else n


def _check_components(cs: Codestream) -> None:
    """Cross-segment checks that need the whole header."""
    csiz = cs.siz.Csiz
    for seg in [cs.main, *(t.header for t in cs.tiles.values())]:
        for c, rgn in seg.rgn.items():
            if rgn.SPrgn > 30:
                raise UnsupportedFeature(f"RGN: ROI shift {rgn.SPrgn} above 30 bit-planes (component {c})")
        for p in seg.poc:
            if p.RSpoc >= p.REpoc or p.CSpoc >= min(p.CEpoc, csiz) or p.LYEpoc == 0:
                cs.warnings.append(Fault(InvalidSegment(f"POC progression {p} is empty")))


def tile_part_ppm_headers(cs: Codestream) -> dict[tuple[int, int], bytes] | None:
    """PPM headers keyed by (tile, tile-part), or None without PPM (A.7.4)."""
    if not cs.main.ppm:
        return None
    runs = split_ppm(cs.main.ppm)
    # every tile-part of the stream takes its run in order, a view's tiles too (A.7.4)
    tiles = (cs.whole or cs).tiles
    parts = sorted((tp.offset, t.index, tp.sot.TPsot) for t in tiles.values() for tp in t.parts)
    if len(runs) < len(parts):
        raise InvalidSegment(f"PPM: {len(runs)} packed headers for {len(parts)} tile-parts")
    return {(ti, tp): runs[k] for k, (_, ti, tp) in enumerate(parts)}


__all__ = ["Codestream", "MainHeaderCache", "Segments", "Tile", "TilePart", "parse_codestream", "tile_part_ppm_headers",
           "CodestreamError"]
