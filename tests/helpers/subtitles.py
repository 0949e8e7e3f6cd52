"""Subtitles for the tests: Interop and SMPTE ST 428-7 documents (:data:`INTEROP`, a format string;
:data:`SMPTE`), an Interop file with its font beside it (:func:`interop_file`), an RGBA PNG
(:func:`rgba_png`), the font the player draws with (:data:`FONT`, :data:`needs_font`), and the
checks of a subtitle document by ClairMeta's ST 428-7 schema and of an SMPTE DCP with subtitles
by ClairMeta (with asdcplib's tools where installed, as in CI; else ``asdcp-unwrap`` stood in
for by ``tests/tools`` and the three checks that need ``asdcp-info`` bypassed).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cinegpu.player.subtitles import default_font_path
from conftest import HAVE_ASDCPLIB, TOOLS

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


def rgba_png(w: int = 40, h: int = 20, rgba=(255, 0, 0, 255)) -> bytes:
    from PIL import Image
    out = io.BytesIO()
    Image.new("RGBA", (w, h), rgba).save(out, "PNG")
    return out.getvalue()


def interop_file(folder: Path, *, t_in="00:00:01:000", t_out="00:00:02:000", text="Hello", more="",
             font="font.ttf", size=42, name="sub.xml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if FONT and font == "font.ttf":
        shutil.copyfile(FONT, folder / "font.ttf")
    p = folder / name
    p.write_text(INTEROP.format(t_in=t_in, t_out=t_out, text=text, more=more, font=font, size=size))
    return p


def subtitle_schema_ok(document: bytes) -> None:
    from lxml import etree
    try:
        import clairmeta
    except ImportError:
        return
    xsd = Path(clairmeta.__file__).parent / "xsd" / "DCDMSubtitle-2010.xsd"
    schema = etree.XMLSchema(etree.parse(str(xsd)))
    schema.assertValid(etree.fromstring(document))


def clairmeta_subtitles_ok(root: Path, tmp_path: Path) -> str:
    try:
        import clairmeta  # noqa: F401  (probe: is ClairMeta installed)
    except ImportError:
        return ""
    profile = tmp_path / "profile.json"
    from clairmeta.profile import get_default_profile
    p = get_default_profile()
    env = dict(os.environ)
    if not HAVE_ASDCPLIB:
        # these read asdcp-info's probe of the MXF (KeyError 'Probe' without asdcplib), and
        # asdcp-unwrap is stood in for (tests/tools); with asdcplib (CI) nothing is bypassed
        p["bypass"] = ["check_subtitle_cpl_uuid", "check_subtitle_cpl_xml", "check_subtitle_cpl_duplicated_uuid"]
        env["PATH"] = f"{TOOLS}:{os.environ['PATH']}"
    profile.write_text(json.dumps(p))
    run = subprocess.run([sys.executable, "-m", "clairmeta.cli", "check", "-type", "dcp", "-profile",
                          str(profile), str(root)], capture_output=True, text=True, timeout=300, env=env)
    report = run.stdout + run.stderr
    assert "Check succeeded" in report and "Error(s):" not in report, report
    assert not HAVE_ASDCPLIB or "Missing dependency" not in report, report
    return report
