"""The encoder's forward stage on the GPU (CuPy), one tile at a time, as the kernels of
``cuda/forward.cu``, into the same flat buffer :func:`cinegpu.encode.forward.forward_tile`
builds.  Irreversible: DC level shift + forward ICT, forward 9/7 DWT and quantisation.
Reversible (lossless): DC level shift + forward RCT and forward 5/3 DWT, int32; the
bands are their integer coefficients.

Twins (compared by the gpu-marked tests): :func:`ict` ~ ``forward_ict`` after the DC
shift, :func:`fdwt97` ~ ``fdwt_97``, :func:`quantize` ~ ``quantize_band``;
:func:`rct` ~ ``forward_rct`` after the DC shift and :func:`fdwt53` ~ ``fdwt_53``,
bit for bit.  Importing this module needs CuPy.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import cupy
import numpy as np

from cinegpu.decode import nvrtc
from cinegpu.decode.transform.dwt import level_rects

from .forward_graph import interleaved

__all__ = ["BandTables", "HostStaging", "band_layout", "band_tables", "code_value_plane",
           "code_values", "component_extremes", "fdwt53", "fdwt97", "forward_tile_cuda",
           "guard_bits_cuda", "ict", "kernel", "quantize", "rct", "rgb_to_xyz12"]

log = logging.getLogger(__name__)
CUDA_DIR = Path(__file__).with_name("cuda")
THREADS = 256


def kernel(name: str, module: str = "forward") -> cupy.RawKernel:
    """Kernel ``name`` of ``encode/cuda/<module>.cu`` on the current device (cached)."""
    return _kernel(name, module, cupy.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _kernel(name: str, module: str, device_id: int) -> cupy.RawKernel:
    with cupy.cuda.Device(device_id):
        return nvrtc.kernel(CUDA_DIR / f"{module}.cu", name)


def _grid(n: int) -> tuple[int]:
    return (max(1, min((n + THREADS - 1) // THREADS, 65535)),)


#: plane_extremes_<suffix> of forward.cu per sample dtype (the host emulation's codes follow
#: this order)
EXTREMES_KERNELS = {np.dtype(t): s for t, s in (
    (np.uint8, "u8"), (np.int8, "i8"), (np.uint16, "u16"), (np.int16, "i16"),
    (np.uint32, "u32"), (np.int32, "i32"), (np.int64, "i64"))}
EXTREMES_THREADS = 256  # EXT_THREADS of forward.cu


def extremes_grid(h: int, w: int) -> tuple[int, int]:
    """The (column chunks, row chunks) grid of plane_extremes for an (h, w) plane: a few
    thousand blocks at most, each thread a few samples."""
    return max(1, min(-(-w // EXTREMES_THREADS), 16)), max(1, min(h, 256))


def component_extremes(comps) -> np.ndarray:
    """int64 (len(comps), 2): the smallest and largest sample of each component, CuPy 2-D
    planes of any strides, one kernel per component (``plane_extremes_*``) and one copy back
    for all; the components of one interleaved image (:func:`.forward_graph.interleaved`)
    in one pass over it (``image_extremes_*``).  Planes of other dtypes or ranks, or
    empty ones, are reduced by CuPy."""
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    out = cupy.empty((len(comps), 2), cupy.int64)
    out[:, 0], out[:, 1] = hi, lo
    image = interleaved(comps)
    suffix = EXTREMES_KERNELS.get(np.dtype(image.dtype)) if image is not None else None
    if suffix is not None and len(comps) <= 4:      # the whole image in one pass
        threads = EXTREMES_THREADS - EXTREMES_THREADS % len(comps)
        grid = max(1, min(-(-image.size // (threads * 16)), 2048))
        kernel(f"image_extremes_{suffix}")((grid,), (threads,),
                                           (image, np.int64(image.size), np.int32(len(comps)),
                                            out))
        return out.get()
    for i, c in enumerate(comps):
        suffix = EXTREMES_KERNELS.get(np.dtype(c.dtype))
        if suffix is None or c.ndim != 2 or c.size == 0 or \
                any(s % c.itemsize for s in c.strides):
            out[i, 0], out[i, 1] = c.min().astype(cupy.int64), c.max().astype(cupy.int64)
            continue
        h, w = c.shape
        rs, ps = (s // c.itemsize for s in c.strides)
        kernel(f"plane_extremes_{suffix}")(extremes_grid(h, w), (EXTREMES_THREADS,),
                                            (c, np.int64(h), np.int64(w), np.int64(rs),
                                             np.int64(ps), out[i]))
    return out.get()


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


def dc_shift_i32(x, shift: int):
    """int32 (x - shift) of an int32 device plane (G.1.2), the reversible path's shift."""
    x = cupy.ascontiguousarray(x, cupy.int32)
    out = cupy.empty(x.shape, cupy.int32)
    if x.size:
        kernel("dc_shift_i32")(_grid(x.size), (THREADS,),
                               (x, out, np.int32(shift), np.int64(x.size)))
    return out


