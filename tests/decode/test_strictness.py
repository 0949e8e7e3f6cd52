"""The decoding policy (cinegpu.decode.strictness): strict raises the typed error; lenient (the
default) records it as a Fault (error, byte offset, tile), decoding goes on, and the text printed
for it is the one the reports, ``cinegpu info`` and ``cinegpu decode``'s warnings show.

Streams: the byte-built ones of helpers/codestreams.py, and a small encoded one whose tile-part body
is cut in half (Psot rewritten, EOC kept) so that tier-2 (B.10) runs out of packet data.
"""

from __future__ import annotations

import functools
import pickle
import struct

import numpy as np
import pytest

from cinegpu.decode import (
    Fault,
    InvalidSegment,
    MisplacedMarker,
    Strictness,
    TruncatedCodestream,
    decode,
)
from cinegpu.decode.codestream.describe import describe_codestream
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.strictness import LENIENT, STRICT
from helpers.codestreams import SOT_AT, cod, qcd, seg, siz, stream, tile_part

# ------------------------------------------------------------------ the policy alone


def test_strict_raises_the_error_itself():
    error = InvalidSegment("COD: bad", 45)
    with pytest.raises(InvalidSegment) as info:
        Strictness(True).fault(error, [])
    assert info.value is error


def test_lenient_records_a_typed_fault():
    faults: list[Fault] = []
    error = TruncatedCodestream("SOT runs past the end", 65)
    got = Strictness(False).fault(error, faults, tile=3, text="SOT at byte 65 cut short; rest ignored")
    assert faults == [got]
    assert got.error is error and got.offset == 65 and got.tile == 3
    assert str(got) == "SOT at byte 65 cut short; rest ignored"
    assert str(Fault(error)) == "SOT runs past the end at byte 65"  # without text: the error's message
    assert LENIENT.fault(error) == Fault(error)  # no list: returned only


def test_policy_from_the_strict_argument():
    assert Strictness.of(True) is STRICT and Strictness.of(False) is LENIENT
    assert Strictness.of(LENIENT) is LENIENT
    assert STRICT.strict and not LENIENT.strict


def test_fault_survives_pickling():
    """Reports cross process boundaries in the pipeline: class, offset and text are kept."""
    fault = Fault(TruncatedCodestream("tile 0, packet 2: packet body runs past the end", 98), 0,
                  "tile 0, packet 2: packet body runs past the end")
    back = pickle.loads(pickle.dumps(fault))
    assert type(back.error) is TruncatedCodestream and back.offset == 98 and back.tile == 0
    assert str(back) == str(fault) and str(back.error) == str(fault.error)


# ------------------------------------------------------------------ the codestream walk (A.4)


def test_tile_part_past_the_end():
    data = stream(tiles=tile_part(psot=100))
    with pytest.raises(TruncatedCodestream, match="tile-part of 100 bytes runs past the end") as info:
        parse_codestream(data)
    assert info.value.offset == SOT_AT
    frame = Decoder().decode(data, strict=False)
    assert frame.components[0].shape == (8, 8)
    fault, no_eoc = frame.warnings  # the cut tile-part took the EOC with it
    assert isinstance(fault.error, TruncatedCodestream) and fault.offset == SOT_AT and fault.tile == 0
    assert str(fault) == f"tile 0 part 0 cut short by {SOT_AT + 100 - len(data)} bytes"
    assert str(no_eoc) == f"no EOC marker: data ends at byte {len(data)}" and no_eoc.offset == len(data)
    text = describe_codestream(data)
    assert f"  warning: {fault}\n  warning: {no_eoc}" in text


def test_garbage_where_sot_is_due():
    data = stream(tiles=tile_part() + b"\x12\x34")
    at = SOT_AT + len(tile_part())
    frame = Decoder().decode(data, strict=False)
    assert frame.components[0].shape == (8, 8)
    (fault,) = frame.warnings
    assert isinstance(fault.error, MisplacedMarker) and fault.offset == at
    assert str(fault) == f"expected SOT or EOC at byte {at}; rest ignored"
    with pytest.raises(MisplacedMarker, match="expected SOT or EOC, found 0x1234") as info:
        decode(data, strict=True)
    assert str(info.value) == str(fault.error) and info.value.offset == fault.offset


def test_damaged_tile_part_header_keeps_the_tiles_before():
    two = stream(size=siz(w=16, tw=8), tiles=tile_part(0) + tile_part(1, header=seg(0xFF52, b"\x00")))
    with pytest.raises(InvalidSegment, match="COD: segment too short"):
        decode(two, strict=True)
    frame = Decoder().decode(two, strict=False)
    assert frame.components[0].shape == (8, 16)
    (fault,) = frame.warnings
    assert isinstance(fault.error, InvalidSegment) and fault.tile == 1
    assert fault.offset == SOT_AT + len(tile_part(0)) + 12 + 4 + 1  # after Scod, where SGcod is due
    assert str(fault) == f"tile 1 part 0: COD: segment too short, needs 1 more bytes at byte {fault.offset}; " \
                         "rest of the codestream ignored"
    assert [(r.tile, [str(f) for f in r.faults]) for r in frame.reports] == [(1, ["tile missing"]), (0, [])]


def test_missing_tile():
    data = stream(size=siz(w=16, tw=8), tiles=tile_part(0))
    with pytest.raises(TruncatedCodestream, match="tile 1 is missing"):
        decode(data, strict=True)
    frame = Decoder().decode(data, strict=False)
    (report,) = [r for r in frame.reports if r.faults]
    (fault,) = report.faults
    assert report.tile == 1 and fault.tile == 1 and isinstance(fault.error, TruncatedCodestream)
    assert str(fault) == "tile missing"


