"""Video files in for mastering: the picture of a QuickTime, MP4, MXF or Matroska file, frame by
frame, through FFmpeg's libraries (PyAV: libavformat, libavcodec, libswscale; no ffmpeg process).

:func:`open_video` probes a file once: its first video stream's size (checked against a limit
before any pixel is decoded, as :mod:`.images.frames` checks an image's header), its frame
rate as an exact Fraction (``avg_frame_rate``; 24000/1001 stays 24000/1001), its colour tags
(ITU-T H.273 code points, as FFmpeg's ``AVColorPrimaries``, ``AVColorTransferCharacteristic``,
``AVColorSpace`` and ``AVColorRange`` number them) and its exact frame count (the first frame
and the last frames decoded; the container's own count is only where to look).  The result is
a :class:`VideoFrames`, a frozen, picklable value (the path and these facts, never an open
file) whose call reads frame ``i`` (0-based, presentation order) as ``(H, W, 3)`` uint16 R'G'B'
(white 65535), the stored samples of :class:`.images.frames.ImageFrames`: decoded at the
stream's own depth (8 to 16 bits) and converted once by libswscale to ``rgb48le`` with the
stream's matrix and range, so 10- and 12-bit sources keep every level.

Frame ``i`` is the frame whose presentation time is ``start + i / rate`` (``start``: the first
frame's).  A frame more than :data:`GRID_TOLERANCE` of a frame off that grid, or a step other
than one frame between two decoded frames, is a variable frame rate (or a damaged stream) and
a :class:`.errors.UnsupportedMedia` naming the frame.

Each process (and mastering's encoder processes and cluster workers, which get a pickled copy)
opens a file once: :func:`_decoder` is an ``lru_cache`` of open decoders keyed by the
:class:`VideoFrames` value (a few at most; an evicted one closes when it is collected).  Its
threads share it under a lock: a frame asked for is decoded forward from the last one where it
lies within reach (:data:`READERS_COUNTED` says how far), or from the keyframe before it after
a seek, and frames decoded on the way that no one asked for yet are kept (at most
:data:`AHEAD_BYTES`, or the frames within reach where they are more) for the threads that will;
the conversion to R'G'B' runs outside the lock.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import ClassVar

import av
import numpy as np

if int(av.__version__.split(".")[0]) < 18:      # Interpolation flags, index entries, Discard
    raise ImportError(f"PyAV 18 or later is needed to read video files, not {av.__version__}")

from av.stream import Discard  # noqa: E402  (after the version check)
from av.video.reformatter import ColorRange, Interpolation  # noqa: E402  (after the version check)

from cinegpu.decode.cpus import usable_cores
from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.images.frames import max_input_size
from cinegpu.media.video import VIDEO_SUFFIXES, is_video
from cinegpu.media.video.ycbcr import MATRICES, PIX_FMTS, YCbCrPlanes

__all__ = ["VIDEO_SUFFIXES", "VideoFrames", "discard_others", "is_video", "open_video"]

#: How far a frame's presentation time may lie off the frame grid, in frames.
GRID_TOLERANCE = Fraction(1, 4)
#: Bytes of decoded frames kept for threads that will ask for them (per open file).
AHEAD_BYTES = 512 << 20
#: Reader threads an open file counts.  An intra-only stream (every frame a keyframe) is
#: decoded forward, rather than sought, across one frame more than its readers: a process's
#: threads ask for frames a few apart, each the next of its own, so the frames between are
#: theirs (kept, :data:`AHEAD_BYTES`), where a seek would flush libavcodec's frame threads;
#: further on they are another process's (mastering deals a video file's frames to its
#: encoder processes in runs, :mod:`cinegpu.jobs.frame_dealing`), and decoding them would be
#: work thrown away.  A long-GOP stream is decoded forward across two
#: seconds, a seek costing the decode from a keyframe.
READERS_COUNTED = 64
#: Most decoder threads of an open file (libavcodec's frame or slice threads): one a usable
#: core up to this.  Four capped a 4K ProRes 422 HQ read at 25 fps on the 16-core GPU machine
#: (a frame takes about 160 ms on one core), under the 48 fps its encoder takes.
DECODER_THREADS = 16
#: How far a stream's average frame rate may lie from its base rate (a fraction of it).
AVERAGE_TOLERANCE = Fraction(1, 200)
#: Seeks tried, each further back, before a frame is given up as unreachable.
SEEK_TRIES = 8
#: The libswscale conversion: bicubic chroma, full chroma interpolation, accurate rounding.
SWS_FLAGS = Interpolation.BICUBIC | Interpolation.FULL_CHR_H_INT | Interpolation.ACCURATE_RND

# H.273 code points (FFmpeg's AVColor* enumerations).
_PRIMARIES = {1: "rec709", 2: None, 5: "rec709", 6: "rec709", 7: "rec709",
              10: "xyz", 11: "dcip3", 12: "p3d65"}
_PRIMARY_NAMES = {1: "BT.709", 2: "untagged", 4: "BT.470 M", 5: "BT.601 625", 6: "BT.601 525",
                  7: "SMPTE 240M", 8: "generic film", 9: "BT.2020", 10: "CIE XYZ",
                  11: "DCI-P3 (RP 431-2)", 12: "P3-D65 (EG 432-1)", 22: "EBU Tech 3213"}
_REFUSED_TRANSFERS = {8: "linear light", 16: "SMPTE ST 2084 (PQ)", 18: "ARIB STD-B67 (HLG)"}
#: Matrices libswscale converts (AVColorSpace; 2 unspecified is read as BT.709).
_MATRICES = {0: "RGB", 1: "BT.709", 2: "BT.709 (untagged)", 4: "FCC", 5: "BT.601", 6: "BT.601", 7: "SMPTE 240M",
             9: "BT.2020", 10: "BT.2020"}
_MPEG, _JPEG = 1, 2


@dataclass(frozen=True)
class VideoFrames:
    """A video file's frames: ``frames(i)`` is frame ``i`` as (H, W, 3) uint16 R'G'B'.

    ``path`` and its ``stream`` (index in the container); the file's ``identity`` (size in
    bytes, mtime in ns: a file changed since it was probed is refused); ``width`` x ``height``
    in pixels (checked against ``limit``); ``rate`` in frames/s; ``count`` frames; ``start``,
    the first frame's presentation time in ``time_base`` units (s); ``codec``, ``pix_fmt`` and
    ``bits`` (per sample) as decoded; ``primaries``, ``transfer``, ``matrix``, ``range``: the
    H.273 tags; ``intra``: every frame a keyframe (a seek costs one frame); ``sound``: the
    container's audio streams (their indices)."""

    path: str
    stream: int
    identity: tuple[int, int]
    width: int
    height: int
    rate: Fraction
    count: int
    start: int
    time_base: Fraction
    codec: str
    pix_fmt: str
    bits: int
    primaries: int
    transfer: int
    matrix: int
    range: int
    intra: bool
    sound: tuple[int, ...] = ()
    limit: tuple[int, int] | None = None
    #: decoded in order: a reader (a process of mastering's) does best with runs of
    #: consecutive frames, each further frame reached by decoding the ones before it
    sequential: ClassVar[bool] = True

    def __len__(self) -> int:
        return self.count

    def __call__(self, i: int, out=None) -> np.ndarray:
        """Frame ``i`` (0-based, presentation order) as (H, W, 3) uint16 R'G'B', white 65535;
        ``out`` is not used (the image readers' page-locked buffer: :func:`.read_image`).
        MediaError naming the file and the frame."""
        return self._read(i, self.to_rgb)

    def planes(self, i: int) -> YCbCrPlanes | None:
        """Frame ``i``'s Y'CbCr planes as decoded (views of the decoder's buffers, no copy),
        for a GPU to make R'G'B' of (:mod:`.ycbcr`), where this stream's pixel format and
        matrix are ones :func:`.ycbcr.to_rgb48` takes; None where they are not (then
        ``self(i)``).  The same MediaErrors as ``self(i)``."""
        if self.pix_fmt not in PIX_FMTS or self.matrix not in (*MATRICES, 2):
            return None
        return self._read(i, self._planes_of)

    def _read(self, i: int, convert):
        """``convert`` of decoded frame ``i``, errors as :meth:`__call__` says."""
        if not 0 <= i < self.count:
            raise MediaError(self.path, f"frame {i}: the file has frames 0 to {self.count - 1}")
        try:
            return convert(self.decoded(i))
        except MediaError:
            raise
        except av.FFmpegError as exc:
            raise CorruptMedia(self.path, f"frame {i}: cannot decode: {_said(exc)}") from None
        except (OSError, ValueError, RuntimeError, MemoryError) as exc:
            raise CorruptMedia(self.path, f"frame {i}: {type(exc).__name__}: {exc}") from None

    def _planes_of(self, frame) -> YCbCrPlanes:
        """A decoded frame's planes (:meth:`planes`), its size checked as :meth:`to_rgb`
        checks it."""
        self._check_frame(frame)
        if frame.format.name != self.pix_fmt:
            raise UnsupportedMedia(self.path, f"a frame of {frame.format.name} samples in a "
                                              f"{self.pix_fmt} stream")
        bits, shift, full = PIX_FMTS[self.pix_fmt]
        dtype = np.uint8 if bits == 8 else np.dtype("<u2")
        chroma = -(-self.width >> shift)                    # rounded up, as libavutil does
        widths = (self.width, chroma, chroma)
        views = []
        for plane, width in zip(frame.planes[:3], widths):
            rows = np.frombuffer(plane, dtype).reshape(plane.height, -1)
            views.append(rows[:self.height, :width])
        kr, kb = MATRICES.get(self.matrix, MATRICES[1])             # untagged: BT.709
        return YCbCrPlanes(*views, bits=bits, shift=shift, kr=kr, kb=kb,
                           full_range=full or self.range == _JPEG)

    def _check_frame(self, frame) -> None:
        """UnsupportedMedia for a decoded frame of another size than the stream's."""
        if (frame.width, frame.height) != (self.width, self.height):
            raise UnsupportedMedia(self.path, f"a frame of {frame.width}x{frame.height} pixels "
                                              f"in a {self.width}x{self.height} stream")

    def decoded(self, i: int):
        """Frame ``i`` as decoded (a PyAV ``VideoFrame`` of the stream's own pixel format,
        before :meth:`to_rgb`), from this process's open decoder of the file."""
        return _decoder(self, os.getpid()).frame(i)

    def within(self, limit: tuple[int, int] | None) -> "VideoFrames":
        """These frames held to ``limit`` (width, height) in pixels: UnsupportedMedia where
        the picture is larger (IMF: its 4K container; a DCP: twice its container each way)."""
        _check_size(self.path, self.width, self.height, limit)
        return replace(self, limit=limit)

    def to_rgb(self, frame) -> np.ndarray:
        """A decoded frame of this stream as (H, W, 3) uint16 ``rgb48le``, through libswscale
        with the stream's matrix (BT.709 where untagged) and range (full R'G'B' out)."""
        self._check_frame(frame)
        matrix = 1 if self.matrix in (0, 2) else self.matrix      # RGB input ignores it
        rgb = frame.reformat(format="rgb48le", src_colorspace=matrix, dst_colorspace=matrix,
                             src_color_range=self.range, dst_color_range=ColorRange.JPEG,
                             interpolation=SWS_FLAGS, threads=1)
        return rgb.to_ndarray()

    @property
    def colorspace(self) -> str:
        """The ``--colorspace`` of master these frames hold, from their tags: BT.709 (and the
        SD primaries, within a few thousandths of it) rec709, SMPTE RP 431-2 (DCI white)
        dcip3, SMPTE EG 432-1 (D65) p3d65, SMPTE ST 428-1 X'Y'Z' xyz, untagged rec709.
        UnsupportedMedia for primaries or a transfer master does not take (BT.2020, PQ, HLG),
        with the option that says how to read them."""
        if self.transfer in _REFUSED_TRANSFERS:
            raise UnsupportedMedia(self.path, f"{_REFUSED_TRANSFERS[self.transfer]} transfer "
                                   "(HDR or linear): master takes display-referred SDR "
                                   "(rec709, p3d65, dcip3, xyz); give --colorspace to master "
                                   "its code values as one of them")
        if self.primaries in _PRIMARIES:
            return _PRIMARIES[self.primaries] or "rec709"
        name = _PRIMARY_NAMES.get(self.primaries, f"H.273 colour primaries {self.primaries}")
        raise UnsupportedMedia(self.path, f"{name} primaries are not a colour space master "
                               "takes (rec709, p3d65, dcip3, xyz): give --colorspace to say "
                               "how to read them")

    def describe(self) -> str:
        """One line: codec, depth, size, rate, frames and colour, for the user."""
        tag = _PRIMARY_NAMES.get(self.primaries, f"H.273 primaries {self.primaries}")
        return (f"{self.codec} {self.bits}-bit {self.pix_fmt} {self.width}x{self.height}, "
                f"{self.count} frames at {self.rate} fps ({float(self.rate):.3f}), {tag}, "
                f"matrix {_MATRICES.get(self.matrix, self.matrix)}, "
                f"{'full' if self.range == _JPEG else 'narrow'} range")


