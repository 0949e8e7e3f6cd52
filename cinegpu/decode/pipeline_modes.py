"""The decode pipeline's modes: what a worker writes into a frame's slot, and how the
pipeline's process finishes the frame from it; one small strategy class each.

- :class:`SamplesMode` (the CPU back ends): the worker runs tier-2, tier-1 and the
  reconstruction and writes each wanted component's samples; here they are copied out.
- :class:`CoefficientsMode` (CUDA with CPU tier-1): the worker writes the coefficients; here
  the back end reconstructs them.
- :class:`SegmentsMode` (CUDA with GPU tier-1, EBCOT and HT frames alike): the worker runs
  tier-2 only and writes tier-1's plain arrays with the kernel's work order and scratch size;
  here tier-1 and the reconstruction are queued on the GPU without waiting (a
  :class:`GpuWork` in flight).

:func:`backend_mode` picks the mode for a decoder's back end once; :meth:`FrameMode.for_frame`
settles it for each frame as it is submitted. A mode is a frozen dataclass without fields, sent
to the worker in the :class:`~cinegpu.decode.pipeline_messages.WorkerTask`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .decoder import Decoder, Frame, Prepared, finish_frame
from .pipeline_messages import (
    ArraySpec,
    CoefficientsWritten,
    GrowSlot,
    Job,
    Reply,
    SamplesWritten,
    SegmentsWritten,
    TileArrays,
    WorkerTask,
    aligned,
    load_arrays,
    packed_nbytes,
    store_arrays,
)
from .tier1.gpu import scratch_entries, work_order
from .tile import TileSegments
from .transform.layout import FRAME_COLS, FRAME_ROWS


class BatchStatuses:
    """A batch's tier-1 statuses, looked through once for all its frames: the one page-locked
    array of :meth:`~cinegpu.decode.decoder.Decoder.tier1_gpu_launch_host` (None: no
    code-block), which an asynchronous copy fills behind the batch's tier-1. :meth:`clean` (call
    it only once the frame's work is done) is True when no code-block of the batch set a
    status bit; each frame's own look through its tiles' statuses is then skipped (a 4K DCI
    frame has 26,280 code-blocks)."""

    __slots__ = ("_array", "_clean")

    def __init__(self, array) -> None:
        self._array = array
        self._clean: bool | None = None

    def clean(self) -> bool:
        if self._clean is None:
            self._clean = self._array is None or not self._array.any()
        return self._clean


@dataclass
class GpuWork:
    """A frame's GPU work in flight: what the pipeline waits for, and checks, when it hands the
    frame out."""

    prep: Prepared
    submitted: float
    start: object          # CUDA events, recorded on the current stream
    tier1_done: object     # past this one the slot's arrays have been read
    done: object
    statuses: list = field(default_factory=list)
    #: this frame's part of its batch's tier-1 launch and of its reconstruction (1 / frames in
    #: the batch: the frames of a batch are reconstructed together)
    share: float = 1.0
    #: recorded before this frame's reconstruction (None: at ``tier1_done``)
    reconstruct_start: object = None
    #: device memory the GPU work reads on another stream than the one it was allocated on
    #: (the batch's tier-1 output): held until ``done``, so that no later launch reuses it sooner
    keep: object = None
    #: the statuses of the batch the frame was launched in (None: look at the frame's own)
    batch: BatchStatuses | None = None


@dataclass(frozen=True)
class FrameMode:
    """What a worker does with a frame (:meth:`work`) and how the pipeline finishes it
    (:meth:`finish`); ``name`` is the mode's word in logs and tests."""

    name: ClassVar[str] = ""

    def for_frame(self, decoder: Decoder, prep: Prepared) -> FrameMode:
        """The mode this frame takes under this back end's mode (itself unless said)."""
        return self

    def slot_bytes(self, prep: Prepared, data_len: int) -> int:
        """Bytes a slot needs for the frame: its coefficients (int32), unless said."""
        return prep.size * 4

    def work(self, decoder: Decoder, task: WorkerTask, prep: Prepared, buf) -> Reply:
        """In the worker: decode the prepared frame into ``buf`` (the slot's memory)."""
        raise NotImplementedError

    def finish(self, decoder: Decoder, job: Job, buf, reply: Reply, components,
               to_host: bool, streams=None) -> tuple[Frame, GpuWork | None]:
        """In the pipeline's process: the frame out of the worker's ``reply`` and ``buf``, and
        the GPU work still to wait for (None: none). ``components``: checked indices or None.
        ``streams``: the (tier-1, reconstruction) streams a mode that queues GPU work uses
        (None: the current one)."""
        raise NotImplementedError


def _coefficients(decoder: Decoder, prep: Prepared, buf):
    """In the worker: tier-2 and tier-1 of the frame into ``buf`` (int32, from byte 0)."""
    return decoder.entropy_decode(prep, out=np.ndarray((prep.size,), np.int32, buffer=buf))


