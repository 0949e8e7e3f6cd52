"""HT block decoding (ITU-T T.814 | ISO/IEC 15444-15 clause 7), numba.

An HT code-block carries at most one HT set worth decoding: a cleanup pass at bit-plane p
(every magnitude bit from the top down to p, in one go) and, optionally, the SigProp and
MagRef refinement passes at plane p - 1.  tier-2 lays the block's codeword segments out as for
EBCOT (each followed by 0xFF 0xFF) with their pass counts; pass z of the block is a cleanup
when z % 3 == 0 and a SigProp / MagRef pass when z % 3 == 1 / 2.  Leading zero-length passes
are placeholders (T.814 Annex B: sets that were not coded), so the cleanup of pass z codes plane
K - 1 - z // 3 with K the block's magnitude bit-planes (tier-2's CB_NUM_BPS).  When a block
holds several HT sets the last one with cleanup data is decoded (7.1: each set is complete).

The cleanup segment (Lcup bytes, its last 12 bits give Scup) holds three bit-streams:

* MagSgn, forward from byte 0 up to Pcup = Lcup - Scup, LSB first, a bit unstuffed after
  each 0xFF; 0xFF fills past its end (7.3.2);
* MEL, forward from Pcup, MSB first, same unstuffing; the adaptive run-length symbols that
  say whether a quad of context 0 has any significant sample (7.3.3);
* VLC, backward from byte Lcup - 2 (its upper nibble first), LSB first, a bit unstuffed from
  a byte ending 0x7F after one above 0x8F; zeros past Pcup (7.3.4).  It carries the CxtVLC
  codewords (ht_tables) and the U-VLC exponent offsets u (7.3.6).

Quads are 2 x 2 samples, decoded in pairs along each line-pair (7.3.1); samples of a quad in
the order (0,0) (0,1) (1,0) (1,1).  A significant sample gets m = U - e_k magnitude/sign bits
from MagSgn, v = those bits with e_1 above them, so |mu| = (v >> 1) + 1 and the sign is v & 1
(7.3.7), and U = kappa + u with kappa from the exponents of the line above (7.3.5).

The refinement segment (Lref bytes) holds SigProp forward from its start and MagRef backward
from its end (7.4, 7.5); SigProp visits stripes of four rows in groups of four columns, each
sample that is insignificant but has a significant neighbour (the row below excluded at the
foot of a stripe in vertically causal mode) reading one bit, then the signs of the group's
new samples.

Values follow the EBCOT decoder's convention (codeblock.py): 2 x the reconstructed
coefficient, sign applied, so a sample known down to plane q holds (2m + 1) << q with m its
magnitude bits above q.  The scratch `vals` has the one-sample border layout of passes.py.

Every loop is bounded by the block size; readers feed fill bytes past their segment, so
corrupt data can only give wrong values or a status bit, never an access outside `coded`.
"""

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from .ht_tables import MEL_EXP, VLC_LUT_0, VLC_LUT_1

JIT = dict(cache=True, nogil=True, _nrt=False)

#: Status bit for HT data that breaks T.814: a bad Scup, a significant sample outside the
#: block, an exponent bound above what 32-bit values hold, or refinement data without a cleanup.
STATUS_HT_CORRUPT = 0x20

#: Code-block style bit of an HT block (SPcod/SPcoc bit 6, T.814 A.2); 0x80 with it: mixed.
CBLK_HT = 0x40
CBLK_HT_MIXED = 0x80

#: Largest (h + 3) x (w + 4) significance array and 2 x (w + 4) exponent line over legal sizes.
HT_SIG_SIZE = 4096 + 4 * 1024 + 3 * 1024 + 16
HT_LINE_SIZE = 2 * (1024 + 4)


@njit(cache=True, nogil=True)
def make_ht_scratch():
    """(sig, eline) scratch arrays for ht_decode_into, big enough for any legal block."""
    return np.zeros(HT_SIG_SIZE, np.uint8), np.zeros(HT_LINE_SIZE, np.int32)


