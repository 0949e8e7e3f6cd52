"""Playback that degrades gracefully: decode at a lower resolution when decoding cannot keep up.

JPEG 2000 decodes a frame at 1/2, 1/4 ... of its size by skipping the highest resolution
levels (T.800 B.5, the ``reduce`` of :class:`~cinegpu.decode.request.DecodeRequest`), which
cuts the samples to reconstruct by about 4 a level and the packets to read with them.  A
player that cannot decode at the edit rate therefore keeps playing smoothly at a lower
resolution instead of dropping frames, as DCP-o-matic's player does, and goes back up when
decoding can keep up again.

:class:`ResolutionGovernor` decides the level from what the source measures while the clock
runs: its capacity, the frames it can decode per second at the current level (its decoders
working side by side, over the median time of a frame at that level), known after a few
frames, so that even a two-second clip plays smoothly.  :func:`upscale` brings a reduced
picture back to the presentation size (each sample repeated, numpy or CuPy), so the presenter
and the interop paths never see another size.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from cinegpu.interop.xyz import XYZPlanes

__all__ = ["ResolutionGovernor", "level_text", "upscale"]

#: Frames decoded at a level before it is judged (their median decode time).
SAMPLES = 3
#: Decoding slower than this share of the playback rate steps the resolution down.
DOWN_SHARE = 0.97
#: Going back up needs this share of the playback rate, as last measured at the higher
#: resolution.
UP_SHARE = 1.10
#: A level kept this long (seconds of playback) may go back up when its measure is old.
SETTLE_SECONDS = 2.0
#: A capacity measured this long ago no longer holds the resolution down (it is tried again:
#: the first frames include warm-up, and the material changes).
FORGET_SECONDS = 20.0
#: Decoding slower than the playback rate divided by this is judged on the first frames
#: already (their decode times, each decoder's first included: past the kernels' warm-up,
#: nothing else makes a frame this much slower), and steps down as many levels as it takes
#: at once (:data:`LEVEL_GAIN` a level): a 4K frame decoded in 3 s by two decoders at 24
#: frames/s, not a level per few frames (which at such a pace takes longer than many a clip
#: lasts).
FAR_SHARE = 4.0
#: How much a level down cuts the decode time (a quarter of the samples, T.800 B.5; a little
#: less in all, the packet headers being read whatever the level).
LEVEL_GAIN = 3.0


def level_text(level: int) -> str:
    """"full" or "1/2", "1/4" ... of the width and height."""
    return "full" if level <= 0 else f"1/{1 << level}"


@dataclass
class _Measured:
    fps: float
    at: float


class ResolutionGovernor:
    """The resolution level (0 = full, n = 1/2^n of the width and height) for the next frames.

    ``max_level``: the most levels to drop (at most the stream's decomposition levels).
    Call :meth:`observe` with the source's capacity at the current level and the number of
    frames it was measured on, while playback runs at ``rate`` frames/s (``rate`` 0: paused,
    nothing is decided); read :attr:`level`.  The source restarts its measure when the level
    changes.
    """

    def __init__(self, max_level: int, now: Callable[[], float] = time.monotonic):
        self.max_level = max(0, int(max_level))
        self.level = 0
        self._now = now
        self._since = now()
        self._capacity: dict[int, _Measured] = {}
        #: (time, level) of every change, for the summary
        self.changes: list[tuple[float, int]] = []

    def observe(self, capacity: float, rate: float, samples: int, first: float = 0.0) -> int:
        """The level after one more look at ``capacity`` (frames/s the source can decode at
        this level, from ``samples`` frames) while playing at ``rate`` frames/s. ``first``: the
        capacity the first frames at this level give, each decoder's first included (0:
        unknown); far below the rate (:data:`FAR_SHARE`), it steps down before ``capacity`` is
        measured, by the levels it takes."""
        if rate <= 0:
            return self.level
        t = self._now()
        if samples < SAMPLES and 0 < first < rate / FAR_SHARE:
            self._capacity[self.level] = _Measured(first, t)
            need = math.ceil(math.log(DOWN_SHARE * rate / first) / math.log(LEVEL_GAIN))
            if self.level < self.max_level:
                self._set(min(self.max_level, self.level + max(1, need)), t)
            return self.level
        if samples < SAMPLES or capacity <= 0:
            return self.level
        if capacity < DOWN_SHARE * rate:
            self._capacity[self.level] = _Measured(capacity, t)
            if self.level < self.max_level:
                self._set(self.level + 1, t)
            return self.level
        if self.level > 0 and self._up_expected(rate, t):
            self._set(self.level - 1, t)
        return self.level

    def _up_expected(self, rate: float, t: float) -> bool:
        """Keeping up here says little of the level above: it is tried again when it was fast
        enough there, or when that measure is old (and this level has settled)."""
        above = self._capacity.get(self.level - 1)
        if above is None:
            return True
        if above.fps >= UP_SHARE * rate:
            return True
        return t - above.at >= FORGET_SECONDS and t - self._since >= SETTLE_SECONDS

    def _set(self, level: int, t: float) -> None:
        self.level = level
        self._since = t
        self.changes.append((t, level))


def upscale(picture, level: int, height: int, width: int):
    """``picture`` (H, W, C), decoded ``level`` levels down, as (height, width, C): each
    sample repeated 2^level times each way, cropped (numpy or CuPy, contiguous)."""
    if level <= 0:
        return picture
    if isinstance(picture, XYZPlanes):
        return picture.map(lambda plane: upscale(plane, level, height, width))
    f = 1 << level
    big = picture.repeat(f, axis=0).repeat(f, axis=1)[:height, :width]
    if big.shape[0] < height or big.shape[1] < width:    # a picture smaller than expected
        raise ValueError(f"a picture of {picture.shape[1]}x{picture.shape[0]} at {level_text(level)} "
                         f"does not cover {width}x{height}")
    return big if big.flags.c_contiguous else big.copy()
