"""Subtitles: Interop and SMPTE ST 428-7 XML and SRT read into cues, bad input warned and dropped,
cues found by frame across reels, and drawn over the picture (Pillow, then headless GL).

No sample package carries subtitles, so the documents, fonts (DejaVu Sans, copied) and PNGs
are made here.
"""

from __future__ import annotations

import io
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.package.read import read_package
from cinegpu.media.subtitles.documents import composition_subtitles, parse_time, read_subtitles
from cinegpu.media.subtitles.track import Colour, CompositionSubtitles
from cinegpu.player.subtitles import SubtitleRenderer, default_font_path

FONT = default_font_path()
needs_font = pytest.mark.skipif(FONT is None or not Path(FONT).is_file(),
                                reason="no DejaVu Sans file found through fontconfig")

INTEROP = """<?xml version="1.0" encoding="UTF-8"?>
<DCSubtitle Version="1.0">
  <SubtitleID>b6c3a3a6-1c9d-4b5e-9f43-1f0e1f9a2c11</SubtitleID>
  <MovieTitle>Test</MovieTitle>
  <ReelNumber>1</ReelNumber>
  <Language>English</Language>
  <LoadFont Id="F1" URI="{font}"/>
  <Font Id="F1" Color="FFFFFFFF" Effect="border" EffectColor="FF000000" Size="{size}" Italic="no">
    <Subtitle SpotNumber="1" TimeIn="{t_in}" TimeOut="{t_out}" FadeUpTime="0" FadeDownTime="0">
      <Text VAlign="bottom" VPosition="10" HAlign="center" HPosition="0" Direction="horizontal">{text}</Text>
    </Subtitle>
    {more}
  </Font>
</DCSubtitle>
"""

SMPTE = """<?xml version="1.0" encoding="UTF-8"?>
<SubtitleReel xmlns="http://www.smpte-ra.org/schemas/428-7/2010/DCST">
  <Id>urn:uuid:0c9a4a9e-5d1c-4e0b-a2b1-3f1a6d2e7c01</Id>
  <ContentTitleText>Test</ContentTitleText>
  <ReelNumber>2</ReelNumber>
  <Language>fr</Language>
  <EditRate>24 1</EditRate>
  <TimeCodeRate>24</TimeCodeRate>
  <StartTime>00:00:01:00</StartTime>
  <LoadFont ID="theFont">urn:uuid:7f1e0c52-9d3b-4e8e-8a4f-2c5d6e7f8a90</LoadFont>
  <SubtitleList>
    <Font ID="theFont" Size="40" Weight="bold" Color="FF00FF00" Effect="shadow" EffectColor="FF101010">
      <Subtitle SpotNumber="1" TimeIn="00:00:02:12" TimeOut="00:00:04:00" FadeUpTime="00:00:00:06" FadeDownTime="00:00:00:12">
        <Text Valign="top" Vposition="15" Halign="left" Hposition="5" Direction="ltr">Bonjour <Font Italic="yes">à tous</Font></Text>
        <Text Valign="top" Vposition="22" Halign="right" Hposition="5">deux</Text>
      </Subtitle>
      <Subtitle SpotNumber="2" TimeIn="00:00:05:00" TimeOut="00:00:06:00">
        <Image Valign="center" Vposition="0" Halign="center" Hposition="0">urn:uuid:1a2b3c4d-0000-4000-8000-000000000001</Image>
      </Subtitle>
      <Subtitle SpotNumber="3" TimeIn="00:00:05:30" TimeOut="00:00:06:00"><Text Vposition="1">bad frames</Text></Subtitle>
    </Font>
  </SubtitleList>
</SubtitleReel>
"""


def _png(w: int = 40, h: int = 20, rgba=(255, 0, 0, 255)) -> bytes:
    from PIL import Image
    out = io.BytesIO()
    Image.new("RGBA", (w, h), rgba).save(out, "PNG")
    return out.getvalue()


