"""Reading subtitle documents: Interop ``DCSubtitle`` XML, SMPTE ST 428-7 ``SubtitleReel`` XML, SRT
(SSA/ASS and WebVTT: :mod:`.text_formats`).

Interop (the "Subtitle Specification (XML File Format) for DLP Cinema", ``DCSubtitle``): times
are ``HH:MM:SS:TTT`` with ticks of 4 ms (250 a second; ``HH:MM:SS.sss`` is read too), fonts are
``<LoadFont Id= URI=>`` files beside the XML, images are ``<Image>`` PNG file names beside it.
SMPTE ST 428-7 (``SubtitleReel`` in the ``.../428-7/20xx/DCST`` namespaces): times are
``HH:MM:SS:EE`` in edit units of ``TimeCodeRate``, measured on the timeline ``StartTime`` starts
(so ``StartTime`` is subtracted), fonts and images are ancillary resources named by
``urn:uuid``.  In a DCP those resources travel inside the ST 429-5 timed-text MXF track file
(read by :mod:`.mxf_timed_text`); an SMPTE XML file on its own finds them as files named by the
bare UUID (with or without ``.ttf``/``.otf``/``.png``) beside it.

Attribute names are matched without regard to case (Interop ``VAlign``, SMPTE ``Valign``; ``Id``
and ``ID``).  ``<Font>`` elements nest, inside and around ``<Subtitle>`` and ``<Text>``; each
run of text takes the style of the ``<Font>`` elements that enclose it.  Fade times default to
20 ticks (80 ms) and are cut at 8 s, as libdcp reads them.

Bad input (see :mod:`.subtitles`): what concerns one cue, font or image is a warning with the
file's line; what makes the whole document unreadable (malformed XML, an unknown root, more
than :data:`MAX_CUES` cues, a file above the 8 MiB XML cap) raises a MediaError naming the file
(and the line, where the XML parser gives it).
"""

from __future__ import annotations

import logging
import re
from fractions import Fraction
from pathlib import Path

from lxml import etree

from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.files import read_bounded
from cinegpu.media.mxf.timed_text import read_timed_text
from cinegpu.media.package.read import MAX_XML_BYTES, confined, local, parse_xml, uuid_of
from cinegpu.media.source import is_mxf
from cinegpu.media.subtitles.text_formats import read_text_subtitles, text_kind
from cinegpu.media.subtitles.track import (
    MAX_FADE,
    Colour,
    CompositionSubtitles,
    Cue,
    Placement,
    ReelSubtitles,
    Style,
    SubtitleImage,
    SubtitleTrack,
    TextLine,
    TextRun,
)

__all__ = ["read_subtitles", "read_timed_text_track", "parse_subtitle_xml", "read_srt", "parse_time", "composition_subtitles", "MAX_CUES"]

log = logging.getLogger("cinegpu.media.subtitles.track")

#: Most cues in one document (a feature has a couple of thousand).
MAX_CUES = 100_000
#: Most lines and images in one cue, and characters in one line, kept (the rest dropped, warned).
MAX_LINES, MAX_IMAGES, MAX_CHARS = 32, 16, 1000
#: Largest font and PNG files read, bytes.
MAX_FONT_BYTES, MAX_PNG_BYTES = 64 << 20, 32 << 20
#: Most warnings kept per document (the rest counted).
MAX_WARNINGS = 200

