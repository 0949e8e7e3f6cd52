"""Tier-2 encoding: packets of T.800 B.9-B.10.

A packet (one precinct, one layer) is a header and a body.  The header
(B.10) is a bit string with bit stuffing (B.10.1: after a 0xFF byte only 7
bits go into the next byte): a non-empty bit, then per subband and
code-block in raster order: inclusion (tag tree B.10.2 over the layer of
first inclusion, or one bit once included), the zero bit-planes (tag tree,
on first inclusion, B.10.5), the number of new passes (B.10.6, Table B.4)
and the length of each new codeword segment part in Lblock + floor(log2
passes) bits after the Lblock comma code (B.10.7).  The body is the
code-blocks' new bytes in the same order.
"""

from __future__ import annotations

import numpy as np

from cinegpu.decode.plan import PB_CB_FIRST, PB_NCBX, PB_NCBY, TilePlan

from cinegpu.decode.tier1 import CBLK_BYPASS, CBLK_TERMALL

from .tier1 import pass_ends_segment

__all__ = ["BitWriter", "TagTree", "TileCoder"]


class BitWriter:
    """Packet-header bits, MSB first, with the bit stuffing of B.10.1."""

    def __init__(self):
        self.out = bytearray()
        self.cur = 0
        self.n = 0
        self.limit = 8

    def bit(self, b: int) -> None:
        self.cur = (self.cur << 1) | b
        self.n += 1
        if self.n == self.limit:
            self.out.append(self.cur)
            self.limit = 7 if self.cur == 0xFF else 8
            self.cur = 0
            self.n = 0

    def bits(self, value: int, count: int) -> None:
        bit = self.bit
        for i in range(count - 1, -1, -1):
            bit((value >> i) & 1)

    def flush(self) -> bytes:
        """Pad the last byte with zeros; a final 0xFF is followed by a stuffed 0x00."""
        if self.n:
            self.out.append(self.cur << (self.limit - self.n))
        if self.out and self.out[-1] == 0xFF:
            self.out.append(0)
        return bytes(self.out)


class TagTree:
    """Tag tree encoder (B.10.2) over w x h leaves with the given values."""

    def __init__(self, values: np.ndarray):
        h, w = values.shape
        self.levels = []  # (w, h, value, low, known) per level, leaves first
        v = values.astype(np.int64)
        while True:
            h, w = v.shape
            self.levels.append([w, h, v.ravel().copy(), np.zeros(w * h, np.int64),
                                np.zeros(w * h, bool)])
            if w == 1 and h == 1:
                break
            ph, pw = (h + 1) // 2, (w + 1) // 2
            pad = np.full((ph * 2, pw * 2), np.iinfo(np.int64).max, np.int64)
            pad[:h, :w] = v
            v = pad.reshape(ph, 2, pw, 2).min(axis=(1, 3))

    def encode(self, bw: BitWriter, x: int, y: int, threshold: int) -> None:
        """Code what a decoder needs to tell whether leaf (x, y) has value < threshold."""
        path = []
        for lv in self.levels:
            path.append((lv, y * lv[0] + x))
            x, y = x >> 1, y >> 1
        low = 0
        for lv, i in reversed(path):
            value, lows, known = lv[2], lv[3], lv[4]
            if low > lows[i]:
                lows[i] = low
            else:
                low = lows[i]
            while low < threshold:
                if low >= value[i]:
                    if not known[i]:
                        bw.bit(1)
                        known[i] = True
                    break
                bw.bit(0)
                low += 1
            lows[i] = low


def _num_passes(bw: BitWriter, n: int) -> None:
    """Codeword for the number of new passes, Table B.4."""
    if n == 1:
        bw.bit(0)
    elif n == 2:
        bw.bits(0b10, 2)
    elif n <= 5:
        bw.bits(0b11, 2)
        bw.bits(n - 3, 2)
    elif n <= 36:
        bw.bits(0b1111, 4)
        bw.bits(n - 6, 5)
    else:
        bw.bits(0b111111111, 9)
        bw.bits(n - 37, 7)


def _floor_log2(n: int) -> int:
    return n.bit_length() - 1


