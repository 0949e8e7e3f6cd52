"""Reading text subtitle files beyond SRT: SubStation Alpha (SSA v4, ASS v4+) and WebVTT.

SSA/ASS (the "Sub Station Alpha v4.00+ Script Format" specification, "Advanced SubStation Alpha"):
the file's sections, styles and events are read by pysubs2 (times in milliseconds, exact: the
format counts centiseconds); each ``Dialogue`` event becomes a :class:`~.track.Cue`.  Its style
gives the run's size (``Fontsize`` in script pixels of ``PlayResY``, default 288, becomes points
of the 792-point screen: ``size * 792 / PlayResY``), colour (``&HAABBGGRR``, alpha 0 opaque),
bold, italic, underline, effect (``Outline`` > 0: border in ``OutlineColour``; else ``Shadow``
> 0: shadow in ``BackColour``), alignment (numpad 1-9; SSA's 1-3, 5-7, 9-11) and margins
(script pixels of ``PlayResX``/``PlayResY``, an event's non-zero margins overriding its
style's).  Override blocks ``{...}`` change the runs that follow: ``\\i``, ``\\b``, ``\\u``,
``\\c``/``\\1c``, ``\\3c``, ``\\alpha``/``\\1a``, ``\\fs``, ``\\r``; ``\\an``/``\\a`` (the first
one) places the cue; ``\\fad(in,out)`` (ms) is its fades.  ``\\N`` breaks a line, ``\\n`` too
where ``WrapStyle`` is 2 (else a space), ``\\h`` is a space.

WebVTT (W3C "WebVTT: The Web Video Text Tracks Format"): read here, not by pysubs2, whose
WebVTT reader (shared with SRT) drops cue settings and reads ``NOTE`` blocks and cue
identifiers as text.  The file is UTF-8 and starts ``WEBVTT``; cues are blocks with a timing
line ``[HH:]MM:SS.mmm --> [HH:]MM:SS.mmm [settings]`` (milliseconds, exact); ``NOTE``, ``STYLE``
and ``REGION`` blocks are skipped.  Cue text spans ``<i>``, ``<b>``, ``<u>`` and ``<c.colour>``
(the W3C default colour classes: white, lime, cyan, red, yellow, magenta, blue, black) style
runs; ``<v>``, ``<lang>`` and ``<ruby>`` keep their text; entities are decoded.  The ``line:``
setting places the cue: a percentage of the picture's height (its ``start``, ``center`` or
``end`` alignment kept: the top, middle or bottom of the cue there), a line number counted from
the top (0, 1, ...) or the bottom (-1, -2, ...) in lines of 6.5 % below or above the 8 % margin
SRT cues have; ``align:`` gives the horizontal alignment.  Without ``line:`` a cue sits as an
SRT cue does, 8 % above the bottom.

Lines: a cue's lines are stacked from the edge its alignment names, each
:data:`LINE_PITCH` percent of the picture height (at 42 points; in proportion to the line's
largest size) from the next.

What the model cannot show is dropped with one warning per kind, naming what was dropped and
the first line it was on: karaoke (``\\k``, WebVTT timestamp tags), drawings (``\\p1`` and the
text they draw), positioning and animation (``\\pos``, ``\\move``, ``\\t``, ``\\clip``,
rotation...), other styling (scale, spacing, blur, border widths, strikeout...), font names
(the default font is used), event effects, WebVTT settings other than ``line`` and ``align``,
its CSS classes and ruby annotations.  A cue whose times are bad (a timing that does not
parse, an end not after its start) is dropped with a warning kept in the track's
``timing_errors``, as SRT cues are, which mastering refuses.  A file that is not text (a NUL
byte, control characters, WebVTT not in UTF-8), that is above 8 MiB, that holds more than
:data:`MAX_CUES` cues, or that the format's reader refuses, raises one
:class:`~.errors.CorruptMedia` or :class:`~.errors.UnsupportedMedia` naming the file (and the
line where there is one).  EBU STL (Tech 3264) is recognised and refused: pysubs2 does not read
it.
"""

from __future__ import annotations

import html
import logging
import re
import warnings
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType

import pysubs2
from pysubs2.formats.substation import EVENT_FIELDS, SECTION_HEADING, STYLE_FIELDS
from pysubs2.time import TIMESTAMP, TIMESTAMP_SHORT

