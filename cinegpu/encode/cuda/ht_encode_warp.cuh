/* HT cleanup-pass block ENCODING, one warp per code-block (ITU-T T.814 clause 7), included by
 * ht_encode.cu: kernel ht_enc_blocks_warp, the same bytes and lengths as ht_enc_blocks (and
 * so as the numba encoder encode/tier1/ht.py ht_encode_block) for blocks of at most
 * HTW_MAX_W x HTW_MAX_H samples; larger ones are left to ht_enc_blocks (the launcher splits
 * the rows, encode/tier1/ht_gpu_plan.py split_rows).
 *
 * The encoder knows every sample, so everything but the three streams' bit-stuffing is
 * computed for whole quad rows at once.  A step takes 32 >> rsh quad rows, 1 << rsh >= qw
 * lanes a row (lane r << rsh | q codes quad q of the step's row r): one row of a 64-wide
 * block, two of a 32-wide one, 32 of a 1- or 2-wide one.  Per step:
 *
 *   A  the quad's samples, significance rho, v_n = 2 (mu_n - 1) + sign and E_n (7.3.5), and
 *      the exponents of its lower line (E' of the next row's kappa), into the warp's shared
 *      row tables;
 *   B  its context c_q from the rho of the quad to the left and of the three quads above
 *      (7.3.5: on the first line-pair from the left quad alone), kappa, U_q, u_q and eps, the
 *      CxtVLC codeword and e_k (7.3.4, VLC_ENC_0/1), and its MagSgn bits (7.3.2 / 7.3.7:
 *      U_q - e_k bits of each significant v_n, LSB first) as two words of at most 64 bits;
 *   C  the lane of each quad pair's first quad joins the pair's VLC bits (both codewords,
 *      then the U-VLC of 7.3.6 / Table 3: prefixes, suffixes, extensions, or the first
 *      line-pair's forms after its MEL symbol) into one word of at most 38 bits, and lists
 *      the pair's MEL symbols (7.3.3: c_q = 0 quads, then the first line-pair's u_off pair);
 *   D  MagSgn and VLC by all lanes (htw_magsgn_row, htw_vlc_step): each quad's MagSgn bits
 *      and each pair's VLC word go into a shared bit buffer at the prefix sum of the counts
 *      (a shuffle scan over the lanes, row-major: the stream's order), behind the bits still pending from the step before;
 *      lanes cut 32 bytes a round, each as if no stuffing came before it, and the bytes up to
 *      the first stuffed one stand: in MagSgn the byte after a 0xFF carries 7 bits (7.3.2),
 *      in VLC a byte after one above 0x8F whose low 7 bits are all 1 is 0x7F with a stuffed
 *      0 MSB (7.3.4).  A round costs one to three ballots and the output is ms_put's and
 *      vlc_put's, byte for byte;
 *   E  the pairs' MEL symbols are laid behind each other (a shuffle scan of their counts)
 *      in one word, and lane 0 codes them (htw_mel_symbols: what mel_encode of ht_encode.cu
 *      does symbol by symbol, a run of zeros at once; MEL's run-length state makes every
 *      symbol depend on all before it).
 *   Joining words is exact: writing (a, m) then (b, n) is writing a | b << m in m + n bits
 *   for these writers (each holds its state per bit).
 *
 * MagSgn goes straight into the block's output region (it opens the segment, 7.1); MEL and
 * VLC are built in the warp's shared memory and copied behind it by all lanes (the paper's
 * KVCPY), VLC reversed; lane 0 then writes Scup into the last two bytes.  Steps are separated
 * by __syncwarp, the row tables double-buffered by step; a step costs four __syncwarp, three
 * shuffle scans and the rounds' ballots (one a round of 32 MagSgn bytes or a 0xFF among them,
 * three a round of 32 VLC bytes or a stuffed one).
 *
 * Shared memory: HTW_SHARED_BYTES a warp (MEL and VLC buffers of ht_encode.cu's sizes and the
 * row tables), HTW_WARPS warps a CUDA block.  Launch exactly HTW_THREADS threads a block;
 * warp q of the grid codes j = q, q + warps, ... < nblk, arguments as ht_enc_blocks without
 * the scratch.  Legal blocks cannot reach Scup > 4079 (see ht_encode.cu), so the
 * HT_TOO_LONG path is only for completeness: there MagSgn bytes may remain in the region.
 */

