"""The finest level's VER_SR fused with the inverse MCT and G.1.2 (decode/transform/cuda/final_level.cu,
the last launch of ``cuda_backend._mct_schedule``) compiled as C++ for the host
(``final_level_host.cpp``, g++ -ffp-contract=off, as NVRTC's --fmad=false) against its numpy twins:
``dwt._isr_97`` / ``_isr_53`` down each component's columns, then ``mct.inverse_ict`` /
``inverse_rct`` and ``level_shift.to_samples``, bit for bit. Line counts across the kernel's tiles
(56 lines written, 4 read again above and below) and the mirror lines of short columns, both
parities of the first line, column counts across its 32, every sample type, frames batched;
the block of the GPU's launch (32 x 8 threads, run phase by phase between barriers, so a missing
__syncthreads fails), other blocks and the reverse thread order. Skipped without g++.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from cinegpu.decode.transform import level_shift, mct
from cinegpu.decode.transform.dwt import _isr_53, _isr_97, _split
from conftest import PACKAGE, host_library, needs_cxx, ptr

SOURCE = PACKAGE / "decode" / "transform" / "cuda" / "final_level_host.cpp"
pytestmark = needs_cxx

LINES = [2, 3, 4, 5, 6, 7, 9, 55, 56, 57, 60, 61, 64, 112, 113, 117, 130]
COLUMNS = [1, 5, 32, 33, 70]
#: out_type codes of final_level_emulate: (dtype, precision, signed)
TYPES = {0: (np.int32, 20, True), 1: (np.uint16, 12, False), 2: (np.int16, 16, True), 3: (np.uint8, 8, False),
         4: (np.int8, 8, True)}


@pytest.fixture(scope="module")
def lib():
    return host_library(SOURCE)


def _bounds(precision: int, signed: bool) -> tuple[int, int, int]:
    if signed:
        return 0, -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    return 1 << (precision - 1), 0, (1 << precision) - 1


def twin(planes: np.ndarray, pv: int, reversible: bool, precision: int, signed: bool, dtype) -> list:
    """What the kernel must write for one frame: planes (3, m, n), interleaved lines."""
    m = planes.shape[1]
    il, ih = _split(m, pv, 0)
    cols = []
    for x in planes:
        out = np.empty_like(x)
        (_isr_53 if reversible else _isr_97)(x[il], x[ih], pv, 0, out)
        cols.append(out)
    rgb = (mct.inverse_rct if reversible else mct.inverse_ict)(*cols)
    return [level_shift.to_samples(c, precision, signed).astype(dtype) for c in rgb]


def host(lib, planes: np.ndarray, pv: int, reversible: bool, out_type: int, block=(32, 8),
         reverse: bool = False) -> np.ndarray:
    """The kernel on (frames, 3, m, n) planes: (frames, 3, m, n) samples."""
    dtype, precision, signed = TYPES[out_type]
    frames, _, m, n = planes.shape
    planes = np.ascontiguousarray(planes)
    out = np.full((frames, 3, m, n), 77, dtype)
    bounds = np.array([v for _ in range(3) for v in _bounds(precision, signed)], np.int32)
    plane = m * n * out.itemsize
    r, g, b = (ctypes.c_void_p(out.ctypes.data + c * plane) for c in range(3))
    rc = lib.final_level_emulate(int(reversible), out_type, ptr(planes), ctypes.c_longlong(m * n), m, n, pv,
                                 r, g, b, ptr(bounds), frames, ctypes.c_longlong(3 * m * n),
                                 ctypes.c_longlong(3 * m * n), block[0], block[1], int(reverse))
    assert rc == 0
    return out


def _planes(rng, frames: int, m: int, n: int, reversible: bool, precision: int) -> np.ndarray:
    scale = 1 << (precision + 1)   # beyond the precision's range both ways: the clip is exercised
    if reversible:
        return rng.integers(-scale, scale, (frames, 3, m, n)).astype(np.int32)
    x = rng.normal(0, scale / 4, (frames, 3, m, n)).astype(np.float32)
    x[..., ::7, ::3] = np.round(x[..., ::7, ::3]) + 0.5     # ties through the rounding
    return x


@pytest.mark.parametrize("reversible", [True, False], ids=["53", "97"])
@pytest.mark.parametrize("pv", [0, 1])
def test_final_level_is_the_twins(lib, reversible, pv):
    rng = np.random.default_rng(11 + 2 * pv + reversible)
    for k, m in enumerate(LINES):
        n = COLUMNS[k % len(COLUMNS)]
        out_type = k % len(TYPES)
        dtype, precision, signed = TYPES[out_type]
        planes = _planes(rng, 2, m, n, reversible, precision)
        got = host(lib, planes, pv, reversible, out_type)
        for f in range(2):
            for c, want in enumerate(twin(planes[f], pv, reversible, precision, signed, dtype)):
                assert got[f, c].dtype == want.dtype
                np.testing.assert_array_equal(got[f, c], want, err_msg=f"{m}x{n} frame {f} component {c}")


@pytest.mark.parametrize("block,reverse", [((1, 1), False), ((7, 3), True), ((32, 8), True), ((32, 1), False)])
def test_any_block_and_thread_order(lib, block, reverse):
    rng = np.random.default_rng(23)
    for reversible in (True, False):
        for m, n in ((61, 33), (130, 40)):
            planes = _planes(rng, 1, m, n, reversible, 12)
            want = host(lib, planes, 1, reversible, 1)
            got = host(lib, planes, 1, reversible, 1, block, reverse)
            np.testing.assert_array_equal(got, want, err_msg=f"{m}x{n} block {block}")
            np.testing.assert_array_equal(got[0], np.stack(twin(planes[0], 1, reversible, 12, False, np.uint16)))


def test_the_launch_grid_is_the_kernels_tile():
    """cuda_backend launches final_level.cu on tiles of _FINAL_COLUMNS x _FINAL_LINES: the
    columns and the lines written that the kernel's FL_TW, FL_ROWS and FL_HALO make (a grid of
    other tiles would leave lines unwritten). Read from the sources: CuPy is not needed."""
    cu = SOURCE.with_name("final_level.cu").read_text()
    defines = {k: int(v) for k, v in re.findall(r"#define (FL_TW|FL_ROWS|FL_HALO) (\d+)", cu)}
    backend = (PACKAGE / "decode" / "transform" / "cuda_backend.py").read_text()
    cols, lines, _ = map(int, re.search(r"_FINAL_COLUMNS, _FINAL_LINES, _FINAL_ROWS = (\d+), (\d+), (\d+)",
                                        backend).groups())
    assert (cols, lines) == (defines["FL_TW"], defines["FL_ROWS"] - 2 * defines["FL_HALO"])
