"""Frames read to the GPU through a small ring of page-locked buffers: each chunk of the file's
run of samples is read (``preadv``) into a free slot of the ring and copied up by DMA while the
next chunk is read.

Read whole into one page-locked frame buffer, a frame passes through the host's memory three
times (the page cache read, the buffer written, the buffer read by the copy engine), and a 4K
16-bit frame (53 MB) is far larger than the processor's caches.  Through a ring of
:data:`SLOTS` x :data:`CHUNK` bytes the copy engine reads a chunk that a core has just written,
still in the processor's cache.  On the GPU machine 16 processes moved 4K 16-bit frames from
the page cache to the GPU faster through a ring of 4 x 1 MiB than whole, at about half the CPU
a frame; smaller slots cost more calls and were slower, larger ones more CPU
(docs/performance.md, "Reading and uploads").  ``python -m cinegpu.bench.master --read
16 --ring on off`` compares the two ways in mastering and in reading alone to the GPU (where
locked pages come first).

This is the way a GPU encoder thread reads a frame that :mod:`.mapped_upload` could not take
straight from its file (every turn to lock pages taken), or one not in the page cache, read
``O_DIRECT`` (:mod:`.direct_read`: the storage writes into the slots); where the run cannot be read (the file
is gone or shorter than its header said) the caller gets None and reads the frame the usual
way, which names what is wrong.  Whether a frame is read this way at all is mastering's upload
seam's to say (:class:`cinegpu.jobs.frame_uploads.FrameUploads`, which holds the switch
``CINEGPU_RING_UPLOADS=off``: every such frame read whole into the thread's page-locked buffer);
this module reads no environment.
"""

from __future__ import annotations

import os

import numpy as np

from . import direct_read
from .mapped_upload import FileRun

__all__ = ["CHUNK", "DIRECT_CHUNK", "DIRECT_SLOTS", "SLOTS", "RingUploads"]

#: Bytes of one slot of the ring (one ``preadv`` and one copy to the device).
CHUNK = 1 << 20
#: Slots of the ring: a slot is written again once the copy out of it three chunks before
#: has run.
SLOTS = 4
#: Bytes of one slot of the ring that ``O_DIRECT`` reads go through, and its slots: larger
#: pieces, since what a piece costs the host is its copy's call and wait, not its bytes (no core
#: touches them).  On the GPU machine's disk 2 x 4 MiB took less CPU a frame than 4 x 1 MiB, at
#: the disk's rate either way (docs/performance.md, "Reading and uploads").
DIRECT_CHUNK = 4 << 20
DIRECT_SLOTS = 2
#: cudaMemcpyHostToDevice
_HOST_TO_DEVICE = 1


class _Slots:
    """One ring: ``count`` page-locked slots of ``size`` bytes and, per slot, the event after
    the last copy out of it (recorded once when made, so that every slot has one to wait)."""

    def __init__(self, size: int, count: int):
        import cupy
        self.mem = cupy.cuda.alloc_pinned_memory(size * count)
        ring = np.frombuffer(self.mem, np.uint8, size * count)
        self.views = [ring[k * size:(k + 1) * size] for k in range(count)]
        self.copied = [cupy.cuda.Event(block=True, disable_timing=True) for _ in range(count)]
        stream = cupy.cuda.get_current_stream()
        for event in self.copied:
            event.record(stream)
        #: whether O_DIRECT reads may go into the slots (aligned addresses and sizes)
        self.aligned = size % direct_read.ALIGN == 0 and \
            self.views[0].ctypes.data % direct_read.ALIGN == 0

    def drain(self) -> None:
        """Wait for every copy out of the ring."""
        for event in self.copied:
            event.synchronize()


class RingUploads:
    """Uploads through a ring for one thread: :meth:`upload` returns a CuPy array of a
    :class:`.mapped_upload.FileRun`'s samples on the current device, its copies queued on
    the current stream, or None where the run cannot be read.  The ring (``slots`` x
    ``chunk`` bytes of page-locked memory) is made at the first upload, the one for
    ``O_DIRECT`` reads (``direct_slots`` x ``direct_chunk``) at the first such read;
    :meth:`close` waits for their copies and frees them."""

    def __init__(self, chunk: int = CHUNK, slots: int = SLOTS, direct_chunk: int = DIRECT_CHUNK,
                 direct_slots: int = DIRECT_SLOTS):
        if min(chunk, slots, direct_chunk, direct_slots) < 1:
            raise ValueError(f"a ring needs at least one slot of one byte, got {slots} x {chunk} "
                             f"and {direct_slots} x {direct_chunk}")
        self.chunk, self.slots = int(chunk), int(slots)
        self.direct_chunk, self.direct_slots = int(direct_chunk), int(direct_slots)
        self._rings: dict[bool, _Slots] = {}     # direct or not -> its ring, once made
        #: runs read ``O_DIRECT`` so far (not in the page cache)
        self.direct_reads = 0

    def upload(self, run: FileRun, direct: bool = False):
        """The samples of ``run`` as a CuPy array, or None (see the class).  ``direct``: read
        ``O_DIRECT`` (:mod:`.direct_read`: where :func:`.direct_read.cold` says the run is not
        in the page cache), the storage writing each piece into its slot; the usual read where
        the file cannot be opened so."""
        nbytes = run.nbytes
        if nbytes == 0 or run.offset < 0:
            return None
        try:
            fd = os.open(run.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        ring = None
        try:
            if os.fstat(fd).st_size < run.offset + nbytes:
                return None                      # shorter than its header said: read it
            import cupy
            opened = None
            if direct:
                ring = self._ring(True)
                opened = direct_read.open_direct(run.path) if ring.aligned else None
            if opened is None:
                ring = self._ring(False)
            out = cupy.empty(run.shape, run.dtype)
            stream = cupy.cuda.get_current_stream()

            def take(slot: int) -> None:
                ring.copied[slot].synchronize()      # the copy out of this slot has run

            def send(slot: int, skip: int, out_at: int, n: int) -> None:
                cupy.cuda.runtime.memcpyAsync(out.data.ptr + out_at,
                                              ring.views[slot].ctypes.data + skip, n,
                                              _HOST_TO_DEVICE, stream.ptr)
                ring.copied[slot].record(stream)
            try:
                ok = direct_read.read_pieces(fd if opened is None else opened, run, ring.views,
                                             opened is not None, take, send)
            finally:
                if opened is not None:
                    os.close(opened)
            if not ok:
                ring.drain()
                return None                      # the file shrank under us: read it
            self.direct_reads += opened is not None
            return out
        except OSError:
            if ring is not None:
                ring.drain()
            return None
        finally:
            os.close(fd)

    def _ring(self, direct: bool) -> _Slots:
        ring = self._rings.get(direct)
        if ring is None:
            ring = self._rings[direct] = _Slots(self.direct_chunk, self.direct_slots) \
                if direct else _Slots(self.chunk, self.slots)
        return ring

    @property
    def made(self) -> int:
        """Bytes of page-locked memory this thread's rings hold."""
        return sum(r.views[0].nbytes * len(r.views) for r in self._rings.values())

    def close(self) -> None:
        """Wait for the copies out of the rings and free them."""
        rings, self._rings = self._rings, {}
        for ring in rings.values():
            ring.drain()
