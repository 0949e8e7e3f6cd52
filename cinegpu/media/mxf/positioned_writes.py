"""Buffers written at given offsets of an open file by a few threads of their own.

A track file's frames are 1-6 MB each and their offsets are known as soon as their sizes are
(each follows the one before).  Copying them into the page cache is most of what the
writing thread of ``cinegpu master`` does; with several GPUs it writes a thousand 2K frames a
second and becomes the bound (on 4 GPUs the writing thread was mostly busy and coded frames
waited to be read back: docs/performance.md).  :class:`PositionedWrites` lets that thread only
hand each frame over: ``os.pwritev`` at the frame's offset runs in one of ``threads``
threads (the system call releases the GIL), at most ``depth`` frames waiting.

The error of a write (a full disk) is raised by the first :meth:`~PositionedWrites.put` after
that write has ended, or by :meth:`~PositionedWrites.drain`; :meth:`~PositionedWrites.close`
drops what waits.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["PositionedWrites", "pwrite_all"]


def pwrite_all(fd: int, parts, offset: int) -> None:
    """Write ``parts`` (bytes-like) back to back at byte ``offset`` of ``fd``, through
    ``os.pwritev`` until every byte is written (a short write is continued; a write of no
    bytes is an OSError)."""
    views = [memoryview(p).cast("B") for p in parts]
    views = [v for v in views if len(v)]
    while views:
        n = os.pwritev(fd, views, offset)
        if n <= 0:
            raise OSError(f"write of {sum(map(len, views))} bytes at offset {offset} "
                          "wrote nothing")
        offset += n
        while views and n >= len(views[0]):
            n -= len(views[0])
            views.pop(0)
        if n:
            views[0] = views[0][n:]


class PositionedWrites:
    """``put(parts, offset)``: ``parts`` written at ``offset`` of file descriptor ``fd`` by one
    of ``threads`` threads, with at most ``depth`` writes not yet done (``put`` waits for the
    oldest beyond that); ``drain()`` waits for all; ``close()`` ends the threads (writes not
    begun are dropped).  The caller keeps ``fd`` open until then."""

    def __init__(self, fd: int, threads: int = 3, depth: int = 8):
        if threads < 1 or depth < 1:
            raise ValueError(f"threads and depth must be at least 1, got {threads}, {depth}")
        self.fd, self.depth = fd, depth
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="cinegpu-pwrite")
        self._pending: deque[Future] = deque()

    def put(self, parts, offset: int) -> None:
        """Queue ``parts`` for ``offset``; the error of an earlier write that has ended (or
        that this one must wait for, ``depth`` being reached) raised here."""
        while self._pending and (self._pending[0].done() or len(self._pending) >= self.depth):
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(pwrite_all, self.fd, tuple(parts), offset))

    def drain(self) -> None:
        """Wait until every write put is done; the first error raised (the others waited for)."""
        error = None
        while self._pending:
            try:
                self._pending.popleft().result()
            except BaseException as exc:   # noqa: BLE001 (the first one is raised below)
                error = error or exc
        if error is not None:
            raise error

    def close(self) -> None:
        """Drop the writes not begun, wait for those running, end the threads."""
        for f in self._pending:
            f.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True, cancel_futures=True)
