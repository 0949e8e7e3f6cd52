"""Tier-1 golden round trips: encode, decode fully and after every pass, compare with the
pure-Python model (cinegpu.decode.tier1.reference).  Every tier-1 back end must pass these."""

import numpy as np
import pytest

from cinegpu.decode import tier1 as t1
from cinegpu.decode.tier1.reference import reconstruct
from cinegpu.encode.tier1 import encode_codeblock, segments
from helpers.tier1_blocks import SHAPES, STYLES, padded, random_block


def decode(coded, seg_lengths, seg_passes, shape, num_bps, orient, style, roishift=0):
    data = padded(coded, seg_lengths)
    out = np.full(shape, 12345, np.int32)
    flags, vals, ctx = t1.make_scratch()
    status = t1.decode_codeblock(data, 0, seg_lengths, seg_passes, out, num_bps, orient, style,
                                 roishift, flags, vals, ctx)
    return status, out


def full_value(v):
    v = v.astype(np.int64)
    return np.sign(v) * (2 * np.abs(v) + 1) * (v != 0)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("shape", SHAPES)
def test_full_round_trip(style, shape):
    rng = np.random.default_rng(hash((style, shape)) & 0xFFFF)
    for orient, bits, density in [(0, 20, 1.0), (1, 12, 0.1), (2, 5, 0.5), (3, 16, 0.02)]:
        v = random_block(rng, shape, bits, density)
        coded, rates, dists, num_bps = encode_codeblock(v, orient, style)
        assert len(rates) == max(3 * num_bps - 2, 0) and rates[-1:].tolist() in ([], [len(coded)])
        lengths, passes = segments(rates, style)
        status, out = decode(coded, lengths, passes, shape, num_bps, orient, style)
        assert status == 0
        np.testing.assert_array_equal(out, full_value(v))


