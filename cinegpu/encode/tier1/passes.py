"""The three coding passes of EBCOT tier-1 encoding, T.800 D.3, mirroring
cinegpu.decode.tier1.passes decision for decision (same scan, same contexts).  The flags are
one int32 per sample (cinegpu.decode.tier1.tables, F_*), not the decoder's column words.

Arrays share the decoder's border layout (index (y + 1) * (w + 2) + x + 1):
    mag   int64  |coefficient|
    neg   int32  1 where the coefficient is negative
    rec   int64  2 x the decoder's reconstructed magnitude so far (midpoint rule)
Each pass returns the decrease in squared error it brings, in coefficient units squared:
((2m - rec_old)^2 - (2m - rec_new)^2) / 4 summed over the samples it changes.

Zero coding, sign and refinement decisions go through the branch-free mq_encode_flat (they are
close to random: a branch on them mispredicts often); the skewed run-length and UNIFORM
decisions of the cleanup pass keep the branching mq_encode.  Like the decoder's, the passes
are compiled without reference counting and the MQ helpers are inlined into them.
"""

from numba import njit

from cinegpu.decode.tier1.tables import (
    CTX_MR,
    CTX_RL,
    CTX_UNI,
    F_E,
    F_N,
    F_NE,
    F_NEG_E,
    F_NEG_N,
    F_NEG_S,
    F_NEG_W,
    F_NEIGHBOURS,
    F_NW,
    F_REFINED,
    F_S,
    F_SE,
    F_SIG,
    F_SW,
    F_VISIT,
    F_W,
    SC_LUT,
)

from .mq import mq_encode, mq_encode_flat, raw_encode

JIT = dict(cache=True, nogil=True, _nrt=False)  # no reference counting: see mq.py


@njit(inline='always', **JIT)
def set_significant(flags, i, fs, neg, hide_north):
    """Mark sample i significant and tell its 8 neighbours (sign to the 4 direct ones).

    hide_north: vertically causal mode (D.7) for the first row of a stripe: the row above
    (previous stripe) must not see this sample, as OpenJPEG's update_flags does with vsc.
    """
    flags[i] |= F_SIG
    if neg:
        flags[i - 1] |= F_E | F_NEG_E
        flags[i + 1] |= F_W | F_NEG_W
        flags[i + fs] |= F_N | F_NEG_N
        if not hide_north:
            flags[i - fs] |= F_S | F_NEG_S
    else:
        flags[i - 1] |= F_E
        flags[i + 1] |= F_W
        flags[i + fs] |= F_N
        if not hide_north:
            flags[i - fs] |= F_S
    flags[i + fs - 1] |= F_NE
    flags[i + fs + 1] |= F_NW
    if not hide_north:
        flags[i - fs - 1] |= F_SE
        flags[i - fs + 1] |= F_SW


@njit(inline='always', **JIT)
def sign_context(f):
    """Index into SC_LUT from a sample's flags (significance and sign of N, S, W, E)."""
    return SC_LUT[(f & 0xF) | ((f >> 4) & 0xF0)]


@njit(**JIT)
def gain(m, old, new):
    """Decrease of squared error (coefficient units) when 2x reconstruction goes old -> new."""
    e0 = 2 * m - old
    e1 = 2 * m - new
    return (float(e0) * e0 - float(e1) * e1) * 0.25


@njit(**JIT)
def spp_mq(buf, start, st, ctx, flags, mag, neg, rec, w, h, zc, plane, vcausal):
    """Significance propagation pass, MQ coded. st = (a, c, ct, bp, b)."""
    a, c, ct, bp, b = st
    fs = w + 2
    dist = 0.0
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            for y in range(y0, y1):
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == 0 and (f & F_NEIGHBOURS) != 0:
                    d = (mag[i] >> plane) & 1
                    a, c, ct, bp, b = mq_encode_flat(buf, start, ctx, zc[f & F_NEIGHBOURS],
                                                     d, a, c, ct, bp, b)
                    if d:
                        sc = sign_context(f)
                        a, c, ct, bp, b = mq_encode_flat(buf, start, ctx, sc & 0x1F,
                                                         neg[i] ^ (sc >> 7), a, c, ct, bp, b)
                        dist += gain(mag[i], 0, 3 << plane)
                        rec[i] = 3 << plane
                        set_significant(flags, i, fs, neg[i], vcausal and (y & 3) == 0)
                    flags[i] |= F_VISIT
                i += fs
    return (a, c, ct, bp, b), dist


@njit(**JIT)
def refine(mag, rec, i, plane):
    """Apply one refinement bit to rec[i]; returns (bit, distortion decrease)."""
    d = (mag[i] >> plane) & 1
    old = rec[i]
    new = old + (1 << plane) if d else old - (1 << plane)
    rec[i] = new
    return d, gain(mag[i], old, new)


