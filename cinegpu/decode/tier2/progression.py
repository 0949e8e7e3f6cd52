"""Packet order: the five progressions of B.12 and POC changes (A.6.6).

:func:`packet_order` returns an (n, 2) int64 array of (precinct, layer) in
the order packets appear in the tile. Position-driven orders (RPCL, PCRL,
CPRL) are sorted on the reference-grid point where the B.12.1.3 loops meet
each precinct: the precinct's corner, or the tile's corner for a first
precinct that straddles it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..codestream.poc import Progression
from ..plan import TilePlan
from ..plan_numba import RES_NPX, RES_NPY, RES_PPX, RES_PPY, RES_PREC, RES_R, RES_TC, RES_X0, RES_Y0, TC_C, TC_LEVELS

LRCP, RLCP, RPCL, PCRL, CPRL = range(5)
#: Packet orders a plan keeps (one per layer count asked for; a reel asks for one or two).
ORDERS_PER_PLAN = 4


def _precinct_table(plan: TilePlan, siz) -> np.ndarray:
    """Rows (precinct, c, r, px, py, x_ref, y_ref) for every precinct of the tile."""
    g = plan.geometry
    return _precinct_rows(g.tcs, g.res, np.asarray(siz.XRsiz, np.int64), np.asarray(siz.YRsiz, np.int64),
                          plan.x0, plan.y0)


@njit(cache=True)
def _precinct_rows(tcs, res, xr, yr, tx0, ty0):
    """:func:`_precinct_table` of a plan's tile-component and resolution rows (``plan_numba``'s
    TC_* and RES_*), tile corner (tx0, ty0): precinct (px, py) of resolution r of component c
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


def _ordered(table: np.ndarray, layers: int, order: int) -> np.ndarray:
    """All packets (precinct, layer) of ``table`` x ``range(layers)`` in ``order``."""
    n = table.shape[0]
    if n == 0 or layers <= 0:
        return np.zeros((0, 2), np.int64)
    prec = np.repeat(table[:, 0], layers)
    layer = np.tile(np.arange(layers), n)
    c, r = np.repeat(table[:, 1], layers), np.repeat(table[:, 2], layers)
    p = prec  # precinct index within (c, r) sorts like the global index
    x, y = np.repeat(table[:, 5], layers), np.repeat(table[:, 6], layers)
    keys = {
        LRCP: (p, c, r, layer),
        RLCP: (p, c, layer, r),
        RPCL: (layer, c, x, y, r),
        PCRL: (layer, r, c, x, y),
        CPRL: (layer, r, x, y, c),
    }[order]  # np.lexsort sorts by the last key first
    idx = np.lexsort(keys)
    return np.stack([prec[idx], layer[idx]], axis=1)


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
        order = _packet_order(plan, siz, layers)
        if len(plan.packet_orders) >= ORDERS_PER_PLAN:
            plan.packet_orders.clear()
        plan.packet_orders[layers] = order
    return order


def _packet_order(plan: TilePlan, siz, layers: int) -> np.ndarray:
    """:func:`packet_order` for ``layers`` layers, computed."""
    table = _precinct_table(plan, siz)
    if not plan.pocs:
        return _ordered(table, layers, plan.progression)
    n_prec = plan.num_precincts
    done = np.zeros(n_prec * layers, bool)
    out = []
    for poc in plan.pocs:
        sel = (
            (table[:, 1] >= poc.CSpoc) & (table[:, 1] < poc.CEpoc)
            & (table[:, 2] >= poc.RSpoc) & (table[:, 2] < poc.REpoc)
        )
        pk = _ordered(table[sel], min(poc.LYEpoc, layers), poc.Ppoc)
        if pk.shape[0] == 0:
            continue
        flat = pk[:, 0] * layers + pk[:, 1]
        fresh = ~done[flat]
        # a packet listed twice within one progression is taken once
        _, first = np.unique(flat, return_index=True)
        once = np.zeros(flat.shape[0], bool)
        once[first] = True
        take = fresh & once
        done[flat[take]] = True
        out.append(pk[take])
    return np.concatenate(out) if out else np.zeros((0, 2), np.int64)


__all__ = ["packet_order", "Progression"]
