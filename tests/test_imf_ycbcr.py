"""IMF packages in Y'CbCr (ST 2067-21: 4:4:4 and 4:2:2, 10/12 bits): the Rec. 709 narrow-range
conversion and its co-sited 4:2:2 chroma, the codestream (Cb and Cr of half the width, XRsiz 2,
no component transform), the track file's CDCI descriptor (ffprobe, mediainfo, the CPL's
RegXML), the frames decoded by OpenJPEG as by us, and HTJ2K lossless round trips of the
Y'CbCr samples."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from lxml import etree

from cinegpu.decode import decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.media import open_source
from cinegpu.media.images.colour import rgb_to_ycbcr, ycbcr_levels
from cinegpu.jobs.demo import demo_frame
from cinegpu.player.cli import main

from test_imf_write import NS, _frames


def test_conversion_levels_and_colours():
    assert ycbcr_levels(10) == (64, 940, 897) and ycbcr_levels(12) == (256, 3760, 3585)
    img = np.array([[[1, 1, 1], [0, 0, 0], [1, 0, 0], [0, 0, 1]]], np.float32)
    y, cb, cr = rgb_to_ycbcr(img, 10)
    assert y.tolist() == [[940, 64, 250, 127]]            # BT.709: Y' of red 0.2126, blue 0.0722
    assert cb.tolist() == [[512, 512, 409, 960]]          # (B' - Y') / 1.8556
    assert cr.tolist() == [[512, 512, 960, 471]]          # (R' - Y') / 1.5748
    y12, _, _ = rgb_to_ycbcr(img, 12)
    assert y12[0, :2].tolist() == [3760, 256]


def test_422_chroma_is_cosited_and_filtered():
    img = np.zeros((2, 7, 3), np.float32)
    img[:, 2, 2] = 1.0                                     # a blue column at x = 2
    y, cb, cr = rgb_to_ycbcr(img, 10, "ycbcr422")
    assert y.shape == (2, 7) and cb.shape == cr.shape == (2, 4)    # ceil(7 / 2) columns
    full = rgb_to_ycbcr(img, 10, "ycbcr444")[1].astype(float) - 512
    half = cb.astype(float) - 512
    # chroma column k sits on luma column 2k: [1, 2, 1] / 4 around it
    assert half[0, 1] == pytest.approx(full[0, 2] / 2, abs=0.6)           # centred on x = 2
    assert half[0, 0] == pytest.approx(0, abs=0.6) and half[0, 2] == pytest.approx(0, abs=0.6)
    with pytest.raises(ValueError, match="sampling"):
        rgb_to_ycbcr(img, 10, "ycbcr420")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """3 inputs of 320x180 mastered into 6 frames at 24 fps, 10-bit Y'CbCr 4:2:2."""
    tmp = tmp_path_factory.mktemp("imfy")
    src = _frames(tmp / "in", 3)
    out = tmp / "IMP"
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", "--sampling", "ycbcr422",
               "--bits", "10", "--fps", "24", "--frames", "6", "--title", "ycbcr", "--quiet",
               "--workers", "2"])
    assert rc == 0
    return out


def _expected(n: int, sampling: str = "ycbcr422", bits: int = 10):
    return rgb_to_ycbcr(demo_frame(5 * n, 320, 180), bits, sampling)


def test_codestream_and_samples(package):
    track = open_source(next(package.glob("IMAGE_*.mxf")))
    data = track.frame(1)
    cs = parse_codestream(data)
    assert cs.siz.XRsiz == (1, 2, 2) and cs.siz.YRsiz == (1, 1, 1)
    assert [cs.siz.precision(c) for c in range(3)] == [10, 10, 10]
    assert cs.cod(None).mct == 0
    planes = decode(data)
    assert [p.shape for p in planes] == [(180, 320), (180, 160), (180, 160)]
    for got, want in zip(planes, _expected(1)):
        err = got.astype(float) - want
        assert 10 * np.log10(1023.0 ** 2 / max(np.mean(err * err), 1e-9)) > 40
    track.close()


