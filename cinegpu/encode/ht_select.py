"""The HT byte budget's choice of planes: per code-block the number d of low magnitude
bit-planes its cleanup pass leaves out (0..DMAX), as PCRD-opt chooses truncation points
(ISO/IEC 15444-1 J.14.2), over the per-plane figures of :func:`.tier1.ht.ht_plane_figures`.

For a slope lambda > 0 every block takes the d minimising ``w dist[d] + lambda bits[d]``
(``w`` its synthesis weight); lambda is the smallest for which the estimated bits of all blocks
fit the target.  :func:`select_planes` finds it exactly instead of by bisection: per block the
lower convex hull of its (bits, w dist) points, walked from lambda -> 0+, gives the slopes at
which the block moves to fewer bits (:func:`hull_steps`); all blocks' moves taken in order of
slope give the estimated bits as a step function of lambda, and the first step within the
target is the answer (found by a weighted selection over slope buckets, without sorting every
move).  Linear in blocks x planes, where a bisection of 50 rounds over every block and plane
took about 110 ms for a 4K frame of 32 x 32 blocks (25,920 blocks, 21 planes) on the
development machine, and ran up to six times a frame.

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


#: buckets of the moves by the top bits of their slope (non-negative float64, whose bit
#: patterns sort as their values): sign, exponent and 4 mantissa bits
_BUCKET_SHIFT = 48
_BUCKETS = 1 << (63 - _BUCKET_SHIFT)


@njit(cache=True, nogil=True)
def _bucketed(slopes, gains):
    """The moves grouped by slope bucket (a counting sort on the top bits of each slope,
    which must be >= 0): (slopes, gains, start (buckets + 1,) of each bucket's run, and
    below (buckets + 1,) the bits saved by all moves of the buckets before each)."""
    keys = (slopes + 0.0).view(np.int64) >> _BUCKET_SHIFT     # -0.0 + 0.0 is +0.0
    start = np.zeros(_BUCKETS + 1, np.int64)
    below = np.zeros(_BUCKETS + 1, np.float64)
    for i in range(keys.shape[0]):
        start[keys[i] + 1] += 1
        below[keys[i] + 1] += gains[i]
    for b in range(_BUCKETS):
        start[b + 1] += start[b]
        below[b + 1] += below[b]
    at = start[:-1].copy()
    s = np.empty_like(slopes)
    g = np.empty_like(gains)
    for i in range(keys.shape[0]):
        k = keys[i]
        s[at[k]], g[at[k]] = slopes[i], gains[i]
        at[k] += 1
    return s, g, start, below


@njit(cache=True, nogil=True)
def _first_fit_bucketed(s, g, start, below, need):
    """The smallest slope s at which the moves of slopes <= s save at least ``need`` bits
    (inf where all of them save less), over :func:`_bucketed` moves: the first bucket whose
    moves with those before save ``need``, then its own moves sorted by slope and walked.
    The sums are exact where the gains are integers or eighths, as the figures' bits are,
    so this is the slope at which a walk over all moves sorted by slope first saves
    ``need``; a tie of slopes is taken whole (:func:`_planes_at`)."""
    if below[_BUCKETS] < need:
        return np.inf
    lo, hi = 0, _BUCKETS - 1          # the first bucket b with below[b + 1] >= need
    while lo < hi:
        mid = (lo + hi) >> 1
        if below[mid + 1] >= need:
            hi = mid
        else:
            lo = mid + 1
    a, z = start[lo], start[lo + 1]
    order = np.argsort(s[a:z])
    acc = below[lo]
    for k in order:
        acc += g[a + k]
        if acc >= need:
            return s[a + k]
    return np.inf                     # not reached: the bucket's moves make up the rest


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
    """The moves of every block (:func:`hull_steps`), made once per frame from its figures:
    ``select(target)`` is then one weighted selection over them (the moves grouped once by
    the top bits of their slope, :func:`_bucketed`; a target then sorts one group only, in
    place of sorting them all: 11.5 ms of the 26 that a 4K IMF frame's 24,681 blocks took
    here) and one pass over the blocks (rate control asks for several targets a frame).
    ``w`` (blocks,), ``dist`` and ``bits`` (blocks, planes)."""

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
        if slopes.size and not slopes.min() >= 0.0:   # the walk starts at the least w dist
            raise ValueError("plane figures must be finite, non-negative numbers")
        self.buckets = _bucketed(slopes, gains)

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
        else:                                # a tie of slopes is taken whole
            lam_star = _first_fit_bucketed(*self.buckets, self.first - target)
        if lam_star <= hi:
            return _planes_at(self.start, self.lam, self.nxt, max(lam_star, lo), True)
        return _planes_at(self.start, self.lam, self.nxt, hi, False)   # out of reach

    def estimate(self, drops) -> float:
        """The estimated bits of the blocks at planes ``drops``, exact."""
        return float(self.bits[np.arange(self.n), drops].sum())

    def on_device(self, drops):
        """None: the planes are chosen on the host (the interface of
        :meth:`.ht_select_gpu.PlaneChoiceCuda.on_device`)."""
        return None


def select_planes(w, dist, bits, target):
    """:meth:`PlaneChoice.select` of one target."""
    return PlaneChoice(w, dist, bits).select(target)