# ------------------------------------------------------------------------------ bit readers
# Each reader is a few integers that the caller keeps in locals: the byte position, a bit
# accumulator (int64, at most 56 valid bits, the next bit lowest) and its bit count, and
# the unstuffing flag of the byte read last.

@njit(inline='always', **JIT)
def fwd_fill(data, pos, end, acc, nb, ff, fill):
    """Top up a forward reader (MagSgn, SigProp) to more than 48 bits: bytes from `pos`
    below `end`, then `fill`; after a 0xFF only the low 7 bits of the next byte count."""
    while nb <= 48:
        b = np.int64(data[pos]) if pos < end else np.int64(fill)
        pos += 1
        if ff:
            acc |= (b & 0x7F) << nb
            nb += 7
        else:
            acc |= b << nb
            nb += 8
        ff = b == 0xFF
    return pos, acc, nb, ff


@njit(inline='always', **JIT)
def bwd_fill(data, pos, stop, acc, nb, unstuff):
    """Top up a backward reader (VLC, MagRef) to more than 48 bits: bytes from `pos` down to
    `stop`, then zeros; a byte ending 0x7F after one above 0x8F gives only its low 7 bits."""
    while nb <= 48:
        b = np.int64(data[pos]) if pos >= stop else np.int64(0)
        pos -= 1
        if unstuff and (b & 0x7F) == 0x7F:
            acc |= (b & 0x7F) << nb
            nb += 7
        else:
            acc |= b << nb
            nb += 8
        unstuff = b > 0x8F
    return pos, acc, nb, unstuff


@njit(inline='always', **JIT)
def mel_byte(data, pos, end):
    """Byte `pos` of the cleanup segment as MEL sees it: the last byte reads 0xFF and the one
    before it has its low nibble (part of Scup) set (T.814 7.3.3), 0xFF past the end."""
    if pos < end - 2:
        return np.int64(data[pos])
    if pos == end - 2:
        return np.int64(data[pos]) | 0x0F
    return np.int64(0xFF)


@njit(inline='always', **JIT)
def mel_bit(data, end, pos, cur, nbits):
    """Next MEL bit, MSB first, one bit unstuffed after 0xFF: (bit, pos, cur, nbits)."""
    if nbits == 0:
        nbits = 7 if cur == 0xFF else 8
        cur = mel_byte(data, pos, end)
        pos += 1
    nbits -= 1
    return (cur >> nbits) & 1, pos, cur, nbits


@njit(**JIT)
def mel_codeword(data, end, pos, cur, nbits, k):
    """The next MEL codeword (T.814 7.3.3): a 1 stands for 2^E[k] zeros; 0 followed by E[k]
    bits r for r zeros and a one. Returns (run, one, pos, cur, nbits, k). Called, not inlined
    (once per run of symbols; see u_pair)."""
    e = MEL_EXP[k]
    bit, pos, cur, nbits = mel_bit(data, end, pos, cur, nbits)
    if bit:
        return 1 << e, 0, pos, cur, nbits, min(k + 1, 12)
    run = 0
    for _ in range(e):
        bit, pos, cur, nbits = mel_bit(data, end, pos, cur, nbits)
        run = (run << 1) | bit
    return run, 1, pos, cur, nbits, max(k - 1, 0)


@njit(inline='always', **JIT)
def mel_symbol(data, end, pos, cur, nbits, k, run, one):
    """Next MEL symbol (T.814 7.3.3): (symbol, pos, cur, nbits, k, run, one): the zeros of
    the current codeword's run, then its one (if it has one), then the next codeword's."""
    if run == 0 and one == 0:
        run, one, pos, cur, nbits, k = mel_codeword(data, end, pos, cur, nbits, k)
    if run > 0:
        return 0, pos, cur, nbits, k, run - 1, one
    return 1, pos, cur, nbits, k, run, 0


@njit(inline='always', **JIT)
def u_prefix(acc, nb):
    """U-VLC prefix (T.814 Table 3): codes 1, 01, 001, 000 for 1, 2, 3, 5: (value, acc, nb)."""
    if acc & 1:
        return 1, acc >> 1, nb - 1
    if acc & 2:
        return 2, acc >> 2, nb - 2
    if acc & 4:
        return 3, acc >> 3, nb - 3
    return 5, acc >> 3, nb - 3


