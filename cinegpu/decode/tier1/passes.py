"""The three coding passes of EBCOT tier-1 decoding, T.800 D.3.

Each pass scans the code-block in stripes of four rows, column by column (D.1, Figure D.1).
The flags are one int64 word per stripe column (tables.py, "the decoder's column words", as
OpenJPEG's decoder keeps them): a sample's zero-coding context (Table D.1) is one shift of its
column's word into ZC_COL_LUT, its sign context (Tables D.2, D.3) one gather of bits into
SC_COL_LUT; a sample that becomes significant sets its row's bits in the words of its column and
the two beside it, and in rows 0 and 3 those of the stripe above or below; a column with nothing
to code is passed over on one word.  Within a column its own word is kept in a local and
written back once.  `vals` holds 2 x the reconstructed coefficient, sign applied (one
fractional bit, as OpenJPEG), sample (x, y) at (y + 1) * (width + 2) + x + 1.  At bit-plane p a
newly significant sample gets magnitude 3 << p (midpoint 1.5 * 2^p in real units) and a
refinement at plane p adds or subtracts 1 << p (2^(p-1) in real units).

MQ passes take and return the MQ registers (a, c, ct, bp); raw passes (bypass, D.6) the raw
reader's (c, ct, bp).  Zero coding, sign and refinement decisions use the branch-free
mq_decode_flat (they are close to random, so a branch on them mispredicts often); the skewed
run-length and UNIFORM decisions of the cleanup pass keep the branching mq_decode.  The
per-sample helpers are inlined (inline='always') into the pass loops; with reference counting
off (mq.py) that costs no atomic operations.

Each inlined copy costs compile time out of proportion (numba's SSA pass walks the whole
function once per variable assigned more than once), so the significance and refinement
passes code one sample in one copy: a column's rows to code are the bits 3k of a word worked
out from its column word, taken lowest first (a trailing-zeros count a sample coded, not a
mispredicted branch on each of the four), and the cleanup pass, whose unrolled column measured
faster, calls its rarer newly-significant step (sign and neighbours) instead of inlining it
(docs/performance.md has the measurements).
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from .mq import mq_decode, mq_decode_flat, raw_decode
from .tables import (
    COL_NEIGHBOURS,
    COL_REFINED,
    COL_ROWS,
    COL_SIG,
    COL_VISIT,
    COL_VISIT_ALL,
    COL_WINDOW,
    CTX_MR,
    CTX_RL,
    CTX_UNI,
    SC_COL_LUT,
    SIG_ROW0,
    VISIT_ROW0,
)

JIT = dict(cache=True, nogil=True, _nrt=False)

U1 = np.uint64(1)


@njit(inline='always', **JIT)
def mark_significant(flags, p, sw, f, s, neg, hide_north):
    """The sample of row k = s / 3 (s = 3k) of column word p became significant, negative where
    neg (0 or 1): its bits in the column's own word f (kept by the caller, returned updated) and
    in the words beside it (p - 1, p + 1); in row 0 also in row 4 of the stripe above, unless
    hide_north (vertically causal mode, D.7: the stripe above must not see it, as OpenJPEG's
    decoder does with VSC), in row 3 in row -1 of the stripe below."""
    f |= (np.int64(0x10) | (neg << 21)) << s
    flags[p - U1] |= (np.int64(0x20) | (neg << 38)) << s
    flags[p + U1] |= (np.int64(0x08) | (neg << 36)) << s
    if s == 0:
        if not hide_north:
            q = p - sw
            flags[q - U1] |= np.int64(1 << 17)
            flags[q] |= np.int64(1 << 16) | (neg << 33)
            flags[q + U1] |= np.int64(1 << 15)
    elif s == 9:
        q = p + sw
        flags[q - U1] |= np.int64(4)
        flags[q] |= np.int64(2) | (neg << 18)
        flags[q + U1] |= np.int64(1)
    return f


@njit(inline='always', **JIT)
def sign_context(f, s):
    """The sign context and XORbit (Tables D.2, D.3; SC_LUT's entry, context | XORbit << 7) of
    the sample of row s / 3 of column word f."""
    g = f >> s
    idx = ((g >> 1) & 0x55) | ((g >> 17) & 0x82) | ((g >> 33) & 0x28)
    return SC_COL_LUT[np.uint64(idx)]


@njit(inline='always', **JIT)
def spp_code(data, a, c, ct, bp, ctx, flags, vals, p, sw, vi, f, s, zc, one_half, hide_north):
    """Code the sample of row s / 3 of column p (vals index vi) in the significance
    propagation pass (ZC, then the sign) and mark it visited. Returns (d, f, a, c, ct, bp)."""
    d, a, c, ct, bp = mq_decode_flat(data, ctx, zc[np.uint64((f >> s) & 0x1FF)], a, c, ct, bp)
    if d:
        sc = sign_context(f, s)
        sg, a, c, ct, bp = mq_decode_flat(data, ctx, sc & 0x1F, a, c, ct, bp)
        sg ^= sc >> 7
        vals[vi] = (one_half ^ -sg) + sg      # -one_half where sg, without a branch
        f = mark_significant(flags, p, sw, f, s, sg, hide_north)
    f |= np.int64(COL_VISIT) << s
    return d, f, a, c, ct, bp


@njit(inline='always', **JIT)
def _rows_mask(n):
    """Row bits (3k) of the first n rows of a stripe."""
    return np.int64(COL_ROWS) >> (3 * (4 - n))


@njit(inline='always', **JIT)
def _stripe_start(y0, w):
    """The index of the first column word of the stripe of rows y0.. (y0 a multiple of 4) and
    of its first sample in `vals`."""
    return np.uint64((y0 // 4 + 1) * (w + 2) + 1), np.uint64((y0 + 1) * (w + 2) + 1)


@njit(inline='always', **JIT)
def _settled(f):
    """The rows (bits 3k) of column word f significant or visited in this bit-plane."""
    return (f >> SIG_ROW0) | (f >> VISIT_ROW0)


@njit(inline='always', **JIT)
def _to_refine(f, rows):
    """The rows (bits 3k, among ``rows``) of column word f that the refinement pass codes:
    significant, not visited in this bit-plane's significance pass."""
    return (f >> SIG_ROW0) & ~(f >> VISIT_ROW0) & rows


@njit(inline='always', **JIT)
def _row(s):
    """k from s = 3k (k = 0..3), without a division."""
    return (s * 11) >> 5


@njit(**JIT)
def spp_mq(data, a, c, ct, bp, ctx, flags, vals, w, h, zc, plane, vcausal):
    """Significance propagation pass, MQ coded (D.3.1). zc: ZC_COL_LUT row of the orientation.

    A column's codable rows (insignificant, unvisited, some significant neighbour) are bits
    3k of a word computed from its column word; taken lowest first, a newly significant one
    adding the one below."""
    sw = np.uint64(w + 2)
    one_half = 3 << plane
    for y0 in range(0, h, 4):
        rows = _rows_mask(min(h - y0, 4))
        p, vi = _stripe_start(y0, w)
        for _x in range(w):
            f = flags[p]
            x = f & COL_WINDOW
            if x != 0:
                ra = (x | (x >> 1) | (x >> 2)) & 0x9249        # any significant, per row -1..4
                todo = (ra | (ra >> 3) | (ra >> 6)) & ~_settled(f) & rows
                if todo:
                    while todo:
                        s = trailing_zeros(todo)
                        k = _row(s)
                        d, f, a, c, ct, bp = spp_code(data, a, c, ct, bp, ctx, flags, vals, p, sw,
                                                      vi + np.uint64(k) * sw, f, s, zc, one_half,
                                                      vcausal and s == 0)
                        if d:
                            todo |= (np.int64(8) << s) & ~_settled(f) & rows
                        todo &= todo - 1
                    flags[p] = f
            p += U1
            vi += U1
    return a, c, ct, bp


@njit(**JIT)
def mrp_mq(data, a, c, ct, bp, ctx, flags, vals, w, h, plane):
    """Magnitude refinement pass, MQ coded (D.3.3), contexts of Table D.4: a column's rows to
    refine (significant, unvisited) as bits 3k, lowest first."""
    sw = np.uint64(w + 2)
    half = 1 << plane
    for y0 in range(0, h, 4):
        rows = _rows_mask(min(h - y0, 4))
        p, vi = _stripe_start(y0, w)
        for _x in range(w):
            f = flags[p]
            todo = _to_refine(f, rows)
            if todo:
                while todo:
                    s = trailing_zeros(todo)
                    k = _row(s)
                    g = f >> s
                    if g & COL_REFINED:
                        cx = CTX_MR + 2
                    else:
                        cx = CTX_MR + ((g & COL_NEIGHBOURS) != 0)
                    d, a, c, ct, bp = mq_decode_flat(data, ctx, cx, a, c, ct, bp)
                    j = vi + np.uint64(k) * sw
                    v = vals[j]
                    vals[j] = v + (half if d ^ (v < 0) else -half)
                    f |= np.int64(COL_REFINED) << s
                    todo &= todo - 1
                flags[p] = f
            p += U1
            vi += U1
    return a, c, ct, bp


@njit(inline='always', **JIT)
def cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw, vi, f, s, zc, one_half, hide_north):
    """One sample (row s / 3 of column p) of the cleanup pass outside run-length mode: coded
    when neither significant nor visited. Returns (f, a, c, ct, bp); the caller clears the visited
    bits of the whole column."""
    g = f >> s
    if (g & (COL_SIG | COL_VISIT)) == 0:
        d, a, c, ct, bp = mq_decode_flat(data, ctx, zc[np.uint64(g & 0x1FF)], a, c, ct, bp)
        if d:
            f, a, c, ct, bp = cup_newly_significant(data, a, c, ct, bp, ctx, flags, vals, p, sw,
                                                    vi, f, s, one_half, hide_north)
    return f, a, c, ct, bp