def open_video(path, limit: tuple[int, int] | None = max_input_size("4k")) -> VideoFrames:
    """Probe the video file ``path`` (:class:`VideoFrames`): its first video stream, checked
    against ``limit`` (width, height in pixels) before any pixel is decoded; then its first
    frame and its last keyframe interval decoded for the exact count.  MediaError naming the
    file: missing or unreadable, not a container FFmpeg reads, no video stream, a codec
    FFmpeg does not decode, a size over ``limit``, no or a variable frame rate, colours
    libswscale does not convert, a truncated or damaged stream."""
    p = Path(path)
    if not p.is_file():
        raise MediaError(p, "no such file" if not p.exists() else "not a regular file")
    try:
        st = p.stat()
        with av.open(str(p), "r") as container:
            video = _probe_stream(p, container, limit)
            video = replace(video, identity=(st.st_size, st.st_mtime_ns),
                            sound=tuple(s.index for s in container.streams.audio))
        return _count(video)
    except MediaError:
        raise
    except av.FFmpegError as exc:
        raise CorruptMedia(p, f"not a video file FFmpeg reads: {_said(exc)}") from None
    except OSError as exc:
        raise MediaError(p, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, RuntimeError, MemoryError) as exc:
        raise CorruptMedia(p, f"damaged video: {type(exc).__name__}: {exc}") from None


