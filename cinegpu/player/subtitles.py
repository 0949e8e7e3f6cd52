"""Subtitles over the picture: cues rasterised with Pillow (FreeType), composited in OpenGL.

:class:`SubtitleRenderer` turns the cues a :class:`~cinegpu.media.subtitles.track.CompositionSubtitles`
shows at a frame into one premultiplied RGBA8 picture of the frame's size (row 0 the top, as
the picture texture): each text line in the font its package carries (Pillow's FreeType
rendering, with libraqm's layout where Pillow has it), else the default font, DejaVu Sans, found
through fontconfig (``fc-match``) or Pillow's search path, else Pillow's built-in bitmap font.
Sizes follow libdcp: points of a screen 11 inches high, so ``Size`` 42 is 42/792 of the
picture's height.  Placement: ``top`` puts the top of the line's box at ``VPosition`` percent
of the height from the top; ``center`` its centre ``VPosition`` below the middle; ``bottom``
puts an Interop line's baseline (an SMPTE line's box bottom) ``VPosition`` above the bottom;
``HAlign``/``HPosition`` likewise across.  Vertical lines (``Direction`` ``ttb``/``btt``) stack
their characters upright in a column, top down or bottom up.  ``border`` strokes the glyphs in the effect colour
(1/20 of the size, at least 1 pixel), ``shadow`` draws them offset down and right by as much;
italic without an italic font is a 0.2 shear, bold a stroke in the text colour.  PNG
subtitles are drawn at their pixel size on a 1080-line picture, scaled with the height.
Fades scale the opacity of the whole cue.

Each cue's patches are made once and kept while it shows; a frame's picture is composed again
only when the set of cues or an opacity (in 1/64 steps) changes.  :class:`SubtitleOverlay`
keeps that picture in a GL texture for :class:`~.presenter.Presenter`, which blends it over
the picture on screen and in screenshots.
"""

from __future__ import annotations

import ctypes
import functools
import io
import logging
import shutil
import subprocess
from dataclasses import replace
from fractions import Fraction

import numpy as np
from PIL import Image, ImageDraw, ImageFont, features

from cinegpu.interop import gl as glu
from cinegpu.media.errors import MediaError
from cinegpu.media.subtitles.documents import composition_subtitles, read_subtitles
from cinegpu.media.subtitles.track import CompositionSubtitles, Cue, LayeredSubtitles, Style, TextLine, TextRun

__all__ = ["SubtitleRenderer", "SubtitleOverlay", "default_font_path"]

log = logging.getLogger("cinegpu.player")

#: Opacity steps of a fade (the overlay is composed again at each).
ALPHA_STEPS = 64
#: Cues whose patches are kept.
CACHE_CUES = 64


@functools.lru_cache(maxsize=1)
def default_font_path() -> str | None:
    """DejaVu Sans through fontconfig, else Pillow's own search; None when neither finds it."""
    fc = shutil.which("fc-match")
    if fc:
        try:
            out = subprocess.run([fc, "-f", "%{file}", "DejaVu Sans:style=Book"], capture_output=True,
                                 text=True, timeout=5).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        ImageFont.truetype("DejaVuSans.ttf", 10)
        return "DejaVuSans.ttf"
    except OSError:
        return None