from cinegpu.media.errors import CorruptMedia, UnsupportedMedia
from cinegpu.media.files import read_bounded
from cinegpu.media.package.read import MAX_XML_BYTES
from cinegpu.media.subtitles.track import (
    DEFAULT_SIZE,
    MAX_FADE,
    Colour,
    Cue,
    Placement,
    Style,
    SubtitleTrack,
    TextLine,
    TextRun,
)

__all__ = ["text_kind", "read_text_subtitles", "read_ass", "read_webvtt", "MAX_CUES", "LINE_PITCH"]

log = logging.getLogger("cinegpu.media.subtitles.track")     # muted by prepare_subtitles, as SRT's

#: Most cues in one file, lines kept of a cue, characters of a line, warnings kept (as the
#: XML and SRT readers of :mod:`.documents`).
MAX_CUES, MAX_LINES, MAX_CHARS, MAX_WARNINGS = 100_000, 32, 1000, 200
#: Distance between stacked lines of 42 points, and the bottom margin of an unplaced WebVTT
#: cue, percent of the picture height (as SRT's).
LINE_PITCH, BOTTOM_MARGIN = 6.5, 8.0
#: ``PlayResY`` where a script gives neither it nor ``PlayResX`` (the ASS renderers' default).
DEFAULT_PLAY_RES_Y = 288
#: Bytes looked at to tell a file's kind by its content.
SNIFF_BYTES = 4096
#: The W3C WebVTT default colour classes (``<c.yellow>``), RRGGBB.
VTT_COLOURS = MappingProxyType({"white": "FFFFFF", "lime": "00FF00", "cyan": "00FFFF", "red": "FF0000",
                                "yellow": "FFFF00", "magenta": "FF00FF", "blue": "0000FF", "black": "000000"})

# ASS override tags by what happens to them (longest names are matched first).
_KEPT = ("i", "b", "u", "c", "1c", "3c", "alpha", "1a", "fs", "an", "a", "r", "fad")
_DROPPED = MappingProxyType({
    "karaoke": ("k", "K", "kf", "ko", "kt"),
    "drawings": ("p", "pbo"),
    "positioning and animation": ("pos", "move", "org", "t", "fade", "clip", "iclip", "frx", "fry",
                                  "frz", "fr", "fax", "fay"),
    "styling the model cannot show": ("s", "fscx", "fscy", "fsp", "bord", "xbord", "ybord", "shad",
                                      "xshad", "yshad", "be", "blur", "q", "2c", "4c", "2a", "3a",
                                      "4a", "fe"),
    "font names (the default font is used)": ("fn",),
})
_KIND_OF = MappingProxyType({name: kind for kind, names in _DROPPED.items() for name in names})
_TAG_NAMES = tuple(sorted((*_KEPT, *_KIND_OF), key=len, reverse=True))
_TAG = re.compile(r"\\([^\\(]*)(\([^)]*\)?)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_VTT_TIME = r"(?:(\d{2,4}):)?(\d{2}):(\d{2})\.(\d{3})"
_VTT_TIMING = re.compile(rf"{_VTT_TIME}[ \t]+-->[ \t]+{_VTT_TIME}(?:[ \t]+(.*))?$")


# ------------------------------------------------------------------ kinds and bytes

def text_kind(path) -> str | None:
    """The text subtitle format of the file at ``path`` by its content, else by its suffix:
    ``"webvtt"`` (starts ``WEBVTT`` after an optional BOM), ``"ass"`` (a ``[Script Info]``
    section: SSA or ASS), ``"stl"`` (EBU Tech 3264: a code page number then ``STL``), or None
    (SRT, XML or anything else, for :func:`~.documents.read_subtitles` to read)."""
    p = Path(path)
    head = b""
    if p.is_file():
        try:
            with open(p, "rb") as f:
                head = f.read(SNIFF_BYTES)
        except OSError:
            head = b""
    if head[:3].isdigit() and head[3:6] == b"STL":
        return "stl"
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if head.startswith(bom):
            text = head[len(bom):].decode(codec, errors="ignore")
            break
    else:
        text = head.decode("latin-1")
    if re.match(r"WEBVTT(?:[ \t\r\n]|$)", text):
        return "webvtt"
    if re.search(r"^\s*\[Script Info\]", text, re.IGNORECASE | re.MULTILINE):
        return "ass"
    return {".vtt": "webvtt", ".webvtt": "webvtt", ".ass": "ass", ".ssa": "ass", ".stl": "stl"}.get(
        p.suffix.lower())


def read_text_subtitles(path, kind: str) -> SubtitleTrack:
    """The file at ``path`` read as ``kind`` (:func:`text_kind`'s answer)."""
    p = Path(path)
    if kind == "stl":
        raise UnsupportedMedia(p, "EBU STL (Tech 3264) subtitles are not supported: convert them to "
                                  "SRT, WebVTT or ASS")
    raw = read_bounded(p, MAX_XML_BYTES, "WebVTT file" if kind == "webvtt" else "SSA/ASS file")
    return read_webvtt(p, raw) if kind == "webvtt" else read_ass(p, raw)


def _text_of(p: Path, raw: bytes, utf8_only: bool) -> tuple[str, list[str], list[str]]:
    """``raw`` decoded (a BOM dropped; SSA/ASS: UTF-16 by its BOM, else UTF-8, else Windows-1252
    or Latin-1 with a warning) with its lines (CRLF, CR and LF end a line); CorruptMedia for
    binary data; the third item: the warning of a fallback."""
    notes: list[str] = []
    if not utf8_only and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise CorruptMedia(p, f"broken UTF-16: {exc.reason}", offset=exc.start) from None
    else:
        nul = raw.find(b"\x00")
        if nul >= 0:
            raise CorruptMedia(p, "binary data, not a subtitle text file (a NUL byte)", offset=nul)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if utf8_only:
                raise CorruptMedia(p, f"not UTF-8 text, which WebVTT must be ({exc.reason})",
                                   offset=exc.start) from None
            try:
                text = raw.decode("cp1252")
            except UnicodeDecodeError:
                text = raw.decode("latin-1")
            notes.append("not UTF-8: read as Windows-1252")
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise CorruptMedia(p, f"binary data, not a subtitle text file (control character "
                              f"{ord(bad.group()):#04x} on line {line})")
    return text, text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), notes