def _fraction(rational) -> Fraction | None:
    """A PyAV rational (a Fraction up to PyAV 18, an ``AVRational`` from 19; None or 0/1
    where unset) as an exact Fraction, or None where unset or not positive."""
    if not rational or not rational.denominator or rational.numerator <= 0:
        return None
    return Fraction(rational.numerator, rational.denominator)


def discard_others(container, keep) -> None:
    """Tell the demuxer to skip every stream of ``container`` but ``keep`` (a stream or a list
    of them), so that reading one stream does not read the others' bytes
    (``AVStream.discard = AVDISCARD_ALL``)."""
    kept = {s.index for s in (keep if isinstance(keep, (list, tuple)) else [keep])}
    for stream in container.streams:
        if stream.index not in kept:
            stream.discard = Discard.all


def _said(exc: Exception) -> str:
    """An FFmpeg error's own words, without PyAV's errno and file name decorations."""
    return getattr(exc, "strerror", None) or str(exc)


def _check_size(path, width: int, height: int, limit) -> None:
    """Refuse a ``width`` x ``height`` picture that is empty or over ``limit``."""
    if width < 1 or height < 1:
        raise CorruptMedia(path, f"no picture size in the stream ({width}x{height} pixels)")
    if limit is not None and (width > limit[0] or height > limit[1]):
        raise UnsupportedMedia(path, f"{width}x{height} pixels is larger than the "
                                     f"{limit[0]}x{limit[1]} an input frame may be (twice the "
                                     "DCI container each way; IMF: the IMF 4K container)")


