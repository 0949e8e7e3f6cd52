"""Tag trees (T.800 B.10.2), decoded in numba over flat node arrays.

A precinct-band's tree over w x h leaves is stored level by level from the
leaves up (level 0 holds w*h nodes, the next ceil(w/2)*ceil(h/2), ... up to
the 1x1 root) starting at its node offset. ``value`` holds a node's decoded
value (UNKNOWN until known) and ``low`` the lower bound reached so far.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bits import read_bit

UNKNOWN = np.int32(0x7FFFFFFF)
#: deepest tree: 2^15-sample precincts of 4-sample code-blocks -> 14 levels
MAX_DEPTH = 32


@njit(cache=True, nogil=True, inline="always")
def tree_decode(bs, data, value, low, base, w, h, leaf, threshold, path):
    """Decode leaf ``leaf`` up to ``threshold``; True if its value < threshold.

    ``bs`` is the bit reader state (bits.py); ``path`` is int64 scratch of
    :data:`MAX_DEPTH` nodes, the caller's, so that a call allocates nothing. Walks from the root down to the
    leaf, as in B.10.2: each node's value is learned one bit at a time while
    the running lower bound stays below the threshold.
    """
    depth = 0
    x = leaf % w
    y = leaf // w
    offset = base
    lw = w
    lh = h
    while True:
        path[depth] = offset + y * lw + x
        depth += 1
        if lw == 1 and lh == 1:
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
        while lowest < threshold and lowest < value[node]:
            if read_bit(bs, data):
                value[node] = lowest
            else:
                lowest += 1
        low[node] = lowest
    return value[path[0]] < threshold


@njit(cache=True, nogil=True, inline="always")
def tree_root(base, w, h):
    """Index of the root node of the tree over w x h leaves stored from ``base``."""
    offset = base
    while w > 1 or h > 1:
        offset += w * h
        w = (w + 1) >> 1
        h = (h + 1) >> 1
    return offset


@njit(cache=True, nogil=True, inline="always")
def root_decode(bs, data, value, low, root, threshold):
    """Decode the root node up to ``threshold``, as :func:`tree_decode` does first for any
    leaf (same bits, same state); True if its value < threshold. When False, no leaf of the
    tree has a value below ``threshold`` and no further bit is read for any of them."""
    lowest = low[root]
    while lowest < threshold and lowest < value[root]:
        if read_bit(bs, data):
            value[root] = lowest
        else:
            lowest += 1
    low[root] = lowest
    return value[root] < threshold
