"""Shared-memory segments of the decode pipeline, named so that leftovers can be found.

A frame slot is a POSIX shared-memory segment (``/dev/shm`` on Linux). The process that
creates one unlinks it when the pipeline closes, and Python's resource tracker unlinks what is
left when the process ends; but a process group killed at once (SIGKILL to the player, its
workers and the tracker, as a closed terminal or an out-of-memory kill does) leaves the
segments behind, up to hundreds of megabytes each for 4K. So every segment is named
``cinegpu_<pid>_<random>`` after the process that made it, and :func:`reclaim_orphans`, run
whenever a pipeline starts, unlinks the segments whose process is gone.  A process that ends
on a signal, whose pipelines may have been interrupted while closing, calls
:func:`unlink_own` last, so that it leaves none behind either.
"""

from __future__ import annotations

import os
import secrets
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path

__all__ = ["PREFIX", "create_segment", "process_alive", "reclaim_orphans", "segment_exists", "segment_owner",
           "unlink_own"]

#: The start of every segment name the pipeline makes.
PREFIX = "cinegpu_"
#: Where Linux keeps POSIX shared memory.
SHM_FOLDER = Path("/dev/shm")


def create_segment(nbytes: int) -> shared_memory.SharedMemory:
    """A new segment of ``nbytes`` bytes named after this process."""
    while True:
        name = f"{PREFIX}{os.getpid()}_{secrets.token_hex(6)}"
        try:
            return shared_memory.SharedMemory(name=name, create=True, size=nbytes)
        except FileExistsError:     # 48 random bits met an old name: draw again
            continue


def segment_exists(name: str, folder: Path = SHM_FOLDER) -> bool:
    """Whether segment ``name`` still has its name (not yet unlinked). Where shared memory is
    not a folder of files (not Linux) this cannot be told: True."""
    if not folder.is_dir():
        return True
    return (folder / name).exists()


def segment_owner(name: str) -> int | None:
    """The process id in a segment name of ours, or None for any other name."""
    if not name.startswith(PREFIX):
        return None
    pid, sep, tail = name[len(PREFIX):].partition("_")
    return int(pid) if sep and pid.isdigit() and tail else None


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # another user's live process
        return True
    return True


def reclaim_orphans(folder: Path = SHM_FOLDER) -> list[str]:
    """Unlink the segments of ours whose process no longer exists; the names unlinked.
    Quietly does nothing where ``folder`` does not exist (no POSIX shared memory folder)."""
    if not folder.is_dir():
        return []
    gone = []
    for entry in folder.iterdir():
        pid = segment_owner(entry.name)
        if pid is None or pid == os.getpid() or process_alive(pid):
            continue
        try:
            entry.unlink()
        except (FileNotFoundError, PermissionError):   # reclaimed by another, or not ours to
            continue
        gone.append(entry.name)
    return gone


def unlink_own(folder: Path = SHM_FOLDER) -> list[str]:
    """Unlink every segment named after this process; the names unlinked.  Only for a process
    about to exit: a pipeline still open in it loses its slots' names (their mappings stay valid
    until unmapped).  Each name is also struck from the resource tracker, which would otherwise
    warn of it as leaked at exit."""
    if not folder.is_dir():
        return []
    mine = f"{PREFIX}{os.getpid()}_"
    gone = []
    for entry in folder.iterdir():
        if not entry.name.startswith(mine):
            continue
        try:
            entry.unlink()
        except FileNotFoundError:   # unlinked meanwhile by the pipeline closing it
            continue
        resource_tracker.unregister(f"/{entry.name}", "shared_memory")
        gone.append(entry.name)
    return gone