INTEROP_TCR = 250
DEFAULT_FADE_TICKS = 20
FONT_MAGIC = (b"\x00\x01\x00\x00", b"OTTO", b"true", b"ttcf", b"typ1")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_subtitles(path, root: Path | None = None, key: bytes | None = None) -> SubtitleTrack:
    """Read the subtitle document at ``path``: WebVTT or SSA/ASS (by the content, else by the
    ``.vtt``, ``.ass`` or ``.ssa`` suffix; :mod:`.text_formats`; EBU STL refused), SRT (by the
    ``.srt`` suffix), or Interop or SMPTE XML (by the root element).  Font and image files must
    lie in ``root`` (default: the document's folder); a timed-text MXF (ST 429-5) is read with its
    own resources (``key``: its ST 429-6 content key when encrypted)."""

    p = Path(path)
    if not p.exists():
        raise MediaError(p, "subtitle file is missing")
    if p.suffix.lower() == ".mxf" or is_mxf(p):
        return read_timed_text_track(p, key)
    kind = text_kind(p)
    if kind is not None:
        return read_text_subtitles(p, kind)
    if p.suffix.lower() == ".srt":
        return read_srt(p)
    return parse_subtitle_xml(parse_xml(p), p, _Files(p.parent, root or p.parent))


def read_timed_text_track(path, key: bytes | None = None) -> SubtitleTrack:
    """The ST 428-7 document inside an ST 429-5 timed-text MXF, its fonts and images taken from
    the file's ancillary resources by ``urn:uuid`` (``key``: the file's content key, ST 429-6)."""

    p = Path(path)
    tt = read_timed_text(p, key)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False,
                             remove_comments=True)
    try:
        root = etree.fromstring(tt.document, parser)
    except etree.XMLSyntaxError as exc:
        line, col = exc.position if exc.position else (None, None)
        raise CorruptMedia(p, f"malformed XML in the timed-text track file (line {line}, column {col}): "
                              f"{exc.msg}") from None
    if root is None:
        raise CorruptMedia(p, "the timed-text track file's document is empty")
    track = parse_subtitle_xml(root, p, _Resources(tt.resources))
    if tt.resource_id and track.id and track.id != tt.resource_id:
        track.warnings.append(f"{p}: the document's Id {track.id} is not the track file's "
                              f"ResourceID {tt.resource_id}")
    return track


class _Resources:
    """Fonts and images held by a timed-text track file, by UUID."""

    def __init__(self, resources: dict[str, tuple[str, bytes]]) -> None:
        self.resources = resources

    def read(self, name: str, limit: int, where: Path) -> bytes | None:
        found = self.resources.get(uuid_of(name).lower()) if name.lower().startswith("urn:uuid:") else None
        if found is None:
            return None
        if len(found[1]) > limit:
            raise UnsupportedMedia(where, f"resource {name} of {len(found[1])} bytes, more than the "
                                          f"{limit} bytes read for a subtitle resource")
        return found[1]


class _Files:
    """Font and image files beside a document, confined to the package ``root``."""

    def __init__(self, folder: Path, root: Path) -> None:
        self.folder, self.root = folder, root

    def read(self, name: str, limit: int, where: Path) -> bytes | None:
        """The bytes of ``name`` (a relative file name or a urn:uuid), None when missing;
        MediaError when the name leaves the package or the file is too large."""
        names = [name]
        if name.lower().startswith("urn:uuid:"):
            u = uuid_of(name)
            names = [u, u + ".ttf", u + ".otf", u + ".png", u + ".TTF", u + ".OTF", u + ".PNG"]
        for n in names:
            rel = (self.folder / n).relative_to(self.root) if (self.folder / n).is_relative_to(self.root) \
                else Path(n)
            p = confined(self.root, str(rel), f"resource {name!r}", where)
            if p.is_file():
                return read_bounded(p, limit, "subtitle resource")
        return None


