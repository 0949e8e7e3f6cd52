/* HT block ENCODING on the GPU: the cleanup pass of ITU-T T.814 | ISO/IEC 15444-15, one CUDA
 * thread per code-block, at the bit-plane p the caller chose for it.
 *
 * A line-by-line twin of the numba encoder encode/tier1/ht.py (ht_encode_block, called by
 * ht_encode_rows): for every block the same cleanup segment, byte for byte, and the same
 * length, 0 when no sample is significant at p, HT_TOO_LONG (-1) when Scup would exceed 4079
 * or the block is not a legal code-block.  Read that module's docstring; in short:
 *
 *   7.3.5  per quad the significance rho, v_n = 2 (mu_n - 1) + sign, E_n = bitlen(v_n | 1),
 *          the context c_q (first line-pair: the quad to the left, else the line above),
 *          kappa from the exponents of the line above, U_q = max(E_max, kappa), u_q;
 *   7.3.3  MEL (adaptive run-length, exponents MEL_EXP by state) of c_q = 0 quads and, on the
 *          first line-pair, of pairs whose quads both have u_off;
 *   7.3.4 / 7.3.6  the CxtVLC codeword of (c_q, rho, u_off, eps) from VLC_ENC_0/1 and per
 *          quad pair the U-VLC of u_q (prefix, suffix, extension), written backward;
 *   7.3.2 / 7.3.7  MagSgn: U_q - e_k bits of each significant v_n, LSB first;
 *   7.1    the segment MagSgn | MEL | VLC reversed, Scup (bytes of MEL + VLC) in its last byte
 *          and the low nibble of the byte before.
 *
 * Kernel ht_enc_blocks: thread t (global index) takes j = t, t + threads, ... < nblk, codes
 * the block cb[rows[j]] (columns of decode/tier1/codeblock.py) of the flat int32 coefficients
 * at plane drops[j] into out + cap_off[j] (capacity area * 5 + 64 bytes, as ht_encode_rows
 * sizes it) and writes lens[j].  Its scratch (numba's make_ht_enc_scratch: sig, eline, ms,
 * mel, vlc) lies at scratch + t * scratch_pitch, scratch_pitch >= HTE_SCRATCH_BYTES and a
 * multiple of 4.  Tables in global memory, as the numpy arrays: VLC_ENC_0 / VLC_ENC_1
 * (int32, 2048 entries each, encode/tier1/ht_tables.py) and MEL_EXP (int32, 13 entries,
 * decode/tier1/ht_tables.py).  Integers only: no float, so --fmad does not matter.
 *
 * The warp-parallel kernel ht_enc_blocks_warp (one warp per code-block of at most 64 x 64
 * samples, the same bytes) lives in ht_encode_warp.cuh, included at the end.
 *
 * The file also compiles as plain C++ (HTE_HOST, ht_encode_host.cpp), so CI checks this code
 * against numba on machines without a GPU; the warp kernel only with HTE_HOST_WARP
 * (ht_encode_warp_host.cpp, whose lanes are host_warp.h's cooperative contexts).
 */

#ifndef HTE_HOST
#define HTE_DEV __device__ __forceinline__
#define HTE_CLZ64(x) __clzll((long long)(x))
#define HTE_SHARED __shared__
#endif

typedef long long i64;
typedef unsigned char u8;

/* Code-block table columns (decode/tier1/codeblock.py CB_*) */
#define CB_OUT 7
#define CB_WIDTH 8
#define CB_HEIGHT 9
#define CB_STRIDE 10

#define HT_TOO_LONG (-1)
#define MAX_SCUP 4079 /* T.814 7.1: 12 bits, the last byte below 0xFF */

