"""Interop DCPs written (issue 52, item 3): asdcplib's MXF Interop picture and sound track files
(:mod:`cinegpu.media.mxf.interop_write`), checked by asdcplib's own tools where installed; the
PROTO-ASDCP CPL, PKL and ASSETMAP beside DCSubtitle XML with its font
(:class:`~cinegpu.media.package.interop_write.InteropDCPWriter`), compared with libdcp's Interop
sample and read back by our reader; and ``cinegpu master --standard interop`` end to end:
ClairMeta, ``cinegpu play``."""

from __future__ import annotations

import subprocess
import wave
from fractions import Fraction

import numpy as np
import pytest
from lxml import etree

from cinegpu.jobs.master_job import MasterJob, Picture
from cinegpu.media import open_source
from cinegpu.media.mxf.interop_write import (
    INTEROP_OP_ATOM,
    INTEROP_SUBDESCRIPTORS,
    InteropPictureTrackWriter,
    InteropSoundTrackWriter,
)
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.mxf.sound_write import CHANNEL_CONFIG_WTF
from cinegpu.media.mxf.write import HEADER_RESERVE, PICTURE_ELEMENT
from cinegpu.media.package.interop_write import InteropDCPWriter
from cinegpu.media.package.read import local, read_package
from cinegpu.media.sound.inputs import FIVE_ONE, open_sound
from cinegpu.media.sound.track import SoundTrack
from cinegpu.media.subtitles.documents import composition_subtitles
from cinegpu.media.subtitles.write import prepare_subtitles
from cinegpu.player.cli import main
from conftest import DCP_SAMPLES, HAVE_ASDCPLIB
from helpers.cli import CLI
from helpers.encrypted_dcp import frames
from helpers.mastering import clairmeta_ok, needs_encoder, write_png16
from helpers.sound_util import tones, write_wav

needs_asdcplib = pytest.mark.skipif(not HAVE_ASDCPLIB, reason="asdcplib's asdcp-info and asdcp-unwrap "
                                    "are not on PATH (.ci/install-asdcplib builds them)")
LIBDCP_INTEROP = DCP_SAMPLES / "libdcp-dcp_test3-interop-2k"
SRT = "1\n00:00:00,100 --> 00:00:00,900\nBonsoir\n\n2\n00:00:01,250 --> 00:00:01,750\nSecond\n"
UNITS = 3
SPF = 2000          # 48 kHz at 24 fps: sample frames an edit unit


def _asdcp(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=60)


def _picture(path, codestreams):
    with InteropPictureTrackWriter(path, edit_rate=24) as w:
        for cs in codestreams:
            w.write(cs)
        return w.close()


def _pcm(units: int, seed: int = 3) -> np.ndarray:
    """``units`` edit units of 24-bit 5.1 samples, (units * SPF, 6) int32."""
    return np.random.default_rng(seed).integers(-(1 << 23), 1 << 23, (units * SPF, 6), dtype=np.int32)


