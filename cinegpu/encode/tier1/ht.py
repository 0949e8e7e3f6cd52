"""HT block encoding (ITU-T T.814 | ISO/IEC 15444-15 clause 7), numba: the CPU twin.

One HT set with its cleanup pass only, at bit-plane p: every sample's magnitude
mu = |q| >> p (all its bits above p, in one go) and sign.  The mirror of
:mod:`cinegpu.decode.tier1.ht` (read that docstring for the three streams); this is the
reference the CUDA kernel has to match byte for byte, so it is written as the kernel will
be: one function per code-block over plain arrays, bit writers as locals.

Per quad (2 x 2 samples, n = 0..3 in the order (0,0) (0,1) (1,0) (1,1)), as the paper's
KMagSgn / KVLC / KMEL / KVCPY split it:

* significance rho, v_n = 2 (mu_n - 1) + sign, exponent E_n = bit length of v_n | 1;
* the context c_q (first line-pair: the quad to the left; else the line above, 7.3.5),
  the bound U_q = max(E_max, kappa) and u_q = U_q - kappa;
* c_q = 0: a MEL symbol (any sample significant?); rho != 0 or c_q != 0: the CxtVLC
  codeword of (c_q, rho, u_off, eps) from :mod:`.ht_tables`; per quad pair the U-VLC of
  u_q (7.3.6: prefix, suffix, extension; on the first line-pair a MEL symbol when both
  quads have u_off, and the short form for the second when the first's u_q > 2);
* MagSgn: U_q - e_k bits of each significant v_n, LSB first.

Streams (7.1, 7.3.2-7.3.4): MagSgn forward with a stuffed 0 bit after each 0xFF, padded
with 1s and its trailing 0xFF dropped (the decoder reads 0xFF past the end); MEL forward,
MSB first, the same stuffing, a pending run ended by a 1, padded with 0s, never ending in
0xFF; VLC backward from the segment's end, LSB first, with the 0x7F stuffing after a byte
above 0x8F (the Scup byte counts as 0xFF), padded with 0s.  The segment is
MagSgn | MEL | VLC reversed; its last byte and the low nibble of the one before hold Scup,
the length of MEL + VLC (at most 4079).  MEL and VLC are not fused into a shared byte
(allowed, one byte less; the kernel may add it only if this twin does).
"""

import numpy as np
from numba import njit

from cinegpu.decode.tier1.codeblock import CB_HEIGHT, CB_OUT, CB_STRIDE, CB_WIDTH
from cinegpu.decode.tier1.ht import quad_context
from cinegpu.decode.tier1.ht_tables import MEL_EXP

from .ht_tables import VLC_ENC_0, VLC_ENC_1

JIT = dict(cache=True, nogil=True)

#: Largest Scup (T.814 7.1: 12 bits, the last byte below 0xFF).
MAX_SCUP = 4079
#: Stream buffer sizes: MagSgn of 4096 samples of up to 32 bits with stuffing, MEL of
#: 1024 quads + 512 pairs (at most 6 bits a symbol), VLC of 512 pairs (at most 38 bits).
MS_SIZE = 4096 * 5 + 16
MEL_SIZE = 2048
VLC_SIZE = 4096 + 64
#: Status of a block the cleanup segment cannot hold (Scup > 4079), or of an illegal size.
HT_TOO_LONG = -1


@njit(cache=True, nogil=True)
def make_ht_enc_scratch():
    """(sig, eline, ms, mel, vlc) scratch arrays for :func:`ht_encode_block`, any legal block."""
    return (np.zeros(4096 + 7 * 1024 + 16, np.uint8), np.zeros(2 * (1024 + 4), np.int32),
            np.zeros(MS_SIZE, np.uint8), np.zeros(MEL_SIZE, np.uint8),
            np.zeros(VLC_SIZE, np.uint8))


# ------------------------------------------------------------------------------ bit writers
# Each writer is a few integers kept in the caller's locals: the byte position in its
# buffer, the byte being filled, its bits used and (MagSgn, MEL) its capacity (7 after 0xFF)
# or (VLC) whether the byte before was above 0x8F.