def parse_time(text: str, rate: int, decimal: bool = False) -> Fraction:
    """Seconds of ``HH:MM:SS:EE`` (``EE`` in units of ``rate`` a second, below ``rate``), or of
    ``HH:MM:SS.sss`` where ``decimal``; ValueError saying what is wrong."""
    t = text.strip()
    m = re.fullmatch(r"(\d{1,3}):(\d{2}):(\d{2})(?::(\d{1,4})|\.(\d{1,9}))", t) if len(t) < 40 else None
    if m is None or (m.group(5) is not None and not decimal):
        raise ValueError(f"not a timecode HH:MM:SS:{'TTT' if rate == INTEROP_TCR else 'EE'}: {t[:40]!r}")
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if mi >= 60 or s >= 60:
        raise ValueError(f"minutes or seconds above 59 in {t!r}")
    whole = Fraction(h * 3600 + mi * 60 + s)
    if m.group(5) is not None:
        return whole + Fraction(int(m.group(5)), 10 ** len(m.group(5)))
    e = int(m.group(4))
    if e >= rate:
        raise ValueError(f"{e} units in {t!r}, not below the rate of {rate} a second")
    return whole + Fraction(e, rate)


def _attrs(el) -> dict[str, str]:
    """The element's attributes by lower-case local name."""
    return {k.rpartition("}")[2].lower(): v for k, v in el.attrib.items()}


