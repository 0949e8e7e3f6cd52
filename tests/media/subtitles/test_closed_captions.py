"""Closed captions (issue 52, item 2): ``master --captions`` writes them as their own timed-text
track files, named in the CPL as ST 429-12 ClosedCaption; the reader lists them, and the
player draws them over the subtitles with ``--captions on`` only."""

from __future__ import annotations

import numpy as np
import pytest
from lxml import etree

from cinegpu.jobs.demo import demo_frame
from cinegpu.media import open_source
from cinegpu.media.images.png import read_png16
from cinegpu.media.package.dcp_write import NS_CAPTION, NS_CPL
from cinegpu.media.package.read import read_package
from cinegpu.media.subtitles.track import LayeredSubtitles
from cinegpu.player.subtitles import subtitles_for
from helpers.cli import cinegpu
from helpers.mastering import clairmeta_ok, needs_encoder, write_png16


def _text(cue) -> str:
    return " ".join(line.text for line in cue.lines)


@pytest.fixture(scope="module")
def captioned(tmp_path_factory):
    """A one-reel DCP of 48 frames with subtitles (0.5-1.5 s) and closed captions (1-1.9 s)."""
    tmp = tmp_path_factory.mktemp("cc")
    (tmp / "in").mkdir()
    write_png16(tmp / "in" / "f0.png", demo_frame(0, 480, 270))
    (tmp / "s.srt").write_text("1\n00:00:00,500 --> 00:00:01,500\nBonsoir\n")
    (tmp / "c.srt").write_text("1\n00:00:01,000 --> 00:00:01,900\n[DOOR CREAKS]\n")
    r = cinegpu("master", str(tmp / "in"), "-o", str(tmp / "dcp"), "--title", "cc", "--frames", "48",
                "--quiet", "--backend", "cpu", "--subtitles", str(tmp / "s.srt"), "--subtitle-language", "fr",
                "--captions", str(tmp / "c.srt"), "--caption-language", "en")
    if r.returncode != 0:
        pytest.fail(r.stderr)
    assert "subtitles (" in r.stdout and "closed captions (" in r.stdout, r.stdout
    return tmp / "dcp"


@needs_encoder
@pytest.mark.slow  # long: masters a DCP with captions (5 s; issue 50: the quick pass under 150 s)
def test_captions_are_their_own_track_named_closedcaption(captioned):
    (cpl,) = captioned.glob("cpl_*.xml")
    reel = etree.parse(str(cpl)).getroot().find(f"{{{NS_CPL}}}ReelList/{{{NS_CPL}}}Reel/{{{NS_CPL}}}AssetList")
    cc = reel.find(f"{{{NS_CAPTION}}}ClosedCaption")
    assert cc is not None and cc.findtext(f"{{{NS_CPL}}}Language") == "en"
    comp = read_package(captioned).compositions[0]
    kinds = [a.kind for a in comp.reels[0].assets]
    assert kinds.count("caption") == 1 and kinds.count("subtitle") == 1
    (caption,) = comp.reels[0].of_kind("caption")
    assert caption.path.name.startswith("ccap_") and caption.duration == 48
    with open_source(captioned) as media:
        both = subtitles_for(media, 48, 24, captions=True)
        subs = subtitles_for(media, 48, 24)
        caps = subtitles_for(media, 48, 24, on=False, captions=True)
        texts = {n: [_text(c) for c, _ in both.at(n)] for n in (6, 18, 30, 40, 46)}
    assert isinstance(both, LayeredSubtitles)
    assert texts == {6: [], 18: ["Bonsoir"], 30: ["Bonsoir", "[DOOR CREAKS]"], 40: ["[DOOR CREAKS]"], 46: []}
    assert [_text(c) for c, _ in subs.at(30)] == ["Bonsoir"] and [_text(c) for c, _ in caps.at(30)] == ["[DOOR CREAKS]"]


@pytest.mark.slow  # long: ClairMeta's whole check and two headless plays
@needs_encoder
def test_clairmeta_checks_them_and_play_draws_them_on_request(captioned, tmp_path, gl):
    report = clairmeta_ok(captioned)
    assert "ccap_" in report or not report          # ClairMeta looked at the caption track
    shots = {}
    for captions in ("off", "on"):
        shots[captions] = tmp_path / f"{captions}.png"
        r = cinegpu("play", str(captioned), "--headless", "--audio", "null", "--backend", "cpu",
                    "--full-resolution", "--frames", "44", "--fps", "12", "--subtitles", "off",
                    "--captions", captions, "--screenshot", f"42:{shots[captions]}")
        assert r.returncode == 0 and "errors 0" in r.stdout, r.stdout + r.stderr
    off, on = (read_png16(shots[k]).astype(np.int64) for k in ("off", "on"))
    changed = np.abs(on - off).max(axis=-1) > 4096
    rows = np.nonzero(changed.any(axis=1))[0]
    assert changed.sum() > 500 and rows.min() > 1080 // 2, (changed.sum(), rows[:3])  # text, low on the picture
