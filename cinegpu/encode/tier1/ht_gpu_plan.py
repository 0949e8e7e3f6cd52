"""Host-side steps of the HT cleanup-pass encoder on the GPU (``cuda/ht_encode.cu``, kernel
``ht_enc_blocks``) and of its rate control's plane figures (``cuda/ht_figures.cu``), shared
by :mod:`.ht_gpu` (CuPy) and the tests' host emulations; no CuPy.

    capacity_offsets(cb, rows)           each block's byte region in the kernel's output
    scratch_pitch()                      bytes of one thread's scratch (HTE_SCRATCH_BYTES)
    kernel_tables()                      VLC_ENC_0, VLC_ENC_1, MEL_EXP as the kernel reads them
    segment_offsets(lens, drops)         the blocks' offsets and rates from their lengths
    rows_tuple(coded, cap_off, ...)      ht_encode_rows' 6-tuple from the gathered segments
    assemble(region, cap_off, lens, drops)  the kernel's output as ht_encode_rows returns it
                                         (the gather on the host: kernel ht_gather's twin)
    warp_limits()                        warps a CUDA block, largest block of the warp kernel
    split_rows(cb, rows, kernel)         which blocks ht_enc_blocks_warp codes (one warp a
                                         block, up to 64 x 64), which ht_enc_blocks
    figures_limits()                     most planes and warps a CUDA block of
                                         ht_plane_figures_warp
    figures_args(cb, rows, dmax)         its checked int64 tables and the output shape

The numba twins are :func:`cinegpu.encode.tier1.ht.ht_encode_rows` (T.814 clause 7) and
:func:`cinegpu.encode.tier1.ht.ht_plane_figures`.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
from numba import njit

from cinegpu.decode.tier1.codeblock import CB_HEIGHT, CB_WIDTH
from cinegpu.decode.tier1.ht_tables import MEL_EXP

from .ht import FIGURES_DMAX, FIGURES_QUADS
from .ht_tables import VLC_ENC_0, VLC_ENC_1

__all__ = ["CUDA_SOURCE", "FIGURES_KERNEL", "FIGURES_SOURCE", "GATHER", "KERNEL",
           "KERNEL_CHOICES", "WARP_KERNEL", "assemble", "capacity_offsets", "figures_args",
           "figures_limits", "kernel_tables", "rows_tuple", "scratch_pitch", "segment_offsets",
           "split_rows", "warp_limits"]

CUDA_SOURCE = Path(__file__).resolve().parents[1] / "cuda" / "ht_encode.cu"
WARP_SOURCE = CUDA_SOURCE.with_name("ht_encode_warp.cuh")  # included by CUDA_SOURCE
KERNEL = "ht_enc_blocks"
WARP_KERNEL = "ht_enc_blocks_warp"
GATHER = "ht_gather"
FIGURES_SOURCE = CUDA_SOURCE.with_name("ht_figures.cu")
FIGURES_KERNEL = "ht_plane_figures_warp"


def capacity_offsets(cb: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """int64 (len(rows) + 1) byte offsets of the blocks' output regions: area * 5 + 64 bytes
    each (area in samples), the bound ht_encode_rows gives each block's segment."""
    r = cb[rows]
    cap = r[:, CB_WIDTH].astype(np.int64) * r[:, CB_HEIGHT] * 5 + 64
    return np.concatenate([[0], np.cumsum(cap)]).astype(np.int64)


@functools.cache
def scratch_pitch() -> int:
    """Bytes of one kernel thread's scratch, HTE_SCRATCH_BYTES of ht_encode.cu (the sizes of
    :func:`~.ht.make_ht_enc_scratch`); the tests check it against the compiled value."""
    found = re.search(r"^#define HTE_SCRATCH_BYTES (\d+)", CUDA_SOURCE.read_text(), re.M)
    return int(found.group(1))


