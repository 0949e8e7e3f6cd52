"""Tier-1 code-block decoding on the GPU (CUDA through CuPy), the twin of the numba batch driver.

    decode_codeblocks_cuda(coded, table, seg_lengths, seg_passes, out) -> status

Same plain-array interface, outputs and status bits as :func:`cinegpu.decode.tier1.decode_codeblocks`
(see codeblock.py for the table columns CB_* and STATUS_* bits), bit for bit, corrupt rows
included: every row is validated on the device exactly as codeblock.py does, so a bad table
never reads or writes out of bounds.  One departure: where rows' output windows overlap (only a
corrupt table does that) numba's later row wins; here the windows of rejected rows are zeroed
first, then the blocks decoded in parallel (overlapping decoded windows: either may win).

The kernels (``cuda/tier1.cu``, T.800 Annex C and D; HT code-blocks, T.814 clause 7, in
``cuda/ht_decode.cuh``) run one thread per code-block, the sample flags in shared memory
(default) or in global memory, persistent threads taking blocks from a counter.  Rows of both
kinds may share a table; an HT block needs no scratch beyond an EBCOT block's.  Measured on an
H100 (DCI frames): one working thread per warp beats full warps of
different blocks (their branches diverge); sorting blocks by size and passes (work_order, on
the device) makes the heaviest start first, 0.4 ms that pays back on 4K frames.  Importing this module does not need CuPy; calling does.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from .codeblock import (CB_COLUMNS, CB_HEIGHT, CB_SEG_COUNT, CB_SEG_FIRST, CB_WIDTH,
                        MAX_CBLK_AREA, MAX_CBLK_SIDE, STATUS_BAD_ROW)
from .ht_tables import VLC_LUT_0, VLC_LUT_1
from .tables import CTX_INIT, MQ_NLPS, MQ_NMPS, MQ_QE, NUM_CONTEXTS, SC_LUT, ZC_LUT

try:
    import cupy
except ImportError:  # the host emulation and the table helpers work without it
    cupy = None

__all__ = ["decode_codeblocks_cuda", "lookup_tables", "ht_lookup_table", "work_order", "scratch_entries", "KERNELS", "BLOCK_THREADS"]

CUDA_SOURCE = Path(__file__).with_name("cuda") / "tier1.cu"
KERNELS = ("tier1_zero_rejected_rows", "tier1_decode_thread_per_codeblock",
           "tier1_decode_thread_per_codeblock_shared_flags")
BLOCK_THREADS = 128  # T1_BLOCK in tier1.cu
SCRATCH_BYTES = 256 << 20  # per-thread scratch of one call at most (then threads take turns)
STATIC_SHARED = 6144  # bytes of static shared memory of the kernels (lookup tables), rounded up


def lookup_tables():
    """The kernel's tables as numpy arrays, from tables.py: (mq, zc, sc, ctx_init).

    mq: uint32 by sv, Qe | NMPS(sv) << 16 | NLPS(sv) << 24 (Table C.2); zc: uint8 4 x 256
    (Table D.1 by orientation); sc: uint8 (Table D.3); ctx_init: uint8 (Table D.7).
    """
    mq = (MQ_QE.astype(np.uint32) | (MQ_NMPS.astype(np.uint32) << 16)
          | (MQ_NLPS.astype(np.uint32) << 24))
    return (mq, ZC_LUT.astype(np.uint8).ravel(), SC_LUT.astype(np.uint8),
            CTX_INIT.astype(np.uint8))


def ht_lookup_table():
    """The HT kernel's CxtVLC decoding tables (T.814 Annex C) as one uint16 array of 2 x 1024
    entries: VLC_LUT_0 (first line-pair), then VLC_LUT_1, packed as ht_tables.py says."""
    return np.concatenate([VLC_LUT_0, VLC_LUT_1]).astype(np.uint16)


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


def _kernels(device_id: int):
    """KERNELS of cuda/tier1.cu on ``device_id`` (compiled once, by :mod:`cinegpu.decode.nvrtc`)."""
    from .. import nvrtc  # noqa: PLC0415 (needs CuPy; the host emulation here does not)

    with cupy.cuda.Device(device_id):
        return tuple(nvrtc.kernel(CUDA_SOURCE, name) for name in KERNELS)


@functools.lru_cache(maxsize=None)
def _device_tables(device_id: int):
    with cupy.cuda.Device(device_id):
        return tuple(cupy.asarray(t) for t in (*lookup_tables(), ht_lookup_table()))


def _device_array(a, dtype, ndim, name):
    a = cupy.ascontiguousarray(cupy.asarray(a, dtype=dtype))
    if a.ndim != ndim:
        raise ValueError(f"decode_codeblocks_cuda: {name} must be {ndim}-D, not {a.ndim}-D")
    return a


def scratch_entries(table, xp=np):
    """Scratch entries one slot needs: the largest (w + 2) * (h + 2) of a row that can pass
    validation (1 when none can).  A CuPy table costs one device-to-host copy."""
    w, h = table[:, CB_WIDTH], table[:, CB_HEIGHT]
    ok = (w >= 0) & (h >= 0) & (w <= MAX_CBLK_SIDE) & (h <= MAX_CBLK_SIDE)
    ok &= xp.where(ok, w * h, 0) <= MAX_CBLK_AREA
    need = xp.where(ok, (w + 2) * (h + 2), 1)
    return int(need.max()) if need.size else 1


def decode_codeblocks_cuda(coded, table, seg_lengths, seg_passes, out, *, entries=None, order=None,
                           flags_in="shared", lanes=1, warps=4, sort=True, interleave=None,
                           scratch_bytes=SCRATCH_BYTES, max_slots=None):
    """Decode every code-block of ``table`` into the flat CuPy int32 ``out``, on the GPU.

    coded: uint8 (segments each followed by 0xFF 0xFF); table: int64, CB_COLUMNS columns;
    seg_lengths, seg_passes: int32.  Numpy inputs are copied to the device.  Returns the CuPy
    int32 status per row (STATUS_* bits); the launches are asynchronous on the current stream.
    entries: scratch_entries(table), computed from a numpy table, else read back from the
    device (a synchronisation): pass it (a decode plan knows it) to avoid that.
    order: the rows' int32 work order (:func:`work_order` of the same table and seg_passes),
    else worked out here on the device when ``sort`` (some ten small launches).

    Tuning, not results: flags_in, "shared" (sample flags in shared memory) or "global" (all
    scratch in global memory); lanes, working threads per warp (1..32); warps, per CUDA block
    (shared; both lowered to what the shared memory holds); sort, rows in work_order; interleave, scratch interleaved across threads (default:
    when lanes > 1); scratch_bytes, budget of the global scratch (4 bytes per sample with border,
    6 for global flags); max_slots, threads at most.  Threads are persistent and take the rows
    in turn.
    """
    if cupy is None:
        raise RuntimeError("decode_codeblocks_cuda needs CuPy")
    if not (isinstance(out, cupy.ndarray) and out.dtype == cupy.int32 and out.ndim == 1
            and out.flags.c_contiguous):
        raise TypeError("decode_codeblocks_cuda: out must be a contiguous 1-D CuPy int32 array")
    if flags_in not in ("shared", "global"):
        raise ValueError(f"decode_codeblocks_cuda: flags_in must be shared or global, not {flags_in!r}")
    if not (1 <= lanes <= 32 and 1 <= warps <= 32):
        raise ValueError(f"decode_codeblocks_cuda: lanes {lanes} not in 1..32 or warps {warps} not in 1..32")
    if entries is None and isinstance(table, np.ndarray) and table.ndim == 2 \
            and table.shape[1] >= CB_COLUMNS:
        entries = scratch_entries(table.astype(np.int64, copy=False))
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
    if order is not None:
        order = _device_array(order, cupy.int32, 1, "order")
        if order.shape[0] != nblk:
            raise ValueError(f"decode_codeblocks_cuda: order has {order.shape[0]} rows, the table {nblk}")
    elif sort:
        order = work_order(table, seg_passes, cupy)
    else:
        order = cupy.arange(nblk, dtype=cupy.int32)
    entries = int(entries) if entries is not None else scratch_entries(table, cupy)
    device_id = cupy.cuda.runtime.getDevice()
    mq, zc, sc, ctx_init, vlc = _device_tables(device_id)
    zero_rejected, decode_global, decode_shared = _kernels(device_id)
    shared = flags_in == "shared"
    # flags runs of an odd number of 32-bit words: lanes of a warp in distinct banks
    flags_pitch = entries + (-entries) % 4 + 2
    if shared:  # as many lanes and warps as the shared memory of one CUDA block holds
        per_slot = 2 * flags_pitch + NUM_CONTEXTS
        local = max(1, (_shared_optin(device_id) - STATIC_SHARED) // per_slot)
        lanes = min(lanes, local)
        warps = max(1, min(warps, local // lanes))
        threads_per_block = 32 * warps
        resident = _multiprocessors(device_id) * (2048 // threads_per_block) * warps * lanes
    else:
        threads_per_block = BLOCK_THREADS
        resident = nblk
    nslots = max(1, min(nblk, resident, scratch_bytes // (entries * (4 if shared else 6)),
                        max_slots or nblk, (2**31 - 1) // entries))
    interleave = lanes > 1 if interleave is None else interleave
    flags = cupy.empty(0 if shared else entries * nslots, cupy.uint16)
    vals = cupy.empty(entries * nslots, cupy.int32)
    next_row = cupy.zeros(1, cupy.int32)
    i64, i32 = np.int64, np.int32
    zero_rejected((-(-nblk // BLOCK_THREADS),), (BLOCK_THREADS,), (
        coded, i64(coded.size), table, i32(table.shape[1]), i32(nblk), seg_lengths,
        i64(seg_lengths.size), seg_passes, i64(seg_passes.size), out, i64(out.size)))
    pitch = 0 if interleave else entries
    if shared:
        smem = warps * lanes * per_slot
        if smem > decode_shared.max_dynamic_shared_size_bytes:
            decode_shared.max_dynamic_shared_size_bytes = smem
        kernel, grid, vals_pitch = decode_shared, -(-nslots // (warps * lanes)), pitch
    else:
        flags_pitch, vals_pitch, smem = pitch, 0, 0
        kernel, grid = decode_global, -(-(-(-nslots // lanes) * 32) // BLOCK_THREADS)
    kernel((grid,), (threads_per_block,), (
        coded, i64(coded.size), table, i32(table.shape[1]), i32(nblk), order, seg_lengths,
        i64(seg_lengths.size), seg_passes, i64(seg_passes.size), out, i64(out.size), status,
        flags, vals, i32(nslots), i32(flags_pitch), i32(vals_pitch), i32(lanes), next_row, mq,
        zc, sc, ctx_init, vlc), shared_mem=smem)
    return status


@functools.lru_cache(maxsize=None)
def _multiprocessors(device_id: int) -> int:
    return cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]


@functools.lru_cache(maxsize=None)
def _shared_optin(device_id: int) -> int:
    """Bytes of shared memory one CUDA block may have (opting in above 48 KB)."""
    return cupy.cuda.Device(device_id).attributes["MaxSharedMemoryPerBlockOptin"]