@njit(inline='always', **JIT)
def u_suffix(pfx, acc, nb):
    """U-VLC suffix: none below prefix 3, one bit for 3, five bits for 5: (value, acc, nb)."""
    if pfx < 3:
        return 0, acc, nb
    if pfx == 3:
        return acc & 1, acc >> 1, nb - 1
    return acc & 31, acc >> 5, nb - 5


@njit(inline='always', **JIT)
def u_extension(sfx, acc, nb):
    """U-VLC extension: four bits when the suffix is 28 or more: (value, acc, nb)."""
    if sfx < 28:
        return 0, acc, nb
    return acc & 15, acc >> 4, nb - 4


@njit(**JIT)
def u_pair(uoff1, uoff2, initial, mel, acc, nb):
    """The exponent offsets u of a quad pair (T.814 7.3.6) from the VLC reader: prefixes, then
    suffixes, then extensions; on the initial line-pair with both offsets and a MEL symbol of
    0, a prefix above 2 leaves the second u one bit (1 or 2). ``mel`` (both offsets coded)
    adds 2 to each. Returns (u1, u2, acc, nb).

    Called, not inlined: its twelve reader steps inlined into the cleanup pass cost more to
    compile (numba's SSA pass, see passes.py) than the call costs a quad pair."""
    u1 = 0
    u2 = 0
    if uoff1 and uoff2:
        pfx1, acc, nb = u_prefix(acc, nb)
        if initial and mel == 0 and pfx1 > 2:
            u2 = (acc & 1) + 1
            acc >>= 1
            nb -= 1
            sfx1, acc, nb = u_suffix(pfx1, acc, nb)
            ext1, acc, nb = u_extension(sfx1, acc, nb)
        else:
            pfx2, acc, nb = u_prefix(acc, nb)
            sfx1, acc, nb = u_suffix(pfx1, acc, nb)
            sfx2, acc, nb = u_suffix(pfx2, acc, nb)
            ext1, acc, nb = u_extension(sfx1, acc, nb)
            ext2, acc, nb = u_extension(sfx2, acc, nb)
            u2 = pfx2 + sfx2 + 4 * ext2 + (2 if mel else 0)
        u1 = pfx1 + sfx1 + 4 * ext1 + (2 if mel else 0)
    else:
        pfx, acc, nb = u_prefix(acc, nb)
        sfx, acc, nb = u_suffix(pfx, acc, nb)
        ext, acc, nb = u_extension(sfx, acc, nb)
        if uoff1:
            u1 = pfx + sfx + 4 * ext
        else:
            u2 = pfx + sfx + 4 * ext
    return u1, u2, acc, nb


# ------------------------------------------------------------------------------ cleanup pass

@njit(inline='always', **JIT)
def quad_context(sig, i, fsg, initial, rho_w):
    """The VLC context of the quad whose top-left sample is ``sig[i]`` (T.814 7.3): on the
    first line-pair from the quad to the left (``rho_w``, its significance pattern), below it
    from the significance of the neighbours above and to the left (``fsg``: the stride of the
    bordered significance map)."""
    if initial:
        return (rho_w & 1) | ((rho_w >> 1) & 1) | ((rho_w >> 1) & 6)
    return np.int64(sig[i - fsg - 1] | sig[i - fsg]) \
        | (np.int64(sig[i - 1] | sig[i + fsg - 1]) << 1) \
        | (np.int64(sig[i - fsg + 1] | sig[i - fsg + 2]) << 2)


