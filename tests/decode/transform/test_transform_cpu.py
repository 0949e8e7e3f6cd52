"""numba CPU back end of the reconstruction stage against its numpy twin.

Everything bit for bit, 9/7 + ICT included (same float32 operations in the
same order, no fused multiply-adds).  Sweep as the numpy and GPU suites:
every size 1..67 (paired with another height), both offset parities and a
larger odd offset, 0..6 levels.  The fused entry points are checked against
the compositions of the twin's functions they replace.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cinegpu.decode import transform as ref
from cinegpu.decode.transform import cpu_backend as cpu
from cinegpu.decode.transform.dwt import _band_sizes, level_rects
from conftest import SAMPLE

SIZES = [(s, (s * 7) % 67 + 1) for s in range(1, 68)]
OFFSETS = [(0, 0), (1, 0), (0, 1), (1, 1), (33, 17)]
CASES = list(itertools.product(SIZES, OFFSETS))


def _int_bands(rng, rect, nlevels, lim=3000):
    """Random int32 LL and detail bands shaped for ``rect``, coarsest level first."""
    levels = []
    for u0, v0, u1, v1 in level_rects(rect, nlevels)[::-1]:
        (nl, nh), (ml, mh) = _band_sizes(u0, u1), _band_sizes(v0, v1)
        shapes = ((ml, nh), (mh, nl), (mh, nh))
        levels.append((*(rng.integers(-lim, lim, s).astype(np.int32) for s in shapes), (u0, v0, u1, v1)))
    if levels:
        u0, v0, u1, v1 = levels[0][3]
        shape = (_band_sizes(v0, v1)[0], _band_sizes(u0, u1)[0])
    else:
        shape = (rect[3] - rect[1], rect[2] - rect[0])
    return rng.integers(-lim, lim, shape).astype(np.int32), levels


def _float_bands(rng, rect, nlevels):
    def f(a):
        return (a * np.float32(0.0371)).astype(np.float32)

    ll, levels = _int_bands(rng, rect, nlevels)
    return f(ll), [(f(a), f(b), f(c), r) for a, b, c, r in levels]


def _deltas(rng, nlevels):
    return [float(d) for d in rng.uniform(0.001, 4.0, 1 + 3 * nlevels)]


def _assert_same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{got.shape}"
    # array_equal on the bits: NaN and -0.0 count too
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32), err_msg=what)


def test_case_count():
    assert len(CASES) == 67 * 5


@pytest.mark.parametrize("nlevels", range(7))
def test_idwt_53_bit_exact(nlevels):
    rng = np.random.default_rng(nlevels)
    for (w, h), (u0, v0) in CASES:
        ll, levels = _int_bands(rng, (u0, v0, u0 + w, v0 + h), nlevels)
        _assert_same(cpu.idwt_53(ll, levels), ref.idwt_53(ll, levels), f"{w}x{h} at {(u0, v0)}")


@pytest.mark.parametrize("nlevels", range(7))
def test_idwt_97_bit_exact(nlevels):
    rng = np.random.default_rng(100 + nlevels)
    for (w, h), (u0, v0) in CASES:
        ll, levels = _float_bands(rng, (u0, v0, u0 + w, v0 + h), nlevels)
        _assert_same(cpu.idwt_97(ll, levels), ref.idwt_97(ll, levels), f"{w}x{h} at {(u0, v0)}")


@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
@pytest.mark.parametrize("nlevels", range(7))
def test_dequantize_idwt_equals_composition(nlevels, reversible):
    """The fused load equals dequantize() of every band, then the twin's IDWT."""
    rng = np.random.default_rng(200 + nlevels)
    idwt = ref.idwt_53 if reversible else ref.idwt_97
    for (w, h), (u0, v0) in CASES:
        ll, levels = _int_bands(rng, (u0, v0, u0 + w, v0 + h), nlevels)
        d = _deltas(rng, nlevels)
        dq = [(ref.dequantize(a, d[1 + 3 * i], reversible), ref.dequantize(b, d[2 + 3 * i], reversible),
               ref.dequantize(c, d[3 + 3 * i], reversible), r) for i, (a, b, c, r) in enumerate(levels)]
        want = idwt(ref.dequantize(ll, d[0], reversible), dq)
        _assert_same(cpu.dequantize_idwt(ll, levels, d, reversible), want, f"{w}x{h} at {(u0, v0)}")


