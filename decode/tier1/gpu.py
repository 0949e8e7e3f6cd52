"""Tier-1 code-block decoding on the GPU (CUDA through CuPy), the twin of the numba batch driver.

    decode_codeblocks_cuda(coded, table, seg_lengths, seg_passes, out) -> status

Same plain-array interface, outputs and status bits as :func:`cinegpu.decode.tier1.decode_codeblocks`
(see codeblock.py for the table columns CB_* and STATUS_* bits), bit for bit, corrupt rows
included: every row is validated on the device exactly as codeblock.py does, so a bad table
never reads or writes out of bounds.  One departure: where rows' output windows overlap (only a
corrupt table does that) numba's later row wins; here the windows of rejected rows are zeroed
first, then the blocks decoded in parallel (overlapping decoded windows: either may win).

The kernel (``cuda/tier1.cu``, T.800 Annex C and D) runs one thread per code-block.  Blocks are
sorted by size and pass count (largest first) so that the lanes of a warp share a geometry
and their scratch loads coalesce.  Importing this module does not need CuPy; calling does.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .codeblock import (CB_COLUMNS, CB_HEIGHT, CB_SEG_COUNT, CB_SEG_FIRST, CB_WIDTH,
                        MAX_CBLK_SIDE, SCRATCH_SIZE, STATUS_BAD_ROW)
from .tables import CTX_INIT, MQ_NLPS, MQ_NMPS, MQ_QE, SC_LUT, ZC_LUT

try:
    import cupy
except ImportError:  # the host emulation and the table helpers work without it
    cupy = None

__all__ = ["decode_codeblocks_cuda", "lookup_tables", "work_order", "KERNELS", "BLOCK_THREADS"]

CUDA_SOURCE = Path(__file__).with_name("cuda") / "tier1.cu"
NVRTC_OPTIONS = ("--std=c++14",)
KERNELS = ("tier1_zero_rejected_rows", "tier1_decode_thread_per_codeblock")
BLOCK_THREADS = 128  # T1_BLOCK in tier1.cu
MAX_SLOTS = 8192  # threads with scratch: 8192 x 6156 x 6 bytes = 303 MB at most


def lookup_tables():
    """The kernel's tables as numpy arrays, from tables.py: (mq, zc, sc, ctx_init).

    mq: uint32 by sv, Qe | NMPS(sv) << 16 | NLPS(sv) << 24 (Table C.2); zc: uint8 4 x 256
    (Table D.1 by orientation); sc: uint8 (Table D.3); ctx_init: uint8 (Table D.7).
    """
    mq = (MQ_QE.astype(np.uint32) | (MQ_NMPS.astype(np.uint32) << 16)
          | (MQ_NLPS.astype(np.uint32) << 24))
    return (mq, ZC_LUT.astype(np.uint8).ravel(), SC_LUT.astype(np.uint8),
            CTX_INIT.astype(np.uint8))


def work_order(table, seg_passes, xp=np):
    """int32 permutation of the rows: largest area first, then most passes.

    Only the speed depends on it (lanes of a warp then share a geometry and finish together);
    out-of-range fields are clipped here and rejected by the kernel.
    """
    n = seg_passes.shape[0]
    side = xp.clip(table[:, CB_WIDTH], 0, MAX_CBLK_SIDE) * xp.clip(table[:, CB_HEIGHT], 0,
                                                                   MAX_CBLK_SIDE)
    cum = xp.zeros(n + 1, xp.int64)
    cum[1:] = xp.cumsum(xp.clip(seg_passes, 0, 1000).astype(xp.int64))
    first = xp.clip(table[:, CB_SEG_FIRST], 0, n)
    last = xp.minimum(first + xp.clip(table[:, CB_SEG_COUNT], 0, n), n)
    passes = xp.minimum(cum[last] - cum[first], 4095)
    return xp.argsort(-(side * 4096 + passes)).astype(xp.int32)


@functools.lru_cache(maxsize=None)
def _kernels(device_id: int):
    """KERNELS of cuda/tier1.cu, compiled once per device (CuPy also caches the binary)."""
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=CUDA_SOURCE.read_text(), options=NVRTC_OPTIONS)
        try:
            module.compile()
        except cupy.cuda.compiler.CompileException as exc:
            raise RuntimeError(f"NVRTC compiling {CUDA_SOURCE}: {exc}") from exc
        return tuple(module.get_function(name) for name in KERNELS)


@functools.lru_cache(maxsize=None)
def _device_tables(device_id: int):
    with cupy.cuda.Device(device_id):
        return tuple(cupy.asarray(t) for t in lookup_tables())


def _device_array(a, dtype, ndim, name):
    a = cupy.ascontiguousarray(cupy.asarray(a, dtype=dtype))
    if a.ndim != ndim:
        raise ValueError(f"decode_codeblocks_cuda: {name} must be {ndim}-D, not {a.ndim}-D")
    return a


def decode_codeblocks_cuda(coded, table, seg_lengths, seg_passes, out, *, lanes=32, sort=True,
                           max_slots=MAX_SLOTS):
    """Decode every code-block of ``table`` into the flat CuPy int32 ``out``, on the GPU.

    coded: uint8 (segments each followed by 0xFF 0xFF); table: int64, CB_COLUMNS columns;
    seg_lengths, seg_passes: int32.  Numpy inputs are copied to the device.  Returns the CuPy
    int32 status per row (STATUS_* bits); the launch is asynchronous on the current stream.
    lanes: working threads per warp (1..32); sort: order rows by work_order; max_slots:
    threads with their own scratch (6156 x 6 bytes each), rows beyond are taken in turn.
    """
    if cupy is None:
        raise RuntimeError("decode_codeblocks_cuda needs CuPy")
    if not (isinstance(out, cupy.ndarray) and out.dtype == cupy.int32 and out.ndim == 1
            and out.flags.c_contiguous):
        raise TypeError("decode_codeblocks_cuda: out must be a contiguous 1-D CuPy int32 array")
    if not 1 <= lanes <= 32:
        raise ValueError(f"decode_codeblocks_cuda: lanes must be 1..32, not {lanes}")
    table = _device_array(table, cupy.int64, 2, "table")
    nblk = table.shape[0]
    status = cupy.zeros(nblk, cupy.int32)
    if nblk == 0:
        return status
    if table.shape[1] < CB_COLUMNS:
        status[:] = STATUS_BAD_ROW
        return status
    coded = _device_array(coded, cupy.uint8, 1, "coded")
    seg_lengths = _device_array(seg_lengths, cupy.int32, 1, "seg_lengths")
    seg_passes = _device_array(seg_passes, cupy.int32, 1, "seg_passes")
    order = (work_order(table, seg_passes, cupy) if sort
             else cupy.arange(nblk, dtype=cupy.int32))
    nslots = min(nblk, max(int(max_slots), 1))
    flags = cupy.empty(SCRATCH_SIZE * nslots, cupy.uint16)
    vals = cupy.empty(SCRATCH_SIZE * nslots, cupy.int32)
    device_id = cupy.cuda.runtime.getDevice()
    mq, zc, sc, ctx_init = _device_tables(device_id)
    threads = -(-nslots // lanes) * 32
    grid = -(-threads // BLOCK_THREADS)
    i64, i32 = np.int64, np.int32
    zero_rejected, decode = _kernels(device_id)
    zero_rejected((-(-nblk // BLOCK_THREADS),), (BLOCK_THREADS,), (
        coded, i64(coded.size), table, i32(table.shape[1]), i32(nblk), seg_lengths,
        i64(seg_lengths.size), seg_passes, i64(seg_passes.size), out, i64(out.size)))
    decode((grid,), (BLOCK_THREADS,), (
        coded, i64(coded.size), table, i32(table.shape[1]), i32(nblk), order, seg_lengths,
        i64(seg_lengths.size), seg_passes, i64(seg_passes.size), out, i64(out.size), status,
        flags, vals, i32(nslots), i32(lanes), mq, zc, sc, ctx_init))
    return status