def kernel_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(VLC_ENC_0, VLC_ENC_1, MEL_EXP), contiguous int32 as ht_enc_blocks declares them
    (``const int*``); TypeError should a table change its dtype."""
    tables = (VLC_ENC_0, VLC_ENC_1, MEL_EXP)
    for t in tables:
        if t.dtype != np.int32 or not t.flags.c_contiguous:
            raise TypeError(f"HT encoding table of {t.dtype}, the kernel reads int32")
    return tables


def segment_offsets(lens: np.ndarray, drops: np.ndarray):
    """The tables of ht_encode_rows' 6-tuple from the kernel's block lengths ``lens`` (int64
    bytes per block, 0 empty, -1 too long) and the planes ``drops``: (stop, coded_off, rates,
    rate_off, num_bps), ``stop`` the first block too long (len(lens) when none; the offsets
    and rates stop there, as ht_encode_rows' early return).  One compiled pass over the
    blocks (:func:`_segment_offsets`; the numpy steps it replaced took 0.48 ms for a 4K
    frame's 26,292 blocks on the development machine)."""
    lens = np.ascontiguousarray(lens, np.int64)
    drops = np.ascontiguousarray(drops, np.int64)
    if drops.shape[0] < lens.shape[0]:
        raise ValueError("segment_offsets: one plane per block")
    return _segment_offsets(lens, drops)


@njit(cache=True, nogil=True)
def _segment_offsets(lens, drops):
    nb = lens.shape[0]
    stop = nb
    for i in range(nb):
        if lens[i] < 0:
            stop = i
            break
    coded_off = np.zeros(nb + 1, np.int64)
    rate_off = np.zeros(nb + 1, np.int64)
    rates = np.zeros(nb, np.int64)
    num_bps = np.zeros(nb, np.int64)
    r = 0
    for i in range(stop):
        n = lens[i]
        coded_off[i + 1] = coded_off[i] + n
        if n > 0:
            rates[r] = n
            r += 1
            num_bps[i] = drops[i] + 1
        rate_off[i + 1] = r
    return stop, coded_off, rates, rate_off, num_bps


def rows_tuple(coded, cap_off, stop, coded_off, rates, rate_off, num_bps):
    """ht_encode_rows' 6-tuple from the gathered segments ``coded`` and
    :func:`segment_offsets`' tables; with a block too long (stop < blocks), its early
    return: the buffer of area * 5 + 64 per block + 64 bytes holding the blocks before it,
    offsets and rates up to it, and empty dists and num_bps."""
    nb = coded_off.shape[0] - 1
    if stop < nb:
        full = np.zeros(int(cap_off[nb]) + 64, np.uint8)
        full[:coded.shape[0]] = coded
        return full, coded_off, rates, rate_off, np.zeros(0), np.zeros(0, np.int64)
    return (coded, coded_off, rates[:rate_off[nb]].copy(), rate_off, np.zeros(rate_off[nb]),
            num_bps)


def assemble(region: np.ndarray, cap_off: np.ndarray, lens: np.ndarray, drops: np.ndarray):
    """ht_encode_rows' 6-tuple (coded, coded_off, rates, rate_off, dists, num_bps) from the
    kernel's output: ``region`` (uint8, the blocks' segments at cap_off), ``lens`` and the
    planes ``drops`` (:func:`segment_offsets`), the segments gathered in block order on the
    host (the twin of the kernel ht_gather)."""
    stop, coded_off, rates, rate_off, num_bps = segment_offsets(lens, drops)
    n = coded_off[1:stop + 1] - coded_off[:stop]
    idx = np.repeat(cap_off[:stop] - coded_off[:stop], n) + np.arange(int(coded_off[stop]))
    return rows_tuple(region[idx], cap_off, stop, coded_off, rates, rate_off, num_bps)


# ------------------------------------------------------------------ the warp kernel's rows

#: kernel choices of ht_encode_rows_cuda: "auto" the warp kernel where a block fits it and the
#: one-thread kernel for the rest, "warp" the same but refusing a block that does not fit,
#: "thread" the one-thread kernel for every block
KERNEL_CHOICES = ("auto", "warp", "thread")


@functools.cache
def warp_limits() -> tuple[int, int, int]:
    """(warps per CUDA block, widest, tallest block in samples) of ht_enc_blocks_warp: the
    HTW_WARPS, HTW_MAX_W, HTW_MAX_H of ht_encode_warp.cuh, whose CUDA blocks are exactly
    32 * warps threads."""
    text = WARP_SOURCE.read_text()
    return tuple(int(re.search(rf"^#define {name} (\d+)", text, re.M).group(1))
                 for name in ("HTW_WARPS", "HTW_MAX_W", "HTW_MAX_H"))


def split_rows(cb: np.ndarray, rows: np.ndarray, kernel: str = "auto"):
    """(warp, thread): int64 indices j into ``rows`` of the blocks ht_enc_blocks_warp codes
    (at most HTW_MAX_W x HTW_MAX_H samples) and of those left to ht_enc_blocks, per
    ``kernel`` (:data:`KERNEL_CHOICES`); ValueError for "warp" with a block too large."""
    if kernel not in KERNEL_CHOICES:
        raise ValueError(f"HT encoding kernel {kernel!r}: one of {KERNEL_CHOICES}")
    j = np.arange(rows.shape[0], dtype=np.int64)
    if kernel == "thread":
        return j[:0], j
    _, max_w, max_h = warp_limits()
    r = cb[rows]
    fits = (r[:, CB_WIDTH] <= max_w) & (r[:, CB_HEIGHT] <= max_h)
    if kernel == "warp" and not fits.all():
        raise ValueError(f"HT encoding kernel 'warp' takes blocks of at most {max_w} x "
                         f"{max_h} samples")
    return j[fits], j[~fits]


# ------------------------------------------------------------------ the plane figures' kernel

@functools.cache
def figures_limits() -> tuple[int, int]:
    """(most planes dropped, warps per CUDA block) of ht_plane_figures_warp: the HTF_DMAX and
    HTF_WARPS of ht_figures.cu (HTF_DMAX is :data:`.ht.FIGURES_DMAX`), whose CUDA blocks are
    exactly 32 * warps threads."""
    text = FIGURES_SOURCE.read_text()
    return tuple(int(re.search(rf"^#define {name} (\d+)", text, re.M).group(1))
                 for name in ("HTF_DMAX", "HTF_WARPS"))


def figures_args(cb: np.ndarray, rows: np.ndarray, dmax: int):
    """(cb, rows) as contiguous int64 for ht_plane_figures_warp, and the shape of its dist and
    bits, (len(rows), dmax + 1); ValueError for tables of other ranks, dmax outside
    0..FIGURES_DMAX or blocks of more than FIGURES_QUADS quads (what
    :func:`.ht.ht_plane_figures` refuses)."""
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    if cb.ndim != 2 or rows.ndim != 1:
        raise ValueError("plane figures: cb must be 2-D and rows 1-D")
    if not 0 <= dmax <= FIGURES_DMAX:
        raise ValueError(f"plane figures: dmax must be 0..{FIGURES_DMAX}, not {dmax}")
    if rows.shape[0] and cb.shape[0]:
        sizes = (cb[rows, CB_WIDTH] + 1) // 2 * ((cb[rows, CB_HEIGHT] + 1) // 2)
        if sizes.max() > FIGURES_QUADS:
            raise ValueError(f"plane figures: a code-block has more than {FIGURES_QUADS} quads")
    return cb, rows, (rows.shape[0], int(dmax) + 1)
