"""numpy reconstruction stage (cinegpu.decode.transform) against the spec.

The inverse DWTs are checked against a plain transcription of T.800 F.3
(2D_INTERLEAVE, HOR_SR, VER_SR, 1D_SR with the periodic symmetric extension
of F.3.7, written as loops over absolute sample indices), the 9/7 one in
float32 with OpenJPEG's evaluation order, so both must match to the bit.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cinegpu.decode.transform import (
    dequantize,
    dwt,
    fdwt_53,
    fdwt_97,
    forward_ict,
    forward_rct,
    idwt_53,
    idwt_97,
    inverse_ict,
    inverse_rct,
    level_rects,
    to_samples,
    xyz_to_rgb,
)
from cinegpu.decode.transform.display import xyz_to_rgb_matrix

# ------------------------------------------------- the spec, plainly --------


def _pse(i: int, i0: int, i1: int) -> int:
    """PSE_O of F.3.7 (F-4): the index that periodic symmetric extension reads."""
    if i1 - i0 == 1:
        return i0
    period = 2 * (i1 - i0 - 1)
    r = (i - i0) % period
    return i0 + min(r, period - r)


def _sr_1d(y: dict, i0: int, i1: int, reversible: bool) -> dict:
    """1D_SR of F.3.6 on Y(i0..i1-1); 5/3 per F-5/F-6, 9/7 per F-7 in float32."""
    if i1 - i0 == 1:
        v = y[i0]
        if i0 % 2 == 0:
            return {i0: v}
        return {i0: int(v / 2) if reversible else np.float32(v) * np.float32(0.5)}
    ext = 6
    x = {i: y[_pse(i, i0, i1)] for i in range(i0 - ext, i1 + ext)}
    lo, hi = i0 - ext, i1 + ext
    if reversible:
        for n in range(lo // 2 + 1, hi // 2 - 1):  # F-5
            x[2 * n] = x[2 * n] - (x[2 * n - 1] + x[2 * n + 1] + 2) // 4
        for n in range(lo // 2 + 1, hi // 2 - 2):  # F-6
            x[2 * n + 1] = x[2 * n + 1] + (x[2 * n] + x[2 * n + 2]) // 2
        return {i: x[i] for i in range(i0, i1)}
    x = {i: np.float32(v) for i, v in x.items()}
    for i in x:  # steps 1, 2
        x[i] = x[i] * (dwt.K if i % 2 == 0 else dwt.INV_K_HIGH)
    for step, (parity, c) in enumerate(
        ((0, -dwt.DELTA), (1, -dwt.GAMMA), (0, -dwt.BETA), (1, -dwt.ALPHA))
    ):  # steps 3..6: X = X + (left + right) * c
        for i in range(lo + 1 + step, hi - 1 - step):
            if i % 2 == parity:
                x[i] = x[i] + (x[i - 1] + x[i + 1]) * c
    return {i: x[i] for i in range(i0, i1)}


def _sr_2d_reference(ll, levels, reversible: bool) -> np.ndarray:
    """2D_SR of F.3.2 level by level: 2D_INTERLEAVE, HOR_SR, VER_SR."""
    a = np.array(ll, dtype=object)
    for hl, lh, hh, (u0, v0, u1, v1) in levels:
        img = {}
        bands = ((a, 0, 0), (hl, 1, 0), (lh, 0, 1), (hh, 1, 1))
        for band, bx, by in bands:  # F.3.3: band b lands at (2m + by, 2n + bx)
            m0, n0 = -(-(v0 - by) // 2), -(-(u0 - bx) // 2)
            for (r, c), v in np.ndenumerate(band):
                img[(2 * (m0 + r) + by, 2 * (n0 + c) + bx)] = v
        if u1 > u0:
            for v in range(v0, v1):  # HOR_SR
                row = _sr_1d({u: img[(v, u)] for u in range(u0, u1)}, u0, u1, reversible)
                img.update({(v, u): val for u, val in row.items()})
        if v1 > v0:
            for u in range(u0, u1):  # VER_SR
                col = _sr_1d({v: img[(v, u)] for v in range(v0, v1)}, v0, v1, reversible)
                img.update({(v, u): val for v, val in col.items()})
        a = np.empty((v1 - v0, u1 - u0), dtype=object)
        for v in range(v0, v1):
            for u in range(u0, u1):
                a[v - v0, u - u0] = img[(v, u)]
    return a.astype(np.int32 if reversible else np.float32)


def _random_bands(rng, rect, nlevels, reversible):
    """Random LL and detail bands of the shapes idwt_* expects for ``rect``."""
    rects = level_rects(rect, nlevels)[::-1]
    levels = []

    def band(shape):
        if reversible:
            return rng.integers(-300, 300, shape).astype(np.int32)
        return rng.normal(0.0, 40.0, shape).astype(np.float32)

    for u0, v0, u1, v1 in rects:
        nl, nh = -(-u1 // 2) - -(-u0 // 2), u1 // 2 - u0 // 2
        ml, mh = -(-v1 // 2) - -(-v0 // 2), v1 // 2 - v0 // 2
        levels.append((band((ml, nh)), band((mh, nl)), band((mh, nh)), (u0, v0, u1, v1)))
    if rects:
        u0, v0, u1, v1 = rects[0]
        ll = band((-(-v1 // 2) - -(-v0 // 2), -(-u1 // 2) - -(-u0 // 2)))
    else:
        ll = band((rect[3] - rect[1], rect[2] - rect[0]))
    return ll, levels


# Reference comparison cases: (width, height, u0, v0, levels); small, since
# the reference is Python loops.
REFERENCE_CASES = [
    (w, h, u0, v0, n)
    for (w, h), (u0, v0), n in itertools.product(
        [(1, 1), (1, 5), (6, 1), (2, 2), (3, 4), (7, 9), (13, 8), (17, 23)],
        [(0, 0), (1, 0), (0, 1), (1, 1), (5, 10), (10, 7)],
        [0, 1, 2, 3],
    )
]


def test_reference_case_count():
    assert len(REFERENCE_CASES) == 8 * 6 * 4


@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
def test_idwt_matches_spec_reference(reversible):
    rng = np.random.default_rng(53 if reversible else 97)
    idwt = idwt_53 if reversible else idwt_97
    for w, h, u0, v0, n in REFERENCE_CASES:
        rect = (u0, v0, u0 + w, v0 + h)
        ll, levels = _random_bands(rng, rect, n, reversible)
        got = idwt(ll, levels)
        want = _sr_2d_reference(ll, levels, reversible)
        assert got.dtype == (np.int32 if reversible else np.float32)
        # bit-exact for both: same float32 operations in the same order
        np.testing.assert_array_equal(got, want, err_msg=f"{(w, h, u0, v0, n)}")


# Perfect reconstruction: every size 1..67 in x and y (paired), four offset
# parities plus a larger odd offset, 0..6 levels.
SIZES = [(s, (s * 7) % 67 + 1) for s in range(1, 68)]
OFFSETS = [(0, 0), (1, 0), (0, 1), (1, 1), (33, 17)]


@pytest.mark.parametrize("levels", range(7))
def test_53_perfect_reconstruction(levels):
    rng = np.random.default_rng(levels)
    count = 0
    for (w, h), origin in itertools.product(SIZES, OFFSETS):
        x = rng.integers(-(1 << 15), 1 << 15, (h, w)).astype(np.int32)
        ll, bands = fdwt_53(x, levels, origin)
        assert len(bands) == levels
        np.testing.assert_array_equal(idwt_53(ll, bands), x, err_msg=f"{w}x{h} at {origin}")
        count += 1
    assert count == 67 * 5


@pytest.mark.parametrize("levels", range(7))
def test_97_round_trip(levels):
    rng = np.random.default_rng(100 + levels)
    for (w, h), origin in itertools.product(SIZES, OFFSETS):
        x = rng.integers(0, 4096, (h, w)).astype(np.float32) - 2048
        ll, bands = fdwt_97(x, levels, origin)
        y = idwt_97(ll, bands)
        assert y.dtype == np.float32 and y.shape == x.shape
        # the inverse uses OpenJPEG's high-pass scale (6e-5 off 1/K)
        assert np.abs(y - x).max() < 0.5, f"{w}x{h} at {origin}"


def test_97_normalisation_known_cases():
    """F.3.8.2 scaling: low-pass DC gain 1, high-pass Nyquist gain 2.

    With step sizes whose Rb includes the band gains (Table E.1), a constant
    LL of c must give a constant c, and a constant high band of 2 in 1D an
    alternating +/-1 (to within OpenJPEG's 2/K approximation).
    """
    c = np.full((8, 8), 100.0, np.float32)
    zero = np.zeros((8, 8), np.float32)
    y = idwt_97(c, [(zero, zero, zero, (0, 0, 16, 16))])
    np.testing.assert_allclose(y, 100.0, rtol=1e-5)
    row = idwt_97(np.zeros((1, 32), np.float32), [
        (np.full((1, 32), 2.0, np.float32), np.zeros((0, 32), np.float32),
         np.zeros((0, 32), np.float32), (0, 0, 64, 1))
    ])
    want = np.where(np.arange(64) % 2 == 1, 1.0, -1.0)
    np.testing.assert_allclose(row[0, 8:-8], want[8:-8], atol=1e-3)
    # forward 9/7 of a constant: LL holds the constant, details vanish
    ll, bands = fdwt_97(np.full((32, 32), 7.0, np.float32), 3)
    np.testing.assert_allclose(ll, 7.0, rtol=1e-5)
    for hl, lh, hh, _ in bands:
        assert max(np.abs(hl).max(), np.abs(lh).max(), np.abs(hh).max()) < 1e-4


def test_lone_samples():
    """F.3.7: a one-sample row at odd x is halved (5/3: C division)."""
    hl = np.array([[-7]], np.int32)
    lh, hh = np.zeros((0, 0), np.int32), np.zeros((0, 1), np.int32)
    y = idwt_53(np.zeros((1, 0), np.int32), [(hl, lh, hh, (1, 0, 2, 1))])
    assert y.tolist() == [[-3]]
    f = np.float32
    y = idwt_97(np.zeros((1, 0), f), [(hl.astype(f), lh.astype(f), hh.astype(f), (1, 0, 2, 1))])
    assert y.tolist() == [[-3.5]]
    # a lone row at odd y: the vertical pass halves too
    y = idwt_53(np.zeros((0, 1), np.int32), [
        (np.zeros((0, 0), np.int32), np.array([[9]], np.int32), np.zeros((1, 0), np.int32), (0, 1, 1, 2))
    ])
    assert y.tolist() == [[4]]


def test_idwt_rejects_wrong_band_shape():
    z = np.zeros((4, 4), np.int32)
    with pytest.raises(ValueError, match="hl band"):
        idwt_53(z, [(np.zeros((4, 3), np.int32), z, z, (0, 0, 8, 8))])


def test_idwt_does_not_modify_inputs():
    rng = np.random.default_rng(5)
    ll, levels = _random_bands(rng, (1, 1, 40, 30), 3, False)
    before = [ll.copy()] + [b.copy() for lv in levels for b in lv[:3]]
    idwt_97(ll, levels)
    after = [ll] + [b for lv in levels for b in lv[:3]]
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------ quantisation --------


def test_dequantize_reversible_truncates_toward_zero():
    v = np.array([-5, -4, -3, -1, 0, 1, 3, 4, 5], np.int32)
    got = dequantize(v, 1.0, True)
    assert got.dtype == np.int32
    assert got.tolist() == [-2, -2, -1, 0, 0, 0, 1, 2, 2]


def test_dequantize_irreversible_scales_by_half_step():
    v = np.array([-3, 0, 1, 2, 1 << 20], np.int32)
    got = dequantize(v, 0.125, False)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, v.astype(np.float32) * np.float32(0.0625))


# ---------------------------------------------------------------- MCT -------


def test_rct_round_trip_and_formula():
    rng = np.random.default_rng(7)
    r, g, b = (rng.integers(-2048, 2048, (33, 17)).astype(np.int32) for _ in range(3))
    y0, y1, y2 = forward_rct(r, g, b)
    rr, gg, bb = inverse_rct(y0, y1, y2)
    for a, c in ((r, rr), (g, gg), (b, bb)):
        np.testing.assert_array_equal(a, c)
    gg = y0 - np.floor((y1.astype(np.int64) + y2) / 4).astype(np.int64)  # G-6
    np.testing.assert_array_equal(inverse_rct(y0, y1, y2)[1], gg)


def test_ict_formula_and_round_trip():
    rng = np.random.default_rng(8)
    y, cb, cr = (rng.normal(0, 500, (9, 31)).astype(np.float32) for _ in range(3))
    r, g, b = inverse_ict(y, cb, cr)
    f = np.float32
    np.testing.assert_array_equal(r, y + cr * f(1.402))
    np.testing.assert_array_equal(g, (y - cb * f(0.34413)) - cr * f(0.71414))
    np.testing.assert_array_equal(b, y + cb * f(1.772))
    y2, cb2, cr2 = forward_ict(r, g, b)
    for a, c in ((y, y2), (cb, cb2), (cr, cr2)):
        np.testing.assert_allclose(a, c, atol=0.05)


# ------------------------------------------------------ DC shift, clip ------


def test_to_samples_rounding_shift_and_clip():
    x = np.array([-2048.5, -2047.5, -0.5, 0.5, 1.5, 2047.4, 2047.6, 1e30, -1e30], np.float32)
    assert to_samples(x, 12, False).tolist() == [0, 0, 2048, 2048, 2050, 4095, 4095, 4095, 0]
    assert to_samples(x, 12, True).tolist() == [-2048, -2048, 0, 0, 2, 2047, 2047, 2047, -2048]
    i = np.array([-5000, -2048, -1, 0, 2047, 3000], np.int32)
    assert to_samples(i, 12, False).tolist() == [0, 0, 2047, 2048, 4095, 4095]
    assert to_samples(i, 8, True).tolist() == [-128, -128, -1, 0, 127, 127]
    assert to_samples(i, 12, False).dtype == np.int32


# ------------------------------------------------------ output transform ----


def test_xyz_to_rgb_matrices_map_d65_white_to_white():
    w = np.array([0.3127 / 0.3290, 1.0, (1 - 0.3127 - 0.3290) / 0.3290])
    for prim in ("rec709", "p3d65"):
        np.testing.assert_allclose(xyz_to_rgb_matrix(prim) @ w, 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        xyz_to_rgb_matrix("rec709")[0], [3.2410, -1.5374, -0.4986], atol=2e-4
    )


def test_xyz_to_rgb_black_white_and_shape():
    # D65 white at 48 cd/m2 in DCI code values (ST 428-1 encoding)
    w = np.array([0.3127 / 0.3290, 1.0, (1 - 0.3127 - 0.3290) / 0.3290])
    cv = np.round(4095 * (w * 48 / 52.37) ** (1 / 2.6)).astype(np.int32)
    planes = [np.array([[0, c, 4095]], np.int32) for c in cv]
    out = xyz_to_rgb(*planes, primaries="rec709")
    assert out.shape == (1, 3, 3) and out.dtype == np.uint16
    assert out[0, 0].tolist() == [0, 0, 0]
    assert np.all(np.abs(out[0, 1].astype(int) - 65535) < 64)  # code-value rounding of white
    out4 = xyz_to_rgb(*planes, primaries="p3d65", out_bits=10, alpha=True)
    assert out4.shape == (1, 3, 4) and out4[..., 3].tolist() == [[1023] * 3]
    assert out4[0, 1, :3].max() == 1023 and out4[0, 1, :3].min() >= 1020
    with pytest.raises(ValueError):
        xyz_to_rgb(*planes, primaries="srgb")
