"""Host side of the GPU tier-1 encoder (``encode/cuda/tier1_encode.cu``), without CuPy.

The steps between the kernels, written once for numpy and CuPy (``xp``) so the host
emulation in the tests runs exactly what :mod:`cinegpu.encode.tier1.gpu` runs on the device:
the table check, scratch and capacity sizes, the per-block offsets (rates, dists: 3K - 2
passes; bytes: a capacity per block) and work order, and the finishing step that turns the
kernels' outputs into :func:`cinegpu.encode.tier1.tile.encode_tile`'s 6-tuple, coding blocks
whose region overflowed with numba instead.

Byte capacity of a block (w x h samples, K bit-planes, 3K - 2 passes):
``64 + 16 (3K - 2) + ceil(w h (K + 1) / 4)`` bytes, i.e. 2 bits per sample and coded
bit-plane, plus 16 bytes per pass for terminations.  It is a practical capacity, not a
worst case: a decision costs at most 15 renormalisation shifts (an LPS at Qe = 0x0001,
T.800 Table C.2), so adversarial data could need ~37 bits per sample and plane (2.5 decisions:
ZC and sign, or a run-length column's share), some 20 times what coding takes in practice.
Measured (all passes kept, every style): uniformly random magnitudes of 1..30 bits fill at most
50.3 % of their blocks' capacity, the coefficients of a synthetic 2K DCI frame 41.6 %.  A block
that outgrows its region is flagged (STATUS_OVERFLOW) and coded by numba, so results stay
exact either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cinegpu.decode.tier1.codeblock import (
    CB_COLUMNS,
    CB_HEIGHT,
    CB_OUT,
    CB_STRIDE,
    CB_WIDTH,
    MAX_CBLK_AREA,
    MAX_CBLK_SIDE,
)

from .codeblock import MAX_ENCODE_BPS
from .tile import encode_tile

__all__ = ["CUDA_SOURCE", "KERNELS", "BLOCK_THREADS", "MAX_PASSES", "STATUS_OVERFLOW",
           "STATUS_K_TOO_LARGE", "WARP_SIDE", "warp_eligible", "check_table", "block_areas", "scratch_entries", "block_capacity",
           "capacity_bound", "work_order", "layout", "slots", "queue_tile", "collect", "finish"]

CUDA_SOURCE = Path(__file__).parents[1] / "cuda" / "tier1_encode.cu"
KERNELS = ("t1enc_num_bps", "t1enc_code_blocks", "t1enc_compact", "t1enc_code_blocks_warp")
BLOCK_THREADS = 128  # T1E_BLOCK in tier1_encode.cu
MAX_PASSES = 3 * MAX_ENCODE_BPS - 2  # passes of a block at most (K <= 30)
SNAP_WORDS = 3 * MAX_PASSES  # int32 MQ snapshot words per slot
STATUS_OVERFLOW = 0x01  # the block's bytes outgrew its region: coded by numba instead
STATUS_K_TOO_LARGE = 0x02  # a magnitude >= 2^30: not coded (encode_tile raises)
WARP_SIDE = 32  # t1enc_code_blocks_warp: blocks of at most 32 x 32 samples (a lane a column)
_WARP_STYLES_OFF = 0x01 | 0x08  # BYPASS, VCAUSAL (T.800 Table A.19): t1enc_code_blocks only


def warp_eligible(cb: np.ndarray, style: int) -> bool:
    """Whether the sample-parallel kernel (t1enc_code_blocks_warp, one warp per block) can code
    this table: every block at most WARP_SIDE x WARP_SIDE and a style without BYPASS or
    VCAUSAL.  Its results are t1enc_code_blocks's; only the speed differs."""
    if int(style) & _WARP_STYLES_OFF:
        return False
    if cb.shape[0] == 0:
        return True
    return bool((cb[:, CB_WIDTH] <= WARP_SIDE).all() and (cb[:, CB_HEIGHT] <= WARP_SIDE).all())


