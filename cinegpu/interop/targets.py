"""Texture targets: where a decoded RGBA16 frame goes to become a GL texture.

Every target owns one GL_RGBA16 texture of the frame's size and has the same
life cycle: ``probe()`` (class method, quiet: the reason it cannot work here,
or None), ``open(width, height)`` (creates and, for CUDA targets, registers
the texture once), ``write(pixels)`` per frame, ``close()``.  ``pixels`` is a
C-contiguous (height, width, 4) uint16 array, row 0 at the top of the
picture, on the host (numpy) or the device (CuPy); texture row 0 holds
picture row 0 whichever target wrote it, so the presenter draws them alike.

- :class:`SurfaceTarget`: the texture registered with
  ``cudaGraphicsGLRegisterImage(..., SurfaceLoadStore)``; each frame it is
  mapped, written by a kernel with ``surf2Dwrite`` (``cuda/surface.cu``) and
  unmapped.  No trip through the host.
- :class:`PixelBufferTarget`: a pixel-unpack buffer registered with
  ``cudaGraphicsGLRegisterBuffer``; each frame it is mapped, filled by a
  device-to-device copy, unmapped, then ``glTexSubImage2D`` from it.
- :class:`HostUploadTarget`: ``glTexSubImage2D`` from a numpy array; the CPU
  back end and the fallback.

Errors: :class:`~cinegpu.interop.errors.InteropError` naming the failing call.
All methods need the GL context current on the calling thread.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path

import numpy as np

from cinegpu.decode.backend import cuda_missing

from . import gl as glu
from .errors import InteropError
from .xyz import XYZ_PLANES, XYZPlanes, XYZTexture

__all__ = ["TextureTarget", "HostUploadTarget", "SurfaceTarget", "PixelBufferTarget", "choose_target",
           "TARGETS"]

CUDA_DIR = Path(__file__).with_name("cuda")


class TextureTarget:
    """Base of the targets: one GL_RGBA16 texture of the frame's size."""

    name = "base"

    def __init__(self) -> None:
        self.texture = 0
        self.width = self.height = 0
        #: the picture written last as X'Y'Z' code values for the presenter to convert
        #: (:mod:`.xyz`; the host target's), else None: ``texture`` holds it as RGBA16
        self.xyz: XYZTexture | None = None

    @classmethod
    def missing(cls) -> str | None:
        """Why this target cannot work on this machine whatever the GL context (CuPy or CUDA
        missing), found quietly and at once, without a context: asked before any long work."""
        return None

    @classmethod
    def probe(cls) -> str | None:
        """Why this target cannot work here (quietly found, the GL context current), or None
        when it can."""
        return cls.missing()

    def open(self, width: int, height: int) -> int:
        """Create the texture (``width`` x ``height`` samples); its GL name."""
        if width < 1 or height < 1:
            raise ValueError(f"texture size must be positive, got {width}x{height}")
        self.width, self.height = width, height
        self.texture = glu.create_texture(width, height)
        return self.texture

    def write(self, pixels) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self.texture:
            glu.delete_texture(self.texture)
            self.texture = 0

    def _check_shape(self, pixels) -> None:
        want = (self.height, self.width, 4)
        if tuple(pixels.shape) != want or pixels.dtype != np.uint16:
            raise ValueError(f"{self.name} target wants uint16 {want}, got {pixels.dtype} {tuple(pixels.shape)}")


class HostUploadTarget(TextureTarget):
    """``glTexSubImage2D`` from host memory (device arrays are copied back first). An
    :class:`~.xyz.XYZPlanes` picture goes into a second texture, GL_R16, its three planes
    stacked (made on first use), left to the presenter to convert (:attr:`xyz`)."""

    name = "host"

    def __init__(self) -> None:
        super().__init__()
        self._planes = 0
        self._stacked = 0   # planes the X'Y'Z' texture holds

    def write(self, pixels) -> None:
        if isinstance(pixels, XYZPlanes):
            self._write_planes(pixels)
            return
        if not isinstance(pixels, np.ndarray):
            pixels = pixels.get()
        self._check_shape(pixels)
        glu.upload_rgba16(self.texture, self.width, self.height, pixels)
        self.xyz = None

    def _write_planes(self, picture: XYZPlanes) -> None:
        shapes = [tuple(p.shape) for p in picture.planes]
        count = 2 * XYZ_PLANES if picture.anaglyph else XYZ_PLANES
        if shapes != [(self.height, self.width)] * count:
            raise ValueError(f"{self.name} target wants {count} X'Y'Z' planes of {(self.height, self.width)}, "
                             f"got {shapes}")
        if self._stacked != count:
            if self._planes:
                glu.delete_texture(self._planes)
            self._planes = glu.create_texture(self.width, count * self.height, single=True)
            self._stacked = count
        for k, plane in enumerate(picture.planes):
            if plane.dtype != np.uint16:    # clipped as the reference clips, then sent as 16 bits
                plane = np.clip(plane, 0, (1 << picture.in_bits) - 1).astype(np.uint16)
            glu.upload_r16_rows(self._planes, k * self.height, plane)
        self.xyz = XYZTexture(self._planes, picture.in_bits, picture.primaries, picture.anaglyph)

    def close(self) -> None:
        if self._planes:
            glu.delete_texture(self._planes)
            self._planes = self._stacked = 0
        self.xyz = None
        super().close()