# ------------------------------------------------------------------ what a reader keeps

@dataclass
class _Notes:
    """A file's warnings (logged as :mod:`.documents` logs them), the cues dropped for their
    times and what was dropped by kind (kind -> item -> first line)."""

    path: Path
    warnings: list[str] = field(default_factory=list)
    timing: list[tuple[int, str]] = field(default_factory=list)
    dropped: dict[str, dict[str, int | None]] = field(default_factory=dict)

    def warn(self, line: int | None, message: str) -> None:
        text = f"{self.path}: {message}" + (f" (line {line})" if line else "")
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)
            log.warning("%s", text)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append(f"{self.path}: more warnings not shown")

    def bad_time(self, line: int | None, message: str) -> None:
        self.warn(line, message)
        self.timing.append((line or 0, f"{self.path}: {message}" + (f" (line {line})" if line else "")))

    def drop(self, kind: str, item: str, line: int | None) -> None:
        self.dropped.setdefault(kind, {}).setdefault(item[:40], line)

    def track(self, dialect: str, cues: list[Cue], title: str) -> SubtitleTrack:
        """The track, with one warning per kind of what was dropped."""
        for kind, items in self.dropped.items():
            first = next((n for n in items.values() if n), None)
            self.warn(first, f"{kind} dropped (the subtitle model cannot show them): "
                             f"{', '.join(list(items)[:12])}{', ...' if len(items) > 12 else ''}")
        return SubtitleTrack(self.path, dialect, cues, {}, title=title, warnings=self.warnings,
                             timing_errors=[m for _, m in sorted(self.timing, key=lambda t: t[0])])


def _placed(lines: list[list[TextRun]], valign: str, base: float, halign: str, hpos: float) -> tuple[TextLine, ...]:
    """``lines`` stacked from the ``valign`` edge, the nearest ``base`` percent from it (from
    the middle for ``center``), each the pitch of its largest size (percent of the height)."""
    pitches = [LINE_PITCH * max(r.style.size for r in runs) / DEFAULT_SIZE for runs in lines]
    total = sum(pitches)
    out, above = [], 0.0
    for runs, pitch in zip(lines, pitches):
        if valign == "top":
            v = base + above
        elif valign == "bottom":
            v = base + total - above - pitch
        else:
            v = base - total / 2 + above + pitch / 2
        above += pitch
        v = min(100.0, max(-100.0, v))
        out.append(TextLine(tuple(runs), Placement(valign, round(v, 3), halign, round(hpos, 3))))
    return tuple(out)


