"""3D mastering (issue 52, item 1): ``cinegpu master LEFT RIGHT --stereo`` writes a DCP whose
reels hold ST 429-10 stereoscopic track files, named in the CPL as MainStereoscopicPicture;
each eye decodes to its own input, the two eyes share the bit rate, asdcplib reads it as
stereoscopic, ``check --decode`` decodes both eyes, and ClairMeta accepts it clear, encrypted
and in several reels."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from cinegpu.decode import decode
from cinegpu.decode.codestream import dci
from cinegpu.jobs.demo import demo_frame
from cinegpu.media import open_source
from cinegpu.media.images.colour import to_xyz12
from cinegpu.media.images.frames import fit
from cinegpu.media.package.read import read_package
from conftest import HAVE_ASDCPLIB
from helpers.cli import cinegpu
from helpers.kdm_commands import kdm_by_command
from helpers.mastering import clairmeta_ok, needs_encoder, write_png16

#: the distinct images of each eye (the composition repeats them)
SHIFT = {"left": 0, "right": 17}


def _eyes(tmp_path, count: int = 2):
    folders = []
    for eye, shift in SHIFT.items():
        folder = tmp_path / eye
        folder.mkdir()
        for i in range(count):
            write_png16(folder / f"f{i}.png", demo_frame(5 * i + shift, 480, 270))
        folders.append(str(folder))
    return folders


def _expected(eye: str, i: int) -> np.ndarray:
    """The X'Y'Z' code values input image ``i`` of ``eye`` should decode to (flat 2K)."""
    return to_xyz12(fit(demo_frame(5 * i + SHIFT[eye], 480, 270), 1998, 1080), "rec709").astype(float)


@pytest.mark.slow  # long: a 3D master on the CPU, check --decode of its 48 images (12-19 s)
@needs_encoder
def test_a_stereo_master_decodes_eye_by_eye(tmp_path):
    out = tmp_path / "dcp"
    r = cinegpu("master", *_eyes(tmp_path), "--stereo", "-o", str(out), "--title", "three d",
                "--frames", "24", "--quiet", "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    comp = read_package(out).compositions[0]
    assert comp.stereoscopic and [a.kind for a in comp.reels[0].assets] == ["markers", "stereo-picture"]
    assert comp.reels[0].of_kind("stereo-picture")[0].frame_rate == 48     # two images a frame
    with open_source(out) as src:
        assert (src.stereoscopic, src.frame_count, src.width, src.height) == (True, 24, 1998, 1080)
        for n in (0, 3):                       # input image n % 2 of each eye
            for eye in SHIFT:
                got = np.stack(decode(src.frame(n, eye), backend="cpu"), -1).astype(float)
                other = "right" if eye == "left" else "left"
                own = np.abs(got - _expected(eye, n % 2)).mean()
                assert own < 12 and own < np.abs(got - _expected(other, n % 2)).mean() / 4, (n, eye, own)
                # the DCI cap holds for the two eyes together: each eye within half of it
                assert src.frame_size(n, eye) <= dci.FRAME_BITRATE / 8 / 24 / 2
    r = cinegpu("check", str(out), "--decode")       # both eyes of every frame
    assert r.returncode == 0 and "decoded 24 frame(s)" in r.stdout, r.stdout + r.stderr
    if HAVE_ASDCPLIB:
        (mxf,) = out.glob("j2c_*.mxf")
        info = subprocess.run(["asdcp-info", "-i", str(mxf)], capture_output=True, text=True, timeout=60)
        assert "JPEG 2000 stereoscopic pictures, (24 edit units)" in info.stdout, info.stdout + info.stderr


@pytest.mark.slow  # long: a two-reel encrypted 3D master, a KDM and ClairMeta's whole check
@needs_encoder
def test_an_encrypted_two_reel_stereo_master_passes_clairmeta(tmp_path):
    out, keys = tmp_path / "dcp", tmp_path / "keys.txt"
    r = cinegpu("master", *_eyes(tmp_path, 3), "--stereo", "-o", str(out), "--frames", "48",
                "--reel-length", "1", "--encrypt", "--keys", str(keys), "--quiet", "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    comp = read_package(out).compositions[0]
    assert [len(reel.of_kind("stereo-picture")) for reel in comp.reels] == [1, 1]
    assert "3D" in comp.title                 # the ISDCF name says so
    (cpl,) = out.glob("cpl_*.xml")
    kdm, projector_key = kdm_by_command(tmp_path, cpl, keys)
    clairmeta_ok(out, kdm=kdm, key=projector_key)
    r = cinegpu("play", "--headless", "--audio", "null", "--backend", "cpu", "--frames", "30",
                "--kdm", str(kdm), "--key", str(projector_key), str(out))
    assert r.returncode == 0 and "errors 0" in r.stdout, r.stdout + r.stderr
