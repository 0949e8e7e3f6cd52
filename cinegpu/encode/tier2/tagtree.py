"""Tag trees (T.800 B.10.2), encoded in numba over flat node arrays.

The layout is the decoder's (decode/tier2/tagtree.py): a precinct-band's
tree over w x h leaves is stored level by level from the leaves up (w*h
nodes, then ceil(w/2)*ceil(h/2), ... up to the 1x1 root) from its node
offset (the plan's PB_NODES column).  ``value`` holds each node's value (a
parent is the minimum of its children), ``low`` the lower bound the decoder
has learnt so far, ``known`` whether the decoder knows the value exactly.
"""

from __future__ import annotations

from numba import njit

from .bits import LEAF, put_bit

#: deepest tree: 2^15-sample precincts of 4-sample code-blocks -> 14 levels
MAX_DEPTH = 32


@njit(**LEAF)
def tree_build(value, base, w, h):
    """Fill the levels above the leaves (already in ``value[base:base + w*h]``)."""
    offset = base
    lw = w
    lh = h
    while lw > 1 or lh > 1:
        pw = (lw + 1) >> 1
        ph = (lh + 1) >> 1
        up = offset + lw * lh
        for py in range(ph):
            for px in range(pw):
                m = value[offset + 2 * py * lw + 2 * px]
                if 2 * px + 1 < lw:
                    m = min(m, value[offset + 2 * py * lw + 2 * px + 1])
                if 2 * py + 1 < lh:
                    m = min(m, value[offset + (2 * py + 1) * lw + 2 * px])
                    if 2 * px + 1 < lw:
                        m = min(m, value[offset + (2 * py + 1) * lw + 2 * px + 1])
                value[up + py * pw + px] = m
        offset = up
        lw = pw
        lh = ph


@njit(**LEAF)
def tree_encode(bw, buf, value, low, known, path, base, w, h, leaf, threshold):
    """Code what a decoder needs to tell whether ``leaf`` has a value < ``threshold``:
    from the root down, 0 bits raise a node's lower bound, a 1 bit says it is reached.
    ``path``: scratch of MAX_DEPTH entries."""
    depth = 0
    x = leaf % w
    y = leaf // w
    offset = base
    lw = w
    lh = h
    while True:
        path[depth] = offset + y * lw + x
        depth += 1
        if (lw == 1 and lh == 1) or depth == MAX_DEPTH:
            break
        offset += lw * lh
        lw = (lw + 1) >> 1
        lh = (lh + 1) >> 1
        x >>= 1
        y >>= 1
    lowest = 0
    for k in range(depth - 1, -1, -1):
        node = path[k]
        if lowest > low[node]:
            low[node] = lowest
        else:
            lowest = low[node]
        while lowest < threshold:
            if lowest >= value[node]:
                if not known[node]:
                    put_bit(bw, buf, 1)
                    known[node] = 1
                break
            put_bit(bw, buf, 0)
            lowest += 1
        low[node] = lowest
