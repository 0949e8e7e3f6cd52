"""Packet order: the five progressions of B.12 and POC changes (A.6.6).

:func:`packet_order` returns an (n, 2) int64 array of (precinct, layer) in
the order packets appear in the tile. Position-driven orders (RPCL, PCRL,
CPRL) are sorted on the reference-grid point where the B.12.1.3 loops meet
each precinct: the precinct's corner, or the tile's corner for a first
precinct that straddles it. One compiled call (:func:`_tile_orders`) orders every tile of a
frame, whatever its progression or POC, so a stream's first frame loads no other kernel.
"""

from __future__ import annotations

import itertools

import numpy as np
from numba import njit

from ..codestream.poc import Progression
from ..plan import TilePlan, joined
from ..plan_numba import (
    RES_COLUMNS,
    RES_NPX,
    RES_NPY,
    RES_PPX,
    RES_PPY,
    RES_PREC,
    RES_R,
    RES_TC,
    RES_X0,
    RES_Y0,
    TC_C,
    TC_COLUMNS,
    TC_LEVELS,
)

LRCP, RLCP, RPCL, PCRL, CPRL = range(5)
#: Packet orders a plan keeps (one per layer count asked for; a reel asks for one or two).
ORDERS_PER_PLAN = 4
# Columns of :func:`_tile_orders`' tiles and pocs.
T_TCS, T_RES, T_PREC, T_X0, T_Y0, T_LAYERS, T_PROGRESSION, T_PRECINCTS, T_POC, T_POCS = range(10)
POC_CS, POC_CE, POC_RS, POC_RE, POC_LYE, POC_P = range(6)


@njit(cache=True)
def _precinct_rows(tcs, res, xr, yr, tx0, ty0):
    """Rows (precinct, c, r, px, py, x_ref, y_ref) of every precinct of a tile, from its
    tile-component and resolution rows (``plan_numba``'s TC_* and RES_*) and its corner
    (tx0, ty0): precinct (px, py) of resolution r of component c
    meets the B.12.1.3 loops at ((kx0 + px) 2**(PPx + NL - r) XRsiz, likewise y) on the
    reference grid, kx0 = floor(rx0 / 2**PPx), or at the tile's corner where that lies before
    it (the first precinct of a row or column)."""
    n = 0
    for i in range(res.shape[0]):
        n += res[i, RES_NPX] * res[i, RES_NPY]
    out = np.empty((n, 7), np.int64)
    row = 0
    for i in range(res.shape[0]):
        npx, npy = res[i, RES_NPX], res[i, RES_NPY]
        t, r = res[i, RES_TC], res[i, RES_R]
        c, d = tcs[t, TC_C], tcs[t, TC_LEVELS] - r
        ppx, ppy = res[i, RES_PPX], res[i, RES_PPY]
        kx0, ky0 = res[i, RES_X0] >> ppx, res[i, RES_Y0] >> ppy
        for k in range(npx * npy):
            px, py = k % npx, k // npx
            x = ((kx0 + px) << (ppx + d)) * xr[c]
            y = ((ky0 + py) << (ppy + d)) * yr[c]
            out[row, 0], out[row, 1], out[row, 2], out[row, 3], out[row, 4] = res[i, RES_PREC] + k, c, r, px, py
            out[row, 5] = tx0 if px == 0 and x < tx0 else x
            out[row, 6] = ty0 if py == 0 and y < ty0 else y
            row += 1
    return out


# The sort keys of each progression (B.12.1), least significant first as np.lexsort takes them:
# a column of the precinct table (0 precinct, 1 c, 2 r, 5 x_ref, 6 y_ref), _LAYER, or none (-1).
# The precinct index sorts as the precinct within its (c, r) does.
_LAYER = 7
_KEYS = np.array([[0, 1, 2, _LAYER, -1],  # LRCP
                  [0, 1, _LAYER, 2, -1],  # RLCP
                  [_LAYER, 1, 5, 6, 2],   # RPCL
                  [_LAYER, 2, 1, 5, 6],   # PCRL
                  [_LAYER, 2, 5, 6, 1]],  # CPRL
                 np.int64)


