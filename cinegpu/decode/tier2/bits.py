"""The packet-header bit reader (T.800 B.10.1), for numba.

State lives in a small int64 array ``bs``: [position, end, byte buffer,
bits left in the buffer, overrun flag]. After a 0xFF byte only 7 bits of
the next byte are used (bit stuffing). Reading past ``end`` yields 0 bits
and sets the overrun flag, which the caller turns into an error or a stop.
"""

from __future__ import annotations

import numpy as np
from numba import njit

POS, END, BUF, CT, OVERRUN = 0, 1, 2, 3, 4


def new_state() -> np.ndarray:
    return np.zeros(5, np.int64)


@njit(cache=True, nogil=True, inline="always")
def start(bs, pos, end):
    bs[POS] = pos
    bs[END] = end
    bs[BUF] = 0
    bs[CT] = 0
    bs[OVERRUN] = 0


@njit(cache=True, nogil=True, inline="always")
def _byte_in(bs, data):
    prev_ff = bs[BUF] == 0xFF
    if bs[POS] < bs[END]:
        bs[BUF] = data[bs[POS]]
        bs[POS] += 1
    else:
        bs[BUF] = 0
        bs[OVERRUN] = 1
    bs[CT] = 7 if prev_ff else 8


@njit(cache=True, nogil=True, inline="always")
def read_bit(bs, data):
    if bs[CT] == 0:
        _byte_in(bs, data)
    bs[CT] -= 1
    return (bs[BUF] >> bs[CT]) & 1


@njit(cache=True, nogil=True, _nrt=False)
def read_bits(bs, data, n):
    v = 0
    for _ in range(n):
        v = (v << 1) | read_bit(bs, data)
    return v


@njit(cache=True, nogil=True, inline="always")
def align(bs):
    """End of a packet header: skip the stuffed byte after a final 0xFF.

    Returns the position of the first byte after the header.
    """
    if bs[BUF] == 0xFF:
        # the next byte's first bit is a stuffed 0 and belongs to the header
        if bs[POS] < bs[END]:
            bs[POS] += 1
    return bs[POS]
