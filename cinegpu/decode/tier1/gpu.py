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
kinds may share a table; an HT block needs no scratch beyond an EBCOT block's.  One working
thread per warp beats full warps of different blocks, whose branches diverge; sorting blocks by
size and passes (work_order, on the device) makes the heaviest start first, which pays back on
4K frames (both measured on DCI frames on the GPU machine: docs/performance.md).  Importing this
module does not need CuPy; calling does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .codeblock import (
    CB_COLUMNS,
    CB_DATA,
    CB_HEIGHT,
    CB_OUT,
    CB_SEG_COUNT,
    CB_SEG_FIRST,
    CB_STYLE,
    CB_WIDTH,
    MAX_CBLK_AREA,
    MAX_CBLK_SIDE,
    STATUS_BAD_ROW,
)
from .ht import CBLK_HT
from .ht_tables import VLC_LUT_0, VLC_LUT_1
from .tables import CTX_INIT, MQ_NLPS, MQ_NMPS, MQ_QE, NUM_CONTEXTS, SC_LUT, ZC_LUT

try:
    import cupy
except ImportError:  # the host emulation and the table helpers work without it
    cupy = None

__all__ = ["decode_codeblocks_cuda", "lookup_tables", "ht_lookup_table", "work_order", "scratch_entries", "KERNELS",
           "BLOCK_THREADS", "RowBatch", "upload_batch", "LANES_BY_CODEBLOCKS", "lanes_for",
           "shared_pitch"]

CUDA_SOURCE = Path(__file__).with_name("cuda") / "tier1.cu"
#: the batch's rebase in one launch (:meth:`RowBatch.rebase_on_device`)
BATCH_SOURCE = Path(__file__).with_name("cuda") / "batch.cu"
KERNELS = ("tier1_zero_rows", "tier1_decode_thread_per_codeblock",
           "tier1_decode_thread_per_codeblock_shared_flags")
BLOCK_THREADS = 128  # T1_BLOCK in tier1.cu
SCRATCH_BYTES = 256 << 20  # per-thread scratch of one call at most (then threads take turns)
STATIC_SHARED = 8192  # bytes of static shared memory of the kernels (lookup tables), rounded up
MASK_SIDE, MASK_ROWS_EXTRA = 64, 5  # mask_passes.cuh
#: working lanes per warp by the code-blocks of a launch: (at least this many code-blocks,
#: lanes), the first that holds: the fastest counts on the GPU machine for batches of 16 and
#: 32 DCI frames (100,000 code-blocks and more), a 4K DCI frame alone (26,280) and a 2K one
#: (6,708); timings by lane count in docs/performance.md.
LANES_BY_CODEBLOCKS = ((100_000, 8), (16_384, 4), (0, 2))


def lanes_for(codeblocks: int) -> int:
    """Working lanes per warp for a launch of ``codeblocks`` code-blocks
    (:data:`LANES_BY_CODEBLOCKS`)."""
    return next(lanes for least, lanes in LANES_BY_CODEBLOCKS if codeblocks >= least)


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
    from .. import nvrtc  # noqa: PLC0415  (optional: CuPy, which nvrtc imports)

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


def scratch_entries(table, xp=np, masks=True):
    """uint16 entries of scratch one slot needs (1 when no row can pass validation): for a row
    the flag passes take, (w + 2) * (h + 2) sample flags (and as many int32 vals); for a row
    the bit-mask passes take (``masks``; Part-1, w and h at most MASK_SIDE: mask_passes.cuh),
    16 * (h + MASK_ROWS_EXTRA), its four states of h + 5 64-bit words.  A CuPy table costs one
    device-to-host copy."""
    w, h = table[:, CB_WIDTH], table[:, CB_HEIGHT]
    ok = (w >= 0) & (h >= 0) & (w <= MAX_CBLK_SIDE) & (h <= MAX_CBLK_SIDE)
    ok &= xp.where(ok, w * h, 0) <= MAX_CBLK_AREA
    need = (w + 2) * (h + 2)
    if masks:
        fits = (table[:, CB_STYLE] & CBLK_HT == 0) & (w <= MASK_SIDE) & (h <= MASK_SIDE)
        need = xp.where(fits, 16 * (h + MASK_ROWS_EXTRA), need)
    need = xp.where(ok, need, 1)
    return int(need.max()) if need.size else 1


