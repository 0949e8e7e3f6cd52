"""PCRD-opt on the GPU (cinegpu.encode.rate_gpu, encode/cuda/pcrd.cu) against the CPU rate
control (cinegpu.encode.rate), exactly: the same hull segments in the same order, the same
counts for every budget and cap, the same passes per block, and the same codestream.

Two back ends: "host" (pcrd.cu compiled as C++ by g++, pcrd_host.cpp, driven by rate_gpu's own
Python with numpy arrays; skipped without g++), so CI checks the kernels' logic, and "cuda"
(marked gpu: the kernels and CuPy's sort on the device).
"""

from __future__ import annotations

import ctypes
import functools
import shutil

import numpy as np
import pytest

from cinegpu.encode import Encoder, EncoderSettings
from cinegpu.encode import rate_gpu
from cinegpu.encode.rate import hull_of

from conftest import host_build

CXX = shutil.which("g++")
HOST = pytest.mark.skipif(CXX is None, reason="g++ not found (host emulation of pcrd.cu)")


def _host_library():
    return host_build(rate_gpu.CUDA_SOURCE.with_name("pcrd_host.cpp"), "-ffp-contract=off")


class HostKernel:
    """A kernel of pcrd.cu run on the host (one thread's grid-stride loop covers all), called
    as CuPy's RawKernel: k(grid, block, args) with numpy arrays and np.int32 scalars."""

    def __init__(self, name):
        self.fn = getattr(_host_library(), name)

    def __call__(self, grid, block, args):
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous or a.ndim == 1 and a.strides[0] == a.itemsize
                conv.append(ctypes.c_void_p(a.ctypes.data))
            else:
                assert isinstance(a, np.int32), type(a)
                conv.append(ctypes.c_int32(int(a)))
        self.fn(*conv)


def host_kernels():
    return {name: HostKernel(name) for name in rate_gpu.KERNELS}


def random_figures(rng, nblocks, ties=False):
    """Tier-1-like figures: per block 0..30 passes, cumulative bytes (int32, non-decreasing,
    repeats allowed), distortion decreases >= 0 (zeros, and with ``ties`` identical blocks)."""
    npass = rng.integers(0, 31, nblocks)
    if ties:
        npass[1::2] = npass[::2][:len(npass[1::2])]
    rates, dists = [], []
    for b, n in enumerate(npass):
        if ties and b % 2 == 1:
            rates.append(rates[-1])
            dists.append(dists[-1])
            continue
        rates.append(np.cumsum(rng.integers(0, 40, n)).astype(np.int32))
        d = rng.random(n) * rng.choice([0.0, 1.0, 1e6], n, p=[0.1, 0.6, 0.3])
        dists.append(np.round(d, 1) if ties else d)
    off = np.zeros(nblocks + 1, np.int64)
    np.cumsum(npass, out=off[1:])
    return off, np.concatenate(rates or [np.zeros(0, np.int32)]), \
        np.concatenate(dists or [np.zeros(0)])


def check_same(xp, kernels, off, rates, dists, weights, comp, ncomp, rng):
    cpu = hull_of(off, rates.astype(np.int64), dists, weights).by_component(comp, ncomp)
    dev = (xp.asarray(off), xp.asarray(rates), xp.asarray(dists))
    gpu = rate_gpu.gpu_hull(dev, weights, comp, ncomp, xp=xp, kernels=kernels)
    host = (lambda a: a) if xp is np else xp.asnumpy
    for name in ("block", "npass", "drate", "slope", "csum"):
        np.testing.assert_array_equal(host(getattr(gpu, name)), getattr(cpu, name), name)
    total = float(cpu.csum[-1]) if len(cpu.csum) else 0.0
    for budget in [-1.0, 0.0, 1.0, total / 3, total / 2, total, total + 5,
                   *rng.random(5) * total]:
        assert gpu.count_for(budget) == cpu.count_for(budget)
        for c in range(ncomp):
            assert gpu.comp_count(c, budget) == cpu.comp_count(c, budget)
        np.testing.assert_array_equal(gpu.frame_limits(budget), cpu.frame_limits(budget))
        for _ in range(3):
            caps = rng.random(ncomp) * total / max(ncomp - 1, 1)
            lims = cpu.frame_limits(budget, caps)
            np.testing.assert_array_equal(gpu.frame_limits(budget, caps), lims)
            np.testing.assert_array_equal(gpu.passes_for(lims), cpu.passes_for(lims))
    n = len(cpu.slope)
    for _ in range(5):
        lims = rng.integers(0, n + 2, ncomp)
        np.testing.assert_array_equal(gpu.passes_for(lims), cpu.passes_for(lims))