def rct(r, g, b, shifts=(0, 0, 0)):
    """DC shift by ``shifts`` then forward RCT (G.2, G-5) of int32 device planes -> int32
    (Y0, Y1, Y2)."""
    r, g, b = (cupy.ascontiguousarray(a, cupy.int32) for a in (r, g, b))
    if not r.shape == g.shape == b.shape:
        raise ValueError(f"RCT needs equal component shapes, got {r.shape}, {g.shape}, {b.shape}")
    y0, y1, y2 = (cupy.empty(r.shape, cupy.int32) for _ in range(3))
    if r.size:
        kernel("dc_shift_rct_i32")(_grid(r.size), (THREADS,),
                                   (r, g, b, *(np.int32(s) for s in shifts), y0, y1, y2,
                                    np.int64(r.size)))
    return y0, y1, y2


# 1D_SD kernels of a contiguous plane: (columns kernel, rows kernel, dtype) per filter
_SD = {"97": ("sd97_cols", "sd97_rows", cupy.float32),
       "53": ("sd53_cols_i32", "sd53_rows_i32", cupy.int32)}
# forward.cu's 1D_SD launches: columns in segments of SDC_S rows, a thread a column, blocks
# of _SDC_THREADS; rows in tiles of SD_ROWS rows by SD_S samples, a block of one warp
_SDC_S, _SDC_THREADS = 32, 128
_SD_S, _SD_ROWS, _SD_THREADS = 64, 32, 32
_GRID_MAX = 65535  # the kernels loop over tiles past the grid


