"""SIGTERM and SIGINT as exceptions in the main thread, for commands that must clean up.

A command that holds something outside its process (a partial DCP folder, decode worker
processes and their shared memory) runs inside :func:`interrupts`: SIGTERM raises
:class:`Terminated` and SIGINT ``KeyboardInterrupt`` wherever the main thread is, so the same
``finally`` blocks run as for any error; the exit status is then 143 (128 + 15) or 130.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

from cinegpu.decode.shm import unlink_own

__all__ = ["Terminated", "interrupts", "stoppable", "TERMINATED", "INTERRUPTED"]

#: Exit status after SIGTERM (128 + 15) and after SIGINT (128 + 2), as a shell reports them.
TERMINATED, INTERRUPTED = 128 + signal.SIGTERM, 128 + signal.SIGINT


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so the same cleanup as for Ctrl-C runs."""


@contextlib.contextmanager
def interrupts():
    """Turn SIGTERM into :class:`Terminated` and SIGINT into KeyboardInterrupt in the main thread,
    each once: a second signal during the cleanup is ignored, so the cleanup finishes.  Outside
    the main thread (where Python cannot set handlers) nothing changes.  The old handlers are
    restored on leaving."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, _frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def stoppable(command: str, run, args) -> int:
    """``run(args)`` (a decoding command's body) inside :func:`interrupts`: after SIGTERM or
    Ctrl-C, the slots of a pipeline whose close the signal cut short unlinked, one line
    (``cinegpu COMMAND: terminated (SIGTERM)`` or ``interrupted``) and status 143 or 130."""
    with interrupts():
        try:
            return run(args)
        except (Terminated, KeyboardInterrupt) as exc:
            unlink_own()
            terminated = isinstance(exc, Terminated)
            print(f"cinegpu {command}: {'terminated (SIGTERM)' if terminated else 'interrupted'}", file=sys.stderr)
            return TERMINATED if terminated else INTERRUPTED
