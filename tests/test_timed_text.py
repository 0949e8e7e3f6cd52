"""SMPTE timed text: the ST 429-5 track file written and read back, and ``cinegpu master
--subtitles`` (SRT and Interop XML in, an SMPTE DCP with MainSubtitle out) checked by ClairMeta,
read back by the package reader and drawn by the player; bad subtitle input exits 2 before any
frame is encoded.

ClairMeta reads an SMPTE subtitle track only through asdcplib's asdcp-unwrap and asdcp-info,
which are not installed here: ``tests/tools/asdcp-unwrap`` stands in for the first (through
cinegpu's reader, so ClairMeta checks the document, fonts and timing, not the MXF layout), and
the three checks that need asdcp-info's probe of the MXF are bypassed; the document is validated
against ClairMeta's copy of the ST 428-7 schema here instead.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media.mxf.timed_text import read_timed_text
from cinegpu.media.mxf.timed_text_write import FONT_MIME, PNG_MIME, Resource, write_timed_text
from cinegpu.media.subtitles.write import NS_DCST, prepare_subtitles
from cinegpu.media.subtitles.documents import read_subtitles
from cinegpu.player.cli import main
from test_master import _write_png16, needs_encoder
from test_subtitles import FONT, INTEROP, SMPTE, _png, needs_font

TOOLS = Path(__file__).parent / "tools"
SRT = """1
00:00:00,250 --> 00:00:00,750
Hello <i>world</i>
second line

2
00:00:00,800 --> 00:00:03,000
Past the end
"""


def _cues(track):
    return [(c.time_in, c.time_out, tuple(ln.text for ln in c.lines), tuple(i.png for i in c.images))
            for c in track.cues]


def _schema_ok(document: bytes) -> None:
    from lxml import etree
    try:
        import clairmeta
    except ImportError:
        return
    xsd = Path(clairmeta.__file__).parent / "xsd" / "DCDMSubtitle-2010.xsd"
    schema = etree.XMLSchema(etree.parse(str(xsd)))
    schema.assertValid(etree.fromstring(document))


# -- the track file --------------------------------------------------------------------------------
@needs_font
def test_track_file_round_trip_with_a_font_and_a_png(tmp_path):
    """An SMPTE document with a font and a PNG resource, as files beside it and inside the MXF:
    the same cues, and the resources' bytes back unchanged."""
    font_id, png_id = "7f1e0c52-9d3b-4e8e-8a4f-2c5d6e7f8a90", "1a2b3c4d-0000-4000-8000-000000000001"
    doc = SMPTE.encode()
    font, png = Path(FONT).read_bytes(), _png()
    (tmp_path / "sub.xml").write_bytes(doc)
    (tmp_path / f"{font_id}.ttf").write_bytes(font)
    (tmp_path / f"{png_id}.png").write_bytes(png)
    beside = read_subtitles(tmp_path / "sub.xml")
    rid = uuid.UUID("0c9a4a9e-5d1c-4e0b-a2b1-3f1a6d2e7c01")
    out = write_timed_text(tmp_path / "sub.mxf", doc,
                           [Resource(uuid.UUID(font_id), FONT_MIME, font), Resource(uuid.UUID(png_id), PNG_MIME, png)],
                           edit_rate=24, duration=240, resource_id=rid, namespace=NS_DCST, language="fr")
    tt = read_timed_text(out.path)
    assert tt.document == doc and tt.resource_id == str(rid) and tt.language == "fr"
    assert (tt.edit_rate, tt.duration, tt.namespace) == (24, 240, NS_DCST)
    assert tt.resources == {font_id: (FONT_MIME, font), png_id: (PNG_MIME, png)}
    inside = read_subtitles(out.path)
    assert _cues(inside) == _cues(beside) and len(inside.cues) == 2 and inside.cues[1].images[0].png == png
    assert inside.fonts == {"theFont": font}
    assert [w.split(": ", 1)[1] for w in inside.warnings] == [w.split(": ", 1)[1] for w in beside.warnings]
    _probe(out.path)


def _probe(path: Path) -> None:
    """What mediainfo and ffprobe say of a timed-text track file (24 fps, 10 s)."""
    if shutil.which("mediainfo"):
        info = json.loads(subprocess.run(["mediainfo", "--Output=JSON", str(path)], capture_output=True,
                                         text=True, timeout=60).stdout)
        text = next(t for t in info["media"]["track"] if t["@type"] == "Text")
        assert (text["Format"], float(text["Duration"]), float(text["FrameRate"])) == ("Timed Text", 10.0, 24.0)
    if shutil.which("ffprobe"):
        # ffmpeg does not decode ST 429-5 timed text: one stream of an unknown codec, 10 s long
        probe = json.loads(subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)],
                                          capture_output=True, text=True, timeout=60).stdout)["streams"]
        assert len(probe) == 1 and probe[0].get("codec_name", "unknown") == "unknown" and float(probe[0]["duration"]) == 10.0


