"""Tier-1 over all code-blocks of a frame (T.800 Annex D): per tile, one numba call
(:func:`cinegpu.encode.tier1.tile.encode_tile`) reads the blocks from the tile's flat
coefficient buffer with the decode plan's table and returns them as a
:class:`BlockTable` plus per-pass distortions; ``workers`` threads share a tile's blocks
(the kernel releases the GIL).

:func:`cut_blocks` and :func:`encode_blocks` (one :class:`Block` per code-block, through
:func:`cinegpu.encode.tier1.encode_codeblock`) are the plain reference the tests hold
the tile kernel to, byte for byte.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numba import njit

from cinegpu.decode import tier1 as t1

from .tier1 import encode_codeblock
from .tier1.tile import encode_tile

__all__ = ["Block", "BlockTable", "TierOnePool", "cut_blocks", "encode_blocks"]


@dataclass
class Block:
    """One coded code-block: bytes, cumulative byte length and distortion decrease
    (index units squared) after each pass, and K (magnitude bit-planes coded)."""

    coded: bytes
    rates: np.ndarray
    dists: np.ndarray
    num_bps: int

    @property
    def npasses(self) -> int:
        return len(self.rates)


@dataclass(frozen=True)
class BlockTable:
    """Many coded code-blocks as flat arrays, for the numba tier-2 and rate control.

    Block i's cumulative bytes after each pass are ``rates[rate_off[i]:rate_off[i + 1]]``
    and its coded bytes ``coded[coded_off[i]:coded_off[i + 1]]``; ``num_bps`` is K.
    A slice of blocks shares the flat arrays (offsets are not rebased)."""

    rates: np.ndarray  #: int64
    rate_off: np.ndarray  #: int64, blocks + 1
    coded: np.ndarray  #: uint8 (read-only: a view of the joined bytes)
    coded_off: np.ndarray  #: int64, blocks + 1
    num_bps: np.ndarray  #: int64

    @classmethod
    def of(cls, blocks: list[Block]) -> BlockTable:
        n = len(blocks)
        rates = [b.rates for b in blocks]
        coded = [b.coded for b in blocks]
        rate_off = np.zeros(n + 1, np.int64)
        coded_off = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter(map(len, rates), np.int64, n), out=rate_off[1:])
        np.cumsum(np.fromiter(map(len, coded), np.int64, n), out=coded_off[1:])
        flat = np.concatenate(rates).astype(np.int64) if rate_off[-1] else np.zeros(0, np.int64)
        return cls(flat, rate_off, np.frombuffer(b"".join(coded), np.uint8),
                   coded_off, np.array([b.num_bps for b in blocks], np.int64))

    @classmethod
    def join(cls, parts) -> tuple[BlockTable, np.ndarray]:
        """One table (and its dists) from (coded, coded_off, rates, rate_off, dists, num_bps)
        tuples of :func:`encode_tile`, blocks in order."""
        if len(parts) == 1:
            coded, coded_off, rates, rate_off, dists, num_bps = parts[0]
            coded.flags.writeable = False
            return cls(rates, rate_off, coded, coded_off, num_bps), dists
        coded_off, rate_off = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)]
        for p in parts:
            coded_off.append(p[1][1:] + coded_off[-1][-1])
            rate_off.append(p[3][1:] + rate_off[-1][-1])
        coded = np.concatenate([p[0] for p in parts])
        coded.flags.writeable = False
        return cls(np.concatenate([p[2] for p in parts]), np.concatenate(rate_off), coded,
                   np.concatenate(coded_off), np.concatenate([p[5] for p in parts])), \
            np.concatenate([p[4] for p in parts])

    def block(self, i: int, dists: np.ndarray) -> Block:
        """Block i as a :class:`Block` (``dists``: the table's per-pass distortions)."""
        r0, r1 = int(self.rate_off[i]), int(self.rate_off[i + 1])
        return Block(self.coded[self.coded_off[i]:self.coded_off[i + 1]].tobytes(),
                     self.rates[r0:r1].astype(np.int32), dists[r0:r1], int(self.num_bps[i]))

    def __len__(self) -> int:
        return self.num_bps.shape[0]

    def __getitem__(self, s: slice) -> BlockTable:
        a, b, step = s.indices(len(self))
        if step != 1:
            raise ValueError("a BlockTable slices contiguous runs of blocks only")
        b = max(a, b)
        return BlockTable(self.rates, self.rate_off[a:b + 1], self.coded,
                          self.coded_off[a:b + 1], self.num_bps[a:b])

    @property
    def npasses(self) -> np.ndarray:
        return np.diff(self.rate_off)

    def body_bytes(self, passes: np.ndarray) -> int:
        """Bytes of the first ``passes[i]`` passes of every block i, in total."""
        return int(_body_bytes(self.rates, self.rate_off, np.ascontiguousarray(passes, np.int64)))


@njit(cache=True, nogil=True)
def _body_bytes(rates, rate_off, passes):
    total = 0
    for i in range(passes.shape[0]):
        if passes[i] > 0:
            total += rates[rate_off[i] + passes[i] - 1]
    return total


def cut_blocks(flat: np.ndarray, cb: np.ndarray) -> list[np.ndarray]:
    """The coefficient arrays (h, w) of the plan rows ``cb``."""
    out = []
    for row in cb:
        w, h, s, o = (int(row[t1.CB_WIDTH]), int(row[t1.CB_HEIGHT]), int(row[t1.CB_STRIDE]),
                      int(row[t1.CB_OUT]))
        if w == 0 or h == 0:
            out.append(np.zeros((0, 0), np.int32))
            continue
        view = flat[o:o + (h - 1) * s + w]
        out.append(np.lib.stride_tricks.as_strided(view, (h, w), (s * view.itemsize,
                                                                 view.itemsize)).copy())
    return out


def encode_blocks(arrays: list[np.ndarray], orients: list[int], style: int) -> list[Block]:
    """Tier-1 encode each array (a worker's unit of work)."""
    out = []
    for a, o in zip(arrays, orients):
        if a.size == 0:
            out.append(Block(b"", np.zeros(0, np.int32), np.zeros(0), 0))
            continue
        coded, rates, dists, k = encode_codeblock(a, int(o), style)
        out.append(Block(coded.tobytes(), rates, dists, int(k)))
    return out


class TierOnePool:
    """``workers`` threads sharing each tile's code-blocks (1: in the calling thread).
    Use as a context manager or close()."""

    def __init__(self, workers: int | None = None):
        self.workers = max(1, int(workers or 1))
        self._pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None

    def run_tile(self, flat: np.ndarray, cb: np.ndarray, style: int, floor: int = 0) -> tuple:
        """:func:`encode_tile` of all blocks of a tile, down to bit-plane ``floor``: (coded,
        coded_off, rates, rate_off, dists, num_bps)."""
        runs = self.runs(cb)
        if runs is None:
            return encode_tile(flat, cb, style, floor=floor)
        futures = [self._pool.submit(encode_tile, flat, cb, style, np.arange(a, b), floor)
                   for a, b in runs]
        table, dists = BlockTable.join([f.result() for f in futures])
        return (table.coded, table.coded_off, table.rates, table.rate_off, dists,
                table.num_bps)

    def runs(self, cb: np.ndarray) -> list[tuple[int, int]] | None:
        """A tile's blocks (its plan's ``cb`` rows) cut into runs of about equal sample count,
        four per thread: (start, stop) pairs, or None to code them all in the calling thread
        (one worker, or fewer than 16 blocks)."""
        n = cb.shape[0]
        if self._pool is None or n < 16:
            return None
        area = np.cumsum(cb[:, t1.CB_WIDTH] * cb[:, t1.CB_HEIGHT], dtype=np.float64)
        cuts = np.searchsorted(area, np.linspace(0, area[-1], self.workers * 4 + 1)[1:-1])
        edges = np.unique(np.concatenate(([0], cuts, [n])))
        return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]

    def submit(self, fn, *args):
        """Run fn(*args) on one of the threads (a future); in the calling thread, already
        done, with one worker."""
        if self._pool is None:
            f: Future = Future()
            f.set_result(fn(*args))
            return f
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
