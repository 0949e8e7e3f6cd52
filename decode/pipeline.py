"""The real-time decode pipeline: tier-1 in worker processes, reconstruction here.

Frames flow through in order (submission order is result order): the caller submits
codestreams; :class:`FramePipeline` parses each frame's headers here (the
plan is cached per reel), hands the entropy decoding (tier-2 and tier-1) to
one of N worker processes, which writes the coefficients straight into a
shared-memory slot laid out per subband (no pickling of arrays), and then
runs the reconstruction stage on the slot: CuPy kernels on the GPU, or the
numpy/numba stage on the CPU. While frame n is reconstructed, frames n+1 ..
n+N are in the workers. Slots are the back-pressure: at most ``depth``
frames are in flight and :meth:`FramePipeline.submit` waits for a free one.

A worker that raises (a corrupt frame) reports that frame's error, a
:class:`~cinegpu.decode.errors.CodestreamError`; a worker that dies (a crash)
fails only the frame it held with :class:`WorkerCrashed`, a
:class:`~cinegpu.decode.errors.PipelineError` (not bad input), and is replaced.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing as mp
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing import shared_memory
from multiprocessing.connection import wait
from typing import Callable

import numpy as np

from .decoder import Decoder, Frame, Prepared, check_components, finish_frame
from .errors import CodestreamError, PipelineError, WorkerCrashed
from .limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_PIXELS
from .shm import create_segment, reclaim_orphans
from .tier1.gpu import scratch_entries, work_order

log = logging.getLogger("cinegpu.decode")


@dataclass
class _Job:
    seq: int
    key: object
    prep: Prepared
    data: bytes
    slot: int
    worker: int = -1
    submitted: float = field(default_factory=time.perf_counter)


def tiny_codestream() -> bytes:
    """A valid 1x1 one-component codestream with one empty packet.

    Decoding it loads every numba kernel (from numba's cache) so a worker's
    first real frame is not slowed by compilation.
    """
    import struct

    siz = struct.pack(">HIIIIIIIIH3B", 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 7, 1, 1)
    cod = struct.pack(">BBHBBBBBB", 0, 0, 1, 0, 0, 4, 4, 0, 1)
    qcd = struct.pack(">BB", 0x40, 8 << 3)
    body = b"\x00"
    sot = struct.pack(">HIBB", 0, 14 + len(body), 0, 1)

    def seg(marker: int, payload: bytes) -> bytes:
        return struct.pack(">HH", marker, len(payload) + 2) + payload

    return (b"\xff\x4f" + seg(0xFF51, siz) + seg(0xFF52, cod) + seg(0xFF5C, qcd)
            + seg(0xFF90, sot) + b"\xff\x93" + body + b"\xff\xd9")


def _worker_main(conn, backend_unused: str) -> None:
    """Worker loop: decode frames into shared-memory slots.

    Coefficient mode (the GPU reconstructs): tier-2 and tier-1 write the
    coefficients into the slot. Sample mode (the CPU back end): the worker
    reconstructs too and writes each component's samples into the slot, one
    after another; int32 samples never need more room than the coefficients.
    """
    # the caller's prepare() checked each frame against its max_pixels / max_memory; the
    # work bound, tied to the input's size, holds here too
    decoder = Decoder("cpu", max_pixels=None, max_memory=None)
    decoder.decode(tiny_codestream())
    conn.send("ready")
    attached: dict[str, shared_memory.SharedMemory] = {}
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                return
            seq, data, shm_name, size, reduce, layers, strict, mode, components = msg
            try:
                shm = attached.get(shm_name)
                if shm is None:
                    for old in attached.values():  # slots are replaced when they grow
                        old.close()
                    attached.clear()
                    shm = shared_memory.SharedMemory(name=shm_name)
                    attached[shm_name] = shm
                prep = decoder.prepare(data, reduce=reduce, layers=layers, strict=strict)
                if prep.size != size:
                    raise CodestreamError(f"frame layout changed: {prep.size} coefficients, {size} planned")
                if mode == MODE_SEGMENTS:
                    segments, reports = decoder.tier2(prep)
                    # the GPU launch's work order and scratch size, worked out here, off the main process
                    arrays = [a for seg in segments for a in (seg.table, seg.seg_lengths, seg.seg_passes, seg.coded,
                                                              work_order(seg.table, seg.seg_passes))]
                    need = sum(-(-a.nbytes // 8) * 8 for a in arrays)
                    if need > shm.size:
                        conn.send((seq, ("grow", need), None, None))
                        continue
                    layout = _store_samples(shm, arrays)
                    layout.append([scratch_entries(seg.table) for seg in segments])
                    conn.send((seq, None, reports, layout))
                    continue
                samples = mode == MODE_SAMPLES
                coeffs = np.ndarray((size,), np.int32, buffer=shm.buf)
                _, reports = decoder.entropy_decode(prep, out=coeffs)
                layout = None
                if samples:
                    t0 = time.perf_counter()
                    planes = decoder.reconstruct(prep, coeffs, components)
                    layout = _store_samples(shm, planes)
                    layout.append(time.perf_counter() - t0)
                del coeffs
                conn.send((seq, None, reports, layout))
            except CodestreamError as exc:
                conn.send((seq, exc, None, None))
            except Exception as exc:  # a bug: report it with its traceback, keep serving
                conn.send((seq, PipelineError(f"worker error: {exc!r}\n{traceback.format_exc()}"), None, None))
    finally:
        for shm in attached.values():
            shm.close()


def _store_samples(shm, planes: list) -> list:
    """Write component planes back to back into ``shm``; return their layout."""
    layout = []
    offset = 0
    for plane in planes:
        if plane is None:
            layout.append(None)
            continue
        n = plane.nbytes
        view = np.ndarray(plane.shape, plane.dtype, buffer=shm.buf, offset=offset)
        view[...] = plane
        layout.append((offset, plane.shape, plane.dtype.str))
        offset += -(-n // 8) * 8
    return layout


def _load_samples(shm, layout: list, copy: bool = True) -> list:
    """Arrays out of ``shm``: copies (the slot is reused next) or views."""
    views = [None if item is None else np.ndarray(item[1], np.dtype(item[2]), buffer=shm.buf, offset=item[0])
             for item in layout]
    return [v.copy() if copy and v is not None else v for v in views]


#: What workers write into a slot: coefficients (the GPU reconstructs),
#: samples (the CPU back end: workers reconstruct too), or tier-1's input
#: arrays (GPU tier-1: workers run tier-2 only).
MODE_COEFFICIENTS, MODE_SAMPLES, MODE_SEGMENTS = "coefficients", "samples", "segments"


class _Slot:
    """A shared-memory buffer for one frame's coefficients (pinned if CUDA)."""

    def __init__(self, nbytes: int, xp) -> None:
        self.shm = create_segment(max(nbytes, 4))
        self.nbytes = nbytes
        self.pinned = False
        if xp is not np:
            try:
                xp.cuda.runtime.hostRegister(self.array_ptr, self.shm.size, 0)
                self.pinned = True
            except Exception as exc:  # quiet probe: fall back to pageable copies
                log.info("cannot pin shared memory for DMA (%s): pageable copies", exc)

    @property
    def array_ptr(self) -> int:
        return np.ndarray((1,), np.uint8, buffer=self.shm.buf).ctypes.data

    def view(self, size: int) -> np.ndarray:
        return np.ndarray((size,), np.int32, buffer=self.shm.buf)

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


@dataclass
class _GpuWork:
    """A frame's GPU work in flight: what :meth:`FramePipeline._settle` waits for and checks."""

    prep: Prepared
    submitted: float
    start: object          # CUDA events, recorded on the current stream
    tier1_done: object
    done: object
    statuses: list = field(default_factory=list)


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
                 reduce: int = 0, layers: int | None = None, strict: bool = False, components=None,
                 to_host: bool = True, gpu_tier1: bool | None = None,
                 max_pixels: int | None = DEFAULT_MAX_PIXELS, max_memory: int | None = DEFAULT_MAX_MEMORY,
                 cancelled: Callable[[], bool] | None = None) -> None:
        """``max_pixels``, ``max_memory``: as for :class:`Decoder`, checked as each frame is submitted.
        ``cancelled``: polled while the workers start and before a slot is made; once true,
        :class:`PipelineError` is raised there (a server shutting down does not wait for them)."""
        self.decoder = Decoder(backend, gpu_tier1=gpu_tier1, max_pixels=max_pixels, max_memory=max_memory)
        self.backend = self.decoder.backend
        reclaimed = reclaim_orphans()   # segments of pipelines whose process was killed
        if reclaimed:
            log.info("reclaimed %d shared-memory segment(s) left by killed processes", len(reclaimed))
        from .peers import cores

        self.num_workers = max(1, workers if workers is not None else cores() - 1)
        # twice the workers: a slow frame at the head of the line must not
        # leave the other workers without work while it is awaited
        self.depth = max(depth or 2 * self.num_workers + 2, 1)
        self.reduce, self.layers, self.strict = reduce, layers, strict
        self.components = components
        self.to_host = to_host
        if not self.decoder.selected.cuda:
            self.mode = MODE_SAMPLES  # the CPU back end reconstructs in the workers
        elif self.decoder.gpu_tier1:
            self.mode = MODE_SEGMENTS  # workers: tier-2; the GPU: tier-1 and reconstruction
        else:
            self.mode = MODE_COEFFICIENTS
        self._ctx = mp.get_context("spawn")
        self._workers: list[tuple] = []  # (process, connection)
        self._busy: dict[int, _Job] = {}  # worker index -> job
        self._queue: deque[_Job] = deque()
        self._done: dict[int, tuple] = {}
        self._slots: list[_Slot | None] = [None] * self.depth
        self._free = list(range(self.depth))
        self._seq = itertools.count()
        self._next_out = 0
        self._submitted = 0
        self.stats = {"frames": 0, "crashes": 0, "errors": 0, "reconstruct_s": 0.0, "wait_s": 0.0}
        self._closing = False
        self._cancelled = cancelled or (lambda: False)
        try:
            for i in range(self.num_workers):
                self._workers.append(self._start_worker())
            for i in range(self.num_workers):  # warm: numba kernels loaded before the first frame
                self._await_ready(i)
        except BaseException:       # a worker that failed to start, a cancel, a signal: end the others
            self.close(timeout=0)
            raise

    # --- workers ---------------------------------------------------------
    def _start_worker(self):
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(child, "cpu"), daemon=True,
                                 name="cinegpu-tier1")
        proc.start()
        child.close()
        return proc, parent

    def _await_ready(self, i: int, timeout: float = 300.0) -> None:
        proc, conn = self._workers[i]
        end = time.monotonic() + timeout
        while not conn.poll(0.05):      # in steps, to see a cancel or close within 50 ms
            if self._closing or self._cancelled():
                raise PipelineError(f"tier-1 worker {i}: the pipeline was closed while it started")
            if time.monotonic() > end:
                raise PipelineError(f"tier-1 worker {i} did not start within {timeout:.0f} s")
        try:
            msg = conn.recv()
        except EOFError:
            raise PipelineError(f"tier-1 worker {i} died while starting (exit code {proc.exitcode})") from None
        if msg != "ready":
            raise PipelineError(f"tier-1 worker {i} sent {msg!r} while starting")

    def _mode(self, prep: Prepared) -> str:
        """What the worker writes for this frame: a frame with HT code-blocks (Part 15) gets
        its tier-1 in the worker even when GPU tier-1 is on, as the CUDA kernel is EBCOT only."""
        if self.mode == MODE_SEGMENTS and not self.decoder.tier1_on_gpu(prep):
            return MODE_COEFFICIENTS
        return self.mode

    def _dispatch(self) -> None:
        if self._closing:       # the workers may be gone (abort): nothing more is sent
            raise PipelineError("the pipeline was closed with frames in flight")
        for i, (proc, conn) in enumerate(self._workers):
            if not self._queue:
                return
            if i in self._busy:
                continue
            job = self._queue.popleft()
            job.worker = i
            self._busy[i] = job
            slot = self._slots[job.slot]
            conn.send((job.seq, job.data, slot.shm.name, job.prep.size, self.reduce, self.layers,
                       self.strict, self._mode(job.prep), self.components))

    def _collect(self, timeout: float | None) -> None:
        """Wait for worker messages (or deaths) and finish those frames."""
        conns = {conn: i for i, (_, conn) in enumerate(self._workers)}
        sentinels = {proc.sentinel: i for i, (proc, _) in enumerate(self._workers)}
        ready = wait(list(conns) + list(sentinels), timeout)
        for r in ready:
            if r in conns:
                i = conns[r]
                try:
                    seq, err, reports, layout = r.recv()
                except (EOFError, OSError):
                    continue  # the sentinel reports the death
                job = self._busy.pop(i)
                assert job.seq == seq
                self._dispatch()  # keep the worker busy while this frame is reconstructed
                self._finish(job, err, reports, layout)
            else:
                i = sentinels[r]
                if i in self._busy or not self._workers[i][0].is_alive():
                    self._replace(i)

    def _replace(self, i: int) -> None:
        if self._closing:       # ended by abort(): a waiting get() or submit() stops here
            raise PipelineError("the pipeline was closed with frames in flight")
        proc, conn = self._workers[i]
        proc.join(timeout=1)
        conn.close()
        self.stats["crashes"] += 1
        job = self._busy.pop(i, None)
        log.warning("tier-1 worker %d died (exit code %s); replacing it", i, proc.exitcode)
        self._workers[i] = self._start_worker()
        self._await_ready(i)
        if job is not None:
            self._finish(job, WorkerCrashed(f"worker died (exit code {proc.exitcode}) decoding frame {job.seq}"), None)

    def _finish(self, job: _Job, err, reports, layout=None) -> None:
        if isinstance(err, tuple) and err[0] == "grow":  # the slot was too small: grow it, retry
            self._fit_slot(job.slot, err[1] + (1 << 20))
            self._queue.appendleft(job)
            self._dispatch()
            return
        if err is not None:
            self.stats["errors"] += 1
            self._done[job.seq] = (job.key, err, job.slot, None)
            return
        t0 = time.perf_counter()
        try:
            slot = self._slots[job.slot]
            components = check_components(self.components, job.prep.cs.siz.Csiz)
            if self._mode(job.prep) == MODE_SEGMENTS:
                frame, work = self._launch_on_gpu(job, slot, reports, layout, components)
                self._done[job.seq] = (job.key, frame, job.slot, work)
                self.stats["reconstruct_s"] += time.perf_counter() - t0
                return
            if layout is not None:  # the worker reconstructed: copy its samples out
                worker_s = layout.pop()
                frame = finish_frame(job.prep, _load_samples(slot.shm, layout), reports, components, worker_s)
                frame.timings["latency"] = time.perf_counter() - job.submitted
                self._done[job.seq] = (job.key, frame, job.slot, None)
                self.stats["reconstruct_s"] += time.perf_counter() - t0
                return
            coeffs = slot.view(job.prep.size)
            stage: dict[str, float] = {}
            out = self.decoder.reconstruct(job.prep, coeffs, components, to_host=self.to_host, timings=stage)
            frame = finish_frame(job.prep, out, reports, components, time.perf_counter() - t0)
            frame.timings.update(stage)
            frame.timings["latency"] = time.perf_counter() - job.submitted
            result = frame
        except CodestreamError as exc:
            result = exc
            self.stats["errors"] += 1
        self.stats["reconstruct_s"] += time.perf_counter() - t0
        self._done[job.seq] = (job.key, result, job.slot, None)

    def _launch_on_gpu(self, job: _Job, slot, reports, layout, components) -> tuple[Frame, "_GpuWork"]:
        """Queue tier-1 and reconstruction on the GPU from the worker's tier-2 arrays, without
        waiting: while they run, this process goes on receiving and launching later frames.
        :meth:`_settle` waits for them when the frame is handed out."""
        from .tile import TileSegments

        xp = self.decoder.xp
        t0 = time.perf_counter()
        work = _GpuWork(job.prep, job.submitted, *(xp.cuda.Event() for _ in range(3)))
        work.start.record()
        entries = layout.pop()
        arrays = _load_samples(slot.shm, layout, copy=False)
        segments = [TileSegments(coded=xp.asarray(arrays[k + 3]), table=arrays[k],
                                 seg_lengths=xp.asarray(arrays[k + 1]), seg_passes=xp.asarray(arrays[k + 2]),
                                 order=xp.asarray(arrays[k + 4]), entries=entries[k // 5])
                    for k in range(0, len(arrays), 5)]
        del arrays
        coeffs, work.statuses = self.decoder.tier1_gpu_launch(job.prep, segments)
        work.tier1_done.record()    # the slot's arrays have been read by then
        out = self.decoder.reconstruct(job.prep, coeffs, components, to_host=self.to_host)
        work.done.record()
        frame = finish_frame(job.prep, out, reports, components, 0.0)
        frame.timings["launch"] = time.perf_counter() - t0
        return frame, work

    def _settle(self, frame: Frame, work: "_GpuWork"):
        """Wait for a frame's GPU work; check its tier-1 statuses; the frame with the device
        times of its stages, or the :class:`CodestreamError` strict decoding raised."""
        xp = self.decoder.xp
        work.done.synchronize()
        try:
            self.decoder.tier1_gpu_check(work.prep, work.statuses, frame.reports)
        except CodestreamError as exc:
            self.stats["errors"] += 1
            return exc
        frame.timings["tier1"] = xp.cuda.get_elapsed_time(work.start, work.tier1_done) / 1e3  # uploads included
        frame.timings["gpu"] = xp.cuda.get_elapsed_time(work.tier1_done, work.done) / 1e3
        frame.timings["reconstruct"] = frame.timings["gpu"]
        frame.timings["latency"] = time.perf_counter() - work.submitted
        return frame

    # --- the caller's side -----------------------------------------------
    def submit(self, data: bytes, key=None) -> int:
        """Queue a frame; waits while ``depth`` frames are in flight.

        Header errors raise here at once (nothing is queued for that frame).
        """
        while not self._free:
            t0 = time.perf_counter()
            if self._busy or self._queue:
                self._collect(timeout=None)
            else:                       # every slot is held by GPU work not yet past tier-1
                self._wait_tier1()
            self._release_done_slots()
            self.stats["wait_s"] += time.perf_counter() - t0
        prep = self.decoder.prepare(data, reduce=self.reduce, layers=self.layers, strict=self.strict)
        slot_index = self._free.pop()
        self._fit_slot(slot_index, self._slot_bytes(prep, len(data)))
        seq = next(self._seq)
        self._queue.append(_Job(seq, key, prep, bytes(data), slot_index))
        self._submitted += 1
        self._dispatch()
        return seq

    def _slot_bytes(self, prep: Prepared, data_len: int) -> int:
        if self._mode(prep) == MODE_SEGMENTS:  # tier-1's inputs: about the codestream's size
            n_cb = sum(p.cb.shape[0] for p in prep.plans)
            return 2 * data_len + n_cb * (8 * 16) + (1 << 20)
        return prep.size * 4

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
        prep = self.decoder.prepare(data, reduce=self.reduce, layers=self.layers, strict=self.strict)
        nbytes = self._slot_bytes(prep, len(data))
        for index in self._free:
            self._fit_slot(index, nbytes)

    def _wait_tier1(self) -> None:
        for key, result, slot, work in self._done.values():
            if slot is not None and work is not None:
                work.tier1_done.synchronize()

    def _release_done_slots(self) -> None:
        # a finished frame's slot is free once it has been read: by reconstruction here,
        # or on the GPU, by the copies before tier-1 (known from its event, without waiting)
        for seq, (key, result, slot, work) in self._done.items():
            if slot is not None and (work is None or work.tier1_done.done):
                self._free.append(slot)
                self._done[seq] = (key, result, None, work)

    def get(self):
        """The next frame in submission order: (key, Frame, CodestreamError or PipelineError)."""
        if self._next_out >= self._submitted:
            raise LookupError("no frame in flight")
        while self._next_out not in self._done:
            self._dispatch()
            self._collect(timeout=None)
            self._release_done_slots()
        if self._done[self._next_out][3] is not None:
            self._collect(timeout=0)    # queue the GPU work of frames already back, behind this one
        key, result, slot, work = self._done.pop(self._next_out)
        if work is not None:
            result = self._settle(result, work)
        if slot is not None:
            self._free.append(slot)
        self._next_out += 1
        self._dispatch()
        if isinstance(result, Frame):
            self.stats["frames"] += 1
        return key, result

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
        for proc, _ in list(self._workers):
            proc.kill()

    def close(self, timeout: float = 5.0) -> None:
        """End the workers and unlink the slots.  An idle worker is told to stop and has ``timeout``
        seconds to; a busy one is killed at once, as its frame will not be collected."""
        self._closing = True
        end = time.monotonic() + timeout
        for i, (proc, conn) in enumerate(self._workers):
            if i in self._busy:
                proc.kill()
                continue
            try:
                conn.send(None)
            except OSError:
                pass
        for proc, conn in self._workers:
            proc.join(timeout=max(0.0, end - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=1)
            conn.close()
        self._workers = []
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
