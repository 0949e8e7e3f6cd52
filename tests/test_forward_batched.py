"""The forward stage's batched path (encode/gpu.py ``_forward_batched``: the colour kernels
reading the input in place, two launches a DWT level for every component, quantisation fused
into the row pass) against the numpy forward stage (:func:`cinegpu.encode.forward.forward_tile`)
and the kernel-by-kernel path, to the bit: tiles at odd origins, levels down to one-sample
lines, 1-3 components, ICT/RCT or none, every input type the colour kernels read (and one they
do not), interleaved views, separate planes, reversed views and host planes; and the one-pass
sample check of an interleaved image against numpy (gpu-marked)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import require_cuda

cupy = require_cuda()  # skips the module without CuPy or a device

from cinegpu.encode import Encoder, EncoderSettings  # noqa: E402
from cinegpu.encode import gpu  # noqa: E402
from cinegpu.encode.forward import forward_tile  # noqa: E402
from cinegpu.encode.presets import make_params  # noqa: E402

pytestmark = pytest.mark.gpu

#: (h, w, levels, tiles): whole images, deep levels (one-sample lines), odd tile origins
GEOMETRIES = [(1, 37, None, None), (37, 1, None, None), (2, 3, 1, None), (33, 17, 4, None),
              (64, 64, 6, None), (97, 131, None, None), (97, 131, 7, (37, 29)),
              (200, 328, None, (129, 67))]
#: (dtype, bits, signed)
TYPES = [(np.uint8, 8, False), (np.uint16, 12, False), (np.int16, 12, True),
         (np.int32, 16, False), (np.uint32, 12, False)]


def _image(h, w, ncomp, dtype, bits, signed, seed):
    rng = np.random.default_rng(seed)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    img = rng.integers(lo, hi, size=(h, w, ncomp), endpoint=True).astype(dtype)
    img[0, 0] = lo
    img[-1, -1] = hi
    return img


def _plans(shape, ncomp, bits, signed, reversible, levels, tiles):
    enc = Encoder(EncoderSettings.of(backend="cpu", reversible=reversible, levels=levels, tiles=tiles,
                                     base_step=1.5))
    params = make_params([shape] * ncomp, [bits] * ncomp, [signed] * ncomp, enc.coding)
    return params, enc._geometry(params)[1]


def _sources(img):
    """(name, host components, device components) of one image, several layouts."""
    d = cupy.asarray(img)
    n = img.shape[2]
    return [
        ("interleaved", [img[:, :, i] for i in range(n)], [d[:, :, i] for i in range(n)]),
        ("planes", [img[:, :, i] for i in range(n)],
         [cupy.ascontiguousarray(d[:, :, i]) for i in range(n)]),
        ("host", [img[:, :, i] for i in range(n)], [img[:, :, i] for i in range(n)]),
    ]


def _band_maxima(want, plan):
    """Each band's largest |index| of a flat buffer in band_tables' (levels, components, 4)
    order, 0 where unused."""
    tcs = plan.components
    levels = tcs[0].levels
    out = np.zeros((levels, len(tcs), 4), np.int64)
    for c, tc in enumerate(tcs):
        for j in range(levels):
            bands = (tc.resolutions[0].bands[0], *tc.resolutions[levels - j].bands)
            for k, b in enumerate(bands):
                if (k or j == levels - 1) and b.width * b.height:
                    part = want[b.offset:b.offset + b.width * b.height].astype(np.int64)
                    out[j, c, k] = np.abs(part).max()
    return out


def _check(params, plans, host, dev):
    for plan in plans:
        want = forward_tile(host, plan, params.precisions, params.signed, params.mct,
                            params.reversible)
        tables = gpu.BandTables()
        maxima = []
        got = gpu.forward_tile_cuda(dev, plan, params.precisions, params.signed, params.mct,
                                    params.reversible, tables=tables, maxima=maxima)
        if gpu._batchable(plan):
            np.testing.assert_array_equal(maxima[0].get(), _band_maxima(want, plan))
        else:
            assert maxima == [None]
        again = gpu.forward_tile_cuda(dev, plan, params.precisions, params.signed, params.mct,
                                      params.reversible, tables=tables)
        eager = gpu.forward_tile_cuda(dev, plan, params.precisions, params.signed, params.mct,
                                      params.reversible, batched=False)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(again, want)
        np.testing.assert_array_equal(eager, want)


@pytest.mark.parametrize("h,w,levels,tiles", GEOMETRIES)
@pytest.mark.parametrize("reversible", [False, True])
@pytest.mark.parametrize("ncomp", [1, 2, 3])
def test_batched_forward_equals_numpy(h, w, levels, tiles, reversible, ncomp):
    img = _image(h, w, ncomp, np.uint16, 12, False, seed=h * w + ncomp)
    params, plans = _plans((h, w), ncomp, 12, False, reversible, levels, tiles)
    assert params.mct == (ncomp == 3)
    for name, host, dev in _sources(img):
        _check(params, plans, host, dev)
    if any(gpu._batchable(p) for p in plans):
        return
    assert h * w < 64 or levels == 0, "no tile took the batched path"


@pytest.mark.parametrize("dtype,bits,signed", TYPES, ids=[t[0].__name__ for t in TYPES])
@pytest.mark.parametrize("reversible", [False, True])
def test_batched_forward_reads_every_input_type(dtype, bits, signed, reversible):
    img = _image(97, 131, 3, dtype, bits, signed, seed=bits)
    params, plans = _plans((97, 131), 3, bits, signed, reversible, None, (37, 29))
    assert all(gpu._batchable(p) for p in plans)
    for name, host, dev in _sources(img):
        _check(params, plans, host, dev)
    rev = cupy.asarray(img)[::-1, ::-1]                      # negative strides
    _check(params, plans, [img[::-1, ::-1, i] for i in range(3)],
           [rev[:, :, i] for i in range(3)])


def test_batched_forward_without_mct():
    """Three components coded without the colour transform (Y'CbCr input, ``mct=False``)."""
    img = _image(64, 96, 3, np.uint16, 10, False, seed=5)
    for reversible in (False, True):
        enc = Encoder(EncoderSettings.of(backend="cpu", reversible=reversible, base_step=1.5))
        params = make_params([(64, 96)] * 3, [10] * 3, [False] * 3, replace(enc.coding, mct=False))
        assert not params.mct
        plans = enc._geometry(params)[1]
        for name, host, dev in _sources(img):
            _check(params, plans, host, dev)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
                                   np.int64])
