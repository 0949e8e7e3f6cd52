"""The real-time decode pipeline: tier-1 in worker processes, reconstruction here.

Frames flow through in order (submission order is result order): the caller submits
codestreams; :class:`FramePipeline` parses each frame's headers here (the
plan is cached per reel), hands the entropy decoding (tier-2 and tier-1) to
one of N worker processes, which writes its output straight into a
shared-memory slot (no pickling of arrays), and then finishes the frame from
the slot: CuPy kernels on the GPU, or a copy of the samples the worker
reconstructed on the CPU. While frame n is finished, frames n+1 .. n+N are in
the workers. Slots are the back-pressure: at most ``depth`` frames are in
flight and :meth:`FramePipeline.submit` waits for a free one.

The messages are typed (:mod:`cinegpu.decode.pipeline_messages`): a
:class:`~cinegpu.decode.pipeline_messages.WorkerTask` per frame carries the
codestream, the slot's name, the :class:`~cinegpu.decode.request.DecodeRequest`
and the frame's mode; the worker answers with a
:class:`~cinegpu.decode.pipeline_messages.Reply`: what it wrote and where in the
slot, :class:`~cinegpu.decode.pipeline_messages.GrowSlot` when the slot is too
small, or :class:`~cinegpu.decode.pipeline_messages.Failed`. What the worker
writes and how this process finishes the frame is the frame's mode, one
strategy class each (:mod:`cinegpu.decode.pipeline_modes`: samples,
coefficients, segments), chosen once per frame, when it is submitted.

A worker that raises (a corrupt frame) reports that frame's error, a
:class:`~cinegpu.decode.errors.CodestreamError`; a worker that dies (a crash)
fails only the frame it held with :class:`WorkerCrashed`, a
:class:`~cinegpu.decode.errors.PipelineError` (not bad input), and is replaced.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import struct
import time
import traceback
import warnings
from collections import OrderedDict, deque
from dataclasses import dataclass, replace
from multiprocessing import shared_memory
from typing import Callable

import numpy as np

from .cpus import usable_cores
from .decoder import Decoder, Frame, Prepared, check_components
from .errors import CodestreamError, LenientWarning, PipelineError, UnsupportedFeature, WorkerCrashed
from .kernel_cache import skip_blas_probe
from .limits import Limits
from .pipeline_messages import Failed, GrowSlot, Job, Reply, StopWorker, WorkerTask, Written, input_bytes
from .pipeline_modes import FrameMode, GpuWork, SegmentsMode, backend_mode, stream_pair
from .request import DecodeRequest
from .shm import create_segment, reclaim_orphans, segment_exists
from .workers import Broken, Ready, WorkerPool, announce_compiles, send_message

#: cudaHostRegisterPortable: host memory pinned for every CUDA context, not only the current one
HOST_REGISTER_PORTABLE = 1
log = logging.getLogger("cinegpu.decode")

#: seconds between looks at a frame's GPU work while :meth:`FramePipeline.get` serves the workers
GPU_POLL_S = 0.0005
#: Stream pairs frames alone (batch 1) take in turn on a GPU (:meth:`FramePipeline._frame_streams`):
#: the fastest of 3 and 6 for 4K and 2K DCI frames on the GPU machine (docs/performance.md).
FRAME_STREAMS = 6
#: Slots a worker keeps mapped. A frame's slot is any free one, so a worker that mapped only
#: the last one mapped nearly every frame's anew and faulted its pages in again: 1.5 ms for
#: 4 MB written on the development machine, 0.3 ms into a slot kept mapped. A slot the
#: pipeline has replaced (grown, its name unlinked) is unmapped when the worker next maps a
#: new one, so that its memory goes.
ATTACHED_SLOTS = 256


@dataclass(frozen=True)
class _Done:
    """A frame back from its worker, waiting to be handed out: the result (a :class:`Frame`
    or the error), the slot it still holds (None: released) and its GPU work in flight."""

    key: object
    result: object
    slot: int | None
    work: GpuWork | None = None
    gpu: int = 0    #: index of the GPU (and its decoder) the work runs on


def tiny_codestream() -> bytes:
    """A valid 1x1 one-component codestream with one empty packet.

    Decoding it loads every numba kernel (from numba's cache) so a worker's
    first real frame is not slowed by compilation.
    """

    siz = struct.pack(">HIIIIIIIIH3B", 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 7, 1, 1)
    cod = struct.pack(">BBHBBBBBB", 0, 0, 1, 0, 0, 4, 4, 0, 1)
    qcd = struct.pack(">BB", 0x40, 8 << 3)
    body = b"\x00"
    sot = struct.pack(">HIBB", 0, 14 + len(body), 0, 1)

    def seg(marker: int, payload: bytes) -> bytes:
        return struct.pack(">HH", marker, len(payload) + 2) + payload

    return (b"\xff\x4f" + seg(0xFF51, siz) + seg(0xFF52, cod) + seg(0xFF5C, qcd)
            + seg(0xFF90, sot) + b"\xff\x93" + body + b"\xff\xd9")


def _worker_main(conn) -> None:
    """Worker loop: decode each :class:`WorkerTask` into its shared-memory slot, as its mode
    says, and answer with a :class:`Reply`, until :class:`StopWorker`."""
    skip_blas_probe()                   # a process of cinegpu's own: numba starts sooner
    # the caller's prepare() checked each frame against its max_pixels / max_memory; the
    # work bound, tied to the input's size, holds here too
    quiet = announce_compiles(conn)     # a first run's compiles are work, not silence
    # what a frame's headers tolerate is said by the pipeline's process, which reads the same
    # headers (its Frame's passed_over); the worker's copy would be a second line, unattributed
    warnings.simplefilter("ignore", LenientWarning)
    try:
        decoder = Decoder("cpu", max_pixels=None, max_memory=None)
        decoder.decode(tiny_codestream())
    except Exception as exc:
        conn.send(Broken(f"{exc!r}"))
        return
    finally:
        quiet()
    conn.send(Ready())
    attached: OrderedDict[str, shared_memory.SharedMemory] = OrderedDict()
    try:
        while True:
            task = conn.recv()
            if isinstance(task, StopWorker):
                return
            send_message(conn, _answer(decoder, task, attached))
    finally:
        for shm in attached.values():
            _close_attached(shm)


def _close_attached(shm: shared_memory.SharedMemory) -> None:
    """Unmap a slot in the worker; views of it that a cycle still holds are collected first
    (the segment itself is the pipeline's to unlink)."""
    try:
        shm.close()
    except BufferError:
        gc.collect()
        try:
            shm.close()
        except BufferError:
            log.warning("a tier-1 worker keeps views of an old slot; it stays mapped")


def _answer(decoder: Decoder, task: WorkerTask, attached: OrderedDict[str, shared_memory.SharedMemory]) -> Reply:
    """In the worker: the reply to one task; ``attached`` keeps the slots it wrote open (the
    :data:`ATTACHED_SLOTS` last used): a slot mapped again has its pages faulted in again."""
    try:
        shm = attached.get(task.slot_name)
        if shm is None:
            for name in [n for n in attached if not segment_exists(n)]:  # replaced (grown) by the pipeline
                _close_attached(attached.pop(name))
            while len(attached) >= ATTACHED_SLOTS:     # the least recently used
                _close_attached(attached.popitem(last=False)[1])
            shm = shared_memory.SharedMemory(name=task.slot_name)
            attached[task.slot_name] = shm
        else:
            attached.move_to_end(task.slot_name)
        if not 0 <= task.data_len <= shm.size:
            raise PipelineError(f"a codestream of {task.data_len} bytes in a slot of {shm.size}")
        data = bytes(shm.buf[:task.data_len])   # a copy: the slot is written again below
        prep = decoder.prepare(data, request=task.request)
        if prep.size != task.size:
            raise CodestreamError(f"frame layout changed: {prep.size} coefficients, {task.size} planned")
        return task.mode.work(decoder, task, prep, shm.buf[input_bytes(task.data_len):])
    except CodestreamError as exc:
        # without its traceback: the frames it holds hold views of the slot, which would keep
        # the slot from closing when the next task names another
        return Failed(task.seq, exc.with_traceback(None))
    except Exception as exc:  # a bug: report it with its traceback, keep serving
        return Failed(task.seq, PipelineError(f"worker error: {exc!r}\n{traceback.format_exc()}"))


class _Slot:
    """A shared-memory buffer for what a worker writes for one frame (pinned if CUDA)."""

    def __init__(self, nbytes: int, xp) -> None:
        self.shm = create_segment(max(nbytes, 4))
        self.nbytes = nbytes
        self.pinned = False
        if xp is not np:
            try:
                # portable: pinned for every GPU's context, as several GPUs read the slots
                xp.cuda.runtime.hostRegister(self.array_ptr, self.shm.size, HOST_REGISTER_PORTABLE)
                self.pinned = True
            except Exception as exc:  # quiet probe: fall back to pageable copies
                log.info("cannot pin shared memory for DMA (%s): pageable copies", exc)

    @property
    def array_ptr(self) -> int:
        return np.ndarray((1,), np.uint8, buffer=self.shm.buf).ctypes.data

    def close(self, xp) -> None:
        """Unpin, unlink (first: the name must go even if a view of the buffer is still alive),
        then unmap."""
        if self.pinned:
            try:
                xp.cuda.runtime.hostUnregister(self.array_ptr)
            except Exception:
                pass
        try:
            self.shm.unlink()
        except FileNotFoundError:   # already gone (unlinked by a last-resort sweep)
            pass
        try:
            self.shm.close()
        except BufferError:         # a view still exported: the mapping goes when it does
            pass


class FramePipeline:
    """Decode a stream of frames with ``workers`` tier-1 processes, in order.

    >>> with FramePipeline(backend="auto") as pipe:
    ...     for key, frame in pipe.map(codestreams):
    ...         show(frame)

    ``frame`` is a :class:`Frame`, or the :class:`CodestreamError` that
    frame raised, or a :class:`PipelineError` (:class:`WorkerCrashed`) when the
    pipeline lost it. ``to_host=False`` keeps CUDA results on the device.
    """

    def __init__(self, *, backend: str = "auto", workers: int | None = None, depth: int | None = None,
                 request: DecodeRequest = DecodeRequest(), limits: Limits = Limits(),
                 to_host: bool = True, gpu_tier1: bool | None = None, batch: int = 1,
                 cancelled: Callable[[], bool] | None = None, gpus: int | None = 1,
                 overlap: bool = True) -> None:
        """``request``: what every frame is decoded to (:class:`~cinegpu.decode.request.DecodeRequest`:
        ``reduce``, ``layers``, ``strict``, ``components``; lenient by default). ``limits``:
        ``max_pixels`` and ``max_memory`` as for :class:`Decoder`
        (:class:`~cinegpu.decode.limits.Limits`), checked as each frame is submitted.
        ``cancelled``: polled while the workers start and before a slot is made; once true,
        :class:`PipelineError` is raised there (a server shutting down does not wait for them).
        ``batch``: with GPU tier-1, frames back from the workers are held until ``batch`` of them
        are there (or no more can come before the next frame is wanted) and their tier-1 runs as
        one kernel launch: throughput for benchmarks and batch jobs, at ``batch`` frames of
        latency; a player keeps 1.
        ``gpus``: with the ``cuda`` back end, the GPUs the frames are spread over (CUDA devices
        0 .. gpus - 1, None: all), one decoder and CUDA context each; a batch (or, with
        ``batch`` 1, a frame) goes to each GPU in turn, and frames still come out in order.
        With 1 (the default) everything runs on the current device.
        ``overlap``: with ``batch`` > 1, each GPU queues tier-1 and reconstruction on two
        streams of its own (reconstruction first in priority), so that one batch's
        reconstruction runs beside the next batch's tier-1; with ``batch`` 1, frames take
        :data:`FRAME_STREAMS` such pairs in turn, so that frames overlap on the GPU; False:
        everything on the caller's stream.
        ``gpu_tier1``: tier-1 on the GPU (None: where the back end can; False: in the workers,
        the GPU reconstructing; True where the back end cannot: ValueError)."""
        if batch < 1:
            raise ValueError("batch must be >= 1")
        #: what every frame is decoded to (sent to the workers with each frame)
        self.request = request
        max_pixels, max_memory = limits.max_pixels, limits.max_memory
        self.decoder = Decoder(backend, gpu_tier1=gpu_tier1, max_pixels=max_pixels, max_memory=max_memory)
        self.backend = self.decoder.backend
        #: one decoder per GPU (devices 0 ..), or just ``decoder`` on the current device
        self._decoders = [self.decoder]
        self._gpu_turn = 0
        self.overlap = overlap
        self._streams: dict[int, tuple] = {}    # GPU -> (tier-1 stream, reconstruction stream)
        self._frame_pairs: dict[int, list] = {}     # GPU -> the stream pairs of frames alone
        self._frame_turn: dict[int, int] = {}       # GPU -> the next of them
        if gpus is None or gpus > 1:
            if not self.decoder.selected.cuda:
                raise ValueError(f"several GPUs need the cuda back end, not {self.backend}")
            count = self.decoder.xp.cuda.runtime.getDeviceCount()
            n = count if gpus is None else gpus
            if n > count:
                raise ValueError(f"{n} GPUs asked for; CUDA shows {count}")
            self._decoders = []
            for d in range(n):
                with self.decoder.xp.cuda.Device(d):
                    self._decoders.append(Decoder(backend, gpu_tier1=gpu_tier1, max_pixels=max_pixels,
                                                  max_memory=max_memory))
        reclaimed = reclaim_orphans()   # segments of pipelines whose process was killed
        if reclaimed:
            log.info("reclaimed %d shared-memory segment(s) left by killed processes", len(reclaimed))

        self.num_workers = max(1, workers if workers is not None else usable_cores() - 1)
        # twice the workers: a slow frame at the head of the line must not
        # leave the other workers without work while it is awaited
        # with batches: two whole batches held (one on the GPU, its frames not yet handed out,
        # and the next filling) while every worker has a frame: with one, the next batch's
        # frames were submitted only once the last batch's were out, and the GPU waited for them
        # (4K DCI frames in batches of 32 on the GPU machine: docs/performance.md)
        self.batch = batch
        self.depth = max(depth or 2 * self.num_workers + 2 + (2 * batch if batch > 1 else 0), 1)
        self.to_host = to_host
        #: the back end's :class:`~cinegpu.decode.pipeline_modes.FrameMode`; :meth:`_mode` settles each frame's
        self.mode: FrameMode = backend_mode(self.decoder)
        self._workers = WorkerPool(_worker_main, self.num_workers, name="tier-1 worker", error=PipelineError,
                                   process_name="cinegpu-tier1")
        self._busy: dict[int, Job] = {}  # worker index -> job
        self._queue: deque[Job] = deque()
        self._done: dict[int, _Done] = {}  # seq -> frame back from its worker
        self._staged: dict[int, tuple[Job, Reply]] = {}  # seq -> frame back, waiting for its batch
        self._slots: list[_Slot | None] = [None] * self.depth
        self._free = list(range(self.depth))
        self._seq = itertools.count()
        self._next_out = 0
        self._submitted = 0
        self.stats = {"frames": 0, "crashes": 0, "errors": 0, "reconstruct_s": 0.0, "wait_s": 0.0}
        self._closing = False
        self._cancelled = cancelled or (lambda: False)
        try:
            self._workers.start()
            for i in range(self.num_workers):  # warm: numba kernels loaded before the first frame
                self._workers.await_ready(i, cancelled=self._stopping)
        except BaseException:       # a worker that failed to start, a cancel, a signal: end the others
            self.close(timeout=0)
            raise

    @property
    def gpus(self) -> int:
        """How many GPUs the frames are spread over (1: the current device only)."""
        return len(self._decoders)

    def _next_gpu(self) -> int:
        k = self._gpu_turn
        self._gpu_turn = (k + 1) % len(self._decoders)
        return k

    def _on_gpu(self, k: int):
        """The context of GPU ``k`` (nothing to switch with one)."""
        return self.decoder.xp.cuda.Device(k) if len(self._decoders) > 1 else contextlib.nullcontext()

    # --- workers ---------------------------------------------------------
    def _stopping(self) -> bool:
        return self._closing or self._cancelled()

    def _mode(self, prep: Prepared) -> FrameMode:
        """This frame's mode: the back end's as settled by :meth:`FrameMode.for_frame` (with GPU
        tier-1 on, every frame, HT code-blocks of Part 15 included, keeps its tier-1 on the GPU)."""
        return self.mode.for_frame(self.decoder, prep)

    def _dispatch(self) -> None:
        if self._closing:       # the workers may be gone (abort): nothing more is sent
            raise PipelineError("the pipeline was closed with frames in flight")
        for i in range(len(self._workers)):
            if not self._queue:
                return
            if i in self._busy:
                continue
            job = self._queue.popleft()
            self._busy[i] = job
            slot = self._slots[job.slot]
            slot.shm.buf[:len(job.data)] = job.data     # the codestream goes through the slot
            try:
                self._workers.send(i, job.task(slot.shm.name))
            except PipelineError:
                pass    # it ended: its end is collected, and the job fails with WorkerCrashed

    def _collect(self, timeout: float | None) -> None:
        """Wait for worker messages (or ends) and finish those frames."""
        for message, i in self._workers.wait(timeout):
            if message:
                try:
                    reply = self._workers.conns[i].recv()
                except (EOFError, OSError):
                    continue  # its end is reported next
                job = self._busy.pop(i)
                assert job.seq == reply.seq
                self._dispatch()  # keep the worker busy while this frame is reconstructed
                self._finish(job, reply)
            elif i in self._busy or not self._workers.procs[i].is_alive():
                self._replace(i)

    def _replace(self, i: int) -> None:
        if self._closing:       # ended by abort(): a waiting get() or submit() stops here
            raise PipelineError("the pipeline was closed with frames in flight")
        self._workers.forget(i)
        exitcode = self._workers.procs[i].exitcode      # known once it is reaped
        self.stats["crashes"] += 1
        job = self._busy.pop(i, None)
        log.warning("tier-1 worker %d ended (exit code %s); replacing it", i, exitcode)
        self._workers.start(i)
        self._workers.await_ready(i, cancelled=self._stopping)
        if job is not None:
            self._finish(job, Failed(job.seq, WorkerCrashed(f"worker died (exit code {exitcode}) "
                                                            f"decoding frame {job.seq}")))

    def _output(self, job: Job):
        """What the worker wrote for ``job``: its slot past the codestream."""
        return self._slots[job.slot].shm.buf[input_bytes(len(job.data)):]

    def _finish(self, job: Job, reply: Reply) -> None:
        if isinstance(reply, GrowSlot):  # the slot was too small: grow it, retry
            self._fit_slot(job.slot, input_bytes(len(job.data)) + reply.nbytes + (1 << 20))
            self._queue.appendleft(job)
            self._dispatch()
            return
        if isinstance(reply, Failed):
            self.stats["errors"] += 1
            self._done[job.seq] = _Done(job.key, reply.error, job.slot)
            return
        if self.batch > 1 and isinstance(job.mode, SegmentsMode):
            self._staged[job.seq] = (job, reply)
            if len(self._staged) >= self.batch:
                self._launch_staged()
            return
        self._done[job.seq] = self._finish_written(job, reply)

    def _launch_staged(self) -> None:
        """The held frames' tier-1 as one launch, then their reconstructions (queued on the GPU)."""
        staged, self._staged = sorted(self._staged.values(), key=lambda s: s[0].seq), {}
        if not staged:
            return
        t0 = time.perf_counter()
        items = []
        for job, reply in staged:
            try:
                components = check_components(job.request.components, job.prep.cs.siz.Csiz)
            except CodestreamError as exc:
                self.stats["errors"] += 1
                self._done[job.seq] = _Done(job.key, exc, job.slot)
                continue
            items.append((job, self._output(job), reply, components))
        if items:
            k = self._next_gpu()
            try:
                with self._on_gpu(k):
                    results = SegmentsMode.finish_batch(self._decoders[k], items, self.to_host, self._batch_streams(k))
            except CodestreamError as exc:     # each frame of the batch reports it
                self.stats["errors"] += len(items)
                results = [(exc, None)] * len(items)
            for (job, *_), (result, work) in zip(items, results):
                self._done[job.seq] = _Done(job.key, result, job.slot, work, k)
        self.stats["reconstruct_s"] += time.perf_counter() - t0

    def _frame_streams(self, k: int):
        """GPU ``k``'s next (tier-1, reconstruction) stream pair for a frame alone (batch 1):
        :data:`FRAME_STREAMS` pairs in turn, so that a frame's tier-1 runs beside the tail of
        the one before (its longest code-blocks, a few threads' work, which alone leave the
        GPU idle for milliseconds); None without ``overlap`` or with batches (each a pair of
        its own, :meth:`_batch_streams`)."""
        if not self.overlap or self.batch > 1 or not self.decoder.selected.cuda:
            return None
        pairs = self._frame_pairs.get(k)
        if pairs is None:
            pairs = self._frame_pairs[k] = [stream_pair(self.decoder.xp) for _ in range(FRAME_STREAMS)]
        turn = self._frame_turn.get(k, 0)
        self._frame_turn[k] = (turn + 1) % len(pairs)
        return pairs[turn]

    def _batch_streams(self, k: int):
        """GPU ``k``'s (tier-1, reconstruction) streams for batches (made on first use, in
        its context), or None to queue both on the caller's stream."""
        if not self.overlap:
            return None
        if k not in self._streams:
            self._streams[k] = stream_pair(self.decoder.xp)
        return self._streams[k]

    def _finish_written(self, job: Job, reply: Written) -> _Done:
        """The frame out of what its worker wrote, as its mode says: reconstructed here, copied
        out, or queued on the GPU (then :meth:`_settle` waits for it when it is handed out)."""
        t0 = time.perf_counter()
        work = None
        k = self._next_gpu()
        try:
            components = check_components(job.request.components, job.prep.cs.siz.Csiz)
            with self._on_gpu(k):
                result, work = job.mode.finish(self._decoders[k], job, self._output(job), reply, components,
                                               self.to_host, self._frame_streams(k))
        except CodestreamError as exc:
            result = exc
            self.stats["errors"] += 1
        self.stats["reconstruct_s"] += time.perf_counter() - t0
        return _Done(job.key, result, job.slot, work, k)

    def _settle(self, frame: Frame, work: GpuWork, gpu: int = 0):
        """Wait for a frame's GPU work (on GPU ``gpu``); check its tier-1 statuses; the frame
        with the device times of its stages, or the :class:`CodestreamError` strict decoding
        raised."""
        with self._on_gpu(gpu):
            return self._settle_here(frame, work, self._decoders[gpu])

    def _settle_here(self, frame: Frame, work: GpuWork, decoder: Decoder):
        xp = decoder.xp
        work.done.synchronize()
        try:
            if work.batch is None or not work.batch.clean():
                decoder.tier1_gpu_check(work.prep, work.statuses, frame.reports)
        except CodestreamError as exc:
            self.stats["errors"] += 1
            return exc
        # a batch's launch is shared by its frames; uploads included
        frame.timings["tier1"] = work.share * xp.cuda.get_elapsed_time(work.start, work.tier1_done) / 1e3
        frame.timings["gpu"] = work.share * xp.cuda.get_elapsed_time(work.reconstruct_start or work.tier1_done,
                                                                     work.done) / 1e3
        frame.timings["reconstruct"] = frame.timings["gpu"]
        frame.timings["latency"] = time.perf_counter() - work.submitted
        return frame

    # --- the caller's side -----------------------------------------------
    def submit(self, data: bytes, key=None, request: DecodeRequest | None = None) -> int:
        """Queue a frame; waits while ``depth`` frames are in flight.  ``request``: how to
        decode this frame (default: the pipeline's :attr:`request`; a player lowers
        ``reduce`` when decoding cannot keep up).

        Header errors raise here at once (nothing is queued for that frame), and so does a
        decode area outside the frame's image (ValueError). A decode area is decoded by the
        CPU back end's workers; the GPU's pipeline refuses it (:class:`UnsupportedFeature`:
        decode such a frame with :meth:`Decoder.decode`).
        """
        request = self.request if request is None else request
        if request.area is not None and self.decoder.xp is not np:
            raise UnsupportedFeature("a decode area in the GPU's pipeline is not supported: decode the frame with "
                                     "decode() or Decoder.decode, or the pipeline on the CPU back end")
        while not self._free:
            t0 = time.perf_counter()
            if self._staged and not self._busy and not self._queue:
                self._launch_staged()       # nothing more can join the batch
            elif self._busy or self._queue:
                self._collect(timeout=None)
            else:                       # every slot is held by GPU work not yet past tier-1
                self._wait_tier1()
            self._release_done_slots()
            self.stats["wait_s"] += time.perf_counter() - t0
        prep = self.decoder.prepare(data, request=request)
        mode = self._mode(prep)
        slot_index = self._free.pop()
        self._fit_slot(slot_index, input_bytes(len(data)) + mode.slot_bytes(prep, len(data)))
        seq = next(self._seq)
        self._queue.append(Job(seq, key, prep, bytes(data), slot_index, mode, request))
        self._submitted += 1
        self._dispatch()
        return seq

    def _fit_slot(self, index: int, nbytes: int) -> None:
        """Make slot ``index`` hold ``nbytes``; a new one gets a quarter more, so that frames a
        little larger do not each replace (and, with CUDA, re-pin: ~4 ms) a slot."""
        if self._closing or self._cancelled():     # no segment made for a pipeline on its way out
            raise PipelineError("the pipeline was closed")
        slot = self._slots[index]
        if slot is None or slot.nbytes < nbytes:
            if slot is not None:
                slot.close(self.decoder.xp)
            self._slots[index] = _Slot(nbytes * 5 // 4, self.decoder.xp)

    def reserve(self, data: bytes) -> None:
        """Allocate (and pin) every slot for frames like ``data`` now, not while
        playing: creating and registering shared memory takes milliseconds a slot."""
        prep = self.decoder.prepare(data, request=self.request)
        nbytes = input_bytes(len(data)) + self._mode(prep).slot_bytes(prep, len(data))
        for index in self._free:
            self._fit_slot(index, nbytes)

    def _wait_tier1(self) -> None:
        for done in self._done.values():
            if done.slot is not None and done.work is not None:
                done.work.tier1_done.synchronize()

    def _release_done_slots(self) -> None:
        # a finished frame's slot is free once it has been read: by reconstruction here,
        # or on the GPU, by the copies before tier-1 (known from its event, without waiting;
        # the frames of a batch share theirs, asked once)
        passed: dict[int, bool] = {}
        for seq, done in self._done.items():
            if done.slot is None:
                continue
            if done.work is not None:
                event = done.work.tier1_done
                ok = passed.get(id(event))
                if ok is None:
                    ok = passed[id(event)] = event.done
                if not ok:
                    continue
            self._free.append(done.slot)
            self._done[seq] = replace(done, slot=None)

    def get(self):
        """The next frame in submission order: (key, Frame, CodestreamError or PipelineError)."""
        if self._next_out >= self._submitted:
            raise LookupError("no frame in flight")
        while self._next_out not in self._done:
            if self._next_out in self._staged and not self._busy and not self._queue:
                self._launch_staged()       # wanted now, and nothing more can join its batch
                continue
            self._dispatch()
            self._collect(timeout=None)
            self._release_done_slots()
        work = self._done[self._next_out].work
        if work is not None:
            self._collect(timeout=0)    # queue the GPU work of frames already back, behind this one
            while not work.done.done and (self._busy or self._queue):
                # the GPU is still on this frame: serve the workers meanwhile (a blocking wait
                # here would leave each worker that finishes a frame idle until the GPU is done)
                self._collect(timeout=GPU_POLL_S)
                self._release_done_slots()
        done = self._done.pop(self._next_out)
        result = done.result if done.work is None else self._settle(done.result, done.work, done.gpu)
        if done.slot is not None:
            self._free.append(done.slot)
        self._next_out += 1
        self._dispatch()
        if isinstance(result, Frame):
            self.stats["frames"] += 1
        return done.key, result

    @property
    def in_flight(self) -> int:
        return self._submitted - self._next_out

    def map(self, frames, keys=None):
        """Decode an iterable of codestreams, yielding (key, result) in order."""
        keys = itertools.count() if keys is None else iter(keys)
        for data in frames:
            if self.in_flight >= self.depth:
                yield self.get()
            try:
                self.submit(data, next(keys))
            except CodestreamError as exc:
                # header damage: drain earlier frames to keep the order, then report
                while self.in_flight:
                    yield self.get()
                yield None, exc
        while self.in_flight:
            yield self.get()

    def abort(self) -> None:
        """End every worker now; callable from any thread (only signals are sent).  Frames in
        flight are lost: a :meth:`get` or :meth:`submit` waiting on one raises
        :class:`PipelineError`, and no worker is replaced.  :meth:`close` still has to be called."""
        self._closing = True
        self._workers.kill()

    def close(self, timeout: float = 5.0) -> None:
        """End the workers and unlink the slots.  An idle worker is told to stop and has ``timeout``
        seconds to; a busy one is killed at once, as its frame will not be collected."""
        self._closing = True
        self._workers.close(StopWorker(), idle=lambda i: i not in self._busy, timeout=timeout)
        if self.decoder.xp is not np:
            self.decoder.xp.cuda.Device().synchronize()     # copies from the slots may be queued
        for slot in self._slots:
            if slot is not None:
                slot.close(self.decoder.xp)
        self._slots = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
