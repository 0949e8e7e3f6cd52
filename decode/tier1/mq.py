"""MQ arithmetic decoder (T.800 C.3) and the raw bit reader of arithmetic-coding bypass (D.6).

The registers travel as plain integers: every function takes them and returns them updated,
so numba keeps them in machine registers (the C decoders keep them in locals the same way).

    a   interval register A (16 bits)
    c   code register C (Chigh:Clow, 32 bits in an int64)
    ct  bit counter CT
    bp  index into `data` of the byte last read (Figure C.18's BP)

The coded data of every segment is followed by two padding bytes 0xFF 0xFF.  BYTEIN (C.3.4)
treats 0xFF followed by a byte > 0x8F as a marker and then feeds 1-bits without advancing, so
the decoder never moves past the first padding byte and needs no end test.  The raw reader
stops at the same pair.
"""

import numpy as np
from numba import njit

from .tables import MQ_NLPS, MQ_NMPS, MQ_QE

JIT = dict(cache=True, nogil=True)


@njit(inline='always', **JIT)
def mq_bytein(data, c, ct, bp):
    """BYTEIN, T.800 Figure C.18. Returns (c, ct, bp)."""
    if data[bp] == 0xFF:
        if data[bp + 1] > 0x8F:
            c += 0xFF00
            ct = 8
        else:
            bp += 1
            c += np.int64(data[bp]) << 9
            ct = 7
    else:
        bp += 1
        c += np.int64(data[bp]) << 8
        ct = 8
    return c, ct, bp


@njit(**JIT)
def mq_init(data, start):
    """INITDEC, T.800 Figure C.19, for a segment starting at data[start]. Returns (a, c, ct, bp)."""
    bp = start
    c = np.int64(data[bp]) << 16
    c, ct, bp = mq_bytein(data, c, 0, bp)
    c <<= 7
    ct -= 7
    return 0x8000, c, ct, bp


@njit(inline='always', **JIT)
def mq_decode(data, ctx, cx, a, c, ct, bp):
    """DECODE, T.800 Figures C.20-C.22 (with the conditional exchanges), context ctx[cx].

    Returns (d, a, c, ct, bp), d the decoded decision (0 or 1).
    """
    sv = ctx[cx]
    qe = MQ_QE[sv]
    a -= qe
    if (c >> 16) < qe:
        # LPS_EXCHANGE (Figure C.21)
        if a < qe:
            d = sv & 1
            ctx[cx] = MQ_NMPS[sv]
        else:
            d = 1 - (sv & 1)
            ctx[cx] = MQ_NLPS[sv]
        a = qe
    else:
        c -= qe << 16
        if a & 0x8000:
            return sv & 1, a, c, ct, bp
        # MPS_EXCHANGE (Figure C.22)
        if a < qe:
            d = 1 - (sv & 1)
            ctx[cx] = MQ_NLPS[sv]
        else:
            d = sv & 1
            ctx[cx] = MQ_NMPS[sv]
    # RENORMD (Figure C.23)
    while True:
        if ct == 0:
            c, ct, bp = mq_bytein(data, c, ct, bp)
        a <<= 1
        c <<= 1
        ct -= 1
        if a & 0x8000:
            break
    return d, a, c, ct, bp


@njit(**JIT)
def raw_init(start):
    """Raw (bypass) reader for a segment starting at data[start]. Returns (c, ct, bp)."""
    return 0, 0, start


@njit(inline='always', **JIT)
def raw_decode(data, c, ct, bp):
    """One raw bit, T.800 D.6: bytes MSB first; after 0xFF the next byte holds 7 bits.

    `c` holds the current byte, `bp` the index of the next byte. Returns (d, c, ct, bp).
    """
    if ct == 0:
        if c == 0xFF:
            if data[bp] > 0x8F:  # marker or padding: feed 1-bits, do not advance
                c = 0xFF
                ct = 8
            else:
                c = np.int64(data[bp])
                bp += 1
                ct = 7
        else:
            c = np.int64(data[bp])
            bp += 1
            ct = 8
    ct -= 1
    return (c >> ct) & 1, c, ct, bp
