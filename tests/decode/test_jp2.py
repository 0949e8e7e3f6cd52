"""JP2 files as the peers read them: cdef channel order and alpha, and the malformations that
OpenJPEG and Grok accept (decoded with a LenientWarning, same pixels as the clean file)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import warnings

import numpy as np
import pytest

from cinegpu.decode import CodestreamError, InvalidSegment, LenientWarning, TruncatedCodestream, decode
from cinegpu.decode.decoder import Decoder
from helpers.jp2_files import FTYP, SIGNATURE, box, cdef, cmap, codestream, colr, ihdr, jp2, pclr, planes
from helpers.pgx import read_pgx

H, W = 19, 24
PEERS = [t for t in ("opj_decompress", "grk_decompress") if shutil.which(t)]


@pytest.fixture(scope="module")
def rgba():
    """Four distinct 8-bit planes and their lossless codestream."""
    p = planes([(H, W)] * 4)
    return p, codestream(p)


@pytest.fixture(scope="module")
def rgb():
    p = planes([(H, W)] * 3, seed=2)
    return p, codestream(p)


@pytest.fixture(scope="module")
def palette():
    """A 1-component index image, a 16-entry 3-column palette and the codestream."""
    idx = (planes([(13, 17)], seed=3)[0] % 16).astype(np.uint8)
    table = np.array([[i * 16, 255 - i * 16, (i * 37) % 256] for i in range(16)])
    return idx, table, codestream([idx])


def peer_output(tool: str, data: bytes, folder) -> list[np.ndarray]:
    """What ``tool`` (opj_decompress or grk_decompress) writes per component (PGX)."""
    src = folder / "in.jp2"
    src.write_bytes(data)
    for old in folder.glob("out_*.pgx"):
        old.unlink()
    p = subprocess.run([tool, "-i", str(src), "-o", str(folder / "out.pgx")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    files = sorted(folder.glob("out_*.pgx"), key=lambda f: int(f.stem.rpartition("_")[2]))
    return [read_pgx(f) for f in files]


def same(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    return len(got) == len(want) and all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))


def quiet_decode(data: bytes) -> list[np.ndarray]:
    """decode() that fails if it warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", LenientWarning)
        return decode(data)


# ------------------------------------------------------------------ cdef

def test_cdef_puts_colour_channels_in_association_order(rgb, tmp_path):
    p, cs = rgb
    data = jp2(cs, ihdr(H, W, 3) + colr(16) + cdef((0, 0, 3), (1, 0, 2), (2, 0, 1)))
    frame = Decoder().decode(data)
    assert same(frame.components, [p[2], p[1], p[0]]) and frame.alpha is None
    for tool in PEERS:
        assert same(frame.components, peer_output(tool, data, tmp_path)), tool


def test_cdef_alpha_goes_after_the_colour_channels(rgba, tmp_path):
    p, cs = rgba
    # stored A, R, G, B: the opacity channel (type 1) applies to the whole image (association 0)
    data = jp2(cs, ihdr(H, W, 4) + colr(16) + cdef((0, 1, 0), (1, 0, 1), (2, 0, 2), (3, 0, 3)))
    frame = Decoder().decode(data)
    assert same(frame.components, [p[1], p[2], p[3], p[0]])
    assert frame.alpha == 3 and not Decoder().decode(data).damaged
    for tool in PEERS:
        assert same(frame.components, peer_output(tool, data, tmp_path)), tool


def test_cdef_in_order_names_the_alpha(rgba):
    p, cs = rgba
    data = jp2(cs, ihdr(H, W, 4) + colr(16) + cdef((0, 0, 1), (1, 0, 2), (2, 0, 3), (3, 2, 0)))
    frame = Decoder().decode(data)
    assert same(frame.components, p) and frame.alpha == 3


def test_cdef_is_not_applied_to_selected_components(rgb):
    p, cs = rgb
    data = jp2(cs, ihdr(H, W, 3) + colr(16) + cdef((0, 0, 3), (1, 0, 2), (2, 0, 1)))
    assert same(decode(data, components=[0, 1, 2]), p)


@pytest.mark.parametrize("entries, match", [
    (((0, 0, 1), (1, 0, 2), (3, 0, 3)), "cdef: channel 3 of 3"),
    (((0, 0, 1), (1, 0, 2), (1, 0, 3)), "cdef: channel 2 not described"),
    (((0, 0, 1), (1, 0, 2)), "cdef: channel 2 not described"),
    (((0, 0, 1), (1, 0, 2), (2, 0, 4)), "cdef: channel 2 associated with colour 4 of 3"),
    ((), "cdef: no channel described"),
])
def test_bad_cdef_is_an_error(rgb, entries, match):
    _, cs = rgb
    with pytest.raises(InvalidSegment, match=match):
        decode(jp2(cs, ihdr(H, W, 3) + colr(16) + cdef(*entries)))