@HOST
@pytest.mark.parametrize("seed,ties", [(0, False), (1, False), (2, True), (3, True)])
def test_host_hull_and_thresholds_match_cpu(seed, ties):
    rng = np.random.default_rng(seed)
    nblocks = int(rng.integers(1, 400))
    off, rates, dists = random_figures(rng, nblocks, ties)
    weights = rng.choice([0.5, 1.0, 3.25], nblocks)
    ncomp = 3
    comp = np.sort(rng.integers(0, ncomp, nblocks))
    check_same(np, host_kernels(), off, rates, dists, weights, comp, ncomp, rng)


@HOST
def test_host_empty_and_passless_blocks():
    rng = np.random.default_rng(4)
    for nblocks in (0, 1, 5):
        off = np.zeros(nblocks + 1, np.int64)
        check_same(np, host_kernels(), off, np.zeros(0, np.int32), np.zeros(0),
                   np.ones(nblocks), np.zeros(nblocks, np.int64), 1, rng)


def _synthetic(h, w, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([(x * 7 + y * 3) % 4096, (x * y) % 4096,
                    rng.integers(0, 4096, (h, w))], axis=2)
    img[h // 3:h // 2] = 2048        # flat rows: identical blocks, tied slopes
    return img.astype(np.uint16)


@HOST
@pytest.mark.parametrize("layers", [1, 3])
def test_host_rate_control_writes_the_same_codestream(monkeypatch, layers):
    """The writer with the GPU hull (host emulation) writes the CPU rate control's bytes."""
    from cinegpu.encode import writer
    img = _synthetic(150, 230, 5)
    with Encoder(EncoderSettings.of(backend="cpu", bitrate=150_000 * 8 * 24, fps=24, layers=layers,
                                    codeblock=(16, 16))) as enc:
        want = enc.encode(img, bits=12)
        frames = []
        real = enc._tier1
        monkeypatch.setattr(enc, "_tier1", lambda *a, **k: frames.append(real(*a, **k)) or
                            frames[-1])
        assert enc.encode(img, bits=12) == want
    frame = frames[-1]
    frame.device = (frame.table.rate_off, frame.table.rates.astype(np.int32), frame.dists)
    kernels = host_kernels()
    monkeypatch.setattr(rate_gpu, "gpu_hull",
                        functools.partial(rate_gpu.gpu_hull, xp=np, kernels=kernels))
    got = writer.allocate_and_write(frame, enc.base_step)
    frame.device = None
    assert writer.allocate_and_write(frame, enc.base_step) == got
    assert len(got) <= 150_000


@pytest.mark.gpu
def test_cuda_hull_and_thresholds_match_cpu(gpu):
    cupy = gpu
    for seed, ties in [(10, False), (11, True)]:
        rng = np.random.default_rng(seed)
        off, rates, dists = random_figures(rng, 3000, ties)
        weights = rng.choice([0.5, 1.0, 3.25], 3000)
        comp = np.sort(rng.integers(0, 3, 3000))
        check_same(cupy, None, off, rates, dists, weights, comp, 3, rng)


@pytest.mark.gpu
@pytest.mark.parametrize("profile,shape", [("dci-2k", (1080, 2048)), ("generic", (300, 410))])
def test_cuda_encoder_same_bytes_with_rate_control_on_either_side(gpu, profile, shape):
    img = _synthetic(*shape, 7)
    kw = dict(profile=profile, backend="cuda")
    if profile == "generic":
        kw.update(bitrate=60_000 * 8 * 24, layers=2)
    with Encoder(EncoderSettings.of(rate_on_gpu=True, **kw)) as a, \
            Encoder(EncoderSettings.of(rate_on_gpu=False, **kw)) as b:
        assert a.encode(img, bits=12) == b.encode(img, bits=12)


def test_rate_on_gpu_needs_cuda():
    with pytest.raises(ValueError, match="cuda"):
        Encoder(EncoderSettings.of(backend="cpu", rate_on_gpu=True))

