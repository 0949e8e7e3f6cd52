"""The player's Y'CbCr pictures (cinegpu/player/picture.py): chroma sub-sampled by whole factors
(4:2:2, 4:2:0, 4:1:1, ...) brought to the luma's size, co-sited, then narrow-range BT.709 to
R'G'B'; checked against the BT.709 formulas worked here in float64."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.media.errors import UnsupportedMedia
from cinegpu.media.images.colour import rgb_to_ycbcr
from cinegpu.player.picture import PictureConverter, chroma_factors, ycbcr_to_rgba16

KR, KB = 0.2126, 0.0722


def bt709_rgb16(y, cb, cr, bits: int) -> np.ndarray:
    """R'G'B' (uint16, 0..65535) of narrow-range BT.709 code values, in float64."""
    k = float(1 << (bits - 8))
    yn = (np.asarray(y, float) / k - 16) / 219
    cbn = (np.asarray(cb, float) / k - 128) / 224
    crn = (np.asarray(cr, float) / k - 128) / 224
    r = yn + 2 * (1 - KR) * crn
    b = yn + 2 * (1 - KB) * cbn
    g = (yn - KR * r - KB * b) / (1 - KR - KB)
    return np.rint(np.clip(np.stack([r, g, b], -1), 0, 1) * 65535).astype(np.int64)


def zeros(*shapes):
    return [np.zeros(s, np.uint16) for s in shapes]


def test_chroma_factors_are_found_from_the_sizes():
    assert chroma_factors(zeros((36, 64), (36, 32), (36, 32))) == (1, 2)        # 4:2:2
    assert chroma_factors(zeros((35, 63), (18, 32), (18, 32))) == (2, 2)        # 4:2:0, odd sizes rounded up
    assert chroma_factors(zeros((8, 16), (8, 4), (8, 4))) == (1, 4)             # 4:1:1
    assert chroma_factors(zeros((8, 16), (8, 16), (8, 16))) == (1, 1)           # 4:4:4
    assert chroma_factors(zeros((8, 16), (8, 5), (8, 5))) is None                # 16 / 5: no whole factor
    assert chroma_factors(zeros((8, 16), (4, 8), (4, 7))) is None                # Cb and Cr differ
    assert chroma_factors(zeros((8, 16), (4, 8))) is None                        # two components


@pytest.mark.parametrize("factors", [(2, 2), (1, 4), (2, 1), (3, 2)])
def test_chroma_is_cosited_and_interpolated_between(factors):
    """Chroma sample (i, j) lies on luma sample (fy i, fx j) and is shown there as coded; a
    luma sample between two chroma samples takes their linear interpolation."""
    fy, fx = factors
    h, w, bits = 7 * fy - 1, 5 * fx, 10
    rng = np.random.default_rng(7)
    ch, cw = -(-h // fy), -(-w // fx)
    cb = rng.integers(300, 724, (ch, cw))
    cr = rng.integers(300, 724, (ch, cw))
    y = np.full((h, w), 502)
    got = ycbcr_to_rgba16([y, cb, cr], [bits] * 3).astype(np.int64)
    assert got.shape == (h, w, 4) and (got[..., 3] == 65535).all()
    # co-sited samples: the chroma as coded
    assert np.abs(got[::fy, ::fx, :3] - bt709_rgb16(y[::fy, ::fx], cb, cr, bits)).max() <= 1

    def linear(c):      # along each axis, between co-sited samples (the last one repeated)
        for axis, f, n in ((0, fy, h), (1, fx, w)):
            pos = np.arange(n) / f
            lo = np.floor(pos).astype(int)
            hi = np.minimum(lo + 1, c.shape[axis] - 1)
            t = pos - lo
            a, b = np.take(c, lo, axis), np.take(c, hi, axis)
            t = t[:, None] if axis == 0 else t[None, :]
            c = a * (1 - t) + b * t
        return c

    assert np.abs(got[..., :3] - bt709_rgb16(y, linear(cb.astype(float)), linear(cr.astype(float)), bits)).max() <= 2


def test_a_uniform_420_colour_is_that_colour_everywhere():
    h, w = 9, 13
    y = np.full((h, w), 3000)
    cb, cr = np.full((5, 7), 1500), np.full((5, 7), 2900)
    got = ycbcr_to_rgba16([y, cb, cr], [12] * 3).astype(np.int64)[..., :3]
    want = bt709_rgb16(3000, 1500, 2900, 12)
    assert np.abs(got - want).max() <= 1


def test_420_undoes_the_conversion_of_smooth_colour():
    """R'G'B' to 4:4:4 Y'CbCr, the chroma kept on even rows and columns (co-sited), back: the
    same picture where the colour changes slowly."""
    yy, xx = np.mgrid[0:24, 0:32] / 32.0
    img = np.stack([0.2 + 0.5 * xx, 0.3 + 0.4 * yy, 0.7 - 0.3 * xx * yy], -1)
    y, cb, cr = rgb_to_ycbcr(img, 12)
    back = ycbcr_to_rgba16([y, cb[::2, ::2], cr[::2, ::2]], [12] * 3)[..., :3].astype(float) / 65535
    # the last row and column have no co-sited chroma after them: theirs is repeated
    assert np.abs(back - img)[:-1, :-1].max() < 0.003


def test_the_converter_shows_420_and_refuses_what_it_cannot_tell():
    convert = PictureConverter(xyz=False)
    y = np.full((6, 8), 512, np.uint16)
    c = np.full((3, 4), 512, np.uint16)
    picture = convert([y, c, c], [10] * 3)
    assert picture.shape == (6, 8, 4)
    with pytest.raises(UnsupportedMedia, match="different sizes"):
        convert([y, np.zeros((6, 5), np.uint16), np.zeros((6, 5), np.uint16)], [10] * 3)     # 8 / 5
    with pytest.raises(UnsupportedMedia, match="different sizes"):
        PictureConverter(xyz=True)([y, c, c], [10] * 3)                                     # X'Y'Z' is never sub-sampled
