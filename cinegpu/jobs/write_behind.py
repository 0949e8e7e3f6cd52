"""Mastering's frames written by a thread of their own, in the order given.

The thread that takes the coded frames from the encoders (:mod:`.frame_coders`) only hands
each one over (:meth:`WriteBehind.put`); the track file's writing (a codestream's main header
read again, the KLV, the file write of 1-6 MB) runs beside it.  The file write releases the
GIL, so the one thread no longer receives, submits and writes every frame in turn (with
several GPUs, hundreds of frames a second).

The first error of the writing thread is raised by the next :meth:`~WriteBehind.put` (or by
:meth:`~WriteBehind.finish`); frames put after it are dropped, not written.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable

__all__ = ["WriteBehind"]

_END = object()


class WriteBehind:
    """``write(data)`` called by a thread of its own for each ``put(data)``, in order, with at
    most ``depth`` frames waiting; ``finish()`` (all written) or ``stop()`` (a failure: what
    waits is dropped) ends it.  ``first_s``/``last_s``: :func:`time.perf_counter` when the
    first and the last frame were written; ``cpu_s``: the writing thread's CPU seconds."""

    def __init__(self, write: Callable[[object], None], depth: int = 8):
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        self._write = write
        self._queue: queue.Queue = queue.Queue(depth)
        self._error: BaseException | None = None
        self.first_s: float | None = None
        self.last_s: float | None = None
        self.cpu_s = 0.0
        self._thread = threading.Thread(target=self._run, name="cinegpu-write", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cpu0 = time.thread_time()
        while True:
            data = self._queue.get()
            if data is _END:
                break
            if self._error is not None:
                continue                  # after a failure: drain, so put() never blocks
            try:
                self._write(data)
            except BaseException as exc:  # raised in the putting thread
                self._error = exc
                continue
            self.last_s = time.perf_counter()
            if self.first_s is None:
                self.first_s = self.last_s
        self.cpu_s = time.thread_time() - cpu0

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, data: bytes) -> None:
        """Queue ``data`` to be written (waits while ``depth`` frames wait); the writing
        thread's error, if it has had one, raised here."""
        self._raise()
        self._queue.put(data)

    def finish(self) -> None:
        """Wait until every frame put is written; the writing thread's error raised here."""
        self._queue.put(_END)
        self._thread.join()
        self._raise()

    def stop(self) -> None:
        """After a failure elsewhere: drop the frames not yet written, wait for the one being
        written, end the thread (its own error is not raised)."""
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        self._queue.put(_END)
        self._thread.join()
