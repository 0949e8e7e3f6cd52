"""Code-blocks for the tier-1 decoder's tests: the styles and shapes every back end is swept
over, a block coded by the encoder's tier-1 (:func:`encoded_block`) in the decoder's input
layout (:func:`padded`: each segment followed by 0xFF 0xFF), a code-block table row
(:func:`block_row`), and the random and mutated inputs of the corrupt-input tests
(:func:`fuzz_cases`), which the numba decoder and the CUDA kernel must both survive.
"""

from __future__ import annotations

import numpy as np

from cinegpu.decode import tier1 as t1
from cinegpu.encode.tier1 import encode_codeblock, segments

#: every code-block style of T.800 A.6.1 alone, and the combinations that interact
STYLES = [0, t1.CBLK_BYPASS, t1.CBLK_RESET, t1.CBLK_TERMALL, t1.CBLK_VCAUSAL, t1.CBLK_PTERM,
          t1.CBLK_SEGSYM, t1.CBLK_BYPASS | t1.CBLK_TERMALL, t1.CBLK_BYPASS | t1.CBLK_VCAUSAL,
          t1.CBLK_RESET | t1.CBLK_TERMALL | t1.CBLK_SEGSYM, 0x3F]
#: block shapes: single samples, thin stripes both ways, the largest (64 x 64), odd ones
SHAPES = [(1, 1), (3, 17), (17, 3), (4, 1024), (1024, 4), (64, 64), (5, 64), (33, 31)]


def padded(coded, seg_lengths):
    """The decoder's input: each segment followed by 0xFF 0xFF."""
    parts, pos = [], 0
    for n in seg_lengths:
        parts.append(bytes(coded[pos:pos + n]) + b"\xff\xff")
        pos += n
    return np.frombuffer(b"".join(parts) or b"", np.uint8).copy()


def random_block(rng, shape, max_bits, density):
    """Signed int32 samples below 2^max_bits at mixed scales, ``density`` of them nonzero."""
    mag = rng.integers(0, 1 << max_bits, shape) >> rng.integers(0, max_bits, shape)
    v = np.where(rng.random(shape) < 0.5, -mag, mag) * (rng.random(shape) < density)
    return v.astype(np.int32)


def block_row(data=0, seg_first=0, seg_count=1, num_bps=8, orient=0, style=0, roi=0, out=0,
              w=8, h=8, stride=8):
    """A row of the tier-1 decoder's code-block table (``tier1.CB_*`` columns)."""
    return [data, seg_first, seg_count, num_bps, orient, style, roi, out, w, h, stride]


def encoded_block(style=0, shape=(8, 8), seed=0):
    """A random block coded by the encoder's tier-1 with ``style``: (the decoder's input as
    :func:`padded` makes it, segment lengths, passes, zero bit-planes, the block)."""
    rng = np.random.default_rng(seed)
    v = (rng.integers(-200, 200, shape) * (rng.random(shape) < 0.7)).astype(np.int32)
    coded, rates, _, num_bps = encode_codeblock(v, 0, style)
    lengths, passes = segments(rates, style)
    return padded(coded, lengths), lengths, passes, num_bps, v


def fuzz_cases(seed=0, count=300):
    """(coded, rows, seg_lengths, seg_passes, out_size) built from random and mutated input."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        style = int(rng.integers(0, 64))
        w, h = int(rng.integers(1, 65)), int(rng.integers(1, 65))
        nseg = int(rng.integers(0, 6))
        lengths = rng.integers(0, 200, nseg)
        coded = b"".join(rng.bytes(int(n)) + b"\xff\xff" for n in lengths)
        passes = rng.integers(0, 40, nseg)
        rows = [block_row(0, 0, nseg, int(rng.integers(0, 32)), int(rng.integers(0, 4)), style,
                          int(rng.integers(0, 4)), 0, w, h, w)]
        if i % 3 == 0:  # mutate one field of the row to something hostile
            col = int(rng.integers(0, t1.CB_COLUMNS))
            rows[0][col] = int(rng.choice([-1, -(1 << 40), 1 << 40, 5000, 70000, 31, 3]))
        cases.append((coded, rows, lengths, passes, w * h + int(rng.integers(-3, 3))))
    # mutated real streams
    for style in (0, t1.CBLK_BYPASS, t1.CBLK_TERMALL | t1.CBLK_BYPASS, t1.CBLK_SEGSYM, 0x3F):
        data, lengths, passes, num_bps, _ = encoded_block(style, (16, 16), style)
        for j in range(20):
            d = bytearray(data)
            for _ in range(3):
                d[int(rng.integers(0, len(d)))] = int(rng.integers(0, 256))
            p = passes.copy()
            p[int(rng.integers(0, len(p)))] += int(rng.integers(-1, 3))
            cases.append((bytes(d), [block_row(0, 0, len(lengths), num_bps, j % 4, style, 0, 0,
                                               16, 16, 16)], lengths, np.maximum(p, 0), 256))
    return cases
