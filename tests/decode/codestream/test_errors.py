"""One byte-built regression test per check of the codestream and JP2 readers.

Every check of bad input has a test here. Streams are packed with
``struct`` from the smallest valid one (an 8 x 8, one-component, 8-bit
image, one tile, no decomposition levels, one empty packet), changed in one
place. Each test asserts the error class, the words of the message and the
byte offset where the problem lies (T.800 Annex A; JP2: Annex I).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cinegpu.decode import (
    CodestreamError,
    InvalidSegment,
    MisplacedMarker,
    TruncatedCodestream,
    UnsupportedFeature,
    decode,
)
from cinegpu.decode.decoder import Decoder
from helpers.codestreams import COD_AT, EOC, QCD_AT, SIZ_AT, SOC, SOD, SOT_AT, cod, qcd, seg, siz, stream, tile_part
from helpers.jp2_files import FTYP, SIGNATURE, box


def raises(cls, data: bytes, match: str, offset=..., **kw) -> CodestreamError:
    """The error strict decoding raises (``strict=False`` in ``kw``: what lenient still does)."""
    with pytest.raises(cls, match=match) as info:
        decode(data, **{"strict": True, **kw})
    if offset is not ...:
        assert info.value.offset == offset, f"offset {info.value.offset}, expected {offset}: {info.value}"
    return info.value


# ------------------------------------------------------------ the baseline

def test_baseline_decodes():
    out = decode(stream())
    assert len(out) == 1 and out[0].shape == (8, 8)
    assert np.all(out[0] == 128)  # no coded data: zero coefficients + DC shift
    assert len(decode(stream(), layers=1)) == 1
    two = stream(size=siz(w=16, tw=8), tiles=tile_part(0) + tile_part(1))
    assert decode(two)[0].shape == (8, 16)


def test_layout_offsets():
    data = stream()
    assert data[SIZ_AT : SIZ_AT + 2] == b"\xff\x51"
    assert data[COD_AT : COD_AT + 2] == b"\xff\x52"
    assert data[QCD_AT : QCD_AT + 2] == b"\xff\x5c"
    assert data[SOT_AT : SOT_AT + 2] == b"\xff\x90"


# ------------------------------------------------------------- main header

def test_no_soc():
    raises(MisplacedMarker, stream()[2:], "SOC", offset=0)


def test_empty_input():
    raises(TruncatedCodestream, b"", "SOC", offset=0)
    raises(TruncatedCodestream, b"\xff", "SOC", offset=0)


def test_siz_missing():
    raises(MisplacedMarker, SOC + cod() + qcd() + tile_part() + EOC, "SIZ must follow SOC", offset=2)


def test_siz_runs_past_the_end():
    raises(TruncatedCodestream, stream()[:30], "SIZ", offset=SIZ_AT)


def test_csiz_zero():
    raises(InvalidSegment, stream(size=siz(comps=(), csiz=0)), "Csiz 0", offset=40)


def test_lsiz_does_not_match_csiz():
    raises(InvalidSegment, stream(size=siz(comps=((7, 1, 1),), csiz=2)), "Lsiz does not match Csiz", offset=40)


def test_subsampling_zero():
    raises(InvalidSegment, stream(size=siz(comps=((7, 0, 1),))), "component 0 has a subsampling factor of 0")
    raises(InvalidSegment, stream(size=siz(comps=((7, 1, 1), (7, 1, 0)))), "component 1 has a subsampling")


def test_tile_size_zero():
    raises(InvalidSegment, stream(size=siz(tw=0)), "tile size of zero", offset=6)
    raises(InvalidSegment, stream(size=siz(th=0)), "tile size of zero", offset=6)


def test_image_offset_outside_grid():
    raises(InvalidSegment, stream(size=siz(xo=8)), "image offset")


def test_tile_offset_beyond_image_offset():
    raises(InvalidSegment, stream(size=siz(xo=2, xto=3)), "tile offset beyond image offset")


def test_precision_32_bits_unsupported():
    """Up to 31 bits, as OpenJPEG (tests/decode/test_high_precision.py decodes 17-31)."""
    e = raises(UnsupportedFeature, stream(size=siz(comps=((31, 1, 1),))), "32 bits")
    assert "31" in str(e)


def test_precision_above_38_bits():
    raises(InvalidSegment, stream(size=siz(comps=((40, 1, 1),))), "precision above 38")


def test_marker_segment_length_below_2():
    data = stream(main=cod() + qcd() + struct.pack(">HH", 0xFF64, 1))  # COM with Lcom 1
    raises(InvalidSegment, data, "COM: segment length 1 below 2", offset=SOT_AT + 2)


def test_segment_runs_past_the_end():
    data = SOC + siz() + cod() + struct.pack(">HH", 0xFF5C, 200) + b"\x40"
    raises(TruncatedCodestream, data, "QCD: segment of 200 bytes runs past the end", offset=QCD_AT)


def test_segment_not_consumed_exactly():
    data = stream(main=seg(0xFF52, cod()[4:] + b"\x00") + qcd())
    raises(InvalidSegment, data, "COD: 1 bytes left unparsed", offset=COD_AT + 14)


def test_segment_too_short():
    data = stream(main=seg(0xFF52, cod()[4:-1]) + qcd())
    raises(InvalidSegment, data, "COD: segment too short")


def test_cod_missing():
    raises(InvalidSegment, stream(main=qcd()), "main header has no COD", offset=SOT_AT - len(cod()))


def test_qcd_missing():
    raises(InvalidSegment, stream(main=cod()), "main header has no QCD", offset=QCD_AT)


def test_cod_reserved_scod_bits():
    raises(InvalidSegment, stream(main=cod(scod=0x08) + qcd()), "reserved Scod bits 0x08", offset=COD_AT + 4)


def test_cod_reserved_code_block_style_bits():
    raises(InvalidSegment, stream(main=cod(style=0x80) + qcd()), "reserved code-block style bits 0x80",
           offset=COD_AT + 4 + 5 + 3)


def test_cod_unknown_progression_order():
    raises(InvalidSegment, stream(main=cod(prog=5) + qcd()), "progression order 5", offset=COD_AT + 5)


def test_cod_zero_layers():
    raises(InvalidSegment, stream(main=cod(layers=0) + qcd()), "zero quality layers", offset=COD_AT + 6)


def test_cod_33_levels():
    raises(InvalidSegment, stream(main=cod(levels=33) + qcd(levels=33)), "33 decomposition levels, at most 32",
           offset=COD_AT + 9)


def test_cod_32_levels_are_legal_syntax():
    # 32 levels parse; an 8 x 8 tile simply has empty resolutions
    data = stream(main=cod(levels=32) + qcd(levels=32))
    try:
        out = decode(data)
    except UnsupportedFeature:
        return
    assert out[0].shape == (8, 8)


@pytest.mark.parametrize("xcb,ycb", [(9, 0), (0, 9), (6, 6)], ids=["2^11-wide", "2^11-high", "2^8x2^8"])
def test_code_block_too_large(xcb, ycb):
    raises(InvalidSegment, stream(main=cod(xcb=xcb, ycb=ycb) + qcd()), "code-block size", offset=COD_AT + 10)


def test_ht_code_blocks_parse():
    """HT code-blocks (Part 15) are decoded now: the style bit is accepted, not refused."""
    from cinegpu.decode.codestream.header import parse_codestream

    cs = parse_codestream(stream(main=cod(style=0x40) + qcd()))
    assert cs.main.cod.spcod.ht


def test_cap_ht_parses():
    from cinegpu.decode.codestream.header import parse_codestream

    cap = seg(0xFF50, struct.pack(">IH", 1 << 17, 0))
    assert parse_codestream(stream(main=cap + cod() + qcd(), size=siz(rsiz=0x4000))).siz.Rsiz == 0x4000


def test_multiple_component_transform_2_unsupported():
    raises(UnsupportedFeature, stream(main=cod(mct=2) + qcd()), "Part 2")


def test_wavelet_transform_2_unsupported():
    raises(UnsupportedFeature, stream(main=cod(transform=2) + qcd()), "wavelet transform 2", offset=COD_AT + 13)


def test_precinct_exponent_zero():
    data = stream(main=cod(scod=1, levels=1, precincts=bytes([0xFF, 0x00])) + qcd(levels=1))
    raises(InvalidSegment, data, "precinct exponent 0")


def test_qcd_style_3():
    raises(InvalidSegment, stream(main=cod() + qcd(style=3)), "quantization style 3", offset=QCD_AT + 4)


def test_qcd_derived_with_two_steps():
    data = stream(main=cod() + seg(0xFF5C, b"\x41" + b"\x40\x00" * 2))
    raises(InvalidSegment, data, "2 step sizes for style 1")


def test_qcd_too_few_subbands():
    data = stream(main=cod(levels=2) + qcd(levels=0))
    raises(InvalidSegment, data, "subbands")


def test_coc_component_out_of_range():
    coc = seg(0xFF53, bytes([1, 0, 0, 4, 4, 0, 1]))
    raises(InvalidSegment, stream(main=cod() + coc + qcd()), "COC: component 1 of 1", offset=COD_AT + len(cod()) + 4)


def test_qcc_component_out_of_range():
    qcc = seg(0xFF5D, bytes([3, 0x40, 8 << 3]))
    raises(InvalidSegment, stream(main=cod() + qcd() + qcc), "QCC: component 3 of 1", offset=SOT_AT + 4)


def test_rgn_on_missing_component():
    rgn = seg(0xFF5E, bytes([1, 0, 5]))
    raises(InvalidSegment, stream(main=cod() + qcd() + rgn), "RGN: component 1 of 1", offset=SOT_AT + 4)


def test_rgn_style_not_max_shift():
    rgn = seg(0xFF5E, bytes([0, 1, 5]))
    raises(InvalidSegment, stream(main=cod() + qcd() + rgn), "ROI style 1", offset=SOT_AT + 5)


def test_poc_unknown_progression():
    poc = seg(0xFF5F, bytes([0, 0, 0, 1, 1, 1, 7]))
    raises(InvalidSegment, stream(main=cod() + qcd() + poc), "POC: progression order 7", offset=SOT_AT + 10)


def test_poc_length_not_a_multiple():
    poc = seg(0xFF5F, bytes([0, 0, 0, 1, 1, 1, 0, 0]))
    raises(InvalidSegment, stream(main=cod() + qcd() + poc), "POC: length is not a multiple of 7", offset=SOT_AT + 4)


def test_siz_inside_main_header():
    raises(MisplacedMarker, stream(main=cod() + qcd() + siz()), "SIZ inside a main header", offset=SOT_AT)


def test_tlm_in_tile_header():
    tlm = seg(0xFF55, bytes([0, 0x00]))
    data = stream(tiles=tile_part(header=tlm))
    raises(MisplacedMarker, data, "TLM is not allowed in a first header", offset=SOT_AT + 12)


def test_not_a_marker_in_header():
    raises(InvalidSegment, stream(main=cod() + qcd() + b"\x12\x34"), "expected a marker, found 0x1234",
           offset=SOT_AT)


def test_ppm_without_enough_headers():
    # two tiles, two tile-parts, a PPM holding the packed headers of one
    ppm = seg(0xFF60, b"\x00" + struct.pack(">I", 1) + b"\x00")
    data = stream(main=cod() + qcd() + ppm, size=siz(w=16, tw=8),
                  tiles=tile_part(0, body=b"") + tile_part(1, body=b""))
    raises(InvalidSegment, data, "PPM: 1 packed headers for 2 tile-parts")


def test_ppm_nppm_past_the_end():
    ppm = seg(0xFF60, b"\x00" + struct.pack(">I", 9) + b"\x00")
    raises(InvalidSegment, stream(main=cod() + qcd() + ppm, tiles=tile_part(body=b"")), "PPM: Nppm 9 runs past")


# -------------------------------------------------------------- tile-parts

def test_psot_past_the_end_strict():
    data = stream(tiles=tile_part(psot=100))
    raises(TruncatedCodestream, data, "tile-part of 100 bytes runs past the end", offset=SOT_AT)


def test_psot_past_the_end_resilient():
    frame = Decoder().decode(stream(tiles=tile_part(psot=100)), strict=False)
    assert frame.components[0].shape == (8, 8)
    assert any("cut short" in str(w) for w in frame.warnings)


def test_psot_inside_tile_part_header():
    raises(InvalidSegment, stream(tiles=tile_part(psot=13)), "Psot 13 ends inside the tile-part header",
           offset=SOT_AT + 6)


def test_lsot_not_10():
    data = stream(tiles=seg(0xFF90, struct.pack(">HIBBB", 0, 16, 0, 1, 0)) + SOD + b"\x00")
    raises(InvalidSegment, data, "Lsot 11, must be 10", offset=SOT_AT + 2)


def test_tile_index_beyond_the_tiles():
    raises(InvalidSegment, stream(tiles=tile_part(isot=1)), "SOT: tile 1 of 1", offset=SOT_AT + 4)


def test_tpsot_out_of_order():
    raises(InvalidSegment, stream(tiles=tile_part(tpsot=1)), "part 1 where part 0 was due", offset=SOT_AT + 8)
    data = stream(tiles=tile_part(0, 0, 2) + tile_part(0, 0, 2))
    raises(InvalidSegment, data, "part 0 where part 1 was due", offset=SOT_AT + len(tile_part()) + 8)


def test_tile_missing_strict():
    data = stream(size=siz(w=16, tw=8), tiles=tile_part(0))
    raises(TruncatedCodestream, data, "tile 1 is missing")
    frame = Decoder().decode(data, strict=False)
    assert frame.components[0].shape == (8, 16) and frame.damaged


def test_garbage_where_sot_is_due():
    data = stream(tiles=tile_part() + b"\x12\x34")
    raises(MisplacedMarker, data, "expected SOT or EOC", offset=SOT_AT + len(tile_part()))


def test_packet_header_overrun():
    # an included code-block announcing 1 pass of 100 bytes in a body of 2 bytes
    data = stream(tiles=tile_part(body=b"\xc0\x00"))
    with pytest.raises(CodestreamError, match="tile 0, packet 0"):
        decode(data, strict=True)


def test_reduce_beyond_levels():
    raises(UnsupportedFeature, stream(), "reduce 1 is more than the 0 levels", reduce=1)


# -------------------------------------------------------------------- JP2

JP2H = box(b"jp2h", box(b"ihdr", struct.pack(">IIHBBBB", 8, 8, 1, 7, 7, 0, 0))
           + box(b"colr", b"\x01\x00\x00" + struct.pack(">I", 17)))


def test_jp2_baseline():
    out = decode(SIGNATURE + FTYP + JP2H + box(b"jp2c", stream()))
    assert out[0].shape == (8, 8) and np.all(out[0] == 128)


def test_jp2_without_jp2c():
    raises(TruncatedCodestream, SIGNATURE + FTYP + JP2H, "no Contiguous Codestream box")


def test_jp2_box_length_past_the_end():
    # the codestream box is read to the end of the file, as OpenJPEG does (tests/decode/test_jp2.py);
    # any other box running past the end is an error
    data = SIGNATURE + FTYP + struct.pack(">I", 5000) + b"jp2h" + JP2H[8:] + box(b"jp2c", stream())
    raises(TruncatedCodestream, data, "box b'jp2h' of 5000 bytes runs past the end",
           offset=len(SIGNATURE + FTYP))


def test_jp2_box_length_below_header():
    data = SIGNATURE + FTYP + struct.pack(">I", 4) + b"jp2h" + box(b"jp2c", stream())
    raises(InvalidSegment, data, "box b'jp2h' has length 4", offset=len(SIGNATURE + FTYP))


def test_jp2_ftyp_not_second():
    raises(InvalidSegment, SIGNATURE + JP2H + FTYP + box(b"jp2c", stream()), "File Type box")


def test_jp2_without_jp2h():
    raises(InvalidSegment, SIGNATURE + FTYP + box(b"jp2c", stream()), "no JP2 Header box")


def test_jp2_codestream_errors_carry_through():
    raises(MisplacedMarker, SIGNATURE + FTYP + JP2H + box(b"jp2c", stream()[2:]), "SOC")
