"""The shared DCP and IMF samples played as a user would (issue 5, must-show 1).

Every frame of the libdcp DCPs decodes identically to ``opj_decompress`` of
the frame ``ffmpeg -c:v copy`` extracts, and headless playback shows them;
the 4K IMF package plays; the HTJ2K (Part 15) package decodes as OpenJPEG decodes it and
plays; the encrypted DCP asks for a KDM.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.decode import transform
from cinegpu.media import open_source
from cinegpu.media.images.png import read_png16

from pgx import read_pgx
from conftest import DCP_SAMPLES, needs_dcp_samples

SAMPLES = DCP_SAMPLES
pytestmark = needs_dcp_samples
DCPS = ["libdcp-dcp_test1-smpte-2k", "libdcp-dcp_test3-interop-2k"]
TOOLS = [shutil.which("ffmpeg"), shutil.which("opj_decompress")]


def _picture_mxf(folder: Path) -> Path:
    from cinegpu.media.mxf.read import MXFFile

    return next(p for p in folder.glob("*.mxf") if MXFFile(p).picture is not None)


@pytest.mark.slow
@pytest.mark.skipif(not all(TOOLS), reason="ffmpeg and opj_decompress are needed")
@pytest.mark.parametrize("name", DCPS)
def test_every_frame_equals_opj_decompress_of_the_ffmpeg_frame(name, tmp_path):
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(_picture_mxf(SAMPLES / name)), "-c:v", "copy",
                    "-f", "image2", str(tmp_path / "f_%04d.j2c")], check=True)
    with open_source(SAMPLES / name) as src:
        assert len(list(tmp_path.glob("f_*.j2c"))) == src.frame_count == 24
        for n in range(src.frame_count):
            extracted = tmp_path / f"f_{n + 1:04d}.j2c"
            assert src.frame(n) == extracted.read_bytes(), f"frame {n}"
            subprocess.run(["opj_decompress", "-i", str(extracted), "-o", str(tmp_path / "o.pgx"), "-quiet"],
                           check=True, capture_output=True)
            ours = decode(src.frame(n))
            for c, comp in enumerate(ours):
                ref = read_pgx(tmp_path / f"o_{c}.pgx")
                assert np.array_equal(comp.astype(np.int64), ref), f"frame {n} component {c}"


def _play(path: Path, tmp_path: Path, frames: int, shots: list[int]):
    from cinegpu.player.commands.play import play
    from cinegpu.player.settings import PlaySettings

    media = open_source(path)
    files = {n: tmp_path / f"shot{n}.png" for n in shots}
    try:
        summary = play(media, PlaySettings(headless=True, backend="cpu", screenshots=files, frames=frames))
    finally:
        media.close()
    return summary, files


@pytest.mark.parametrize("name", DCPS)
def test_dcp_plays_headless_and_shows_its_frames(gl, name, tmp_path):
    summary, shots = _play(SAMPLES / name, tmp_path, frames=24, shots=[0, 23])
    assert summary.stats.errors == 0 and summary.stats.shown > 0
    assert summary.screenshots == 2
    with open_source(SAMPLES / name) as src:
        for n, path in shots.items():
            want = transform.xyz_to_rgb(*decode(src.frame(n)), primaries="p3d65", out_bits=16, in_bits=12)
            got = read_png16(path)
            assert got.shape == want.shape == (1080, 1998, 3)
            assert np.abs(got.astype(np.int64) - want).max() <= 1, f"frame {n}"


@pytest.mark.slow
def test_imf_4k_plays(gl, tmp_path):
    summary, shots = _play(SAMPLES / "photon-imf-phdr-4k-j2k", tmp_path, frames=2, shots=[0])
    assert summary.stats.errors == 0 and summary.screenshots == 1
    got = read_png16(shots[0])
    assert got.shape == (2160, 3840, 3)
    assert got.std() > 100  # real footage, not a blank picture


@pytest.mark.skipif(shutil.which("opj_decompress") is None, reason="opj_decompress is needed")
def test_htj2k_imf_plays(gl, tmp_path):
    """The HTJ2K (Part 15) IMF package: frame 0 decodes as opj_decompress decodes it, and it plays."""
    name = "photon-imf-htj2k-1080p"
    with open_source(SAMPLES / name) as src:
        data = src.frame(0)
    (tmp_path / "f0.j2c").write_bytes(data)
    subprocess.run(["opj_decompress", "-i", str(tmp_path / "f0.j2c"), "-o", str(tmp_path / "o.pgx"), "-quiet"],
                   check=True, capture_output=True)
    for c, comp in enumerate(decode(data)):
        assert np.array_equal(comp.astype(np.int64), read_pgx(tmp_path / f"o_{c}.pgx")), f"component {c}"
    summary, shots = _play(SAMPLES / name, tmp_path, frames=3, shots=[0])
    assert summary.stats.errors == 0 and summary.screenshots == 1
    got = read_png16(shots[0])
    assert got.shape == (1080, 1920, 3) and got.std() > 100


def test_encrypted_dcp_asks_for_a_kdm():
    r = subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "play", "--headless",
                        str(SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert "KDM" in r.stderr and "Traceback" not in r.stderr
