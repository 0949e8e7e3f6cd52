"""Frames sent to the GPU straight from their files: the file mapped, its pages locked for
the device (``cudaHostRegister`` with ``cudaHostRegisterReadOnly``) and copied up by DMA.

An uncompressed image file holds its samples as one run of bytes.  Read the usual way they are
copied twice before the GPU sees them (the page cache to the process, then into a page-locked
buffer or the driver's staging); mapped and registered, the GPU's copy engine reads them from
the page cache itself, so the host's cores and memory bus do almost nothing for a frame: on the
GPU machine a 4K 16-bit TIFF frame cost about a quarter of the CPU time this way that it cost
read into a page-locked buffer (docs/performance.md, "Reading and uploads").

The host never touches the mapped bytes (a file truncated under a mapping would raise SIGBUS
on the first access): once the pages are locked they stay valid until unregistered, and where
locking fails (the file shrank, a file system or driver that cannot lock such pages) the
caller gets None and reads the frame the usual way.  Whether a frame is tried this way at all
is mastering's upload seam's to say (:class:`cinegpu.jobs.frame_uploads.FrameUploads`, which
holds the switches ``CINEGPU_MAPPED_UPLOADS`` and ``CINEGPU_MAPPED_TURNS``); this module reads
no environment.

Locking and unlocking a file's pages is serialised on the host (the kernel and the driver):
on the GPU machine 16 processes uploading this way all at once reached fewer frames a second
than 8, waiting on each other.  So a few threads of the machine (one user's, :class:`RegisterGate`:
:data:`TURNS` by default) lock pages at a time, and a thread that finds
every turn taken reads its frame the usual way instead of waiting: the two paths share the work
between them.  A thread unlocks its last file in the same turn as it locks the next, so that
a frame costs one turn, and never waits for one except to unlock its last file at the end.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import tempfile
from dataclasses import dataclass

import numpy as np

__all__ = ["TURNS", "FileRun", "MappedUploads", "RegisterGate", "pread_full"]

#: cudaHostRegisterReadOnly (CUDA runtime API, cudaHostRegister flags): the pages are only read
#: by the device, so read-only mappings can be locked.
_REGISTER_READ_ONLY = 0x08
#: cudaMemcpyHostToDevice
_HOST_TO_DEVICE = 1
#: Threads of the machine that may lock or unlock pages at once (:class:`RegisterGate`): the
#: page locking slows as more threads lock at once, while each frame locked costs its thread
#: less CPU.  4 mastered fastest of 1, 2, 4, 8 and 16 on the GPU machine (4K IMF HTJ2K, 16 x 2
#: processes; docs/performance.md, "Reading and uploads").
TURNS = 4


@dataclass(frozen=True)
class FileRun:
    """An array's samples stored as one run of bytes in a file: ``offset`` bytes in, C order,
    ``shape`` and ``dtype`` (native byte order)."""

    path: str
    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def pread_full(fd: int, view, offset: int, need: int | None = None, align: int = 1) -> bool:
    """Fill ``view`` (a writable buffer) with the bytes of file ``fd`` from ``offset``, one
    ``preadv`` after another where a read stops short; False where the file ends first (OSError
    as ``os.preadv`` raises it).  ``need``: done once that many bytes are in (default: all of
    ``view``); ``align``: a read that stops short anywhere but at a multiple of it has met the
    file's end (``O_DIRECT`` reads stop at block boundaries)."""
    view = memoryview(view).cast("B")
    need = view.nbytes if need is None else need
    got = 0
    while got < need:
        n = os.preadv(fd, [view[got:]], offset + got)
        if n <= 0:
            return False
        got += n
        if got < need and got % align:
            return False
    return True


class RegisterGate:
    """The machine-wide turns to lock or unlock pages for the GPU: ``turns`` exclusive
    ``flock`` s, one on each of as many files of this user's in the temporary folder
    (``path``, then ``path.1``, ``path.2``...), each taken by one open file at a time, whichever
    process or thread holds it.  :meth:`try_enter` takes a free one if any, :meth:`enter`
    waits for one; :meth:`leave` gives back the one taken.  Every process of a job must
    use the same ``turns``."""

    def __init__(self, path: str | None = None, turns: int = TURNS):
        self.path = path or os.path.join(tempfile.gettempdir(),
                                         f"cinegpu-{os.getuid()}-host-register.lock")
        if turns < 1:
            raise ValueError(f"a register gate needs at least one turn, got {turns}")
        self._fds: list[int] = []
        try:
            for k in range(turns):
                name = self.path if k == 0 else f"{self.path}.{k}"
                self._fds.append(os.open(name, os.O_RDWR | os.O_CREAT |
                                         getattr(os, "O_CLOEXEC", 0), 0o600))
        except OSError:
            self.close()
            raise
        self._taken: int | None = None      # the fd of the turn this gate holds

    @property
    def turns(self) -> int:
        return len(self._fds)

    def try_enter(self) -> bool:
        for fd in self._fds:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            self._taken = fd
            return True
        return False

    def enter(self) -> None:
        if not self.try_enter():            # every turn taken: wait for the first
            fcntl.flock(self._fds[0], fcntl.LOCK_EX)
            self._taken = self._fds[0]

    def leave(self) -> None:
        fd, self._taken = self._taken, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        fds, self._fds, self._taken = self._fds, [], None
        for fd in fds:
            os.close(fd)


