"""Tier-1 decoding of code-blocks made by OpenJPEG (through Pillow): an external check of the
MQ tables and context rules that an encode/decode round trip cannot give.

One 64x64 single-component image, no DWT levels, one code-block, one layer: the packet is
parsed here by hand (T.800 B.10) and the block decoded with decode_codeblock; 5/3 with zero
levels is the identity, so trunc(value / 2) + 128 must give the image back.
"""

import io

import numpy as np
import pytest

from cinegpu.decode import tier1 as t1

Image = pytest.importorskip("PIL.Image")
features = pytest.importorskip("PIL.features")


class _Bits:
    """Packet header bit reader with the B.10.1 stuffing (7 bits after 0xFF)."""

    def __init__(self, data, pos):
        self.data, self.pos, self.left, self.byte = data, pos, 0, 0

    def bit(self):
        if self.left == 0:
            self.left = 7 if self.byte == 0xFF else 8
            self.byte = self.data[self.pos]
            self.pos += 1
        self.left -= 1
        return (self.byte >> self.left) & 1

    def bits(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | self.bit()
        return v

    def end(self):
        return self.pos + (1 if self.byte == 0xFF else 0)


def _num_passes(r):
    """Table B.4 codewords."""
    if not r.bit():
        return 1
    if not r.bit():
        return 2
    v = r.bits(2)
    if v < 3:
        return 3 + v
    v = r.bits(5)
    return 6 + v if v < 31 else 37 + r.bits(7)


def _single_block(img):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "JPEG2000", num_resolutions=1, irreversible=False,
                              codeblock_size=(64, 64), no_jp2=True)
    d = buf.getvalue()
    pos, guard, expn = 2, None, None
    while True:
        marker = int.from_bytes(d[pos:pos + 2], "big")
        if marker == 0xFF93:  # SOD: the packet follows
            pos += 2
            break
        length = int.from_bytes(d[pos + 2:pos + 4], "big")
        if marker == 0xFF5C:  # QCD, reversible: guard bits and exponent
            guard, expn = d[pos + 4] >> 5, d[pos + 5] >> 3
        pos += 2 + (10 if marker == 0xFF90 else length)
    r = _Bits(d, pos)
    assert r.bit() == 1  # non-empty packet
    assert r.bit() == 1  # inclusion tag tree: included in layer 0
    zero_planes = 0
    while not r.bit():  # zero bit-plane tag tree (one node)
        zero_planes += 1
    passes = _num_passes(r)
    lblock = 3
    while r.bit():
        lblock += 1
    length = r.bits(lblock + passes.bit_length() - 1)
    start = r.end()
    num_bps = guard + expn - 1 - zero_planes
    coded = np.frombuffer(d[start:start + length] + b"\xff\xff", np.uint8)
    return coded, length, passes, num_bps


@pytest.mark.skipif(not features.check("jpg_2000"), reason="Pillow built without OpenJPEG")
@pytest.mark.parametrize("kind", ["noise", "smooth", "sparse", "flat"])
def test_openjpeg_codeblock(kind):
    rng = np.random.default_rng(len(kind))
    yy, xx = np.mgrid[0:64, 0:64]
    img = {"noise": rng.normal(128, 50, (64, 64)),
           "smooth": 128 + 100 * np.sin(xx / 9.0) * np.cos(yy / 7.0),
           "sparse": 128 + 90 * (rng.random((64, 64)) < 0.03) * rng.choice([-1, 1], (64, 64)),
           "flat": np.full((64, 64), 131)}[kind]
    img = np.clip(img, 0, 255).astype(np.uint8)
    coded, length, passes, num_bps = _single_block(img)
    out = np.zeros((64, 64), np.int32)
    flags, vals, ctx = t1.make_scratch()
    status = t1.decode_codeblock(coded, 0, np.array([length], np.int32),
                                 np.array([passes], np.int32), out, num_bps, t1.ORIENT_LL, 0,
                                 0, flags, vals, ctx)
    assert status == 0
    assert passes == 3 * num_bps - 2  # lossless: every pass present
    np.testing.assert_array_equal(np.trunc(out / 2).astype(np.int64) + 128, img)
