"""JP2 file format boxes (T.800 Annex I): signature, ftyp, jp2h, jp2c.

:func:`read_jp2` finds the codestream and the header boxes that change how
it is shown: ihdr, colr, res, and the palette trio pclr/cmap/cdef. A raw
codestream (starting with SOC) passes through untouched. What OpenJPEG and Grok tolerate is
tolerated here with a :class:`~cinegpu.decode.errors.LenientWarning` (see :func:`read_jp2`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import CodestreamError, InvalidSegment, LenientWarning, TruncatedCodestream, UnsupportedFeature

SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
#: Most boxes read from one file or superbox (every loop over input is bounded).
MAX_BOXES = 1 << 16


@dataclass(frozen=True)
class Box:
    type: bytes
    offset: int  #: byte offset of the box header
    start: int  #: first byte of the contents
    end: int  #: one past the last byte


@dataclass
class JP2Header:
    """What the jp2h superbox says (ihdr, colr, res, pclr, cmap, cdef)."""

    height: int = 0
    width: int = 0
    components: int = 0
    bpc: int = 0
    colour_method: int | None = None  #: METH of the first colr: 1 enumerated, 2/3 ICC profile
    colourspace: int | None = None  #: EnumCS of colr (16 sRGB, 17 greyscale, 18 sYCC, 12 CMYK, 14 CIELab)
    #: CIELab's (RL, OL, RA, OA, RB, OB, IL) when colr gives them (None: the defaults)
    lab: tuple[int, ...] | None = None
    icc_profile: bytes | None = None
    palette: np.ndarray | None = None  #: (entries, columns) int64
    palette_bits: tuple[tuple[int, bool], ...] = ()  #: (bits, signed) per column
    cmap: tuple[tuple[int, int, int], ...] = ()  #: (component, mtyp, column) per channel
    cdef: tuple[tuple[int, int, int], ...] = ()  #: (channel, type, association)
    resolution: dict = field(default_factory=dict)
    seen: set = field(default_factory=set)  #: header box types read so far


def _box_at(data, pos: int, end: int) -> Box:
    """The box whose header starts at ``pos`` (I.4); its ``end`` may lie past ``end``."""
    if pos + 8 > end:
        raise TruncatedCodestream("box header cut short", pos)
    length = int.from_bytes(data[pos : pos + 4], "big")
    kind = bytes(data[pos + 4 : pos + 8])
    head = 8
    if length == 1:
        if pos + 16 > end:
            raise TruncatedCodestream("XLBox cut short", pos)
        length = int.from_bytes(data[pos + 8 : pos + 16], "big")
        head = 16
    elif length == 0:
        length = end - pos
    if length < head:
        raise InvalidSegment(f"box {kind!r} has length {length}", pos)
    return Box(kind, pos, pos + head, pos + length)


def boxes(data, start: int, end: int) -> list[Box]:
    """The boxes laid end to end in ``data[start:end]`` (I.4)."""
    out = []
    pos = start
    for _ in range(MAX_BOXES):
        if pos >= end:
            return out
        b = _box_at(data, pos, end)
        if b.end > end:
            raise TruncatedCodestream(f"box {b.type!r} of {b.end - b.offset} bytes runs past the end", pos)
        out.append(b)
        pos = b.end
    raise InvalidSegment(f"more than {MAX_BOXES} boxes", pos)


def lenient(what: str, offset: int | None = None) -> None:
    """Warn of input tolerated as OpenJPEG and Grok tolerate it (:class:`LenientWarning`)."""
    where = f" at byte {offset}" if offset is not None else ""
    warnings.warn(LenientWarning(f"{what}{where}"), stacklevel=3)


def top_boxes(data) -> list[Box]:
    """The boxes of a JP2 file, as the peers read them: past the first Contiguous Codestream
    box, bytes that make no box are ignored (warned), and that box may run past the end of the
    file (what is there is used, warned). Anything else malformed raises."""
    out: list[Box] = []
    pos, end = 0, len(data)
    for _ in range(MAX_BOXES):
        if pos >= end:
            return out
        after = any(b.type == b"jp2c" for b in out)
        try:
            b = _box_at(data, pos, end)
        except CodestreamError as exc:
            if not after:
                raise
            lenient(f"JP2: {end - pos} bytes after the codestream box ignored ({exc.what})", pos)
            return out
        if b.end > end:
            if after:
                lenient(f"JP2: {end - pos} bytes after the codestream box ignored (box {b.type!r} of "
                        f"{b.end - b.offset} bytes runs past the end)", pos)
                return out
            if b.type != b"jp2c":
                raise TruncatedCodestream(f"box {b.type!r} of {b.end - b.offset} bytes runs past the end", pos)
            lenient(f"JP2: the codestream box's {b.end - b.offset} bytes run past the end of the file; "
                    f"decoding the {end - b.start} there", pos)
            b = Box(b.type, b.offset, b.start, end)
        out.append(b)
        pos = b.end
    raise InvalidSegment(f"more than {MAX_BOXES} boxes", pos)


def is_jp2(data) -> bool:
    return bytes(data[:12]) == SIGNATURE


#: Boxes of the JP2 Header box (I.5.3) that the peers also read outside it.
HEADER_BOXES = (b"ihdr", b"colr", b"pclr", b"cmap", b"cdef", b"res ")


def read_jp2(data) -> tuple[memoryview, JP2Header | None]:
    """(codestream, header) of a JP2 file; (data, None) for a raw codestream.

    As OpenJPEG and Grok (each tolerance warned with a :class:`LenientWarning`): bytes after
    the codestream box that make no box are ignored; a codestream box running past the end of
    the file is read to the end; a header box (ihdr, colr, pclr, cmap, cdef, res) found outside
    the JP2 Header box is read when it follows that box, ignored when it comes before it.
    """
    if not is_jp2(data):
        return memoryview(data), None
    top = top_boxes(data)
    kinds = [b.type for b in top]
    if len(top) < 2 or top[1].type != b"ftyp":
        raise InvalidSegment("JP2: the File Type box must follow the signature", top[0].end)
    if b"jp2c" not in kinds:
        raise TruncatedCodestream("JP2: no Contiguous Codestream box", len(data))
    if b"jp2h" not in kinds:
        raise InvalidSegment("JP2: no JP2 Header box", 0)
    header = JP2Header()
    jp2h = kinds.index(b"jp2h")
    _read_jp2h(data, top[jp2h], header)
    for i, b in enumerate(top):
        if b.type not in HEADER_BOXES:
            continue
        name = b.type.decode("latin-1").strip()
        if i < jp2h:
            lenient(f"JP2: a {name} box before the JP2 Header box ignored", b.offset)
            continue
        lenient(f"JP2: a {name} box outside the JP2 Header box read as if inside it", b.offset)
        _read_header_box(data, b, header)
    c = top[kinds.index(b"jp2c")]
    return memoryview(data)[c.start : c.end], header


def _u(data, pos: int, n: int) -> int:
    return int.from_bytes(data[pos : pos + n], "big")


def _need(box: Box, n: int) -> None:
    if box.end - box.start < n:
        raise InvalidSegment(f"box {box.type!r} too short: {box.end - box.start} bytes, {n} needed", box.start)


def _read_jp2h(data, jp2h: Box, h: JP2Header) -> None:
    for b in boxes(data, jp2h.start, jp2h.end):
        _read_header_box(data, b, h)


def _read_header_box(data, b: Box, h: JP2Header) -> None:
    """One box of the JP2 Header box (I.5.3) into ``h``; the first ihdr and colr count (I.5.3.3:
    a reader ignores later colr boxes), a second pclr, cmap or cdef is an error (as OpenJPEG)."""
    s = b.start
    name = b.type.decode("latin-1").strip()
    if b.type in (b"pclr", b"cmap", b"cdef") and name in h.seen:
        raise InvalidSegment(f"JP2: a second {name} box", b.offset)
    h.seen.add(name)
    if b.type == b"ihdr" and not h.components:
        _need(b, 14)
        h.height, h.width, h.components, h.bpc = _u(data, s, 4), _u(data, s + 4, 4), _u(data, s + 8, 2), data[s + 10]
    elif b.type == b"colr" and h.colour_method is None:
        _read_colr(data, b, h)
    elif b.type == b"pclr":
        _read_pclr(data, b, h)
    elif b.type == b"cmap":
        if (b.end - s) % 4:
            raise InvalidSegment("cmap: length is not a multiple of 4", s)
        h.cmap = tuple((_u(data, p, 2), data[p + 2], data[p + 3]) for p in range(s, b.end, 4))
    elif b.type == b"cdef":
        _need(b, 2)
        n = _u(data, s, 2)
        if n == 0:
            raise InvalidSegment("cdef: no channel described", s)
        _need(b, 2 + 6 * n)
        h.cdef = tuple((_u(data, p, 2), _u(data, p + 2, 2), _u(data, p + 4, 2)) for p in range(s + 2, s + 2 + 6 * n, 6))
    elif b.type == b"res ":
        for rb in boxes(data, b.start, b.end):
            if rb.end - rb.start >= 10:
                r = rb.start
                h.resolution[rb.type.decode("latin-1")] = (
                    _u(data, r, 2), _u(data, r + 2, 2), _u(data, r + 4, 2), _u(data, r + 6, 2),
                    data[r + 8], data[r + 9],
                )


def _read_colr(data, b: Box, h: JP2Header) -> None:
    """The Colour Specification box (I.5.3.3): METH, PREC, APPROX, then EnumCS or a profile.
    EnumCS 14 (CIELab, T.801 M.11.7.4) may carry its range and offset parameters."""
    _need(b, 3)
    s = b.start
    meth = data[s]
    if meth == 1:
        _need(b, 7)
        h.colour_method = 1
        h.colourspace = _u(data, s + 3, 4)
        if h.colourspace == 14 and b.end - s >= 35:
            h.lab = tuple(_u(data, p, 4) for p in range(s + 7, s + 35, 4))
    elif meth in (2, 3):
        h.colour_method = meth
        h.icc_profile = bytes(data[s + 3 : b.end])


def _read_pclr(data, b: Box, h: JP2Header) -> None:
    _need(b, 3)
    s = b.start
    ne, npc = _u(data, s, 2), data[s + 2]
    if not (1 <= ne <= 1024 and 1 <= npc <= 255):
        raise InvalidSegment(f"pclr: {ne} entries of {npc} columns", s)
    _need(b, 3 + npc)
    bits = tuple(((v & 0x7F) + 1, bool(v & 0x80)) for v in data[s + 3 : s + 3 + npc])
    if any(n > 32 for n, _ in bits):
        raise UnsupportedFeature("pclr: palette entries above 32 bits", s)
    sizes = [(n + 7) // 8 for n, _ in bits]
    _need(b, 3 + npc + ne * sum(sizes))
    table = np.zeros((ne, npc), np.int64)
    p = s + 3 + npc
    for e in range(ne):
        for j, size in enumerate(sizes):
            table[e, j] = _u(data, p, size)
            p += size
    h.palette, h.palette_bits = table, bits


def apply_palette(components: list[np.ndarray], h: JP2Header) -> list[np.ndarray]:
    """Map palette indices to colours as cmap says (I.5.3.4, I.5.3.5); a palette without a
    cmap box is ignored (warned), as the peers ignore it."""
    if h.palette is None:
        return components
    if not h.cmap:
        # OpenJPEG and Grok drop such a palette and return the indices
        lenient("JP2: a pclr box without a cmap box ignored (the indices are returned)")
        return components
    out = []
    for cmp_, mtyp, pcol in h.cmap:
        if cmp_ >= len(components):
            raise InvalidSegment(f"cmap: component {cmp_} of {len(components)}")
        if mtyp == 0:
            out.append(components[cmp_])
            continue
        if pcol >= h.palette.shape[1]:
            raise InvalidSegment(f"cmap: palette column {pcol} of {h.palette.shape[1]}")
        idx = np.clip(components[cmp_].astype(np.int64), 0, h.palette.shape[0] - 1)
        bits, signed = h.palette_bits[pcol]
        dtype = np.uint8 if bits <= 8 and not signed else np.uint16 if bits <= 16 and not signed else np.int32
        out.append(h.palette[idx, pcol].astype(dtype))
    return out
