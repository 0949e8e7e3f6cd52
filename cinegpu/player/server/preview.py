"""The live picture of the control page: ``GET /api/v1/preview``, a small JPEG of the frame on screen.

Two halves, on two threads:

- the presentation thread (:class:`PreviewTarget`, wrapped around the player's texture target)
  keeps, for each picture it writes into the texture, a reference to it (the default: the cost of
  an assignment; the sources hand out a fresh array per frame and never write into it again:
  :class:`~cinegpu.player.picture.PictureConverter`, ``upscale``, the stereo joins), or, with
  ``copy=True`` (for a source that reuses its buffers), a copy of every ``step``-th pixel of every
  ``step``-th row, a ``step`` that brings the width to :data:`PREVIEW_WIDTH` pixels or less (a 2K
  frame, 2048 x 1080 RGBA16, step 5: a 410 x 216 RGBA16 array, about 0.15-0.45 ms of one core);
  the time it takes is measured (:attr:`PreviewStore.cost`);
- the request's thread (:meth:`PreviewStore.encode`) makes that downscaled copy from the reference
  (a CuPy picture is sliced on the device and only the copy comes back) and turns it into an 8-bit
  JPEG (Pillow), at most once per :data:`MIN_ENCODE_SECONDS` and only for a new picture: a page
  polling a few times a second gets the cached bytes in between.

The picture is the texture's content, the display's R'G'B' code values (16-bit, the 8 most
significant bits kept); subtitles drawn over it on screen are not in it.
"""

from __future__ import annotations

import io
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PIL import Image

from cinegpu.interop.xyz import XYZPlanes

__all__ = ["PREVIEW_WIDTH", "MIN_ENCODE_SECONDS", "PreviewStore", "PreviewTarget", "Encoded", "CopyCost"]

#: The widest picture encoded (pixels); a request may ask for a narrower one, never a wider one.
PREVIEW_WIDTH = 480
#: Seconds between two encodings of the preview (a newer picture waits this long at most).
MIN_ENCODE_SECONDS = 0.1
#: JPEG quality (Pillow's 1..95 scale).
JPEG_QUALITY = 80


@dataclass
class CopyCost:
    """What keeping the copies cost the presentation thread: ``count`` copies, ``seconds`` in
    total and ``worst`` (the longest, seconds), timed with ``time.perf_counter``."""

    count: int = 0
    seconds: float = 0.0
    worst: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        self.worst = max(self.worst, seconds)

    def header(self) -> str:
        """``count=N; mean_us=X; max_us=Y`` (microseconds), for the ``X-Preview-Copy-Cost`` header."""
        mean = self.seconds / self.count if self.count else 0.0
        return f"count={self.count}; mean_us={mean * 1e6:.1f}; max_us={self.worst * 1e6:.1f}"


@dataclass(frozen=True)
class Encoded:
    """One encoded preview: ``data`` (JPEG bytes) of copy number ``serial``, ``width`` x ``height``
    pixels, encoded from a copy of a ``source_width`` x ``source_height`` picture."""

    data: bytes
    serial: int
    width: int
    height: int
    source_width: int
    source_height: int
    asked_width: int

    @property
    def etag(self) -> str:
        return f'"p{self.serial}-{self.width}"'


