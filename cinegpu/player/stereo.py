"""Showing a stereoscopic (3D) composition on a 2D screen: ``--stereo MODE``.

A 3D composition's frame is two codestreams, the left eye's and the right eye's (ST 429-10).
Every mode decodes the eyes of the same frame for the same presentation, never one eye a frame
after the other:

    left, right        one eye, as a 2D picture (left: the default)
    side-by-side       the two eyes next to each other, left on the left, each at full size
    top-bottom         the left eye above the right one
    anaglyph           one picture for red/cyan glasses: its red from the left eye, its green
                       and blue from the right (a colour anaglyph, on the displayed R'G'B')
    frame-sequential   left, right, left, right... at twice the edit rate (for shutter glasses
                       synchronised to the display)
    quad-buffer        each eye into its own back buffer of a stereo OpenGL window (quad-buffered
                       stereo, OpenGL 3.3 core 4.2.1), the display (a 3D projector or monitor and
                       its glasses) showing them in turn; refused where the display offers no
                       stereo config (headless EGL never does)

:func:`stereo_source` builds the frame source of a mode from the maker of a 2D one;
:class:`EyeView` and :class:`SequentialView` are media sources of one eye, or of the eyes in
turn, and :class:`StereoSource` joins two eyes' decoded pictures as the modes say.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from fractions import Fraction
from typing import Callable

from cinegpu.interop.xyz import XYZPlanes

from .source import FrameError

__all__ = ["STEREO_MODES", "EyeView", "SequentialView", "StereoSource", "stereo_source"]

STEREO_MODES = ("left", "right", "side-by-side", "top-bottom", "anaglyph", "frame-sequential", "quad-buffer")
#: The modes that join the two eyes' pictures into one (:class:`StereoSource`); quad-buffer's
#: is top-bottom, which the presenter draws an eye a buffer.
JOINED = ("side-by-side", "top-bottom", "anaglyph", "quad-buffer")
#: Joined pictures a :class:`StereoSource` keeps (the newest): the player asks for a frame when
#: it checks that it is ready and again when it shows it, and each join is a copy of both eyes.
JOINED_KEPT = 3


class EyeView:
    """``media`` (a 3D :class:`cinegpu.media.source.Source`) seen through one ``eye``: its
    ``frame(n)`` is that eye's codestream of frame ``n``; the rest is the media's. Closing it
    leaves the media open (its opener closes it)."""

    stereoscopic = False

    def __init__(self, media, eye: str) -> None:
        if eye not in ("left", "right"):
            raise ValueError(f"eye must be 'left' or 'right', not {eye!r}")
        self.media, self.eye = media, eye

    def frame(self, n: int, eye: str | None = None) -> bytes:
        return self.media.frame(n, self.eye)

    def frame_size(self, n: int, eye: str | None = None) -> int:
        return self.media.frame_size(n, self.eye)

    def close(self) -> None:
        """Nothing: the media is its opener's to close."""

    def __getattr__(self, name: str):
        return getattr(self.media, name)

    def __len__(self) -> int:
        return self.media.frame_count