/* Per-thread scratch, the sizes of encode/tier1/ht.py make_ht_enc_scratch (bytes) */
#define HTE_SIG_BYTES (4096 + 7 * 1024 + 16)   /* uint8, pitch w + 4, (h + 3) rows */
#define HTE_ELINE_BYTES (2 * (1024 + 4) * 4)   /* int32, two exponent lines of w + 4 */
#define HTE_MS_BYTES (4096 * 5 + 16)           /* MagSgn */
#define HTE_MEL_BYTES 2048                     /* MEL */
#define HTE_VLC_BYTES (4096 + 64)              /* VLC, in reading order; [0]: Scup */
#define HTE_ELINE_AT HTE_SIG_BYTES
#define HTE_MS_AT (HTE_ELINE_AT + HTE_ELINE_BYTES)
#define HTE_MEL_AT (HTE_MS_AT + HTE_MS_BYTES)
#define HTE_VLC_AT (HTE_MEL_AT + HTE_MEL_BYTES)
#define HTE_SCRATCH_BYTES 46208                /* HTE_VLC_AT + HTE_VLC_BYTES, 361 x 128 */

HTE_DEV int hte_min(int a, int b) { return a < b ? a : b; }
HTE_DEV int hte_max(int a, int b) { return a > b ? a : b; }

/* T.814 7.3.6: a quad's U_q = max(E_max, kappa) - kappa (*u), and the EMB bits epsilon (the
 * return): bit n set where sample n's exponent (byte n of es) equals max(E_max, kappa), for
 * U_q > 0 */
HTE_DEV int hte_emb_bits(int es, int emax, int kappa, int* u)
{
    int big_u = hte_max(emax, kappa);
    *u = big_u - kappa;
    int eps = 0;
    if (*u > 0)
        for (int n = 0; n < 4; n++)
            if (((es >> (8 * n)) & 0xFF) == big_u)
                eps |= 1 << n;
    return eps;
}

/* Bit length of v >= 0 (numba _bitlen) */
HTE_DEV int hte_bitlen(i64 v) { return v ? 64 - HTE_CLZ64(v) : 0; }

/* ------------------------------------------------------------------------- bit writers */

/* MagSgn (7.3.2): forward, LSB first, 7 bits in the byte after a 0xFF */
typedef struct { u8* buf; int pos; i64 tmp; int used; int cap; } MsWriter;

HTE_DEV void ms_put(MsWriter* s, i64 val, int m)
{
    while (m > 0) {
        int t = hte_min(s->cap - s->used, m);
        s->tmp |= (val & (((i64)1 << t) - 1)) << s->used;
        s->used += t;
        val >>= t;
        m -= t;
        if (s->used == s->cap) {
            s->buf[s->pos++] = (u8)s->tmp;
            s->cap = s->tmp == 0xFF ? 7 : 8;
            s->tmp = 0;
            s->used = 0;
        }
    }
}

/* Terminate MagSgn: pad with 1s; a last 0xFF is left to the decoder's fill.  Its length. */
HTE_DEV int ms_end(MsWriter* s)
{
    if (s->used > 0) {
        s->tmp |= (i64)(0xFF >> (8 - s->cap + s->used)) << s->used;
        if (s->tmp != 0xFF)
            s->buf[s->pos++] = (u8)s->tmp;
    } else if (s->pos > 0 && s->buf[s->pos - 1] == 0xFF) {
        s->pos -= 1;
    }
    return s->pos;
}

/* MEL (7.3.3): forward, MSB first, the same stuffing; k the state, run the zeros pending */
typedef struct { u8* buf; int pos; int tmp; int left; int k; int run; } MelWriter;

HTE_DEV void mel_put(MelWriter* s, int bit)
{
    s->tmp = (s->tmp << 1) | bit;
    s->left -= 1;
    if (s->left == 0) {
        s->buf[s->pos++] = (u8)s->tmp;
        s->left = s->tmp == 0xFF ? 7 : 8;
        s->tmp = 0;
    }
}

/* One MEL symbol: a run of 2^E[k] zeros is a 1; r zeros and a one are a 0 and r in E[k] bits */
HTE_DEV void mel_encode(MelWriter* s, int sym, const int* mel_exp)
{
    if (sym == 0) {
        s->run += 1;
        if (s->run == (1 << mel_exp[s->k])) {
            mel_put(s, 1);
            s->run = 0;
            s->k = hte_min(s->k + 1, 12);
        }
    } else {
        int e = mel_exp[s->k];
        mel_put(s, 0);
        for (int i = e - 1; i >= 0; i--)
            mel_put(s, (s->run >> i) & 1);
        s->run = 0;
        s->k = hte_max(s->k - 1, 0);
    }
}