class SubtitleRenderer:
    """Rasterises cues for pictures of ``width`` x ``height`` with the package's ``fonts``
    (id -> font file bytes, None for a missing one)."""

    def __init__(self, width: int, height: int, fonts: dict[str, bytes | None] | None = None) -> None:
        self.width, self.height = width, height
        self.fonts = dict(fonts or {})
        self._faces: dict = {}
        self._patches: dict[int, tuple[Cue, list]] = {}
        self._warned: set[str] = set()

    # ------------------------------------------------------------ fonts

    def _face(self, style: Style, px: int):
        key = (style.font, px)
        face = self._faces.get(key)
        if face is None:
            data = self.fonts.get(style.font) if style.font is not None else None
            if data is not None:
                try:
                    face = ImageFont.truetype(io.BytesIO(data), px)
                except OSError as exc:
                    self._warn(f"font {style.font!r} cannot be read by FreeType ({exc}): the default font is used")
            if face is None:
                path = default_font_path()
                face = ImageFont.truetype(path, px) if path else ImageFont.load_default(px)
            self._faces[key] = face
        return face

    def _warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning("subtitles: %s", message)

    # ------------------------------------------------------------ one line

    def _line(self, line: TextLine, interop: bool):
        """(premultiplied float32 RGBA patch, baseline row in the patch) of one text line."""
        if line.place.direction in ("ttb", "btt"):
            return self._vertical(line, interop)

        runs = []
        for run in line.runs:
            st = run.style
            px = max(4, round(st.size_in_pixels(self.height)))
            face = self._face(st, px)
            ascent, descent = face.getmetrics()
            text = run.text[::-1] if line.place.direction == "rtl" and not _raqm() else run.text
            runs.append((text, st, px, face, ascent, descent, max(1, round(face.getlength(text)))))
        if not runs:
            return None, 0
        pad = max(max(r[2] for r in runs) // 10, 4)
        ascent = max(r[4] for r in runs)
        descent = max(r[5] for r in runs)
        width = sum(round(r[6] * r[1].aspect_adjust) for r in runs) + 2 * pad
        height = ascent + descent + 2 * pad
        out = np.zeros((height, width, 4), np.float32)
        x = pad
        for text, st, px, face, _a, _d, length in runs:
            effect = max(1, round(px / 20))
            w = length + 2 * pad
            masks = {}
            for what, stroke in (("fill", effect // 2 if st.bold else 0), ("effect", effect)):
                if what == "effect" and st.effect == "none":
                    continue
                m = Image.new("L", (w, height))
                ImageDraw.Draw(m).text((pad, pad + ascent), text, font=face, fill=255, anchor="ls",
                                       stroke_width=stroke if what == "fill" or st.effect == "border" else 0,
                                       stroke_fill=255)
                if st.italic:
                    m = m.transform(m.size, Image.Transform.AFFINE, (1, 0.2, -0.2 * (pad + ascent), 0, 1, 0),
                                    Image.Resampling.BILINEAR)
                if st.aspect_adjust != 1.0:
                    m = m.resize((max(1, round(w * st.aspect_adjust)), height), Image.Resampling.BILINEAR)
                masks[what] = np.asarray(m, np.float32) / 255
            layers = []
            if "effect" in masks:
                em = masks["effect"]
                if st.effect == "shadow":
                    em = np.roll(np.roll(em, effect, 0), effect, 1)
                layers.append((em, st.effect_colour))
            layers.append((masks["fill"], st.colour))
            mw = masks["fill"].shape[1]
            x0 = x - pad
            region = out[:, max(0, x0):x0 + mw]
            cut = masks["fill"][:, max(0, -x0):][:, :region.shape[1]].shape[1]
            for mask, colour in layers:
                m = mask[:, max(0, -x0):][:, :cut] * (colour.a / 255)
                rgb = np.array(colour.rgba[:3], np.float32) / 255
                region[:, :cut, :3] = rgb * m[..., None] + region[:, :cut, :3] * (1 - m[..., None])
                region[:, :cut, 3] = m + region[:, :cut, 3] * (1 - m)
            x += round(length * st.aspect_adjust)
        return out, pad + ascent

    def _vertical(self, line: TextLine, interop: bool):
        """A ``ttb`` line: its characters one under the other, each centred across the column
        and advanced by its font's line height (ascent + descent); ``btt`` stacks them from the
        bottom up.  The baseline returned is the column's last row, so that a bottom-aligned
        Interop line ends at its VPosition."""
        flat = [(ch, run.style) for run in line.runs for ch in run.text]
        if line.place.direction == "btt":
            flat.reverse()
        horizontal = replace(line.place, direction="ltr")
        cells = []
        for ch, st in flat:
            patch, base = self._line(TextLine((TextRun(ch, st),), horizontal), interop)
            if patch is None:
                continue
            face = self._face(st, max(4, round(st.size_in_pixels(self.height))))
            ascent, descent = face.getmetrics()
            pad = base - ascent                  # the horizontal patch's padding
            cells.append((patch, pad, ascent + descent))
        if not cells:
            return None, 0
        pad = max(c[1] for c in cells)
        width = max(c[0].shape[1] for c in cells)
        height = sum(c[2] for c in cells) + 2 * pad
        out = np.zeros((height, width, 4), np.float32)
        y = pad
        for patch, p, step in cells:
            h, w = patch.shape[:2]
            x0, y0 = (width - w) // 2, y - p
            y0c, y1c = max(0, y0), min(height, y0 + h)
            src = patch[y0c - y0:y1c - y0]
            dst = out[y0c:y1c, x0:x0 + w]
            dst *= 1 - src[..., 3:4]
            dst += src
            y += step
        return out, height - pad

    def _image(self, png: bytes):
        try:
            with Image.open(io.BytesIO(png)) as im:
                if im.width * im.height > 4 * self.width * self.height:
                    raise ValueError(f"{im.width}x{im.height} is larger than the picture")
                im = im.convert("RGBA")
                scale = self.height / 1080
                if scale != 1:
                    im = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))),
                                   Image.Resampling.BILINEAR)
                a = np.asarray(im, np.float32) / 255
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            self._warn(f"PNG subtitle not shown: {exc}")
            return None
        a[..., :3] *= a[..., 3:4]
        return a

    def _place(self, patch, place, baseline: int | None, interop: bool) -> tuple[int, int]:
        """Top-left corner (x, y) of ``patch`` on the picture."""
        H, W = self.height, self.width
        h, w = patch.shape[:2]
        v, hp = place.vposition / 100, place.hposition / 100
        if place.valign == "top":
            y = v * H
        elif place.valign == "bottom":
            y = H - v * H - (baseline if interop and baseline is not None else h)
        else:
            y = (0.5 + v) * H - h / 2
        if place.halign == "left":
            x = hp * W
        elif place.halign == "right":
            x = W - hp * W - w
        else:
            x = (0.5 + hp) * W - w / 2
        return round(x), round(y)

    def patches(self, cue: Cue, interop: bool = True) -> list:
        """(x, y, premultiplied RGBA float32 patch) of each line and image of ``cue``, cached."""
        hit = self._patches.get(id(cue))
        if hit is not None and hit[0] is cue:
            return hit[1]
        out = []
        for line in cue.lines:
            patch, baseline = self._line(line, interop)
            if patch is not None:
                out.append((*self._place(patch, line.place, baseline, interop), patch))
        for image in cue.images:
            patch = self._image(image.png)
            if patch is not None:
                out.append((*self._place(patch, image.place, None, interop), patch))
        if len(self._patches) >= CACHE_CUES:
            self._patches.pop(next(iter(self._patches)))
        self._patches[id(cue)] = (cue, out)
        return out

    def compose(self, cues: list[tuple[Cue, float]], interop: bool = True) -> np.ndarray:
        """The premultiplied RGBA8 picture (height, width, 4) of ``cues`` at their opacities."""
        canvas = np.zeros((self.height, self.width, 4), np.float32)
        for cue, alpha in cues:
            for x, y, patch in self.patches(cue, interop):
                h, w = patch.shape[:2]
                x0, y0, x1, y1 = max(0, x), max(0, y), min(self.width, x + w), min(self.height, y + h)
                if x0 >= x1 or y0 >= y1:
                    continue
                src = patch[y0 - y:y1 - y, x0 - x:x1 - x] * alpha
                dst = canvas[y0:y1, x0:x1]
                dst *= 1 - src[..., 3:4]
                dst += src
        return np.rint(np.clip(canvas, 0, 1) * 255).astype(np.uint8)