@needs_font
def test_the_smpte_document_follows_st_428_7(tmp_path):
    (tmp_path / "s.srt").write_text(SRT)
    asset, warnings = prepare_subtitles(tmp_path / "s.srt", frames=24, fps=24, title="T", language="de",
                                        font=FONT)
    _schema_ok(asset.document)
    text = asset.document.decode()
    assert re.search(r'<Subtitle SpotNumber="1" TimeIn="00:00:00:06" TimeOut="00:00:00:18"', text)
    assert "<EditRate>24 1</EditRate><TimeCodeRate>24</TimeCodeRate><StartTime>00:00:00:00</StartTime>" in text
    assert f'<LoadFont ID="Font1">urn:uuid:{asset.resources[0].id}</LoadFont>' in text
    font = asset.resources[0].data   # the font cut to the characters shown: no size warning
    assert font[:4] == Path(FONT).read_bytes()[:4] and len(font) < 64 << 10 and asset.language == "de"
    assert any("cut at 1.000 s" in w for w in warnings) and not any("KiB" in w for w in warnings)
    assert asset.cues == 2 and asset.duration == 24


# -- mistakes ----------------------------------------------------------------------------------------
class _NoEncoding:
    def __init__(self, *a, **k):
        raise AssertionError("a frame was about to be encoded")


def _still(tmp_path: Path) -> Path:
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    _write_png16(src / "f.png", np.full((36, 64, 3), 0.3, np.float32))
    return src