def _tidy(lines: list[list[TextRun]], notes: _Notes, line: int | None) -> list[list[TextRun]]:
    """Lines with their ends' spaces trimmed, runs of one style merged, empty lines dropped and
    at most :data:`MAX_LINES` lines of :data:`MAX_CHARS` characters kept (warned)."""
    out = []
    for runs in lines:
        merged: list[TextRun] = []
        for r in runs:
            if r.text and merged and merged[-1].style == r.style:
                merged[-1] = TextRun(merged[-1].text + r.text, r.style)
            elif r.text:
                merged.append(r)
        if merged:
            merged[0] = TextRun(merged[0].text.lstrip(), merged[0].style)
            merged[-1] = TextRun(merged[-1].text.rstrip(), merged[-1].style)
        merged = [r for r in merged if r.text]
        if not merged:
            continue
        if sum(len(r.text) for r in merged) > MAX_CHARS:
            notes.warn(line, f"a line of more than {MAX_CHARS} characters cut to {MAX_CHARS}")
            kept, n = [], MAX_CHARS
            for r in merged:
                if n > 0:
                    kept.append(TextRun(r.text[:n], r.style))
                n -= len(r.text)
            merged = kept
        out.append(merged)
    if len(out) > MAX_LINES:
        notes.warn(line, f"a cue of {len(out)} lines: the first {MAX_LINES} are shown")
    return out[:MAX_LINES]


def _add_cue(cues: list[Cue], notes: _Notes, cue: Cue) -> None:
    if len(cues) >= MAX_CUES:
        raise UnsupportedMedia(notes.path, f"more than {MAX_CUES} subtitles (line {cue.line})")
    cues.append(cue)


# ------------------------------------------------------------------ SSA / ASS

@dataclass(frozen=True)
class _Script:
    """What every event of a script shares: its play resolution (script pixels), its styles
    as the model's, their alignments (ASS numpad) and margins, and its ``WrapStyle``."""

    res_x: float
    res_y: float
    styles: dict
    wrap: int

    def size(self, fontsize: float) -> float:
        """Points of the 792-point screen of ``fontsize`` script pixels, 1..1000."""
        return min(1000.0, max(1.0, fontsize * 792 / self.res_y))


def _colour(c: pysubs2.Color) -> Colour:
    """An SSA/ASS colour (alpha 0 opaque, 255 transparent) as the model's (255 opaque)."""
    return Colour(c.r, c.g, c.b, 255 - c.a)


def _ass_colour(value: str) -> Colour | None:
    """The colour of an override's ``&HBBGGRR&`` (hex, any length up to 8 digits) or None."""
    m = re.fullmatch(r"&?[Hh]?([0-9A-Fa-f]{1,8})&?", value.strip())
    if m is None:
        return None
    v = int(m.group(1), 16)
    return Colour(v & 255, v >> 8 & 255, v >> 16 & 255)


def _ass_style(s: pysubs2.SSAStyle, script_y: float, notes: _Notes, name: str) -> Style:
    """The model's style of an SSA/ASS style (what it cannot hold noted as dropped)."""
    if s.borderstyle == 3:
        notes.drop("styling the model cannot show", f"BorderStyle 3 (opaque box) of style {name}", None)
    if s.strikeout or s.angle or s.spacing or s.scalex != 100 or s.scaley != 100:
        notes.drop("styling the model cannot show", f"strikeout, angle, spacing or scale of style {name}", None)
    effect, colour = ("border", s.outlinecolor) if s.outline > 0 else \
        ("shadow", s.backcolor) if s.shadow > 0 else ("none", s.outlinecolor)
    size = min(1000.0, max(1.0, s.fontsize * 792 / script_y))
    return Style(None, size, _colour(s.primarycolor), bool(s.italic), bool(s.bold), bool(s.underline),
                 effect, _colour(colour))