def test_idwt_long_lines_non_contiguous_and_inputs_kept():
    rng = np.random.default_rng(9)
    for shape in ((3, 20001), (20001, 2)):
        h, w = shape
        for reversible in (True, False):
            ll, levels = (_int_bands if reversible else _float_bands)(rng, (1, 0, 1 + w, h), 2)
            idwt_ref, idwt_cpu = (ref.idwt_53, cpu.idwt_53) if reversible else (ref.idwt_97, cpu.idwt_97)
            _assert_same(idwt_cpu(ll, levels), idwt_ref(ll, levels), f"{shape}")
    big = rng.normal(0, 40, (30, 80)).astype(np.float32)
    ll, levels = _float_bands(rng, (1, 1, 40, 30), 3)
    ll = big[: ll.shape[0], : 2 * ll.shape[1] : 2]  # strided view
    assert not ll.flags.c_contiguous
    before = [ll.copy()] + [b.copy() for lv in levels for b in lv[:3]]
    _assert_same(cpu.idwt_97(ll, levels), ref.idwt_97(ll, levels), "strided ll")
    for a, b in zip(before, [ll] + [b for lv in levels for b in lv[:3]]):
        np.testing.assert_array_equal(a, b)


def test_idwt_rejects_wrong_band_shape():
    z = np.zeros((4, 4), np.int32)
    with pytest.raises(ValueError, match="hl band"):
        cpu.idwt_53(z, [(np.zeros((4, 3), np.int32), z, z, (0, 0, 8, 8))])
    with pytest.raises(ValueError, match="step sizes"):
        cpu.dequantize_idwt(z, [(z, z, z, (0, 0, 8, 8))], [1.0], False)


def test_dequantize():
    rng = np.random.default_rng(1)
    v = rng.integers(-(1 << 30), 1 << 30, (37, 53)).astype(np.int32)
    v[0, :6] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 0, 1, -3]
    for delta in (1.0, 0.0371, 2.0 ** -20, 3.5e3):
        for reversible in (True, False):
            _assert_same(cpu.dequantize(v, delta, reversible), ref.dequantize(v, delta, reversible), f"{delta}")
    _assert_same(cpu.dequantize(v[:, ::3], 0.5, False), ref.dequantize(v[:, ::3], 0.5, False), "strided")


def test_rct_and_ict():
    rng = np.random.default_rng(2)
    ys = [rng.integers(-(1 << 20), 1 << 20, (31, 45)).astype(np.int32) for _ in range(3)]
    for a, b in zip(cpu.inverse_rct(*ys), ref.inverse_rct(*ys)):
        _assert_same(a, b, "rct")
    fs = [rng.normal(0, 700, (31, 45)).astype(np.float32) for _ in range(3)]
    want = ref.inverse_ict(*fs)
    for a, b in zip(cpu.inverse_ict(*fs), want):
        _assert_same(a, b, "ict")
    out = cpu.inverse_ict(*fs, out=tuple(fs))  # in place
    assert out[0] is fs[0]
    for a, b in zip(out, want):
        _assert_same(a, b, "ict in place")
    with pytest.raises(ValueError):
        cpu.inverse_ict(fs[0], fs[1], fs[2][:3])


def _sample_inputs(rng, precision):
    span = 1 << precision
    f = np.concatenate([
        rng.uniform(-1.5 * span, 1.5 * span, 2000),
        np.arange(-span - 2, span + 2) + 0.5,  # every tie, both parities
        [np.nan, np.inf, -np.inf, 1e30, -1e30, -0.0, 0.49999997, -0.5],
    ]).astype(np.float32)
    i = np.concatenate([
        rng.integers(-2 * span, 2 * span, 2000),
        np.arange(-span - 2, span + 2),
        [np.iinfo(np.int32).min, np.iinfo(np.int32).max],
    ]).astype(np.int32)
    return f, i


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_to_samples(signed):
    rng = np.random.default_rng(3)
    for precision in range(1, 17):
        f, i = _sample_inputs(rng, precision)
        _assert_same(cpu.to_samples(f, precision, signed), ref.to_samples(f, precision, signed), f"f {precision}")
        _assert_same(cpu.to_samples(i, precision, signed), ref.to_samples(i, precision, signed), f"i {precision}")
    f2 = f.reshape(-1, 2)[:, ::-1]  # non-contiguous 2-D
    _assert_same(cpu.to_samples(f2, 12, signed), ref.to_samples(f2, 12, signed), "2-D view")
    f64 = rng.normal(0, 1e4, 100)  # other dtypes and precisions: the twin
    _assert_same(cpu.to_samples(f64, 30, signed), ref.to_samples(f64, 30, signed), "float64 30 bits")


