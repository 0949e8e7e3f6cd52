"""The sound of a video file for mastering: decoded through FFmpeg's libraries (PyAV) into a
32-bit PCM WAV in a temporary folder, then read as any WAV is (:func:`.sound.inputs.open_sound`:
the same layouts, length rules and rate conversion).

Which audio: one stream of 1 (mono), 2 (stereo), 6 (5.1) or 8 (7.1) channels, the first one
of the file; or, where the file has 6 or 8 mono streams (a ProRes delivery often carries one
track per channel), one mono WAV per stream in the file's order (L R C LFE Ls Rs, or the 7.1
order of :mod:`.sound.inputs`).  Samples are converted by libswresample to packed signed
32-bit (``s32``: 24-bit PCM is exact there, and the track keeps the top 24 bits, as for a
32-bit WAV); a multichannel stream's WAVE_FORMAT_EXTENSIBLE channel mask is its FFmpeg layout
(7.1 ``FL FR FC LFE BL BR SL SR`` is mask 0x63F, read in that order).  Sample 0 is the sound
at the first video frame's time: earlier samples (an AAC encoder's priming) are dropped, a
later start is padded with silence.  Over 4 GiB the file becomes RF64 (EBU Tech 3306: a JUNK
chunk reserved for ds64 at the start, rewritten at the end).

Where the picture is mastered at another rate than the file's (``speed``: the new rate over
the old), the samples are kept one for one and declared at ``rate * speed`` Hz, so that the
rate conversion to 48 kHz plays them that much faster or slower (pitch shifts with it, as a
PAL speed-up does); UnsupportedMedia where that is not a whole number of Hz.

The WAV lives in a temporary folder (``folder``: where it is made, e.g. beside the output;
default the OS's) that is removed when the :class:`VideoSound` that reads it is collected, at
the latest when the interpreter exits.
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.sound.inputs import SoundInput, open_sound
from cinegpu.media.video.frames import discard_others

__all__ = ["VideoSound", "video_sound"]

#: Channel counts taken from one audio stream.
CHANNELS = (1, 2, 6, 8)
#: WAVE_FORMAT_EXTENSIBLE speaker bits (dwChannelMask) of FFmpeg's channel names.
SPEAKER_BITS = {"FL": 0x1, "FR": 0x2, "FC": 0x4, "LFE": 0x8, "BL": 0x10, "BR": 0x20,
                "FLC": 0x40, "FRC": 0x80, "BC": 0x100, "SL": 0x200, "SR": 0x400}
#: KSDATAFORMAT_SUBTYPE_PCM, as stored.
SUBTYPE_PCM = bytes.fromhex("0100000000001000800000aa00389b71")
#: The largest data chunk a RIFF (not RF64) file holds, bytes.
RIFF_MAX = 0xFFFFFFFF - 256


@dataclass(frozen=True)
class VideoSound(SoundInput):
    """A :class:`.sound.inputs.SoundInput` of WAVs decoded from a video file, which holds
    their temporary folder (removed when this value is collected); ``video``: that file."""

    video: str | None = None
    folder: object = field(default=None, compare=False, repr=False)

    def __getstate__(self):
        """Pickled without the folder's owner (it stays with the original)."""
        state = dict(self.__dict__)
        state["folder"] = None
        return state

    def fit(self, picture_frames: int, edit_rate) -> str | None:
        """:meth:`.SoundInput.fit`, a MediaError naming the video file."""
        try:
            return super().fit(picture_frames, edit_rate)
        except MediaError as exc:
            raise self._named(exc) from None

    def fit_imf(self, picture_frames: int, edit_rate) -> str | None:
        """:meth:`.SoundInput.fit_imf`, a MediaError naming the video file."""
        try:
            return super().fit_imf(picture_frames, edit_rate)
        except MediaError as exc:
            raise self._named(exc) from None

    def _named(self, exc: MediaError) -> MediaError:
        return type(exc)(self.video, f"sound: {exc.reason}", exc.offset)