#define HTW_WARPS 4                   /* warps per CUDA block */
#define HTW_THREADS (32 * HTW_WARPS)  /* threads per CUDA block: launch exactly this */
#define HTW_MAX_W 64                  /* widest block: one lane a quad of a row */
#define HTW_MAX_H 64
#define HTW_FULL 0xFFFFFFFFu
#define HTW_VLC_WORDS 42              /* 7 carried + 32 pairs x 38 bits, words + slack */
#define HTW_MS_WORDS 132              /* 7 carried + 32 quads x 128 bits, 32-bit words + slack */

typedef unsigned long long u64;

/* One warp's shared memory */
typedef struct {
    u8 mel[HTE_MEL_BYTES];            /* MEL bytes */
    u8 vlc[HTE_VLC_BYTES];            /* VLC bytes in reading order; [0]: the Scup byte */
    u8 rho[2][32];                    /* per lane, of the steps of parity 0 / 1 */
    u8 elo[2][64];                    /* bitlen(v) of their lower lines, two a lane */
    unsigned int ms_bits[HTW_MS_WORDS]; /* D: the step's MagSgn bits behind the carry */
    int quad[32];                     /* B: u | cw << 8 | cw length << 16 | coded << 20
                                          | mel << 21 | mel symbol << 22 */
    unsigned int vlc_bits[HTW_VLC_WORDS]; /* D: the step's VLC bits behind the carry */
    unsigned int mel_sym[2];          /* C: the step's MEL symbols in order, LSB first */
    int result[4];                    /* lane 0's totals: MagSgn, MEL, VLC bytes, status */
} HtwShared;

#define HTW_SHARED_BYTES ((int)sizeof(HtwShared))

/* Append val's low m bits to the word (*acc, *n), LSB first */
HTE_DEV void htw_append(u64* acc, int* n, u64 val, int m)
{
    if (m > 0) {
        *acc |= (val & ((m < 64 ? ((u64)1 << m) : 0) - 1)) << *n;
        *n += m;
    }
}

/* Steps A and B for this lane's quad of a step (7.3.5, 7.3.4, 7.3.2): quad q of row
 * qy0 + r, where the lane is r << rsh | q (a step codes 32 >> rsh quad rows of 1 << rsh >= qw
 * lanes each, the row tables' half `half`; the row above a step's first row is the last of
 * the step before, in the other half).  Returns its rho, its MagSgn words and their lengths
 * in msw[2], msl[2]; a lane outside the block (q >= qw or its row >= qh) codes nothing. */