@njit(inline='always', **JIT)
def magsgn_quad(data, ms_pos, ms_end, ms_acc, ms_nb, ms_ff, entry, big_u, p, vals, fs,
                x0, y0, eline, ec):
    """MagSgn of the significant samples of one quad (T.814 7.3.7): values into `vals`,
    exponents of its lower row into eline[ec + x + 1]. Returns the MagSgn reader's state and
    False when a value exceeds int32 (possible with Mb = 30 only for corrupt data)."""
    ok = True
    rho = (entry >> 4) & 0xF
    e_1 = (entry >> 8) & 0xF
    e_k = (entry >> 12) & 0xF
    for n in range(4):
        x = x0 + (n >> 1)
        y = y0 + (n & 1)
        e = 0
        if (rho >> n) & 1:
            m = big_u - ((e_k >> n) & 1)
            if ms_nb < m:
                ms_pos, ms_acc, ms_nb, ms_ff = fwd_fill(data, ms_pos, ms_end, ms_acc, ms_nb,
                                                        ms_ff, 0xFF)
            v = (ms_acc & ((np.int64(1) << m) - 1)) | (np.int64((e_1 >> n) & 1) << m)
            ms_acc >>= m
            ms_nb -= m
            mag = ((v >> 1) * 2 + 3) << p
            if mag > 0x7FFFFFFF:
                ok = False
                mag = 0
            vals[(y + 1) * fs + x + 1] = -mag if v & 1 else mag
            if v:
                e = 64 - leading_zeros(np.uint64(v))
        if n & 1:
            eline[ec + x + 1] = e
    return ms_pos, ms_acc, ms_nb, ms_ff, ok


@njit(**JIT)
def ht_cleanup(data, start, lcup, w, h, p, vals, fs, sig, fsg, eline):
    """The HT cleanup pass (T.814 7.3) of a w x h block into `vals` at plane p.

    Audited hot kernel, longer than the usual 80 lines: the three readers' states live in
    locals across the whole block, as in the C decoders.  `sig` (row pitch fsg = w + 4,
    sample (x, y) at (y + 1) * fsg + x + 1) receives 1 for every significant sample; `vals`
    and `sig` must be zero on entry.  Returns 0 or STATUS_HT_CORRUPT.
    """
    end = start + lcup
    scup = (np.int64(data[end - 1]) << 4) | (np.int64(data[end - 2]) & 0xF)
    if lcup < 2 or scup < 2 or scup > lcup or scup > 4079:
        return STATUS_HT_CORRUPT
    pcup = end - scup
    ms_pos, ms_acc, ms_nb, ms_ff = start, np.int64(0), 0, False
    zero = np.int64(0)  # typed: one compiled mel_codeword, not one for literal zeros too
    mel_pos, mel_cur, mel_nbits, mel_k, mel_run, mel_one = pcup, zero, zero, zero, zero, zero
    d = np.int64(data[end - 2])
    vl_acc = d >> 4
    vl_nb = 4
    if (vl_acc & 7) == 7:  # the nibble's top bit is a stuffed 0 (Lcup - 1 counts as 0xFF)
        vl_acc &= 7
        vl_nb = 3
    vl_unstuff = (d | 0x0F) > 0x8F
    vl_pos = end - 3
    qw = (w + 1) >> 1
    qh = (h + 1) >> 1
    row = w + 4
    for qy in range(qh):
        y0 = 2 * qy
        initial = qy == 0
        ep = (qy & 1) * row  # exponents of the line above
        ec = row - ep  # exponents of this line-pair's lower row
        rho_w = 0  # initial line-pair: significance of the quad to the left
        for qx in range(0, qw, 2):
            vl_pos, vl_acc, vl_nb, vl_unstuff = bwd_fill(data, vl_pos, pcup, vl_acc, vl_nb,
                                                         vl_unstuff)
            e1 = 0
            e2 = 0
            nquads = 2 if qx + 1 < qw else 1
            for j in range(nquads):
                x0 = 2 * (qx + j)
                i = (y0 + 1) * fsg + x0 + 1
                c = quad_context(sig, i, fsg, initial, rho_w)
                present = 1
                if c == 0:
                    present, mel_pos, mel_cur, mel_nbits, mel_k, mel_run, mel_one = mel_symbol(
                        data, end, mel_pos, mel_cur, mel_nbits, mel_k, mel_run, mel_one)
                entry = np.int64(0)
                if present:
                    lut = VLC_LUT_0 if initial else VLC_LUT_1
                    entry = np.int64(lut[(c << 7) | (vl_acc & 0x7F)])
                    vl_acc >>= entry & 7
                    vl_nb -= entry & 7
                rho = (entry >> 4) & 0xF
                # samples outside the block may not be significant
                if (x0 + 1 >= w and rho & 0xC) or (y0 + 1 >= h and rho & 0xA):
                    return STATUS_HT_CORRUPT
                sig[i] = rho & 1
                sig[i + fsg] = (rho >> 1) & 1
                sig[i + 1] = (rho >> 2) & 1
                sig[i + fsg + 1] = (rho >> 3) & 1
                rho_w = rho
                if j == 0:
                    e1 = entry
                else:
                    e2 = entry
            # exponent offsets u (7.3.6); kappa is 1 on the initial line-pair
            uoff1 = (e1 >> 3) & 1
            uoff2 = (e2 >> 3) & 1
            u1 = 0
            u2 = 0
            if uoff1 or uoff2:
                mel = 0
                if initial and uoff1 and uoff2:
                    mel, mel_pos, mel_cur, mel_nbits, mel_k, mel_run, mel_one = mel_symbol(
                        data, end, mel_pos, mel_cur, mel_nbits, mel_k, mel_run, mel_one)
                u1, u2, vl_acc, vl_nb = u_pair(uoff1, uoff2, initial, mel, vl_acc, vl_nb)
            for j in range(nquads):
                entry = e1 if j == 0 else e2
                rho = (entry >> 4) & 0xF
                x0 = 2 * (qx + j)
                kappa = 1
                if not initial and (rho & (rho - 1)):  # two or more significant samples
                    emax = max(max(eline[ep + x0], eline[ep + x0 + 1]),
                               max(eline[ep + x0 + 2], eline[ep + x0 + 3]))
                    kappa = max(emax - 1, 1)
                big_u = kappa + (u1 if j == 0 else u2)
                if big_u + p > 31:  # v would have more bits than a 32-bit value holds
                    return STATUS_HT_CORRUPT
                ms_pos, ms_acc, ms_nb, ms_ff, ok = magsgn_quad(
                    data, ms_pos, pcup, ms_acc, ms_nb, ms_ff, entry, big_u, p, vals, fs,
                    x0, y0, eline, ec)
                if not ok:
                    return STATUS_HT_CORRUPT
    return 0


