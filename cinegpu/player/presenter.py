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
import logging

from cinegpu.interop import gl as glu
from cinegpu.interop.errors import InteropError
from cinegpu.interop.xyz import XYZTexture, shader_constants

__all__ = ["letterbox", "Presenter"]

log = logging.getLogger(__name__)

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

#: The X'Y'Z' program (:mod:`cinegpu.interop.xyz`): the three planes stacked in one GL_R16
#: texture, X' first (an anaglyph's six: red from the first three, green and blue from the
#: others); each drawn pixel takes the DCI output transform as
#: :func:`cinegpu.decode.transform.xyz_to_rgb` and its CUDA twin do it, in float32 and in their
#: order: the code value (clipped) through the same decoding table (``decode``: an R32F texture
#: of 2^bits entries, 4,096 a row: the 2.6 power computed here instead moved a dark channel by
#: 19 code values where its matrix terms nearly cancel), the matrix's products and sums rounded
#: one by one (``precise``, GLSL 4.00: no fused multiply-add, whose single rounding differs from
#: the reference's two), clipped to 0..1, then ^ 1 / display gamma. Samples are kept half a texel
#: inside each plane, so that a filtered one takes nothing of the next plane.
_XYZ_FRAGMENT = b"""#version 400 core
uniform sampler2D planes;
uniform sampler2D decode;
uniform vec4 crop;
uniform mat3 to_rgb;
uniform float inv_gamma;
uniform int in_max;
uniform int anaglyph;
in vec2 uv;
out vec4 colour;
float linear(vec2 at) {
    int code = clamp(int(texture(planes, at).r * 65535.0 + 0.5), 0, in_max);
    return texelFetch(decode, ivec2(code & 4095, code >> 12), 0).r;
}
float channel(vec3 xyz, vec3 row) {
    precise float v = xyz.x * row.x;
    v = v + xyz.y * row.y;
    v = v + xyz.z * row.z;
    return pow(clamp(v, 0.0, 1.0), inv_gamma);
}
vec3 eye(vec2 p, float first, float stacked) {
    return vec3(linear(vec2(p.x, (p.y + first) / stacked)), linear(vec2(p.x, (p.y + first + 1.0) / stacked)),
                linear(vec2(p.x, (p.y + first + 2.0) / stacked)));
}
void main() {
    float stacked = anaglyph != 0 ? 6.0 : 3.0;
    vec2 half_texel = 0.5 / (vec2(textureSize(planes, 0)) / vec2(1.0, stacked));
    vec2 p = clamp(uv, crop.xy + half_texel, crop.xy + crop.zw - half_texel);
    vec3 xyz = eye(p, 0.0, stacked);
    vec3 right = anaglyph != 0 ? eye(p, 3.0, stacked) : xyz;
    mat3 m = transpose(to_rgb);
    colour = vec4(channel(xyz, m[0]), channel(right, m[1]), channel(right, m[2]), 1.0);
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


def _link(fragment: bytes, what: str) -> int:
    """A program of the quad's vertex shader and ``fragment``, linked."""
    gl = _gl()
    vs = _compile(gl.GL_VERTEX_SHADER, _VERTEX, "vertex")
    fs = _compile(gl.GL_FRAGMENT_SHADER, fragment, f"fragment: {what}")
    program = gl.glCreateProgram()
    gl.glAttachShader(program, vs)
    gl.glAttachShader(program, fs)
    gl.glLinkProgram(program)
    ok = gl.GLint()
    gl.glGetProgramiv(program, gl.GL_LINK_STATUS, ctypes.byref(ok))
    gl.glDeleteShader(vs)
    gl.glDeleteShader(fs)
    if not ok.value:
        raise InteropError("glLinkProgram", f"the {what} shader did not link")
    return program


