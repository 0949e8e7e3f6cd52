"""The multi-process decode pipeline: order, equality, failures, back-pressure."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from cinegpu.decode import CodestreamError, InvalidSegment, decode
from cinegpu.decode import pipeline as pipeline_module
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import FramePipeline, WorkerCrashed, tiny_codestream
from cinegpu.decode.pipeline_messages import Failed, WorkerTask, input_bytes
from cinegpu.decode.pipeline_modes import backend_mode
from cinegpu.decode.request import DecodeRequest
from cinegpu.decode.shm import create_segment
from cinegpu.encode import encode
from helpers.codestreams import lower_exponents
from helpers.conformance import CONFORMANCE, read_streams
from helpers.peers import Image, image_planes

STREAMS = ["p0_01", "p0_04", "p0_10", "p1_04", "p0_12"]
PATHS = [CONFORMANCE / "part1" / "codestreams" / f"{s}.j2k" for s in STREAMS]
pytestmark = pytest.mark.skipif(not all(p.exists() for p in PATHS), reason="../shared/conformance is absent")


@pytest.fixture(scope="module")
def frames():
    return read_streams(PATHS)


@pytest.fixture(scope="module")
def pipe():
    with FramePipeline(backend="cpu", workers=2, depth=3) as p:
        yield p


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_frames_come_back_in_order_and_equal_decode(pipe, frames):
    work = frames * 2
    results = list(pipe.map(work, keys=range(len(work))))
    assert [k for k, _ in results] == list(range(len(work)))
    for (k, frame), data in zip(results, work):
        want = decode(data, strict=False)
        assert len(frame.components) == len(want)
        for a, b in zip(frame.components, want):
            assert np.array_equal(a, b), f"frame {k}"
        assert frame.timings["tier1"] > 0


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_a_corrupt_frame_is_reported_and_the_pool_keeps_going(frames):
    good = frames[1]
    bad = bytearray(good)
    sod = good.index(b"\xff\x93") + 2
    bad[sod : sod + 64] = b"\xff" * 64  # the first packet header now grows Lblock without end
    with FramePipeline(backend="cpu", workers=1, request=DecodeRequest(strict=True)) as pipe:
        out = list(pipe.map([good, bytes(bad), good]))
    assert not isinstance(out[0][1], Exception)
    assert isinstance(out[1][1], CodestreamError)
    assert not isinstance(out[2][1], Exception)
    assert np.array_equal(out[2][1].components[0], decode(good)[0])


def test_header_damage_raises_at_submit_in_map(pipe, frames):
    results = list(pipe.map([frames[0], b"\xff\x4f\x00\x00", frames[0]]))
    assert len(results) == 3
    assert isinstance(results[1][1], CodestreamError)
    assert not isinstance(results[2][1], Exception)


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_a_worker_crash_fails_only_its_frame(frames):
    with FramePipeline(backend="cpu", workers=1, depth=2) as pipe:
        pipe.submit(frames[1], key="doomed")
        pipe._workers.procs[0].kill()  # the worker dies with the frame in hand
        key, result = pipe.get()
        assert key == "doomed" and isinstance(result, WorkerCrashed)
        pipe.submit(frames[0], key="next")
        key, result = pipe.get()
        assert key == "next" and np.array_equal(result.components[0], decode(frames[0])[0])
        assert pipe.stats["crashes"] == 1


class _WorkerSlots:
    """Three slots for the tiny codestream, and a worker's ``_answer`` run in this process."""

    def __init__(self):
        self.data = tiny_codestream()
        self.decoder = Decoder("cpu")
        self.prep = self.decoder.prepare(self.data)
        self.mode = backend_mode(self.decoder)
        nbytes = input_bytes(len(self.data)) + self.mode.slot_bytes(self.prep, len(self.data)) + 4096
        self.slots = [create_segment(nbytes) for _ in range(3)]
        self.attached = OrderedDict()

    def answer(self, k: int, slot) -> None:
        slot.buf[:len(self.data)] = self.data
        reply = pipeline_module._answer(self.decoder, WorkerTask(k, len(self.data), slot.name, self.prep.size,
                                                                 DecodeRequest(), self.mode), self.attached)
        assert not isinstance(reply, Failed), reply

    def close(self, slot) -> None:
        """As the pipeline's ``_Slot.close`` does (when a slot is replaced by a larger one)."""
        slot.close()
        slot.unlink()
        self.slots.remove(slot)