@njit(inline='always', **JIT)
def ms_put(buf, pos, tmp, used, cap, val, m):
    """Append the low m bits of val to MagSgn, LSB first: (pos, tmp, used, cap)."""
    while m > 0:
        t = min(cap - used, m)
        tmp |= (val & ((np.int64(1) << t) - 1)) << used
        used += t
        val >>= t
        m -= t
        if used == cap:
            buf[pos] = tmp
            pos += 1
            cap = 7 if tmp == 0xFF else 8
            tmp = 0
            used = 0
    return pos, tmp, used, cap


@njit(inline='always', **JIT)
def ms_end(buf, pos, tmp, used, cap):
    """Terminate MagSgn: pad with 1s; a last byte of 0xFF is left to the decoder's fill."""
    if used > 0:
        tmp |= (0xFF >> (8 - cap + used)) << used
        if tmp != 0xFF:
            buf[pos] = tmp
            pos += 1
    elif pos > 0 and buf[pos - 1] == 0xFF:
        pos -= 1
    return pos


@njit(inline='always', **JIT)
def mel_put(buf, pos, tmp, left, bit):
    """Append one MEL bit, MSB first: (pos, tmp, left)."""
    tmp = (tmp << 1) | bit
    left -= 1
    if left == 0:
        buf[pos] = tmp
        pos += 1
        left = 7 if tmp == 0xFF else 8
        tmp = 0
    return pos, tmp, left


@njit(inline='always', **JIT)
def mel_encode(buf, pos, tmp, left, k, run, sym):
    """Code one MEL symbol (T.814 7.3.3): a run of 2^E[k] zeros is a 1; r zeros and a one
    are a 0 and r in E[k] bits.  Returns (pos, tmp, left, k, run)."""
    if sym == 0:
        run += 1
        if run == (1 << MEL_EXP[k]):
            pos, tmp, left = mel_put(buf, pos, tmp, left, 1)
            run = 0
            k = min(k + 1, 12)
    else:
        e = MEL_EXP[k]
        pos, tmp, left = mel_put(buf, pos, tmp, left, 0)
        for i in range(e - 1, -1, -1):
            pos, tmp, left = mel_put(buf, pos, tmp, left, (run >> i) & 1)
        run = 0
        k = max(k - 1, 0)
    return pos, tmp, left, k, run


@njit(inline='always', **JIT)
def mel_end(buf, pos, tmp, left, run):
    """Terminate MEL: a pending run as a full run (the decoder takes only what it needs),
    the last byte padded with 0s; a byte follows a 0xFF so MEL never ends in one."""
    if run > 0:
        pos, tmp, left = mel_put(buf, pos, tmp, left, 1)
    if left < 8:
        buf[pos] = tmp << left
        pos += 1
    return pos


@njit(inline='always', **JIT)
def vlc_put(buf, pos, tmp, used, gt8f, val, m):
    """Append the low m bits of val to VLC (written in reading order, reversed later),
    LSB first; after a byte above 0x8F a byte whose low 7 bits are all 1 gets a 0 MSB.
    Returns (pos, tmp, used, gt8f)."""
    while m > 0:
        cap = 7 if gt8f else 8
        t = min(cap - used, m)
        tmp |= (val & ((1 << t) - 1)) << used
        used += t
        val >>= t
        m -= t
        if used == 7 and gt8f:
            if tmp == 0x7F:
                used = 8  # the stuffed 0
            else:
                gt8f = False  # the MSB carries data after all
        if used == 8:
            buf[pos] = tmp
            pos += 1
            gt8f = tmp > 0x8F
            tmp = 0
            used = 0
    return pos, tmp, used, gt8f


@njit(inline='always', **JIT)
def uvlc_parts(u):
    """U-VLC of u >= 1 (T.814 Table 3): (prefix code, its length, suffix and extension as
    one value, their length)."""
    if u == 1:
        return 1, 1, 0, 0
    if u == 2:
        return 2, 2, 0, 0
    if u <= 4:
        return 4, 3, u - 3, 1
    if u <= 32:
        return 0, 3, u - 5, 5
    return 0, 3, (28 + ((u - 33) & 3)) | (((u - 33) >> 2) << 5), 9


# ------------------------------------------------------------------------------ the block

