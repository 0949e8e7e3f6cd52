"""Packets of one tile (T.800 B.9-B.10), written by numba kernels over flat arrays.

A packet (one precinct, one layer) is a header and a body.  The header
(B.10) is a bit string with bit stuffing (B.10.1, :mod:`.bits`): a non-empty
bit, then per subband and code-block in raster order: inclusion (tag tree
B.10.2 over the layer of first inclusion, or one bit once included, B.10.4),
the zero bit-planes (tag tree, on first inclusion, B.10.5), the number of new
passes (B.10.6, Table B.4) and the length of each new codeword segment part
in Lblock + floor(log2 passes) bits after the Lblock comma code (B.10.7).
The body is the code-blocks' new bytes in the same order.

:func:`write_packets` writes all packets of a tile, header then body, one
after another into one byte buffer, and returns where each packet ends and
how long its body is; :class:`TileCoder` holds a tile's tables between the
rounds of rate control.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cinegpu.decode.plan import PB_CB_FIRST, PB_NCBX, PB_NCBY, PB_NODES, TilePlan
from cinegpu.decode.tier1 import CBLK_BYPASS, CBLK_TERMALL

from ..blocks import BlockTable
from ..tier1 import pass_ends_segment
from .bits import LEAF, flush, put_bit, put_bits, start
from .tagtree import MAX_DEPTH, tree_build, tree_encode

__all__ = ["TileCoder", "write_packets"]

JIT = {"cache": True, "nogil": True}


@njit(**LEAF)
def _num_passes(bw, buf, n):
    """Codeword for the number of new passes, Table B.4."""
    if n == 1:
        put_bit(bw, buf, 0)
    elif n == 2:
        put_bits(bw, buf, 0b10, 2)
    elif n <= 5:
        put_bits(bw, buf, 0b1100 | (n - 3), 4)
    elif n <= 36:
        put_bits(bw, buf, 0b1111 << 5 | (n - 6), 9)
    else:
        put_bits(bw, buf, 0b111111111 << 7 | ((n - 37) & 0x7F), 16)


@njit(**LEAF)
def _floor_log2(n):
    k = 0
    while n > 1 and k < 63:
        n >>= 1
        k += 1
    return k


@njit(**LEAF)
def _bit_length(v):
    k = 0
    while v > 0 and k < 64:
        v >>= 1
        k += 1
    return k


@njit(**LEAF)
def _lengths(bw, buf, rates, r0, p0, p1, npasses, multi, style, lblock):
    """Lblock comma code and codeword segment lengths (B.10.7) of passes [p0, p1) of a
    block whose cumulative pass rates start at ``rates[r0]``.  Returns the new Lblock.

    One codeword segment (no BYPASS/TERMALL) ends only at the last pass included;
    otherwise each pass that ends a segment (D.6) closes one part."""
    need = -(1 << 20)
    first = p0
    for k in range(p0, p1):
        if k == p1 - 1 or (multi and pass_ends_segment(k, npasses, style)):
            length = rates[r0 + k] - (rates[r0 + first - 1] if first else 0)
            need = max(need, max(_bit_length(length), 1) - _floor_log2(k - first + 1))
            first = k + 1
    inc = max(0, need - lblock)
    for _ in range(inc):
        put_bit(bw, buf, 1)
    put_bit(bw, buf, 0)
    lblock += inc
    first = p0
    for k in range(p0, p1):
        if k == p1 - 1 or (multi and pass_ends_segment(k, npasses, style)):
            length = rates[r0 + k] - (rates[r0 + first - 1] if first else 0)
            put_bits(bw, buf, length, lblock + _floor_log2(k - first + 1))
            first = k + 1
    return lblock


@njit(**JIT)
def _trees(prec_pb, pb, passes, zbp, nodes):
    """Inclusion trees over the layer of first inclusion (the layer count when never
    included) and zero bit-plane trees of every precinct-band, with fresh state."""
    nlayers = passes.shape[0]
    incl = np.zeros(nodes, np.int64)
    zero = np.zeros(nodes, np.int64)
    for q in range(pb.shape[0]):
        w, h, first, base = pb[q, PB_NCBX], pb[q, PB_NCBY], pb[q, PB_CB_FIRST], pb[q, PB_NODES]
        if w * h == 0:
            continue
        for j in range(w * h):
            i = first + j
            fl = nlayers
            for layer in range(nlayers):
                if passes[layer, i] > 0:
                    fl = layer
                    break
            incl[base + j] = fl
            zero[base + j] = zbp[i]
        tree_build(incl, base, w, h)
        tree_build(zero, base, w, h)
    return incl, zero


@njit(**JIT)
def write_packets(order, prec_pb, pb, nodes, passes, zbp, rates, rate_off, coded, coded_off,
                  style, buf, packet_end, body_len):
    """Write the packets ``order`` ((precinct, layer) rows) of a tile into ``buf``.

    ``passes`` (layers, blocks): cumulative passes included up to each layer; ``zbp``
    zero bit-planes per block (M_b - K); block i's cumulative pass rates (bytes) are
    ``rates[rate_off[i]:rate_off[i + 1]]`` and its coded bytes start at
    ``coded[coded_off[i]]``.  Fills ``packet_end`` (byte offset after each packet) and
    ``body_len``; returns the bytes needed, which exceed ``buf`` when it was too short
    (nothing past its end is written).  An audited hot kernel: one loop over packets,
    blocks and segment parts; every loop is bounded by the tables' sizes."""
    incl_value, zbp_value = _trees(prec_pb, pb, passes, zbp, nodes)
    incl_low = np.zeros(nodes, np.int64)
    zbp_low = np.zeros(nodes, np.int64)
    incl_known = np.zeros(nodes, np.uint8)
    zbp_known = np.zeros(nodes, np.uint8)
    lblock = np.full(passes.shape[1], 3, np.int64)
    path = np.empty(MAX_DEPTH, np.int64)
    multi = (style & (CBLK_BYPASS | CBLK_TERMALL)) != 0
    bw = np.zeros(5, np.int64)
    pos = 0
    for k in range(order.shape[0]):
        prec, layer = order[k, 0], order[k, 1]
        q0, q1 = prec_pb[prec, 0], prec_pb[prec, 0] + prec_pb[prec, 1]
        start(bw, pos)
        empty = True
        for q in range(q0, q1):
            first = pb[q, PB_CB_FIRST]
            for i in range(first, first + pb[q, PB_NCBX] * pb[q, PB_NCBY]):
                if passes[layer, i] - (passes[layer - 1, i] if layer else 0) > 0:
                    empty = False
        if empty:
            put_bit(bw, buf, 0)
            pos = flush(bw, buf)
            packet_end[k] = pos
            body_len[k] = 0
            continue
        put_bit(bw, buf, 1)
        for q in range(q0, q1):
            w, h, first, base = pb[q, PB_NCBX], pb[q, PB_NCBY], pb[q, PB_CB_FIRST], pb[q, PB_NODES]
            for j in range(w * h):
                i = first + j
                p0 = passes[layer - 1, i] if layer else 0
                n = passes[layer, i] - p0
                if p0 == 0:  # B.10.4
                    tree_encode(bw, buf, incl_value, incl_low, incl_known, path, base, w, h,
                                j, layer + 1)
                else:
                    put_bit(bw, buf, 1 if n > 0 else 0)
                if n <= 0:
                    continue
                if p0 == 0:  # B.10.5: down to the leaf's value
                    tree_encode(bw, buf, zbp_value, zbp_low, zbp_known, path, base, w, h,
                                j, zbp[i] + 1)
                _num_passes(bw, buf, n)
                r0 = rate_off[i]
                lblock[i] = _lengths(bw, buf, rates, r0, p0, p0 + n, rate_off[i + 1] - r0,
                                     multi, style, lblock[i])
        pos = flush(bw, buf)
        body0 = pos
        for q in range(q0, q1):
            first = pb[q, PB_CB_FIRST]
            for i in range(first, first + pb[q, PB_NCBX] * pb[q, PB_NCBY]):
                p0 = passes[layer - 1, i] if layer else 0
                p1 = passes[layer, i]
                if p1 <= p0:
                    continue
                r0 = rate_off[i]
                a0 = rates[r0 + p0 - 1] if p0 else 0
                a1 = rates[r0 + p1 - 1]
                if pos + a1 - a0 <= buf.shape[0]:
                    src = coded_off[i] + a0 - pos
                    for j in range(pos, pos + a1 - a0):
                        buf[j] = coded[src + j]
                pos += a1 - a0
        packet_end[k] = pos
        body_len[k] = pos - body0
    return pos


