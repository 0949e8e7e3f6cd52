"""Frames read to the GPU through a small ring of page-locked buffers: each chunk of the file's
run of samples is read (``preadv``) into a free slot of the ring and copied up by DMA while the
next chunk is read.

Read whole into one page-locked frame buffer, a frame passes through the host's memory three
times (the page cache read, the buffer written, the buffer read by the copy engine), and a 4K
16-bit frame (53 MB) is far larger than the processor's caches.  Through a ring of
:data:`SLOTS` x :data:`CHUNK` bytes the copy engine reads a chunk that a core has just written,
still in the processor's cache.  One H200 host with 16 cores (2026-11-29), a standalone
microbenchmark of 16 processes moving 4K 16-bit frames (raw files, no mapping) from the page
cache to the GPU, two rounds in one call: whole frames 605.9 and 512.1 fps at 23.7 and
27.9 ms of CPU a frame; a ring of 4 x 1 MiB 698.1 and 570.0 fps at 12.3 and 14.2 ms
(4 x 256 KiB, four times the calls: 430.5 and 375.0 fps; 4 x 4 MiB: 695.8
and 621.2 fps at 17.6 and 20.0 ms); one process alone 95.7 fps at 10.5 ms against 121.3 fps at
8.75 ms.  ``python -m cinegpu.media.bench_master --read 16 --ring on off`` compares the two
ways in mastering and in reading alone to the GPU (where locked pages come first).

This is the way a GPU encoder thread reads a frame that :mod:`.mapped_upload` could not take
straight from its file (every turn to lock pages taken); where the run cannot be read (the file
is gone or shorter than its header said) the caller gets None and reads the frame the usual
way, which names what is wrong.  ``CINEGPU_RING_UPLOADS=off`` in the environment turns the
path off (every such frame read whole into the thread's page-locked buffer, as before).
"""

from __future__ import annotations

import os

import numpy as np

from .mapped_upload import FileRun, pread_full

__all__ = ["CHUNK", "SLOTS", "RingUploads"]

#: Bytes of one slot of the ring (one ``preadv`` and one copy to the device).
CHUNK = 1 << 20
#: Slots of the ring: a slot is written again once the copy out of it three chunks before
#: has run.
SLOTS = 4
#: cudaMemcpyHostToDevice
_HOST_TO_DEVICE = 1


class RingUploads:
    """Uploads through a ring for one thread: :meth:`upload` returns a CuPy array of a
    :class:`.mapped_upload.FileRun`'s samples on the current device, its copies queued on
    the current stream, or None where the run cannot be read.  The ring (``slots`` x
    ``chunk`` bytes of page-locked memory) is made at the first upload; :meth:`close` waits
    for its copies and frees it."""

    def __init__(self, chunk: int = CHUNK, slots: int = SLOTS):
        if chunk < 1 or slots < 1:
            raise ValueError(f"a ring needs at least one slot of one byte, got {slots} x {chunk}")
        self.chunk, self.slots = int(chunk), int(slots)
        #: False where the environment turns the path off
        self.supported = os.environ.get("CINEGPU_RING_UPLOADS", "on") != "off"
        self._mem = None
        self._ring: list[np.ndarray] = []
        self._copied: list = []          # per slot: the event after the last copy out of it

    def upload(self, run: FileRun):
        """The samples of ``run`` as a CuPy array, or None (see the class)."""
        nbytes = run.nbytes
        if not self.supported or nbytes == 0 or run.offset < 0:
            return None
        try:
            fd = os.open(run.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            if os.fstat(fd).st_size < run.offset + nbytes:
                return None                      # shorter than its header said: read it
            import cupy
            if self._mem is None:
                self._make()
            out = cupy.empty(run.shape, run.dtype)
            stream = cupy.cuda.get_current_stream()
            at, slot = 0, 0
            while at < nbytes:
                n = min(self.chunk, nbytes - at)
                self._copied[slot].synchronize()     # the copy out of this slot has run
                view = self._ring[slot][:n]
                if not pread_full(fd, view, run.offset + at):
                    self._drain()
                    return None                  # the file shrank under us: read it
                cupy.cuda.runtime.memcpyAsync(out.data.ptr + at, view.ctypes.data, n,
                                              _HOST_TO_DEVICE, stream.ptr)
                self._copied[slot].record(stream)
                at += n
                slot = (slot + 1) % self.slots
            return out
        except OSError:
            self._drain()
            return None
        finally:
            os.close(fd)

    def _make(self) -> None:
        import cupy
        self._mem = cupy.cuda.alloc_pinned_memory(self.chunk * self.slots)
        ring = np.frombuffer(self._mem, np.uint8, self.chunk * self.slots)
        self._ring = [ring[k * self.chunk:(k + 1) * self.chunk] for k in range(self.slots)]
        self._copied = [cupy.cuda.Event(block=True, disable_timing=True)
                        for _ in range(self.slots)]
        stream = cupy.cuda.get_current_stream()
        for event in self._copied:              # recorded once, so every slot has one to wait
            event.record(stream)

    def _drain(self) -> None:
        """Wait for every copy out of the ring."""
        for event in self._copied:
            event.synchronize()

    def close(self) -> None:
        """Wait for the copies out of the ring and free it."""
        self._drain()
        self._ring, self._copied, self._mem = [], [], None