def video_sound(video, *, folder=None, language: str | None = None,
                speed: Fraction = Fraction(1)) -> VideoSound | None:
    """The sound of ``video`` (a :class:`.video.frames.VideoFrames`) as a checked
    :class:`VideoSound`, or None where the file has no audio stream; ``folder``: where the
    temporary folder is made; ``language``: an RFC 5646 tag; ``speed``: the mastering rate over
    the file's.  MediaError naming the video file: channels no track takes, a rate that is
    not converted, a stream that does not decode."""
    path = Path(video.path)
    if not video.sound:
        return None
    temp = tempfile.TemporaryDirectory(prefix=".cinegpu-sound-", dir=folder)
    try:
        with av.open(str(path), "r") as container:
            streams = _streams(path, container)
            discard_others(container, streams)
            t0 = Fraction(video.start) * video.time_base
            wavs = [_write_wav(path, container, s, Path(temp.name) / _name(path, k, streams),
                               t0, speed) for k, s in enumerate(streams)]
        sound = open_sound(wavs, language)
    except MediaError as exc:
        temp.cleanup()
        if exc.path is None or Path(exc.path).parent == Path(temp.name):
            raise type(exc)(path, f"sound: {exc.reason}") from None
        raise
    except av.FFmpegError as exc:
        temp.cleanup()
        raise CorruptMedia(path, f"sound: cannot decode: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None
    except (ValueError, RuntimeError) as exc:
        temp.cleanup()
        raise CorruptMedia(path, f"sound: {type(exc).__name__}: {exc}") from None
    except BaseException:
        temp.cleanup()
        raise
    values = {f.name: getattr(sound, f.name) for f in fields(SoundInput)}
    return VideoSound(**values, video=str(path), folder=temp)


def _name(path: Path, k: int, streams) -> str:
    return f"{path.name}.wav" if len(streams) == 1 else f"{path.name}.{k + 1}.wav"


def _streams(path: Path, container) -> list:
    """The audio streams read: 6 or 8 mono streams together, else the first stream."""
    audio = list(container.streams.audio)
    for s in audio:
        if s.codec_context is None:
            raise UnsupportedMedia(path, f"sound: audio stream {s.index} is of a codec FFmpeg "
                                         "does not decode; give --audio")
    if len(audio) in (6, 8) and all(s.codec_context.channels == 1 for s in audio):
        return audio
    first = audio[0]
    n = first.codec_context.channels
    if n not in CHANNELS:
        raise UnsupportedMedia(path, f"sound: {n} channels in its first audio stream; a "
                                     "package takes 6 (5.1) or 8 (7.1), or stereo or mono "
                                     "(placed in 5.1); give --audio")
    return [first]


def _mask(stream) -> int:
    """The WAVE_FORMAT_EXTENSIBLE channel mask of ``stream``'s layout (0: not one)."""
    names = [c.name for c in stream.layout.channels]
    bits = [SPEAKER_BITS.get(n, 0) for n in names]
    if 0 in bits or bits != sorted(bits) or len(set(bits)) != len(bits):
        return 0
    return sum(bits)


def _write_wav(path: Path, container, stream, out: Path, t0: Fraction,
               speed: Fraction) -> Path:
    """``stream`` decoded into ``out``, a 32-bit PCM WAV; sample 0 at ``t0`` seconds."""
    rate = stream.codec_context.sample_rate
    declared = rate * speed
    if declared.denominator != 1:
        raise UnsupportedMedia(path, f"sound at {rate} Hz cannot follow a picture mastered "
                                     f"{float(speed):.5f} times as fast ({float(declared):.2f} "
                                     "Hz): give --audio")
    channels = stream.codec_context.channels
    resampler = av.AudioResampler(format="s32", layout=stream.layout, rate=rate)
    with _WavWriter(out, channels, int(declared), _mask(stream) if channels > 2 else 0) as w:
        skip = None                        # samples to drop (> 0) or pad (< 0) at the start
        for frame in container.decode(stream):
            if skip is None:
                at = Fraction(0) if frame.pts is None or not frame.time_base else \
                    frame.pts * Fraction(frame.time_base.numerator, frame.time_base.denominator)
                skip = round((t0 - at) * rate)
                if skip < 0:
                    w.write(np.zeros((-skip, channels), np.int32))
            for part in resampler.resample(frame):
                skip = w.write_frame(part, skip)
        for part in resampler.resample(None):
            skip = w.write_frame(part, skip)
    return out


class _WavWriter:
    """A WAV written as it comes: RIFF with a JUNK chunk that becomes ds64 (RF64) if the data
    passes :data:`RIFF_MAX` bytes; 32-bit little-endian signed samples."""

    def __init__(self, path: Path, channels: int, rate: int, mask: int):
        self.file = open(path, "wb")
        self.channels, self.data = channels, 0
        align = 4 * channels
        fmt = struct.pack("<HHIIHH", 0xFFFE, channels, rate, rate * align, align, 32) + \
            struct.pack("<HHI", 22, 32, mask) + SUBTYPE_PCM
        head = (b"RIFF" + b"\0" * 4 + b"WAVE" + b"JUNK" + struct.pack("<I", 28) + b"\0" * 28
                + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + b"\0" * 4)
        self.file.write(head)
        self.header = len(head)

    def __enter__(self):
        return self

    def write(self, samples: np.ndarray) -> None:
        """(n, channels) int32 samples appended."""
        b = np.ascontiguousarray(samples, "<i4").tobytes()
        self.file.write(b)
        self.data += len(b)

    def write_frame(self, frame, skip: int) -> int:
        """A packed s32 AudioFrame appended, its first ``skip`` samples dropped; the samples
        still to drop."""
        a = frame.to_ndarray().reshape(-1, self.channels)
        if skip > 0:
            drop = min(skip, len(a))
            a, skip = a[drop:], skip - drop
        self.write(a)
        return max(skip, 0)

    def __exit__(self, kind, exc, tb):
        try:
            if kind is None:
                self._finish()
        finally:
            self.file.close()

    def _finish(self) -> None:
        f, data = self.file, self.data
        if data & 1:
            f.write(b"\0")
        riff = self.header - 8 + data + (data & 1)
        if data <= RIFF_MAX:
            f.seek(4)
            f.write(struct.pack("<I", riff))
            f.seek(self.header - 4)
            f.write(struct.pack("<I", data))
            return
        f.seek(0)
        f.write(b"RF64" + struct.pack("<I", 0xFFFFFFFF) + b"WAVE" + b"ds64" +
                struct.pack("<IQQQI", 28, riff, data, data // (4 * self.channels), 0))
        f.seek(self.header - 4)
        f.write(struct.pack("<I", 0xFFFFFFFF))