def check_table(cb, flat_size: int) -> np.ndarray:
    """The plan's code-block table as contiguous int64, checked against a flat buffer of
    ``flat_size`` samples: every non-empty block (w, h <= 1024, w h <= 4096, T.800 A.6.1)
    lies inside it.  The kernels trust the table; this is what makes that safe."""
    cb = np.ascontiguousarray(cb, np.int64)
    if cb.ndim != 2 or cb.shape[1] < CB_COLUMNS:
        raise ValueError(f"code-block table must have {CB_COLUMNS} columns, has shape {cb.shape}")
    w, h = cb[:, CB_WIDTH], cb[:, CB_HEIGHT]
    off, stride = cb[:, CB_OUT], cb[:, CB_STRIDE]
    used = (w > 0) & (h > 0)
    ok = (w <= MAX_CBLK_SIDE) & (h <= MAX_CBLK_SIDE) & (off >= 0) & (stride >= 0)
    wc, hc = np.clip(w, 0, MAX_CBLK_SIDE), np.clip(h, 1, MAX_CBLK_SIDE)  # no int64 overflow
    ok &= wc * hc <= MAX_CBLK_AREA
    last = np.minimum(off, 1 << 61) + (hc - 1) * np.minimum(stride, 1 << 40) + wc
    ok &= last <= flat_size
    bad = np.flatnonzero(used & ~ok)
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"code-block row {j} ({int(w[j])}x{int(h[j])} at {int(off[j])}, stride "
                         f"{int(stride[j])}) is not inside the {flat_size}-sample buffer")
    return cb


def block_areas(cb: np.ndarray) -> np.ndarray:
    """w h of each row (0 for empty rows), int64."""
    w, h = cb[:, CB_WIDTH], cb[:, CB_HEIGHT]
    return np.where((w > 0) & (h > 0), w * h, 0).astype(np.int64)


def scratch_entries(cb: np.ndarray) -> int:
    """Entries of one slot's bordered scratch: the largest (w + 2) (h + 2), at least 1."""
    w, h = cb[:, CB_WIDTH], cb[:, CB_HEIGHT]
    used = (w > 0) & (h > 0)
    return int(np.where(used, (w + 2) * (h + 2), 1).max()) if cb.shape[0] else 1


