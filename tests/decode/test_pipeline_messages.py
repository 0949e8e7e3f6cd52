"""The pipeline's typed messages and modes (decode/pipeline_messages.py, decode/pipeline_modes.py):
they pickle, each back end gets its mode, a worker that asks for a bigger slot gets one, and each
mode's two halves give what decode() gives, on the CPU."""

from __future__ import annotations

import multiprocessing
import pickle
from types import SimpleNamespace

import numpy as np
import pytest

from cinegpu.decode import CodestreamError, DecodeRequest, InvalidSegment, PipelineError, decode
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import FramePipeline, tiny_codestream
from cinegpu.decode.pipeline_messages import (
    ArraySpec,
    CoefficientsWritten,
    Failed,
    GrowSlot,
    Job,
    SamplesWritten,
    SegmentsWritten,
    StopWorker,
    TileArrays,
    WorkerTask,
    load_arrays,
    packed_nbytes,
    store_arrays,
)
from cinegpu.decode.pipeline_modes import (
    BatchStatuses,
    CoefficientsMode,
    FrameMode,
    SamplesMode,
    SegmentsMode,
    backend_mode,
)
from cinegpu.decode.strictness import LENIENT
from cinegpu.decode.tier1 import decode_codeblocks
from cinegpu.decode.tier1.gpu import scratch_entries, work_order
from cinegpu.decode.workers import Broken, Busy, Ready, send_message
from helpers.conformance import CONFORMANCE

FRAME = CONFORMANCE / "part1" / "codestreams" / "p0_04.j2k"
needs_frame = pytest.mark.skipif(not FRAME.exists(), reason="../shared/conformance is absent")
MODES = [SamplesMode(), CoefficientsMode(), SegmentsMode()]


def _same(a, b) -> bool:
    """Messages equal, an error in them by type and text (exceptions compare by identity)."""
    if isinstance(a, Failed):
        return type(a) is type(b) and a.seq == b.seq and type(a.error) is type(b.error) \
            and str(a.error) == str(b.error)
    return a == b


def test_every_message_pickles_round_trip():
    spec = ArraySpec(64, (3, 5), "<i4")
    request = DecodeRequest(reduce=1, layers=2, strict=LENIENT, components=[2, 0])
    messages = [Ready(), Busy("compiled f"), Broken("no"), StopWorker(), spec, TileArrays(spec, spec, spec, spec, spec, entries=49),
                GrowSlot(7, 1 << 20), Failed(3, CodestreamError("bad", 12)), Failed(4, PipelineError("bug")),
                CoefficientsWritten(1, []), SamplesWritten(2, [], (spec, None), 0.25),
                SegmentsWritten(5, [], (TileArrays(spec, spec, spec, spec, spec, entries=1),)), request]
    messages += [WorkerTask(9, 2, "slot", 100, request, mode) for mode in MODES]
    for message in messages:
        assert _same(pickle.loads(pickle.dumps(message)), message), message


def test_a_job_makes_the_task_its_worker_gets():
    """A job stays in this process (its headers hold views of the codestream); its task travels."""
    data = tiny_codestream()
    prep = Decoder("cpu").prepare(data)
    job = Job(0, "key", prep, data, 1, SamplesMode(), DecodeRequest(strict=False))
    task = pickle.loads(pickle.dumps(job.task("slot-name")))
    assert task == WorkerTask(0, len(data), "slot-name", prep.size, DecodeRequest(strict=False), SamplesMode())


def _cuda(gpu_tier1: bool, on_gpu: bool | None = None):
    """A stand-in for a CUDA decoder: what the modes read of one (``on_gpu``: what its
    tier1_on_gpu says of every frame, by default ``gpu_tier1``)."""
    return SimpleNamespace(selected=SimpleNamespace(cuda=True), gpu_tier1=gpu_tier1,
                           tier1_on_gpu=lambda prep: gpu_tier1 if on_gpu is None else on_gpu)


