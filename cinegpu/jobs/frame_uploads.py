"""The one seam between image files and the GPU encoder: :class:`FrameUploads` takes an input
frame from its file to an encoder process's encoders by one of five paths, and
:class:`UploadSettings` holds the five switches that may turn paths off.

A 4K 16-bit TIFF frame is 53 MB; how it reaches the GPU decides much of what mastering costs
the host (docs/performance.md, "Reading and uploads").  An uncompressed RGB TIFF frame is one
run of bytes in its file (:func:`cinegpu.media.images.frames.tiff_run`, a
:class:`cinegpu.encode.mapped_upload.FileRun`), which the GPU paths of
:mod:`cinegpu.encode` take as it is stored:

- ``direct``: a run not in the page cache (:func:`cinegpu.encode.direct_read.cold`, asked once
  a frame) is read ``O_DIRECT`` through the thread's ring, so that no core copies it;
- ``mapped``: a run in memory is copied up from the file's own pages, locked for the GPU
  (:class:`cinegpu.encode.mapped_upload.MappedUploads`), where a turn to lock pages is free;
- ``ring``: else it is read through a small page-locked ring, each chunk copied up while the
  next is read (:class:`cinegpu.encode.ring_upload.RingUploads`);
- ``staged``: where no GPU path took it, or the frame must be fitted to the image area (a
  size not the area's, or a ``--crop``/``--scale`` that moves its pixels), the run is read
  into the encoder's page-locked input buffer (:func:`cinegpu.media.images.frames.read_run`,
  the header not parsed again), which the encoder sends up whole and fits on its GPU
  (:meth:`cinegpu.jobs.frame_encode.FrameEncoders.encode_fitted`);
- ``read``: any other frame is read by its reader
  (:class:`cinegpu.media.images.frames.ImageFrames`: the file parsed and decoded, into that
  buffer where it can be; a video frame for a GPU encoder as its decoder's Y'CbCr planes,
  :meth:`cinegpu.media.video.frames.VideoFrames.planes`, which the GPU makes R'G'B').

Each encoder process reads the switches once (:meth:`UploadSettings.of`), and each of its
threads keeps its own mapped uploader and rings.  :meth:`FrameUploads.up` is the whole policy.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping

from cinegpu.encode import direct_read
from cinegpu.encode.mapped_upload import TURNS, FileRun, MappedUploads
from cinegpu.encode.ring_upload import RingUploads
from cinegpu.media.images.frames import ImageFrames, read_run
from cinegpu.media.video.ycbcr import YCbCrPlanes, to_rgb48

__all__ = ["PATHS", "FrameUploads", "Upload", "UploadSettings"]

#: The paths a frame can take to the encoder (:attr:`Upload.path`), as :mod:`.frame_uploads`
#: describes them.
PATHS = ("direct", "mapped", "ring", "staged", "read")


@dataclass(frozen=True)
class UploadSettings:
    """The switches of the upload paths: for benchmarks, and for a machine where a path
    misbehaves (docs/performance.md, "Tuning").  ``mapped``: a frame in memory may go up
    straight from its file (``CINEGPU_MAPPED_UPLOADS=off``: never); ``turns``: threads of the
    machine that may lock file pages at once (``CINEGPU_MAPPED_TURNS=N``; every process of a
    job must use the same); ``ring``: a frame not taken from its file goes through the ring
    (``CINEGPU_RING_UPLOADS=off``: read whole into the page-locked buffer); ``direct``: a
    frame not in the page cache is read ``O_DIRECT`` (``CINEGPU_DIRECT_READS=off``: the usual
    way); ``planes``: a video frame goes to a GPU encoder as its decoder's Y'CbCr planes
    (``CINEGPU_VIDEO_PLANES=off``: converted to R'G'B' by libswscale on the host)."""

    mapped: bool = True
    turns: int = TURNS
    ring: bool = True
    direct: bool = True
    planes: bool = True

    @classmethod
    def of(cls, environ: Mapping[str, str]) -> UploadSettings:
        """The settings ``environ`` (``os.environ``) holds: a path is off where its variable
        is ``off``; ValueError for a ``CINEGPU_MAPPED_TURNS`` that is not a positive integer."""
        text = environ.get("CINEGPU_MAPPED_TURNS", "").strip()
        turns = TURNS
        if text:
            try:
                turns = int(text)
            except ValueError:
                turns = 0
            if turns < 1:
                raise ValueError(f"CINEGPU_MAPPED_TURNS must be a positive integer, got {text!r}")
        return cls(mapped=environ.get("CINEGPU_MAPPED_UPLOADS", "on") != "off", turns=turns,
                   ring=environ.get("CINEGPU_RING_UPLOADS", "on") != "off",
                   direct=environ.get("CINEGPU_DIRECT_READS", "auto") != "off",
                   planes=environ.get("CINEGPU_VIDEO_PLANES", "on") != "off")


@dataclass(frozen=True)
class Upload:
    """An input frame on its way to the encoder: ``image`` ((H, W, 3) samples as stored: a
    CuPy array on the encoder's device, its copies queued on the encoder's stream, for the
    paths ``direct``, ``mapped`` and ``ring``; else a host array, in the encoder's page-locked
    input buffer where it has one; or, for a video frame going to a GPU, its decoder's
    planes, a :class:`cinegpu.media.video.ycbcr.YCbCrPlanes`) and the ``path`` it took (one
    of :data:`PATHS`)."""

    image: Any
    path: str

    @property
    def mapped(self) -> bool:
        """Whether it went up straight from its file."""
        return self.path == "mapped"

    @property
    def direct(self) -> bool:
        """Whether it was sent through the ring to be read ``O_DIRECT``, not being in the page
        cache (the ring reads it the usual way where the file cannot be opened so)."""
        return self.path == "direct"


class FrameUploads:
    """How input frames reach the encoders of one encoder process, ``encoders`` (a
    :class:`.frame_encode.FrameEncoders`: whether it takes frames as stored on its GPU,
    ``uploads_runs``; its page-locked input buffer, ``input_buffer(shape, dtype)``; its
    thread's device and stream, ``on_stream()``), by the paths ``settings`` leaves on.  Each
    thread gets its own mapped uploader (``mapped()``; default a
    :class:`cinegpu.encode.mapped_upload.MappedUploads` of the settings' turns) and ring
    (``ring()``; default a :class:`cinegpu.encode.ring_upload.RingUploads`), made at its first
    frame that needs them; :meth:`close` closes them."""

    def __init__(self, encoders, settings: UploadSettings = UploadSettings(), *,
                 mapped: Callable[[], Any] | None = None, ring: Callable[[], Any] | None = None):
        self.encoders = encoders
        self.settings = settings
        self._make = {"mapped": mapped or partial(MappedUploads, turns=settings.turns),
                      "ring": ring or RingUploads}
        self._local = threading.local()
        self._made: list = []           # every thread's uploaders, closed by close()
        self._lock = threading.Lock()

    def up(self, read, i: int, width: int, height: int, placement=None) -> Upload:
        """Input frame ``i`` of ``read`` for the encoder, which fits it to ``width`` x
        ``height`` pixels (as ``placement`` says: a :class:`.geometry.Placement`, None the
        default ``fit``).  Only a frame the placement leaves as it is (no crop, its size the
        area's) goes up to the GPU straight from its file; any other is read on the host first
        (``staged``, ``read``) and fitted by the encoders.  A reading error is the MediaError
        ``read`` raises."""
        if not isinstance(read, ImageFrames):       # not image files: as read gives it
            planes = self.planes(read, i)
            return Upload(read(i) if planes is None else planes, "read")
        # where the encoder takes frames as stored on its GPU, an uncompressed RGB TIFF frame
        # is located in its file by its header, once
        run = read.run(i) if self.encoders.uploads_runs else None
        as_is = placement is None or placement.identity
        if run is not None and as_is and run.shape[:2] == (height, width):   # needs no fitting
            sent = self.send(run)
            if sent is not None:
                return sent
        if run is not None:              # into the page-locked buffer, the header not parsed again
            image = read_run(run, self.encoders.input_buffer)
            if image is not None:
                return Upload(image, "staged")
        # parsed and decoded (a damaged file named), into that buffer where it can be
        return Upload(read(i, out=self.encoders.input_buffer), "read")

    def planes(self, read, i: int) -> YCbCrPlanes | None:
        """Frame ``i`` of ``read`` as its decoder's Y'CbCr planes where it goes up so: a video
        frame (``read.planes``, :class:`cinegpu.media.video.frames.VideoFrames`: None for
        pixel formats the GPU does not convert) for encoders that take frames on their GPU,
        the switch on; else None."""
        offer = getattr(read, "planes", None)
        if offer is None or isinstance(read, ImageFrames) or not self.settings.planes or \
                not self.encoders.uploads_runs:
            return None
        return offer(i)

    def host_image(self, read, i: int):
        """Frame ``i`` of ``read`` on the host as the encoders are given it, before fitting:
        a video frame that goes up as planes (:meth:`planes`) made R'G'B' by the GPU's
        twin (:func:`cinegpu.media.video.ycbcr.to_rgb48`: the same samples), any other as
        ``read`` gives it.  What a report measures the coded frames against."""
        planes = self.planes(read, i)
        return read(i) if planes is None else to_rgb48(planes)

    def send(self, run: FileRun) -> Upload | None:
        """``run`` to the GPU by the first path that takes it (the GPU half of :meth:`up`),
        or None where none does (the file is gone or shorter than its run, no turn to lock
        pages was free and the ring is off...)."""
        cold = self.settings.direct and direct_read.cold(run)    # asked once a frame
        if not cold and self.settings.mapped:   # in memory: its pages locked, where a turn is free
            image = self._upload("mapped", run)
            if image is not None:
                return Upload(image, "mapped")
        if self.settings.ring:                  # on storage: O_DIRECT; in memory: the usual read
            image = self._upload("ring", run, cold)
            if image is not None:
                return Upload(image, "direct" if cold else "ring")
        return None

    def _upload(self, name: str, run: FileRun, *how):
        """``run`` sent up by this thread's ``name`` uploader, on the encoder's stream."""
        uploader = getattr(self._local, name, None)
        if uploader is None:
            uploader = self._make[name]()
            setattr(self._local, name, uploader)
            with self._lock:
                self._made.append(uploader)
        with self.encoders.on_stream():
            return uploader.upload(run, *how)

    @property
    def direct_reads(self) -> int:
        """Runs the threads' rings have read ``O_DIRECT`` so far."""
        with self._lock:
            return sum(getattr(u, "direct_reads", 0) for u in self._made)

    def close(self) -> None:
        """Close every thread's uploaders (their last copies waited for, their files
        unlocked, their page-locked memory freed)."""
        with self._lock:
            made, self._made = self._made, []
        for uploader in made:
            uploader.close()
