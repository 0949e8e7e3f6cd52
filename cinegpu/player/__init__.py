"""The player: playback clock, frame sources, presenter and the ``cinegpu play`` command.

Importing this package loads no GL; :func:`cinegpu.interop.window.open_window` does.
"""

from .clock import PlaybackClock, PlaybackStats, Scheduler
from .media_default import default_media
from .player import KEYS, Player, Summary, overlay_text, short_gil_turns, timecode
from .source import ArraySource, DecodeAheadSource, FrameError

__all__ = ["PlaybackClock", "PlaybackStats", "Scheduler", "Player", "Summary", "KEYS", "overlay_text",
           "timecode", "short_gil_turns", "ArraySource", "DecodeAheadSource", "FrameError", "default_media"]