def _probe_stream(p: Path, container, limit) -> VideoFrames:
    """The facts of ``container``'s first video stream, from its headers (nothing decoded);
    ``count`` and ``start`` are estimates :func:`_count` replaces."""
    if not container.streams.video:
        raise UnsupportedMedia(p, "no video stream in the file")
    s = container.streams.video[0]
    cc = s.codec_context
    if cc is None or cc.codec is None:
        raise UnsupportedMedia(p, "a video codec FFmpeg does not decode")
    _check_size(p, cc.width, cc.height, limit)
    fmt = cc.format
    if fmt is None or fmt.name is None:
        raise CorruptMedia(p, f"{cc.codec.name}: no pixel format in the stream's header")
    if fmt.name.startswith("xyz") or cc.colorspace not in _MATRICES:
        raise UnsupportedMedia(p, f"{fmt.name} samples, matrix {cc.colorspace}: libswscale does "
                                  "not convert these to R'G'B' (want Y'CbCr of BT.601, BT.709 "
                                  "or BT.2020, or R'G'B')")
    rate = _rate(p, s)
    rgb = fmt.is_rgb
    colour_range = _JPEG if rgb or cc.color_range == _JPEG else _MPEG
    bits = max(c.bits for c in fmt.components)
    time_base = _fraction(s.time_base)
    if not time_base:
        raise CorruptMedia(p, "no time base in the video stream")
    # where to look for the last frame: the fewest of the sample count (which counts frames an
    # edit list leaves out) and the stream's duration, else the container's duration
    estimates = [n for n in (s.frames, s.duration and round(s.duration * time_base * rate))
                 if n and n > 0]
    frames = min(estimates) if estimates else 0
    if not frames and container.duration:
        frames = round(Fraction(container.duration, av.time_base) * rate)
    entries = s.index_entries                       # the demuxer's index
    intra = bool(cc.codec.intra_only) or (len(entries) > 0 and len(entries) == frames and
                                          all(e.is_keyframe for e in entries))
    return VideoFrames(str(p), s.index, (0, 0), cc.width, cc.height, rate, frames,
                       s.start_time or 0, time_base, cc.codec.name, fmt.name, bits,
                       cc.color_primaries, cc.color_trc, cc.colorspace, colour_range, intra,
                       limit=limit)