@functools.lru_cache(maxsize=1)
def _raqm() -> bool:
    return bool(features.check("raqm"))


class SubtitleOverlay:
    """The subtitles of frame ``n`` in a GL texture of the picture's size: :meth:`texture_for`
    returns its name, or None where no cue shows.  Needs the player's current GL context."""

    def __init__(self, subtitles, width: int, height: int) -> None:
        self.subtitles = subtitles
        self.renderer = SubtitleRenderer(width, height, subtitles.fonts())
        self.interop = all(r.track.dialect != "smpte" for r in subtitles.reels)
        self.width, self.height = width, height
        self._texture: int | None = None
        self._key: tuple | None = None

    def texture_for(self, n: int) -> int | None:
        cues = self.subtitles.at(n)
        if not cues:
            return None
        key = tuple((id(c), round(a * ALPHA_STEPS)) for c, a in cues)
        if key != self._key:
            steps = [(c, round(a * ALPHA_STEPS) / ALPHA_STEPS) for c, a in cues]
            self._upload(self.renderer.compose(steps, self.interop))
            self._key = key
        return self._texture

    def _upload(self, rgba: np.ndarray) -> None:
        import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)

        if self._texture is None:
            tex = gl.GLuint()
            gl.glGenTextures(1, ctypes.byref(tex))
            self._texture = tex.value
            gl.glBindTexture(gl.GL_TEXTURE_2D, self._texture)
            gl.glTexImage2D(gl.GL_TEXTURE_2D, 0, gl.GL_RGBA8, self.width, self.height, 0, gl.GL_RGBA,
                            gl.GL_UNSIGNED_BYTE, None)
        gl.glBindTexture(gl.GL_TEXTURE_2D, self._texture)
        gl.glPixelStorei(gl.GL_UNPACK_ALIGNMENT, 1)
        data = np.ascontiguousarray(rgba)
        gl.glTexSubImage2D(gl.GL_TEXTURE_2D, 0, 0, 0, self.width, self.height, gl.GL_RGBA,
                           gl.GL_UNSIGNED_BYTE, data.ctypes.data_as(ctypes.c_void_p))
        gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
        glu.check("glTexSubImage2D(subtitles)")

    def close(self) -> None:
        if self._texture is not None:
            import pyglet.gl as gl  # noqa: PLC0415  (pyglet.gl: after open_window's headless choice)
            gl.glDeleteTextures(1, ctypes.byref(gl.GLuint(self._texture)))
            self._texture = None