# --------------------------------------------------------------------------- CUDA side


def _cudart():
    from cuda.bindings import runtime  # noqa: PLC0415  (optional: cuda-python)
    return runtime


def _cuda(call: str, result):
    """Unpack a cuda.bindings result tuple, raising :class:`InteropError` naming ``call``."""
    rt = _cudart()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != rt.cudaError_t.cudaSuccess:
        name = rt.cudaGetErrorName(err)[1]
        raise InteropError(call, name.decode() if isinstance(name, bytes) else str(err))
    return rest[0] if len(rest) == 1 else tuple(rest) if rest else None


def _probe_cuda() -> str | None:
    missing = cuda_missing()            # the back end's own probe (CuPy and a device)
    if missing is not None:
        return missing[0]
    try:
        _cudart()
    except Exception as exc:  # probing is quiet: any import or driver failure
        return f"{type(exc).__name__}: {exc}"
    return None


def _device_pixels(pixels):
    import cupy  # noqa: PLC0415  (optional: CuPy)
    return cupy.ascontiguousarray(cupy.asarray(pixels, dtype=cupy.uint16))


def _stream() -> int:
    import cupy  # noqa: PLC0415  (optional: CuPy)
    return cupy.cuda.get_current_stream().ptr


class _CudaTarget(TextureTarget):
    """Registration once per texture (or buffer); map, write, unmap per frame."""

    def __init__(self) -> None:
        super().__init__()
        self._resource = None

    @classmethod
    def missing(cls) -> str | None:
        return _probe_cuda()

    @classmethod
    def probe(cls) -> str | None:
        reason = cls.missing()
        if reason is not None:
            return reason
        target = cls()
        try:
            target.open(4, 4)
            target.write(np.zeros((4, 4, 4), np.uint16))
        except Exception as exc:  # probing is quiet: report, do not raise
            return str(exc)
        finally:
            target.close()
        return None

    def _map(self) -> None:
        _cuda("cudaGraphicsMapResources", _cudart().cudaGraphicsMapResources(1, self._resource, _stream()))

    def _unmap(self) -> None:
        _cuda("cudaGraphicsUnmapResources", _cudart().cudaGraphicsUnmapResources(1, self._resource, _stream()))

    def close(self) -> None:
        if self._resource is not None:
            res, self._resource = self._resource, None
            _cuda("cudaGraphicsUnregisterResource", _cudart().cudaGraphicsUnregisterResource(res))
        super().close()