def _sound(path, samples: np.ndarray):
    raw = samples.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    step = SPF * 18
    with InteropSoundTrackWriter(path, edit_rate=24, rate=48000, layout=FIVE_ONE) as w:
        for k in range(len(raw) // step):
            w.write(raw[k * step:(k + 1) * step])
        return w.close()


def test_interop_picture_track_file_has_two_partitions_and_the_interop_labels(tmp_path):
    """As ``asdcp-wrap`` without ``-L`` writes it: the Interop OP-Atom label, the essence in
    the header partition (BodySID 1) right after the header reserve, no body partition pack,
    the footer's PreviousPartition 0, RIP (1, 0), (0, footer); the Interop SubDescriptors UL."""
    codestreams = frames(UNITS)
    track = _picture(tmp_path / "p.mxf", codestreams)
    data = track.path.read_bytes()
    assert data[HEADER_RESERVE:HEADER_RESERVE + 16] == PICTURE_ELEMENT      # essence, no body pack
    assert bytes.fromhex(INTEROP_SUBDESCRIPTORS) in data[:HEADER_RESERVE]
    with MXFFile(track.path) as m:
        assert [p.kind for p in m.partitions] == ["header", "footer"]
        header, footer = m.partitions
        assert {header.operational_pattern, footer.operational_pattern} == {INTEROP_OP_ATOM}
        assert (header.body_sid, header.index_sid, footer.previous_partition) == (1, 0, 0)
        assert [m.frame(i) for i in range(UNITS)] == list(codestreams)
    rip = data[-48:]               # key, BER length, two (BodySID, offset) pairs, its length
    assert rip[-4:] == (48).to_bytes(4, "big") and rip[-28:-4] == (
        (1).to_bytes(4, "big") + bytes(8) + bytes(4) + header.footer_partition.to_bytes(8, "big"))


@needs_asdcplib
def test_asdcplib_reads_interop_picture_and_sound_and_unwraps_them_byte_for_byte(tmp_path):
    codestreams, samples = frames(UNITS), _pcm(UNITS)
    picture = _picture(tmp_path / "p.mxf", codestreams)
    sound = _sound(tmp_path / "s.mxf", samples)
    for track, kind in ((picture, "JPEG 2000 pictures"), (sound, "PCM audio")):
        info = _asdcp("asdcp-info", "-i", track.path)
        assert info.returncode == 0, info.stdout + info.stderr
        assert f"Interop file essence type is {kind}, ({UNITS} edit units)" in info.stdout
        assert "Label Set Type: MXF Interop" in info.stdout
        assert f"AssetUUID: {track.asset_id}" in info.stdout
    out = tmp_path / "j2c"
    out.mkdir()
    unwrap = _asdcp("asdcp-unwrap", picture.path, out / "f")
    assert unwrap.returncode == 0, unwrap.stdout + unwrap.stderr
    assert [(out / f"f{i:06d}.j2c").read_bytes() for i in range(UNITS)] == list(codestreams)
    unwrap = _asdcp("asdcp-unwrap", sound.path, tmp_path / "pcm.wav")     # one multichannel WAV
    assert unwrap.returncode == 0, unwrap.stdout + unwrap.stderr
    with wave.open(str(tmp_path / "pcm.wav")) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (6, 3, 48000)
        raw = w.readframes(w.getnframes())
    assert raw == samples.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()


def test_interop_sound_has_no_channel_label_and_reads_back(tmp_path):
    samples = _pcm(UNITS)
    track = _sound(tmp_path / "s.mxf", samples)
    head = track.path.read_bytes()[:HEADER_RESERVE]
    assert INTEROP_OP_ATOM in head and CHANNEL_CONFIG_WTF not in head
    assert bytes.fromhex(FIVE_ONE.ul) not in head                  # no MCA sub-descriptors
    with SoundTrack(track.path) as s:
        assert (s.descriptor.channels, s.descriptor.sample_rate, s.duration) == (6, 48000, UNITS)
        assert np.array_equal(s.read(0, UNITS), samples)
    with pytest.raises(Exception, match="48000 Hz"):
        InteropSoundTrackWriter(tmp_path / "x.mxf", edit_rate=24, rate=96000, layout=FIVE_ONE)


def _package(tmp_path, reels=None):
    """An Interop DCP of 48 frames of small codestreams, with 5.1 sound and SRT subtitles."""
    codestreams = frames(2)
    wav = write_wav(tmp_path / "mix.wav", tones(48000 * 2, 6))
    (tmp_path / "s.srt").write_text(SRT)
    subtitles, _ = prepare_subtitles(tmp_path / "s.srt", frames=48, fps=24, title="T", language="fr")
    with InteropDCPWriter(tmp_path / "dcp", title="T", edit_rate=24, sound=open_sound([wav]),
                          subtitles=subtitles, reels=reels) as w:
        for i in range(48):
            w.write(codestreams[i % 2])
        return w.close(), codestreams


def _xml(path):
    return etree.parse(str(path)).getroot()


def test_interop_package_documents_as_libdcp_writes_them(tmp_path):
    """The file names, namespaces and PKL types of libdcp's Interop sample (dcp_test3), the
    subtitle XML and its font each in a folder named by the SubtitleID, ScreenAspectRatio a
    decimal, no ST 429-16 metadata."""
    package, _ = _package(tmp_path)
    root = package.root
    names = sorted(p.name for p in root.iterdir())
    assert "ASSETMAP" in names and "VOLINDEX" in names and not any(n.endswith(".xml") and
                                                                 n.startswith(("ASSET", "VOL")) for n in names)
    sample = {local(_xml(p)): etree.QName(_xml(p)).namespace
              for p in LIBDCP_INTEROP.iterdir() if p.suffix in ("", ".xml")}
    ours = {local(_xml(p)): etree.QName(_xml(p)).namespace for p in root.iterdir() if p.is_file()
            and p.suffix in ("", ".xml")}
    assert ours == sample                # AssetMap, VolumeIndex, CompositionPlaylist, PackingList
    pkl = next(root.glob("pkl_*.xml"))
    ns = {"p": etree.QName(_xml(pkl)).namespace}
    types = sorted(t.text for t in _xml(pkl).iterfind(".//p:Type", ns))
    sample_pkl = next(LIBDCP_INTEROP.glob("pkl_*.xml"))
    assert set(t.text for t in _xml(sample_pkl).iterfind(".//p:Type", ns)) <= set(types)
    assert types == ["application/ttf", "application/x-smpte-mxf;asdcpKind=Picture",
                     "application/x-smpte-mxf;asdcpKind=Sound", "text/xml;asdcpKind=CPL",
                     "text/xml;asdcpKind=Subtitle"]
    assert _xml(pkl).find(".//p:OriginalFileName", ns) is None
    cpl = _xml(next(root.glob("cpl_*.xml")))
    c = {"c": etree.QName(cpl).namespace}
    assert cpl.findtext(".//c:ScreenAspectRatio", namespaces=c) == f"{64 / 48:.2f}"
    assert "CompositionMetadataAsset" not in etree.tostring(cpl).decode()
    sub = package.reels[0].subtitle
    assert sub.path.parent.name == str(sub.asset_id) and sub.path.parent.parent == root
    doc = _xml(sub.path)
    assert (doc.tag, doc.findtext("SubtitleID"), doc.find("LoadFont").get("URI")) == \
        ("DCSubtitle", str(sub.asset_id), "font_0.ttf")
    assert (sub.path.parent / "font_0.ttf").read_bytes()[:4] in (b"\x00\x01\x00\x00", b"OTTO", b"true")


def test_interop_package_reads_back_with_picture_sound_and_subtitles(tmp_path):
    package, codestreams = _package(tmp_path, reels=(24, 24))
    pk = read_package(package.root)
    assert pk.kind == "dcp-interop" and pk.flavour == "interop" and pk.volindex is not None
    comp = pk.compositions[0]
    assert (comp.flavour, len(comp.reels), comp.edit_rate) == ("dcp-interop", 2, Fraction(24))
    media = open_source(package.root)
    assert media.frame_count == 48 and media.frame(0) == codestreams[0] and media.frame(47) == codestreams[1]
    media.close()
    wav = tones(48000 * 2, 6)
    for k, reel in enumerate(package.reels):
        with SoundTrack(reel.sound.path) as s:
            assert np.array_equal(s.read(0, 24), wav[k * 48000:(k + 1) * 48000])
    subs = composition_subtitles(comp)
    assert not subs.warnings
    cues = [(r.start, c.time_in, c.time_out, c.lines[0].text) for r in subs.reels for c in r.track.cues]
    # frames 2 to 22 (not shown) of reel 1, frames 30 to 42 = 6 to 18 of reel 2, each time the
    # last 4 ms tick at or before its frame (22 x 250 / 24 = 229.2, 18 x 250 / 24 = 187.5)
    assert cues == [(0, Fraction(20, 250), Fraction(229, 250), "Bonsoir"),
                    (24, Fraction(62, 250), Fraction(187, 250), "Second")]
    assert [r.track.language for r in subs.reels] == ["fr", "fr"]


def test_interop_refusals():
    """Interop is 24 and 48 fps, 2D and in the clear here; one line each, before any work."""
    with pytest.raises(ValueError, match="24 or 48 fps, not 25"):
        Picture(standard="interop", fps=25)
    with pytest.raises(ValueError, match="3D Interop DCPs are not written"):
        Picture(standard="interop", stereoscopic=True)
    with pytest.raises(ValueError, match="encrypted Interop DCPs are not supported yet"):
        Picture(standard="interop").check_holds(encrypted=True)
    with pytest.raises(ValueError, match="--standard interop is for DCPs"):
        Picture(format="imf", standard="interop")
    with pytest.raises(ValueError, match="standard must be smpte or interop"):
        Picture(standard="iop")
    assert Picture(standard="interop", fps=48).interop
    with pytest.raises(ValueError, match="24 or 48 fps"):
        InteropDCPWriter("/nonexistent/x", title="T", edit_rate=30)


def test_interop_job_refuses_96_khz_sound(tmp_path):
    wav = write_wav(tmp_path / "hi.wav", tones(96000, 6, rate=96000), rate=96000)
    with pytest.raises(ValueError, match="Interop sound is written at 48 kHz"):
        MasterJob.of(lambda i: np.zeros((8, 8, 3)), 24, tmp_path / "o", title="T",
                     standard="interop", sound=open_sound([wav]))


@needs_encoder
@pytest.mark.slow   # long: masters 2 s of 2K on the CPU, then ClairMeta and a headless play (~10 s)
def test_master_interop_then_check_and_play(tmp_path):
    from cinegpu.jobs.demo import demo_frame
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        write_png16(src / f"f{i}.png", demo_frame(5 * i, 1920, 1080))
    write_wav(tmp_path / "mix.wav", tones(48000 * 2, 6))
    (tmp_path / "s.srt").write_text(SRT)
    out = tmp_path / "out"
    rc = main(["master", str(src), "-o", str(out), "--standard", "interop", "--frames", "48",
               "--title", "T", "--backend", "cpu", "--quiet", "--audio", str(tmp_path / "mix.wav"),
               "--subtitles", str(tmp_path / "s.srt"), "--subtitle-language", "en",
               "--reel-length", "1", "--marker", "FFEC=00:00:00:12"])
    assert rc == 0
    pk = read_package(out)
    comp = pk.compositions[0]
    assert pk.kind == "dcp-interop" and len(comp.reels) == 2
    assert [(m.label, m.frame) for m in comp.metadata.markers] == [("FFOC", 1), ("FFEC", 12), ("LFOC", 47)]
    assert sum(len(r.track.cues) for r in composition_subtitles(comp).reels) == 2
    media = open_source(out)
    assert (media.frame_count, media.width, media.height) == (48, 1998, 1080)
    media.close()
    clairmeta_ok(out)
    if HAVE_ASDCPLIB:
        for mxf in out.glob("*.mxf"):
            info = _asdcp("asdcp-info", "-i", mxf)
            assert "Label Set Type: MXF Interop" in info.stdout, info.stdout + info.stderr
    play = subprocess.run(CLI + ["play", str(out), "--headless", "--frames", "30"],
                          capture_output=True, text=True, timeout=300)
    assert play.returncode == 0, play.stderr[-2000:]
    assert "played" in play.stdout and "errors 0" in play.stdout