class TileCoder:
    """Packets of one tile for a given choice of passes per block and layer.

    ``blocks``: tier-1 results in plan.cb order; ``mb``: M_b per block (E-2).
    """

    def __init__(self, plan: TilePlan, blocks, style: int):
        self.plan = plan
        self.blocks = blocks
        self.style = style
        self.multi_segment = bool(style & (CBLK_BYPASS | CBLK_TERMALL))
        self.mb = plan.cb[:, 3].astype(np.int64)  # CB_NUM_BPS holds M_b in a fresh plan

    def packets(self, passes: np.ndarray, order: np.ndarray) -> list[tuple[int, bytes, bytes]]:
        """(precinct, header, body) of every packet in ``order`` ((precinct, layer) rows).

        ``passes``: (layers, nblocks) cumulative passes included up to each layer.
        """
        plan = self.plan
        nlayers = passes.shape[0]
        included = passes > 0
        first_layer = np.where(included.any(axis=0), included.argmax(axis=0), nlayers)
        lblock = np.full(len(self.blocks), 3, np.int64)
        trees: dict[int, tuple[TagTree, TagTree]] = {}
        out = []
        for prec, layer in order:
            prec, layer = int(prec), int(layer)
            pb0, npb = plan.prec_pb[prec]
            bands = []
            for pbi in range(int(pb0), int(pb0 + npb)):
                row = plan.pb[pbi]
                nx, ny, first = int(row[PB_NCBX]), int(row[PB_NCBY]), int(row[PB_CB_FIRST])
                if nx * ny:
                    bands.append((pbi, nx, ny, first))
            out.append((prec, *self._packet(bands, layer, passes, first_layer, lblock, trees)))
        return out

    def _trees(self, trees, pbi, nx, ny, first, first_layer):
        if pbi not in trees:
            idx = np.arange(first, first + nx * ny)
            zero = np.array([self.mb[i] - self.blocks[i].num_bps for i in idx], np.int64)
            trees[pbi] = (TagTree(first_layer[idx].reshape(ny, nx)),
                          TagTree(np.maximum(zero, 0).reshape(ny, nx)))
        return trees[pbi]

    def _packet(self, bands, layer, passes, first_layer, lblock, trees):
        prev = passes[layer - 1] if layer else None
        cur = passes[layer]
        news = [(i, int(cur[i]) - (int(prev[i]) if prev is not None else 0))
                for _, nx, ny, first in bands for i in range(first, first + nx * ny)]
        bw = BitWriter()
        if not any(n > 0 for _, n in news):
            bw.bit(0)
            return bw.flush(), b""
        bw.bit(1)
        body = []
        for pbi, nx, ny, first in bands:
            incl, zbp = self._trees(trees, pbi, nx, ny, first, first_layer)
            for j in range(nx * ny):
                i = first + j
                x, y = j % nx, j // nx
                start = int(prev[i]) if prev is not None else 0
                n = int(cur[i]) - start
                if start == 0:
                    incl.encode(bw, x, y, layer + 1)  # B.10.4
                else:
                    bw.bit(1 if n > 0 else 0)
                if n <= 0:
                    continue
                if start == 0:
                    zbp.encode(bw, x, y, 1 << 30)  # B.10.5
                _num_passes(bw, n)
                self._lengths(bw, i, start, start + n, lblock, body)
        return bw.flush(), b"".join(body)

    def _lengths(self, bw, i, p0, p1, lblock, body):
        """Lblock comma code and codeword segment lengths (B.10.7) of passes [p0, p1)."""
        blk = self.blocks[i]
        rates = blk.rates
        a0 = int(rates[p0 - 1]) if p0 else 0
        if not self.multi_segment:  # one codeword segment: terminated only at the end
            pieces = [(int(rates[p1 - 1]) - a0, p1 - p0)]
        else:
            pieces = []
            start, npasses = p0, len(rates)
            for k in range(p0, p1):
                if k == p1 - 1 or pass_ends_segment(k, npasses, self.style):
                    a = int(rates[start - 1]) if start else 0
                    pieces.append((int(rates[k]) - a, k - start + 1))
                    start = k + 1
        need = max(max(length.bit_length(), 1) - _floor_log2(n) for length, n in pieces)
        inc = max(0, need - int(lblock[i]))
        for _ in range(inc):
            bw.bit(1)
        bw.bit(0)
        lblock[i] += inc
        for length, n in pieces:
            bw.bits(length, int(lblock[i]) + _floor_log2(n))
        body.append(blk.coded[a0:int(rates[p1 - 1])])
