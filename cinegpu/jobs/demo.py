"""The demo: a short synthetic test sequence mastered into a 2K flat DCP in a cache folder.

Each frame (1998x1080, Rec.709 RGB, floats): 75% colour bars across the top half, a grey ramp
below them, a white vertical bar and a diagonal edge pattern moving with the frame number (to see
motion and judder), and the frame number drawn in a 5x7 pixel font, large, at the bottom left.

The cache is ``$CINEGPU_DEMO_DIR``, else ``$XDG_CACHE_HOME/cinegpu/demo`` (``~/.cache`` when
unset); a DCP found there with the expected frame count is reused.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from cinegpu.decode.kernel_cache import cache_root
from cinegpu.media.errors import MediaError
from cinegpu.media.source import open_source

__all__ = ["DEMO_FRAMES", "WIDTH", "HEIGHT", "build_demo", "demo_dir", "demo_frame", "find_demo"]

DEMO_FRAMES, WIDTH, HEIGHT = 48, 1998, 1080
TITLE = "cinegpu-Demo_TST-1_F_XX-XX_51_2K_CINEGPU_20260101_CGP_SMPTE_OV"

# 5x7 digits, one string of 7 rows of 5 bits per digit.
_FONT = {
    "0": "01110 10001 10011 10101 11001 10001 01110", "1": "00100 01100 00100 00100 00100 00100 01110",
    "2": "01110 10001 00001 00010 00100 01000 11111", "3": "11110 00001 00001 01110 00001 00001 11110",
    "4": "00010 00110 01010 10010 11111 00010 00010", "5": "11111 10000 11110 00001 00001 10001 01110",
    "6": "00110 01000 10000 11110 10001 10001 01110", "7": "11111 00001 00010 00100 01000 01000 01000",
    "8": "01110 10001 10001 01110 10001 10001 01110", "9": "01110 10001 10001 01111 00001 00010 01100",
}
_BARS = np.array([[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1]],
                 np.float32) * 0.75


def demo_dir() -> Path:
    env = os.environ.get("CINEGPU_DEMO_DIR")
    if env:
        return Path(env)
    return cache_root() / "demo"


def _digits(text: str, scale: int) -> np.ndarray:
    """A boolean mask of ``text`` (digits) in the 5x7 font, each font pixel ``scale`` wide."""
    glyphs = []
    for ch in text:
        rows = [[c == "1" for c in row] for row in _FONT[ch].split()]
        glyphs.append(np.array(rows))
        glyphs.append(np.zeros((7, 1), bool))
    mask = np.concatenate(glyphs[:-1], axis=1)
    return np.kron(mask, np.ones((scale, scale), bool))


def demo_frame(n: int, width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """Frame ``n``: (height, width, 3) float32 Rec.709 RGB, 0..1."""
    img = np.zeros((height, width, 3), np.float32)
    top = height // 2
    x = np.arange(width)
    img[:top] = _BARS[np.minimum(x * len(_BARS) // width, len(_BARS) - 1)][None]
    ramp = (x / max(1, width - 1)).astype(np.float32)
    img[top:top + height // 6] = ramp[None, :, None]
    y0 = top + height // 6
    yy, xx = np.mgrid[y0:height, 0:width]
    stripes = ((xx + yy + 8 * n) // max(4, height // 40)) % 2
    img[y0:] = (0.1 + 0.4 * stripes)[..., None]
    bar_w = max(2, width // 64)
    bx = (n * max(1, width // 48)) % (width - bar_w)
    img[:, bx:bx + bar_w] = 1.0
    mask = _digits(f"{n:04d}", max(1, height // 60))
    mh, mw = mask.shape
    oy, ox = height - mh - height // 20, width // 20
    if oy >= 0 and ox + mw <= width:
        box = img[oy - 8:oy + mh + 8, ox - 8:ox + mw + 8]
        box[:] = 0.0
        img[oy:oy + mh, ox:ox + mw][mask] = 1.0
    return img


def find_demo(folder: Path | None = None, frames: int = DEMO_FRAMES) -> Path | None:
    """The cached demo DCP if it is there, complete and of ``frames`` frames."""
    folder = demo_dir() if folder is None else Path(folder)
    if not (folder / "ASSETMAP.xml").is_file():
        return None
    try:
        src = open_source(folder)
    except MediaError:
        return None
    try:
        return folder if src.frame_count == max(frames, 24) else None
    finally:
        src.close()


def build_demo(folder: Path | None = None, frames: int = DEMO_FRAMES, *, workers: int | None = None,
               progress: bool = True) -> Path:
    """Master the demo into ``folder`` (default :func:`demo_dir`) unless it is there already."""
    # mastering costs ~0.3 s to import: only when the demo is built (find_demo runs at every start)
    from cinegpu.jobs.master_job import MasterJob  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    from cinegpu.jobs.mastering import master  # noqa: PLC0415  (start-up: mastering, ~0.3 s)
    folder = demo_dir() if folder is None else Path(folder)
    if find_demo(folder, frames) is not None:
        return folder
    if folder.exists() and any(folder.iterdir()):
        if not (folder / "ASSETMAP.xml").is_file():
            raise MediaError(folder, "not empty and not a DCP: will not replace it with the demo")
        shutil.rmtree(folder)   # a stale or different demo: ours to replace
    folder.parent.mkdir(parents=True, exist_ok=True)   # the cache's own folder: ours to make
    # a reel lasts at least one second (ST 429-2): fewer frames repeat
    master(MasterJob.of(demo_frame, frames, folder, title=TITLE, profile="2k", fps=24,
                        colorspace="rec709", container="flat", frames=max(frames, 24),
                        workers=workers, kind="test"), progress=progress)
    return folder
