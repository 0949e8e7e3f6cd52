"""The presenter (``cinegpu.player.presenter``) on a real headless OpenGL context: quad-buffer
stereo draws each eye of a top-bottom picture into its own draw buffer, scaled without taking
anything of the other eye, and a screenshot keeps the two eyes top-bottom with the subtitles
over each."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cinegpu.interop import gl as glu
from cinegpu.interop.window import open_window
from cinegpu.player.presenter import Presenter

RED, BLUE = (65535, 0, 0, 65535), (0, 0, 65535, 65535)


@pytest.fixture
def context(gl):
    window = open_window(8, 8, headless=True)
    yield
    window.close()


def _two_eyes(eye_w: int, eye_h: int) -> np.ndarray:
    """A top-bottom picture: the left eye red, the right one blue."""
    pic = np.empty((2 * eye_h, eye_w, 4), np.uint16)
    pic[:eye_h], pic[eye_h:] = RED, BLUE
    return pic


class TwoBuffers:
    """A framebuffer with two RGBA16 colour attachments standing for the back left and back
    right buffers of a stereo window."""

    def __init__(self, w: int, h: int) -> None:
        import pyglet.gl as gl

        self.w, self.h = w, h
        self.textures = [glu.create_texture(w, h) for _ in range(2)]
        fbo = gl.GLuint()
        gl.glGenFramebuffers(1, ctypes.byref(fbo))
        self.fbo = fbo.value
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        self.attachments = (gl.GL_COLOR_ATTACHMENT0, gl.GL_COLOR_ATTACHMENT1)
        for a, t in zip(self.attachments, self.textures):
            gl.glFramebufferTexture2D(gl.GL_FRAMEBUFFER, a, gl.GL_TEXTURE_2D, t, 0)
        assert gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER) == gl.GL_FRAMEBUFFER_COMPLETE

    def read(self, k: int) -> np.ndarray:
        import pyglet.gl as gl

        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glReadBuffer(self.attachments[k])
        return glu.read_rgba16(self.w, self.h).copy()


def test_quad_buffer_draws_each_eye_into_its_buffer_without_the_other(context):
    eye_w, eye_h = 16, 8
    texture = glu.create_texture(eye_w, 2 * eye_h)
    glu.upload_rgba16(texture, eye_w, 2 * eye_h, _two_eyes(eye_w, eye_h))
    buffers = TwoBuffers(64, 32)       # the eye's aspect, 4 times its size: filtered
    presenter = Presenter(framebuffer=buffers.fbo, eye_buffers=buffers.attachments)
    presenter.draw(texture, eye_w, 2 * eye_h, 64, 32, eyes=2)
    left, right = buffers.read(0), buffers.read(1)
    # each eye whole in its buffer, up to the seam: a filter reaching over it would carry the
    # other eye's colour into the rows beside it
    assert (left == RED).all(), "the right eye filtered into the left eye's buffer"
    assert (right == BLUE).all(), "the left eye filtered into the right eye's buffer"
    presenter.draw(texture, eye_w, 2 * eye_h, 64, 32)       # one picture: both eyes, squeezed
    presenter.close()
    glu.delete_texture(texture)


def test_a_quad_buffer_screenshot_is_top_bottom_with_the_subtitles_over_each_eye(context):
    eye_w, eye_h = 16, 8
    texture = glu.create_texture(eye_w, 2 * eye_h)
    glu.upload_rgba16(texture, eye_w, 2 * eye_h, _two_eyes(eye_w, eye_h))
    overlay = np.zeros((eye_h, eye_w, 4), np.uint16)
    overlay[-2:, 4:12] = 65535                     # a white cue on each eye's last two rows
    cue = glu.create_texture(eye_w, eye_h)
    glu.upload_rgba16(cue, eye_w, eye_h, overlay)
    presenter = Presenter()
    shot = presenter.screenshot(texture, eye_w, 2 * eye_h, overlay=cue, eyes=2)
    want = _two_eyes(eye_w, eye_h)
    want[eye_h - 2 : eye_h, 4:12] = want[2 * eye_h - 2 :, 4:12] = 65535
    assert np.array_equal(shot, want)
    presenter.close()
    glu.delete_texture(texture)
    glu.delete_texture(cue)


def test_a_window_without_stereo_buffers_is_refused_for_quad_buffer(gl):
    """EGL hands a mono config for a stereo one: the config given is checked."""
    from cinegpu.interop.errors import NoStereoDisplay

    with pytest.raises(NoStereoDisplay, match="no quad-buffered stereo"):
        open_window(8, 8, headless=True, stereo=True)
    open_window(8, 8, headless=True).close()     # and a mono window still opens after it
