"""HTJ2K (ITU-T T.814 | ISO/IEC 15444-15) decoding, piece by piece.

Markers (CAP, the HT code-block styles), the HT packet-header lengths of T.814
Annex B (placeholder passes, HT sets, mixed HT/EBCOT blocks) bit by bit, the
choice of the HT set tier-1 decodes, HT tier-1 output against EBCOT's on the
same image, the rule that keeps frames with HT blocks on the GPU tier-1, and a
real HTJ2K IMF frame. Whole-stream conformance is in test_conformance.py,
peers in test_htj2k_peers.py, bad input in test_htj2k_fuzz.py.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from cinegpu.decode import InvalidSegment, UnsupportedFeature, decode, tier1
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder, has_ht_blocks
from cinegpu.decode.tier1.ht import STATUS_HT_CORRUPT, ht_select
from cinegpu.decode.tier2 import bits, packets

from peers import Image, encode, have, image_planes
from conftest import SHARED
from test_errors import COD_AT, cod, qcd, seg, siz, stream

HT_STREAMS = SHARED / "conformance" / "htj2k" / "codestreams"
IMF_HT = SHARED / "dcp-samples" / "photon-imf-htj2k-1080p"

CAP15 = seg(0xFF50, struct.pack(">IH", 1 << 17, 0x0003))  # Pcap^15, Ccap15: HT only, MAGB 3


# --------------------------------------------------------------------------- markers

def test_ht_code_block_style_decodes():
    # the smallest stream (8 x 8, one empty packet) with every code-block an HT block
    out = decode(stream(main=CAP15 + cod(style=0x40) + qcd(), size=siz(rsiz=0x4000)))
    assert out[0].shape == (8, 8) and (out[0] == 128).all()


def test_cap_part15_is_parsed():
    cs = parse_codestream(stream(main=CAP15 + cod(style=0x40) + qcd(), size=siz(rsiz=0x4000)))
    assert cs.main.cap.ccap15 == 0x0003 and not cs.main.cap.ht_mixed
    assert cs.main.cod.spcod.ht


def test_cap_ccap15_follows_the_pcap_bits():
    # Pcap^2 and Pcap^15 set: Ccap2 comes first, then Ccap15 (bits from the most significant)
    cap = seg(0xFF50, struct.pack(">IHH", (1 << 30) | (1 << 17), 0x1234, 0xC000))
    cs = parse_codestream(stream(main=cap + cod(style=0xC0) + qcd(), size=siz(rsiz=0x4000)))
    assert cs.main.cap.ccap15 == 0xC000 and cs.main.cap.ht_mixed


def test_style_bit_7_alone_is_reserved():
    with pytest.raises(InvalidSegment, match="reserved code-block style bits 0x80") as info:
        decode(stream(main=cod(style=0x80) + qcd()))
    assert info.value.offset == COD_AT + 12


@pytest.mark.parametrize("style", [0xC1, 0xC4])
def test_mixed_with_segmenting_ebcot_styles_is_unsupported(style):
    with pytest.raises(UnsupportedFeature, match="15444-15.*BYPASS or TERMALL") as info:
        decode(stream(main=cod(style=style) + qcd()))
    assert info.value.offset == COD_AT + 12


# --------------------------------------------------------------------------- tier-2 lengths

def _bits(*fields: tuple[int, int]) -> np.ndarray:
    """Packet-header bytes holding (value, nbits) fields MSB first (no 0xFF produced here)."""
    text = "".join(format(v, f"0{n}b") if n else "" for v, n in fields)
    text += "0" * (-len(text) % 8)
    data = bytes(int(text[i:i + 8], 2) for i in range(0, len(text), 8)) + b"\x00" * 8
    assert b"\xff" not in data
    return np.frombuffer(data, np.uint8)


class Block:
    """One code-block's tier-2 state, fed packet by packet through packets._ht_lengths."""

    def __init__(self, style: int, lblock: int = 3):
        self.table = np.zeros((1, tier1.CB_COLUMNS), np.int64)
        self.table[0, tier1.CB_STYLE] = style
        self.st = np.array([1, lblock, 0, 0, packets._PLACEHOLDERS], np.int64)
        self.pieces = []

    def packet(self, npass: int, *fields: tuple[int, int]) -> bool:
        data = _bits(*fields)
        bs = bits.new_state()
        bits.start(bs, 0, data.shape[0])
        pieces = np.zeros((4, 5), np.int64)
        n, ok = packets._ht_lengths(bs, data, self.st, npass, 0, self.table, pieces, 0)
        used = sum(nb for _, nb in fields)
        assert bs[bits.POS] * 8 - bs[bits.CT] == used, "the lengths used another number of bits"
        self.pieces += [tuple(int(v) for v in pieces[j, [packets.P_SEG, packets.P_PASSES, packets.P_LENGTH]])
                        for j in range(n)]
        return ok

    @property
    def style(self) -> int:
        return int(self.table[0, tier1.CB_STYLE])