# ------------------------------------------------------------------------------ refinement

@njit(**JIT)
def ht_sigprop(data, start, lref, w, h, p, vals, fs, sig, fsg, vcausal):
    """The HT SigProp pass (T.814 7.4) at plane p - 1, reading forward from `start`.

    Stripes of four rows, groups of four columns: each insignificant sample with a
    significant neighbour (cleanup or earlier in this pass) reads a bit; then the group's new
    samples read their signs.  New samples are marked 2 in `sig`.
    """
    pos, acc, nb, ff = start, np.int64(0), 0, False
    end = start + lref
    one_half = 3 << (p - 1)
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x0 in range(0, w, 4):
            x1 = min(x0 + 4, w)
            new = 0
            for x in range(x0, x1):
                for y in range(y0, y1):
                    i = (y + 1) * fsg + x + 1
                    if sig[i]:
                        continue
                    near = sig[i - fsg - 1] | sig[i - fsg] | sig[i - fsg + 1] | sig[i - 1] \
                        | sig[i + 1]
                    if not (vcausal and y == y1 - 1):
                        near |= sig[i + fsg - 1] | sig[i + fsg] | sig[i + fsg + 1]
                    if near:
                        if nb < 1:
                            pos, acc, nb, ff = fwd_fill(data, pos, end, acc, nb, ff, 0)
                        if acc & 1:
                            sig[i] = 2
                            new |= 1 << ((x - x0) * 4 + y - y0)
                        acc >>= 1
                        nb -= 1
            if new:
                for x in range(x0, x1):
                    for y in range(y0, y1):
                        if (new >> ((x - x0) * 4 + y - y0)) & 1:
                            if nb < 1:
                                pos, acc, nb, ff = fwd_fill(data, pos, end, acc, nb, ff, 0)
                            vals[(y + 1) * fs + x + 1] = -one_half if acc & 1 else one_half
                            acc >>= 1
                            nb -= 1