HTE_DEV int htw_quad(HtwShared* s, const int* src, i64 off, i64 stride, int w, int h, int p,
                     int qy0, int half, int rsh, int qw, int qh, int lane, const int* vlc0,
                     const int* vlc1, u64* msw, int* msl)
{
    int qwp = 1 << rsh, r = lane >> rsh, q = lane & (qwp - 1);
    int qy = qy0 + r;
    int act = q < qw && qy < qh;
    int y0 = 2 * qy, x0 = 2 * q;
    int initial = qy == 0;
    u64 v[4];
    int rho = 0, emax = 0, es = 0;
    for (int n = 0; n < 4; n++) {
        int x = x0 + (n >> 1), y = y0 + (n & 1);
        v[n] = 0;
        if (act && x < w && y < h) {
            i64 val = src[off + (i64)y * stride + x];
            i64 mag = (val < 0 ? -val : val) >> p;
            if (mag) {
                v[n] = (u64)(2 * (mag - 1) + (val < 0 ? 1 : 0));
                rho |= 1 << n;
                int e = hte_bitlen((i64)(v[n] | 1));
                emax = hte_max(emax, e);
                es |= e << (8 * n);
            }
        }
    }
    s->rho[half][lane] = (u8)rho;
    s->elo[half][2 * lane] = (u8)hte_bitlen((i64)v[1]);
    s->elo[half][2 * lane + 1] = (u8)hte_bitlen((i64)v[3]);
    __syncwarp();
    int left = q > 0 ? s->rho[half][lane - 1] : 0;
    int c, kappa = 1;
    if (initial) {
        c = (left & 1) | ((left >> 1) & 1) | ((left >> 1) & 6);
    } else {
        /* the quads above, and columns x0 - 1 .. x0 + 2 of the lower line above */
        int ai = r > 0 ? lane - qwp : (((32 >> rsh) - 1) << rsh) | q;
        const u8* up = s->rho[r > 0 ? half : half ^ 1];
        const u8* el = s->elo[r > 0 ? half : half ^ 1];
        int ul = q > 0 ? up[ai - 1] : 0, ur = q + 1 < qwp ? up[ai + 1] : 0;
        int u0 = up[ai];
        c = (((ul >> 3) & 1) | ((u0 >> 1) & 1)) | ((((left >> 2) & 1) | ((left >> 3) & 1)) << 1)
            | ((((u0 >> 3) & 1) | ((ur >> 1) & 1)) << 2);
        if (rho & (rho - 1)) {
            int em = hte_max(hte_max(q > 0 ? el[2 * ai - 1] : 0, el[2 * ai]),
                             hte_max(el[2 * ai + 1], q + 1 < qwp ? el[2 * ai + 2] : 0));
            kappa = hte_max(em - 1, 1);
        }
    }
    int u;
    int eps = hte_emb_bits(es, emax, kappa, &u);
    int big_u = u + kappa;
    int cw = 0, cwl = 0, coded = 0, ek = 0;
    if (act && (rho || c)) {
        int entry = (initial ? vlc0 : vlc1)[(c << 8) | (rho << 4) | eps];
        cw = entry & 0x7F;
        cwl = (entry >> 8) & 0xF;
        ek = (entry >> 12) & 0xF;
        coded = 1;
    }
    for (int k = 0; k < 2; k++) {
        u64 acc = 0;
        int nb = 0;
        for (int n = 2 * k; n < 2 * k + 2; n++)
            if ((rho >> n) & 1)
                htw_append(&acc, &nb, v[n], big_u - ((ek >> n) & 1));
        msw[k] = acc;
        msl[k] = nb;
    }
    s->quad[lane] = u | (cw << 8) | (cwl << 16) | (coded << 20) | ((act && c == 0) << 21)
                    | ((rho != 0) << 22);
    return rho;
}

/* Step C for the pair of quads lane, lane + 1 (the first of a pair in its row; the second
 * absent when !has2): its VLC word and length (7.3.4, 7.3.6) into *vbits, *vlen; returns its
 * MEL symbols (7.3.3) as their count (0 to 3) | their bits << 2 (the first the lowest) */
