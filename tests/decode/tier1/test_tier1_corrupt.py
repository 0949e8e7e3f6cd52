"""Tier-1 on corrupt input: a status or garbage values, never a crash, hang or out-of-bounds
access.  test_under_boundscheck reruns the fuzz cases in a subprocess with NUMBA_BOUNDSCHECK=1
and a private numba cache, so the checked code really is compiled."""

import os
import subprocess
import sys

import numpy as np
import pytest

from cinegpu.decode import tier1 as t1
from cinegpu.encode.tier1 import encode_codeblock
from conftest import TESTS
from helpers.tier1_blocks import block_row, encoded_block, fuzz_cases


def _run(coded, rows, seg_lengths, seg_passes, out_size=4096):
    out = np.zeros(out_size, np.int32)
    status = t1.decode_codeblocks(np.asarray(coded, np.uint8), np.array(rows, np.int64),
                                  np.array(seg_lengths, np.int32),
                                  np.array(seg_passes, np.int32), out)
    return status, out


def run_fuzz(seed=0, count=300):
    for coded, rows, lengths, passes, out_size in fuzz_cases(seed, count):
        status, _ = _run(np.frombuffer(coded, np.uint8), rows, lengths, passes,
                         max(out_size, 0))
        assert status.shape == (1,)


@pytest.mark.slow
def test_fuzz_never_crashes():
    run_fuzz()


def test_too_many_passes_decodes_the_valid_ones():
    """Passes past 3K - 2 are ignored, as OpenJPEG ignores them; K < 0 (zero bit-planes past
    Mb, which lenient tier-2 lets through) decodes none: zeros, as OpenJPEG and Grok."""
    data, lengths, passes, num_bps, v = encoded_block()
    ok, out_ok = _run(data, [block_row(num_bps=num_bps)], lengths, passes)
    extra = passes.copy()
    extra[-1] += 5
    status, out = _run(data, [block_row(num_bps=num_bps)], lengths, extra)
    assert ok[0] == 0 and status[0] == t1.STATUS_TOO_MANY_PASSES
    np.testing.assert_array_equal(out, out_ok)
    for k in (0, -1, -80):
        status, out = _run(data, [block_row(num_bps=k)], lengths, passes)
        assert status[0] == t1.STATUS_TOO_MANY_PASSES and not out.any()


def test_k_too_large():
    data, lengths, passes, _, _ = encoded_block()
    status, out = _run(data, [block_row(num_bps=t1.MAX_NUM_BPS + 1)], lengths, passes)
    assert status[0] == t1.STATUS_K_TOO_LARGE and not out.any()


@pytest.mark.parametrize("field,value", [
    (t1.CB_DATA, -1), (t1.CB_DATA, 1), (t1.CB_DATA, 1 << 40), (t1.CB_SEG_FIRST, 1),
    (t1.CB_SEG_FIRST, -1), (t1.CB_SEG_COUNT, 5), (t1.CB_SEG_COUNT, -1),
    (t1.CB_ORIENT, 4), (t1.CB_ORIENT, -1), (t1.CB_ROISHIFT, -1), (t1.CB_OUT, -1),
    (t1.CB_OUT, 4096 - 63), (t1.CB_WIDTH, 9), (t1.CB_WIDTH, -8), (t1.CB_HEIGHT, 4096),
    (t1.CB_STRIDE, 7), (t1.CB_STRIDE, 1 << 40), (t1.CB_WIDTH, 2048),
])
def test_bad_row(field, value):
    data, lengths, passes, num_bps, _ = encoded_block()
    row = block_row(num_bps=num_bps)
    row[field] = value
    status, out = _run(data, [row, block_row(num_bps=num_bps, out=100)], lengths, passes)
    assert status[0] == t1.STATUS_BAD_ROW, status
    assert status[1] == 0