class _Held:
    """One file mapped and registered, until the copy out of it (``done``) has run."""

    def __init__(self, fd: int, mapping: mmap.mmap, view: np.ndarray, done):
        self.fd, self.mapping, self.view, self.done = fd, mapping, view, done

    def copied(self) -> None:
        """Wait for the copy out of the file."""
        if self.done is not None:
            self.done.synchronize()

    def unlock(self) -> None:
        """Unregister, unmap and close the file, the copy done; the caller holds the gate."""
        import cupy
        try:
            self.copied()
            cupy.cuda.runtime.hostUnregister(self.view.ctypes.data)
        finally:
            self.view = None
            self.mapping.close()
            os.close(self.fd)

    def release(self, gate: RegisterGate) -> None:
        """:meth:`unlock` in a turn of the gate, waited for."""
        try:
            self.copied()
        finally:
            gate.enter()
            try:
                self.unlock()
            finally:
                gate.leave()


class MappedUploads:
    """Uploads straight from files for one thread: :meth:`upload` returns a CuPy array of a
    :class:`FileRun`'s samples on the current device, queued on the current stream, or None
    where the file cannot be locked (the caller then reads it itself).  The file stays mapped
    and locked until the next upload that gets a turn of the gate, which unlocks it in the same
    turn as it locks its own file (one turn a frame), or :meth:`close` (the copy must have
    left it); after the first failure to lock, none is tried again.  ``gate``: the machine's
    :class:`RegisterGate` (default: this user's, of ``turns`` turns, made at the first upload);
    a frame whose thread finds it taken gives None too."""

    def __init__(self, gate: RegisterGate | None = None, turns: int = TURNS):
        self._held: _Held | None = None
        self._gate = gate
        self._turns = turns
        #: False once locking a mapping has failed (not supported here): no more tries
        self.supported = True

    def upload(self, run: FileRun):
        """The samples of ``run`` as a CuPy array, or None (see the class)."""
        import cupy
        if not self.supported:
            self.release()
            return None
        if self._gate is None:
            try:
                self._gate = RegisterGate(turns=self._turns)
            except OSError:                  # no gate file of ours can be made: no mapping
                self.supported = False
                return None
        if self._held is not None:
            self._held.copied()              # its copy has left long ago: no wait in the turn
        if not self._gate.try_enter():
            return None                      # another thread is locking pages: read it
        fd = mapping = view = None
        try:
            try:
                held, self._held = self._held, None
                if held is not None:         # the last file unlocked in this same turn
                    held.unlock()
                fd = os.open(run.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                size = os.fstat(fd).st_size
                if run.offset < 0 or run.offset + run.nbytes > size or run.nbytes == 0:
                    return None              # the file is not what its header said: read it
                mapping = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
                view = np.frombuffer(mapping, np.uint8)
                cupy.cuda.runtime.hostRegister(view.ctypes.data, size, _REGISTER_READ_ONLY)
            except OSError:                  # gone or unmappable: the caller reads it
                return None
            except cupy.cuda.runtime.CUDARuntimeError:
                self.supported = False
                return None
            finally:
                self._gate.leave()
            held, fd = _Held(fd, mapping, view, None), None
            mapping = view = None
            self._held = held
            out = cupy.empty(run.shape, run.dtype)
            stream = cupy.cuda.get_current_stream()
            cupy.cuda.runtime.memcpyAsync(out.data.ptr, held.view.ctypes.data + run.offset,
                                          run.nbytes, _HOST_TO_DEVICE, stream.ptr)
            held.done = cupy.cuda.Event(block=True, disable_timing=True)
            held.done.record(stream)
            return out
        finally:
            if fd is not None:           # not handed to a _Held: undo what was done
                view = None
                if mapping is not None:
                    mapping.close()
                os.close(fd)

    def release(self) -> None:
        """Wait for the last copy and unlock and unmap its file."""
        held, self._held = self._held, None
        if held is not None:
            held.release(self._gate)

    def close(self) -> None:
        """:meth:`release`, and close the gate's file."""
        self.release()
        if self._gate is not None:
            self._gate.close()
            self._gate = None
