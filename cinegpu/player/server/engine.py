"""The engine: the one thread that owns the GL window, the player and the decode pipeline.

HTTP handlers never touch the player.  They put a :class:`Command` on the engine's queue and
await its future; :meth:`Engine.run` (the display thread, the process's main thread) drains the
queue between turns of :meth:`~cinegpu.player.player.Player.turn`, so a request costs the display
at most one queue read per turn and never a wait.  What the player is doing is published as a
status snapshot (a fresh ``dict`` per change, never mutated after publication) that handlers read
without a lock.

Opening a composition (package XML, MXF indexes, worker processes) is slow, so it happens in one
loader thread; the opened media and frame source come back through the same queue and the
display thread only builds the GL target and the :class:`Player`.  Loads are coalesced: the
loader takes only the latest load asked for (a load superseded while it waits never starts), it
checks before starting the decode workers that its load is still the latest, and a load
superseded while its workers start is closed at once; so a burst of loads starts at most two
pipelines, not one each.  Closing a source (joining its workers) is handed to a closer thread.

States: ``idle`` (nothing loaded), ``loading``, ``stopped`` (loaded, at the first frame),
``starting`` (play asked for; decoding the preroll before the clock runs), ``playing``,
``paused``, ``ended`` (past the last frame of the last composition).

Sound: with ``audio`` not "off", the loader also opens the composition's sound and
:meth:`Engine._install` gives the player an :class:`~cinegpu.player.audio.AudioFeed` (the one
``cinegpu play`` builds, :func:`~cinegpu.player.audio.open_feed`), fed by the player's turns.
Volume, mute and routing set by the ``audio`` command outlive loads; a routing whose shape does
not fit the next composition's sound (its channels x the sink's) is reset to the default
downmix, and the status says so.  The status's ``audio.peaks_dbfs`` are the feed's meters
(:class:`~cinegpu.player.audio.PeakMeter`: each source channel's peak over the last 0.1 s fed,
read here on the display thread), with ``channel_labels`` (ST 377-4 MCA, else the ST 429-2 order).
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from cinegpu.decode.errors import BackendUnavailable
from cinegpu.interop.errors import InteropError
from cinegpu.media.sound.composition import open_composition_sound

from ..audio import open_feed
from ..clock import PlaybackStats, ranges_text
from ..player import Player, short_gil_turns, timecode
from ..resolution import level_text
from ..source import FRAME_ERRORS, FrameError
from ..subtitles import subtitles_for
from .library import Entry
from .preview import PreviewStore, PreviewTarget

__all__ = ["Command", "CommandError", "Engine", "parse_timecode"]

log = logging.getLogger("cinegpu.server")

COMMANDS = ("load", "play", "pause", "stop", "step", "seek", "audio", "loop", "subtitles")
#: Seconds :meth:`Engine.run` waits, once asked to quit, for the threads loading and closing
#: sources (the server promises to exit within 3 s of SIGTERM; HTTP stops beside this).
SHUTDOWN_SECONDS = 1.5


class CommandError(Exception):
    """A command the engine refuses; ``status`` is the HTTP status the server answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Command:
    name: str
    args: dict = field(default_factory=dict)
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


def parse_timecode(text: str, rate: Fraction) -> int:
    """Frame number of ``hh:mm:ss:ff`` at ``rate`` (FF counts whole frames of round(rate) per second)."""
    m = re.fullmatch(r"(\d{1,3}):([0-5]\d):([0-5]\d)[:;](\d{1,3})", text.strip())
    if m is None:
        raise CommandError(422, f"timecode must be hh:mm:ss:ff, got {text!r}")
    hh, mm, ss, ff = map(int, m.groups())
    fps = max(1, round(rate))
    if ff >= fps:
        raise CommandError(422, f"frame field {ff} of {text!r} is not below {fps} (edit rate {rate})")
    return ((hh * 60 + mm) * 60 + ss) * fps + ff


def hms(frame: int, rate: Fraction) -> str:
    """``h:mm:ss`` of ``frame`` (DCP-o-matic's player status position)."""
    s = int(Fraction(frame) / rate)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _ErrorLog(logging.Handler):
    """Warnings and errors of the ``cinegpu`` loggers, the last ``keep`` of them, for status."""

    def __init__(self, keep: int = 20) -> None:
        super().__init__(logging.WARNING)
        self.recent: collections.deque = collections.deque(maxlen=keep)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:   # a bad format string must not break playback
            msg = str(record.msg)
        self.recent.append({"time": round(record.created, 3), "source": record.name, "message": msg[:500]})
        self.count += 1