def test_each_back_end_gets_its_mode():
    assert backend_mode(Decoder("cpu")) == SamplesMode()
    assert backend_mode(Decoder("numpy")) == SamplesMode()
    assert backend_mode(_cuda(gpu_tier1=True)) == SegmentsMode()
    assert backend_mode(_cuda(gpu_tier1=False)) == CoefficientsMode()
    assert [m.name for m in MODES] == ["samples", "coefficients", "segments"]
    assert len({type(m) for m in MODES}) == 3 and all(isinstance(m, FrameMode) for m in MODES)


def test_a_frame_takes_its_tier1_where_the_decoder_says():
    prep = SimpleNamespace()
    assert SegmentsMode().for_frame(_cuda(gpu_tier1=True), prep) == SegmentsMode()
    assert SegmentsMode().for_frame(_cuda(gpu_tier1=True, on_gpu=False), prep) == CoefficientsMode()
    for mode in (SamplesMode(), CoefficientsMode()):
        assert mode.for_frame(_cuda(gpu_tier1=True, on_gpu=False), prep) is mode


@pytest.mark.skipif(not (CONFORMANCE / "htj2k" / "codestreams").is_dir(), reason="../shared/conformance is absent")
def test_a_frame_with_ht_blocks_keeps_its_tier1_on_the_gpu():
    """HT code-blocks (Part 15) no longer send a frame's tier-1 to the worker."""
    decoder = Decoder("cpu")
    decoder.gpu_tier1 = True  # as with backend="cuda": the rule needs no device
    prep = decoder.prepare((CONFORMANCE / "htj2k" / "codestreams" / "ds0_ht_01_b11.j2k").read_bytes())
    assert prep.ht and SegmentsMode().for_frame(decoder, prep) == SegmentsMode()


def test_arrays_come_back_from_a_slot_as_stored():
    buf = bytearray(256)
    arrays = [np.arange(5, dtype=np.int32), None, np.arange(6, dtype=np.uint16).reshape(2, 3)]
    specs, end = store_arrays(memoryview(buf), arrays, offset=8)
    assert specs[1] is None and [s.offset for s in (specs[0], specs[2])] == [8, 32]
    assert end == 8 + packed_nbytes(arrays) == 48
    back = load_arrays(memoryview(buf), specs)
    assert back[1] is None and all(np.array_equal(a, b) for a, b in zip(back[::2], arrays[::2]))


class NeedsBigSlot(SamplesMode):
    """A mode whose worker asks for a slot of at least ``BIG`` bytes before writing anything."""

    BIG = 8 << 20

    def work(self, decoder, task, prep, buf):
        if buf.nbytes < self.BIG:
            return GrowSlot(task.seq, self.BIG)
        return super().work(decoder, task, prep, buf)


@needs_frame
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_a_worker_asking_for_a_bigger_slot_gets_one_and_the_frame_decodes():
    data = FRAME.read_bytes()
    with FramePipeline(backend="cpu", workers=1, depth=2) as pipe:
        pipe.mode = NeedsBigSlot()
        results = list(pipe.map([data, data]))
        assert all(slot.nbytes >= NeedsBigSlot.BIG for slot in pipe._slots if slot is not None)
    for _, frame in results:
        for a, b in zip(frame.components, decode(data, strict=False)):
            assert np.array_equal(a, b)


@needs_frame
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_the_coefficients_mode_on_the_cpu_gives_what_decode_gives():
    """The worker writes coefficients, this process reconstructs them (CUDA's split, here on
    the CPU); with a request for reduce=1 and components 2, 0."""
    data = FRAME.read_bytes()
    request = DecodeRequest(reduce=1, components=(2, 0))
    with FramePipeline(backend="cpu", workers=1, depth=2, request=request) as pipe:
        pipe.mode = CoefficientsMode()
        (_, frame), = pipe.map([data])
    want = decode(data, reduce=1, components=[2, 0])
    assert len(frame.components) == 2
    assert all(np.array_equal(a, b) for a, b in zip(frame.components, want))


class _Event:
    done = True

    def record(self):
        pass


