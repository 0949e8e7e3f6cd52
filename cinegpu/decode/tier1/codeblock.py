"""Decoding of whole code-blocks: segment handling, validation, the batch driver.

T.800 D.4 (pass order), D.5 (contexts reset, RESET), D.6 (bypass, Table D.9), D.7 (VCAUSAL),
D.5 SEGSYM, Annex H (ROI max-shift).  Code-block style bits are those of Table A.19.

Nothing here raises: corrupt input of any kind gives a nonzero status (bit flags STATUS_*) and
never an out-of-bounds access; the caller (Python) turns the status into CodestreamError or
conceals the block.
"""

import numpy as np
from numba import njit

from .ht import CBLK_HT, STATUS_HT_CORRUPT, ht_decode_into, make_ht_scratch
from .mq import mq_decode, mq_init, raw_init
from .passes import cup_mq, mrp_mq, mrp_raw, spp_mq, spp_raw
from .tables import CTX_INIT_WORD, CTX_UNI, NUM_CONTEXTS, ZC_COL_LUT

# Kernels that never allocate run without reference counting (see mq.py); the batch driver
# allocates its status array and scratch, so it keeps NRT.
JIT = dict(cache=True, nogil=True, _nrt=False)
JIT_NRT = dict(cache=True, nogil=True)

# Code-block style, SPcod/SPcoc, T.800 Table A.19
CBLK_BYPASS = 0x01  # selective arithmetic coding bypass
CBLK_RESET = 0x02  # reset context probabilities on coding pass boundaries
CBLK_TERMALL = 0x04  # termination on each coding pass
CBLK_VCAUSAL = 0x08  # vertically causal context
CBLK_PTERM = 0x10  # predictable termination
CBLK_SEGSYM = 0x20  # segmentation symbols

# Subband orientation (HL = horizontally high-pass)
ORIENT_LL, ORIENT_HL, ORIENT_LH, ORIENT_HH = 0, 1, 2, 3

# Columns of the code-block table (int64, one row per code-block)
CB_DATA = 0  # offset in `coded` of the first segment
CB_SEG_FIRST = 1  # first row of seg_lengths / seg_passes
CB_SEG_COUNT = 2  # number of segments
CB_NUM_BPS = 3  # K: magnitude bit-planes including the ROI shift
CB_ORIENT = 4  # ORIENT_*
CB_STYLE = 5  # CBLK_* bits
CB_ROISHIFT = 6  # RGN max-shift s (Annex H)
CB_OUT = 7  # offset in `out` of sample (0, 0)
CB_WIDTH = 8  # samples
CB_HEIGHT = 9  # samples
CB_STRIDE = 10  # samples between rows in `out`
CB_COLUMNS = 11

# Status bits (int32, one per code-block; 0 = fine)
STATUS_TOO_MANY_PASSES = 0x01  # more passes than 3K - 2: the valid ones decoded, as OpenJPEG
STATUS_SEGSYM = 0x02  # a segmentation symbol was not 1010
STATUS_K_TOO_LARGE = 0x04  # K > 30 would overflow int32; nothing decoded
STATUS_BAD_ROW = 0x08  # offsets, lengths, sizes or parameters out of range; nothing decoded
STATUS_BAD_SEGMENTS = 0x10  # segment cut not matching D.6 (raw vs MQ); decoding stopped there
STATUS_HT = STATUS_HT_CORRUPT  # 0x20: HT block data breaking T.814 (see ht.py); decoding stopped