@njit(**JIT)
def cup_newly_significant(data, a, c, ct, bp, ctx, flags, vals, p, sw, vi, f, s, one_half, hide_north):
    """Sign decoding (D.3.2, Table D.3) and significance update of the sample of row s / 3 of
    column p. Returns (f, a, c, ct, bp)."""
    sc = sign_context(f, s)
    sg, a, c, ct, bp = mq_decode_flat(data, ctx, sc & 0x1F, a, c, ct, bp)
    sg ^= sc >> 7
    vals[vi] = (one_half ^ -sg) + sg
    f = mark_significant(flags, p, sw, f, s, sg, hide_north)
    return f, a, c, ct, bp


@njit(**JIT)
def cup_mq(data, a, c, ct, bp, ctx, flags, vals, w, h, zc, plane, vcausal):
    """Cleanup pass (D.3.4) with run-length coding of full stripe columns; clears the visited bits.

    Run-length mode (all four samples insignificant, unvisited, without significant
    neighbours) is the column word being zero."""
    sw = np.uint64(w + 2)
    one_half = 3 << plane
    full = h & ~3
    later = np.bool_(False)
    three = np.int64(3)
    not_visited = ~np.int64(COL_VISIT_ALL)
    for y0 in range(0, full, 4):
        p, vi = _stripe_start(y0, w)
        for _x in range(w):
            f = flags[p]
            if f == 0:
                d, a, c, ct, bp = mq_decode(data, ctx, CTX_RL, a, c, ct, bp)
                if d:
                    r1, a, c, ct, bp = mq_decode(data, ctx, CTX_UNI, a, c, ct, bp)
                    r0, a, c, ct, bp = mq_decode(data, ctx, CTX_UNI, a, c, ct, bp)
                    r = (r1 << 1) | r0
                    j = vi + np.uint64(r) * sw
                    f, a, c, ct, bp = cup_newly_significant(data, a, c, ct, bp, ctx, flags, vals, p,
                                                            sw, j, f, three * r, one_half,
                                                            vcausal and r == 0)
                    for y in range(r + 1, 4):
                        j += sw
                        f, a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw, j,
                                                     f, three * y, zc, one_half, later)
                    flags[p] = f
            else:
                f, a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw, vi, f,
                                             0, zc, one_half, vcausal)
                f, a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw, vi + sw,
                                             f, 3, zc, one_half, later)
                f, a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw,
                                             vi + np.uint64(2) * sw, f, 6, zc, one_half, later)
                f, a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw,
                                             vi + np.uint64(3) * sw, f, 9, zc, one_half, later)
                flags[p] = f & not_visited
            p += U1
            vi += U1
    if full < h:
        p, vi0 = _stripe_start(full, w)
        for _x in range(w):
            f = flags[p]
            j = vi0
            for y in range(full, h):
                f, a, c, ct, bp = cup_sample(data, a, c, ct, bp, ctx, flags, vals, p, sw, j, f,
                                             three * (y - full), zc, one_half, vcausal and y == full)
                j += sw
            flags[p] = f & not_visited
            p += U1
            vi0 += U1
    return a, c, ct, bp


