"""Tier-1 encoding of a tile's code-blocks on the GPU (CUDA through CuPy), the twin of
:func:`cinegpu.encode.tier1.tile.encode_tile` (T.800 Annex C MQ encoder, Annex D passes).

    encode_tile_cuda(flat, cb, style, rows=None) -> (coded, coded_off, rates, rate_off, dists,
                                                     num_bps)
    launch_tile(flat_dev, cb, style, stream=None) -> PendingTier1; .result() -> the same tuple

Same bytes, rates, distortions and K as encode_tile, and its ValueError for a magnitude >= 2^30.
The launches (``cuda/tier1_encode.cu``, queued by gpu_plan.queue_tile, which the host emulation
in the tests runs too): t1enc_num_bps (K per block); on the device the pass offsets (cumsum of
3K - 2) and byte capacities (gpu_plan.layout), the work order from the host;
t1enc_code_blocks (one thread per code-block, persistent threads, each block's bytes into its
own region); cumsum of the lengths; t1enc_compact (the used bytes gathered contiguously), then
an event.  Nothing waits on the host until ``result()``: buffers are sized by host-known bounds
(MAX_PASSES passes per block, gpu_plan.capacity_bound bytes), and result() copies back only the
used prefix.  Blocks whose bytes outgrew their region are coded by numba there.

Importing this module needs CuPy; gpu_plan holds the host-only helpers.
"""

from __future__ import annotations

import functools

import cupy
import numpy as np

from cinegpu.decode import nvrtc
from cinegpu.decode.tier1.gpu import lookup_tables

from .gpu_plan import (
    BLOCK_THREADS,
    CUDA_SOURCE,
    KERNELS,
    TileGeometry,
    check_table,
    collect,
    queue_tile,
    slots,
    tile_geometry,
    warp_eligible,
)

__all__ = ["encode_tile_cuda", "launch_tile", "PendingTier1", "TileGeometries"]

SCRATCH_BYTES = 256 << 20  # per-slot scratch of one launch at most (then slots take turns)


@functools.lru_cache(maxsize=None)
def _kernels(device_id: int):
    with cupy.cuda.Device(device_id):
        return tuple(nvrtc.kernel(CUDA_SOURCE, name) for name in KERNELS)


@functools.lru_cache(maxsize=None)
def _device_tables(device_id: int):
    with cupy.cuda.Device(device_id):
        return tuple(cupy.asarray(t) for t in lookup_tables())


@functools.lru_cache(maxsize=None)
def _multiprocessors(device_id: int) -> int:
    return cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]


