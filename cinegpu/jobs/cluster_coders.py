"""Mastering's frames coded on a Dask cluster (:mod:`.cluster`): :class:`ClusterCoders`.

The same interface as :class:`.frame_coders.ThreadCoders` and ``ProcessCoders``: frames go
in by number (``submit(i)``) and their codestreams come back in submission order
(``next()``), at most ``window`` in flight (twice the cluster's worker threads, so that no
thread waits for work).  Each frame is one Dask task, :func:`code_cluster_frame`, keyed
``cinegpu-frame-<job>-<i>``: the worker reads frame ``i`` itself through the job's
picklable ``read`` where the workers see the input files at the same paths (shared storage,
:attr:`.cluster.ClusterAddress.shared_files`), or else is sent the frame, read here and
scattered to the cluster (to the worker that takes the task, over the cluster's TLS
connections; at most ``window`` frames held here at once; a scatter that meets a worker
lost a moment ago, before the scheduler has noticed, is tried again); it fits and encodes it
with the process's :class:`.frame_encode.FrameEncoders` for the job's encoding (made on its first frame and kept, :func:`worker_encoders`), and returns the
codestream's bytes, which the client fetches from the worker.  The job itself
(:class:`.master_job.FrameCoding`: ``read``, the image area, the encoders' settings) travels
once per worker, scattered to all of them, not once per frame.

A frame whose task fails (its :class:`.frame_coders.FrameFailed`, an exception, or Dask's
``KilledWorker`` when the workers running it died) is submitted once more under a new key;
a second failure is one :class:`.errors.MediaError` naming the frame.  The frames a lost
worker held but was not running, and the codestreams it held, Dask moves to or computes on
the other workers by itself.  With the ``cuda`` back end every task asks for a share of a
``GPU`` resource (:meth:`.cluster.Cluster.gpu_share`), so only GPU workers take frames.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from functools import lru_cache

import cinegpu
from cinegpu.jobs.cluster import Cluster
from cinegpu.jobs.frame_coders import Coded, FrameFailed, code_frame
from cinegpu.jobs.master_job import Encoding, FrameCoding
from cinegpu.media.errors import MediaError

__all__ = ["ClusterCoders", "code_cluster_frame", "worker_encoders"]


@lru_cache(maxsize=2)
def worker_encoders(encoding: Encoding):
    """This worker process's :class:`.FrameEncoders` for ``encoding``, made once and kept
    for the next frames (and jobs) with the same settings: its thread-local encoders and
    their geometry cache outlive a task.  On the GPU, the worker's first visible device
    (each worker's ``CUDA_VISIBLE_DEVICES`` names its GPU)."""
    return encoding.encoders(device=0 if encoding.backend == "cuda" else None)


def code_cluster_frame(job: FrameCoding, i: int, version: str | None = None, image=None) -> Coded | FrameFailed:
    """A Dask task: input frame ``i`` of ``job`` (``image``: the frame as sent, else read
    here through ``job.read``) fitted and encoded on this worker;
    its :class:`.frame_coders.Coded` (the codestream and its header), or the frame's MediaError as a :class:`.FrameFailed` (an exception
    of another kind too, as a plain MediaError naming the frame). ``version``: the cinegpu
    version of the machine writing the package; a worker of another version (one that
    joined after :func:`.cluster.check_versions`) codes nothing and says so."""
    if version is not None and version != cinegpu.__version__:
        return FrameFailed(i, "MediaError", None, f"frame {i}: a worker of cinegpu {cinegpu.__version__} "
                                                  f"took it, this machine runs {version}: install the "
                                                  f"same version on every machine")
    try:
        read = job.read if image is None else (lambda _i: image)
        return code_frame(worker_encoders(job.encoding), read, i, job.width, job.height,
                          placement=job.placement)
    except MediaError as exc:
        return FrameFailed.of(i, exc)
    except Exception as exc:              # read() of another kind than images_in's
        return FrameFailed(i, "MediaError", None, f"frame {i}: {type(exc).__name__}: {exc}")


class _Frame:
    """A frame in flight: its number, its future and its tries so far."""

    __slots__ = ("index", "future", "tries")

    def __init__(self, index: int, future, tries: int):
        self.index, self.future, self.tries = index, future, tries


class ClusterCoders:
    """Frames of ``job`` (a :class:`.master_job.FrameCoding`) coded on ``cluster`` (which this
    object closes: a local cluster is ended).  ``backend``: the encoder's, ``cpu`` or ``cuda``
    (GPU workers only)."""

    #: tries of a frame before its failure ends the job
    TRIES = 2
    #: tries of one scatter (a frame's image, the job) before it ends the job, and the pause
    #: before the next, in seconds (doubling)
    SCATTER_TRIES, SCATTER_PAUSE = 5, 0.25

    def __init__(self, cluster: Cluster, job: FrameCoding, backend: str, *, send_frames: bool = False):
        self.cluster = cluster
        #: whether frames are read here and sent (the workers do not see the input files)
        self.send_frames = send_frames
        nthreads = cluster.client.nthreads()
        #: the coders interface: the cluster's worker processes and their threads (the most
        #: of one worker), when the job started
        self.processes = max(1, len(nthreads))
        self.threads = max(nthreads.values(), default=1)
        #: frames in flight at most: twice the cluster's worker threads
        self.window = 2 * cluster.threads
        self._token = uuid.uuid4().hex[:12]
        self._resources = {"GPU": cluster.gpu_share()} if backend == "cuda" else None
        self._job = job
        self._scattered = None
        self._pending: deque[_Frame] = deque()

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def has_room(self) -> bool:
        """Whether another frame may be submitted now: fewer than :attr:`window` in flight."""
        return len(self._pending) < self.window

    def _job_future(self, again: bool = False):
        """The job, scattered to every worker (again: after a failure, in case the copies
        went with their workers)."""
        if self._scattered is None or again:
            self._scattered = self._scatter(self._job, "the job", broadcast=True)
        return self._scattered

    def _scatter(self, data, what: str, **options):
        """``data`` scattered to the cluster; a connection closed under it (a worker lost,
        which the scheduler has not yet removed) is tried again, up to
        :attr:`SCATTER_TRIES` times, then is one MediaError naming ``what``."""
        pause = self.SCATTER_PAUSE
        for attempt in range(1, self.SCATTER_TRIES + 1):
            try:
                return self.cluster.client.scatter(data, hash=False, **options)
            except OSError as exc:        # distributed's CommClosedError, a timeout
                if attempt == self.SCATTER_TRIES:
                    raise MediaError(None, f"{what}: cannot send it to the cluster at "
                                           f"{self.cluster.where}: {type(exc).__name__}: "
                                           f"{exc}") from exc
                time.sleep(pause)
                pause *= 2

    def _submit(self, i: int, tries: int) -> _Frame:
        key = f"cinegpu-frame-{self._token}-{i}" + (f"-try{tries + 1}" if tries else "")
        # sent: read here (a reading error is the frame's MediaError, raised here) and scattered
        image = self._scatter(self._job.read(i), f"frame {i}") if self.send_frames else None
        future = self.cluster.client.submit(code_cluster_frame, self._job_future(tries > 0),
                                            i, cinegpu.__version__, image, key=key, pure=False,
                                            resources=self._resources)
        return _Frame(i, future, tries)

    def submit(self, i: int) -> None:
        self._pending.append(self._submit(i, 0))

    def next(self) -> Coded:
        """The oldest frame submitted, coded; a frame that failed twice raises
        its MediaError here."""
        frame = self._pending[0]
        while True:
            failure = self._outcome(frame)
            if not isinstance(failure, (FrameFailed, str)):
                self._pending.popleft()
                return failure
            frame.tries += 1
            if frame.tries >= self.TRIES:
                self._pending.popleft()
                if isinstance(failure, FrameFailed):
                    raise failure.error()
                raise MediaError(None, f"frame {frame.index}: failed {frame.tries} times on "
                                       f"the cluster at {self.cluster.where}: {failure}")
            again = self._submit(frame.index, frame.tries)
            frame.future.release()
            frame.future = again.future

    def _outcome(self, frame: _Frame):
        """The frame's bytes, its FrameFailed, or a line saying why its task failed."""
        try:
            return frame.future.result()
        except Exception as exc:          # KilledWorker, a lost dependency, a worker's bug
            text = str(exc).split(". ")[0].strip() or "no message"
            return f"{type(exc).__name__}: {text}"

    def stop(self) -> None:
        """Nothing to begin ending: :meth:`close` disconnects (as ``ProcessCoders.stop``)."""

    def close(self, abort: bool = False) -> None:
        """Disconnect (a local cluster ends); ``abort``: cancel the frames in flight
        first."""
        try:
            if abort and self._pending:
                self.cluster.client.cancel([f.future for f in self._pending], force=True)
            self._pending.clear()
        finally:
            self.cluster.close()
