"""The HT byte budget's choice of planes on the GPU (encode/ht_select_gpu.py PlaneChoiceCuda,
kernels of encode/cuda/ht_select.cu; PCRD-opt, ISO/IEC 15444-1 J.14.2, over the cleanup planes
of ITU-T T.814) against the numba choice of encode/ht_select.py, exactly.

Host tests (skipped without g++, run on CI without a GPU): the kernels built by g++ as C++ for
the host (ht_select_host.cpp) against their numba twins hull_steps, _moves and _planes_at, the
arrays' bytes compared (every output entry written), on the figures of a real frame, random
figures in eighths, crowded ties (equal slopes, equal bits, equal w dist, repeated blocks),
all-zero blocks and weights, one plane, no blocks, slopes at and beyond the ends of
LAMBDA_RANGE, over grids with fewer and more threads than blocks.  Then PlaneChoiceCuda's own
code run with numpy and the host build (:class:`HostLaunch`) against PlaneChoice.select on
targets at, between and beyond every few steps of the estimated bits, and estimate().  The
"gpu" tests run the same cases through CuPy and the compiled kernels, and
ht_plane_figures_cuda(..., keep=True) against keep=False.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
import pytest

from cinegpu.encode.ht_select import LAMBDA_RANGE, PlaneChoice, _moves, _planes_at, hull_steps
from cinegpu.encode.ht_select_gpu import SOURCE, PlaneChoiceCuda
from conftest import host_library, needs_cxx
from helpers.ht_encoder import frame_figures, synthetic_tile

HOST_SOURCE = SOURCE.with_name("ht_select_host.cpp")
NO_GXX = needs_cxx
GPU = pytest.mark.gpu
UNWRITTEN = -7  # what the outputs hold before a kernel: any left fails the byte comparison
GRIDS = [(1, 1), (2, 3), (5, 32), (40, 128)]  # (CUDA blocks, threads a block)


@pytest.fixture(scope="module")
def lib():
    return host_library(HOST_SOURCE)


class HostLaunch:
    """PlaneChoiceCuda's launcher for the host build: numpy arrays, kernel ``name`` run by
    its hts_* entry point over ``grid`` CUDA blocks of ``threads`` threads."""

    xp = np
    asnumpy = staticmethod(np.array)

    def __init__(self, lib, grid: int = 3, threads: int = 7):
        self.lib, self.grid, self.threads = lib, grid, threads

    def __call__(self, name: str, n: int, args: tuple) -> None:
        conv = []
        for a in args:
            if isinstance(a, np.ndarray):
                assert a.flags.c_contiguous, name
                conv.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.float64):
                conv.append(ctypes.c_double(a))
            else:
                assert isinstance(a, np.int32), type(a)
                conv.append(ctypes.c_int(int(a)))
        fn = getattr(self.lib, "hts_" + name.removeprefix("ht_"))
        fn(*conv, ctypes.c_int(self.grid), ctypes.c_int(self.threads))


# ------------------------------------------------------------------------------ figures

@functools.cache
def real_figures(seed: int):
    """(w, dist, bits) of the blocks of a synthetic frame, as the byte budget sees them."""
    return frame_figures(seed)


def random_eighths(rng, n, m):
    """Figures not monotone in d, in quarters and eighths as real ones, blocks with nothing
    to gain, weights from tiny to large."""
    dist = np.cumsum(rng.integers(0, 1 << 20, (n, m)), axis=1) / 4.0
    dist[rng.random((n, m)) < 0.1] *= 0.5
    bits = np.cumsum(rng.integers(0, 2400, (n, m))[:, ::-1], axis=1)[:, ::-1] / 8.0 + 8.0
    bits[rng.random(n) < 0.05] = 8.0
    w = rng.choice([1e-9, 1e-3, 1.0, 40.0], n) * rng.random(n)
    return w, dist, bits


def crowded(rng, n, m):
    """Few small values: many equal slopes (within and across blocks, collinear planes of a
    block), equal bits and equal w dist within a block, repeated blocks; half of them
    monotone in d as real figures mostly are."""
    dist = rng.integers(0, 4, (n, m)).astype(np.float64)
    bits = rng.integers(0, 4, (n, m)) * 2.0
    half = slice(0, n // 2)
    dist[half] = np.cumsum(rng.integers(0, 3, (n // 2, m)), axis=1)
    bits[half] = np.cumsum(rng.integers(0, 3, (n // 2, m))[:, ::-1], axis=1)[:, ::-1] * 2.0
    dist[1::3], bits[1::3] = dist[::3][:len(dist[1::3])], bits[::3][:len(bits[1::3])]
    w = rng.choice([1.0, 2.0, 0.5], n)
    return w, dist, bits


def zero_blocks(rng, n, m):
    """All-zero blocks, blocks of no error whose bits fall (moves of slope 0), zero and -0.0
    weights (every w dist equal), among random ones."""
    w, dist, bits = random_eighths(rng, n, m)
    dist[: n // 4], bits[: n // 4] = 0.0, 0.0
    dist[n // 4: n // 2] = 0.0
    w[n // 2: n // 2 + 5] = 0.0
    w[n // 2 + 5: n // 2 + 10] = -0.0
    return w, dist, bits


def edges():
    """Moves at slopes exactly 2^-30 and 2^60 (LAMBDA_RANGE's ends), just beyond them, and far
    beyond 2^60 (targets out of reach)."""
    lo, hi = LAMBDA_RANGE
    dist = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 2.0 ** 61], [0.0, 2.0 ** 61],
                     [0.0, 2.0 ** 62], [0.0, 3.0], [0.0, 2.0 ** 80]])
    bits = np.array([[2.0 ** 30, 0.0], [2.0 ** 31, 0.0], [2.0, 0.0], [2.0, 1.0],
                     [2.0, 0.0], [16.0, 0.0], [8.0, 4.0]])
    w = np.ones(dist.shape[0])
    lam = w * (dist[:, 1] - dist[:, 0]) / (bits[:, 0] - bits[:, 1])
    assert lo in lam and hi in lam and (lam < lo).any() and (lam > hi).any()
    return w, dist, bits


def cases():
    """(name, (w, dist, bits)) of every case but the real frames."""
    rng = np.random.default_rng(7)
    out = [(f"random{m}", random_eighths(rng, 300, m)) for m in (21, 6, 2, 1)]
    out += [(f"crowded{m}", crowded(rng, 300, m)) for m in (21, 5, 2)]
    out += [("zero", zero_blocks(rng, 120, 21)), ("edges", edges())]
    out += [("none", (np.zeros(0), np.zeros((0, 21)), np.zeros((0, 21))))]
    return out


CASES = cases()
CASE_IDS = [name for name, _ in CASES]


# ------------------------------------------------------------------------------ kernels

def reference(w, dist, bits):
    """The numba steps: hull_steps, _moves."""
    start, lam, nxt, count = hull_steps(np.ascontiguousarray(w[:, None] * dist), bits)
    slopes, gains, first = _moves(start, lam, nxt, count, bits)
    return (start, lam, nxt, count), (slopes, gains, first)


def run_kernels(launch, w, dist, bits):
    """ht_hull_steps and ht_moves through ``launch`` on outputs filled with UNWRITTEN:
    numpy ((start, lam, nxt, count), (slopes, gains, first_bits))."""
    xp = launch.xp
    n, m = dist.shape
    w, dist, bits = (xp.asarray(np.ascontiguousarray(a, np.float64)) for a in (w, dist, bits))
    start, count = xp.full(n, UNWRITTEN, xp.int64), xp.full(n, UNWRITTEN, xp.int64)
    lam, nxt = xp.full((n, m), UNWRITTEN, xp.float64), xp.full((n, m), UNWRITTEN, xp.int64)
    launch("ht_hull_steps", n, (w, dist, bits, np.int32(n), np.int32(m), start, lam, nxt, count))
    off = np.zeros(n + 1, np.int64)
    np.cumsum(launch.asnumpy(count), out=off[1:])
    total = int(off[-1])
    slopes, gains = xp.full(total, UNWRITTEN, xp.float64), xp.full(total, UNWRITTEN, xp.float64)
    first_bits = xp.full(n, UNWRITTEN, xp.float64)
    launch("ht_moves", n, (start, lam, nxt, count, bits, xp.asarray(off), np.int32(n),
                           np.int32(m), slopes, gains, first_bits))
    return tuple(tuple(launch.asnumpy(a) for a in group)
                 for group in ((start, lam, nxt, count), (slopes, gains, first_bits)))


def run_planes_at(launch, hull, slope, inclusive):
    xp = launch.xp
    start, lam, nxt, _ = (xp.asarray(a) for a in hull)
    n, m = lam.shape
    d = xp.full(n, UNWRITTEN, xp.int64)
    launch("ht_planes_at", n, (start, lam, nxt, np.int32(n), np.int32(m), np.float64(slope),
                               np.int32(inclusive), d))
    return launch.asnumpy(d)


def run_planes_at_move(launch, hull, slopes, at):
    xp = launch.xp
    start, lam, nxt, _ = (xp.asarray(a) for a in hull)
    n, m = lam.shape
    d = xp.full(n, UNWRITTEN, xp.int64)
    lo, hi = LAMBDA_RANGE
    launch("ht_planes_at_move", n, (start, lam, nxt, np.int32(n), np.int32(m),
                                    xp.asarray(slopes), xp.asarray(np.array([at], np.int64)),
                                    np.float64(lo), np.float64(hi), d))
    return launch.asnumpy(d)


def assert_bytes(got, want, name):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    if got.tobytes() != want.tobytes():
        bad = np.flatnonzero((got != want).ravel() & ~(np.isnan(got) & np.isnan(want)).ravel())
        raise AssertionError(f"{name} differs at flat {bad[:5].tolist()}: "
                             f"{got.ravel()[bad[:5]]} != {want.ravel()[bad[:5]]}")


def check_kernels(launch, w, dist, bits):
    """The kernels == numba bit for bit: the hull, the moves, the start bits (their sum is
    _moves' first), the planes at slopes on, between and beyond the moves' slopes."""
    hull, (slopes, gains, first_bits) = run_kernels(launch, w, dist, bits)
    want_hull, (want_slopes, want_gains, first) = reference(w, dist, bits)
    for got, want, name in zip(hull, want_hull, ("start", "lam", "nxt", "count")):
        assert_bytes(got, want, name)
    assert_bytes(slopes, want_slopes, "slopes")
    assert_bytes(gains, want_gains, "gains")
    n = dist.shape[0]
    assert_bytes(first_bits, bits[np.arange(n), hull[0]] if n else np.zeros(0), "first_bits")
    assert first_bits.sum() == first
    lo, hi = LAMBDA_RANGE
    on = np.unique(slopes)
    on = on[np.linspace(0, on.size - 1, min(on.size, 25)).astype(int)] if on.size else on
    for slope in (0.0, lo, hi, 1.0, np.inf, *on, *(on * (1 + 2.0 ** -52)), *(on / 2)):
        for inclusive in (False, True):
            assert_bytes(run_planes_at(launch, hull, slope, inclusive),
                         _planes_at(*hull[:3], slope, inclusive), f"planes at {slope}")
    # at a move's slope read on the device: clamped up to lo inclusive, past hi at hi
    # exclusive (the inf past the last move too)
    table = np.concatenate((np.sort(slopes), [lo / 2, lo, hi, hi * 2, np.inf]))
    for at in np.unique(np.linspace(0, table.size - 1, min(table.size, 30)).astype(int)):
        s = table[at]
        want = _planes_at(*hull[:3], max(s, lo), True) if s <= hi else \
            _planes_at(*hull[:3], hi, False)
        assert_bytes(run_planes_at_move(launch, hull, table, at), want, f"planes at move {s}")
    return slopes


@NO_GXX
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("grid,threads", GRIDS)
def test_host_kernels_real_figures(lib, seed, grid, threads):
    w, dist, bits = real_figures(seed)
    assert dist.shape[0] > 100 and dist.shape[1] == 21
    slopes = check_kernels(HostLaunch(lib, grid, threads), w, dist, bits)
    assert slopes.size > dist.shape[0]


@NO_GXX
@pytest.mark.parametrize("name,figures", CASES, ids=CASE_IDS)
def test_host_kernels(lib, name, figures):
    for grid, threads in GRIDS:
        check_kernels(HostLaunch(lib, grid, threads), *figures)


@NO_GXX
def test_host_crowded_ties_are_crowded(lib):
    """The tie cases do tie: equal slopes across blocks and, within blocks, equal bits and
    equal w dist (what the tie rules decide)."""
    w, dist, bits = dict(CASES)["crowded21"]
    _, (slopes, _, _) = run_kernels(HostLaunch(lib), w, dist, bits)
    _, inverse, counts = np.unique(slopes, return_inverse=True, return_counts=True)
    assert (counts[inverse] > 1).mean() > 0.8
    wd = w[:, None] * dist
    assert (np.diff(np.sort(bits, axis=1), axis=1) == 0).any(axis=1).all()
    assert (np.diff(np.sort(wd, axis=1), axis=1) == 0).any(axis=1).all()


# ------------------------------------------------------------------------------ the choice

def targets(w, dist, bits, rng):
    """Targets of every kind: below zero, 0, tiny, at every few steps of the estimated bits
    along the moves sorted by slope (the need met exactly) and between them, at and around
    the bits at the start and at d = 0, above them, huge."""
    bits0 = float(bits[:, 0].sum())
    _, (slopes, gains, first) = reference(w, dist, bits)
    cum = np.cumsum(gains[np.argsort(slopes, kind="stable")])
    steps = first - cum[np.unique(np.linspace(0, cum.size - 1, min(cum.size, 40)).astype(int))]
    picked = first - cum[rng.integers(0, cum.size, 10)] if cum.size else []
    return [-1.0, 0.0, 1e-3, 0.125, *steps, *(steps + 1 / 16), *(steps - 1 / 16), *picked,
            first, first - 1 / 16, first + 1 / 16, bits0, bits0 - 1 / 16, bits0 + 1,
            bits0 * 0.5, 1e300, np.inf, -np.inf]


def check_choice(launch, w, dist, bits, rng, upload=lambda a: a):
    """PlaneChoiceCuda == PlaneChoice for every target of :func:`targets`, and estimate()."""
    cpu = PlaneChoice(w, dist, bits)
    gpu = PlaneChoiceCuda(w, upload(dist), upload(bits), launch=launch)
    assert gpu.bits0 == cpu.bits0
    if cpu.n:
        assert gpu.first == cpu.first
    rows = np.arange(w.shape[0])
    seen = set()
    for target in targets(w, dist, bits, rng):
        got, want = gpu.select(target), cpu.select(target)
        assert isinstance(got, np.ndarray) and got.dtype == np.int64
        assert_bytes(got, want, f"planes for target {target}")
        seen.add(want.tobytes())
        assert gpu.estimate(want) == cpu.estimate(want) == bits[rows, want].sum()
        assert gpu.estimate(upload(want)) == cpu.estimate(want)
        # the planes select returned are kept on the device, and only those
        kept = gpu.on_device(got)
        if gpu.n and not (cpu.n == 0 or gpu.bits0 <= target):
            assert kept is not None and np.array_equal(launch.asnumpy(kept), got)
            assert gpu.estimate(got) == cpu.estimate(want)
        assert gpu.on_device(got.copy()) is None
    return len(seen)


@NO_GXX
@pytest.mark.parametrize("seed", [0, 1])
def test_host_choice_real_figures(lib, seed):
    w, dist, bits = real_figures(seed)
    assert check_choice(HostLaunch(lib, 4, 64), w, dist, bits, np.random.default_rng(seed)) > 30


@NO_GXX
@pytest.mark.parametrize("name,figures", CASES, ids=CASE_IDS)
def test_host_choice(lib, name, figures):
    rng = np.random.default_rng(11)
    for grid, threads in GRIDS[1:3]:
        check_choice(HostLaunch(lib, grid, threads), *figures, rng)


@NO_GXX
def test_host_ties_taken_whole(lib):
    """Blocks of one move each at equal slopes: a target met by some of them takes them all,
    whichever order the sort left them in."""
    n = 50
    w, dist = np.ones(n), np.tile([0.0, 3.0], (n, 1))
    bits = np.tile([8.0, 2.0], (n, 1))
    choice = PlaneChoiceCuda(w, dist, bits, launch=HostLaunch(lib))
    for target in (8.0 * n - 6.0, 8.0 * n - 1.0, 7.0 * n):
        assert (choice.select(target) == 1).all()
        assert_bytes(choice.select(target), PlaneChoice(w, dist, bits).select(target), "")


@NO_GXX
def test_host_nan_figures_are_refused(lib):
    bits = np.array([[10.0, 5.0]])
    for w, dist in ((np.ones(1), np.array([[np.nan, 1.0]])), (np.full(1, np.nan), bits)):
        for make in (PlaneChoice, functools.partial(PlaneChoiceCuda, launch=HostLaunch(lib))):
            with pytest.raises(ValueError, match="non-negative"):
                make(w, dist, bits)


def test_plane_choice_estimate():
    """PlaneChoice.estimate: the bits at the planes, also with no blocks."""
    w, dist, bits = random_eighths(np.random.default_rng(3), 50, 21)
    drops = np.random.default_rng(4).integers(0, 21, 50)
    assert PlaneChoice(w, dist, bits).estimate(drops) == bits[np.arange(50), drops].sum()
    assert PlaneChoice(w, dist, bits).on_device(drops) is None     # chosen on the host
    assert PlaneChoice(np.zeros(0), np.zeros((0, 21)), np.zeros((0, 21))).estimate(
        np.zeros(0, np.int64)) == 0.0


# ------------------------------------------------------------------------------ GPU

def _cuda():
    from conftest import require_cuda
    cupy = require_cuda()
    from cinegpu.encode.ht_select_gpu import CudaLaunch
    return cupy, CudaLaunch()


@GPU
@pytest.mark.parametrize("name,figures", [*CASES, ("real0", None), ("real1", None)],
                         ids=[*CASE_IDS, "real0", "real1"])
def test_gpu_kernels_and_choice(name, figures):
    """The compiled kernels == numba, and PlaneChoiceCuda on CuPy == PlaneChoice (dist and bits
    CuPy, w numpy), estimate() of numpy and CuPy planes."""
    cupy, launch = _cuda()
    figures = real_figures(int(name[-1])) if figures is None else figures
    check_kernels(launch, *figures)
    check_choice(launch, *figures, np.random.default_rng(12), upload=cupy.asarray)
    w, dist, bits = figures        # the default launcher, w on the device too
    cpu, gpu = PlaneChoice(w, dist, bits), PlaneChoiceCuda(*map(cupy.asarray, figures))
    for target in targets(w, dist, bits, np.random.default_rng(13))[::3]:
        assert_bytes(gpu.select(target), cpu.select(target), f"planes for target {target}")


@GPU
def test_gpu_nan_figures_are_refused():
    cupy, _ = _cuda()
    with pytest.raises(ValueError, match="non-negative"):
        PlaneChoiceCuda(np.ones(1), cupy.asarray([[np.nan, 1.0]]), cupy.asarray([[10.0, 5.0]]))


@GPU
@pytest.mark.parametrize("reversible", [True, False])
def test_gpu_figures_kept_on_the_device(reversible):
    """ht_plane_figures_cuda(keep=True) leaves the very figures of keep=False on the device
    (no rows too), and PlaneChoiceCuda over them chooses PlaneChoice's planes."""
    cupy, _ = _cuda()
    from cinegpu.encode.ht import DMAX
    from cinegpu.encode.tier1.ht_gpu import ht_plane_figures_cuda
    flat, cb = synthetic_tile(reversible)
    rows = np.arange(cb.shape[0], dtype=np.int64)
    dist, bits = ht_plane_figures_cuda(flat, cb, rows, DMAX)
    d_dist, d_bits = ht_plane_figures_cuda(cupy.asarray(flat), cb, rows, DMAX, keep=True)
    assert isinstance(d_dist, cupy.ndarray) and isinstance(d_bits, cupy.ndarray)
    assert_bytes(d_dist.get(), dist, "dist")
    assert_bytes(d_bits.get(), bits, "bits")
    empty = ht_plane_figures_cuda(flat, cb, rows[:0], DMAX, keep=True)
    assert all(isinstance(a, cupy.ndarray) and a.shape == (0, DMAX + 1) for a in empty)
    w = np.random.default_rng(14).random(rows.size) + 0.5
    cpu, gpu = PlaneChoice(w, dist, bits), PlaneChoiceCuda(w, d_dist, d_bits)
    for share in (1.0, 0.7, 0.3, 0.05, 0.0):
        target = share * float(bits[:, 0].sum())
        assert_bytes(gpu.select(target), cpu.select(target), f"share {share}")
