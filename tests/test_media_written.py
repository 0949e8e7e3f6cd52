"""MXF files written here by ffmpeg from opj_compress codestreams; frame sequences; codestream files."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from cinegpu.media import MediaError, describe, open_source
from cinegpu.media.j2k_profile import parse_profile
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.source import natural_key

needs_tools = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("opj_compress") is None,
                                 reason="needs ffmpeg and opj_compress")
FRAMES = 7


def write_pnm(path, image: np.ndarray) -> None:
    h, w = image.shape[:2]
    magic = b"P6" if image.ndim == 3 else b"P5"
    path.write_bytes(magic + f"\n{w} {h}\n255\n".encode() + image.astype(np.uint8).tobytes())


@pytest.fixture(scope="module")
def codestreams(tmp_path_factory):
    """FRAMES small codestreams of different sizes (grey and RGB, several rates)."""
    if shutil.which("opj_compress") is None:
        pytest.skip("opj_compress is not installed")
    d = tmp_path_factory.mktemp("j2c")
    rng = np.random.default_rng(5)
    out = []
    for i in range(FRAMES):
        shape = (40, 56, 3) if i % 2 else (40, 56)
        img = rng.integers(0, 256, shape) // (1 + i)
        src = d / f"img{i}.{'ppm' if i % 2 else 'pgm'}"
        write_pnm(src, img)
        j2c = d / f"f{i}.j2c"
        subprocess.run(["opj_compress", "-i", str(src), "-o", str(j2c), "-r", str(2 + i)],
                       check=True, capture_output=True, timeout=60)
        out.append(j2c)
    return out


def ffmpeg_mxf(files, dst, fmt):
    listing = dst.with_suffix(".txt")
    listing.write_text("".join(f"file '{f}'\n" for f in files))
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-r", "24",
                    "-i", str(listing), "-c:v", "copy", "-f", fmt, str(dst)],
                   check=True, capture_output=True, timeout=120)
    return dst


@needs_tools
@pytest.mark.parametrize("fmt", ["mxf", "mxf_opatom"])
def test_ffmpeg_mxf_frames_by_seek(fmt, codestreams, tmp_path):
    # one RGB and one grey track: ffmpeg needs one pixel format per stream
    for parity in (0, 1):
        files = [f for i, f in enumerate(codestreams) if i % 2 == parity]
        mxf = ffmpeg_mxf(files, tmp_path / f"{fmt}{parity}.mxf", fmt)
        with open_source(mxf) as src:
            assert src.kind == "mxf" and src.frame_count == len(files)
            assert (src.width, src.height) == (56, 40) and src.edit_rate == Fraction(24)
            for n in reversed(range(len(files))):      # seek backwards: no sequential state
                assert src.frame(n) == files[n].read_bytes(), n
        with MXFFile(mxf) as m:
            assert m.clip_wrapped == (fmt == "mxf_opatom")
        assert "frames" in describe(mxf)


def test_sequence_natural_order(tmp_path, codestreams):
    names = ["f10.j2c", "f2.j2c", "f1.j2c", "F3.j2k", "f20.jp2"][:len(codestreams)]
    for name, cs in zip(names, codestreams):
        (tmp_path / name).write_bytes(cs.read_bytes())
    (tmp_path / "notes.txt").write_text("ignored")
    order = sorted(names, key=natural_key)
    assert order == ["f1.j2c", "f2.j2c", "F3.j2k", "f10.j2c", "f20.jp2"]
    with open_source(tmp_path) as src:
        assert src.kind == "j2k-sequence" and src.edit_rate is None
        assert src.frame_count == 5 and (src.width, src.height) == (56, 40)
        for n, name in enumerate(order):
            assert src.frame(n) == (tmp_path / name).read_bytes()
    text = describe(tmp_path)
    assert "J2K sequence" in text and "5 frames" in text


def test_single_codestream(codestreams):
    with open_source(codestreams[1]) as src:
        assert src.kind == "codestream" and src.frame_count == 1
        assert src.frame(0) == codestreams[1].read_bytes()
        with pytest.raises(IndexError):
            src.frame(1)
    prof = parse_profile(codestreams[1].read_bytes())
    assert prof.Rsiz == 0 and len(prof.components) == 3 and prof.reversible
    assert prof.dci_problems()[1]


def test_empty_folder(tmp_path):
    with pytest.raises(MediaError, match="no ASSETMAP"):
        open_source(tmp_path)


@needs_tools
def test_long_op1a_many_partitions(codestreams, tmp_path):
    """ffmpeg starts a body partition and an index segment every few hundred frames."""
    from cinegpu.bench.seek import write_long_mxf
    mxf_path = write_long_mxf(tmp_path, 700)
    tiny = (tmp_path / "tiny.j2c").read_bytes()
    with MXFFile(mxf_path) as m:
        assert m.frame_count == 700 and len(m.index_segments) >= 2
        assert len([p for p in m.partitions if p.body_sid]) >= 2
        for n in (0, 1, 249, 250, 251, 499, 500, 699):
            assert m.frame(n) == tiny, n
        assert m.frame_size(699) == len(tiny)


def test_threads_reading_one_track_file_get_their_own_frames(tmp_path):
    """Frames read at once from several threads of one MXFFile (the player's threaded source
    does): each gets its own bytes (reads are positional, not seek-then-read)."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from cinegpu.media.mxf.write import write_track

    base = (Path(__file__).resolve().parents[1] / "cinegpu" / "media" / "samples" / "bars_2k.j2c").read_bytes()
    frames = [base[:-2] + bytes([k]) * 7 + b"\xff\xd9" for k in range(8)]
    write_track(tmp_path / "t.mxf", frames, edit_rate=24)
    m = MXFFile(tmp_path / "t.mxf")
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda k: m.frame(k % 8) == frames[k % 8], range(400)))
    assert all(got)
