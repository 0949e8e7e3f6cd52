"""Several frames' code-blocks in one tier-1 launch (``tier1.gpu.RowBatch``): the batch decodes
to exactly what one decode per tile gives. On the host the numba decoder runs the concatenated,
rebased arrays (the twin of the GPU path); on the GPU one launch for several frames must equal
the CPU's coefficients frame by frame."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import FramePipeline
from cinegpu.decode.tier1 import decode_codeblocks
from cinegpu.decode.tier1.codeblock import CB_DATA, CB_OUT, CB_SEG_FIRST
from cinegpu.decode.tier1.gpu import RowBatch, scratch_entries
from helpers.conformance import CONFORMANCE, read_streams

# one tile; several tiles (p0_04: 4x4 tiles); an odd layout; a tile-part stream
STREAMS = ["p0_01", "p0_04", "p0_12", "p1_04"]
PATHS = [CONFORMANCE / "part1" / "codestreams" / f"{s}.j2k" for s in STREAMS]
pytestmark = pytest.mark.skipif(not all(p.exists() for p in PATHS), reason="../shared/conformance is absent")


@pytest.fixture(scope="module")
def frames():
    return read_streams(PATHS)


def _parts(frames):
    """Every tile with code-blocks of ``frames`` (tier-2 on the CPU), with its output start in
    one buffer of all the frames' coefficients laid end to end, and that buffer's size."""
    dec = Decoder("cpu")
    parts, bases, base = [], [], 0
    for data in frames:
        prep = dec.prepare(data, strict=False)
        segments, _ = dec.tier2(prep)
        for plan, off, seg in zip(prep.plans, prep.offsets, segments):
            if plan.cb.shape[0]:
                parts.append(seg)
                bases.append(base + off)
        base += prep.size
    return parts, bases, base


def test_one_batch_decodes_as_one_launch_per_tile(frames):
    parts, bases, size = _parts(frames + frames[:2])
    assert len(parts) > len(frames)     # several tiles from one frame among them
    want = np.full(size, -7, np.int32)
    want_status = []
    for p, b in zip(parts, bases):
        n = p.table.shape[0]
        view = want[b:]
        want_status.append(decode_codeblocks(p.coded, p.table, p.seg_lengths, p.seg_passes, view))
        assert n
    batch = RowBatch.of(parts, bases)
    coded, table, lengths, passes, order = batch.concatenate(parts)
    assert table.shape[0] == batch.rows[-1] and coded.shape[0] == batch.data[-1]
    got = np.full(size, -7, np.int32)
    status = decode_codeblocks(coded, table[order], lengths, passes, got)    # in the kernel's work order
    assert np.array_equal(got, want)
    assert np.array_equal(np.sort(status), np.sort(np.concatenate(want_status)))
    status_in_rows = np.empty_like(status)
    status_in_rows[order] = status
    assert np.array_equal(status_in_rows, np.concatenate(want_status))


def test_rebase_moves_each_parts_offsets_and_leaves_the_parts_alone(frames):
    parts, bases, _ = _parts(frames[:2])
    before = [p.table.copy() for p in parts]
    batch = RowBatch.of(parts, bases)
    _, table, _, _, order = batch.concatenate(parts)
    for k, p in enumerate(parts):
        assert np.array_equal(p.table, before[k])      # the inputs were copied, not shifted
        rows = table[batch.rows[k] : batch.rows[k + 1]]
        assert np.array_equal(rows[:, CB_DATA], p.table[:, CB_DATA] + batch.data[k])
        assert np.array_equal(rows[:, CB_SEG_FIRST], p.table[:, CB_SEG_FIRST] + batch.segs[k])
        assert np.array_equal(rows[:, CB_OUT], p.table[:, CB_OUT] + bases[k])
        part_order = order[batch.rows[k] : batch.rows[k + 1]] - batch.rows[k]
        assert sorted(part_order.tolist()) == list(range(p.table.shape[0]))
    assert batch.entries == max(p.entries if p.entries is not None else scratch_entries(p.table) for p in parts)


def test_a_part_at_the_batch_start_is_left_alone_and_any_offset_moves_it(frames):
    """The first part of a batch at output 0 has nothing to shift (the whole of a one-tile
    frame decoded alone); the same part written at another output offset is shifted."""
    parts, _, _ = _parts(frames[:1])
    part = parts[0]
    for base in (0, 1000):
        batch = RowBatch.of([part], [base])
        _, table, _, _, order = batch.concatenate([part])
        assert np.array_equal(table[:, CB_OUT], part.table[:, CB_OUT] + base)
        assert np.array_equal(np.delete(table, CB_OUT, axis=1), np.delete(part.table, CB_OUT, axis=1))
        assert sorted(order.tolist()) == list(range(part.table.shape[0]))


def test_pipeline_refuses_a_batch_below_one():
    with pytest.raises(ValueError, match="batch"):
        FramePipeline(backend="cpu", workers=1, batch=0)


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_batch_is_ignored_where_there_is_no_gpu_tier1(frames):
    """The CPU back end decodes whole frames in its workers: ``batch`` changes nothing there."""
    from cinegpu.decode import decode

    with FramePipeline(backend="cpu", workers=2, batch=3) as pipe:
        results = list(pipe.map(frames))
    for (_, frame), data in zip(results, frames):
        for a, b in zip(frame.components, decode(data, strict=False)):
            assert np.array_equal(a, b)


@pytest.mark.gpu
def test_one_launch_for_several_frames_equals_the_cpu(frames):
    cpu, gpu = Decoder("cpu"), Decoder("cuda", gpu_tier1=True)
    work = frames + frames[:1]
    preps = [gpu.prepare(d, strict=False) for d in work]
    launched = gpu.tier1_gpu_launch_batch([(p, gpu.tier2(p)[0]) for p in preps])
    assert len(launched) == len(work)
    for data, prep, (coeffs, statuses) in zip(work, preps, launched):
        want, _ = cpu.entropy_decode(cpu.prepare(data, strict=False))
        assert np.array_equal(coeffs.get(), want)
        assert len(statuses) == len(prep.plans)
        for plan, status in zip(prep.plans, statuses):
            assert (status is None) == (plan.cb.shape[0] == 0)
            if status is not None:
                assert status.shape[0] == plan.cb.shape[0] and not status.get().any()


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [2, 4])
def test_cuda_pipeline_in_batches_matches_one_frame_at_a_time(frames, batch):
    """Batches fill up, the last one is partial, and every frame comes back in order with the
    samples of the unbatched pipeline; a get() of a frame held for its batch does not wait
    forever."""
    work = [frames[k % len(frames)] for k in range(11)]
    with FramePipeline(backend="cuda", workers=2, to_host=True) as pipe:
        want = [f for _, f in pipe.map(work)]
    with FramePipeline(backend="cuda", workers=2, to_host=True, batch=batch) as pipe:
        got = list(pipe.map(work, keys=range(len(work))))
        pipe.submit(work[0], key="alone")    # one frame, a batch it never fills
        alone = pipe.get()
    assert [k for k, _ in got] == list(range(len(work)))
    for (_, g), w in zip(got, want):
        assert not isinstance(g, Exception), g
        assert g.timings["tier1"] > 0
        for a, b in zip(g.components, w.components):
            assert np.array_equal(a, b)
    assert alone[0] == "alone"
    for a, b in zip(alone[1].components, want[0].components):
        assert np.array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [1, 3])
def test_frames_spread_over_every_gpu_match_one_gpu(frames, batch):
    """gpus=None (every GPU CUDA shows): one decoder per GPU, batches (or frames) to each in
    turn, every frame back in order with the samples one GPU gives, some on each GPU."""
    import cupy

    work = [frames[k % len(frames)] for k in range(10)]
    with FramePipeline(backend="cuda", workers=2, to_host=False, batch=batch) as pipe:
        want = [f for _, f in pipe.map(work)]
    with FramePipeline(backend="cuda", workers=2, to_host=False, batch=batch, gpus=None) as pipe:
        assert pipe.gpus == cupy.cuda.runtime.getDeviceCount()
        got = list(pipe.map(work, keys=range(len(work))))
    assert [k for k, _ in got] == list(range(len(work)))
    devices = set()
    for (_, g), w in zip(got, want):
        assert not isinstance(g, Exception), g
        devices.add(g.components[0].device.id)
        for a, b in zip(g.components, w.components):
            assert np.array_equal(cupy.asnumpy(a), cupy.asnumpy(b))
    assert devices == set(range(pipe.gpus))

