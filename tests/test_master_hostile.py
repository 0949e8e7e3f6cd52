"""Hostile inputs and outputs of ``cinegpu master``: each is one MediaError line naming the file
(and frame), exit status 2 (130 for SIGINT, 143 for SIGTERM), time and memory bounded, and
nothing left behind: no partial folder, no DCP. Every hostile file is built here."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media import MediaError
from cinegpu.media.package.dcp_write import check_output
from cinegpu.media.images.frames import read_image
from cinegpu.player.cli import main

from test_master import _dpx, _write_png16, needs_encoder

CLI = [sys.executable, "-m", "cinegpu.player.cli"]


# -- hostile files, built in code ------------------------------------------------------------------
def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width: int, height: int, depth: int, colour: int, idat: bytes) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def _zlib_zeros(n: int) -> bytes:
    """A zlib stream inflating to ``n`` zero bytes (a deflate bomb): one 1 MiB block ended by a
    full flush (no reference across it) repeated, then the rest, then the Adler-32 of n zeros."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    rest = tail.compress(bytes(n % (1 << 20))) + tail.flush()
    return b"\x78\xda" + block * (n >> 20) + rest + struct.pack(">I", ((n % 65521) << 16) | 1)


def _png_bomb(width: int, height: int, depth: int) -> bytes:
    """An RGB PNG whose IDAT really inflates to the ``width`` x ``height`` image (black)."""
    return _png(width, height, depth, 2, _zlib_zeros(height * (1 + width * 3 * depth // 8)))


def _tiff_claiming(path: Path, width: int, height: int) -> Path:
    """A 16-bit RGB deflate TIFF of 16x16 pixels whose IFD is patched to claim width x height."""
    import tifffile
    tifffile.imwrite(path, np.zeros((16, 16, 3), np.uint16), photometric="rgb",
                     compression="zlib", rowsperstrip=16)
    data = bytearray(path.read_bytes())
    with tifffile.TiffFile(path) as tif:
        tags = tif.pages.first.tags
        for name, value in (("ImageWidth", width), ("ImageLength", height), ("RowsPerStrip", height)):
            struct.pack_into({3: "<H", 4: "<I"}[tags[name].dtype], data, tags[name].valueoffset, value)
    path.write_bytes(bytes(data))
    return path


def _tiff_strip_bomb(path: Path, inflated: int) -> Path:
    """A 64x64 8-bit RGB deflate TIFF whose one strip inflates to ``inflated`` bytes."""
    import tifffile
    tifffile.imwrite(path, np.zeros((64, 64, 3), np.uint8), photometric="rgb", compression="zlib",
                     rowsperstrip=64)
    data, bomb = bytearray(path.read_bytes()), _zlib_zeros(inflated)
    with tifffile.TiffFile(path) as tif:
        tags = tif.pages.first.tags
        for name, value in (("StripOffsets", len(data)), ("StripByteCounts", len(bomb))):
            struct.pack_into({3: "<H", 4: "<I"}[tags[name].dtype], data, tags[name].valueoffset, value)
    path.write_bytes(bytes(data) + bomb)
    return path


def _dpx_claiming(width: int, height: int) -> bytes:
    """A 16-bit RGB DPX header (ST 268) claiming ``width`` x ``height``, with 4 KiB of data."""
    head = bytearray(_dpx(np.zeros((1, 1, 3), int), 16)[:2048])
    struct.pack_into(">II", head, 772, width, height)
    return bytes(head) + bytes(4096)


def _rows16(width: int, height: int) -> bytes:
    return b"".join(b"\0" + bytes(width * 6) for _ in range(height))


#: name -> (file name, builder(path) -> bytes or None, the message expected).
HOSTILE = {
    "png16 20000x20000 bomb": ("a.png", lambda p: _png_bomb(20000, 20000, 16),
                               "20000x20000 pixels is larger than the 8192x4320"),
    "png8 20000x20000 bomb": ("a.png", lambda p: _png_bomb(20000, 20000, 8),
                              "20000x20000 pixels is larger"),
    "png8 over Pillow's pixel limit": ("a.png", lambda p: _png_bomb(14000, 14000, 8),
                                       "14000x14000 pixels is larger"),
    "png16 truncated rows": ("a.png", lambda p: _png(64, 32, 16, 2, zlib.compress(_rows16(64, 16))),
                             "PNG image data truncated: 6160 of 12320 bytes"),
    "png16 IDAT inflating past its rows": ("a.png",
                                           lambda p: _png(64, 64, 16, 2, _zlib_zeros(64 << 20)),
                                           "inflates to more than the 24640 bytes"),
    "png bad deflate": ("a.png", lambda p: _png(64, 32, 16, 2, b"\x78\x9c\xff\xff" + bytes(40)),
                        "damaged image: error"),
    "png IHDR depth 4 RGB": ("a.png", lambda p: _png(8, 8, 4, 2, zlib.compress(bytes(8 * 13))),
                             "not a valid combination"),
    "png chunk past the end": ("a.png", lambda p: _png(8, 8, 8, 2, zlib.compress(bytes(200)))[:45],
                               "runs past the end of the file"),
    "png empty": ("a.png", lambda p: _png(0, 8, 8, 2, b""), r"empty image \(0x8 pixels\)"),
    "tiff 30000x30000 deflate": ("a.tif", lambda p: _tiff_claiming(p, 30000, 30000) and None,
                                 "30000x30000 pixels is larger"),
    "tiff strip bomb": ("a.tif", lambda p: _tiff_strip_bomb(p, 1 << 30) and None, "damaged image"),
    "tiff garbage IFD": ("a.tif", lambda p: b"II*\0" + struct.pack("<I", 8) + b"\xff" * 40,
                         "damaged image|cannot read"),
    "dpx 30000x30000 header": ("a.dpx", lambda p: _dpx_claiming(30000, 30000),
                               "30000x30000 pixels is larger"),
    "dpx truncated": ("a.dpx", lambda p: _dpx(np.zeros((64, 64, 3), int), 10)[:4000],
                      "DPX image data truncated"),
}


def _build(tmp_path: Path, name: str) -> tuple[Path, str]:
    filename, make, message = HOSTILE[name]
    path = tmp_path / name.replace(" ", "_").replace("'", "") / filename
    path.parent.mkdir()
    data = make(path)
    if data is not None:
        path.write_bytes(data)
    return path, message


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_frame_is_one_media_error(tmp_path, name):
    path, message = _build(tmp_path, name)
    with pytest.raises(MediaError, match=message) as info:
        read_image(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


_MEASURE = r"""
import json, resource, sys, time
from cinegpu.media import MediaError
from cinegpu.media.images.frames import read_image
rows = [["(imports)", "", 0.0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]]
for path in sys.argv[1:]:
    t = time.perf_counter()
    try:
        read_image(path)
        kind = "read"
    except MediaError:
        kind = "MediaError"
    rows.append([path, kind, time.perf_counter() - t,
                 resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024])
print(json.dumps(rows))
"""


def test_hostile_frames_bounded_in_time_and_memory(tmp_path):
    """All hostile frames in one child (its address space capped at 3 GiB, so an unbounded
    reader fails there rather than on the machine): each refused within a second, the child's
    peak RSS (ru_maxrss) less than 100 MiB over what it had after its imports (which, on Linux,
    counts the forking parent's). The old readers took 2.3 GiB and 12 s for the 20000x20000
    16-bit PNG bomb and ran out of memory on the 30000x30000 TIFF."""
    paths = [str(_build(tmp_path, name)[0]) for name in sorted(HOSTILE)]
    code = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n" + _MEASURE
    run = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    base, *rows = json.loads(run.stdout)
    for path, kind, seconds, peak_mib in rows:
        print(f"{Path(path).parent.name:40s} {kind:10s} {seconds * 1e3:8.1f} ms  "
              f"peak {peak_mib:.0f} MiB (+{peak_mib - base[3]:.0f})")
    assert [r[1] for r in rows] == ["MediaError"] * len(HOSTILE)
    assert max(r[2] for r in rows) < 1.0
    assert rows[-1][3] - base[3] < 100


def test_png_16bit_rgb_read_losslessly(tmp_path):
    """16-bit RGB through libpng, every row filter (ISO/IEC 15948 clause 9) exact."""
    import imagecodecs
    rng = np.random.default_rng(7)
    img = (np.linspace(0, 60000, 97)[None, :, None] + rng.integers(0, 4000, (41, 97, 3))).astype(np.uint16)
    (tmp_path / "a.png").write_bytes(imagecodecs.png_encode(img))   # libpng's adaptive filters
    assert np.array_equal(np.rint(read_image(tmp_path / "a.png") * 65535), img)
    rgba = np.concatenate([img, np.full((41, 97, 1), 9, np.uint16)], axis=2)
    (tmp_path / "b.png").write_bytes(imagecodecs.png_encode(rgba))
    assert np.array_equal(np.rint(read_image(tmp_path / "b.png") * 65535), img)


# -- output paths ----------------------------------------------------------------------------------
def _still(tmp_path: Path) -> Path:
    """A white 64x36 PNG. White, because ``cinegpu.encode.encode`` infers the precision from the
    samples and refuses a DCI frame whose X'Y'Z' all stay below 2048 ("must be 12 bit")."""
    src = tmp_path / "in"
    src.mkdir()
    _write_png16(src / "f.png", np.ones((36, 64, 3), np.float32))
    return src


def _outputs(tmp_path: Path) -> dict:
    """Output paths cinegpu master must refuse, each with the message's words."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "file").write_text("x")
    return {"link": "is a symbolic link", "dangling": "is a symbolic link",
            "file/dcp": "parent .*file is not a folder",
            "missing/dcp": "parent folder .*missing does not exist",
            "file": "exists and is not an empty folder"}


def test_bad_output_paths_are_refused(tmp_path, capsys):
    src = _still(tmp_path)
    for out, message in _outputs(tmp_path).items():
        before = sorted(p.name for p in tmp_path.iterdir())
        rc = main(["master", str(src), "-o", str(tmp_path / out), "--title", "t", "--quiet"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1, (out, err)
        assert re.search(message, err), (out, err)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, out
        with pytest.raises(MediaError, match=message):
            check_output(tmp_path / out)
    assert not any(tmp_path.glob(".*partial*"))


# -- a bad frame in the middle of a sequence ------------------------------------------------------
def _sequence(tmp_path: Path, suffix: str, bad: bytes | None) -> Path:
    """Three white 64x36 frames of ``suffix``; the middle one replaced by ``bad`` (or 80x36 if
    None). White: the encoder infers the precision from the samples (see _still)."""
    import tifffile
    src = tmp_path / "in"
    src.mkdir()
    for i in range(3):
        path = src / f"f{i}{suffix}"
        shape = (36, 80, 3) if i == 1 and bad is None else (36, 64, 3)
        if suffix == ".png":
            _write_png16(path, np.ones(shape, np.float32))
        elif suffix == ".tif":
            tifffile.imwrite(path, np.full(shape, 65535, np.uint16), photometric="rgb")
        else:
            path.write_bytes(_dpx(np.full(shape, 1023, int), 10))
        if i == 1 and bad is not None:
            path.write_bytes(bad(path.read_bytes()))
    return src


BAD_MIDDLE = {
    ".png": lambda d: d[:60],                                   # cut inside IDAT
    ".tif": lambda d: d[:8] + b"\xff" * (len(d) - 8),           # IFD overwritten
    ".dpx": lambda d: d[:2100],                                 # image data cut
}


def _master_fails(tmp_path, capsys, src: Path, words: str) -> None:
    out = tmp_path / "out"
    rc = main(["master", str(src), "-o", str(out), "--title", "t", "--quiet", "--workers", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert re.search(words, err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]     # no DCP, no partial folder


@needs_encoder
@pytest.mark.parametrize("suffix", sorted(BAD_MIDDLE))
def test_corrupt_frame_in_the_middle(tmp_path, capsys, suffix):
    src = _sequence(tmp_path, suffix, BAD_MIDDLE[suffix])
    _master_fails(tmp_path, capsys, src, rf"f1\{suffix}: frame 1: ")


@needs_encoder
def test_frame_of_another_size_in_the_middle(tmp_path, capsys):
    src = _sequence(tmp_path, ".png", None)
    _master_fails(tmp_path, capsys, src, r"f1\.png: frame 1: 80x36 pixels, but the sequence's "
                                         r"first frame is 64x36")


def test_frame_over_the_limit_first(tmp_path, capsys):
    src = tmp_path / "in"
    src.mkdir()
    (src / "f0.png").write_bytes(_png_bomb(20000, 20000, 16))
    t0 = time.perf_counter()
    _master_fails(tmp_path, capsys, src, r"f0\.png: frame 0: 20000x20000 pixels is larger than "
                                         r"the 4096x2160")    # the 2K profile's limit
    assert time.perf_counter() - t0 < 5


# -- full disks ------------------------------------------------------------------------------------
_FSIZE_CHILD = r"""
import resource, signal, sys
import numpy as np
from cinegpu.media.package.dcp_write import encode_frame
from cinegpu.player.cli import main
encode_frame(np.full((1080, 1998, 3), 3960, np.uint16))   # compile (and cache) first
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # write() then fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
sys.exit(main(sys.argv[1:]))
"""


@needs_encoder
@pytest.mark.slow
def test_file_size_limit_efbig(tmp_path):
    """RLIMIT_FSIZE of 64 KiB: the track file outgrows it on the 4th frame (EFBIG)."""
    src = _still(tmp_path)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-c", _FSIZE_CHILD, "master", str(src), "-o", str(out),
                          "--title", "t", "--quiet", "--workers", "1"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.count("\n") == 1 and "disk full writing j2c_" in run.stderr, run.stderr
    assert "File too large" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB tmpfs (needs root and CAP_SYS_ADMIN); skipped where it cannot be mounted."""
    where = tmp_path / "small"
    where.mkdir()
    run = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {run.stderr.strip() or run.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@needs_encoder
def test_full_disk_enospc(tmp_path, capsys, small_tmpfs):
    src = _still(tmp_path)
    rc = main(["master", str(src), "-o", str(small_tmpfs / "dcp"), "--title", "t", "--quiet",
               "--workers", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "disk full writing j2c_" in err and "No space left on device" in err, err
    assert list(small_tmpfs.iterdir()) == []


# -- signals ---------------------------------------------------------------------------------------
@needs_encoder
@pytest.mark.slow
@pytest.mark.parametrize("sig,status,words", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                              (signal.SIGINT, 130, "interrupted")])
def test_signal_mid_run_leaves_nothing(tmp_path, sig, status, words):
    """A real ``cinegpu master`` of 200 frames, signalled once its track file has frames: it
    exits 143 (128 + SIGTERM) or 130 (Ctrl-C) with one line, and removes its partial folder."""
    src = tmp_path / "in"
    src.mkdir()
    _write_png16(src / "f0.png", np.ones((36, 64, 3), np.float32))
    for i in range(1, 200):
        os.link(src / "f0.png", src / f"f{i}.png")
    out = tmp_path / "out"
    proc = subprocess.Popen(CLI + ["master", str(src), "-o", str(out), "--title", "t", "--quiet",
                                   "--workers", "1"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            tracks = list(tmp_path.glob(".out.partial-*/*.mxf"))
            if tracks and tracks[0].stat().st_size > 16384 + 3 * 4096:   # a few frames in
                break
            time.sleep(0.05)
        assert proc.poll() is None, "finished or failed before the signal"
        proc.send_signal(sig)
        err = proc.communicate(timeout=120)[1]
    finally:
        proc.kill()
    assert proc.returncode == status, err[-2000:]
    assert err.strip().splitlines() == [f"cinegpu master: {words}; no DCP written"], err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
