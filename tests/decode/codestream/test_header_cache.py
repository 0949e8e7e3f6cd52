"""The main-header cache across the frames of a reel (``decode.codestream.header``).

A reel's frames share SIZ, COD, QCD and the like, but each frame's TLM lists its own
tile-part lengths (T.800 A.7.1), and PLM, PPM and COM may differ too: a frame that differs from
a cached header in those alone takes the cached parse of the rest and parses them itself. The
result must be what a parse without any cache gives, byte for byte, errors included.
"""

from __future__ import annotations

import struct

import pytest

from cinegpu.decode.codestream import markers as M
from cinegpu.decode.codestream.header import MainHeaderCache, parse_codestream
from cinegpu.decode.errors import InvalidSegment
from helpers.codestreams import EOC, SOC, cod, qcd, seg, siz, tile_part


def tlm(*lengths: int, stlm: int = 0x60) -> bytes:
    """A TLM (A.7.1) of 2-byte tile indices (0) and 4-byte lengths (Stlm 0x60)."""
    return seg(M.TLM, bytes([0, stlm]) + b"".join(struct.pack(">HI", 0, n) for n in lengths))


def frame(body: bytes = b"\x00", text: bytes = b"frame", coding: bytes | None = None, stlm: int = 0x60) -> bytes:
    """One tile-part frame whose TLM gives its own length and whose COM says ``text``."""
    part = tile_part(body=body)
    main = (cod() if coding is None else coding) + qcd() + tlm(len(part), stlm=stlm) + seg(M.COM, b"\x00\x01" + text)
    return SOC + siz() + main + part + EOC


def test_frames_of_a_reel_share_the_parse_of_all_but_their_own_segments():
    cache = MainHeaderCache()
    a, b = frame(), frame(body=b"\x00" * 9, text=b"another frame")
    first, second = parse_codestream(a, cache=cache), parse_codestream(b, cache=cache)
    assert a[:first.main_end] != b[:second.main_end]            # no byte-for-byte hit
    assert second.header_key is first.header_key is not None
    assert second.main.cod is first.main.cod and second.siz is first.siz
    plain = parse_codestream(b)
    assert second.main == plain.main and second.markers == plain.markers
    assert second.tiles == plain.tiles and second.warnings == plain.warnings
    assert second.main.tlm[0].entries == ((0, len(tile_part(body=b"\x00" * 9))),)
    assert first.main.tlm != second.main.tlm and first.main == parse_codestream(a).main


def test_another_coding_is_another_header():
    cache = MainHeaderCache()
    first = parse_codestream(frame(), cache=cache)
    other = parse_codestream(frame(coding=cod(layers=2)), cache=cache)
    assert other.header_key is not first.header_key and other.main.cod.layers == 2


def test_a_damaged_frame_segment_raises_as_without_the_cache():
    cache = MainHeaderCache()
    parse_codestream(frame(), cache=cache, strict=True)
    bad = frame(stlm=0x30)          # Stlm with ST = 3: not in Table A.35
    with pytest.raises(InvalidSegment) as plain:
        parse_codestream(bad, strict=True)
    with pytest.raises(InvalidSegment) as cached:
        parse_codestream(bad, cache=cache, strict=True)
    assert str(cached.value) == str(plain.value) and cached.value.offset == plain.value.offset


def test_a_damaged_frame_segment_is_ignored_as_without_the_cache():
    """Lenient, a TLM that does not parse is ignored (the decode does without it), with the
    same warning whether the frame's header parse came through the cache or not."""
    cache = MainHeaderCache()
    parse_codestream(frame(), cache=cache, strict=False)
    bad = frame(stlm=0x30)
    plain = parse_codestream(bad, strict=False)
    cached = parse_codestream(bad, cache=cache, strict=False)
    assert [w.line() for w in cached.warnings] == [w.line() for w in plain.warnings]
    assert any("the segment is ignored" in w.line() for w in plain.warnings)
    assert cached.main.tlm == plain.main.tlm == []


def test_a_header_with_warnings_is_reused_only_byte_for_byte():
    cache = MainHeaderCache()
    odd = SOC + siz() + cod() + qcd() + seg(0xFF6F, b"\x00\x00") + tlm(15) + tile_part() + EOC  # unknown marker
    first = parse_codestream(odd, strict=False, cache=cache)
    assert first.warnings and first.header_key is not None
    again = parse_codestream(odd, strict=False, cache=cache)
    assert again.main is first.main                          # the same bytes: reused whole
    changed = odd.replace(tlm(15), tlm(16))
    other = parse_codestream(changed, strict=False, cache=cache)
    assert other.header_key is not first.header_key
    assert [w.line() for w in other.warnings] == [w.line() for w in parse_codestream(changed, strict=False).warnings]


def test_packed_packet_headers_and_comments_are_each_frames_own():
    """PPM (A.7.4) holds a frame's packet headers: a frame of the reel's header takes its own,
    and as many COM segments as it has, wherever they lie."""
    from cinegpu.decode.decoder import Decoder

    def ppm_frame(*comments: bytes) -> bytes:
        ppm = seg(M.PPM, bytes([0]) + struct.pack(">I", 1) + b"\x00")      # one empty packet's header
        coms = b"".join(seg(M.COM, b"\x00\x01" + c) for c in comments)
        return SOC + siz() + coms + cod() + qcd() + ppm + tile_part(body=b"") + EOC

    a, b = ppm_frame(b"one"), ppm_frame(b"two", b"three")
    cache = MainHeaderCache()
    first, second = parse_codestream(a, cache=cache), parse_codestream(b, cache=cache)
    assert second.header_key is first.header_key
    assert second.main == parse_codestream(b).main and len(second.main.com) == 2
    assert second.main.ppm == parse_codestream(b).main.ppm and second.main.ppm is not first.main.ppm
    d = Decoder("cpu")
    for data in (a, b, a):
        got, alone = d.decode(data), Decoder("cpu").decode(data)
        assert all((x == y).all() for x, y in zip(got.components, alone.components))
        assert [f.line() for f in got.passed_over()] == [f.line() for f in alone.passed_over()]