def subtitles_for(media, frames: int, rate, *, on: bool = True, file=None, captions: bool = False):
    """What to draw over ``media`` (an opened :class:`~cinegpu.media.source.Source`, or None) of
    ``frames`` frames at ``rate``: ``file`` (an Interop/SMPTE XML or SRT file, from frame 0) when
    given, else its composition's subtitles (when ``on``), with its closed captions (ST 429-12)
    over them when ``captions`` (a :class:`~cinegpu.media.subtitles.track.LayeredSubtitles`);
    None when there is nothing to draw.  A document that cannot be read is a warning (logged)
    and shows nothing; playback goes on."""

    layers = []
    if on and file is not None:
        try:
            layers.append(CompositionSubtitles.single(read_subtitles(file), frames, Fraction(rate)))
        except MediaError as exc:
            log.warning("subtitles not shown: %s", exc)
    elif on:
        layers.append(_composition_layer(media, rate, "subtitle"))
    if captions:
        layers.append(_composition_layer(media, rate, "caption"))
    layers = [layer for layer in layers if layer]
    if not layers:
        return None
    return layers[0] if len(layers) == 1 else LayeredSubtitles(layers)


def _composition_layer(media, rate, kind: str) -> CompositionSubtitles | None:
    """``media``'s composition's subtitles or closed captions (``kind``), or None."""
    comp = getattr(media, "composition", None)
    if comp is None or not any(r.of_kind(kind) for r in comp.reels):
        return None
    pkg = getattr(media, "package", None)
    return composition_subtitles(comp, root=pkg.root if pkg is not None else None, edit_rate=rate,
                                 keys=getattr(media, "keys", None), kind=kind)
