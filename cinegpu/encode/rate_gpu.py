"""PCRD-opt on the GPU: :mod:`.rate`'s hull and thresholds over tier-1's figures where the GPU
tier-1 left them (T.800 J.14.3).

    gpu_hull(device, weights, block_comp, ncomp) -> GpuHull

``device`` is a frame's (rate_off, rates, dists) as CuPy arrays (int64 blocks + 1, int32 bytes
after each pass, float64 distortion decrease per pass in index units squared).  The kernels
(``cuda/pcrd.cu``): each block's lower convex hull (one thread per block), the segments
gathered, then CuPy's stable sort by decreasing slope (ties in block order, as the CPU's radix
sort), the byte sums along that order for the frame and per component, and the threshold
searches as ``searchsorted`` on the device.  Only counts and the kept passes per block come
back.  :class:`GpuHull` answers what :class:`.rate.Hull` answers, with the same numbers: the
codestream is byte-identical to the CPU rate control's.

Importing this module needs CuPy.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

__all__ = ["GpuHull", "gpu_hull", "CUDA_SOURCE", "KERNELS"]

CUDA_SOURCE = Path(__file__).resolve().parent / "cuda" / "pcrd.cu"
KERNELS = ("pcrd_hull", "pcrd_compact", "pcrd_passes", "pcrd_kept")
THREADS = 128


@functools.lru_cache(maxsize=None)
def _kernels(device_id: int):
    import cupy  # noqa: PLC0415  (optional: CuPy)

    from cinegpu.decode import nvrtc  # noqa: PLC0415  (optional: CuPy, which nvrtc imports)

    with cupy.cuda.Device(device_id):
        return {name: nvrtc.kernel(CUDA_SOURCE, name) for name in KERNELS}


def _launch(k, n: int, args: tuple) -> None:
    """A grid-stride kernel over ``n`` items (``k(grid, block, args)`` as CuPy's RawKernel)."""
    if n:
        k((min(-(-n // THREADS), 65535),), (THREADS,), args)


def gpu_hull(device, weights, block_comp, ncomp: int, *, xp=None,
             kernels: dict | None = None) -> "GpuHull":
    """The hull of every block from tier-1's figures on the device (see the module), each
    block's distortions times ``weights[b]``; ``block_comp`` the component of each block.
    ``xp`` and ``kernels`` (tests): numpy and pcrd.cu's host emulation instead of CuPy and
    the compiled kernels."""
    if xp is None:
        import cupy as xp  # noqa: PLC0415  (optional: CuPy)
    if kernels is None:
        kernels = _kernels(xp.cuda.runtime.getDevice())
    rate_off, rates, dists = device
    nblocks = int(rate_off.shape[0]) - 1
    total = int(rates.shape[0])
    i32 = np.int32
    w = xp.asarray(np.ascontiguousarray(weights, np.float64))
    cumdist = xp.empty(max(total, 1), xp.float64)
    seg_pass = xp.empty(max(total, 1), xp.int64)
    seg_drate = xp.empty(max(total, 1), xp.float64)
    seg_slope = xp.empty(max(total, 1), xp.float64)
    count = xp.zeros(max(nblocks, 1), xp.int64)
    _launch(kernels["pcrd_hull"], nblocks, (rate_off, rates, dists, w, i32(nblocks), cumdist,
                                            seg_pass, seg_drate, seg_slope, count))
    seg_off = xp.zeros(nblocks + 1, xp.int64)
    if nblocks:
        xp.cumsum(count[:nblocks], out=seg_off[1:])
    n = int(seg_off[-1])                  # the one wait: the number of segments
    block = xp.empty(max(n, 1), xp.int64)
    npass = xp.empty(max(n, 1), xp.int64)
    drate = xp.empty(max(n, 1), xp.float64)
    slope = xp.empty(max(n, 1), xp.float64)
    _launch(kernels["pcrd_compact"], nblocks, (rate_off, count, seg_off, seg_pass, seg_drate,
                                               seg_slope, i32(nblocks), block, npass, drate,
                                               slope))
    return GpuHull(block[:n], npass[:n], drate[:n], slope[:n], nblocks,
                   xp.asarray(np.ascontiguousarray(block_comp, np.int64)), ncomp, kernels, xp)


class GpuHull:
    """:class:`.rate.Hull` with its arrays on the device: hull segments of all blocks sorted
    by decreasing slope (a stable sort: ties keep block order), ``csum`` the cumulative bytes
    in that order, ``comp_csum`` (ncomp, n) each component's."""

    def __init__(self, block, npass, drate, slope, nblocks: int, block_comp, ncomp: int,
                 kernels, xp):
        self._xp, self._k = xp, kernels
        # CuPy's argsort is always stable (Thrust's stable sort); numpy's when asked
        order = np.argsort(-slope, kind="stable") if xp is np else xp.argsort(-slope)
        self.block = block[order]
        self.npass = npass[order]
        self.drate = drate[order]
        self.slope = slope[order]
        self.nblocks = nblocks
        self.ncomp = ncomp
        n = int(self.slope.shape[0])
        self.csum = xp.cumsum(self.drate)
        self.comp = block_comp[self.block] if n else xp.zeros(0, xp.int64)
        self.comp_csum = xp.zeros((ncomp, n), xp.float64)
        for c in range(ncomp):
            xp.cumsum(xp.where(self.comp == c, self.drate, 0.0), out=self.comp_csum[c])

    def __len__(self) -> int:
        return int(self.slope.shape[0])

    def _host(self, a) -> np.ndarray:
        return a if self._xp is np else self._xp.asnumpy(a)

    def _search(self, csum, budget: float) -> int:
        v = self._xp.asarray([budget], self._xp.float64)
        return int(self._xp.searchsorted(csum, v, side="right")[0])

    def count_for(self, budget: float) -> int:
        """How many leading segments fit in ``budget`` bytes."""
        return self._search(self.csum, budget)

    def comp_count(self, c: int, budget: float) -> int:
        """:meth:`.rate.Hull.comp_count`."""
        return self._search(self.comp_csum[c], budget)

    def frame_limits(self, body: float, caps=None) -> np.ndarray:
        """:meth:`.rate.Hull.frame_limits`: the kept bytes for every count at once
        (pcrd_kept), then the largest count whose bytes fit in ``body``."""
        xp = self._xp
        n = len(self)
        if caps is None:
            return np.full(self.ncomp, self.count_for(body), np.int64)
        caps = xp.asarray(np.asarray(caps, np.float64))
        own = xp.empty(self.ncomp, xp.int64)
        for c in range(self.ncomp):
            own[c:c + 1] = xp.searchsorted(self.comp_csum[c], caps[c:c + 1], side="right")
        kept = xp.empty(n + 1, xp.float64)
        _launch(self._k["pcrd_kept"], n + 1, (self.comp_csum, own, np.int32(self.ncomp),
                                               np.int32(n), kept))
        lo = xp.searchsorted(kept, xp.asarray([body], xp.float64), side="right") - 1
        return self._host(xp.minimum(own, xp.maximum(lo, 0))).astype(np.int64)

    def passes_for(self, lims) -> np.ndarray:
        """:meth:`.rate.Hull.passes_for`: passes kept per block (numpy int64)."""
        xp = self._xp
        out = xp.zeros(max(self.nblocks, 1), xp.int32)
        lims = xp.asarray(np.asarray(lims, np.int64))
        n = len(self)
        _launch(self._k["pcrd_passes"], n, (self.block, self.npass, self.comp, lims,
                                            np.int32(n), out))
        return self._host(out[:self.nblocks]).astype(np.int64)

    def threshold(self, count: int) -> float:
        """The slope threshold lambda of taking the first ``count`` segments."""
        return float(self.slope[count - 1]) if count else float("inf")