HTE_DEV int htw_pair(HtwShared* s, int lane, int has2, int initial, u64* vbits, int* vlen)
{
    int q1 = s->quad[lane], q2 = has2 ? s->quad[lane + 1] : 0;
    u64 acc = 0;
    int n = 0, mel = 0, nmel = 0;
    if ((q1 >> 21) & 1)
        mel |= ((q1 >> 22) & 1) << nmel++;
    if ((q1 >> 20) & 1)
        htw_append(&acc, &n, (q1 >> 8) & 0x7F, (q1 >> 16) & 0xF);
    if ((q2 >> 21) & 1)
        mel |= ((q2 >> 22) & 1) << nmel++;
    if ((q2 >> 20) & 1)
        htw_append(&acc, &n, (q2 >> 8) & 0x7F, (q2 >> 16) & 0xF);
    int u1 = q1 & 0xFF, u2 = q2 & 0xFF;
    if (u1 > 0 && u2 > 0) {
        int mel_sym = 0;
        if (initial) {
            mel_sym = (u1 > 2 && u2 > 2) ? 1 : 0;
            mel |= mel_sym << nmel++;
        }
        int a1 = u1 - 2 * mel_sym, a2 = u2 - 2 * mel_sym;
        Uvlc p1 = uvlc_parts(a1);
        if (initial && mel_sym == 0 && a1 > 2) {
            htw_append(&acc, &n, p1.pre, p1.lpre);
            htw_append(&acc, &n, a2 - 1, 1);
            htw_append(&acc, &n, p1.suf, p1.lsuf);
        } else {
            Uvlc p2 = uvlc_parts(a2);
            htw_append(&acc, &n, p1.pre, p1.lpre);
            htw_append(&acc, &n, p2.pre, p2.lpre);
            htw_append(&acc, &n, p1.suf & 31, hte_min(p1.lsuf, 5));
            htw_append(&acc, &n, p2.suf & 31, hte_min(p2.lsuf, 5));
            htw_append(&acc, &n, p1.suf >> 5, hte_max(p1.lsuf - 5, 0));
            htw_append(&acc, &n, p2.suf >> 5, hte_max(p2.lsuf - 5, 0));
        }
    } else if (u1 > 0 || u2 > 0) {
        Uvlc pp = uvlc_parts(u1 > 0 ? u1 : u2);
        htw_append(&acc, &n, pp.pre, pp.lpre);
        htw_append(&acc, &n, pp.suf, pp.lsuf);
    }
    *vbits = acc;
    *vlen = n;
    return nmel | (mel << 2);
}

/* Step E: the n MEL symbols of a step (sym, LSB first; n <= 64), as n calls of mel_encode
 * of ht_encode.cu would code them, by one lane: a run of zeros at once (the run grows, a 1
 * for each full run of 2^E[k]), then a one (a 0 and the run in E[k] bits).  epack holds
 * E[k] (T.814 Table 2) in bits 4k..4k + 3. */
HTE_DEV void htw_mel_symbols(MelWriter* s, u64 sym, int n, u64 epack)
{
    int pos = 0;
    while (pos < n) {
        u64 rest = sym >> pos;
        int z = rest ? hte_min(__ffsll((long long)rest) - 1, n - pos) : n - pos;
        pos += z;
        while (z > 0) {
            int need = (1 << (int)((epack >> (4 * s->k)) & 15)) - s->run;
            if (z < need) {
                s->run += z;
                break;
            }
            z -= need;
            mel_put(s, 1);
            s->run = 0;
            s->k = hte_min(s->k + 1, 12);
        }
        if (pos < n) {
            int e = (int)((epack >> (4 * s->k)) & 15);
            mel_put(s, 0);
            for (int i = e - 1; i >= 0; i--)
                mel_put(s, (s->run >> i) & 1);
            s->run = 0;
            s->k = hte_max(s->k - 1, 0);
            pos++;
        }
    }
}

/* Exclusive prefix sum of n over the warp's lanes (a shuffle scan; every lane calls it):
 * the sum of lanes below this one, and the warp's total in *total */
HTE_DEV int htw_scan(int n, int lane, int* total)
{
    int incl = n;
    for (int k = 1; k < 32; k <<= 1) {
        int o = __shfl_up_sync(HTW_FULL, incl, k);
        if (lane >= k)
            incl += o;
    }
    *total = __shfl_sync(HTW_FULL, incl, 31);
    return incl - n;
}

/* OR the low n bits of val into the row's bit buffer at bit `at` (lanes' ranges are
 * disjoint but may share a word: atomic) */
HTE_DEV void htw_or_bits(unsigned int* buf, int at, u64 val, int n)
{
    while (n > 0) {
        int sh = at & 31, take = hte_min(32 - sh, n);
        atomicOr(&buf[at >> 5], (unsigned int)(val & (((u64)1 << take) - 1)) << sh);
        val >>= take;
        at += take;
        n -= take;
    }
}