def _script(subs: pysubs2.SSAFile, notes: _Notes) -> _Script:
    def number(key: str) -> float | None:
        v = subs.info.get(key, "").strip()
        try:
            return float(v) if v and 0 < float(v) < 100_000 else None
        except ValueError:
            notes.warn(None, f"{key} {v[:20]!r} is not a number: ignored")
            return None
    x, y = number("PlayResX"), number("PlayResY")
    y = y or (x * 3 / 4 if x else DEFAULT_PLAY_RES_Y)
    x = x or y * 4 / 3
    styles = {}
    fonts = set()
    for name, s in subs.styles.items():
        styles[name] = (_ass_style(s, y, notes, name), int(s.alignment), s.marginl, s.marginr, s.marginv)
        fonts.add(s.fontname)
    for f in sorted(fonts):
        notes.drop("font names (the default font is used)", f, None)
    try:
        wrap = int(subs.info.get("WrapStyle", "0").strip() or 0)
    except ValueError:
        wrap = 0
    return _Script(x, y, styles, wrap)


def _check_format(notes: _Notes, kind: str, section: str, line: str, number: int) -> None:
    """A ``Format:`` line naming the fields of the specification's order (the order pysubs2
    reads them in; ``Actor`` for ``Name`` accepted): events in another order are refused
    (UnsupportedMedia), styles warned of."""
    names = [f.strip().lower().replace("actor", "name").replace("colour", "color")
             for f in line.split(":", 1)[1].split(",")]
    if "event" in section:
        want = EVENT_FIELDS[kind]
        if names[:1] == ["marked"] and kind == "ass":
            names[0] = "layer"          # v4 scripts' first field, read as a layer by pysubs2
        if names != want:
            raise UnsupportedMedia(notes.path, f"[Events] fields in an order pysubs2 does not read (want "
                                               f"{', '.join(want)}) (line {number})")
    elif "style" in section and names[1:] != STYLE_FIELDS[kind]:
        notes.warn(number, "[Styles] fields not in the specification's order: styles may be misread")


def _event_lines(lines: list[str], notes: _Notes, kind: str) -> list[int]:
    """The line numbers of the events pysubs2 will read (``Dialogue:`` and ``Comment:`` lines
    outside the info and attachment sections, as it reads them); a ``Dialogue`` whose start or
    end is not a time is blanked in ``lines`` and its cue dropped (warned, a timing error)."""
    numbers: list[int] = []
    skip, section = False, ""
    for i, raw in enumerate(lines):
        line = raw.strip()
        if SECTION_HEADING.match(line):
            skip = any(w in line for w in ("Info", "Aegisub", "Fonts", "Graphics"))
            section = line.lower()
        elif not skip and line.startswith("Format:"):
            _check_format(notes, kind, section, line, i + 1)
        elif not skip and line.startswith(("Dialogue:", "Comment:")):
            fields = line.split(":", 1)[1].split(",", 3)
            times = [f.strip().lstrip("-") for f in fields[1:3]]
            if len(times) < 2 or not all(TIMESTAMP.fullmatch(t) or TIMESTAMP_SHORT.fullmatch(t) for t in times):
                lines[i] = ""
                if line.startswith("Dialogue:"):
                    notes.bad_time(i + 1, f"Dialogue dropped: its Start and End are not times H:MM:SS.cc "
                                          f"({','.join(fields[1:3])[:40]!r})")
                continue
            numbers.append(i + 1)
    return numbers


def _load_ass(p: Path, lines: list[str], kind: str) -> pysubs2.SSAFile:
    """pysubs2's reading of the script; its warnings returned as pysubs2's, its errors one
    CorruptMedia naming the first line it refuses."""
    errors = (ValueError, TypeError, KeyError, IndexError, AttributeError, pysubs2.Pysubs2Error)
    try:
        return pysubs2.SSAFile.from_string("\n".join(lines), format_=kind)
    except errors as exc:
        section = "[V4+ Styles]" if kind == "ass" else "[V4 Styles]"
        for i, line in enumerate(lines):
            if line.strip().startswith(("Style:", "Dialogue:", "Comment:")):
                try:
                    pysubs2.SSAFile.from_string(f"[Script Info]\n{section}\n{line}", format_=kind)
                except errors:
                    raise CorruptMedia(p, f"not a readable {kind.upper()} line: {exc} (line {i + 1})") from None
        raise CorruptMedia(p, f"not a readable {kind.upper()} file: {exc}") from None