class CpuAsGpu:
    """Stands in for a CUDA decoder in SegmentsMode.finish: numpy arrays, tier-1 on the CPU."""

    xp = SimpleNamespace(asarray=np.asarray, cuda=SimpleNamespace(Event=_Event))

    def __init__(self):
        self.cpu = Decoder("cpu")
        self.handed = []

    def tier1_gpu_launch_host(self, frames):
        out = []
        for prep, segments in frames:
            self.handed = segments
            coeffs = np.zeros(prep.size, np.int32)
            for plan, off, seg in zip(prep.plans, prep.offsets, segments):
                if plan.cb.shape[0]:
                    decode_codeblocks(seg.coded, seg.table, seg.seg_lengths, seg.seg_passes,
                                      coeffs[off : off + plan.coeff_size])
            out.append((coeffs, []))
        return out, None

    def reconstruct_frames(self, preps, coeffs, components, *, to_host=True):
        return self.cpu.reconstruct_frames(preps, coeffs, components)


@needs_frame
def test_the_segments_mode_carries_tier2_through_a_slot():
    """The worker's half asks to grow a small slot, then lays tier-2's arrays (and the launch
    hints) into it; this process's half hands tier-1 exactly those arrays."""
    data = FRAME.read_bytes()
    decoder = Decoder("cpu")
    prep = decoder.prepare(data)
    task = WorkerTask(0, len(data), "slot", prep.size, DecodeRequest(), SegmentsMode())
    small = SegmentsMode().work(decoder, task, prep, memoryview(bytearray(64)))
    assert isinstance(small, GrowSlot) and small.seq == 0 and small.nbytes > 64
    buf = memoryview(bytearray(small.nbytes))
    reply = SegmentsMode().work(decoder, task, prep, buf)
    assert isinstance(reply, SegmentsWritten) and len(reply.tiles) == len(prep.plans)
    gpu = CpuAsGpu()
    frame, work = SegmentsMode().finish(gpu, Job(0, None, prep, data, 0, SegmentsMode(), DecodeRequest()), buf, reply, None, True)
    segments, _ = decoder.tier2(prep)
    for seg, handed in zip(segments, gpu.handed):
        for name in ("coded", "table", "seg_lengths", "seg_passes"):
            assert np.array_equal(getattr(handed, name), getattr(seg, name)), name
        assert np.array_equal(handed.order, work_order(seg.table, seg.seg_passes))
        assert handed.entries == scratch_entries(seg.table)
    assert work.prep is prep
    assert all(np.array_equal(a, b) for a, b in zip(frame.components, decode(data)))


def test_a_pipeline_takes_its_options_as_a_request_not_loose_keywords():
    with pytest.raises(TypeError):           # before any worker starts
        FramePipeline(backend="cpu", workers=1, request=DecodeRequest(strict=False), strict=True)


def test_a_batch_is_clean_when_none_of_its_statuses_is_set_and_is_read_once():
    """BatchStatuses: a batch's statuses looked through once for all its frames."""
    assert BatchStatuses(None).clean()
    assert BatchStatuses(np.zeros(40, np.int32)).clean()
    status = np.zeros(40, np.int32)
    status[37] = 1
    assert not BatchStatuses(status).clean()
    read = BatchStatuses(status)
    assert not read.clean()
    status[37] = 0              # read once: what the batch's first settled frame found holds
    assert not read.clean()


def test_a_message_sent_by_the_pool_is_what_conn_recv_gives():
    """send_message (pickle itself on the pipe) reads back with Connection.recv as
    Connection.send's messages do, typed messages and exceptions alike."""
    a, b = multiprocessing.Pipe()
    prep = Decoder("cpu").prepare(tiny_codestream())
    messages = [Job(3, "k", prep, tiny_codestream(), 1, SegmentsMode(), DecodeRequest()).task("slot"),
                Failed(4, InvalidSegment("a bad segment", 12)), StopWorker()]
    for message in messages:
        send_message(a, message)
        got = b.recv()
        assert type(got) is type(message)
        assert repr(got) == repr(message)
    a.close()
    with pytest.raises(OSError):
        send_message(b, StopWorker())
