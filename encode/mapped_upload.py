"""Frames sent to the GPU straight from their files: the file mapped, its pages locked for
the device (``cudaHostRegister`` with ``cudaHostRegisterReadOnly``) and copied up by DMA.

An uncompressed image file holds its samples as one run of bytes.  Read the usual way they are
copied twice before the GPU sees them (the page cache to the process, then into a page-locked
buffer or the driver's staging); mapped and registered, the GPU's copy engine reads them from
the page cache itself, so the host's cores and memory bus do almost nothing for a frame: on an
H200 host with 16 cores, 16 processes moved 4K 16-bit TIFF frames to the GPU with 5.3 ms of CPU
a frame this way against 22.1 ms read into a page-locked buffer.

The host never touches the mapped bytes (a file truncated under a mapping would raise SIGBUS
on the first access): once the pages are locked they stay valid until unregistered, and where
locking fails (the file shrank, a file system or driver that cannot lock such pages) the
caller gets None and reads the frame the usual way.  ``CINEGPU_MAPPED_UPLOADS=off`` in the
environment turns the path off (every frame read the usual way).

Locking and unlocking a file's pages is serialised on the host (the kernel and the driver):
on that H200 host 8 processes uploading this way reached 445 frames a second and 16 only 369,
waiting on each other.  So one thread of the machine (one user's, :class:`RegisterGate`)
locks pages at a time, and a thread that finds the gate taken reads its frame the usual way
instead of waiting: the two paths share the work between them.  A thread unlocks its last
file in the same turn as it locks the next, so that a frame costs one turn, and never waits
for one except to unlock its last file at the end.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import functools
import mmap
import os
import tempfile
from dataclasses import dataclass

import numpy as np

__all__ = ["FileRun", "MappedUploads", "RegisterGate"]

#: cudaHostRegisterReadOnly (CUDA runtime API, cudaHostRegister flags; the driver's
#: CU_MEMHOSTREGISTER_READ_ONLY has the same value): the pages are only read by the device, so
#: read-only mappings can be locked.
_REGISTER_READ_ONLY = 0x08
#: CUresult codes of a thread without a current context (CUDA driver API): the runtime's
#: calls are used instead
_NO_CONTEXT = (3, 201)
#: cudaMemcpyHostToDevice
_HOST_TO_DEVICE = 1


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


class _GilHeld:
    """``flock`` (libc) and the CUDA driver's ``cuMemHostRegister_v2`` /
    ``cuMemHostUnregister`` called through ``ctypes.PyDLL``, which keeps the GIL during the
    call.  A thread holding the gate must not give the GIL up: ``fcntl.flock`` and CuPy's
    ``hostRegister`` release it, and with its process's other thread busy in Python, getting it
    back took up to the 5 ms switch interval each time, so that a turn of the gate took about
    15 ms under the master's load.  Each function is None where its library cannot be loaded
    (the callers then use fcntl and CuPy)."""

    def __init__(self):
        self.flock = self.register = self.unregister = None
        try:
            libc = ctypes.PyDLL(ctypes.util.find_library("c") or "libc.so.6")
            self.flock = libc.flock
            self.flock.argtypes, self.flock.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
        except (OSError, AttributeError):
            self.flock = None
        try:
            cuda = ctypes.PyDLL("libcuda.so.1")
            self.register = cuda.cuMemHostRegister_v2
            self.register.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint)
            self.register.restype = ctypes.c_int
            self.unregister = cuda.cuMemHostUnregister
            self.unregister.argtypes, self.unregister.restype = (ctypes.c_void_p,), ctypes.c_int
        except (OSError, AttributeError):
            self.register = self.unregister = None


@functools.lru_cache(maxsize=1)
def _gil_held() -> _GilHeld:
    """The process's :class:`_GilHeld` (loading the libraries once)."""
    return _GilHeld()