MAX_CBLK_SIDE = 1024  # T.800 A.6.1: xcb, ycb <= 10
MAX_CBLK_AREA = 4096  # T.800 A.6.1: xcb + ycb <= 12
MAX_NUM_BPS = 30  # values are 2x coefficients, < 2^(K+1) <= 2^31 (OpenJPEG: bpno_plus_one < 31)
# Largest (w + 2) * (h + 2) over all legal sizes (w * h <= 4096, w, h <= 1024): samples of `vals`
SCRATCH_SIZE = MAX_CBLK_AREA + 2 * (MAX_CBLK_SIDE + 4) + 4
# Largest (ceil(h / 4) + 2) * (w + 2) over all legal sizes: the column words of `flags`
# (passes.py, tables.py), a border stripe above and below and a border word each side
FLAGS_SIZE = max(((h + 3) // 4 + 2) * (min(MAX_CBLK_SIDE, MAX_CBLK_AREA // h) + 2)
                 for h in range(1, MAX_CBLK_SIDE + 1))


@njit(**JIT)
def flags_size(w, h):
    """Column words of the flags of a w x h block, its border included."""
    return ((h + 3) // 4 + 2) * (w + 2)


def make_scratch():
    """(flags, vals, ctx) scratch arrays for decode_codeblock, big enough for any legal block."""
    return (np.zeros(FLAGS_SIZE, np.int64), np.zeros(SCRATCH_SIZE, np.int32),
            np.zeros(NUM_CONTEXTS, np.int64))


@njit(**JIT)
def pass_is_raw(k, style):
    """Pass k (0 = first cleanup) is raw-coded: BYPASS, after the first 10 passes, SPP or MRP."""
    return (style & CBLK_BYPASS) != 0 and k >= 10 and (k + 2) % 3 != 2


@njit(**JIT)
def check_segments(coded, data_start, seg_lengths, seg_passes, seg_first, seg_count):
    """True when every segment and its 0xFF 0xFF padding lie inside `coded`."""
    if seg_first < 0 or seg_count < 0 or seg_first + seg_count > seg_lengths.shape[0]:
        return False
    if seg_first + seg_count > seg_passes.shape[0] or data_start < 0:
        return False
    pos = data_start
    n = coded.shape[0]
    for j in range(seg_first, seg_first + seg_count):
        length = seg_lengths[j]
        if length < 0 or seg_passes[j] < 0 or seg_passes[j] > 1000:
            return False
        pos += length
        if pos + 2 > n:
            return False
        if coded[pos] != 0xFF or coded[pos + 1] != 0xFF:
            return False
        pos += 2
    return True


@njit(**JIT)
def reset_contexts(ctx):
    """All contexts to their initial states, T.800 Table D.7 (as words, tables.MQ_WORD)."""
    for i in range(NUM_CONTEXTS):
        ctx[i] = CTX_INIT_WORD[i]


@njit(**JIT)
def decode_into(coded, data_start, seg_lengths, seg_passes, seg_first, seg_count,
                w, h, num_bps, orient, style, flags, vals, ctx):
    """Decode one validated code-block into the scratch `vals` (border layout). Returns status."""
    fs = w + 2
    n = (h + 2) * fs
    flags[:flags_size(w, h)] = 0
    vals[:n] = 0
    reset_contexts(ctx)
    zc = ZC_COL_LUT[orient]
    vcausal = (style & CBLK_VCAUSAL) != 0
    # K bit-planes hold 3K - 2 passes (D.4); passes an encoder coded beyond them are ignored,
    # as OpenJPEG's decoder ignores them (its loop ends with the last plane), and flagged
    # STATUS_TOO_MANY_PASSES; K < 0 (zero bit-planes past Mb, tolerated by tier-2) decodes none.
    max_passes = 3 * num_bps - 2 if num_bps > 0 else 0
    # the segmentation symbol (D.5) of the block's last pass is not checked: an encoder that
    # cut the block's bytes after rate control (non-terminated, as most do) may have cut it
    # short, the decoder then reading 1s for it (C.3.4), and the passes' samples are sound
    last_pass = -1
    for j in range(seg_first, seg_first + seg_count):
        last_pass += seg_passes[j]
    status = 0
    k = 0  # pass index in the code-block
    pos = data_start
    a = 0
    c = 0
    ct = 0
    bp = 0
    for j in range(seg_first, seg_first + seg_count):
        start = pos
        pos += seg_lengths[j] + 2
        npass = seg_passes[j]
        if npass == 0:
            continue
        raw = pass_is_raw(k, style)
        if raw:
            c, ct, bp = raw_init(start)
        else:
            a, c, ct, bp = mq_init(coded, start)
        for _ in range(npass):
            if k >= max_passes:
                return status | STATUS_TOO_MANY_PASSES
            if pass_is_raw(k, style) != raw:
                return status | STATUS_BAD_SEGMENTS
            kind = (k + 2) % 3  # 0 SPP, 1 MRP, 2 CUP
            plane = num_bps - 1 - (k + 2) // 3
            if kind == 0:
                if raw:
                    c, ct, bp = spp_raw(coded, c, ct, bp, flags, vals, w, h, plane, vcausal)
                else:
                    a, c, ct, bp = spp_mq(coded, a, c, ct, bp, ctx, flags, vals, w, h, zc,
                                          plane, vcausal)
            elif kind == 1:
                if raw:
                    c, ct, bp = mrp_raw(coded, c, ct, bp, flags, vals, w, h, plane)
                else:
                    a, c, ct, bp = mrp_mq(coded, a, c, ct, bp, ctx, flags, vals, w, h, plane)
            else:
                a, c, ct, bp = cup_mq(coded, a, c, ct, bp, ctx, flags, vals, w, h, zc, plane,
                                      vcausal)
                if style & CBLK_SEGSYM:
                    sym = 0
                    for _b in range(4):
                        d, a, c, ct, bp = mq_decode(coded, ctx, CTX_UNI, a, c, ct, bp)
                        sym = (sym << 1) | d
                    if sym != 0xA and k != last_pass:
                        status |= STATUS_SEGSYM
            if style & CBLK_RESET:
                reset_contexts(ctx)
            k += 1
    return status


@njit(**JIT)
def roi_unshift(v, roishift):
    """Annex H max-shift: a magnitude >= 2^s (real units; 2^(s+1) here) is shifted down by s."""
    if roishift <= 0:
        return v
    m = -v if v < 0 else v
    if roishift >= 30 or m < (1 << (roishift + 1)):
        return v
    m >>= roishift
    return -m if v < 0 else m


@njit(**JIT)
def check_params(w, h, num_bps, orient, roishift):
    """0, or the status bits for block parameters out of range."""
    if w < 0 or h < 0 or w > MAX_CBLK_SIDE or h > MAX_CBLK_SIDE or w * h > MAX_CBLK_AREA:
        return STATUS_BAD_ROW
    if orient < 0 or orient > 3 or roishift < 0:
        return STATUS_BAD_ROW
    if num_bps > MAX_NUM_BPS:
        return STATUS_K_TOO_LARGE
    return 0


@njit(**JIT_NRT)
def decode_codeblock(coded, data_start, seg_lengths, seg_passes, out2d, num_bps, orient, style,
                     roishift, flags, vals, ctx):
    """Decode one code-block into out2d (int32 2-D, height x width) and return its status.

    coded: uint8 1-D, the block's segments back to back from data_start, each followed by
    0xFF 0xFF (not counted in seg_lengths).  seg_lengths / seg_passes: int32 1-D, the block's
    segments only.  Values written: 2 x the coefficient, sign applied (see passes.py); zeros
    where nothing was decoded.  flags, vals, ctx: scratch from make_scratch().  An HT block
    (style bit CBLK_HT, T.814) is decoded by ht.py, with scratch of its own allocated here.
    """
    h = out2d.shape[0]
    w = out2d.shape[1]
    out2d[:, :] = 0
    status = check_params(w, h, num_bps, orient, roishift)
    if status:
        return status
    if flags.shape[0] < flags_size(w, h) or vals.shape[0] < (w + 2) * (h + 2):
        return STATUS_BAD_ROW
    if flags.itemsize < 8:      # the column words are 64 bits (tables.py)
        return STATUS_BAD_ROW
    if ctx.shape[0] < NUM_CONTEXTS or ctx.itemsize < 8:     # the contexts' words are 64 bits (mq.py)
        return STATUS_BAD_ROW
    nseg = seg_lengths.shape[0]
    if not check_segments(coded, data_start, seg_lengths, seg_passes, 0, nseg):
        return STATUS_BAD_ROW
    if style & CBLK_HT:
        sig, eline = make_ht_scratch()
        status = ht_decode_into(coded, data_start, seg_lengths, seg_passes, 0, nseg, w, h,
                                num_bps, style, vals, sig, eline)
    else:
        status = decode_into(coded, data_start, seg_lengths, seg_passes, 0, nseg, w, h,
                             num_bps, orient, style, flags, vals, ctx)
    fs = w + 2
    for y in range(h):
        for x in range(w):
            out2d[y, x] = roi_unshift(vals[(y + 1) * fs + x + 1], roishift)
    return status


@njit(**JIT)
def copy_out(vals, w, h, roishift, out, off, stride):
    """The decoded block from the scratch `vals` (border layout) to out[off + y * stride + x]."""
    fs = w + 2
    for y in range(h):
        o = off + y * stride
        i = (y + 1) * fs + 1
        if roishift == 0:
            for x in range(w):
                out[o + x] = vals[i + x]
        else:
            for x in range(w):
                out[o + x] = roi_unshift(vals[i + x], roishift)


@njit(**JIT)
def check_out_region(out_len, off, w, h, stride):
    """True when all h x w samples at out[off + y * stride + x] lie inside `out`."""
    if w == 0 or h == 0:
        return True
    if off < 0 or stride < w:
        return False
    return off + (h - 1) * stride + w <= out_len


def decode_codeblocks(coded, table, seg_lengths, seg_passes, out, ht=None):
    """Decode every code-block of `table` (int64, CB_COLUMNS columns) into the flat `out`.

    Returns the int32 status array, one per row (STATUS_* bits).  Rows whose style has
    CBLK_HT are HT code-blocks (T.814), decoded by ht.py into the same value convention, so
    dequantisation does not tell them apart.  A table without them goes to
    :func:`decode_codeblocks_ebcot`, one with them to :func:`decode_codeblocks_mixed`: the HT
    decoder is compiled only where a stream has HT code-blocks (DCI frames have none).
    ``ht``: False when the caller knows no row can be HT (its plans' coding styles have
    neither the HT nor the mixed bit), which spares looking; None: the rows are looked at.
    A row marked HT that reaches the EBCOT driver all the same is refused, not misread
    (STATUS_BAD_ROW).
    """
    if ht is False:
        return decode_codeblocks_ebcot(coded, table, seg_lengths, seg_passes, out)
    if table.ndim == 2 and table.shape[1] > CB_STYLE and (table[:, CB_STYLE] & CBLK_HT).any():
        return decode_codeblocks_mixed(coded, table, seg_lengths, seg_passes, out)
    return decode_codeblocks_ebcot(coded, table, seg_lengths, seg_passes, out)


@njit(**JIT_NRT)
def batch_start(table):
    """The status array of a batch (every row STATUS_BAD_ROW where ``table`` has too few
    columns) and the EBCOT scratch (flags, vals, ctx), allocated once; decode_into clears the
    part of flags and vals a block uses."""
    status = np.zeros(table.shape[0], np.int32)
    if table.shape[1] < CB_COLUMNS:
        status[:] = STATUS_BAD_ROW
    return (status, np.empty(FLAGS_SIZE, np.int64), np.empty(SCRATCH_SIZE, np.int32),
            np.empty(NUM_CONTEXTS, np.int64))


@njit(**JIT_NRT)
def decode_codeblocks_ebcot(coded, table, seg_lengths, seg_passes, out):
    """:func:`decode_codeblocks` for a table of EBCOT code-blocks only (T.800 Annex D): a row
    marked CBLK_HT is refused (STATUS_BAD_ROW)."""
    status, flags, vals, ctx = batch_start(table)
    if table.shape[1] >= CB_COLUMNS:
        decode_rows_ebcot(coded, table, seg_lengths, seg_passes, out, status, flags, vals, ctx)
    return status


@njit(**JIT_NRT)
def decode_codeblocks_mixed(coded, table, seg_lengths, seg_passes, out):
    """:func:`decode_codeblocks` for a table with HT code-blocks (T.814), EBCOT ones beside
    them allowed (ht_decode_into clears its own scratch)."""
    status, flags, vals, ctx = batch_start(table)
    if table.shape[1] >= CB_COLUMNS:
        sig, eline = make_ht_scratch()
        decode_rows_mixed(coded, table, seg_lengths, seg_passes, out, status, flags, vals, ctx, sig, eline)
    return status


#: row_status's answer for a row to decode (its other answers: a status, the row zeroed)
ROW_TO_DECODE = -1


@njit(**JIT)
def row_status(coded, table, seg_lengths, seg_passes, out, b, ht_allowed):
    """Row ``b`` checked: ROW_TO_DECODE, or the status to give it (0: nothing coded, often
    most blocks; STATUS_BAD_ROW for an HT block unless ``ht_allowed``) with its samples in
    ``out`` zeroed (not where its place in ``out`` is out of bounds: STATUS_BAD_ROW alone)."""
    w = table[b, CB_WIDTH]
    h = table[b, CB_HEIGHT]
    off = table[b, CB_OUT]
    stride = table[b, CB_STRIDE]
    if not check_out_region(out.shape[0], off, w, h, stride):
        return STATUS_BAD_ROW
    st = check_params(w, h, table[b, CB_NUM_BPS], table[b, CB_ORIENT], table[b, CB_ROISHIFT])
    first = table[b, CB_SEG_FIRST]
    count = table[b, CB_SEG_COUNT]
    if st == 0 and not check_segments(coded, table[b, CB_DATA], seg_lengths, seg_passes, first, count):
        st = STATUS_BAD_ROW
    if st == 0:
        for j in range(first, first + count):
            if seg_passes[j] != 0:
                if table[b, CB_STYLE] & CBLK_HT and not ht_allowed:
                    st = STATUS_BAD_ROW
                    break
                return ROW_TO_DECODE
    for y in range(h):
        out[off + y * stride:off + y * stride + w] = 0
    return st


@njit(**JIT)
def decode_rows_ebcot(coded, table, seg_lengths, seg_passes, out, status, flags, vals, ctx):
    """The loop of :func:`decode_codeblocks_ebcot` over its scratch, without reference
    counting (it allocates nothing): each row's status into ``status``."""
    ht_allowed = np.bool_(False)    # typed, not a literal: one compiled row_status for both drivers
    for b in range(table.shape[0]):
        st = row_status(coded, table, seg_lengths, seg_passes, out, b, ht_allowed)
        if st != ROW_TO_DECODE:
            status[b] = st
            continue
        w = table[b, CB_WIDTH]
        h = table[b, CB_HEIGHT]
        status[b] = decode_into(coded, table[b, CB_DATA], seg_lengths, seg_passes, table[b, CB_SEG_FIRST],
                                table[b, CB_SEG_COUNT], w, h, table[b, CB_NUM_BPS], table[b, CB_ORIENT],
                                table[b, CB_STYLE], flags, vals, ctx)
        copy_out(vals, w, h, table[b, CB_ROISHIFT], out, table[b, CB_OUT], table[b, CB_STRIDE])


@njit(**JIT)
def decode_rows_mixed(coded, table, seg_lengths, seg_passes, out, status, flags, vals, ctx, sig, eline):
    """The loop of :func:`decode_codeblocks_mixed` over its scratch, without reference
    counting (it allocates nothing): each row's status into ``status``."""
    ht_allowed = np.bool_(True)
    for b in range(table.shape[0]):
        st = row_status(coded, table, seg_lengths, seg_passes, out, b, ht_allowed)
        if st != ROW_TO_DECODE:
            status[b] = st
            continue
        w = table[b, CB_WIDTH]
        h = table[b, CB_HEIGHT]
        style = table[b, CB_STYLE]
        if style & CBLK_HT:
            st = ht_decode_into(coded, table[b, CB_DATA], seg_lengths, seg_passes, table[b, CB_SEG_FIRST],
                                table[b, CB_SEG_COUNT], w, h, table[b, CB_NUM_BPS], style, vals, sig, eline)
        else:
            st = decode_into(coded, table[b, CB_DATA], seg_lengths, seg_passes, table[b, CB_SEG_FIRST],
                             table[b, CB_SEG_COUNT], w, h, table[b, CB_NUM_BPS], table[b, CB_ORIENT], style,
                             flags, vals, ctx)
        copy_out(vals, w, h, table[b, CB_ROISHIFT], out, table[b, CB_OUT], table[b, CB_STRIDE])
        status[b] = st