def _rate(p: Path, s) -> Fraction:
    """The stream's frame rate, exact: its real base rate (``r_frame_rate``: the least rate
    that times every frame), where its average rate is within :data:`AVERAGE_TOLERANCE` of it
    (a last frame of another duration moves the average) or half it (the field rate of an
    interlaced stream: then the average); else UnsupportedMedia (a variable frame rate).
    Every frame's time is checked against this rate as it is decoded."""
    average, base = _fraction(s.average_rate), _fraction(s.base_rate)
    if base and average and base == 2 * average:
        return average
    rate = base or average
    if rate is None or rate <= 0:
        raise UnsupportedMedia(p, "no frame rate in the video stream")
    if average and abs(average - rate) > AVERAGE_TOLERANCE * rate:
        raise UnsupportedMedia(p, f"variable frame rate (an average of {float(average):.3f} fps "
                                  f"in a stream timed for {float(rate):.3f}): master takes "
                                  "constant-rate video (convert it first, e.g. ffmpeg -fps_mode "
                                  "cfr -r RATE)")
    return rate


def _count(video: VideoFrames) -> VideoFrames:
    """``video`` with its exact ``start`` and ``count``: the first frame decoded (its time is
    frame 0's), then the frames from the keyframe before the estimated last one to the end
    (bounded: one keyframe interval, or the whole stream where no estimate exists).
    CorruptMedia where the stream ends more than a frame before its container says."""
    d = _Decoder(video)
    try:
        first = d.first_time()
        video = replace(video, start=first)
        d.video = video
        estimate = video.count
        last = d.last_index(max(estimate - 1, 0))
    except av.FFmpegError as exc:
        raise CorruptMedia(video.path, f"the video stream does not decode to its end "
                                       f"(truncated or damaged): {_said(exc)}") from None
    finally:
        d.close()
    count = last + 1
    if estimate and count < estimate - 1:
        raise CorruptMedia(video.path, f"the container says {estimate} frames but the stream "
                                       f"ends after frame {last}: truncated or damaged")
    return replace(video, count=count)


