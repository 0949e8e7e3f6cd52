"""Subtitles for mastering: any subtitle input (SRT, SSA/ASS, WebVTT, Interop or SMPTE XML) as an SMPTE ST 428-7
``SubtitleReel`` with one embedded font, ready for an ST 429-5 track file.

:func:`prepare_subtitles` runs before the first frame is encoded. It reads the input with
:mod:`.subtitle_xml`, refuses it (MediaError, one line) when a cue was dropped for its times (a
bad timecode, a TimeOut not after its TimeIn), when no cue is left or when the font file is
missing or not a font; cues that run past the picture's end are cut there, and cues that start
after it dropped, each with a warning. The document has the ST 428-7:2010 namespace; its
``EditRate`` is the picture's and ``TimeCodeRate`` the picture's frames per second, times are
``HH:MM:SS:EE`` from ``StartTime`` 00:00:00:00; every run of text takes its style from a
``<Font>`` element inside its ``<Text>``, all inside one ``<Font ID=>`` naming the one
``<LoadFont>``. The font is ``--subtitle-font`` or DejaVu Sans (its licence lets it be
redistributed), found through fontconfig or at its Debian path; the input's own fonts are not
carried over. The font is embedded cut down to the characters the kept cues show
(:mod:`.font_subset`: DejaVu Sans, 742 KiB whole, becomes some tens of KiB, below the 640 KiB
that ClairMeta allows a subtitle font); a warning names characters the font has no glyph for,
and one says when even the subset is above 640 KiB. PNG images of an Interop or SMPTE input
become resources named by new UUIDs.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

from lxml import etree

from cinegpu.media.errors import MediaError
from cinegpu.media.files import read_bounded
from cinegpu.media.mxf.timed_text_write import FONT_MIME, PNG_MIME, Resource
from cinegpu.media.subtitles.documents import FONT_MAGIC, MAX_FONT_BYTES, read_subtitles
from cinegpu.media.subtitles.font_subset import subset_font
from cinegpu.media.subtitles.track import Cue, Placement, Style, SubtitleTrack, TextLine, TextRun

__all__ = ["NS_DCST", "TimedTextAsset", "prepare_subtitles", "split_subtitles", "default_font", "smpte_document",
           "LANGUAGE_TAG"]

NS_DCST = "http://www.smpte-ra.org/schemas/428-7/2010/DCST"
DEJAVU_PATHS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                "/usr/share/fonts/dejavu/DejaVuSans.ttf")
#: An RFC 5646 language tag, as far as the CPL's xs:language and the ISDCF names go.
LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}")
FONT_ID = "Font1"
#: Fonts above this size (bytes) are flagged by ClairMeta's "Subtitle maximum font size" check.
FONT_WARN_BYTES = 640 << 10


@dataclass(frozen=True)
class TimedTextAsset:
    """A reel's subtitles ready for the track file: the document (UTF-8), its resources (the
    font first), the document's Id, its language and its length in edit units."""

    document: bytes
    resources: tuple[Resource, ...]
    resource_id: uuid.UUID
    language: str
    duration: int
    cues: int
    #: what :func:`split_subtitles` re-makes each reel's document from: the kept cues, the
    #: (cut) font, the title and the frames per second
    track: SubtitleTrack | None = field(default=None, repr=False, compare=False)
    font: bytes = field(default=b"", repr=False, compare=False)
    title: str = ""
    fps: int = 24