@pytest.mark.parametrize("style", STYLES)
def test_every_truncation_point(style):
    rng = np.random.default_rng(style)
    for trial, shape in enumerate([(9, 7), (16, 16), (4, 30), (13, 5)]):
        orient = trial % 4
        v = random_block(rng, shape, 9, [1.0, 0.3, 0.05, 0.6][trial])
        coded, rates, dists, num_bps = encode_codeblock(v, orient, style)
        vcausal = bool(style & t1.CBLK_VCAUSAL)
        errors = []
        for n in range(len(rates) + 1):
            lengths, passes = segments(rates, style, n)
            assert lengths.sum() == (rates[n - 1] if n else 0)
            status, out = decode(coded, lengths, passes, shape, num_bps, orient, style)
            model = reconstruct(v, n, vcausal=vcausal)
            assert status == 0
            np.testing.assert_array_equal(out, model, err_msg=f"after {n} passes")
            errors.append(float(np.sum((v - model / 2.0) ** 2)))
        np.testing.assert_allclose(dists, -np.diff(errors), rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("style", [0, t1.CBLK_BYPASS, t1.CBLK_TERMALL, t1.CBLK_VCAUSAL, 0x3F])
@pytest.mark.parametrize("fewer", [1, 2])
def test_more_planes_coded_than_signalled(style, fewer):
    """An encoder that codes ``fewer`` more bit-planes than the K it signals: the first 3K - 2
    passes decode, one plane per three passes lower than coded (the model's ``decoded_bps``);
    the rest are ignored, as OpenJPEG ignores them, and flagged STATUS_TOO_MANY_PASSES."""
    rng = np.random.default_rng(style * 3 + fewer)
    for trial, shape in enumerate([(9, 7), (16, 16), (4, 30)]):
        orient = trial % 4
        v = random_block(rng, shape, 9, [1.0, 0.3, 0.6][trial])
        coded, rates, _, num_bps = encode_codeblock(v, orient, style)
        k = num_bps - fewer
        for n in range(max(3 * k - 3, 0), len(rates) + 1):
            lengths, passes = segments(rates, style, n)
            status, out = decode(coded, lengths, passes, shape, k, orient, style)
            model = reconstruct(v, n, vcausal=bool(style & t1.CBLK_VCAUSAL), num_bps=num_bps,
                                decoded_bps=k)
            assert status == (t1.STATUS_TOO_MANY_PASSES if n > 3 * k - 2 else 0)
            np.testing.assert_array_equal(out, model, err_msg=f"after {n} passes")


def test_truncation_is_tight():
    """Per-pass rates are exact, not a conservative estimate: one byte less breaks a pass."""
    rng = np.random.default_rng(7)
    v = random_block(rng, (32, 32), 10, 0.8)
    coded, rates, _, num_bps = encode_codeblock(v, 0, 0)
    shorter = 0
    for n in range(1, len(rates)):
        if rates[n - 1] == 0 or rates[n - 1] == rates[n - 2 if n > 1 else 0]:
            continue
        lengths = np.array([rates[n - 1] - 1], np.int32)
        status, out = decode(coded, lengths, np.array([n], np.int32), v.shape, num_bps, 0, 0)
        shorter += not np.array_equal(out, reconstruct(v, n))
    assert shorter > 0


def test_all_zero_and_tiny_blocks():
    for shape in [(1, 1), (4, 4), (0, 5), (5, 0)]:
        v = np.zeros(shape, np.int32)
        coded, rates, dists, num_bps = encode_codeblock(v, 0, 0)
        assert num_bps == 0 and len(rates) == 0 and len(coded) == 0
        status, out = decode(coded, np.zeros(0, np.int32), np.zeros(0, np.int32), shape, 0, 0, 0)
        assert status == 0 and not out.any()
    v = np.array([[-1]], np.int32)
    coded, rates, _, num_bps = encode_codeblock(v, 3, 0)
    assert num_bps == 1
    assert decode(coded, *segments(rates, 0), (1, 1), 1, 3, 0)[1][0, 0] == -3


def test_magnitude_limits():
    v = np.array([[(1 << 30) - 1, -((1 << 30) - 1)], [1, 0]], np.int32)
    coded, rates, _, num_bps = encode_codeblock(v, 0, 0)
    assert num_bps == 30
    status, out = decode(coded, *segments(rates, 0), v.shape, num_bps, 0, 0)
    assert status == 0
    np.testing.assert_array_equal(out, full_value(v))
    with pytest.raises(ValueError):
        encode_codeblock(np.array([[1 << 30]], np.int64), 0, 0)


@pytest.mark.parametrize("roishift", [1, 3, 7])
def test_roi_max_shift(roishift):
    """Annex H: ROI coefficients are coded shifted up by s above every background bit-plane."""
    rng = np.random.default_rng(roishift)
    background = random_block(rng, (16, 16), roishift, 0.7)  # |v| < 2^s
    roi = rng.random((16, 16)) < 0.3
    coeffs = np.where(roi, random_block(rng, (16, 16), 6, 1.0) << roishift, background)
    coded, rates, _, num_bps = encode_codeblock(coeffs, 1, 0)
    for n in list(range(0, len(rates) + 1, 4)) + [len(rates)]:
        status, out = decode(coded, *segments(rates, 0, n), coeffs.shape, num_bps, 1, 0,
                             roishift)
        assert status == 0
        np.testing.assert_array_equal(out, reconstruct(coeffs, n, roishift=roishift))
    full = np.where(roi, (full_value(coeffs) >> roishift) * (coeffs != 0), full_value(coeffs))
    full = np.where(roi, np.sign(coeffs) * (np.abs(full_value(coeffs)) >> roishift), full)
    np.testing.assert_array_equal(out, full)


def test_batch_driver_strided_output():
    """decode_codeblocks writes every block into its own window of one flat array."""
    rng = np.random.default_rng(3)
    shapes = [(32, 32), (7, 13), (1, 64), (64, 1), (20, 3)]
    styles = [0, t1.CBLK_BYPASS, t1.CBLK_TERMALL | t1.CBLK_SEGSYM, t1.CBLK_VCAUSAL, 0x3F]
    stride = 200
    out = np.full(stride * 70, -7, np.int32)
    blobs, rows, seg_l, seg_p, expect = [], [], [], [], []
    pos = x0 = 0
    for i, (shape, style) in enumerate(zip(shapes, styles)):
        v = random_block(rng, shape, 14, 0.6)
        coded, rates, _, num_bps = encode_codeblock(v, i % 4, style)
        n = len(rates) - i  # truncate some blocks
        lengths, passes = segments(rates, style, n)
        blob = padded(coded, lengths).tobytes()
        rows.append([pos, len(seg_l), len(lengths), num_bps, i % 4, style, 0, x0,
                     shape[1], shape[0], stride])
        blobs.append(blob)
        pos += len(blob)
        seg_l += lengths.tolist()
        seg_p += passes.tolist()
        expect.append((x0, shape, reconstruct(v, n, vcausal=bool(style & t1.CBLK_VCAUSAL))))
        x0 += shape[1] + 1
    status = t1.decode_codeblocks(np.frombuffer(b"".join(blobs), np.uint8),
                                  np.array(rows, np.int64), np.array(seg_l, np.int32),
                                  np.array(seg_p, np.int32), out)
    assert status.tolist() == [0] * len(shapes)
    grid = out.reshape(70, stride)
    for x0, (h, w), model in expect:
        np.testing.assert_array_equal(grid[:h, x0:x0 + w], model)
    untouched = np.ones_like(grid, bool)
    for x0, (h, w), _ in expect:
        untouched[:h, x0:x0 + w] = False
    assert (grid[untouched] == -7).all()