@pytest.mark.parametrize("reversible", [True, False], ids=["rct", "ict"])
def test_inverse_mct_to_samples(reversible):
    rng = np.random.default_rng(4)
    for precisions, signed in (((12, 12, 12), (False,) * 3), ((1, 8, 16), (False, True, False)),
                               ((16, 3, 9), (True, True, False)),
                               ((29, 8, 8), (False,) * 3), ((25, 28, 26), (True, False, True))):   # numpy's
        lim = 1 << max(precisions)
        if reversible:
            ys = [rng.integers(-lim, lim, (23, 41)).astype(np.int32) for _ in range(3)]
        else:
            ys = [rng.uniform(-lim, lim, (23, 41)).astype(np.float32) for _ in range(3)]
            ys[0][0, :3] = [np.nan, np.inf, -np.inf]
            ys[1][1, :] = np.round(ys[1][1, :]) + 0.5  # ties through the ICT
        planes = (ref.inverse_rct if reversible else ref.inverse_ict)(*ys)
        want = [ref.to_samples(p, pr, s) for p, pr, s in zip(planes, precisions, signed)]
        got = cpu.inverse_mct_to_samples(*ys, precisions, signed)
        for c, (a, b) in enumerate(zip(got, want)):
            _assert_same(a, b, f"component {c} {precisions} {signed}")


def test_xyz_to_rgb_is_the_twins():
    assert cpu.xyz_to_rgb is ref.xyz_to_rgb


@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
@pytest.mark.parametrize("nlevels", range(7))
@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_reconstruct_mct_equals_composition(nlevels, reversible):
    """Last level + MCT + to_samples fused == the twin's functions one by one."""
    rng = np.random.default_rng(300 + nlevels)
    precisions, signed = (12, 10, 12), (False, False, True)
    count = 0
    for (w, h), (u0, v0) in CASES[nlevels % 2 :: 2]:  # half the sweep, alternating per level
        rect = (u0, v0, u0 + w, v0 + h)
        comps = []
        for _ in range(3):
            ll, levels = _int_bands(rng, rect, nlevels, lim=1200)
            comps.append((ll, levels, _deltas(rng, nlevels)))
        planes = []
        for ll, levels, d in comps:
            dq = [(ref.dequantize(a, d[1 + 3 * i], reversible), ref.dequantize(b, d[2 + 3 * i], reversible),
                   ref.dequantize(c, d[3 + 3 * i], reversible), r) for i, (a, b, c, r) in enumerate(levels)]
            planes.append((ref.idwt_53 if reversible else ref.idwt_97)(ref.dequantize(ll, d[0], reversible), dq))
        planes = (ref.inverse_rct if reversible else ref.inverse_ict)(*planes)
        want = [ref.to_samples(p, pr, s) for p, pr, s in zip(planes, precisions, signed)]
        got = cpu.reconstruct_mct(comps, reversible, precisions, signed)
        for c in range(3):
            _assert_same(got[c], want[c], f"{w}x{h} at {(u0, v0)} component {c}")
        count += 1
    assert count == (168 if nlevels % 2 == 0 else 167)


@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
@pytest.mark.parametrize("precision,sign,dtype", [(8, False, np.uint8), (8, True, np.int8), (12, False, np.uint16),
                                                  (16, True, np.int16), (20, False, np.int32)])
