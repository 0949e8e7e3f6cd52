"""The HT byte budget's choice of planes: per code-block the number d of low magnitude
bit-planes its cleanup pass leaves out (0..DMAX), as PCRD-opt chooses truncation points
(ISO/IEC 15444-1 J.14.2), over the per-plane figures of :func:`.tier1.ht.ht_plane_figures`.

For a slope lambda > 0 every block takes the d minimising ``w dist[d] + lambda bits[d]``
(``w`` its synthesis weight); lambda is the smallest for which the estimated bits of all blocks
fit the target.  :func:`select_planes` finds it exactly instead of by bisection: per block the
lower convex hull of its (bits, w dist) points, walked from lambda -> 0+, gives the slopes at
which the block moves to fewer bits (:func:`hull_steps`); all blocks' moves sorted by slope
give the estimated bits as a step function of lambda, and the first step within the target is
the answer.  Linear in blocks x planes plus one sort, where a bisection of 50 rounds over every
block and plane took about 110 ms for a 4K frame of 32 x 32 blocks (25,920 blocks, 21 planes)
on the development machine, and ran up to six times a frame.

Lambda is searched between 2^-30 and 2^60 (in units of weighted squared index error per
estimated bit): below, the blocks take their choice at 2^-30; a target that even 2^60 does not
meet gets the choice at 2^60 (the caller then codes, measures and aims lower).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["LAMBDA_RANGE", "PlaneChoice", "hull_steps", "select_planes"]

#: the slopes searched, (smallest, largest), in weighted squared error per estimated bit
LAMBDA_RANGE = (2.0 ** -30, 2.0 ** 60)


@njit(cache=True, nogil=True)
def hull_steps(wd, bits):
    """Per block j (rows of ``wd`` = w dist and ``bits``, (blocks, planes) float64): ``start[j]``
    the plane chosen as lambda -> 0+ (least wd, then least bits, then least d) and the moves
    to fewer bits as lambda grows: ``lam[j, k]`` the slope above which the block takes plane
    ``nxt[j, k]`` (non-decreasing in k; ties: the plane of fewest bits), ``count[j]`` moves."""
    n, m = wd.shape
    start = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    lam = np.full((n, m), np.inf)
    nxt = np.zeros((n, m), np.int64)
    for j in range(n):
        c = 0
        for d in range(1, m):
            if wd[j, d] < wd[j, c] or (wd[j, d] == wd[j, c] and bits[j, d] < bits[j, c]):
                c = d
        start[j] = c
        k = 0
        while k < m:
            best = -1
            slope = np.inf
            for d in range(m):
                if bits[j, d] < bits[j, c]:
                    s = (wd[j, d] - wd[j, c]) / (bits[j, c] - bits[j, d])
                    if best < 0 or s < slope or (s == slope and bits[j, d] < bits[j, best]):
                        slope, best = s, d
            if best < 0:
                break
            lam[j, k], nxt[j, k] = slope, best
            c = best
            k += 1
        count[j] = k
    return start, lam, nxt, count


@njit(cache=True, nogil=True)
def _moves(start, lam, nxt, count, bits):
    """Every block's moves flattened: (slopes, bits saved by each, total bits at the start)."""
    n = start.shape[0]
    total = 0
    for j in range(n):
        total += count[j]
    slopes = np.empty(total, np.float64)
    gains = np.empty(total, np.float64)
    first = 0.0
    i = 0
    for j in range(n):
        c = start[j]
        first += bits[j, c]
        for k in range(count[j]):
            slopes[i] = lam[j, k]
            gains[i] = bits[j, c] - bits[j, nxt[j, k]]
            c = nxt[j, k]
            i += 1
    return slopes, gains, first


@njit(cache=True, nogil=True)
def _planes_at(start, lam, nxt, slope, inclusive):
    """Each block's plane at ``slope``: its moves at slopes up to it (``inclusive``: or
    equal) taken."""
    n, m = lam.shape
    d = np.empty(n, np.int64)
    for j in range(n):
        c = start[j]
        for k in range(m):
            s = lam[j, k]
            if s < slope or (inclusive and s == slope):
                c = nxt[j, k]
            else:
                break
        d[j] = c
    return d


class PlaneChoice:
    """The moves of every block (:func:`hull_steps`) sorted by slope, made once per frame
    from its figures: ``select(target)`` is then one search and one pass over the blocks
    (rate control asks for several targets a frame).  ``w`` (blocks,), ``dist`` and ``bits``
    (blocks, planes)."""

    def __init__(self, w, dist, bits):
        n = w.shape[0]
        self.bits = np.ascontiguousarray(bits, np.float64)
        self.bits0 = float(self.bits[:, 0].sum()) if n else 0.0
        self.n = n
        if n == 0:
            return
        wd = np.ascontiguousarray(w[:, None] * dist, np.float64)
        self.start, self.lam, self.nxt, count = hull_steps(wd, self.bits)
        slopes, gains, self.first = _moves(self.start, self.lam, self.nxt, count, self.bits)
        order = np.argsort(slopes)           # ties in any order: a tie is taken whole
        self.slopes = slopes[order]
        self.left = self.first - np.cumsum(gains[order])   # bits after each move

    def select(self, target) -> np.ndarray:
        """Per block the planes d (int64) minimising ``w dist + lambda bits`` for the smallest
        lambda in :data:`LAMBDA_RANGE` whose estimated bits stay within ``target``; all
        d = 0 when the bits at d = 0 already do."""
        d = np.zeros(self.n, np.int64)
        if self.n == 0 or self.bits0 <= target:
            return d
        lo, hi = LAMBDA_RANGE
        if self.first <= target:
            lam_star = lo
        else:
            fits = np.flatnonzero(self.left <= target)
            lam_star = float(self.slopes[fits[0]]) if fits.size else np.inf
        if lam_star <= hi:
            return _planes_at(self.start, self.lam, self.nxt, max(lam_star, lo), True)
        return _planes_at(self.start, self.lam, self.nxt, hi, False)   # out of reach


def select_planes(w, dist, bits, target):
    """:meth:`PlaneChoice.select` of one target."""
    return PlaneChoice(w, dist, bits).select(target)