@needs_font
def test_subtitle_mistakes_exit_2_before_encoding(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("cinegpu.jobs.master_job.FrameEncoders", _NoEncoding)
    src = _still(tmp_path)
    (tmp_path / "bad_time.srt").write_text("1\n00:00:02,000 --> 00:00:01,000\nbackwards\n")
    (tmp_path / "bad.xml").write_text("<DCSubtitle><Subtitle></DCSubtitle>")
    (tmp_path / "ok.srt").write_text(SRT)
    (tmp_path / "late.srt").write_text("1\n00:00:05,000 --> 00:00:06,000\nafter the end\n")
    interop = tmp_path / "x" / "bad_tc.xml"
    interop.parent.mkdir()
    interop.write_text(INTEROP.format(t_in="00:00:01:000", t_out="00:00:00:200", text="t", more="",
                                      font="none.ttf", size=42))
    cases = {
        "TimeOut before TimeIn": (["--subtitles", str(tmp_path / "bad_time.srt")], "end not after start"),
        "Interop TimeOut": (["--subtitles", str(interop)], "TimeOut 00:00:00:200 is not after TimeIn"),
        "malformed XML": (["--subtitles", str(tmp_path / "bad.xml")], "malformed XML"),
        "missing file": (["--subtitles", str(tmp_path / "none.srt")], "subtitle file is missing"),
        "missing font": (["--subtitles", str(tmp_path / "ok.srt"), "--subtitle-font",
                          str(tmp_path / "none.ttf")], "subtitle font file is missing"),
        "not a font": (["--subtitles", str(tmp_path / "ok.srt"), "--subtitle-font",
                        str(tmp_path / "ok.srt")], "not a TrueType"),
        "language": (["--subtitles", str(tmp_path / "ok.srt"), "--subtitle-language", "English"],
                     "not an RFC 5646 tag"),
        "nothing shown": (["--subtitles", str(tmp_path / "late.srt")], "no subtitle to show"),
        "language alone": (["--subtitle-language", "fr"], "need --subtitles"),
    }
    for name, (args, words) in cases.items():
        rc = main(["master", str(src), "-o", str(tmp_path / "out"), "--title", "t", "--quiet", *args])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1, (name, err)
        assert re.search(words, err), (name, err)
        assert not (tmp_path / "out").exists() and not any(tmp_path.glob(".out*")), name


# -- master, check, read back, play --------------------------------------------------------------------
def _clairmeta_ok(root: Path, tmp_path: Path) -> str:
    try:
        import clairmeta  # noqa: F401
    except ImportError:
        return ""
    profile = tmp_path / "profile.json"
    from clairmeta.profile import get_default_profile
    p = get_default_profile()
    # these read asdcp-info's probe of the MXF (KeyError 'Probe' without asdcplib)
    p["bypass"] = ["check_subtitle_cpl_uuid", "check_subtitle_cpl_xml", "check_subtitle_cpl_duplicated_uuid"]
    profile.write_text(json.dumps(p))
    env = {**os.environ, "PATH": f"{TOOLS}:{os.environ['PATH']}"}
    run = subprocess.run([sys.executable, "-m", "clairmeta.cli", "check", "-type", "dcp", "-profile",
                          str(profile), str(root)], capture_output=True, text=True, timeout=300, env=env)
    report = run.stdout + run.stderr
    assert "Check succeeded" in report and "Error(s):" not in report, report
    return report


def _master_and_check(tmp_path: Path, capsys, subtitles: Path, expect: list[tuple[str, ...]],
                      font: Path | None = None) -> None:
    """Master a still with ``subtitles`` (``font``: --subtitle-font, default none: DejaVu Sans
    found by the mastering code), then check the track file, the CPL, ClairMeta, our reader
    (the embedded font cut to the characters shown) and a screenshot."""
    from cinegpu.media.package.read import read_package
    from cinegpu.media.images.png import read_png16
    from cinegpu.media.subtitles.documents import composition_subtitles

    out = tmp_path / "dcp"
    rc = main(["master", str(_still(tmp_path)), "-o", str(out), "--title", "Subs_TST-1_F_EN-EN_2K_CGP_20260101_CGP_SMPTE_OV",
               "--quiet", "--subtitles", str(subtitles), "--subtitle-language", "en",
               *(["--subtitle-font", str(font)] if font else [])])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    (sub,) = out.glob("sub_*.mxf")
    cpl = next(out.glob("cpl_*.xml")).read_text()
    sid = sub.stem[len("sub_"):]
    assert re.search(rf"<MainSubtitle>\s*<Id>urn:uuid:{sid}</Id>\s*<EditRate>24 1</EditRate>\s*"
                     r"<IntrinsicDuration>24</IntrinsicDuration>\s*<EntryPoint>0</EntryPoint>\s*"
                     r"<Duration>24</Duration>\s*<Hash>[^<]+</Hash>\s*<Language>en</Language>", cpl)
    assert sid in next(out.glob("pkl_*.xml")).read_text() and sid in (out / "ASSETMAP.xml").read_text()
    _schema_ok(read_timed_text(sub).document)
    _clairmeta_ok(out, tmp_path)
    pkg = read_package(out)
    subs = composition_subtitles(pkg.compositions[0], root=pkg.root)
    assert subs.warnings == []
    track = subs.reels[0].track
    assert [tuple(ln.text for ln in c.lines) for c in track.cues] == expect
    assert all(c.time_out <= 1 for c in track.cues)
    from fontTools.ttLib import TTFont
    source = Path(font) if font else Path(FONT)
    embedded = track.fonts["Font1"]
    cmap = TTFont(io.BytesIO(embedded)).getBestCmap()
    assert {ord(ch) for lines in expect for ln in lines for ch in ln if ch != " "} <= set(cmap)
    assert len(embedded) < min(source.stat().st_size, 640 << 10) and len(cmap) < 40
    frame = next(n for n in range(24) if subs.at(n))
    shot = tmp_path / "shot.png"
    assert main(["play", str(out), "--headless", "--backend", "cpu", "--threads", "--workers", "1",
                 "--screenshot", f"{frame}:{shot}"]) == 0
    img = read_png16(shot)
    bright = img.min(-1) > 60000
    rows, _cols = np.nonzero(bright)
    assert bright.sum() > 50 and rows.min() > img.shape[0] * 0.5, bright.sum()


@pytest.mark.slow
@needs_font
@needs_encoder
def test_master_with_srt_subtitles(tmp_path, capsys, gl):
    srt = tmp_path / "s.srt"
    srt.write_text(SRT)
    _master_and_check(tmp_path, capsys, srt, [("Hello world", "second line"), ("Past the end",)])


@pytest.mark.slow
@needs_font
@needs_encoder
def test_master_with_interop_subtitles(tmp_path, capsys, gl):
    from test_subtitles import _interop
    xml = _interop(tmp_path / "subs", t_in="00:00:00:025", t_out="00:00:00:225", text="Bonjour", size=60)
    _master_and_check(tmp_path, capsys, xml, [("Bonjour",)],
                      font=Path(FONT).with_name("DejaVuSansMono.ttf"))
