"""What OpenJPEG decodes, decoded as it decodes it (issue 48): lenient by default, with a
:class:`LenientWarning` naming what was tolerated; ``strict=True`` refusing with the error it
always raised.

Each case takes a stream from cinegpu's own encoder, breaks ISO/IEC 15444-1 the way streams
from other encoders were found to break it, and compares our lenient decode with what
``opj_decompress`` writes for the same bytes: more coding passes than the bit-planes hold,
zero bit-planes past Mb, a QCD listing fewer step sizes than subbands, a COD in a later
tile-part header, a tile missing, more than 255 tile-parts of one tile, bytes that are no
segment after an unknown marker, a malformed comment or pointer segment, a tile-part after every
tile is whole; and damage concealed tile by tile (a tile-part missing or repeated, a damaged SOT). (A cdef describing a channel twice: tests/decode/test_jp2.py.)
"""

from __future__ import annotations

import shutil
import struct
import warnings

import numpy as np
import pytest

from cinegpu.decode import CodestreamError, InvalidSegment, LenientWarning, MisplacedMarker, TruncatedCodestream, decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from cinegpu.encode import encode
from helpers.codestreams import lower_exponents, main_qcd
from helpers.differential import opj_decode
from helpers.peers import Image, image_planes

OPJ = shutil.which("opj_decompress")
needs_opj = pytest.mark.skipif(OPJ is None, reason="opj_decompress is not installed (libopenjp2-tools)")


def _stream(reversible: bool = True, **kw) -> tuple[bytes, list[np.ndarray]]:
    img = Image(w=83, h=61, n=3, bits=8, fmt="raw", seed=9)
    planes = image_planes(img)
    data = encode(np.stack(planes, -1), bits=8, backend="cpu", reversible=reversible, levels=3, **kw)
    return data, planes


def drop_steps(data: bytes, n: int) -> bytes:
    """The main QCD without its last ``n`` step sizes (A.6.4 wants one per subband)."""
    at, length = main_qcd(data)
    size = 1 if data[at + 4] & 0x1F == 0 else 2
    end = at + 2 + length
    out = bytearray(data[: end - n * size] + data[end:])
    struct.pack_into(">H", out, at + 2, length - n * size)
    return bytes(out)


def _lenient(data: bytes) -> tuple[list[np.ndarray], list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", LenientWarning)
        got = decode(data)
    return got, [str(w.message) for w in seen if issubclass(w.category, LenientWarning)]


def _same_as_opj(got: list[np.ndarray], data: bytes, tmp_path) -> None:
    ref = opj_decode(data, tmp_path)
    assert ref is not None, "opj_decompress refuses it"
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g.astype(np.int64), r)


@needs_opj
@pytest.mark.parametrize("reversible", [True, False])
def test_more_passes_than_bit_planes(reversible, tmp_path):
    """One exponent less: every block coded to its last plane holds 3 passes more than its K
    allows (D.4); OpenJPEG decodes the first 3K - 2 and ignores the rest."""
    data, _ = _stream(reversible)
    bad = lower_exponents(data, 1)
    with pytest.raises(InvalidSegment, match=r"code-blocks fail tier-1 decoding \(status 1\)"):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any("more coding passes than their bit-planes hold" in s for s in said), said
    _same_as_opj(got, bad, tmp_path)


@needs_opj
def test_zero_bit_planes_past_mb(tmp_path):
    """Exponents so low that some blocks' zero bit-planes exceed Mb (B.10.5): strict ends the
    tile there as always; OpenJPEG (and Grok) decode those blocks as zeros."""
    data, _ = _stream(True)
    bad = lower_exponents(data, 7)
    with pytest.raises(InvalidSegment, match="zero bit-planes above the subband's magnitude bits"):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any("more zero bit-planes than the subband's magnitude bits" in s for s in said), said
    _same_as_opj(got, bad, tmp_path)


@needs_opj
@pytest.mark.parametrize("reversible, drop", [(True, 3), (False, 1), (False, 9)])
def test_qcd_with_fewer_step_sizes(reversible, drop, tmp_path):
    data, _ = _stream(reversible)
    bad = drop_steps(data, drop)
    with pytest.raises(InvalidSegment, match="quantization lists .* subbands, band .* needed"):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any(f"no step size for {3 * drop} subbands" in s for s in said), said  # 3 components
    _same_as_opj(got, bad, tmp_path)


def _with_cod_in_second_part(data: bytes) -> bytes:
    """The main COD copied into the header of the first tile's second tile-part (Psot fixed)."""
    cs = parse_codestream(data)
    cod = cs.segment_body(0xFF52)
    seg = b"\xff\x52" + struct.pack(">H", len(cod) + 2) + cod
    part = cs.tiles[0].parts[1]
    at = part.offset + 12  # after the SOT segment
    out = bytearray(data[:at] + seg + data[at:])
    struct.pack_into(">I", out, part.offset + 6, part.sot.Psot + len(seg))
    return bytes(out)


