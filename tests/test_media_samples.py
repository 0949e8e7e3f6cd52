"""cinegpu.media on the real packages of ../shared/dcp-samples (see its SOURCES.tsv)."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from cinegpu.media import MediaError, describe, open_source
from cinegpu.media.package.check import check
from cinegpu.media.mxf.read import MXFFile

from conftest import DCP_SAMPLES, needs_dcp_samples

SAMPLES = DCP_SAMPLES
needs_samples = needs_dcp_samples
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")

# dir, kind, frames, width, height, edit rate, encrypted, compare with ffmpeg (as SOURCES.tsv says)
CASES = [
    ("libdcp-dcp_test1-smpte-2k", "dcp-smpte", 24, 1998, 1080, Fraction(24), False, True),
    ("libdcp-dcp_test3-interop-2k", "dcp-interop", 24, 1998, 1080, Fraction(24), False, True),
    ("libdcp-encryption_test-smpte-2k-encrypted", "dcp-smpte", 24, 1998, 1080, Fraction(24), True, False),
    ("photon-imf-htj2k-1080p", "imf", 80, 1920, 1080, Fraction(60000, 1001), False, False),
    ("photon-imf-phdr-4k-j2k", "imf", 24, 3840, 2160, Fraction(24000, 1001), False, True),
]
OPEN = [c for c in CASES if not c[6]]
assert len(CASES) == 5 and len(OPEN) == 4

pytestmark = needs_samples


def picture_mxf(folder: Path) -> Path:
    found = [p for p in folder.glob("*.mxf") if MXFFile(p).picture is not None]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("case", OPEN, ids=[c[0] for c in OPEN])
def test_package_opens_with_sources_tsv_facts(case):
    name, kind, frames, w, h, rate, _enc, _cmp = case
    with open_source(SAMPLES / name) as src:
        assert (src.kind, src.frame_count, src.width, src.height, src.edit_rate) == \
            (kind, frames, w, h, rate)
        assert not src.stereoscopic and src.title
        for n in range(src.frame_count):
            cs = src.frame(n)
            assert cs[:4] == b"\xff\x4f\xff\x51" and cs[-2:] == b"\xff\xd9", n


@pytest.mark.parametrize("case", OPEN, ids=[c[0] for c in OPEN])
def test_track_file_and_cpl_open_alike(case):
    folder = SAMPLES / case[0]
    cpl = next(p for p in folder.iterdir() if p.name.lower().startswith("cpl"))
    with open_source(picture_mxf(folder)) as mxf, open_source(cpl) as comp:
        assert mxf.kind == "mxf" and comp.kind == case[1]
        assert mxf.frame_count == comp.frame_count == case[2]
        assert (mxf.width, mxf.height, mxf.edit_rate) == (case[3], case[4], case[5])
        assert mxf.frame(mxf.frame_count - 1) == comp.frame(comp.frame_count - 1)


@needs_ffmpeg
@pytest.mark.parametrize("case", [c for c in CASES if c[7]], ids=[c[0] for c in CASES if c[7]])
def test_frames_equal_ffmpeg_copy(case, tmp_path):
    folder = SAMPLES / case[0]
    mxf = picture_mxf(folder)
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(mxf), "-c:v", "copy", "-f", "image2",
                    str(tmp_path / "f_%04d.j2c")], check=True, timeout=120)
    extracted = sorted(tmp_path.glob("f_*.j2c"))
    with open_source(folder) as src:
        assert len(extracted) == src.frame_count
        for n, path in enumerate(extracted):
            assert src.frame(n) == path.read_bytes(), n


def test_encrypted_dcp_needs_a_kdm():
    folder = SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted"
    for target in (folder, folder / "video.mxf"):
        with pytest.raises(MediaError, match="KDM") as info:
            open_source(target)
        assert "video.mxf" in str(info.value) and info.value.path.endswith("video.mxf")
    text = describe(folder)
    assert "KDM" in text and "encrypted, key ac8d301c" in text


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_check_passes(case):
    report = check(SAMPLES / case[0], progress=False)
    assert report.ok, report.text()
    assert report.checked == 3
    # libdcp's encryption test re-signs its 2012 documents with a 2025 chain: the signatures
    # hold, and that their IssueDate lies outside the chain's validity is a warning per certificate
    dated = "encrypted" in case[0]
    assert len(report.warnings) == (6 if dated else 0), report.warnings
    assert all("IssueDate 2012-07-17" in w for w in report.warnings)


def test_check_command_line():
    from cinegpu.player.cli import main
    assert main(["check", "--no-progress", str(SAMPLES / "libdcp-dcp_test1-smpte-2k")]) == 0


def test_describe_reports_profile_and_sizes():
    smpte = describe(SAMPLES / "libdcp-dcp_test1-smpte-2k")
    assert "DCP, SMPTE" in smpte and "1998x1080, 24 fps, 3 components, 12/12/12 bit" in smpte
    assert "min 585 / mean 585 / max 585 bytes" in smpte and "1,302,083 bytes" in smpte
    assert "DCI 2K profile: met" in smpte and "TLM present" in smpte
    assert "6 channels (51/L,R,C,LFE,Ls,Rs), 48000 Hz, 24-bit, 24 edit units at 24/s" in smpte
    interop = describe(SAMPLES / "libdcp-dcp_test3-interop-2k")
    assert "DCP, Interop" in interop and "aspect 1.85" in interop
    # an Interop track labels no channels: their count once, not "6 channels (6 channels)"
    assert "6 channels, 48000 Hz, 24-bit, 24 edit units at 24/s" in interop and "(6 channels)" not in interop
    ht = describe(SAMPLES / "photon-imf-htj2k-1080p")
    assert "IMF" in ht and "HTJ2K" in ht and "Rsiz 0x4000" in ht and "59.94" in ht
    k4 = describe(SAMPLES / "photon-imf-phdr-4k-j2k")
    assert "3840x2160" in k4 and "6 levels" in k4
    for imf in (ht, k4):       # IMF has its own profiles: no DCI cap or DCI profile verdict
        assert "DCI" not in imf, imf
    track = describe(SAMPLES / "libdcp-dcp_test1-smpte-2k" / "video.mxf")
    assert "RGBAEssenceDescriptor" in track and "VBR" in track and "frame-wrapped" in track
    sound = describe(SAMPLES / "libdcp-dcp_test1-smpte-2k" / "audio.mxf")
    assert "WAVEPCMDescriptor, 6 channels, 24 bit, 48000 Hz" in sound


def test_mxf_metadata():
    with MXFFile(SAMPLES / "photon-imf-phdr-4k-j2k" / "VIDEO_23e9a145-f2da-4183-86b2-1c399db41afb.mxf") as m:
        assert m.picture.j2k["Rsiz"] == 0x0516 and m.picture.j2k["Csiz"] == 3
        assert m.picture.component_depth == 12 and m.picture.container_duration == 24
        assert [p.kind for p in m.partitions] == ["header", "body", "body", "body", "footer"]
        assert not m.encrypted and not m.clip_wrapped
