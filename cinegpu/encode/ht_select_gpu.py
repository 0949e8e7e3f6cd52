"""The HT byte budget's choice of planes on the GPU: :class:`.ht_select.PlaneChoice` (PCRD-opt,
ISO/IEC 15444-1 J.14.2, choosing per code-block the low magnitude bit-planes its ITU-T T.814
cleanup pass leaves out) made where the per-plane figures were worked out
(:func:`.tier1.ht_gpu.ht_plane_figures_cuda` with ``keep=True``), so that only the chosen
planes, one int64 per block, come back to the host.

    choice = PlaneChoiceCuda(w, dist, bits)     # dist, bits CuPy (blocks, planes) float64
    drops = choice.select(target)                # numpy int64 (blocks,), as PlaneChoice's
    choice.estimate(drops)                       # their estimated bits (float)

Units as in :mod:`.ht_select`: ``dist`` index units squared, ``bits`` estimated bits (integers
and eighths), slopes weighted squared error per estimated bit, targets in estimated bits.

The kernels of ``cuda/ht_select.cu`` (one thread per block) do what numba's
:func:`.ht_select.hull_steps`, ``_moves`` and ``_planes_at`` do, bit for bit; between them the
moves are sorted by slope and their gains summed up on the GPU (CuPy), in place of
PlaneChoice's slope buckets.  The sums are exact (the gains and bits are eighths, far below
2^53), so the choice is PlaneChoice's for every target.

The array steps go through ``launch.xp`` and the kernels through ``launch`` (:class:`CudaLaunch`
by default: CuPy, imported on first use, on the current device and stream); the host tests
pass numpy and a launcher of the kernels' host build (``cuda/ht_select_host.cpp``), and so run
this very code without a GPU.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .ht_select import LAMBDA_RANGE

__all__ = ["SOURCE", "THREADS", "CudaLaunch", "PlaneChoiceCuda"]

SOURCE = Path(__file__).resolve().parent / "cuda" / "ht_select.cu"
THREADS = 128  # threads per CUDA block (the kernels take any: grid-stride, no barriers)


@functools.lru_cache(maxsize=None)
def _kernel(device_id: int, name: str):
    import cupy  # noqa: PLC0415  (optional: CuPy)

    from cinegpu.decode import nvrtc  # noqa: PLC0415  (optional: CuPy, which nvrtc imports)

    with cupy.cuda.Device(device_id):
        return nvrtc.kernel(SOURCE, name)


class CudaLaunch:
    """The kernels of ``cuda/ht_select.cu`` on the current device (at construction) and the
    current stream: ``launch(name, n, args)`` runs kernel ``name`` over n blocks; ``xp`` is
    CuPy, ``asnumpy`` copies an array to the host."""

    def __init__(self):
        import cupy  # noqa: PLC0415  (optional: CuPy)

        self.xp = cupy
        self.asnumpy = cupy.asnumpy
        self.device_id = cupy.cuda.runtime.getDevice()

    def __call__(self, name: str, n: int, args: tuple) -> None:
        if n:
            _kernel(self.device_id, name)((min(-(-n // THREADS), 65535),), (THREADS,), args)


class PlaneChoiceCuda:
    """:class:`.ht_select.PlaneChoice` on the GPU: ``w`` (blocks,) numpy or CuPy, ``dist`` and
    ``bits`` (blocks, planes) float64 CuPy on the current device (numpy: uploaded).  The moves
    are made once here; :meth:`select` then costs one search and one kernel, and reads back
    the planes.  ValueError where PlaneChoice raises it (a negative or NaN slope).
    ``launch`` (tests): the kernels' launcher, :class:`CudaLaunch` by default."""

    def __init__(self, w, dist, bits, *, launch=None):
        self.launch = launch = CudaLaunch() if launch is None else launch
        xp = self.xp = launch.xp
        n = w.shape[0]
        self.bits = xp.ascontiguousarray(xp.asarray(bits), xp.float64)
        self.n = n
        self._last = None          # the last planes select gave: (host, device) copies
        if n == 0:
            self.bits0 = 0.0
            return
        m = self.m = self.bits.shape[1]
        w = xp.ascontiguousarray(xp.asarray(w), xp.float64)
        dist = xp.ascontiguousarray(xp.asarray(dist), xp.float64)
        self.start, count = xp.empty(n, xp.int64), xp.empty(n, xp.int64)
        self.lam, self.nxt = xp.empty((n, m), xp.float64), xp.empty((n, m), xp.int64)
        launch("ht_hull_steps", n, (w, dist, self.bits, np.int32(n), np.int32(m), self.start,
                                    self.lam, self.nxt, count))
        # Every block's moves (at most m) at j * m: no count comes back to size them; the
        # entries no move fills are slopes of inf that save nothing, which change neither the
        # running sums nor the slope a need is first met at (the inf past the last move).
        off = xp.arange(0, (n + 1) * m, m, dtype=xp.int64)
        slopes, gains = xp.full(n * m, xp.inf, xp.float64), xp.zeros(n * m, xp.float64)
        first_bits = xp.empty(n, xp.float64)
        launch("ht_moves", n, (self.start, self.lam, self.nxt, count, self.bits, off,
                               np.int32(n), np.int32(m), slopes, gains, first_bits))
        # one read-back: the bits at d = 0 and at the start (eighths: exact in any order) and
        # whether every slope is >= 0 (none negative or NaN; the walk starts at the least
        # w dist)
        bits0, first, ok = launch.asnumpy(xp.stack((self.bits[:, 0].sum(), first_bits.sum(),
                                                    (slopes >= 0.0).all().astype(xp.float64))))
        self.bits0, self.first = float(bits0), float(first)
        if not ok:
            raise ValueError("plane figures must be finite, non-negative numbers")
        # The moves by slope, their gains summed in that order; the order among equal slopes
        # does not matter: a tie is taken whole (select's inclusive planes), every gain is
        # positive and the sums exact, so the first slope whose running sum reaches a need
        # is the least s whose moves of slope <= s save it, whichever way ties are sorted.
        order = xp.argsort(slopes)
        self.slopes = xp.concatenate((slopes[order], xp.full(1, xp.inf)))  # inf: none fits
        self.cum = xp.cumsum(gains[order])   # eighths: exact

    def select(self, target) -> np.ndarray:
        """PlaneChoice.select: per block the planes d (numpy int64) minimising
        ``w dist + lambda bits`` for the smallest lambda in LAMBDA_RANGE whose estimated bits
        stay within ``target``; all d = 0 when the bits at d = 0 already do.  The slope is
        found and clamped to LAMBDA_RANGE on the device (``ht_planes_at_move``): the planes
        are the one read-back."""
        if self.n == 0 or self.bits0 <= target:
            return np.zeros(self.n, np.int64)
        lo, hi = LAMBDA_RANGE
        d = self.xp.empty(self.n, self.xp.int64)
        if self.first <= target:
            self.launch("ht_planes_at", self.n, (self.start, self.lam, self.nxt,
                                                 np.int32(self.n), np.int32(self.m),
                                                 np.float64(lo), np.int32(1), d))
        else:   # the first move whose running gain reaches the need (the inf past the last)
            need = self.xp.full(1, self.first - target, self.xp.float64)
            at = self.xp.searchsorted(self.cum, need, side="left")
            self.launch("ht_planes_at_move", self.n, (self.start, self.lam, self.nxt,
                                                      np.int32(self.n), np.int32(self.m),
                                                      self.slopes, at, np.float64(lo),
                                                      np.float64(hi), d))
        host = self.launch.asnumpy(d)
        self._last = (host, d)
        return host

    def estimate(self, drops) -> float:
        """The estimated bits of the blocks at planes ``drops`` (numpy or CuPy), exact."""
        xp = self.xp
        on_device = self.on_device(drops)
        d = xp.asarray(drops) if on_device is None else on_device
        return float(self.bits[xp.arange(self.n), d].sum())

    def on_device(self, drops):
        """The device copy of ``drops`` where it is the very array :meth:`select` last
        returned (the planes it read back), else None: what the coding kernels can take
        without uploading the planes again (an upload from pageable memory waits for the
        stream's work before it)."""
        last = self._last
        return last[1] if last is not None and drops is last[0] else None