class PreviewStore:
    """The last presented picture, a reference or a downscaled copy (see the module docstring);
    thread-safe.

    ``max_width``: the widest picture encoded (pixels); ``copy``: copy the downscaled picture on
    the presentation thread instead of keeping a reference; ``min_interval``: seconds between two
    encodings; ``now``: the clock (seconds) of that rate limit; ``timer``: the clock (seconds)
    :meth:`keep` is timed with (:attr:`cost`)."""

    def __init__(self, max_width: int = PREVIEW_WIDTH, *, copy: bool = False,
                 min_interval: float = MIN_ENCODE_SECONDS, now: Callable[[], float] = time.monotonic,
                 timer: Callable[[], float] = time.perf_counter) -> None:
        self.max_width, self.copy, self.min_interval = max(1, max_width), copy, min_interval
        self._now, self._timer = now, timer
        self._lock = threading.Lock()           # the picture and its serial
        self._encode_lock = threading.Lock()    # one encoding at a time; the cache
        self._picture = None                    # the picture shown, or its downscaled copy (copy=True)
        self._source_size = (0, 0)              # (width, height) of the picture shown
        self._serial = 0
        self._cache: Encoded | None = None
        self._encoded_at = -math.inf
        self.cost = CopyCost()

    # ------------------------------------------------------------ presentation thread

    def keep(self, pixels) -> None:
        """Keep ``pixels`` ((h, w, 4) RGBA16 as the targets take it, or (h, w, 3), (h, w); numpy or
        CuPy; a downscaled copy with ``copy``), timed into :attr:`cost`.  Called for each picture
        written to the texture."""
        t0 = self._timer()
        size = (int(pixels.shape[1]), int(pixels.shape[0]))
        picture = _subsample(pixels, self._step(size[0])) if self.copy else pixels
        with self._lock:
            self._picture, self._source_size = picture, size
            self._serial += 1
        self.cost.add(self._timer() - t0)

    def _step(self, width: int) -> int:
        return max(1, -(-width // self.max_width))

    def clear(self) -> None:
        """Forget the picture (nothing on screen: unloaded)."""
        with self._lock:
            self._picture, self._source_size = None, (0, 0)
            self._serial += 1

    # ------------------------------------------------------------ request threads

    @property
    def serial(self) -> int:
        """The number of the picture held (it grows with each picture and each clear)."""
        return self._serial

    def encode(self, width: int | None = None) -> Encoded | None:
        """The JPEG of the picture on screen, at most ``width`` pixels wide (None: the downscaled
        width, :data:`PREVIEW_WIDTH` or less), or None when there is none.  The last encoding is
        reused while the picture is the same, or while it is younger than ``min_interval``
        seconds (the picture then lags by that much at most)."""
        with self._encode_lock:
            with self._lock:
                picture, serial, size = self._picture, self._serial, self._source_size
            if picture is None:
                return None
            cached = self._cache
            if cached is not None and cached.asked_width == (width or 0) and \
                    (cached.serial == serial or self._now() - self._encoded_at < self.min_interval):
                return cached
            copy = picture if self.copy else _subsample(picture, self._step(size[0]))
            data, out_w, out_h = _jpeg(copy, width)
            self._cache = Encoded(data, serial, out_w, out_h, size[0], size[1], width or 0)
            self._encoded_at = self._now()
            return self._cache


def _subsample(pixels, step: int) -> np.ndarray:
    """Every ``step``-th sample of every ``step``-th row of ``pixels`` ((h, w, c) or (h, w)), copied
    into host memory: (h', w', c) uint16.  An RGBA16 picture whose pixels are contiguous is read as
    one 64-bit word a pixel (a 2K frame, step 5: 0.14 ms against 0.9 ms sample by sample, numpy,
    one core); a CuPy picture is sliced on the device and only the copy comes back; X'Y'Z' planes
    (:class:`~cinegpu.interop.xyz.XYZPlanes`) are sliced, then converted."""
    if isinstance(pixels, XYZPlanes):
        return pixels.map(lambda plane: np.array(plane[::step, ::step])).rgba16()
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    packed = pixels.dtype == np.uint16 and pixels.shape[2] == 4 and pixels.strides[2] == 2 and \
        pixels.strides[1] == 8
    small = pixels.view(np.uint64)[:, :, 0][::step, ::step] if packed else pixels[::step, ::step]
    copy = np.array(small) if isinstance(small, np.ndarray) else small.get()   # CuPy: .get() to host
    return copy.view(np.uint16).reshape(*copy.shape, 4) if packed else copy


def _jpeg(copy: np.ndarray, width: int | None) -> tuple[bytes, int, int]:
    """(JPEG bytes, width, height) of ``copy`` ((h, w, c) uint16 code values: c >= 3, R G B first,
    or c = 1, grey; the top 8 bits kept), scaled down to ``width`` pixels (aspect kept) when it is
    wider."""
    copy = copy[:, :, :3] if copy.shape[2] >= 3 else copy[:, :, :1]
    eight = (copy >> 8).astype(np.uint8)
    image = Image.fromarray(eight[..., 0] if eight.shape[2] == 1 else np.ascontiguousarray(eight))
    if width and image.width > width:
        image = image.resize((width, max(1, round(image.height * width / image.width))), Image.BILINEAR)
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=JPEG_QUALITY)
    return buf.getvalue(), image.width, image.height


class PreviewTarget:
    """A texture target (:class:`~cinegpu.interop.targets.TextureTarget`) whose every written
    picture is also kept by ``store`` (:meth:`PreviewStore.keep`); the rest is ``target``'s."""

    def __init__(self, target, store: PreviewStore) -> None:
        self.target, self.store = target, store

    def write(self, pixels) -> None:
        self.target.write(pixels)
        self.store.keep(pixels)

    def close(self) -> None:
        self.store.clear()
        self.target.close()

    def __getattr__(self, name: str):
        return getattr(self.target, name)