def _sd(x, p: int, filt: str, axis: int):
    """1D_SD (F.4.8; ``filt``: "97" or "53") of a contiguous 2-D plane along ``axis``
    (0: down the columns, 1: along the rows) -> (lo, hi); ``p``: parity of the first
    sample.  Columns: a thread a column, 32 rows a block; rows: one block per tile of 64
    samples by 32 rows."""
    cols, rows, dtype = _SD[filt]
    n, lines = (x.shape[0], x.shape[1]) if axis == 0 else (x.shape[1], x.shape[0])
    nl = (n - p + 1) // 2
    shapes = ((nl, lines), (n - nl, lines)) if axis == 0 else ((lines, nl), (lines, n - nl))
    lo, hi = (cupy.empty(s, dtype) for s in shapes)
    if n and lines:
        if axis == 0:
            grid = (min(-(-lines // _SDC_THREADS), _GRID_MAX), min(-(-n // _SDC_S), _GRID_MAX))
        else:
            grid = (min(-(-n // _SD_S), _GRID_MAX), min(-(-lines // _SD_ROWS), _GRID_MAX))
        kernel(cols if axis == 0 else rows)(grid, (_SDC_THREADS if axis == 0 else _SD_THREADS,),
                                            (x, lo, hi, np.int32(n), np.int32(lines), np.int32(p)))
    return lo, hi


def _sd_cols(x, p: int, filt: str):
    """1D_SD down the columns of a contiguous (n, w) plane -> (lo, hi)."""
    return _sd(x, p, filt, 0)


def _sd_rows(x, p: int, filt: str):
    """1D_SD along the rows of a contiguous (m, n) plane -> (lo, hi), read coalesced
    through shared memory (no transposes)."""
    return _sd(x, p, filt, 1)


def _fdwt(x, nlevels: int, origin: tuple[int, int], filt: str):
    a = cupy.ascontiguousarray(x, _SD[filt][2])
    if a.ndim != 2:
        raise ValueError(f"need a 2-D plane, got shape {a.shape}")
    u0, v0 = origin
    levels = []
    for rect in level_rects((u0, v0, u0 + a.shape[1], v0 + a.shape[0]), nlevels):
        top, bottom = _sd_cols(a, rect[1] & 1, filt)  # VER_SD
        ll, hl = _sd_rows(top, rect[0] & 1, filt)  # HOR_SD
        lh, hh = _sd_rows(bottom, rect[0] & 1, filt)
        levels.append((hl, lh, hh, rect))
        a = ll
    return a, levels[::-1]


def fdwt97(x, nlevels: int, origin: tuple[int, int] = (0, 0)):
    """Forward 9/7 DWT of a float32 device plane; same result layout as ``fdwt_97``."""
    return _fdwt(x, nlevels, origin, "97")


def fdwt53(x, nlevels: int, origin: tuple[int, int] = (0, 0)):
    """Forward 5/3 reversible DWT (F.4.8.1) of an int32 device plane, bit for bit
    ``fdwt_53``: ``(ll, levels)``, levels coarsest first, each ``(hl, lh, hh, rect)``."""
    return _fdwt(x, nlevels, origin, "53")


def quantize(c, delta: float, out=None, offset: int = 0):
    """E.1 indices of a float32 device band, int32 (into ``out`` at ``offset`` if given)."""
    c = cupy.ascontiguousarray(c, cupy.float32)
    if out is None:
        out = cupy.empty(c.shape, cupy.int32)
    if c.size:
        kernel("quantize_f32")(_grid(c.size), (THREADS,),
                               (c, out, np.int64(offset), np.float32(1.0 / delta), np.int64(c.size)))
    return out


def code_value_plane(x, code_values):
    """int32 ``rint(peak clip(x scale, 0, 1))`` of a CuPy plane, ``code_values`` = (scale,
    peak) (:func:`cinegpu.encode.forward.code_value_step`), in CuPy's float32 operations:
    forward.cu's ``code_value`` (and :func:`code_values`), bit for bit, for the paths that do
    not fuse it into the colour kernel."""
    scale, peak = (np.float32(v) for v in code_values)
    v = cupy.clip(x.astype(cupy.float32) * scale, np.float32(0), np.float32(1))
    return cupy.rint(v * peak).astype(cupy.int32)


def _tile_planes(comps, plan, precisions, signed, mct: int, reversible: bool,
                 code_values=None) -> list:
    """Device planes of the tile's components after the DC shift and colour transform:
    int32 when reversible (RCT), else float32 (ICT); ``code_values`` (scale, peak): the
    samples' code values first (:func:`code_value_plane`)."""
    planes = []
    shifts = [0 if signed[tc.c] else 1 << (precisions[tc.c] - 1) for tc in plan.components]
    for tc, a in zip(plan.components, comps):
        part = a[tc.y0:tc.y1, tc.x0:tc.x1]
        if isinstance(part, np.ndarray):   # one upload at the host dtype, widened on the GPU
            part = cupy.asarray(np.ascontiguousarray(part))
        planes.append(cupy.ascontiguousarray(part, cupy.int32) if code_values is None
                      else code_value_plane(part, code_values))
    colour, shift = (rct, dc_shift_i32) if reversible else (ict, dc_shift)
    if not reversible:
        shifts = [float(s) for s in shifts]
    if mct:
        planes[:3] = colour(*planes[:3], shifts=shifts[:3])
        rest = range(3, len(planes))
    else:
        rest = range(len(planes))
    for i in rest:
        planes[i] = shift(planes[i], shifts[i])
    return planes


#: input sample types the batched path's colour kernels read in place (colour_*_<suffix>)
_COLOUR_INPUTS = {np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
                  np.dtype(np.int16): "i16", np.dtype(np.int32): "i32"}


class BandTables:
    """Per tile plan, what the batched forward path's kernels read for every level: each
    component's band offsets in the flat buffer (LL, HL, LH, HH) and reciprocal step sizes,
    on the GPU, made once (from the default memory pool, outside any graph's own pool, so a
    graph replay never uploads).  One per :class:`.encoder.Encoder`; ``None`` where a caller
    has none (built every call)."""

    #: plans kept (a sequence has one geometry; the oldest is dropped first)
    KEEP = 16

    def __init__(self):
        self._items: dict = {}

    def get(self, plan, reversible: bool):
        key = (id(plan), reversible, cupy.cuda.runtime.getDevice())
        got = self._items.get(key)
        if got is None or got[0] is not plan:
            if len(self._items) >= self.KEEP:
                self._items.pop(next(iter(self._items)))
            got = self._items[key] = (plan, *band_tables(plan, reversible))
        return got[1:]


def band_tables(plan, reversible: bool):
    """(offsets, inverse steps, whole, M_b, lengths, limits): the batched path's bands per
    level as arrays (levels, components, 4) of (LL, HL, LH, HH), finest level first, LL's
    entry used at the last level only: device int64 offsets and float32 1 / Delta_b, host
    int64 M_b (0 where unused), device int64 sample counts (0 where unused) and int32
    largest index magnitudes 2^M_b - 1 (what a DCI band is clipped to); ``whole``: whether
    the bands cover the flat buffer (no zero fill)."""
    tcs = plan.components
    levels = tcs[0].levels
    offs = np.zeros((levels, len(tcs), 4), np.int64)
    inv = np.ones((levels, len(tcs), 4), np.float32)
    mb = np.zeros((levels, len(tcs), 4), np.int64)
    lens = np.zeros((levels, len(tcs), 4), np.int64)
    for c, tc in enumerate(tcs):
        for j in range(levels):
            bands = (tc.resolutions[0].bands[0], *tc.resolutions[levels - j].bands)
            for k, b in enumerate(bands):
                if k == 0 and j != levels - 1:
                    continue
                offs[j, c, k], mb[j, c, k], lens[j, c, k] = b.offset, b.Mb, b.width * b.height
                if not reversible:
                    inv[j, c, k] = np.float32(1.0 / b.delta)
    covered = sum(b.width * b.height for tc in tcs for res in tc.resolutions for b in res.bands)
    lims = np.minimum((1 << np.minimum(mb, 31)) - 1, np.iinfo(np.int32).max).astype(np.int32)
    with cupy.cuda.using_allocator(cupy.get_default_memory_pool().malloc):
        return (cupy.asarray(offs), cupy.asarray(inv), covered == plan.coeff_size, mb,
                cupy.asarray(lens), cupy.asarray(lims))


def _batchable(plan) -> bool:
    """Whether the tile's components can take the batched path: 1-3 components of one
    geometry (no subsampling), at least one DWT level, no level empty."""
    tcs = plan.components
    if not 1 <= len(tcs) <= 3:
        return False
    t0 = tcs[0]
    geo = (t0.x0, t0.y0, t0.x1, t0.y1, t0.levels)
    if t0.levels < 1 or any((tc.x0, tc.y0, tc.x1, tc.y1, tc.levels) != geo for tc in tcs):
        return False
    rects = level_rects((t0.x0, t0.y0, t0.x1, t0.y1), t0.levels)
    return all(r[2] > r[0] and r[3] > r[1] for r in rects)


def _batched_input(comps, plan, code_values=None):
    """The tile's components as (planes, rs, ps, suffix, code_values) for the colour
    kernels: CuPy views read in place when they share a dtype the kernels read and their
    strides, else contiguous uploads / int32 copies (their code values, where
    ``code_values`` is given: then None is returned for the kernel's step)."""
    parts = [a[tc.y0:tc.y1, tc.x0:tc.x1] for tc, a in zip(plan.components, comps)]
    parts = [cupy.asarray(np.ascontiguousarray(p)) if isinstance(p, np.ndarray) else p
             for p in parts]
    d = parts[0].dtype
    if d not in _COLOUR_INPUTS or any(p.dtype != d or p.strides != parts[0].strides
                                      for p in parts) \
            or any(st % d.itemsize for st in parts[0].strides):
        parts = [cupy.ascontiguousarray(p, cupy.int32) if code_values is None
                 else code_value_plane(p, code_values) for p in parts]
        d, code_values = parts[0].dtype, None
    rs, ps = (st // d.itemsize for st in parts[0].strides)
    return parts, rs, ps, _COLOUR_INPUTS[d], code_values


def _forward_batched(comps, plan, precisions, signed, mct: int, reversible: bool, tables,
                     code_values=None):
    """forward_tile_cuda's flat buffer in two launches a level for all components (the
    batched, fused kernels of forward.cu; the same buffer to the bit), and each band's
    largest |index| as uint32 (levels, components, 4) in :func:`band_tables`' order.
    ``code_values`` (scale, peak): the colour kernel codes each sample's code value."""
    tcs = plan.components
    t0 = tcs[0]
    ncomp, levels = len(tcs), t0.levels
    h, w = t0.y1 - t0.y0, t0.x1 - t0.x0
    offs, inv, whole = (tables.get(plan, reversible) if tables is not None
                        else band_tables(plan, reversible))[:3]
    tops = cupy.zeros((levels, ncomp, 4), cupy.uint32)
    parts, rs, ps, suffix, code_values = _batched_input(comps, plan, code_values)
    scale, peak = code_values if code_values is not None else (1.0, 0.0)   # peak 0: no step
    shifts = [0 if signed[tc.c] else 1 << (precisions[tc.c] - 1) for tc in tcs]
    dtype = cupy.int32 if reversible else cupy.float32
    scalar = np.int32 if reversible else np.float32
    x = [parts[min(i, ncomp - 1)] for i in range(3)]
    a = cupy.empty((ncomp, h, w), dtype)
    kernel(f"colour_{'i32' if reversible else 'f32'}_{suffix}")(
        (min(-(-w // THREADS), 64), min(h, _GRID_MAX)), (THREADS,),
        (*x, np.int64(rs), np.int64(ps), np.int32(h), np.int32(w), np.int32(ncomp),
         np.int32(bool(mct) and ncomp == 3), *(scalar(shifts[min(i, ncomp - 1)])
                                               for i in range(3)), a, np.int64(h * w),
         np.float32(scale), np.float32(peak)))
    flat = (cupy.empty if whole else cupy.zeros)(plan.coeff_size, cupy.int32)
    filt = "53" if reversible else "97"
    rects = level_rects((t0.x0, t0.y0, t0.x1, t0.y1), levels)
    for j, rect in enumerate(rects):
        n, m = a.shape[1], a.shape[2]          # rows, columns of this level's input
        pv, pu = rect[1] & 1, rect[0] & 1
        nlv, nl = (n - pv + 1) // 2, (m - pu + 1) // 2
        bands = tcs[0].resolutions[levels - j].bands
        want = ((nlv, m - nl), (n - nlv, nl), (n - nlv, m - nl))
        if tuple((b.height, b.width) for b in bands) != want:
            raise AssertionError(f"bands {[(b.height, b.width) for b in bands]} != plan {want}")
        v = cupy.empty_like(a)
        kernel(f"sd{filt}_cols_c")(
            (min(-(-m // _SDC_THREADS), _GRID_MAX), min(-(-n // _SDC_S), _GRID_MAX), ncomp),
            (_SDC_THREADS,), (a, v, np.int64(n * m), np.int32(n), np.int32(m), np.int32(pv)))
        last = j == levels - 1
        ll = v if last else cupy.empty((ncomp, nlv, nl), dtype)   # v: unused at the last
        kernel(f"sd{filt}_rows_q")(
            (min(-(-m // _SD_S), _GRID_MAX), min(-(-n // _SD_ROWS), _GRID_MAX), ncomp),
            (_SD_THREADS,), (v, np.int64(n * m), np.int32(m), np.int32(n), np.int32(pu),
                         np.int32(nlv), ll, np.int64(nlv * nl), flat, offs[j], inv[j],
                         np.int32(last), tops[j]))
        a = ll
    return flat, tops


def forward_tile_cuda(comps, plan, precisions, signed, mct: int, reversible: bool,
                      on_device: bool = False, tables: BandTables | None = None,
                      batched: bool = True, maxima: list | None = None, code_values=None):
    """As :func:`cinegpu.encode.forward.forward_tile`, on the GPU: 9/7 + ICT +
    quantisation, or (``reversible``) 5/3 + RCT with the integer coefficients as indices.
    ``comps``: numpy or CuPy planes; ``on_device``: return the CuPy buffer (no copy back).
    A tile of 1-3 components of one geometry takes the batched path (two launches a DWT
    level, quantisation fused; ``tables``: the encoder's :class:`BandTables`); ``batched``
    False, or another tile, runs kernel by kernel and component by component.  Both give
    the same buffer to the bit (GPU tests).  ``maxima``: a list to which the batched path
    appends its bands' largest |index| (device uint32, for :func:`guard_bits_cuda`), the
    other path None.  ``code_values``: (scale, peak)
    (:func:`cinegpu.encode.forward.code_value_step`): the components hold samples coded as
    IMF's code values ``rint(peak clip(s scale, 0, 1))``, computed by the batched path's colour
    kernel as it reads them (no int32 planes), by the other path first; both as
    :func:`code_values` (the same buffer as from its planes)."""
    if batched and _batchable(plan):
        flat, tops = _forward_batched(comps, plan, precisions, signed, mct, reversible, tables,
                                      code_values)
        if maxima is not None:
            maxima.append(tops)
        return flat if on_device else cupy.asnumpy(flat)
    if maxima is not None:
        maxima.append(None)
    planes = _tile_planes(comps, plan, precisions, signed, mct, reversible, code_values)
    flat = cupy.zeros(plan.coeff_size, cupy.int32)
    fdwt = fdwt53 if reversible else fdwt97
    for tc, x in zip(plan.components, planes):
        ll, levels = fdwt(x, tc.levels, (tc.x0, tc.y0))
        for res in tc.resolutions:
            arrays = (ll,) if res.r == 0 else levels[res.r - 1][:3]
            for band, arr in zip(res.bands, arrays):
                if arr.shape != (band.height, band.width):
                    raise AssertionError(f"band {arr.shape} != plan {(band.height, band.width)}")
                if reversible:
                    flat[band.offset:band.offset + arr.size] = arr.ravel()
                else:
                    quantize(arr, band.delta, flat, band.offset)
    return flat if on_device else cupy.asnumpy(flat)


def band_layout(plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offset, length, M_b) of every non-empty band of a tile plan, int64 arrays."""
    rows = [(b.offset, b.width * b.height, b.Mb) for tc in plan.components
            for res in tc.resolutions for b in res.bands if b.width * b.height]
    a = np.array(rows, np.int64).reshape(-1, 3)
    return a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy()


def _band_grid(lengths: np.ndarray) -> tuple[int, int]:
    most = int(lengths.max()) if lengths.size else 0
    return (max(1, min((most + THREADS * 8 - 1) // (THREADS * 8), 1024)), int(lengths.size))


#: blocks a band for band_clip_over_i32, whose blocks mostly find their band within its limit
_CLIP_OVER_CHUNKS = 32


def guard_bits_cuda(plans, flats, guard_bits: int, fixed: bool, maxima=None,
                    tables: BandTables | None = None, reversible: bool = False) -> int:
    """The GPU side of ``Encoder._guard_bits``: with ``fixed`` guard bits (DCI) clip every
    band's indices to its M_b bit-planes in place (no host round trip) and return
    ``guard_bits``; else return the guard bits the largest index needs (E-2: one small
    device-to-host copy).  ``maxima``: per tile, the batched forward path's band maxima
    (or None: the bands are read here); with them a fixed clip reads only the bands whose
    largest index is over the limit (none, mostly), on the GPU without a host round trip."""
    need = guard_bits
    maxima = maxima if maxima is not None else [None] * len(plans)
    for plan, flat, tops in zip(plans, flats, maxima):
        if tops is not None and fixed:
            offs, _, _, mb, lens, lims = (tables.get(plan, reversible) if tables is not None
                                          else band_tables(plan, reversible))
            grid = (_CLIP_OVER_CHUNKS, int(mb.size))   # few blocks a band: most return at once
            kernel("band_clip_over_i32")(grid, (THREADS,), (flat, offs, lens, lims, tops))
            continue
        if tops is not None:
            mb = (tables.get(plan, reversible) if tables is not None
                  else band_tables(plan, reversible))[3]
            bits = np.array([int(v).bit_length() for v in cupy.asnumpy(tops).ravel()],
                            np.int64).reshape(mb.shape)
            need = max(need, guard_bits + int(max(0, (bits - mb).max())))
            continue
        off, length, mb = band_layout(plan)
        if not off.size:
            continue
        grid = _band_grid(length)
        d_off, d_len = cupy.asarray(off), cupy.asarray(length)
        if fixed:
            lim = cupy.asarray(((1 << mb) - 1).astype(np.int32))
            kernel("band_clip_i32")(grid, (THREADS,), (flat, d_off, d_len, lim))
            continue
        top = cupy.zeros(off.size, cupy.uint32)
        kernel("band_absmax_i32")(grid, (THREADS,), (flat, d_off, d_len, top))
        bits = np.array([int(v).bit_length() for v in cupy.asnumpy(top)], np.int64)
        need = max(need, guard_bits + int(max(0, (bits - mb).max())))
    return need


class HostStaging:
    """A reusable page-locked host buffer for uploads (one per thread): an image copied
    into it goes up with an asynchronous copy at full bus speed, where a pageable array
    is staged by the driver in pieces.  ``upload(a, stream)`` returns a CuPy copy of
    ``a`` queued on ``stream``; the buffer is reused once that copy has run.  ``buffer(shape,
    dtype)`` hands out the buffer itself to be filled (a frame read straight into it), and
    an ``a`` that is that buffer goes up without being copied first."""

    def __init__(self):
        self._mem = None
        self._done = None

    def buffer(self, shape, dtype) -> np.ndarray:
        """The page-locked buffer as an array of ``shape`` and ``dtype``, once the last
        upload from it has run (grown as needed)."""
        dtype = np.dtype(dtype)
        size = int(np.prod(shape))
        if self._done is not None:
            self._done.synchronize()           # the last upload has left the buffer
        if self._mem is None or self._mem.size() < size * dtype.itemsize:
            self._mem = cupy.cuda.alloc_pinned_memory(max(size * dtype.itemsize, 1))
        return np.frombuffer(self._mem, dtype, size).reshape(shape)

    def upload(self, a: np.ndarray, stream=None):
        a = np.asarray(a)
        host = self._mem is not None and a.flags.c_contiguous and \
            a.__array_interface__["data"][0] == self._mem.ptr and a.nbytes <= self._mem.size()
        if host:                                 # read into the buffer: it goes up as it is
            host = a
        else:
            if self._mem is not None and np.may_share_memory(
                    a, np.frombuffer(self._mem, np.uint8, self._mem.size())):
                a = a.copy()                     # another view of the buffer: copy it out first
            host = self.buffer(a.shape, a.dtype)
            np.copyto(host, a)
        stream = stream if stream is not None else cupy.cuda.get_current_stream()
        dev = cupy.empty(a.shape, a.dtype)
        dev.set(host, stream=stream)
        self._done = cupy.cuda.Event(block=True, disable_timing=True)
        self._done.record(stream)
        return dev


_XYZ_KERNELS = {np.dtype(np.uint16): "rgb_to_xyz12_u16", np.dtype(np.uint8): "rgb_to_xyz12_u8",
                np.dtype(np.float32): "rgb_to_xyz12_f32"}


def rgb_to_xyz12(image, top: float, in_gamma: float, matrix, inv_gamma: float,
                 peak: int = 4095):
    """DCI X'Y'Z' 12-bit code values of an (H, W, 3) image (numpy or CuPy; uint8, uint16
    or float32) as three CuPy int32 planes, on the GPU.  Samples are read as
    ``clip(s * (1 / top), 0, 1)`` in float32 (:func:`cinegpu.media.images.frames.unit_scale`);
    ``in_gamma``, ``matrix`` (3x3, XYZ per unit of peak white) and ``inv_gamma`` come from
    :func:`cinegpu.media.images.colour.xyz12_parameters` (``in_gamma`` <= 0: no transform, the
    image holds X'Y'Z' already); code values run to ``peak``.  Twin:
    :func:`cinegpu.media.images.colour.to_xyz12`, within one code value (exact without a
    transform)."""
    img = cupy.asarray(image)
    if img.dtype not in _XYZ_KERNELS:
        img = img.astype(cupy.float32)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"want an (H, W, 3) image, got shape {img.shape}")
    img = cupy.ascontiguousarray(img)
    h, w = img.shape[:2]
    planes = tuple(cupy.empty((h, w), cupy.int32) for _ in range(3))
    m = cupy.asarray(np.asarray(matrix, np.float32).reshape(9))
    if h * w:
        kernel(_XYZ_KERNELS[img.dtype])(_grid(h * w), (THREADS,),
                                        (img, np.int64(h * w), np.float32(1.0 / top),
                                         np.float32(in_gamma), m, np.float32(inv_gamma),
                                         np.float32(peak), *planes))
    return planes


def code_values(image, top: float, bits: int):
    """``rint((2^bits - 1) clip(s * (1 / top), 0, 1))`` of an (H, W, 3) image (as
    :func:`rgb_to_xyz12`) as three CuPy int32 planes: IMF's R'G'B' at ``bits`` per component,
    exactly as the host computes it (:func:`cinegpu.media.images.frames.unit_scale`, then
    ``np.rint``)."""
    return rgb_to_xyz12(image, top, 0.0, np.eye(3, dtype=np.float32), 1.0, (1 << bits) - 1)