def default_font() -> Path:
    """DejaVu Sans: fontconfig's file for it, else its Debian path; MediaError when neither."""
    fc = shutil.which("fc-match")
    if fc:
        try:
            out = subprocess.run([fc, "-f", "%{file}", "DejaVu Sans:style=Book"], capture_output=True,
                                 text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out and Path(out).name.lower() == "dejavusans.ttf" and Path(out).is_file():
            return Path(out)
    for p in DEJAVU_PATHS:
        if Path(p).is_file():
            return Path(p)
    raise MediaError(None, "no default subtitle font: DejaVu Sans (DejaVuSans.ttf) is not installed "
                           "(apt-get install fonts-dejavu-core); or give one with --subtitle-font FILE.ttf")


def _font_bytes(font) -> bytes:
    p = Path(font) if font is not None else default_font()
    if not p.exists():
        raise MediaError(p, "subtitle font file is missing")
    data = read_bounded(p, MAX_FONT_BYTES, "subtitle font")
    if not data.startswith(FONT_MAGIC):
        raise MediaError(p, "not a TrueType/OpenType font file")
    return data


def prepare_subtitles(path, *, frames: int, fps, title: str, language: str | None = None,
                      font=None) -> tuple[TimedTextAsset, list[str]]:
    """The subtitle input at ``path`` for a picture of ``frames`` frames at ``fps``, and the
    warnings to show (see the module's docstring for what is refused)."""
    rate = Fraction(fps)
    if rate.denominator != 1:
        raise MediaError(path, f"subtitles need a whole number of frames a second, not {fps}")
    if language is not None and not LANGUAGE_TAG.fullmatch(language):
        raise ValueError(f"--subtitle-language {language!r} is not an RFC 5646 tag such as en or fr-FR")
    font_data = _font_bytes(font)
    quiet = logging.getLogger("cinegpu.media.subtitles.track")
    mute = _Mute()
    quiet.addFilter(mute)            # the caller shows the warnings returned, once
    try:
        track = read_subtitles(path)
    finally:
        quiet.removeFilter(mute)
    warnings = list(track.warnings)
    if track.timing_errors:
        more = len(track.timing_errors) - 1
        first = track.timing_errors[0].split(": ", 1)[-1]       # the path is the error's own
        raise MediaError(path, first + (f" (and {more} more)" if more > 0 else ""))
    end = Fraction(frames) / rate
    cues = []
    for c in track.cues:
        if c.time_in >= end:
            warnings.append(f"{path}: subtitle at {float(c.time_in):.3f} s starts after the picture's "
                            f"end ({float(end):.3f} s): dropped")
        elif c.time_out > end:
            warnings.append(f"{path}: subtitle at {float(c.time_in):.3f} s runs past the picture's end: "
                            f"cut at {float(end):.3f} s")
            cues.append(Cue(c.time_in, end, c.lines, c.images, c.fade_up, min(c.fade_down, end - c.time_in),
                            c.spot, c.line))
        else:
            cues.append(c)
    if not cues:
        raise MediaError(path, "no subtitle to show within the picture")
    if language is None:
        language = track.language if LANGUAGE_TAG.fullmatch(track.language or "") else "en"
        if language != track.language:
            warnings.append(f"{path}: no subtitle language given (--subtitle-language): en is declared")
    kept = SubtitleTrack(track.path, track.dialect, cues, title=track.title)
    shown = "".join(line.text for c in cues for line in c.lines)
    cut = subset_font(font_data, shown, name=str(font or "the default subtitle font"))
    font_data = cut.data
    if cut.missing:
        warnings.append(f"{path}: the subtitle font has no glyph for {''.join(cut.missing)!r}: "
                        f"those characters show as boxes (give a font that has them with --subtitle-font)")
    if len(font_data) > FONT_WARN_BYTES:
        warnings.append(f"the subtitle font is {len(font_data) >> 10} KiB even cut to the characters used; "
                        f"DCP checkers (ClairMeta) refuse fonts above {FONT_WARN_BYTES >> 10} KiB")
    doc, resources, rid = smpte_document(kept, title=title, language=language, fps=int(rate),
                                         font=font_data)
    return TimedTextAsset(doc, resources, rid, language, frames, len(cues), kept, font_data,
                          title, int(rate)), warnings


def split_subtitles(asset: TimedTextAsset, reels) -> list[TimedTextAsset]:
    """``asset`` cut into one asset per reel (``reels``: each reel's length in frames, summing
    to the asset's duration): each reel's ST 428-7 document counts its times from the reel's
    start (``StartTime`` 00:00:00:00, ``ReelNumber`` its position) as ST 429-2 has a track file
    per reel. A cue that crosses a join is split: it shows in both reels up to and from the
    join, its fade up kept by the first part and its fade down by the last (each at most the
    part's length). Cue times are counted in whole frames (as the document writes them).
    Every reel carries the track (RDD 52 8.3.1), and ST 428-7's schema wants at least one
    ``<Subtitle>``: a reel without a cue gets one showing a single space for its first frame,
    as DCP-o-matic writes its empty subtitle assets. Each document embeds the same cut font
    under its own resource id."""
    reels = [int(n) for n in reels]
    if sum(reels) != asset.duration or min(reels, default=0) < 1:
        raise ValueError(f"reels of {reels} frames do not make the subtitles' {asset.duration}")
    if len(reels) == 1:
        return [asset]
    if asset.track is None:
        raise ValueError("these subtitles were not prepared by prepare_subtitles: cannot split them")
    fps, out, start = asset.fps, [], 0
    for number, length in enumerate(reels, 1):
        cues = [c for c in (_cue_in_reel(c, start, start + length, fps) for c in asset.track.cues)
                if c is not None] or [_blank_cue(asset.track, fps)]
        part = SubtitleTrack(asset.track.path, asset.track.dialect, cues, title=asset.track.title)
        doc, resources, rid = smpte_document(part, title=asset.title, language=asset.language,
                                             fps=fps, font=asset.font, reel_number=number)
        out.append(TimedTextAsset(doc, resources, rid, asset.language, length, len(cues),
                                  part, asset.font, asset.title, fps))
        start += length
    return out


def _blank_cue(track: SubtitleTrack, fps: int) -> Cue:
    """A cue showing one space for one frame, in the style and place of the track's first
    line of text (the defaults where it has none)."""
    line = next((ln for c in track.cues for ln in c.lines), None)
    style = line.runs[0].style if line is not None and line.runs else Style()
    place = line.place if line is not None else Placement(valign="bottom", vposition=8.0)
    return Cue(Fraction(0), Fraction(1, fps), (TextLine((TextRun(" ", style),), place),))


def _cue_in_reel(c: Cue, first: int, end: int, fps: int) -> Cue | None:
    """The part of cue ``c`` within frames [``first``, ``end``), its times from ``first``
    (seconds), or None when it shows in no frame of the reel."""
    f_in, f_out = round(c.time_in * fps), max(round(c.time_out * fps), round(c.time_in * fps) + 1)
    a, b = max(f_in, first), min(f_out, end)
    if a >= b:
        return None
    length = Fraction(b - a, fps)
    fade_up = min(c.fade_up, length) if a == f_in else Fraction(0)
    fade_down = min(c.fade_down, length) if b == f_out else Fraction(0)
    return Cue(Fraction(a - first, fps), Fraction(b - first, fps), c.lines, c.images, fade_up,
               fade_down, c.spot, c.line)


class _Mute(logging.Filter):
    def filter(self, record) -> bool:
        return False


def _tc(t: Fraction, rate: int) -> str:
    """``HH:MM:SS:EE`` of ``t`` seconds in edit units of ``rate`` a second."""
    units = round(t * rate)
    s, e = divmod(units, rate)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}:{e:02d}"