@pytest.fixture
def worker_slots():
    w = _WorkerSlots()
    yield w
    for shm in w.attached.values():
        shm.close()
    for slot in list(w.slots):
        w.close(slot)


def test_a_worker_keeps_the_slots_it_wrote_mapped(monkeypatch, worker_slots):
    monkeypatch.setattr(pipeline_module, "ATTACHED_SLOTS", 2)
    a, b, c = worker_slots.slots
    for k, slot in enumerate((a, b, c, a)):
        worker_slots.answer(k, slot)
    # the two used last, least recently used first; B was unmapped to make room for A again
    assert list(worker_slots.attached) == [c.name, a.name]


def test_a_worker_unmaps_the_slots_the_pipeline_replaced(worker_slots):
    a, b, c = worker_slots.slots
    worker_slots.answer(0, a)
    worker_slots.answer(1, b)
    worker_slots.close(a)           # the pipeline grew slot a: its old segment unlinked
    worker_slots.answer(2, c)
    assert list(worker_slots.attached) == [b.name, c.name]     # its memory no longer held here


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_back_pressure_bounds_frames_in_flight(frames):
    seen = []
    with FramePipeline(backend="cpu", workers=1, depth=2) as pipe:
        def source():
            for _ in range(6):
                seen.append(pipe.in_flight)
                yield frames[0]

        out = list(pipe.map(source()))
    assert len(out) == 6
    assert max(seen) <= 2


def test_tiny_codestream_decodes():
    assert decode(tiny_codestream())[0].tolist() == [[128]]


def _without_tile(data: bytes, t: int) -> bytes:
    """``data`` with every tile-part of tile ``t`` cut out (the tile missing, A.4.2)."""
    for part in reversed(parse_codestream(data).tiles[t].parts):
        data = data[: part.offset] + data[part.end :]
    return data


def test_one_worker_reusing_its_planes_buffer_across_frames(frames):
    """A CPU worker reconstructs every frame into one kept planes buffer and converts the
    samples into the slot (pipeline_modes._samples_into): a frame missing a tile after a whole
    one shows zeros there, not the whole frame's samples left in the buffer; frames of other
    sizes, types and tilings after it decode as decode() does."""
    four_tiles = frames[STREAMS.index("p0_10")]
    missing = _without_tile(four_tiles, 1)
    work = [four_tiles, missing, frames[STREAMS.index("p0_04")], missing, frames[STREAMS.index("p1_04")],
            four_tiles]
    with FramePipeline(backend="cpu", workers=1, depth=2) as pipe:
        assert pipe.mode.name == "samples"
        results = list(pipe.map(work))
    for (_, frame), data in zip(results, work):
        want = decode(data, strict=False)
        assert [(a.dtype, a.shape) for a in frame.components] == [(b.dtype, b.shape) for b in want]
        assert all(np.array_equal(a, b) for a, b in zip(frame.components, want))
    whole, cut = results[0][1].components, results[1][1].components
    assert all((c[:32, 32:] == 0).all() and not (w[:32, 32:] == 0).all() for w, c in zip(whole, cut))


