"""Draws a frame texture letterboxed at the picture's true aspect, and renders screenshots.

DCI pictures have square pixels, so the true aspect is width / height: flat
1998x1080 is 1.85, scope 2048x858 is 2.39, and a full container 2048x1080 is
1.90; the picture is fitted inside the window and the rest is black.  Texture
row 0 is picture row 0 (the top), whichever target wrote it.
"""

from __future__ import annotations

import ctypes

from cinegpu.interop import gl as glu
from cinegpu.interop.errors import InteropError

__all__ = ["letterbox", "Presenter"]

_VERTEX = b"""#version 330 core
out vec2 uv;
void main() {
    vec2 p = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
    uv = vec2(p.x, 1.0 - p.y);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"""
_FRAGMENT = b"""#version 330 core
uniform sampler2D picture;
in vec2 uv;
out vec4 colour;
void main() { colour = texture(picture, uv); }
"""


def letterbox(frame_w: int, frame_h: int, win_w: int, win_h: int, pixel_aspect: float = 1.0):
    """(x, y, w, h) of the largest rectangle of the picture's aspect centred in the window."""
    if min(frame_w, frame_h, win_w, win_h) <= 0:
        return 0, 0, max(win_w, 0), max(win_h, 0)
    aspect = frame_w * pixel_aspect / frame_h
    if win_w / win_h > aspect:          # window wider: pillarbox
        h = win_h
        w = max(1, round(win_h * aspect))
    else:                               # window taller: letterbox
        w = win_w
        h = max(1, round(win_w / aspect))
    return (win_w - w) // 2, (win_h - h) // 2, w, h


def _gl():
    import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)
    return gl


def _compile(kind: int, source: bytes, what: str) -> int:
    gl = _gl()
    shader = gl.glCreateShader(kind)
    buf = ctypes.create_string_buffer(source)
    ptr = ctypes.cast(ctypes.pointer(ctypes.pointer(buf)), ctypes.POINTER(ctypes.POINTER(gl.GLchar)))
    gl.glShaderSource(shader, 1, ptr, None)
    gl.glCompileShader(shader)
    ok = gl.GLint()
    gl.glGetShaderiv(shader, gl.GL_COMPILE_STATUS, ctypes.byref(ok))
    if not ok.value:
        log = ctypes.create_string_buffer(4096)
        gl.glGetShaderInfoLog(shader, 4096, None, log)
        raise InteropError(f"glCompileShader({what})", log.value.decode(errors="replace"))
    return shader


class Presenter:
    """One shader program drawing a texture as a quad; needs a current GL 3.3 core context."""

    def __init__(self) -> None:
        gl = _gl()
        vs = _compile(gl.GL_VERTEX_SHADER, _VERTEX, "vertex")
        fs = _compile(gl.GL_FRAGMENT_SHADER, _FRAGMENT, "fragment")
        self.program = gl.glCreateProgram()
        gl.glAttachShader(self.program, vs)
        gl.glAttachShader(self.program, fs)
        gl.glLinkProgram(self.program)
        ok = gl.GLint()
        gl.glGetProgramiv(self.program, gl.GL_LINK_STATUS, ctypes.byref(ok))
        gl.glDeleteShader(vs)
        gl.glDeleteShader(fs)
        if not ok.value:
            raise InteropError("glLinkProgram", "the picture shader did not link")
        vao = gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(vao))
        self.vao = vao.value
        self._screens: dict[tuple[int, int], glu.Framebuffer] = {}
        glu.check("Presenter setup")

    def _quad(self, texture: int, nearest: bool) -> None:
        gl = _gl()
        gl.glUseProgram(self.program)
        gl.glActiveTexture(gl.GL_TEXTURE0)
        gl.glBindTexture(gl.GL_TEXTURE_2D, texture)
        f = gl.GL_NEAREST if nearest else gl.GL_LINEAR
        gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_MIN_FILTER, f)
        gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_MAG_FILTER, f)
        gl.glUniform1i(gl.glGetUniformLocation(self.program, b"picture"), 0)
        gl.glBindVertexArray(self.vao)
        gl.glDrawArrays(gl.GL_TRIANGLE_STRIP, 0, 4)
        gl.glBindVertexArray(0)
        gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
        gl.glUseProgram(0)
        glu.check("glDrawArrays(picture)")

    def _blend(self, overlay: int, nearest: bool) -> None:
        """Draw the premultiplied RGBA ``overlay`` texture (subtitles) over what is drawn,
        keeping the destination's alpha."""
        gl = _gl()
        gl.glEnable(gl.GL_BLEND)
        gl.glBlendFuncSeparate(gl.GL_ONE, gl.GL_ONE_MINUS_SRC_ALPHA, gl.GL_ZERO, gl.GL_ONE)
        try:
            self._quad(overlay, nearest)
        finally:
            gl.glDisable(gl.GL_BLEND)

    def draw(self, texture: int | None, frame_w: int, frame_h: int, win_w: int, win_h: int,
             overlay: int | None = None) -> None:
        """Clear the default framebuffer to black and draw ``texture`` letterboxed, and the
        ``overlay`` texture (subtitles, premultiplied RGBA of the frame's size) over it."""
        gl = _gl()
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        gl.glViewport(0, 0, win_w, win_h)
        gl.glClearColor(0.0, 0.0, 0.0, 1.0)
        gl.glClear(gl.GL_COLOR_BUFFER_BIT)
        if texture:
            gl.glViewport(*letterbox(frame_w, frame_h, win_w, win_h))
            self._quad(texture, nearest=(frame_w, frame_h) == (win_w, win_h))
            if overlay:
                self._blend(overlay, nearest=(frame_w, frame_h) == (win_w, win_h))
            gl.glViewport(0, 0, win_w, win_h)

    def screenshot(self, texture: int, frame_w: int, frame_h: int, out=None, overlay: int | None = None):
        """The picture as drawn into an RGBA16 framebuffer of the frame's own size, read back:
        (frame_h, frame_w, 4) uint16, top row first; a view of ``out`` when given (a contiguous
        array of that shape: the caller's buffer, already in memory, saves a 4K frame's page faults);
        ``overlay`` (subtitles) drawn over the picture as on screen."""
        gl = _gl()
        fb = self._screens.get((frame_w, frame_h))
        if fb is None:
            fb = self._screens[(frame_w, frame_h)] = glu.Framebuffer(frame_w, frame_h)
        fb.bind()
        self._quad(texture, nearest=True)
        if overlay:
            self._blend(overlay, nearest=True)
        pixels = fb.read(out)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        return pixels

    def close(self) -> None:
        gl = _gl()
        for fb in self._screens.values():
            fb.close()
        self._screens.clear()
        gl.glDeleteVertexArrays(1, ctypes.byref(gl.GLuint(self.vao)))
        gl.glDeleteProgram(self.program)
