"""numba kernels of the inverse DWTs (T.800 F.3), one decomposition level a call.

A level is rebuilt in a single streaming pass over its output rows, in the
way of line-based decoders (OpenJPH): output row t is produced by HOR_SR
(F.3.4) from one row of the low and high bands, already multiplied by its
VER_SR scale (9/7 steps 1-2), and the vertical lifting steps then trail
behind it, step s on row t - s - 1, so that each step finds the rows it reads
already advanced to the step before (VER_SR, F.3.5).  Every vertical step is a
loop over the contiguous samples of whole rows (vectorised by LLVM), and the
rows in flight (about six) stay in the L2 cache: each sample of a level is
written once to memory and read back once by the next level.

The horizontal pass lifts one row with its low and high halves in separate
scratch buffers (``a``, ``b``), then interleaves them (F.3.3).  Symmetric
extension (F.3.7) is the clamped neighbour index of the numpy twin
(:mod:`.dwt`): interior samples in a branch-free loop, the one or two edge
samples apart.

Dequantisation (T.800 E.1) is fused into the band loads: each band comes
with a factor ``dq`` (9/7: float32 Δb / 2, or 1.0 for bands already
dequantised; multiplying by 1.0 is exact) or a flag (5/3: halve toward zero).

Bit-exactness: the 9/7 arithmetic is the numpy twin's float32 expression,
``x + (left + right) * c``, each step rounded (``fastmath=False``: LLVM
contracts nothing into fused multiply-adds); 5/3 is integer arithmetic.
Values are computed in int64 (numba's promotion) and stored as int32, equal
to numpy's int32 results for every input that does not overflow int32.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .dwt import ALPHA, BETA, DELTA, GAMMA, INV_K_HIGH, K
from .pointwise_numba import ict_samples, rct_samples

__all__ = ["last_level_53_rct", "last_level_97_ict", "level_53", "level_97"]

_F32 = np.float32
# 9/7 lifting steps 3-6 of F.3.8.2 as the numpy twin writes them (x + s * c).
_C0 = np.float32(-DELTA)
_C1 = np.float32(-GAMMA)
_C2 = np.float32(-BETA)
_C3 = np.float32(-ALPHA)
_K = np.float32(K)
_IKH = np.float32(INV_K_HIGH)
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)

_JIT = dict(cache=True, nogil=True, fastmath=False)
# Row and lifting helpers: no reference counting (they only borrow views of their callers'
# arrays, never keep one), so the per-row views cost no atomic increments (as tier1/mq.py)
_ROW = dict(_JIT, _nrt=False)


# ---------------------------------------------------------------- 9/7 -------


@njit(**_ROW)
def _vlift_f32(x, left, right, c):
    """One vertical lifting step on a row: x = x + (left + right) * c."""
    for j in range(x.shape[0]):
        x[j] = x[j] + (left[j] + right[j]) * c


@njit(**_ROW)
def _lift_f32(x, nx, nb, nnb, off, c):
    """x[k] = x[k] + (nb[cl(k + off)] + nb[cl(k + off + 1)]) * c, k < nx.

    cl() clamps to [0, nnb - 1] (F.3.7 for the F.3.3 arrangements); ``off``
    is -1 or 0.  ``x`` and ``nb`` are distinct buffers.
    """
    k0 = min(-off, nx)
    k1 = max(min(nx, nnb - 1 - off), k0)
    for k in range(k0):
        i = min(max(k + off, 0), nnb - 1)
        j = min(max(k + off + 1, 0), nnb - 1)
        x[k] = x[k] + (nb[i] + nb[j]) * c
    # interior on slices: non-negative indices, so the loop vectorises
    _vlift_f32(x[k0:k1], nb[k0 + off : k1 + off], nb[k0 + off + 1 : k1 + off + 1], c)
    for k in range(k1, nx):
        i = min(max(k + off, 0), nnb - 1)
        j = min(max(k + off + 1, 0), nnb - 1)
        x[k] = x[k] + (nb[i] + nb[j]) * c


@njit(**_ROW)
def _interleave(a, nl, b, nh, p, vs, out):
    """out[2k + p] = a[k] * vs, out[2k + 1 - p] = b[k] * vs (F.3.3), in pairs."""
    if p:
        out[0] = b[0] * vs
        o = out[1:]
        bb = b[1:nh]
    else:
        o = out
        bb = b[:nh]
    npair = min(nl, bb.shape[0])
    for k in range(npair):
        o[2 * k] = a[k] * vs
        o[2 * k + 1] = bb[k] * vs
    if nl > npair:
        o[2 * npair] = a[npair] * vs


@njit(**_ROW)
def _row_97(lo, hi, dql, dqh, p, vs, a, b, out):
    """HOR_SR of one row (F.3.8.2), times the vertical scale ``vs``, into ``out``.

    ``lo``/``hi``: the row's low and high band samples (int32 or float32),
    dequantised here by ``dql``/``dqh``; ``p``: parity of the first sample.
    """
    nl = lo.shape[0]
    nh = hi.shape[0]
    if nl + nh == 1:  # F.3.7: X = Y, or Y / 2 for a lone odd sample
        if nl:
            out[0] = (_F32(lo[0]) * dql) * vs
        else:
            out[0] = ((_F32(hi[0]) * dqh) * _HALF) * vs
        return
    for k in range(nl):
        a[k] = (_F32(lo[k]) * dql) * _K
    for k in range(nh):
        b[k] = (_F32(hi[k]) * dqh) * _IKH
    _lift_f32(a, nl, b, nh, p - 1, _C0)
    _lift_f32(b, nh, a, nl, -p, _C1)
    _lift_f32(a, nl, b, nh, p - 1, _C2)
    _lift_f32(b, nh, a, nl, -p, _C3)
    _interleave(a, nl, b, nh, p, vs, out)


@njit(**_ROW)
def _advance_97(t, ll, hl, lh, hh, dq, p, pv, a, b, buf, ring):
    """Time step t of a 9/7 level (m >= 2 rows): HOR_SR of row t, then VER_SR
    steps 3-6 on rows t - 1 .. t - 4.  Row i lives in ``buf[i % ring]``; after
    the step, row t - 4 is final (and rows below t - 5 are no longer read)."""
    m = ll.shape[0] + lh.shape[0]
    if t < m:  # HOR_SR of row t, with VER_SR steps 1-2 (scale by K, 1/K)
        if (t + pv) & 1 == 0:
            k = (t - pv) >> 1
            _row_97(ll[k], hl[k], dq[0], dq[1], p, _K, a, b, buf[t % ring])
        else:
            k = (t + pv - 1) >> 1
            _row_97(lh[k], hh[k], dq[2], dq[3], p, _IKH, a, b, buf[t % ring])
    for s in range(4):  # VER_SR steps 3-6, step s trailing by s + 1 rows
        i = t - s - 1
        if i < 0 or i >= m or ((i + pv) & 1) != (s & 1):
            continue
        i1 = i - 1 if i > 0 else 1
        i2 = i + 1 if i + 1 < m else m - 2
        c = _C0 if s == 0 else _C1 if s == 1 else _C2 if s == 2 else _C3
        _vlift_f32(buf[i % ring], buf[i1 % ring], buf[i2 % ring], c)


@njit(**_JIT)
def level_97(ll, hl, lh, hh, dq, u0, v0, out):
    """One 9/7 level of 2D_SR (F.3.2) into ``out`` (float32, v1 - v0 by u1 - u0).

    ``ll, hl, lh, hh``: 2-D bands, C-contiguous, int32 or float32, shapes as
    :func:`.dwt._check_level` checks; ``dq``: float32[4], their dequantisation
    factors (1.0: none).  ``u0``/``v0`` give the parities of the first column/row.
    """
    m, n = out.shape
    if m == 0 or n == 0:
        return
    p = u0 & 1
    pv = v0 & 1
    a = np.empty(ll.shape[1] + 1, np.float32)
    b = np.empty(hl.shape[1] + 1, np.float32)
    if m == 1:  # a lone row: VER_SR is X = Y, or Y / 2 at odd v0
        if pv == 0:
            _row_97(ll[0], hl[0], dq[0], dq[1], p, _ONE, a, b, out[0])
        else:
            _row_97(lh[0], hh[0], dq[2], dq[3], p, _HALF, a, b, out[0])
        return
    for t in range(m + 4):
        _advance_97(t, ll, hl, lh, hh, dq, p, pv, a, b, out, m)


# ---------------------------------------------------------------- 5/3 -------


@njit(**_ROW)
def _load_53(src, dst, n, q):
    """dst = src, halved toward zero when ``q`` (T.800 E.1.2, C division)."""
    if q:
        for k in range(n):
            v = src[k]
            dst[k] = (v - (v >> 31)) >> 1
    else:
        for k in range(n):
            dst[k] = src[k]


@njit(**_ROW)
def _predict_i32(x, left, right):
    """F-5 on a run of low samples: x = x - floor((left + right + 2) / 4)."""
    for j in range(x.shape[0]):
        x[j] = x[j] - ((left[j] + right[j] + 2) >> 2)


@njit(**_ROW)
def _update_i32(x, left, right):
    """F-6 on a run of high samples: x = x + floor((left + right) / 2)."""
    for j in range(x.shape[0]):
        x[j] = x[j] + ((left[j] + right[j]) >> 1)


@njit(**_ROW)
def _lift_i32(x, nx, nb, nnb, off, update):
    """F-5 (``update`` false) or F-6 over x[:nx] from neighbours nb[cl(k + off)],
    nb[cl(k + off + 1)], cl() clamping to [0, nnb - 1] as :func:`_lift_f32`."""
    k0 = min(-off, nx)
    k1 = max(min(nx, nnb - 1 - off), k0)
    edges = (0, k0, k1, nx)
    for e in range(0, 4, 2):
        for k in range(edges[e], edges[e + 1]):
            i = min(max(k + off, 0), nnb - 1)
            j = min(max(k + off + 1, 0), nnb - 1)
            if update:
                x[k] = x[k] + ((nb[i] + nb[j]) >> 1)
            else:
                x[k] = x[k] - ((nb[i] + nb[j] + 2) >> 2)
    if update:
        _update_i32(x[k0:k1], nb[k0 + off : k1 + off], nb[k0 + off + 1 : k1 + off + 1])
    else:
        _predict_i32(x[k0:k1], nb[k0 + off : k1 + off], nb[k0 + off + 1 : k1 + off + 1])


@njit(**_ROW)
def _row_53(lo, hi, ql, qh, p, a, b, out):
    """HOR_SR of one row with the 5/3 filter (F.3.8.1, F-5 then F-6) into ``out``."""
    nl = lo.shape[0]
    nh = hi.shape[0]
    _load_53(lo, a, nl, ql)
    _load_53(hi, b, nh, qh)
    if nl + nh == 1:  # F.3.7: a lone odd sample is halved (C division)
        if nl:
            out[0] = a[0]
        else:
            v = b[0]
            out[0] = (v - (v >> 31)) >> 1
        return
    _lift_i32(a, nl, b, nh, p - 1, False)
    _lift_i32(b, nh, a, nl, -p, True)
    _interleave(a, nl, b, nh, p, np.int32(1), out)


@njit(**_ROW)
def _advance_53(t, ll, hl, lh, hh, q, p, pv, a, b, buf, ring):
    """Time step t of a 5/3 level (m >= 2 rows): HOR_SR of row t, F-5 on row
    t - 1, F-6 on row t - 2 (rows in ``buf[i % ring]``); row t - 2 is then final."""
    m = ll.shape[0] + lh.shape[0]
    if t < m:
        if (t + pv) & 1 == 0:
            k = (t - pv) >> 1
            _row_53(ll[k], hl[k], q[0], q[1], p, a, b, buf[t % ring])
        else:
            k = (t + pv - 1) >> 1
            _row_53(lh[k], hh[k], q[2], q[3], p, a, b, buf[t % ring])
    i = t - 1  # F-5 on low rows, one row behind
    if 0 <= i < m and (i + pv) & 1 == 0:
        _predict_i32(buf[i % ring], buf[(i - 1 if i > 0 else 1) % ring], buf[(i + 1 if i + 1 < m else m - 2) % ring])
    i = t - 2  # F-6 on high rows, two rows behind
    if 0 <= i < m and (i + pv) & 1 == 1:
        _update_i32(buf[i % ring], buf[(i - 1 if i > 0 else 1) % ring], buf[(i + 1 if i + 1 < m else m - 2) % ring])


@njit(**_JIT)
def level_53(ll, hl, lh, hh, q, u0, v0, out):
    """One 5/3 level of 2D_SR (F.3.2) into ``out`` (int32, v1 - v0 by u1 - u0).

    ``ll, hl, lh, hh``: 2-D int32 bands, C-contiguous; ``q``: int32[4], 1 where
    a band still holds tier-1 output (2 x the index) to halve on load.
    """
    m, n = out.shape
    if m == 0 or n == 0:
        return
    p = u0 & 1
    pv = v0 & 1
    a = np.empty(ll.shape[1] + 1, np.int32)
    b = np.empty(hl.shape[1] + 1, np.int32)
    if m == 1:
        if pv == 0:
            _row_53(ll[0], hl[0], q[0], q[1], p, a, b, out[0])
        else:
            _row_53(lh[0], hh[0], q[2], q[3], p, a, b, out[0])
            x = out[0]
            for j in range(n):  # VER_SR of a lone odd row: halve (C division)
                v = x[j]
                x[j] = (v - (v >> 31)) >> 1
        return
    for t in range(m + 2):
        _advance_53(t, ll, hl, lh, hh, q, p, pv, a, b, out, m)


# ------------------------------------------- last level + MCT, fused --------

# Rows of a component kept in flight by the fused kernels: a 9/7 step touches
# rows t - 5 .. t, a 5/3 step t - 3 .. t.
_RING = 8


@njit(**_JIT)
def last_level_97_ict(c0, c1, c2, u0, v0, s, lo, hi, r, g, b):
    """Finest 9/7 level of components 0-2, inverse ICT and to_samples, row by row.

    ``c0..c2``: ``(ll, hl, lh, hh, dq)`` of each component as :func:`level_97`
    takes them (same rectangle, at least 2 rows); ``s, lo, hi``: int64[3]
    DC shift and clip bounds; ``r, g, b``: int32 (v1 - v0, u1 - u0) outputs.
    The float rows live in three 8-row rings, never in a full plane.
    """
    m, n = r.shape
    p = u0 & 1
    pv = v0 & 1
    bufs = (np.empty((_RING, n), np.float32), np.empty((_RING, n), np.float32),
            np.empty((_RING, n), np.float32))
    a = np.empty(c0[0].shape[1] + 1, np.float32)
    bb = np.empty(c0[1].shape[1] + 1, np.float32)
    for t in range(m + 4):
        _advance_97(t, c0[0], c0[1], c0[2], c0[3], c0[4], p, pv, a, bb, bufs[0], _RING)
        _advance_97(t, c1[0], c1[1], c1[2], c1[3], c1[4], p, pv, a, bb, bufs[1], _RING)
        _advance_97(t, c2[0], c2[1], c2[2], c2[3], c2[4], p, pv, a, bb, bufs[2], _RING)
        i = t - 4
        if i >= 0:
            j = i % _RING
            ict_samples(bufs[0][j], bufs[1][j], bufs[2][j], s, lo, hi, r[i], g[i], b[i])


@njit(**_JIT)
def last_level_53_rct(c0, c1, c2, u0, v0, s, lo, hi, r, g, b):
    """Finest 5/3 level of components 0-2, inverse RCT and to_samples, row by row;
    arguments as :func:`last_level_97_ict` (``dq`` here the ``q`` flags)."""
    m, n = r.shape
    p = u0 & 1
    pv = v0 & 1
    bufs = (np.empty((_RING, n), np.int32), np.empty((_RING, n), np.int32),
            np.empty((_RING, n), np.int32))
    a = np.empty(c0[0].shape[1] + 1, np.int32)
    bb = np.empty(c0[1].shape[1] + 1, np.int32)
    for t in range(m + 2):
        _advance_53(t, c0[0], c0[1], c0[2], c0[3], c0[4], p, pv, a, bb, bufs[0], _RING)
        _advance_53(t, c1[0], c1[1], c1[2], c1[3], c1[4], p, pv, a, bb, bufs[1], _RING)
        _advance_53(t, c2[0], c2[1], c2[2], c2[3], c2[4], p, pv, a, bb, bufs[2], _RING)
        i = t - 2
        if i >= 0:
            j = i % _RING
            rct_samples(bufs[0][j], bufs[1][j], bufs[2][j], s, lo, hi, r[i], g[i], b[i])
