"""Per-frame PSNR of a master against its source (``cinegpu master --report R.html``).

What is measured: each codestream decoded (:func:`cinegpu.decode.api.decode`, CPU) against
exactly the code values the encoder was asked to code for it
(:meth:`.frame_encode.FrameEncoders.samples`: a DCP's 12-bit X'Y'Z' after the colour
conversion, an IMF picture's R'G'B' or Y'CbCr at its bits), per component and over all of
them::

    MSE_c  = mean over the component's samples of (decoded - source)^2
    PSNR_c = 10 log10(peak^2 / MSE_c) dB,      peak = 2^bits - 1 (4095 for a DCP)
    PSNR   = 10 log10(peak^2 / MSE), MSE over every sample of every component

A component decoded exactly (reversible coding) has an MSE of 0 and an infinite PSNR: the
JSON gives ``null`` for it and flags the frame ``lossless``.

How: :class:`PsnrMeter` is handed each distinct input frame's codestream as mastering's write
loop takes it from the coders (:func:`cinegpu.jobs.mastering.master`), in this process
whatever codes the frames (threads here, encoder processes, a cluster's workers).  It reads
that input frame again by its number, fits it as the coders did and takes its code values
(the ``samples(k)`` it is given), decodes the codestream and keeps only the figures (a few
floats a frame).  The source is read again rather than kept because the coders' samples
never reach this process when encoder processes or a cluster code the frames, and holding a
frame (a 2K frame's float32 RGB: 26 MB) until its codestream comes back would hold the whole
window in flight; so at most ``window`` codestreams wait here, and each thread holds one
frame's samples while it measures.  A composition longer than its input repeats it: an input
frame is coded, so measured, once (:meth:`MasterPsnr.section` maps the composition's frames
to them, each eye of a 3D picture on its own).
"""

from __future__ import annotations

import math
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from cinegpu.decode.api import decode
from cinegpu.decode.errors import CodestreamError
from cinegpu.media.errors import MediaError

__all__ = ["FramePsnr", "MasterPsnr", "PsnrMeter", "component_names", "frame_psnr"]

#: decimals of a dB figure in the JSON (0.001 dB)
DECIMALS = 3


class FramePsnr(NamedTuple):
    """One codestream's PSNR in dB: per component, and over every sample (``overall``);
    ``math.inf`` where it decoded exactly."""

    components: tuple[float, ...]
    overall: float

    @property
    def lossless(self) -> bool:
        """Whether every sample decoded exactly (reversible coding)."""
        return math.isinf(self.overall)


def _db(squared_error: float, samples: int, peak: int) -> float:
    """10 log10(peak^2 / MSE) dB of a summed squared error over ``samples``; inf for none."""
    if squared_error == 0:
        return math.inf
    return 10.0 * math.log10(peak * peak * samples / squared_error)


def frame_psnr(source: list[np.ndarray], decoded: list[np.ndarray], peak: int) -> FramePsnr:
    """The PSNR of the ``decoded`` components against the ``source`` code values (each
    component at its own size), ``peak`` the largest code value (see the module).
    ValueError where their counts or sizes differ."""
    if len(decoded) < len(source):
        raise ValueError(f"{len(decoded)} component(s) decoded, {len(source)} coded")
    errors, counts = [], []
    for s, d in zip(source, decoded):
        if s.shape != d.shape:
            raise ValueError(f"a component decoded {d.shape[1]}x{d.shape[0]}, coded "
                             f"{s.shape[1]}x{s.shape[0]}")
        diff = d.astype(np.int64) - s.astype(np.int64)
        errors.append(float(np.einsum("ij,ij->", diff, diff)))
        counts.append(diff.size)
    return FramePsnr(tuple(_db(e, n, peak) for e, n in zip(errors, counts)),
                     _db(sum(errors), sum(counts), peak))


def component_names(imf: bool, sampling: str = "rgb") -> tuple[str, ...]:
    """The coded components' names: a DCP's X'Y'Z', an IMF picture's R'G'B' or Y'CbCr."""
    if not imf:
        return ("X'", "Y'", "Z'")
    return ("R'", "G'", "B'") if sampling == "rgb" else ("Y'", "Cb", "Cr")