@njit(**JIT)
def ht_magref(data, start, lref, w, h, p, vals, fs, sig, fsg):
    """The HT MagRef pass (T.814 7.5) at plane p - 1, reading backward from the segment's end:
    one bit per sample significant after the cleanup pass, in stripe order."""
    pos, acc, nb, unstuff = start + lref - 1, np.int64(0), 0, True
    half = 1 << (p - 1)
    for y0 in range(0, h, 4):
        y1 = min(y0 + 4, h)
        for x in range(w):
            for y in range(y0, y1):
                if sig[(y + 1) * fsg + x + 1] == 1:
                    if nb < 1:
                        pos, acc, nb, unstuff = bwd_fill(data, pos, start, acc, nb, unstuff)
                    j = (y + 1) * fs + x + 1
                    v = vals[j]
                    vals[j] = v + (half if (acc & 1) ^ (v < 0) else -half)
                    acc >>= 1
                    nb -= 1


# ------------------------------------------------------------------------------ the block

@njit(**JIT)
def ht_select(seg_lengths, seg_passes, seg_first, seg_count):
    """The HT set to decode from a block's segments (lengths and pass counts).

    Returns (cleanup offset, Lcup, cleanup pass index z, refinement offset, Lref, refinement
    passes, status); offsets count from the block's first byte, with the two padding bytes
    after each segment.  z = -1 when no cleanup segment holds data.
    """
    z = 0
    off = 0
    c_off, lcup, zc, r_off, lref, nref = 0, 0, -1, 0, 0, 0
    status = 0
    for j in range(seg_first, seg_first + seg_count):
        n = seg_passes[j]
        length = seg_lengths[j]
        if n > 0:
            last = z + n - 1
            if last % 3 == 0:  # ends with a cleanup pass (any passes before it: placeholders)
                if length > 0:
                    c_off, lcup, zc, r_off, lref, nref = off, length, last, off + length + 2, 0, 0
            elif zc >= 0 and z // 3 == zc // 3 and z % 3 != 0:  # refinement of that set
                r_off, lref, nref = off, length, last - zc
            elif length > 0:  # data in passes that can hold none
                status |= STATUS_HT_CORRUPT
        off += length + 2
        z += n
    return c_off, lcup, zc, r_off, lref, nref, status


@njit(**JIT)
def ht_decode_into(coded, data_start, seg_lengths, seg_passes, seg_first, seg_count, w, h,
                   num_bps, style, vals, sig, eline):
    """Decode one validated HT code-block into the scratch `vals` (border layout, zeroed here).

    num_bps: K, the block's magnitude bit-planes (tier-2's Mb - zero bit-planes + ROI shift).
    Returns status bits: STATUS_HT_CORRUPT, or 0x01 (too many passes) when the cleanup plane
    falls below 0 (nothing decoded) or refinement passes follow a cleanup at plane 0 (ignored).
    """
    fs = w + 2
    vals[:(h + 2) * fs] = 0
    c_off, lcup, zc, r_off, lref, nref, status = ht_select(seg_lengths, seg_passes, seg_first,
                                                           seg_count)
    if zc < 0:
        return status
    p = num_bps - 1 - zc // 3
    if p < 0:
        return status | 0x01
    if lref == 0:  # refinement passes without bytes: nothing to refine (MagRef would read 0s)
        nref = 0
    if nref > 0 and p == 0:
        nref = 0
        status |= 0x01
    fsg = w + 4
    sig[:(h + 3) * fsg] = 0
    eline[:2 * fsg] = 0
    st = ht_cleanup(coded, data_start + c_off, lcup, w, h, p, vals, fs, sig, fsg, eline)
    if st:
        return status | st
    if nref >= 1:
        ht_sigprop(coded, data_start + r_off, lref, w, h, p, vals, fs, sig, fsg,
                   (style & 0x08) != 0)
    if nref >= 2:
        ht_magref(coded, data_start + r_off, lref, w, h, p, vals, fs, sig, fsg)
    return status
