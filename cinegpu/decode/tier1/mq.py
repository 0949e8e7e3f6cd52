"""MQ arithmetic decoder (T.800 C.3) and the raw bit reader of arithmetic-coding bypass (D.6).

The registers travel as plain integers: every function takes them and returns them updated,
so numba keeps them in machine registers (the C decoders keep them in locals the same way).

    a   interval register A (16 bits)
    c   code register C, with Chigh (the 16 bits compared with Qe) at bits MQ_SHIFT..+15
    ct  number of coded bits already loaded into c below Chigh
    bp  index into `data` of the byte last read (Figure C.18's BP)

Buffered C register.  T.800 C.3 loads one byte (BYTEIN) whenever CT reaches 0 during
renormalisation.  Here c is 64 bits wide and Chigh sits at bit MQ_SHIFT = 40, so up to 40 coded
bits wait below it; mq_fill loads several bytes at once (with the same 0xFF / marker rules as
BYTEIN, Figure C.18) and the renormalisation shifts by its whole count at once (one shift, not
a bit loop): the count is 1 or 2 after an MPS exchange and a per-state constant after an LPS
exchange (A becomes Qe), kept in the context's word (tables.MQ_WORD).  Only when fewer than
that many bits are loaded does the renormalisation call the out-of-line mq_renorm_fill.  The
decoded decisions are the ones of C.3 bit for bit: the bits below Chigh only ever move up into
it by the same shifts.  (One exception, for corrupt data only: after 0xFF a byte 0x80..0x8F is
neither a marker nor a legal stuffed byte; BYTEIN adds its top bit into the last bit of the
0xFF, and here that carry can reach Chigh a few decisions earlier than in C.3.)

The coded data of every segment is followed by two padding bytes 0xFF 0xFF.  BYTEIN treats 0xFF
followed by a byte > 0x8F as a marker and then feeds 1-bits without advancing, so the decoder
never moves past the first padding byte and needs no end test.  The raw reader stops at the
same pair.

mq_decode_flat is the same DECODE with selects instead of branches (for near-random contexts).

Hot functions are compiled with _nrt=False (no reference counting): numba would otherwise wrap
every inlined call that takes an array in an atomic incref/decref pair, which cost more than
the MQ decision itself.  They take arrays but never allocate.
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from .tables import MQ_SHIFT, MQ_WORD, MQ_WORD_MPS

JIT = dict(cache=True, nogil=True, _nrt=False)


@njit(**JIT)
def mq_fill(data, c, ct, bp):
    """BYTEIN (T.800 Figure C.18) repeated until no further byte fits below Chigh.

    A byte is placed right below the ct bits already loaded; after 0xFF the next byte holds 7
    bits (its top bit lands on the last bit of the 0xFF, as BYTEIN's C + (B << 9)); a marker
    (0xFF then > 0x8F) feeds eight 1-bits without advancing.  Returns (c, ct, bp).
    """
    while ct <= MQ_SHIFT - 8:
        if data[bp] == 0xFF:
            if data[bp + 1] > 0x8F:
                c += np.int64(0xFF) << (MQ_SHIFT - 8 - ct)
                ct += 8
            else:
                bp += 1
                c += np.int64(data[bp]) << (MQ_SHIFT - 7 - ct)
                ct += 7
        else:
            bp += 1
            c += np.int64(data[bp]) << (MQ_SHIFT - 8 - ct)
            ct += 8
    return c, ct, bp


@njit(**JIT)
def mq_init(data, start):
    """INITDEC, T.800 Figure C.19, for a segment starting at data[start]. Returns (a, c, ct, bp).

    C.19 puts the first byte at Chigh bits 7..14 and shifts the next one in 7 bits deep: here
    the first byte goes straight there and ct = -7 counts the bits still missing below it.
    """
    c = np.int64(data[start]) << (MQ_SHIFT + 7)
    c, ct, bp = mq_fill(data, c, np.int64(-7), np.int64(start))
    return np.int64(0x8000), c, ct, bp


@njit(**JIT)
def mq_renorm_fill(data, c, ct, bp, n):
    """The rare end of RENORMD (Figure C.23): shift c by n with fewer than n bits loaded."""
    c <<= ct
    n -= ct
    c, ct, bp = mq_fill(data, c, np.int64(0), bp)
    return c << n, ct - n, bp


@njit(inline='always', **JIT)
def mq_decode(data, ctx, cx, a, c, ct, bp):
    """DECODE, T.800 Figures C.20-C.23 (with the conditional exchanges), context ctx[cx].

    Returns (d, a, c, ct, bp), d the decoded decision (0 or 1).  ctx[cx] holds the word of its
    sv = 2 x state index + MPS (tables.MQ_WORD): Qe, the LPS renormalisation shift, both next
    states and the MPS, read in one load.
    """
    k = np.uint64(cx)  # unsigned: no negative-index wraparound code
    st = ctx[k]
    qe = st & 0xFFFF
    d = (st >> MQ_WORD_MPS) & 1
    a -= qe
    if (c >> MQ_SHIFT) < qe:
        # LPS_EXCHANGE (Figure C.21); A becomes Qe, renormalised by a per-state shift.
        # lps: the LPS was decoded; the next state is NLPS (bits 27..33, with the MPS
        # switch) or NMPS (bits 20..26), chosen without a branch.
        lps = np.int64(a >= qe)
        n = (st >> 16) & 0xF
        a = qe << n
    else:
        c -= qe << MQ_SHIFT
        if a >= 0x8000:
            return d, a, c, ct, bp
        # MPS_EXCHANGE (Figure C.22); A >= 0x8000 - 0x5601, so one or two shifts
        lps = np.int64(a < qe)
        n = 2 - (a >> 14)
        a <<= n
    d ^= lps
    ctx[k] = MQ_WORD[(st >> (20 + 7 * lps)) & 0x7F]
    # RENORMD (Figure C.23) of c
    if n <= ct:
        c <<= n
        ct -= n
    else:
        c, ct, bp = mq_renorm_fill(data, c, ct, bp, n)
    return d, a, c, ct, bp


@njit(**JIT)
def raw_init(start):
    """Raw (bypass) reader for a segment starting at data[start]. Returns (c, ct, bp)."""
    return np.int64(0), np.int64(0), np.int64(start)


@njit(**JIT)
def raw_next_byte(data, c, bp):
    """The raw reader's next byte, T.800 D.6: after 0xFF only 7 bits; marker or padding (0xFF
    then > 0x8F) feeds 1-bits without advancing.  `c` is the previous byte. Returns (c, ct, bp).
    """
    if c == 0xFF:
        if data[bp] > 0x8F:
            return np.int64(0xFF), np.int64(8), bp
        return np.int64(data[bp]), np.int64(7), bp + 1
    return np.int64(data[bp]), np.int64(8), bp + 1


@njit(inline='always', **JIT)
def raw_decode(data, c, ct, bp):
    """One raw bit, T.800 D.6: bytes MSB first; after 0xFF the next byte holds 7 bits.

    `c` holds the current byte, `bp` the index of the next byte. Returns (d, c, ct, bp).
    """
    if ct == 0:
        c, ct, bp = raw_next_byte(data, c, bp)
    ct -= 1
    return (c >> ct) & 1, c, ct, bp


@njit(inline='always', **JIT)
def mq_decode_flat(data, ctx, cx, a, c, ct, bp):
    """mq_decode without data-dependent branches (selects instead), for contexts whose
    decisions are close to random, where a branch on the decision mispredicts about every
    other time: magnitude refinement.  Same decisions, same register updates.

    With lower = (Chigh < Qe) (Figure C.20's first test): the sub-interval taken is the
    lower (Qe, C unchanged) or the upper one (A - Qe, C - Qe); the decision is the LPS
    exactly when the interval taken is the smaller of the two, which is also the conditional
    exchange of Figures C.21/C.22 (an upper interval of 0x8000 or more is never the smaller).
    """
    k = np.uint64(cx)
    st = ctx[k]
    qe = st & 0xFFFF
    a1 = a - qe
    lower = np.int64((c >> MQ_SHIFT) < qe)
    lps = np.int64(a1 < qe) ^ lower
    c -= (qe << MQ_SHIFT) & (lower - 1)
    a = a1 + (qe - a1) * lower
    renorm = lower | np.int64(a1 < 0x8000)
    ctx[k] = MQ_WORD[(st >> (20 + 7 * lps)) & 0x7F] * renorm + st * (1 - renorm)
    n = leading_zeros(a) - 48  # RENORMD shifts: A is below 2^16
    a <<= n
    if n <= ct:
        c <<= n
        ct -= n
    else:
        c, ct, bp = mq_renorm_fill(data, c, ct, bp, n)
    return ((st >> MQ_WORD_MPS) & 1) ^ lps, a, c, ct, bp