class PsnrMeter:
    """Measures codestreams handed over by :meth:`put` on ``threads`` threads of its own, at
    most ``window`` (default twice the threads) waiting; ``samples(k)``: input frame ``k``'s
    code values as the encoder was asked to code them, one plane per component; ``bits``:
    their precision.  :meth:`finish` gives {input frame: :class:`FramePsnr`}; :meth:`close`
    after a failure.  A codestream that does not decode, or a frame that is not read again,
    is a MediaError naming the frame (raised by :meth:`put` or :meth:`finish`)."""

    def __init__(self, samples: Callable[[int], list[np.ndarray]], bits: int, threads: int = 1,
                 window: int | None = None):
        self._samples = samples
        self.peak = (1 << bits) - 1
        self.window = window or 2 * threads
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="cinegpu-psnr")
        self._pending: deque = deque()
        self.frames: dict[int, FramePsnr] = {}

    def _measure(self, k: int, codestream: bytes) -> FramePsnr:
        try:
            return frame_psnr(self._samples(k), decode(codestream), self.peak)
        except MediaError:
            raise
        except (CodestreamError, ValueError) as exc:
            raise MediaError(None, f"--report: frame {k}'s PSNR not measured: "
                                   f"{type(exc).__name__}: {exc}") from exc

    def _take(self) -> None:
        k, future = self._pending.popleft()
        self.frames[k] = future.result()

    def put(self, k: int, codestream: bytes) -> None:
        """Measure input frame ``k``'s ``codestream`` (waits while ``window`` wait)."""
        while len(self._pending) >= self.window:
            self._take()
        self._pending.append((k, self._pool.submit(self._measure, k, codestream)))

    def finish(self) -> dict[int, FramePsnr]:
        """Every frame put, measured: {input frame: its PSNR}."""
        while self._pending:
            self._take()
        self._pool.shutdown()
        return self.frames

    def close(self) -> None:
        """Drop what waits and end the threads (after a failure; :meth:`finish` otherwise)."""
        self._pending.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _stats(values: list[float | None]) -> dict:
    """min/mean/max dB of the finite values (None each where there are none: all lossless)."""
    finite = [v for v in values if v is not None]
    if not finite:
        return {"min_db": None, "mean_db": None, "max_db": None}
    return {"min_db": round(min(finite), DECIMALS), "mean_db": round(sum(finite) / len(finite), DECIMALS),
            "max_db": round(max(finite), DECIMALS)}


def _json_db(v: float) -> float | None:
    return None if math.isinf(v) else round(v, DECIMALS)


@dataclass(frozen=True)
class MasterPsnr:
    """A master's PSNR figures: ``frames`` {input frame: :class:`FramePsnr`} of an input of
    ``count`` frames (a 3D input's images in coding order: left, right, frame after frame),
    ``eyes`` codestreams a composition frame, ``bits`` per sample, the ``components``' names."""

    frames: dict[int, FramePsnr]
    count: int
    eyes: int
    bits: int
    components: tuple[str, ...]

    def _series(self, first: int, length: int, eye: int) -> dict:
        """One eye's figures over composition frames ``first`` .. ``first + length - 1``."""
        rows = [self.frames[(n * self.eyes + eye) % self.count] for n in range(first, first + length)]
        overall = [_json_db(r.overall) for r in rows]
        per = [[_json_db(r.components[c]) for r in rows] for c in range(len(self.components))]
        return {"eye": None if self.eyes == 1 else ("left", "right")[eye], "frames": length,
                "overall_db": overall, "components_db": per, "lossless": [r.lossless for r in rows],
                "lossless_frames": sum(r.lossless for r in rows), "overall": _stats(overall),
                "per_component": {name: _stats(p) for name, p in zip(self.components, per)}}

    def section(self, reels: list[tuple[int, int]]) -> dict:
        """The report's JSON of these figures over a composition of ``reels`` (first frame,
        frames), per reel and eye: each frame's dB (null where it decoded exactly, flagged in
        ``lossless``), and min/mean/max dB of the finite ones, per reel and eye and over the
        composition."""
        out_reels = []
        for number, (first, length) in enumerate(reels, 1):
            out_reels.append({"number": number, "first_frame": first, "frames": length,
                              "eyes": [self._series(first, length, e) for e in range(self.eyes)]})
        every = [s for r in out_reels for s in r["eyes"]]
        overall = [v for s in every for v in s["overall_db"]]
        return {"measure": "PSNR in dB of each decoded codestream against the code values handed to "
                           "the encoder: 10 log10(peak^2 / MSE), per component and over all samples",
                "bits": self.bits, "peak": (1 << self.bits) - 1, "components": list(self.components),
                "null_means": "infinite: decoded exactly (lossless)",
                "lossless": bool(every) and all(s["lossless_frames"] == s["frames"] for s in every),
                "frames": sum(r["frames"] for r in out_reels), "codestreams": len(overall),
                "overall": _stats(overall),
                "per_component": {name: _stats([v for s in every for v in s["components_db"][c]])
                                  for c, name in enumerate(self.components)},
                "reels": out_reels}
