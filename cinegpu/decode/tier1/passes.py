"""The three coding passes of EBCOT tier-1 decoding, T.800 D.3.

Each pass scans the code-block in stripes of four rows, column by column (D.1, Figure D.1).
Samples live in flat arrays with a one-sample border: sample (x, y) is at index
(y + 1) * fs + x + 1 with fs = width + 2, in both `flags` (see tables.py) and `vals`.
`vals` holds 2 x the reconstructed coefficient, sign applied (one fractional bit, as OpenJPEG).
At bit-plane p a newly significant sample gets magnitude 3 << p (midpoint 1.5 * 2^p in real
units) and a refinement at plane p adds or subtracts 1 << p (2^(p-1) in real units).

MQ passes take and return the MQ registers (a, c, ct, bp); raw passes (bypass, D.6) the raw
reader's (c, ct, bp).  Zero coding, sign and refinement decisions use the branch-free
mq_decode_flat (they are close to random, so a branch on them mispredicts often); the skewed
run-length and UNIFORM decisions of the cleanup pass keep the branching mq_decode, which
measured faster there.  The per-sample helpers are inlined (inline='always') into the pass
loops; with reference counting off (mq.py) that costs no atomic operations.

Each inlined copy costs compile time out of proportion: numba's SSA pass (numba.core.ssa)
walks the whole function once per variable assigned more than once, and every copy adds such
variables as well as statements, so a pass's first compile grows with the square of its
copies.  The significance and refinement passes therefore code one sample in one copy: in a
full stripe they take the column's samples to code as the bits of a word, lowest first (a
trailing-zeros count a sample coded, not a mispredicted branch on each of the four: 4-6 %
less tier-1 time on DCI frames, docs/performance.md), and the cleanup pass, whose unrolled
column measured faster (than a loop, and than the same bits), calls its rarer
newly-significant step (sign and neighbours) instead of inlining it (docs/performance.md has
the compile times before and after).
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .mq import mq_decode, mq_decode_flat, raw_decode
from .tables import (
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

JIT = dict(cache=True, nogil=True, _nrt=False)


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


U1, U2, U3 = np.uint64(1), np.uint64(2), np.uint64(3)


@njit(inline='always', **JIT)
def mark_significant(flags, i, fs, neg, hide_north):
    """set_significant for the MQ passes, whose sample indices are uint64 (as fs): numba then
    emits no negative-index wraparound, which keeps the array lengths out of the registers.
    The direct neighbours' sign bits are masked in rather than chosen by a branch on the sign,
    which is close to random (docs/performance.md)."""
    m = -np.int32(neg)       # all ones where negative
    flags[i] |= F_SIG
    flags[i - U1] |= F_E | (F_NEG_E & m)
    flags[i + U1] |= F_W | (F_NEG_W & m)
    flags[i + fs] |= F_N | (F_NEG_N & m)
    flags[i + fs - U1] |= F_NE
    flags[i + fs + U1] |= F_NW
    if not hide_north:
        flags[i - fs] |= F_S | (F_NEG_S & m)
        flags[i - fs - U1] |= F_SE
        flags[i - fs + U1] |= F_SW


@njit(inline='always', **JIT)
def spp_sample(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc, one_half, hide_north):
    """One sample of the significance propagation pass (D.3.1): coded when insignificant with
    a significant neighbour (ZC context, Table D.1, then the sign, D.3.2); marked VISIT."""
    f = flags[i]
    # insignificant, not visited, some significant neighbour: one unsigned range compare
    if 0 < (f & (F_SIG | F_VISIT | F_NEIGHBOURS)) <= F_NEIGHBOURS:
        _, a, c, ct, bp = spp_code(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc, one_half, hide_north, f)
    return a, c, ct, bp


@njit(inline='always', **JIT)
def spp_code(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc, one_half, hide_north, f):
    """Code sample i of flags ``f`` in the significance propagation pass (ZC context, Table
    D.1, then the sign, D.3.2) and mark it VISIT. Returns (d, a, c, ct, bp), d: it became
    significant."""
    d, a, c, ct, bp = mq_decode_flat(data, ctx, zc[np.uint64(f & F_NEIGHBOURS)], a, c, ct, bp)
    if d:
        sc = sign_context(f)
        s, a, c, ct, bp = mq_decode_flat(data, ctx, sc & 0x1F, a, c, ct, bp)
        s ^= sc >> 7
        vals[i] = (one_half ^ -s) + s      # -one_half where s, without a branch
        mark_significant(flags, i, fs, s, hide_north)
    flags[i] |= F_VISIT
    return d, a, c, ct, bp


@njit(inline='always', **JIT)
def _codable(f):
    """1 where a sample of flags ``f`` is coded in the significance propagation pass
    (insignificant, not visited, a significant neighbour), else 0; without a branch."""
    return np.int64(np.uint32((f & (F_SIG | F_VISIT | F_NEIGHBOURS)) - 1) < np.uint32(F_NEIGHBOURS))


@njit(**JIT)
def spp_mq(data, a, c, ct, bp, ctx, flags, vals, w, h, zc, plane, vcausal):
    """Significance propagation pass, MQ coded (D.3.1). zc: ZC_LUT row of the orientation.

    Full stripes go column by column; a column is skipped at once when no sample has a
    significant neighbour or all four are significant (nothing in it can be coded: a sample
    that is not coded cannot make its column neighbours codable), else its codable samples are
    taken as bits (:func:`_codable`), lowest first, a newly significant one adding the one below.
    """
    fs = np.uint64(w + 2)
    one_half = 3 << plane
    full = h & ~3
    for y0 in range(0, full, 4):
        i = np.uint64((y0 + 1) * (w + 2) + 1)
        for _x in range(w):
            f0 = flags[i]
            f1 = flags[i + fs]
            f2 = flags[i + U2 * fs]
            f3 = flags[i + U3 * fs]
            if ((f0 | f1 | f2 | f3) & F_NEIGHBOURS) != 0 and (f0 & f1 & f2 & f3 & F_SIG) == 0:
                # the column's codable samples as bits, taken lowest first: a sample that
                # becomes significant makes the one below it codable (its only neighbour in
                # the column still to come), so no sample of the column is looked at twice
                todo = (_codable(f0) | (_codable(f1) << 1) | (_codable(f2) << 2) | (_codable(f3) << 3))
                while todo:
                    k = trailing_zeros(todo)
                    j = i + np.uint64(k) * fs
                    d, a, c, ct, bp = spp_code(data, a, c, ct, bp, ctx, flags, vals, j, fs, zc, one_half,
                                               vcausal and k == 0, flags[j])
                    if d and k < 3 and (flags[j + fs] & (F_SIG | F_VISIT)) == 0:
                        todo |= np.int64(2) << k
                    todo &= todo - 1
            i += U1
    if full < h:  # last, partial stripe
        i0 = np.uint64((full + 1) * (w + 2) + 1)
        for x in range(w):
            i = i0 + np.uint64(x)
            for y in range(full, h):
                a, c, ct, bp = spp_sample(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc,
                                          one_half, vcausal and y == full)
                i += fs
    return a, c, ct, bp


@njit(inline='always', **JIT)
def mrp_sample(data, a, c, ct, bp, ctx, flags, vals, i, half):
    """One sample of the magnitude refinement pass (D.3.3): significant and not VISIT; the
    context from Table D.4 (first refinement: any significant neighbour; later ones)."""
    f = flags[i]
    if (f & (F_SIG | F_VISIT)) == F_SIG:
        if f & F_REFINED:
            cx = CTX_MR + 2
        else:
            cx = CTX_MR + ((f & F_NEIGHBOURS) != 0)
        d, a, c, ct, bp = mq_decode_flat(data, ctx, cx, a, c, ct, bp)
        v = vals[i]
        vals[i] = v + (half if d ^ (v < 0) else -half)
        flags[i] = f | F_REFINED
    return a, c, ct, bp


@njit(inline='always', **JIT)
def _refined(f):
    """1 where a sample of flags ``f`` is refined in the magnitude refinement pass
    (significant, not visited), else 0; without a branch."""
    return np.int64((f & (F_SIG | F_VISIT)) == F_SIG)


@njit(**JIT)
def mrp_mq(data, a, c, ct, bp, ctx, flags, vals, w, h, plane):
    """Magnitude refinement pass, MQ coded (D.3.3), contexts of Table D.4.

    Full stripes column by column: a column without a significant sample is skipped, else its
    samples to refine are taken as bits (:func:`_refined`), lowest first."""
    fs = np.uint64(w + 2)
    half = 1 << plane
    full = h & ~3
    for y0 in range(0, full, 4):
        i = np.uint64((y0 + 1) * (w + 2) + 1)
        for _x in range(w):
            f0 = flags[i]
            f1 = flags[i + fs]
            f2 = flags[i + U2 * fs]
            f3 = flags[i + U3 * fs]
            if (f0 | f1 | f2 | f3) & F_SIG:
                # the column's samples to refine as bits, lowest first (refining one changes
                # no other's membership)
                todo = (_refined(f0) | (_refined(f1) << 1) | (_refined(f2) << 2) | (_refined(f3) << 3))
                while todo:
                    a, c, ct, bp = mrp_sample(data, a, c, ct, bp, ctx, flags, vals,
                                              i + np.uint64(trailing_zeros(todo)) * fs, half)
                    todo &= todo - 1
            i += U1
    if full < h:
        i0 = np.uint64((full + 1) * (w + 2) + 1)
        for x in range(w):
            i = i0 + np.uint64(x)
            for _y in range(full, h):
                a, c, ct, bp = mrp_sample(data, a, c, ct, bp, ctx, flags, vals, i, half)
                i += fs
    return a, c, ct, bp


@njit(inline='always', **JIT)
def cup_sample(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc, one_half, hide_north):
    """One sample of the cleanup pass outside run-length mode (D.3.4): coded when neither
    significant nor VISIT (ZC, then the sign); VISIT cleared for the next bit-plane."""
    f = flags[i]
    if (f & (F_SIG | F_VISIT)) == 0:
        cx = zc[np.uint64(f & F_NEIGHBOURS)]
        d, a, c, ct, bp = mq_decode_flat(data, ctx, cx, a, c, ct, bp)
        if d:
            a, c, ct, bp = cup_newly_significant(data, a, c, ct, bp, ctx, flags, vals, i, fs,
                                                 f, one_half, hide_north)
    else:
        flags[i] = f & ~F_VISIT
    return a, c, ct, bp


@njit(**JIT)
def cup_newly_significant(data, a, c, ct, bp, ctx, flags, vals, i, fs, f, one_half, hide_north):
    """Sign decoding (D.3.2, Table D.3) and significance update of sample i with flags f."""
    sc = sign_context(f)
    s, a, c, ct, bp = mq_decode_flat(data, ctx, sc & 0x1F, a, c, ct, bp)
    s ^= sc >> 7
    vals[i] = (one_half ^ -s) + s
    mark_significant(flags, i, fs, s, hide_north)
    return a, c, ct, bp


@njit(**JIT)
def cup_mq(data, a, c, ct, bp, ctx, flags, vals, w, h, zc, plane, vcausal):
    """Cleanup pass (D.3.4) with run-length coding of full stripe columns; clears VISIT.

    Run-length mode (all four samples insignificant, unvisited, without significant
    neighbours) is one compare of the four flags words with zero.  After a run interruption
    the remaining samples of the column go through the ordinary per-sample path.
    """
    fs = np.uint64(w + 2)
    one_half = 3 << plane
    full = h & ~3
    later = np.bool_(False)  # a stripe's later rows never hide their north (typed, not a literal:
    # one compiled cup_newly_significant)
    for y0 in range(0, full, 4):
        i = np.uint64((y0 + 1) * (w + 2) + 1)
        for _x in range(w):
            if (flags[i] | flags[i + fs] | flags[i + U2 * fs] | flags[i + U3 * fs]) == 0:
                d, a, c, ct, bp = mq_decode(data, ctx, CTX_RL, a, c, ct, bp)
                if d:
                    r1, a, c, ct, bp = mq_decode(data, ctx, CTX_UNI, a, c, ct, bp)
                    r0, a, c, ct, bp = mq_decode(data, ctx, CTX_UNI, a, c, ct, bp)
                    r = (r1 << 1) | r0
                    j = i + np.uint64(r) * fs
                    a, c, ct, bp = cup_newly_significant(data, a, c, ct, bp, ctx, flags, vals,
                                                         j, fs, flags[j], one_half,
                                                         vcausal and r == 0)
                    for _y in range(r + 1, 4):
                        j += fs
                        a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, j, fs,
                                                  zc, one_half, later)
            else:
                a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc,
                                          one_half, vcausal)
                a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, i + fs, fs, zc,
                                          one_half, later)
                a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, i + U2 * fs, fs,
                                          zc, one_half, later)
                a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, i + U3 * fs, fs,
                                          zc, one_half, later)
            i += U1
    if full < h:
        i0 = np.uint64((full + 1) * (w + 2) + 1)
        for x in range(w):
            i = i0 + np.uint64(x)
            for y in range(full, h):
                a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, i, fs, zc,
                                          one_half, vcausal and y == full)
                i += fs
    return a, c, ct, bp


@njit(**JIT)
def spp_raw(data, c, ct, bp, flags, vals, w, h, plane, vcausal):
    """Significance propagation pass, raw (bypass, D.6): significance and sign bits uncoded."""
    fs = w + 2
    one_half = 3 << plane
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            for y in range(y0, y1):
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == 0 and (f & F_NEIGHBOURS) != 0:
                    d, c, ct, bp = raw_decode(data, c, ct, bp)
                    if d:
                        s, c, ct, bp = raw_decode(data, c, ct, bp)
                        vals[i] = -one_half if s else one_half
                        set_significant(flags, i, fs, s, vcausal and (y & 3) == 0)
                    flags[i] |= F_VISIT
                i += fs
    return c, ct, bp


@njit(**JIT)
def mrp_raw(data, c, ct, bp, flags, vals, w, h, plane):
    """Magnitude refinement pass, raw (bypass, D.6)."""
    fs = w + 2
    half = 1 << plane
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            i = (y0 + 1) * fs + x + 1
            for y in range(y0, y1):
                f = flags[i]
                if (f & (F_SIG | F_VISIT)) == F_SIG:
                    d, c, ct, bp = raw_decode(data, c, ct, bp)
                    v = vals[i]
                    vals[i] = v + half if d ^ (v < 0) else v - half
                    flags[i] = f | F_REFINED
                i += fs
    return c, ct, bp
