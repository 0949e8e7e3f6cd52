"""Frame sources: what the player asks for pictures, without ever waiting on a decode.

The interface (duck-typed; the multi-process decode pipeline will provide another):

- ``frame_count``, ``edit_rate`` (Fraction or None), ``width``, ``height``, ``backend`` (name);
- ``want(frames, start=0)``: the media frames the clock will show next, due one first; the
  source keeps pictures of these, starts decoding from ``frames[start:]`` in that order (the
  player skips the frames that could not be ready in time) and may forget the others;
- ``latency``: seconds one frame takes from the start of its decode to its picture (0 unknown);
- ``decoded``: pictures produced so far (the summary's decode rate over a playback);
- ``burst`` (optional): frames the source decodes at once when asked from idle; the
  player has that many ready before its clock runs;
- ``get(n)``: the RGBA16 picture (numpy or CuPy (H, W, 4) uint16) of frame ``n`` if it is
  ready, else None; never blocks; raises :class:`FrameError` if that frame failed;
- ``pin(n)`` / ``unpin(n)``: frames that must be decoded even if the clock passes them
  (screenshots), kept until unpinned;
- ``decode_fps``: pictures produced per second, recently; ``close()``.

:class:`DecodeAheadSource` does it with worker threads over a
:class:`cinegpu.media` source (``Decoder`` releases the GIL in its numba parts);
:class:`ArraySource` serves pictures already in memory (tests, display benchmarks).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import replace
from fractions import Fraction
from typing import Callable, Sequence

from cinegpu.decode.backend import gpu_tier1_of, select_backend
from cinegpu.decode.errors import BackendUnavailable, CodestreamError, PipelineError
from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.j2k_profile import parse_profile

from .picture import PictureConverter, is_xyz
from .resolution import ResolutionGovernor, upscale

__all__ = ["FRAME_ERRORS", "FrameError", "DecodeAheadSource", "ArraySource"]

log = logging.getLogger("cinegpu.player")

#: Frames whose decode times make up a source's ``latency``.
LATENCY_FRAMES = 16
#: The most resolution levels playback drops when decoding cannot keep up (1/4 of the width).
MAX_REDUCE = 2
#: Seconds at one level after which the pictures delivered (``decode_fps``, over its 2 s
#: window) count as a measure of capacity, when below DELIVERY_SHARE of the playback rate.
DELIVERY_WINDOW = 2.5
DELIVERY_SHARE = 0.8
#: Frames searched, from the first, for a readable main header (the picture's format).
PROBE_FRAMES = 24
#: Seconds a source's ``close()`` waits for its decoders by default (the server's whole shutdown
#: must fit in 3 s).
CLOSE_SECONDS = 1.0
#: What reading and decoding one frame may raise: bad input (CodestreamError, MediaError), a
#: frame the pipeline lost (PipelineError), a decoder that cannot be made (BackendUnavailable),
#: a file that cannot be read (OSError).  Such a frame fails alone (a :class:`FrameError`, which
#: the player conceals); anything else is a bug and is not hidden as a damaged frame.
FRAME_ERRORS = (CodestreamError, MediaError, PipelineError, BackendUnavailable, OSError)


class FrameError(RuntimeError):
    """Frame ``n`` could not be read or decoded; ``cause`` is the original exception."""

    def __init__(self, n: int, cause: BaseException) -> None:
        super().__init__(f"frame {n}: {type(cause).__name__}: {cause}")
        self.n, self.cause = n, cause


class _Rate:
    """Events per second over the last ``window`` seconds."""

    def __init__(self, window: float = 2.0, now: Callable[[], float] = time.perf_counter) -> None:
        self._times: collections.deque[float] = collections.deque()
        self._window, self._now = window, now

    def add(self) -> None:
        self._times.append(self._now())

    def rate(self) -> float:
        now = self._now()
        while self._times and self._times[0] < now - self._window:
            self._times.popleft()
        if len(self._times) < 2:
            return 0.0
        span = now - self._times[0]
        return (len(self._times) - 1) / span if span > 0 else 0.0


class ArraySource:
    """Pictures already in memory; frame n shows ``pictures[n % len(pictures)]``."""

    def __init__(self, pictures: Sequence, frame_count: int | None = None, edit_rate=None,
                 backend: str = "memory") -> None:
        if not pictures:
            raise ValueError("no pictures")
        self.pictures = list(pictures)
        self.frame_count = frame_count or len(self.pictures)
        self.edit_rate = None if edit_rate is None else Fraction(edit_rate)
        self.height, self.width = self.pictures[0].shape[:2]
        self.backend = backend
        self.decode_fps = 0.0
        self.decoded = 0
        self.latency = 0.0

    def want(self, frames, start: int = 0) -> None:
        pass

    def get(self, n: int):
        return self.pictures[n % len(self.pictures)]

    def pin(self, n: int) -> None:
        pass

    def unpin(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def first_profile(media, parse_profile):
    """The main header of the first readable frame among the first :data:`PROBE_FRAMES`.

    An unreadable frame (empty, not JPEG 2000, a broken index entry) is logged and later
    concealed by the player like any frame that fails; a MediaError when none is readable.
    """

    reasons = []
    for n in range(min(PROBE_FRAMES, media.frame_count)):
        if n == 0 and getattr(media, "profile", None) is not None:
            return media.profile   # parsed when the source opened
        try:
            return parse_profile(media.frame(n), getattr(media, "path", None))
        except MediaError as exc:
            log.warning("frame %d: %s", n, exc)
            reasons.append(exc)
    where = getattr(media, "path", None)
    last = f" (frame {len(reasons) - 1}: {reasons[-1].reason})" if reasons else ""
    raise CorruptMedia(where, f"none of the first {len(reasons)} frames has a readable JPEG 2000 "
                            f"main header{last}")


class _AheadSource:
    """What both decoding sources share: media facts, the wanted/pinned/ready
    bookkeeping under one condition variable, and the rate and latency
    figures. Subclasses start their producers and call :meth:`_store`."""

    def _setup(self, media, backend: str, colour: str, primaries: str, depth: int,
               auto_resolution: bool = True) -> None:
        self.media = media
        self.frame_count = media.frame_count
        self.edit_rate = media.edit_rate
        self.depth = max(1, depth)
        self.backend = backend
        first = first_profile(media, parse_profile)
        self.width = media.width or first.width
        self.height = media.height or first.height
        self.xyz = is_xyz(colour, getattr(media, "kind", None), first.Rsiz)
        self._precisions = [c[0] for c in first.components]
        # X'Y'Z' host pictures are left to the display to convert (the presenter's shader): in
        # numpy here the transform took about 0.7 s a 4K frame, which no CPU playback could afford
        self._convert = PictureConverter(self.xyz, primaries, device=backend == "cuda",
                                         ycbcr=bool(getattr(media, "ycbcr", False)) and not self.xyz, planar=True)
        self._cond = threading.Condition()
        self._wanted: list[int] = []
        self._start = 0
        self._pinned: set[int] = set()
        self._ready: dict[int, object] = {}
        self._busy: set[int] = set()  # frames being decoded
        self._closed = False
        self._rate = _Rate()
        self._took: collections.deque[float] = collections.deque(maxlen=LATENCY_FRAMES)
        self.decoded = 0
        #: the resolution decoded next (:mod:`.resolution`): lowered while decoding cannot keep
        #: up with the playback rate given to :meth:`pace`, raised again when it can
        most = min(MAX_REDUCE, getattr(first, "levels", MAX_REDUCE)) if auto_resolution else 0
        self.governor = ResolutionGovernor(most)
        self._ready_level: dict[int, int] = {}
        self._parallel = 1          # decoders working side by side (set by the subclass)
        #: decode times of the frames finished at the current level (the governor's measure;
        #: not each decoder's first frame, which pays for warm-up: kernels loaded, caches filled)
        self._judged: collections.deque[float] = collections.deque(maxlen=LATENCY_FRAMES)
        #: decode times of every frame at the current level, each decoder's first included:
        #: enough to see decoding far too slow before the measure above is there
        self._at_level: collections.deque[float] = collections.deque(maxlen=LATENCY_FRAMES)
        self._level_since = time.monotonic()   # when this level (or playback) started
        self._playing = False
        #: frames decoded at each resolution level (0 = full)
        self.levels: collections.Counter[int] = collections.Counter()

    @property
    def latency(self) -> float:
        """Seconds one frame's decode takes: the median of the last :data:`LATENCY_FRAMES`
        (a median, so the first frames' warm-up, kernel compiles included, does not linger)."""
        with self._cond:
            took = sorted(self._took)
        return took[len(took) // 2] if took else 0.0

    @property
    def decode_fps(self) -> float:
        return self._rate.rate()

    @property
    def level(self) -> int:
        """The resolution level frames are decoded at now (0 = full, n = 1/2^n)."""
        return self.governor.level

    @property
    def capacity(self) -> float:
        """Frames/s this source can decode at the current level: its decoders side by side
        over the median decode time of a frame (0 while unknown)."""
        with self._cond:
            took = sorted(self._judged)
        return self._parallel / took[len(took) // 2] if took and took[len(took) // 2] > 0 else 0.0

    def pace(self, rate: float) -> None:
        """The playback rate the clock runs at now, frames/s (0 when paused): the governor
        compares the capacity with it; a new level starts a new measure.  Pictures delivered
        well below the rate for a whole window at this level count too (a stage the estimate
        does not see: the pipeline's one-at-a-time picture conversion, say)."""
        capacity = self.capacity
        delivered = self._rate.rate()
        if rate > 0 and not self._playing:          # the window starts with playback too
            self._level_since = time.monotonic()
        self._playing = rate > 0
        if (rate > 0 and time.monotonic() - self._level_since >= DELIVERY_WINDOW
                and delivered < DELIVERY_SHARE * rate):
            capacity = min(capacity, delivered) if capacity > 0 else delivered
        with self._cond:
            level = self.governor.level
            first = sorted(self._at_level)
            first = self._parallel / first[len(first) // 2] if first and first[len(first) // 2] > 0 else 0.0
            if self.governor.observe(capacity, float(rate), len(self._judged), first) != level:
                self._judged.clear()
                self._at_level.clear()
                self._level_since = time.monotonic()

    def want(self, frames, start: int = 0) -> None:
        with self._cond:
            self._start = max(0, start)
            self._wanted = list(frames)[: self._start + self.depth]
            keep = set(self._wanted) | self._pinned
            for n in [n for n in self._ready if n not in keep]:
                del self._ready[n]
                self._ready_level.pop(n, None)
            self._cond.notify_all()

    def get(self, n: int):
        with self._cond:
            v = self._ready.get(n)
        if isinstance(v, FrameError):
            raise v
        return v

    def pin(self, n: int) -> None:
        """Keep frame ``n`` (a screenshot's): decoded at full resolution, again if it was
        decoded reduced."""
        with self._cond:
            self._pinned.add(n)
            if self._ready_level.get(n, 0) > 0:
                del self._ready[n]
                del self._ready_level[n]
            self._cond.notify_all()

    def unpin(self, n: int) -> None:
        with self._cond:
            self._pinned.discard(n)

    def _close_producers(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _level_for(self, n: int) -> int:
        """The resolution level to decode frame ``n`` at (under the lock): full for a pinned
        frame (a screenshot shows the real picture), else the governor's."""
        return 0 if n in self._pinned else self.governor.level

    def _next_job(self) -> int | None:
        for n in [*self._wanted[self._start:], *sorted(self._pinned)]:
            if n not in self._ready and n not in self._busy:
                return n
        return None

    def _picture(self, n: int, frame, level: int = 0):
        """The RGBA16 picture of a decoded frame (decoded ``level`` resolution levels down:
        brought back to the presentation size), or the FrameError."""
        try:
            picture = upscale(self._convert(frame.components, self._precisions), level,
                              self.height, self.width)
            if tuple(picture.shape[:2]) != (self.height, self.width):
                raise UnsupportedMedia(None, f"a {picture.shape[1]}x{picture.shape[0]} frame in a "
                                             f"{self.width}x{self.height} sequence")
            if self._convert.device:
                import cupy  # noqa: PLC0415  (optional: CuPy)
                cupy.cuda.get_current_stream().synchronize()
            return picture
        except (MediaError, MemoryError, ValueError) as exc:  # content it cannot show; no memory for the picture
            log.warning("frame %d: %s", n, exc)
            return FrameError(n, exc)

    def _store(self, n: int, picture, took: float | None, level: int = 0) -> None:
        with self._cond:
            self._busy.discard(n)
            if (n in self._wanted or n in self._pinned) and not (n in self._pinned and level > 0):
                self._ready[n] = picture
                self._ready_level[n] = level
            self._rate.add()
            self.decoded += 1
            self.levels[level] += 1
            if took:
                self._took.append(took)
                if level == self.governor.level:
                    self._at_level.append(took)     # the governor's first look, first frames included
                    if self.decoded > self._parallel:
                        self._judged.append(took)   # its measure, past each decoder's first frame
            self._cond.notify_all()


class DecodeAheadSource(_AheadSource):
    """Decodes the frames the player wants next in ``workers`` threads, ``depth`` ahead.

    ``media``: a :mod:`cinegpu.media` source (``frame(n) -> bytes``).  ``backend``: the
    :class:`~cinegpu.decode.decoder.Decoder` back end ("cpu", "cuda", "auto"); with "cuda"
    pictures are CuPy arrays.  ``colour``: "auto", "xyz" or "rgb" (see :mod:`.picture`).
    ``auto_resolution``: decode at 1/2 or 1/4 of the size while decoding cannot keep up with
    the rate given to :meth:`pace` (:mod:`.resolution`); False: always full.  ``tier1``: where
    tier-1 runs with the CUDA back end (:data:`~cinegpu.decode.backend.TIER1_PLACES`).
    X'Y'Z' host pictures come as :class:`~cinegpu.interop.xyz.XYZPlanes`, for the display to
    convert.
    """

    def __init__(self, media, *, backend: str = "cpu", colour: str = "auto", primaries: str = "p3d65",
                 workers: int = 1, depth: int = 8, decoder_factory: Callable | None = None,
                 auto_resolution: bool = True, tier1: str = "auto") -> None:
        from cinegpu.decode.decoder import Decoder  # noqa: PLC0415  (start-up: the decoder, ~80 ms)

        selected = select_backend(backend)
        gpu_tier1 = gpu_tier1_of(tier1)
        if gpu_tier1:       # refused (a CPU back end) here, before any thread, by the Decoder's rule
            Decoder(selected.name, gpu_tier1=True)
        self._setup(media, selected.name, colour, primaries, depth, auto_resolution)
        self._factory = decoder_factory or (lambda: Decoder(self.backend, gpu_tier1=gpu_tier1))
        self._threads = [threading.Thread(target=self._work, name=f"decode-ahead-{i}", daemon=True)
                         for i in range(max(1, workers))]
        self._parallel = len(self._threads)
        for t in self._threads:
            t.start()

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop the decode threads, waiting at most ``timeout`` seconds: a thread in the middle of a
        frame (numba code, which cannot be interrupted) is left to finish it alone (a daemon)."""
        self._close_producers()
        end = time.monotonic() + timeout
        for t in self._threads:
            t.join(timeout=max(0.0, end - time.monotonic()))

    def _work(self) -> None:
        decoder = None
        while True:
            with self._cond:
                while not self._closed and (n := self._next_job()) is None:
                    self._cond.wait()
                if self._closed:
                    return
                self._busy.add(n)
                level = self._level_for(n)
            t0 = time.perf_counter()
            try:
                if decoder is None:
                    decoder = self._factory()
                frame = decoder.decode(self.media.frame(n), strict=False, reduce=level)
                result = self._picture(n, frame, level)
            except FRAME_ERRORS as exc:  # a bad frame is reported to the player, not fatal
                log.warning("frame %d: %s", n, exc)
                result = FrameError(n, exc)
            self._store(n, result, time.perf_counter() - t0, level)


class PipelineSource(_AheadSource):
    """Decodes with the multi-process :class:`~cinegpu.decode.pipeline.FramePipeline`.

    Tier-1 runs in ``workers`` processes; reconstruction and the output
    transform run on the GPU (CUDA back end: the picture never leaves the
    device) or in the workers (CPU back end). One feeder thread submits the
    frames the player wants, in its order, up to ``depth`` in flight, and
    converts finished frames to pictures. Same interface as
    :class:`DecodeAheadSource`.
    """

    def __init__(self, media, *, backend: str = "auto", colour: str = "auto", primaries: str = "p3d65",
                 workers: int | None = None, depth: int | None = None,
                 cancelled: Callable[[], bool] | None = None, auto_resolution: bool = True,
                 tier1: str = "auto") -> None:
        """``cancelled``: polled while the workers start (see :class:`FramePipeline`).
        ``auto_resolution``: as :class:`DecodeAheadSource`. ``tier1``: where tier-1 runs
        (:data:`~cinegpu.decode.backend.TIER1_PLACES`; "cpu": in the workers, the GPU
        reconstructing)."""
        from cinegpu.decode.pipeline import FramePipeline  # noqa: PLC0415  (start-up: the decode pipeline, ~0.14 s)

        self._pipe = FramePipeline(backend=backend, workers=workers, depth=depth, to_host=False,
                                   cancelled=cancelled, gpu_tier1=gpu_tier1_of(tier1))
        try:
            self._setup(media, self._pipe.backend, colour, primaries, self._pipe.depth, auto_resolution)
            self.burst = self._pipe.depth       # a frame in every slot
            self._parallel = self._pipe.num_workers
            try:
                self._pipe.reserve(media.frame(0))  # shared memory made before the clock runs
            except (CodestreamError, MediaError, OSError) as exc:  # a damaged first frame: slots made as frames come
                log.info("could not reserve pipeline slots from frame 0: %s", exc)
        except BaseException:       # bad media, or a signal: no worker or slot outlives this
            self._pipe.close(timeout=0)
            raise
        self._thread = threading.Thread(target=self._feed, name="pipeline-feeder", daemon=True)
        self._thread.start()

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop within about ``timeout`` seconds whatever is going on: the workers are ended at once
        (a frame mid-decode is abandoned, which wakes the feeder waiting on it), then the slots are
        unlinked.  A feeder that does not stop in time (still parsing a header) is left behind."""
        end = time.monotonic() + timeout
        self._close_producers()
        self._pipe.abort()
        self._thread.join(timeout=max(0.0, end - time.monotonic()))
        if self._thread.is_alive():
            log.warning("the pipeline feeder did not stop within %.1f s; closing the pipeline under it", timeout)
        self._pipe.close(timeout=max(0.0, end - time.monotonic()))

    def _feed(self) -> None:
        pipe = self._pipe
        while True:
            with self._cond:
                while not self._closed and pipe.in_flight == 0 and self._next_job() is None:
                    self._cond.wait(0.5)
                if self._closed:
                    return
                n = self._next_job() if pipe.in_flight < pipe.depth else None
                if n is not None:
                    self._busy.add(n)
            if n is not None:
                self._submit(n)
                continue
            try:
                (n, level), result = pipe.get()
            except (PipelineError, OSError):
                if self._closed:    # close() ended the workers under this wait (or a send to one)
                    return
                raise
            self._publish(n, result, level)

    def _submit(self, n: int) -> None:
        with self._cond:
            level = self._level_for(n)
        request = self._pipe.request if level == 0 else replace(self._pipe.request, reduce=level)
        try:
            self._pipe.submit(self.media.frame(n), key=(n, level), request=request)
        except FRAME_ERRORS as exc:  # unreadable media or header damage: report this frame only
            if self._closed:        # close() ended the workers while this waited for a slot
                return
            log.warning("frame %d: %s", n, exc)
            self._store(n, FrameError(n, exc), None)

    def _publish(self, n: int, result, level: int = 0) -> None:
        if isinstance(result, Exception):
            log.warning("frame %d: %s", n, result)
            self._store(n, FrameError(n, result), None, level)
            return
        # the time one frame takes, not its wait in the queue: the clock
        # asks for frames early enough from the pipeline's throughput
        took = sum(result.timings.get(k, 0.0) for k in ("parse", "tier2", "tier1", "reconstruct"))
        self._store(n, self._picture(n, result, level), took, level)