def test_the_ebcot_driver_refuses_an_ht_block():
    """decode_codeblocks sends a table with HT rows to the mixed driver; the EBCOT-only one,
    given such a row anyway, refuses it (zeroed, STATUS_BAD_ROW) and decodes the others as
    the mixed one does."""
    from cinegpu.decode.tier1.codeblock import decode_codeblocks_ebcot, decode_codeblocks_mixed
    data, lengths, passes, num_bps, _ = encoded_block()
    rows = np.array([block_row(num_bps=num_bps, style=t1.CBLK_HT), block_row(num_bps=num_bps, out=100)], np.int64)
    args = (np.asarray(data, np.uint8), rows, np.array(lengths, np.int32), np.array(passes, np.int32))
    ebcot, mixed = np.full(4096, 5, np.int32), np.full(4096, 5, np.int32)
    status = decode_codeblocks_ebcot(*args, ebcot)
    assert status[0] == t1.STATUS_BAD_ROW and not ebcot[:64].any()
    assert decode_codeblocks_mixed(*args, mixed)[1] == status[1] == 0
    assert np.array_equal(ebcot[100:164], mixed[100:164]) and ebcot[100:164].any()
    # told (wrongly) that no row is HT, decode_codeblocks takes the EBCOT driver: refused, not misread
    hinted = np.full(4096, 5, np.int32)
    assert np.array_equal(t1.decode_codeblocks(*args, hinted, ht=False), status)
    assert np.array_equal(hinted, ebcot)
    looked = np.full(4096, 5, np.int32)
    assert t1.decode_codeblocks(*args, looked)[0] != t1.STATUS_BAD_ROW
    assert np.array_equal(looked, mixed)


def test_bad_segment_table():
    data, lengths, passes, num_bps, _ = encoded_block()
    for bad_lengths, bad_passes in [([len(data)], passes), ([-3], passes), (lengths, [-1]),
                                    ([lengths[0] - 1], passes)]:
        status, _ = _run(data, [block_row(num_bps=num_bps)], bad_lengths, bad_passes)
        assert status[0] == t1.STATUS_BAD_ROW
    status, _ = _run(data, [block_row(num_bps=num_bps)], lengths, passes[:0])
    assert status[0] == t1.STATUS_BAD_ROW  # seg_count 1 but no segment rows
    status, _ = _run(data, np.zeros((1, 5), np.int64), lengths, passes)
    assert status[0] == t1.STATUS_BAD_ROW  # too few columns


def test_wrong_bypass_segmentation():
    data, lengths, passes, num_bps, _ = encoded_block(t1.CBLK_BYPASS, (16, 16))
    assert len(lengths) > 2
    merged = np.array([lengths[0] + 2 + lengths[1]], np.int32)  # MQ and raw in one segment
    status, _ = _run(data, [block_row(num_bps=num_bps, style=t1.CBLK_BYPASS, w=16, h=16,
                                 stride=16)], merged, [passes[0] + passes[1]], 256)
    assert status[0] & t1.STATUS_BAD_SEGMENTS


def test_segsym_mismatch_reported():
    data, lengths, passes, num_bps, _ = encoded_block(t1.CBLK_SEGSYM)
    ok, _ = _run(data, [block_row(num_bps=num_bps, style=t1.CBLK_SEGSYM)], lengths, passes)
    assert ok[0] == 0
    noisy = np.frombuffer(np.random.default_rng(1).bytes(len(data) - 2) + b"\xff\xff", np.uint8)
    hits = 0
    for orient in range(4):
        status, _ = _run(noisy, [block_row(num_bps=num_bps, style=t1.CBLK_SEGSYM, orient=orient)],
                         lengths, passes)
        hits += bool(status[0] & t1.STATUS_SEGSYM)
    assert hits > 0


