"""The CUDA tier-1 decoder (cinegpu.decode.tier1.gpu) against the numba one, bit for bit.

Every case runs on two back ends: "cuda" (the kernel on the GPU; marked gpu, skipped without
CuPy or a device) and "host" (the same tier1.cu compiled as C++ by g++, host_emulation.cpp;
skipped without g++), so the kernel's logic is checked on CPU-only CI too.  Compared: status
and every sample of `out` (untouched samples included) on encoder round trips of every style,
every truncation point, ROI, K limits, corrupt rows, random bytes, and a real frame's tables.

Timing (GPU machine): CINEGPU_T1_BENCH=/dir/with/*.j2c pytest -m gpu -s -k bench
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import tier1 as t1
from cinegpu.decode.tier1 import gpu as t1gpu
from cinegpu.encode.tier1 import encode_codeblock, segments
from conftest import SAMPLE, cuda_or_host, have_cuda
from helpers.tier1_blocks import SHAPES, STYLES, encoded_block, fuzz_cases, random_block
from helpers.tier1_decoder import Batch, compare, decode_cuda, decode_host

cupy = None
if have_cuda():
    import cupy

#: the kernel on the GPU (marked gpu) or compiled for the host (skipped without g++)
backend = cuda_or_host(decode_cuda, decode_host)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_round_trips(backend, style):
    """Every shape and orientation, whole and truncated at a random pass."""
    rng = np.random.default_rng(style + 100)
    batch = Batch()
    for shape in SHAPES:
        for orient, bits, density in [(0, 20, 1.0), (1, 12, 0.1), (2, 5, 0.5), (3, 16, 0.02)]:
            v = random_block(rng, shape, bits, density)
            coded, rates, _, num_bps = encode_codeblock(v, orient, style)
            for n in (len(rates), int(rng.integers(0, len(rates) + 1))):
                batch.add(coded, *segments(rates, style, n), shape, num_bps, orient, style)
    status, _ = batch.compare(backend)
    assert not status.any()


@pytest.mark.parametrize("style", STYLES)
def test_every_truncation_point(backend, style):
    rng = np.random.default_rng(style)
    batch = Batch(stride=64)
    for trial, shape in enumerate([(9, 7), (16, 16), (4, 30), (13, 5), (64, 64)]):
        orient = trial % 4
        v = random_block(rng, shape, 9, [1.0, 0.3, 0.05, 0.6, 0.5][trial])
        coded, rates, _, num_bps = encode_codeblock(v, orient, style)
        for n in range(len(rates) + 1):
            batch.add(coded, *segments(rates, style, n), shape, num_bps, orient, style)
    status, _ = batch.compare(backend)
    assert not status.any()


@pytest.mark.parametrize("flags_in", ["shared", "global"])
def test_rows_of_no_pass(backend, flags_in):
    """Rows with no coding pass (no segment, or segments of no pass: most of a low-rate frame's
    code-blocks) come out zero with status 0, their neighbours untouched, among rows that
    decode: the first launch zeroes their windows, the decoding threads skip them."""
    rng = np.random.default_rng(7)
    batch = Batch(stride=1100)
    for k, shape in enumerate(SHAPES):
        style = (0, t1.CBLK_HT, t1.CBLK_TERMALL, t1.CBLK_BYPASS)[k % 4]
        batch.add(b"", [], [], shape, 9, k % 4, style)                   # no segment
        batch.add(b"", [0, 0], [0, 0], shape, 12, (k + 1) % 4, style, roishift=k % 3)
        if style != t1.CBLK_HT:                                          # a decoded one beside them
            v = random_block(rng, shape, 9, 0.3)
            coded, rates, _, num_bps = encode_codeblock(v, k % 4, style)
            batch.add(coded, *segments(rates, style, len(rates)), shape, num_bps, k % 4, style)
    status, out = batch.compare(backend, flags_in=flags_in)
    assert not status.any() and out.any()


@pytest.mark.parametrize("flags_in", ["shared", "global"])
def test_more_planes_coded_than_signalled(backend, flags_in):
    """Passes past 3K - 2 (test_tier1_roundtrip's case) ignored, and K < 0 (zero bit-planes past
    Mb, tolerated) decoding to zeros."""
    rng = np.random.default_rng(21)
    batch = Batch(stride=32)
    for style in (0, t1.CBLK_BYPASS, t1.CBLK_VCAUSAL, 0x3F):
        v = random_block(rng, (13, 17), 9, 0.6)
        coded, rates, _, num_bps = encode_codeblock(v, style % 4, style)
        for fewer in (1, 2, num_bps, num_bps + 1, num_bps + 9):
            k = num_bps - fewer
            for n in range(max(3 * k - 2, 0), len(rates) + 1):
                batch.add(coded, *segments(rates, style, n), v.shape, k, style % 4, style)
    status, _ = batch.compare(backend, flags_in=flags_in)
    assert (status == t1.STATUS_TOO_MANY_PASSES).sum() > 20


def test_roi_and_magnitude_limits(backend):
    rng = np.random.default_rng(11)
    batch = Batch(stride=32)
    for roishift in (1, 3, 7, 29, 30, 31):
        s = min(roishift, 12)
        background = random_block(rng, (16, 16), s, 0.7)
        roi = rng.random((16, 16)) < 0.3
        coeffs = np.where(roi, random_block(rng, (16, 16), 6, 1.0) << s, background)
        coded, rates, _, num_bps = encode_codeblock(coeffs, 1, 0)
        for n in range(0, len(rates) + 1, 3):
            batch.add(coded, *segments(rates, 0, n), (16, 16), num_bps, 1, 0, roishift)
    v = np.array([[(1 << 30) - 1, -((1 << 30) - 1)], [1, 0]], np.int32)
    coded, rates, _, num_bps = encode_codeblock(v, 0, 0)
    assert num_bps == t1.MAX_NUM_BPS
    for k in (num_bps, num_bps + 1):  # K = 31: STATUS_K_TOO_LARGE, zeros
        batch.add(coded, *segments(rates, 0), v.shape, k, 0, 0, 2)
    for shape in [(0, 5), (5, 0), (1, 1)]:
        batch.add(b"", np.zeros(0, np.int32), np.zeros(0, np.int32), shape, 0, 0, 0)
    status, out = batch.compare(backend)
    assert status[-4] == t1.STATUS_K_TOO_LARGE and not status[:-4].any()


@pytest.mark.parametrize("flags_in", ["shared", "global"])
def test_fuzz_cases(backend, flags_in):
    """The corrupt-input cases of test_tier1_corrupt (random and mutated rows and streams)."""
    for coded, rows, lengths, passes, out_size in fuzz_cases(seed=3, count=300):
        compare(backend, np.frombuffer(coded, np.uint8), rows, lengths, passes, out_size,
                flags_in=flags_in)


@pytest.mark.parametrize("col", range(t1.CB_COLUMNS))
def test_hostile_row_values(backend, col):
    """Each column set to values that break it, next to a good row: same status, same out."""
    data, lengths, passes, num_bps, _ = encoded_block()
    for value in [-1, -8, 0, 1, 7, 9, 31, 100, 4096 - 63, 4096, 5000, 1 << 31, 1 << 40,
                  -(1 << 40), -(1 << 63)]:  # h = 1 << 62 overflows numba's check: a hang
        bad = [0, 0, len(lengths), num_bps, 0, 0, 0, 0, 8, 8, 8]
        bad[col] = value  # a style with CBLK_HT: the EBCOT bytes read as an HT block
        good = [0, 0, len(lengths), num_bps, 2, 0x3F, 0, 2000, 8, 8, 8]
        compare(backend, data, [bad, good], lengths, passes, 4096)


def test_bad_segment_tables(backend):
    data, lengths, passes, num_bps, _ = encoded_block(t1.CBLK_BYPASS, (16, 16))
    row = [0, 0, len(lengths), num_bps, 0, t1.CBLK_BYPASS, 0, 0, 16, 16, 16]
    merged = [lengths[0] + 2 + lengths[1]] + list(lengths[2:])
    for bad_lengths, bad_passes in [([len(data)], passes), ([-3], passes), (lengths, [-1]),
                                    ([lengths[0] - 1], passes), (lengths, passes[:0]),
                                    (merged, [passes[0] + passes[1]] + list(passes[2:])),
                                    (lengths, np.asarray(passes) + 1), (lengths, [1001])]:
        compare(backend, data, [row], bad_lengths, bad_passes, 256)
        compare(backend, data[:-1], [row], bad_lengths, bad_passes, 256)
    compare(backend, data, np.zeros((1, 5), np.int64), lengths, passes, 256)
    compare(backend, data, np.zeros((0, 11), np.int64), lengths, passes, 256)


@pytest.mark.parametrize("flags_in", ["shared", "global"])
def test_random_bytes_batch(backend, flags_in):
    """Many rows of random bytes and random parameters in one call, windows apart."""
    rng = np.random.default_rng(5)
    batch = Batch(stride=64)
    for _ in range(400):
        h, w = int(rng.integers(1, 65)), int(rng.integers(1, 65))
        nseg = int(rng.integers(0, 6))
        seg = rng.integers(0, 300, nseg)
        coded = rng.bytes(int(seg.sum()))
        batch.add(np.frombuffer(coded, np.uint8), seg, rng.integers(0, 40, nseg), (h, w),
                  int(rng.integers(0, 33)), int(rng.integers(0, 4)), int(rng.integers(0, 64)),
                  int(rng.integers(0, 4)))
    status, _ = batch.compare(backend, flags_in=flags_in)
    assert status.any() and (status == 0).any()


# -- real frames: tables from the decoder's tier-2 --------------------------------------------

def tile_tables(cs, plan, tile, ppm):
    """(coded, table, seg_lengths, seg_passes) of one tile: the first half of decode_tile."""
    import cinegpu.decode.tile as T
    from cinegpu.decode.tier2 import packets as P
    from cinegpu.decode.tier2.progression import packet_order

    body = T._tile_data(cs, tile)
    headers = T.packed_headers(cs, tile, ppm)
    order = packet_order(plan, cs.siz)
    table = plan.cb.copy()
    state = np.zeros((plan.cb.shape[0], 5), np.int64)
    nodes = max(plan.nodes, 1)
    big = np.int32(0x7FFFFFFF)
    incl_v, zbp_v = np.full(nodes, big, np.int32), np.full(nodes, big, np.int32)
    incl_l, zbp_l = np.zeros(nodes, np.int32), np.zeros(nodes, np.int32)
    shared = headers is None
    hdr = body if shared else headers
    pieces, n_pieces, status, _, _ = P.read_packets(
        hdr, (0, hdr.shape[0]), body, (0, body.shape[0]), shared, (order, plan.prec_pb, plan.pb, table, plan.cb_keep),
        (plan.layers, plan.sop, plan.eph, False), (incl_v, incl_l, zbp_v, zbp_l), state)
    assert status in (P.OK, P.ENDED)
    coded, seg_lengths, seg_passes = P.gather_segments(body, pieces, n_pieces, table)
    return coded, table, seg_lengths, seg_passes


def frame_tables(data):
    """One (coded, table, seg_lengths, seg_passes, out_size) call for all tiles of a frame."""
    from cinegpu.decode.codestream.header import tile_part_ppm_headers
    from cinegpu.decode.decoder import Decoder

    prep = Decoder().prepare(data)
    ppm = tile_part_ppm_headers(prep.cs)
    parts = []
    for plan, off in zip(prep.plans, prep.offsets):
        coded, table, sl, sp = tile_tables(prep.cs, plan, prep.cs.tiles[plan.index], ppm)
        parts.append((coded, table, sl, sp, off))
    pos = nseg = 0
    tables = []
    for coded, table, sl, _, off in parts:
        table = table.copy()
        table[:, t1.CB_DATA] += pos
        table[:, t1.CB_SEG_FIRST] += nseg
        table[:, t1.CB_OUT] += off
        tables.append(table)
        pos += coded.size
        nseg += sl.size
    return (np.concatenate([p[0] for p in parts]), np.concatenate(tables),
            np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts]),
            prep.size)


@pytest.mark.parametrize("layout", [dict(flags_in="shared"), dict(flags_in="shared", interleave=True),
                                    dict(flags_in="global"), dict(flags_in="global", interleave=True)])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_real_frame(backend, layout):
    coded, table, sl, sp, size = frame_tables(SAMPLE.read_bytes())
    assert table.shape[0] > 1000
    status, out = compare(backend, coded, table, sl, sp, size, **layout)
    assert not status.any() and out.any()


def test_scratch_entries_size_the_mask_and_flag_passes():
    """Part-1 blocks up to 64 x 64 need 16 * (h + 5) entries (the bit masks), HT and larger
    blocks (w + 2) * (h + 2) (the flags); without masks, flags for all; rows that cannot pass
    validation need nothing.  The shared pitch is an odd number of 64-bit words."""
    def table(*rows):
        t = np.zeros((len(rows), t1.CB_COLUMNS), np.int64)
        for r, (w, h, style) in zip(t, rows):
            r[t1.CB_WIDTH], r[t1.CB_HEIGHT], r[t1.CB_STYLE] = w, h, style
        return t

    assert t1gpu.scratch_entries(table((32, 32, 0))) == 16 * 37
    assert t1gpu.scratch_entries(table((32, 32, 0)), masks=False) == 34 * 34
    assert t1gpu.scratch_entries(table((64, 64, 0), (32, 32, 0))) == 16 * 69
    assert t1gpu.scratch_entries(table((32, 32, 0), (32, 32, t1.CBLK_HT))) == 34 * 34
    assert t1gpu.scratch_entries(table((128, 32, 0))) == 130 * 34
    assert t1gpu.scratch_entries(table((2000, 2, 0), (-1, 5, 0))) == 1
    for entries in (1, 592, 1156, 4356):
        pitch = t1gpu.shared_pitch(entries)
        assert pitch >= entries and pitch % 8 == 4


@pytest.mark.gpu
def test_launch_options_and_inputs():
    """lanes, sort, order and max_slots change only the speed; CuPy and numpy inputs alike."""
    coded, table, sl, sp, size = frame_tables(SAMPLE.read_bytes())
    want = np.zeros(size, np.int32)
    want_status = t1.decode_codeblocks(coded, table, sl, sp, want)
    for kw in [dict(lanes=32), dict(lanes=7, sort=True), dict(max_slots=100),
               dict(max_slots=1, warps=1), dict(warps=1, lanes=3, interleave=False),
               dict(scratch_bytes=1 << 20), dict(flags_in="global"),
               dict(flags_in="global", lanes=5, max_slots=999, interleave=False),
               dict(flags_in="global", lanes=32, sort=True),
               dict(order=t1gpu.work_order(table, sp), entries=t1gpu.scratch_entries(table)),
               dict(order=np.arange(table.shape[0], dtype=np.int32)[::-1].copy())]:
        out = cupy.zeros(size, cupy.int32)
        status = t1gpu.decode_codeblocks_cuda(cupy.asarray(coded), cupy.asarray(table),
                                              cupy.asarray(sl), cupy.asarray(sp), out, **kw)
        np.testing.assert_array_equal(status.get(), want_status)
        np.testing.assert_array_equal(out.get(), want)
    with pytest.raises(TypeError):
        t1gpu.decode_codeblocks_cuda(coded, table, sl, sp, np.zeros(size, np.int32))
    with pytest.raises(ValueError, match="order has"):
        t1gpu.decode_codeblocks_cuda(coded, table, sl, sp, cupy.zeros(size, cupy.int32),
                                     order=np.zeros(3, np.int32))


# -- timing ------------------------------------------------------------------------------------

def _best_ms(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def _best_gpu_ms(fn, repeat=10):
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    fn()
    best = float("inf")
    for _ in range(repeat):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop))
    return best


@pytest.mark.gpu
@pytest.mark.skipif(not os.environ.get("CINEGPU_T1_BENCH"), reason="CINEGPU_T1_BENCH unset")
def test_bench_frames():
    """Tier-1 of whole frames: CUDA (tables on the device, best of 10) vs numba on one core."""
    for path in sorted(Path(os.environ["CINEGPU_T1_BENCH"]).glob("*.j2c")):
        coded, table, sl, sp, size = frame_tables(path.read_bytes())
        want = np.zeros(size, np.int32)
        cpu_ms = _best_ms(lambda: t1.decode_codeblocks(coded, table, sl, sp, want), 3)
        dev = [cupy.asarray(a) for a in (coded, table, sl, sp)]
        out = cupy.zeros(size, cupy.int32)
        status = t1gpu.decode_codeblocks_cuda(*dev, out)
        assert not status.get().any() and np.array_equal(out.get(), want), path.name
        line = (f"{path.name}: {table.shape[0]} blocks, {coded.size} bytes, numba 1 core "
                f"{cpu_ms:.1f} ms; cuda ms:")
        entries = t1gpu.scratch_entries(table)
        for kw in [{}, dict(entries=entries), dict(entries=entries, sort=False),
                   dict(entries=entries, warps=1), dict(entries=entries, warps=8),
                   dict(entries=entries, lanes=2), dict(entries=entries, lanes=32),
                   dict(entries=entries, flags_in="global")]:
            ms = _best_gpu_ms(lambda: t1gpu.decode_codeblocks_cuda(*dev, out, **kw))
            label = {k: v for k, v in kw.items() if k != "entries"} or ""
            line += f" {'entries ' if kw else 'default'}{label} {ms:.2f} |"
        ms = _best_gpu_ms(lambda: t1gpu.decode_codeblocks_cuda(coded, table, sl, sp, out))
        line += f" numpy inputs {ms:.2f} |"
        ms = _best_gpu_ms(lambda: t1gpu.work_order(dev[1], dev[3], cupy))
        line += f" work_order alone {ms:.2f} |"
        ms = _best_gpu_ms(lambda: t1gpu.scratch_entries(dev[1], cupy))
        print(line + f" scratch_entries alone {ms:.2f}")


def test_lanes_by_codeblocks():
    """Every launch gets a lane count in 1..32, never fewer lanes for more code-blocks, and
    the table's thresholds each take effect at their own count."""
    counts = [0, 1, 6_708, 16_383, 16_384, 26_280, 99_999, 100_000, 830_000]
    lanes = [t1gpu.lanes_for(n) for n in counts]
    assert all(1 <= x <= 32 for x in lanes)
    assert lanes == sorted(lanes)
    for least, want in t1gpu.LANES_BY_CODEBLOCKS:
        assert t1gpu.lanes_for(least) == want
