"""Subtitles: the model of timed text and images, and the cues a composition shows at a frame.

A :class:`SubtitleTrack` is one subtitle document (an Interop ``DCSubtitle`` XML, an SMPTE
ST 428-7 ``SubtitleReel`` or an SRT file, read by :mod:`.subtitle_xml`): its fonts and its
:class:`Cue` list, each cue's times in seconds from the start of the track (exact
:class:`~fractions.Fraction` values: Interop ticks are 4 ms, SMPTE edit units are 1/TimeCodeRate
of a second).  A :class:`CompositionSubtitles` places each reel's track on the composition's
picture timeline: reel *r* starts at the sum of the earlier reels' picture durations, and its
subtitle asset's ``EntryPoint`` (in the asset's edit units) is the track time shown at the reel's
first frame, so a cue plays at ``reel start + (TimeIn - EntryPoint)``; nothing of a track is shown
past its reel's ``Duration``.

Bad input never stops playback: a cue with a bad timecode or a ``TimeOut`` not after its
``TimeIn``, a missing font or image, is dropped (or the default font used) with a warning kept in
``SubtitleTrack.warnings`` and logged; a document that cannot be read at all raises a
:class:`~.errors.MediaError`, which :func:`composition_subtitles` turns into a warning for that
reel.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

__all__ = ["Colour", "Style", "Placement", "TextRun", "TextLine", "SubtitleImage", "Cue",
           "SubtitleTrack", "CompositionSubtitles", "LayeredSubtitles", "ReelSubtitles",
           "DEFAULT_SIZE", "MAX_FADE"]

log = logging.getLogger("cinegpu.media.subtitles.track")

#: Font size (points, the screen being 11 inches high) where a document gives none.
DEFAULT_SIZE = 42
#: The longest fade honoured, seconds (as libdcp: longer ones are cut to this).
MAX_FADE = Fraction(8)


@dataclass(frozen=True)
class Colour:
    """An sRGB colour with alpha, 0..255 each; ``parse`` reads ``AARRGGBB`` or ``RRGGBB`` hex
    (Interop ``Color`` and ST 428-7 ``Color`` are alpha first)."""

    r: int
    g: int
    b: int
    a: int = 255

    @classmethod
    def parse(cls, text: str) -> "Colour":
        t = text.strip()
        if len(t) not in (6, 8) or any(c not in "0123456789abcdefABCDEF" for c in t):
            raise ValueError(f"not a colour (want AARRGGBB or RRGGBB hex): {t[:20]!r}")
        v = [int(t[i:i + 2], 16) for i in range(0, len(t), 2)]
        return cls(*v) if len(v) == 3 else cls(v[1], v[2], v[3], v[0])

    @property
    def rgba(self) -> tuple[int, int, int, int]:
        return self.r, self.g, self.b, self.a


WHITE, BLACK = Colour(255, 255, 255), Colour(0, 0, 0)


@dataclass(frozen=True)
class Style:
    """What a ``<Font>`` element sets, inherited by what it encloses."""

    font: str | None = None            # a LoadFont id; None: the default font
    size: float = DEFAULT_SIZE         # points, the screen height being 11 inches (792 points)
    colour: Colour = WHITE
    italic: bool = False
    bold: bool = False
    underline: bool = False
    effect: str = "none"               # "none", "border" or "shadow"
    effect_colour: Colour = BLACK
    aspect_adjust: float = 1.0         # horizontal scale of the glyphs, 0.25..4

    def size_in_pixels(self, screen_height: int) -> float:
        """The font's size in pixels on a picture ``screen_height`` lines high (points of an
        11-inch screen, libdcp's reading of the Interop and ST 428-7 ``Size``)."""
        return self.size * screen_height / 792


@dataclass(frozen=True)
class Placement:
    """Where a line or image sits: ``vposition`` and ``hposition`` in percent of the picture's
    height and width, measured from the edge ``valign`` / ``halign`` names (from the centre,
    positive down and right, for ``center``)."""

    valign: str = "center"             # "top", "center", "bottom"
    vposition: float = 0.0
    halign: str = "center"             # "left", "center", "right"
    hposition: float = 0.0
    direction: str = "ltr"             # "ltr", "rtl", "ttb", "btt"
    zposition: float = 0.0


@dataclass(frozen=True)
class TextRun:
    text: str
    style: Style


@dataclass(frozen=True)
class TextLine:
    """One ``<Text>`` element: runs of text in their styles, placed as one line."""

    runs: tuple[TextRun, ...]
    place: Placement

    @property
    def text(self) -> str:
        return "".join(r.text for r in self.runs)


@dataclass(frozen=True)
class SubtitleImage:
    """One ``<Image>``: PNG bytes, placed as a line is."""

    png: bytes
    place: Placement
    name: str = ""


