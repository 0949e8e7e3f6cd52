"""The cinegpu command line, run as a user would (a real subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import numpy as np
import pytest

from cinegpu.decode import decode
from conftest import SAMPLE
from helpers.cli import CLI, cinegpu
from helpers.conformance import CONFORMANCE
from helpers.pgx import read_pgx

P0_04 = CONFORMANCE / "part1" / "codestreams" / "p0_04.j2k"
P0_05 = CONFORMANCE / "part1" / "codestreams" / "p0_05.j2k"


def test_info_codestream_lists_the_header():
    r = cinegpu("info", str(SAMPLE))
    assert r.returncode == 0, r.stderr
    assert "Rsiz 0x0003" in r.stdout
    assert "2048 x 1080" in r.stdout
    assert "CPRL" in r.stdout and "9/7 irreversible" in r.stdout


def test_info_bad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.j2c"
    bad.write_bytes(b"\xff\x4f\xff\x51\x00")
    r = cinegpu("info", str(bad))
    assert r.returncode == 2
    assert "bad.j2c" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(not P0_05.exists(), reason=f"{P0_05} is not present")
def test_decode_writes_pgx_for_subsampled_components(tmp_path):
    r = cinegpu("decode", str(P0_05), "-o", str(tmp_path / "out.tif"))
    assert r.returncode == 0, r.stderr
    want = decode(P0_05.read_bytes())
    for k, comp in enumerate(want):
        assert np.array_equal(read_pgx(tmp_path / f"out_{k}.pgx"), comp)


@pytest.mark.skipif(not P0_04.exists(), reason=f"{P0_04} is not present")
@pytest.mark.parametrize("suffix", [".tif", ".png"])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_decode_writes_an_image_equal_to_decode(tmp_path, suffix):
    out = tmp_path / f"out{suffix}"
    r = cinegpu("decode", str(P0_04), "-o", str(out), "-r", "1")
    assert r.returncode == 0, r.stderr
    want = np.stack(decode(P0_04.read_bytes(), reduce=1), axis=-1)
    if suffix == ".tif":
        import tifffile

        got = tifffile.imread(out)
    else:
        from PIL import Image

        got = np.asarray(Image.open(out))
    assert np.array_equal(got, want)


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_bench_default_runs_on_the_shipped_sample(tmp_path):
    r = cinegpu("bench", "--frames", "1", "--repeat", "1", "--json", str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stderr
    assert "fps" in r.stdout and "tier1" in r.stdout
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["frames"] == 1 and result["fps"] > 0
    assert set(result["ms_per_frame"]) == {"parse", "tier2", "tier1", "reconstruct"}
    assert "busy over the run: the workers" in r.stdout and 0 < result["busy"]["workers"]


@pytest.mark.gpu
@pytest.mark.parametrize("tier1", ["cpu", "gpu"])
def test_bench_tier1_says_where_the_code_blocks_were_decoded(tmp_path, tier1):
    """``--tier1 cpu``: the design card's split (tier-1 in the workers, the rest on the GPU),
    named in the summary and the JSON; ``gpu``: the GPU decodes the code-blocks too."""
    r = cinegpu("bench", "--backend", "cuda", "--tier1", tier1, "--workers", "2", "--frames", "1",
                "--repeat", "4", "--json", str(tmp_path / "b.json"))
    assert r.returncode == 0, r.stderr
    assert f"tier-1 on the {tier1.upper()}" in r.stdout
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["tier1"] == tier1 and result["backend"] == "cuda" and result["fps"] > 0
    assert ("gpu_tier1" in result["busy"]) == (tier1 == "gpu") and result["busy"]["gpu_reconstruct"] > 0


def _folder_of(tmp_path, frame):
    """A folder holding a copy of ``frame``."""
    folder = tmp_path / "frames"
    folder.mkdir()
    (folder / frame.name).write_bytes(frame.read_bytes())
    return folder


@pytest.mark.parametrize("make,expect", [
    (lambda t: (t / "missing.j2c", t / "o.png"), "no such file"),
    (lambda t: (t, t / "o.png"), "no .j2c/.j2k/.jp2 file in"),     # a folder: the folder mode
    (lambda t: (_folder_of(t, SAMPLE), t / "o.png"), "-o names a folder, not an image"),
    (lambda t: (SAMPLE, t / "o.jpg"), "unknown image type '.jpg'"),
    (lambda t: (SAMPLE, t / "nowhere" / "o.png"), "does not exist"),
])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_decode_mistakes_are_one_line_before_any_work(tmp_path, make, expect):
    source, out = make(tmp_path)
    r = cinegpu("decode", str(source), "-o", str(out))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], r.stderr


@pytest.mark.parametrize("suffix", [".png", ".tif"])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_decoded_12_bit_pictures_fill_the_16_bit_range(tmp_path, suffix):
    """A 12-bit frame is written scaled to 16 bits (v * 65535 // 4095), PNG with sBIT 12."""
    import imagecodecs

    out = tmp_path / f"out{suffix}"
    r = cinegpu("decode", str(SAMPLE), "-o", str(out))
    assert r.returncode == 0, r.stderr
    comps = decode(SAMPLE.read_bytes())
    want = (np.stack(comps, axis=-1).astype(np.int64) * 65535 // 4095).astype(np.uint16)
    data = out.read_bytes()
    got = imagecodecs.png_decode(data) if suffix == ".png" else imagecodecs.tiff_decode(data)
    assert got.dtype == np.uint16 and np.array_equal(got, want)
    assert got.max() > 4095 * 8            # not left at 12-bit values
    if suffix == ".png":
        assert data[data.index(b"sBIT") + 4:][:3] == bytes([12, 12, 12])


@pytest.mark.slow
def test_decoded_png_matches_what_opj_decompress_writes(tmp_path):
    import shutil

    import imagecodecs

    if not shutil.which("opj_decompress"):
        pytest.skip("opj_decompress is not installed")
    ours, theirs = tmp_path / "ours.png", tmp_path / "theirs.png"
    assert cinegpu("decode", str(SAMPLE), "-o", str(ours)).returncode == 0
    subprocess.run(["opj_decompress", "-i", str(SAMPLE), "-o", str(theirs)], check=True,
                   capture_output=True, timeout=120)
    a = imagecodecs.png_decode(ours.read_bytes()).astype(np.int64)
    b = imagecodecs.png_decode(theirs.read_bytes()).astype(np.int64)
    assert a.shape == b.shape and a.dtype == b.dtype
    # one 12-bit code apart at most (9/7 rounding may differ by one), scaled: 17 of 65535
    assert np.abs(a - b).max() <= 17


def test_bench_scaling_table_divides_the_speed_up_by_the_gpus(capsys):
    from cinegpu.bench.decode import _print_scaling

    rows = _print_scaling([(1, 500.0), (2, 900.0), (4, 1600.0)])
    assert [round(r["speedup"], 2) for r in rows] == [1.0, 1.8, 3.2]
    assert [round(r["efficiency"], 2) for r in rows] == [1.0, 0.9, 0.8]
    assert "efficiency per GPU" in capsys.readouterr().out


def test_a_reader_that_leaves_the_pipe_gets_no_traceback():
    """`cinegpu info X | head -1`: the reader closes the pipe; the command ends quietly with
    128 + SIGPIPE, as cat does, instead of a BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)                      # every write now fails with EPIPE
    try:
        r = subprocess.run([*CLI, "info", str(SAMPLE)], stdout=write_end, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    finally:
        os.close(write_end)
    assert r.returncode == 128 + signal.SIGPIPE, r.stderr
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


@pytest.mark.parametrize("bits", [7, 8, 11, 14])
def test_signed_samples_are_written_to_png_as_opj_decompress_writes_them(tmp_path, bits):
    """Signed components scaled by 2**(16 - bits) (or 2**(8 - bits)) and offset by half the
    file's range, as OpenJPEG's PNG writer does (not offset first and scaled as unsigned ones:
    up to 2**(depth - bits) - 1 apart)."""
    import shutil

    import imagecodecs

    from cinegpu.encode import encode

    if not shutil.which("opj_decompress"):
        pytest.skip("opj_decompress is not installed")
    y, x = np.mgrid[0:24, 0:40]
    top = 1 << (bits - 1)
    grey = ((x * 37 + y * 101) % (2 * top) - top).astype(np.int16)
    grey[0, :2] = (-top, top - 1)           # both ends of the range
    src = tmp_path / "s.j2k"
    src.write_bytes(encode(grey, bits=bits, signed=True, backend="cpu", reversible=True))
    ours, theirs = tmp_path / "ours.png", tmp_path / "theirs.png"
    assert cinegpu("decode", str(src), "-o", str(ours)).returncode == 0
    subprocess.run(["opj_decompress", "-i", str(src), "-o", str(theirs)], check=True, capture_output=True,
                   timeout=60)
    a, b = imagecodecs.png_decode(ours.read_bytes()), imagecodecs.png_decode(theirs.read_bytes())
    assert a.dtype == b.dtype and np.array_equal(a, b)
