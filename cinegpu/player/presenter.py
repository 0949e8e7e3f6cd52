"""Draws a frame texture letterboxed at the picture's true aspect, and renders screenshots.

DCI pictures have square pixels, so the true aspect is width / height: flat
1998x1080 is 1.85, scope 2048x858 is 2.39, and a full container 2048x1080 is
1.90; the picture is fitted inside the window and the rest is black.  Texture
row 0 is picture row 0 (the top), whichever target wrote it.

Quad-buffer stereo (``eyes=2``): the texture holds the left eye above the right one (a
top-bottom picture, :mod:`.stereo`), and each eye is drawn whole into its own back buffer
(``GL_BACK_LEFT``, ``GL_BACK_RIGHT``: OpenGL 3.3 core, 4.2.1), letterboxed as one eye, the
subtitles over each.
"""

from __future__ import annotations

import ctypes

from cinegpu.interop import gl as glu
from cinegpu.interop.errors import InteropError

__all__ = ["letterbox", "Presenter"]

_VERTEX = b"""#version 330 core
uniform vec4 crop;      // the part of the texture drawn: x0, y0 (top), width, height (0..1)
out vec2 uv;
void main() {
    vec2 p = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));
    uv = crop.xy + crop.zw * vec2(p.x, 1.0 - p.y);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"""
#: The whole texture, and each eye of a top-bottom picture (left above), as ``crop``.
WHOLE = (0.0, 0.0, 1.0, 1.0)
EYE_CROPS = ((0.0, 0.0, 1.0, 0.5), (0.0, 0.5, 1.0, 0.5))
_FRAGMENT = b"""#version 330 core
uniform sampler2D picture;
uniform vec4 crop;
in vec2 uv;
out vec4 colour;
void main() {
    // samples kept half a texel inside the part drawn: a filtered eye takes nothing of the other
    vec2 half_texel = 0.5 / vec2(textureSize(picture, 0));
    colour = texture(picture, clamp(uv, crop.xy + half_texel, crop.xy + crop.zw - half_texel));
}
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
    """One shader program drawing a texture as a quad; needs a current GL 3.3 core context.

    ``framebuffer`` is drawn into (0: the window's) and, for quad-buffer stereo,
    ``eye_buffers`` are the left and right eyes' draw buffers of it (default the back left
    and back right buffers; a test gives two colour attachments of its own framebuffer)."""

    def __init__(self, framebuffer: int = 0, eye_buffers: tuple[int, int] | None = None) -> None:
        gl = _gl()
        self.framebuffer = framebuffer
        self.eye_buffers = (gl.GL_BACK_LEFT, gl.GL_BACK_RIGHT) if eye_buffers is None else eye_buffers
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

    def _quad(self, texture: int, nearest: bool, crop: tuple = WHOLE) -> None:
        gl = _gl()
        gl.glUseProgram(self.program)
        gl.glUniform4f(gl.glGetUniformLocation(self.program, b"crop"), *crop)
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
             overlay: int | None = None, eyes: int = 1) -> None:
        """Clear the framebuffer to black and draw ``texture`` letterboxed, and the
        ``overlay`` texture (subtitles, premultiplied RGBA of the frame's size) over it.
        ``eyes`` 2: ``texture`` is the two eyes top-bottom (``frame_h`` both), each drawn
        into its eye's buffer, ``overlay`` (of one eye's size) over each."""
        gl = _gl()
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.framebuffer)
        eye_h = frame_h // eyes
        nearest = (frame_w, eye_h) == (win_w, win_h)
        for crop, buffer in zip(EYE_CROPS, self.eye_buffers) if eyes == 2 else ((WHOLE, None),):
            if buffer is not None:
                gl.glDrawBuffer(buffer)
            gl.glViewport(0, 0, win_w, win_h)
            gl.glClearColor(0.0, 0.0, 0.0, 1.0)
            gl.glClear(gl.GL_COLOR_BUFFER_BIT)
            if texture:
                gl.glViewport(*letterbox(frame_w, eye_h, win_w, win_h))
                self._quad(texture, nearest, crop)
                if overlay:
                    self._blend(overlay, nearest)
                gl.glViewport(0, 0, win_w, win_h)
        if eyes == 2:
            gl.glDrawBuffer(self.eye_buffers[0] if self.framebuffer else gl.GL_BACK)
        glu.check("Presenter.draw")

    def screenshot(self, texture: int, frame_w: int, frame_h: int, out=None, overlay: int | None = None,
                   eyes: int = 1):
        """The picture as drawn into an RGBA16 framebuffer of the frame's own size, read back:
        (frame_h, frame_w, 4) uint16, top row first; a view of ``out`` when given (a contiguous
        array of that shape: the caller's buffer, already in memory, saves a 4K frame's page faults);
        ``overlay`` (subtitles) drawn over the picture as on screen (``eyes`` 2: over each eye
        of the top-bottom picture)."""
        gl = _gl()
        fb = self._screens.get((frame_w, frame_h))
        if fb is None:
            fb = self._screens[(frame_w, frame_h)] = glu.Framebuffer(frame_w, frame_h)
        fb.bind()
        eye_h = frame_h // eyes
        for k in range(eyes):
            if eyes > 1:        # the left eye on top: GL's rows count from the bottom
                gl.glViewport(0, (eyes - 1 - k) * eye_h, frame_w, eye_h)
            self._quad(texture, True, EYE_CROPS[k] if eyes == 2 else WHOLE)
            if overlay:
                self._blend(overlay, nearest=True)
        gl.glViewport(0, 0, frame_w, frame_h)
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