def test_ht_placeholders_and_cleanup_share_one_length():
    b = Block(0x40)
    # 3 placeholder passes + the cleanup: Lblock + floor(log2(4)) = 5 bits
    assert b.packet(4, (20, 5))
    # SigProp + MagRef: one segment, Lblock + 1 bits
    assert b.packet(2, (9, 4))
    # the next HT set: a cleanup (Lblock bits), then its refinement (Lblock + 1)
    assert b.packet(3, (5, 3), (7, 4))
    assert b.pieces == [(0, 4, 20), (1, 2, 9), (2, 1, 5), (3, 2, 7)]
    assert b.st.tolist() == [1, 3, 4, 9, 0]


def test_ht_sigprop_and_magref_join_across_packets():
    b = Block(0x40)
    b.packet(1, (6, 3))  # the cleanup alone
    b.packet(1, (4, 3))  # SigProp
    b.packet(1, (2, 3))  # MagRef: same segment as the SigProp
    assert b.pieces == [(0, 1, 6), (1, 1, 4), (1, 1, 2)]


def test_ht_cleanup_then_refinement_in_the_first_packet():
    b = Block(0x40)
    # passes 0..1: the cleanup (Lblock bits) and SigProp (Lblock bits)
    b.packet(2, (6, 3), (3, 3))
    assert b.pieces == [(0, 1, 6), (1, 1, 3)]


def test_ht_zero_length_widens_to_every_pass():
    b = Block(0x40)
    # 3 placeholders: the cleanup field (Lblock + 0 bits) reads 0, widened by floor(log2 3) = 1 bit
    b.packet(3, (0, 3), (0, 1))
    assert b.st[4] == packets._PLACEHOLDERS and b.st[3] == 3
    # then a cleanup after them: it joins the placeholders' segment 0
    b.packet(1, (5, 3))
    assert b.pieces == [(0, 3, 0), (0, 1, 5)]
    assert ht_select(np.array([5], np.int32), np.array([4], np.int32), 0, 1)[2] == 3


def test_ht_lblock_increments_apply():
    b = Block(0x40, lblock=6)
    b.packet(1, (40, 6))
    assert b.pieces == [(0, 1, 40)]


def test_mixed_block_with_msb_zero_is_ht():
    b = Block(0xC0, lblock=5)
    b.packet(1, (0b01010, 5))
    assert b.style == 0x40 and b.pieces == [(0, 1, 10)]


@pytest.mark.parametrize("lblock,length", [(3, 0b101), (5, 0b10100), (4, 1)])
def test_mixed_block_is_ebcot_otherwise(lblock, length):
    b = Block(0xC0, lblock=lblock)
    b.packet(1, (length, lblock))
    assert b.style == 0 and b.pieces == [(0, 1, length)]
    assert b.st.tolist() == [1, lblock, 1, 1, 1 << 20]


def test_mixed_ebcot_length_covers_every_pass():
    b = Block(0xC8, lblock=3)  # mixed, vertically causal
    # 3 passes: the cleanup-length field (3 bits, MSB 1: EBCOT) widened by 1 bit
    b.packet(3, (0b110, 3), (1, 1))
    assert b.style == 0x08 and b.pieces == [(0, 3, 0b1101)]


def test_ht_too_many_passes():
    b = Block(0x40)
    b.st[3] = 160
    b.st[4] = 0
    assert not b.packet(6)


# --------------------------------------------------------------------------- HT set choice

def _select(lengths, passes):
    return ht_select(np.array(lengths, np.int32), np.array(passes, np.int32), 0, len(lengths))


def test_select_placeholders_cleanup_refinement():
    # segment 0: 3 placeholders + cleanup (pass 3), segment 1: SigProp + MagRef
    c_off, lcup, z, r_off, lref, nref, st = _select([40, 9], [4, 2])
    assert (c_off, lcup, z, r_off, lref, nref, st) == (0, 40, 3, 42, 9, 2, 0)


def test_select_takes_the_last_set_with_data():
    # set 0 (cleanup + refinement), set 1 (cleanup + SigProp): set 1 is decoded
    c_off, lcup, z, r_off, lref, nref, st = _select([30, 5, 20, 3], [1, 2, 1, 1])
    assert (c_off, lcup, z, r_off, lref, nref, st) == (39, 20, 3, 61, 3, 1, 0)


def test_select_empty_set_keeps_the_last_one():
    # set 1 is empty (a cleanup of 0 bytes): set 0 and its refinement are decoded
    assert _select([30, 5, 0, 0], [1, 2, 1, 2])[:7] == (0, 30, 0, 32, 5, 2, 0)
    # bytes in the empty set's refinement break T.814
    assert _select([30, 5, 0, 4], [1, 2, 1, 2])[6] == STATUS_HT_CORRUPT


def test_select_nothing_coded():
    assert _select([0, 0], [3, 3])[2] == -1