@pytest.mark.parametrize("entries", [
    ((0, 0, 1), (1, 0, 2), (2, 0, 3), (1, 0, 2)),
    ((0, 0, 3), (1, 0, 2), (2, 0, 1), (0, 0, 2)),
    ((2, 0, 1), (0, 0, 2), (1, 0, 3), (2, 0, 3), (0, 1, 0)),
])
def test_cdef_describing_a_channel_twice_decodes_as_openjpeg(rgb, entries, tmp_path):
    """I.5.3.6 wants each channel described once; OpenJPEG decodes a cdef that describes one
    twice, its swaps made in order: strict refuses, lenient gives OpenJPEG's channels."""
    _, cs = rgb
    data = jp2(cs, ihdr(H, W, 3) + colr(16) + cdef(*entries))
    with pytest.raises(InvalidSegment, match="described twice"):
        decode(data, strict=True)
    with pytest.warns(LenientWarning, match="described twice"):
        got = decode(data)
    if "opj_decompress" in PEERS:
        assert same(got, peer_output("opj_decompress", data, tmp_path))


def test_second_cdef_is_an_error(rgb):
    _, cs = rgb
    one = cdef((0, 0, 1), (1, 0, 2), (2, 0, 3))
    with pytest.raises(InvalidSegment, match="a second cdef box"):
        decode(jp2(cs, ihdr(H, W, 3) + colr(16) + one + one))


def test_palette_then_cdef(palette):
    idx, table, cs = palette
    header = ihdr(13, 17, 1) + colr(16) + pclr(table) + cmap((0, 1, 0), (0, 1, 1), (0, 1, 2))
    plain = quiet_decode(jp2(cs, header))
    assert same(plain, [table[idx, k].astype(np.uint8) for k in range(3)])
    swapped = quiet_decode(jp2(cs, header + cdef((0, 0, 2), (1, 0, 1), (2, 0, 3))))
    assert same(swapped, [plain[1], plain[0], plain[2]])


# ------------------------------------------------------------ leniency

def codestream_box_at(data: bytes) -> int:
    return data.rindex(b"jp2c") - 4


@pytest.mark.parametrize("tail, what, peers", [
    (b"junk!", "5 bytes after the codestream box ignored", PEERS),
    (struct.pack(">I", 4096) + b"junkjunkjunk", "16 bytes after the codestream box ignored", PEERS),
    # OpenJPEG reads the boxes after the codestream and fails on this one ("invalid box size");
    # Grok ignores it, and so does cinegpu
    (struct.pack(">I", 3) + b"abcd", "8 bytes after the codestream box ignored",
     [t for t in PEERS if t != "opj_decompress"]),
])
def test_stray_bytes_after_the_codestream_are_ignored(rgb, tail, what, peers, tmp_path):
    p, cs = rgb
    clean = jp2(cs, ihdr(H, W, 3) + colr(16))
    with pytest.warns(LenientWarning, match=what):
        got = decode(clean + tail)
    assert same(got, quiet_decode(clean)) and same(got, p)
    for tool in peers:
        assert same(got, peer_output(tool, clean + tail, tmp_path)), tool


def test_boxes_after_the_codestream_are_fine(rgb):
    p, cs = rgb
    assert same(quiet_decode(jp2(cs, ihdr(H, W, 3) + colr(16), after=box(b"xml ", b"<a/>"))), p)


def test_codestream_box_past_the_end_of_the_file(rgb, tmp_path):
    p, cs = rgb
    clean = jp2(cs, ihdr(H, W, 3) + colr(16))
    at = codestream_box_at(clean)
    long = clean[:at] + struct.pack(">I", 100000) + clean[at + 4:]
    with pytest.warns(LenientWarning, match="codestream box's 100000 bytes run past the end of the file"):
        got = decode(long)
    assert same(got, p)
    for tool in PEERS:
        assert same(got, peer_output(tool, long, tmp_path)), tool


