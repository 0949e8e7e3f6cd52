"""The CUDA tier-1 decoder (``decode/tier1/cuda/tier1.cu``) run two ways for the tests that
compare it with the numba decoder: on the GPU (:func:`decode_cuda`) and compiled as C++ for
the host (:func:`decode_host`: ``host_emulation.cpp`` by g++, the kernel run thread by thread
with the wrapper's steps), so that its logic is checked on CPU-only CI too; :func:`compare`
checks one against numba, :class:`Batch` packs code-blocks into one call.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from cinegpu.decode import tier1 as t1
from cinegpu.decode.tier1 import gpu as t1gpu
from conftest import have_cuda, host_library, ptr
from helpers.tier1_blocks import padded

cupy = None
if have_cuda():
    import cupy

#: the kernel's host build (no -ffp-contract=off: tier-1 decoding is integer arithmetic)
HOST_SOURCE = Path(t1gpu.CUDA_SOURCE).with_name("host_emulation.cpp")


def decode_host(coded, table, seg_lengths, seg_passes, out, max_slots=64, interleave=False,
                flags_in="shared"):
    """The kernel run thread by thread on the host, with the wrapper's steps."""
    table = np.ascontiguousarray(table, np.int64)
    nblk = table.shape[0]
    status = np.zeros(nblk, np.int32)
    if nblk == 0:
        return status
    if table.shape[1] < t1.CB_COLUMNS:
        status[:] = t1.STATUS_BAD_ROW
        return status
    coded = np.ascontiguousarray(coded, np.uint8)
    seg_lengths = np.ascontiguousarray(seg_lengths, np.int32)
    seg_passes = np.ascontiguousarray(seg_passes, np.int32)
    order = t1gpu.work_order(table, seg_passes)
    nslots = min(nblk, max_slots)
    shared = flags_in == "shared"
    entries = t1gpu.scratch_entries(table, masks=shared)
    flags = np.zeros(entries * nslots, np.uint16)
    vals = np.zeros(entries * nslots, np.int32)
    luts = (*t1gpu.lookup_tables(), t1gpu.ht_lookup_table())
    pitch = 0 if interleave else entries
    i64, i32 = ctypes.c_int64, ctypes.c_int32
    host_library(HOST_SOURCE, flags=()).tier1_emulate(
        ptr(coded), i64(coded.size), ptr(table), i32(table.shape[1]), i32(nblk), ptr(order),
        ptr(seg_lengths), i64(seg_lengths.size), ptr(seg_passes), i64(seg_passes.size),
        ptr(out), i64(out.size), ptr(status), ptr(flags), ptr(vals), i32(nslots),
        i32(t1gpu.shared_pitch(entries) if shared else pitch), i32(pitch), *[ptr(t) for t in luts],
        i32(shared))
    return status


def decode_cuda(coded, table, seg_lengths, seg_passes, out, **kw):
    out_d = cupy.asarray(out)
    status = t1gpu.decode_codeblocks_cuda(coded, table, seg_lengths, seg_passes, out_d, **kw)
    out[:] = out_d.get()
    return cupy.asnumpy(status)


def compare(decode, coded, rows, seg_lengths, seg_passes, out_size, fill=-7, **kw):
    """Status and `out` of `decode` equal numba's. Returns numba's (status, out)."""
    rows = np.array(rows, np.int64)
    args = (np.asarray(coded, np.uint8), rows.reshape(len(rows), -1) if rows.size else rows,
            np.asarray(seg_lengths, np.int32), np.asarray(seg_passes, np.int32))
    want = np.full(max(out_size, 0), fill, np.int32)
    want_status = t1.decode_codeblocks(*args, want)
    got = np.full(max(out_size, 0), fill, np.int32)
    got_status = decode(*args, got, **kw)
    np.testing.assert_array_equal(got_status, want_status)
    np.testing.assert_array_equal(got, want)
    return want_status, want


class Batch:
    """Code-blocks packed into one (coded, table, seg_lengths, seg_passes, out) call."""

    def __init__(self, stride=1100):
        self.blobs, self.rows, self.lengths, self.passes = [], [], [], []
        self.pos = self.out = 0
        self.stride = stride

    def add(self, coded, lengths, passes, shape, num_bps, orient, style, roishift=0):
        blob = padded(coded, lengths).tobytes()
        h, w = shape
        self.rows.append([self.pos, len(self.lengths), len(lengths), num_bps, orient, style,
                          roishift, self.out, w, h, self.stride])
        self.out += max(h, 1) * self.stride
        self.blobs.append(blob)
        self.pos += len(blob)
        self.lengths += [int(n) for n in lengths]
        self.passes += [int(n) for n in passes]

    def compare(self, decode, **kw):
        return compare(decode, np.frombuffer(b"".join(self.blobs), np.uint8), self.rows,
                       self.lengths, self.passes, self.out, **kw)
