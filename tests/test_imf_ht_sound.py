"""IMF packages with HTJ2K pictures and sound (``cinegpu master --format imf --codec htj2k
--audio``): the HTJ2K codestream and track file descriptor as the photon HTJ2K sample has
them, lossless frames decoded exactly by our decoder and the peers (OpenJPH, Grok, OpenJPEG),
the ST 2067-2 audio track file read by mediainfo and ffprobe with the source samples bit for
bit, the CPL's MainAudioSequence, and the sound mistakes refused before any frame is
encoded."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from cinegpu.decode import decode
from cinegpu.decode.codestream import imf
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.media import open_source
from cinegpu.jobs.demo import demo_frame
from cinegpu.media.mxf.imf_write import HTJ2K_CODING, coding_label
from cinegpu.player.cli import main

from test_imf_write import _frames
from test_master_sound import _extract, _tones, _wav

NS = {"cpl": "http://www.smpte-ra.org/schemas/2067-3/2016",
      "cc": "http://www.smpte-ra.org/ns/2067-2/2020",
      "r0": "http://www.smpte-ra.org/reg/395/2014/13/1/aaf",
      "r1": "http://www.smpte-ra.org/reg/335/2012",
      "r2": "http://www.smpte-ra.org/reg/2003/2012"}
PHOTON_HT = Path("/work/shared/dcp-samples/photon-imf-htj2k-1080p")
FRAMES, RATE = 6, 48000
SAMPLES = FRAMES * RATE // 25


def _mediainfo(path: Path, kind: str) -> dict:
    run = subprocess.run(["mediainfo", "--Output=JSON", str(path)], capture_output=True,
                         text=True, timeout=60)
    return next(t for t in json.loads(run.stdout)["media"]["track"] if t["@type"] == kind)


def _master(tmp: Path, *extra: str) -> Path:
    out = tmp / "IMP"
    rc = main(["master", str(tmp / "in"), "-o", str(out), "--format", "imf", "--codec",
               "htj2k", "--fps", "25", "--frames", str(FRAMES), "--title", "HT", "--quiet",
               "--workers", "2", *extra])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def lossless(tmp_path_factory):
    """3 inputs of 320x180 into 6 lossless HTJ2K frames at 25 fps, with 5.1 sound a little
    longer than the picture (cut)."""
    tmp = tmp_path_factory.mktemp("imfht")
    _frames(tmp / "in", 3)
    samples = _tones(SAMPLES + 300, 6, seed=3)
    _wav(tmp / "s.wav", samples)
    return _master(tmp, "--lossless", "--audio", str(tmp / "s.wav"), "--audio-language",
                   "en"), samples


# -- facts -------------------------------------------------------------------------------------
def test_ht_coding_label_and_rsiz():
    assert coding_label(imf.HT_RSIZ) == HTJ2K_CODING
    assert HTJ2K_CODING.hex() == "060e2b340401010d0401020203010801"     # photon's label


@pytest.mark.skipif(not PHOTON_HT.is_dir(), reason="photon HTJ2K sample not present")
def test_our_header_matches_photons_geometry(lossless):
    """SIZ/COD of our lossy HTJ2K frames against the photon HTJ2K sample's: Rsiz 0x4000,
    one layer, MCT, 32x32 code-blocks with the HT style, the IMF precincts."""
    theirs = open_source(next(PHOTON_HT.glob("VIDEO_*.mxf")))
    ours = open_source(next(lossless[0].glob("IMAGE_*.mxf")))
    a, b = parse_codestream(theirs.frame(0), main_only=True), \
        parse_codestream(ours.frame(0), main_only=True)
    assert a.siz.Rsiz == b.siz.Rsiz == imf.HT_RSIZ
    from cinegpu.decode.codestream import markers as M
    cod_a, cod_b = a.segment_body(M.COD), b.segment_body(M.COD)
    # Scod, layers, MCT | progression: CPRL there, RPCL here (ST 2067-21:2023 Annex I
    # prefers it) | levels differ (5 at 1080p, 4 at 320x180), then xcb, ycb, style 0x40;
    # the transform: 9/7 there, 5/3 here (lossless)
    assert cod_a[0] == cod_b[0] and cod_a[2:5] == cod_b[2:5] and cod_b[1] == 2
    assert cod_a[6:9] == cod_b[6:9] == bytes([3, 3, 0x40])
    assert cod_b[9] == 1 and cod_b[10:] == bytes([0x77] + [0x88] * cod_b[5])
    assert a.segment_body(M.CAP)[:4] == b.segment_body(M.CAP)[:4] == bytes.fromhex("00020000")
    theirs.close()
    ours.close()


# -- the lossless package ----------------------------------------------------------------------
def test_lossless_frames_decode_exactly(lossless):
    media = open_source(lossless[0])
    assert (media.frame_count, media.width, media.height, media.edit_rate) == (6, 320, 180, 25)
    for n in (0, 1):
        planes = decode(media.frame(n))
        ref = _input(lossless[0], n)
        for c in range(3):
            assert np.array_equal(planes[c].astype(int), ref[:, :, c])
    media.close()


PEERS = (("ojph_expand", "-i", "-o", ".ppm"), ("grk_decompress", "-i", "-o", ".ppm"),
         ("opj_decompress", "-i", "-o", ".ppm"))


@pytest.mark.slow
@pytest.mark.parametrize("tool, i, o, ext", PEERS)
def test_peers_decode_lossless_frames_exactly(lossless, tmp_path, tool, i, o, ext):
    """Frame 1's codestream as our reader returns it, decoded by each peer: the input's
    12-bit R'G'B' exactly."""
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} not installed")
    media = open_source(lossless[0])
    (tmp_path / "f.j2c").write_bytes(media.frame(1))
    media.close()
    out = tmp_path / f"f{ext}"
    run = subprocess.run([tool, i, str(tmp_path / "f.j2c"), o, str(out)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-1000:]
    assert np.array_equal(_read_ppm16(out), _input(lossless[0], 1))


def _input(package: Path, n: int) -> np.ndarray:
    """Input frame ``n`` (of 3) as the encoder took it: 12-bit R'G'B' integers."""
    from cinegpu.media.images.frames import read_image
    rgb = read_image(package.parent / "in" / f"f{n % 3}.png").astype(np.float64)
    return np.rint(rgb.clip(0, 1) * 4095).astype(int)


def _read_ppm16(path: Path) -> np.ndarray:
    """A binary 16-bit PPM (P6), comments allowed in the header."""
    data = path.read_bytes()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[pos + 1:], ">u2").reshape(h, w, 3).astype(int)