class RegisterGate:
    """The machine-wide turn to lock or unlock pages for the GPU: an exclusive ``flock`` on
    one file of this user's in the temporary folder (``path``), taken by one open file at a
    time, whichever process or thread holds it.  :meth:`try_enter` takes it if free,
    :meth:`enter` waits for it; :meth:`leave` gives it back."""

    def __init__(self, path: str | None = None):
        self.path = path or os.path.join(tempfile.gettempdir(),
                                         f"cinegpu-{os.getuid()}-host-register.lock")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                           0o600)

    def try_enter(self) -> bool:
        """Take the gate if it is free, keeping the GIL (:class:`_GilHeld`)."""
        flock = _gil_held().flock
        if flock is not None:
            return flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB) == 0
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def enter(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def leave(self) -> None:
        """Give the gate back, keeping the GIL."""
        flock = _gil_held().flock
        if flock is None or flock(self._fd, fcntl.LOCK_UN) != 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class _Held:
    """One file mapped and registered (``driver``: through the CUDA driver, else CuPy's
    runtime), until the copy out of it (``done``) has run."""

    def __init__(self, fd: int, mapping: mmap.mmap, view: np.ndarray, driver: bool):
        self.fd, self.mapping, self.view, self.driver = fd, mapping, view, driver
        self.done = None

    def copied(self) -> None:
        """Wait for the copy out of the file."""
        if self.done is not None:
            self.done.synchronize()

    def unregister(self) -> None:
        """Unlock the pages, the copy done; the caller holds the gate."""
        unregister = _gil_held().unregister if self.driver else None
        if unregister is None or unregister(self.view.ctypes.data) != 0:
            import cupy
            cupy.cuda.runtime.hostUnregister(self.view.ctypes.data)

    def close(self) -> None:
        """Unmap and close the file (its pages unlocked)."""
        self.view = None
        self.mapping.close()
        os.close(self.fd)

    def release(self, gate: RegisterGate) -> None:
        """Unlock in a turn of the gate, waited for, then close."""
        try:
            self.copied()
            gate.enter()
            try:
                self.unregister()
            finally:
                gate.leave()
        finally:
            self.close()


def _map(run: FileRun):
    """(fd, mapping, uint8 view of the whole file) of ``run``'s file, or None where the file
    does not hold the run its header said; OSError where it cannot be opened or mapped."""
    fd = os.open(run.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd).st_size
        if run.offset < 0 or run.offset + run.nbytes > size or run.nbytes == 0:
            os.close(fd)
            return None
        mapping = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    except OSError:
        os.close(fd)
        raise
    return fd, mapping, np.frombuffer(mapping, np.uint8)


class MappedUploads:
    """Uploads straight from files for one thread: :meth:`upload` returns a CuPy array of a
    :class:`FileRun`'s samples on the current device, queued on the current stream, or None
    where the file cannot be locked (the caller then reads it itself).  The file stays mapped
    and locked until the next upload that gets a turn of the gate, which unlocks it in the same
    turn as it locks its own file (one turn a frame), or :meth:`close` (the copy must have
    left it); after the first failure to lock, none is tried again.  ``gate``: the machine's
    :class:`RegisterGate` (default: this user's); a frame whose thread finds it taken gives
    None too.  The file is opened and mapped before the turn and closed after it; in the turn
    the thread keeps the GIL (:class:`_GilHeld`)."""

    def __init__(self, gate: RegisterGate | None = None):
        self._held: _Held | None = None
        self._gate = gate
        #: False once locking a mapping has failed (not supported here), or where the
        #: environment turns the path off: no more tries
        self.supported = os.environ.get("CINEGPU_MAPPED_UPLOADS", "on") != "off"
        #: pages locked through the CUDA driver (keeping the GIL) while that works; None:
        #: not tried yet (the thread's CUDA context is made current first)
        self._driver: bool | None = None

    def upload(self, run: FileRun):
        """The samples of ``run`` as a CuPy array, or None (see the class)."""
        import cupy
        if not self.supported:
            self.release()
            return None
        if self._gate is None:
            try:
                self._gate = RegisterGate()
            except OSError:                  # no gate file of ours can be made: no mapping
                self.supported = False
                return None
        if self._driver is None:             # the driver locks pages for the current context
            cupy.cuda.runtime.free(0)        # the device's primary context made current
            self._driver = _gil_held().register is not None
        held = self._held
        if held is not None:
            held.copied()                    # its copy has left long ago: no wait in the turn
        try:
            opened = _map(run)
        except OSError:                      # gone or unmappable: the caller reads it
            return None
        if opened is None:                   # the file is not what its header said: read it
            return None
        fd, mapping, view = opened
        ptr, size = view.ctypes.data, view.shape[0]
        new = None
        if self._gate.try_enter():
            try:
                if held is not None:         # the last file unlocked in this same turn
                    self._held = None
                    held.unregister()
                new = _Held(fd, mapping, view, self._register(ptr, size))
            except cupy.cuda.runtime.CUDARuntimeError:
                self.supported = False
            finally:
                self._gate.leave()
                if held is not None and self._held is None:
                    held.close()
        if new is None:                      # no turn, or locking failed: the caller reads it
            opened = view = None             # no export of the mapping left: it can close
            mapping.close()
            os.close(fd)
            return None
        self._held = new
        out = cupy.empty(run.shape, run.dtype)
        stream = cupy.cuda.get_current_stream()
        cupy.cuda.runtime.memcpyAsync(out.data.ptr, ptr + run.offset, run.nbytes,
                                      _HOST_TO_DEVICE, stream.ptr)
        new.done = cupy.cuda.Event(block=True, disable_timing=True)
        new.done.record(stream)
        return out

    def _register(self, ptr: int, size: int) -> bool:
        """Lock the pages for the GPU in the caller's turn: through the driver, keeping the
        GIL, where that works (True), else CuPy's runtime (False; CUDARuntimeError where it
        fails too)."""
        if self._driver:
            rc = _gil_held().register(ptr, size, _REGISTER_READ_ONLY)
            if rc == 0:
                return True
            if rc not in _NO_CONTEXT:
                import cupy
                raise cupy.cuda.runtime.CUDARuntimeError(801)   # cudaErrorNotSupported
            self._driver = False             # no current context here: the runtime's way
        import cupy
        cupy.cuda.runtime.hostRegister(ptr, size, _REGISTER_READ_ONLY)
        return False

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
