"""HT code-blocks for the tests of the HT block encoder and its CUDA kernels
(``encode/cuda/ht_encode.cu``, ``ht_figures.cu``, ``ht_select.cu``): random blocks
(:func:`random_block`), blocks packed into one flat buffer and table with hostile gaps
(:func:`pack`), a synthetic frame's real tile (:func:`synthetic_tile`) and its blocks' byte-budget
figures (:func:`frame_figures`); the numba coder's output laid out as the kernel's
(:func:`numba_region`), the host build's (:func:`emulate`), and :func:`assert_same_rows`.
"""

from __future__ import annotations

import ctypes

import numpy as np

from cinegpu.decode.tier1.codeblock import CB_COLUMNS, CB_HEIGHT, CB_OUT, CB_STRIDE, CB_WIDTH
from cinegpu.encode.tier1.ht import ht_encode_block, make_ht_enc_scratch
from cinegpu.encode.tier1.ht_gpu_plan import capacity_offsets, kernel_tables, scratch_pitch

#: the planes the blocks are coded at
PLANES = (0, 1, 5, 20, 29)
FILL = 0xA5  # what the output buffers hold before coding: bytes outside segments stay so


def emulate(lib, flat, cb, rows, drops, grid=4, threads=16, tables=None):
    """ht_enc_blocks over cb[rows] on a grid x threads launch -> (region, cap_off, lens)."""
    flat = np.ascontiguousarray(flat, np.int32)
    cb = np.ascontiguousarray(cb, np.int64)
    rows = np.ascontiguousarray(rows, np.int64)
    drops = np.ascontiguousarray(drops, np.int64)
    cap_off = capacity_offsets(cb, rows)
    region = np.full(int(cap_off[-1]), FILL, np.uint8)
    lens = np.full(rows.shape[0], -99, np.int64)
    pitch = scratch_pitch()
    scratch = np.zeros(grid * threads * pitch, np.uint8)
    tables = kernel_tables() if tables is None else tables
    ptrs = [ctypes.c_void_p(a.ctypes.data) for a in (flat, cb)]
    rc = lib.hte_emulate(*ptrs, ctypes.c_int(cb.shape[1]), ctypes.c_int(rows.shape[0]),
                         *(ctypes.c_void_p(a.ctypes.data)
                           for a in (rows, drops, cap_off, region, lens, scratch)),
                         ctypes.c_longlong(pitch),
                         *(ctypes.c_void_p(t.ctypes.data) for t in tables),
                         ctypes.c_int(grid), ctypes.c_int(threads))
    assert rc == 0
    return region, cap_off, lens


def numba_region(flat, cb, rows, drops, cap_off):
    """ht_encode_block of each block cb[rows[j]] at cap_off[j] of a FILL buffer."""
    region = np.full(int(cap_off[-1]), FILL, np.uint8)
    lens = np.zeros(len(rows), np.int64)
    scratch = make_ht_enc_scratch()
    for j, r in enumerate(cb[rows]):
        if r[CB_WIDTH] > 0 and r[CB_HEIGHT] > 0:
            lens[j] = ht_encode_block(flat, r[CB_OUT], r[CB_STRIDE], r[CB_WIDTH], r[CB_HEIGHT],
                                      drops[j], region, cap_off[j], *scratch)
    return region, lens


def assert_same_rows(got, want):
    """ht_encode_rows' tuples equal (dtypes too); after an early return, the coded prefix."""
    assert len(got) == len(want) == 6
    early = want[5].shape[0] == 0 and want[1].shape[0] > 1
    for i, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype, i
        if i == 0 and early:
            n = int(want[1].max())
            assert a.shape == b.shape
            np.testing.assert_array_equal(a[:n], b[:n])
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"item {i}")


def pack(blocks, rng, gap=True):
    """(flat, cb) of 2-D blocks laid out one after the other, each with a random row stride
    of w..w+3 and random large values in the gaps (which the coder must not read)."""
    parts, rows, at = [], [], 0
    for a in blocks:
        h, w = a.shape
        stride = w + (int(rng.integers(0, 4)) if gap else 0)
        buf = rng.integers(-(1 << 31) + 1, 1 << 31, size=(h, stride), dtype=np.int64)
        buf[:, :w] = a
        parts.append(buf.ravel())
        r = np.zeros(CB_COLUMNS, np.int64)
        r[CB_OUT], r[CB_WIDTH], r[CB_HEIGHT], r[CB_STRIDE] = at, w, h, stride
        rows.append(r)
        at += h * stride
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return flat.astype(np.int32), np.array(rows, np.int64).reshape(-1, CB_COLUMNS)


def random_block(rng, h, w, k):
    """Random magnitudes below 2^k, some zeros, mixed scales (as test_ht_encode.py)."""
    a = rng.integers(-(1 << k) + 1, 1 << k, size=(h, w), dtype=np.int64)
    a *= rng.random((h, w)) < rng.random()
    return a >> rng.integers(0, k + 1, size=(h, w))


def synthetic_tile(reversible: bool):
    """The first tile's flat indices and code-block table of a synthetic 12-bit frame."""
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode import Encoder, EncoderSettings
    from cinegpu.encode.encoder import _precisions, _split, make_params

    img = synthetic_frame(384, 256, bits=12)
    enc = Encoder(EncoderSettings.of(profile="generic", codec="htj2k", backend="cpu", reversible=reversible))
    comps = _split(img)
    precs, sgn = _precisions(comps, 12, False)
    params = make_params([c.shape for c in comps], precs, sgn, enc.coding)
    _, plans = enc._geometry(params)
    flats = enc._forward(comps, params, plans)
    return flats[0], np.ascontiguousarray(plans[0].cb, np.int64)


def frame_figures(seed):
    from cinegpu.bench.encode import synthetic_frame
    from cinegpu.encode.encoder import Encoder, EncoderSettings
    from cinegpu.encode.ht import _tile_figures
    from cinegpu.encode.quant import block_weights
    img = synthetic_frame(256, 144, seed=seed)
    got = {}

    def keep(frame_cls, params, cs, plans, flats, *a, **k):
        figs = [_tile_figures(None, f, p.cb) for p, f in zip(plans, flats)]
        got["w"] = np.concatenate([block_weights(p, params) for p in plans])
        got["dist"] = np.concatenate([f[0] for f in figs])
        got["bits"] = np.concatenate([f[1] for f in figs])
        return b""
    import cinegpu.encode.ht as ht
    orig = ht.encode_ht_frame
    ht.encode_ht_frame = keep
    try:
        with Encoder(EncoderSettings.of(backend="cpu", codec="htj2k", codeblock=(16, 16), base_step=0.5)) as enc:
            enc.encode(img, bits=12)
    finally:
        ht.encode_ht_frame = orig
    return got["w"], got["dist"], got["bits"]
