"""Tiles that share a plan (decode/plan.py ``translation_period``, ``translated``): a plan moved
to another tile of its class equals the plan built for that tile, field by field, and the
decoder builds one plan per class.

Streams: cinegpu's encoder with many tiles (offsets, sub-sampling, precincts, several levels),
and the conformance streams that have more than one tile.
"""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.decode import plan_numba as N
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.plan import build_tile_plan, tile_rect, translated
from cinegpu.encode import encode
from conftest import CONFORMANCE
from helpers.peers import Image, image_planes


def same_plan(a, b) -> None:
    assert (a.index, a.x0, a.y0, a.x1, a.y1) == (b.index, b.x0, b.y0, b.x1, b.y1)
    for name in ("prec_pb", "pb", "cb", "cb_keep"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.nodes, a.coeff_size, a.num_precincts, a.layers, a.ht, a.missing_steps) == \
           (b.nodes, b.coeff_size, b.num_precincts, b.layers, b.ht, b.missing_steps)
    for ta, tb in zip(a.components, b.components, strict=True):
        assert (ta.c, ta.x0, ta.y0, ta.x1, ta.y1, ta.levels, ta.decoded) == (tb.c, tb.x0, tb.y0, tb.x1, tb.y1,
                                                                              tb.levels, tb.decoded)
        for ra, rb in zip(ta.resolutions, tb.resolutions, strict=True):
            assert ra.rect == rb.rect and (ra.npx, ra.npy, ra.prec_first) == (rb.npx, rb.npy, rb.prec_first)
            assert [(x.orient, x.x0, x.y0, x.x1, x.y1, x.offset, x.delta, x.Mb) for x in ra.bands] == \
                   [(x.orient, x.x0, x.y0, x.x1, x.y1, x.offset, x.delta, x.Mb) for x in rb.bands]
        la, lb = ta.flat_layout(), tb.flat_layout()
        for name in ("bands", "dq97", "q53"):
            np.testing.assert_array_equal(getattr(la, name), getattr(lb, name), err_msg=name)
        # a moved plan keeps its class's layouts: each level's rectangle of one size and parity
        # (all the inverse DWT reads of it, F.3), a whole number of samples away
        np.testing.assert_array_equal(la.rects[:, 2:] - la.rects[:, :2], lb.rects[:, 2:] - lb.rects[:, :2])
        np.testing.assert_array_equal(la.rects % 2, lb.rects % 2)


def check_classes(data: bytes, reduce: int = 0) -> int:
    """Every tile's plan as the decoder gives it (moved where its class has one) against the
    plan built for it; returns the number of classes."""
    cs = parse_codestream(data)
    dec = Decoder()
    main = dec._main_key(cs)
    keys = {t: dec._key(cs, t, reduce, main) for t in cs.tiles}
    for t in sorted(cs.tiles):
        same_plan(dec.plan(cs, t, reduce, key=keys[t]), build_tile_plan(cs, t, reduce))
    return len(set(keys.values()))


# (options, whether like tiles share a class: a tile moved by a multiple of its period, with
# code-blocks of 2**(NL + xcb) samples or smaller cells, precincts too)
@pytest.mark.parametrize("kw, shares", [  # code-block and precinct sizes as exponents (log2)
    (dict(tiles=(32, 32), levels=3, codeblock=(2, 2)), True),
    (dict(tiles=(32, 32), levels=3), False),  # 32 x 32 code-blocks of the LL band: 256-sample cells
    (dict(tiles=(32, 64), levels=2, codeblock=(3, 2), precincts=[(4, 5)] * 3), True),
    (dict(tiles=(64, 32), levels=4, codeblock=(2, 2)), True),
    (dict(tiles=(64, 64), levels=4, codeblock=(2, 2), reversible=False, progression="PCRL"), True),
    (dict(tiles=(64, 64), levels=3, codeblock=(3, 3), progression="CPRL", precincts=[(3, 3), (4, 4), (5, 5), (6, 6)]),
     True),
    (dict(tiles=(40, 24), levels=3, progression="RPCL", precincts=[(3, 3), (4, 4), (5, 5), (6, 6)]), False),
])
@pytest.mark.parametrize("sub", [(), ((1, 1), (2, 1), (1, 2))])
@pytest.mark.parametrize("reduce", [0, 1])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_moved_plans_equal_built_ones(kw, shares, sub, reduce):
    img = Image(w=203, h=157, n=3, bits=8, fmt="raw", sub=sub, seed=5)
    planes = image_planes(img)
    data = encode(planes if sub else np.stack(planes, -1), bits=8, backend="cpu", **{"reversible": True, **kw})
    classes = check_classes(data, reduce)
    if shares:
        assert classes < len(parse_codestream(data).tiles)


@pytest.mark.parametrize("name", ["p0_10.j2k", "p1_05.j2k", "p1_06.j2k", "p0_06.j2k", "p0_14.j2k"])
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_conformance_tiles(name):
    path = CONFORMANCE / "part1" / "codestreams" / name
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    check_classes(path.read_bytes())


def test_translated_moves_by_a_period():
    img = Image(w=150, h=100, n=1, bits=8, fmt="pgx", seed=2)
    data = encode(image_planes(img)[0], bits=8, backend="cpu", reversible=True, tiles=(32, 32), levels=2,
                  codeblock=(3, 3))
    cs = parse_codestream(data)
    a = build_tile_plan(cs, 0)
    moved = translated(a, 1, tile_rect(cs, 1), cs.siz)
    same_plan(moved, build_tile_plan(cs, 1))
    assert moved.cb is a.cb and moved.packet_orders is a.packet_orders  # shared, not copied


def test_the_rectangle_columns_are_the_same_four_in_every_table():
    """``translated`` moves the tile-component, resolution and subband rectangles by one slice."""
    cols = range(N.RECT_COLUMNS.start, N.RECT_COLUMNS.stop)
    assert tuple(cols) == (N.TC_X0, N.TC_Y0, N.TC_X1, N.TC_Y1) == (N.RES_X0, N.RES_Y0, N.RES_X1, N.RES_Y1) \
        == (N.BAND_X0, N.BAND_Y0, N.BAND_X1, N.BAND_Y1)
