"""Packet order: the five progressions of B.12 and POC changes (A.6.6).

:func:`packet_order` returns an (n, 2) int64 array of (precinct, layer) in
the order packets appear in the tile. Position-driven orders (RPCL, PCRL,
CPRL) are sorted on the reference-grid point where the B.12.1.3 loops meet
each precinct: the precinct's corner, or the tile's corner for a first
precinct that straddles it.
"""

from __future__ import annotations

import numpy as np

from ..codestream.poc import Progression
from ..plan import TilePlan

LRCP, RLCP, RPCL, PCRL, CPRL = range(5)
#: Packet orders a plan keeps (one per layer count asked for; a reel asks for one or two).
ORDERS_PER_PLAN = 4


def _precinct_table(plan: TilePlan, siz) -> np.ndarray:
    """Rows (precinct, c, r, px, py, x_ref, y_ref) for every precinct of the tile."""
    rows = []
    for tc in plan.components:
        xr, yr = siz.XRsiz[tc.c], siz.YRsiz[tc.c]
        for res in tc.resolutions:
            n = res.npx * res.npy
            if n == 0:
                continue
            d = tc.levels - res.r
            i = np.arange(n) % res.npx
            j = np.arange(n) // res.npx
            kx0, ky0 = res.x0 >> res.PPx, res.y0 >> res.PPy
            x_ref = ((kx0 + i) << (res.PPx + d)) * xr
            y_ref = ((ky0 + j) << (res.PPy + d)) * yr
            # a first precinct whose corner lies before the tile is met at the tile's corner
            x_ref = np.where((i == 0) & (x_ref < plan.x0), plan.x0, x_ref)
            y_ref = np.where((j == 0) & (y_ref < plan.y0), plan.y0, y_ref)
            rows.append(np.stack([res.prec_first + np.arange(n), np.full(n, tc.c), np.full(n, res.r),
                                  i, j, x_ref, y_ref], axis=1))
    if not rows:
        return np.zeros((0, 7), np.int64)
    return np.concatenate(rows).astype(np.int64)


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
