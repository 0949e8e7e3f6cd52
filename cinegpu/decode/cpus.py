"""The CPU cores this process may run on: the one count that sizes every pool of workers
(the decode pipeline's tier-1 processes, the encoder processes of mastering, ``check
--decode``'s processes, a local cluster's workers) and the peers a benchmark runs."""

from __future__ import annotations

import os

__all__ = ["usable_cores"]


def usable_cores() -> int:
    """Cores of this process's CPU affinity (what ``taskset`` or a container's cpuset leaves
    it), else every core the machine reports; at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
