"""CuPy back end of the reconstruction stage: the numpy API on device arrays.

Same functions and arguments as :mod:`cinegpu.decode.transform` (numpy, the
twin every kernel is tested against), taking and returning ``cupy`` arrays.
5/3 + RCT results equal the twins' bit for bit; 9/7 + ICT to float32 rounding
(the kernels avoid fused multiply-adds), so samples within 1 code value.

Inverse DWT per level (T.800 F.3.2): one launch lifts every row of both
halves (HOR_SR, ``idwt*_rows``) into a (mL + mH) x N plane, a transpose
turns its columns into rows, a second launch lifts those (VER_SR) and a
last transpose restores row order: 4 launches a level.

Fused entry points (as :mod:`.cpu_backend` defines them; the decoder uses
them when present): :func:`dequantize_idwt` and :func:`reconstruct_mct`.
They read the tier-1 bands (int32) directly, dequantising as each band row is
loaded, and take 2 launches a level for up to three components of the same
geometry at once: HOR_SR of every row (``idwt*_hor_dq``, writing rows to
their interleaved place), then VER_SR in place on strips of columns held
whole in shared memory (``idwt*_cols``, no transposes).  ``reconstruct_mct``
ends with one kernel doing the inverse RCT/ICT, DC shift and clipping: 13
launches for a 6-level three-component frame.  The schedule of frames of one
geometry (:class:`_MctSchedule`, every DCI frame's path) does the finest level's
VER_SR and that last kernel's work in one (``final_level.cu``: tiles of lines,
the three components together), so the finest level's values never reach
memory: 12 launches.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import cupy
import numpy as np

from .. import nvrtc
from ..nvrtc import launch_1d
from . import display
from .dwt import Level, _band_sizes
from .fused import FlatEntryPoints

__all__ = [
    "dequantize",
    "dequantize_idwt",
    "component_samples_flat",
    "components_samples_flat",
    "dequantize_idwt_flat",
    "idwt_53",
    "idwt_97",
    "inverse_ict",
    "inverse_rct",
    "reconstruct_mct",
    "reconstruct_mct_flat",
    "reconstruct_mct_frames",
    "to_samples",
    "xyz_to_rgb",
]

CUDA_DIR = Path(__file__).with_name("cuda")


def kernel(module: str, name: str) -> cupy.RawKernel:
    """Kernel ``name`` of ``cuda/<module>.cu`` for the current device."""
    return nvrtc.kernel(CUDA_DIR / f"{module}.cu", name)


def kernel_optin(module: str, name: str) -> tuple[cupy.RawKernel, int]:
    """Kernel ``name`` of ``cuda/<module>.cu`` with the whole opt-in shared memory, and that limit."""
    return nvrtc.kernel_optin(CUDA_DIR / f"{module}.cu", name)

_I32 = np.int32
_ROW_THREADS = 256
_COL_THREADS = 512
#: final_level.cu's blocks: FL_TW columns, FL_OUT lines written (threads: FL_TW x _FINAL_ROWS)
_FINAL_COLUMNS, _FINAL_LINES, _FINAL_ROWS = 32, 56, 8
_DEFAULT_SMEM = 48 * 1024  # bytes of dynamic shared memory without opting in
#: the sample types the inverse MCT kernels write (``*_to_samples_*`` in pointwise.cu), by suffix
_SAMPLE_SUFFIX = {np.dtype(np.int32): "", np.dtype(np.uint16): "_u16", np.dtype(np.int16): "_i16",
                  np.dtype(np.uint8): "_u8", np.dtype(np.int8): "_i8"}


def _sample_type(dtype):
    """``dtype`` as a numpy dtype if the inverse MCT kernels write it (None: int32), else None."""
    dt = np.dtype(np.int32 if dtype is None else dtype)
    return dt if dt in _SAMPLE_SUFFIX else None


def _dev(a, dtype):
    """C-contiguous device array of ``dtype`` (copies only when needed)."""
    return cupy.ascontiguousarray(cupy.asarray(a, dtype=dtype))


def dequantize(coeffs, delta: float, reversible: bool):
    """T.800 E.1 on the GPU; see :func:`..quantization.dequantize`."""
    v = _dev(coeffs, cupy.int32)
    if reversible:
        out = cupy.empty_like(v)
        launch_1d(kernel("pointwise", "dequantize_reversible_i32"), v.size, (v, out, np.int64(v.size)))
        return out
    out = cupy.empty(v.shape, cupy.float32)
    k = kernel("pointwise", "dequantize_irreversible_f32")
    launch_1d(k, v.size, (v, out, np.float32(delta / 2.0), np.int64(v.size)))
    return out


def _transpose(a):
    rows, cols = a.shape
    out = cupy.empty((cols, rows), a.dtype)
    if a.size:
        grid = ((cols + 31) // 32, (rows + 31) // 32)
        kernel("dwt", "transpose_b32")(grid, (32, 8), (a, out, _I32(rows), _I32(cols)))
    return out


def _rows(name, lo_a, hi_a, rows_a, lo_b, hi_b, lo_stride, hi_stride, nl, nh, p, out):
    """Lift ``out.shape[0]`` lines of nl + nh samples (1D_SR), one block each."""
    n = nl + nh
    if not (out.shape[0] and n):
        return
    smem = n * 4
    k = kernel("dwt", name)
    if smem > _DEFAULT_SMEM:
        if smem > cupy.cuda.Device().attributes.get("MaxSharedMemoryPerBlockOptin", _DEFAULT_SMEM):
            raise ValueError(f"a line of {n} samples does not fit in shared memory")
        k.max_dynamic_shared_size_bytes = smem
    args = (lo_a, hi_a, _I32(rows_a), lo_b, hi_b, _I32(lo_stride), _I32(hi_stride),
            _I32(nl), _I32(nh), _I32(p), out, _I32(out.shape[1]))
    k((out.shape[0],), (_ROW_THREADS,), args, shared_mem=smem)


def _idwt(ll, levels: Sequence[Level], dtype, name: str):
    a = _dev(ll, dtype)
    for hl, lh, hh, rect in levels:
        hl, lh, hh = (_dev(b, dtype) for b in (hl, lh, hh))
        u0, v0, u1, v1 = rect
        nl, nh = _band_sizes(u0, u1)
        ml, mh = _band_sizes(v0, v1)
        for tag, band, want in (("ll", a, (ml, nl)), ("hl", hl, (ml, nh)),
                                ("lh", lh, (mh, nl)), ("hh", hh, (mh, nh))):
            if band.shape != want:
                raise ValueError(f"{tag} band is {band.shape}, resolution {rect} needs {want} (T.800 F.3.3)")
        n, m = u1 - u0, v1 - v0
        tb = cupy.empty((m, n), dtype)  # HOR_SR: low rows on top, high rows below
        _rows(name, a, hl, ml, lh, hh, nl, nh, nl, nh, u0 & 1, tb)
        tbt = _transpose(tb)
        res_t = cupy.empty((n, m), dtype)  # VER_SR on the transposed plane
        # high-pass part of line c starts at tbt[c, ml]: pass a contiguous 1-D view
        _rows(name, tbt, tbt.ravel()[ml:], n, tbt, tbt, m, m, ml, mh, v0 & 1, res_t)
        a = _transpose(res_t)
    return a


def idwt_53(ll, levels: Sequence[Level]):
    """Inverse 5/3 DWT on the GPU (int32); see :func:`..dwt.idwt_53`."""
    return _idwt(ll, levels, cupy.int32, "idwt53_rows_i32")


def idwt_97(ll, levels: Sequence[Level]):
    """Inverse 9/7 DWT on the GPU (float32); see :func:`..dwt.idwt_97`."""
    return _idwt(ll, levels, cupy.float32, "idwt97_rows_f32")


def _mct(name, dtype, y0, y1, y2, out):
    ys = [_dev(y, dtype) for y in (y0, y1, y2)]
    if out is None:
        out = tuple(cupy.empty_like(ys[0]) for _ in range(3))
    n = ys[0].size
    launch_1d(kernel("pointwise", name), n, (*ys, *out, np.int64(n)))
    return out


def inverse_rct(y0, y1, y2, *, out=None):
    """T.800 G.2 on the GPU; ``out``: three int32 arrays (may be the inputs)."""
    return _mct("inverse_rct_i32", cupy.int32, y0, y1, y2, out)


def inverse_ict(y0, y1, y2, *, out=None):
    """T.800 G.3 on the GPU; ``out``: three float32 arrays (may be the inputs)."""
    return _mct("inverse_ict_f32", cupy.float32, y0, y1, y2, out)


def to_samples(x, precision: int, signed: bool):
    """T.800 G.1.2 on the GPU; see :func:`..level_shift.to_samples`."""
    x = cupy.ascontiguousarray(cupy.asarray(x))
    if signed:
        shift, lo, hi = 0, -(1 << (precision - 1)), (1 << (precision - 1)) - 1
    else:
        shift, lo, hi = 1 << (precision - 1), 0, (1 << precision) - 1
    out = cupy.empty(x.shape, cupy.int32)
    if x.dtype.kind == "f":
        if precision > 24:
            raise ValueError("float path supports precision <= 24 bits")
        name, x = "to_samples_f32", x.astype(cupy.float32, copy=False)
    else:
        name, x = "to_samples_i32", x.astype(cupy.int32, copy=False)
    launch_1d(kernel("pointwise", name), x.size, (x, out, _I32(shift), _I32(lo), _I32(hi), np.int64(x.size)))
    return out


# ------------------------------------------- fused dequantise + IDWT --------

#: shared memory a column strip aims at (bytes): 3 blocks fit on one SM of the GPUs it was
#: tuned on (Hopper)
_STRIP_BYTES = 72 * 1024
_NO_DQ = (np.float32(1.0),) * 4
#: the frame strides of a launch of one frame (the fused kernels take frames batched on a grid axis)
_ONE_FRAME = np.int64(0)
#: bytes of level planes a batched reconstruction (:func:`reconstruct_mct_frames`) lays out at
#: once, at least: its frames go in groups of that much workspace (a 4K DCI frame needs about
#: 140 MB), or of :data:`FRAMES_WORK_SHARE` of the GPU's memory where that is more
FRAMES_WORK_BYTES = 1 << 30
#: the share of a GPU's memory (1 / this) a batched reconstruction's workspace may take: on a
#: GPU of 140 GB a batch of 32 4K DCI frames in one group, each of its launches taking every
#: frame (fewer launches of the host's, docs/performance.md)
FRAMES_WORK_SHARE = 24


@functools.lru_cache(maxsize=16)
def frames_work_bytes(device_id: int) -> int:
    """Workspace bytes a batched reconstruction lays out at once on CUDA device ``device_id``:
    :data:`FRAMES_WORK_BYTES`, or :data:`FRAMES_WORK_SHARE` of its memory where that is more."""
    total = cupy.cuda.runtime.getDeviceProperties(device_id)["totalGlobalMem"]
    return max(FRAMES_WORK_BYTES, total // FRAMES_WORK_SHARE)


def _tier1(a):
    """C-contiguous int32 device array; no copy (and no CuPy call) when already so."""
    if isinstance(a, cupy.ndarray) and a.dtype == _I32 and a.flags.c_contiguous:
        return a
    return _dev(a, cupy.int32)


def _strip_shift(m: int, itemsize: int, limit: int) -> int:
    """log2 of the columns per VER_SR block: as many as fit _STRIP_BYTES (max 32)."""
    lw = 5
    while lw and (m << lw) * itemsize > _STRIP_BYTES:
        lw -= 1
    if (m << lw) * itemsize > limit:
        raise ValueError(f"a column of {m} samples does not fit in shared memory")
    return lw


def _idwt_fused(comps, reversible: bool):
    """Dequantise + IDWT of 1..3 components of one geometry, batched.

    ``comps``: ``(ll, levels, deltas)`` as :func:`dequantize_idwt` takes them,
    every component with the same level rectangles.  Returns a (components,
    m, n) device array (int32 for 5/3, float32 for 9/7).
    """
    dtype = cupy.int32 if reversible else cupy.float32
    tag = "53" if reversible else "97"
    hor, limit = kernel_optin("dwt", f"idwt{tag}_hor_dq_{'i32' if reversible else 'f32'}")
    ver, _ = kernel_optin("dwt", f"idwt{tag}_cols_{'i32' if reversible else 'f32'}")
    nc = len(comps)
    prev = [_tier1(ll) for ll, _, _ in comps]
    levels0 = comps[0][1]
    out = None
    for j in range(len(levels0)):
        u0, v0, u1, v1 = levels0[j][3]
        nl, nh = _band_sizes(u0, u1)
        ml, mh = _band_sizes(v0, v1)
        m, n = v1 - v0, u1 - u0
        args = []
        for c in range(3):
            ci = min(c, nc - 1)
            ll, levels, deltas = comps[ci]
            hl, lh, hh, rect = levels[j]
            bands = (prev[ci], _tier1(hl), _tier1(lh), _tier1(hh))
            if tuple(rect) != (u0, v0, u1, v1):
                raise ValueError(f"components differ in level {j}: {tuple(rect)} and {(u0, v0, u1, v1)}")
            for tag_, band, want in zip(("ll", "hl", "lh", "hh"), bands, ((ml, nl), (ml, nh), (mh, nl), (mh, nh))):
                if band.shape != want:
                    raise ValueError(f"{tag_} band is {band.shape}, resolution {rect} needs {want} (T.800 F.3.3)")
            args += [np.uint64(b.data.ptr) for b in bands]
            if reversible:
                args += _NO_DQ
            else:
                ds = deltas[1 + 3 * j : 4 + 3 * j]
                args += [np.float32(deltas[0] / 2.0) if j == 0 else np.float32(1.0)]
                args += [np.float32(d / 2.0) for d in ds]
        out = cupy.empty((nc, m, n), dtype)
        if m and n:
            if n * 4 > limit:
                raise ValueError(f"a line of {n} samples does not fit in shared memory")
            args += [_I32(j > 0), _I32(ml), _I32(nl), _I32(nh), _I32(u0 & 1), _I32(v0 & 1), out, np.int64(m * n),
                     _ONE_FRAME, _ONE_FRAME]
            hor((m, nc), (_ROW_THREADS,), tuple(args), shared_mem=n * 4)
            lw = _strip_shift(m, 4, limit)
            ver((-(-n >> lw), nc), (_COL_THREADS,), (out, np.int64(m * n), _I32(m), _I32(n), _I32(lw), _I32(v0 & 1),
                                                    _ONE_FRAME), shared_mem=(m << lw) * 4)
        prev = [out[c] for c in range(nc)]
    return out


def _check_deltas(levels, deltas):
    if len(deltas) != 1 + 3 * len(levels):
        raise ValueError(f"need {1 + 3 * len(levels)} step sizes, got {len(deltas)}")


def dequantize_idwt(ll, levels: Sequence[Level], deltas: Sequence[float], reversible: bool):
    """``idwt(dequantize(ll), [dequantize(hl), ... per level])`` on the GPU.

    As :func:`.cpu_backend.dequantize_idwt`: ``ll`` and the bands of
    ``levels`` are int32 tier-1 output (2 x the index, T.800 E.1);
    ``deltas`` the step sizes Δb, LL first then HL, LH, HH of each level,
    coarsest first (ignored when ``reversible``).  Returns what
    :func:`idwt_53` (reversible, int32) or :func:`idwt_97` (float32) returns
    for the dequantised bands: 2 launches a level.
    """
    _check_deltas(levels, deltas)
    if not levels:
        return dequantize(ll, deltas[0], reversible)
    return _idwt_fused([(ll, levels, deltas)], reversible)[0]


def _sample_bounds(precisions, signed) -> list:
    """DC shift, low and high clip bound (int32) of each of three components (G.1.2)."""
    if len(precisions) != 3 or len(signed) != 3 or not all(1 <= p <= 24 for p in precisions):
        raise ValueError(f"need three precisions of 1..24 bits, got {precisions}")
    out = []
    for p, sg in zip(precisions, signed):
        bounds = (0, -(1 << (p - 1)), (1 << (p - 1)) - 1) if sg else (1 << (p - 1), 0, (1 << p) - 1)
        out += [_I32(v) for v in bounds]
    return out


def reconstruct_mct(comps, reversible: bool, precisions: Sequence[int], signed: Sequence[bool]):
    """Components 0-2 of a tile under the multiple component transformation.

    As :func:`.cpu_backend.reconstruct_mct`: ``comps`` are three ``(ll,
    levels, deltas)`` of :func:`dequantize_idwt`; returns three int32 sample
    arrays, ``to_samples`` of the inverse RCT (reversible) or ICT of the three
    reconstructed components.  Components of one geometry (always so in a
    DCI frame) share every launch; others are reconstructed one by one.
    Precisions 1..24.
    """
    if len(comps) != 3:
        raise ValueError(f"need three components, got {len(comps)}")
    bounds = _sample_bounds(precisions, signed)
    for ll, levels, deltas in comps:
        _check_deltas(levels, deltas)
    rects = {tuple(tuple(lv[3]) for lv in levels) for _, levels, _ in comps}
    if len(rects) == 1 and comps[0][1]:
        planes = _idwt_fused(comps, reversible)
        planes = [planes[c] for c in range(3)]
    else:
        planes = [dequantize_idwt(ll, levels, deltas, reversible) for ll, levels, deltas in comps]
    shape = planes[0].shape
    if not (shape == planes[1].shape == planes[2].shape):
        raise ValueError(f"components differ in shape: {[p.shape for p in planes]}")
    out = cupy.empty((3, *shape), cupy.int32)
    name = "rct_to_samples_i32" if reversible else "ict_to_samples_f32"
    planes = [_dev(p, cupy.int32 if reversible else cupy.float32) for p in planes]
    n = planes[0].size
    launch_1d(kernel("pointwise", name), n, (*planes, out[0], out[1], out[2], *bounds, np.int64(n), _ONE_FRAME,
                                             _ONE_FRAME))
    return out[0], out[1], out[2]


@functools.lru_cache(maxsize=None)
def _display_constants(device_id: int, primaries: str, in_bits: int):
    with cupy.cuda.Device(device_id):
        lut = cupy.asarray(display.xyz_decode_lut(in_bits))
        m = cupy.asarray(display.xyz_to_rgb_matrix(primaries).astype(np.float32).ravel())
    return lut, m


def xyz_to_rgb(x, y, z, *, primaries: str = "p3d65", out_bits: int = 16, alpha: bool = False,
               in_bits: int = 12, out=None):
    """DCI output transform on the GPU; see :func:`..display.xyz_to_rgb`.

    ``out``: optional C-contiguous uint16 device array (H, W, 3 or 4) to
    write into (e.g. a mapped RGBA16 texture buffer); returned.
    """
    if not 1 <= out_bits <= 16:
        raise ValueError(f"out_bits must be 1..16, got {out_bits}")
    inv_gamma = np.float32(1.0 / display.display_gamma(primaries))
    planes = [_dev(c, cupy.int32) for c in (x, y, z)]
    channels = 4 if alpha else 3
    shape = planes[0].shape + (channels,)
    if out is None:
        out = cupy.empty(shape, cupy.uint16)
    elif out.shape != shape or out.dtype != cupy.uint16 or not out.flags.c_contiguous:
        raise ValueError(f"out must be C-contiguous uint16 {shape}, got {out.dtype} {out.shape}")
    lut, m = _display_constants(cupy.cuda.Device().id, primaries, in_bits)
    n = planes[0].size
    args = (*planes, lut, m, _I32((1 << in_bits) - 1), inv_gamma,
            np.float32((1 << out_bits) - 1), _I32(channels), out, np.int64(n))
    launch_1d(kernel("pointwise", "xyz_to_rgb_u16"), n, args)
    return out


# the flat entry points: the compositions of this module's own functions
_FLAT = FlatEntryPoints(dequantize_idwt, reconstruct_mct, to_samples)
dequantize_idwt_flat = _FLAT.dequantize_idwt_flat
component_samples_flat = _FLAT.component_samples_flat
components_samples_flat = _FLAT.components_samples_flat


@dataclass(frozen=True)
class _Launch:
    """One kernel launch of a :class:`_MctSchedule`: ``args`` with the pointers left to fill,
    ``coeffs_at`` / ``work_at``: (argument index, byte offset) of the pointers into the
    coefficient buffer and into the call's workspace, ``out_at``: the indices of the output
    planes' pointers (component 0, 1, 2)."""

    kernel: object
    grid: tuple
    block: tuple
    shared_mem: int
    args: tuple
    coeffs_at: tuple = ()
    work_at: tuple = ()
    out_at: tuple = ()
    #: how the kernel takes frames batched: "hor" (bands' bytes and level samples a frame,
    #: grid z), "cols" (level samples, grid z), "mct" (level and output samples, grid y),
    #: "final" (level and output samples, grid z)
    frames: str = "hor"


