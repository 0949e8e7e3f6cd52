"""HT cleanup-pass block encoding on the GPU (CUDA through CuPy): the twin of the numba
:func:`cinegpu.encode.tier1.ht.ht_encode_rows` (ITU-T T.814 clause 7: 7.3.2 MagSgn, 7.3.3
MEL, 7.3.4-7.3.6 CxtVLC and U-VLC, 7.1 the segment and Scup).

    ht_encode_rows_cuda(flat, cb, rows, drops, stream=None, *, kernel="auto")
        -> (coded, coded_off, rates, rate_off, dists, num_bps)

The kernel ``ht_enc_blocks_warp`` of ``cuda/ht_encode.cu`` (``ht_encode_warp.cuh``: one warp
per code-block of at most 64 x 64 samples, the quads of whole rows coded by its lanes at once)
and, for larger blocks, ``ht_enc_blocks`` (one thread per code-block, grid-stride) write each
block's cleanup segment into its own region of one device buffer (area * 5 + 64 bytes) and
its length (``kernel``: "auto", "warp" or "thread", :func:`.ht_gpu_plan.split_rows`); the
host reads the lengths back and works out the blocks' offsets
(:func:`.ht_gpu_plan.segment_offsets`); the kernel ``ht_gather`` copies the segments together
in block order on the GPU, and only they come back.  Same bytes, offsets, rates, K and dtypes
as ht_encode_rows, including its early return when a block's segment is too long
(Scup > 4079).  :func:`coding_ms` times the coding kernels alone (``bench_ht``).

    ht_plane_figures_cuda(flat, cb, rows, dmax, stream=None, *, keep=False, blocks=None)
        -> (dist, bits)

The byte budget's per-plane figures, :func:`cinegpu.encode.tier1.ht.ht_plane_figures` on the
GPU: the kernel ``ht_plane_figures_warp`` of ``cuda/ht_figures.cu`` (one warp per code-block,
exact integer sums, so the same float64 figures bit for bit) writes them on the device and
only they come back, not the coefficients.

Importing this module needs CuPy; :mod:`.ht_gpu_plan` holds the host-only steps, which the
tests run against the kernels' host builds (``cuda/ht_encode_host.cpp``,
``cuda/ht_encode_warp_host.cpp``, ``cuda/ht_figures_host.cpp``).
"""

from __future__ import annotations

import functools

import cupy
import numpy as np

from cinegpu.decode import nvrtc

from .ht_gpu_plan import (
    CUDA_SOURCE,
    FIGURES_KERNEL,
    FIGURES_SOURCE,
    GATHER,
    KERNEL,
    WARP_KERNEL,
    assemble,
    capacity_offsets,
    figures_args,
    figures_limits,
    kernel_tables,
    rows_tuple,
    scratch_pitch,
    segment_offsets,
    split_rows,
    warp_limits,
)

__all__ = ["BlockSet", "coding_ms", "ht_encode_rows_cuda", "ht_plane_figures_cuda"]

THREADS = 64  # threads per CUDA block
GATHER_THREADS = 128  # threads per CUDA block of ht_gather (one CUDA block per code-block)
SCRATCH_BYTES = 256 << 20  # the threads' scratch of one launch at most (then grid-stride)


@functools.lru_cache(maxsize=None)
def _kernel(device_id: int, name: str = KERNEL, source=CUDA_SOURCE):
    with cupy.cuda.Device(device_id):
        return nvrtc.kernel(source, name)


@functools.lru_cache(maxsize=None)
def _device_tables(device_id: int):
    with cupy.cuda.Device(device_id):
        return tuple(cupy.asarray(t) for t in kernel_tables())