def test_warnings_of_both_modes_are_typed():
    """Skipped markers and bytes after EOC are noted whatever the mode, as faults too."""
    data = stream(main=cod_qcd_with_unknown_marker()) + b"\x00\x00\x00"
    for strict in (True, False):
        frame = Decoder().decode(data, strict=strict)
        assert [str(w) for w in frame.warnings] == [f"skipped unknown marker 0xFF7F at byte {SOT_AT}",
                                                    "3 bytes after EOC ignored"]
        assert [type(w.error) for w in frame.warnings] == [InvalidSegment, InvalidSegment]
        assert [w.offset for w in frame.warnings] == [SOT_AT, len(data) - 3]


def cod_qcd_with_unknown_marker() -> bytes:
    from helpers.codestreams import cod, qcd

    return cod() + qcd() + seg(0xFF7F, b"\x01\x02")  # FF7F: no marker of T.800 (A.1)


def test_main_header_cut_short():
    data = stream()[:SOT_AT]
    with pytest.raises(TruncatedCodestream):
        decode(data, strict=True)
    frame = Decoder().decode(data, strict=False)
    assert frame.components[0].shape == (8, 8)
    (fault,) = frame.warnings
    assert fault.offset == SOT_AT and fault.tile is None
    assert str(fault) == f"main header cut short ({fault.error}); no tile data"
    assert [str(f) for r in frame.reports for f in r.faults] == ["tile missing"]


# ------------------------------------------------------------------ tier-2 (B.10)


@functools.cache
def _cut_stream() -> tuple[bytes, int]:
    """A 32 x 32 reversible codestream with its tile-part body cut in half, and where the body starts."""
    from cinegpu.encode import encode

    img = (np.arange(32 * 32).reshape(32, 32) * 7 % 256).astype(np.uint8)
    full = encode(img, reversible=True, levels=1, backend="cpu")
    part = parse_codestream(full).tiles[0].parts[0]
    cut = part.start + (part.end - part.start) // 2
    data = bytearray(full[:cut])
    struct.pack_into(">I", data, part.offset + 6, cut - part.offset)  # Psot
    return bytes(data + b"\xff\xd9"), part.start


def test_packet_data_running_out(capsys, tmp_path):
    data, body = _cut_stream()
    with pytest.raises(TruncatedCodestream, match="packet body runs past the end of the tile data") as info:
        decode(data, strict=True)
    frame = Decoder().decode(data, strict=False)
    assert frame.components[0].shape == (32, 32) and frame.damaged and not frame.warnings
    (fault,) = frame.reports[0].faults
    assert type(fault.error) is TruncatedCodestream and fault.tile == 0
    assert fault.offset == info.value.offset and fault.offset >= body
    assert str(fault) == info.value.what  # the report's line: the message without " at byte N"
    assert str(fault).startswith("tile 0, packet ")

    from cinegpu.player.cli import main

    path = tmp_path / "cut.j2c"
    path.write_bytes(data)
    assert main(["decode", str(path), "-o", str(tmp_path / "out.pgx")]) == 0  # lenient by default
    assert f"{path}: warning: {fault}\n" in capsys.readouterr().err
    assert main(["decode", str(path), "-o", str(tmp_path / "out.pgx"), "--strict"]) == 2
    assert f"{path}: {info.value}\n" in capsys.readouterr().err


# ------------------------------------------------------------------ absent tiles that hold no samples


def _subsampled_two_tiles(*tiles: int) -> bytes:
    """Two 1 x 1 tiles over a 2 x 1 image of one component sub-sampled 2:1 across (XRsiz = 2):
    tile 0 holds the component's one sample (x = 0), tile 1 none (B-12: ceil(1/2) = ceil(2/2))."""
    return stream(size=siz(w=2, h=1, tw=1, th=1, comps=((7, 2, 1),)), tiles=b"".join(tile_part(t) for t in tiles))


def test_absent_tile_holding_no_samples_is_not_missing():
    """T.800 B.3: a tile-component narrower than the sub-sampling is empty; leaving its tile
    out loses nothing (as in the b2_mono case of issue 15), so strict decoding takes it."""
    data = _subsampled_two_tiles(0)
    (plane,) = decode(data)
    assert plane.shape == (1, 1) and plane[0, 0] == 128  # zero coefficient, DC shift (G.1.2)
    frame = Decoder().decode(data)
    assert not frame.damaged and [r.tile for r in frame.reports] == [0]


def test_absent_tile_holding_samples_is_still_missing():
    data = _subsampled_two_tiles(1)
    with pytest.raises(TruncatedCodestream, match="tile 0 is missing"):
        decode(data, strict=True)
    frame = Decoder().decode(data, strict=False)
    assert frame.damaged
    assert [(r.tile, [str(f) for f in r.faults]) for r in frame.reports] == [(0, ["tile missing"]), (1, [])]


def test_absent_tile_empty_only_at_the_reduced_resolution():
    """At reduce 1 a one-sample-wide tile at an odd position holds nothing (B-14); at reduce 0 it does."""
    data = stream(size=siz(w=2, h=2, tw=1, th=2), main=cod(levels=1) + qcd(levels=1),
                  tiles=tile_part(0))
    with pytest.raises(TruncatedCodestream, match="tile 1 is missing"):
        decode(data, strict=True)
    (plane,) = decode(data, reduce=1)
    assert plane.shape == (1, 1)