@dataclass(frozen=True)
class _MctSchedule:
    """:func:`reconstruct_mct` of three components of one geometry worked out once per set of
    :class:`~.layout.FlatLayout` (a reel's frames share them): the launches of
    :func:`_idwt_fused` and the inverse MCT with every argument but the buffers' addresses, so
    a frame costs its launches and no band views, checks or argument building. Same kernels,
    same arguments, same results as :func:`reconstruct_mct`."""

    launches: tuple
    work_elements: int      #: 4-byte elements of the levels' outputs, one workspace a call
    shape: tuple            #: (rows, columns) of each output plane
    dtype: np.dtype         #: of the output planes

    def run(self, coeffs):
        out = self.run_frames(coeffs, 1, 0)
        return out[0, 0], out[0, 1], out[0, 2]

    def run_frames(self, coeffs, frames: int, stride: int, out=None):
        """The launches for ``frames`` frames whose coefficients lie ``stride`` int32 elements
        apart in ``coeffs`` (frame 0 at its start), each launch taking them all on a grid axis:
        a (frames, 3, rows, columns) array of samples (``out``, C-contiguous, when given)."""
        cbase = coeffs.data.ptr
        work = cupy.empty(max(self.work_elements * frames, 1), cupy.int32)
        if out is None:
            out = cupy.empty((frames, 3, *self.shape), self.dtype)
        wbase, obase, plane = work.data.ptr, out.data.ptr, self.dtype.itemsize * self.shape[0] * self.shape[1]
        fwork, fcoeffs, fout = np.int64(self.work_elements), np.int64(4 * stride), np.int64(3 * plane // self.dtype.itemsize)
        for ln in self.launches:
            args = list(ln.args)
            for i, off in ln.coeffs_at:
                args[i] = np.uint64(cbase + off)
            for i, off in ln.work_at:
                args[i] = np.uint64(wbase + off)
            for c, i in enumerate(ln.out_at):
                args[i] = np.uint64(obase + c * plane)
            if ln.frames == "hor":
                args += (fcoeffs, fwork)
            elif ln.frames == "cols":
                args.append(fwork)
            else:       # "mct" (frames on grid y), "final" (grid z)
                args += (fwork, fout)
            ln.kernel((*ln.grid, frames), ln.block, tuple(args), shared_mem=ln.shared_mem)
        return out

    @property
    def frame_work_bytes(self) -> int:
        """Workspace bytes a frame takes (its level planes)."""
        return 4 * self.work_elements


@functools.lru_cache(maxsize=32)
def _mct_schedule(layouts: tuple, reversible: bool, precisions: tuple, signed: tuple,
                  device_id: int, dtype: np.dtype = np.dtype(np.int32)) -> _MctSchedule | None:
    """The launches of ``reconstruct_mct`` for three layouts of one geometry, writing samples
    of ``dtype`` (one of ``_SAMPLE_SUFFIX``) (None: not so, or without decomposition levels;
    those take the general path)."""
    if len(layouts) != 3 or not layouts[0].levels:
        return None
    rects = [tuple(map(tuple, lay.rects.tolist())) for lay in layouts]
    if len(set(rects)) != 1:
        return None
    tag = "53" if reversible else "97"
    hor, limit = kernel_optin("dwt", f"idwt{tag}_hor_dq_{'i32' if reversible else 'f32'}")
    ver, _ = kernel_optin("dwt", f"idwt{tag}_cols_{'i32' if reversible else 'f32'}")
    launches, work, prev = [], 0, None      # prev: workspace byte offset of the last level's output
    for j, (u0, v0, u1, v1) in enumerate(rects[0]):
        nl, nh = _band_sizes(u0, u1)
        ml, mh = _band_sizes(v0, v1)
        m, n = v1 - v0, u1 - u0
        args, coeffs_at, work_at = [], [], []
        for c, lay in enumerate(layouts):
            b = lay.bands.tolist()
            bands = [None if j else b[0]] + b[1 + 3 * j : 4 + 3 * j]
            for k, (band, want) in enumerate(zip(bands, ((ml, nl), (ml, nh), (mh, nl), (mh, nh)))):
                if band is None:        # the LL of a level above the first: the level below's output
                    work_at.append((len(args), prev + 4 * c * ml * nl))
                else:
                    if (band[1], band[2]) != want:
                        return None
                    coeffs_at.append((len(args), 4 * band[0]))
                args.append(None)
            if reversible:
                args += _NO_DQ
            else:
                ds = lay.deltas[1 + 3 * j : 4 + 3 * j]
                args += [np.float32(lay.deltas[0] / 2.0) if j == 0 else np.float32(1.0)]
                args += [np.float32(d / 2.0) for d in ds]
        if m and n:
            if n * 4 > limit:
                return None
            work_at.append((len(args) + 6, work))
            args += [_I32(j > 0), _I32(ml), _I32(nl), _I32(nh), _I32(u0 & 1), _I32(v0 & 1), None, np.int64(m * n)]
            launches.append(_Launch(hor, (m, 3), (_ROW_THREADS,), n * 4, tuple(args), tuple(coeffs_at),
                                    tuple(work_at)))
            if j == len(rects[0]) - 1 and m >= 2:
                # the finest level's VER_SR with the inverse MCT and G.1.2: samples straight out
                name = ("idwt53_cols_rct_i32" if reversible else "idwt97_cols_ict_f32") + _SAMPLE_SUFFIX[dtype]
                args = (None, np.int64(m * n), _I32(m), _I32(n), _I32(v0 & 1), None, None, None,
                        *_sample_bounds(list(precisions), list(signed)))
                launches.append(_Launch(kernel("final_level", name), (-(-n // _FINAL_COLUMNS), -(-m // _FINAL_LINES)),
                                        (_FINAL_COLUMNS, _FINAL_ROWS), 0, args, work_at=((0, work),),
                                        out_at=(5, 6, 7), frames="final"))
                return _MctSchedule(tuple(launches), (work + 4 * 3 * m * n) // 4, (m, n), dtype)
            lw = _strip_shift(m, 4, limit)
            launches.append(_Launch(ver, (-(-n >> lw), 3), (_COL_THREADS,), (m << lw) * 4,
                                    (None, np.int64(m * n), _I32(m), _I32(n), _I32(lw), _I32(v0 & 1)),
                                    work_at=((0, work),), frames="cols"))
        prev, work = work, work + 4 * 3 * m * n
    m, n = rects[0][-1][3] - rects[0][-1][1], rects[0][-1][2] - rects[0][-1][0]
    if m * n:
        name = ("rct_to_samples_i32" if reversible else "ict_to_samples_f32") + _SAMPLE_SUFFIX[dtype]
        threads = 256
        args = (None, None, None, None, None, None, *_sample_bounds(list(precisions), list(signed)), np.int64(m * n))
        launches.append(_Launch(kernel("pointwise", name), (min(-(-m * n // threads), 65535),), (threads,), 0, args,
                                work_at=tuple((c, prev + 4 * c * m * n) for c in range(3)), out_at=(3, 4, 5),
                                frames="mct"))
    return _MctSchedule(tuple(launches), work // 4, (m, n), dtype)


def reconstruct_mct_frames(coeffs, frames: int, stride: int, layouts, reversible: bool, precisions: Sequence[int],
                           signed: Sequence[bool], dtype=None):
    """:func:`reconstruct_mct_flat` of ``frames`` frames of one geometry whose coefficients lie
    ``stride`` elements apart in ``coeffs`` (a batch's tier-1 output), each launch of the
    :class:`_MctSchedule` taking every frame of a group at once (frames on a grid axis): a
    (frames, 3, rows, columns) array of samples in ``dtype`` (None: int32), frame by frame what
    :func:`reconstruct_mct_flat` gives. Groups hold :func:`frames_work_bytes` of workspace.
    None where the layouts take the general path (no schedule: no decomposition level,
    components of different geometries) or ``dtype`` is not a sample type of the kernels."""
    kind = _sample_type(dtype)
    if kind is None or not (isinstance(coeffs, cupy.ndarray) and coeffs.dtype == _I32 and coeffs.flags.c_contiguous):
        return None
    sched = _mct_schedule(tuple(layouts), bool(reversible), tuple(int(p) for p in precisions),
                          tuple(bool(sg) for sg in signed), cupy.cuda.Device().id, kind)
    if sched is None:
        return None
    group = max(1, frames_work_bytes(cupy.cuda.Device().id) // max(sched.frame_work_bytes, 1))
    if frames <= group:
        return sched.run_frames(coeffs, frames, stride)
    out = cupy.empty((frames, 3, *sched.shape), sched.dtype)
    for f in range(0, frames, group):
        k = min(group, frames - f)
        sched.run_frames(coeffs[f * stride :], k, stride, out[f : f + k])
    return out


def reconstruct_mct_flat(coeffs, layouts, reversible: bool, precisions: Sequence[int], signed: Sequence[bool],
                         dtype=None):
    """``reconstruct_mct`` of the three components ``layouts`` place in ``coeffs``, as ``dtype``
    (None: int32): for three components of one geometry (every DCI frame) by a
    :class:`_MctSchedule` worked out once per layouts, whose last kernel writes the samples in
    ``dtype`` (no conversion after it), else as the composition of the general functions."""
    kind = _sample_type(dtype)
    if kind is not None and isinstance(coeffs, cupy.ndarray) and coeffs.dtype == _I32 and coeffs.flags.c_contiguous:
        sched = _mct_schedule(tuple(layouts), bool(reversible), tuple(int(p) for p in precisions),
                              tuple(bool(sg) for sg in signed), cupy.cuda.Device().id, kind)
        if sched is not None:
            return sched.run(coeffs)
    return _FLAT.reconstruct_mct_flat(coeffs, layouts, reversible, precisions, signed, dtype)