def _interop(folder: Path, *, t_in="00:00:01:000", t_out="00:00:02:000", text="Hello", more="",
             font="font.ttf", size=42, name="sub.xml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if FONT and font == "font.ttf":
        shutil.copyfile(FONT, folder / "font.ttf")
    p = folder / name
    p.write_text(INTEROP.format(t_in=t_in, t_out=t_out, text=text, more=more, font=font, size=size))
    return p


# ------------------------------------------------------------------ parsing

def test_timecodes():
    assert parse_time("00:00:01:125", 250) == Fraction(3, 2)         # ticks of 4 ms
    assert parse_time("01:02:03:12", 24) == 3723 + Fraction(1, 2)
    assert parse_time("00:00:01.5", 250, decimal=True) == Fraction(3, 2)
    for bad in ("00:00:01:250", "0:60:00:00", "00:00:01", "aa:bb:cc:dd", "00:00:01.5"):
        with pytest.raises(ValueError):
            parse_time(bad, 250)


@needs_font
def test_interop_document(tmp_path):
    more = """<Subtitle SpotNumber="2" TimeIn="00:00:03:000" TimeOut="00:00:04:100" FadeUpTime="25"
                FadeDownTime="00:00:00:050"><Font Italic="yes" Color="80FF0000" Effect="shadow"><Text VAlign="top"
                VPosition="20" HAlign="left" HPosition="12.5">a <Font Size="60">big</Font> word</Text></Font>
                <Image VAlign="bottom" VPosition="5" HAlign="right" HPosition="3">pic.png</Image></Subtitle>"""
    (tmp_path / "pic.png").write_bytes(_png())
    track = read_subtitles(_interop(tmp_path, more=more))
    assert track.dialect == "interop" and track.language == "English" and track.reel_number == 1
    assert track.id == "b6c3a3a6-1c9d-4b5e-9f43-1f0e1f9a2c11" and track.warnings == []
    assert track.fonts["F1"] == Path(FONT).read_bytes()
    one, two = track.cues
    assert (one.time_in, one.time_out, one.fade_up, one.fade_down) == (1, 2, 0, 0)
    line = one.lines[0]
    assert line.text == "Hello" and line.place.valign == "bottom" and line.place.vposition == 10
    st = line.runs[0].style
    assert (st.font, st.size, st.colour, st.effect, st.effect_colour) == ("F1", 42, Colour(255, 255, 255),
                                                                           "border", Colour(0, 0, 0))
    assert two.time_in == 3 and two.time_out == Fraction(4) + Fraction(100, 250)
    assert two.fade_up == Fraction(1, 10) and two.fade_down == Fraction(1, 5)
    runs = two.lines[0].runs
    assert [r.text for r in runs] == ["a ", "big", " word"] and runs[1].style.size == 60
    assert runs[0].style.italic and runs[0].style.colour == Colour(255, 0, 0, 128) and runs[0].style.effect == "shadow"
    p = two.lines[0].place
    assert (p.valign, p.vposition, p.halign, p.hposition) == ("top", 20, "left", 12.5)
    assert two.images[0].png == (tmp_path / "pic.png").read_bytes() and two.images[0].place.halign == "right"
    # fades: opacity ramps up over 0.1 s, down over the last 0.2 s
    assert two.alpha(Fraction(3)) == 0 and two.alpha(Fraction(305, 100)) == pytest.approx(0.5)
    assert two.alpha(Fraction(35, 10)) == 1 and two.alpha(Fraction(43, 10)) == pytest.approx(0.5)
    assert two.alpha(Fraction(44, 10)) == 0


def test_smpte_document(tmp_path):
    if FONT:
        shutil.copyfile(FONT, tmp_path / "7f1e0c52-9d3b-4e8e-8a4f-2c5d6e7f8a90.ttf")
    (tmp_path / "1a2b3c4d-0000-4000-8000-000000000001.png").write_bytes(_png())
    p = tmp_path / "smpte.xml"
    p.write_text(SMPTE)
    track = read_subtitles(p)
    assert track.dialect == "smpte" and track.time_code_rate == 24 and track.edit_rate == 24
    assert track.start_time == 1 and track.reel_number == 2 and track.language == "fr"
    assert [c.spot for c in track.cues] == [1, 2]                 # spot 3: 30 frames at 24 a second
    assert any("line 20" in w and "not below the rate" in w for w in track.warnings)
    one, two = track.cues
    assert one.time_in == Fraction(3, 2) and one.time_out == 3              # StartTime subtracted
    assert one.fade_up == Fraction(1, 4) and one.fade_down == Fraction(1, 2)
    assert [ln.text for ln in one.lines] == ["Bonjour à tous", "deux"]
    st = one.lines[0].runs[0].style
    assert st.bold and st.effect == "shadow" and st.colour == Colour(0, 255, 0) and st.size == 40
    assert one.lines[0].runs[1].style.italic
    assert (one.lines[1].place.valign, one.lines[1].place.halign) == ("top", "right")
    assert two.images[0].png.startswith(b"\x89PNG") and two.lines == ()
    if FONT:
        assert track.fonts["theFont"] == Path(FONT).read_bytes()


def test_srt(tmp_path):
    p = tmp_path / "a.srt"
    p.write_text("1\n00:00:01,000 --> 00:00:02,500\n<i>first</i>\nsecond\n\n2\n00:00:03,000 --> 00:00:02,000\n"
                 "backwards\n\n3\n00:00:04,000 --> 00:00:05,000\nlast\n")
    track = read_subtitles(p)
    assert [(c.time_in, c.time_out) for c in track.cues] == [(1, Fraction(5, 2)), (4, 5)]
    first = track.cues[0].lines
    assert [ln.text for ln in first] == ["first", "second"] and first[0].runs[0].style.italic
    assert first[0].place.vposition > first[1].place.vposition          # stacked up from the bottom
    assert len(track.warnings) == 1 and "line 6" in track.warnings[0]


# ------------------------------------------------------------------ bad input

def test_bad_cues_are_dropped_with_a_warning_and_the_line(tmp_path):
    more = """<Subtitle SpotNumber="2" TimeIn="00:00:05:000" TimeOut="00:00:04:000"><Text>back</Text></Subtitle>
    <Subtitle SpotNumber="3" TimeIn="00:00:05:300" TimeOut="00:00:06:000"><Text>ticks</Text></Subtitle>
    <Subtitle SpotNumber="4" TimeIn="soon" TimeOut="00:00:06:000"><Text>words</Text></Subtitle>
    <Subtitle SpotNumber="5" TimeOut="00:00:06:000"><Text>none</Text></Subtitle>
    <Subtitle SpotNumber="6" TimeIn="00:00:07:000" TimeOut="00:00:08:000"><Text VPosition="x" VAlign="up">ok</Text></Subtitle>"""
    track = read_subtitles(_interop(tmp_path, more=more, font="nofont.ttf"))
    assert [c.spot for c in track.cues] == [1, 6]
    w = "\n".join(track.warnings)
    assert "font 'F1' (nofont.ttf) is missing: the default font is used" in w and track.fonts == {"F1": None}
    for spot, why in ((2, "not after TimeIn"), (3, "not below the rate"), (4, "not a timecode"), (5, "no TimeIn")):
        assert f"<Subtitle> {spot} dropped" in w and why in w
    assert "line 12" in w and "vposition is not a number" in w and "valign 'up'" in w


def test_bad_documents_raise_media_errors(tmp_path):
    p = tmp_path / "broken.xml"
    p.write_text("<DCSubtitle><Subtitle></DCSubtitle>")
    with pytest.raises(CorruptMedia, match="line 1"):
        read_subtitles(p)
    p.write_text("<Other/>")
    with pytest.raises(UnsupportedMedia, match="not a subtitle document"):
        read_subtitles(p)
    p.write_text(SMPTE.replace("<TimeCodeRate>24", "<TimeCodeRate>0"))
    with pytest.raises(CorruptMedia, match="TimeCodeRate"):
        read_subtitles(p)
    mxf = tmp_path / "sub.mxf"
    mxf.write_bytes(bytes.fromhex("060e2b34020501010d01020101020400") + bytes(100))
    with pytest.raises(MediaError):              # not a whole MXF: no timed-text track file
        read_subtitles(mxf)
    with pytest.raises(MediaError, match="missing"):
        read_subtitles(tmp_path / "none.xml")


def test_a_font_or_image_outside_the_package_is_refused(tmp_path):
    more = '<Subtitle TimeIn="00:00:03:000" TimeOut="00:00:04:000"><Image>../../etc/passwd</Image></Subtitle>'
    track = read_subtitles(_interop(tmp_path / "pkg", font="/etc/passwd", more=more))
    w = "\n".join(track.warnings)
    assert "font 'F1' not loaded" in w and "refused" in w and "<Image> '../../etc/passwd' dropped" in w
    assert track.fonts == {"F1": None} and len(track.cues) == 1


# ------------------------------------------------------------------ a composition's timeline

ASSETMAP = """<AssetMap xmlns="http://www.digicine.com/PROTO-ASDCP-AM-20040311#"><AssetList>{}</AssetList></AssetMap>"""
AM_ASSET = "<Asset><Id>urn:uuid:{}</Id>{}<ChunkList><Chunk><Path>{}</Path></Chunk></ChunkList></Asset>"
CPL = """<CompositionPlaylist xmlns="http://www.digicine.com/PROTO-ASDCP-CPL-20040511#">
<Id>urn:uuid:00000000-0000-4000-8000-0000000000c1</Id><ContentTitleText>T</ContentTitleText>
<ReelList>{}</ReelList></CompositionPlaylist>"""
REEL = """<Reel><Id>urn:uuid:00000000-0000-4000-8000-00000000010{k}</Id><AssetList>
<MainPicture><Id>urn:uuid:00000000-0000-4000-8000-00000000020{k}</Id><EditRate>24 1</EditRate>
<IntrinsicDuration>{frames}</IntrinsicDuration><EntryPoint>0</EntryPoint><Duration>{frames}</Duration></MainPicture>
<MainSubtitle><Id>urn:uuid:00000000-0000-4000-8000-00000000030{k}</Id><EditRate>24 1</EditRate>
<IntrinsicDuration>{frames}</IntrinsicDuration><EntryPoint>{entry}</EntryPoint><Duration>{sub}</Duration></MainSubtitle>
</AssetList></Reel>"""


def _package(folder: Path, reels: list[tuple[int, int, int]], missing: int | None = None):
    """An Interop package of reels (picture frames, subtitle entry point, subtitle duration);
    each reel's subtitle is 'reel K' from 1 s to 2 s; no picture track files (not needed)."""
    folder.mkdir()
    assets = [AM_ASSET.format("00000000-0000-4000-8000-0000000000a1", "<PackingList>true</PackingList>", "pkl.xml"),
              AM_ASSET.format("00000000-0000-4000-8000-0000000000c1", "", "cpl.xml")]
    for k in range(len(reels)):
        assets.append(AM_ASSET.format(f"00000000-0000-4000-8000-00000000030{k}", "", f"sub{k}.xml"))
        if k != missing:
            _interop(folder, text=f"reel {k}", name=f"sub{k}.xml")
    (folder / "ASSETMAP.xml").write_text(ASSETMAP.format("".join(assets)))
    (folder / "pkl.xml").write_text(
        '<PackingList xmlns="http://www.digicine.com/PROTO-ASDCP-PKL-20040311#"><Id>urn:uuid:'
        '00000000-0000-4000-8000-0000000000a1</Id><AssetList><Asset><Id>urn:uuid:00000000-0000-4000-8000-'
        '0000000000c1</Id><Type>text/xml;asdcpKind=CPL</Type></Asset></AssetList></PackingList>')
    (folder / "cpl.xml").write_text(CPL.format("".join(REEL.format(k=k, frames=f, entry=e, sub=d)
                                                       for k, (f, e, d) in enumerate(reels))))
    return read_package(folder)


def test_cues_by_frame_across_reels_and_entry_points(tmp_path):
    pkg = _package(tmp_path / "dcp", [(72, 0, 72), (96, 12, 84), (48, 0, 20)])
    comp = pkg.compositions[0]
    assert [a.entry_point for r in comp.reels for a in r.of_kind("subtitle")] == [0, 12, 0]
    subs = composition_subtitles(comp, root=pkg.root)
    assert subs.warnings == []

    def shown(n):
        return [c.lines[0].text for c, _a in subs.at(n)]
    assert shown(23) == [] and shown(24) == ["reel 0"] and shown(47) == ["reel 0"] and shown(48) == []
    # reel 1 starts at frame 72 and skips its first 12 frames (0.5 s): 1 s in the track is frame 84
    assert shown(83) == [] and shown(84) == ["reel 1"] and shown(107) == ["reel 1"] and shown(108) == []
    # reel 2 starts at 168; its subtitle lasts 20 frames, so 1 s (frame 192) is past it
    assert shown(168 + 24) == [] and shown(10_000) == [] and shown(-1) == []


def test_a_missing_subtitle_file_is_a_warning(tmp_path):
    pkg = _package(tmp_path / "dcp", [(72, 0, 72), (72, 0, 72)], missing=0)
    subs = composition_subtitles(pkg.compositions[0], root=pkg.root)
    assert len(subs.warnings) == 1 and "subtitle file is missing" in subs.warnings[0]
    assert [c.lines[0].text for c, _ in subs.at(72 + 24)] == ["reel 1"] and subs.at(24) == []


# ------------------------------------------------------------------ drawing (Pillow)

def _drawn(tmp_path, more="", **kw):
    track = read_subtitles(_interop(tmp_path, more=more, **kw))
    subs = CompositionSubtitles.single(track, 200, 24)
    return subs, SubtitleRenderer(384, 216, subs.fonts())


@needs_font
def test_renderer_places_text_and_effects(tmp_path):
    subs, r = _drawn(tmp_path, size=84)
    img = r.compose(subs.at(30))
    a = img[..., 3]
    rows, cols = np.nonzero(a)
    # 84 pt on 216 lines: about 23 px; baseline 10% above the bottom, centred
    assert 216 * 0.9 - 30 < rows.min() and rows.max() < 216 * 0.9 + 10
    assert abs((cols.min() + cols.max()) / 2 - 192) < 4
    white = (img[..., :3].min(-1) > 250) & (a > 250)
    black_border = (img[..., :3].max(-1) < 5) & (a > 250)
    assert white.sum() > 50 and black_border.sum() > 20
    assert r.compose(subs.at(10)).max() == 0


@needs_font
def test_renderer_alignment_fades_and_images(tmp_path):
    (tmp_path / "pic.png").write_bytes(_png(40, 20))
    more = """<Subtitle TimeIn="00:00:03:000" TimeOut="00:00:04:000" FadeUpTime="0" FadeDownTime="0">
      <Text VAlign="top" VPosition="10" HAlign="left" HPosition="5">L</Text>
      <Text VAlign="top" VPosition="10" HAlign="right" HPosition="5">R</Text></Subtitle>
      <Subtitle TimeIn="00:00:05:000" TimeOut="00:00:06:000" FadeUpTime="125" FadeDownTime="0">
      <Image VAlign="center" VPosition="0" HAlign="center" HPosition="0">pic.png</Image></Subtitle>"""
    subs, r = _drawn(tmp_path, more=more, size=84)
    a = r.compose(subs.at(3 * 24 + 1))[..., 3]
    rows, cols = np.nonzero(a)
    assert rows.min() >= 21 and rows.max() < 216 / 2
    left, right = cols[cols < 192], cols[cols >= 192]
    assert left.size and right.size and left.min() >= 19 and right.max() <= 384 - 19
    img = r.compose(subs.at(5 * 24))                            # the fade up starts: nothing yet
    assert img.max() == 0
    img = r.compose(subs.at(5 * 24 + 13))                       # past the 0.5 s fade: full
    box = np.nonzero(img[..., 3])
    # a 40x20 image at 216 lines is scaled by 0.2: 8x4, centred
    assert (box[0].max() - box[0].min() + 1, box[1].max() - box[1].min() + 1) == (4, 8)
    assert (img[box][:, :3] == [255, 0, 0]).all()
    (cue, alpha), = subs.at(5 * 24 + 6)                         # a quarter of a second: half
    assert alpha == pytest.approx(0.5) and r.compose([(cue, alpha)])[..., 0].max() == 128


# ------------------------------------------------------------------ headless play

def _screens(tmp_path, subtitles, frames=(0, 30)):
    from cinegpu.player import ArraySource
    from cinegpu.player.commands.play import play
    from cinegpu.player.settings import PlaySettings
    from cinegpu.media.images.png import read_png16

    pics = [np.full((216, 384, 4), 3000, np.uint16)]
    shots = {n: tmp_path / f"s{n}.png" for n in frames}
    summary = play(None, PlaySettings(headless=True, screenshots=shots, preroll=1, subtitles=subtitles),
                   source=ArraySource(pics, frame_count=48, edit_rate=24))
    assert summary.screenshots == len(frames)
    return {n: read_png16(p) for n, p in shots.items()}


@pytest.mark.slow
@needs_font
def test_screenshots_include_the_subtitles(gl, tmp_path):
    track = read_subtitles(_interop(tmp_path, size=84))
    subs = CompositionSubtitles.single(track, 48, 24)
    shots = _screens(tmp_path, subs)
    assert (shots[0] == 3000).all()                             # before the cue: the picture alone
    inside = shots[30]
    bright = inside.min(-1) > 60000
    rows, cols = np.nonzero(bright)
    assert bright.sum() > 50 and rows.min() > 216 * 0.7 and abs((cols.min() + cols.max()) / 2 - 192) < 4
    assert (inside[:100] == 3000).all()                         # the top of the picture untouched
    off = _screens(tmp_path, False)
    assert (off[30] == 3000).all()


@needs_font
@pytest.mark.skipif(shutil.which("opj_compress") is None, reason="opj_compress makes the frames")
def test_cli_subtitle_file_and_subtitles_off(gl, tmp_path):
    from cinegpu.media.images.png import read_png16
    from cinegpu.player.cli import main
    from cinegpu.player.media_default import write_ppm

    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(3):
        write_ppm(tmp_path / "f.ppm", np.full((108, 192, 3), 20, np.int64), 255)
        subprocess.run(["opj_compress", "-i", str(tmp_path / "f.ppm"), "-o", str(folder / f"f{k}.j2c"), "-n", "3"],
                       check=True, capture_output=True)
    sub = _interop(tmp_path / "subs", t_in="00:00:00:000", t_out="00:00:10:000", size=84)
    for state, lit in (("on", True), ("off", False)):
        shot = tmp_path / f"{state}.png"
        assert main(["play", str(folder), "--headless", "--backend", "cpu", "--subtitle-file", str(sub),
                     "--subtitles", state, "--threads", "--workers", "1", "--screenshot", f"1:{shot}"]) == 0
        img = read_png16(shot)
        assert ((img.min(-1) > 60000).sum() > 20) == lit, state


@needs_font
def test_vertical_text_stacks_its_characters(tmp_path):
    """Direction ttb: the characters one under another, the first at the top (btt: at the
    bottom); an Interop bottom-aligned column ends at its VPosition like a line's baseline."""
    more = """<Subtitle TimeIn="00:00:03:000" TimeOut="00:00:04:000" FadeUpTime="0" FadeDownTime="0">
      <Text VAlign="top" VPosition="5" HAlign="center" HPosition="0" Direction="ttb">I—W</Text></Subtitle>
      <Subtitle TimeIn="00:00:05:000" TimeOut="00:00:06:000" FadeUpTime="0" FadeDownTime="0">
      <Text VAlign="top" VPosition="5" HAlign="center" HPosition="0" Direction="btt">I—W</Text></Subtitle>
      <Subtitle TimeIn="00:00:07:000" TimeOut="00:00:08:000" FadeUpTime="0" FadeDownTime="0">
      <Text VAlign="top" VPosition="5" HAlign="center" HPosition="0">I—W</Text></Subtitle>"""
    subs, r = _drawn(tmp_path, more=more, size=42)
    (cue, _), = subs.at(3 * 24)
    assert cue.lines[0].place.direction == "ttb"

    def ink(n):
        a = r.compose(subs.at(n))[..., 3] > 128
        rows, cols = np.nonzero(a)
        return a, rows, cols

    ttb, rows, cols = ink(3 * 24)
    assert rows.max() - rows.min() > 2.5 * (cols.max() - cols.min())       # a column
    horiz, hr, hc = ink(7 * 24)
    assert hc.max() - hc.min() > 2 * (hr.max() - hr.min())                  # a line
    # "I" (narrow) on top, "W" (wide) at the bottom for ttb; the other way round for btt
    top, bottom = ttb[rows.min():rows.min() + 8], ttb[rows.max() - 7:rows.max() + 1]
    assert np.ptp(np.nonzero(top)[1]) < np.ptp(np.nonzero(bottom)[1])
    btt, brows, _ = ink(5 * 24)
    top, bottom = btt[brows.min():brows.min() + 8], btt[brows.max() - 7:brows.max() + 1]
    assert np.ptp(np.nonzero(top)[1]) > np.ptp(np.nonzero(bottom)[1])
    assert rows.min() >= 216 * 0.05 - 1                                     # placed from the top