@functools.lru_cache(maxsize=4)
def _decoder(video: VideoFrames, pid: int) -> "_Decoder":
    """This process's open decoder of ``video`` (shared by its threads; see the module);
    ``pid``, this process's id, so that a forked child opens the file again rather than share
    its parent's file offset."""
    return _Decoder(video, check=True)


class _Decoder:
    """An open container decoding one video stream forward, seeking where that is shorter.
    :meth:`frame` is safe from any thread (one lock); the rest is for :func:`_count`."""

    def __init__(self, video: VideoFrames, check: bool = False):
        self.video = video
        self.lock = threading.Lock()
        self.container = av.open(video.path, "r")
        try:
            if check:
                self._check_identity()
            self.stream = self.container.streams[video.stream]
            discard_others(self.container, self.stream)
            cc = self.stream.codec_context
            cc.thread_type = "AUTO"
            cc.thread_count = min(DECODER_THREADS, usable_cores())
        except BaseException:
            self.container.close()
            raise
        self.decoded = None     # the generator of decoded frames from the last seek
        self.held = None        # a frame taken from it and put back: (index, frame)
        self.next = None        # the index of the frame it gives next (None: not known)
        self.ahead: OrderedDict = OrderedDict()
        frame_bytes = max(1, video.width * video.height * 6)
        self.ahead_frames = max(2, AHEAD_BYTES // frame_bytes)
        # how far ahead the next frame is reached by decoding forward rather than by a seek,
        # at least (one more than the threads reading, READERS_COUNTED)
        self.forward = 2 if video.intra else max(2, 2 * round(video.rate))
        self.seeks = 0          # seeks made (tests)
        self.readers: set = set()   # the threads that asked for frames (at most READERS_COUNTED)

    def close(self) -> None:
        self.container.close()

    def _check_identity(self) -> None:
        st = os.stat(self.video.path)
        if (st.st_size, st.st_mtime_ns) != self.video.identity:
            raise MediaError(self.video.path, "the file changed since it was opened")

    # -- decoding in presentation order ---------------------------------------------------------
    def _frames(self):
        for packet in self.container.demux(self.stream):
            yield from packet.decode()

    def _index(self, frame, previous: int | None) -> int:
        """The frame number of a decoded ``frame``: its presentation time on the grid."""
        v = self.video
        if frame.pts is None:
            if previous is None:
                raise CorruptMedia(v.path, "a frame without a presentation time after a seek")
            return previous + 1
        exact = Fraction(frame.pts - v.start) * v.time_base * v.rate
        k = round(exact)
        if abs(exact - k) > GRID_TOLERANCE:
            raise UnsupportedMedia(v.path, f"frame {k}: at {float(exact):.2f} frames, off the "
                                           f"{v.rate} fps grid: variable frame rate (convert "
                                           "it first, e.g. ffmpeg -fps_mode cfr -r RATE)")
        if previous is not None and k != previous + 1:
            raise UnsupportedMedia(v.path, f"frame {previous + 1}: the stream steps from frame "
                                           f"{previous} to {k}: variable frame rate, or frames "
                                           "dropped or repeated")
        return k

    def _next(self):
        """(index, frame) of the next decoded frame, or None at the end of the stream."""
        if self.held is not None:
            got, self.held = self.held, None
            self.next = got[0] + 1
            return got
        if self.decoded is None:
            self.decoded = self._frames()
        frame = next(self.decoded, None)
        if frame is None:
            return None
        k = self._index(frame, None if self.next is None else self.next - 1)
        self.next = k + 1
        return k, frame

    def _seek(self, i: int) -> None:
        """Position the decoder so that its next frame is at most frame ``i``: a seek to the
        keyframe before a quarter frame ahead of ``i``'s time, then further back while the
        first frame decoded is past ``i`` (a keyframe indexed by decoding time)."""
        v, back = self.video, 0
        for _ in range(SEEK_TRIES):
            target = max(i - back, 0)
            at = v.start + int((target - GRID_TOLERANCE) / v.rate / v.time_base)
            self.container.seek(max(at, v.start) if target else v.start, backward=True,
                                any_frame=False, stream=self.stream)
            self.seeks += 1
            self.decoded, self.held, self.next = None, None, None
            got = self._next()
            if got is None or got[0] > i:
                if target == 0:
                    break
                back = max(2 * back, round(v.rate))
                continue
            self.held, self.next = got, got[0]
            return
        raise CorruptMedia(v.path, f"frame {i}: no keyframe before it could be found by "
                                   "seeking (a damaged index?)")

    def frame(self, i: int):
        """The decoded frame ``i`` (a PyAV VideoFrame, not yet converted)."""
        with self.lock:
            if len(self.readers) < READERS_COUNTED:
                self.readers.add(threading.get_ident())
            window = max(self.forward, len(self.readers) + 1)
            if i in self.ahead:
                return self.ahead.pop(i)
            if self.next is None or not self.next <= i < self.next + window:
                self._seek(i)
            while True:
                got = self._next()
                if got is None:
                    raise CorruptMedia(self.video.path, f"frame {i}: the stream ends after "
                                                        f"frame {(self.next or 1) - 1}: "
                                                        "truncated or damaged")
                k, frame = got
                if k == i:
                    return frame
                if k > i:
                    raise CorruptMedia(self.video.path, f"frame {i} is missing: the stream "
                                                        f"goes on at frame {k}")
                self._keep(k, frame, window)

    def _keep(self, k: int, frame, window: int) -> None:
        """Keep decoded frame ``k`` for the thread that will ask for it (the oldest dropped
        past :attr:`ahead_frames`, or past the ``window`` decoded forward where it is more)."""
        self.ahead[k] = frame
        while len(self.ahead) > max(self.ahead_frames, window):
            self.ahead.popitem(last=False)

    # -- probing -------------------------------------------------------------------------------------
    def first_time(self) -> int:
        """The presentation time of the stream's first frame (``time_base`` units)."""
        self.decoded = self._frames()
        frame = next(self.decoded, None)
        if frame is None:
            raise CorruptMedia(self.video.path, "no frame of the video stream decodes")
        if frame.pts is None:
            raise UnsupportedMedia(self.video.path, "video frames without presentation times")
        self.video.to_rgb(frame)          # its colours convert (UnsupportedMedia if not)
        return frame.pts

    def last_index(self, estimate: int) -> int:
        """The index of the stream's last frame, decoded from the keyframe before frame
        ``estimate`` (from the start where the seek finds nothing before it)."""
        self._seek(max(estimate, 0))
        last = None
        while (got := self._next()) is not None:
            last = got[0]
        if last is None:
            raise CorruptMedia(self.video.path, "no frame of the video stream decodes")
        return last