/* Bits [at, at + n) of the row's bit buffer (n <= 8) */
HTE_DEV int htw_get_bits(const unsigned int* buf, int at, int n)
{
    u64 two = (u64)buf[at >> 5] | ((u64)buf[(at >> 5) + 1] << 32);
    return (int)((two >> (at & 31)) & ((1u << n) - 1));
}

/* Step D, MagSgn of a step's quad rows by all lanes (7.3.2; ms_put's bytes exactly).  The
 * writer's state (bytes written, the byte being filled: its bits and how many, its
 * capacity, 7 after a 0xFF) is *ms, the same in every lane.  The pending bits and the step's
 * (each quad's two words, at its prefix sum of the quads' counts) go into the shared bit
 * buffer; then, 32 bytes a round, lane k takes byte k as if no 0xFF came before it (the first
 * of the round `cap` bits, the others 8); the bytes up to and including the first 0xFF among
 * them are right, are written, and the next round starts behind it with capacity 7.  What is
 * left (fewer bits than the capacity) becomes the byte being filled. */
HTE_DEV void htw_magsgn_row(HtwShared* s, int lane, const u64* msw, const int* msl, u8* out,
                            MsWriter* ms)
{
    int total;
    int before = htw_scan(msl[0] + msl[1], lane, &total);
    int at = ms->used + before;
    htw_or_bits(s->ms_bits, at, msw[0], msl[0]);
    htw_or_bits(s->ms_bits, at + msl[0], msw[1], msl[1]);
    if (lane == 0)
        htw_or_bits(s->ms_bits, 0, (u64)ms->tmp, ms->used);
    __syncwarp();
    int end = ms->used + total, start = 0, cap = ms->cap;
    for (;;) {
        int nvalid = end - start < cap ? 0 : hte_min(32, 1 + (end - start - cap) / 8);
        if (nvalid == 0)
            break;
        int first = lane == 0 ? start : start + cap + 8 * (lane - 1);
        int width = lane == 0 ? cap : 8;
        int byte = lane < nvalid ? htw_get_bits(s->ms_bits, first, width) : 0;
        unsigned int ff = __ballot_sync(HTW_FULL, lane < nvalid && byte == 0xFF);
        int m = ff ? __ffs(ff) : nvalid;  /* bytes of this round that stand */
        if (lane < m)
            out[ms->pos + lane] = (u8)byte;
        start += cap + 8 * (m - 1);
        ms->pos += m;
        cap = ff ? 7 : 8;
        if (!ff && nvalid < 32)
            break;
    }
    ms->used = end - start;
    ms->tmp = ms->used ? htw_get_bits(s->ms_bits, start, ms->used) : 0;
    ms->cap = cap;
}

/* Step D for VLC (7.3.4; vlc_put's bytes exactly), by all lanes after htw_magsgn_row: the
 * pending bits and the step's pairs' words (the pair of lane l at the prefix sum of the
 * lanes' vlen) go into the VLC bit buffer; then, 32 bytes a
 * round, lane k takes 8 bits at 8k as if no byte so far were short.  A byte is short (7
 * bits, its stuffed MSB 0: the value 0x7F) where the byte before is above 0x8F and its own
 * low 7 bits are all 1; the bytes up to and including the first short one stand, or up to
 * the first without its bits.  *v (the same in every lane) holds the bytes written (into
 * v->buf), the bits pending and whether the last byte was above 0x8F. */
