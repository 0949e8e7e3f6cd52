"""The HT cleanup-pass encoder on the GPU (encode/tier1/ht_gpu.py ht_encode_rows_cuda,
kernel encode/cuda/ht_encode.cu; T.814 clause 7) against its numba twin ht_encode_rows,
whole tuples compared (bytes, offsets, rates, K, dtypes): random blocks of many shapes and
planes from host and device buffers, a scratch budget small enough that threads take many
blocks, illegal sizes (ht_encode_rows' early return), an empty row set, a stream of its own
and the tiles of a real frame; the encoder on the GPU against the CPU path, under a byte
budget too (the plane figures of test_ht_figures.py).  The kernels' own code is checked
without a GPU by test_ht_encode_host.py (one thread a block), whose helpers these tests
share, and test_ht_encode_warp.py (one warp a block, which has its own GPU tests).
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_cuda

cupy = require_cuda()  # skips the module without CuPy or a device

from cinegpu.encode.tier1.ht import ht_encode_rows  # noqa: E402
from cinegpu.encode.tier1.ht_gpu import ht_encode_rows_cuda  # noqa: E402
from cinegpu.encode.tier1.ht_gpu_plan import scratch_pitch  # noqa: E402

from test_ht_encode_host import PLANES, _tile, assert_same_rows, pack, random_block  # noqa: E402

pytestmark = pytest.mark.gpu


def _blocks(seed: int, count: int = 120):
    rng = np.random.default_rng(seed)
    shapes = [(64, 64), (1, 1024), (1024, 4), (1, 1), (33, 17), (2, 63)]
    shapes += [(int(rng.integers(1, 65)), int(rng.integers(1, 65))) for _ in range(count)]
    drops = rng.choice(PLANES, size=len(shapes))
    blocks = [random_block(rng, h, w, min(31, int(p) + int(rng.integers(1, 9))))
              for (h, w), p in zip(shapes, drops)]
    flat, cb = pack(blocks, rng)
    return flat, cb, np.arange(len(blocks), dtype=np.int64), drops.astype(np.int64)


@pytest.mark.parametrize("on_device", [False, True])
def test_random_blocks(on_device):
    flat, cb, rows, drops = _blocks(1)
    src = cupy.asarray(flat) if on_device else flat
    assert_same_rows(ht_encode_rows_cuda(src, cb, rows, drops),
                     ht_encode_rows(flat, cb, rows, drops))


def test_planes_already_on_the_device():
    """d_drops: the kernels read the planes' device copy (the same segments as from the
    host's); a copy of another shape or type is refused."""
    flat, cb, rows, drops = _blocks(7)
    want = ht_encode_rows(flat, cb, rows, drops)
    assert_same_rows(ht_encode_rows_cuda(flat, cb, rows, drops, d_drops=cupy.asarray(drops)),
                     want)
    # the device copy is what is coded: host planes of zeros, device planes as drawn
    got = ht_encode_rows_cuda(flat, cb, rows, np.zeros_like(drops), d_drops=cupy.asarray(drops))
    assert np.array_equal(got[0], want[0])
    for bad in (cupy.asarray(drops[:-1]), cupy.asarray(drops, cupy.int32)):
        with pytest.raises(ValueError, match="d_drops"):
            ht_encode_rows_cuda(flat, cb, rows, drops, d_drops=bad)


@pytest.mark.parametrize("kernel", ["auto", "thread"])
def test_grid_stride_and_row_subsets(kernel):
    """Three threads' worth of scratch: one CUDA block of threads taking many blocks each
    (with "thread" every block, with "auto" the 1024-long ones; the warp kernel has the
    rest); rows out of order and repeated."""
    flat, cb, rows, drops = _blocks(2, 300)
    rng = np.random.default_rng(3)
    sub = rng.integers(0, len(rows), size=200)
    for r, d in ((rows, drops), (sub, drops[sub])):
        got = ht_encode_rows_cuda(flat, cb, r, d, scratch_bytes=3 * scratch_pitch(),
                                  kernel=kernel)
        assert_same_rows(got, ht_encode_rows(flat, cb, r, d))


def test_extremes_and_own_stream():
    rng = np.random.default_rng(4)
    blocks = [np.full((64, 64), (1 << 30) - 1), np.full((64, 64), -(1 << 31) + 1),
              rng.integers(-(1 << 31) + 1, 1 << 31, size=(64, 64)), np.zeros((8, 8))]
    flat, cb = pack(blocks, rng)
    rows, drops = np.arange(4), np.zeros(4, np.int64)
    stream = cupy.cuda.Stream(non_blocking=True)
    assert_same_rows(ht_encode_rows_cuda(flat, cb, rows, drops, stream),
                     ht_encode_rows(flat, cb, rows, drops))


def test_too_long_and_empty():
    rng = np.random.default_rng(5)
    blocks = [random_block(rng, 8, 8, 9), random_block(rng, 65, 64, 9),
              random_block(rng, 16, 16, 9)]
    flat, cb = pack(blocks, rng)
    drops = np.zeros(3, np.int64)
    for rows in (np.arange(3), np.zeros(0, np.int64)):
        got = ht_encode_rows_cuda(flat, cb, rows, drops[:len(rows)])
        assert_same_rows(got, ht_encode_rows(flat, cb, rows, drops[:len(rows)]))
    assert ht_encode_rows_cuda(flat, cb, np.arange(3), drops)[5].shape == (0,)


@pytest.mark.parametrize("reversible", [True, False])
def test_real_tile(reversible):
    flat, cb = _tile(reversible)
    rows = np.arange(cb.shape[0], dtype=np.int64)
    rng = np.random.default_rng(6)
    for drops in (np.zeros(len(rows), np.int64), rng.integers(0, 6, size=len(rows))):
        assert_same_rows(ht_encode_rows_cuda(cupy.asarray(flat), cb, rows, drops),
                         ht_encode_rows(flat, cb, rows, drops))


@pytest.mark.parametrize("opts", [
    {"reversible": True},
    {"reversible": True, "tiles": (96, 80), "codeblock": (16, 16)},
    {"bitrate": 2_000_000, "fps": 24},
    {"bitrate": 3_000_000, "fps": 24, "tiles": (96, 80), "codeblock": (32, 16)},
    {"profile": "dci-2k", "fps": 24},
], ids=["lossless", "lossless-tiles", "budget", "budget-tiles", "dci-2k-budget"])
def test_encoder_htj2k_on_the_gpu_equals_the_cpu_path(opts, monkeypatch):
    """EncoderSettings(codec="htj2k") on the cuda back end (coefficients kept on the GPU, cleanup
    passes coded by the kernel) writes the CPU path's codestream byte for byte, lossless ones
    included, under a budget too, where the plane figures are worked out on the GPU
    (ht_plane_figures_cuda; the numba ht_plane_figures is not called there)."""
    from cinegpu.decode import decode
    from cinegpu.encode import encode, ht
    from cinegpu.bench.encode import synthetic_frame
    size = (2048, 1080) if opts.get("profile") == "dci-2k" else (300, 200)
    img = synthetic_frame(*size, seed=7)
    with monkeypatch.context() as m:
        m.setattr(ht, "ht_plane_figures", None)  # the CPU twin: a TypeError if called
        got = encode(img, bits=12, codec="htj2k", backend="cuda", **opts)
    assert got == encode(img, bits=12, codec="htj2k", backend="cpu", **opts)
    if opts.get("reversible"):
        for k, comp in enumerate(decode(got)):
            np.testing.assert_array_equal(comp, img[..., k])
