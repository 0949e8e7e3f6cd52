"""The GPU tier-1 encoder's kernels (``encode/cuda/tier1_encode.cu``) in the tests that compare
them with the numba tile encoder: :class:`HostKernel` runs a kernel of the host build
(``tier1_encode_host.cpp`` by g++) as CuPy's RawKernel would be called, :class:`Tile` packs
blocks into a plan-like table, :func:`every_k_tile` and :func:`dci_tile` are the cases every
kernel is held to, :func:`assert_same` compares two encoders' outputs exactly.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from cinegpu.decode import tier1
from cinegpu.encode.tier1 import gpu_plan as plan
from conftest import host_library, ptr


def host_kernels_library():
    """tier1_encode.cu built for the host (tier1_encode_host.cpp), loaded with ctypes."""
    return host_library(plan.CUDA_SOURCE.with_name("tier1_encode_host.cpp"))


class HostKernel:
    """A kernel of tier1_encode.cu run by the host emulation, called as CuPy's RawKernel:
    k(grid, block, args) with numpy arrays and np.int32 scalars."""

    def __init__(self, lib, name):
        self.lib, self.name = lib, name

    @staticmethod
    def _arg(a):
        if isinstance(a, np.ndarray):
            assert a.flags.c_contiguous
            return ptr(a)
        assert isinstance(a, np.int32), type(a)
        return ctypes.c_int32(int(a))

    def __call__(self, grid, block, args):
        args = list(args)
        if self.name == "t1enc_code_blocks":
            assert block == (plan.BLOCK_THREADS,) and 1 <= args[19] <= 32
            del args[19:21]  # lanes, next_row: the emulation runs one lane per warp
            rng = np.random.default_rng(0)  # scratch starts dirty: the kernel must clear it
            for a in args[14:17]:
                a[:] = rng.integers(0, 1 << 16, a.size).astype(a.dtype)
            self.lib.t1enc_emulate_code(*map(self._arg, args))
        else:
            getattr(self.lib, self.name.replace("t1enc_", "t1enc_emulate_"))(
                *map(self._arg, args), ctypes.c_int32(grid[0]), ctypes.c_int32(block[0]))


def assert_same(got, want):
    names = ("coded", "coded_off", "rates", "rate_off", "dists", "num_bps")
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)  # dists too: exact
    assert len(got) == 6


class Tile:
    """Blocks packed into one flat int32 buffer with a plan-like table (rows stride apart)."""

    def __init__(self):
        self.parts, self.rows, self.size = [], [], 0

    def add(self, v, orient, pad=3):
        h, w = v.shape
        stride = w + pad
        buf = np.full((max(h, 1), stride), 12345, np.int32)  # samples outside the block
        buf[:h, :w] = v
        row = np.zeros(tier1.CB_COLUMNS, np.int64)
        row[[tier1.CB_ORIENT, tier1.CB_OUT, tier1.CB_WIDTH, tier1.CB_HEIGHT, tier1.CB_STRIDE]] = \
            orient, self.size, w, h, stride
        self.rows.append(row)
        self.parts.append(buf.ravel())
        self.size += buf.size

    @property
    def flat(self):
        return np.concatenate(self.parts + [np.zeros(1, np.int32)])

    @property
    def cb(self):
        return np.array(self.rows, np.int64).reshape(-1, tier1.CB_COLUMNS)


def random_block(rng, shape, bits, density):
    mag = rng.integers(0, 1 << bits, shape, dtype=np.int64) if bits else np.zeros(shape, np.int64)
    sign = np.where(rng.random(shape) < 0.5, -1, 1)
    return (mag * sign * (rng.random(shape) < density)).astype(np.int32)


def every_k_tile(singles: int) -> Tile:
    """Blocks of every K from 0 (all zero) to 30, |v| = 2^30 - 1 of both signs, and
    ``singles`` one-sample blocks near 2^30 (a pass's distortion is then one gain: the rounding
    of e^2 near 2^62 shows)."""
    rng = np.random.default_rng(30)
    tile = Tile()
    for k in range(31):
        v = random_block(rng, (9, 11), k, 0.6)
        if k:
            v[4, 5] = -((1 << k) - 1) if k % 2 else (1 << (k - 1))
        tile.add(v, k % 4)
    top = (1 << 30) - 1
    tile.add(np.array([[top, -top], [1, 0], [-top, top - 1]], np.int32), 3)
    tile.add(np.full((17, 5), -top, np.int32), 1)
    for v in rng.integers(1 << 26, 1 << 30, singles):
        tile.add(np.array([[v]], np.int32), 0)
    return tile


@functools.lru_cache(maxsize=None)
def dci_tile(width=2048, height=1080, **opts):
    """(flat, cb, style) of a frame's tile after the project's forward stage: a DCI 2K frame
    by default, else a generic one with ``opts``."""
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode.encoder import Encoder, EncoderSettings, _as_components
    from cinegpu.encode.presets import make_params

    img = synthetic_frame(width, height, seed=1)
    with Encoder(EncoderSettings.of(backend="cpu", **(opts or {"profile": "dci-2k"}))) as enc:
        comps, precs, sgn = _as_components(img, 12, None)
        params = make_params([x.shape for x in comps], precs, sgn, enc.coding)
        cs, plans = enc._geometry(params)
        flats = enc._forward(comps, params, plans)
        params, cs, plans, flats = enc._guard_bits(params, cs, plans, flats)
    assert len(plans) == 1
    return flats[0], plans[0].cb, params.cblk_style
