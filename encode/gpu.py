"""The encoder's forward stage on the GPU (CuPy): DC level shift + forward ICT, forward
9/7 DWT and quantisation as the kernels of ``cuda/forward.cu``, one tile at a time,
into the same flat buffer :func:`cinegpu.encode.forward.forward_tile` builds.

Twins (compared by the gpu-marked tests): :func:`ict` ~ ``forward_ict`` after the DC
shift, :func:`fdwt97` ~ ``fdwt_97``, :func:`quantize` ~ ``quantize_band``.  The
reversible 5/3 + RCT path has no kernels yet: it runs on the CPU twin.  Importing
this module needs CuPy.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import cupy
import numpy as np

from cinegpu.decode.transform.dwt import level_rects

from .forward import forward_tile

__all__ = ["fdwt97", "forward_tile_cuda", "ict", "kernel", "quantize"]

log = logging.getLogger(__name__)
CUDA_DIR = Path(__file__).with_name("cuda")
NVRTC_OPTIONS = ("--std=c++14", "--fmad=false")
THREADS = 256


@functools.lru_cache(maxsize=None)
def _module(name: str, device_id: int) -> cupy.RawModule:
    path = CUDA_DIR / f"{name}.cu"
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=path.read_text(), options=NVRTC_OPTIONS)
        try:
            module.compile()
        except cupy.cuda.compiler.CompileException as exc:
            raise RuntimeError(f"NVRTC compiling {path}: {exc}") from exc
    return module


def kernel(name: str, module: str = "forward") -> cupy.RawKernel:
    """Kernel ``name`` of ``encode/cuda/<module>.cu`` on the current device (cached)."""
    return _module(module, cupy.cuda.runtime.getDevice()).get_function(name)


def _grid(n: int) -> tuple[int]:
    return (max(1, min((n + THREADS - 1) // THREADS, 65535)),)


def dc_shift(x, shift: float):
    """float32 (x - shift) of an int32 device plane (G.1.2)."""
    x = cupy.ascontiguousarray(x, cupy.int32)
    out = cupy.empty(x.shape, cupy.float32)
    if x.size:
        kernel("dc_shift_f32")(_grid(x.size), (THREADS,), (x, out, np.float32(shift), np.int64(x.size)))
    return out


def ict(r, g, b, shifts=(0.0, 0.0, 0.0)):
    """DC shift by ``shifts`` then forward ICT (G-7) of int32 device planes -> float32 (Y, Cb, Cr)."""
    r, g, b = (cupy.ascontiguousarray(a, cupy.int32) for a in (r, g, b))
    y, cb, cr = (cupy.empty(r.shape, cupy.float32) for _ in range(3))
    if r.size:
        kernel("dc_shift_ict_f32")(_grid(r.size), (THREADS,),
                                   (r, g, b, *(np.float32(s) for s in shifts), y, cb, cr,
                                    np.int64(r.size)))
    return y, cb, cr


def _sd_cols(x, p: int):
    """9/7 1D_SD down the columns of a contiguous float32 (n, w) plane -> (lo, hi)."""
    n, w = x.shape
    nl = (n - p + 1) // 2
    lo = cupy.empty((nl, w), cupy.float32)
    hi = cupy.empty((n - nl, w), cupy.float32)
    if n and w:
        kernel("sd97_cols")(((w + THREADS - 1) // THREADS,), (THREADS,),
                            (x, lo, hi, np.int32(n), np.int32(w), np.int32(p)))
    return lo, hi


def _sd_rows(x, p: int):
    """Along rows, through a transpose so the column kernel stays coalesced."""
    lo, hi = _sd_cols(cupy.ascontiguousarray(x.T), p)
    return cupy.ascontiguousarray(lo.T), cupy.ascontiguousarray(hi.T)


def fdwt97(x, nlevels: int, origin: tuple[int, int] = (0, 0)):
    """Forward 9/7 DWT of a float32 device plane; same result layout as ``fdwt_97``."""
    a = cupy.ascontiguousarray(x, cupy.float32)
    u0, v0 = origin
    levels = []
    for rect in level_rects((u0, v0, u0 + a.shape[1], v0 + a.shape[0]), nlevels):
        top, bottom = _sd_cols(a, rect[1] & 1)  # VER_SD
        ll, hl = _sd_rows(top, rect[0] & 1)  # HOR_SD
        lh, hh = _sd_rows(bottom, rect[0] & 1)
        levels.append((hl, lh, hh, rect))
        a = ll
    return a, levels[::-1]


def quantize(c, delta: float, out=None, offset: int = 0):
    """E.1 indices of a float32 device band, int32 (into ``out`` at ``offset`` if given)."""
    c = cupy.ascontiguousarray(c, cupy.float32)
    if out is None:
        out = cupy.empty(c.shape, cupy.int32)
    if c.size:
        kernel("quantize_f32")(_grid(c.size), (THREADS,),
                               (c, out, np.int64(offset), np.float32(1.0 / delta), np.int64(c.size)))
    return out


def forward_tile_cuda(comps, plan, precisions, signed, mct: int, reversible: bool) -> np.ndarray:
    """As :func:`cinegpu.encode.forward.forward_tile`, on the GPU (irreversible path)."""
    if reversible:
        return forward_tile(comps, plan, precisions, signed, mct, reversible)
    planes = []
    shifts = [0.0 if signed[tc.c] else float(1 << (precisions[tc.c] - 1)) for tc in plan.components]
    for tc, a in zip(plan.components, comps):
        planes.append(cupy.asarray(np.ascontiguousarray(a[tc.y0:tc.y1, tc.x0:tc.x1]), cupy.int32))
    if mct:
        planes[:3] = ict(*planes[:3], shifts=shifts[:3])
        rest = range(3, len(planes))
    else:
        rest = range(len(planes))
    for i in rest:
        planes[i] = dc_shift(planes[i], shifts[i])
    flat = cupy.zeros(plan.coeff_size, cupy.int32)
    for tc, x in zip(plan.components, planes):
        ll, levels = fdwt97(x, tc.levels, (tc.x0, tc.y0))
        for res in tc.resolutions:
            arrays = (ll,) if res.r == 0 else levels[res.r - 1][:3]
            for band, arr in zip(res.bands, arrays):
                if arr.shape != (band.height, band.width):
                    raise AssertionError(f"band {arr.shape} != plan {(band.height, band.width)}")
                quantize(arr, band.delta, flat, band.offset)
    return cupy.asnumpy(flat)