@dataclass
class _Loaded:
    generation: int
    entry: Entry
    media: object
    source: object
    sound: object = None        # the media's CompositionSound, or None
    subtitles: object = None    # the composition's CompositionSubtitles, or None


@dataclass
class AudioSettings:
    """What the ``audio`` command set; kept across loads. ``routing``: (source channels x
    sink channels) gains as nested lists, or None for the default downmix."""

    volume: float = 1.0
    mute: bool = False
    routing: list | None = None
    note: str | None = None     # why the routing was reset, until it is set again


@dataclass
class _Failed:
    generation: int
    entry: Entry
    error: BaseException


class Engine:
    """Plays library entries in ``window`` as commands arrive; see the module docstring.

    ``open_media(entry)`` opens an entry's picture (a :class:`cinegpu.media.Source`);
    ``make_source(media)`` gives its frame source (``PipelineSource`` or ``DecodeAheadSource``);
    ``make_target(backend)`` a texture target; ``make_presenter()`` a presenter.  ``fps``
    overrides the edit rate (sequences have none: 24).  ``now`` and ``sleep`` are injected.
    ``audio``: the sound sink, "auto", "null" or "off" (:func:`~cinegpu.player.audio.open_sink`).
    ``subtitles``: draw a composition's subtitles over its picture (read by the loader);
    ``captions``: its closed captions too (ST 429-12).
    """

    def __init__(self, window, *, open_media: Callable, make_source: Callable, make_target: Callable,
                 make_presenter: Callable, headless: bool = True, fps=None, preroll: int = 2,
                 preroll_timeout: float = 30.0, now: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep, backend: str = "", audio: str = "off",
                 subtitles: bool = True, captions: bool = False) -> None:
        self.window, self.headless = window, headless
        self._open_media, self._make_source = open_media, make_source
        self._make_target, self._make_presenter = make_target, make_presenter
        self.fps = None if fps is None else Fraction(fps)
        self.preroll, self.preroll_timeout = max(1, preroll), preroll_timeout
        self._now, self._sleep = now, sleep
        self.backend = backend
        self.audio_mode = audio
        self.audio = AudioSettings()
        self.subtitles, self.captions = subtitles, captions
        #: the last picture presented, for ``GET /api/v1/preview`` (:mod:`.preview`: kept by the
        #: player's target, downscaled and encoded in the request's thread)
        self.preview = PreviewStore()
        #: the ``subtitles`` command's choice; the overlay of a player while it is hidden
        self.subtitles_shown, self._hidden_overlay = True, None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._quit = threading.Event()
        self.player: Player | None = None
        self.media = None
        self.entry: Entry | None = None
        self.playlist: list[Entry] = []
        self.index = 0
        self.loop = False
        self.state = "idle"
        self._generation = 0
        self._pending: list[concurrent.futures.Future] = []     # load futures answered when loaded
        self._autoplay = False
        self._preroll_until = 0.0
        self._totals = PlaybackStats()
        self._errors = _ErrorLog()
        self._started = now()
        self._snapshot: dict = {}
        self._published_at = -1.0
        self._key: tuple = ()
        self.version = 0
        self._closers: list[threading.Thread] = []
        self._wanted: tuple[int, Entry] | None = None       # the latest load, not yet taken by the loader
        self._wanted_cond = threading.Condition()
        self._loader: threading.Thread | None = None
        self._publish(force=True)

    # ---------------------------------------------------------------- any thread

    def submit(self, name: str, **args) -> concurrent.futures.Future:
        """Queue a command for the display thread; the future gets the status after it, or a
        :class:`CommandError`."""
        cmd = Command(name, args)
        if self._quit.is_set():
            cmd.future.set_exception(CommandError(503, "the server is shutting down"))
        else:
            self._queue.put(cmd)
        return cmd.future

    def snapshot(self) -> dict:
        """The status last published (do not modify)."""
        return self._snapshot

    def request_quit(self) -> None:
        """Ask the loop to end (a signal handler may call this)."""
        self._quit.set()

    @property
    def quitting(self) -> bool:
        return self._quit.is_set()

    # ---------------------------------------------------------------- display thread

    def run(self) -> None:
        """The loop: commands, one player turn, status; until :meth:`request_quit` or the window closes."""
        root = logging.getLogger("cinegpu")
        root.addHandler(self._errors)
        try:
            with short_gil_turns():      # the HTTP and decode threads must not make the draws wait
                while not self._quit.is_set():
                    self._drain()
                    wait = self._turn()
                    self._publish()
                    self._sleep(min(wait, 0.01))
        finally:
            root.removeHandler(self._errors)
            self._shutdown()

    def _drain(self, limit: int = 64) -> None:
        for _ in range(limit):
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Loaded):
                self._install(item)
            elif isinstance(item, _Failed):
                self._load_failed(item)
            else:
                self._apply(item)

    def _apply(self, cmd: Command) -> None:
        if not cmd.future.set_running_or_notify_cancel():   # the handler gave up (timeout)
            return
        try:
            handler = getattr(self, f"_cmd_{cmd.name}", None) if cmd.name in COMMANDS else None
            if handler is None:
                raise CommandError(400, f"unknown command {cmd.name!r}")
            deferred = handler(**cmd.args)
        except CommandError as exc:
            cmd.future.set_exception(exc)
            return
        except Exception as exc:   # a bug in a command must not stop playback
            log.exception("command %s failed", cmd.name)
            cmd.future.set_exception(CommandError(500, f"{cmd.name} failed: {type(exc).__name__}: {exc}"))
            return
        if deferred:
            self._pending.append(cmd.future)
        else:
            self._publish(force=True)
            cmd.future.set_result(self._snapshot)

    def _turn(self) -> float:
        p = self.player
        if p is None:
            self._events()
            return 0.01
        if self.state == "starting":
            return self._preroll_turn(p)
        wait = p.turn()
        if p.quit:
            self._quit.set()
        clock = p.clock
        if clock.playing and clock.ended:
            p.scheduler.finish()
            if self.index + 1 < len(self.playlist):
                self._start_load(self.index + 1, autoplay=True)
            elif self.loop and len(self.playlist) > 1:
                self._start_load(0, autoplay=True)
            else:
                clock.pause()
                self.state = "ended"
        return wait

    def _events(self) -> None:
        if not self.headless:
            self.window.dispatch_events()
            if self.window.has_exit:
                self._quit.set()

    def _preroll_turn(self, p: Player) -> float:
        """Decode the frames from the held position before the clock runs (never waiting)."""
        clock = p.clock
        frames = clock.ahead(max(p.depth, p.preroll))
        p.source.want(frames)
        self._events()
        if all(self._ready(p, n) for n in frames[: p.preroll]) or self._now() > self._preroll_until:
            clock.play()
            self.state = "playing"
            return 0.0
        return 0.002

    @staticmethod
    def _ready(p: Player, n: int) -> bool:
        try:
            return p.source.get(n) is not None
        except FrameError:
            return True

    # ---------------------------------------------------------------- commands

    def _need_player(self) -> Player:
        if self.player is None:
            raise CommandError(409, "nothing is loaded" if self.state != "loading" else "still loading")
        return self.player

    def _cmd_load(self, entries: list[Entry], loop: bool = False, play: bool = False) -> bool:
        if not entries:
            raise CommandError(422, "nothing to load")
        for f in self._pending:
            if not f.done():
                f.set_exception(CommandError(409, "superseded by a later load"))
        self._pending.clear()
        self.playlist, self.loop = list(entries), bool(loop)
        self._totals = PlaybackStats()
        self._start_load(0, autoplay=play)
        return True

    def _cmd_play(self) -> None:
        p = self._need_player()
        if self.state in ("playing", "starting"):
            return
        if self.state == "ended" or p.clock.ended:
            p.clock.seek(0)
        self._start_playing(p)

    def _start_playing(self, p: Player) -> None:
        self.state = "starting"
        self._preroll_until = self._now() + self.preroll_timeout

    def _cmd_pause(self) -> None:
        p = self._need_player()
        p.clock.pause()
        self.state = "paused"

    def _cmd_stop(self) -> None:
        p = self._need_player()
        p.clock.pause()
        p.clock.seek(0)
        self.state = "stopped"

    def _cmd_step(self, frames: int = 1) -> None:
        p = self._need_player()
        p.clock.step(frames)
        self.state = "paused"

    def _cmd_seek(self, frame: int | None = None, timecode: str | None = None) -> None:
        p = self._need_player()
        if timecode is not None:
            frame = parse_timecode(timecode, p.clock.rate)
        if frame is None:
            raise CommandError(422, "seek needs a frame or a timecode")
        if not 0 <= frame < p.clock.frame_count:
            raise CommandError(422, f"frame {frame} outside 0..{p.clock.frame_count - 1}")
        playing = self.state in ("playing", "starting")
        p.clock.pause()
        p.clock.seek(frame)
        if playing:
            self._start_playing(p)          # preroll again: a seek should not drop frames
        elif self.state == "ended":
            self.state = "paused"

    def _cmd_loop(self, loop: bool) -> None:
        """Loop or not, from now on: a single composition's clock wraps at its end, a playlist
        starts again after its last one; also what later loads do unless they say."""
        self.loop = bool(loop)
        if self.player is not None:
            self.player.clock.loop = self.loop and len(self.playlist) == 1

    def _cmd_subtitles(self, on: bool) -> None:
        """Draw the subtitles (and closed captions) over the picture or not, from now on and for
        later loads; on, with none read (``--subtitles off``), later loads read them."""
        self.subtitles_shown = bool(on)
        self.subtitles = self.subtitles or self.subtitles_shown
        p = self.player
        if p is not None:
            self._show_subtitles(p)
            if not p.clock.playing and p.scheduler.current is not None:
                p._draw()       # a held frame: drawn again with or without them

    def _show_subtitles(self, p: Player) -> None:
        """Give ``p`` its subtitle overlay, or keep it aside, as :attr:`subtitles_shown` says."""
        if self.subtitles_shown and self._hidden_overlay is not None:
            p.subtitles, self._hidden_overlay = self._hidden_overlay, None
        elif not self.subtitles_shown and p.subtitles is not None:
            self._hidden_overlay, p.subtitles = p.subtitles, None

    def _cmd_audio(self, volume: float | None = None, mute: bool | None = None, set_routing: bool = False,
                   routing: list | None = None) -> None:
        """Set the volume (linear gain), mute and routing (None: the default downmix) of the
        sound playing, kept for later loads; types and ranges were checked by the handler, the
        routing's shape is checked here against the sound's channels and the sink's."""
        p = self._need_player()
        feed = p.audio
        if feed is None:
            why = "sound is off (--audio off)" if self.audio_mode == "off" else "the composition loaded has no sound"
            raise CommandError(409, f"no sound to set: {why}")
        if set_routing and routing is not None:
            shape = (feed.sound.channels, feed.sink.channels)
            got = (len(routing), len(routing[0]) if routing else 0)
            if got != shape:
                raise CommandError(422, f"routing must be {shape[0]} rows (the sound's channels) of {shape[1]} "
                                        f"gains (the {feed.sink.name} sink's channels), got {got[0]} x {got[1]}")
        a = self.audio
        if volume is not None:
            a.volume = float(volume)
        if mute is not None:
            a.mute = bool(mute)
        if set_routing:
            a.routing, a.note = routing, None
        self._apply_audio(feed)

    def _apply_audio(self, feed) -> None:
        """Give ``feed`` the settings; a routing that does not fit it goes back to the downmix."""

        a = self.audio
        if a.routing is not None and (len(a.routing), len(a.routing[0])) != (feed.sound.channels,
                                                                               feed.sink.channels):
            a.note = (f"routing reset to the default downmix: it was {len(a.routing)} x {len(a.routing[0])}, "
                      f"this sound is {feed.sound.channels} channels to {feed.sink.channels}")
            log.warning("%s", a.note)
            a.routing = None
        feed.volume, feed.mute = a.volume, a.mute
        feed.routing = None if a.routing is None else np.array(a.routing, np.float64)

    # ---------------------------------------------------------------- loading

    def _start_load(self, index: int, *, autoplay: bool) -> None:
        self._generation += 1
        self._unload()
        self.index, self._autoplay = index, autoplay
        self.entry = self.playlist[index]
        self.state = "loading"
        with self._wanted_cond:
            self._wanted = (self._generation, self.entry)
            self._wanted_cond.notify()
        if self._loader is None or not self._loader.is_alive():
            self._loader = threading.Thread(target=self._loader_loop, name="loader", daemon=True)
            self._loader.start()
        self._publish(force=True)

    def _loader_loop(self) -> None:
        """Loader thread: take the latest wanted load, one at a time, until quit."""
        while True:
            with self._wanted_cond:
                while self._wanted is None and not self._quit.is_set():
                    self._wanted_cond.wait(0.5)
                if self._quit.is_set():
                    return
                (gen, entry), self._wanted = self._wanted, None
            self._load(gen, entry)

    def _superseded(self, gen: int) -> bool:
        return gen != self._generation or self._quit.is_set()

    def _load(self, gen: int, entry: Entry) -> None:
        """Open the media and its frame source, unless a later load (or quit) superseded this one."""
        media = source = sound = None
        try:
            if self._superseded(gen):
                return
            media = self._open_media(entry)
            sound = self._open_sound(media, entry)
            subtitles = self._open_subtitles(media)
            if self._superseded(gen):       # before any decode worker starts
                self._close_now(sound, media)
                return
            source = self._make_source(media)
            if self._superseded(gen):       # its workers started meanwhile: close them now
                self._close_now(source, sound, media)
                return
            self._queue.put(_Loaded(gen, entry, media, source, sound, subtitles))
        except FRAME_ERRORS as exc:   # unreadable media, no frame decodable, no GPU, no workers
            if not self._quit.is_set():     # (at shutdown: the workers' start was cancelled)
                log.warning("cannot load %s (%s): %s", entry.title or entry.id, entry.id, exc)
            self._close_now(source, sound, media)
            self._queue.put(_Failed(gen, entry, exc))
        except Exception as exc:   # a bug while loading: the load command must still be answered
            log.exception("loading %s (%s) failed", entry.title or entry.id, entry.id)
            self._close_now(source, sound, media)
            self._queue.put(_Failed(gen, entry, exc))

    def _open_sound(self, media, entry: Entry):
        """``media``'s sound (a CompositionSound), or None (off, none, or unreadable: warned)."""
        if self.audio_mode == "off":
            return None
        try:
            return open_composition_sound(media)
        except FRAME_ERRORS as exc:     # a damaged sound track: the picture still plays
            log.warning("%s (%s): sound not played: %s", entry.title or entry.id, entry.id, exc)
            return None

    def _open_subtitles(self, media):
        """``media``'s subtitles (a CompositionSubtitles), or None (off, none, or unreadable:
        :func:`~cinegpu.player.subtitles.subtitles_for` warns and shows nothing)."""
        frames = getattr(media, "frame_count", None)
        if not (self.subtitles or self.captions) or not frames:
            return None
        rate = self.fps or getattr(media, "edit_rate", None) or Fraction(24)
        return subtitles_for(media, frames, rate, on=self.subtitles, captions=self.captions)

    def _install(self, item: _Loaded) -> None:
        if item.generation != self._generation or self._quit.is_set():
            self._close_later(None, item.source, item.sound, item.media)
            return
        source = item.source
        rate = self.fps or source.edit_rate or Fraction(24)
        try:
            target = PreviewTarget(self._make_target(source.backend), self.preview)
            depth = max(8, self.preroll, getattr(source, "depth", 8))
            self.player = Player(source, self.window, target, self._make_presenter(), rate=rate,
                                 loop=self.loop and len(self.playlist) == 1,
                                 headless=self.headless, depth=depth, preroll=self.preroll, now=self._now,
                                 sleep=self._sleep, subtitles=item.subtitles)
        except (InteropError, BackendUnavailable) as exc:   # no texture target for this back end
            log.warning("cannot play %s: %s", item.entry.id, exc)
            self._close_later(None, source, item.sound, item.media)
            self._load_failed(_Failed(item.generation, item.entry, exc))
            return
        except Exception as exc:   # a bug in this command (run from the command loop): answer it, keep serving
            log.exception("cannot play %s", item.entry.id)
            self._close_later(None, source, item.sound, item.media)
            self._load_failed(_Failed(item.generation, item.entry, exc))
            return
        self.media = item.media
        self._show_subtitles(self.player)
        self._install_audio(self.player, item)
        self.state = "stopped"
        if self._autoplay:
            self._start_playing(self.player)
        self._answer_pending()

    def _install_audio(self, p: Player, item: _Loaded) -> None:
        """The player's sound feed, with the settings kept; no sound on any failure (logged)."""
        if item.sound is None:
            return
        try:
            p.audio = open_feed(item.media, p.clock, self.audio_mode, sound=item.sound)
        except Exception:   # a sink that cannot open must not stop the picture (traceback logged)
            log.exception("%s: no sound", item.entry.id)
            self._close_now(item.sound)
            return
        if p.audio is not None:
            self._apply_audio(p.audio)

    def _load_failed(self, item: _Failed) -> None:
        if item.generation != self._generation:
            return
        self.state = "idle"
        self.entry = None
        status = 409
        err = CommandError(status, f"cannot load {item.entry.id}: {type(item.error).__name__}: {item.error}")
        # published before the answer, as _answer_pending does: a client that reads the status
        # right after its 409 sees "idle", not the "loading" of the last snapshot
        self._publish(force=True)
        for f in self._pending:
            if not f.done():
                f.set_exception(err)
        self._pending.clear()

    def _answer_pending(self) -> None:
        self._publish(force=True)
        for f in self._pending:
            if not f.done():
                f.set_result(self._snapshot)
        self._pending.clear()

    def _unload(self) -> None:
        p, media = self.player, self.media
        self.player, self.media = None, None
        if p is not None and self._hidden_overlay is not None:     # closed with the player (GL: here)
            p.subtitles, self._hidden_overlay = self._hidden_overlay, None
        if p is not None:
            s = p.scheduler.stats
            t = self._totals
            t.shown, t.late, t.dropped, t.errors = t.shown + s.shown, t.late + s.late, \
                t.dropped + s.dropped, t.errors + s.errors
            feed, p.audio = p.audio, None
            if feed is not None:
                try:
                    feed.sink.close()       # the sound stops with the picture
                except Exception:   # teardown: the server goes on (traceback logged)
                    log.exception("closing the sound sink")
            self._close_later(p, p.source, feed and feed.sound, media)

    def _close_later(self, player, *things) -> None:
        """Close ``player`` (GL: here) and, in a closer thread, ``things`` (source, sound, media)."""
        if player is not None:
            try:
                player.close()
            except Exception:   # teardown, not a frame: whatever failed, the server goes on (traceback logged)
                log.exception("closing the player")

        t = threading.Thread(target=self._close_now, args=things, name="closer", daemon=True)
        t.start()
        self._closers = [c for c in self._closers if c.is_alive()] + [t]

    @staticmethod
    def _close_now(*things) -> None:
        for thing in things:
            if thing is not None:
                try:
                    thing.close()
                except Exception:   # teardown, not a frame: the next load must not wait on it (traceback logged)
                    log.exception("closing %s", type(thing).__name__)

    def _shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        """Reject what is queued, close the player and its source, and wait at most ``timeout``
        seconds (wall clock) for the loader and closer threads.  Sources close within their own
        bound (the pipeline's workers are ended, not awaited) and a load in progress stops when it
        sees the quit (``cancelled`` of the pipeline), so the wait is short; a thread still busy
        after it is a daemon and is left to the process's exit."""
        end = time.monotonic() + timeout
        self._generation += 1
        self._quit.set()
        with self._wanted_cond:
            self._wanted = None
            self._wanted_cond.notify()
        self._drain_rejecting()
        self._unload()
        if self._loader is not None:
            self._loader.join(timeout=max(0.0, end - time.monotonic()))
            self._drain_rejecting()        # a load it finished meanwhile
        for t in self._closers:
            t.join(timeout=max(0.0, end - time.monotonic()))
        late = [t.name for t in [self._loader, *self._closers] if t is not None and t.is_alive()]
        if late:
            log.warning("shutdown: %s still running after %.1f s; left to the process exit", ", ".join(late), timeout)
        self.state = "idle"
        self._publish(force=True)

    def _drain_rejecting(self) -> None:
        err = CommandError(503, "the server is shutting down")
        for f in self._pending:
            if not f.done():
                f.set_exception(err)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Loaded):
                self._close_later(None, item.source, item.sound, item.media)
            elif isinstance(item, Command) and item.future.set_running_or_notify_cancel():
                item.future.set_exception(err)

    # ---------------------------------------------------------------- status

    def _publish(self, force: bool = False) -> None:
        """Build a new snapshot when something it shows changed (at least every 0.25 s)."""
        p = self.player
        key = (self.state, self.index, self._generation, self._errors.count,
               None if p is None else (p.clock.timeline(), p.scheduler.current, p.scheduler.stats.shown,
                                       p.scheduler.stats.dropped))
        now = self._now()
        if not force and key == self._key and now - self._published_at < 0.25:
            return
        self._key, self._published_at = key, now
        self.version += 1
        self._snapshot = self._status(now)

    def _status(self, now: float) -> dict:
        p, e = self.player, self.entry
        t = self._totals
        s = p.scheduler.stats if p is not None else PlaybackStats()
        rate = p.clock.rate if p is not None else (self.fps or (e.edit_rate if e else None))
        frame = reel = None
        if p is not None:
            due = p.clock.due()
            frame = p.clock.frame_count - 1 if due is None else due
            reel = self._reel(frame)
        return {
            "state": self.state,
            "composition": None if e is None else {"id": e.id, "title": e.title, "kind": e.kind,
                                                   "frames": p.clock.frame_count if p else e.frames},
            "playlist": [x.id for x in self.playlist], "playlist_index": self.index if self.playlist else None,
            "loop": self.loop,
            "reel": reel,
            "frame": frame,
            "shown_frame": None if p is None else p.scheduler.current,
            "frame_count": None if p is None else p.clock.frame_count,
            "timecode": None if frame is None else timecode(frame, rate),
            "edit_rate": None if rate is None else str(Fraction(rate)),
            "edit_rate_fps": None if rate is None else float(rate),
            "decode_fps": round(p.source.decode_fps, 2) if p is not None else 0.0,
            "resolution": level_text(getattr(p.source, "level", 0)) if p is not None else "full",
            # this composition's counts, reset together when the next one starts ...
            "shown": s.shown, "late": s.late, "dropped": s.dropped, "frame_errors": s.errors,
            "dropped_at": ranges_text(s.dropped_at),
            # ... and the playlist's, since it was loaded
            "session": {"shown": t.shown + s.shown, "late": t.late + s.late, "dropped": t.dropped + s.dropped,
                        "frame_errors": t.errors + s.errors},
            "backend": p.source.backend if p is not None else self.backend,
            "interop": p.target.name if p is not None else None,
            "errors": list(self._errors.recent)[-10:], "error_count": self._errors.count,
            "uptime": round(now - self._started, 3), "version": self.version,
            # DCP-o-matic's player API (src/lib/http_server.cc): playing, position (h:mm:ss), dcp_name
            "playing": self.state in ("playing", "starting"),
            "position": hms(frame or 0, rate) if rate else "0:00:00",
            "dcp_name": "" if e is None else e.title,
            "audio": None if p is None else self._audio_status(p.audio),
            "subtitles": {"on": self.subtitles_shown,
                          "available": p is not None and (p.subtitles is not None or self._hidden_overlay is not None)},
        }

    def _audio_status(self, feed) -> dict | None:
        if feed is None:
            return None
        a = self.audio
        return {"sink": feed.sink.name, "channels": feed.sound.channels, "sink_channels": feed.sink.channels,
                "rate": int(feed.rate), "volume": a.volume, "mute": a.mute,
                "routing": "default" if a.routing is None else "custom", "routing_note": a.note,
                "offset_ms": feed.offset_ms(),
                # the meters: each channel's peak over the last 0.1 s fed (dBFS, None: silence)
                "peaks_dbfs": feed.meter.peaks_dbfs(), "channel_labels": list(feed.names)}

    def _reel(self, frame: int) -> dict | None:
        e = self.entry
        if e is None or not e.reels:
            return None
        start = 0
        for i, (rid, n) in enumerate(e.reels):
            if frame < start + n or i == len(e.reels) - 1:
                return {"index": i, "id": rid or None, "frame": frame - start}
            start += n
        return None