class Presenter:
    """One shader program drawing a texture as a quad; needs a current GL 3.3 core context.

    ``framebuffer`` is drawn into (0: the window's) and, for quad-buffer stereo,
    ``eye_buffers`` are the left and right eyes' draw buffers of it (default the back left
    and back right buffers; a test gives two colour attachments of its own framebuffer)."""

    def __init__(self, framebuffer: int = 0, eye_buffers: tuple[int, int] | None = None) -> None:
        gl = _gl()
        self.framebuffer = framebuffer
        self.eye_buffers = (gl.GL_BACK_LEFT, gl.GL_BACK_RIGHT) if eye_buffers is None else eye_buffers
        self.program = _link(_FRAGMENT, "picture")
        #: the X'Y'Z' program, linked on first use (None: not tried yet, 0: GLSL 4.00 wanting),
        #: the (bits, primaries) its uniforms were last given and their decoding table
        self._xyz_program: int | None = None
        self._xyz_set: tuple | None = None
        self._decode_table = 0
        vao = gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(vao))
        self.vao = vao.value
        self._screens: dict[tuple[int, int], glu.Framebuffer] = {}
        glu.check("Presenter setup")

    @property
    def converts_xyz(self) -> bool:
        """Whether this context draws X'Y'Z' textures (its GLSL takes 4.00, for ``precise``):
        where not, the player converts such pictures on the host first."""
        if self._xyz_program is None:
            try:
                self._xyz_program = _link(_XYZ_FRAGMENT, "X'Y'Z' picture")
            except InteropError as exc:
                log.info("X'Y'Z' pictures converted on the host: %s", exc)
                self._xyz_program = 0
        return bool(self._xyz_program)

    def _use_xyz(self, xyz: XYZTexture) -> int:
        """The X'Y'Z' program, in use, its uniforms and decoding table set for ``xyz``'s code
        values (texture unit 1 holds the table)."""
        gl = _gl()
        if not self.converts_xyz:
            raise InteropError("Presenter.draw", "this GL context cannot draw X'Y'Z' pictures (GLSL 4.00)")
        program = self._xyz_program
        gl.glUseProgram(program)
        if self._xyz_set != (xyz.in_bits, xyz.primaries):
            constants = shader_constants(xyz.in_bits, xyz.primaries)
            # row-major, hence transposed for GL's column-major mat3
            gl.glUniformMatrix3fv(gl.glGetUniformLocation(program, b"to_rgb"), 1, gl.GL_TRUE,
                                  (gl.GLfloat * 9)(*constants["to_rgb"].ravel().tolist()))
            gl.glUniform1f(gl.glGetUniformLocation(program, b"inv_gamma"), constants["inv_gamma"])
            gl.glUniform1i(gl.glGetUniformLocation(program, b"in_max"), constants["in_max"])
            if self._decode_table:
                glu.delete_texture(self._decode_table)
            self._decode_table = glu.create_table_texture(constants["decode"])
            self._xyz_set = (xyz.in_bits, xyz.primaries)
        gl.glUniform1i(gl.glGetUniformLocation(program, b"anaglyph"), int(xyz.anaglyph))
        gl.glActiveTexture(gl.GL_TEXTURE1)
        gl.glBindTexture(gl.GL_TEXTURE_2D, self._decode_table)
        gl.glUniform1i(gl.glGetUniformLocation(program, b"decode"), 1)
        return program

    def _quad(self, texture: int, nearest: bool, crop: tuple = WHOLE, xyz: XYZTexture | None = None) -> None:
        """Draw ``texture`` (RGBA16), or with ``xyz`` its X'Y'Z' planes converted, as one quad."""
        gl = _gl()
        if xyz is None:
            program = self.program
            gl.glUseProgram(program)
        else:                           # in use, its uniforms set
            program, texture = self._use_xyz(xyz), xyz.texture
        gl.glUniform4f(gl.glGetUniformLocation(program, b"crop"), *crop)
        gl.glActiveTexture(gl.GL_TEXTURE0)
        gl.glBindTexture(gl.GL_TEXTURE_2D, texture)
        f = gl.GL_NEAREST if nearest else gl.GL_LINEAR
        gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_MIN_FILTER, f)
        gl.glTexParameteri(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_MAG_FILTER, f)
        gl.glUniform1i(gl.glGetUniformLocation(program, b"planes" if xyz else b"picture"), 0)
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
             overlay: int | None = None, eyes: int = 1, xyz: XYZTexture | None = None) -> None:
        """Clear the framebuffer to black and draw ``texture`` letterboxed, and the
        ``overlay`` texture (subtitles, premultiplied RGBA of the frame's size) over it.
        ``eyes`` 2: ``texture`` is the two eyes top-bottom (``frame_h`` both), each drawn
        into its eye's buffer, ``overlay`` (of one eye's size) over each. ``xyz``: the picture
        is that X'Y'Z' texture's instead (:mod:`cinegpu.interop.xyz`), converted as drawn."""
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
                self._quad(texture, nearest, crop, xyz)
                if overlay:
                    self._blend(overlay, nearest)
                gl.glViewport(0, 0, win_w, win_h)
        if eyes == 2:
            gl.glDrawBuffer(self.eye_buffers[0] if self.framebuffer else gl.GL_BACK)
        glu.check("Presenter.draw")

    def screenshot(self, texture: int, frame_w: int, frame_h: int, out=None, overlay: int | None = None,
                   eyes: int = 1, xyz: XYZTexture | None = None):
        """The picture as drawn into an RGBA16 framebuffer of the frame's own size, read back:
        (frame_h, frame_w, 4) uint16, top row first; a view of ``out`` when given (a contiguous
        array of that shape: the caller's buffer, already in memory, saves a 4K frame's page faults);
        ``overlay`` (subtitles) drawn over the picture as on screen (``eyes`` 2: over each eye
        of the top-bottom picture); ``xyz`` as for :meth:`draw`."""
        gl = _gl()
        fb = self._screens.get((frame_w, frame_h))
        if fb is None:
            fb = self._screens[(frame_w, frame_h)] = glu.Framebuffer(frame_w, frame_h)
        fb.bind()
        eye_h = frame_h // eyes
        for k in range(eyes):
            if eyes > 1:        # the left eye on top: GL's rows count from the bottom
                gl.glViewport(0, (eyes - 1 - k) * eye_h, frame_w, eye_h)
            self._quad(texture, True, EYE_CROPS[k] if eyes == 2 else WHOLE, xyz)
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
        if self._xyz_program:
            gl.glDeleteProgram(self._xyz_program)
        if self._decode_table:
            glu.delete_texture(self._decode_table)
        self._xyz_program, self._decode_table, self._xyz_set = None, 0, None