def block_capacity(area, num_bps, xp=np):
    """Bytes of region per block (see the module docstring); 0 when K = 0 (no passes)."""
    k = xp.asarray(num_bps).astype(xp.int64)
    passes = xp.where(k > 0, 3 * k - 2, 0)
    return xp.where(k > 0, 64 + 16 * passes + (area * (k + 1) + 3) // 4, 0)


def capacity_bound(cb: np.ndarray) -> int:
    """Bytes of all regions whatever the blocks' K (K <= 30): the region buffer's size, known
    before K is."""
    return int(block_capacity(block_areas(cb), np.full(cb.shape[0], MAX_ENCODE_BPS)).sum())


def work_order(area: np.ndarray) -> np.ndarray:
    """int32 order in which threads take the blocks: largest area first, table order among
    equals (a plan lists a band's blocks together, and they have similar K: lanes of a warp
    then share loop counts).  Only the speed depends on it.  Worked out on the host from the
    areas: sorting by K would need a device sort, and CuPy's (Thrust) may wait for the GPU."""
    return np.argsort(-area, kind="stable").astype(np.int32)


def layout(num_bps, area, xp=np, max_capacity=None, floor=0):
    """Offsets from the blocks' K (int32, as t1enc_num_bps wrote them) and areas:
    (rate_off, cap_off), int64, on ``xp``'s side, without a host copy (cumsums only).

    rate_off: cumulative coded passes down to bit-plane ``floor``, 3 (K - floor) - 2
    (:func:`.codeblock.coded_passes`; 0 for K <= floor and for K > 30, which are not coded);
    cap_off: cumulative block_capacity, each capped at ``max_capacity`` bytes (a test
    argument: forces the overflow fallback)."""
    k = num_bps.astype(xp.int64)
    ok = k <= MAX_ENCODE_BPS
    passes = xp.where(ok & (k > floor), 3 * (k - floor) - 2, 0)
    nb = k.shape[0]
    rate_off = xp.zeros(nb + 1, xp.int64)
    rate_off[1:] = xp.cumsum(passes)
    cap = xp.where(ok, block_capacity(area, k, xp), 0)
    if max_capacity is not None:
        cap = xp.minimum(cap, int(max_capacity))
    cap_off = xp.zeros(nb + 1, xp.int64)
    cap_off[1:] = xp.cumsum(cap)
    return rate_off, cap_off


def finish(get_flat, cb, style, coded, coded_off, rates, rate_off, dists, num_bps, status,
           floor=0):
    """encode_tile's 6-tuple from the kernels' outputs (numpy; rates int32 and dists of
    rate_off[-1] entries, coded of coded_off[-1] bytes, overflowed blocks' lengths 0).

    Raises encode_tile's ValueError when a block has K > 30.  Blocks with STATUS_OVERFLOW are
    coded by numba (``encode_tile(get_flat(), cb, style, rows, floor)``; get_flat returns the flat
    buffer on the host, called only then) and spliced in."""
    num_bps = num_bps.astype(np.int64)
    if (status & STATUS_K_TOO_LARGE).any():
        raise ValueError(f"coefficient magnitude >= 2^{MAX_ENCODE_BPS}")
    rates = rates.astype(np.int64)
    coded_off = np.asarray(coded_off, np.int64)
    over = np.flatnonzero(status & STATUS_OVERFLOW)
    if over.size == 0:
        return coded, coded_off, rates, np.asarray(rate_off, np.int64), dists, num_bps
    fb = encode_tile(get_flat(), cb, style, over, floor)
    f_coded, f_off, f_rates, f_roff, f_dists, f_bps = fb
    if not np.array_equal(f_bps, num_bps[over]):
        raise RuntimeError("GPU tier-1: K of the numba fallback differs from the kernel's")
    pieces, at = [], 0
    lengths = np.diff(coded_off)
    for i, j in enumerate(over):
        pieces.append(coded[coded_off[at]:coded_off[j]])
        pieces.append(f_coded[f_off[i]:f_off[i + 1]])
        lengths[j] = f_off[i + 1] - f_off[i]
        at = j + 1
        p0, p1 = rate_off[j], rate_off[j + 1]
        rates[p0:p1] = f_rates[f_roff[i]:f_roff[i + 1]]
        dists[p0:p1] = f_dists[f_roff[i]:f_roff[i + 1]]
    pieces.append(coded[coded_off[at]:coded_off[-1]])
    new_off = np.zeros_like(coded_off)
    np.cumsum(lengths, out=new_off[1:])
    return (np.concatenate(pieces).astype(np.uint8, copy=False), new_off, rates,
            np.asarray(rate_off, np.int64), dists, num_bps)


def slots(cb: np.ndarray, lanes: int, resident_warps: int, scratch_bytes: int,
          max_slots: int | None) -> int:
    """Persistent threads (slots) of t1enc_code_blocks: at most one per block, per working
    lane the device holds at once, per ``scratch_bytes`` of scratch (6 bytes per bordered
    sample and the MQ snapshots), and few enough that entry * slots stays below 2^31."""
    nb = cb.shape[0]
    entries = scratch_entries(cb)
    per_slot = 6 * entries + 4 * SNAP_WORDS
    return max(1, min(nb, resident_warps * lanes, scratch_bytes // per_slot, max_slots or nb,
                      (2**31 - 1) // max(entries, SNAP_WORDS)))


@dataclass(frozen=True)
class TileGeometry:
    """What the launches of one tile need from its code-block table alone, made once per
    table and device (a sequence's frames share their plans): the table and the blocks'
    areas on ``xp``'s side, the work order, the region's size and a slot's scratch entries."""

    cb: np.ndarray            #: the checked table (host)
    cb_dev: object
    area_dev: object
    order_dev: object
    region_bytes: int
    entries: int


def tile_geometry(xp, cb: np.ndarray) -> TileGeometry:
    """:class:`TileGeometry` of the checked table ``cb`` with ``xp`` arrays."""
    area = block_areas(cb)
    return TileGeometry(cb, xp.asarray(cb), xp.asarray(area), xp.asarray(work_order(area)),
                        max(capacity_bound(cb), 1), scratch_entries(cb))


def queue_tile(xp, kernels, tables, flat, cb, style, nslots, lanes=32, interleave=True,
               max_capacity=None, floor=0, geometry: TileGeometry | None = None,
               warp_grid: int = 0):
    """Queue the three kernels (``kernels``: callables ``k(grid, block, args)`` as CuPy's
    RawKernel) over ``flat`` (an ``xp`` int32 array) and the checked table ``cb`` (numpy),
    with arrays made by ``xp`` (CuPy; numpy for the host emulation).  Nothing is read back.

    Returns (outputs, keep): outputs (out, coded_off, rates, rate_off, dists, num_bps,
    status) for :func:`collect`; keep, the other buffers the kernels use (hold them until
    the kernels have run).  ``geometry``: :func:`tile_geometry` of ``cb`` (made here if
    None).  ``warp_grid`` > 0: code with t1enc_code_blocks_warp on that many CUDA blocks
    (the caller checked :func:`warp_eligible`; nslots, lanes and interleave are then unused)."""
    g = geometry if geometry is not None else tile_geometry(xp, cb)
    nb = cb.shape[0]
    k_bps, k_code, k_compact, k_warp = kernels
    mq, zc, sc, ctx_init = tables
    i32 = np.int32
    cb_dev, order = g.cb_dev, g.order_dev
    num_bps = xp.zeros(nb, xp.int32)
    grid = max(1, min(nb, 65535))
    if nb:
        k_bps((grid,), (BLOCK_THREADS,), (flat, cb_dev, i32(cb.shape[1]), i32(nb), num_bps))
    rate_off, cap_off = layout(num_bps, g.area_dev, xp, max_capacity, floor)
    region = xp.empty(g.region_bytes, xp.uint8)
    rates = xp.empty(max(nb * MAX_PASSES, 1), xp.int32)
    dists = xp.empty(max(nb * MAX_PASSES, 1), xp.float64)
    lens = xp.zeros(nb, xp.int64)
    status = xp.zeros(nb, xp.int32)
    entries = g.entries
    if warp_grid > 0:
        nslots = 0
    flags = xp.empty(entries * nslots, xp.uint16)
    sm = xp.empty(entries * nslots, xp.uint32)
    snap = xp.empty(SNAP_WORDS * nslots, xp.int32)
    next_row = xp.zeros(1, xp.int32)
    if nb and warp_grid > 0:
        k_warp((int(warp_grid),), (BLOCK_THREADS,), (
            flat, cb_dev, i32(cb.shape[1]), i32(nb), order, i32(style), num_bps, rate_off,
            cap_off, region, rates, dists, lens, status, mq, zc, sc, ctx_init, i32(floor)))
    elif nb:
        warps = -(-nslots // lanes)
        k_code((-(-warps * 32 // BLOCK_THREADS),), (BLOCK_THREADS,), (
            flat, cb_dev, i32(cb.shape[1]), i32(nb), order, i32(style), num_bps, rate_off,
            cap_off, region, rates, dists, lens, status, flags, sm, snap, i32(nslots),
            i32(0 if interleave else entries), i32(lanes), next_row, mq, zc, sc, ctx_init,
            i32(floor)))
    coded_off = xp.zeros(nb + 1, xp.int64)
    coded_off[1:] = xp.cumsum(lens)
    out = xp.empty(region.size, xp.uint8)
    if nb:
        k_compact((grid,), (BLOCK_THREADS,), (region, cap_off, lens, coded_off, i32(nb), out))
    keep = (flat, cb_dev, order, cap_off, region, lens, flags, sm, snap, next_row)
    return (out, coded_off, rates, rate_off, dists, num_bps, status), keep


def collect(outputs, to_host, get_flat, cb, style, floor=0, info: dict | None = None):
    """encode_tile's 6-tuple from queue_tile's outputs once the kernels have run: the used
    prefixes copied with ``to_host`` (cupy.asnumpy), then :func:`finish`.  ``info``
    (optional) receives "overflow", the number of blocks the numba fallback coded (their
    figures on the device are not the tuple's)."""
    out, coded_off, rates, rate_off, dists, num_bps, status = outputs
    rate_off, coded_off = to_host(rate_off), to_host(coded_off)
    status, num_bps = to_host(status), to_host(num_bps)
    npass, nbytes = int(rate_off[-1]), int(coded_off[-1])
    if (status & STATUS_K_TOO_LARGE).any():  # finish raises: nothing more to fetch
        npass = nbytes = 0
    if info is not None:
        info["overflow"] = int(np.count_nonzero(status & STATUS_OVERFLOW))
    return finish(get_flat, cb, style, to_host(out[:nbytes]), coded_off, to_host(rates[:npass]),
                  rate_off, to_host(dists[:npass]), num_bps, status, floor)
