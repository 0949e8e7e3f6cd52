"""Discrete wavelet transforms of T.800 Annex F: 5/3 reversible, 9/7 irreversible.

Inverse: 2D_SR (F.3.2) applied level by level, each level being
2D_INTERLEAVE (F.3.3) then HOR_SR on every row and VER_SR on every column
(F.3.4, F.3.5), each 1D_SR (F.3.6) a lifting filter over the samples of one
row or column with periodic symmetric extension (F.3.7).  Forward: 2D_SD
(F.4), the exact mirror (VER_SD then HOR_SD).

Coordinates: a resolution covers x in [u0, u1), y in [v0, v1) of its own
grid (B.5: tcx0 = ceil(tx0 / 2^(NL - r)) ...).  Samples at even absolute x
(y) are low-pass, at odd ones high-pass, so the parity of u0 (v0) says
whether a row (column) starts with a low- or a high-pass sample.  The
bands of one level then have nL = ceil(u1/2) - ceil(u0/2) low and
nH = floor(u1/2) - floor(u0/2) high columns (mL, mH rows likewise).

Implementation: low-pass and high-pass samples are kept apart while lifting
(``L[k]`` sits at local index 2k + p, ``H[k]`` at 2k + 1 - p, p the parity of
the first sample), so every lifting step is one numpy expression over whole
planes; symmetric extension reduces to clamping the neighbour index to the
band (true for every length >= 2).  The last lifting step of each pair
writes straight into the interleaved output (strided view).

The 9/7 path mirrors OpenJPEG 2.5's ``opj_v8dwt_decode`` float32 arithmetic:
scale, then ``x + (left + right) * c`` per step, in the spec's order, with
OpenJPEG's high-pass scale (see ``INV_K_HIGH``), so results agree to the bit
on the same float32 input.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = [
    "ALPHA",
    "BETA",
    "DELTA",
    "GAMMA",
    "INV_K_HIGH",
    "K",
    "Level",
    "fdwt_53",
    "fdwt_97",
    "idwt_53",
    "idwt_97",
    "level_rects",
]

Rect = tuple[int, int, int, int]
# (hl, lh, hh, (u0, v0, u1, v1)): the detail bands of one decomposition level
# and the rectangle of the resolution they rebuild with the LL band below.
Level = tuple[np.ndarray, np.ndarray, np.ndarray, Rect]

# T.800 Table F.4, lifting parameters of the 9/7 filter (float32 as OpenJPEG).
ALPHA = np.float32(-1.586134342)
BETA = np.float32(-0.052980118)
GAMMA = np.float32(0.882911075)
DELTA = np.float32(0.443506852)
K = np.float32(1.230174105)
# Inverse high-pass scale 1/K (F.3.8.2 step 2).  OpenJPEG 2.5 multiplies by
# its historic "two_invK" = 1.625732422f = 13318/8192 with step sizes of half
# the spec's value for non-LL bands (BUG_WEIRD_TWO_INVK in its dwt.c and
# tcd.c).  With the spec's step sizes that is 13318/16384 = 0.8128662...,
# 6e-5 below 1/K = 0.8128900...; using it keeps us bit-exact with OpenJPEG.
INV_K_HIGH = np.float32(13318.0 / 16384.0)
# Forward scales (F.4.8.2): low-pass times 1/K, high-pass times K.
_FWD_K_LOW = np.float32(1.0 / 1.230174104914001)
_FWD_K_HIGH = np.float32(1.230174104914001)


def _ceil_half(v: int) -> int:
    return -(-v // 2)


def level_rects(rect: Rect, nlevels: int) -> list[Rect]:
    """Resolution rectangles from the finest (``rect``) down, one per level.

    T.800 B.5: the resolution one level down covers ceil(u0/2) .. ceil(u1/2).
    Returns ``nlevels`` rectangles, finest first.
    """
    out = []
    u0, v0, u1, v1 = rect
    for _ in range(nlevels):
        out.append((u0, v0, u1, v1))
        u0, v0, u1, v1 = (_ceil_half(u0), _ceil_half(v0), _ceil_half(u1), _ceil_half(v1))
    return out


def _band_sizes(a0: int, a1: int) -> tuple[int, int]:
    """(low, high) sample counts of [a0, a1) (F.3.3): ceil halves and floor halves."""
    return _ceil_half(a1) - _ceil_half(a0), a1 // 2 - a0 // 2


def _take(axis: int, idx):
    """Index tuple selecting ``idx`` (int or slice) along ``axis`` of a 2-D array."""
    return (idx,) if axis == 0 else (slice(None), idx)


def _neighbour_sum(a: np.ndarray, n_out: int, off: int, axis: int, out: np.ndarray) -> None:
    """out[k] = a[c(k + off)] + a[c(k + off + 1)] along ``axis``, k < n_out.

    c() clamps to [0, len(a) - 1]: for the sample arrangements of F.3.3 this is
    exactly the periodic symmetric extension of F.3.7 (the mirror of the
    first/last sample's neighbour is the other neighbour, same band).
    """
    na = a.shape[axis]
    k0 = max(0, -off)
    k1 = min(n_out, na - 1 - off)
    if k1 > k0:
        np.add(
            a[_take(axis, slice(k0 + off, k1 + off))],
            a[_take(axis, slice(k0 + off + 1, k1 + off + 1))],
            out=out[_take(axis, slice(k0, k1))],
        )
    else:
        k0 = k1 = n_out
    for k in [*range(0, min(k0, n_out)), *range(max(k1, 0), n_out)]:
        i = min(max(k + off, 0), na - 1)
        j = min(max(k + off + 1, 0), na - 1)
        np.add(a[_take(axis, i)], a[_take(axis, j)], out=out[_take(axis, k)])


def _split(n: int, p: int, axis: int):
    """Index tuples of the low- and high-pass samples of a length-n axis."""
    return _take(axis, slice(p, n, 2)), _take(axis, slice(1 - p, n, 2))


# ---------------------------------------------------------------- 5/3 -------


def _isr_53(lo: np.ndarray, hi: np.ndarray, p: int, axis: int, out: np.ndarray) -> None:
    """1D_SR with the 5/3 filter (F.3.8.1, F-5 and F-6) along ``axis``.

    ``lo``/``hi``: int32 low/high-pass samples; ``out``: int32 result, the
    first sample at parity ``p`` (0: low-pass first).
    F-5: X(2n)   = Y(2n)   - floor((Y(2n-1) + Y(2n+1) + 2) / 4)
    F-6: X(2n+1) = Y(2n+1) + floor((X(2n) + X(2n+2)) / 2)
    """
    nl, nh = lo.shape[axis], hi.shape[axis]
    il, ih = _split(nl + nh, p, axis)
    if nl + nh == 1:  # F.3.7: a lone sample; odd: X = Y / 2 (C division, as OpenJPEG)
        if nl:
            out[...] = lo
        else:
            np.right_shift(hi - (hi >> 31), 1, out=out)
        return
    dl, dh = out[il], out[ih]
    t = np.empty(lo.shape, np.int32)
    _neighbour_sum(hi, nl, p - 1, axis, t)
    t += 2
    t >>= 2
    np.subtract(lo, t, out=dl)
    t = np.empty(hi.shape, np.int32)
    _neighbour_sum(dl, nh, -p, axis, t)
    t >>= 1
    np.add(hi, t, out=dh)


def _sd_53(x: np.ndarray, p: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """1D_SD with the 5/3 filter (F.4.8.1, F-9 and F-10) along ``axis``."""
    n = x.shape[axis]
    il, ih = _split(n, p, axis)
    xl, xh = x[il], x[ih]
    if n == 1:  # F.4.8.1: a lone odd sample is doubled
        return xl.copy(), xh * 2
    nl, nh = xl.shape[axis], xh.shape[axis]
    hi = np.empty(xh.shape, np.int32)
    _neighbour_sum(xl, nh, -p, axis, hi)
    hi >>= 1
    np.subtract(xh, hi, out=hi)
    lo = np.empty(xl.shape, np.int32)
    _neighbour_sum(hi, nl, p - 1, axis, lo)
    lo += 2
    lo >>= 2
    lo += xl
    return lo, hi


# ---------------------------------------------------------------- 9/7 -------


def _lift(x: np.ndarray, nb: np.ndarray, n_out: int, off: int, c, axis: int, out) -> None:
    """out = x + (nb[left] + nb[right]) * c in float32 (one step of F-7)."""
    t = np.empty(x.shape, np.float32)
    _neighbour_sum(nb, n_out, off, axis, t)
    t *= c
    np.add(x, t, out=out)


def _isr_97(lo: np.ndarray, hi: np.ndarray, p: int, axis: int, out: np.ndarray) -> None:
    """1D_SR with the 9/7 filter (F.3.8.2, F-7) along ``axis``, float32.

    Steps 1-2 scale low by K and high by 1/K (``INV_K_HIGH``); steps 3-6 lift
    with -delta, -gamma, -beta, -alpha.
    """
    nl, nh = lo.shape[axis], hi.shape[axis]
    il, ih = _split(nl + nh, p, axis)
    if nl + nh == 1:  # F.3.7: X = Y, or Y / 2 for a lone odd sample
        if nl:
            out[...] = lo
        else:
            np.multiply(hi, np.float32(0.5), out=out)
        return
    dl, dh = out[il], out[ih]
    a = lo * K
    b = hi * INV_K_HIGH
    _lift(a, b, nl, p - 1, -DELTA, axis, a)
    _lift(b, a, nh, -p, -GAMMA, axis, b)
    _lift(a, b, nl, p - 1, -BETA, axis, dl)
    _lift(b, dl, nh, -p, -ALPHA, axis, dh)


def _sd_97(x: np.ndarray, p: int, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """1D_SD with the 9/7 filter (F.4.8.2, F-8) along ``axis``, float32."""
    n = x.shape[axis]
    il, ih = _split(n, p, axis)
    xl, xh = x[il], x[ih]
    if n == 1:
        return xl.copy(), xh * np.float32(2.0)
    nl, nh = xl.shape[axis], xh.shape[axis]
    hi = np.empty(xh.shape, np.float32)
    lo = np.empty(xl.shape, np.float32)
    _lift(xh, xl, nh, -p, ALPHA, axis, hi)
    _lift(xl, hi, nl, p - 1, BETA, axis, lo)
    _lift(hi, lo, nh, -p, GAMMA, axis, hi)
    _lift(lo, hi, nl, p - 1, DELTA, axis, lo)
    lo *= _FWD_K_LOW
    hi *= _FWD_K_HIGH
    return lo, hi


# ------------------------------------------------------------- 2-D ----------


def _check_level(ll, hl, lh, hh, rect: Rect) -> None:
    u0, v0, u1, v1 = rect
    nl, nh = _band_sizes(u0, u1)
    ml, mh = _band_sizes(v0, v1)
    want = {"ll": (ml, nl), "hl": (ml, nh), "lh": (mh, nl), "hh": (mh, nh)}
    for name, arr in (("ll", ll), ("hl", hl), ("lh", lh), ("hh", hh)):
        if arr.shape != want[name]:
            raise ValueError(
                f"{name} band is {arr.shape}, resolution {rect} needs {want[name]} (T.800 F.3.3)"
            )


# Rows (HOR_SR) and columns (VER_SR) are lifted in blocks this size so that
# a block's temporaries stay in the L2 cache: 4096x2160, 6 levels, went from
# 65 to 61 ms (5/3) and 85 to 68 ms (9/7) on a 2-core Xeon.
_ROWS = 32
_COLS = 128


def _idwt(ll, levels: Sequence[Level], dtype, isr) -> np.ndarray:
    a = np.asarray(ll, dtype=dtype)
    for hl, lh, hh, rect in levels:
        hl = np.asarray(hl, dtype=dtype)
        lh = np.asarray(lh, dtype=dtype)
        hh = np.asarray(hh, dtype=dtype)
        _check_level(a, hl, lh, hh, rect)
        u0, v0, u1, v1 = rect
        n, m = u1 - u0, v1 - v0
        top = np.empty((a.shape[0], n), dtype)  # rows of the low-pass half (HOR_SR)
        bottom = np.empty((lh.shape[0], n), dtype)
        if n:
            for lo, hi, out in ((a, hl, top), (lh, hh, bottom)):
                for r in range(0, out.shape[0], _ROWS):
                    isr(lo[r : r + _ROWS], hi[r : r + _ROWS], u0 & 1, 1, out[r : r + _ROWS])
        res = np.empty((m, n), dtype)
        if n and m:
            for c in range(0, n, _COLS):  # VER_SR
                isr(top[:, c : c + _COLS], bottom[:, c : c + _COLS], v0 & 1, 0, res[:, c : c + _COLS])
        a = res
    return a


def idwt_53(ll: np.ndarray, levels: Sequence[Level]) -> np.ndarray:
    """Inverse 5/3 reversible DWT, T.800 F.3.2 (2D_SR) with F.3.8.1 lifting.

    ``ll``: int32 LL band of the coarsest level (NL LL).  ``levels``: from the
    coarsest to the finest, ``(hl, lh, hh, (u0, v0, u1, v1))``, the rectangle
    being the resolution that level produces, in its own coordinates.  Band
    shapes: ll (mL, nL), hl (mL, nH), lh (mH, nL), hh (mH, nH) with
    nL = ceil(u1/2) - ceil(u0/2), nH = floor(u1/2) - floor(u0/2) (mL, mH from
    v0, v1).  Returns int32 (v1 - v0, u1 - u0) of the finest level (``ll``
    itself, as int32, when ``levels`` is empty).  Bit-exact with OpenJPEG.
    """
    return _idwt(ll, levels, np.int32, _isr_53)


def idwt_97(ll: np.ndarray, levels: Sequence[Level]) -> np.ndarray:
    """Inverse 9/7 irreversible DWT, T.800 F.3.2 with F.3.8.2 lifting, float32.

    Same arguments as :func:`idwt_53`.  The bands hold coefficients scaled by
    the spec's step sizes (Rb with the band gains of Table E.1); K and the
    high-pass scale as ``K`` and ``INV_K_HIGH``.
    """
    return _idwt(ll, levels, np.float32, _isr_97)


def _fdwt(x, nlevels: int, origin: tuple[int, int], dtype, sd):
    a = np.asarray(x, dtype=dtype)
    if a.ndim != 2:
        raise ValueError(f"need a 2-D plane, got shape {a.shape}")
    u0, v0 = origin
    rects = level_rects((u0, v0, u0 + a.shape[1], v0 + a.shape[0]), nlevels)
    out = []
    for rect in rects:
        u0, v0, u1, v1 = rect
        nl, nh = _band_sizes(u0, u1)
        ml, mh = _band_sizes(v0, v1)
        if a.shape[0]:
            top, bottom = sd(a, v0 & 1, 0)  # VER_SD
        else:
            top, bottom = np.empty((ml, a.shape[1]), dtype), np.empty((mh, a.shape[1]), dtype)
        if a.shape[1]:
            ll, hl = sd(top, u0 & 1, 1)  # HOR_SD
            lh, hh = sd(bottom, u0 & 1, 1)
        else:
            ll, hl = np.empty((ml, nl), dtype), np.empty((ml, nh), dtype)
            lh, hh = np.empty((mh, nl), dtype), np.empty((mh, nh), dtype)
        out.append((hl, lh, hh, rect))
        a = ll
    return a, out[::-1]


def fdwt_53(x: np.ndarray, nlevels: int, origin: tuple[int, int] = (0, 0)):
    """Forward 5/3 reversible DWT, T.800 F.4 (2D_SD, F.4.8.1), int32.

    ``x``: the plane of resolution NL (finest), its top-left sample at
    ``origin`` = (u0, v0) of that resolution's grid.  Returns
    ``(ll, levels)`` in the form :func:`idwt_53` takes (coarsest first), so
    ``idwt_53(*fdwt_53(x, n, origin)) == x``.
    """
    return _fdwt(x, nlevels, origin, np.int32, _sd_53)


def fdwt_97(x: np.ndarray, nlevels: int, origin: tuple[int, int] = (0, 0)):
    """Forward 9/7 irreversible DWT, T.800 F.4 (2D_SD, F.4.8.2), float32.

    Same conventions as :func:`fdwt_53`; scaling per F.4.8.2 (low 1/K,
    high K), so bands carry the gains of Table E.1.
    """
    return _fdwt(x, nlevels, origin, np.float32, _sd_97)
