"""The default media of ``cinegpu play`` with no PATH: a short synthetic sequence.

:func:`default_media` returns a path :func:`cinegpu.media.open_source` opens.
The demo DCP that ``cinegpu demo`` masters, when it is in its cache
(:func:`cinegpu.jobs.demo.find_demo`); else moving colour bars (24 frames,
960x540, 8-bit RGB) synthesised with OpenJPEG's ``opj_compress`` into a cache
folder; without it, the sample frame shipped in ``cinegpu/media/samples``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from cinegpu.decode.kernel_cache import cache_root
from cinegpu.jobs import demo as demo_job
from cinegpu.media.samples import BARS_2K

__all__ = ["default_media", "resolutions", "synthesise_sequence", "write_ppm"]

FRAMES, WIDTH, HEIGHT = 24, 960, 540


def _cache_dir() -> Path:
    return cache_root() / "default-media"


def write_ppm(path, pixels: np.ndarray, maxval: int) -> None:
    """A binary PPM (P6) of (H, W, 3) integers; 16-bit samples when maxval > 255."""
    h, w = pixels.shape[:2]
    dtype = ">u2" if maxval > 255 else "u1"
    Path(path).write_bytes(b"P6\n%d %d\n%d\n" % (w, h, maxval) + np.asarray(pixels).astype(dtype).tobytes())


def bars(n: int, width: int, height: int, maxval: int = 255) -> np.ndarray:
    """Frame ``n`` of the synthetic sequence: colour bars sliding left, a grey ramp below."""
    x = (np.arange(width) + n * max(1, width // 48)) % width
    colours = np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]])
    top = colours[(x * 8) // width] * int(maxval * 0.75)
    img = np.empty((height, width, 3), np.int64)
    img[: height * 2 // 3] = top
    img[height * 2 // 3:] = ((np.arange(width) * maxval) // max(1, width - 1))[:, None]
    return img


def resolutions(width: int, height: int) -> int:
    """Resolution levels OpenJPEG accepts for a small picture (its default 6 needs 32 samples)."""
    return max(1, min(6, min(width, height).bit_length()))


def synthesise_sequence(folder, frames: int = FRAMES, width: int = WIDTH, height: int = HEIGHT,
                        maxval: int = 255, opj: str = "opj_compress") -> Path:
    """Write ``frames`` codestreams ``frame_000000.j2c`` ... of :func:`bars` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(frames):
            ppm = Path(tmp) / f"{n}.ppm"
            write_ppm(ppm, bars(n, width, height, maxval), maxval)
            subprocess.run([opj, "-i", str(ppm), "-o", str(folder / f"frame_{n:06d}.j2c"),
                            "-n", str(resolutions(width, height))],
                           check=True, capture_output=True)
    return folder


def default_media() -> Path:
    """A path to play when none is given (see the module docstring)."""

    demo = demo_job.find_demo()
    if demo is not None:
        return demo
    folder = _cache_dir()
    if len(list(folder.glob("frame_*.j2c"))) == FRAMES:
        return folder
    if shutil.which("opj_compress"):
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        synthesise_sequence(tmp, FRAMES, WIDTH, HEIGHT)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return folder
    sample = BARS_2K
    if sample.is_file():
        return sample
    raise FileNotFoundError("no default media: install OpenJPEG's opj_compress or give a PATH")