@njit(cache=True, inline="always")
def _key(table, layers, which, k):
    """Key ``which`` (a column of the precinct table, or _LAYER) of packet ``k``."""
    return k % layers if which == _LAYER else table[k // layers, which]


@njit(cache=True)
def _ordered_into(table, layers, order, out, at):
    """Write the packets (precinct, layer) of ``table`` x ``range(layers)`` in progression
    ``order`` into ``out[at:]``; returns how many. Packet k (precinct row k // layers, layer
    k % layers) is sorted stably on the keys of ``_KEYS[order]``, the last the most significant:
    np.lexsort's order, ties kept in precinct-then-layer order. The keys and k are one
    mixed-radix number where their ranges allow (one sort), else sorted on one after another."""
    m = table.shape[0] * max(layers, 0)
    if m == 0:
        return 0
    keys = _KEYS[order]
    lo, span = np.zeros(keys.shape[0], np.int64), np.ones(keys.shape[0], np.int64)
    room = (1 << 62) // m   # the packet's index breaks ties: one key, sorted unstably
    for i in range(keys.shape[0]):
        if keys[i] >= 0:
            lo[i] = hi = _key(table, layers, keys[i], 0)
            for k in range(1, m):
                v = _key(table, layers, keys[i], k)
                lo[i], hi = min(lo[i], v), max(hi, v)
            span[i] = hi - lo[i] + 1
            room = room // span[i] if span[i] <= room else 0
    key = np.zeros(m, np.int64)
    if room > 0:   # one number, the most significant key first, the packet's index last
        for k in range(m):
            for i in range(keys.shape[0] - 1, -1, -1):
                if keys[i] >= 0:
                    key[k] = key[k] * span[i] + _key(table, layers, keys[i], k) - lo[i]
            key[k] = key[k] * m + k
        idx = np.sort(key) % m
    else:
        idx = np.arange(m)
        for i in range(keys.shape[0]):
            if keys[i] >= 0:
                for j in range(m):
                    key[j] = _key(table, layers, keys[i], idx[j])
                idx = idx[np.argsort(key, kind="mergesort")]
    for j in range(m):
        out[at + j, 0], out[at + j, 1] = table[idx[j] // layers, 0], idx[j] % layers
    return m


@njit(cache=True)
def _poc_into(table, layers, pocs, out, at):
    """The packets of a tile with POC (A.6.6) into ``out[at:]``: each progression's (its
    components [CSpoc, CEpoc), resolutions [RSpoc, REpoc), layers below LYEpoc, in order Ppoc;
    ``pocs`` rows as POC_*) in turn, a packet listed by an earlier one skipped; returns how
    many."""
    done = np.zeros(table.shape[0] * layers, np.bool_)
    sub = np.empty_like(table)
    listed = np.empty((table.shape[0] * layers, 2), np.int64)
    n = 0
    for k in range(pocs.shape[0]):
        m = 0
        for i in range(table.shape[0]):
            if pocs[k, POC_CS] <= table[i, 1] < pocs[k, POC_CE] and pocs[k, POC_RS] <= table[i, 2] < pocs[k, POC_RE]:
                sub[m] = table[i]
                m += 1
        # np.int64(0), not a literal 0: a literal would compile _ordered_into a second time
        got = _ordered_into(sub[:m], min(pocs[k, POC_LYE], layers), pocs[k, POC_P], listed, np.int64(0))
        for j in range(got):
            f = listed[j, 0] * layers + listed[j, 1]
            if not done[f]:
                done[f] = True
                out[at + n, 0], out[at + n, 1] = listed[j, 0], listed[j, 1]
                n += 1
    return n


@njit(cache=True)
def _tile_orders(tcs, res, tiles, pocs, xr, yr):
    """The packet orders of tiles, one after another, and each tile's first row (one more at
    the end): ``tcs`` and ``res``, the tiles' stacked TC_* and RES_* rows; ``tiles``: per tile
    (T_* columns), its tile-component and resolution rows, its first precinct in the frame
    (added to its own), its corner, its layers, its progression, its precincts and its rows of
    ``pocs`` (POC_*, A.6.6; none: the progression)."""
    total = 0
    for i in range(tiles.shape[0]):
        total += tiles[i, T_PRECINCTS] * max(tiles[i, T_LAYERS], 0)
    out = np.empty((total, 2), np.int64)
    starts = np.zeros(tiles.shape[0] + 1, np.int64)
    t0 = r0 = 0
    for i in range(tiles.shape[0]):
        table = _precinct_rows(tcs[t0 : t0 + tiles[i, T_TCS]], res[r0 : r0 + tiles[i, T_RES]], xr, yr,
                               tiles[i, T_X0], tiles[i, T_Y0])
        at, layers = starts[i], tiles[i, T_LAYERS]
        if tiles[i, T_POCS]:
            n = _poc_into(table, layers, pocs[tiles[i, T_POC] : tiles[i, T_POC] + tiles[i, T_POCS]], out, at)
        else:
            n = _ordered_into(table, layers, tiles[i, T_PROGRESSION], out, at)
        for j in range(at, at + n):
            out[j, 0] += tiles[i, T_PREC]
        starts[i + 1] = at + n
        t0, r0 = t0 + tiles[i, T_TCS], r0 + tiles[i, T_RES]
    return out[: starts[-1]], starts


def frame_packet_orders(plans: list[TilePlan], siz, layers: list[int], prec_first: list[int]):
    """Every tile's :func:`packet_order` for ``layers`` (each tile's, as reachable) one after
    another, precincts counted from the frame's first (each tile's first in ``prec_first``),
    and each tile's first row (one more at the end), in one compiled call (a frame of 225
    tiles costs no Python per tile; one kernel for every progression and POC)."""
    geos = [p.geometry for p in plans]
    pocs = [(q.CSpoc, q.CEpoc, q.RSpoc, q.REpoc, q.LYEpoc, q.Ppoc) for p in plans for q in p.pocs]
    firsts = itertools.accumulate((len(p.pocs) for p in plans), initial=0)
    tiles = np.array([(g.tcs.shape[0], g.res.shape[0], first, p.x0, p.y0, n, p.progression, p.num_precincts, f,
                       len(p.pocs)) for p, g, n, first, f in zip(plans, geos, layers, prec_first, firsts)],
                     np.int64).reshape(-1, 10)
    tcs = joined([g.tcs for g in geos], (TC_COLUMNS,), np.int64)
    res = joined([g.res for g in geos], (RES_COLUMNS,), np.int64)
    order, starts = _tile_orders(tcs, res, tiles, np.array(pocs, np.int64).reshape(-1, 6), np.asarray(siz.XRsiz, np.int64),
                                 np.asarray(siz.YRsiz, np.int64))
    return order, starts.tolist()


def packet_order(plan: TilePlan, siz, reachable: int | None = None) -> np.ndarray:
    """The tile's packets in stream order, honouring POC if present.

    ``reachable``: how many packets the data can hold at most (its bytes of packet headers:
    a packet takes at least one, B.10.3). Only layers below it are listed: in every
    progression, with or without POC, a precinct's layers come in increasing order, so
    packet (p, l) has at least l packets before it. The listed packets of a tile are then
    at most precincts x min(layers, reachable), whatever COD's layer count says.

    The order is kept in ``plan.packet_orders`` (at most :data:`ORDERS_PER_PLAN`), so a plan
    reused frame after frame computes it once; callers must not write into it.
    """
    layers = plan.layers if reachable is None else min(plan.layers, max(reachable, 0))
    order = plan.packet_orders.get(layers)
    if order is None:
        order = frame_packet_orders([plan], siz, [layers], [0])[0]
        if len(plan.packet_orders) >= ORDERS_PER_PLAN:
            plan.packet_orders.clear()
        plan.packet_orders[layers] = order
    return order


__all__ = ["frame_packet_orders", "packet_order", "Progression"]