def shared_pitch(entries: int) -> int:
    """uint16 entries of one thread's run of shared memory in the shared-flags kernel for
    ``entries`` (scratch_entries): an odd number of 64-bit words, so that the lanes of a warp
    start in distinct banks and the masks are aligned."""
    words = -(-max(entries, 1) // 4)
    return 4 * (words + 1 - words % 2)


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

    Tuning, not results: flags_in, "shared" (sample flags, or the bit masks of Part-1 blocks up
    to 64 x 64 (mask_passes.cuh), in shared memory) or "global" (flag passes only, all scratch
    in global memory; entries is then worked out here); lanes, working threads per warp (1..32); warps, per CUDA block
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
    shared = flags_in == "shared"
    if not shared:  # the global-flags kernel has no mask passes: flags for every row
        entries = scratch_entries(table, cupy, masks=False)
    entries = int(entries) if entries is not None else scratch_entries(table, cupy)
    device_id = cupy.cuda.runtime.getDevice()
    mq, zc, sc, ctx_init, vlc = _device_tables(device_id)
    zero_rows, decode_global, decode_shared = _kernels(device_id)
    flags_pitch = shared_pitch(entries)
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
    # a warp a row: the windows of rejected rows and of rows of no pass zeroed, lines at once
    zero_rows((-(-nblk // (BLOCK_THREADS // 32)),), (BLOCK_THREADS,), (
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


@dataclass(frozen=True)
class RowBatch:
    """Several tier-1 inputs (tiles of one or more frames) laid end to end for one launch.

    Part k's rows are rows ``rows[k]:rows[k + 1]`` of the batch's table, its segments
    ``segs[k]:segs[k + 1]``, its bytes ``data[k]:data[k + 1]``; ``out[k]`` is where its
    coefficient buffer starts in the batch's one output buffer. :meth:`rebase` turns the parts'
    own offsets (CB_DATA, CB_SEG_FIRST, CB_OUT, the work order) into the batch's, so one kernel
    launch decodes every part exactly as a launch per part would.
    """

    rows: tuple[int, ...]
    segs: tuple[int, ...]
    data: tuple[int, ...]
    out: tuple[int, ...]
    entries: int

    @classmethod
    def of(cls, parts, out_bases) -> RowBatch:
        """``parts``: objects with ``coded``, ``table``, ``seg_lengths``, ``seg_passes`` and
        ``entries`` (None: worked out from the table); ``out_bases``: each part's output start."""
        rows, segs, data = [0], [0], [0]
        entries = 1
        for p in parts:
            rows.append(rows[-1] + p.table.shape[0])
            segs.append(segs[-1] + p.seg_lengths.shape[0])
            data.append(data[-1] + p.coded.shape[0])
            entries = max(entries, p.entries if p.entries is not None else scratch_entries(p.table, _xp_of(p.table)))
        return cls(tuple(rows), tuple(segs), tuple(data), tuple(int(b) for b in out_bases), entries)

    def rebase(self, table, order) -> None:
        """In place, numpy or CuPy: part k's table rows and work order shifted to the batch's.
        A part all of whose offsets are 0 (the first tile of a batch's first frame: the whole
        of a one-tile frame decoded alone) is left as it is: on the GPU its four additions
        were four launches, about 0.2 ms of the host's time a frame."""
        for k, base in enumerate(self.out):
            r0, r1 = self.rows[k], self.rows[k + 1]
            if r0 == r1 or r0 == self.data[k] == self.segs[k] == base == 0:
                continue
            block = table[r0:r1]
            block[:, CB_DATA] += self.data[k]
            block[:, CB_SEG_FIRST] += self.segs[k]
            block[:, CB_OUT] += base
            order[r0:r1] += r0

    def rebase_on_device(self, table, order) -> None:
        """:meth:`rebase` of the batch's CuPy arrays (current device and stream) in one kernel
        launch for every part (``cuda/batch.cu``; :meth:`rebase` is its twin): each part's four
        additions were four launches, about 0.1 ms of the host's time a frame of a batch."""
        if all(self.rows[k] == self.rows[k + 1] or self.rows[k] == self.data[k] == self.segs[k] == self.out[k] == 0
               for k in range(len(self.out))):
            return      # nothing moves (a one-tile frame alone)
        from .. import nvrtc  # noqa: PLC0415  (optional: CuPy, which nvrtc imports)

        n = len(self.out)
        parts = np.array([*self.rows, *self.data[:-1], *self.segs[:-1], *self.out], np.int64)
        dev = cupy.empty(parts.size, cupy.int64)
        # from pageable memory: staged before the call returns, so the temporary may go
        cupy.cuda.runtime.memcpyAsync(dev.data.ptr, parts.ctypes.data, parts.nbytes,
                                      cupy.cuda.runtime.memcpyHostToDevice, cupy.cuda.get_current_stream().ptr)
        nvrtc.launch_1d(nvrtc.kernel(BATCH_SOURCE, "tier1_rebase_parts"), self.rows[-1],
                        (table, order, dev, np.int32(n), np.int64(self.rows[-1])))

    def concatenate(self, parts, xp=np):
        """(coded, table, seg_lengths, seg_passes, order) of the whole batch, rebased, built with
        ``xp`` from host arrays (the host's way; :func:`upload_batch` is the GPU's)."""
        def cat(name, dtype):
            return xp.concatenate([xp.asarray(getattr(p, name), dtype=dtype) for p in parts])

        table = xp.concatenate([xp.asarray(p.table, dtype=xp.int64).reshape(-1, CB_COLUMNS) for p in parts])
        order = xp.concatenate([xp.asarray(_order_of(p), dtype=xp.int32) for p in parts])
        arrays = (cat("coded", xp.uint8), table, cat("seg_lengths", xp.int32), cat("seg_passes", xp.int32), order)
        self.rebase(arrays[1], arrays[4])
        return arrays


def _xp_of(a):
    return cupy if cupy is not None and isinstance(a, cupy.ndarray) else np


def _order_of(part):
    """The part's work order: given (the pipeline's workers work it out), else worked out here."""
    if part.order is not None:
        return part.order
    return work_order(part.table, part.seg_passes, _xp_of(part.table))


def upload_batch(parts, out_bases):
    """The batch's arrays on the GPU (current device and stream), each part's host arrays
    copied in place by asynchronous copies (DMA straight from page-locked memory, such as the
    pipeline's slots), then rebased there: (RowBatch, (coded, table, seg_lengths, seg_passes,
    order)). Host arrays must stay unchanged until the stream has run the copies."""
    if cupy is None:
        raise RuntimeError("upload_batch needs CuPy")
    batch = RowBatch.of(parts, out_bases)
    stream = cupy.cuda.get_current_stream().ptr
    dev = (cupy.empty(batch.data[-1], cupy.uint8), cupy.empty((batch.rows[-1], CB_COLUMNS), cupy.int64),
           cupy.empty(batch.segs[-1], cupy.int32), cupy.empty(batch.segs[-1], cupy.int32),
           cupy.empty(batch.rows[-1], cupy.int32))
    starts = (batch.data, batch.rows, batch.segs, batch.segs, batch.rows)
    for k, p in enumerate(parts):
        host = (p.coded, p.table, p.seg_lengths, p.seg_passes, _order_of(p))
        for d, h, st, dtype in zip(dev, host, starts, (np.uint8, np.int64, np.int32, np.int32, np.int32)):
            if isinstance(h, cupy.ndarray):     # already on the device: a copy on the stream
                d[st[k] : st[k + 1]] = h.reshape(d[st[k] : st[k + 1]].shape)
                continue
            h = np.ascontiguousarray(h, dtype=dtype)    # a temporary (pageable) is copied before return
            if h.nbytes:
                row = d.strides[0]
                cupy.cuda.runtime.memcpyAsync(d.data.ptr + st[k] * row, h.ctypes.data, h.nbytes,
                                              cupy.cuda.runtime.memcpyHostToDevice, stream)
    batch.rebase_on_device(dev[1], dev[4])
    return batch, dev