@njit(**JIT)
def mrp_mq(buf, start, st, ctx, flags, mag, rec, w, h, plane):
    """Magnitude refinement pass, MQ coded, contexts of Table D.4."""
    a, c, ct, bp, b = st
    fs = w + 2
    dist = 0.0
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            for y in range(y0, y1):
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == F_SIG:
                    if f & F_REFINED:
                        cx = CTX_MR + 2
                    elif f & F_NEIGHBOURS:
                        cx = CTX_MR + 1
                    else:
                        cx = CTX_MR
                    d, g = refine(mag, rec, i, plane)
                    dist += g
                    a, c, ct, bp, b = mq_encode_flat(buf, start, ctx, cx, d, a, c, ct, bp, b)
                    flags[i] = f | F_REFINED
                i += fs
    return (a, c, ct, bp, b), dist


@njit(**JIT)
def cup_mq(buf, start, st, ctx, flags, mag, neg, rec, w, h, zc, plane, vcausal):
    """Cleanup pass with run-length coding of full stripe columns; clears VISIT."""
    a, c, ct, bp, b = st
    fs = w + 2
    dist = 0.0
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        full = y1 - y0 == 4
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            y = y0
            if full and (flags[i] | flags[i + fs] | flags[i + 2 * fs] | flags[i + 3 * fs]) == 0:
                r = 4
                for k in range(4):
                    if (mag[i + k * fs] >> plane) & 1:
                        r = k
                        break
                a, c, ct, bp, b = mq_encode(buf, start, ctx, CTX_RL, 1 if r < 4 else 0,
                                            a, c, ct, bp, b)
                if r == 4:
                    continue
                a, c, ct, bp, b = mq_encode(buf, start, ctx, CTX_UNI, r >> 1, a, c, ct, bp, b)
                a, c, ct, bp, b = mq_encode(buf, start, ctx, CTX_UNI, r & 1, a, c, ct, bp, b)
                i += r * fs
                y += r
                sc = sign_context(flags[i])
                a, c, ct, bp, b = mq_encode_flat(buf, start, ctx, sc & 0x1F,
                                                 neg[i] ^ (sc >> 7), a, c, ct, bp, b)
                dist += gain(mag[i], 0, 3 << plane)
                rec[i] = 3 << plane
                set_significant(flags, i, fs, neg[i], vcausal and (y & 3) == 0)
                i += fs
                y += 1
            while y < y1:
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == 0:
                    d = (mag[i] >> plane) & 1
                    a, c, ct, bp, b = mq_encode_flat(buf, start, ctx, zc[f & F_NEIGHBOURS],
                                                     d, a, c, ct, bp, b)
                    if d:
                        sc = sign_context(f)
                        a, c, ct, bp, b = mq_encode_flat(buf, start, ctx, sc & 0x1F,
                                                         neg[i] ^ (sc >> 7), a, c, ct, bp, b)
                        dist += gain(mag[i], 0, 3 << plane)
                        rec[i] = 3 << plane
                        set_significant(flags, i, fs, neg[i], vcausal and (y & 3) == 0)
                flags[i] &= ~F_VISIT
                i += fs
                y += 1
    return (a, c, ct, bp, b), dist


@njit(**JIT)
def spp_raw(buf, st, flags, mag, neg, rec, w, h, plane, vcausal):
    """Significance propagation pass, raw (bypass). st = (c, ct, bp) of the raw writer."""
    c, ct, bp = st
    fs = w + 2
    dist = 0.0
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            for y in range(y0, y1):
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == 0 and (f & F_NEIGHBOURS) != 0:
                    d = (mag[i] >> plane) & 1
                    c, ct, bp = raw_encode(buf, d, c, ct, bp)
                    if d:
                        c, ct, bp = raw_encode(buf, neg[i], c, ct, bp)
                        dist += gain(mag[i], 0, 3 << plane)
                        rec[i] = 3 << plane
                        set_significant(flags, i, fs, neg[i], vcausal and (y & 3) == 0)
                    flags[i] |= F_VISIT
                i += fs
    return (c, ct, bp), dist


@njit(**JIT)
def mrp_raw(buf, st, flags, mag, rec, w, h, plane):
    """Magnitude refinement pass, raw (bypass)."""
    c, ct, bp = st
    fs = w + 2
    dist = 0.0
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            for y in range(y0, y1):
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == F_SIG:
                    d, g = refine(mag, rec, i, plane)
                    dist += g
                    c, ct, bp = raw_encode(buf, d, c, ct, bp)
                    flags[i] = f | F_REFINED
                i += fs
    return (c, ct, bp), dist


@njit(**JIT)
def segsym(buf, start, st, ctx):
    """Segmentation symbol 1010 in the UNIFORM context after a cleanup pass (D.5)."""
    a, c, ct, bp, b = st
    for d in (1, 0, 1, 0):
        a, c, ct, bp, b = mq_encode(buf, start, ctx, CTX_UNI, d, a, c, ct, bp, b)
    return (a, c, ct, bp, b)
