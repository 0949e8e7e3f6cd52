"""``cinegpu decode`` of several files or a folder: one image each, in parallel, in one run."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time

import numpy as np
import pytest
import tifffile

from cinegpu.decode import decode
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.media.images.write import file_depth, to_file_range
from cinegpu.player.commands.decode import plan_images
from conftest import SAMPLE
from helpers.cli import CLI, cinegpu
from helpers.conformance import CONFORMANCE
from helpers.jp2_files import codestream, colr, ihdr, jp2, planes
from helpers.pgx import read_pgx

STREAMS = [CONFORMANCE / "part1" / "codestreams" / f"{s}.j2k" for s in ("p0_01", "p0_11", "p1_07")]


def test_plan_images_names_each_image_after_its_file(tmp_path):
    a, b = tmp_path / "x" / "f1.j2c", tmp_path / "y" / "f10.jp2"
    jobs, problem = plan_images([a, b], tmp_path / "out", "png")
    assert problem is None and [(j.source, j.image) for j in jobs] == [(a, tmp_path / "out" / "f1.png"),
                                                                       (b, tmp_path / "out" / "f10.png")]


@pytest.mark.parametrize("sources, out, expect", [
    (["x/f.j2c", "y/f.jp2"], "out", "x/f.j2c and {tmp}/y/f.jp2 would both write {tmp}/out/f.tif"),
    (["f.j2c"], "out.png", "-o names a folder, not an image"),
    (["f.j2c"], "nowhere/out", "folder {tmp}/nowhere does not exist"),
    (["f.j2c"], "a_file", "not a folder"),
])
def test_plan_images_says_the_first_mistake(tmp_path, sources, out, expect):
    (tmp_path / "a_file").write_bytes(b"")
    jobs, problem = plan_images([tmp_path / s for s in sources], tmp_path / out, "tif")
    assert jobs == [] and expect.format(tmp=tmp_path) in problem


@pytest.mark.skipif(not all(p.exists() for p in STREAMS), reason="../shared/conformance is absent")
def test_a_folder_and_files_decode_into_one_image_each(tmp_path):
    """A folder (two streams, a damaged one, a text file) and two files given apart (a JP2
    whose codestream box runs past the file's end, which is decoded with a warning, as
    OpenJPEG decodes it; a stream whose components differ in size, written as PGX): every
    image equal to decode()'s, the damaged file named with its error and the status 2, each
    warning said once with its file, nothing else written."""
    folder = tmp_path / "frames"
    folder.mkdir()
    for p in STREAMS[:2]:
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / "broken.j2c").write_bytes(b"\xff\x4f\xff\x51\x00\x05")
    (folder / "notes.txt").write_text("not a frame")
    pic = planes([(16, 24)] * 3)
    clean = jp2(codestream(pic), ihdr(16, 24, 3) + colr(16))
    at = clean.index(b"jp2c") - 4
    long = tmp_path / "long.jp2"
    long.write_bytes(clean[:at] + struct.pack(">I", 100000) + clean[at + 4:])
    out = tmp_path / "out"
    r = cinegpu("decode", folder, long, STREAMS[2], "-o", out, "--workers", "1")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "LenientWarning" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert sum(f"{folder / 'broken.j2c'}: " in line for line in lines) == 1, r.stderr
    warned = [line for line in lines if f"{long}: warning: JP2: the codestream box's 100000 bytes" in line]
    assert len(warned) == 1, r.stderr
    assert f"4 of 5 files decoded into {out}" in lines[-1]
    for p in STREAMS[:2]:
        assert np.array_equal(tifffile.imread(out / f"{p.stem}.tif"), _as_written(p.read_bytes())), p
    for k, comp in enumerate(decode(STREAMS[2].read_bytes())):
        assert np.array_equal(read_pgx(out / f"{STREAMS[2].stem}_{k}.pgx"), comp)
    assert np.array_equal(tifffile.imread(out / "long.tif"), np.stack(pic, axis=-1))
    pgx = [f"p1_07_{k}.pgx" for k in range(len(decode(STREAMS[2].read_bytes())))]
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(["p0_01.tif", "p0_11.tif", "long.tif", *pgx])     # no partial or temporary file
    assert sorted(r.stdout.split()) == sorted(str(out / name) for name in written)


def _as_written(data: bytes) -> np.ndarray:
    """What a TIFF of a codestream holds: each component at its precision scaled to the
    file's 8 or 16 bits (cinegpu.media.images.write)."""
    siz = parse_codestream(data).siz
    bits = [siz.precision(c) for c in range(siz.Csiz)]
    depth = file_depth(bits)
    planes_ = [to_file_range(c, b, siz.signed(k), depth) for k, (c, b) in enumerate(zip(decode(data), bits))]
    return planes_[0] if len(planes_) == 1 else np.stack(planes_, axis=-1)


