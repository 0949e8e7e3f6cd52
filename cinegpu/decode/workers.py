"""Worker processes: the one pool under the decode pipeline's tier-1 workers
(:class:`~cinegpu.decode.pipeline.FramePipeline`) and mastering's encoder processes
(:class:`cinegpu.jobs.frame_coders.ProcessCoders`).

A :class:`WorkerPool` starts its processes (spawned: no CUDA context or lock is inherited),
each running ``target(conn)`` with its end of a pipe, and owns what every such pool did on its
own before: the start and its timeout, waiting on every pipe and every process's end at once,
replacing a worker, and the shutdown. What travels on the pipes is the owner's typed messages,
plus three of the pool's own, sent by a worker while it starts: :class:`Busy` (it is working on
its start: compiling kernels, say), :class:`Ready` and :class:`Broken`. A worker that says
:class:`Busy` restarts its start clock, so the start timeout counts the time a worker stays
silent, not a first run's compile of minutes (:func:`announce_compiles` sends one each time
numba finishes compiling a kernel in the worker).

Failures name the work: :meth:`WorkerPool.await_ready` and :meth:`WorkerPool.ended` raise the
owner's own error family (its ``error`` callable), with the worker's name and what ended it.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import selectors
import time
from collections.abc import Callable
from dataclasses import dataclass

from numba.core import event as numba_event

__all__ = ["Broken", "Busy", "Ready", "START_SILENCE_S", "WorkerPool", "announce_compiles", "send_message"]

#: Seconds a starting worker may stay silent (no :class:`Busy`, :class:`Ready` or
#: :class:`Broken`) before its start counts as failed; the longest single kernel compile of a
#: first run on a loaded two-core machine is well under it.
START_SILENCE_S = 300.0
#: Seconds between looks at the owner's ``cancelled`` while a worker starts.
CANCEL_POLL_S = 0.05


def send_message(conn, message) -> None:
    """``message`` on ``conn`` (a ``multiprocessing`` connection), pickled by :mod:`pickle`
    itself: what ``conn.send`` sends, read by ``conn.recv`` alike, without the copy of the
    pickling dispatch table that ``multiprocessing``'s own pickler makes for each message (for
    file descriptors and connections, which no message here holds). OSError where the other
    end has gone."""
    conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


@dataclass(frozen=True)
class Ready:
    """A worker has started and takes work."""


@dataclass(frozen=True)
class Broken:
    """A worker could not start: ``message`` says why (sent instead of :class:`Ready`)."""

    message: str


@dataclass(frozen=True)
class Busy:
    """A starting worker is at work on its start (``what``: e.g. the kernel just compiled):
    its start clock begins again."""

    what: str


class _CompileNotices(numba_event.Listener):
    """Sends :class:`Busy` on ``conn`` each time numba finishes compiling a cinegpu kernel."""

    def __init__(self, conn) -> None:
        self.conn = conn

    def on_start(self, ev) -> None:
        pass

    def on_end(self, ev) -> None:
        func = getattr(ev.data.get("dispatcher"), "py_func", None)
        if func is not None and func.__module__.startswith("cinegpu."):
            self.conn.send(Busy(f"compiled {func.__module__}.{func.__qualname__}"))


def announce_compiles(conn) -> Callable[[], None]:
    """In a worker, while it starts: tell the pool of each kernel numba compiles (a first run
    compiles for minutes, which is work, not silence). Returns the call that stops it, for
    once the worker is ready."""
    listener = _CompileNotices(conn)
    numba_event.register("numba:compile", listener)
    return lambda: numba_event.unregister("numba:compile", listener)


class WorkerPool:
    """``count`` processes running ``target(conn)``, named ``name`` (``"tier-1 worker"``) in
    messages; ``error(text)`` makes the owner's exception for a worker that fails to start or
    ends. Workers are started by :meth:`start` (all at once, without waiting)."""

    def __init__(self, target, count: int, *, name: str, error: Callable[[str], Exception],
                 process_name: str | None = None, where: Callable[[int], str] | None = None) -> None:
        self._ctx = mp.get_context("spawn")
        self._target = target
        self.name = name
        self._error = error
        self._process_name = process_name or name.replace(" ", "-")
        self._where = where
        self.procs: list = [None] * count
        self.conns: list = [None] * count
        self._selector = selectors.DefaultSelector()

    def __len__(self) -> int:
        return len(self.procs)

    def where(self, i: int) -> str:
        """Worker ``i`` as messages name it (the owner's ``where`` if it gave one)."""
        return self._where(i) if self._where is not None else f"{self.name} {i}"

    def start(self, i: int | None = None) -> None:
        """Start worker ``i`` (None: every one), its pipe and its end watched by :meth:`wait`."""
        for k in range(len(self.procs)) if i is None else (i,):
            parent, child = self._ctx.Pipe()
            proc = self._ctx.Process(target=self._target, args=(child,), daemon=True, name=self._process_name)
            proc.start()
            child.close()
            self.procs[k], self.conns[k] = proc, parent
            self._selector.register(parent, selectors.EVENT_READ, (True, k))
            self._selector.register(proc.sentinel, selectors.EVENT_READ, (False, k))

    def send(self, i: int, message) -> None:
        """``message`` to worker ``i``; the owner's error if it has ended."""
        try:
            send_message(self.conns[i], message)
        except OSError:
            raise self.ended(i) from None

    def await_ready(self, i: int, silence: float = START_SILENCE_S,
                    cancelled: Callable[[], bool] = lambda: False) -> None:
        """Wait until worker ``i`` says :class:`Ready`: the owner's error if it says
        :class:`Broken`, ends, sends something else, or stays silent ``silence`` seconds (each
        :class:`Busy` starts that clock again); ``cancelled()`` true ends the wait too."""
        proc, conn = self.procs[i], self.conns[i]
        deadline = time.monotonic() + silence
        while True:
            if cancelled():
                raise self._error(f"{self.where(i)}: closed while it started")
            if conn.poll(CANCEL_POLL_S):
                try:
                    msg = conn.recv()
                except (EOFError, OSError):
                    raise self.ended(i, "while starting") from None
                if isinstance(msg, Busy):
                    deadline = time.monotonic() + silence
                    continue
                if isinstance(msg, Ready):
                    return
                if isinstance(msg, Broken):
                    raise self._error(f"{self.where(i)} could not start: {msg.message}")
                raise self._error(f"{self.where(i)} sent {msg!r} while starting")
            if not proc.is_alive():
                raise self.ended(i, "while starting")
            if time.monotonic() > deadline:
                raise self._error(f"{self.where(i)} did not start: silent for {silence:.0f} s")

    def wait(self, timeout: float | None) -> list[tuple[bool, int]]:
        """What is ready within ``timeout`` seconds (None: until something is): (True, i) for a
        worker whose pipe holds a message, (False, i) for one whose process ended; messages
        first (a worker's last reply comes before its end)."""
        ready = [key.data for key, _ in self._selector.select(timeout)]
        return sorted(ready, key=lambda r: not r[0])

    def ended(self, i: int, when: str = "") -> Exception:
        """The owner's error for worker ``i`` having ended ``when`` ("while starting"; its exit
        code, once it is known)."""
        return self._error(f"{self.where(i)} ended (exit code {self.exitcode(i)}){' ' + when if when else ''}")

    def exitcode(self, i: int) -> int | None:
        """Worker ``i``'s exit code, once it has ended (reaped here first)."""
        proc = self.procs[i]
        proc.join(timeout=1)
        return proc.exitcode

    def forget(self, i: int) -> None:
        """Stop watching worker ``i`` (it ended; :meth:`start` may replace it)."""
        for obj in (self.conns[i], self.procs[i].sentinel):
            try:
                self._selector.unregister(obj)
            except (KeyError, ValueError):
                pass
        self.procs[i].join(timeout=1)
        self.conns[i].close()

    def kill(self, i: int | None = None) -> None:
        """Kill worker ``i`` (None: every one) at once; callable from any thread."""
        for proc in self.procs if i is None else (self.procs[i],):
            if proc is not None:
                proc.kill()

    def close(self, stop_message, idle: Callable[[int], bool], timeout: float) -> None:
        """End every worker: an ``idle(i)`` one is sent ``stop_message`` and has ``timeout``
        seconds to end, the others are killed at once; then the pipes are closed."""
        end = time.monotonic() + timeout
        for i, (proc, conn) in enumerate(zip(self.procs, self.conns)):
            if proc is None:
                continue
            if not idle(i):
                proc.kill()
                continue
            try:
                conn.send(stop_message)
            except OSError:
                pass
        for proc, conn in zip(self.procs, self.conns):
            if proc is None:
                continue
            proc.join(timeout=max(0.0, end - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=1)
            conn.close()
        self._selector.close()
        self.procs = [None] * len(self.procs)
        self.conns = [None] * len(self.conns)