def _grid(nblk: int, pitch: int, scratch_bytes: int) -> int:
    """CUDA blocks of THREADS threads: one thread per code-block, as many as the scratch
    budget (bytes) holds."""
    threads = max(1, min(nblk, scratch_bytes // pitch))
    return min(-(-threads // THREADS), 65535)


class BlockSet:
    """The tables of :func:`ht_encode_rows_cuda` that depend only on the blocks cb[rows] and
    the kernel choice, made once (a sequence's frames share their geometry): the capacity
    offsets, the warp / one-thread split, and their device copies (on the current device)."""

    def __init__(self, cb, rows, kernel: str = "auto"):
        self.cb = np.ascontiguousarray(cb, np.int64)
        self.rows = np.ascontiguousarray(rows, np.int64)
        if self.cb.ndim != 2 or self.rows.ndim != 1:
            raise ValueError("ht_encode_rows_cuda: cb must be 2-D, rows 1-D")
        self.kernel = kernel
        self.cap_off = capacity_offsets(self.cb, self.rows)
        self.warp_sel, self.thread_sel = split_rows(self.cb, self.rows, kernel)
        self.d_cb, self.d_rows = cupy.asarray(self.cb), cupy.asarray(self.rows)
        self.d_cap_off = cupy.asarray(self.cap_off)
        #: per subset (warp, thread) when the kernels share the blocks: (d_sel, d_rows,
        #: d_cap_off) of the subset
        self.subsets = [None if sel.size in (0, self.rows.shape[0]) else
                        (cupy.asarray(sel), self.d_rows[cupy.asarray(sel)],
                         self.d_cap_off[cupy.asarray(sel)])
                        for sel in (self.warp_sel, self.thread_sel)]
        self._figures: dict = {}         # dmax -> the figures' shape, once checked

    def figures_shape(self, dmax: int) -> tuple[int, int]:
        """The (rows, dmax + 1) shape of these blocks' plane figures, checked once per dmax
        as :func:`.ht_gpu_plan.figures_args` checks them (ValueError)."""
        shape = self._figures.get(dmax)
        if shape is None:
            shape = self._figures[dmax] = figures_args(self.cb, self.rows, dmax)[2]
        return shape

    def matches(self, cb, rows, kernel) -> bool:
        """Whether this set was made for the same blocks and kernel (by identity of cb and
        equality of rows: a plan's table is built once)."""
        return (cb is self.cb or np.array_equal(cb, self.cb)) and kernel == self.kernel \
            and np.array_equal(rows, self.rows)


def ht_encode_rows_cuda(flat, cb, rows, drops, stream=None, *,
                        scratch_bytes: int = SCRATCH_BYTES, kernel: str = "auto",
                        blocks: BlockSet | None = None, d_drops=None):
    """ht_encode_rows on the GPU: the blocks cb[rows] (the plan's int64 table, numpy) of the
    flat int32 coefficients ``flat`` (CuPy, or numpy: uploaded), block j at bit-plane
    drops[j], on ``stream`` (default: the current one).  Returns ht_encode_rows' 6-tuple of
    numpy arrays, identical; waits for the GPU.  scratch_bytes (tuning, tests): budget of the
    per-thread scratch of the launch, fewer threads taking more blocks each.  kernel
    (benchmarks, tests): "auto" the warp kernel for blocks of at most 64 x 64 samples and the
    one-thread kernel for the rest, "warp" the same but ValueError for a larger block,
    "thread" the one-thread kernel for all.  ``blocks``: the :class:`BlockSet` of cb, rows
    and kernel made earlier (on this device), so that its tables are not made again.
    ``d_drops``: the same planes already on this device (CuPy int64, one per row), which the
    kernels then read instead of an upload of ``drops``."""
    drops = np.ascontiguousarray(drops, np.int64)
    stream = stream if stream is not None else cupy.cuda.get_current_stream()
    with stream:
        if blocks is None:
            blocks = BlockSet(cb, rows, kernel)
        elif not blocks.matches(cb, rows, kernel):
            raise ValueError("ht_encode_rows_cuda: blocks was made for other blocks")
        nblk = blocks.rows.shape[0]
        if drops.shape != blocks.rows.shape:
            raise ValueError("ht_encode_rows_cuda: drops must hold one plane per row")
        cap_off = blocks.cap_off
        if nblk == 0:
            return assemble(np.zeros(0, np.uint8), cap_off, np.zeros(0, np.int64), drops)
        d_flat = cupy.ascontiguousarray(cupy.asarray(flat))
        if d_flat.dtype != np.int32 or d_flat.ndim != 1:
            raise TypeError(f"ht_encode_rows_cuda: flat must be 1-D int32, not "
                            f"{d_flat.ndim}-D {d_flat.dtype}")
        device_id = cupy.cuda.runtime.getDevice()
        if d_drops is not None and (d_drops.shape != drops.shape or d_drops.dtype != np.int64):
            raise ValueError("ht_encode_rows_cuda: d_drops must be drops' int64 device copy")
        d_out, d_lens = _code_blocks(device_id, d_flat, blocks, drops, scratch_bytes, d_drops)
        lens = d_lens.get()  # blocking: waits for the kernel on this stream
        stop, coded_off, rates, rate_off, num_bps = segment_offsets(lens, drops)
        if stop < nblk:      # a block too long: the early return, from the whole region
            return assemble(d_out.get(), cap_off, lens, drops)
        d_coded = cupy.empty(int(coded_off[nblk]), cupy.uint8)
        if d_coded.size:
            _kernel(device_id, GATHER)((min(nblk, 65535),), (GATHER_THREADS,),
                                       (d_out, blocks.d_cap_off, cupy.asarray(coded_off),
                                        np.int32(nblk), d_coded))
        coded = d_coded.get()
    return rows_tuple(coded, cap_off, stop, coded_off, rates, rate_off, num_bps)


def _code_blocks(device_id, d_flat, blocks: BlockSet, drops, scratch_bytes, d_drops=None):
    """Launch the coding kernels (the warp kernel on the blocks' warp subset, the one-thread
    kernel on the rest) on the current stream: (d_out, d_lens), not waited for.
    ``d_drops``: drops already on the device (None: uploaded)."""
    nblk = blocks.rows.shape[0]
    d_out = cupy.empty(int(blocks.cap_off[-1]), cupy.uint8)
    d_lens = cupy.empty(nblk, cupy.int64)
    if d_drops is None:
        d_drops = cupy.asarray(drops)
    tables = _device_tables(device_id)
    for sel, sub, launch in zip((blocks.warp_sel, blocks.thread_sel), blocks.subsets,
                                (_launch_warp, _launch_thread)):
        if sel.size == nblk:                 # every block: no subsets
            launch(device_id, d_flat, blocks.d_cb, nblk, blocks.d_rows, d_drops,
                   blocks.d_cap_off, d_out, d_lens, tables, scratch_bytes)
        elif sel.size:
            d_sel, d_rows, d_cap_off = sub
            d_sub = cupy.empty(sel.size, cupy.int64)
            launch(device_id, d_flat, blocks.d_cb, sel.size, d_rows, d_drops[d_sel],
                   d_cap_off, d_out, d_sub, tables, scratch_bytes)
            d_lens[d_sel] = d_sub
    return d_out, d_lens


def coding_ms(flat, cb, rows, drops, *, kernel: str = "auto", repeat: int = 10,
              scratch_bytes: int = SCRATCH_BYTES) -> float:
    """Milliseconds of the coding kernels alone (CUDA events on the current stream, the mean
    of ``repeat`` runs after one warm run) for ht_encode_rows_cuda's blocks and ``kernel``:
    what the benchmark compares between the warp and the one-thread kernel."""
    drops = np.ascontiguousarray(drops, np.int64)
    blocks = BlockSet(cb, rows, kernel)
    d_flat = cupy.ascontiguousarray(cupy.asarray(flat))
    device_id = cupy.cuda.runtime.getDevice()
    _code_blocks(device_id, d_flat, blocks, drops, scratch_bytes)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(repeat):
        _code_blocks(device_id, d_flat, blocks, drops, scratch_bytes)
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / repeat


def _launch_warp(device_id, d_flat, d_cb, nblk, d_rows, d_drops, d_cap_off, d_out, d_lens,
                 tables, scratch_bytes):
    """ht_enc_blocks_warp over nblk rows: one warp a block, HTW_WARPS warps a CUDA block."""
    warps = warp_limits()[0]
    grid = min(-(-nblk // warps), 65535)
    _kernel(device_id, WARP_KERNEL)((grid,), (32 * warps,),
                                    (d_flat, d_cb, np.int32(d_cb.shape[1]), np.int32(nblk),
                                     d_rows, d_drops, d_cap_off, d_out, d_lens, *tables))


def _launch_thread(device_id, d_flat, d_cb, nblk, d_rows, d_drops, d_cap_off, d_out, d_lens,
                   tables, scratch_bytes):
    """ht_enc_blocks over nblk rows: one thread a block, as many as scratch_bytes holds."""
    pitch = scratch_pitch()
    grid = _grid(nblk, pitch, scratch_bytes)
    d_scratch = cupy.empty(grid * THREADS * pitch, cupy.uint8)
    _kernel(device_id)((grid,), (THREADS,),
                       (d_flat, d_cb, np.int32(d_cb.shape[1]), np.int32(nblk), d_rows,
                        d_drops, d_cap_off, d_out, d_lens, d_scratch, np.int64(pitch),
                        *tables))


def ht_plane_figures_cuda(flat, cb, rows, dmax, stream=None, *, keep: bool = False,
                          blocks: BlockSet | None = None):
    """ht_plane_figures on the GPU: per block cb[rows] (the plan's int64 table, numpy) of the
    flat int32 coefficients ``flat`` (CuPy, or numpy: uploaded) and per dropped plane count
    d = 0..dmax, the squared error at the midpoint reconstruction (index units squared) and
    the estimated bits, on ``stream`` (default: the current one).  Returns (dist, bits),
    numpy float64 (len(rows), dmax + 1), identical to the numba function's; waits for the
    GPU.  ``keep``: return the CuPy arrays instead, left on the device (not waited for).
    ValueError for dmax outside 0..FIGURES_DMAX, as there.  ``blocks``: the
    :class:`BlockSet` of cb and rows made earlier (on this device), whose checked tables and
    device copies are used instead of making them again."""
    if blocks is not None:
        if not blocks.matches(cb, rows, blocks.kernel):
            raise ValueError("ht_plane_figures_cuda: blocks was made for other blocks")
        shape = blocks.figures_shape(dmax)
        cb, rows, d_cb, d_rows = blocks.cb, blocks.rows, blocks.d_cb, blocks.d_rows
    else:
        cb, rows, shape = figures_args(cb, rows, dmax)
        d_cb = d_rows = None
    if shape[0] == 0:
        xp = cupy if keep else np
        return xp.zeros(shape), xp.zeros(shape)
    stream = stream if stream is not None else cupy.cuda.get_current_stream()
    with stream:
        d_flat = cupy.ascontiguousarray(cupy.asarray(flat))
        if d_flat.dtype != np.int32 or d_flat.ndim != 1:
            raise TypeError(f"ht_plane_figures_cuda: flat must be 1-D int32, not "
                            f"{d_flat.ndim}-D {d_flat.dtype}")
        d_dist = cupy.empty(shape, cupy.float64)
        d_bits = cupy.empty(shape, cupy.float64)
        warps = figures_limits()[1]
        grid = min(-(-shape[0] // warps), 65535)
        kernel = _kernel(cupy.cuda.runtime.getDevice(), FIGURES_KERNEL, FIGURES_SOURCE)
        kernel((grid,), (32 * warps,),
               (d_flat, cupy.asarray(cb) if d_cb is None else d_cb, np.int32(cb.shape[1]),
                np.int32(shape[0]), cupy.asarray(rows) if d_rows is None else d_rows,
                np.int32(dmax), d_dist, d_bits))
        if keep:
            return d_dist, d_bits
        return d_dist.get(), d_bits.get()