@pytest.mark.gpu
def test_a_folder_decodes_on_the_gpu_as_on_the_cpu(tmp_path):
    """``--backend cuda``: a folder's files (the package's 2K DCI frame, twice, and a small
    lossless one) through the GPU pipeline, each PGX component within 1 of decode()'s on the
    CPU (exact for the lossless one)."""
    folder = tmp_path / "frames"
    folder.mkdir()
    frames = {"dci_1.j2c": SAMPLE.read_bytes(), "dci_2.j2c": SAMPLE.read_bytes(),
              "small.j2c": codestream(planes([(16, 24)] * 3))}
    for name, data in frames.items():
        (folder / name).write_bytes(data)
    out = tmp_path / "out"
    r = cinegpu("decode", folder, "-o", out, "--format", "pgx", "--backend", "cuda", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert f"3 of 3 files decoded into {out}" in r.stderr.splitlines()[-1]
    for name, data in frames.items():
        for k, comp in enumerate(decode(data)):
            got = read_pgx(out / f"{name[:-4]}_{k}.pgx").astype(np.int64)
            limit = 0 if name == "small.j2c" else 1
            assert got.shape == comp.shape and np.abs(got - comp).max() <= limit, (name, k)


@pytest.mark.skipif(not all(p.exists() for p in STREAMS), reason="../shared/conformance is absent")
def test_images_written_by_threads_are_said_in_order_and_a_failed_write_counts(tmp_path, monkeypatch, capsys):
    """The images go to writer threads; their paths are printed in the files' order, and an
    image that cannot be written is named with its error and counted as failed, the rest written."""
    from cinegpu.decode.pipeline import FramePipeline
    from cinegpu.player.commands import decode as command

    real = command.write_image

    def full_disk_for_p0_11(path, *args, **kwargs):
        if path.stem == "p0_11":
            raise OSError(28, "No space left on device")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(command, "write_image", full_disk_for_p0_11)
    sources = STREAMS * 2
    jobs = [command.ImageJob(p, tmp_path / f"{p.stem}_{k}.pgx") for k, p in enumerate(sources)]
    jobs[1] = command.ImageJob(STREAMS[1], tmp_path / "p0_11.pgx")
    with FramePipeline(backend="cpu", workers=1) as pipe:
        failed = command._decode_all(pipe, jobs, 0, writers=3)
    out, err = capsys.readouterr()
    assert failed == 1
    assert f"{STREAMS[1]}: cannot write {tmp_path / 'p0_11.pgx'}: [Errno 28] No space left on device" in err
    firsts = [line.rsplit("/", 1)[1].rsplit("_", 1)[0] for line in out.split()]
    assert list(dict.fromkeys(firsts)) == [j.image.stem for k, j in enumerate(jobs) if k != 1]
    for k, job in enumerate(jobs):
        if k != 1:
            for c, comp in enumerate(decode(job.source.read_bytes())):
                assert np.array_equal(read_pgx(tmp_path / f"{job.image.stem}_{c}.pgx"), comp)
    assert not list(tmp_path.glob("p0_11_[0-9].pgx")) and not list(tmp_path.glob(".*"))    # nothing of the failed one


@pytest.mark.slow  # decodes 2K frames to PNG until it is interrupted
def test_an_interrupted_folder_leaves_whole_images_only(tmp_path):
    """Ctrl-C while a folder of 2K frames is decoded to PNG: status 130 and one line; every
    image left is whole (and the frame's), no temporary file stays, no slot in /dev/shm."""
    import imagecodecs

    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(12):
        (folder / f"f{k}.j2c").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out"
    proc = subprocess.Popen([*CLI, "decode", str(folder), "-o", str(out), "--format", "png", "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not any(out.glob("*.png")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "cinegpu decode: interrupted", err
    left = sorted(out.iterdir())
    assert left and all(p.suffix == ".png" and not p.name.startswith(".") for p in left), left
    want = (np.stack(decode(SAMPLE.read_bytes()), axis=-1).astype(np.int64) * 65535 // 4095).astype(np.uint16)
    for p in left:
        assert np.array_equal(imagecodecs.png_decode(p.read_bytes()), want), p
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"cinegpu_{proc.pid}_")]


@pytest.mark.parametrize("head, expect", [
    (bytes(16) + bytes.fromhex("060e2b34020501010d01020101") + bytes(40), "an MXF track file, not a codestream"),
    (b'<?xml version="1.0"?><CompositionPlaylist/>', "XML, not a codestream or JP2 file (cinegpu play"),
    (b"\x89PNG\r\n\x1a\n" + bytes(32), "not a codestream or JP2 file (a PNG image): no SOC"),
    (b"\xff\x4f\xff\x51" + bytes(8), "no SOC"),      # a codestream: its own error, as it is
])
def test_a_file_that_is_no_codestream_is_named_for_what_it_is(tmp_path, head, expect):
    from cinegpu.decode import InvalidSegment
    from cinegpu.player.commands.decode import _why

    path = tmp_path / "given.j2c"       # the name says codestream; the bytes say otherwise
    path.write_bytes(head)
    assert _why(path, head, InvalidSegment("no SOC")).startswith(expect)


def test_an_mxf_file_is_refused_by_name_before_it_is_read(tmp_path):
    reel = tmp_path / "reel.mxf"
    reel.write_bytes(b"")
    r = cinegpu("decode", reel, "-o", tmp_path / "o.tif")
    assert r.returncode == 2 and r.stderr.strip() == (f"cinegpu decode: {reel}: an MXF track file, not a codestream or "
                                                      "JP2 file (cinegpu play and cinegpu bench take MXF files and packages)")


def test_format_for_one_file_must_agree_with_its_image(tmp_path):
    """``--format`` names a folder's images; for one file the image's type is -o's suffix, and
    a --format that contradicts it is a mistake said before any work."""
    r = cinegpu("decode", SAMPLE, "-o", tmp_path / "one.tif", "--format", "png")
    assert r.returncode == 2 and r.stderr.strip() == (f"cinegpu decode: {tmp_path / 'one.tif'}: --format png names "
                                                      "the images of several files; one file's is -o's suffix")
    assert not list(tmp_path.iterdir())
