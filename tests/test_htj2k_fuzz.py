"""Fuzzing HTJ2K decoding: nothing but CodestreamError escapes, nothing hangs.

Two levels, as test_fuzz.py does for Part 1:

* whole streams: the mutations of test_fuzz.mutate (bit flips, bytes, truncation,
  segment lengths, Psot, SIZ fields, duplicated/removed segments, inserted bytes)
  of small HT conformance streams and of HT streams made by grk_compress, each
  decoded strict or resilient within the time limit;
* HT code-blocks: the segments of real HT blocks (cleanup, SigProp and MagRef,
  vertically causal, mixed tiles) with their bytes, lengths, pass counts and
  bit-plane counts mutated, laid out again and fed to tier-1's
  decode_codeblocks: every status is a known bit and every sample of the block
  is written. Run it also with NUMBA_BOUNDSCHECK=1 (see ARCHITECTURE.md).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import tier1
from cinegpu.decode.decoder import Decoder

from peers import Image, encode, have
from conftest import SHARED
from test_fuzz import fuzz

HT_STREAMS = SHARED / "conformance" / "htj2k" / "codestreams"
HIFI_HT = SHARED / "conformance" / "hifi" / "codestreams" / "hifi_ht1_02.j2k"

#: Small HT conformance streams (kinds: 5/3 and 9/7, layers, placeholders, refinement passes,
#: ROI, vertically causal, PPM, many tiles, mixed HT/EBCOT) and their mutation counts.
SEEDS = {
    "ds0_ht_01_b11": 160, "ds0_ht_02_b11": 160, "ds0_ht_03_b14": 120, "ds0_ht_09_b11": 160,
    "ds0_ht_11_b10": 80, "ds0_ht_12_b11": 80, "ds0_ht_14_b11": 120, "ds0_ht_16_b11": 120,
    "ds0_hm_15_b8": 120, "ds0_hm_06_b18": 80, "ds0_ht_06_b15": 80, "ds1_ht_01_b11": 120,
    "ds1_ht_06_b11": 160, "ds1_ht_07_b11": 120, "hifi_ht1_02": 120,
}
GRK_SEEDS = [
    ("grk-ht-tiles-sop-eph", Image(w=33, h=29), ["-M", "64", "-n", "3", "-t", "17,13", "-S", "-E"]),
    ("grk-ht-small-blocks-I", Image(w=31, h=27, n=1), ["-M", "64", "-n", "3", "-I", "-b", "4,8"]),
    ("grk-ht-prec-16bit", Image(w=35, h=30, n=1, bits=16, seed=9), ["-M", "64", "-n", "4", "-c", "[16,16]"]),
]
#: tier-1 statuses an HT block may end with
KNOWN = (tier1.STATUS_TOO_MANY_PASSES | tier1.STATUS_K_TOO_LARGE | tier1.STATUS_BAD_ROW
         | tier1.STATUS_BAD_SEGMENTS | tier1.STATUS_HT)


def _path(name: str) -> Path:
    return HIFI_HT if name == "hifi_ht1_02" else HT_STREAMS / f"{name}.j2k"


def test_seed_count():
    assert len(SEEDS) == 15 and sum(SEEDS.values()) == 1800
    if HT_STREAMS.is_dir():
        assert all(_path(n).stat().st_size <= 40_000 for n in SEEDS)


@pytest.mark.skipif(not HT_STREAMS.is_dir(), reason=f"{HT_STREAMS} is not present")
@pytest.mark.parametrize("name", sorted(SEEDS))
def test_fuzz_htj2k_conformance(name):
    fuzz(name, _path(name).read_bytes(), SEEDS[name])


@pytest.mark.parametrize("name", [s[0] for s in GRK_SEEDS])
def test_fuzz_htj2k_grk(name, tmp_path):
    if not have("grk_compress"):
        pytest.skip("grk_compress is not installed")
    _, img, args = next(s for s in GRK_SEEDS if s[0] == name)
    fuzz(name, encode("grk", img, args, tmp_path).read_bytes(), 120)


# --------------------------------------------------------------------------- code-blocks

def _blocks(data: bytes):
    """(table rows, per-block list of (segment bytes, passes)) of every coded block of a stream."""
    d = Decoder("cpu")
    segs, _ = d.tier2(d.prepare(data))
    rows, blocks = [], []
    for s in segs:
        for row in s.table:
            first, count = int(row[tier1.CB_SEG_FIRST]), int(row[tier1.CB_SEG_COUNT])
            if count == 0 or not row[tier1.CB_WIDTH] or not row[tier1.CB_STYLE] & tier1.CBLK_HT:
                continue
            pos, pieces = int(row[tier1.CB_DATA]), []
            for j in range(first, first + count):
                n = int(s.seg_lengths[j])
                pieces.append((bytes(s.coded[pos:pos + n]), int(s.seg_passes[j])))
                pos += n + 2
            rows.append(row.copy())
            blocks.append(pieces)
    return rows, blocks


def _mutate_block(rng: random.Random, row: np.ndarray, pieces: list) -> tuple[np.ndarray, list]:
    row = row.copy()
    pieces = [[bytearray(b), n] for b, n in pieces]
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["byte", "byte", "flip", "cut", "grow", "passes", "bps", "scup", "swap"])
        seg = rng.choice(pieces)
        if kind in ("byte", "flip", "scup") and not seg[0]:
            kind = "grow"
        if kind == "byte":
            seg[0][rng.randrange(len(seg[0]))] = rng.choice([0x00, 0xFF, 0x7F, 0x8F, 0x90, rng.randrange(256)])
        elif kind == "flip":
            seg[0][rng.randrange(len(seg[0]))] ^= 1 << rng.randrange(8)
        elif kind == "scup":  # the 12-bit Scup field at the end of a cleanup segment
            seg[0][-1] = rng.randrange(256)
        elif kind == "cut":
            del seg[0][rng.randrange(len(seg[0]) + 1):]
        elif kind == "grow":
            seg[0] += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
        elif kind == "passes":
            seg[1] = rng.choice([0, 1, 2, 3, 4, seg[1] + 1, seg[1] + 3, rng.randrange(200)])
        elif kind == "bps":
            row[tier1.CB_NUM_BPS] = rng.choice([0, 1, 2, 30, 31, int(row[tier1.CB_NUM_BPS]) + 5])
        else:
            pieces.insert(0, pieces.pop())
    return row, [(bytes(b), n) for b, n in pieces]


def _layout(rows, blocks):
    coded, lengths, passes, table = bytearray(), [], [], np.array(rows)
    out_size = 0
    for b, pieces in enumerate(blocks):
        w, h = int(table[b, tier1.CB_WIDTH]), int(table[b, tier1.CB_HEIGHT])
        table[b, tier1.CB_DATA] = len(coded)
        table[b, tier1.CB_SEG_FIRST] = len(lengths)
        table[b, tier1.CB_SEG_COUNT] = len(pieces)
        table[b, tier1.CB_OUT], table[b, tier1.CB_STRIDE] = out_size, w
        out_size += w * h
        for data, n in pieces:
            coded += data + b"\xff\xff"
            lengths.append(len(data))
            passes.append(n)
    return (np.frombuffer(bytes(coded), np.uint8), table, np.array(lengths, np.int32),
            np.array(passes, np.int32), out_size)


@pytest.mark.slow
@pytest.mark.skipif(not HT_STREAMS.is_dir(), reason=f"{HT_STREAMS} is not present")
@pytest.mark.parametrize("name", ["hifi_ht1_02", "ds1_ht_06_b11", "ds0_hm_06_b11", "ds0_ht_05_b11"])
def test_fuzz_ht_codeblocks(name):
    rows, blocks = _blocks(_path(name).read_bytes())
    rng = random.Random(name)
    picks = rng.sample(range(len(rows)), min(len(rows), 120))
    rows, blocks = [rows[i] for i in picks], [blocks[i] for i in picks]
    coded, table, lengths, passes, size = _layout(rows, blocks)
    intact = np.full(size, 0x5A5A5A5A, np.int32)
    assert not tier1.decode_codeblocks(coded, table, lengths, passes, intact).any()
    assert (intact != 0x5A5A5A5A).all()  # every sample of every block written
    seen, t0 = 0, time.perf_counter()
    for trial in range(40):
        mutated = [_mutate_block(random.Random(f"{name}/{trial}/{b}"), r, p) for b, (r, p) in
                   enumerate(zip(rows, blocks))]
        coded, table, lengths, passes, size = _layout([m[0] for m in mutated], [m[1] for m in mutated])
        out = np.full(size, 0x5A5A5A5A, np.int32)
        status = tier1.decode_codeblocks(coded, table, lengths, passes, out)
        assert not (status & ~KNOWN).any(), f"{name}/{trial}: unknown status bits {np.unique(status)}"
        assert (out != 0x5A5A5A5A).all(), f"{name}/{trial}: samples left unwritten"
        seen |= int(np.bitwise_or.reduce(status))
    assert time.perf_counter() - t0 < 30
    assert seen & tier1.STATUS_HT, "no mutation reached an HT status: the fuzzing is too gentle"
