"""Mastering in the tests: the encoder's presence (:data:`needs_encoder`), input frames written
as the mastering readers take them (16-bit PNG, DPX, TIFF folders, a white still), ``cinegpu
master`` run in this process (:func:`master_cli`), what a package holds (its codestreams), the
stand-ins that fail a frame (:class:`DieOn`) or any encoding (:class:`NoEncoding`), and the
ClairMeta check of a DCP.
"""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from cinegpu.media import open_source
from cinegpu.media.images.frames import ImageFrames
from cinegpu.media.package.dcp_write import encoder_name
from cinegpu.player.cli import main
from conftest import HAVE_ASDCPLIB

#: whether mastering can encode here: cinegpu.encode, or opj_compress where that is the encoder
HAVE_ENCODER = encoder_name() != "opj_compress" or shutil.which("opj_compress") is not None
needs_encoder = pytest.mark.skipif(not HAVE_ENCODER, reason="no encoder: cinegpu.encode nor opj_compress")


def clairmeta_ok(root: Path, *, kdm: Path | None = None, key: Path | None = None) -> str:
    """ClairMeta's ``check -type dcp`` of ``root`` (with ``kdm`` and the recipient's ``key``
    for an encrypted package) succeeds with no error and no bit-rate warning; its report
    ("" where ClairMeta is not installed). With asdcplib's tools on PATH
    (:data:`conftest.HAVE_ASDCPLIB`, as in CI) every track file is probed by them: no
    dependency may be missing; without them ClairMeta checks what it can."""
    try:
        import clairmeta  # noqa: F401  (probe: is ClairMeta installed)
    except ImportError:
        return ""
    keys = ["-kdm", str(kdm), "-key", str(key)] if kdm is not None else []
    run = subprocess.run([sys.executable, "-m", "clairmeta.cli", "check", "-type", "dcp", *keys, str(root)],
                         capture_output=True, text=True, timeout=300)
    report = run.stdout + run.stderr
    assert "Check succeeded" in report and "Error(s):" not in report, report
    assert "bitrate" not in report.lower(), report
    if HAVE_ASDCPLIB:
        assert "Missing dependency" not in report and "ProbeError" not in report, report
    return report


def write_png16(path: Path, img: np.ndarray) -> None:
    """``img`` (floats 0..1) as a 16-bit PNG."""
    from cinegpu.media.images.png import write_png16
    write_png16(path, np.rint(img * 65535).astype(np.uint16))


def dpx_bytes(values: np.ndarray, bits: int, big_endian: bool = True) -> bytes:
    """A minimal RGB DPX (ST 268): 2048-byte header, then the image element."""
    h, w, _ = values.shape
    e = ">" if big_endian else "<"
    head = bytearray(2048)
    head[0:4] = b"SDPX" if big_endian else b"XPDS"
    struct.pack_into(e + "I", head, 4, 2048)
    struct.pack_into(e + "II", head, 772, w, h)
    head[800], head[803] = 50, bits
    struct.pack_into(e + "HHI", head, 804, 1 if bits in (10, 12) else 0, 0, 2048)
    flat = values.reshape(h, -1).astype(np.uint32)
    if bits == 10:
        per_row = -(-w * 3 // 3)
        padded = np.zeros((h, per_row * 3), np.uint32)
        padded[:, :w * 3] = flat
        t = padded.reshape(h, per_row, 3)
        words = (t[..., 0] << 22) | (t[..., 1] << 12) | (t[..., 2] << 2)
        data = words.astype(e + "u4").tobytes()
    elif bits == 12:
        data = (flat << 4).astype(e + "u2").tobytes()
    else:
        data = flat.astype(e + "u2").tobytes()
    return bytes(head) + data


def still(tmp_path: Path, level: float = 1.0) -> Path:
    """A folder ``tmp_path / "in"`` holding one 64x36 PNG of grey ``level`` (white by default:
    ``cinegpu.encode.encode`` infers the precision from the samples and refuses a DCI frame whose
    X'Y'Z' all stay below 2048, "must be 12 bit")."""
    src = tmp_path / "in"
    src.mkdir(exist_ok=True)
    write_png16(src / "f.png", np.full((36, 64, 3), level, np.float32))
    return src


class NoEncoding:
    """Stands in for ``FrameEncoders``: a test that a mistake is refused before any frame is
    encoded fails here if one is about to be."""

    def __init__(self, *a, **k):
        raise AssertionError("a frame was about to be encoded")


def master_cli(src, out, *options: str, title: str = "t", fmt: str | None = None, codec: str | None = None,
               fps=None, frames=None, workers=None, expect: int = 0) -> Path:
    """``cinegpu master SRC -o OUT`` run in this process (``player.cli.main``), quiet, with the
    options given by keyword and then ``options``; ``out``, once the exit status is ``expect``."""
    argv = ["master", str(src), "-o", str(out)]
    for flag, value in (("--format", fmt), ("--codec", codec), ("--fps", fps), ("--frames", frames)):
        if value is not None:
            argv += [flag, str(value)]
    argv += ["--title", title, "--quiet"]
    if workers is not None:
        argv += ["--workers", str(workers)]
    argv += map(str, options)
    rc = main(argv)
    assert rc == expect, f"cinegpu {' '.join(argv)}: exit status {rc}, not {expect}"
    return Path(out)


def write_tiffs(folder: Path, n: int, size=(96, 54)) -> Path:
    """``folder`` made, holding ``n`` random 16-bit RGB TIFF frames of ``size`` (width, height)."""
    import tifffile
    folder.mkdir()
    rng = np.random.default_rng(7)
    for i in range(n):
        img = (rng.random((size[1], size[0], 3)) * 65535).astype(np.uint16)
        tifffile.imwrite(folder / f"f{i:04d}.tif", img, photometric="rgb")
    return folder


def package_codestreams(dcp: Path) -> list[bytes]:
    """Every frame's codestream of the package ``dcp``, in order."""
    with open_source(dcp) as src:
        return [src.frame(i) for i in range(len(src))]


@dataclass(frozen=True)
class DieOn:
    """Frames of ``files``, except that reading frame ``k`` kills the process reading it."""

    files: ImageFrames
    k: int

    def __call__(self, i: int):
        if i == self.k:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.files(i)


def dci_codestream() -> bytes:
    """A 2K flat DCI codestream of one X'Y'Z' level (12 bits used), as mastering codes it."""
    from cinegpu.media.package.dcp_write import encode_frame
    x = np.full((1080, 1998, 3), 2000, np.uint16)
    x[0, 0] = 4095                     # 12 bits used
    return encode_frame(x)