def test_openjpeg_decodes_the_frames_as_we_do(package, tmp_path):
    """libopenjp2 (its components as decoded: opj_decompress would turn them into RGB as if
    they were full-range sYCC) gives our samples exactly."""
    from cinegpu.bench.decode_peers import openjpeg_components
    track = open_source(next(package.glob("IMAGE_*.mxf")))
    data = track.frame(2)
    track.close()
    (tmp_path / "f.j2c").write_bytes(data)
    theirs = openjpeg_components(tmp_path / "f.j2c")
    if theirs is None:
        pytest.skip("libopenjp2 not installed")
    ours = decode(data)
    assert [t.shape for t in theirs] == [o.shape for o in ours] == [(180, 320), (180, 160), (180, 160)]
    for t, o in zip(theirs, ours):
        assert np.array_equal(t, o.astype(np.int64))


def test_cpl_carries_a_cdci_descriptor(package):
    cpl = etree.parse(str(next(package.glob("CPL_*.xml")))).getroot()
    desc = cpl.find("c:EssenceDescriptorList/c:EssenceDescriptor/r0:CDCIDescriptor", NS)
    assert desc is not None
    get = lambda tag: desc.findtext(f"r1:{tag}", namespaces=NS)   # noqa: E731
    assert (get("ComponentDepth"), get("HorizontalSubsampling"), get("VerticalSubsampling"),
            get("ColorSiting"), get("BlackRefLevel"), get("WhiteRefLevel"), get("ColorRange")) == \
        ("10", "2", "1", "CoSiting", "64", "940", "897")
    assert get("CodingEquations").endswith("04010101.02020000")
    layout = [c.findtext("{http://www.smpte-ra.org/reg/2003/2012}Code")
              for c in desc.find("r1:SubDescriptors/r0:JPEG2000SubDescriptor/r1:J2CLayout", NS)]
    assert layout[:3] == ["CompLuma", "CompColorDifferenceU", "CompColorDifferenceV"]
    assert desc.find("r1:PixelLayout", NS) is None


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe not installed")
def test_ffprobe_and_ffmpeg_read_the_track_file(package, tmp_path):
    mxf = next(package.glob("IMAGE_*.mxf"))
    info = json.loads(subprocess.run(["ffprobe", "-v", "error", "-of", "json", "-show_streams", str(mxf)],
                                     capture_output=True, text=True, check=True).stdout)
    video = next(s for s in info["streams"] if s["codec_type"] == "video")
    assert (video["codec_name"], video["pix_fmt"], video["width"], video["height"]) == \
        ("jpeg2000", "yuv422p10le", 320, 180)
    assert (video.get("color_range"), video.get("color_space")) == ("tv", "bt709")
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(mxf), "-frames:v", "1", "-f", "rawvideo",
                          "-pix_fmt", "yuv422p10le", "-"], capture_output=True, check=True).stdout
    planes = np.frombuffer(raw, "<u2")
    y, cb, cr = (planes[:57600].reshape(180, 320), planes[57600:86400].reshape(180, 160),
                 planes[86400:].reshape(180, 160))
    track = open_source(mxf)
    ours = decode(track.frame(0))
    track.close()
    for theirs, mine in zip((y, cb, cr), ours):      # FFmpeg's own JPEG 2000 decoder
        assert np.abs(theirs.astype(int) - mine).max() <= 1


@pytest.mark.skipif(shutil.which("mediainfo") is None, reason="mediainfo not installed")
def test_mediainfo_says_yuv_422(package):
    mxf = next(package.glob("IMAGE_*.mxf"))
    out = subprocess.run(["mediainfo", str(mxf)], capture_output=True, text=True, check=True).stdout
    assert "YUV" in out and "4:2:2" in out and "BT.709" in out


