"""Subtitle inputs beyond SRT (issue 55, item 5): SSA/ASS (through pysubs2) and WebVTT read into
the timed-text model: exact times, lines, italic/bold/colour runs, top or bottom placement, fades;
what the model cannot show dropped with one warning per kind; the kind told by the content where
the suffix lies; junk, bad times and EBU STL refused in one line.  The files are written here.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from cinegpu.jobs.demo import demo_frame
from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.package.read import read_package
from cinegpu.media.subtitles.documents import composition_subtitles, read_subtitles
from cinegpu.media.subtitles.track import Colour
from cinegpu.media.subtitles.write import prepare_subtitles
from helpers.cli import cinegpu
from helpers.mastering import needs_encoder, write_png16
from helpers.subtitles import FONT, needs_font, subtitle_schema_ok

pytest.importorskip("pysubs2")

ASS = """[Script Info]
Title: Demo
ScriptType: v4.00+
PlayResX: 1920
PlayResY: 1080

[V4+ Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, \
Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, \
MarginV, Encoding
Style: Default,Arial,54,&H00FFFFFF,&H000000FF,&H00000000,&H00000000,0,0,0,0,100,100,0,0,1,2,0,2,10,10,54,1
Style: Sign,Arial,54,&H0000FFFF,&H000000FF,&H00000000,&H00000000,-1,0,0,0,100,100,0,0,1,2,0,8,10,10,108,1

[Events]
Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: 0,0:00:00.25,0:00:00.50,Default,,0,0,0,,Hello {\\i1}world{\\i0}\\Nsecond {\\b1}line
Dialogue: 0,0:00:00.51,0:00:00.75,Sign,,0,0,0,,{\\pos(100,200)\\k20}At the top
Dialogue: 0,0:00:00.76,0:00:00.99,Default,,0,0,0,,{\\an8\\c&H0000FF&\\fad(100,50)}red, top
Dialogue: 0,0:00:00.80,0:00:00.90,Default,,0,0,0,,{\\p1}m 0 0 l 100 0 100 100{\\p0}
Comment: 0,0:00:00.80,0:00:00.90,Default,,0,0,0,,not shown
"""

SSA = """[Script Info]
ScriptType: v4.00

[V4 Styles]
Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, TertiaryColour, BackColour, Bold, Italic, \
BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, AlphaLevel, Encoding
Style: Default,Arial,20,16777215,65535,65535,0,0,-1,1,2,0,6,10,10,36,0,0

[Events]
Format: Marked, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text
Dialogue: Marked=0,0:00:01.00,0:00:02.50,Default,,0000,0000,0000,,italic at the top
Dialogue: Marked=0,0:00:03.00,0:00:04.00,Default,,0000,0000,0000,,{\\a2}bottom
"""

VTT = """WEBVTT - a demo
Kind: captions

STYLE
::cue { color: red }

NOTE a comment
over two lines

intro
00:00.250 --> 00:00.500
Hello <i>world</i> &amp; all
second <b>line</b>

00:00:00.510 --> 00:00:00.750 line:0 align:left position:10%
<c.yellow>At</c> the <v Bob>top</v> <00:00:00.600>later

00:00:00.760 --> 00:00:00.990 line:-1
bottom <u>line</u>
"""


def _write(path, text: str, bom: bool = True, crlf: bool = True):
    data = (text.replace("\n", "\r\n") if crlf else text).encode()
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def _cues(track):
    return [(c.time_in, c.time_out, tuple(ln.text for ln in c.lines)) for c in track.cues]


def _kinds(track) -> list[str]:
    return [w.split(": ", 1)[1].split(" dropped")[0] for w in track.warnings]


# ------------------------------------------------------------------ SSA / ASS

def test_ass_times_lines_runs_placement_and_what_is_dropped(tmp_path):
    track = read_subtitles(_write(tmp_path / "a.ass", ASS))
    assert track.dialect == "ass" and track.title == "Demo" and track.timing_errors == []
    assert _cues(track) == [(Fraction(1, 4), Fraction(1, 2), ("Hello world", "second line")),
                            (Fraction(51, 100), Fraction(3, 4), ("At the top",)),
                            (Fraction(76, 100), Fraction(99, 100), ("red, top",))]   # the drawing: no cue
    one, two, three = track.cues
    hello, second = one.lines
    assert [(r.text, r.style.italic) for r in hello.runs] == [("Hello ", False), ("world", True)]
    assert [(r.text, r.style.bold) for r in second.runs] == [("second ", False), ("line", True)]
    # 54 px of a 1080-line script: 39.6 points of the 792-point screen; a black border (Outline 2)
    st = hello.runs[0].style
    assert st.size == pytest.approx(39.6) and st.effect == "border" and st.effect_colour == Colour(0, 0, 0)
    assert st.font is None and st.colour == Colour(255, 255, 255)
    # bottom (\an2): MarginV 54 of 1080 = 5 %, the first line stacked above the second
    assert (second.place.valign, second.place.vposition) == ("bottom", 5.0)
    assert hello.place.valign == "bottom" and hello.place.vposition > 5.0
    # the Sign style: top (alignment 8), MarginV 108 = 10 %, bold yellow
    p, st = two.lines[0].place, two.lines[0].runs[0].style
    assert (p.valign, p.vposition, p.halign) == ("top", 10.0, "center") and st.bold and st.colour == Colour(255, 255, 0)
    # \an8 overrides the style's bottom; \c&H0000FF& is red (BGR); \fad(100,50) in ms
    assert three.lines[0].place.valign == "top" and three.lines[0].runs[0].style.colour == Colour(255, 0, 0)
    assert (three.fade_up, three.fade_down) == (Fraction(1, 10), Fraction(1, 20))
    assert [c.line for c in track.cues] == [14, 15, 16]
    assert sorted(_kinds(track)) == ["drawings", "font names (the default font is used)", "karaoke",
                                     "positioning and animation"]
    w = "\n".join(track.warnings)
    assert "\\pos (line 15)" in w and "\\k (line 15)" in w and "\\p (line 17)" in w and ": Arial" in w


def test_ssa_v4_alignment_and_italic(tmp_path):
    track = read_subtitles(_write(tmp_path / "old.ssa", SSA, bom=False))
    assert track.dialect == "ssa"
    assert _cues(track) == [(1, Fraction(5, 2), ("italic at the top",)), (3, 4, ("bottom",))]
    top, bottom = (c.lines[0] for c in track.cues)
    assert top.runs[0].style.italic and top.place.valign == "top"          # SSA alignment 6: top centre
    assert top.place.vposition == pytest.approx(12.5)                      # MarginV 36 of the default 288
    assert bottom.place.valign == "bottom"                                 # {\a2}: SSA bottom centre
    assert top.runs[0].style.size == pytest.approx(55)                     # 20 px of 288 lines


def test_ass_bad_times(tmp_path):
    bad = ASS.replace("0:00:00.51,0:00:00.75", "0:00:00.75,0:00:00.51").replace("0:00:00.76,", "soon,")
    track = read_subtitles(_write(tmp_path / "bad.ass", bad))
    assert [c.line for c in track.cues] == [14] and len(track.timing_errors) == 2
    assert "line 15" in track.timing_errors[0] and "not after Start" in track.timing_errors[0]
    assert "line 16" in track.timing_errors[1] and "not times" in track.timing_errors[1]
    with pytest.raises(MediaError, match=r"bad\.ass: .*not after Start.*line 15.*\(and 1 more\)$"):
        prepare_subtitles(tmp_path / "bad.ass", frames=24, fps=24, title="t", language="en", font=FONT)


# ------------------------------------------------------------------ WebVTT

def test_webvtt_times_lines_runs_placement_and_what_is_dropped(tmp_path):
    track = read_subtitles(_write(tmp_path / "a.vtt", VTT))
    assert track.dialect == "webvtt" and track.timing_errors == []
    assert _cues(track) == [(Fraction(1, 4), Fraction(1, 2), ("Hello world & all", "second line")),
                            (Fraction(51, 100), Fraction(3, 4), ("At the top later",)),
                            (Fraction(76, 100), Fraction(99, 100), ("bottom line",))]
    one, two, three = track.cues
    assert [c.line for c in track.cues] == [11, 15, 18]
    hello, second = one.lines
    assert [(r.text, r.style.italic) for r in hello.runs] == [("Hello ", False), ("world", True), (" & all", False)]
    assert second.runs[1].style.bold and three.lines[0].runs[1].style.underline
    # no line: setting: as SRT, 8 % above the bottom, the lines stacked up
    assert (second.place.valign, second.place.vposition, hello.place.vposition) == ("bottom", 8.0, 14.5)
    # line:0 align:left: the top line, at the left; <c.yellow> a W3C colour class
    p = two.lines[0].place
    assert (p.valign, p.vposition, p.halign) == ("top", 8.0, "left")
    assert two.lines[0].runs[0].style.colour == Colour(255, 255, 0)
    assert (three.lines[0].place.valign, three.lines[0].place.vposition) == ("bottom", 8.0)   # line:-1
    assert sorted(_kinds(track)) == ["WebVTT STYLE and REGION blocks", "WebVTT cue settings", "karaoke timestamps"]
    assert any("position (line 15)" in w for w in track.warnings)


def test_webvtt_percent_lines_and_bad_cues(tmp_path):
    text = ("WEBVTT\n\n00:01.000 --> 00:02.000 line:10%\ntop\n\n00:03.000 --> 00:04.000 line:90%,end\nlow\n\n"
            "00:05.000 --> 00:04.000\nbackwards\n\n00:06.000 -> 00:07.000\nno arrow\n\n00:08.000 --> 00:61.000\nbad\n")
    track = read_subtitles(_write(tmp_path / "p.vtt", text, bom=False, crlf=False))
    assert _cues(track) == [(1, 2, ("top",)), (3, 4, ("low",))]
    assert [(c.lines[0].place.valign, c.lines[0].place.vposition) for c in track.cues] == [("top", 10), ("bottom", 10)]
    assert [re.search(r"line (\d+)", w).group(1) for w in track.timing_errors] == ["9", "15"]
    assert any("without a timing line" in w and "line 12" in w for w in track.warnings)


def test_kind_by_content_where_the_suffix_lies(tmp_path):
    assert read_subtitles(_write(tmp_path / "subs.txt", VTT)).dialect == "webvtt"
    assert read_subtitles(_write(tmp_path / "subs.srt", VTT, crlf=False)).dialect == "webvtt"
    assert read_subtitles(_write(tmp_path / "subs.xml", ASS)).dialect == "ass"
    assert read_subtitles(_write(tmp_path / "subs.vtt", ASS)).dialect == "ass"


# ------------------------------------------------------------------ bad files

def test_junk_and_unsupported_files_are_one_media_error(tmp_path):
    cases = {
        "junk.vtt": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", CorruptMedia, "NUL byte"),
        "junk.ass": (b"[Script Info]\n\x01\x02\x03", CorruptMedia, r"control character 0x01 on line 2"),
        "latin.vtt": ("WEBVTT\n\n00:01.000 --> 00:02.000\ncaf\xe9\n".encode("latin-1"), CorruptMedia, "not UTF-8"),
        "noheader.vtt": (b"00:01.000 --> 00:02.000\nhi\n", CorruptMedia, r"not 'WEBVTT' \(line 1\)"),
        "plain.ass": (b"Dialogue: 0,0:00:01.00,0:00:02.00,Default,,0,0,0,,hi\n", CorruptMedia, "no \\[Script Info\\]"),
        "badstyle.ass": (ASS.replace(",54,&H00FFFFFF", ",big,&H00FFFFFF").encode(), CorruptMedia, r"line 9\)$"),
        "order.ass": (ASS.replace("Layer, Start, End", "Layer, End, Start").encode(), UnsupportedMedia,
                      r"\[Events\] fields in an order .* \(line 13\)$"),
        "film.stl": (b"850STL25.01" + bytes(1013), UnsupportedMedia, "EBU STL .* not supported"),
        "film.txt": (b"850STL25.01" + b" " * 1013, UnsupportedMedia, "EBU STL .* not supported"),
        "huge.vtt": (b"WEBVTT\n\n" + b"x" * (8 << 20), UnsupportedMedia, "more than the 8388608 bytes"),
    }
    for name, (data, kind, words) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(kind) as caught:
            read_subtitles(tmp_path / name)
        message = str(caught.value)
        assert "\n" not in message and message.startswith(str(tmp_path / name)), (name, message)
        assert re.search(words, message), (name, message)


# ------------------------------------------------------------------ mastering

@needs_font
@pytest.mark.parametrize("name", ["a.ass", "old.ssa", "a.vtt"])
def test_prepare_subtitles_makes_a_document(tmp_path, name):
    path = _write(tmp_path / name, {"a.ass": ASS, "old.ssa": SSA, "a.vtt": VTT}[name])
    asset, warnings = prepare_subtitles(path, frames=120, fps=24, title="T", language="en", font=FONT)
    subtitle_schema_ok(asset.document)
    doc = asset.document.decode()
    assert asset.cues == len(read_subtitles(path).cues) and doc.count("<Subtitle ") == asset.cues
    if name == "a.ass":
        assert re.search(r'<Subtitle SpotNumber="1" TimeIn="00:00:00:06" TimeOut="00:00:00:12" '
                         r'FadeUpTime="00:00:00:00" FadeDownTime="00:00:00:00"><Text Valign="bottom" '
                         r'Vposition="[\d.]+" Halign="center" Hposition="0" Direction="ltr"><Font [^>]*>Hello </Font>'
                         r'<Font [^>]*Italic="yes"[^>]*>world</Font>', doc), doc
        assert 'Color="FFFF0000"' in doc and 'Valign="top" Vposition="10"' in doc
        assert any("karaoke dropped" in w for w in warnings)
    if name == "a.vtt":
        assert 'Weight="bold"' in doc and 'Color="FFFFFF00"' in doc and "Hello " in doc and "&amp; all" in doc


@pytest.mark.slow  # long: a master with ASS subtitles burnt into its timed text (3.5 s)
@needs_font
@needs_encoder
def test_master_with_ass_subtitles_reads_back_the_cues(tmp_path):
    """``cinegpu master --subtitles x.ass``: the DCP's subtitle track holds the cues, top and bottom,
    italic kept, timed to the frame (24 a second)."""
    (tmp_path / "in").mkdir()
    write_png16(tmp_path / "in" / "f0.png", demo_frame(0, 480, 270))
    r = cinegpu("master", tmp_path / "in", "-o", tmp_path / "dcp", "--title", "ass", "--frames", "24", "--quiet",
                "--backend", "cpu", "--subtitles", _write(tmp_path / "x.ass", ASS), "--subtitle-language", "en")
    assert r.returncode == 0, r.stderr
    assert "karaoke dropped" in r.stderr + r.stdout
    pkg = read_package(tmp_path / "dcp")
    subs = composition_subtitles(pkg.compositions[0], root=pkg.root)
    track = subs.reels[0].track
    assert subs.warnings == [] and track.dialect == "smpte"
    assert _cues(track) == [(Fraction(1, 4), Fraction(1, 2), ("Hello world", "second line")),
                            (Fraction(1, 2), Fraction(3, 4), ("At the top",)),
                            (Fraction(3, 4), 1, ("red, top",))]
    assert [c.lines[0].place.valign for c in track.cues] == ["bottom", "top", "top"]
    assert track.cues[0].lines[0].runs[1].style.italic and track.cues[2].fade_up == Fraction(1, 12)
