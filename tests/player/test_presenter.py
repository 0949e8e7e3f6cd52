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


def _xyz_planes(h: int, w: int, seed: int) -> tuple:
    """Three 12-bit planes of random code values, with black, the top and values past it."""
    rng = np.random.default_rng(seed)
    planes = tuple(rng.integers(0, 4096, (h, w)).astype(np.uint16) for _ in range(3))
    for p in planes:
        p[0, :4] = (0, 1, 4095, 4095)
    planes[1][1, 0] = 5000     # past 12 bits: clipped, as the reference clips
    return planes


def _gradients(h: int, w: int) -> tuple:
    """X' across, Y' down, Z' along the diagonal, each over the whole 12-bit range: among them
    the colours whose linear R, G or B is a near cancellation of the matrix's terms."""
    yy, xx = np.mgrid[0:h, 0:w]
    return (((xx * 4095) // (w - 1)).astype(np.uint16), ((yy * 4095) // (h - 1)).astype(np.uint16),
            (((xx + yy) * 4095) // (w + h - 2)).astype(np.uint16))


@pytest.mark.parametrize("primaries", ["p3d65", "rec709"])
def test_xyz_planes_drawn_through_the_shader_match_the_reference_transform(context, primaries):
    """X'Y'Z' planes on the host target are converted by the presenter's shader
    (:mod:`cinegpu.interop.xyz`): the screenshot within one 16-bit code value of
    ``xyz_to_rgb``, every sample of an odd-sized picture of random code values (the planes'
    borders included) and of gradients over the whole range (dark channels that are a near
    cancellation of the matrix's terms: the 2.6 power computed in the shader rather than the
    reference's table moved one by 19 code values); an RGBA16 picture written after them is
    drawn as it is again."""
    from cinegpu.interop.targets import HostUploadTarget
    from cinegpu.interop.xyz import XYZPlanes

    h, w = 37, 53
    target, presenter = HostUploadTarget(), Presenter()
    try:
        if not presenter.converts_xyz:
            pytest.skip("this GL context takes no GLSL 4.00: X'Y'Z' pictures are converted on the host")
        for planes, (ph, pw) in ((_xyz_planes(h, w, 7), (h, w)), (_gradients(540, 999), (540, 999))):
            target.close()
            target.open(pw, ph)
            picture = XYZPlanes(planes, 12, primaries)
            target.write(picture)
            assert target.xyz is not None
            got = presenter.screenshot(target.texture, pw, ph, xyz=target.xyz).astype(np.int64)
            want = picture.rgba16().astype(np.int64)
            assert got.shape == want.shape == (ph, pw, 4)
            assert np.abs(got - want).max() <= 1, np.abs(got - want).max()
            assert (got[..., 3] == 65535).all()
        rgba = np.random.default_rng(3).integers(0, 65536, (ph, pw, 4)).astype(np.uint16)
        target.write(rgba)
        assert target.xyz is None
        assert np.array_equal(presenter.screenshot(target.texture, pw, ph, xyz=target.xyz), rgba)
    finally:
        presenter.close()
        target.close()


def test_xyz_planes_of_another_size_are_refused(context):
    from cinegpu.interop.targets import HostUploadTarget
    from cinegpu.interop.xyz import XYZPlanes

    target = HostUploadTarget()
    try:
        target.open(16, 8)
        with pytest.raises(ValueError, match="X'Y'Z' planes"):
            target.write(XYZPlanes(_xyz_planes(8, 15, 1), 12, "p3d65"))
    finally:
        target.close()


def test_an_anaglyph_of_xyz_planes_takes_red_from_the_left_eye(context):
    """Two eyes' X'Y'Z' planes joined as an anaglyph (six planes, :func:`cinegpu.player.stereo.join`)
    are drawn as red from the left eye's transform and green and blue from the right one's: the
    very values each eye's picture gets drawn alone, and within one code value of the reference."""
    from cinegpu.interop.targets import HostUploadTarget
    from cinegpu.interop.xyz import XYZPlanes
    from cinegpu.player.stereo import join

    h, w = 29, 41
    left, right = XYZPlanes(_xyz_planes(h, w, 11), 12, "p3d65"), XYZPlanes(_gradients(h, w), 12, "p3d65")
    target, presenter = HostUploadTarget(), Presenter()
    try:
        if not presenter.converts_xyz:
            pytest.skip("this GL context takes no GLSL 4.00: X'Y'Z' pictures are converted on the host")
        target.open(w, h)
        shots = {}
        for name, picture in (("left", left), ("right", right), ("anaglyph", join("anaglyph", left, right))):
            target.write(picture)
            shots[name] = presenter.screenshot(target.texture, w, h, xyz=target.xyz).astype(np.int64)
        mixed = shots["anaglyph"]
        assert np.array_equal(mixed[..., 0], shots["left"][..., 0])
        assert np.array_equal(mixed[..., 1:], shots["right"][..., 1:])
        want = join("anaglyph", left, right).rgba16().astype(np.int64)
        assert np.abs(mixed - want).max() <= 1
    finally:
        presenter.close()
        target.close()
