"""Tier-1 encoding of one code-block: pass sequence, segments and termination, per-pass
rates and distortions for rate control (T.800 D.4-D.7, Table D.9).

Segments follow the rule the decoder (and tier-2) use: a pass ends a codeword segment when
TERMALL is set, when it is the last pass, or under BYPASS when the next pass switches between
MQ and raw coding (after pass 9, after each raw MRP, after each MQ cleanup from pass 12 on).
"""

import numpy as np
from numba import njit

from cinegpu.decode.tier1.codeblock import (
    CBLK_RESET,
    CBLK_SEGSYM,
    CBLK_TERMALL,
    CBLK_VCAUSAL,
    MAX_CBLK_AREA,
    MAX_CBLK_SIDE,
    pass_is_raw,
)
from cinegpu.decode.tier1.tables import CTX_INIT, ZC_LUT

from .mq import mq_enc_init, mq_flush, mq_trunc_length, raw_enc_init, raw_flush, raw_pending_length
from .passes import cup_mq, mrp_mq, mrp_raw, segsym, spp_mq, spp_raw

JIT = dict(cache=True, nogil=True)

MAX_ENCODE_BPS = 30  # |v| < 2^30


@njit(**JIT)
def pass_ends_segment(k, npasses, style):
    """True when pass k is terminated (ends a codeword segment)."""
    if style & CBLK_TERMALL or k == npasses - 1:
        return True
    return pass_is_raw(k, style) != pass_is_raw(k + 1, style)


@njit(**JIT)
def coded_passes(num_bps, floor):
    """Passes coded for a block of K = ``num_bps`` magnitude bit-planes down to bit-plane
    ``floor`` (D.3: a cleanup pass for plane K - 1, then three passes a plane): 3 (K - floor)
    - 2, none when K <= floor.  ``floor`` 0 codes every pass; a larger one is the early stop
    of :mod:`cinegpu.encode.early_stop` (the passes of lower planes are never coded)."""
    return 3 * (num_bps - floor) - 2 if num_bps > floor else 0


@njit(**JIT)
def block_bps(src, off, stride, w, h):
    """K, the magnitude bit-planes of the w x h block at src[off] (rows ``stride`` apart)."""
    maxmag = 0
    for y in range(h):
        row = off + y * stride
        for x in range(w):
            v = np.int64(src[row + x])
            maxmag = max(maxmag, -v if v < 0 else v)
    num_bps = 0
    while maxmag >> num_bps:
        num_bps += 1
    return num_bps


def scratch_size(w, h, num_bps):
    """Bytes of coding buffer that a w x h block of K = num_bps planes may need."""
    npasses = 3 * num_bps - 2 if num_bps > 0 else 0
    return 64 + 16 * npasses + 4 * w * h * (npasses + 1)


@njit(**JIT)
def code_block(src, off, stride, w, h, orient, style, num_bps, floor, scratch, rates, dists):
    """Tier-1 code the w x h block at src[off] (rows ``stride`` apart) of K = num_bps planes,
    down to bit-plane ``floor`` (0: all).

    ``scratch``: the tuple (mag, neg, flags, rec, ctx, snap, buf): mag, neg, flags, rec of at
    least (h + 2) (w + 2) samples, ctx (NUM_CONTEXTS), snap (passes, 5), buf (scratch_size
    bytes); all reset here.  Writes the segments to buf from 0 and rates (cumulative bytes)
    and dists of the coded_passes(K, floor) passes; returns the length.  The distortions are
    those of the whole magnitudes, so a pass has the same distortion and bytes whatever the
    floor (but the last, which is terminated).
    """
    mag, neg, flags, rec, ctx, snap, buf = scratch
    fs = w + 2
    n = (h + 2) * fs
    mag[:n] = 0
    neg[:n] = 0
    flags[:n] = 0
    rec[:n] = 0
    for y in range(h):
        row = off + y * stride
        for x in range(w):
            v = np.int64(src[row + x])
            mag[(y + 1) * fs + x + 1] = -v if v < 0 else v
            neg[(y + 1) * fs + x + 1] = 1 if v < 0 else 0
    npasses = coded_passes(num_bps, floor)
    ctx[:] = CTX_INIT
    zc = ZC_LUT[orient]
    vcausal = (style & CBLK_VCAUSAL) != 0
    # snapshots of the MQ registers after non-terminated passes: bp, b, c, a, ct
    seg_start = np.int64(0)     # int64, not a literal 0: the passes compile once (mq_enc_init)
    seg_first_pass = 0
    mq = mq_enc_init(seg_start)
    rw = raw_enc_init(seg_start)
    for k in range(npasses):
        raw = pass_is_raw(k, style)
        if k == seg_first_pass:
            if raw:
                rw = raw_enc_init(seg_start)
            else:
                mq = mq_enc_init(seg_start)
        kind = (k + 2) % 3
        plane = num_bps - 1 - (k + 2) // 3
        if kind == 0:
            if raw:
                rw, dists[k] = spp_raw(buf, rw, flags, mag, neg, rec, w, h, plane, vcausal)
            else:
                mq, dists[k] = spp_mq(buf, seg_start, mq, ctx, flags, mag, neg, rec, w, h, zc,
                                      plane, vcausal)
        elif kind == 1:
            if raw:
                rw, dists[k] = mrp_raw(buf, rw, flags, mag, rec, w, h, plane)
            else:
                mq, dists[k] = mrp_mq(buf, seg_start, mq, ctx, flags, mag, rec, w, h, plane)
        else:
            mq, dists[k] = cup_mq(buf, seg_start, mq, ctx, flags, mag, neg, rec, w, h, zc,
                                  plane, vcausal)
            if style & CBLK_SEGSYM:
                mq = segsym(buf, seg_start, mq, ctx)
        if style & CBLK_RESET:
            ctx[:] = CTX_INIT
        if not pass_ends_segment(k, npasses, style):
            if raw:
                rates[k] = seg_start + raw_pending_length(buf, seg_start, rw[0], rw[1], rw[2])
            else:
                a, c, ct, bp, b = mq
                snap[k, 0] = bp
                snap[k, 1] = b
                snap[k, 2] = c
                snap[k, 3] = a
                snap[k, 4] = ct
            continue
        if raw:
            seg_len = raw_flush(buf, seg_start, rw[0], rw[1], rw[2])
        else:
            a, c, ct, bp, b = mq
            seg_len = mq_flush(buf, seg_start, a, c, ct, bp, b)
            for j in range(seg_first_pass, k):
                rates[j] = seg_start + mq_trunc_length(buf, seg_start, seg_len, snap[j, 0],
                                                       snap[j, 1], snap[j, 2], snap[j, 3],
                                                       snap[j, 4])
        for j in range(seg_first_pass, k):
            rates[j] = min(rates[j], seg_start + seg_len)
        seg_start += seg_len
        rates[k] = seg_start
        seg_first_pass = k + 1
    for k in range(1, npasses):
        rates[k] = max(rates[k], rates[k - 1])
    return seg_start