class SequentialView(EyeView):
    """``media``'s eyes in turn, each a frame of its own: frame ``2n`` is frame ``n``'s left
    eye, ``2n + 1`` its right one, at twice the edit rate (frames per second of the display)."""

    def __init__(self, media) -> None:
        super().__init__(media, "left")
        self.frame_count = 2 * media.frame_count
        rate = media.edit_rate
        self.edit_rate = None if rate is None else 2 * Fraction(rate)

    def frame(self, n: int, eye: str | None = None) -> bytes:
        return self.media.frame(n // 2, "right" if n % 2 else "left")

    def frame_size(self, n: int, eye: str | None = None) -> int:
        return self.media.frame_size(n // 2, "right" if n % 2 else "left")

    def __len__(self) -> int:
        return self.frame_count


def _array_module(a):
    """numpy or CuPy, whichever holds ``a``."""
    return sys.modules[type(a).__module__.split(".")[0]]


def join(mode: str, left, right):
    """The picture of ``mode`` (one of :data:`JOINED`) from the two eyes' RGBA pictures
    ((H, W, 4), numpy or CuPy alike; X'Y'Z' planes for the display to convert joined plane by
    plane, or, for the anaglyph, kept as both eyes' six)."""
    if isinstance(left, XYZPlanes):
        if mode in ("side-by-side", "top-bottom", "quad-buffer"):
            return XYZPlanes(tuple(join(mode, a, b) for a, b in zip(left.planes, right.planes)), left.in_bits,
                             left.primaries)
        return XYZPlanes(left.planes + right.planes, left.in_bits, left.primaries, anaglyph=True)
    xp = _array_module(left)
    if mode == "side-by-side":
        return xp.concatenate((left, right), axis=1)
    if mode in ("top-bottom", "quad-buffer"):
        return xp.concatenate((left, right), axis=0)
    out = right.copy()
    out[..., 0] = left[..., 0]
    return out


class StereoSource:
    """A frame source (see :mod:`.source`) joining ``left``'s and ``right``'s pictures of the
    same frame as ``mode`` says (:data:`JOINED`): frame ``n`` is ready when both eyes' are,
    and fails (a :class:`.source.FrameError`) when either does; each frame is joined once
    (the last :data:`JOINED_KEPT` are kept). Closing it closes both. ``eyes``: 2 where the
    player is to draw each eye into its own buffer (quad-buffer), else 1 (one picture)."""

    def __init__(self, left, right, mode: str) -> None:
        if mode not in JOINED:
            raise ValueError(f"mode must be one of {JOINED}, not {mode!r}")
        self.left, self.right, self.mode = left, right, mode
        self.frame_count = min(left.frame_count, right.frame_count)
        self.edit_rate, self.backend = left.edit_rate, left.backend
        wide, tall = mode == "side-by-side", mode in ("top-bottom", "quad-buffer")
        self.eyes = 2 if mode == "quad-buffer" else 1
        self.width = left.width * (2 if wide else 1)
        self.height = left.height * (2 if tall else 1)
        self._joined: OrderedDict = OrderedDict()     # frame: its joined picture

    @property
    def depth(self) -> int:
        return min(getattr(self.left, "depth", 8), getattr(self.right, "depth", 8))

    @property
    def burst(self) -> int:
        return min(getattr(self.left, "burst", 0), getattr(self.right, "burst", 0))

    @property
    def latency(self) -> float:
        return max(getattr(self.left, "latency", 0.0), getattr(self.right, "latency", 0.0))

    @property
    def decoded(self) -> int:
        """Frames with both eyes decoded, about: the slower eye's count."""
        return min(getattr(self.left, "decoded", 0), getattr(self.right, "decoded", 0))

    @property
    def decode_fps(self) -> float:
        return min(self.left.decode_fps, self.right.decode_fps)

    @property
    def level(self) -> int:
        return max(getattr(self.left, "level", 0), getattr(self.right, "level", 0))

    def pace(self, rate: float) -> None:
        for eye in (self.left, self.right):
            pace = getattr(eye, "pace", None)
            if pace is not None:
                pace(rate)

    def want(self, frames, start: int = 0) -> None:
        self.left.want(frames, start)
        self.right.want(frames, start)

    def get(self, n: int):
        joined = self._joined.get(n)
        if joined is not None:
            return joined
        left = self.left.get(n)
        right = self.right.get(n) if left is not None else None
        if left is None or right is None:
            return None
        if isinstance(left, FrameError) or isinstance(right, FrameError):
            return left if isinstance(left, FrameError) else right
        if left.shape != right.shape:
            return FrameError(n, ValueError(f"the eyes' pictures differ in size: "
                                            f"{left.shape[1]}x{left.shape[0]} and {right.shape[1]}x{right.shape[0]}"))
        joined = self._joined[n] = join(self.mode, left, right)
        while len(self._joined) > JOINED_KEPT:
            self._joined.popitem(last=False)
        return joined

    def pin(self, n: int) -> None:
        self.left.pin(n)
        self.right.pin(n)

    def unpin(self, n: int) -> None:
        self.left.unpin(n)
        self.right.unpin(n)

    def close(self, *args, **kwargs) -> None:
        self._joined.clear()
        try:
            self.left.close(*args, **kwargs)
        finally:
            self.right.close(*args, **kwargs)


def stereo_source(media, mode: str | None, make: Callable[..., object]):
    """The frame source showing ``media`` as ``mode`` says, ``make(media, share)`` building
    the 2D source of a media source (``share``: the part of the decoders it may take, 1 or
    1/2). A 2D ``media``: ``make(media, 1)``, unless a mode is asked for (ValueError, as
    it shows no eyes); a 3D one: one eye (``left`` when ``mode`` is None), the eyes in turn,
    or two sources joined (each half the decoders)."""
    if not getattr(media, "stereoscopic", False):
        if mode is not None:
            raise ValueError(f"--stereo {mode}: the composition is 2D (one picture a frame)")
        return make(media, 1)
    mode = mode or "left"
    if mode not in STEREO_MODES:
        raise ValueError(f"--stereo must be one of {', '.join(STEREO_MODES)}, not {mode!r}")
    if mode in ("left", "right"):
        return make(EyeView(media, mode), 1)
    if mode == "frame-sequential":
        return make(SequentialView(media), 1)
    left = make(EyeView(media, "left"), Fraction(1, 2))
    try:
        right = make(EyeView(media, "right"), Fraction(1, 2))
    except BaseException:
        left.close()
        raise
    return StereoSource(left, right, mode)