HTE_DEV void htw_vlc_step(HtwShared* s, int lane, u64 vbits, int vlen, VlcWriter* v)
{
    int total;
    int before = htw_scan(vlen, lane, &total);
    htw_or_bits(s->vlc_bits, v->used + before, vbits, vlen);
    if (lane == 0)
        htw_or_bits(s->vlc_bits, 0, (u64)v->tmp, v->used);
    __syncwarp();
    int end = v->used + total, start = 0, gt = v->gt8f;
    for (;;) {
        int at = start + 8 * lane;
        int byte = at + 7 <= end ? htw_get_bits(s->vlc_bits, at, hte_min(8, end - at)) : 0;
        unsigned int above = __ballot_sync(HTW_FULL, byte > 0x8F);
        int prev_above = lane == 0 ? gt : (above >> (lane - 1)) & 1;
        int is_short = at + 7 <= end && prev_above && (byte & 0x7F) == 0x7F;
        int whole = at + 8 <= end;
        unsigned int shorts = __ballot_sync(HTW_FULL, is_short);
        unsigned int missing = __ballot_sync(HTW_FULL, !whole && !is_short);
        int fs = shorts ? __ffs(shorts) - 1 : 32, fm = missing ? __ffs(missing) - 1 : 32;
        int m = fs < fm ? fs + 1 : fm;  /* bytes of this round that stand */
        if (lane < m)
            v->buf[v->pos + lane] = (u8)(lane == fs ? 0x7F : byte);
        v->pos += m;
        if (fs < fm) {                  /* a short byte ends the round: 7 bits, 0x7F */
            start += 8 * fs + 7;
            gt = 0;
            continue;
        }
        if (m > 0) {
            start += 8 * m;
            gt = (above >> (m - 1)) & 1;
        }
        if (m < 32)
            break;
    }
    v->used = end - start;
    v->tmp = v->used ? htw_get_bits(s->vlc_bits, start, v->used) : 0;
    v->gt8f = gt;
}

/* The cleanup segment of one block by the whole warp (all lanes call it with the same
 * arguments): Lcup (bytes), 0 (nothing significant) or HT_TOO_LONG, in every lane.  Audited
 * hot kernel: the step loop and lane 0's writers belong together. */