def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _place(el, p: Placement, text: bool) -> None:
    el.set("Valign", p.valign)
    el.set("Vposition", _num(p.vposition))
    el.set("Halign", p.halign)
    el.set("Hposition", _num(p.hposition))
    if text:
        el.set("Direction", p.direction)


def _style(el, s: Style) -> None:
    el.set("Size", str(max(1, round(s.size))))
    el.set("Color", f"{s.colour.a:02X}{s.colour.r:02X}{s.colour.g:02X}{s.colour.b:02X}")
    el.set("Effect", s.effect)
    c = s.effect_colour
    el.set("EffectColor", f"{c.a:02X}{c.r:02X}{c.g:02X}{c.b:02X}")
    el.set("Italic", "yes" if s.italic else "no")
    el.set("Weight", "bold" if s.bold else "normal")
    el.set("Underline", "yes" if s.underline else "no")
    if s.aspect_adjust != 1.0:
        el.set("AspectAdjust", _num(s.aspect_adjust))


def smpte_document(track: SubtitleTrack, *, title: str, language: str, fps: int,
                   font: bytes, reel_number: int = 1) -> tuple[bytes, tuple[Resource, ...], uuid.UUID]:
    """The ST 428-7 ``SubtitleReel`` of ``track`` (times from 0), its resources (``font`` first,
    then one per image) and its Id; ``ReelNumber`` is ``reel_number`` (ST 428-7 5.6)."""
    def sub(parent, tag, text=None):
        el = etree.SubElement(parent, f"{{{NS_DCST}}}{tag}")
        if text is not None:
            el.text = str(text)
        return el

    rid, font_id = uuid.uuid4(), uuid.uuid4()
    resources = [Resource(font_id, FONT_MIME, font)]
    root = etree.Element(f"{{{NS_DCST}}}SubtitleReel", nsmap={None: NS_DCST})
    sub(root, "Id", f"urn:uuid:{rid}")
    sub(root, "ContentTitleText", title)
    sub(root, "IssueDate", datetime.now(timezone.utc).replace(microsecond=0).isoformat())
    sub(root, "ReelNumber", reel_number)
    sub(root, "Language", language)
    sub(root, "EditRate", f"{fps} 1")
    sub(root, "TimeCodeRate", fps)
    sub(root, "StartTime", "00:00:00:00")
    sub(root, "LoadFont", f"urn:uuid:{font_id}").set("ID", FONT_ID)
    outer = sub(sub(root, "SubtitleList"), "Font")
    outer.set("ID", FONT_ID)
    for k, cue in enumerate(track.cues, 1):
        s = sub(outer, "Subtitle")
        s.set("SpotNumber", str(k))
        t_in, t_out = round(cue.time_in * fps), max(round(cue.time_out * fps), round(cue.time_in * fps) + 1)
        s.set("TimeIn", _tc(Fraction(t_in, fps), fps))
        s.set("TimeOut", _tc(Fraction(t_out, fps), fps))
        s.set("FadeUpTime", _tc(cue.fade_up, fps))
        s.set("FadeDownTime", _tc(cue.fade_down, fps))
        for line in cue.lines:
            _text(sub(s, "Text"), line, sub)
        for img in cue.images:
            iid = uuid.uuid4()
            resources.append(Resource(iid, PNG_MIME, img.png))
            _place(sub(s, "Image", f"urn:uuid:{iid}"), img.place, text=False)
    # not pretty-printed: <Text> is mixed content, and indentation would add spaces to the runs
    doc = b'<?xml version="1.0" encoding="UTF-8"?>\n' + etree.tostring(root, encoding="UTF-8")
    return doc, tuple(resources), rid


def _text(el, line: TextLine, sub) -> None:
    _place(el, line.place, text=True)
    for run in line.runs:
        f = sub(el, "Font", run.text)
        _style(f, run.style)