def test_bad_scup_is_a_status():
    # one 4 x 4 block, a 2-byte cleanup segment whose Scup (12 bits) exceeds Lcup
    coded = np.array([0x00, 0xFF, 0xFF, 0xFF], np.uint8)
    table = np.zeros((1, tier1.CB_COLUMNS), np.int64)
    table[0, [tier1.CB_SEG_COUNT, tier1.CB_NUM_BPS, tier1.CB_STYLE]] = 1, 8, 0x40
    table[0, [tier1.CB_WIDTH, tier1.CB_HEIGHT, tier1.CB_STRIDE]] = 4, 4, 4
    out = np.full(16, 7, np.int32)
    status = tier1.decode_codeblocks(coded, table, np.array([2], np.int32), np.array([1], np.int32), out)
    assert status[0] == tier1.STATUS_HT and (out == 0).all()


# --------------------------------------------------------------------------- tier-1 output

@pytest.fixture(scope="module")
def grk_pair(tmp_path_factory):
    """The same image coded lossless by grk_compress with EBCOT and with HT blocks."""
    if not have("grk_compress"):
        pytest.skip("grk_compress is not installed")
    img = Image(w=71, h=45, n=3, seed=21)
    args = ["-n", "4", "-b", "16,16"]
    return [encode("grk", img, args + extra, tmp_path_factory.mktemp(f"pair{i}")).read_bytes()
            for i, extra in enumerate(([], ["-M", "64"]))], img


def test_ht_blocks_write_what_ebcot_blocks_write(grk_pair):
    (ebcot, ht), _ = grk_pair
    d = Decoder("cpu")
    got = [d.entropy_decode(d.prepare(data))[0] for data in (ebcot, ht)]
    assert d.prepare(ht).ht and not d.prepare(ebcot).ht
    assert np.abs(got[0]).max() > 100
    np.testing.assert_array_equal(got[0], got[1])


def test_ht_lossless_gives_the_image_back(grk_pair):
    (_, ht), img = grk_pair
    for got, want in zip(decode(ht), image_planes(img)):
        np.testing.assert_array_equal(got, want)


def test_single_block_api_matches_the_batch(grk_pair):
    (_, ht), _ = grk_pair
    d = Decoder("cpu")
    prep = d.prepare(ht)
    segs, _ = d.tier2(prep)
    s, plan = segs[0], prep.plans[0]
    batch = np.zeros(plan.coeff_size, np.int32)
    assert not tier1.decode_codeblocks(s.coded, s.table, s.seg_lengths, s.seg_passes, batch).any()
    scratch = tier1.make_scratch()
    for row in s.table:
        w, h = int(row[tier1.CB_WIDTH]), int(row[tier1.CB_HEIGHT])
        if not w or not h:
            continue
        first, count = int(row[tier1.CB_SEG_FIRST]), int(row[tier1.CB_SEG_COUNT])
        one = np.zeros((h, w), np.int32)
        st = tier1.decode_codeblock(s.coded, int(row[tier1.CB_DATA]), s.seg_lengths[first:first + count],
                                    s.seg_passes[first:first + count], one, int(row[tier1.CB_NUM_BPS]),
                                    int(row[tier1.CB_ORIENT]), int(row[tier1.CB_STYLE]), 0, *scratch)
        assert st == 0
        off, stride = int(row[tier1.CB_OUT]), int(row[tier1.CB_STRIDE])
        want = np.lib.stride_tricks.as_strided(batch[off:], (h, w), (stride * 4, 4))
        np.testing.assert_array_equal(one, want)


# --------------------------------------------------------------------------- GPU tier-1

@pytest.mark.skipif(not HT_STREAMS.is_dir(), reason=f"{HT_STREAMS} is not present")
def test_frames_with_ht_blocks_take_the_gpu_tier1():
    # the CUDA tier-1 decodes HT blocks too (tests/test_tier1_ht_gpu.py): no CPU detour
    d = Decoder("cpu")
    d.gpu_tier1 = True  # as with backend="cuda": the rule needs no device
    ht = d.prepare((HT_STREAMS / "ds0_ht_01_b11.j2k").read_bytes())
    mixed = d.prepare((HT_STREAMS / "ds0_hm_15_b8.j2k").read_bytes())
    part1 = d.prepare((SHARED / "conformance" / "part1" / "codestreams" / "p0_01.j2k").read_bytes())
    assert ht.ht and mixed.ht and not part1.ht
    assert has_ht_blocks(ht.plans) and not has_ht_blocks(part1.plans)
    assert d.tier1_on_gpu(ht) and d.tier1_on_gpu(mixed) and d.tier1_on_gpu(part1)
    d.gpu_tier1 = False
    assert not d.tier1_on_gpu(ht) and not d.tier1_on_gpu(part1)


# --------------------------------------------------------------------------- real footage

@pytest.mark.skipif(not IMF_HT.is_dir(), reason="../shared/dcp-samples is not present")
def test_htj2k_imf_frame_matches_opj_decompress(tmp_path):
    from cinegpu.media import open_source

    from peers import opj_reference

    if not have("opj_decompress"):
        pytest.skip("opj_decompress is not installed")
    with open_source(IMF_HT) as src:
        data = bytes(src.frame(7))
    path = tmp_path / "frame.j2c"
    path.write_bytes(data)
    got = decode(data)
    ref = opj_reference(path, tmp_path)
    assert [g.shape for g in got] == [(1080, 1920)] * 3
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