@njit(inline='always', **JIT)
def _bitlen(v):
    n = 0
    while v >> n:
        n += 1
    return n


@njit(**JIT)
def ht_encode_block(src, off, stride, w, h, p, out, at, sig, eline, ms, mel, vlc):
    """HT cleanup segment of the w x h block src[off + y * stride + x] at bit-plane p into
    out[at:], returning Lcup (bytes) or HT_TOO_LONG; 0 when no sample is significant at p
    (the block is then not included).

    Audited hot kernel, longer than the usual 80 lines: the three writers' states live in
    locals across the whole block, as in the decoder.  ``sig`` (pitch w + 4, one-sample
    border) and ``eline`` (two exponent lines of w + 4) are scratch from
    :func:`make_ht_enc_scratch`, as are the stream buffers ``ms``, ``mel``, ``vlc``.
    """
    if w > 1024 or h > 1024 or w * h > 4096:  # not a legal code-block (T.800 A.6.1)
        return HT_TOO_LONG
    fsg = w + 4
    sig[:(h + 3) * fsg] = 0
    eline[:2 * fsg] = 0
    ms_pos, ms_tmp, ms_used, ms_cap = 0, np.int64(0), 0, 8
    mel_pos, mel_tmp, mel_left, mel_k, mel_run = 0, 0, 8, 0, 0
    vl_pos, vl_tmp, vl_used, vl_gt = 1, 0xF, 4, True  # vlc[0]: the Scup byte
    qw = (w + 1) >> 1
    qh = (h + 1) >> 1
    row = w + 4
    any_sig = False
    vq = np.zeros(8, np.int64)  # v of the pair's 8 samples
    for qy in range(qh):
        y0 = 2 * qy
        initial = qy == 0
        ep = (qy & 1) * row
        ec = row - ep
        rho_w = 0
        for qx in range(0, qw, 2):
            nquads = 2 if qx + 1 < qw else 1
            u1 = 0
            u2 = 0
            bu1 = 0
            bu2 = 0
            ek1 = 0
            ek2 = 0
            for j in range(nquads):
                x0 = 2 * (qx + j)
                rho = 0
                emax = 0
                es = 0  # the four exponents, 8 bits each
                for n in range(4):
                    x = x0 + (n >> 1)
                    y = y0 + (n & 1)
                    v = np.int64(0)
                    e = 0
                    if x < w and y < h:
                        q = np.int64(src[off + y * stride + x])
                        mag = (-q if q < 0 else q) >> p
                        if mag:
                            v = 2 * (mag - 1) + (1 if q < 0 else 0)
                            rho |= 1 << n
                            e = _bitlen(v | 1)
                            emax = max(emax, e)
                    vq[4 * j + n] = v
                    es |= e << (8 * n)
                    if n & 1:
                        eline[ec + x + 1] = _bitlen(v)
                i = (y0 + 1) * fsg + x0 + 1
                c = quad_context(sig, i, fsg, initial, rho_w)
                sig[i] = rho & 1
                sig[i + fsg] = (rho >> 1) & 1
                sig[i + 1] = (rho >> 2) & 1
                sig[i + fsg + 1] = (rho >> 3) & 1
                rho_w = rho
                kappa = 1
                if not initial and (rho & (rho - 1)):
                    em = max(max(eline[ep + x0], eline[ep + x0 + 1]),
                             max(eline[ep + x0 + 2], eline[ep + x0 + 3]))
                    kappa = max(em - 1, 1)
                big_u = max(emax, kappa)
                u = big_u - kappa
                eps = 0
                if u > 0:
                    for n in range(4):
                        if ((es >> (8 * n)) & 0xFF) == big_u:
                            eps |= 1 << n
                if c == 0:
                    mel_pos, mel_tmp, mel_left, mel_k, mel_run = mel_encode(
                        mel, mel_pos, mel_tmp, mel_left, mel_k, mel_run, 1 if rho else 0)
                ek = 0
                if rho or c:
                    lut = VLC_ENC_0 if initial else VLC_ENC_1
                    entry = lut[(c << 8) | (rho << 4) | eps]
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, entry & 0x7F,
                                                             (entry >> 8) & 0xF)
                    ek = (entry >> 12) & 0xF
                if rho:
                    any_sig = True
                if j == 0:
                    u1, bu1, ek1 = u, big_u, (ek | (rho << 4))
                else:
                    u2, bu2, ek2 = u, big_u, (ek | (rho << 4))
            # exponent offsets (7.3.6)
            if u1 > 0 and u2 > 0:
                mel_sym = 0
                if initial:
                    mel_sym = 1 if (u1 > 2 and u2 > 2) else 0
                    mel_pos, mel_tmp, mel_left, mel_k, mel_run = mel_encode(
                        mel, mel_pos, mel_tmp, mel_left, mel_k, mel_run, mel_sym)
                a1 = u1 - 2 * mel_sym
                a2 = u2 - 2 * mel_sym
                p1, lp1, s1, ls1 = uvlc_parts(a1)
                if initial and mel_sym == 0 and a1 > 2:
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, p1, lp1)
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, a2 - 1, 1)
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, s1, ls1)
                else:
                    p2, lp2, s2, ls2 = uvlc_parts(a2)
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, p1, lp1)
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, p2, lp2)
                    # suffixes, then extensions (a 9-bit part is suffix | extension << 5)
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, s1 & 31, min(ls1, 5))
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, s2 & 31, min(ls2, 5))
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, s1 >> 5, max(ls1 - 5, 0))
                    vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used,
                                                             vl_gt, s2 >> 5, max(ls2 - 5, 0))
            elif u1 > 0 or u2 > 0:
                pp, lpp, ss, lss = uvlc_parts(u1 if u1 > 0 else u2)
                vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used, vl_gt,
                                                         pp, lpp)
                vl_pos, vl_tmp, vl_used, vl_gt = vlc_put(vlc, vl_pos, vl_tmp, vl_used, vl_gt,
                                                         ss, lss)
            # MagSgn of the pair's significant samples
            for j in range(nquads):
                info = ek1 if j == 0 else ek2
                big_u = bu1 if j == 0 else bu2
                for n in range(4):
                    if (info >> (4 + n)) & 1:
                        m = big_u - ((info >> n) & 1)
                        ms_pos, ms_tmp, ms_used, ms_cap = ms_put(ms, ms_pos, ms_tmp, ms_used,
                                                                 ms_cap, vq[4 * j + n], m)
    if not any_sig:
        return 0
    ms_pos = ms_end(ms, ms_pos, ms_tmp, ms_used, ms_cap)
    mel_pos = mel_end(mel, mel_pos, mel_tmp, mel_left, mel_run)
    if vl_used > 0:
        vlc[vl_pos] = vl_tmp
        vl_pos += 1
    scup = mel_pos + vl_pos
    if scup > MAX_SCUP:
        return HT_TOO_LONG
    o = at
    out[o:o + ms_pos] = ms[:ms_pos]
    o += ms_pos
    out[o:o + mel_pos] = mel[:mel_pos]
    o += mel_pos
    for t in range(vl_pos):
        out[o + t] = vlc[vl_pos - 1 - t]
    o += vl_pos
    out[o - 1] = scup >> 4
    out[o - 2] = (out[o - 2] & 0xF0) | (scup & 0x0F)
    return o - at


