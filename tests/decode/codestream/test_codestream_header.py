"""The main-header model of ``decode.codestream.header``: what media reads of it.

:func:`parse_codestream` with ``main_only`` stops at the first SOT; ``main_end``,
``main_markers``, ``segment_body`` and ``tile_part_count`` give the main header as stored
(T.800 A.4.1) to media's profile check and its MXF writer (ST 422 sub-descriptor).
Streams are byte-built with helpers/codestreams.py, as in test_errors.py.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cinegpu.decode.codestream import markers as M
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.codestream.qcd import QUANT_EXPOUNDED, QUANT_NONE, parse_qcd
from cinegpu.decode.codestream.reader import SegmentReader
from cinegpu.decode.errors import InvalidSegment, TruncatedCodestream
from helpers.codestreams import seg, tile_part

SIZ_BODY = struct.pack(">HIIIIIIIIH", 0, 8, 8, 0, 0, 8, 8, 0, 0, 1) + bytes([7, 1, 1])
COD_BODY = struct.pack(">BBHBBBBBB", 0, 0, 1, 0, 0, 4, 4, 0, 1)
QCD_BODY = bytes([2 << 5, 8 << 3])
COM_BODY = b"\x00\x01hello"


MAIN = (b"\xff\x4f" + seg(M.SIZ, SIZ_BODY) + seg(M.COD, COD_BODY) + seg(M.QCD, QCD_BODY)
        + seg(M.COM, COM_BODY) + seg(M.COM, b"\x00\x01second"))
STREAM = MAIN + tile_part(tpsot=0, tnsot=2) + tile_part(tpsot=1, tnsot=2) + b"\xff\xd9"


def test_main_header_markers_and_end():
    cs = parse_codestream(STREAM)
    assert cs.main_end == len(MAIN) and not cs.main_only
    assert [c for c, _, _ in cs.main_markers] == [M.SOC, M.SIZ, M.COD, M.QCD, M.COM, M.COM]
    assert cs.main_markers == cs.markers[:6] and cs.markers[6][0] == M.SOT
    assert cs.tile_part_count == 2


def test_segment_body_as_stored():
    cs = parse_codestream(STREAM)
    assert cs.segment_body(M.SIZ) == SIZ_BODY
    assert cs.segment_body(M.COD) == COD_BODY
    assert cs.segment_body(M.QCD) == QCD_BODY
    assert cs.segment_body(M.COM) == COM_BODY          # the first of two
    assert cs.segment_body(M.POC) is None
    assert isinstance(parse_codestream(memoryview(STREAM)).segment_body(M.COD), bytes)


def test_segment_body_ignores_tile_part_headers():
    tile_cod = seg(M.COD, struct.pack(">BBHBBBBBB", 0, 1, 1, 0, 0, 4, 4, 0, 1))
    part = seg(M.SOT, struct.pack(">HIBB", 0, 12 + len(tile_cod) + 3, 0, 1)) + tile_cod + b"\xff\x93\x00"
    cs = parse_codestream(MAIN + part + b"\xff\xd9")
    assert cs.tiles[0].header.cod is not None and cs.segment_body(M.COD) == COD_BODY


def test_main_only_stops_at_the_first_sot():
    broken = MAIN + tile_part(tpsot=0, tnsot=2, psot=5000)          # a tile-part running past the end
    with pytest.raises(TruncatedCodestream):
        parse_codestream(broken)
    cs = parse_codestream(broken, main_only=True)
    assert cs.main_only and cs.tiles == {} and cs.tile_part_count == 0
    assert cs.main_end == len(MAIN) and len(cs.main_markers) == 6
    assert cs.segment_body(M.QCD) == QCD_BODY and cs.siz.Xsiz == 8
    assert cs.markers == cs.main_markers                 # no SOT was read


def test_main_end_at_eoc_without_tile_parts():
    cs = parse_codestream(MAIN + b"\xff\xd9")
    assert cs.main_end == len(MAIN) and cs.tile_part_count == 0


def test_main_header_cache_reuses_only_identical_headers():
    """A MainHeaderCache hands back a main header parsed before only to a stream that starts
    with the same bytes followed by an SOT; the tile-parts are always the stream's own."""
    from cinegpu.decode.codestream.header import MainHeaderCache
    from cinegpu.encode import encode
    rng = np.random.default_rng(3)
    a = encode(rng.integers(0, 256, (40, 56), dtype=np.uint8))
    b = encode(rng.integers(0, 256, (40, 56), dtype=np.uint8))
    c = encode(rng.integers(0, 256, (40, 57), dtype=np.uint8))      # another SIZ
    cache = MainHeaderCache(size=2)
    first = parse_codestream(a, cache=cache)
    again = parse_codestream(b, cache=cache)
    assert again.main is first.main and again.siz is first.siz      # reused
    plain = parse_codestream(b)
    assert again.markers == plain.markers and again.main_end == plain.main_end
    assert again.tiles == plain.tiles and again.warnings == plain.warnings
    other = parse_codestream(c, cache=cache)
    assert other.main is not first.main and other.siz.Xsiz == 57
    from cinegpu.decode import decode
    for data in (a, b, c, a):
        assert all((x == y).all() for x, y in zip(decode(data), decode(bytes(data))))


def test_quantization_steps_read_in_one_go():
    """SPqcd as (epsilon, mu) pairs (A.6.4, Table A.29/A.30): 16-bit values read at once, 8-bit
    ones (no quantization) too, within the segment's bounds only."""
    values = [(9 << 11) | 1000, (8 << 11) | 2047, (1 << 11), 0x7FF]
    body = bytes([(1 << 5) | QUANT_EXPOUNDED]) + struct.pack(">4H", *values)
    q = parse_qcd(SegmentReader(b"xx" + body + b"yy", 2, 2 + len(body), "QCD"))
    assert q.guard_bits == 1 and q.steps == ((9, 1000), (8, 2047), (1, 0), (0, 2047))
    body = bytes([(2 << 5) | QUANT_NONE, 8 << 3, 9 << 3, (10 << 3) | 7])
    q = parse_qcd(SegmentReader(body, 0, len(body), "QCD"))
    assert q.guard_bits == 2 and q.steps == ((8, 0), (9, 0), (10, 0))
    r = SegmentReader(bytes(8), 0, 5, "QCD")
    assert r.u16s(2) == (0, 0) and r.pos == 4
    with pytest.raises(InvalidSegment, match="too short"):
        r.u16s(1)          # 2 bytes past a segment with 1 left, though the data goes on