/* Terminate MEL: a pending run as a full run, the last byte padded with 0s.  Its length. */
HTE_DEV int mel_end(MelWriter* s)
{
    if (s->run > 0)
        mel_put(s, 1);
    if (s->left < 8)
        s->buf[s->pos++] = (u8)(s->tmp << s->left);
    return s->pos;
}

/* VLC (7.3.4): in reading order (reversed into the segment), LSB first; after a byte above
 * 0x8F a byte whose low 7 bits are all 1 gets a stuffed 0 MSB */
typedef struct { u8* buf; int pos; i64 tmp; int used; int gt8f; } VlcWriter;

HTE_DEV void vlc_put(VlcWriter* s, i64 val, int m)
{
    while (m > 0) {
        int cap = s->gt8f ? 7 : 8;
        int t = hte_min(cap - s->used, m);
        s->tmp |= (val & (((i64)1 << t) - 1)) << s->used;
        s->used += t;
        val >>= t;
        m -= t;
        if (s->used == 7 && s->gt8f) {
            if (s->tmp == 0x7F)
                s->used = 8;  /* the stuffed 0 */
            else
                s->gt8f = 0;  /* the MSB carries data after all */
        }
        if (s->used == 8) {
            s->buf[s->pos++] = (u8)s->tmp;
            s->gt8f = s->tmp > 0x8F;
            s->tmp = 0;
            s->used = 0;
        }
    }
}

/* U-VLC of u >= 1 (T.814 Table 3): prefix code and length, suffix | extension << 5 and the
 * length of both */
typedef struct { int pre; int lpre; i64 suf; int lsuf; } Uvlc;

HTE_DEV Uvlc uvlc_parts(int u)
{
    Uvlc r;
    r.pre = 0;
    r.lpre = 3;
    if (u == 1) {
        r.pre = 1; r.lpre = 1; r.suf = 0; r.lsuf = 0;
    } else if (u == 2) {
        r.pre = 2; r.lpre = 2; r.suf = 0; r.lsuf = 0;
    } else if (u <= 4) {
        r.pre = 4; r.suf = u - 3; r.lsuf = 1;
    } else if (u <= 32) {
        r.suf = u - 5; r.lsuf = 5;
    } else {
        r.suf = (28 + ((u - 33) & 3)) | ((i64)((u - 33) >> 2) << 5); r.lsuf = 9;
    }
    return r;
}

/* The VLC context of the quad whose top-left sample is sig[i] (7.3.5; numba quad_context) */
HTE_DEV int quad_context(const u8* sig, int i, int fsg, int initial, int rho_w)
{
    if (initial)
        return (rho_w & 1) | ((rho_w >> 1) & 1) | ((rho_w >> 1) & 6);
    return (sig[i - fsg - 1] | sig[i - fsg]) | ((sig[i - 1] | sig[i + fsg - 1]) << 1)
        | ((sig[i - fsg + 1] | sig[i - fsg + 2]) << 2);
}

/* ------------------------------------------------------------------------- the block */

/* The cleanup segment of the w x h block src[off + y * stride + x] at plane p (0..62) into
 * out[0..), returning Lcup (bytes), 0 (nothing significant) or HT_TOO_LONG.  `scratch`:
 * HTE_SCRATCH_BYTES, 4-byte aligned.  Audited hot kernel, long as its numba twin: the three
 * writers live across the whole block. */
