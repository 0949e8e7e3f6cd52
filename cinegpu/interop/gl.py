"""The few OpenGL objects the targets and the presenter share (pyglet's GL bindings).

Everything here needs a current GL context (3.3 core or later) on the calling
thread; :mod:`pyglet.gl` is imported lazily so that choosing headless (EGL) or
windowed mode stays the caller's business.  Each call that can fail is checked
with ``glGetError`` and reported by name.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .errors import InteropError

__all__ = ["check", "create_texture", "delete_texture", "Framebuffer", "upload_rgba16", "upload_r16_rows",
           "create_table_texture", "read_rgba16"]

_GL_ERRORS = {0x0500: "GL_INVALID_ENUM", 0x0501: "GL_INVALID_VALUE", 0x0502: "GL_INVALID_OPERATION",
              0x0505: "GL_OUT_OF_MEMORY", 0x0506: "GL_INVALID_FRAMEBUFFER_OPERATION"}


def _gl():
    import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)
    return gl


def check(call: str) -> None:
    """Raise :class:`InteropError` naming ``call`` if GL has an error pending."""
    err = _gl().glGetError()
    if err:
        raise InteropError(call, _GL_ERRORS.get(err, f"GL error 0x{err:04x}"))


def _new_texture(filtering: int) -> int:
    """A new GL_TEXTURE_2D, bound, clamped to its edges, ``filtering`` (GL_LINEAR, GL_NEAREST)
    both ways; its storage is the caller's to make."""
    gl = _gl()
    tex = gl.GLuint()
    gl.glGenTextures(1, ctypes.byref(tex))
    gl.glBindTexture(gl.GL_TEXTURE_2D, tex.value)
    for name, value in ((gl.GL_TEXTURE_MIN_FILTER, filtering), (gl.GL_TEXTURE_MAG_FILTER, filtering),
                        (gl.GL_TEXTURE_WRAP_S, gl.GL_CLAMP_TO_EDGE), (gl.GL_TEXTURE_WRAP_T, gl.GL_CLAMP_TO_EDGE)):
        gl.glTexParameteri(gl.GL_TEXTURE_2D, name, value)
    return tex.value


def create_texture(width: int, height: int, single: bool = False) -> int:
    """A new GL_TEXTURE_2D, GL_RGBA16 (``single``: GL_R16, one 16-bit channel), ``width`` x
    ``height`` samples, clamped, linear."""
    gl = _gl()
    tex = _new_texture(gl.GL_LINEAR)
    internal, layout = (gl.GL_R16, gl.GL_RED) if single else (gl.GL_RGBA16, gl.GL_RGBA)
    gl.glTexImage2D(gl.GL_TEXTURE_2D, 0, internal, width, height, 0, layout, gl.GL_UNSIGNED_SHORT, None)
    gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
    check(f"glTexImage2D({'GL_R16' if single else 'GL_RGBA16'}, {width}x{height})")
    return tex


def create_table_texture(values: np.ndarray) -> int:
    """A new GL_TEXTURE_2D, GL_R32F, holding the (rows, columns) float32 ``values`` (a table a
    shader reads with texelFetch), nearest, clamped."""
    gl = _gl()
    values = np.ascontiguousarray(values, np.float32)
    tex = _new_texture(gl.GL_NEAREST)
    gl.glPixelStorei(gl.GL_UNPACK_ALIGNMENT, 4)
    gl.glTexImage2D(gl.GL_TEXTURE_2D, 0, gl.GL_R32F, values.shape[1], values.shape[0], 0, gl.GL_RED, gl.GL_FLOAT,
                    values.ctypes.data_as(ctypes.c_void_p))
    gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
    check(f"glTexImage2D(GL_R32F, {values.shape[1]}x{values.shape[0]})")
    return tex


def delete_texture(tex: int) -> None:
    _gl().glDeleteTextures(1, ctypes.byref(_gl().GLuint(tex)))