class SurfaceTarget(_CudaTarget):
    """The texture itself registered with CUDA and written with ``surf2Dwrite``.

    ``method="kernel"`` (default) launches ``rgba16_to_surface``; ``"copy"`` uses
    ``cudaMemcpy2DToArrayAsync`` into the mapped array instead (same result).
    """

    name = "surface"

    def __init__(self, method: str = "kernel") -> None:
        super().__init__()
        if method not in ("kernel", "copy"):
            raise ValueError(f"method must be 'kernel' or 'copy', got {method!r}")
        self.method = method

    def open(self, width: int, height: int) -> int:
        tex = super().open(width, height)
        rt = _cudart()
        gl_texture_2d = 0x0DE1
        flags = rt.cudaGraphicsRegisterFlags.cudaGraphicsRegisterFlagsSurfaceLoadStore
        self._resource = _cuda("cudaGraphicsGLRegisterImage", rt.cudaGraphicsGLRegisterImage(tex, gl_texture_2d, flags))
        return tex

    def write(self, pixels) -> None:
        src = _device_pixels(pixels)
        self._check_shape(src)
        rt = _cudart()
        self._map()
        try:
            array = _cuda("cudaGraphicsSubResourceGetMappedArray",
                          rt.cudaGraphicsSubResourceGetMappedArray(self._resource, 0, 0))
            if self.method == "copy":
                pitch = self.width * 8
                _cuda("cudaMemcpy2DToArrayAsync", rt.cudaMemcpy2DToArrayAsync(
                    array, 0, 0, src.data.ptr, pitch, pitch, self.height,
                    rt.cudaMemcpyKind.cudaMemcpyDeviceToDevice, _stream()))
            else:
                self._surface_write(rt, array, src)
        finally:
            self._unmap()

    def _surface_write(self, rt, array, src) -> None:
        from cinegpu.decode import nvrtc  # noqa: PLC0415  (optional: CuPy, which nvrtc imports)

        desc = rt.cudaResourceDesc()
        desc.resType = rt.cudaResourceType.cudaResourceTypeArray
        desc.res.array.array = array
        surface = _cuda("cudaCreateSurfaceObject", rt.cudaCreateSurfaceObject(desc))
        try:
            block = (32, 8)
            grid = ((self.width + 31) // 32, (self.height + 7) // 8)
            nvrtc.kernel(CUDA_DIR / "surface.cu", "rgba16_to_surface")(
                grid, block, (src, np.uint64(int(surface)), np.int32(self.width), np.int32(self.height)))
        finally:
            _cuda("cudaDestroySurfaceObject", rt.cudaDestroySurfaceObject(surface))


class PixelBufferTarget(_CudaTarget):
    """A pixel-unpack buffer registered with CUDA, filled on the device, then ``glTexSubImage2D``."""

    name = "pbo"

    def __init__(self) -> None:
        super().__init__()
        self.pbo = 0

    def open(self, width: int, height: int) -> int:
        import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)

        tex = super().open(width, height)
        buf = gl.GLuint()
        gl.glGenBuffers(1, ctypes.byref(buf))
        self.pbo = buf.value
        gl.glBindBuffer(gl.GL_PIXEL_UNPACK_BUFFER, self.pbo)
        gl.glBufferData(gl.GL_PIXEL_UNPACK_BUFFER, width * height * 8, None, gl.GL_STREAM_DRAW)
        gl.glBindBuffer(gl.GL_PIXEL_UNPACK_BUFFER, 0)
        glu.check("glBufferData(GL_PIXEL_UNPACK_BUFFER)")
        rt = _cudart()
        flags = rt.cudaGraphicsRegisterFlags.cudaGraphicsRegisterFlagsWriteDiscard
        self._resource = _cuda("cudaGraphicsGLRegisterBuffer", rt.cudaGraphicsGLRegisterBuffer(self.pbo, flags))
        return tex

    def write(self, pixels) -> None:
        import cupy  # noqa: PLC0415  (optional: CuPy)
        import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)

        src = _device_pixels(pixels)
        self._check_shape(src)
        self._map()
        try:
            ptr, size = _cuda("cudaGraphicsResourceGetMappedPointer",
                              _cudart().cudaGraphicsResourceGetMappedPointer(self._resource))
            if size < src.nbytes:
                raise InteropError("cudaGraphicsResourceGetMappedPointer", f"{size} bytes mapped, {src.nbytes} needed")
            dst = cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(int(ptr), int(size), self), 0)
            dst.copy_from_device_async(src.data, src.nbytes, cupy.cuda.get_current_stream())
        finally:
            self._unmap()
        gl.glBindBuffer(gl.GL_PIXEL_UNPACK_BUFFER, self.pbo)
        try:
            glu.upload_rgba16(self.texture, self.width, self.height, None)
        finally:
            gl.glBindBuffer(gl.GL_PIXEL_UNPACK_BUFFER, 0)

    def close(self) -> None:
        super().close()
        if self.pbo:
            import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)
            gl.glDeleteBuffers(1, ctypes.byref(gl.GLuint(self.pbo)))
            self.pbo = 0


TARGETS = {"surface": SurfaceTarget, "pbo": PixelBufferTarget, "host": HostUploadTarget}


def choose_target(backend: str, *, prefer: str | None = None, log: logging.Logger | None = None) -> TextureTarget:
    """The best target that probes well: surface, then PBO, for ``backend`` "cuda";
    host upload for "cpu" and as the last fallback.  ``prefer`` names one to try first.
    A fallback is logged once (here, per call: the player chooses once)."""
    log = log or logging.getLogger("cinegpu.interop")
    if prefer is not None and prefer not in TARGETS:
        raise ValueError(f"unknown target {prefer!r}: use one of {sorted(TARGETS)}")
    order = ["surface", "pbo"] if backend == "cuda" else []
    if prefer is not None:
        order = [prefer] + [n for n in order if n != prefer]
    reasons = []
    for name in order:
        if name == "host":
            break
        reason = TARGETS[name].probe()
        if reason is None:
            if reasons:
                log.warning("GL interop: %s unavailable (%s); using %s", reasons[0][0], reasons[0][1], name)
            return TARGETS[name]()
        reasons.append((name, reason))
    if reasons:
        log.warning("GL interop: %s; using host upload",
                    "; ".join(f"{n} unavailable ({r})" for n, r in reasons))
    return HostUploadTarget()