@pytest.mark.gpu
@pytest.mark.parametrize("gpu_tier1", [True, False], ids=["tier1-gpu", "tier1-cpu"])
@pytest.mark.parametrize("overlap", [True, False], ids=["frames-on-stream-pairs", "one-stream"])
def test_cuda_pipeline_matches_the_cpu_decode(frames, gpu_tier1, overlap):
    """Frames alone (batch 1) on FRAME_STREAMS stream pairs in turn, or all on the caller's
    stream, decode as the CPU does."""
    with FramePipeline(backend="cuda", workers=2, gpu_tier1=gpu_tier1, overlap=overlap) as pipe:
        assert pipe.backend == "cuda"
        assert pipe.mode.name == ("segments" if gpu_tier1 else "coefficients")
        results = list(pipe.map(frames))
    for (_, frame), data in zip(results, frames):
        want = decode(data)
        for a, b in zip(frame.components, want):
            assert np.abs(a.astype(np.int64) - b).max() <= 1


@pytest.mark.gpu
def test_cuda_pipeline_reuses_slots_behind_queued_gpu_work(frames):
    """GPU tier-1 is launched without waiting; a slot is reused only once its copies ran.
    With two slots and five frames submitted before any is taken, submit must wait for
    the queued GPU work (not for a worker) and every frame must still decode right."""
    with FramePipeline(backend="cuda", workers=1, depth=2, to_host=False) as pipe:
        assert pipe.mode.name == "segments"
        for k in range(5):
            pipe.submit(frames[k % len(frames)], key=k)
        results = [pipe.get() for _ in range(5)]
    for key, frame in results:
        want = decode(frames[key % len(frames)])
        assert frame.timings["tier1"] > 0 and frame.timings["gpu"] > 0
        for a, b in zip(frame.components, want):
            assert np.abs(a.get().astype(np.int64) - b).max() <= 1


HT_PATHS = [CONFORMANCE / "htj2k" / "codestreams" / f"{s}.j2k" for s in ("ds0_ht_01_b11", "ds1_ht_04_b9")]


@pytest.mark.skipif(not all(p.exists() for p in HT_PATHS), reason="the HTJ2K conformance streams are absent")
@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_htj2k_frames_mixed_with_part1_frames(frames, backend):
    """Frames with HT code-blocks (Part 15) among EBCOT ones: with GPU tier-1 on, all of them
    get their tier-1 on the GPU; all in order, all right."""
    work = [frames[0], HT_PATHS[0].read_bytes(), frames[1], HT_PATHS[1].read_bytes(), frames[0]]
    with FramePipeline(backend=backend, workers=2, depth=3) as pipe:
        if backend == "cuda":
            assert pipe.mode.name == "segments"
            assert [pipe._mode(pipe.decoder.prepare(d)).name for d in work[:2]] == ["segments", "segments"]
        results = list(pipe.map(work))
    for (_, frame), data in zip(results, work):
        assert not isinstance(frame, Exception), frame
        want = decode(data, strict=False)
        for a, b in zip(frame.components, want):
            assert np.abs(np.asarray(a, np.int64) - b).max() <= (0 if backend == "cpu" else 1)


@pytest.mark.gpu
@pytest.mark.parametrize("strict", [False, True])
def test_a_faulty_frame_in_a_batch_is_reported_and_only_it(strict):
    """A batch's tier-1 statuses are looked through once for all its frames
    (pipeline_modes.BatchStatuses): a frame whose code-blocks hold more passes than their
    bit-planes (status 1) in a batch of clean ones still says so (lenient: its tiles' faults;
    strict: its error), and the clean frames of the same batch say nothing."""
    img = Image(w=83, h=61, n=3, bits=8, fmt="raw", seed=9)
    good = encode(np.stack(image_planes(img), -1), bits=8, backend="cpu", reversible=True, levels=3)
    bad = lower_exponents(good, 1)
    work = [good, bad, good, good, good, bad, good]
    with FramePipeline(backend="cuda", workers=2, to_host=True, batch=3,
                       request=DecodeRequest(strict=strict)) as pipe:
        got = [r for _, r in pipe.map(work)]
    for data, result in zip(work, got):
        if data is good:
            assert not isinstance(result, Exception), result
            assert not result.passed_over()
        elif strict:
            assert isinstance(result, InvalidSegment) and "status 1" in str(result), result
        else:
            assert any("more coding passes than their bit-planes hold" in str(f) for f in result.passed_over())