def read_ass(path, raw: bytes) -> SubtitleTrack:
    """An SSA or ASS script's cues (see the module's docstring); ``raw``: the file's bytes."""
    p = Path(path)
    text, lines, fallback = _text_of(p, raw, utf8_only=False)
    notes = _Notes(p)
    for message in fallback:
        notes.warn(None, message)
    if not re.search(r"^\s*\[Script Info\]", text, re.IGNORECASE | re.MULTILINE):
        raise CorruptMedia(p, "not an SSA/ASS script: no [Script Info] section")
    kind = "ssa" if re.search(r"^\s*\[V4 Styles\]", text, re.IGNORECASE | re.MULTILINE) else "ass"
    numbers = _event_lines(lines, notes, kind)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        subs = _load_ass(p, lines, kind)
    for w in caught:
        notes.warn(None, f"pysubs2: {w.message}")
    if len(numbers) != len(subs.events):
        numbers = [None] * len(subs.events)
    if len(subs.events) > MAX_CUES:
        raise UnsupportedMedia(p, f"more than {MAX_CUES} subtitles")
    script = _script(subs, notes)
    default = (_ass_style(pysubs2.SSAStyle(), script.res_y, notes, "Default"), 2, 10, 10, 10)
    cues: list[Cue] = []
    for ev, line in zip(subs.events, numbers):
        if ev.is_comment:
            continue
        if ev.end <= ev.start or ev.start < 0:
            notes.bad_time(line, f"Dialogue dropped: End {ev.end / 1000:.2f} s is not after Start "
                                 f"{ev.start / 1000:.2f} s" if ev.start >= 0 else "Dialogue dropped: Start before 0")
            continue
        if ev.style not in script.styles:
            notes.drop("unknown styles (Default used)", ev.style, line)
        if ev.effect.strip():
            notes.drop("event effects", ev.effect.strip(), line)
        cue = _ass_cue(ev, script.styles.get(ev.style, default), script, notes, line)
        if cue is not None:
            _add_cue(cues, notes, cue)
    return notes.track(kind, cues, subs.info.get("Title", "").strip() or p.stem)


def _ass_cue(ev: pysubs2.SSAEvent, style: tuple, script: _Script, notes: _Notes, line: int | None) -> Cue | None:
    """One event as a cue: its runs through the override blocks, placed by its alignment and
    margins; None when nothing is left to show."""
    base, align, ml, mr, mv = style
    state = {"style": base, "align": None, "fades": None, "drawing": False}
    lines: list[list[TextRun]] = [[]]
    for part in re.split(r"(\{[^}]*\})", ev.text):
        if part.startswith("{") and part.endswith("}"):
            _overrides(part[1:-1], state, base, script, notes, line)
            continue
        if state["drawing"] or not part:
            continue
        soft = "\n" if script.wrap == 2 else " "
        chunks = part.replace("\\h", " ").replace("\\n", soft).replace("\\N", "\n").split("\n")
        for k, chunk in enumerate(chunks):
            if k:
                lines.append([])
            lines[-1].append(TextRun(chunk, state["style"]))
    kept = _tidy(lines, notes, line)
    if not kept:
        return None
    align = state["align"] or align
    ml, mr, mv = (ev.marginl or ml), (ev.marginr or mr), (ev.marginv or mv)
    valign = "bottom" if align in (1, 2, 3) else "top" if align in (7, 8, 9) else "center"
    halign = {1: "left", 2: "center", 0: "right"}[align % 3]
    base_v = 0.0 if valign == "center" else 100 * mv / script.res_y
    hpos = 100 * (ml if halign == "left" else mr if halign == "right" else 0) / script.res_x
    fade_up, fade_down = state["fades"] or (Fraction(0), Fraction(0))
    length = Fraction(ev.end - ev.start, 1000)
    return Cue(Fraction(ev.start, 1000), Fraction(ev.end, 1000), _placed(kept, valign, base_v, halign, hpos),
               fade_up=min(fade_up, length), fade_down=min(fade_down, length), line=line)