@needs_opj
def test_cod_in_a_later_tile_part_header(tmp_path):
    data, _ = _stream(True, profile="generic", tiles=(48, 40), progression="RLCP")
    data = _split_tile_parts(data)
    bad = _with_cod_in_second_part(data)
    with pytest.raises(MisplacedMarker, match="COD is not allowed in a tile header"):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any("COD in a tile-part header after the tile's first" in s for s in said), said
    assert all(np.array_equal(g, w) for g, w in zip(got, decode(data, strict=True)))
    _same_as_opj(got, bad, tmp_path)


def _split_tile_parts(data: bytes, parts: int = 2) -> bytes:
    """Every tile's one tile-part split into ``parts``: the later ones hold no packet data
    (T.800 allows a tile-part of SOT and SOD alone), TNsot = ``parts``."""
    cs = parse_codestream(data)
    out = bytearray(data[: cs.main_end])
    for t in sorted(cs.tiles):
        (part,) = cs.tiles[t].parts
        head = bytearray(data[part.offset : part.start])
        body = data[part.start : part.end]
        struct.pack_into(">HIBB", head, 4, t, len(head) + len(body), 0, parts % 256)
        out += head + body
        for k in range(1, parts):
            out += b"\xff\x90\x00\x0a" + struct.pack(">HIBB", t, 14, k % 256, parts % 256) + b"\xff\x93"
    return bytes(out + b"\xff\xd9")


def test_more_than_255_tile_parts():
    """TPsot is 8 bits (A.4.2); a tile of 300 parts, its TPsot wrapping past 255 as
    opj_compress writes them, is read in order (OpenJPEG stops at the wrapped TNsot)."""
    data, _ = _stream(True)
    split = _split_tile_parts(data, 300)
    with pytest.raises(InvalidSegment, match="part 0 where part 256 was due"):
        decode(split, strict=True)
    got, said = _lenient(split)
    assert any("more than 255 tile-parts" in s for s in said), said
    assert all(np.array_equal(g, w) for g, w in zip(got, decode(data, strict=True)))
    assert len(parse_codestream(split, strict=False).tiles[0].parts) == 300


@needs_opj
def test_missing_tile(tmp_path):
    data, _ = _stream(True, tiles=(32, 32))
    cs = parse_codestream(data)
    gone = cs.tiles[4].parts[0]
    bad = data[: gone.offset] + data[gone.end :]
    with pytest.raises(TruncatedCodestream, match="tile 4 is missing"):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert "tile 4 missing" in said
    _same_as_opj(got, bad, tmp_path)
    frame = Decoder().decode(bad)
    assert frame.damaged  # concealed, not merely tolerated


def test_tolerated_is_not_damage():
    """A frame whose departures were only tolerated is not ``damaged`` (the player counts
    concealed frames by it)."""
    data, _ = _stream(True)
    frame = Decoder().decode(lower_exponents(data, 1))
    assert frame.passed_over() and all(f.tolerated for f in frame.passed_over())
    assert not frame.damaged