HTE_DEV i64 htw_encode_block(HtwShared* s, const int* src, i64 off, i64 stride, int w, int h,
                             int p, u8* out, const int* vlc0, const int* vlc1, u64 epack,
                             int lane)
{
    int qw = (w + 1) >> 1, qh = (h + 1) >> 1;
    MsWriter ms = {out, 0, 0, 0, 8};          /* every lane's copy of the same state */
    MelWriter mel = {s->mel, 0, 0, 8, 0, 0};  /* lane 0's */
    VlcWriter vlc = {s->vlc, 1, 0xF, 4, 1};   /* every lane's copy; vlc[0]: the Scup byte */
    int any_sig = 0;
    int rsh = 0;
    while ((1 << rsh) < qw)
        rsh++;
    int qwp = 1 << rsh, rows = 32 >> rsh;  /* lanes a row, rows a step */
    for (int qy0 = 0, step = 0; qy0 < qh; qy0 += rows, step++) {
        u64 msw[2];
        int msl[2];
        int rho = htw_quad(s, src, off, stride, w, h, p, qy0, step & 1, rsh, qw, qh, lane,
                           vlc0, vlc1, msw, msl);
        any_sig |= rho;
        for (int k = lane; k < HTW_MS_WORDS; k += 32)
            s->ms_bits[k] = 0;
        for (int k = lane; k < HTW_VLC_WORDS; k += 32)
            s->vlc_bits[k] = 0;
        if (lane < 2)
            s->mel_sym[lane] = 0;
        __syncwarp();
        int q = lane & (qwp - 1), qy = qy0 + (lane >> rsh);
        u64 vbits = 0;
        int vlen = 0, pm = 0;
        if (!(q & 1) && q < qw && qy < qh)
            pm = htw_pair(s, lane, q + 1 < qw, qy == 0, &vbits, &vlen);
        /* the pairs' MEL symbols behind each other in stream order (row-major: by lane); at
         * most 48 a step: 3 a pair of 16, or 1 a lone quad of 32 (a block 1 or 2 wide) */
        int nmel = pm & 3, nsym;
        int sym_at = htw_scan(nmel, lane, &nsym);
        if (nmel)
            htw_or_bits(s->mel_sym, sym_at, (u64)(pm >> 2), nmel);
        htw_magsgn_row(s, lane, msw, msl, out, &ms);  /* its first __syncwarp orders C */
        htw_vlc_step(s, lane, vbits, vlen, &vlc);
        if (lane == 0 && nsym)
            htw_mel_symbols(&mel, (u64)s->mel_sym[0] | ((u64)s->mel_sym[1] << 32), nsym,
                            epack);
        /* the next step's first __syncwarp (in htw_quad) orders lane 0's reads and the last
         * reads of the bit buffer before they are written again; the row tables alternate
         * by step */
    }
    any_sig = __ballot_sync(HTW_FULL, any_sig != 0) != 0;
    if (!any_sig)
        return 0;
    __syncwarp();  /* the lanes' MagSgn bytes seen by lane 0 (ms_end reads the last one) */
    if (lane == 0) {
        int ms_len = ms_end(&ms);
        int mel_len = mel_end(&mel);
        if (vlc.used > 0)
            vlc.buf[vlc.pos++] = (u8)vlc.tmp;
        s->result[0] = ms_len;
        s->result[1] = mel_len;
        s->result[2] = vlc.pos;
        s->result[3] = mel_len + vlc.pos > MAX_SCUP;
    }
    __syncwarp();
    int ms_len = s->result[0], mel_len = s->result[1], vlc_len = s->result[2];
    int too_long = s->result[3];
    __syncwarp();  /* all have read: the next block may overwrite result */
    if (too_long)
        return HT_TOO_LONG;
    /* KVCPY: MEL, then VLC reversed, behind MagSgn; all lanes */
    for (int t = lane; t < mel_len; t += 32)
        out[ms_len + t] = s->mel[t];
    for (int t = lane; t < vlc_len; t += 32)
        out[ms_len + mel_len + t] = s->vlc[vlc_len - 1 - t];
    int o = ms_len + mel_len + vlc_len;
    int scup = mel_len + vlc_len;
    __syncwarp();
    if (lane == 0) {
        out[o - 1] = (u8)(scup >> 4);
        out[o - 2] = (u8)((out[o - 2] & 0xF0) | (scup & 0x0F));
    }
    return o;
}

/* Blocks cb[rows[j]] of at most HTW_MAX_W x HTW_MAX_H samples, one warp each; the launcher
 * keeps larger ones for ht_enc_blocks (a larger one here gets HT_TOO_LONG).  HTW_THREADS
 * threads a CUDA block. */
extern "C" __global__ void ht_enc_blocks_warp(const int* flat, const i64* cb, int ncols,
                                              int nblk, const i64* rows, const i64* drops,
                                              const i64* cap_off, u8* out, i64* lens,
                                              const int* vlc0, const int* vlc1,
                                              const int* mel_exp)
{
    HTE_SHARED HtwShared shared[HTW_WARPS];
    int lane = threadIdx.x & 31;
    HtwShared* s = &shared[threadIdx.x >> 5];
    int warps = gridDim.x * HTW_WARPS;
    u64 epack = 0;                    /* MEL's E[k] (13 states), 4 bits each */
    for (int k = 0; k < 13; k++)
        epack |= (u64)(mel_exp[k] & 15) << (4 * k);
    for (int j = blockIdx.x * HTW_WARPS + (threadIdx.x >> 5); j < nblk; j += warps) {
        const i64* r = cb + rows[j] * ncols;
        i64 w = r[CB_WIDTH], h = r[CB_HEIGHT], n = 0;
        if (w > HTW_MAX_W || h > HTW_MAX_H)
            n = HT_TOO_LONG;
        else if (w > 0 && h > 0)
            n = htw_encode_block(s, flat, r[CB_OUT], r[CB_STRIDE], (int)w, (int)h,
                                 (int)drops[j], out + cap_off[j], vlc0, vlc1, epack, lane);
        if (lane == 0)
            lens[j] = n;
    }
}
