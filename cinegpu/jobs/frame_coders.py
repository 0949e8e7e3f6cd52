"""Where mastering's frames are read and encoded: threads of this process, or encoder processes.

Both kinds take input frames by number (``submit(i)``) and hand back their codestreams in
submission order (``next()``), with at most ``window`` frames in flight; each frame is read
(``read(i)``), fitted to the image area (:func:`cinegpu.media.images.frames.fit`; on the GPU where
the encoders code there) and encoded
(:class:`.frame_encode.FrameEncoders`) by :func:`code_frame`.

- :class:`ThreadCoders`: a thread pool in this process (the encoders release the GIL while
  the device, numba or OpenJPEG works).  The CPU back end and single-process runs use it.
- :class:`ProcessCoders`: spawned encoder processes, each with its own threads, its own
  encoders on one GPU (:func:`.frame_encode.device_for`: the processes take the GPUs in
  turn) and its own GIL; each reads and decodes its frames itself (``read`` must pickle, as
  :class:`.images_in.ImageFrames` does), so only frame numbers go out and codestreams come
  back, through a shared-memory slot per frame in flight (the reply names it; a codestream
  larger than :data:`SLOT_BYTES`, or where /dev/shm has no room, through the pipe).  On one
  GPU, threads of one process are bound by the host: 4 processes of 4 threads
  encoded 2K frames 2.3x as fast as 8 threads of one (see
  :meth:`.FrameEncoders.default_processes`).

The messages between this process and an encoder process are the frozen dataclasses below,
pickled through the process's pipe: :class:`CoderSetup` (its first message), then
the worker pool's :class:`~cinegpu.decode.workers.Ready` or :class:`~cinegpu.decode.workers.Broken`
(:class:`~cinegpu.decode.workers.Busy` meanwhile, for each kernel compiled); per frame a :class:`CodeFrame`, answered by
:class:`FrameCoded` or :class:`FrameFailed` (the frame's :class:`.errors.MediaError`, rebuilt
here as the same kind); :class:`StopCoder` ends it.  A process that dies mid-job, or fails to
start, is one MediaError naming the frames it held; Ctrl-C and SIGTERM reach only this process,
which ends the encoder processes (see :meth:`ProcessCoders.close`).
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing import shared_memory
from typing import Callable, NamedTuple

import numpy as np

from cinegpu.decode.kernel_cache import skip_blas_probe
from cinegpu.decode.shm import SHM_FOLDER, create_segment, reclaim_orphans
from cinegpu.decode.workers import START_SILENCE_S, Broken, Ready, WorkerPool, announce_compiles
from cinegpu.jobs.frame_dealing import FrameDealer
from cinegpu.jobs.master_job import FrameCoding
from cinegpu.jobs.mps import mps_serves
from cinegpu.media import errors
from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.write import J2KHeader

__all__ = ["SLOT_BYTES", "CodeFrame", "Coded", "CoderSetup", "FrameCoded",
           "FrameFailed", "FrameTiming", "ProcessCoders", "StopCoder", "ThreadCoders",
           "code_frame", "device_environ"]


class Coded(NamedTuple):
    """A coded frame: its codestream and what the track file repeats of the main header its
    encoder wrote (:meth:`.FrameEncoders.last_header`, the encoder's own parse; None from the
    OpenJPEG stand-in), which the writer takes instead of parsing the codestream again."""

    codestream: bytes
    header: J2KHeader | None = None


def code_frame(encoders, read: Callable[[int], np.ndarray], i: int, width: int,
               height: int, stamps: list | None = None, placement=None) -> Coded:
    """Input frame ``i``: read and taken to ``encoders`` by their upload seam
    (:meth:`.frame_uploads.FrameUploads.up`: which path, and why), fitted to ``width`` x
    ``height`` (as ``placement`` says: a :class:`.geometry.Placement`, None the default
    ``fit``; on the GPU where the encoders code there, :meth:`.FrameEncoders.encode_fitted`)
    and encoded.  A reading error stays the MediaError ``read`` raised; the
    encoder's own failure becomes a MediaError naming the frame and the encoder.  ``stamps``:
    a list to which are appended the ``time.monotonic()`` and the thread's
    ``time.thread_time()`` at which the frame had been read, whether it went up straight from
    its file and whether it was sent to be read ``O_DIRECT`` (:class:`.frame_uploads.Upload`)."""
    frame = encoders.uploads.up(read, i, width, height, placement=placement)
    if stamps is not None:
        stamps += [time.monotonic(), time.thread_time(), frame.mapped, frame.direct]
    try:
        return Coded(encoders.encode_fitted(frame.image, width, height, placement), encoders.last_header())
    except MediaError:
        raise
    except Exception as exc:
        raise MediaError(None, f"frame {i}: {encoders.name} failed: "
                               f"{type(exc).__name__}: {exc}") from exc


class ThreadCoders:
    """Frames coded by ``threads`` threads of this process with ``encoders``, each fitted as
    ``placement`` says (:func:`code_frame`)."""

    def __init__(self, encoders, read: Callable[[int], np.ndarray], width: int, height: int,
                 threads: int, placement=None):
        self.processes, self.threads = 1, threads
        #: frames in flight at most: twice the threads, so that none waits for work
        self.window = 2 * threads
        self._args = (encoders, read, width, height)
        self._placement = placement
        self._pool = ThreadPoolExecutor(threads)
        self._pending: deque = deque()

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def has_room(self) -> bool:
        """Whether another frame may be submitted now: fewer than :attr:`window` in flight."""
        return len(self._pending) < self.window

    def submit(self, i: int) -> None:
        self._pending.append(self._pool.submit(code_frame, *self._args[:2], i, *self._args[2:],
                                               placement=self._placement))

    def next(self) -> Coded:
        """The oldest frame submitted, coded (its MediaError raised here)."""
        return self._pending.popleft().result()

    def stop(self) -> None:
        """Nothing to begin ending: :meth:`close` does it (as :meth:`ProcessCoders.stop`)."""

    def close(self, abort: bool = False) -> None:
        """Wait for the threads; ``abort``: drop the frames not started and do not wait for
        those being coded (they only return bytes)."""
        self._pool.shutdown(wait=not abort, cancel_futures=abort)


#: bytes of one codestream slot in an encoder process's shared memory (:class:`ProcessCoders`):
#: a DCI frame at 250 Mbit/s and 24 fps is at most 1.3 MB; a larger codestream (HTJ2K
#: lossless, say) goes through the pipe
SLOT_BYTES = 2 << 20


# -- messages ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CoderSetup:
    """An encoder process's start arguments: what coding a frame of the job needs
    (:class:`.master_job.FrameCoding`: how to read a frame, ``read(i)``, picklable; the image
    area; the encoders' settings), its CUDA device (None on the CPU), its threads, and the
    environment variables it sets before CUDA starts in it (:func:`device_environ`,
    :meth:`.mps.PrivateMPS.device_environ`)."""

    coding: FrameCoding
    device: int | None
    threads: int
    environ: dict | None = None
    #: the process's shared memory for codestreams: (segment name, bytes a slot), or None
    slots: tuple[str, int] | None = None


@dataclass(frozen=True)
class CodeFrame:
    """Code input frame ``index``; ``seq`` numbers the request; ``slot``: the slot of the
    process's shared memory its codestream may be written to (None: none)."""

    seq: int
    index: int
    slot: int | None = None


@dataclass(frozen=True)
class StopCoder:
    """End the encoder process once its frames are coded."""


@dataclass(frozen=True)
class FrameCoded:
    """The codestream of request ``seq``; ``began``, ``read`` and ``ended``: when a thread of
    the encoder process took it, had read its input frame and had coded it
    (``time.monotonic()`` seconds, one clock for every process of the machine).  Between
    processes ``data`` is None in the message: the codestream's ``length`` bytes are in
    the request's shared-memory ``slot`` (:class:`ProcessCoders`), or, where it has none or
    the codestream does not fit, follow as one raw message (``send_bytes``; not pickled, it
    is copied twice less: receiving a 1.3 MB frame took 0.53-0.69 ms of CPU here, against
    0.91-0.99 ms pickled).  ``cpu``: the thread's CPU seconds (``time.thread_time``) reading
    and coding the frame; ``stages``: the encoder's (stage, seconds) of it
    (:meth:`.FrameEncoders.last_timings`)."""

    seq: int
    data: bytes | None
    began: float = 0.0
    read: float = 0.0
    ended: float = 0.0
    slot: int | None = None
    length: int = 0
    cpu: tuple[float, float] = (0.0, 0.0)
    stages: tuple = ()
    #: the frame went to the GPU straight from its file (:attr:`.frame_uploads.Upload.mapped`)
    mapped: bool = False
    #: the frame was read ``O_DIRECT``, not being in the page cache (:func:`code_frame`)
    direct: bool = False
    #: the main header its encoder wrote, as the track file repeats it (:class:`Coded`)
    header: J2KHeader | None = None


@dataclass(frozen=True)
class FrameTiming:
    """One coded frame's way through :class:`ProcessCoders` (``time.monotonic()`` seconds):
    sent to encoder process ``process`` (on GPU ``device``, None on the CPU), taken by one
    of its threads, read, coded, and read back here; the thread's CPU seconds reading and
    coding it and the encoder's (stage, seconds) (:class:`FrameCoded`)."""

    seq: int
    process: int
    device: int | None
    submitted: float
    began: float
    read: float
    ended: float
    received: float
    cpu: tuple[float, float] = (0.0, 0.0)
    stages: tuple = ()
    mapped: bool = False
    direct: bool = False


@dataclass(frozen=True)
class FrameFailed:
    """Request ``seq`` failed with a :class:`.MediaError` of kind ``kind`` (its class name in
    :mod:`.errors`), ``path``, ``reason`` and ``offset``."""

    seq: int
    kind: str
    path: str | None
    reason: str
    offset: int | None = None

    @classmethod
    def of(cls, seq: int, exc: MediaError) -> "FrameFailed":
        return cls(seq, type(exc).__name__, exc.path, exc.reason, exc.offset)

    def error(self) -> MediaError:
        """The MediaError again, of the same kind (a plain MediaError for an unknown kind)."""
        kind = getattr(errors, self.kind, MediaError)
        if not (isinstance(kind, type) and issubclass(kind, MediaError)):
            kind = MediaError
        return kind(self.path, self.reason, self.offset)


def device_environ(device: int, environ) -> dict:
    """What an encoder process on GPU ``device`` (as this process numbers it: an index into
    CUDA_VISIBLE_DEVICES if ``environ`` sets it) sets before CUDA starts in it, so that it
    sees that GPU alone, as its GPU 0: CUDA 12+ otherwise also made a context on GPU 0 in
    every encoder process (16 there with 16 processes over 4 GPUs).  Nothing where an MPS
    of the user's serves (:func:`.mps.mps_serves`: its server numbers the GPUs its own way);
    a private MPS of the job's numbers them as this process does
    (:meth:`.mps.PrivateMPS.device_environ`)."""
    if mps_serves(environ):
        return {}
    shown = environ.get("CUDA_VISIBLE_DEVICES")
    if shown is None or not shown.strip():
        return {"CUDA_VISIBLE_DEVICES": str(device)}
    entries = [e.strip() for e in shown.split(",")]
    if not 0 <= device < len(entries) or not entries[device]:
        raise ValueError(f"GPU {device} is not among CUDA_VISIBLE_DEVICES={shown!r}")
    return {"CUDA_VISIBLE_DEVICES": entries[device]}


def _coder_main(conn) -> None:
    """An encoder process: take its :class:`CoderSetup` (the first message), then code each
    :class:`CodeFrame` on ``setup.threads`` threads and answer each in turn as it is done,
    until :class:`StopCoder` (or the main process is gone).  ``setup.environ`` is set before
    CUDA starts in the process; where it names the one GPU the process sees, that is its
    GPU 0."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the main process's to handle
    skip_blas_probe()                                 # a process of cinegpu's own: numba starts sooner
    try:
        setup = conn.recv()
    except (EOFError, OSError):
        os._exit(1)
    quiet = announce_compiles(conn)     # a first run's compiles are work, not silence
    try:
        device = setup.device
        os.environ.update(setup.environ or {})
        if device is not None and "CUDA_VISIBLE_DEVICES" in (setup.environ or {}):
            device = 0
        encoders = setup.coding.encoding.encoders(device)
        segment, slot_bytes = None, 0
        if setup.slots is not None:
            segment = shared_memory.SharedMemory(name=setup.slots[0])
            slot_bytes = setup.slots[1]
    except Exception as exc:
        conn.send(Broken(f"{type(exc).__name__}: {exc}"))
        return
    finally:
        quiet()
    conn.send(Ready())
    lock = threading.Lock()

    def one(task: CodeFrame) -> None:
        began, cpu0, stamps = time.monotonic(), time.thread_time(), []
        try:
            coding = setup.coding
            data, header = code_frame(encoders, coding.read, task.index, coding.width, coding.height,
                                      stamps, coding.placement)
            ended, cpu1 = time.monotonic(), time.thread_time()
            slot = task.slot if segment is not None and len(data) <= slot_bytes else None
            if slot is not None:
                segment.buf[slot * slot_bytes:slot * slot_bytes + len(data)] = data
            reply = FrameCoded(task.seq, None, began, stamps[0], ended, slot, len(data),
                               (stamps[1] - cpu0, cpu1 - stamps[1]),
                               tuple(encoders.last_timings().items()), stamps[2], stamps[3], header)
        except MediaError as exc:
            reply = FrameFailed.of(task.seq, exc)
        except Exception as exc:          # read() of another kind than images_in's
            reply = FrameFailed(task.seq, "MediaError", None,
                                f"frame {task.index}: {type(exc).__name__}: {exc}")
        try:
            with lock:
                conn.send(reply)
                if isinstance(reply, FrameCoded) and reply.slot is None:
                    conn.send_bytes(data)
        except OSError:                   # the main process is gone
            os._exit(1)

    pool = ThreadPoolExecutor(setup.threads, thread_name_prefix="cinegpu-encode")
    try:
        while True:
            task = conn.recv()
            if isinstance(task, StopCoder):
                break
            pool.submit(one, task)
    except (EOFError, OSError):           # the main process is gone: nothing to answer to
        os._exit(1)
    pool.shutdown()
    encoders.close()
    if segment is not None:
        segment.close()


class ProcessCoders:
    """Frames coded by ``processes`` encoder processes started with ``setup(p)`` (a
    :class:`CoderSetup` per process ``p``); close() when done.  ``start_silence``: seconds
    a starting process may go without a word (it reports each kernel it compiles, so a first
    run's minutes of compiling count as work)."""

    def __init__(self, setup: Callable[[int], CoderSetup], processes: int,
                 start_silence: float = START_SILENCE_S, timeline: list | None = None,
                 slot_bytes: int = SLOT_BYTES, runs: bool = False):
        self.processes = processes
        self._setups = [setup(p) for p in range(processes)]
        self.threads = self._setups[0].threads
        #: frames in flight per process: twice its threads, so that none waits for work
        self.capacity = 2 * self.threads
        #: who codes which frame: with ``runs`` (a video file, each process decoding it in
        #: order) a process's threads' worth of consecutive frames at a time, else one by one
        self._dealer = FrameDealer(processes, self.capacity, self.threads if runs else 1)
        self.window = processes * self.capacity
        #: coded frames that may wait here for an older one (the writer takes them in
        #: order): as many again as the processes hold, so that one slow frame at the head
        #: does not leave the other processes without work
        self.reorder = self.window
        #: where each coded frame's :class:`FrameTiming` is appended (None: not kept)
        self.timeline = timeline
        self._sent: dict[int, float] = {}            # seq -> when submitted (timeline)
        #: the processes; their connections and sentinels are registered once with its
        #: selector (a ``wait()`` per call registered all of them again: 40-80 us of this
        #: thread's CPU a frame)
        self._pool = WorkerPool(_coder_main, processes, name="encoder process", error=self._error,
                                process_name="cinegpu-encoder", where=self._where)
        self._stopped: set[int] = set()              # processes told to stop (stop())
        self._held: list[dict[int, int]] = []        # per process: seq -> input frame
        self._done: dict[int, FrameCoded | FrameFailed] = {}
        self._seq = itertools.count()
        self._next = 0
        #: per process its shared memory for codestreams (None: the pipe), its free slots,
        #: and the slot of each request in flight
        self.slot_bytes = slot_bytes
        self._segments: list = []
        self._free: list[list[int]] = []
        self._slot_of: dict[int, int] = {}
        try:
            self._segments = self._make_segments(processes)
            self._free = [list(range(self.capacity)) if seg is not None else []
                          for seg in self._segments]
            # the setups (a frame list may be large) go through each process's pipe once all
            # have started: as start() arguments, a setup larger than the pipe's buffer held
            # start() until that process had imported this module, so the processes started
            # one after another (16 processes of 3,840 frames: 8-9 s to ready, 4 s with 16)
            self._held = [{} for _ in self._setups]
            self._pool.start()
            for p, s in enumerate(self._setups):
                seg = self._segments[p]
                try:
                    self._pool.send(p, s if seg is None else replace(s, slots=(seg.name, slot_bytes)))
                except MediaError:
                    raise self._pool.ended(p, "while starting") from None
            for p in range(processes):
                self._pool.await_ready(p, start_silence)
        except BaseException:
            self.close(abort=True)
            raise

    def _make_segments(self, processes: int) -> list:
        """Each process's shared memory of :attr:`capacity` codestream slots of
        :attr:`slot_bytes`, where /dev/shm has room for all of them twice over (a segment
        is filled lazily: writing past the room left would kill the writer); else None
        each, and codestreams go through the pipes."""
        need = processes * self.capacity * self.slot_bytes
        try:
            room = os.statvfs(SHM_FOLDER)
        except OSError:
            return [None] * processes
        if self.slot_bytes <= 0 or room.f_bavail * room.f_frsize < 2 * need:
            return [None] * processes
        reclaim_orphans()
        return [create_segment(self.capacity * self.slot_bytes) for _ in range(processes)]

    def _where(self, p: int) -> str:
        d = self._setups[p].device
        return f"encoder process {p}" + ("" if d is None else f" (GPU {d})")

    @staticmethod
    def _error(text: str) -> MediaError:
        return MediaError(None, text)

    @property
    def in_flight(self) -> int:
        return sum(len(h) for h in self._held) + len(self._done)

    def has_room(self) -> bool:
        """Whether another frame may be submitted now: a process holds fewer than
        :attr:`capacity` frames (room for a whole run where frames go in runs), and fewer than
        :attr:`reorder` coded frames wait for an older one. (Counting the waiting frames against the processes' own window instead
        made every process wait for the slowest one's frame at the head of the line.  Reading
        the replies already in the pipes here, at every call, did not help: it was slower on 4
        GPUs, docs/performance.md; :meth:`next` reads them once a frame instead.)"""
        return self._dealer.has_room([len(h) for h in self._held]) and len(self._done) < self.reorder

    def submit(self, i: int) -> None:
        """Send input frame ``i`` (frames come in order) to the process the dealer picks
        (:class:`.frame_dealing.FrameDealer`: the one holding the fewest, or the one whose run
        it continues)."""
        p = self._dealer.deal([len(h) for h in self._held])
        seq = next(self._seq)
        if self.timeline is not None:
            self._sent[seq] = time.monotonic()
        slot = self._free[p].pop() if self._free and self._free[p] else None
        if slot is not None:
            self._slot_of[seq] = slot
        try:
            self._pool.conns[p].send(CodeFrame(seq, i, slot))
        except OSError:                   # it ended since it last answered
            self._ended(p)
        self._held[p][seq] = i

    def next(self) -> Coded:
        """The oldest frame submitted, coded (its MediaError raised here).  The
        replies already waiting in every pipe are taken first, so that a process whose
        frames are coded counts as free in :meth:`has_room` even while the head frame is
        here already: without this, coded frames waited several times as long to be read back
        on 2 GPUs (docs/performance.md, "Several GPUs")."""
        for reply, p in self._pool.wait(0):
            if reply:
                self._read(p)
        while self._next not in self._done:
            self._collect()
        reply = self._done.pop(self._next)
        self._next += 1
        if isinstance(reply, FrameFailed):
            raise reply.error()
        return Coded(reply.data, reply.header)

    def _collect(self) -> None:
        """Wait for replies; a process that ended is a MediaError naming its frames."""
        ready = self._pool.wait(None)
        for reply, p in ready:
            if reply:
                self._read(p, once=True)
        for reply, p in ready:
            if not reply:
                self._ended(p)

    def _ended(self, p: int) -> None:
        """Process ``p`` ended before it was told to: one MediaError naming its frames."""
        self._read(p)                     # what it answered before it ended
        frames = ", ".join(map(str, sorted(self._held[p].values()))) or "none"
        raise self._pool.ended(p, f"while coding frame(s) {frames}")

    def _read(self, p: int, once: bool = False) -> None:
        """Take process ``p``'s replies waiting in its pipe (``once``: one), until its end."""
        conn = self._pool.conns[p]
        while True:
            try:
                if not once and not conn.poll(0):
                    return
                reply = conn.recv()
                if isinstance(reply, FrameCoded) and reply.data is None and reply.slot is None:
                    reply = replace(reply, data=conn.recv_bytes())
            except (EOFError, OSError):   # it ended: its sentinel says so
                return
            slot = self._slot_of.pop(reply.seq, None)
            if slot is not None:          # the reply read: the slot is free again
                if isinstance(reply, FrameCoded) and reply.slot is not None:
                    at = slot * self.slot_bytes
                    reply = replace(reply, data=bytes(self._segments[p].buf[at:at + reply.length]))
                self._free[p].append(slot)
            self._held[p].pop(reply.seq, None)
            self._done[reply.seq] = reply
            if self.timeline is not None and isinstance(reply, FrameCoded):
                self.timeline.append(FrameTiming(
                    reply.seq, p, self._setups[p].device, self._sent.pop(reply.seq, 0.0),
                    reply.began, reply.read, reply.ended, time.monotonic(), reply.cpu,
                    reply.stages, reply.mapped, reply.direct))
            if once:
                return

    def stop(self) -> None:
        """Tell every encoder process that holds no frame to stop, without waiting for it: the
        processes end (their GPU contexts torn down) while the caller finishes its package;
        :meth:`close` then waits for them."""
        for p, conn in enumerate(self._pool.conns):
            if conn is None or p in self._stopped or self._held[p]:
                continue
            try:
                conn.send(StopCoder())
            except OSError:
                pass
            self._stopped.add(p)

    def close(self, abort: bool = False, timeout: float = 10.0) -> None:
        """End the encoder processes: an idle one is told to stop (unless :meth:`stop` has)
        and has ``timeout`` seconds to; one still holding frames (or all, with ``abort``) is
        killed at once."""
        self._pool.close(StopCoder(), idle=lambda p: not abort and not self._held[p], timeout=timeout)
        for seg in self._segments:
            if seg is not None:
                seg.close()
                seg.unlink()
        self._segments = []