# ------------------------------------------------------------------------------ a tile

@njit(cache=True, nogil=True)
def ht_encode_rows(flat, cb, rows, drops):
    """HT-code the blocks cb[rows] of a tile's flat coefficients, block j at bit-plane
    drops[j].  Returns (coded, coded_off, rates, rate_off, dists, num_bps) in the layout of
    :func:`cinegpu.encode.tier1.tile.encode_tile`: one pass (the cleanup) per block holding
    a significant sample, its rate Lcup, K = p + 1 (so that tier-2 signals Mb - 1 - p zero
    bit-planes and the decoder's cleanup plane is p), dists 0; a num_bps of length 0 when a
    block's segment is too long (Scup > 4079)."""
    nb = rows.shape[0]
    sig, eline, ms, mel, vlc = make_ht_enc_scratch()
    area = 0
    for j in range(nb):
        area += cb[rows[j], CB_WIDTH] * cb[rows[j], CB_HEIGHT]
    coded = np.empty(area * 5 + 64 * nb + 64, np.uint8)
    coded_off = np.zeros(nb + 1, np.int64)
    rate_off = np.zeros(nb + 1, np.int64)
    rates = np.zeros(nb, np.int64)
    num_bps = np.zeros(nb, np.int64)
    for j in range(nb):
        r = cb[rows[j]]
        w, h = r[CB_WIDTH], r[CB_HEIGHT]
        n = 0
        if w > 0 and h > 0:
            n = ht_encode_block(flat, r[CB_OUT], r[CB_STRIDE], w, h, drops[j], coded,
                                coded_off[j], sig, eline, ms, mel, vlc)
            if n < 0:
                return coded, coded_off, rates, rate_off, np.zeros(0), np.zeros(0, np.int64)
        coded_off[j + 1] = coded_off[j] + n
        rate_off[j + 1] = rate_off[j] + (1 if n > 0 else 0)
        if n > 0:
            rates[rate_off[j]] = n
            num_bps[j] = drops[j] + 1
    return (coded[:coded_off[nb]].copy(), coded_off, rates[:rate_off[nb]].copy(), rate_off,
            np.zeros(rate_off[nb]), num_bps)