class TileCoder:
    """Packets of one tile for a given choice of passes per block and layer.

    ``table``: tier-1 results of the tile's blocks in plan.cb order; the plan's
    CB_NUM_BPS column holds M_b (E-2) in a fresh plan."""

    def __init__(self, plan: TilePlan, table: BlockTable, style: int):
        self.prec_pb = np.ascontiguousarray(plan.prec_pb, np.int64)
        self.pb = np.ascontiguousarray(plan.pb, np.int64)
        self.nodes = int(plan.nodes)
        self.table = table
        self.style = int(style)
        mb = plan.cb[:, 3].astype(np.int64)
        self.zbp = np.maximum(mb - table.num_bps, 0)

    def room(self, passes: np.ndarray, npackets: int) -> int:
        """Bytes the packets of ``passes`` take at most, in practice: the bodies exactly,
        headers at 8 + 4 per layer bytes a block, 5 per included pass (a segment length
        of up to 40 bits), 2 per packet (a one-bit header, padding, stuffing)."""
        nlayers, nblocks = passes.shape
        if nblocks == 0:
            return 2 * npackets + 64
        return (self.table.body_bytes(passes[-1]) + (8 + 4 * nlayers) * nblocks
                + 5 * int(passes[-1].sum()) + 2 * npackets + 64)

    def write(self, passes: np.ndarray, order: np.ndarray, capacity: int | None = None):
        """(data, packet_end, body_len) of the packets ``order`` ((precinct, layer) rows):
        the tile's packets back to back in ``data`` (uint8), the byte offset after each
        packet and the length of its body.

        ``passes``: (layers, nblocks) cumulative passes included up to each layer.
        ``capacity``: the first buffer's size (default :meth:`room`); when the packets
        need more, they are written again into a buffer of the size measured."""
        t = self.table
        passes = np.ascontiguousarray(passes, np.int64)
        order = np.ascontiguousarray(order, np.int64).reshape(-1, 2)
        ends = np.empty(order.shape[0], np.int64)
        body = np.empty(order.shape[0], np.int64)
        size = self.room(passes, order.shape[0]) if capacity is None else int(capacity)
        for _ in range(2):  # a second run only when the first buffer was too short
            buf = np.empty(size, np.uint8)
            n = write_packets(order, self.prec_pb, self.pb, self.nodes, passes, self.zbp,
                              t.rates, t.rate_off, t.coded, t.coded_off, self.style, buf,
                              ends, body)
            if n <= size:
                return buf[:n], ends, body
            size = int(n)
        raise AssertionError("tier-2: the packets outgrew the size they were measured at")

    def packets(self, passes: np.ndarray, order: np.ndarray,
                capacity: int | None = None) -> list[tuple[int, bytes, bytes]]:
        """(precinct, header, body) of every packet in ``order`` (as :meth:`write`)."""
        data, ends, body = self.write(passes, order, capacity)
        starts = np.concatenate(([0], ends[:-1]))
        out = []
        for (prec, _), a, b, m in zip(np.asarray(order).reshape(-1, 2), starts, ends, body):
            out.append((int(prec), data[a:b - m].tobytes(), data[b - m:b].tobytes()))
        return out
