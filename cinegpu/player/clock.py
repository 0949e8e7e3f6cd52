"""The playback clock and the frame scheduler, on presentation times.

:class:`PlaybackClock` maps wall time to a position on the timeline: frame
``t`` (counted from the start of playback, unwrapped across loops) is due
from ``origin + t / rate`` seconds until the next one.  The clock never waits
for anything: a frame that is not ready when due is late, and one whose turn
passes without being shown is dropped.  Pause, step, seek and loop move the
timeline; each such jump bumps :attr:`PlaybackClock.jumps` so the scheduler
does not count the frames skipped by a seek as dropped.

:class:`Scheduler` asks the clock which frame is due, shows it when its
picture is ready, and counts shown / late / dropped frames.

``now`` is injected (seconds, monotonic), so tests drive a fake clock.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

__all__ = ["PlaybackClock", "Scheduler", "PlaybackStats"]

# Tolerance (in frames) so that a presentation time computed in floats still
# lands on its own frame rather than the one before.
_EPS = 1e-6


class PlaybackClock:
    """Presentation times for ``frame_count`` frames at ``rate`` frames per second.

    Starts paused at ``start``; :meth:`play` sets it running.  Media frame of
    timeline position t: t, or t mod frame_count when looping.
    """

    def __init__(self, rate, frame_count: int, *, now: Callable[[], float] = time.perf_counter,
                 loop: bool = False, start: int = 0) -> None:
        rate = Fraction(rate)
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        if frame_count < 1:
            raise ValueError(f"need at least one frame, got {frame_count}")
        self.rate = rate
        self.frame_count = frame_count
        self.loop = loop
        self._now = now
        self._playing = False
        self._origin = 0.0          # wall time (s) at which timeline position 0 is due
        self._held = self._clamp(start)   # timeline position while paused
        self.jumps = 0              # bumped by every seek, step and resume

    # ---------------------------------------------------------------- state

    @property
    def playing(self) -> bool:
        return self._playing

    def _clamp(self, t: int) -> int:
        return max(0, min(int(t), self.frame_count - 1))

    def timeline(self) -> int:
        """Timeline position now (frames since frame 0, unwrapped when looping)."""
        if not self._playing:
            return self._held
        return math.floor((self._now() - self._origin) * self.rate + _EPS)

    def media_frame(self, t: int) -> int | None:
        """Media frame shown at timeline position ``t``; None past the end (not looping)."""
        if self.loop:
            return t % self.frame_count
        return t if t < self.frame_count else None

    def due(self) -> int | None:
        """The media frame due now, or None when playback has run off the end."""
        return self.media_frame(self.timeline())

    @property
    def ended(self) -> bool:
        return self.due() is None

    def presentation_time(self, t: int) -> float:
        """Wall time (s) at which timeline position ``t`` is due (playing)."""
        return self._origin + float(Fraction(t) / self.rate)

    def ahead(self, count: int) -> list[int]:
        """Media frames of the next ``count`` timeline positions from now, as if playing
        (what a paused clock will show once it runs: the preroll)."""
        t = self.timeline()
        out = []
        for k in range(count):
            f = self.media_frame(t + k)
            if f is None:
                break
            out.append(f)
        return out

    def upcoming(self, count: int) -> list[int]:
        """Media frames the clock will show next, at most ``count`` (decode-ahead order):
        :meth:`ahead` while playing, only the held frame while paused."""
        return self.ahead(count if self._playing else min(count, 1))

    # ---------------------------------------------------------------- controls

    def play(self) -> None:
        """Run from the held position (no effect when already playing)."""
        if not self._playing:
            self._origin = self._now() - float(Fraction(self._held) / self.rate)
            self._playing = True
            self.jumps += 1

    def pause(self) -> None:
        """Hold the frame due now."""
        if self._playing:
            t = self.timeline()
            self._held = self.media_frame(t) if self.media_frame(t) is not None else self.frame_count - 1
            self._playing = False

    def toggle(self) -> None:
        self.pause() if self._playing else self.play()

    def seek(self, frame: int) -> None:
        """Jump to media frame ``frame`` (clamped), keeping play/pause."""
        frame = self._clamp(frame)
        if self._playing:
            self._origin = self._now() - float(Fraction(frame) / self.rate)
        else:
            self._held = frame
        self.jumps += 1

    def seek_seconds(self, seconds: float) -> None:
        """Jump by ``seconds`` (negative: back) from the frame due now."""
        here = self.due()
        here = self.frame_count - 1 if here is None else here
        self.seek(here + round(seconds * self.rate))

    def step(self, frames: int = 1) -> None:
        """Pause and move by ``frames`` (negative: back), clamped to the media."""
        self.pause()
        self.seek(self._held + frames)

    def home(self) -> None:
        self.seek(0)

    def end(self) -> None:
        self.seek(self.frame_count - 1)


@dataclass
class PlaybackStats:
    """Counts for the summary: frames shown (late ones included), late and dropped."""

    shown: int = 0
    late: int = 0
    dropped: int = 0
    errors: int = 0
    #: the first timeline positions dropped (at most ``DROPS_KEPT``), for the summary
    dropped_at: list[int] = field(default_factory=list)

    def drop(self, positions: range) -> None:
        self.dropped += len(positions)
        room = DROPS_KEPT - len(self.dropped_at)
        if room > 0:
            self.dropped_at.extend(positions[:room])


#: Dropped positions a summary lists.
DROPS_KEPT = 64


def ranges_text(positions: list[int]) -> str:
    """``[2, 3, 4, 9]`` -> ``"2-4, 9"``."""
    out: list[str] = []
    for p in positions:
        if out and out[-1].split("-")[-1] == str(p - 1):
            first = out[-1].split("-")[0]
            out[-1] = f"{first}-{p}"
        else:
            out.append(str(p))
    return ", ".join(out)


class Scheduler:
    """Chooses the frame to draw on each tick and counts shown / late / dropped.

    While playing, every timeline position is either shown or dropped; a shown
    frame is also late when its picture was not ready at the first tick it was
    due.  Positions skipped by a seek or step are not counted.
    """

    def __init__(self, clock: PlaybackClock) -> None:
        self.clock = clock
        self.stats = PlaybackStats()
        self.current: int | None = None     # media frame on screen
        self.shown_at: int | None = None    # timeline position of the last frame shown
        self._next_t: int | None = None     # next timeline position owed a picture
        self._jumps = -1
        self._waiting_t: int | None = None  # position found not ready at its first due tick

    def tick(self, ready: Callable[[int], bool]) -> int | None:
        """The media frame to draw now (a new one), or None to keep the current picture."""
        clock = self.clock
        t = clock.timeline()
        frame = clock.media_frame(t)
        if clock.jumps != self._jumps:
            self._jumps = clock.jumps
            self._next_t = t
            self._waiting_t = None
        if frame is None:
            self.finish()
            return None
        if not clock.playing:
            if frame != self.current and ready(frame):
                self.current = frame
                self.stats.shown += 1
                self._next_t = t + 1
                return frame
            return None
        if t < self._next_t:
            return None                      # already shown this position
        if ready(frame):
            self.stats.drop(range(self._next_t, t))
            if self._waiting_t == t:
                self.stats.late += 1
            self._next_t = t + 1
            self._waiting_t = None
            self.current = frame
            self.shown_at = t
            self.stats.shown += 1
            return frame
        if self._waiting_t != t:
            self._waiting_t = t
        return None

    def finish(self, limit: int | None = None) -> None:
        """Count the positions up to the end (or timeline position ``limit``) never shown."""
        clock = self.clock
        if limit is None:
            if clock.loop:
                return
            limit = clock.frame_count
        if clock.playing and self._next_t is not None and self._next_t < limit:
            self.stats.drop(range(self._next_t, limit))
            self._next_t = limit
