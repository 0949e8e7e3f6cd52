"""The cinegpu command line run as a user runs it: :data:`CLI`, the argv that starts it, and
:func:`cinegpu`, one run of it in a child process."""

from __future__ import annotations

import subprocess
import sys

#: ``cinegpu`` as a child process of this Python (the package this test imports)
CLI = [sys.executable, "-m", "cinegpu.player.cli"]


def cinegpu(*args, cwd=None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``cinegpu ARGS`` (each made a string) in a child process, run in ``cwd``, its output
    captured as text."""
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd)