@njit(**JIT)
def encode_core(coeffs, orient, style):
    """numba core of encode_codeblock; see there. Returns (buf, length, rates, dists, K)."""
    h, w = coeffs.shape
    src = coeffs.ravel()
    num_bps = block_bps(src, 0, w, w, h)
    npasses = 3 * num_bps - 2 if num_bps > 0 else 0
    n = (h + 2) * (w + 2)
    buf = np.empty(64 + 16 * npasses + 4 * w * h * (npasses + 1), np.uint8)
    rates = np.zeros(npasses, np.int32)
    dists = np.zeros(npasses, np.float64)
    scratch = (np.empty(n, np.int64), np.empty(n, np.int32), np.empty(n, np.int32),
               np.empty(n, np.int64), np.empty(CTX_INIT.shape[0], np.int32),
               np.zeros((max(npasses, 1), 5), np.int64), buf)
    length = code_block(src, 0, w, w, h, orient, style, num_bps, 0, scratch, rates, dists)
    return buf, length, rates, dists, num_bps


def encode_codeblock(coeffs, orient, style=0):
    """Tier-1 encode one code-block (T.800 Annex D).

    coeffs: 2-D signed integer coefficients (|v| < 2^30), height x width with width, height
    <= 1024 and width * height <= 4096.  orient: ORIENT_LL/HL/LH/HH.  style: CBLK_* bits.

    Returns (coded, pass_lengths, distortion, num_bps):
        coded         uint8 array, all segments back to back (no padding)
        pass_lengths  int32, cumulative byte length after each pass: keeping coded[:L] (and
                      padding every segment with 0xFF 0xFF) decodes passes 0..k exactly; for
                      terminated passes the exact segment end
        distortion    float64, decrease of squared error per pass (coefficient units squared)
        num_bps       K, magnitude bit-planes (the first cleanup pass codes plane K - 1)
    Segment boundaries follow from style: see segments().
    """
    coeffs = np.ascontiguousarray(coeffs)
    if coeffs.ndim != 2:
        raise ValueError("coeffs must be 2-D")
    h, w = coeffs.shape
    if h > MAX_CBLK_SIDE or w > MAX_CBLK_SIDE or w * h > MAX_CBLK_AREA:
        raise ValueError(f"code-block {w}x{h} too large (T.800 A.6.1)")
    if not 0 <= orient <= 3:
        raise ValueError(f"orientation {orient} not in 0..3")
    coeffs = coeffs.astype(np.int64, copy=False)
    if coeffs.size and int(np.abs(coeffs).max()) >= 1 << MAX_ENCODE_BPS:
        raise ValueError("coefficient magnitude >= 2^30")
    buf, length, rates, dists, num_bps = encode_core(coeffs, int(orient), int(style))
    return buf[:length].copy(), rates, dists, num_bps


def segments(pass_lengths, style, npasses=None):
    """Codeword segments of the first `npasses` passes (default all): (seg_lengths,
    seg_passes) int32 arrays as decode_codeblock takes them.  A truncated last segment ends at
    pass_lengths[npasses - 1]."""
    total = len(pass_lengths)
    npasses = total if npasses is None else npasses
    lengths, passes = [], []
    start, first = 0, 0
    for k in range(npasses):
        if k == npasses - 1 or pass_ends_segment(k, total, style):
            end = int(pass_lengths[k])
            lengths.append(end - start)
            passes.append(k - first + 1)
            start, first = end, k + 1
    return np.array(lengths, np.int32), np.array(passes, np.int32)
