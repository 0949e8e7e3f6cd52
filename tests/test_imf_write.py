"""IMF packages (``cinegpu master --format imf``): the IMF profile facts, the OP-1a picture
track file read by mediainfo, ffprobe and our reader, the CPL / PKL / ASSETMAP, playback, and
the mistakes refused before any frame is encoded.

ClairMeta (1.6.3, the newest release) has no IMP check (``-type`` takes dcp, dcdm, dsm and
scan only), so the package documents are checked here against the shape of the photon
samples instead."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from cinegpu.decode import decode
from cinegpu.decode.codestream import imf
from cinegpu.media import open_source
from cinegpu.jobs.demo import demo_frame
from cinegpu.media.mxf.imf_write import coding_label
from cinegpu.player.cli import main

CLI = [sys.executable, "-m", "cinegpu.player.cli"]
NS = {"c": "http://www.smpte-ra.org/schemas/2067-3/2016",
      "cc": "http://www.smpte-ra.org/schemas/2067-2/2016",
      "r0": "http://www.smpte-ra.org/reg/395/2014/13/1/aaf",
      "r1": "http://www.smpte-ra.org/reg/335/2012",
      "pkl": "http://www.smpte-ra.org/schemas/2067-2/2016/PKL",
      "am": "http://www.smpte-ra.org/schemas/429-9/2007/AM"}


def _frames(folder: Path, n: int, width: int = 320, height: int = 180) -> Path:
    from cinegpu.media.images.png import write_png16
    folder.mkdir()
    for i in range(n):
        write_png16(folder / f"f{i}.png",
                    np.rint(demo_frame(5 * i, width, height) * 65535).astype(np.uint16))
    return folder


# -- facts -------------------------------------------------------------------------------------
def test_imf_levels_and_coding_labels():
    # photon's 4K sample: Rsiz 0x0516 (4K, main level 6, sub level 1) -> ...04010202.03010310
    assert coding_label(0x0516).hex() == "060e2b340401010d0401020203010310"
    assert imf.coding_label_byte(0x0411) == 0x03          # 2K M1S1 (photon's table)
    assert imf.coding_label_byte(0x0424) == 0x0A          # M4S2
    assert imf.rsiz(imf.IMF_2K, 1920, 1080, 24, 200e6) == 0x0411
    assert imf.rsiz(imf.IMF_4K, 3840, 2160, 60, 300e6) == 0x0525    # 498 Ms/s: M5
    assert imf.profile_for(1920, 1080) is imf.IMF_2K
    assert imf.profile_for(4096, 2160) is imf.IMF_4K
    with pytest.raises(ValueError):
        imf.profile_for(4097, 2160)
    assert imf.levels_for(imf.IMF_2K, 1920, 1080) == 5
    assert imf.levels_for(imf.IMF_2K, 320, 180) == 4


# -- a package, end to end ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """3 inputs of 320x180 mastered into 6 frames at 25 fps, 12-bit."""
    tmp = tmp_path_factory.mktemp("imf")
    src = _frames(tmp / "in", 3)
    out = tmp / "IMP"
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", "--codec", "j2k",
               "--fps", "25", "--frames", "6", "--title", "cinegpu IMF test", "--quiet",
               "--workers", "2"])
    assert rc == 0
    return out


def test_package_documents(package):
    names = sorted(p.name.split("_")[0] for p in package.iterdir())
    assert names == ["ASSETMAP.xml", "CPL", "IMAGE", "PKL"]
    cpl = etree.parse(str(next(package.glob("CPL_*.xml")))).getroot()
    mxf = next(package.glob("IMAGE_*.mxf"))
    assert cpl.findtext("c:EditRate", namespaces=NS) == "25 1"
    # 12-bit R'G'B': the 2021 identification (the 2016 edition allows 8/10 bits of Rec. 709),
    # with the ST 2067-2:2020 core namespace
    ns = {**NS, "cc": "http://www.smpte-ra.org/ns/2067-2/2020"}
    assert cpl.findtext("c:ExtensionProperties/cc:ApplicationIdentification",
                        namespaces=ns) == "http://www.smpte-ra.org/ns/2067-21/2021"
    res = cpl.find("c:SegmentList/c:Segment/c:SequenceList/cc:MainImageSequence/"
                   "c:ResourceList/c:Resource", ns)
    assert res.findtext("c:TrackFileId", namespaces=NS).endswith(mxf.stem.split("_")[1])
    assert (res.findtext("c:IntrinsicDuration", namespaces=NS),
            res.findtext("c:SourceDuration", namespaces=NS)) == ("6", "6")
    desc = cpl.find("c:EssenceDescriptorList/c:EssenceDescriptor", NS)
    assert desc.findtext("c:Id", namespaces=NS) == res.findtext("c:SourceEncoding", namespaces=NS)
    rgba = desc.find("r0:RGBADescriptor", NS)
    assert rgba.findtext("r1:StoredWidth", namespaces=NS) == "320"
    assert rgba.findtext("r1:PictureCompression", namespaces=NS).endswith("04010202.03010203")
    j2k = rgba.find("r1:SubDescriptors/r0:JPEG2000SubDescriptor", NS)
    assert int(j2k.findtext("r1:Rsiz", namespaces=NS)) == 0x0411
    pkl = etree.parse(str(next(package.glob("PKL_*.xml")))).getroot()
    assert len(pkl.findall("pkl:AssetList/pkl:Asset", NS)) == 2
    am = etree.parse(str(package / "ASSETMAP.xml")).getroot()
    assert len(am.findall("am:AssetList/am:Asset", NS)) == 3


def test_track_file_read_by_our_reader_and_decoded(package):
    media = open_source(package)
    assert (media.frame_count, media.width, media.height, media.edit_rate) == (6, 320, 180, 25)
    assert media.frame(0) == media.frame(3) != media.frame(1)
    track = open_source(next(package.glob("IMAGE_*.mxf")))
    for n in (0, 2):
        data = track.frame(n)
        assert data == media.frame(n)
        planes = decode(data)
        ref = np.rint(demo_frame(5 * n, 320, 180) * 4095)
        for c in range(3):    # the encoded R'G'B' (12 bits, no colour conversion)
            assert np.abs(planes[c].astype(int) - ref[:, :, c]).mean() < 4
    track.close()
    media.close()


@pytest.mark.skipif(shutil.which("mediainfo") is None, reason="mediainfo not installed")
def test_mediainfo_reads_the_track_file(package):
    run = subprocess.run(["mediainfo", "--Output=JSON", str(next(package.glob("IMAGE_*.mxf")))],
                         capture_output=True, text=True, timeout=60)
    tracks = json.loads(run.stdout)["media"]["track"]
    general = next(t for t in tracks if t["@type"] == "General")
    video = next(t for t in tracks if t["@type"] == "Video")
    assert general["Format"] == "MXF" and general["Format_Profile"] == "OP-1a"
    assert (video["Format"], video["Width"], video["Height"]) == ("JPEG 2000", "320", "180")
    # JSON splits "IMFS2k@ML1SL1" (the text output) into profile and level
    assert video["Format_Profile"] == "IMFS2k" and video.get("Format_Level") == "ML1SL1"
    assert float(video["FrameRate"]) == 25 and video["BitDepth"] == "12"
    assert video["colour_primaries"] == "BT.709" and video["ColorSpace"] == "RGB"


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe not installed")
def test_ffprobe_reads_the_track_file(package):
    run = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-count_frames", "-of", "json",
                          str(next(package.glob("IMAGE_*.mxf")))],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    s = json.loads(run.stdout)["streams"][0]
    assert (s["codec_name"], s["width"], s["height"]) == ("jpeg2000", 320, 180)
    assert s["r_frame_rate"] == "25/1" and s["nb_read_frames"] == "6"


@pytest.mark.slow
def test_play_headless(package, tmp_path):
    play = subprocess.run(CLI + ["play", str(package), "--headless", "--frames", "6"],
                          capture_output=True, text=True, timeout=300)
    assert play.returncode == 0, play.stderr[-2000:]
    assert "played" in play.stdout and "errors 0" in play.stdout


# -- mistakes ---------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, words", [
    (["--fps", "48"], "48 fps is not an IMF rate"),
    (["--colorspace", "xyz"], "only rec709"),
    (["--subtitles", "x.srt"], "subtitles in IMF packages are not supported yet"),
    (["--lossless"], "--lossless is written for --codec htj2k only"),
    (["--codec", "htj2k", "--lossless", "--bitrate", "50"], "exclude each other"),
])
def test_mistakes_exit_2_before_any_frame(tmp_path, capsys, monkeypatch, extra, words):
    from cinegpu.jobs import frame_encode
    monkeypatch.setattr(frame_encode.FrameEncoders, "encode",
                        lambda *a, **k: pytest.fail("a frame was encoded"))
    src = _frames(tmp_path / "in", 1, 64, 36)
    out = tmp_path / "out"
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", "--title", "t", "--quiet",
               *extra])
    assert rc == 2 and words in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == [src]


def test_over_4k_exits_2_before_any_frame(tmp_path, capsys, monkeypatch):
    from cinegpu.jobs import frame_encode
    from cinegpu.media.images.png import write_png16
    monkeypatch.setattr(frame_encode.FrameEncoders, "encode",
                        lambda *a, **k: pytest.fail("a frame was encoded"))
    src = tmp_path / "in"
    src.mkdir()
    write_png16(src / "big.png", np.zeros((8, 4100, 3), np.uint16))
    out = tmp_path / "out"
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", "--title", "t", "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "4100x8" in err and "4096x3112" in err
    assert not out.exists()