#: Most planes :func:`ht_plane_figures` (and its GPU twin) may drop: up to it every figure is
#: an exact int64 sum that float64 holds exactly (see there).
FIGURES_DMAX = 20
#: Most quads a code-block may have for the figures: a legal block's nominal sizes are powers
#: of two from 4 to 1024 whose product is at most 4096 (T.800 A.6.1), so it has at most 1024
#: quads (the GPU twin keeps each quad's largest magnitude in 4 KiB of shared memory a warp).
FIGURES_QUADS = 1024
#: Magnitudes from here up keep mu > 0 at every plane the figures may drop (d <= FIGURES_DMAX)
FIGURES_LARGE = 1 << (FIGURES_DMAX + 1)


@njit(**JIT)
def _exponents(a):
    """(B, L) of a magnitude a > 0 such that for d < B the exponent of a >> d,
    bitlen(2 (a >> d) - 1), is B - d + (d < L): B = bitlen(a), and L the bit length of a
    below its top bit (a >> d is a power of two, one bit shorter, from d >= L on)."""
    top = _bitlen(a)
    return top, _bitlen(a ^ (1 << (top - 1)))


@njit(inline='always', **JIT)
def _quad_terms(a0, a1, a2, a3, amax, left, above, dmax, terms, k, tail8):
    """One quad's share of :func:`ht_plane_figures`' bits: ``a0..a3`` its magnitudes (0
    outside the block), ``amax`` their largest, ``left`` the largest of the quad to its
    left and ``above`` of the three above it (0 where there is none, as on the block's first
    line-pair).  What the planes where it has a significant sample cost depends on the bit
    lengths of a0..a3, (B, L) of amax and of above (:func:`_exponents`): these go into
    column k of ``terms`` (rows b0, b1, b2, b3, B, L, Ba, La) for :func:`_planes_bits8`.
    From its first empty plane B up its cost goes into tail8 as steps (tail8[e] - tail8[e - 1]
    is added at every plane >= e): a CxtVLC symbol (4/8) while a neighbour is significant,
    then MEL (2/8)."""
    b0, b1, b2, b3 = _bitlen(a0), _bitlen(a1), _bitlen(a2), _bitlen(a3)
    top = max(max(b0, b1), max(b2, b3))          # bitlen(amax): planes < top keep a sample
    low = 0 if amax == 0 else _bitlen(amax ^ (1 << (top - 1)))   # as _exponents
    atop, alow = (0, 0) if above == 0 else _exponents(above)
    terms[0, k] = b0
    terms[1, k] = b1
    terms[2, k] = b2
    terms[3, k] = b3
    terms[4, k] = top
    terms[5, k] = low
    terms[6, k] = atop
    terms[7, k] = alow
    if top <= dmax:
        ctx = _bitlen(left | above)
        tail8[top] += 2
        if ctx > top:
            tail8[top] += 2
            if ctx <= dmax:
                tail8[ctx] -= 2