@pytest.mark.parametrize("nlevels", [1, 3])
def test_reconstruct_mct_flat_in_the_sample_type(nlevels, precision, sign, dtype, reversible):
    """Samples asked for in a type come in it, equal to the int32 samples (which are clipped to
    the precision, so the type holds them); both ways through the flat entry point: the compiled
    call and the general one the numpy twin composes."""
    from cinegpu.decode.transform.layout import FlatLayout

    rng = np.random.default_rng(700 + precision + nlevels)
    rect = (3, 1, 3 + 45, 1 + 38)
    parts, layouts, off = [], [], 0
    for _ in range(3):
        ll, levels = _int_bands(rng, rect, nlevels, lim=1 << min(precision + 2, 22))
        deltas = _deltas(rng, nlevels)
        bands = []
        for a in [ll] + [b for hl, lh, hh, _ in levels for b in (hl, lh, hh)]:
            bands.append((off, a.shape[0], a.shape[1]))
            parts.append(a.ravel())
            off += a.size
        layouts.append(FlatLayout.build(bands, [r for *_, r in levels], deltas))
    flat = np.concatenate(parts).astype(np.int32)
    precisions, signed = [precision] * 3, [sign] * 3
    for backend in (cpu, ref):
        wide = backend.reconstruct_mct_flat(flat, layouts, reversible, precisions, signed)
        got = backend.reconstruct_mct_flat(flat, layouts, reversible, precisions, signed, dtype)
        for c in range(3):
            assert wide[c].dtype == np.int32 and got[c].dtype == np.dtype(dtype)
            lo, hi = (-(1 << (precision - 1)), (1 << (precision - 1)) - 1) if sign else (0, (1 << precision) - 1)
            assert wide[c].min() >= lo and wide[c].max() <= hi
            assert wide[c].min() == lo or wide[c].max() == hi, "the clipping is exercised"
            np.testing.assert_array_equal(got[c], wide[c].astype(dtype))


def test_decoder_frame_equal_through_either_back_end():
    """A whole 2K frame through the decoder: numpy twin vs numba back end."""

    from cinegpu.decode.decoder import Decoder

    sample = SAMPLE
    if not sample.exists():
        pytest.skip(f"sample {sample.name} not in this checkout")
    data = sample.read_bytes()
    want = Decoder("numpy").decode(data)
    dec = Decoder("cpu")
    assert dec.transform is cpu
    got = dec.decode(data)
    assert len(got.components) == len(want.components) == 3
    for a, b in zip(got.components, want.components):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_components_batch_equals_one_call_per_component():
    """Tile-components of several sizes, levels (1..5), filters, precisions and signs stacked
    in one FlatLayoutBatch: the numba batch == numba one call each == the numpy twin."""
    from cinegpu.decode.transform.layout import FlatLayout, FlatLayoutBatch

    rng = np.random.default_rng(77)
    parts, items, at = [], [], 0
    for k in range(14):
        w, h = int(rng.integers(1, 40)), int(rng.integers(2, 40))
        u0, v0 = int(rng.integers(0, 5)), int(rng.integers(0, 5))
        nlevels = 1 + k % 5
        ll, levels = _int_bands(rng, (u0, v0, u0 + w, v0 + h), nlevels, lim=900)
        bands = []
        for a in [ll] + [b for lev in levels for b in lev[:3]]:
            bands.append((at, a.shape[0], a.shape[1]))
            parts.append(a.ravel())
            at += a.size
        lay = FlatLayout.build(bands, [lev[3] for lev in levels], _deltas(rng, nlevels))
        items.append((k, lay, k % 3 == 0, int(rng.integers(1, 17)), bool(k % 4 == 1)))
    coeffs = np.concatenate(parts).astype(np.int32)
    batch = FlatLayoutBatch.build(items)
    got = cpu.components_samples_flat(coeffs, batch)
    assert len(got) == len(items)
    for (c, lay, rev, p, sg), plane in zip(items, got):
        one = cpu.component_samples_flat(coeffs, lay, rev, p, sg)
        twin = ref.component_samples_flat(coeffs, lay, rev, p, sg)
        _assert_same(plane, one, f"component {c}")
        _assert_same(plane, twin, f"component {c} (numpy)")
    assert [a.shape for a in ref.components_samples_flat(coeffs, batch)] == [a.shape for a in got]
    with pytest.raises(ValueError, match="1..24 bits"):
        FlatLayoutBatch.build([(0, items[0][1], True, 25, False)])