def test_segsym_of_the_last_pass_not_checked():
    """A block cut inside its last cleanup pass (rate control truncating it short of its
    segmentation symbol, which then reads as 1s, C.3.4) is not reported: only a symbol
    followed by more passes is checked (D.5)."""
    rng = np.random.default_rng(4)
    v = (rng.integers(-900, 900, (16, 16)) * (rng.random((16, 16)) < 0.8)).astype(np.int32)
    coded, rates, _, num_bps = encode_codeblock(v, 0, t1.CBLK_SEGSYM)
    cut_checked = 0
    for n in range(1, len(rates) + 1, 3):  # passes ending with a cleanup pass
        for short in (1, 2):
            length = int(rates[n - 1]) - short
            if length <= (rates[n - 2] if n > 1 else 0):
                continue
            data = np.frombuffer(bytes(coded[:length]) + b"\xff\xff", np.uint8)
            status, _ = _run(data, [block_row(num_bps=num_bps, style=t1.CBLK_SEGSYM, w=16, h=16, stride=16)],
                             [length], [n], 256)
            assert not status[0] & t1.STATUS_SEGSYM, (n, short)
            cut_checked += 1
    assert cut_checked > 5


def test_missing_padding_is_a_bad_row():
    data, lengths, passes, num_bps, _ = encoded_block()
    cut = data[:-1]
    status, _ = _run(cut, [block_row(num_bps=num_bps)], lengths, passes)
    assert status[0] == t1.STATUS_BAD_ROW


def test_decode_codeblock_checks_scratch_and_shape():
    data, lengths, passes, num_bps, _ = encoded_block()
    flags, vals, ctx = t1.make_scratch()
    out = np.zeros((8, 8), np.int32)
    small = np.zeros(10, np.int32)
    assert t1.decode_codeblock(data, 0, lengths, passes, out, num_bps, 0, 0, 0, small, vals,
                               ctx) == t1.STATUS_BAD_ROW
    big = np.zeros((2048, 2), np.int32)
    assert t1.decode_codeblock(data, 0, lengths, passes, big, num_bps, 0, 0, 0, flags, vals,
                               ctx) == t1.STATUS_BAD_ROW
    assert t1.decode_codeblock(data, 0, lengths, passes, out, num_bps, 0, 0, 0, flags, vals,
                               ctx) == 0
    # the contexts hold 64-bit words (tier1/mq.py): 32-bit ones would lose their MPS, so refused
    assert t1.decode_codeblock(data, 0, lengths, passes, out, num_bps, 0, 0, 0, flags, vals,
                               ctx.astype(np.int32)) == t1.STATUS_BAD_ROW
    # the flags are 64-bit column words (tier1/tables.py): 32-bit ones would lose the signs of
    # the neighbours beside, so refused; words of exactly the block's size, its border included
    # (ceil(8 / 4) + 2 stripes of 8 + 2 words), are enough
    assert t1.decode_codeblock(data, 0, lengths, passes, out, num_bps, 0, 0, 0, flags.astype(np.int32),
                               vals, ctx) == t1.STATUS_BAD_ROW
    exact = np.zeros((8 // 4 + 2) * (8 + 2), np.int64)
    again = np.zeros((8, 8), np.int32)
    assert t1.decode_codeblock(data, 0, lengths, passes, out, num_bps, 0, 0, 0, flags, vals, ctx) == 0
    assert t1.decode_codeblock(data, 0, lengths, passes, again, num_bps, 0, 0, 0, exact, vals, ctx) == 0
    assert out.any() and (again == out).all()
    assert t1.decode_codeblock(data, 0, lengths, passes, again, num_bps, 0, 0, 0, exact[:-1], vals,
                               ctx) == t1.STATUS_BAD_ROW


_CHILD = """
import sys
sys.path[:0] = [{here!r}, {tests!r}]  # this module's folder, and tests/ (conftest, helpers)
import test_tier1_corrupt as m
m.run_fuzz(seed=5, count=150)
m.test_too_many_passes_decodes_the_valid_ones()
m.test_bad_segment_table()
m.test_wrong_bypass_segmentation()
print("BOUNDSCHECK-OK")
"""


@pytest.mark.slow
def test_under_boundscheck(tmp_path, request):
    if os.environ.get("NUMBA_BOUNDSCHECK") == "1" and os.environ.get("CINEGPU_T1_CHILD"):
        pytest.skip("already the bounds-checked child")
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               CINEGPU_T1_CHILD="1")
    code = _CHILD.format(here=str(request.path.parent), tests=str(TESTS))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert "BOUNDSCHECK-OK" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]