def _overrides(block: str, state: dict, base: Style, script: _Script, notes: _Notes, line: int | None) -> None:
    """Apply one override block's tags to ``state`` (style, alignment, fades, drawing mode);
    what the model cannot show is noted as dropped."""
    for m in _TAG.finditer(block):
        body, args = m.group(1).strip(), (m.group(2) or "").strip("()")
        name = next((n for n in _TAG_NAMES if body.startswith(n)), None)
        if name is None:
            if body:
                notes.drop("unknown override tags", "\\" + body, line)
            continue
        value = body[len(name):].strip()
        kind = _KIND_OF.get(name)
        if name in ("p", "pbo"):
            if name == "p":
                state["drawing"] = value.isdigit() and int(value) > 0
            if state["drawing"] or name == "pbo":
                notes.drop(kind, "\\" + name, line)
            continue
        if kind is not None:
            notes.drop(kind, "\\" + name, line)
            continue
        s: Style = state["style"]
        if name in ("i", "u"):
            on = value == "1" if value else getattr(base, {"i": "italic", "u": "underline"}[name])
            state["style"] = replace(s, **{"italic" if name == "i" else "underline": on})
        elif name == "b":
            on = (value == "1" or (value.isdigit() and int(value) >= 600)) if value else base.bold
            state["style"] = replace(s, bold=on)
        elif name in ("c", "1c", "3c"):
            c = _ass_colour(value) if value else (base.effect_colour if name == "3c" else base.colour)
            if c is not None:
                key = "effect_colour" if name == "3c" else "colour"
                state["style"] = replace(s, **{key: replace(c, a=getattr(s, key).a)})
        elif name in ("alpha", "1a"):
            a = _ass_colour(value) if value else None
            state["style"] = replace(s, colour=replace(s.colour, a=255 - a.r if a else base.colour.a))
        elif name == "fs":
            try:
                size = script.size(float(value)) if value else base.size
            except ValueError:
                size = s.size
            state["style"] = replace(s, size=size)
        elif name == "r":
            state["style"] = script.styles[value][0] if value in script.styles else base
        elif name in ("an", "a") and state["align"] is None and value.isdigit():
            n = int(value)
            if name == "an" and 1 <= n <= 9:
                state["align"] = n
            elif name == "a" and n in pysubs2.common.SSA_ALIGNMENT:
                state["align"] = int(pysubs2.Alignment.from_ssa_alignment(n))
        elif name == "fad":
            parts = [x.strip() for x in args.split(",")]
            if len(parts) == 2 and all(x.isdigit() and len(x) < 9 for x in parts):
                state["fades"] = tuple(min(Fraction(int(x), 1000), MAX_FADE) for x in parts)
            else:
                notes.drop("positioning and animation", f"\\fad({args[:20]})", line)


# ------------------------------------------------------------------ WebVTT

def _vtt_seconds(g: tuple[str | None, str, str, str]) -> Fraction | None:
    """Seconds of a WebVTT timestamp's groups (hours, minutes, seconds, milliseconds), None when
    minutes or seconds are above 59."""
    h, m, s, ms = int(g[0] or 0), int(g[1]), int(g[2]), int(g[3])
    if m > 59 or s > 59:
        return None
    return Fraction(h * 3600 + m * 60 + s) + Fraction(ms, 1000)


def read_webvtt(path, raw: bytes) -> SubtitleTrack:
    """A WebVTT file's cues (see the module's docstring); ``raw``: the file's bytes."""
    p = Path(path)
    lines = _text_of(p, raw, utf8_only=True)[1]
    if not re.match(r"WEBVTT(?:[ \t]|$)", lines[0]):
        raise CorruptMedia(p, "not a WebVTT file: the first line is not 'WEBVTT' (line 1)")
    notes = _Notes(p)
    cues: list[Cue] = []
    i, n = 1, len(lines)
    while i < n and lines[i].strip():          # the header's lines
        i += 1
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        start = i
        block = []
        while i < n and lines[i].strip():
            block.append(lines[i])
            i += 1
        _vtt_block(block, start + 1, cues, notes)
    return notes.track("webvtt", cues, p.stem)


def _vtt_block(block: list[str], first: int, cues: list[Cue], notes: _Notes) -> None:
    """One block of a WebVTT file (``first``: its first line's number): a cue (or several, a
    line with ``-->`` starting the next), a comment or a style or region definition."""
    head = block[0]
    if re.match(r"NOTE(?:[ \t]|$)", head):
        return
    if re.match(r"(STYLE|REGION)[ \t]*$", head):
        notes.drop("WebVTT STYLE and REGION blocks", head.strip(), first)
        return
    k = 0 if "-->" in head else 1 if len(block) > 1 and "-->" in block[1] else None
    if k is None:
        notes.warn(first, "WebVTT block without a timing line 'MM:SS.mmm --> MM:SS.mmm': dropped")
        return
    while k < len(block):
        end = next((j for j in range(k + 1, len(block)) if "-->" in block[j]), len(block))
        _vtt_cue(block[k], block[k + 1:end], first + k, cues, notes)
        k = end