HTE_DEV i64 ht_encode_block(const int* src, i64 off, i64 stride, i64 w64, i64 h64, int p,
                            u8* out, u8* scratch, const int* vlc0, const int* vlc1,
                            const int* mel_exp)
{
    if (w64 > 1024 || h64 > 1024 || w64 * h64 > 4096)  /* not a legal code-block (T.800 A.6.1) */
        return HT_TOO_LONG;
    int w = (int)w64, h = (int)h64;
    u8* sig = scratch;
    int* eline = (int*)(scratch + HTE_ELINE_AT);
    int fsg = w + 4;
    for (int i = 0; i < (h + 3) * fsg; i++)
        sig[i] = 0;
    for (int i = 0; i < 2 * fsg; i++)
        eline[i] = 0;
    MsWriter ms = {scratch + HTE_MS_AT, 0, 0, 0, 8};
    MelWriter mel = {scratch + HTE_MEL_AT, 0, 0, 8, 0, 0};
    VlcWriter vlc = {scratch + HTE_VLC_AT, 1, 0xF, 4, 1};  /* vlc[0]: the Scup byte */
    int qw = (w + 1) >> 1, qh = (h + 1) >> 1;
    int row = w + 4;
    int any_sig = 0;
    i64 vq[8];  /* v of the pair's 8 samples */
    for (int qy = 0; qy < qh; qy++) {
        int y0 = 2 * qy;
        int initial = qy == 0;
        int ep = (qy & 1) * row;
        int ec = row - ep;
        int rho_w = 0;
        for (int qx = 0; qx < qw; qx += 2) {
            int nquads = qx + 1 < qw ? 2 : 1;
            int uq[2] = {0, 0}, bu[2] = {0, 0}, ekr[2] = {0, 0};
            for (int j = 0; j < nquads; j++) {
                int x0 = 2 * (qx + j);
                int rho = 0, emax = 0;
                int es = 0;  /* the four exponents, 8 bits each */
                for (int n = 0; n < 4; n++) {
                    int x = x0 + (n >> 1);
                    int y = y0 + (n & 1);
                    i64 v = 0;
                    int e = 0;
                    if (x < w && y < h) {
                        i64 q = src[off + (i64)y * stride + x];
                        i64 mag = (q < 0 ? -q : q) >> p;
                        if (mag) {
                            v = 2 * (mag - 1) + (q < 0 ? 1 : 0);
                            rho |= 1 << n;
                            e = hte_bitlen(v | 1);
                            emax = hte_max(emax, e);
                        }
                    }
                    vq[4 * j + n] = v;
                    es |= e << (8 * n);
                    if (n & 1)
                        eline[ec + x + 1] = hte_bitlen(v);
                }
                int i = (y0 + 1) * fsg + x0 + 1;
                int c = quad_context(sig, i, fsg, initial, rho_w);
                sig[i] = rho & 1;
                sig[i + fsg] = (rho >> 1) & 1;
                sig[i + 1] = (rho >> 2) & 1;
                sig[i + fsg + 1] = (rho >> 3) & 1;
                rho_w = rho;
                int kappa = 1;
                if (!initial && (rho & (rho - 1))) {
                    int em = hte_max(hte_max(eline[ep + x0], eline[ep + x0 + 1]),
                                     hte_max(eline[ep + x0 + 2], eline[ep + x0 + 3]));
                    kappa = hte_max(em - 1, 1);
                }
                int u;
                int eps = hte_emb_bits(es, emax, kappa, &u);
                int big_u = u + kappa;
                if (c == 0)
                    mel_encode(&mel, rho ? 1 : 0, mel_exp);
                int ek = 0;
                if (rho || c) {
                    int entry = (initial ? vlc0 : vlc1)[(c << 8) | (rho << 4) | eps];
                    vlc_put(&vlc, entry & 0x7F, (entry >> 8) & 0xF);
                    ek = (entry >> 12) & 0xF;
                }
                if (rho)
                    any_sig = 1;
                uq[j] = u;
                bu[j] = big_u;
                ekr[j] = ek | (rho << 4);
            }
            /* exponent offsets (7.3.6) */
            int u1 = uq[0], u2 = uq[1];
            if (u1 > 0 && u2 > 0) {
                int mel_sym = 0;
                if (initial) {
                    mel_sym = (u1 > 2 && u2 > 2) ? 1 : 0;
                    mel_encode(&mel, mel_sym, mel_exp);
                }
                int a1 = u1 - 2 * mel_sym, a2 = u2 - 2 * mel_sym;
                Uvlc p1 = uvlc_parts(a1);
                if (initial && mel_sym == 0 && a1 > 2) {
                    vlc_put(&vlc, p1.pre, p1.lpre);
                    vlc_put(&vlc, a2 - 1, 1);
                    vlc_put(&vlc, p1.suf, p1.lsuf);
                } else {
                    Uvlc p2 = uvlc_parts(a2);
                    vlc_put(&vlc, p1.pre, p1.lpre);
                    vlc_put(&vlc, p2.pre, p2.lpre);
                    /* suffixes, then extensions (a 9-bit part is suffix | extension << 5) */
                    vlc_put(&vlc, p1.suf & 31, hte_min(p1.lsuf, 5));
                    vlc_put(&vlc, p2.suf & 31, hte_min(p2.lsuf, 5));
                    vlc_put(&vlc, p1.suf >> 5, hte_max(p1.lsuf - 5, 0));
                    vlc_put(&vlc, p2.suf >> 5, hte_max(p2.lsuf - 5, 0));
                }
            } else if (u1 > 0 || u2 > 0) {
                Uvlc pp = uvlc_parts(u1 > 0 ? u1 : u2);
                vlc_put(&vlc, pp.pre, pp.lpre);
                vlc_put(&vlc, pp.suf, pp.lsuf);
            }
            /* MagSgn of the pair's significant samples */
            for (int j = 0; j < nquads; j++)
                for (int n = 0; n < 4; n++)
                    if ((ekr[j] >> (4 + n)) & 1)
                        ms_put(&ms, vq[4 * j + n], bu[j] - ((ekr[j] >> n) & 1));
        }
    }
    if (!any_sig)
        return 0;
    int ms_len = ms_end(&ms);
    int mel_len = mel_end(&mel);
    if (vlc.used > 0)
        vlc.buf[vlc.pos++] = (u8)vlc.tmp;
    int scup = mel_len + vlc.pos;
    if (scup > MAX_SCUP)
        return HT_TOO_LONG;
    int o = 0;
    for (int t = 0; t < ms_len; t++)
        out[o++] = ms.buf[t];
    for (int t = 0; t < mel_len; t++)
        out[o++] = mel.buf[t];
    for (int t = 0; t < vlc.pos; t++)
        out[o++] = vlc.buf[vlc.pos - 1 - t];
    out[o - 1] = (u8)(scup >> 4);
    out[o - 2] = (u8)((out[o - 2] & 0xF0) | (scup & 0x0F));
    return o;
}