def _samples_into(decoder: Decoder, prep: Prepared, coeffs: np.ndarray, buf) -> tuple[ArraySpec, ...] | None:
    """In the worker: every component of the frame, as :meth:`Decoder.reconstruct` gives them
    all, written into ``buf`` over the coefficients (which the reconstruction has used up by
    then), each in its type, laid out as :func:`store_arrays` lays them; where each lies. The
    frame is reconstructed whole (the numba back end's one compiled call) into the decoder's
    kept planes buffer (:meth:`Decoder.planes_buffer`) and each plane converted straight into
    the slot: no fresh 106 MB buffer for a 4K frame, no component arrays to copy after. None
    where the frame takes :meth:`Decoder.reconstruct`'s other paths."""
    if decoder.xp is not np or not hasattr(decoder.transform, "frame_samples_flat") or prep.area is not None:
        return None
    layout = decoder.frame_layout(prep)
    if layout is None:
        return None
    out = decoder.planes_buffer(layout.samples)
    items = layout.items
    if int((items[:, FRAME_ROWS] * items[:, FRAME_COLS]).sum()) != layout.samples:
        out[:] = 0      # samples that no tile writes (a tile missing) are zeros, as reconstruct_frame's
    decoder.transform.frame_samples_flat(coeffs, layout, out)
    dtypes = {c: np.dtype(dtype) for dtype, _, _, comps in layout.groups for c in comps}
    specs, offset = [], 0
    for c, (first, rows, cols) in enumerate(layout.planes):
        spec = ArraySpec(offset, (rows, cols), dtypes[c].str)
        np.copyto(spec.view(buf), out[first : first + rows * cols].reshape(rows, cols), casting="unsafe")
        specs.append(spec)
        offset += aligned(rows * cols * dtypes[c].itemsize)
    return tuple(specs)


@dataclass(frozen=True)
class CoefficientsMode(FrameMode):
    """The worker writes the coefficients; the pipeline's back end reconstructs them."""

    name: ClassVar[str] = "coefficients"

    def work(self, decoder: Decoder, task: WorkerTask, prep: Prepared, buf) -> Reply:
        _, reports = _coefficients(decoder, prep, buf)
        return CoefficientsWritten(task.seq, reports)

    def finish(self, decoder: Decoder, job: Job, buf, reply: CoefficientsWritten, components,
               to_host: bool, streams=None) -> tuple[Frame, None]:
        t0 = time.perf_counter()
        coeffs = np.ndarray((job.prep.size,), np.int32, buffer=buf)
        stage: dict[str, float] = {}
        out = decoder.reconstruct(job.prep, coeffs, components, to_host=to_host, timings=stage)
        frame = finish_frame(job.prep, out, reply.reports, components, time.perf_counter() - t0)
        frame.timings.update(stage)
        frame.timings["latency"] = time.perf_counter() - job.submitted
        return frame, None


@dataclass(frozen=True)
class SamplesMode(FrameMode):
    """The worker reconstructs too and writes each component's samples, one after another
    (int32 samples never need more room than the coefficients they overwrite); the pipeline
    copies them out."""

    name: ClassVar[str] = "samples"

    def work(self, decoder: Decoder, task: WorkerTask, prep: Prepared, buf) -> Reply:
        coeffs, reports = _coefficients(decoder, prep, buf)
        t0 = time.perf_counter()
        specs = _samples_into(decoder, prep, coeffs, buf) if task.request.components is None else None
        if specs is None:
            planes = decoder.reconstruct(prep, coeffs, task.request.components)
            specs, _ = store_arrays(buf, planes)    # over the coefficients, which are used up
        return SamplesWritten(task.seq, reports, specs, time.perf_counter() - t0)

    def finish(self, decoder: Decoder, job: Job, buf, reply: SamplesWritten, components,
               to_host: bool, streams=None) -> tuple[Frame, None]:
        frame = finish_frame(job.prep, load_arrays(buf, reply.planes), reply.reports, components,
                             reply.reconstruct_s)
        frame.timings["latency"] = time.perf_counter() - job.submitted
        return frame, None