def upload_rgba16(tex: int, width: int, height: int, pixels) -> None:
    """glTexSubImage2D of a (height, width, 4) uint16 host array, or from the bound PBO when
    ``pixels`` is None (the offset 0 of GL_PIXEL_UNPACK_BUFFER)."""
    gl = _gl()
    gl.glBindTexture(gl.GL_TEXTURE_2D, tex)
    gl.glPixelStorei(gl.GL_UNPACK_ALIGNMENT, 2)
    if pixels is None:
        ptr = None
    else:
        if pixels.shape != (height, width, 4) or pixels.dtype != np.uint16:
            raise ValueError(f"want uint16 ({height}, {width}, 4), got {pixels.dtype} {pixels.shape}")
        pixels = np.ascontiguousarray(pixels)
        ptr = pixels.ctypes.data_as(ctypes.c_void_p)
    gl.glTexSubImage2D(gl.GL_TEXTURE_2D, 0, 0, 0, width, height, gl.GL_RGBA, gl.GL_UNSIGNED_SHORT, ptr)
    gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
    check("glTexSubImage2D")


def upload_r16_rows(tex: int, row: int, plane: np.ndarray) -> None:
    """glTexSubImage2D of an (h, w) uint16 host array into rows ``row``..``row + h`` of a GL_R16
    texture (:func:`create_texture` with ``single``) w samples wide."""
    gl = _gl()
    if plane.ndim != 2 or plane.dtype != np.uint16:
        raise ValueError(f"want a uint16 (h, w) plane, got {plane.dtype} {plane.shape}")
    plane = np.ascontiguousarray(plane)
    gl.glBindTexture(gl.GL_TEXTURE_2D, tex)
    gl.glPixelStorei(gl.GL_UNPACK_ALIGNMENT, 2)
    gl.glTexSubImage2D(gl.GL_TEXTURE_2D, 0, 0, row, plane.shape[1], plane.shape[0], gl.GL_RED, gl.GL_UNSIGNED_SHORT,
                       plane.ctypes.data_as(ctypes.c_void_p))
    gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
    check("glTexSubImage2D(GL_R16)")


def read_rgba16(width: int, height: int, out: np.ndarray | None = None) -> np.ndarray:
    """glReadPixels of the bound read framebuffer: (height, width, 4) uint16, top row first,
    a flipped view of ``out`` (a C-contiguous array of that shape, made when None)."""
    gl = _gl()
    if out is None:
        out = np.empty((height, width, 4), np.uint16)
    elif out.shape != (height, width, 4) or out.dtype != np.uint16 or not out.flags.c_contiguous:
        raise ValueError(f"read_rgba16: want a contiguous uint16 ({height}, {width}, 4) array, "
                         f"got {out.dtype} {out.shape}")
    gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 2)
    gl.glReadPixels(0, 0, width, height, gl.GL_RGBA, gl.GL_UNSIGNED_SHORT, out.ctypes.data_as(ctypes.c_void_p))
    check("glReadPixels")
    return out[::-1]


class Framebuffer:
    """An offscreen GL_RGBA16 framebuffer of ``width`` x ``height`` (screenshots at a frame's size)."""

    def __init__(self, width: int, height: int) -> None:
        gl = _gl()
        self.width, self.height = width, height
        self.texture = create_texture(width, height)
        fbo = gl.GLuint()
        gl.glGenFramebuffers(1, ctypes.byref(fbo))
        self.fbo = fbo.value
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glFramebufferTexture2D(gl.GL_FRAMEBUFFER, gl.GL_COLOR_ATTACHMENT0, gl.GL_TEXTURE_2D, self.texture, 0)
        status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        if status != gl.GL_FRAMEBUFFER_COMPLETE:
            raise InteropError("glCheckFramebufferStatus", f"status 0x{status:04x} for RGBA16 {width}x{height}")

    def bind(self) -> None:
        gl = _gl()
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glViewport(0, 0, self.width, self.height)

    def read(self, out: np.ndarray | None = None) -> np.ndarray:
        """The framebuffer's pixels, (height, width, 4) uint16, top row first (see :func:`read_rgba16`)."""
        gl = _gl()
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        return read_rgba16(self.width, self.height, out)

    def close(self) -> None:
        gl = _gl()
        gl.glDeleteFramebuffers(1, ctypes.byref(gl.GLuint(self.fbo)))
        delete_texture(self.texture)
