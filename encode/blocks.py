"""Tier-1 over all code-blocks of a frame (T.800 Annex D), in this process or
spread over worker processes (spawn context: numba and CUDA are not fork-safe).

A code-block is cut out of its tile's flat coefficient buffer with the
decode plan's table (CB_OUT, CB_WIDTH, CB_HEIGHT, CB_STRIDE) and coded by
:func:`cinegpu.encode.tier1.encode_codeblock`.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from cinegpu.decode import tier1 as t1

from .tier1 import encode_codeblock

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
        passes = np.asarray(passes, np.int64)
        kept = passes > 0
        return int(self.rates[self.rate_off[:-1][kept] + passes[kept] - 1].sum())


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


def _warm() -> int:
    encode_blocks([np.ones((4, 4), np.int32)], [0], 0)
    return 0


class TierOnePool:
    """``workers`` processes (1: in this process).  Use as a context manager or close()."""

    def __init__(self, workers: int | None = None):
        self.workers = max(1, int(workers or 1))
        self._pool = None
        if self.workers > 1:
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
            list(self._pool.map(lambda_free_warm, range(self.workers)))

    def run(self, arrays: list[np.ndarray], orients: list[int], style: int) -> list[Block]:
        if self._pool is None or len(arrays) < 16:
            return encode_blocks(arrays, orients, style)
        # chunks of about equal sample count, a few per worker
        sizes = np.array([a.size for a in arrays], np.float64)
        nchunks = self.workers * 4
        bounds = np.searchsorted(np.cumsum(sizes), np.linspace(0, sizes.sum(), nchunks + 1)[1:-1])
        edges = [0, *sorted(set(int(b) for b in bounds)), len(arrays)]
        futures = [self._pool.submit(encode_blocks, arrays[a:b], orients[a:b], style)
                   for a, b in zip(edges[:-1], edges[1:]) if b > a]
        out: list[Block] = []
        for f in futures:
            out.extend(f.result())
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def lambda_free_warm(_):
    """Load the numba kernels in a worker (module-level so spawn can pickle it)."""
    return _warm()
