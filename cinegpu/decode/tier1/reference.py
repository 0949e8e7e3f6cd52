"""Pure-Python model of what tier-1 decoding yields after the first n coding passes.

The numpy twin of every tier-1 back end (numba now, CUDA later): it knows the original
coefficients and replays only the pass membership of T.800 D.3 (which samples each pass visits),
without entropy coding, then applies the midpoint reconstruction in the decoders' value
convention (2 x the coefficient, sign applied; see passes.py) and the ROI max-shift (Annex H).
Slow by design; for tests.
"""

import numpy as np


def _significant_neighbour(sig, y, x, h, w, vcausal):
    for dy in (-1, 0, 1):
        yy = y + dy
        if yy < 0 or yy >= h:
            continue
        if dy == 1 and vcausal and (y & 3) == 3:
            continue  # D.7: the next stripe counts as insignificant
        for dx in (-1, 0, 1):
            xx = x + dx
            if (dy or dx) and 0 <= xx < w and sig[yy][xx]:
                return True
    return False


def _scan(h, w):
    for y0 in range(0, h, 4):
        for x in range(w):
            for y in range(y0, min(y0 + 4, h)):
                yield y, x


def reconstruct(coeffs, npasses, vcausal=False, roishift=0, num_bps=None, decoded_bps=None):
    """2 x reconstructed coefficients (int64 array) after the first `npasses` passes.

    ``num_bps``: the bit-planes the coefficients were coded in (default: their bit length).
    ``decoded_bps``: the K a decoder was told (default ``num_bps``); when smaller, coded plane
    p lands on the decoder's plane p - (num_bps - decoded_bps) and the passes beyond its
    3K - 2 are ignored, as OpenJPEG decodes an encoder that coded more planes than it signals.
    """
    v = np.asarray(coeffs, dtype=np.int64)
    h, w = v.shape
    mag = np.abs(v).tolist()
    if num_bps is None:
        num_bps = int(max((max(r) for r in mag), default=0)).bit_length()
    shift = num_bps - (num_bps if decoded_bps is None else decoded_bps)
    sig = [[False] * w for _ in range(h)]
    visit = [[False] * w for _ in range(h)]
    rec = [[0] * w for _ in range(h)]
    for k in range(min(npasses, max(3 * num_bps - 2, 0), max(3 * (num_bps - shift) - 2, 0))):
        kind = (k + 2) % 3
        p = num_bps - 1 - (k + 2) // 3  # the coded plane
        d = p - shift  # the decoder's
        for y, x in _scan(h, w):
            m = mag[y][x]
            if kind == 1:  # magnitude refinement
                if sig[y][x] and not visit[y][x]:
                    rec[y][x] += (1 << d) if (m >> p) & 1 else -(1 << d)
                continue
            if sig[y][x] or visit[y][x]:
                if kind == 2:
                    visit[y][x] = False
                continue
            if kind == 0 and not _significant_neighbour(sig, y, x, h, w, vcausal):
                continue
            if kind == 0:
                visit[y][x] = True
            if (m >> p) & 1:
                sig[y][x] = True
                rec[y][x] = 3 << d
    out = np.array(rec, dtype=np.int64).reshape(h, w)
    if roishift > 0:
        big = out >= (1 << (roishift + 1))
        out = np.where(big, out >> roishift, out)
    return np.where(v < 0, -out, out)
