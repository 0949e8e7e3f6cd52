"""The CPU decoder compiled before a command's first decode, once per machine and version
(:func:`cinegpu.jobs.first_run.compile_kernels` without the encoder): ahead, in one process a
core, saying so, rather than by each decoding process at once (every tier-1 worker of a player
compiling the same kernels, minutes on two cores). A no-op once its stamp is there."""

from __future__ import annotations

import sys

from cinegpu.jobs.first_run import cache_root, compile_kernels

__all__ = ["compile_decoder"]


def compile_decoder(command: str) -> None:
    """Compile the CPU decoder's kernels if this machine has not yet, saying so on stderr as
    ``cinegpu COMMAND: ...`` (a bar on a terminal)."""
    compile_kernels(cache_root(), encoder=False,
                    say=lambda line: print(f"cinegpu {command}: {line}", file=sys.stderr))