def test_picture_descriptor_as_photon(lossless):
    cpl = etree.parse(str(next(lossless[0].glob("CPL_*.xml"))))
    rgba = cpl.find(".//r0:RGBADescriptor", NS)
    assert rgba.findtext("r1:PictureCompression", namespaces=NS) == \
        "urn:smpte:ul:060e2b34.0401010d.04010202.03010801"
    j2k = rgba.find(".//r0:JPEG2000SubDescriptor", NS)
    assert j2k.findtext("r1:Rsiz", namespaces=NS) == "16384"
    caps = j2k.find("r1:J2KExtendedCapabilities", NS)
    assert caps.findtext("r2:Pcap", namespaces=NS) == "131072"
    assert len(caps.findall("r2:Ccapi/r2:UInt16", NS)) == 1
    assert cpl.findtext(".//cc:ApplicationIdentification", namespaces=NS) == \
        "http://www.smpte-ra.org/ns/2067-21/2021"


def test_cpl_main_audio_sequence(lossless):
    root = lossless[0]
    cpl = etree.parse(str(next(root.glob("CPL_*.xml"))))
    audio = cpl.find(".//cc:MainAudioSequence/cpl:ResourceList/cpl:Resource", NS)
    image = cpl.find(".//cc:MainImageSequence/cpl:ResourceList/cpl:Resource", NS)
    assert audio.findtext("cpl:EditRate", namespaces=NS) == "48000 1"
    assert audio.findtext("cpl:SourceDuration", namespaces=NS) == str(SAMPLES)
    assert image.findtext("cpl:SourceDuration", namespaces=NS) == str(FRAMES)
    wave = cpl.find(".//r0:WAVEPCMDescriptor", NS)
    ids = {e.findtext("cpl:Id", namespaces=NS): e for e in cpl.findall(".//cpl:EssenceDescriptor", NS)}
    assert ids[audio.findtext("cpl:SourceEncoding", namespaces=NS)].find("r0:WAVEPCMDescriptor", NS) is not None
    assert wave.findtext("r1:ChannelCount", namespaces=NS) == "6"
    assert wave.findtext("r1:ChannelAssignment", namespaces=NS) == \
        "urn:smpte:ul:060e2b34.0401010d.04020210.04010000"
    group = wave.find(".//r0:SoundfieldGroupLabelSubDescriptor", NS)
    assert group.findtext("r1:MCATagSymbol", namespaces=NS) == "sg51"
    assert group.findtext("r1:RFC5646SpokenLanguage", namespaces=NS) == "en"
    assert len(wave.findall(".//r0:AudioChannelLabelSubDescriptor", NS)) == 6
    audio_id = audio.findtext("cpl:TrackFileId", namespaces=NS)[9:]
    for doc in ("PKL_*.xml", "ASSETMAP.xml"):
        assert audio_id in next(root.glob(doc)).read_text()


