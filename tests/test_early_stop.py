"""Early stop of tier-1 (cinegpu.encode.early_stop): the floor, its estimate, its check, and
that a frame coded with it keeps the quality of coding every plane."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import decode, tier1
from cinegpu.encode import Encoder, EncoderSettings, early_stop
from cinegpu.bench.encode import synthetic_frame
from cinegpu.bench.encode_peers import psnr
from cinegpu.encode.tier1.codeblock import coded_passes
from cinegpu.encode.tier1.tile import encode_tile


def random_tile(seed: int, count: int):
    """(flat, cb): ``count`` random blocks of 1..64 x 1..64 samples and 0..16-bit magnitudes
    packed one after another (rows as wide as the block) with a plan-like table."""
    rng = np.random.default_rng(seed)
    parts, rows, at = [], [], 0
    for n in range(count):
        h, w = int(rng.integers(1, 65)), int(rng.integers(1, 65))
        mag = rng.integers(0, 1 << int(rng.integers(0, 17)), (h, w))
        v = mag * np.where(rng.random((h, w)) < 0.5, -1, 1) * (rng.random((h, w)) < 0.6)
        row = np.zeros(tier1.CB_COLUMNS, np.int64)
        row[[tier1.CB_ORIENT, tier1.CB_OUT, tier1.CB_WIDTH, tier1.CB_HEIGHT, tier1.CB_STRIDE]] = \
            n % 4, at, w, h, w
        rows.append(row)
        parts.append(v.astype(np.int32).ravel())
        at += h * w
    return np.concatenate(parts), np.array(rows, np.int64)


def test_coded_passes():
    assert [coded_passes(k, 0) for k in range(4)] == [0, 1, 4, 7]
    assert [coded_passes(k, 2) for k in range(6)] == [0, 0, 0, 1, 4, 7]


@pytest.mark.parametrize("floor", [1, 3, 6])
def test_a_floor_codes_the_leading_passes_of_the_full_coding(floor):
    """Each block's passes down to the floor are the full coding's first passes: the same
    distortions, and the same truncation lengths within a few bytes before the last pass
    (the shortest prefix that decodes a pass depends on the bytes after it, and the segment
    is terminated at the floor instead of running on)."""
    flat, cb = random_tile(70 + floor, 30)
    full = encode_tile(flat, cb, 0)
    cut = encode_tile(flat, cb, 0, floor=floor)
    np.testing.assert_array_equal(cut[5], full[5])                    # K is the block's own
    coded = same = before = 0
    for j, k in enumerate(full[5]):
        n = coded_passes(int(k), floor)
        a, b = full[3][j], cut[3][j]
        assert cut[3][j + 1] - b == n
        np.testing.assert_array_equal(cut[4][b:b + n], full[4][a:a + n])
        if n > 1:
            d = np.abs(cut[2][b:b + n - 1] - full[2][a:a + n - 1])
            assert d.max() <= 3
            same += int((d == 0).sum())
            before += n - 1
        coded += n
    assert 0 < coded < full[3][-1] and same >= 0.9 * before


def test_magnitude_histogram_counts_bit_lengths():
    rng = np.random.default_rng(1)
    flats = [rng.integers(-(1 << 29), 1 << 29, 5000).astype(np.int32) >> rng.integers(0, 29, 5000),
             np.array([0, 1, -1, 2, -3, 4, (1 << 30) - 1, -(1 << 30) + 1, 65535, 65536,
                       -65537, np.iinfo(np.int32).min], np.int32)]
    got = early_stop.magnitude_histogram(flats)
    m = np.abs(np.concatenate(flats).astype(np.int64))
    want = np.bincount([int(v).bit_length() for v in m], minlength=33)
    np.testing.assert_array_equal(got, want)


def test_first_floor_leaves_a_spare_plane_and_zero_when_all_fits():
    hist = np.zeros(33, np.int64)
    hist[1:13] = 10_000                      # 12 planes, each with new significant samples
    est = early_stop.plane_bytes(hist)
    above = np.cumsum(est[::-1])[::-1]
    assert early_stop.first_floor(hist, above[0] * 10, 24) == 0
    f = early_stop.first_floor(hist, above[6], 24)
    assert f >= 1 and above[f + 1] >= early_stop.BUDGET_SHARE * above[6]
    assert above[f + 2] < early_stop.BUDGET_SHARE * above[6] or f == 24
    assert early_stop.first_floor(hist, 1, 3) == 3                  # capped


def test_component_histograms_split_the_magnitude_histogram():
    """Each component's indices lie together in a tile's flat buffer; their histograms add
    up to the tile's, over several tiles."""
    from cinegpu.encode.encoder import _as_components
    from cinegpu.encode.presets import make_params
    img = synthetic_frame(150, 90, seed=6)
    with Encoder(EncoderSettings.of(backend="cpu", bitrate=150 * 90 * 24 * 4, fps=24, tiles=(64, 48))) as enc:
        comps, precs, sgn = _as_components(img, 12, None)
        params = make_params([c.shape for c in comps], precs, sgn, enc.coding)
        cs, plans = enc._geometry(params)
        flats = enc._forward(comps, params, plans)
    assert len(plans) == 6
    got = early_stop.component_histograms(plans, flats, 3)
    want = np.zeros_like(got)
    for plan, flat in zip(plans, flats):
        ranges = sorted((a, z, c) for c, a, z in early_stop.component_ranges(plan))
        assert [r[2] for r in ranges] == [0, 1, 2] and ranges[0][0] == 0
        assert all(r[1] == q[0] for r, q in zip(ranges, ranges[1:]))   # end to end
        assert ranges[-1][1] == flat.shape[0]
        for a, z, c in ranges:
            want[c] += early_stop.magnitude_histogram([flat[a:z]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got.sum(axis=0), early_stop.magnitude_histogram(flats))
    assert (got[:, 1:].sum(axis=1) > 0).all()


def test_first_floor_counts_a_component_up_to_its_cap():
    """One component with nearly all the bytes, two small ones: without caps (or caps it
    stays under) the floor is the one of the summed estimate; with a cap the big one passes,
    it counts only up to BUDGET_SHARE of it and the floor goes down for the small ones."""
    big, small = np.zeros(33, np.int64), np.zeros(33, np.int64)
    big[1:15] = 40_000
    small[1:9] = 3_000
    hists = np.stack([big, small, small])
    above = early_stop._above(early_stop.plane_bytes(hists.sum(axis=0)))
    budget = 0.5 * above[0]
    f = early_stop.first_floor(hists, budget, 24)
    assert f >= 3 and f == early_stop.first_floor(hists.sum(axis=0), budget, 24)
    assert early_stop.first_floor(hists, budget, 24, caps=budget) == f      # never reached
    cap = 0.6 * budget
    low = early_stop.first_floor(hists, budget, 24, caps=cap)
    assert low < f
    each = [early_stop._above(early_stop.plane_bytes(h)) for h in hists]
    reach = min(each[0][low + 1], early_stop.BUDGET_SHARE * cap) + each[1][low + 1] * 2
    assert reach >= early_stop.BUDGET_SHARE * budget or low == 0
    if low:                             # and one plane higher would not reach it
        reach = min(each[0][low + 2], early_stop.BUDGET_SHARE * cap) + each[1][low + 2] * 2
        assert reach < early_stop.BUDGET_SHARE * budget


def _capped_luma(amp: int):
    """A DCI 2K picture whose luma (noise) passes its cap while the chroma differences are
    small (+-amp): the chroma must fill the rest of the frame from low planes."""
    rng = np.random.default_rng(0)
    g = rng.integers(0, 3900, (1080, 2048))
    return np.stack([g + rng.integers(0, amp, g.shape) for _ in range(3)], -1).astype(np.uint16)


def test_a_starved_frame_is_coded_again_from_every_plane(monkeypatch):
    """The floor of the summed estimate (caps left out) leaves the chroma too few planes:
    rate control ends far under the budget with them whole, so the frame is coded again
    from every plane and fills the budget; the floor with the caps gets there at once."""
    import cinegpu.encode.encoder as encoder
    from cinegpu.encode.presets import dci_caps
    img = _capped_luma(8)
    frame_cap, comp_cap = dci_caps(24)
    with Encoder(EncoderSettings.of(profile="dci-2k", fps=24, backend="cpu", workers=2)) as enc:
        direct = enc.encode(img, bits=12)
        assert enc.stats["retries"] == 0 and enc.stats["floor"] == 0 and not enc.stats["starved"]
    assert frame_cap * 0.999 <= len(direct) <= frame_cap
    monkeypatch.setattr(encoder, "first_floor",
                        lambda hist, budget, most, caps=None: early_stop.first_floor(hist, budget, most))
    with Encoder(EncoderSettings.of(profile="dci-2k", fps=24, backend="cpu", workers=2)) as enc:
        again = enc.encode(img, bits=12)
        assert enc.stats["retries"] == 1 and enc.stats["floor"] == 0
    assert direct == again                  # both from every plane


def test_floor_share_counts_the_lowest_coded_plane():
    # block 0: K = 3 with floor 1 -> passes: CUP p2, SPP/MRP/CUP p1 (plane 1 = the floor)
    # block 1: K = 2 with floor 1 -> one pass, all of it in plane 1
    rates = np.array([10, 14, 20, 30, 5], np.int64)
    rate_off = np.array([0, 4, 5], np.int64)
    num_bps = np.array([3, 2], np.int64)
    share = early_stop.floor_share(rates, rate_off, num_bps, np.array([3, 1]), 1)
    assert share == pytest.approx((20 - 10 + 5) / (20 + 5))
    assert early_stop.floor_share(rates, rate_off, num_bps, np.array([1, 0]), 1) == 0.0
    assert early_stop.floor_share(rates, rate_off, num_bps, np.array([0, 0]), 1) == 0.0


def _budget_frame(seed=4):
    img = synthetic_frame(256, 192, seed=seed)
    bitrate = 256 * 192 * 3 * 1.0 * 24          # 1 bit per sample: most planes are dropped
    return img, dict(bitrate=bitrate, fps=24, backend="cpu", levels=4)


def test_early_stop_skips_planes_and_keeps_the_quality():
    img, kw = _budget_frame()
    with Encoder(EncoderSettings.of(early_stop=False, **kw)) as enc:
        full = enc.encode(img, bits=12)
        full_passes = int(enc.stats["passes"].sum())
    with Encoder(EncoderSettings.of(**kw)) as enc:
        fast = enc.encode(img, bits=12)
        stats = dict(enc.stats)
    assert stats["floor"] >= 1 and stats["floor_share"] <= early_stop.FLOOR_SHARE
    assert len(fast) <= 256 * 192 * 3 / 8
    assert abs(psnr(img, decode(fast)) - psnr(img, decode(full))) < 0.05
    assert int(stats["passes"].sum()) <= full_passes + 8


def test_a_floor_that_cuts_what_rate_control_wants_is_lowered(monkeypatch):
    """A first floor far too high (the estimate forced up): the kept bytes crowd its plane,
    so the frame is coded again lower, up to MAX_RETRIES times."""
    import cinegpu.encode.encoder as encoder
    img, kw = _budget_frame()
    with Encoder(EncoderSettings.of(**kw)) as enc:
        enc.encode(img, bits=12)
        right = enc.stats["floor"]
    monkeypatch.setattr(encoder, "first_floor", lambda *args: right + 3)
    with Encoder(EncoderSettings.of(**kw)) as enc:
        data = enc.encode(img, bits=12)
        assert enc.stats["retries"] >= 1 and enc.stats["floor"] < right + 3
    assert len(data) <= 256 * 192 * 3 / 8


def test_frames_do_not_depend_on_the_frames_before():
    img, kw = _budget_frame(5)
    other, _ = _budget_frame(9)
    with Encoder(EncoderSettings.of(**kw)) as enc:
        alone = enc.encode(img, bits=12)
    with Encoder(EncoderSettings.of(**kw)) as enc:
        enc.encode(other, bits=12)
        enc.encode(np.zeros_like(img), bits=12)
        assert enc.encode(img, bits=12) == alone


def test_no_floor_without_a_budget_or_when_reversible():
    img = synthetic_frame(96, 64, seed=2)
    with Encoder(EncoderSettings.of(backend="cpu", levels=3)) as enc:
        enc.encode(img, bits=12)
        assert enc.stats["floor"] == 0
    with Encoder(EncoderSettings.of(backend="cpu", levels=3, reversible=True, bitrate=96 * 64 * 3 * 24)) as enc:
        enc.encode(img, bits=12)
        assert enc.stats["floor"] == 0