@dataclass(frozen=True)
class SegmentsMode(FrameMode):
    """The worker runs tier-2 and writes tier-1's input; the GPU runs tier-1 and the
    reconstruction, queued here without waiting."""

    name: ClassVar[str] = "segments"

    def for_frame(self, decoder: Decoder, prep: Prepared) -> FrameMode:
        """This mode while the decoder runs the frame's tier-1 on the GPU (HT code-blocks of
        Part 15 included), else :class:`CoefficientsMode` (tier-1 in the worker)."""
        return self if decoder.tier1_on_gpu(prep) else CoefficientsMode()

    def slot_bytes(self, prep: Prepared, data_len: int) -> int:
        """Tier-1's inputs: about the codestream's size (a worker asks for more if not)."""
        n_cb = sum(p.cb.shape[0] for p in prep.plans)
        return 2 * data_len + n_cb * (8 * 16) + (1 << 20)

    def work(self, decoder: Decoder, task: WorkerTask, prep: Prepared, buf) -> Reply:
        segments, reports = decoder.tier2(prep)
        # the GPU launch's work order and scratch size, worked out here, off the pipeline's process
        tiles = [(seg.table, seg.seg_lengths, seg.seg_passes, seg.coded, work_order(seg.table, seg.seg_passes))
                 for seg in segments]
        need = sum(packed_nbytes(arrays) for arrays in tiles)
        if need > buf.nbytes:
            return GrowSlot(task.seq, need)
        written, offset = [], 0
        for seg, arrays in zip(segments, tiles):
            specs, offset = store_arrays(buf, arrays, offset)
            written.append(TileArrays(*specs, entries=scratch_entries(seg.table)))
        return SegmentsWritten(task.seq, reports, tuple(written))

    def finish(self, decoder: Decoder, job: Job, buf, reply: SegmentsWritten, components,
               to_host: bool, streams=None) -> tuple[Frame, GpuWork]:
        """Queue tier-1 and reconstruction on the GPU from the worker's tier-2 arrays, without
        waiting: while they run, the pipeline goes on receiving and launching later frames."""
        return self.finish_batch(decoder, [(job, buf, reply, components)], to_host, streams)[0]

    @staticmethod
    def finish_batch(decoder: Decoder, items: list, to_host: bool, streams=None) -> list[tuple[Frame, GpuWork]]:
        """Several frames' tier-1 as one kernel launch, then their reconstructions
        (:meth:`~cinegpu.decode.decoder.Decoder.reconstruct_frames`: frames of one geometry in
        one launch of each kernel), all queued without waiting. ``items``: (job, buf, reply,
        components) per frame, in order.

        ``streams``: (tier-1 stream, reconstruction stream) of the current device, None: both on
        the current stream. With two, the reconstructions wait for the batch's tier-1 (an event)
        and nothing else, so they run while the next batch's tier-1 does: the reconstructions
        (memory-bound) fill the GPU beside the tier-1 kernel (bound by its MQ decoders' latency)
        and its tail. The reconstruction stream should have the higher priority, so that its
        blocks go first whenever tier-1 blocks end.

        The tier-2 arrays go to the GPU straight from the slots (page-locked: by DMA); a
        frame's slot is free again once the batch's ``tier1_done`` event has passed."""

        xp = decoder.xp
        apart = streams is not None
        tier1_on, recon_on = streams if apart else (contextlib.nullcontext(), contextlib.nullcontext())
        t0 = time.perf_counter()
        start, tier1_done = xp.cuda.Event(), xp.cuda.Event()
        frames = [(job.prep, [TileSegments(coded=t.coded.view(buf), table=t.table.view(buf),
                                           seg_lengths=t.seg_lengths.view(buf), seg_passes=t.seg_passes.view(buf),
                                           order=t.order.view(buf), entries=t.entries) for t in reply.tiles])
                  for job, buf, reply, _ in items]
        if apart:
            # after what the caller's stream has queued so far: memory of frames it has let go
            # (the reconstruction stream's) is reused only once the caller's work with it ran
            mark = xp.cuda.Event(disable_timing=True)
            mark.record(xp.cuda.get_current_stream())
        with tier1_on:
            start.record()
            launched, status = decoder.tier1_gpu_launch_host(frames)   # statuses read after `done`
            tier1_done.record()    # the slots' arrays have been read by then
        batch_statuses = BatchStatuses(status)
        if apart:
            recon_on.wait_event(tier1_done)
            recon_on.wait_event(mark)
        share = 1.0 / len(items)
        results = []
        with recon_on:
            begin, done = xp.cuda.Event(), xp.cuda.Event()
            begin.record()
            # frames of one geometry: each reconstruction kernel launched once for them all
            outs = decoder.reconstruct_frames([job.prep for job, *_ in items], [c for c, _ in launched],
                                              [components for *_, components in items], to_host=to_host)
            done.record()
            t_launch = (time.perf_counter() - t0) * share
            for (job, _, reply, components), (coeffs, statuses), out in zip(items, launched, outs):
                frame = finish_frame(job.prep, out, reply.reports, components, 0.0)
                frame.timings["launch"] = t_launch
                results.append((frame, GpuWork(job.prep, job.submitted, start, tier1_done, done, statuses,
                                               share=share, reconstruct_start=begin,
                                               keep=coeffs if apart else None, batch=batch_statuses)))
        return results


def stream_pair(xp) -> tuple:
    """A (tier-1, reconstruction) pair of CUDA streams on the current device, as
    :meth:`SegmentsMode.finish_batch` takes them: both non-blocking, tier-1's of the default
    (least) priority 0, the reconstruction's of the greatest (CUDA clamps -(1 << 10) to it: -5
    on current GPUs), so that a batch's reconstruction blocks go before the next tier-1's."""
    return (xp.cuda.Stream(non_blocking=True, priority=0), xp.cuda.Stream(non_blocking=True, priority=-(1 << 10)))


def backend_mode(decoder: Decoder) -> FrameMode:
    """The mode for a decoder's back end: samples on the CPU, segments with GPU tier-1,
    else coefficients."""
    if not decoder.selected.cuda:
        return SamplesMode()      # the CPU back end reconstructs in the workers
    if decoder.gpu_tier1:
        return SegmentsMode()     # workers: tier-2; the GPU: tier-1 and reconstruction
    return CoefficientsMode()
