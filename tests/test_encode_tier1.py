"""The encoder's tile tier-1 kernel (cinegpu.encode.tier1.tile.encode_tile: every
code-block of a tile from the flat coefficient buffer into one table) against the plain
per-block path (cut_blocks + encode_codeblock), byte for byte, rate for rate, and
distortion for distortion, on real tile plans with every code-block style."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import tier1
from cinegpu.bench.encode import synthetic_frame
from cinegpu.encode.blocks import BlockTable, TierOnePool, cut_blocks, encode_blocks
from cinegpu.encode.encoder import Encoder, EncoderSettings, _as_components
from cinegpu.encode.presets import make_params
from cinegpu.encode.tier1.tile import encode_tile

STYLES = [0, tier1.CBLK_BYPASS, tier1.CBLK_BYPASS | tier1.CBLK_TERMALL,
          tier1.CBLK_RESET | tier1.CBLK_VCAUSAL | tier1.CBLK_SEGSYM | tier1.CBLK_BYPASS,
          tier1.CBLK_PTERM | tier1.CBLK_TERMALL]

CASES = [  # (shape (H, W, C), encode options); reversible and irreversible
    ((37, 53, 1), {"levels": 2, "reversible": True}),
    ((64, 80, 3), {"levels": 3, "codeblock": (16, 16)}),
    ((70, 90, 3), {"precincts": [(16, 16), (32, 32)], "reversible": True}),
    ((50, 70, 2), {"tiles": (32, 24), "codeblock": (4, 8)}),
    ((33, 200, 1), {"levels": 0, "codeblock": (64, 16), "reversible": True}),
    ((1, 1, 1), {}),
]


def _tiles(shape, opts, style):
    """(plans, flats) of a synthetic picture after the forward stage and guard bits."""
    h, w, c = shape
    img = synthetic_frame(max(w, 2), max(h, 2), seed=c)[:h, :w, :c]
    with Encoder(EncoderSettings.of(backend="cpu", style=style, **opts)) as enc:
        comps, precs, sgn = _as_components(img, 12, None)
        params = make_params([x.shape for x in comps], precs, sgn, enc.coding)
        cs, plans = enc._geometry(params)
        flats = enc._forward(comps, params, plans)
        params, cs, plans, flats = enc._guard_bits(params, cs, plans, flats)
    return plans, flats


def _assert_same(table: BlockTable, dists, blocks):
    assert len(table) == len(blocks)
    for i, b in enumerate(blocks):
        got = table.block(i, dists)
        assert got.coded == b.coded
        np.testing.assert_array_equal(got.rates, b.rates)
        np.testing.assert_array_equal(got.dists, b.dists)  # same sums in the same order
        assert got.num_bps == b.num_bps


def test_case_counts():
    assert (len(CASES), len(STYLES)) == (6, 5)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_tile_kernel_matches_per_block_path(case, style):
    plans, flats = _tiles(*CASES[case], style)
    for plan, flat in zip(plans, flats):
        want = encode_blocks(cut_blocks(flat, plan.cb), list(plan.cb[:, tier1.CB_ORIENT]),
                             style)
        _assert_same(*BlockTable.join([encode_tile(flat, plan.cb, style)]), want)


def test_threads_and_row_subsets_match():
    plans, flats = _tiles((130, 150, 3), {"codeblock": (16, 16)}, tier1.CBLK_BYPASS)
    plan, flat = plans[0], flats[0]
    want = encode_blocks(cut_blocks(flat, plan.cb), list(plan.cb[:, tier1.CB_ORIENT]),
                         tier1.CBLK_BYPASS)
    with TierOnePool(3) as pool:
        _assert_same(*BlockTable.join([pool.run_tile(flat, plan.cb, tier1.CBLK_BYPASS)]), want)
    rows = np.arange(5, 40)
    _assert_same(*BlockTable.join([encode_tile(flat, plan.cb, tier1.CBLK_BYPASS, rows)]),
                 want[5:40])


def test_magnitude_limit():
    flat = np.zeros(16, np.int32)
    flat[3] = -(1 << 30)
    cb = np.zeros((1, tier1.CB_COLUMNS), np.int64)
    cb[0, [tier1.CB_WIDTH, tier1.CB_HEIGHT, tier1.CB_STRIDE]] = 4
    with pytest.raises(ValueError, match="2\\^30"):
        encode_tile(flat, cb, 0)
    flat[3] = -(1 << 30) + 1
    coded, coded_off, rates, rate_off, dists, num_bps = encode_tile(flat, cb, 0)
    assert num_bps.tolist() == [30] and rate_off.tolist() == [0, 88]
