"""Fuzzing HTJ2K decoding: nothing but CodestreamError escapes, nothing hangs.

Two levels, as test_fuzz.py does for Part 1:

* whole streams: the mutations of helpers.fuzz.mutate (bit flips, bytes, truncation,
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

import numpy as np
import pytest

from cinegpu.decode import tier1
from helpers.fuzz import HT_STREAMS, fuzz, ht_blocks, ht_layout, ht_stream_path, mutate_ht_block
from helpers.peers import Image, encode, have

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


def test_seed_count():
    assert len(SEEDS) == 15 and sum(SEEDS.values()) == 1800
    if HT_STREAMS.is_dir():
        assert all(ht_stream_path(n).stat().st_size <= 40_000 for n in SEEDS)


@pytest.mark.skipif(not HT_STREAMS.is_dir(), reason=f"{HT_STREAMS} is not present")
@pytest.mark.parametrize("name", sorted(SEEDS))
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_fuzz_htj2k_conformance(name):
    fuzz(name, ht_stream_path(name).read_bytes(), SEEDS[name])


@pytest.mark.parametrize("name", [s[0] for s in GRK_SEEDS])
def test_fuzz_htj2k_grk(name, tmp_path):
    if not have("grk_compress"):
        pytest.skip("grk_compress is not installed")
    _, img, args = next(s for s in GRK_SEEDS if s[0] == name)
    fuzz(name, encode("grk", img, args, tmp_path).read_bytes(), 120)


# --------------------------------------------------------------------------- code-blocks

@pytest.mark.slow
@pytest.mark.skipif(not HT_STREAMS.is_dir(), reason=f"{HT_STREAMS} is not present")
@pytest.mark.parametrize("name", ["hifi_ht1_02", "ds1_ht_06_b11", "ds0_hm_06_b11", "ds0_ht_05_b11"])
def test_fuzz_ht_codeblocks(name):
    rows, blocks = ht_blocks(ht_stream_path(name).read_bytes())
    rng = random.Random(name)
    picks = rng.sample(range(len(rows)), min(len(rows), 120))
    rows, blocks = [rows[i] for i in picks], [blocks[i] for i in picks]
    coded, table, lengths, passes, size = ht_layout(rows, blocks)
    intact = np.full(size, 0x5A5A5A5A, np.int32)
    assert not tier1.decode_codeblocks(coded, table, lengths, passes, intact).any()
    assert (intact != 0x5A5A5A5A).all()  # every sample of every block written
    seen, t0 = 0, time.perf_counter()
    for trial in range(40):
        mutated = [mutate_ht_block(random.Random(f"{name}/{trial}/{b}"), r, p) for b, (r, p) in
                   enumerate(zip(rows, blocks))]
        coded, table, lengths, passes, size = ht_layout([m[0] for m in mutated], [m[1] for m in mutated])
        out = np.full(size, 0x5A5A5A5A, np.int32)
        status = tier1.decode_codeblocks(coded, table, lengths, passes, out)
        assert not (status & ~KNOWN).any(), f"{name}/{trial}: unknown status bits {np.unique(status)}"
        assert (out != 0x5A5A5A5A).all(), f"{name}/{trial}: samples left unwritten"
        seen |= int(np.bitwise_or.reduce(status))
    assert time.perf_counter() - t0 < 30
    assert seen & tier1.STATUS_HT, "no mutation reached an HT status: the fuzzing is too gentle"