@pytest.mark.parametrize("ncomp", [1, 2, 3, 4])
def test_component_extremes_of_an_interleaved_image_in_one_pass(dtype, ncomp):
    from cinegpu.encode.forward_graph import interleaved
    rng = np.random.default_rng(ncomp)
    info = np.iinfo(dtype)
    img = rng.integers(info.min // 2, info.max // 2, size=(301, 517, ncomp), dtype=dtype)
    img[300, 516, ncomp - 1] = info.max
    img[0, 1, 0] = info.min
    d = cupy.asarray(img)
    comps = [d[:, :, i] for i in range(ncomp)]
    assert interleaved(comps) is d
    got = gpu.component_extremes(comps)
    assert [tuple(map(int, g)) for g in got] == \
        [(int(img[:, :, i].min()), int(img[:, :, i].max())) for i in range(ncomp)]
    assert interleaved([d[:, :, i] for i in reversed(range(ncomp))]) is None or ncomp == 1
    assert interleaved([d[:, :-1, i] for i in range(ncomp)]) is None


@pytest.mark.parametrize("reversible", [False, True])
def test_guard_bits_from_the_fused_maxima_as_the_cpu_encoder(reversible):
    """16-bit 2 x 2 blocks of black and white with no guard bits asked for: the reversible
    indices need one, which the encoder finds in the row pass's band maxima as the CPU encoder
    does in its bands (the same codestream, eager, captured and replayed; G raised in it)."""
    from cinegpu.encode.encoder import parse_codestream
    y, x = np.mgrid[0:61, 0:83]
    p = (((x // 2) + (y // 2)) % 2) * 65535
    img = np.stack([p, 65535 - p, p], -1).astype(np.uint16)
    opts = dict(reversible=reversible, guard_bits=0, base_step=0.5, levels=3)
    with Encoder(EncoderSettings.of(backend="cpu", **opts)) as cpu, \
            Encoder(EncoderSettings.of(backend="cuda", **opts)) as enc:
        want = cpu.encode(img, bits=16)
        for _ in range(3):
            assert enc.encode(cupy.asarray(img), bits=16) == want
    assert parse_codestream(want).main.qcd.guard_bits == (1 if reversible else 0)


@pytest.mark.parametrize("reversible", [False, True])
def test_fixed_clip_from_the_fused_maxima_as_every_band_clipped(reversible):
    """With the row pass's band maxima a fixed (DCI) clip reads only the bands over their
    limit (band_clip_over_i32) and leaves the same indices as clipping every band to
    2^M_b - 1 in numpy; 16-bit black and white with no guard bits puts reversible bands
    over their limit."""
    y, x = np.mgrid[0:61, 0:83]
    p = (((x // 2) + (y // 2)) % 2) * 65535
    img = np.stack([p, 65535 - p, p], -1).astype(np.uint16)
    enc = Encoder(EncoderSettings.of(backend="cpu", reversible=reversible, guard_bits=0, base_step=0.5, levels=3))
    params = make_params([img.shape[:2]] * 3, [16] * 3, [False] * 3, enc.coding)
    plan = enc._geometry(params)[1][0]
    comps = [cupy.asarray(img[:, :, i]) for i in range(3)]
    tables, maxima = gpu.BandTables(), []
    flat = gpu.forward_tile_cuda(comps, plan, params.precisions, params.signed, params.mct,
                                 params.reversible, on_device=True, tables=tables,
                                 maxima=maxima)
    want = flat.get()
    over = 0
    for o, n, m in zip(*gpu.band_layout(plan)):
        lim = (1 << int(m)) - 1
        over += int(np.abs(want[o:o + n].astype(np.int64)).max() > lim)
        np.clip(want[o:o + n], -lim, lim, out=want[o:o + n])
    assert over or not reversible
    assert gpu.guard_bits_cuda([plan], [flat], 0, True, maxima, tables, reversible) == 0
    np.testing.assert_array_equal(flat.get(), want)