def test_htj2k_lossless_444_round_trips_the_samples(tmp_path):
    src = _frames(tmp_path / "in", 1, 96, 54)
    out = tmp_path / "IMP"
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", "--codec", "htj2k",
               "--lossless", "--sampling", "ycbcr444", "--bits", "10", "--fps", "25",
               "--frames", "2", "--title", "ht", "--quiet"])
    assert rc == 0      # Y'CbCr 4:4:4 under HTJ2K: 8/10 bits at 25, 29.97, 30 fps (ST 2067-21:2023)
    track = open_source(next(out.glob("IMAGE_*.mxf")))
    planes = decode(track.frame(0))
    track.close()
    want = rgb_to_ycbcr(demo_frame(0, 96, 54), 10, "ycbcr444")
    assert all(np.array_equal(a, b) for a, b in zip(planes, want))


@pytest.mark.parametrize("extra, words", [
    (["--sampling", "ycbcr422"], "apply to --format imf"),           # a DCP
])
def test_sampling_needs_imf(tmp_path, capsys, extra, words):
    src = _frames(tmp_path / "in", 1, 64, 36)
    rc = main(["master", str(src), "-o", str(tmp_path / "out"), "--title", "t", "--quiet", *extra])
    assert rc == 2 and words in capsys.readouterr().err


def test_the_player_shows_ycbcr_as_rgb(package, tmp_path):
    """`cinegpu play` of the 4:2:2 package: the screenshot is the source R'G'B' again (the
    narrow-range BT.709 conversion undone, chroma brought back to full width)."""
    from cinegpu.media.images.png import read_png16
    shot = tmp_path / "s.png"
    assert main(["play", str(package), "--headless", "--threads", "--backend", "cpu",
                 "--screenshot", f"0:{shot}"]) == 0
    from cinegpu.player.picture import ycbcr_to_rgba16
    got = read_png16(shot)[..., :3].astype(float) / 65535
    src = demo_frame(0, 320, 180)
    # the source through 4:2:2 and back without coding: what the screen can show at best
    want = ycbcr_to_rgba16(rgb_to_ycbcr(src, 10, "ycbcr422"), [10] * 3)[..., :3] / 65535
    err = np.abs(got - want)
    assert err.mean() < 0.005 and np.percentile(err, 99) < 0.03, (err.mean(), np.percentile(err, 99))
    assert np.abs(got - src).mean() < 0.01


def test_ycbcr_to_rgba16_undoes_the_conversion():
    from cinegpu.player.picture import ycbcr_to_rgba16
    rng = np.random.default_rng(3)
    # colour that changes down the rows only (the chroma filter keeps it), brightness across
    img = 0.45 * rng.random((6, 1, 3)) + 0.5 * np.linspace(0, 1, 9)[None, :, None]
    planes = rgb_to_ycbcr(img, 12, "ycbcr422")
    back = ycbcr_to_rgba16(planes, [12, 12, 12])[..., :3].astype(float) / 65535
    assert np.abs(back - img).max() < 0.002                    # 12-bit rounding only


def test_ycbcr_444_is_told_by_the_descriptor_and_shown_as_rgb(tmp_path):
    """4:4:4 Y'CbCr has three planes of one size, as R'G'B' has: the player goes by the track's
    CDCI descriptor (`Source.ycbcr`), not by the shapes."""
    from cinegpu.media.images.png import read_png16
    src = _frames(tmp_path / "in", 1, 160, 90)
    out = tmp_path / "IMP"
    assert main(["master", str(src), "-o", str(out), "--format", "imf", "--sampling", "ycbcr444",
                 "--bits", "10", "--fps", "24", "--frames", "2", "--title", "y444", "--quiet"]) == 0
    media = open_source(out)
    assert media.ycbcr
    media.close()
    from conftest import DCP_SAMPLES
    if DCP_SAMPLES.is_dir():       # an R'G'B' IMF track and a DCP's X'Y'Z' one are not Y'CbCr
        for name in ("photon-imf-htj2k-1080p", "libdcp-dcp_test1-smpte-2k"):
            other = open_source(DCP_SAMPLES / name)
            assert not other.ycbcr
            other.close()
    shot = tmp_path / "s.png"
    assert main(["play", str(out), "--headless", "--threads", "--backend", "cpu",
                 "--screenshot", f"0:{shot}"]) == 0
    got = read_png16(shot)[..., :3].astype(float) / 65535
    assert np.abs(got - demo_frame(0, 160, 90)).mean() < 0.01
