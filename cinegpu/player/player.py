"""The player: a clock, a frame source, a texture target and a presenter, in one draw loop.

Each turn of :meth:`Player.run`: handle window events, tell the source which
frames come next (starting new decodes only where one can finish before the
frame is due, judged by the source's decode latency), ask the :class:`~.clock.Scheduler` whether a new frame is
due and ready; if so write its picture into the texture target and draw it
letterboxed.  The source is only polled, never waited on, so a slow decode
shows up as late and dropped frames, never as a slower clock.  Screenshots
(``{frame: path}``) are drawn into a framebuffer of the frame's size and read
back; their frames are pinned in the source so they are decoded even when
dropped from the screen.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import math
import queue
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np
import pyglet

from cinegpu.interop.xyz import XYZPlanes
from cinegpu.media.describe import fps_text
from cinegpu.media.images.png import write_png16

from .clock import PlaybackClock, PlaybackStats, Scheduler, ranges_text
from .resolution import level_text
from .source import FrameError

__all__ = ["Player", "Summary", "timecode", "overlay_text", "short_gil_turns", "KEYS"]

log = logging.getLogger("cinegpu.player")

#: Key name (pyglet.window.key symbol string) -> player action.
KEYS = {"SPACE": "toggle", "LEFT": "back", "RIGHT": "forward", "HOME": "home", "END": "end",
        "UP": "seek+10", "PAGEUP": "seek+10", "DOWN": "seek-10", "PAGEDOWN": "seek-10",
        "F": "fullscreen", "L": "loop", "O": "overlay", "Q": "quit", "ESCAPE": "quit"}


def timecode(frame: int, rate) -> str:
    """HH:MM:SS:FF of ``frame`` at ``rate`` (frames per second, rounded up for FF)."""
    fps = max(1, round(Fraction(rate)))
    s, ff = divmod(frame, fps)
    m, ss = divmod(s, 60)
    hh, mm = divmod(m, 60)
    return f"{hh:02d}:{mm:02d}:{ss:02d}:{ff:02d}"


#: Decoding below this share of the edit rate is worth a sentence when frames were dropped.
SLOWER = 0.95


@dataclass
class Summary:
    """What a playback did; ``str()`` is the line ``--headless`` prints."""

    frames: int
    stats: PlaybackStats
    seconds: float
    rate: Fraction
    backend: str
    target: str
    decode_fps: float
    screenshots: int = 0
    #: seconds one frame's decode took (the source's recent median; 0 unknown)
    latency: float = 0.0
    #: frames decoded at each reduced resolution level while decoding could not keep up
    #: (level -> count; empty when every frame was decoded at full resolution)
    reduced: dict = dataclasses.field(default_factory=dict)
    #: what became of the sound ("" when there was none): the sink and the measured offset
    audio: str = ""

    def reduced_text(self) -> str:
        """"decoded at 1/2 resolution: 40 frames" when decoding could not keep up, else ""."""
        if not self.reduced:
            return ""
        parts = ", ".join(f"{level_text(k)} resolution: {v} frame{'s' if v != 1 else ''}"
                          for k, v in sorted(self.reduced.items()))
        return f"decoded at {parts} (decoding could not keep up at full resolution)"

    @property
    def fps(self) -> float:
        return self.stats.shown / self.seconds if self.seconds > 0 else 0.0

    def why_dropped(self) -> str:
        """A plain sentence when frames were dropped because decoding is slower than the edit
        rate (what this machine plays at and why), else an empty string."""
        rate = float(self.rate)
        hint = (" (on the CPU: a CUDA GPU with CuPy installed decodes 2K and 4K in real time)"
                if self.backend != "cuda" else "")
        if self.stats.dropped and self.reduced:
            return (f"this machine decodes this material too slowly at full resolution for the edit "
                    f"rate of {fps_text(Fraction(self.rate))} ({self.backend}): the player went down "
                    f"to {level_text(max(self.reduced))} resolution, dropping {self.stats.dropped} "
                    f"frame{'s' if self.stats.dropped != 1 else ''} on the way{hint}")
        # too few frames decoded for a rate (a slow 4K frame, a short clip): one frame's time
        fps = self.decode_fps or (1.0 / self.latency if self.latency > 0 else 0.0)
        if not self.stats.dropped or not 0 < fps < SLOWER * rate:
            return ""
        return (f"this machine decodes this material at {fps:.1f} frames/s "
                f"({self.backend}), below the edit rate of {fps_text(Fraction(self.rate))}: "
                f"the player kept time by dropping frames{hint}")

    def __str__(self) -> str:
        s = self.stats
        decode = (f"decode {self.backend} {self.decode_fps:.1f} fps" if self.decode_fps > 0
                  else f"decode {self.backend}")
        if self.latency:
            decode += f" ({self.latency * 1e3:.0f} ms a frame)" if self.decode_fps > 0 \
                else f" {self.latency * 1e3:.0f} ms a frame"
        dropped = ""
        if s.dropped_at:
            dropped = f"; dropped at {ranges_text(s.dropped_at)}"
            if s.dropped > len(s.dropped_at):
                dropped += f" (the first {len(s.dropped_at)} of {s.dropped})"
        reduced = f"; {self.reduced_text()}" if self.reduced else ""
        return (f"played {self.frames} frames in {self.seconds:.2f} s: shown {s.shown}, dropped {s.dropped}, "
                f"late {s.late}, errors {s.errors}; {self.fps:.2f} fps achieved "
                f"(edit rate {fps_text(Fraction(self.rate))}); {decode}{reduced}; interop {self.target}; "
                f"screenshots {self.screenshots}{dropped}" + (f"; {self.audio}" if self.audio else ""))


@contextlib.contextmanager
def short_gil_turns(seconds: float = 0.0005):
    """Run with a short GIL switch interval (Python's default is 5 ms).  Every GL call
    releases the GIL, and while the decode feeder thread is busy each of them could wait
    a whole interval to get it back: a draw of some twenty calls then missed its frame."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, seconds))
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def overlay_text(clock: PlaybackClock, frame: int | None, stats: PlaybackStats, decode_fps: float,
                 backend: str, target: str, level: int = 0) -> str:
    """The overlay's lines: timecode, frame, decode fps, the resolution decoded when reduced,
    late/dropped counts, back end."""
    f = 0 if frame is None else frame
    state = "playing" if clock.playing else "paused"
    res = f"  resolution {level_text(level)}" if level > 0 else ""
    return (f"{timecode(f, clock.rate)}  frame {f + 1}/{clock.frame_count}  {state}{'  loop' if clock.loop else ''}\n"
            f"decode {decode_fps:.1f} fps{res}  late {stats.late}  dropped {stats.dropped}\n"
            f"back end {backend}, interop {target}")


class Player:
    """Plays ``source`` at ``rate`` through ``target`` in ``window`` (a pyglet window, current)."""

    def __init__(self, source, window, target, presenter, *, rate, loop: bool = False,
                 screenshots: dict[int, Path] | None = None, headless: bool = True,
                 now: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep,
                 depth: int = 8, preroll: int = 2, max_frames: int | None = None, subtitles=None) -> None:
        self.source, self.window, self.target, self.presenter = source, window, target, presenter
        self.clock = PlaybackClock(rate, source.frame_count, now=now, loop=loop)
        self.scheduler = Scheduler(self.clock)
        self.screenshots = dict(screenshots or {})
        self.headless = headless
        self._now, self._sleep = now, sleep
        # a source that decodes in bursts (the pipeline fills all its slots at once) has them
        # finish before the clock runs: finished back to back they made the first frames late
        preroll = max(preroll, min(getattr(source, "burst", 0), source.frame_count))
        self.depth, self.preroll, self.max_frames = depth, preroll, max_frames
        self.overlay = False
        self.quit = False
        #: the sound fed beside the picture (:class:`~.audio.AudioFeed` on this player's clock), or None
        self.audio = None
        self._label = None
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self._buffers: queue.SimpleQueue = queue.SimpleQueue()   # readback buffers not being written
        self._saving: list = []     # (frame, path, future) of screenshots being written
        for n in self.screenshots:
            if not 0 <= n < source.frame_count:
                raise ValueError(f"screenshot frame {n} outside 0..{source.frame_count - 1}")
            source.pin(n)
        target.open(source.width, source.height)
        #: 2: the source's pictures hold the two eyes top-bottom, drawn an eye a back buffer
        #: (quad-buffer stereo, :mod:`.stereo`); 1: one picture
        self.eyes = getattr(source, "eyes", 1)
        #: the subtitles drawn over each frame (a CompositionSubtitles; None or empty: none), of
        #: one eye's size
        self.subtitles = _subtitle_overlay(subtitles, source.width, source.height // self.eyes)
        self._subtitle_frame: int | None = None

    # ---------------------------------------------------------------- keys

    def act(self, action: str) -> None:
        """Apply a :data:`KEYS` action."""
        c = self.clock
        if action == "toggle":
            c.toggle()
        elif action in ("back", "forward"):
            c.step(-1 if action == "back" else 1)
        elif action in ("home", "end"):
            getattr(c, action)()
        elif action.startswith("seek"):
            c.seek_seconds(float(action[4:]))
        elif action == "loop":
            c.loop = not c.loop
        elif action == "overlay":
            self.overlay = not self.overlay
        elif action == "fullscreen" and not self.headless:
            self.window.set_fullscreen(not self.window.fullscreen)
        elif action == "quit":
            self.quit = True

    def _install_keys(self) -> None:
        from pyglet.window import key  # noqa: PLC0415  (pyglet.window: after open_window's headless choice)

        def on_key_press(symbol, modifiers):
            action = KEYS.get(key.symbol_string(symbol))
            if action:
                self.act(action)
                return True
            return None

        def on_draw():
            self._draw()

        self.window.push_handlers(on_key_press=on_key_press, on_draw=on_draw)

    # ---------------------------------------------------------------- drawing

    def _ready(self, n: int) -> bool:
        try:
            return self.source.get(n) is not None
        except FrameError:
            return True

    def _show(self, n: int) -> None:
        try:
            picture = self.source.get(n)
        except FrameError as exc:
            self.scheduler.stats.errors += 1
            log.warning("%s", exc)
            return
        self._upload(picture)
        self._subtitle_frame = n
        self._draw()
        if n in self.screenshots:
            self._screenshot(n)

    def _upload(self, picture) -> None:
        """Write ``picture`` into the target: X'Y'Z' planes (:mod:`cinegpu.interop.xyz`) as they
        are where the presenter converts them, else converted here first."""
        if isinstance(picture, XYZPlanes) and not self.presenter.converts_xyz:
            picture = picture.rgba16()
        self.target.write(picture)

    def _draw(self) -> None:
        w, h = self.window.get_framebuffer_size()
        overlay = self._overlay(self._subtitle_frame)
        self.presenter.draw(self.target.texture, self.target.width, self.target.height, w, h,
                            **({"overlay": overlay} if overlay else {}), eyes=self.eyes, xyz=self.target.xyz)
        if self.overlay and not self.headless:
            self._draw_overlay()
        self.window.flip()

    def _draw_overlay(self) -> None:
        text = overlay_text(self.clock, self.scheduler.current, self.scheduler.stats, self.source.decode_fps,
                            self.source.backend, self.target.name, getattr(self.source, "level", 0))
        if self._label is None:
            self._label = pyglet.text.Label("", x=10, y=10, multiline=True, width=900, anchor_y="bottom",
                                            color=(255, 255, 255, 255), font_size=12)
        self._label.text = text
        self._label.draw()

    def _overlay(self, n: int | None) -> int | None:
        """The texture of frame ``n``'s subtitles, or None.  A cue that cannot be drawn (a
        font or image Pillow cannot read) turns subtitles off with a warning; playback goes on."""
        if self.subtitles is None or n is None:
            return None
        try:
            return self.subtitles.texture_for(n)
        except (OSError, ValueError) as exc:
            log.warning("subtitles turned off: frame %d's cannot be drawn: %s", n, exc)
            self.subtitles.close()
            self.subtitles = None
            return None

    def _screenshot(self, n: int) -> None:
        """Read the frame back from GL here (the context is this thread's) into a buffer made
        before the clock ran, and leave the PNG to the writer thread: compressing a 4K
        picture takes about a second, which would otherwise stall the clock's frames."""
        path = self.screenshots.pop(n)
        try:
            buffer = self._buffers.get_nowait()
        except queue.Empty:
            buffer = self._buffer()
        overlay = self._overlay(n)
        pixels = self.presenter.screenshot(self.target.texture, self.target.width, self.target.height, buffer,
                                           **({"overlay": overlay} if overlay else {}), eyes=self.eyes,
                                           xyz=self.target.xyz)
        self.source.unpin(n)
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="cinegpu-screenshot")
        self._saving.append((n, path, self._writer.submit(self._write, path, pixels, buffer)))

    def _buffer(self):
        """A readback buffer of the frame's size, its pages touched (a 4K one is 70 MB)."""

        buffer = np.empty((self.target.height, self.target.width, 4), np.uint16)
        buffer.fill(0)
        return buffer

    def _write(self, path: Path, pixels, buffer) -> None:
        try:
            write_png16(path, pixels)
        finally:
            self._buffers.put(buffer)

    def _saved(self) -> int:
        """Wait for the screenshot files; how many were written."""
        taken = 0
        for n, path, future in self._saving:
            try:
                future.result()
            except OSError as exc:
                log.warning("screenshot of frame %d not saved: %s", n, exc)
                continue
            taken += 1
            log.info("frame %d saved to %s", n, path)
        self._saving.clear()
        return taken

    def _pinned_screenshots(self) -> None:
        """Screenshots of frames the clock passed (dropped) but the source has since decoded."""
        for n in list(self.screenshots):
            if n == self.scheduler.current:
                continue
            try:
                picture = self.source.get(n)
            except FrameError as exc:
                log.warning("screenshot of %s", exc)
                self.screenshots.pop(n)
                continue
            if picture is not None and (self.clock.ended or n not in self.clock.upcoming(self.depth)):
                self._upload(picture)
                self._screenshot(n)
                self.scheduler.current = None       # the texture no longer holds the shown frame

    # ---------------------------------------------------------------- loop

    def _wait_preroll(self, timeout: float = 120.0) -> None:
        first = self.clock.ahead(max(self.depth, self.preroll))
        self.source.want(first)
        end = self._now() + timeout
        while self._now() < end and not self.quit:
            if all(self._ready(n) for n in first[: self.preroll]):
                self._prime(first[0] if first else None)
                return
            self._events()
            self._sleep(0.002)

    def _prime(self, n: int | None) -> None:
        """Upload and draw the first picture before the clock starts: the first write
        registers the texture with CUDA and compiles kernels, which must not make the
        first frames late. It is not counted as shown; the clock shows it when due."""
        if n is None:
            return
        try:
            picture = self.source.get(n)
        except FrameError:
            return
        if picture is not None:
            self._upload(picture)
            self._subtitle_frame = n
            self._draw()
            if self.screenshots:    # the screenshot framebuffer and two readback buffers, made now
                for _ in range(2):
                    self._buffers.put(self._buffer())
                buffer = self._buffers.get()
                self.presenter.screenshot(self.target.texture, self.target.width, self.target.height, buffer,
                                          xyz=self.target.xyz)
                self._buffers.put(buffer)

    def _want(self) -> None:
        """Ask for the next frames; while playing, start new decodes only for frames that can be
        ready by their presentation time (``lead`` frames ahead, from the source's latency)."""
        clock = self.clock
        lead = math.ceil(getattr(self.source, "latency", 0.0) * clock.rate) if clock.playing else 0
        self.source.want(clock.upcoming(lead + self.depth), start=lead)

    def _events(self) -> None:
        if not self.headless:
            self.window.dispatch_events()
            if self.window.has_exit:
                self.quit = True

    def _done(self) -> bool:
        c = self.clock
        if self.quit:
            return True
        if self.max_frames is not None and c.playing and c.timeline() >= self.max_frames:
            return True
        return self.headless and c.ended

    def turn(self) -> float:
        """One turn of the draw loop, never waiting: window events, decode requests, the due frame
        drawn when ready; the seconds (>= 0) to sleep before the next turn.  :meth:`run` is this in
        a loop; the playback server drives it from its own loop between HTTP commands."""
        self._events()
        pace = getattr(self.source, "pace", None)
        if pace is not None:        # the resolution governor compares decoding with this rate
            pace(float(self.clock.rate) if self.clock.playing else 0.0)
        self._want()
        if self.audio is not None:
            self.audio.update(self._now())
        n = self.scheduler.tick(self._ready)
        if n is not None:
            self._show(n)
            if self.audio is not None and self.clock.playing and self.scheduler.shown_at is not None:
                self.audio.shown(self.scheduler.shown_at, n)
        if self.screenshots:
            self._pinned_screenshots()
        clock = self.clock
        t = clock.timeline()
        wait = clock.presentation_time(t + 1) - self._now() if clock.playing else 0.01
        return min(max(wait, 0.0), 0.002 if self.scheduler.current != clock.due() else 0.01)

    def run(self) -> Summary:
        """Play until the end (headless, not looping), ``max_frames`` or quit; the summary."""
        if not self.headless:
            self._install_keys()
        self._wait_preroll()
        clock = self.clock
        clock.play()
        start, decoded = self._now(), getattr(self.source, "decoded", 0)
        levels = dict(getattr(self.source, "levels", {}))
        with short_gil_turns():
            while not self._done():
                self._sleep(self.turn())
        seconds = self._now() - start
        # pictures made while playing (the demand caps it at about the edit rate)
        decode_fps = (getattr(self.source, "decoded", 0) - decoded) / seconds if seconds > 0 else 0.0
        if not self.quit:
            self.scheduler.finish(self.max_frames)
        played = self.max_frames if self.max_frames is not None else clock.frame_count
        self._finish_screenshots()
        now_levels = getattr(self.source, "levels", {})
        reduced = {k: v - levels.get(k, 0) for k, v in now_levels.items() if k > 0 and v > levels.get(k, 0)}
        return Summary(played, self.scheduler.stats, seconds, clock.rate, self.source.backend, self.target.name,
                       decode_fps, self._saved(), getattr(self.source, "latency", 0.0), reduced)

    def _finish_screenshots(self, timeout: float = 120.0) -> None:
        end = self._now() + timeout
        self.source.want([])
        while self.screenshots and self._now() < end and not (self.quit and not self.headless):
            self._pinned_screenshots()
            self._sleep(0.005)
        for n in self.screenshots:
            log.warning("screenshot of frame %d not taken: never decoded", n)

    def close(self) -> None:
        self._saved()
        if self._writer is not None:
            self._writer.shutdown()
        if self.subtitles is not None:
            self.subtitles.close()
        self.target.close()
        self.presenter.close()


def _subtitle_overlay(subtitles, width: int, height: int):
    """The GL overlay of ``subtitles`` (None when there are none)."""
    if not subtitles:
        return None
    from .subtitles import SubtitleOverlay  # noqa: PLC0415  (start-up: PIL and the timed-text readers, ~50-90 ms)

    return SubtitleOverlay(subtitles, width, height)