def test_lenient_is_the_default_and_strict_still_raises():
    data, _ = _stream(True)
    cut = data[: len(data) // 2]
    with pytest.raises(CodestreamError):
        decode(cut, strict=True)
    with pytest.warns(LenientWarning):
        got = decode(cut)
    assert [g.shape for g in got] == [g.shape for g in decode(data)]


def _after_siz(data: bytes, insert: bytes) -> bytes:
    """``insert`` put into the main header right after SIZ."""
    end = 4 + struct.unpack_from(">H", data, 4)[0]
    return data[:end] + insert + data[end:]


@needs_opj
@pytest.mark.parametrize("insert, strict_error", [
    # a reserved marker without a segment (A.1.3), then six bytes of no segment
    (b"\xff\x3a\x00\x06abcd", "expected a marker, found 0x0006"),
    # an unknown marker whose length runs far past the end of the stream
    (b"\xff\x7a\xff\xf0abcd", "segment of 65520 bytes runs past the end"),
    # ... and one whose length is below its own two bytes
    (b"\xff\x7a\x00\x01ab", "segment length 1 below 2"),
])
def test_bytes_after_an_unknown_marker(insert, strict_error, tmp_path):
    """OpenJPEG never reads an unknown marker's length: it looks for the next marker it knows
    among the two-byte words that follow (``opj_j2k_read_unk``). So do we, leniently, with a
    warning naming the bytes skipped; strict refuses as before."""
    data, _ = _stream(True)
    bad = _after_siz(data, insert)
    with pytest.raises(CodestreamError, match=strict_error):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any(f"{len(insert) - 2} bytes after the unknown marker" in s and "skipped to the COD" in s
               for s in said), said
    assert all(np.array_equal(g, w) for g, w in zip(got, decode(data, strict=True)))
    _same_as_opj(got, bad, tmp_path)
    # the same bytes strict after lenient in one decoder: the header was not kept with its warning
    decoder = Decoder()
    decoder.decode(bad)
    with pytest.raises(CodestreamError, match=strict_error):
        decoder.decode(bad, strict=True)


def test_an_unknown_marker_with_its_segment_is_skipped_by_its_length():
    data, _ = _stream(True)
    got, said = _lenient(_after_siz(data, b"\xff\x7a\x00\x06\xff\x52\xff\x5c"))
    assert all(np.array_equal(g, w) for g, w in zip(got, decode(data, strict=True)))
    assert any("skipped unknown marker 0xFF7A" in s for s in said) and not any("bytes after" in s for s in said)


def _in_first_tile_part(data: bytes, insert: bytes) -> bytes:
    """``insert`` put into the first tile-part's header, right after its SOT (Psot grown)."""
    at = parse_codestream(data).tiles[0].parts[0].offset
    out = bytearray(data[: at + 12] + insert + data[at + 12 :])
    struct.pack_into(">I", out, at + 6, struct.unpack_from(">I", data, at + 6)[0] + len(insert))
    return bytes(out)


@pytest.mark.parametrize("where, insert, opj_decodes", [
    ("main", b"\xff\x64\x00\x02", True),                        # COM without its Rcom (A.9.2)
    ("main", b"\xff\x64\x00\x03\x00", True),
    ("tile", b"\xff\x64\x00\x02", True),
    ("main", b"\xff\x57\x00\x05\x00\x01\x81", True),            # PLM: a packet length unterminated
    ("main", b"\xff\x55\x00\x08\x00\x60\x00\x00\x00\x00", False),   # TLM: no whole number of entries
    ("tile", b"\xff\x58\x00\x04\x00\x81", False),                # PLT: a packet length unterminated
])
def test_a_malformed_informative_segment_is_ignored(where, insert, opj_decodes, tmp_path):
    """A comment or a pointer segment (A.7, A.9) that does not parse, its length sound: the
    decode does without it, so it is stepped over with a warning (OpenJPEG reads no COM or PLM
    content; in a tile-part header such a segment cost the rest of the stream, concealed);
    strict refuses as before."""
    data, _ = _stream(True, tiles=(32, 32))
    bad = _after_siz(data, insert) if where == "main" else _in_first_tile_part(data, insert)
    with pytest.raises(InvalidSegment):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any(s.endswith("the segment is ignored") for s in said), said
    assert all(np.array_equal(g, w) for g, w in zip(got, decode(data, strict=True)))
    if opj_decodes and OPJ is not None:
        _same_as_opj(got, bad, tmp_path)


def _parts(data: bytes) -> list[tuple[int, int, int]]:
    """(tile, offset, end) of each tile-part, in stream order."""
    cs = parse_codestream(data)
    return sorted((p.offset, t, p.end) for t, tile in cs.tiles.items() for p in tile.parts)


def test_a_tile_part_missing_or_repeated_costs_its_tile_alone():
    """A tile-part out of order (one missing before it, or one read again): the tile keeps the
    parts read before, the other tiles decode (each tile's data here is all in its first part,
    so nothing is lost: the samples are the clean stream's); strict refuses as before."""
    data, _ = _stream(True, tiles=(32, 32))
    split = _split_tile_parts(data, 3)
    parts = _parts(split)
    clean = decode(split, strict=True)
    (a0, _, e0), (a1, _, e1) = parts[0], parts[1]      # tile 0's parts 0 and 1
    for bad, due in ((split[:a1] + split[e1:], "part 2 where part 1 was due"),     # part 1 missing
                     (split[:e0] + split[a0:e0] + split[e0:], "part 0 where part 1 was due")):   # part 0 twice
        with pytest.raises(InvalidSegment, match=due):
            decode(bad, strict=True)
        got, said = _lenient(bad)
        assert any(due in s and "the tile's later parts ignored" in s for s in said), said
        assert all(np.array_equal(g, w) for g, w in zip(got, clean))


@needs_opj
def test_a_tile_part_after_every_tile_is_whole_is_ignored(tmp_path):
    """OpenJPEG reads no further once every tile has all its parts: a tile-part repeated at
    the end of the stream is ignored (tolerated, not damage)."""
    data, _ = _stream(True, tiles=(32, 32))
    offset, _, end = _parts(data)[0]
    bad = data[:-2] + data[offset:end] + data[-2:]
    with pytest.raises(InvalidSegment, match="after every tile's last part"):
        decode(bad, strict=True)
    got, said = _lenient(bad)
    assert any("after every tile's last tile-part ignored" in s for s in said), said
    _same_as_opj(got, bad, tmp_path)
    assert not Decoder().decode(bad).damaged


@pytest.mark.parametrize("damage", ["Isot", "Lsot", "Psot"])
def test_a_damaged_sot_keeps_the_tiles_before_it(damage):
    data, _ = _stream(True, tiles=(32, 32))
    at = _parts(data)[2][0]        # tile 2's SOT
    bad = bytearray(data)
    if damage == "Isot":
        struct.pack_into(">H", bad, at + 4, 999)
    elif damage == "Lsot":
        struct.pack_into(">H", bad, at + 2, 12)
    else:
        struct.pack_into(">I", bad, at + 6, 8)
    with pytest.raises(InvalidSegment):
        decode(bytes(bad), strict=True)
    got, said = _lenient(bytes(bad))
    assert any("rest of the codestream ignored" in s for s in said), said
    clean = decode(data)
    assert all(np.array_equal(g[:32, :64], w[:32, :64]) for g, w in zip(got, clean))    # tiles 0 and 1
