"""Subtitles for Interop mastering: a prepared track (:func:`.subtitle_write.prepare_subtitles`)
as an Interop ``DCSubtitle`` document, the XML file an Interop DCP carries beside its font
(the "Subtitle Specification (XML File Format) for DLP Cinema" 1.0, as libdcp's
``InteropSubtitleAsset`` writes it).

The document: ``<DCSubtitle Version="1.0">`` with ``SubtitleID`` (a bare UUID), ``MovieTitle``,
``ReelNumber``, ``Language``, one ``<LoadFont Id= URI=>`` naming the font file beside the XML,
then one ``<Font Id=>`` holding every ``<Subtitle SpotNumber= TimeIn= TimeOut= FadeUpTime=
FadeDownTime=>``. Times are ``HH:MM:SS:TTT`` in ticks of 4 ms (250 a second); fades are whole
ticks (rounded up, as libdcp writes them). A cue shows from its first frame to its last, counted
in whole frames as the SMPTE documents count them, each boundary written as the last tick at or
before it (so a reader that samples a frame at its start shows the same frames). Each line is a
``<Text VAlign= VPosition= HAlign= HPosition=>`` (Interop's attribute names; its ``Direction`` is
not written, as libdcp leaves it out) whose runs each take their style from a ``<Font>`` inside
it (``Id``, ``Color``, ``Effect``, ``EffectColor``, ``Italic``, ``Size``, ``Underlined``,
``Weight``, ``AspectAdjust``); an image is ``<Image>`` naming a PNG file ``<uuid>.png`` beside the
XML.
"""

from __future__ import annotations

import math
import uuid
from fractions import Fraction

from lxml import etree

from cinegpu.media.subtitles.track import Placement, Style, SubtitleTrack, TextLine

__all__ = ["INTEROP_TICKS", "interop_document"]

#: Interop subtitle time ticks a second (4 ms each).
INTEROP_TICKS = 250
FONT_ID = "Font1"


def _time(frames: int, fps: int) -> str:
    """``HH:MM:SS:TTT`` of the last tick at or before frame ``frames`` (at ``fps`` frames a
    second)."""
    ticks = frames * INTEROP_TICKS // fps
    s, t = divmod(ticks, INTEROP_TICKS)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}:{t:03d}"


def _num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _colour(c) -> str:
    return f"{c.a:02X}{c.r:02X}{c.g:02X}{c.b:02X}"


def _place(el, p: Placement) -> None:
    el.set("VAlign", p.valign)
    el.set("VPosition", _num(p.vposition))
    el.set("HAlign", p.halign)
    el.set("HPosition", _num(p.hposition))


def _style(el, s: Style) -> None:
    el.set("Color", _colour(s.colour))
    el.set("Effect", s.effect)
    el.set("EffectColor", _colour(s.effect_colour))
    el.set("Italic", "yes" if s.italic else "no")
    el.set("Size", str(max(1, round(s.size))))
    el.set("Underlined", "yes" if s.underline else "no")
    el.set("Weight", "bold" if s.bold else "normal")
    if s.aspect_adjust != 1.0:
        el.set("AspectAdjust", _num(s.aspect_adjust))


def _text(parent, line: TextLine) -> None:
    el = etree.SubElement(parent, "Text")
    _place(el, line.place)
    for run in line.runs:
        f = etree.SubElement(el, "Font")
        _style(f, run.style)
        f.text = run.text


def interop_document(track: SubtitleTrack, *, title: str, language: str, fps: int, font_uri: str,
                     reel_number: int = 1) -> tuple[bytes, tuple[tuple[uuid.UUID, bytes], ...], uuid.UUID]:
    """The Interop ``DCSubtitle`` of ``track`` (times from 0, ``fps`` frames a second), its
    images as (id, PNG bytes), each to be written as ``<id>.png`` beside the XML, and its
    SubtitleID. ``font_uri``: the font file's name beside the XML."""
    sid = uuid.uuid4()
    root = etree.Element("DCSubtitle", Version="1.0")
    for tag, text in (("SubtitleID", str(sid)), ("MovieTitle", title), ("ReelNumber", reel_number),
                      ("Language", language)):
        etree.SubElement(root, tag).text = str(text)
    etree.SubElement(root, "LoadFont", Id=FONT_ID, URI=font_uri)
    outer = etree.SubElement(root, "Font", Id=FONT_ID)
    images = []
    for k, cue in enumerate(track.cues, 1):
        s = etree.SubElement(outer, "Subtitle")
        t_in = round(cue.time_in * fps)
        t_out = max(round(cue.time_out * fps), t_in + 1)
        s.set("SpotNumber", str(k))
        s.set("TimeIn", _time(t_in, fps))
        s.set("TimeOut", _time(t_out, fps))
        s.set("FadeUpTime", str(math.ceil(Fraction(cue.fade_up) * INTEROP_TICKS)))
        s.set("FadeDownTime", str(math.ceil(Fraction(cue.fade_down) * INTEROP_TICKS)))
        for line in cue.lines:
            _text(s, line)
        for img in cue.images:
            iid = uuid.uuid4()
            images.append((iid, img.png))
            el = etree.SubElement(s, "Image")
            _place(el, img.place)
            el.text = f"{iid}.png"
    # not pretty-printed: <Text> is mixed content, and indentation would add spaces to the runs
    doc = b'<?xml version="1.0" encoding="UTF-8"?>\n' + etree.tostring(root, encoding="UTF-8")
    return doc, tuple(images), sid