@njit(**JIT)
def _planes_bits8(terms, nq, planes, bits8):
    """Add to bits8[d], d < planes, the eighths of bits of the quads 0..nq-1 of ``terms``
    (:func:`_quad_terms`) that have a significant sample at plane d (d < B), plane by plane
    over the quads (a loop without branches, which the compiler vectorises): with n their
    samples with mu > 0 and U = B - d + (d < L) their exponent (7.3.7), 8 (n (U - 1) + 7)
    (MagSgn less the EMB bits, the CxtVLC codeword) and 8 (bitlen(U - kappa) + 1) where
    U > kappa (the U-VLC of u_q, 7.3.6), kappa = max(1, Ba - d + (d < La) - 1) where n > 1
    and d < Ba, else 1.  For int32 indices (B <= 32) U - kappa is at most 31, and its bit
    length a sum of comparisons (up to 63)."""
    b0, b1, b2, b3 = terms[0], terms[1], terms[2], terms[3]
    tq, lq, ta, la = terms[4], terms[5], terms[6], terms[7]
    for d64 in range(planes):
        d = np.int32(d64)
        acc = np.int64(0)
        for k in range(nq):
            n = (np.int32(b0[k] > d) + np.int32(b1[k] > d) + np.int32(b2[k] > d)
                 + np.int32(b3[k] > d))
            big = tq[k] - d + np.int32(d < lq[k])
            kap = ta[k] - d + np.int32(d < la[k]) - np.int32(1)
            kappa = kap if (n > 1) & (d < ta[k]) & (kap > 1) else np.int32(1)
            u = big - kappa
            ulen = (np.int32(u > 0) + np.int32(u > 1) + np.int32(u > 3) + np.int32(u > 7)
                    + np.int32(u > 15) + np.int32(u > 31))
            c = np.int32(8) * (n * (big - np.int32(1)) + np.int32(7)) \
                + (np.int32(8) * (ulen + np.int32(1)) if u > 0 else np.int32(0))
            acc += c if d < tq[k] else np.int32(0)
        bits8[d64] += acc


