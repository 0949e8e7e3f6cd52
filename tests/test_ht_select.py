"""The HT byte budget's plane choice (encode/ht_select.py): the exact search over the blocks'
hull slopes picks the same planes as a bisection on lambda would (the search it replaced,
kept here as the reference), on real figures of frames and on random and degenerate ones."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.encode.ht import DMAX
from cinegpu.encode.ht_select import LAMBDA_RANGE, PlaneChoice, hull_steps, select_planes


def bisection(w, dist, bits, target):
    """Per block argmin of w dist + lambda bits, lambda bisected on log2 between the ends of
    LAMBDA_RANGE (50 rounds) to the smallest that fits ``target``."""
    d = np.zeros(w.shape[0], np.int64)
    rows = np.arange(w.shape[0])
    if bits[:, 0].sum() <= target:
        return d
    wd = w[:, None] * dist
    lo, hi = (float(np.log2(v)) for v in LAMBDA_RANGE)
    for _ in range(50):
        mid = (lo + hi) / 2
        pick = np.argmin(wd + 2.0 ** mid * bits, axis=1)
        if bits[rows, pick].sum() <= target:
            hi, d = mid, pick
        else:
            lo = mid
    if not d.any() and bits[:, 0].sum() > target:
        d = np.argmin(wd + 2.0 ** hi * bits, axis=1)
    return d.astype(np.int64)


def _frame_figures(seed):
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode.encoder import Encoder, EncoderSettings
    from cinegpu.encode.ht import _tile_figures
    from cinegpu.encode.quant import block_weights
    img = synthetic_frame(256, 144, seed=seed)
    got = {}

    def keep(frame_cls, params, cs, plans, flats, *a, **k):
        figs = [_tile_figures(None, f, p.cb) for p, f in zip(plans, flats)]
        got["w"] = np.concatenate([block_weights(p, params) for p in plans])
        got["dist"] = np.concatenate([f[0] for f in figs])
        got["bits"] = np.concatenate([f[1] for f in figs])
        return b""
    import cinegpu.encode.ht as ht
    orig = ht.encode_ht_frame
    ht.encode_ht_frame = keep
    try:
        with Encoder(EncoderSettings.of(backend="cpu", codec="htj2k", codeblock=(16, 16), base_step=0.5)) as enc:
            enc.encode(img, bits=12)
    finally:
        ht.encode_ht_frame = orig
    return got["w"], got["dist"], got["bits"]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("share", [1.0, 0.9, 0.5, 0.2, 0.05, 0.01, 0.0])
def test_real_figures_same_planes_as_bisection(seed, share):
    w, dist, bits = _frame_figures(seed)
    assert dist.shape[1] == DMAX + 1 and w.shape[0] > 100
    target = share * bits[:, 0].sum()
    want = bisection(w, dist, bits, target)
    got = select_planes(w, dist, bits, target)
    assert np.array_equal(got, want)
    if share < 1.0:
        assert got.any()


@pytest.mark.parametrize("seed", range(6))
def test_random_figures_same_planes_as_bisection(seed):
    """Figures that are not monotone in d (a block's error can fall when a plane is dropped,
    the midpoint landing on its value), blocks with no bits, very large and tiny weights."""
    rng = np.random.default_rng(seed)
    n, m = 400, DMAX + 1
    dist = np.cumsum(rng.random((n, m)) * rng.choice([1.0, 1e3, 1e6], (n, 1)), axis=1)
    dist[rng.random((n, m)) < 0.1] *= 0.5
    bits = np.cumsum(rng.random((n, m))[:, ::-1] * 300, axis=1)[:, ::-1] + 8.0
    bits[rng.random(n) < 0.05] = 8.0                               # nothing to gain
    w = rng.choice([1e-9, 1e-3, 1.0, 40.0], n) * rng.random(n)
    choice = PlaneChoice(w, dist, bits)           # one per frame, asked for several targets
    for share in (0.95, 0.6, 0.3, 0.1):
        target = share * bits[:, 0].sum()
        assert np.array_equal(choice.select(target), bisection(w, dist, bits, target)), share
    # out of reach: at 2^60 the bisection's w dist + 2^60 bits loses w dist to rounding, so
    # among planes of equal (fewest) bits it takes the first; the exact choice the least error
    got, ref = choice.select(0.0), bisection(w, dist, bits, 0.0)
    rows = np.arange(n)
    assert np.array_equal(bits[rows, got], bits[rows, ref])
    assert np.all(w * dist[rows, got] <= w * dist[rows, ref])


def test_hull_steps_walk_to_fewer_bits_at_growing_slopes():
    wd = np.array([[0.0, 1.0, 4.0, 5.9, 50.0]])
    bits = np.array([[100.0, 60.0, 40.0, 39.0, 0.0]])
    start, lam, nxt, count = hull_steps(wd, bits)
    assert start[0] == 0 and count[0] == 3
    # 0 -> 1 at 1/40, 1 -> 2 at 3/20, then 2 -> 4 at 46/40 (3 lies above the hull)
    assert list(nxt[0, :3]) == [1, 2, 4]
    assert np.allclose(lam[0, :3], [1 / 40, 3 / 20, 46 / 40])


def test_unreachable_target_takes_the_choice_at_the_largest_slope():
    w = np.ones(3)
    dist = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    bits = np.array([[10.0, 5.0], [10.0, 5.0], [10.0, 10.0]])
    assert list(select_planes(w, dist, bits, 1.0)) == list(bisection(w, dist, bits, 1.0))
    assert list(select_planes(w, dist, bits, 1.0)) == [1, 1, 0]
    assert not select_planes(w, dist, bits, 30.0).any()


def _sorted_walk(slopes, gains, need):
    """The reference: moves sorted by slope, the first whose running total saves ``need``."""
    order = np.argsort(slopes, kind="stable")
    acc = np.cumsum(gains[order])
    hit = np.flatnonzero(acc >= need)
    return float(slopes[order][hit[0]]) if hit.size else np.inf


@pytest.mark.parametrize("seed", range(4))
def test_bucketed_selection_is_the_sorted_walk(seed):
    """The weighted selection over slope buckets gives the slope the sorted walk gives, on
    slopes spread over many octaves, crowded into one bucket, tied, zero (+0.0 and -0.0) and
    gains in eighths (exact sums, as the figures' bits), for needs at and between steps."""
    from cinegpu.encode.ht_select import _bucketed, _first_fit_bucketed
    rng = np.random.default_rng(seed)
    n = 5000
    slopes = np.concatenate([2.0 ** rng.uniform(-40, 40, n),          # many buckets
                             1.0 + rng.random(n) * 1e-3,              # one crowded bucket
                             np.repeat(rng.random(20) * 100, 50),     # ties
                             np.zeros(30), -np.zeros(30)])
    gains = rng.integers(1, 4000, slopes.size) / 8.0
    b = _bucketed(slopes, gains)
    total = gains.sum()
    cums = np.cumsum(gains[np.argsort(slopes, kind="stable")])
    needs = [1e-3, gains.min(), total / 3, total / 2, total, total + 1,
             *cums[rng.integers(0, cums.size, 40)], *(cums[rng.integers(0, cums.size, 40)] + 0.0625)]
    for need in needs:
        assert _first_fit_bucketed(*b, need) == _sorted_walk(slopes, gains, need), need


def test_negative_or_nan_figures_are_refused():
    bits = np.array([[10.0, 5.0]])
    with pytest.raises(ValueError, match="non-negative"):
        PlaneChoice(np.array([1.0]), np.array([[np.nan, 1.0]]), bits)
