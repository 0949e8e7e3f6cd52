"""A folder of frames of different image sizes: info says so, playback conceals the odd ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cinegpu.encode import encode
from cinegpu.bench.encode import synthetic_frame
from cinegpu.media.errors import MediaError
from cinegpu.media.j2k_profile import image_size


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixed")
    small = encode(synthetic_frame(96, 64, seed=1), bits=12, levels=2, backend="cpu")
    big = encode(synthetic_frame(160, 96, seed=2), bits=12, levels=2, backend="cpu")
    for n in range(6):
        (folder / f"f{n}.j2c").write_bytes(big if n in (2, 3) else small)
    return folder


def test_image_size_reads_siz_of_codestreams_and_refuses_the_rest():
    data = encode(synthetic_frame(70, 30, seed=3), bits=12, levels=2, backend="cpu")
    assert image_size(data[:64]) == (70, 30)
    for bad in (b"", b"GIF89a", data[:5]):
        with pytest.raises(MediaError):
            image_size(bad)


def test_info_lists_each_image_size_and_its_frames(mixed):
    r = subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "info", str(mixed)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "image sizes differ: 2 sizes in 6 frames" in r.stdout
    assert "  96x64: 4 frames (0-1, 4-5)" in r.stdout and "  160x96: 2 frames (2-3)" in r.stdout


@pytest.mark.slow
def test_play_conceals_frames_of_another_size(mixed):
    from conftest import require_gl
    require_gl()
    r = subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "play", "--headless", "--backend",
                        "cpu", "--threads", "--fps", "4", str(mixed)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "errors 2" in r.stdout and "Traceback" not in r.stderr
    assert "a 160x96 frame in a 96x64 sequence" in r.stderr