def _resident_warps(device_id: int, kernel) -> int:
    """Warps of t1enc_code_blocks the device runs at once (registers bound it: ~80 a thread
    under ptxas for sm_90), so persistent slots beyond that would only hold scratch."""
    regs = max(int(getattr(kernel, "num_regs", 0) or 0), 32)
    blocks = max(1, min(2048, 65536 // regs) // BLOCK_THREADS)
    return _multiprocessors(device_id) * blocks * (BLOCK_THREADS // 32)


class PendingTier1:
    """A launched tile: ``result()`` waits for its event and returns encode_tile's tuple."""

    def __init__(self, flat, cb, style, stream, outputs, keep, event, floor=0):
        self._flat, self._cb, self._style, self._stream = flat, cb, style, stream
        self._floor = floor
        self._outputs, self._event = outputs, event
        self._keep = keep  # every device buffer the kernels use lives until result()

    def done(self) -> bool:
        """True when the GPU has finished (result() will not wait)."""
        return self._event.done

    def result(self):
        """encode_tile's 6-tuple (numpy); raises its ValueError for a magnitude >= 2^30."""
        self._event.synchronize()
        self._keep = None
        info: dict = {}
        with self._stream:
            out = collect(self._outputs, cupy.asnumpy, self._host_flat, self._cb, self._style,
                          self._floor, info)
        if info["overflow"] == 0:
            _, _, rates, rate_off, dists, _, _ = self._outputs
            npass = int(out[3][-1])
            self.figures = (rate_off, rates[:npass], dists[:npass])
        return out

    #: after result(): (rate_off, rates, dists) of the tuple still on the device (CuPy), for
    #: rate control on the GPU; None when blocks were coded by the numba fallback
    figures = None

    def _host_flat(self):
        f = self._flat
        return f.get() if isinstance(f, cupy.ndarray) else f


def launch_tile(flat_dev, cb, style: int, stream=None, *, lanes: int = 1,
                interleave: bool = False, scratch_bytes: int = SCRATCH_BYTES,
                max_slots: int | None = None, max_capacity: int | None = None,
                floor: int = 0, geometry: TileGeometry | None = None,
                warp: bool | None = None, warp_blocks: int | None = None) -> PendingTier1:
    """Queue tier-1 of every code-block of ``cb`` (the plan's int64 numpy table) over the flat
    int32 coefficients ``flat_dev`` (CuPy; numpy is uploaded) on ``stream`` (default: the
    current one), each block down to bit-plane ``floor`` (encode_tile's early stop).
    Returns a PendingTier1 at once; the host is not synchronised.

    Tuning, not results: lanes, working threads per warp (1..32); interleave, slots' scratch
    interleaved ([entry * slots + slot]: a warp's lanes coalesce) or in runs (the defaults,
    one lane a warp with scratch in runs, coded a 2K DCI tile in under half the time of 32
    interleaved lanes on the GPU machine: docs/performance.md); scratch_bytes,
    budget of the per-slot scratch (6 bytes per bordered sample + 1 KB of MQ snapshots);
    max_slots, threads at most.  max_capacity (tests): caps each block's byte region, forcing
    the numba fallback of blocks that outgrow it.  geometry: the table's
    :class:`TileGeometries` entry (its table already checked against this buffer's size).
    warp: code with the sample-parallel kernel (one warp per block, t1enc_code_blocks_warp)
    where :func:`~.gpu_plan.warp_eligible` (None, the default) or never (False); True insists
    (ValueError where not eligible).  Same results either way; lanes, interleave, scratch_bytes
    and max_slots tune only the one-thread-per-block kernel; warp_blocks only the warp kernel:
    its CUDA blocks (four warps each, taking code-blocks grid-stride), default as many as the
    device holds at once (0: one warp per code-block).
    """
    if not 1 <= lanes <= 32:
        raise ValueError(f"launch_tile: lanes {lanes} not in 1..32")
    stream = stream if stream is not None else cupy.cuda.get_current_stream()
    with stream:
        if not isinstance(flat_dev, cupy.ndarray):
            flat_dev = np.asarray(flat_dev)
        if flat_dev.dtype != np.int32 or flat_dev.ndim != 1:
            raise TypeError(f"launch_tile: flat must be 1-D int32, not {flat_dev.ndim}-D "
                            f"{flat_dev.dtype}")
        cb = geometry.cb if geometry is not None else check_table(cb, flat_dev.size)
        flat = cupy.ascontiguousarray(cupy.asarray(flat_dev))
        device_id = cupy.cuda.runtime.getDevice()
        kernels = _kernels(device_id)
        eligible = warp_eligible(cb, style)
        if warp and not eligible:
            raise ValueError("launch_tile: the warp kernel codes blocks of at most 32 x 32 "
                             "samples without BYPASS or VCAUSAL")
        warp_grid = 0
        if eligible and warp is not False:
            need = -(-cb.shape[0] // (BLOCK_THREADS // 32))
            if warp_blocks is None:
                warp_blocks = _resident_warps(device_id, kernels[3]) // (BLOCK_THREADS // 32)
            warp_grid = max(1, min(need, 65535, warp_blocks or need))
            nslots = 0
        else:
            nslots = slots(cb, lanes, _resident_warps(device_id, kernels[1]), scratch_bytes,
                           max_slots)
        outputs, keep = queue_tile(cupy, kernels, _device_tables(device_id), flat, cb,
                                   int(style), nslots, lanes, interleave, max_capacity,
                                   int(floor), geometry, warp_grid)
        # a blocking-sync event: result() sleeps instead of spinning a core, which the
        # other threads' rate control and tier-2 need (16 encoders on 16 cores)
        event = cupy.cuda.Event(block=True, disable_timing=True)
        event.record(stream)
    return PendingTier1(flat_dev, cb, int(style), stream, outputs, keep, event, int(floor))


class TileGeometries:
    """One encoder's :class:`~.gpu_plan.TileGeometry` per tile plan and device, so that
    the frames of a sequence upload their code-block tables and work orders once.  Holds
    the plans it was made for (an entry is found by the plan object itself); at most
    ``size`` entries."""

    def __init__(self, size: int = 64):
        self._size = size
        self._items: dict = {}

    def get(self, plan) -> TileGeometry:
        """The geometry of ``plan.cb`` (checked against ``plan.coeff_size``) on the current
        device."""
        key = (id(plan), cupy.cuda.runtime.getDevice())
        hit = self._items.get(key)
        if hit is None or hit[0] is not plan:
            if len(self._items) >= self._size:
                self._items.clear()
            cb = check_table(np.ascontiguousarray(plan.cb, np.int64), plan.coeff_size)
            hit = self._items[key] = (plan, tile_geometry(cupy, cb))
        return hit[1]


def encode_tile_cuda(flat, cb, style: int, rows=None, **kw):
    """encode_tile on the GPU: the code-blocks ``cb[rows]`` (default all) of the flat int32
    coefficients ``flat`` (CuPy, or numpy: uploaded); returns encode_tile's 6-tuple of numpy
    arrays, identical.  Keywords: launch_tile's tuning."""
    cb = np.ascontiguousarray(cb, np.int64)
    if rows is not None:
        cb = cb[np.ascontiguousarray(rows, np.int64)]
    return launch_tile(flat, cb, style, **kw).result()
