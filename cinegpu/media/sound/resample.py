"""A WAV file's samples at another sample rate, read in order: sound for mastering whose rate
a DCP or IMF track does not carry (44.1 kHz from a music or video edit, 32 kHz...).

The conversion is libsoxr's (the SoX resampler, through the ``soxr`` package) at its very high
quality setting: a linear-phase filter whose output is aligned with its input (no added delay)
and whose passband is flat to about 0.91 of the lower Nyquist frequency; a 1 kHz sine from
44.1 to 48 kHz comes out within 2e-9 of full scale of the ideal one. Samples go through as
float64 in units of full scale and come back rounded to 24-bit integers (clipped, not
dithered: a 24-bit step is 144 dB below full scale).

A stream carries its filter's state from one block to the next, so a :class:`ResampledWav` is
read from its first sample onward, block after block, as a track file is written.
"""

from __future__ import annotations

import numpy as np

from cinegpu.media.errors import UnsupportedMedia
from cinegpu.media.sound.wav import WavInfo, read_samples

__all__ = ["MAX_RATIO", "ResampledWav", "resampled_length", "resampler_missing"]

#: Largest output/input rate ratio taken (8 kHz to 48 kHz): output is bounded by the input's size.
MAX_RATIO = 6
#: Input samples per channel fed to the stream at a time.
CHUNK = 32768
FULL_SCALE = float(1 << 23)


def resampled_length(frames: int, rate: int, to_rate: int) -> int:
    """Samples per channel that ``frames`` samples at ``rate`` Hz make at ``to_rate`` Hz (the
    same duration, rounded to the nearest sample)."""
    return (frames * to_rate + rate // 2) // rate


def resampler_missing() -> str | None:
    """Why sample-rate conversion cannot run here (None: it can)."""
    try:
        import soxr  # noqa: F401
    except ImportError as exc:
        return f"the soxr package is not importable ({exc}); pip install soxr"
    return None


class ResampledWav:
    """The samples of ``info`` at ``rate`` Hz: :attr:`frames` of them per channel (the input's
    length at the new rate, rounded), read in order by :meth:`read`."""

    def __init__(self, info: WavInfo, rate: int):
        import soxr
        if info.rate * MAX_RATIO < rate:
            raise UnsupportedMedia(info.path, f"sample rate {info.rate} Hz is too low to convert "
                                              f"to {rate} Hz (at most {MAX_RATIO} times up)")
        self.info, self.rate = info, rate
        self.frames = resampled_length(info.frames, info.rate, rate)
        self._stream = soxr.ResampleStream(info.rate, rate, info.channels, dtype="float64",
                                           quality="VHQ")
        self._taken = 0                      # input samples fed to the stream
        self._given = 0                      # output samples handed out
        self._pending = np.zeros((0, info.channels), np.float64)

    def read(self, start: int, count: int) -> np.ndarray:
        """Output samples ``start`` .. ``start + count`` as an (n, channels) int32 array of
        24-bit values (fewer past :attr:`frames`); ``start`` must be where the last read
        ended (ValueError otherwise)."""
        if start != self._given:
            raise ValueError(f"resampled sound is read in order: sample {start} asked for, "
                             f"{self._given} is next")
        count = max(0, min(count, self.frames - start))
        parts, have = [self._pending], len(self._pending)
        while have < count and self._taken < self.info.frames:
            x = read_samples(self.info, self._taken, CHUNK)
            self._taken += len(x)
            y = self._stream.resample_chunk(x.astype(np.float64) / FULL_SCALE,
                                            last=self._taken >= self.info.frames)
            parts.append(y)
            have += len(y)
        if have < count:                     # the rounding of the length: silence
            parts.append(np.zeros((count - have, self.info.channels), np.float64))
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self._pending = out[count:]
        self._given += count
        return np.clip(np.rint(out[:count] * FULL_SCALE), -FULL_SCALE,
                       FULL_SCALE - 1).astype(np.int32)