/* ------------------------------------------------------------------------- the kernel */

extern "C" __global__ void ht_enc_blocks(const int* flat, const i64* cb, int ncols, int nblk,
                                         const i64* rows, const i64* drops,
                                         const i64* cap_off, u8* out, i64* lens,
                                         u8* scratch, i64 scratch_pitch, const int* vlc0,
                                         const int* vlc1, const int* mel_exp)
{
    i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 threads = (i64)gridDim.x * blockDim.x;
    u8* mine = scratch + t * scratch_pitch;
    for (i64 j = t; j < nblk; j += threads) {
        const i64* r = cb + rows[j] * ncols;
        i64 n = 0;
        if (r[CB_WIDTH] > 0 && r[CB_HEIGHT] > 0)
            n = ht_encode_block(flat, r[CB_OUT], r[CB_STRIDE], r[CB_WIDTH], r[CB_HEIGHT],
                                (int)drops[j], out + cap_off[j], mine, vlc0, vlc1, mel_exp);
        lens[j] = n;
    }
}

/* The blocks' segments gathered in block order (the final copy, the paper's KVCPY): block j's
 * lens[j] = coded_off[j + 1] - coded_off[j] bytes at out + cap_off[j] copied to
 * coded + coded_off[j].  One CUDA block per code-block (grid-stride), its threads a byte each.
 * Twin: the gather of encode/tier1/ht_gpu_plan.py assemble. */
extern "C" __global__ void ht_gather(const u8* out, const i64* cap_off, const i64* coded_off,
                                     int nblk, u8* coded)
{
    for (i64 j = blockIdx.x; j < nblk; j += gridDim.x) {
        i64 n = coded_off[j + 1] - coded_off[j];
        const u8* src = out + cap_off[j];
        u8* dst = coded + coded_off[j];
        for (i64 k = threadIdx.x; k < n; k += blockDim.x)
            dst[k] = src[k];
    }
}

#if !defined(HTE_HOST) || defined(HTE_HOST_WARP)
#include "ht_encode_warp.cuh"
#endif