def test_codestream_box_cut_short_inside_its_data_still_fails_strict(rgb):
    """The box's length is tolerated, the codestream cut inside its tile data is not: strict
    raises; lenient conceals what is lost and warns of both."""
    _, cs = rgb
    clean = jp2(cs, ihdr(H, W, 3) + colr(16))
    at = codestream_box_at(clean)
    cut = clean[:at] + struct.pack(">I", 100000) + clean[at + 4: at + 8 + len(cs) // 2]
    with pytest.warns(LenientWarning), pytest.raises(CodestreamError):
        decode(cut, strict=True)
    with pytest.warns(LenientWarning) as seen:
        decode(cut)
    lines = [str(w.message) for w in seen]
    assert any("run past the end of the file" in line for line in lines), lines
    assert any("cut short" in line or "runs past the end of the tile data" in line for line in lines), lines


def test_cmap_outside_jp2h_is_read(palette, tmp_path):
    idx, table, cs = palette
    header = ihdr(13, 17, 1) + colr(16) + pclr(table)
    mapping = cmap((0, 1, 0), (0, 1, 1), (0, 1, 2))
    clean = quiet_decode(jp2(cs, header + mapping))
    data = jp2(cs, header)
    at = codestream_box_at(data)
    data = data[:at] + mapping + data[at:]
    with pytest.warns(LenientWarning, match="a cmap box outside the JP2 Header box read"):
        got = decode(data)
    assert same(got, clean)
    for tool in PEERS:
        assert same(got, peer_output(tool, data, tmp_path)), tool


def test_cdef_outside_jp2h_is_read(rgb):
    p, cs = rgb
    data = jp2(cs, ihdr(H, W, 3) + colr(16), after=b"")
    at = codestream_box_at(data)
    data = data[:at] + cdef((0, 0, 3), (1, 0, 2), (2, 0, 1)) + data[at:]
    with pytest.warns(LenientWarning, match="a cdef box outside"):
        assert same(decode(data), [p[2], p[1], p[0]])


def test_header_box_before_jp2h_is_ignored(palette, tmp_path):
    # as OpenJPEG: the cmap is ignored, then the palette without cmap is dropped (indices)
    idx, table, cs = palette
    data = jp2(cs, ihdr(13, 17, 1) + colr(16) + pclr(table), before=cmap((0, 1, 0), (0, 1, 1), (0, 1, 2)))
    with pytest.warns(LenientWarning) as record:
        got = decode(data)
    messages = " | ".join(str(r.message) for r in record)
    assert "a cmap box before the JP2 Header box ignored" in messages
    assert "a pclr box without a cmap box ignored" in messages
    assert same(got, [idx])
    for tool in [t for t in PEERS if t == "opj_decompress"]:  # grk_decompress writes no PGX of it
        assert same(got, peer_output(tool, data, tmp_path)), tool


# ------------------------------------------------------- still errors

@pytest.mark.parametrize("make, cls, match", [
    (lambda cs: SIGNATURE + FTYP + b"\x00\x00\x00\x05jp2h" + box(b"jp2c", cs), InvalidSegment, "has length 5"),
    (lambda cs: SIGNATURE + FTYP + box(b"jp2h", ihdr(H, W, 3)[:-3]) + box(b"jp2c", cs), CodestreamError, "ihdr"),
    (lambda cs: SIGNATURE + FTYP + box(b"jp2h", ihdr(H, W, 3)) + b"\x00\x00", TruncatedCodestream, "cut short"),
    (lambda cs: SIGNATURE + FTYP + box(b"jp2h", ihdr(H, W, 3) + b"\x00\x00\x00\x20colr\x01")
     + box(b"jp2c", cs), TruncatedCodestream, "colr"),
    (lambda cs: SIGNATURE + FTYP + box(b"jp2h", box(b"cmap", b"\x00\x00\x01")) + box(b"jp2c", cs),
     InvalidSegment, "cmap: length is not a multiple of 4"),
])
def test_malformed_boxes_before_the_codestream_still_raise(rgb, make, cls, match):
    _, cs = rgb
    with pytest.raises(cls, match=match):
        decode(make(cs))


def test_mutated_jp2_boxes_raise_only_codestream_errors(palette):
    """Bytes of the box layer (signature to the codestream's start) changed at random: decode()
    returns or raises a CodestreamError, quickly, whatever the boxes say."""
    import time

    idx, table, cs = palette
    clean = jp2(cs, ihdr(13, 17, 1) + colr(16) + pclr(table) + cmap((0, 1, 0), (0, 1, 1), (0, 1, 2))
                + cdef((0, 0, 2), (1, 0, 1), (2, 0, 3)), after=box(b"xml ", b"<a/>"))
    boxes_end = codestream_box_at(clean) + 10
    rng = np.random.default_rng(15)
    t0 = time.perf_counter()
    outcomes = set()
    for _ in range(300):
        data = bytearray(clean)
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(0, boxes_end))
            data[at] = int(rng.integers(0, 256)) if rng.random() < 0.7 else data[at] ^ 0x80
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LenientWarning)
            try:
                decode(bytes(data))
                outcomes.add("ok")
            except CodestreamError as exc:
                outcomes.add(type(exc).__name__)
    assert time.perf_counter() - t0 < 30
    assert "ok" in outcomes and len(outcomes) > 2, outcomes