@njit(**JIT)
def spp_raw(data, c, ct, bp, flags, vals, w, h, plane, vcausal):
    """Significance propagation pass, raw (bypass, D.6): significance and sign bits uncoded."""
    sw = np.uint64(w + 2)
    one_half = 3 << plane
    for y0 in range(0, h, 4):
        n = min(h - y0, 4)
        p, vi = _stripe_start(y0, w)
        for _x in range(w):
            f = flags[p]
            if f & COL_WINDOW:
                j = vi
                for k in range(n):
                    s = 3 * k
                    g = f >> s
                    if (g & (COL_SIG | COL_VISIT)) == 0 and (g & COL_NEIGHBOURS) != 0:
                        d, c, ct, bp = raw_decode(data, c, ct, bp)
                        if d:
                            sg, c, ct, bp = raw_decode(data, c, ct, bp)
                            vals[j] = -one_half if sg else one_half
                            f = mark_significant(flags, p, sw, f, s, sg, vcausal and k == 0)
                        f |= np.int64(COL_VISIT) << s
                    j += sw
                flags[p] = f
            p += U1
            vi += U1
    return c, ct, bp


@njit(**JIT)
def mrp_raw(data, c, ct, bp, flags, vals, w, h, plane):
    """Magnitude refinement pass, raw (bypass, D.6)."""
    sw = np.uint64(w + 2)
    half = 1 << plane
    for y0 in range(0, h, 4):
        rows = _rows_mask(min(h - y0, 4))
        p, vi = _stripe_start(y0, w)
        for _x in range(w):
            f = flags[p]
            todo = _to_refine(f, rows)
            if todo:
                while todo:
                    s = trailing_zeros(todo)
                    j = vi + np.uint64(_row(s)) * sw
                    d, c, ct, bp = raw_decode(data, c, ct, bp)
                    v = vals[j]
                    vals[j] = v + half if d ^ (v < 0) else v - half
                    f |= np.int64(COL_REFINED) << s
                    todo &= todo - 1
                flags[p] = f
            p += U1
            vi += U1
    return c, ct, bp
