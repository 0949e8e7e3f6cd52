"""Frames read around the page cache: a file's run of samples that is not in memory is read
with ``O_DIRECT``, so the storage's DMA writes it straight into page-locked memory and no core
copies it.

A feature's source frames (150,000-250,000 of them, 53 MB each at 4K 16-bit) come from
storage, not from memory.  Read the usual way each one is copied by a core from the page cache,
and the page cache is filled and emptied again at the storage's rate; read ``O_DIRECT`` in
aligned pieces, a core only waits.  Measured on the GPU machine's virtual disk, a file read
``O_DIRECT`` cost about a quarter of the CPU time of the usual read, at a somewhat lower rate
(the kernel's read-ahead keeps more in flight): docs/performance.md, "Reading and uploads".

Whether a run is in memory is asked of the kernel once a frame, without waiting for storage
(:func:`cold`: ``preadv2`` with ``RWF_NOWAIT`` of one byte at its start, middle and end): a file
the system has just written or read stays on the usual path, where it is cheaper.
:func:`read_pieces` is the one loop both readers share: the GPU's ring
(:class:`.ring_upload.RingUploads`, each piece copied up from its slot) and
:func:`read_run_direct` (each piece copied into an array on the host, the ring's twin).
Whether a frame is read this way at all is mastering's upload seam's to say
(:class:`cinegpu.jobs.frame_uploads.FrameUploads`, which holds the switch
``CINEGPU_DIRECT_READS=off``); this module reads no environment.
"""

from __future__ import annotations

import mmap
import os
from typing import Callable, Iterator

import numpy as np

from .mapped_upload import FileRun, pread_full

__all__ = ["ALIGN", "cold", "in_page_cache", "open_direct", "pieces", "read_pieces",
           "read_run_direct"]

#: Bytes to which an ``O_DIRECT`` read's file offset, length and memory are aligned: the
#: largest logical block size of common storage (512 or 4096 bytes), and the page size.
ALIGN = 4096


def in_page_cache(fd: int, offset: int, nbytes: int) -> bool:
    """Whether bytes ``offset`` .. ``offset + nbytes - 1`` of file ``fd`` are in the page cache,
    as far as one byte at the start, the middle and the end of them tell (``preadv2`` with
    ``RWF_NOWAIT``, which fails rather than wait for storage).  True where the system cannot
    tell (no ``RWF_NOWAIT``, a file system that does not take it, the file shorter than that):
    the usual read then, which is never wrong."""
    flag = getattr(os, "RWF_NOWAIT", None)
    if flag is None or nbytes <= 0:
        return True
    one = bytearray(1)
    for at in (offset, offset + nbytes // 2, offset + nbytes - 1):
        try:
            os.preadv(fd, [one], at, flag)
        except BlockingIOError:
            return False
        except OSError:
            return True
    return True


def cold(run: FileRun) -> bool:
    """Whether ``run`` is to be read ``O_DIRECT``: its bytes are not in the page cache
    (:func:`in_page_cache`, asked through a file of its own told to expect random reads, so
    that a miss starts no read-ahead beyond the page asked for).  Ask once a frame: a miss
    brings its page in, so a second question may be told otherwise."""
    if run.nbytes <= 0 or run.offset < 0:
        return False
    try:
        fd = os.open(run.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return not in_page_cache(fd, run.offset, run.nbytes)
    except OSError:
        return False
    finally:
        os.close(fd)


def open_direct(path: str) -> int | None:
    """``path`` opened for reading with ``O_DIRECT``, or None where it cannot be (no such
    flag here, a file system without it such as tmpfs on older kernels, the file gone)."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    try:
        return os.open(path, os.O_RDONLY | flag | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def pieces(offset: int, nbytes: int, chunk: int, align: int = 1
           ) -> Iterator[tuple[int, int, int, int, int]]:
    """The reads that take bytes ``offset`` .. ``offset + nbytes - 1`` of a file in pieces of at
    most ``chunk`` bytes, each read's file offset and length multiples of ``align`` (1: the run
    itself): ``(at, length, skip, out_at, n)``, one per read: ``length`` bytes read from file
    offset ``at``, of which bytes ``skip`` .. ``skip + n - 1`` are the run's bytes ``out_at`` ..
    ``out_at + n - 1``.  ``chunk`` must be a multiple of ``align``."""
    if chunk < align or chunk % align:
        raise ValueError(f"a piece of {chunk} bytes is not a multiple of {align}")
    start = offset - offset % align
    end = offset + nbytes
    end_aligned = -(-end // align) * align
    at = start
    while at < end:
        length = min(chunk, end_aligned - at)
        skip = max(offset - at, 0)
        out_at = at + skip - offset
        yield at, length, skip, out_at, min(at + length, end) - (at + skip)
        at += length


def read_pieces(fd: int, run: FileRun, slots: list, direct: bool,
                take: Callable[[int], None], send: Callable[[int, int, int, int], None]) -> bool:
    """Read ``run``'s bytes from file ``fd`` piece by piece through ``slots`` (writable buffers
    of one size, used in turn; for ``direct``, ``fd`` opened ``O_DIRECT`` and every slot's
    address and size multiples of :data:`ALIGN`).  Before a slot is read into, ``take(slot)``
    (wait until what was sent out of it has gone); after, ``send(slot, skip, out_at, n)``: bytes
    ``skip`` .. ``skip + n - 1`` of the slot are the run's bytes ``out_at`` .. onwards.  False
    where the file ends before the run does (OSError as ``os.preadv`` raises it)."""
    chunk = len(memoryview(slots[0]).cast("B"))
    align = ALIGN if direct else 1
    for k, (at, length, skip, out_at, n) in enumerate(pieces(run.offset, run.nbytes, chunk, align)):
        slot = k % len(slots)
        take(slot)
        view = memoryview(slots[slot]).cast("B")[:length]
        if not pread_full(fd, view, at, skip + n, align):
            return False
        send(slot, skip, out_at, n)
    return True


def aligned_buffer(nbytes: int) -> np.ndarray:
    """``nbytes`` (a multiple of :data:`ALIGN`) of page-aligned host memory (an anonymous
    mapping), for ``O_DIRECT`` reads on the host."""
    return np.frombuffer(mmap.mmap(-1, max(nbytes, ALIGN)), np.uint8)[:nbytes]


def read_run_direct(run: FileRun, out: np.ndarray | None = None, chunk: int = 1 << 20,
                    slots: int = 4) -> np.ndarray | None:
    """The samples of ``run`` read ``O_DIRECT`` through ``slots`` page-aligned buffers of
    ``chunk`` bytes into ``out`` (or a new array of the run's shape and dtype): the host twin
    of :class:`.ring_upload.RingUploads`' direct reads.  None where the file cannot be opened
    ``O_DIRECT`` or ends before the run does."""
    fd = open_direct(run.path)
    if fd is None:
        return None
    try:
        if out is None:
            out = np.empty(run.shape, run.dtype)
        flat = out.reshape(-1).view(np.uint8)
        ring = aligned_buffer(chunk * slots)
        bufs = [ring[k * chunk:(k + 1) * chunk] for k in range(slots)]

        def send(slot: int, skip: int, out_at: int, n: int) -> None:
            flat[out_at:out_at + n] = bufs[slot][skip:skip + n]
        return out if read_pieces(fd, run, bufs, True, lambda slot: None, send) else None
    except OSError:
        return None
    finally:
        os.close(fd)
