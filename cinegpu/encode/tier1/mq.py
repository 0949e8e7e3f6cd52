"""MQ arithmetic encoder (T.800 C.2) and raw bit writer of arithmetic-coding bypass (D.6).

Registers travel as plain integers (returned updated), like the decoder's:

    a, c, ct    A, C, CT of C.2
    bp          index in `buf` of the byte B (the last byte produced, which may still receive
                a carry); a segment starting at `start` begins with bp = start - 1, a dummy
                byte that is never written
    b           the value of B, written to buf[bp] when the next byte is produced

Truncation points (per-pass rates) of non-terminated passes are exact: `mq_trunc_length`
finds the shortest prefix of the final segment that, padded with 0xFF 0xFF as the decoder
sees it, still lies inside the coding interval at the end of the pass.
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from cinegpu.decode.tier1.tables import MQ_STATE

#: Compiled without numba's reference counting (they take arrays, never allocate): with it,
#: every call that takes an array, inlined or not, pays an atomic incref/decref pair per array
#: (see cinegpu.encode.tier2.bits).
JIT = dict(cache=True, nogil=True, _nrt=False)


@njit(**JIT)
def mq_enc_init(start):
    """INITENC, T.800 Figure C.10, for a segment at buf[start]. Returns (a, c, ct, bp, b), each
    an int64 (numba would otherwise type the constants as literals, and every pass taking the
    registers would compile twice: once for the literals, once for int64)."""
    return np.int64(0x8000), np.int64(0), np.int64(12), np.int64(start - 1), np.int64(0)


@njit(inline='always', **JIT)
def mq_byteout(buf, start, c, ct, bp, b):
    """BYTEOUT with bit stuffing and carry, T.800 Figure C.8. Returns (c, ct, bp, b)."""
    if b != 0xFF and c >= 0x8000000:
        b += 1  # carry into B; if B becomes 0xFF the next byte is stuffed below
        c &= 0x7FFFFFF
    if bp >= start:
        buf[bp] = b
    bp += 1
    if b == 0xFF:
        b = c >> 20
        c &= 0xFFFFF
        ct = 7
    else:
        b = c >> 19
        c &= 0x7FFFF
        ct = 8
    return c, ct, bp, b


@njit(inline='always', **JIT)
def mq_encode(buf, start, ctx, cx, d, a, c, ct, bp, b):
    """ENCODE decision d in context ctx[cx], T.800 C.2.4-C.2.6 (CODEMPS / CODELPS, RENORME).

    ctx[cx] holds sv = 2 x state index + MPS; MQ_STATE[sv] packs Qe and both next states (one
    load, as the decoder).  RENORME shifts A and C by the whole count at once (A's leading
    zeros), with a BYTEOUT wherever Figure C.7's bit loop would bring CT to 0.
    """
    sv = ctx[cx]
    st = MQ_STATE[sv]
    qe = st & 0xFFFF
    a -= qe
    if d == (sv & 1):
        if a & 0x8000:
            return a, c + qe, ct, bp, b
        if a < qe:
            a = qe
        else:
            c += qe
        ctx[cx] = (st >> 20) & 0x7F
    else:
        if a < qe:
            c += qe
        else:
            a = qe
        ctx[cx] = (st >> 27) & 0x7F
    n = leading_zeros(a) - 48  # A is in 1..0x7FFF here
    a <<= n
    while n >= ct:  # RENORME, Figure C.7
        c <<= ct
        n -= ct
        c, ct, bp, b = mq_byteout(buf, start, c, ct, bp, b)
    return a, c << n, ct - n, bp, b


@njit(inline='always', **JIT)
def mq_encode_flat(buf, start, ctx, cx, d, a, c, ct, bp, b):
    """mq_encode without branches on the decision (selects instead), for contexts whose
    decisions are close to random (zero coding, sign, refinement), where a branch on d
    mispredicts about every other time.  Same registers, same bytes.

    The sub-interval taken is the upper one (C += Qe, A -= Qe) or the lower one (A = Qe); the
    upper one exactly when the decision is the MPS and A - Qe >= Qe, or the LPS and A - Qe < Qe
    (the conditional exchange of C.2.5/C.2.6).  The state moves on (NMPS or NLPS) whenever
    A is renormalised: after an LPS, or after an MPS that leaves A - Qe < 0x8000.
    """
    sv = ctx[cx]
    st = MQ_STATE[sv]
    qe = st & 0xFFFF
    a1 = a - qe
    lps = np.int64(d != (sv & 1))
    upper = np.int64(a1 >= qe) ^ lps
    c += qe * upper
    a = qe + (a1 - qe) * upper
    renorm = lps | np.int64(a1 < 0x8000)
    ctx[cx] = ((st >> (20 + 7 * lps)) & 0x7F) * renorm + sv * (1 - renorm)
    n = leading_zeros(a) - 48  # 0 when A stays >= 0x8000
    a <<= n
    while n >= ct:  # RENORME, Figure C.7
        c <<= ct
        n -= ct
        c, ct, bp, b = mq_byteout(buf, start, c, ct, bp, b)
    return a, c << n, ct - n, bp, b


@njit(**JIT)
def mq_flush(buf, start, a, c, ct, bp, b):
    """FLUSH, T.800 C.2.9 (SETBITS, two BYTEOUTs, a final 0xFF dropped). Returns the length.

    PTERM (predictable termination, D.4.2) also uses this flush: any flush that the decoder
    reads correctly is allowed; only error-resilience checking would differ.
    """
    tempc = c + a
    c |= 0xFFFF
    if c >= tempc:
        c -= 0x8000
    c <<= ct
    c, ct, bp, b = mq_byteout(buf, start, c, ct, bp, b)
    c <<= ct
    c, ct, bp, b = mq_byteout(buf, start, c, ct, bp, b)
    if b != 0xFF:
        buf[bp] = b
        bp += 1
    return bp - start


@njit(**JIT)
def mq_trunc_length(buf, start, n, bp, b, c, a, ct):
    """Shortest prefix length of the final segment buf[start:start + n] that decodes every
    decision coded before the snapshot (bp, b, c, a, ct) was taken.

    In a scale where byte bp has exponent 0, the interval top is b + (c + a) * 2^-(27 - ct);
    a prefix ending at byte L - 1 (exponent e) followed by the 0xFF padding reads as
    value(prefix) + 2^-e.  The prefix works iff that is <= the top (T.800 C.3 decodes as if
    the code value were that supremum).  Byte exponents grow by 8, or 7 after 0xFF.
    """
    s = 48  # common scale 2^48: exponents used below stay < 48
    top = (b << s) + ((c + a) << (s - 27 + ct))
    if bp < start:
        acc = 0  # dummy byte before the segment, value 0
        e = 0
        prev_ff = False
    else:
        acc = np.int64(buf[bp]) << s
        e = 0
        prev_ff = buf[bp] == 0xFF
    end = bp + 1
    while end <= start + n and e <= 40:
        if acc + (np.int64(1) << (s - e)) <= top:
            return max(end - start, 0)
        if end == start + n:
            break
        e += 7 if prev_ff else 8
        acc += np.int64(buf[end]) << (s - e)
        prev_ff = buf[end] == 0xFF
        end += 1
    return n


@njit(**JIT)
def raw_enc_init(start):
    """Raw (bypass) writer for a segment at buf[start]. Returns (c, ct, bp): byte being
    built, free bits in it, index of the byte being built; int64 each, as :func:`mq_enc_init`."""
    return np.int64(0), np.int64(8), np.int64(start)


@njit(inline='always', **JIT)
def raw_encode(buf, d, c, ct, bp):
    """Write one raw bit, MSB first; after a 0xFF byte the next holds 7 bits (D.6)."""
    ct -= 1
    c |= d << ct
    if ct == 0:
        buf[bp] = c
        bp += 1
        ct = 7 if c == 0xFF else 8
        c = 0
    return c, ct, bp


@njit(**JIT)
def raw_pending_length(buf, start, c, ct, bp):
    """Bytes from start holding every raw bit written so far (truncation point of a raw pass)."""
    full = 8
    if bp > start and buf[bp - 1] == 0xFF:
        full = 7
    return bp - start + (1 if ct < full else 0)


@njit(**JIT)
def raw_flush(buf, start, c, ct, bp):
    """Terminate a raw segment: pad a partial byte with 0, 1, 0, ... (also the PTERM rule),
    drop a final 0xFF (the decoder's padding reads as 1-bits). Returns the length."""
    full = 8
    if bp > start and buf[bp - 1] == 0xFF:
        full = 7
    if ct < full:
        bit = 0
        while ct > 0:
            ct -= 1
            c |= bit << ct
            bit = 1 - bit
        buf[bp] = c
        bp += 1
    elif bp > start and buf[bp - 1] == 0xFF:
        bp -= 1
    return bp - start