@njit(cache=True, nogil=True)
def ht_plane_figures(flat, cb, rows, dmax):
    """Per block cb[rows] and per dropped plane count d = 0..dmax: the squared error of the
    block's indices reconstructed at the midpoint of what a cleanup at plane d keeps
    ((mu + 1/2) 2^d, 0 when mu = 0), in index units squared; and an estimate of its coded
    bits.  Returns (dist, bits), (len(rows), dmax + 1) float64 each; rate control scales the
    estimate by what the encoder then measures.

    The estimate follows the cleanup pass's quads (T.814 7.3: 2 x 2 samples, rows 2 qy and
    2 qy + 1, columns 2 qx and 2 qx + 1, those inside the block), with a the magnitudes,
    mu = a >> d, A the largest a of a quad, n its samples with mu > 0 and U = bitlen(2 (A >> d)
    - 1) its largest exponent E (7.3.7).  A quad with n > 0 costs n (U - 1) + 7 bits (MagSgn
    less an EMB bit a sample, and the CxtVLC codeword), plus bitlen(u) + 1 where u = U - kappa
    > 0 (its U-VLC, 7.3.6), kappa = max(1, bitlen(2 (T >> d) - 1) - 1) when n > 1 and
    T >> d > 0, else 1; T the largest A of the (up to) three quads above (0 on the first
    line-pair).  An empty quad costs half a bit where the quad to its left or one above has
    A >> d > 0 (a CxtVLC symbol), else a quarter (a MEL symbol).  A block with no mu > 0
    costs nothing.  The weights were fitted to coded segment lengths: on three 4K frames (the
    benchmarks' synthetic one, 1/f noise, a decoded IMF frame) the median error per block and
    plane is 2 % and the 90th percentile 9 %, against 13 % and 70 % for the estimate before
    (2 + E bits a significant sample, even without its w h / 8 a block), whose error also
    changed with d.

    Integers throughout, so any summation order gives the same figures (the GPU twin,
    ``cuda/ht_figures.cu``, sums a warp's lanes): with mu = a >> d > 0 the error is
    a - (mu + 1/2) 2^d = r - 2^(d-1), r = a mod 2^d, so four times the squared error is
    (2r - 2^d)^2 <= 2^(2d); with mu = 0 it is 4 a^2 < 2^(2d+2).  Over a legal block (at most
    4096 samples) 4 dist < 2^(2d+14) <= 2^54 for d <= FIGURES_DMAX = 20, a multiple of 4 for
    d >= 1 (at most 4096 for d = 0): no int64 overflow, and its float64 value and the quarter
    of it are exact.  The bits are summed in eighths, below 2^21 a block.  ValueError for dmax
    outside 0..FIGURES_DMAX or a block of more than FIGURES_QUADS quads."""
    if dmax < 0 or dmax > FIGURES_DMAX:
        raise ValueError("ht_plane_figures: dmax must be 0..20")
    nb = rows.shape[0]
    dist = np.zeros((nb, dmax + 1))
    bits = np.zeros((nb, dmax + 1))
    err4 = np.zeros(dmax + 1, np.int64)   # 4 x the squared error at each plane
    bits8 = np.zeros(dmax + 1, np.int64)  # estimated bits in eighths
    tail8 = np.zeros(dmax + 1, np.int64)  # the empty quads' eighths, as steps over d
    lines = np.zeros((2, FIGURES_QUADS + 2), np.int64)  # quads' A at qx + 1, 0 at the ends
    mag = np.zeros(4 * FIGURES_QUADS, np.int64)        # the block's magnitudes, raster order
    terms = np.zeros((8, FIGURES_QUADS), np.int32)     # the block's quads' terms, raster order
    for j in range(nb):
        r = cb[rows[j]]
        w, h, off, stride = r[CB_WIDTH], r[CB_HEIGHT], r[CB_OUT], r[CB_STRIDE]
        if ((w + 1) >> 1) * ((h + 1) >> 1) > FIGURES_QUADS:
            raise ValueError("ht_plane_figures: a code-block has more than 1024 quads")
        bits8[:] = 0
        tail8[:] = 0
        top = np.int64(0)
        sum4 = np.int64(0)    # 4 a^2 of every sample: what each plane from bitlen(top) up sees
        n = 0
        for y in range(h):
            for x in range(w):
                q = np.int64(flat[off + y * stride + x])
                a = -q if q < 0 else q
                mag[n] = a
                n += 1
                top = max(top, a)
                if a < FIGURES_LARGE:  # a larger one leaves no plane to use sum4 for
                    sum4 += 4 * a * a
        # plane by plane over the block (a loop the compiler vectorises): (2r - 2^d)^2 where
        # mu > 0, 4 a^2 where mu = 0; from the block's bit length up every mu is 0
        planes = min(_bitlen(top), dmax + 1)
        for d in range(planes):
            half = np.int64(1) << d
            e = np.int64(0)
            for i in range(n):
                a = mag[i]
                t = 2 * (a & (half - 1)) - half
                e += t * t if (a >> d) > 0 else 4 * a * a
            err4[d] = e
        err4[planes:] = sum4
        qw = (w + 1) >> 1
        lines[:, :qw + 2] = 0
        nq = 0
        for qy in range((h + 1) >> 1):
            y = 2 * qy
            cur = lines[qy & 1]
            prev = lines[1 - (qy & 1)]
            for qx in range(qw):
                x = 2 * qx
                at = off + y * stride + x       # (from mag instead: slower here)
                a0 = abs(np.int64(flat[at]))
                a1 = abs(np.int64(flat[at + 1])) if x + 1 < w else np.int64(0)
                a2 = abs(np.int64(flat[at + stride])) if y + 1 < h else np.int64(0)
                a3 = abs(np.int64(flat[at + stride + 1])) if x + 1 < w and y + 1 < h \
                    else np.int64(0)
                amax = max(max(a0, a1), max(a2, a3))
                cur[qx + 1] = amax
                above = max(max(prev[qx], prev[qx + 1]), prev[qx + 2])
                _quad_terms(a0, a1, a2, a3, amax, cur[qx], above, dmax, terms, nq, tail8)
                nq += 1
        _planes_bits8(terms, nq, planes, bits8)
        empty = np.int64(0)
        for d in range(dmax + 1):
            empty += tail8[d]
            dist[j, d] = err4[d] * 0.25
            bits[j, d] = (bits8[d] + empty) / 8.0 if (top >> d) > 0 else 0.0
    return dist, bits
