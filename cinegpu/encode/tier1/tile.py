"""Tier-1 of every code-block of a tile in one call (T.800 Annex D), without the GIL.

The blocks are read straight from the tile's flat coefficient buffer through the decode
plan's table (CB_OUT, CB_WIDTH, CB_HEIGHT, CB_STRIDE, CB_ORIENT) and coded one after
another with one set of scratch arrays into one byte buffer; the result has the layout of
:class:`cinegpu.encode.blocks.BlockTable` (rates and coded bytes with per-block offsets)
plus the per-pass distortions.  Same bytes, rates and distortions as
:func:`cinegpu.encode.tier1.encode_codeblock` on each block (tests/test_encode.py).
"""

import numpy as np
from numba import njit

from cinegpu.decode.tier1.codeblock import CB_HEIGHT, CB_ORIENT, CB_OUT, CB_STRIDE, CB_WIDTH
from cinegpu.decode.tier1.tables import NUM_CONTEXTS

from .codeblock import MAX_ENCODE_BPS, block_bps, code_block, coded_passes

__all__ = ["encode_tile"]


@njit(cache=True, nogil=True)
def _encode_rows(flat, cb, rows, style, floor):
    """Code the blocks cb[rows] down to bit-plane ``floor``; returns (coded, coded_off, rates, rate_off, dists, num_bps),
    or a num_bps of length 0 when a magnitude reaches 2^MAX_ENCODE_BPS."""
    nb = rows.shape[0]
    num_bps = np.zeros(nb, np.int64)
    rate_off = np.zeros(nb + 1, np.int64)
    area = 1
    for j in range(nb):
        r = cb[rows[j]]
        w, h = r[CB_WIDTH], r[CB_HEIGHT]
        k = block_bps(flat, r[CB_OUT], r[CB_STRIDE], w, h) if w > 0 and h > 0 else 0
        if k > MAX_ENCODE_BPS:
            return (np.zeros(0, np.uint8), rate_off, np.zeros(0, np.int64), rate_off,
                    np.zeros(0), np.zeros(0, np.int64))
        num_bps[j] = k
        rate_off[j + 1] = rate_off[j] + coded_passes(k, floor)
        area = max(area, (w + 2) * (h + 2))
    maxpass = 1
    for j in range(nb):
        maxpass = max(maxpass, rate_off[j + 1] - rate_off[j])
    rates32 = np.zeros(maxpass, np.int32)
    rates = np.zeros(rate_off[nb], np.int64)
    dists = np.zeros(rate_off[nb], np.float64)
    mag = np.empty(area, np.int64)
    neg = np.empty(area, np.int32)
    flags = np.empty(area, np.int32)
    rec = np.empty(area, np.int64)
    ctx = np.empty(NUM_CONTEXTS, np.int32)
    snap = np.zeros((maxpass, 5), np.int64)
    buf = np.empty(64 + 16 * maxpass + 4 * area * (maxpass + 1), np.uint8)
    scratch = (mag, neg, flags, rec, ctx, snap, buf)
    coded = np.empty(max(1024, area * nb // 2), np.uint8)
    coded_off = np.zeros(nb + 1, np.int64)
    for j in range(nb):
        r = cb[rows[j]]
        w, h = r[CB_WIDTH], r[CB_HEIGHT]
        p0, p1 = rate_off[j], rate_off[j + 1]
        n = 0
        if p1 > p0:
            rates32[:p1 - p0] = 0
            n = code_block(flat, r[CB_OUT], r[CB_STRIDE], w, h, r[CB_ORIENT], style,
                           num_bps[j], floor, scratch, rates32, dists[p0:p1])
            rates[p0:p1] = rates32[:p1 - p0]
        at = coded_off[j]
        if at + n > coded.shape[0]:
            grown = np.empty(max(2 * coded.shape[0], at + n), np.uint8)
            grown[:at] = coded[:at]
            coded = grown
        coded[at:at + n] = buf[:n]
        coded_off[j + 1] = at + n
    return coded[:coded_off[nb]].copy(), coded_off, rates, rate_off, dists, num_bps


def encode_tile(flat: np.ndarray, cb: np.ndarray, style: int, rows: np.ndarray | None = None,
                floor: int = 0):
    """Tier-1 encode the code-blocks ``cb[rows]`` (default all) of a tile's flat int32
    coefficient buffer (plan layout, ``cb`` the plan's int64 table).

    ``floor``: code each block only down to that bit-plane (:func:`.codeblock.coded_passes`).
    Returns (coded, coded_off, rates, rate_off, dists, num_bps): block j's segments are
    ``coded[coded_off[j]:coded_off[j + 1]]``, its cumulative bytes after each pass
    ``rates[rate_off[j]:rate_off[j + 1]]`` and distortion decreases (coefficient units
    squared) ``dists[...]`` at the same places, ``num_bps[j]`` its K.  Releases the GIL.
    """
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.arange(cb.shape[0], dtype=np.int64) if rows is None else \
        np.ascontiguousarray(rows, np.int64)
    out = _encode_rows(np.ascontiguousarray(flat), cb, rows, int(style), int(floor))
    if out[5].shape[0] != rows.shape[0]:
        raise ValueError(f"coefficient magnitude >= 2^{MAX_ENCODE_BPS}")
    return out