@pytest.mark.skipif(shutil.which("mediainfo") is None, reason="mediainfo not installed")
def test_mediainfo_reads_both_track_files(lossless):
    video = _mediainfo(next(lossless[0].glob("IMAGE_*.mxf")), "Video")
    assert video["Format"] == "JPEG 2000" and video["Format_Profile"] == "4000"
    assert video["CodecID"].endswith("0401020203010801")
    audio = _mediainfo(next(lossless[0].glob("AUDIO_*.mxf")), "Audio")
    assert (audio["Format"], audio["Channels"], audio["SamplingRate"], audio["BitDepth"]) == \
        ("PCM", "6", "48000", "24")
    assert audio["Format_Settings_Wrapping"].startswith("Clip")
    assert float(audio["Duration"]) == pytest.approx(FRAMES / 25)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
def test_ffmpeg_reads_the_samples_bit_for_bit(lossless):
    root, samples = lossless
    mxf = next(root.glob("AUDIO_*.mxf"))
    run = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(mxf)],
                         capture_output=True, text=True, timeout=60)
    s = json.loads(run.stdout)["streams"][0]
    assert (s["codec_name"], s["channels"], s["sample_rate"], s["duration_ts"]) == \
        ("pcm_s24le", 6, "48000", SAMPLES)
    assert np.array_equal(_extract(mxf, 6), samples[:SAMPLES])


# -- lossy under --bitrate -------------------------------------------------------------------
@pytest.mark.slow
def test_lossy_under_bitrate(tmp_path):
    _frames(tmp_path / "in", 2)
    root = _master(tmp_path, "--bitrate", "4")                       # 20000 bytes a frame
    media = open_source(root)
    for n in range(media.frame_count):
        data = media.frame(n)
        assert len(data) <= 4_000_000 // 8 // 25
        h = parse_codestream(data, main_only=True)
        assert h.siz.Rsiz == imf.HT_RSIZ
        planes = decode(data)
        ref = np.rint(demo_frame(5 * (n % 2), 320, 180).clip(0, 1) * 4095)
        assert np.abs(planes[0].astype(int) - ref[:, :, 0]).mean() < 40
    media.close()


# -- mistakes ---------------------------------------------------------------------------------
def _refused(tmp_path, capsys, monkeypatch, *extra) -> str:
    from cinegpu.jobs import frame_encode
    monkeypatch.setattr(frame_encode.FrameEncoders, "encode",
                        lambda *a, **k: pytest.fail("a frame was encoded"))
    src = _frames(tmp_path / "in", 1, 64, 36)
    out = tmp_path / "out"
    rc = main(["master", str(src), "-o", str(out), "--format", "imf", "--title", "t",
               "--quiet", *extra])
    assert rc == 2 and not out.exists()
    return capsys.readouterr().err


def test_sound_rate_imf_does_not_allow(tmp_path, capsys, monkeypatch):
    """A rate IMF does not carry and too low to convert (44.1 kHz is converted: below)."""
    wav = _wav(tmp_path / "s.wav", _tones(2000, 6, rate=2000), rate=2000)
    err = _refused(tmp_path, capsys, monkeypatch, "--fps", "25", "--audio", str(wav))
    assert "2000 Hz" in err and "48000 or 96000" in err


def test_sound_shorter_than_the_picture(tmp_path, capsys, monkeypatch):
    wav = _wav(tmp_path / "s.wav", _tones(RATE // 2, 6))
    err = _refused(tmp_path, capsys, monkeypatch, "--fps", "25", "--frames", "25",
                   "--audio", str(wav))
    assert "shorter than the picture" in err


def test_sound_not_a_whole_number_of_samples(tmp_path, capsys, monkeypatch):
    wav = _wav(tmp_path / "s.wav", _tones(RATE, 6))
    err = _refused(tmp_path, capsys, monkeypatch, "--fps", "30000/1001", "--frames", "7",
                   "--audio", str(wav))
    assert "not a whole number" in err and "multiple of 5 frames" in err
