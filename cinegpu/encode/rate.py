"""Rate control: post-compression rate-distortion optimisation (PCRD-opt, T.800 J.14.3
and Taubman's EBCOT).

Each code-block offers truncation points, one after each coding pass, with a
rate (bytes, from tier-1) and a distortion decrease (squared error in sample
units: tier-1's index-unit figure times the band's (Delta_b * ||basis||)^2 and
the colour transform's column weight).  Only points on the lower convex hull
of a block's (rate, distortion) curve are candidates; along the hull the
slopes Delta D / Delta R strictly decrease.  A single slope threshold lambda
picks, in every block, the last hull point whose slope is >= lambda.  Sorting
all hull segments by slope makes the body size a step function of lambda:
the threshold for a byte budget is found by binary search (bisection) over
the sorted slopes, exactly.  Per-component caps apply a second, larger
threshold within a component.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["Hull", "build_hull", "hull_of"]


@njit(cache=True, nogil=True)
def _hull(offsets, rates, cumdist, out_block, out_pass, out_drate, out_slope):
    """Lower convex hull of each block's points (0, 0), (rates[k], cumdist[k]).
    Writes one row per hull segment; returns the number of rows."""
    n = 0
    nblocks = offsets.shape[0] - 1
    stack = np.empty(rates.shape[0] + 1, np.int64)
    for b in range(nblocks):
        a0, a1 = offsets[b], offsets[b + 1]
        top = 0
        for k in range(a0, a1):
            r = rates[k]
            d = cumdist[k]
            while True:
                if top == 0:
                    r0, d0 = 0.0, 0.0
                else:
                    r0, d0 = rates[stack[top - 1]], cumdist[stack[top - 1]]
                if d <= d0:
                    break  # no gain: never a hull point (for now)
                if r <= r0:
                    # same or smaller rate, more gain: replaces the previous point
                    if top == 0:
                        break
                    top -= 1
                    continue
                s = (d - d0) / (r - r0)
                if top >= 1:
                    if top == 1:
                        rp, dp = 0.0, 0.0
                    else:
                        rp, dp = rates[stack[top - 2]], cumdist[stack[top - 2]]
                    sp = (d0 - dp) / (r0 - rp)
                    if s >= sp:
                        top -= 1
                        continue
                stack[top] = k
                top += 1
                break
        r0, d0 = 0.0, 0.0
        for i in range(top):
            k = stack[i]
            out_block[n] = b
            out_pass[n] = k - a0 + 1
            out_drate[n] = rates[k] - r0
            out_slope[n] = (cumdist[k] - d0) / (rates[k] - r0)
            r0, d0 = rates[k], cumdist[k]
            n += 1
    return n


@njit(cache=True, nogil=True)
def _cumdist(offsets, dists, weights, out):
    """Per block, the running sum of its pass distortions times the block's weight
    (summed in pass order, as numpy's cumsum)."""
    for b in range(offsets.shape[0] - 1):
        acc = 0.0
        for k in range(offsets[b], offsets[b + 1]):
            acc += dists[k]
            out[k] = acc * weights[b]


def _stable_argsort(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` (equal keys in index order), from numpy's faster
    unstable sorts: sort, number the runs of equal keys, then sort (run, index) pairs,
    packed as run * n + index (n^2 < 2^63).  Keys must not be NaN."""
    n = key.shape[0]
    order = np.argsort(key)
    ranked = key[order]
    run = np.zeros(n, np.int64)
    np.cumsum(ranked[1:] != ranked[:-1], out=run[1:])
    return np.sort(run * n + order) % n


@njit(cache=True, nogil=True)
def _radix_order_desc(slope):
    """Indices of ``slope`` (positive finite float64) by decreasing value, equal values in
    index order: ``np.argsort(-slope, kind="stable")``.  A least-significant-digit radix sort
    (11-bit digits) of ~bits(slope): for positive IEEE 754 doubles the bit pattern orders as
    the value, so its complement orders in reverse; each pass is stable.  Digits that every
    key shares are skipped.  Without the GIL (encoders in several threads sort at once)."""
    n = slope.shape[0]
    keys = ~slope.view(np.uint64)
    order = np.arange(n)
    tmp = np.empty(n, np.int64)
    counts = np.empty(2049, np.int64)
    for shift in range(0, 64, 11):
        counts[:] = 0
        for i in range(n):
            counts[((keys[i] >> np.uint64(shift)) & np.uint64(2047)) + 1] += 1
        if counts.max() == n:
            continue                      # every key has this digit: the order stands
        for d in range(2048):
            counts[d + 1] += counts[d]
        for i in range(n):
            j = order[i]
            d = (keys[j] >> np.uint64(shift)) & np.uint64(2047)
            tmp[counts[d]] = j
            counts[d] += 1
        order, tmp = tmp, order
    return order


@njit(cache=True, nogil=True)
def _take_sorted(order, block, npass, drate, slope, out_block, out_npass, out_drate,
                 out_slope, csum):
    """The segments in ``order`` and the running sum of their bytes, in one pass: what
    ``x[order]`` of each column and ``np.cumsum`` (sequential, as numpy's) give."""
    acc = 0.0
    for i in range(order.shape[0]):
        j = order[i]
        out_block[i] = block[j]
        out_npass[i] = npass[j]
        d = drate[j]
        out_drate[i] = d
        out_slope[i] = slope[j]
        acc += d
        csum[i] = acc


@njit(cache=True, nogil=True)
def _component_csums(block, block_comp, drate, comp, csums):
    """Each segment's component (``block_comp[block]``) and, per component c, the running
    sum of the bytes of its segments along the order (``csums[c]``: what
    ``np.cumsum(np.where(comp == c, drate, 0))`` gives; adding 0.0 leaves a sum as it is)."""
    ncomp = csums.shape[0]
    acc = np.zeros(ncomp)
    for i in range(block.shape[0]):
        c = block_comp[block[i]]
        comp[i] = c
        acc[c] += drate[i]
        for k in range(ncomp):
            csums[k, i] = acc[k]


@njit(cache=True, nogil=True)
def _passes_below(block, npass, comp, lims, out):
    """out[block[i]] = max(out[block[i]], npass[i]) for the segments i < lims[comp[i]]."""
    for i in range(block.shape[0]):
        if i < lims[comp[i]] and npass[i] > out[block[i]]:
            out[block[i]] = npass[i]


def _order_desc(slope: np.ndarray) -> np.ndarray:
    """``np.argsort(-slope, kind="stable")``: the radix sort when every slope is positive
    and finite (hull slopes are: each hull point adds bytes and distortion decrease)."""
    slope = np.ascontiguousarray(slope, np.float64)
    if slope.size and (np.isfinite(slope).all() and slope.min() > 0):
        return _radix_order_desc(slope)
    return _stable_argsort(-slope)


class Hull:
    """Hull segments of all blocks, sorted by decreasing slope.

    ``block``, ``npass`` (passes kept when the segment is taken), ``drate``
    (bytes it adds), ``slope``; ``csum`` the cumulative bytes in that order.
    """

    def __init__(self, block, npass, drate, slope, nblocks: int):
        order = _order_desc(slope)
        n = order.shape[0]
        self.block, self.npass = np.empty(n, np.int64), np.empty(n, np.int64)
        self.drate, self.slope, self.csum = np.empty(n), np.empty(n), np.empty(n)
        _take_sorted(order, np.asarray(block, np.int64), np.asarray(npass, np.int64),
                     np.asarray(drate, np.float64), np.asarray(slope, np.float64),
                     self.block, self.npass, self.drate, self.slope, self.csum)
        self.nblocks = nblocks
        self.ncomp = 1
        self.comp = np.zeros(len(self.slope), np.int64)
        self.comp_csum = [self.csum]

    def count_for(self, budget: float, mask: np.ndarray | None = None) -> int:
        """How many leading segments (of those in ``mask``) fit in ``budget`` bytes: the
        binary search for the slope threshold."""
        csum = self.csum if mask is None else np.cumsum(np.where(mask, self.drate, 0))
        return int(np.searchsorted(csum, budget, side="right"))

    def threshold(self, count: int) -> float:
        """The slope threshold lambda of taking the first ``count`` segments."""
        return float(self.slope[count - 1]) if count else float("inf")

    # -- thresholds per component (DCI caps) --------------------------------------------
    def by_component(self, block_comp: np.ndarray, ncomp: int) -> "Hull":
        """Record each segment's component (``block_comp``: the component of each block) and
        each component's bytes along the slope order; returns self."""
        self.ncomp = ncomp
        n = len(self.block)
        self.comp = np.zeros(n, np.int64)
        csums = np.zeros((ncomp, n))
        if n:
            _component_csums(self.block, np.ascontiguousarray(block_comp, np.int64),
                             self.drate, self.comp, csums)
        self.comp_csum = list(csums)
        return self

    def comp_count(self, c: int, budget: float) -> int:
        """The hull position (in the order of all segments) up to which component c's
        segments fit in ``budget`` bytes: its threshold, as a count of leading segments."""
        return int(np.searchsorted(self.comp_csum[c], budget, side="right"))

    def frame_limits(self, body: float, caps=None) -> np.ndarray:
        """Per component, how many leading segments (in the order of all of them) it keeps:
        the frame threshold for ``body`` bytes of code-block data and, within a component
        whose ``caps[c]`` bytes are reached first, its own larger threshold.  The frame
        threshold is the largest count whose bytes, each component held to its cap, fit in
        ``body`` (so bytes a capped component cannot take go to the others): that sum is
        monotone in the count, so it is found by bisection."""
        n = len(self.slope)
        if caps is None:
            return np.full(self.ncomp, self.count_for(body), np.int64)
        own = np.array([self.comp_count(c, caps[c]) for c in range(self.ncomp)], np.int64)

        def kept(count: int) -> float:
            return sum(float(self.comp_csum[c][k - 1]) for c, k in
                       enumerate(np.minimum(own, count)) if k > 0)
        lo, hi = 0, n                     # kept(lo) <= body; find the largest such count
        if kept(hi) <= body:
            lo = hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if kept(mid) <= body else (lo, mid)
        return np.minimum(own, lo)

    def passes_for(self, lims: np.ndarray) -> np.ndarray:
        """Passes kept per block when segment i (in the slope order) is taken while
        i < lims[its component]."""
        out = np.zeros(self.nblocks, np.int64)
        _passes_below(self.block, self.npass, self.comp,
                      np.ascontiguousarray(lims, np.int64), out)
        return out


def build_hull(rates_list, dists_list, weights) -> Hull:
    """Hull of every block from tier-1's per-pass ``rates`` (cumulative bytes) and
    ``dists`` (decrease per pass, index units squared), weighted per block."""
    nblocks = len(rates_list)
    offsets = np.zeros(nblocks + 1, np.int64)
    np.cumsum(np.fromiter(map(len, rates_list), np.int64, nblocks), out=offsets[1:])
    total = int(offsets[-1])
    rates = np.concatenate(rates_list) if total else np.zeros(0)
    dists = np.concatenate(dists_list) if total else np.zeros(0)
    return hull_of(offsets, rates, dists, weights)


def hull_of(offsets, rates, dists, weights) -> Hull:
    """:func:`build_hull` on flat arrays: block b's passes are ``offsets[b]`` up to
    ``offsets[b + 1]`` of ``rates`` and ``dists``."""
    offsets = np.asarray(offsets, np.int64)
    nblocks = offsets.shape[0] - 1
    total = int(offsets[-1])
    rates = np.asarray(rates, np.float64)
    cumdist = np.zeros(total)
    if total:
        _cumdist(offsets, np.asarray(dists, np.float64), np.asarray(weights, np.float64),
                 cumdist)
    ob = np.empty(total, np.int64)
    op = np.empty(total, np.int64)
    odr = np.empty(total, np.float64)
    osl = np.empty(total, np.float64)
    n = _hull(offsets, rates, cumdist, ob, op, odr, osl)
    return Hull(ob[:n], op[:n], odr[:n], osl[:n], nblocks)
