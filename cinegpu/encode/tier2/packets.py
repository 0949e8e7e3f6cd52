"""Packets of one tile (T.800 B.9-B.10), written by numba kernels over flat arrays.

A packet (one precinct, one layer) is a header and a body.  The header
(B.10) is a bit string with bit stuffing (B.10.1, :mod:`.bits`): a non-empty
bit, then per subband and code-block in raster order: inclusion (tag tree
B.10.2 over the layer of first inclusion, or one bit once included, B.10.4),
the zero bit-planes (tag tree, on first inclusion, B.10.5), the number of new
passes (B.10.6, Table B.4) and the length of each new codeword segment part
in Lblock + floor(log2 passes) bits after the Lblock comma code (B.10.7).
The body is the code-blocks' new bytes in the same order.

:func:`write_headers` writes the headers of all packets of a tile in one
compiled call and locates each body in the tile's coded bytes as a few runs
(blocks that lie end to end merged), so no body byte is copied until the
codestream is joined: :class:`TilePackets` hands the packets out as views to
join (or copies them with :func:`gather_packets`).  :class:`TileCoder` holds
a tile's tables between the rounds of rate control, which need only lengths.
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

__all__ = ["TileCoder", "TilePackets", "gather_packets", "write_headers"]

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
def _trees(order, prec_pb, pb, passes, zbp, nodes):
    """Inclusion trees over the layer of first inclusion (the layer count when never
    included) and zero bit-plane trees of every precinct-band of the precincts that
    ``order`` names, with fresh state (the other precincts' nodes are left at 0)."""
    nlayers = passes.shape[0]
    incl = np.zeros(nodes, np.int64)
    zero = np.zeros(nodes, np.int64)
    named = np.zeros(prec_pb.shape[0], np.uint8)
    for k in range(order.shape[0]):
        named[order[k, 0]] = 1
    for prec in range(prec_pb.shape[0]):
        if named[prec] == 0:
            continue
        for q in range(prec_pb[prec, 0], prec_pb[prec, 0] + prec_pb[prec, 1]):
            w, h = pb[q, PB_NCBX], pb[q, PB_NCBY]
            first, base = pb[q, PB_CB_FIRST], pb[q, PB_NODES]
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


@njit(**LEAF)
def _block_bytes(rates, rate_off, i, p0, p1):
    """(first, last) byte of passes [p0, p1) of block i within its coded bytes."""
    r0 = rate_off[i]
    return (rates[r0 + p0 - 1] if p0 else 0), rates[r0 + p1 - 1]


@njit(**JIT)
def write_headers(order, prec_pb, pb, nodes, passes, zbp, rates, rate_off, coded_off, style,
                  hbuf, head_end, body_len, runs, run_end):
    """The headers of the packets ``order`` ((precinct, layer) rows) of a tile, back to back
    in ``hbuf``, and where their bodies' bytes lie in the tile's coded bytes.

    ``passes`` (layers, blocks): cumulative passes included up to each layer; ``zbp``
    zero bit-planes per block (M_b - K); block i's cumulative pass rates (bytes) are
    ``rates[rate_off[i]:rate_off[i + 1]]`` and its coded bytes start at ``coded_off[i]``.
    Fills, per packet k: ``head_end[k]`` (byte offset in ``hbuf`` after its header),
    ``body_len[k]`` (bytes) and ``run_end[k]`` (runs after it); each run is a (start,
    length) row of ``runs``, in coded bytes: a packet's body is its runs in order, the new
    bytes of consecutive blocks that lie end to end in the coded bytes merged into one
    (``runs`` needs a row per block and layer at most).  Returns the header bytes needed,
    which exceed ``hbuf`` when it was too short (nothing past its end is written).

    An audited hot kernel: one loop over packets, blocks and segment parts; every loop is
    bounded by the tables' sizes."""
    incl_value, zbp_value = _trees(order, prec_pb, pb, passes, zbp, nodes)
    incl_low = np.zeros(nodes, np.int64)
    zbp_low = np.zeros(nodes, np.int64)
    incl_known = np.zeros(nodes, np.uint8)
    zbp_known = np.zeros(nodes, np.uint8)
    lblock = np.full(passes.shape[1], 3, np.int64)
    path = np.empty(MAX_DEPTH, np.int64)
    multi = (style & (CBLK_BYPASS | CBLK_TERMALL)) != 0
    bw = np.zeros(5, np.int64)
    pos = 0
    nruns = 0
    for k in range(order.shape[0]):
        prec, layer = order[k, 0], order[k, 1]
        q0, q1 = prec_pb[prec, 0], prec_pb[prec, 0] + prec_pb[prec, 1]
        start(bw, pos)
        body = 0
        run_stop = -1           # coded byte after the packet's last run
        for q in range(q0, q1):
            first = pb[q, PB_CB_FIRST]
            for i in range(first, first + pb[q, PB_NCBX] * pb[q, PB_NCBY]):
                p0 = passes[layer - 1, i] if layer else 0
                p1 = passes[layer, i]
                if p1 <= p0:
                    continue
                a0, a1 = _block_bytes(rates, rate_off, i, p0, p1)
                if a1 <= a0:
                    continue
                at = coded_off[i] + a0
                if at == run_stop:
                    runs[nruns - 1, 1] += a1 - a0
                else:
                    runs[nruns, 0] = at
                    runs[nruns, 1] = a1 - a0
                    nruns += 1
                run_stop = coded_off[i] + a1
                body += a1 - a0
        run_end[k] = nruns
        body_len[k] = body
        empty = True
        for q in range(q0, q1):
            first = pb[q, PB_CB_FIRST]
            for i in range(first, first + pb[q, PB_NCBX] * pb[q, PB_NCBY]):
                if passes[layer, i] - (passes[layer - 1, i] if layer else 0) > 0:
                    empty = False
        if empty:
            put_bit(bw, hbuf, 0)
            pos = flush(bw, hbuf)
            head_end[k] = pos
            continue
        put_bit(bw, hbuf, 1)
        for q in range(q0, q1):
            w, h, first, base = pb[q, PB_NCBX], pb[q, PB_NCBY], pb[q, PB_CB_FIRST], pb[q, PB_NODES]
            for j in range(w * h):
                i = first + j
                p0 = passes[layer - 1, i] if layer else 0
                n = passes[layer, i] - p0
                if p0 == 0:  # B.10.4
                    tree_encode(bw, hbuf, incl_value, incl_low, incl_known, path, base, w, h,
                                j, layer + 1)
                else:
                    put_bit(bw, hbuf, 1 if n > 0 else 0)
                if n <= 0:
                    continue
                if p0 == 0:  # B.10.5: down to the leaf's value
                    tree_encode(bw, hbuf, zbp_value, zbp_low, zbp_known, path, base, w, h,
                                j, zbp[i] + 1)
                _num_passes(bw, hbuf, n)
                r0 = rate_off[i]
                lblock[i] = _lengths(bw, hbuf, rates, r0, p0, p0 + n, rate_off[i + 1] - r0,
                                     multi, style, lblock[i])
        pos = flush(bw, hbuf)
        head_end[k] = pos
    return pos


@njit(**LEAF)
def _copy(out, at, src, a, n):
    """out[at:at + n] = src[a:a + n], over views so that the loop has no negative-index
    test and compiles to a block copy (a byte loop with one runs at ~1 GB/s)."""
    dst = out[at:at + n]
    s = src[a:a + n]
    for j in range(n):
        dst[j] = s[j]


@njit(**LEAF)
def gather_packets(hbuf, head_end, runs, run_end, coded, k0, k1, out):
    """Packets k0..k1-1 (header, then body runs) back to back into ``out``; returns the
    bytes written, or -1 (nothing past ``out`` or its sources touched) where a header or a
    run does not fit ``out`` or lies outside ``hbuf`` / ``coded``."""
    at = 0
    h = head_end[k0 - 1] if k0 else 0
    r = run_end[k0 - 1] if k0 else 0
    for k in range(k0, k1):
        n = head_end[k] - h
        if n < 0 or h < 0 or head_end[k] > hbuf.shape[0] or at + n > out.shape[0]:
            return -1
        _copy(out, at, hbuf, h, n)
        at += n
        h = head_end[k]
        for j in range(r, run_end[k]):
            a, n = runs[j, 0], runs[j, 1]
            if n < 0 or a < 0 or a + n > coded.shape[0] or at + n > out.shape[0]:
                return -1
            _copy(out, at, coded, a, n)
            at += n
        r = run_end[k]
    return at


class TilePackets:
    """A tile's packets as written by :func:`write_headers`: headers in ``hbuf``, bodies as
    runs of the tile's coded bytes, nothing copied yet.  ``ends``: the byte offset after
    each packet in the tile's packet stream; ``body_len``: each packet's body (bytes)."""

    def __init__(self, hbuf, head_end, body_len, runs, run_end, coded):
        self.hbuf, self.head_end, self.body_len = hbuf, head_end, body_len
        self.runs, self.run_end, self.coded = runs, run_end, coded
        self.ends = np.cumsum(np.diff(head_end, prepend=0) + body_len)

    def size(self, k0: int, k1: int) -> int:
        """Bytes of packets k0..k1-1."""
        return int(self.ends[k1 - 1] - (self.ends[k0 - 1] if k0 else 0)) if k1 > k0 else 0

    def data(self, k0: int = 0, k1: int | None = None) -> np.ndarray:
        """Packets k0..k1-1 (default: all) copied back to back (uint8)."""
        k1 = self.ends.shape[0] if k1 is None else k1
        out = np.empty(self.size(k0, k1), np.uint8)
        self.into(out, 0, k0, k1)
        return out

    def into(self, out: np.ndarray, at: int, k0: int, k1: int) -> int:
        """Packets k0..k1-1 copied back to back into ``out`` (uint8) from byte ``at``, in one
        compiled call that releases the GIL (a 4K frame's packets are thousands of pieces,
        which a Python loop over views made the encoder threads' largest share of the GIL);
        returns the byte after them."""
        n = self.size(k0, k1)
        if n and gather_packets(self.hbuf, self.head_end, self.runs, self.run_end, self.coded,
                                k0, k1, out[at:at + n]) != n:
            raise AssertionError("tier-2: packets do not add up to their measured size")
        return at + n


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
        return self.table.body_bytes(passes[-1]) + self.header_room(passes, npackets) \
            if passes.shape[1] else 2 * npackets + 64

    @staticmethod
    def header_room(passes: np.ndarray, npackets: int) -> int:
        """:meth:`room` less the bodies: the packet headers' bytes at most, in practice."""
        nlayers, nblocks = passes.shape
        return (8 + 4 * nlayers) * nblocks + 5 * int(passes[-1].sum()) + 2 * npackets + 64

    def tile_packets(self, passes: np.ndarray, order: np.ndarray,
                     capacity: int | None = None) -> TilePackets:
        """The packets ``order`` ((precinct, layer) rows) as a :class:`TilePackets`: their
        headers written, their bodies located in the table's coded bytes.

        ``passes``: (layers, nblocks) cumulative passes included up to each layer.
        ``capacity``: the header buffer's first size (default :meth:`header_room`); when
        the headers need more, they are written again into a buffer of the size measured."""
        t = self.table
        passes = np.ascontiguousarray(passes, np.int64)
        order = np.ascontiguousarray(order, np.int64).reshape(-1, 2)
        npk = order.shape[0]
        head_end = np.empty(npk, np.int64)
        body = np.empty(npk, np.int64)
        run_end = np.empty(npk, np.int64)
        runs = np.empty((passes.shape[0] * passes.shape[1], 2), np.int64)
        size = self.header_room(passes, npk) if capacity is None else int(capacity)
        for _ in range(2):  # a second run only when the first buffer was too short
            hbuf = np.empty(size, np.uint8)
            n = write_headers(order, self.prec_pb, self.pb, self.nodes, passes, self.zbp,
                              t.rates, t.rate_off, t.coded_off, self.style, hbuf, head_end,
                              body, runs, run_end)
            if n <= size:
                return TilePackets(hbuf[:n], head_end, body, runs, run_end, t.coded)
            size = int(n)
        raise AssertionError("tier-2: the headers outgrew the size they were measured at")

    def write(self, passes: np.ndarray, order: np.ndarray, capacity: int | None = None):
        """(data, packet_end, body_len) of the packets ``order`` (as :meth:`tile_packets`):
        the tile's packets back to back in ``data`` (uint8), the byte offset after each
        packet and the length of its body."""
        tp = self.tile_packets(passes, order, capacity)
        return tp.data(), tp.ends, tp.body_len

    def packets(self, passes: np.ndarray, order: np.ndarray,
                capacity: int | None = None) -> list[tuple[int, bytes, bytes]]:
        """(precinct, header, body) of every packet in ``order`` (as :meth:`write`)."""
        data, ends, body = self.write(passes, order, capacity)
        starts = np.concatenate(([0], ends[:-1]))
        out = []
        for (prec, _), a, b, m in zip(np.asarray(order).reshape(-1, 2), starts, ends, body):
            out.append((int(prec), data[a:b - m].tobytes(), data[b - m:b].tobytes()))
        return out