def _vtt_cue(timing: str, text: list[str], line: int, cues: list[Cue], notes: _Notes) -> None:
    """A cue from its timing line (with settings) and its text lines."""
    m = _VTT_TIMING.match(timing.strip())
    t_in = _vtt_seconds(m.groups()[0:4]) if m else None
    t_out = _vtt_seconds(m.groups()[4:8]) if m else None
    if t_in is None or t_out is None or t_out <= t_in:
        notes.bad_time(line, f"WebVTT cue {timing.strip()[:60]!r} dropped: bad time or end not after start")
        return
    valign, vpos, halign = "bottom", BOTTOM_MARGIN, "center"
    for setting in (m.group(9) or "").split():
        name, _, value = setting.partition(":")
        if name == "line":
            placed = _vtt_line(value)
            if placed is None:
                notes.drop("WebVTT cue settings", setting, line)
            else:
                valign, vpos = placed
        elif name == "align" and value in ("start", "left", "center", "middle", "end", "right"):
            halign = {"start": "left", "end": "right", "middle": "center"}.get(value, value)
        else:
            notes.drop("WebVTT cue settings", name if value else setting, line)
    kept = _tidy(_vtt_runs("\n".join(text), notes, line), notes, line)
    if kept:
        _add_cue(cues, notes, Cue(t_in, t_out, _placed(kept, valign, vpos, halign, 0.0), line=line))


def _vtt_line(value: str) -> tuple[str, float] | None:
    """(valign, vposition) of a ``line:`` setting's value, None when it is not one."""
    m = re.fullmatch(r"(-?\d{1,4}(?:\.\d{1,6})?)(%)?(?:,(start|center|end))?", value)
    if m is None:
        return None
    v, align = float(m.group(1)), m.group(3) or "start"
    if m.group(2):
        if not 0 <= v <= 100:
            return None
        return {"start": ("top", v), "end": ("bottom", 100 - v), "center": ("center", v - 50)}[align]
    if v != int(v):
        return None
    return ("top", BOTTOM_MARGIN + v * LINE_PITCH) if v >= 0 else ("bottom", BOTTOM_MARGIN + (-v - 1) * LINE_PITCH)


def _vtt_runs(text: str, notes: _Notes, line: int) -> list[list[TextRun]]:
    """The lines of a cue's text as runs: ``<i>``, ``<b>``, ``<u>`` and ``<c.colour>`` spans
    style them (W3C WebVTT cue text parsing), entities decoded, ``<rt>`` text dropped."""
    base = Style(effect="border")
    stack: list[tuple[str, Style]] = []
    style, ruby_text = base, 0
    lines: list[list[TextRun]] = [[]]
    for m in re.finditer(r"<([^>]*)>?|([^<]+)", text):
        if m.group(2) is not None:
            if ruby_text:
                continue
            for k, chunk in enumerate(html.unescape(m.group(2)).replace("\xa0", " ").split("\n")):
                if k:
                    lines.append([])
                lines[-1].append(TextRun(chunk, style))
            continue
        tag = m.group(1).strip()
        if tag.startswith("/"):
            name = tag[1:].strip()
            if name == "ruby" and stack and stack[-1][0] == "rt":
                ruby_text -= 1
                style = stack.pop()[1]
            if stack and stack[-1][0] == name:
                ruby_text -= name == "rt"
                style = stack.pop()[1]
            continue
        if tag[:1].isdigit():
            notes.drop("karaoke timestamps", f"<{tag[:20]}>", line)
            continue
        name, *classes = re.split(r"[ \t]", tag, maxsplit=1)[0].split(".")
        new = style
        if name == "i":
            new = replace(style, italic=True)
        elif name == "b":
            new = replace(style, bold=True)
        elif name == "u":
            new = replace(style, underline=True)
        elif name == "rt":
            ruby_text += 1
            notes.drop("ruby annotations", "<rt>", line)
        elif name not in ("c", "v", "lang", "ruby"):
            notes.drop("unknown WebVTT tags", f"<{name[:20]}>", line)
            continue
        for c in classes:
            if c in VTT_COLOURS:
                new = replace(new, colour=Colour.parse(VTT_COLOURS[c]))
            else:
                notes.drop("WebVTT classes (CSS)", f".{c[:20]}", line)
        stack.append((name, style))
        style = new
    return lines