@dataclass(frozen=True)
class Cue:
    """One ``<Subtitle>``: shown from ``time_in`` until before ``time_out`` (seconds from the start
    of its track), fading up over ``fade_up`` and down over ``fade_down`` seconds."""

    time_in: Fraction
    time_out: Fraction
    lines: tuple[TextLine, ...] = ()
    images: tuple[SubtitleImage, ...] = ()
    fade_up: Fraction = Fraction(0)
    fade_down: Fraction = Fraction(0)
    spot: int | None = None
    line: int | None = None            # the source line of the element

    def alpha(self, t: Fraction | float) -> float:
        """Opacity 0..1 at track time ``t`` (seconds): 0 outside the cue, ramps in the fades."""
        if not self.time_in <= t < self.time_out:
            return 0.0
        a = 1.0
        if self.fade_up > 0:
            a = min(a, float((t - self.time_in) / self.fade_up))
        if self.fade_down > 0:
            a = min(a, float((self.time_out - t) / self.fade_down))
        return max(0.0, min(1.0, a))


@dataclass
class SubtitleTrack:
    """One subtitle document: its fonts (id -> font file bytes, None where the font is missing)
    and its cues in order of ``time_in``; ``warnings`` says what was dropped or replaced."""

    path: Path | None
    dialect: str                       # "interop", "smpte", "srt", "ass", "ssa" or "webvtt"
    cues: list[Cue]
    fonts: dict[str, bytes | None] = field(default_factory=dict)
    id: str = ""
    title: str = ""
    language: str = ""
    reel_number: int | None = None
    edit_rate: Fraction | None = None  # SMPTE EditRate
    time_code_rate: int | None = None  # SMPTE TimeCodeRate (Interop: 250 ticks a second)
    start_time: Fraction = Fraction(0)
    warnings: list[str] = field(default_factory=list)
    #: the warnings of cues dropped for their times (a bad timecode, TimeOut not after TimeIn)
    timing_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cues.sort(key=lambda c: (c.time_in, c.time_out))
        self._ins = [c.time_in for c in self.cues]
        self._longest = max((c.time_out - c.time_in for c in self.cues), default=Fraction(0))

    def at(self, t: Fraction) -> list[Cue]:
        """The cues shown at track time ``t`` (seconds), in document order of their start."""
        lo = bisect.bisect_left(self._ins, t - self._longest)
        hi = bisect.bisect_right(self._ins, t)
        return [c for c in self.cues[lo:hi] if c.time_in <= t < c.time_out]


@dataclass
class ReelSubtitles:
    """A reel's subtitle track on the composition's timeline (frames at the picture's rate)."""

    start: int                         # the reel's first frame in the composition
    duration: int                      # frames of the reel (the picture's duration)
    entry: Fraction                    # track time (seconds) shown at the reel's first frame
    track: SubtitleTrack


class CompositionSubtitles:
    """The subtitles of a composition (or of any picture timeline): :meth:`at` gives the cues
    shown at picture frame ``n`` with the track time of that frame."""

    def __init__(self, reels: list[ReelSubtitles], edit_rate, warnings: list[str] | None = None):
        self.reels = sorted(reels, key=lambda r: r.start)
        self.edit_rate = Fraction(edit_rate)
        self._starts = [r.start for r in self.reels]
        self.warnings = list(warnings or [])

    @classmethod
    def single(cls, track: SubtitleTrack, frames: int, edit_rate) -> "CompositionSubtitles":
        """One track over a whole picture of ``frames`` frames (a frame folder with a file)."""
        return cls([ReelSubtitles(0, frames, Fraction(0), track)], edit_rate, list(track.warnings))

    def __bool__(self) -> bool:
        return any(r.track.cues for r in self.reels)

    def fonts(self) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for r in self.reels:
            out.update(r.track.fonts)
        return out

    def time_of(self, n: int) -> tuple[ReelSubtitles, Fraction] | None:
        """The reel showing frame ``n`` and the track time (seconds) at that frame, or None."""
        i = bisect.bisect_right(self._starts, n) - 1
        if i < 0:
            return None
        reel = self.reels[i]
        if not 0 <= n - reel.start < reel.duration:
            return None
        return reel, reel.entry + Fraction(n - reel.start) / self.edit_rate

    def at(self, n: int) -> list[tuple[Cue, float]]:
        """(cue, opacity) of every cue shown at picture frame ``n``; opacity from the fades at
        the frame's start time."""
        found = self.time_of(n)
        if found is None:
            return []
        reel, t = found
        out = [(c, c.alpha(t)) for c in reel.track.at(t)]
        return [(c, a) for c, a in out if a > 0]


class LayeredSubtitles:
    """Several :class:`CompositionSubtitles` shown together over one picture (a composition's
    subtitles and its closed captions): :meth:`at` gives every layer's cues at a frame, in
    layer order (later layers drawn over earlier ones)."""

    def __init__(self, layers: list[CompositionSubtitles]):
        self.layers = list(layers)
        self.edit_rate = self.layers[0].edit_rate
        self.reels = [r for layer in self.layers for r in layer.reels]
        self.warnings = [w for layer in self.layers for w in layer.warnings]

    def __bool__(self) -> bool:
        return any(self.layers)

    def fonts(self) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for layer in self.layers:
            out.update(layer.fonts())
        return out

    def at(self, n: int) -> list[tuple[Cue, float]]:
        return [found for layer in self.layers for found in layer.at(n)]