class _Reader:
    """One document's parse: the dialect's time rate, the fonts, the warnings."""

    def __init__(self, path: Path, dialect: str, rate: int, files: _Files, start: Fraction = Fraction(0)):
        self.path, self.dialect, self.rate, self.files, self.start = path, dialect, rate, files, start
        self.warnings: list[str] = []
        self.fonts: dict[str, bytes | None] = {}
        self.cues: list[Cue] = []
        self.timing: list[str] = []     # cues dropped for their times (mastering refuses these)
        self._unknown_fonts: set[str] = set()

    def warn(self, line, message: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            text = f"{self.path}: {message}" + (f" (line {line})" if line else "")
            self.warnings.append(text)
            log.warning("%s", text)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append(f"{self.path}: more warnings not shown")

    def bad_time(self, line, message: str) -> None:
        """Warn of a cue dropped for its times, and keep the message in :attr:`timing`."""
        self.warn(line, message)
        self.timing.append(f"{self.path}: {message}" + (f" (line {line})" if line else ""))

    # -------------------------------------------------------------- fonts and styles

    def load_font(self, el) -> None:
        a = _attrs(el)
        fid = a.get("id", "")
        where = a.get("uri") or (el.text or "").strip()
        if not where:
            self.warn(el.sourceline, f"<LoadFont> {fid!r} names no file or resource: the default font is used")
            self.fonts[fid] = None
            return
        try:
            data = self.files.read(where, MAX_FONT_BYTES, self.path)
        except MediaError as exc:
            self.warn(el.sourceline, f"font {fid!r} not loaded ({exc.reason}): the default font is used")
            data = None
        else:
            if data is None:
                self.warn(el.sourceline, f"font {fid!r} ({where}) is missing: the default font is used")
            elif not data.startswith(FONT_MAGIC):
                self.warn(el.sourceline, f"font {fid!r} ({where}) is not a TrueType/OpenType file: the "
                                         "default font is used")
                data = None
        self.fonts[fid] = data

    def style(self, el, parent: Style) -> Style:
        """``parent`` changed by a ``<Font>`` element's attributes (bad values warned, ignored)."""
        a, line, s = _attrs(el), el.sourceline, parent
        changes: dict = {}
        fid = a.get("id")
        if fid is not None:
            if fid not in self.fonts and fid not in self._unknown_fonts:
                self._unknown_fonts.add(fid)
                self.warn(line, f"font {fid!r} is not loaded by a <LoadFont>: the default font is used")
            changes["font"] = fid
        for name, key in (("color", "colour"), ("effectcolor", "effect_colour")):
            if name in a:
                try:
                    changes[key] = Colour.parse(a[name])
                except ValueError as exc:
                    self.warn(line, f"{name}: {exc}")
        for name, key, lo, hi in (("size", "size", 1, 1000), ("aspectadjust", "aspect_adjust", 0.25, 4)):
            if name in a:
                try:
                    changes[key] = min(hi, max(lo, float(a[name])))
                except ValueError:
                    self.warn(line, f"{name} is not a number: {a[name][:20]!r}")
        if "italic" in a:
            changes["italic"] = a["italic"].strip().lower() in ("yes", "true", "1")
        if "weight" in a:
            changes["bold"] = a["weight"].strip().lower() == "bold"
        for name in ("underlined", "underline"):
            if name in a:
                changes["underline"] = a[name].strip().lower() in ("yes", "true", "1")
        if "effect" in a:
            e = a["effect"].strip().lower()
            if e in ("none", "border", "shadow"):
                changes["effect"] = e
            else:
                self.warn(line, f"effect {e[:20]!r} is not none, border or shadow: none is used")
        return Style(**{**s.__dict__, **changes}) if changes else s

    # -------------------------------------------------------------- cues

    def placement(self, el) -> Placement:
        a, line = _attrs(el), el.sourceline
        v = {"valign": "center", "halign": "center", "direction": "ltr"}
        allowed = {"valign": ("top", "center", "bottom"), "halign": ("left", "center", "right"),
                   "direction": ("ltr", "rtl", "ttb", "btt", "horizontal", "vertical")}
        for name, ok in allowed.items():
            if name in a:
                value = a[name].strip().lower()
                if value in ok:
                    v[name] = {"horizontal": "ltr", "vertical": "ttb"}.get(value, value)
                else:
                    self.warn(line, f"{name} {value[:20]!r} is not one of {', '.join(ok)}")
        nums = {}
        for name in ("vposition", "hposition", "zposition"):
            try:
                nums[name] = min(100.0, max(-100.0, float(a.get(name, "0"))))
            except ValueError:
                self.warn(line, f"{name} is not a number: {a[name][:20]!r}; 0 is used")
                nums[name] = 0.0
        return Placement(v["valign"], nums["vposition"], v["halign"], nums["hposition"], v["direction"],
                         nums["zposition"])

    def time(self, value: str | None, what: str) -> Fraction:
        if value is None:
            raise ValueError(f"no {what}")
        return parse_time(value, self.rate, decimal=self.dialect == "interop") - self.start

    def fade(self, value: str | None) -> Fraction:
        if value is None or not value.strip():
            return Fraction(DEFAULT_FADE_TICKS, INTEROP_TCR)
        v = value.strip()
        if ":" in v or "." in v:
            t = parse_time(v, self.rate, decimal=self.dialect == "interop")
        elif v.isdigit() and len(v) < 10:
            t = Fraction(int(v), self.rate)
        else:
            raise ValueError(f"not a fade time: {v[:20]!r}")
        return min(t, MAX_FADE)

    def subtitle(self, el, style: Style) -> None:
        a, line = _attrs(el), el.sourceline
        try:
            t_in, t_out = self.time(a.get("timein"), "TimeIn"), self.time(a.get("timeout"), "TimeOut")
            fades = self.fade(a.get("fadeuptime")), self.fade(a.get("fadedowntime"))
        except ValueError as exc:
            return self.bad_time(line, f"<Subtitle> {a.get('spotnumber', '')} dropped: {exc}")
        if t_out <= t_in:
            return self.bad_time(line, f"<Subtitle> {a.get('spotnumber', '')} dropped: TimeOut "
                                       f"{a.get('timeout')} is not after TimeIn {a.get('timein')}")
        if t_in < 0:
            return self.bad_time(line, f"<Subtitle> {a.get('spotnumber', '')} dropped: TimeIn "
                                       f"{a.get('timein')} is before the StartTime")
        lines: list[TextLine] = []
        images: list[SubtitleImage] = []
        self.content(el, style, lines, images)
        if len(lines) > MAX_LINES or len(images) > MAX_IMAGES:
            self.warn(line, f"<Subtitle> with {len(lines)} lines and {len(images)} images: the first "
                            f"{MAX_LINES} and {MAX_IMAGES} are shown")
        spot = a.get("spotnumber", "")
        if not lines and not images:
            return                      # nothing to show (an image dropped above says why)
        self.cues.append(Cue(t_in, t_out, tuple(lines[:MAX_LINES]), tuple(images[:MAX_IMAGES]), *fades,
                             spot=int(spot) if spot.isdigit() and len(spot) < 10 else None, line=line))

    def content(self, el, style: Style, lines: list, images: list) -> None:
        """The ``<Text>`` and ``<Image>`` elements under ``el``, through nested ``<Font>``."""
        for c in el:
            name = local(c)
            if name == "Font":
                self.content(c, self.style(c, style), lines, images)
            elif name == "Text":
                runs: list[TextRun] = []
                self.runs(c, style, runs)
                text = "".join(r.text for r in runs)
                if len(text) > MAX_CHARS:
                    self.warn(c.sourceline, f"<Text> of {len(text)} characters cut to {MAX_CHARS}")
                    runs = _cut(runs, MAX_CHARS)
                if text.strip():
                    lines.append(TextLine(tuple(runs), self.placement(c)))
            elif name == "Image":
                self.image(c, images)

    def runs(self, el, style: Style, out: list[TextRun]) -> None:
        """The text under ``el`` as runs of one style each (``<Font>`` changes it; ``<Space>`` is a
        space; line breaks and tabs become spaces)."""
        def add(text: str | None, s: Style) -> None:
            if text:
                t = re.sub(r"[\r\n\t]+", " ", text)
                if out and out[-1].style == s:
                    out[-1] = TextRun(out[-1].text + t, s)
                else:
                    out.append(TextRun(t, s))
        add(el.text, style)
        for c in el:
            name = local(c)
            if name == "Font":
                self.runs(c, self.style(c, style), out)
            elif name == "Space":
                add(" ", style)
            elif name:
                add("".join(c.itertext()), style)
            add(c.tail, style)
        if out and el.tag and local(el) == "Text":
            out[0] = TextRun(out[0].text.lstrip(), out[0].style)
            out[-1] = TextRun(out[-1].text.rstrip(), out[-1].style)

    def image(self, el, images: list) -> None:
        name = (el.text or "").strip()
        try:
            data = self.files.read(name, MAX_PNG_BYTES, self.path) if name else None
        except MediaError as exc:
            self.warn(el.sourceline, f"<Image> {name[:80]!r} dropped: {exc.reason}")
            return
        if data is None:
            self.warn(el.sourceline, f"<Image> {name[:80]!r} dropped: the file is missing")
        elif not data.startswith(PNG_MAGIC):
            self.warn(el.sourceline, f"<Image> {name[:80]!r} dropped: not a PNG file")
        else:
            images.append(SubtitleImage(data, self.placement(el), name))

    def walk(self, el, style: Style) -> None:
        """``<Subtitle>`` elements under ``el`` (a ``<SubtitleList>`` or a ``<Font>``)."""
        for c in el:
            name = local(c)
            if name == "Font":
                self.walk(c, self.style(c, style))
            elif name == "Subtitle":
                if len(self.cues) >= MAX_CUES:
                    raise UnsupportedMedia(self.path, f"more than {MAX_CUES} subtitles (line {c.sourceline})")
                self.subtitle(c, style)


def _cut(runs: list[TextRun], n: int) -> list[TextRun]:
    out = []
    for r in runs:
        if n <= 0:
            break
        out.append(TextRun(r.text[:n], r.style))
        n -= len(r.text)
    return out


def parse_subtitle_xml(root, path: Path, files: _Files | None = None) -> SubtitleTrack:
    """The track of a parsed ``DCSubtitle`` or ``SubtitleReel`` document."""
    path = Path(path)
    files = files or _Files(path.parent, path.parent)
    name = local(root)
    if name == "DCSubtitle":
        r = _Reader(path, "interop", INTEROP_TCR, files)
        head = {local(c): (c.text or "").strip() for c in root if local(c)}
        for c in root:
            if local(c) == "LoadFont":
                r.load_font(c)
        r.walk(root, Style())
        reel = head.get("ReelNumber", "")
        return SubtitleTrack(path, "interop", r.cues, r.fonts, uuid_of(head.get("SubtitleID")),
                             head.get("MovieTitle", ""), head.get("Language", ""),
                             int(reel) if reel.isdigit() and len(reel) < 10 else None, warnings=r.warnings,
                             timing_errors=r.timing)
    if name == "SubtitleReel":
        head = {local(c): c for c in root if local(c)}

        def txt(k: str) -> str:
            return (head[k].text or "").strip() if k in head else ""
        try:
            tcr = int(txt("TimeCodeRate"))
            if not 0 < tcr <= 1000:
                raise ValueError
        except ValueError:
            line = head["TimeCodeRate"].sourceline if "TimeCodeRate" in head else None
            raise CorruptMedia(path, f"<TimeCodeRate> {txt('TimeCodeRate')[:20]!r} is not an integer "
                                     f"1..1000 (line {line})") from None
        edit_rate = None
        parts = txt("EditRate").split()
        if len(parts) == 2 and all(p.isdigit() and 0 < int(p) <= 1_000_000 for p in parts):
            edit_rate = Fraction(int(parts[0]), int(parts[1]))
        start = Fraction(0)
        r = _Reader(path, "smpte", tcr, files)
        if txt("StartTime"):
            try:
                start = parse_time(txt("StartTime"), tcr)
            except ValueError as exc:
                r.warn(head["StartTime"].sourceline, f"<StartTime> ignored: {exc}")
        r.start = start
        for c in root:
            if local(c) == "LoadFont":
                r.load_font(c)
        lists = [c for c in root if local(c) == "SubtitleList"]
        for sl in lists:
            r.walk(sl, Style())
        reel = txt("ReelNumber")
        return SubtitleTrack(path, "smpte", r.cues, r.fonts, uuid_of(txt("Id")), txt("ContentTitleText"),
                             txt("Language"), int(reel) if reel.isdigit() and len(reel) < 10 else None,
                             edit_rate, tcr, start, r.warnings, r.timing)
    raise UnsupportedMedia(path, f"not a subtitle document: root <{name}> (want Interop <DCSubtitle> or "
                                 "SMPTE ST 428-7 <SubtitleReel>)")


# ------------------------------------------------------------------ SRT

_SRT_TIME = re.compile(r"\s*(\d{1,3}):(\d{2}):(\d{2})[,.](\d{1,3})\s*-->\s*(\d{1,3}):(\d{2}):(\d{2})[,.](\d{1,3})")
#: Line pitch of SRT lines stacked up from the bottom, percent of the picture height.
SRT_LINE_PITCH = 6.5
SRT_BOTTOM = 8.0


def read_srt(path) -> SubtitleTrack:
    """A SubRip file as a track: each block's lines stacked up from 8% above the bottom, centred,
    42 pt white with a black border; ``<i>`` and ``<b>`` make a line italic or bold, other tags
    are dropped.  A block whose time line is bad, or ends before it starts, is warned and dropped."""
    p = Path(path)
    raw = read_bounded(p, MAX_XML_BYTES, "SRT file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    r = _Reader(p, "srt", 1000, _Files(p.parent, p.parent))
    line_no = 1
    for block in re.split(r"\r?\n\s*\r?\n", text.replace("\r\n", "\n")):
        lines = block.strip("\n").split("\n")
        start_line = line_no
        line_no += block.count("\n") + 2
        if not block.strip():
            continue
        if lines and _SRT_TIME.match(lines[0]) is None:
            lines = lines[1:]           # the counter
        m = _SRT_TIME.match(lines[0]) if lines else None
        if m is None:
            r.warn(start_line, "SRT block without a time line 'HH:MM:SS,mmm --> HH:MM:SS,mmm': dropped")
            continue
        g = [int(x) for x in m.groups()]
        t_in = Fraction(g[0] * 3600 + g[1] * 60 + g[2]) + Fraction(g[3], 10 ** len(m.group(4)))
        t_out = Fraction(g[4] * 3600 + g[5] * 60 + g[6]) + Fraction(g[7], 10 ** len(m.group(8)))
        if max(g[1], g[2], g[5], g[6]) >= 60 or t_out <= t_in:
            r.bad_time(start_line, f"SRT block {lines[0].strip()!r} dropped: bad time or end not after start")
            continue
        body = [ln for ln in lines[1:MAX_LINES + 1] if ln.strip()]
        out = []
        for k, ln in enumerate(reversed(body)):
            style = Style(italic="<i>" in ln.lower(), bold="<b>" in ln.lower(), effect="border")
            plain = re.sub(r"<[^>]{0,100}>", "", ln).strip()[:MAX_CHARS]
            out.append(TextLine((TextRun(plain, style),),
                                Placement("bottom", SRT_BOTTOM + k * SRT_LINE_PITCH, "center", 0.0)))
        if len(r.cues) >= MAX_CUES:
            raise UnsupportedMedia(p, f"more than {MAX_CUES} subtitles")
        r.cues.append(Cue(t_in, t_out, tuple(reversed(out)), line=start_line))
    return SubtitleTrack(p, "srt", r.cues, {}, title=p.stem, warnings=r.warnings, timing_errors=r.timing)


# ------------------------------------------------------------------ a composition's subtitles

def composition_subtitles(comp, root: Path | None = None, edit_rate=None, keys=None,
                          kind: str = "subtitle") -> CompositionSubtitles:
    """The subtitles of a :class:`~.package.Composition` (``kind`` "caption": its closed
    captions, ST 429-12, read alike): each reel's ``MainSubtitle`` (an Interop
    XML file, or an SMPTE XML file) read and placed after the earlier reels' pictures.  A reel
    whose subtitle cannot be read (missing file, a damaged timed-text MXF, broken XML, an
    encrypted one without its key) adds a warning and shows none.  ``root``: the package folder,
    which fonts and images must stay in (default: the CPL's folder); ``keys``: the composition's
    :class:`~.key_ring.CompositionKeys`, for encrypted timed-text track files (ST 429-6)."""
    rate = Fraction(edit_rate or comp.edit_rate or 24)
    reels: list[ReelSubtitles] = []
    warnings: list[str] = []
    start = 0
    for reel in comp.reels:
        pictures = reel.of_kind("picture", "stereo-picture")
        length = pictures[0].duration if pictures else 0
        for asset in reel.of_kind(kind):
            try:
                if asset.path is None:
                    raise MediaError(comp.path, f"{kind} asset {asset.id} of reel {reel.id} is not "
                                                "in the ASSETMAP")
                key = None
                if keys is not None and asset.key_id:
                    key = keys.key(asset.key_id, kind=kind, asset_id=asset.id, reel_id=reel.id,
                                   path=asset.path)
                track = read_subtitles(asset.path, root=root or _root(comp), key=key)
            except MediaError as exc:
                warnings.append(f"{kind}s of reel {reel.id} not shown: {exc}")
                log.warning("%s", warnings[-1])
                continue
            sub_rate = asset.edit_rate or track.edit_rate or rate
            shown = min(length, round(asset.duration * rate / sub_rate)) if asset.duration else length
            warnings.extend(track.warnings)
            reels.append(ReelSubtitles(start, shown, Fraction(asset.entry_point) / sub_rate, track))
        start += length
    return CompositionSubtitles(reels, rate, warnings)


def _root(comp) -> Path | None:
    """The package folder (the CPL's folder) that a subtitle's font and image files stay in."""
    return Path(comp.path).parent if getattr(comp, "path", None) else None
