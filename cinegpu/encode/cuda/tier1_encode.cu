/* EBCOT tier-1 ENCODING on the GPU: T.800 Annex C (MQ encoder, C.2) and Annex D (coding
 * passes, segments and termination), one CUDA thread per code-block.
 *
 * A line-by-line twin of the numba tile encoder (encode/tier1/tile.py _encode_rows,
 * codeblock.py code_block, passes.py, mq.py): for each code-block the same coded bytes, the
 * same cumulative rate after each pass (mq_trunc_length truncation points), the same per-pass
 * distortion decrease (double, summed in the same order; compiled without FMA contraction:
 * NVRTC --fmad=false, g++ -ffp-contract=off) and the same K.  Three kernels:
 *
 *   t1enc_num_bps      K of every block (one CUDA block per code-block, atomicMax of the bit
 *                      lengths of the threads' largest magnitudes; num_bps zeroed beforehand)
 *   t1enc_code_blocks  the passes; persistent threads take blocks (order[q]) from a counter
 *   t1enc_compact      each block's bytes from its capacity region to their final offset
 *
 * Memory layout.  Each thread ("slot") has, for the bordered block (entry i = (y + 1) *
 * (w + 2) + x + 1, as the numba scratch), the flags (uint16, bits as decode/tier1/tables.py)
 * and sm = |v| | sign << 31 (uint32: |v| < 2^30 once K <= 30 is checked) in global memory,
 * interleaved across slots ([i * nslots + slot]) so that the lanes of a warp coding blocks of
 * one geometry coalesce; the MQ snapshots of non-terminated passes (3 words per pass) the same
 * way; the 19 context states (sv = 2 x state + MPS) in shared memory.  numba's `rec` array (2x
 * the decoder's reconstruction) is not stored: for a significant sample it is always
 * (2 (m >> p) + 1) << p after plane p was coded (3 << p when it became significant), so the
 * refinement pass derives the old and new values from the magnitude (same int64 values, same
 * double sums).  numba's `neg` lives in bit 31 of sm.  C of the MQ coder fits 28 bits (C.2),
 * so uint32 registers hold numba's int64 values exactly.
 *
 * Each block writes its bytes into its own region [cap_off[j], cap_off[j + 1]) of one byte
 * buffer; a byte that would land past the region sets STATUS_OVERFLOW, the block stops after
 * the pass and its length is 0 (the wrapper then codes it with numba).  Blocks with K > 30 get
 * STATUS_K_TOO_LARGE and are not coded (encode_tile raises ValueError for them).
 *
 * The file also compiles as plain C++ (T1E_HOST_EMULATION, tier1_encode_host.cpp), so the
 * logic is checked against numba on machines without a GPU.
 */

#ifndef T1E_HOST_EMULATION
#define T1E_DEV __device__ __forceinline__
#define T1E_SHARED __shared__
#define T1E_SYNC() __syncthreads()
#define T1E_CLZ32(x) __clz((int)(x))
#endif

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

/* Code-block table columns (decode/tier1/codeblock.py CB_*) */
#define CB_ORIENT 4
#define CB_OUT 7
#define CB_WIDTH 8
#define CB_HEIGHT 9
#define CB_STRIDE 10

/* Code-block style, T.800 Table A.19 (PTERM flushes as the normal termination, mq.py) */
#define CBLK_BYPASS 0x01
#define CBLK_RESET 0x02
#define CBLK_TERMALL 0x04
#define CBLK_VCAUSAL 0x08
#define CBLK_SEGSYM 0x20

/* Status bits, one int32 per code-block (encode/tier1/gpu_plan.py STATUS_*) */
#define STATUS_OVERFLOW 0x01
#define STATUS_K_TOO_LARGE 0x02

#define MAX_ENCODE_BPS 30
#define MAX_PASSES (3 * MAX_ENCODE_BPS - 2)

/* Sample flags (decode/tier1/tables.py) */
#define F_N 0x01
#define F_S 0x02
#define F_W 0x04
#define F_E 0x08
#define F_NW 0x10
#define F_NE 0x20
#define F_SW 0x40
#define F_SE 0x80
#define F_NEG_N 0x100
#define F_NEG_S 0x200
#define F_NEG_W 0x400
#define F_NEG_E 0x800
#define F_SIG 0x1000
#define F_VISIT 0x2000
#define F_REFINED 0x4000
#define F_NEIGHBOURS 0xFF

/* Contexts, T.800 Table D.7 */
#define CTX_MR 14
#define CTX_RL 17
#define CTX_UNI 18
#define NUM_CONTEXTS 19

#define T1E_BLOCK 128 /* threads per CUDA block of t1enc_code_blocks: launch exactly this */
#define SIGN_BIT 0x80000000u

/* One thread's view: its scratch columns, contexts, the shared tables, its byte region. */
struct Enc {
    unsigned short* fl; /* flags entry i at fl[i * st] */
    u32* sm;            /* |v| | sign << 31, entry i at sm[i * st] */
    int* snap;          /* snapshot word f of pass k at snap[(3 * k + f) * st] */
    int st;             /* nslots (interleaved) */
    unsigned char* ctx; /* context cx at ctx[cx * cst] (shared memory) */
    int cst;
    const u32* mq;           /* Table C.2 by sv: Qe | NMPS sv << 16 | NLPS sv << 24 */
    const unsigned char* zc; /* Table D.1 row of the orientation, by neighbour bits */
    const unsigned char* sc; /* Table D.3: context | XORbit << 7 */
    unsigned char* buf;      /* the block's region */
    int cap;                 /* its bytes */
    int ovf;                 /* a byte fell past cap */
};

/* MQ encoder registers (mq.py): A, C, CT of C.2; bp the index of byte B; b its value */
struct Mq {
    u32 a, c;
    int ct, bp, b;
};

/* Raw (bypass) writer (mq.py raw_enc_init): byte being built, free bits, its index */
struct Raw {
    int c, ct, bp;
};

#define FL(e, i) ((e).fl[(i) * (e).st])
#define SM(e, i) ((e).sm[(i) * (e).st])
#define CTX(e, cx) ((e).ctx[(cx) * (e).cst])

T1E_DEV void put(Enc& e, int pos, int byte)
{
    if (pos < e.cap)
        e.buf[pos] = (unsigned char)byte;
    else
        e.ovf = 1;
}

/* INITENC, T.800 Figure C.10, for a segment at buf[start] (mq_enc_init) */
T1E_DEV void mq_enc_init(Mq& m, int start)
{
    m.a = 0x8000;
    m.c = 0;
    m.ct = 12;
    m.bp = start - 1;
    m.b = 0;
}

/* BYTEOUT with bit stuffing and carry, T.800 Figure C.8 (mq_byteout) */
T1E_DEV void mq_byteout(Enc& e, int start, Mq& m)
{
    if (m.b != 0xFF && m.c >= 0x8000000u) {
        m.b += 1;
        m.c &= 0x7FFFFFFu;
    }
    if (m.bp >= start)
        put(e, m.bp, m.b);
    m.bp += 1;
    if (m.b == 0xFF) {
        m.b = (int)(m.c >> 20);
        m.c &= 0xFFFFFu;
        m.ct = 7;
    } else {
        m.b = (int)(m.c >> 19);
        m.c &= 0x7FFFFu;
        m.ct = 8;
    }
}

/* RENORME, Figure C.7, by A's leading zeros (A is in 1..0xFFFF; 0 shifts when >= 0x8000) */
T1E_DEV void mq_renorm(Enc& e, int start, Mq& m)
{
    int n = T1E_CLZ32(m.a) - 16;
    m.a <<= n;
    while (n >= m.ct) {
        m.c <<= m.ct;
        n -= m.ct;
        mq_byteout(e, start, m);
    }
    m.c <<= n;
    m.ct -= n;
}

/* ENCODE decision d in context cx, T.800 C.2.4-C.2.6 (mq_encode) */
T1E_DEV void mq_encode(Enc& e, int start, Mq& m, int cx, int d)
{
    unsigned char* p = &CTX(e, cx);
    int sv = *p;
    u32 st = e.mq[sv];
    u32 qe = st & 0xFFFF;
    m.a -= qe;
    if (d == (sv & 1)) {
        if (m.a & 0x8000) {
            m.c += qe;
            return;
        }
        if (m.a < qe)
            m.a = qe;
        else
            m.c += qe;
        *p = (unsigned char)((st >> 16) & 0xFF);
    } else {
        if (m.a < qe)
            m.c += qe;
        else
            m.a = qe;
        *p = (unsigned char)(st >> 24);
    }
    mq_renorm(e, start, m);
}

/* mq_encode with selects for the decision (mq_encode_flat): same registers, same bytes */
T1E_DEV void mq_encode_flat(Enc& e, int start, Mq& m, int cx, int d)
{
    unsigned char* p = &CTX(e, cx);
    int sv = *p;
    u32 st = e.mq[sv];
    u32 qe = st & 0xFFFF;
    u32 a1 = m.a - qe; /* A >= 0x8000 > Qe */
    u32 lps = (u32)(d != (sv & 1));
    u32 upper = (u32)(a1 >= qe) ^ lps;
    m.c += qe * upper;
    m.a = upper ? a1 : qe;
    u32 renorm = lps | (u32)(a1 < 0x8000);
    int next = lps ? (int)(st >> 24) : (int)((st >> 16) & 0xFF);
    *p = (unsigned char)(renorm ? next : sv);
    mq_renorm(e, start, m);
}

/* FLUSH, T.800 C.2.9 (mq_flush); returns the segment length */
T1E_DEV int mq_flush(Enc& e, int start, Mq& m)
{
    u32 tempc = m.c + m.a;
    m.c |= 0xFFFF;
    if (m.c >= tempc)
        m.c -= 0x8000;
    m.c <<= m.ct;
    mq_byteout(e, start, m);
    m.c <<= m.ct;
    mq_byteout(e, start, m);
    if (m.b != 0xFF) {
        put(e, m.bp, m.b);
        m.bp += 1;
    }
    return m.bp - start;
}

/* Shortest prefix of the final segment buf[start:start + n] that decodes every decision
 * coded before the snapshot (bp, b, c, a, ct) was taken (mq_trunc_length, int64 there too) */
T1E_DEV int mq_trunc_length(const Enc& e, int start, int n, int bp, int b, u32 c, u32 a, int ct)
{
    const int s = 48;
    i64 top = ((i64)b << s) + ((i64)((u64)c + a) << (s - 27 + ct));
    i64 acc;
    int ex;
    bool prev_ff;
    if (bp < start) {
        acc = 0;
        ex = 0;
        prev_ff = false;
    } else {
        acc = (i64)e.buf[bp] << s;
        ex = 0;
        prev_ff = e.buf[bp] == 0xFF;
    }
    int end = bp + 1;
    while (end <= start + n && ex <= 40) {
        if (acc + ((i64)1 << (s - ex)) <= top)
            return end - start > 0 ? end - start : 0;
        if (end == start + n)
            break;
        ex += prev_ff ? 7 : 8;
        acc += (i64)e.buf[end] << (s - ex);
        prev_ff = e.buf[end] == 0xFF;
        end += 1;
    }
    return n;
}

T1E_DEV void raw_enc_init(Raw& r, int start)
{
    r.c = 0;
    r.ct = 8;
    r.bp = start;
}

/* One raw bit, MSB first; after 0xFF the next byte holds 7 bits, D.6 (raw_encode) */
T1E_DEV void raw_encode(Enc& e, Raw& r, int d)
{
    r.ct -= 1;
    r.c |= d << r.ct;
    if (r.ct == 0) {
        put(e, r.bp, r.c);
        r.bp += 1;
        r.ct = r.c == 0xFF ? 7 : 8;
        r.c = 0;
    }
}

/* Bytes from start holding every raw bit written so far (raw_pending_length) */
T1E_DEV int raw_pending_length(const Enc& e, int start, const Raw& r)
{
    int full = 8;
    if (r.bp > start && e.buf[r.bp - 1] == 0xFF)
        full = 7;
    return r.bp - start + (r.ct < full ? 1 : 0);
}

/* Terminate a raw segment (raw_flush); returns its length */
T1E_DEV int raw_flush(Enc& e, int start, Raw& r)
{
    int full = 8;
    if (r.bp > start && e.buf[r.bp - 1] == 0xFF)
        full = 7;
    if (r.ct < full) {
        int bit = 0;
        while (r.ct > 0) {
            r.ct -= 1;
            r.c |= bit << r.ct;
            bit = 1 - bit;
        }
        put(e, r.bp, r.c);
        r.bp += 1;
    } else if (r.bp > start && e.buf[r.bp - 1] == 0xFF) {
        r.bp -= 1;
    }
    return r.bp - start;
}

/* Mark sample i significant, tell its neighbours (decode/tier1/passes.py set_significant) */
T1E_DEV void set_significant(Enc& e, int i, int fs, int neg, bool hide_north)
{
    FL(e, i) |= F_SIG;
    if (neg) {
        FL(e, i - 1) |= F_E | F_NEG_E;
        FL(e, i + 1) |= F_W | F_NEG_W;
        FL(e, i + fs) |= F_N | F_NEG_N;
        if (!hide_north)
            FL(e, i - fs) |= F_S | F_NEG_S;
    } else {
        FL(e, i - 1) |= F_E;
        FL(e, i + 1) |= F_W;
        FL(e, i + fs) |= F_N;
        if (!hide_north)
            FL(e, i - fs) |= F_S;
    }
    FL(e, i + fs - 1) |= F_NE;
    FL(e, i + fs + 1) |= F_NW;
    if (!hide_north) {
        FL(e, i - fs - 1) |= F_SE;
        FL(e, i - fs + 1) |= F_SW;
    }
}

T1E_DEV int sign_context(const Enc& e, int f)
{
    return e.sc[(f & 0xF) | ((f >> 4) & 0xF0)];
}

/* Decrease of squared error when 2x reconstruction goes old -> nw (passes.py gain) */
T1E_DEV double gain(i64 m, i64 old, i64 nw)
{
    i64 e0 = 2 * m - old;
    i64 e1 = 2 * m - nw;
    double d0 = (double)e0;
    double d1 = (double)e1;
    double p0 = d0 * d0;
    double p1 = d1 * d1;
    return (p0 - p1) * 0.25;
}

/* Becoming significant at `plane`: rec goes 0 -> 3 << plane */
T1E_DEV double gain_significant(u32 m, int plane)
{
    return gain((i64)m, 0, (i64)3 << plane);
}

/* Significance propagation pass, MQ coded (passes.py spp_mq) */
T1E_DEV double spp_mq(Enc& e, int start, Mq& m, int w, int h, int plane, bool vcausal)
{
    int fs = w + 2;
    double dist = 0.0;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++) {
                int f = FL(e, i);
                if ((f & (F_SIG | F_VISIT)) == 0 && (f & F_NEIGHBOURS) != 0) {
                    u32 v = SM(e, i);
                    u32 mag = v & ~SIGN_BIT;
                    int neg = (int)(v >> 31);
                    int d = (int)((mag >> plane) & 1);
                    mq_encode_flat(e, start, m, e.zc[f & F_NEIGHBOURS], d);
                    if (d) {
                        int sc = sign_context(e, f);
                        mq_encode_flat(e, start, m, sc & 0x1F, neg ^ (sc >> 7));
                        dist += gain_significant(mag, plane);
                        set_significant(e, i, fs, neg, vcausal && (y & 3) == 0);
                    }
                    FL(e, i) |= F_VISIT;
                }
                i += fs;
            }
        }
    }
    return dist;
}

/* One refinement bit of sample magnitude mag at plane (passes.py refine); *g its gain.
 * rec before: (2 (mag >> (plane + 1)) + 1) << (plane + 1); after: +- 1 << plane. */
T1E_DEV int refine(u32 mag, int plane, double* g)
{
    int d = (int)((mag >> plane) & 1);
    i64 old = ((i64)((mag >> (plane + 1)) << 1) + 1) << (plane + 1);
    i64 nw = d ? old + ((i64)1 << plane) : old - ((i64)1 << plane);
    *g = gain((i64)mag, old, nw);
    return d;
}

/* Magnitude refinement pass, MQ coded, contexts of Table D.4 (passes.py mrp_mq) */
T1E_DEV double mrp_mq(Enc& e, int start, Mq& m, int w, int h, int plane)
{
    int fs = w + 2;
    double dist = 0.0;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++) {
                int f = FL(e, i);
                if ((f & (F_SIG | F_VISIT)) == F_SIG) {
                    int cx;
                    if (f & F_REFINED)
                        cx = CTX_MR + 2;
                    else if (f & F_NEIGHBOURS)
                        cx = CTX_MR + 1;
                    else
                        cx = CTX_MR;
                    double g;
                    int d = refine(SM(e, i) & ~SIGN_BIT, plane, &g);
                    dist += g;
                    mq_encode_flat(e, start, m, cx, d);
                    FL(e, i) = (unsigned short)(f | F_REFINED);
                }
                i += fs;
            }
        }
    }
    return dist;
}

/* Cleanup pass with run-length coding of full stripe columns; clears VISIT (passes.py cup_mq) */
T1E_DEV double cup_mq(Enc& e, int start, Mq& m, int w, int h, int plane, bool vcausal)
{
    int fs = w + 2;
    double dist = 0.0;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        bool full = y1 - y0 == 4;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            int y = y0;
            if (full && (FL(e, i) | FL(e, i + fs) | FL(e, i + 2 * fs) | FL(e, i + 3 * fs)) == 0) {
                int r = 4;
                for (int k = 0; k < 4; k++) {
                    if (((SM(e, i + k * fs) & ~SIGN_BIT) >> plane) & 1) {
                        r = k;
                        break;
                    }
                }
                mq_encode(e, start, m, CTX_RL, r < 4 ? 1 : 0);
                if (r == 4)
                    continue;
                mq_encode(e, start, m, CTX_UNI, r >> 1);
                mq_encode(e, start, m, CTX_UNI, r & 1);
                i += r * fs;
                y += r;
                u32 v = SM(e, i);
                u32 mag = v & ~SIGN_BIT;
                int neg = (int)(v >> 31);
                int sc = sign_context(e, FL(e, i));
                mq_encode_flat(e, start, m, sc & 0x1F, neg ^ (sc >> 7));
                dist += gain_significant(mag, plane);
                set_significant(e, i, fs, neg, vcausal && (y & 3) == 0);
                i += fs;
                y += 1;
            }
            while (y < y1) {
                int f = FL(e, i);
                if ((f & (F_SIG | F_VISIT)) == 0) {
                    u32 v = SM(e, i);
                    u32 mag = v & ~SIGN_BIT;
                    int neg = (int)(v >> 31);
                    int d = (int)((mag >> plane) & 1);
                    mq_encode_flat(e, start, m, e.zc[f & F_NEIGHBOURS], d);
                    if (d) {
                        int sc = sign_context(e, f);
                        mq_encode_flat(e, start, m, sc & 0x1F, neg ^ (sc >> 7));
                        dist += gain_significant(mag, plane);
                        set_significant(e, i, fs, neg, vcausal && (y & 3) == 0);
                    }
                }
                FL(e, i) &= (unsigned short)~F_VISIT;
                i += fs;
                y += 1;
            }
        }
    }
    return dist;
}

/* Significance propagation pass, raw (passes.py spp_raw) */
T1E_DEV double spp_raw(Enc& e, Raw& r, int w, int h, int plane, bool vcausal)
{
    int fs = w + 2;
    double dist = 0.0;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++) {
                int f = FL(e, i);
                if ((f & (F_SIG | F_VISIT)) == 0 && (f & F_NEIGHBOURS) != 0) {
                    u32 v = SM(e, i);
                    u32 mag = v & ~SIGN_BIT;
                    int neg = (int)(v >> 31);
                    int d = (int)((mag >> plane) & 1);
                    raw_encode(e, r, d);
                    if (d) {
                        raw_encode(e, r, neg);
                        dist += gain_significant(mag, plane);
                        set_significant(e, i, fs, neg, vcausal && (y & 3) == 0);
                    }
                    FL(e, i) |= F_VISIT;
                }
                i += fs;
            }
        }
    }
    return dist;
}

/* Magnitude refinement pass, raw (passes.py mrp_raw) */
T1E_DEV double mrp_raw(Enc& e, Raw& r, int w, int h, int plane)
{
    int fs = w + 2;
    double dist = 0.0;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++) {
                int f = FL(e, i);
                if ((f & (F_SIG | F_VISIT)) == F_SIG) {
                    double g;
                    int d = refine(SM(e, i) & ~SIGN_BIT, plane, &g);
                    dist += g;
                    raw_encode(e, r, d);
                    FL(e, i) = (unsigned short)(f | F_REFINED);
                }
                i += fs;
            }
        }
    }
    return dist;
}

/* Segmentation symbol 1010 in the UNIFORM context after a cleanup pass, D.5 (segsym) */
T1E_DEV void segsym(Enc& e, int start, Mq& m)
{
    mq_encode(e, start, m, CTX_UNI, 1);
    mq_encode(e, start, m, CTX_UNI, 0);
    mq_encode(e, start, m, CTX_UNI, 1);
    mq_encode(e, start, m, CTX_UNI, 0);
}

/* Pass k (0 = first cleanup) is raw-coded (decode/tier1/codeblock.py pass_is_raw) */
T1E_DEV bool pass_is_raw(int k, int style)
{
    return (style & CBLK_BYPASS) != 0 && k >= 10 && (k + 2) % 3 != 2;
}

/* Pass k ends a codeword segment (codeblock.py pass_ends_segment) */
T1E_DEV bool pass_ends_segment(int k, int npasses, int style)
{
    if ((style & CBLK_TERMALL) || k == npasses - 1)
        return true;
    return pass_is_raw(k, style) != pass_is_raw(k + 1, style);
}

T1E_DEV void reset_contexts(Enc& e, const unsigned char* init)
{
    for (int cx = 0; cx < NUM_CONTEXTS; cx++)
        CTX(e, cx) = init[cx];
}

/* Tier-1 code the w x h block at src[off] (rows `stride` apart) of K = num_bps planes
 * (codeblock.py code_block): rates (cumulative bytes) and dists of the 3K - 2 passes.
 * Returns the coded length, or -1 when the region overflowed (rates, dists then unfinished). */
T1E_DEV int code_block(Enc& e, const int* src, i64 off, i64 stride, int w, int h, int style,
                       int num_bps, int floor_bp, const unsigned char* init, int* rates,
                       double* dists)
{
    int fs = w + 2;
    int n = (h + 2) * fs;
    for (int i = 0; i < n; i++) {
        FL(e, i) = 0;
        SM(e, i) = 0;
    }
    for (int y = 0; y < h; y++) {
        const int* row = src + off + y * stride;
        for (int x = 0; x < w; x++) {
            i64 v = row[x];
            u32 mag = (u32)(v < 0 ? -v : v);
            SM(e, (y + 1) * fs + x + 1) = mag | (v < 0 ? SIGN_BIT : 0u);
        }
    }
    int npasses = num_bps > floor_bp ? 3 * (num_bps - floor_bp) - 2 : 0; /* codeblock.py coded_passes */
    reset_contexts(e, init);
    bool vcausal = (style & CBLK_VCAUSAL) != 0;
    int seg_start = 0;
    int seg_first_pass = 0;
    Mq mq;
    Raw rw;
    mq_enc_init(mq, 0);
    raw_enc_init(rw, 0);
    for (int k = 0; k < npasses; k++) {
        bool raw = pass_is_raw(k, style);
        if (k == seg_first_pass) {
            if (raw)
                raw_enc_init(rw, seg_start);
            else
                mq_enc_init(mq, seg_start);
        }
        int kind = (k + 2) % 3;
        int plane = num_bps - 1 - (k + 2) / 3;
        double dist;
        if (kind == 0) {
            dist = raw ? spp_raw(e, rw, w, h, plane, vcausal)
                       : spp_mq(e, seg_start, mq, w, h, plane, vcausal);
        } else if (kind == 1) {
            dist = raw ? mrp_raw(e, rw, w, h, plane) : mrp_mq(e, seg_start, mq, w, h, plane);
        } else {
            dist = cup_mq(e, seg_start, mq, w, h, plane, vcausal);
            if (style & CBLK_SEGSYM)
                segsym(e, seg_start, mq);
        }
        dists[k] = dist;
        if (e.ovf)
            return -1;
        if (style & CBLK_RESET)
            reset_contexts(e, init);
        if (!pass_ends_segment(k, npasses, style)) {
            if (raw) {
                rates[k] = seg_start + raw_pending_length(e, seg_start, rw);
            } else {
                e.snap[(3 * k) * e.st] = mq.bp;
                e.snap[(3 * k + 1) * e.st] = (int)mq.c;
                e.snap[(3 * k + 2) * e.st] = (int)(mq.a | ((u32)mq.ct << 16) | ((u32)mq.b << 20));
            }
            continue;
        }
        int seg_len;
        if (raw) {
            seg_len = raw_flush(e, seg_start, rw);
        } else {
            seg_len = mq_flush(e, seg_start, mq);
        }
        if (e.ovf)
            return -1;
        if (!raw) {
            for (int j = seg_first_pass; j < k; j++) {
                int bp = e.snap[(3 * j) * e.st];
                u32 c = (u32)e.snap[(3 * j + 1) * e.st];
                u32 packed = (u32)e.snap[(3 * j + 2) * e.st];
                rates[j] = seg_start + mq_trunc_length(e, seg_start, seg_len, bp,
                                                       (int)(packed >> 20), c, packed & 0xFFFF,
                                                       (int)((packed >> 16) & 0xF));
            }
        }
        for (int j = seg_first_pass; j < k; j++)
            rates[j] = rates[j] < seg_start + seg_len ? rates[j] : seg_start + seg_len;
        seg_start += seg_len;
        rates[k] = seg_start;
        seg_first_pass = k + 1;
    }
    for (int k = 1; k < npasses; k++)
        rates[k] = rates[k] > rates[k - 1] ? rates[k] : rates[k - 1];
    return seg_start;
}

/* K of every code-block (tile.py block_bps): one CUDA block per code-block (grid-stride over
 * blocks), its threads over the samples; num_bps must be zero on entry.  Rows with w or h <= 0
 * keep K = 0.  K can reach 32 (|-2^31|); the wrapper rejects K > 30. */
extern "C" __global__ void t1enc_num_bps(const int* flat, const i64* cb, int ncols, int nblk,
                                         int* num_bps)
{
    for (int j = blockIdx.x; j < nblk; j += gridDim.x) {
        const i64* row = cb + (i64)j * ncols;
        i64 w = row[CB_WIDTH], h = row[CB_HEIGHT], off = row[CB_OUT], stride = row[CB_STRIDE];
        if (w <= 0 || h <= 0)
            continue;
        int area = (int)(w * h);
        u32 maxmag = 0;
        for (int t = threadIdx.x; t < area; t += blockDim.x) {
            int y = t / (int)w;
            int x = t - y * (int)w;
            i64 v = flat[off + y * stride + x];
            u32 mag = (u32)(v < 0 ? -v : v);
            maxmag = mag > maxmag ? mag : maxmag;
        }
        int k = 0;
        while (k < 32 && (maxmag >> k))
            k++;
        if (k)
            atomicMax(num_bps + j, k);
    }
}

/* The lookup tables into shared memory, per CUDA block */
#define T1E_LOAD_TABLES()                                                                    \
    T1E_SHARED u32 s_mq[94];                                                                 \
    T1E_SHARED unsigned char s_zc[4 * 256];                                                  \
    T1E_SHARED unsigned char s_sc[256];                                                      \
    T1E_SHARED unsigned char s_init[NUM_CONTEXTS];                                           \
    for (int i = threadIdx.x; i < 4 * 256; i += blockDim.x) {                                \
        s_zc[i] = zc_lut[i];                                                                 \
        if (i < 256)                                                                         \
            s_sc[i] = sc_lut[i];                                                             \
        if (i < 94)                                                                          \
            s_mq[i] = mq_lut[i];                                                             \
        if (i < NUM_CONTEXTS)                                                                \
            s_init[i] = ctx_init[i];                                                         \
    }                                                                                        \
    T1E_SYNC()

/* Code the blocks order[q], q taken in turn from *next_row.  T1E_BLOCK threads per CUDA block,
 * `lanes` (1..32) of each warp work, slot = warp * lanes + lane (< nslots).  Per slot:
 * flags, sm (entries of (w + 2) * (h + 2)) and snap (3 * MAX_PASSES words), interleaved
 * across slots ([i * nslots + slot], slot_pitch = 0) or in runs (slot_pitch entries of
 * flags and sm, 3 * MAX_PASSES snap words per slot; wrapper: i * nslots < 2^31).
 * Block j: K num_bps[j]; its passes down to bit-plane floor_bp, 3 (K - floor_bp) - 2 of them
 * and none when K <= floor_bp (early stop, encode/early_stop.py); its rates and dists from
 * rate_off[j], its bytes in region[cap_off[j] : cap_off[j + 1]], its length lens[j],
 * status[j]. */
extern "C" __global__ void t1enc_code_blocks(
    const int* flat, const i64* cb, int ncols, int nblk, const int* order, int style,
    const int* num_bps, const i64* rate_off, const i64* cap_off, unsigned char* region,
    int* rates, double* dists, i64* lens, int* status, unsigned short* flags, u32* sm,
    int* snap, int nslots, int slot_pitch, int lanes, int* next_row, const u32* mq_lut,
    const unsigned char* zc_lut, const unsigned char* sc_lut, const unsigned char* ctx_init,
    int floor_bp)
{
    T1E_LOAD_TABLES();
    T1E_SHARED unsigned char s_ctx[NUM_CONTEXTS * T1E_BLOCK];
    int lane = threadIdx.x & 31;
    int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    if (lane >= lanes)
        return;
    int slot = warp * lanes + lane;
    if (slot >= nslots)
        return;
    Enc e;
    i64 base = slot_pitch ? (i64)slot * slot_pitch : (i64)slot;
    e.fl = flags + base;
    e.sm = sm + base;
    e.snap = snap + (slot_pitch ? (i64)slot * 3 * MAX_PASSES : (i64)slot);
    e.st = slot_pitch ? 1 : nslots;
    e.ctx = s_ctx + threadIdx.x;
    e.cst = T1E_BLOCK;
    e.mq = s_mq;
    e.sc = s_sc;
    for (;;) {
        int q = atomicAdd(next_row, 1);
        if (q >= nblk)
            break;
        int j = order[q];
        const i64* row = cb + (i64)j * ncols;
        int k = num_bps[j];
        if (k > MAX_ENCODE_BPS) {
            lens[j] = 0;
            status[j] = STATUS_K_TOO_LARGE;
            continue;
        }
        int n = 0;
        int st = 0;
        if (k > floor_bp) {
            e.zc = s_zc + 256 * (int)row[CB_ORIENT];
            e.buf = region + cap_off[j];
            e.cap = (int)(cap_off[j + 1] - cap_off[j]);
            e.ovf = 0;
            n = code_block(e, flat, row[CB_OUT], row[CB_STRIDE], (int)row[CB_WIDTH],
                           (int)row[CB_HEIGHT], style, k, floor_bp, s_init, rates + rate_off[j],
                           dists + rate_off[j]);
            if (n < 0) {
                n = 0;
                st = STATUS_OVERFLOW;
            }
        }
        lens[j] = n;
        status[j] = st;
    }
}

/* Gather: block j's lens[j] bytes from region[cap_off[j]] to out[coded_off[j]].  One CUDA
 * block per code-block (grid-stride over blocks), its threads over the bytes. */
extern "C" __global__ void t1enc_compact(const unsigned char* region, const i64* cap_off,
                                         const i64* lens, const i64* coded_off, int nblk,
                                         unsigned char* out)
{
    for (int j = blockIdx.x; j < nblk; j += gridDim.x) {
        const unsigned char* src = region + cap_off[j];
        unsigned char* dst = out + coded_off[j];
        i64 n = lens[j];
        for (i64 t = threadIdx.x; t < n; t += blockDim.x)
            dst[t] = src[t];
    }
}

#ifndef T1E_NO_WARP_KERNEL
/* ------------------------------------------------------------------------------------------
 * Sample-parallel tier-1: one warp per code-block of at most 32 x 32 samples (the DCI and
 * default code-block size), after the bit-plane-parallel context modelling of the GPU EBCOT
 * papers (seeds 001/003: the state of a bit-plane from "significant before this plane" and
 * "becomes significant in this pass", decided for every sample at once).  Lane x holds column
 * x of the block as bit words (bit y = row y): sig (significant), neg (sign), refined (has
 * had a refinement bit), visit (coded by this plane's significance propagation pass).
 *
 * Per pass and stripe (4 rows), the lanes decide together which samples the pass codes, in
 * which context and with which bit, with the neighbours' states as the serial scan (stripe,
 * column, row; T.800 D.3) sees them: columns left of x with this pass's new significance,
 * columns right of x without it.  In the significance propagation pass whether column x codes
 * a sample depends on what column x - 1 made significant, so the lanes iterate to the fixed
 * point (column 0 is exact after one round, column c after c + 1; rounds stop when no lane's
 * view of its left neighbour changed); in the cleanup pass every sample that is not yet
 * significant nor visited is coded, so its new significance is known at once.  The lanes
 * write the stripe's (context, decision) symbols in scan order (a warp prefix sum of their
 * counts places each column) into the warp's symbol buffer, and lane 0 runs the MQ coder
 * over them, adding the distortion decreases in the same order as the numba encoder (same
 * doubles).  Passes, segments, snapshots and truncation lengths are code_block's, run by
 * lane 0.  Same bytes, rates, distortions and status as t1enc_code_blocks for these blocks;
 * styles with BYPASS or VCAUSAL use t1enc_code_blocks (the wrapper chooses).
 * ------------------------------------------------------------------------------------------ */

#define T1W_WARPS (T1E_BLOCK / 32)
#define T1W_SYMS 320 /* symbols of a stripe at most: 32 columns x 10 (cleanup, run-length) */
#define T1W_FULL 0xFFFFFFFFu
#define CTX_SC 9

/* Symbol entry: context (5 bits), decision (1 bit), sample index y * 32 + x (10 bits) */
#define T1W_SYM(cx, d, idx) ((unsigned short)((cx) | ((d) << 5) | ((idx) << 6)))

/* Neighbour flags (F_N .. F_SE, and F_NEG_N .. F_NEG_E where that neighbour is negative) of
 * row y of a column whose own visible significance is `own`, left column `wv`, right `ev`,
 * signs `on`, `wn`, `en` (bit words). */
T1E_DEV int t1w_flags(u32 own, u32 wv, u32 ev, u32 on, u32 wn, u32 en, int y)
{
    u32 me = 1u << y;
    u32 up = y > 0 ? me >> 1 : 0u;
    u32 dn = y < 31 ? me << 1 : 0u;
    int f = 0;
    if (own & up) f |= (on & up) ? F_N | F_NEG_N : F_N;
    if (own & dn) f |= (on & dn) ? F_S | F_NEG_S : F_S;
    if (wv & me) f |= (wn & me) ? F_W | F_NEG_W : F_W;
    if (ev & me) f |= (en & me) ? F_E | F_NEG_E : F_E;
    if (wv & up) f |= F_NW;
    if (ev & up) f |= F_NE;
    if (wv & dn) f |= F_SW;
    if (ev & dn) f |= F_SE;
    return f;
}

/* Exclusive prefix sum of n over the warp's lanes; *total the sum */
T1E_DEV int t1w_scan(int n, int lane, int* total)
{
    int s = n;
    for (int d = 1; d < 32; d <<= 1) {
        int t = __shfl_up_sync(T1W_FULL, s, d);
        if (lane >= d)
            s += t;
    }
    *total = __shfl_sync(T1W_FULL, s, 31);
    return s - n;
}

/* The sign decision of newly significant sample y in the context its flags f give (D.3.2) */
T1E_DEV unsigned short t1w_sign(const Enc& e, int f, u32 on, int y, int x)
{
    int sc = sign_context(e, f);
    return T1W_SYM(sc & 0x1F, (int)((on >> y) & 1u) ^ (sc >> 7), y * 32 + x);
}

/* Zero coding of sample y (flags f, bit d) and, when d makes it significant, its sign: the
 * symbols at out[n...] (counted only when out is null); returns the new n */
T1E_DEV int t1w_code_sample(const Enc& e, int f, int d, u32 on, int y, int x, unsigned short* out,
                            int n)
{
    if (out)
        out[n] = T1W_SYM(e.zc[f & F_NEIGHBOURS], d, y * 32 + x);
    n++;
    if (d) {
        if (out)
            out[n] = t1w_sign(e, f, on, y, x);
        n++;
    }
    return n;
}

/* Significance propagation, column x's rows y0..y1-1: which samples it codes (*visit) and
 * which become significant (*nsig), given the left column's visible words; writes its
 * symbols at out[] when out is not null; returns their number. */
T1E_DEV int t1w_spp_column(const Enc& e, u32 sig, u32 bits, u32 cand, u32 wv, u32 ev, u32 on,
                           u32 wn, u32 en, int y0, int y1, int x, u32* visit, u32* nsig,
                           unsigned short* out)
{
    u32 vis = 0, ns = 0;
    int n = 0;
    for (int y = y0; y < y1; y++) {
        u32 me = 1u << y;
        if (!(cand & me))
            continue;
        int f = t1w_flags(sig | ns, wv, ev, on, wn, en, y);
        if ((f & F_NEIGHBOURS) == 0)
            continue;
        vis |= me;
        int d = (bits & me) ? 1 : 0;
        n = t1w_code_sample(e, f, d, on, y, x, out, n);
        if (d)
            ns |= me;
    }
    *visit = vis;
    *nsig = ns;
    return n;
}

/* Cleanup, column x's rows y0..y1-1 (run-length coding of a full stripe column whose four
 * samples have no significant neighbour, are not significant and were not visited) */
T1E_DEV int t1w_cup_column(const Enc& e, u32 sig, u32 bits, u32 cand, u32 wv, u32 ev, u32 on,
                           u32 wn, u32 en, u32 visit, int y0, int y1, int x,
                           unsigned short* out)
{
    int n = 0;
    int y = y0;
    u32 ns = 0;
    if (y1 - y0 == 4) {
        bool quiet = true;
        for (int r = y0; r < y1 && quiet; r++) {
            u32 me = 1u << r;
            if ((sig & me) || (visit & me) || t1w_flags(sig, wv, ev, on, wn, en, r) != 0)
                quiet = false;
        }
        if (quiet && (cand >> y0 & 0xF) == 0xF) {
            int r = 4;
            for (int k = 0; k < 4; k++)
                if (bits >> (y0 + k) & 1) {
                    r = k;
                    break;
                }
            if (out)
                out[n] = T1W_SYM(CTX_RL, r < 4 ? 1 : 0, y0 * 32 + x);
            n++;
            if (r == 4)
                return n;
            if (out) {
                out[n] = T1W_SYM(CTX_UNI, r >> 1, y0 * 32 + x);
                out[n + 1] = T1W_SYM(CTX_UNI, r & 1, y0 * 32 + x);
            }
            n += 2;
            y = y0 + r;
            if (out)
                out[n] = t1w_sign(e, t1w_flags(sig, wv, ev, on, wn, en, y), on, y, x);
            n++;
            ns |= 1u << y;
            y++;
        }
    }
    for (; y < y1; y++) {
        u32 me = 1u << y;
        if (!(cand & me))
            continue;
        int f = t1w_flags(sig | ns, wv, ev, on, wn, en, y);
        int d = (bits & me) ? 1 : 0;
        n = t1w_code_sample(e, f, d, on, y, x, out, n);
        if (d)
            ns |= me;
    }
    return n;
}

/* Magnitude refinement, column x's rows y0..y1-1 (contexts of Table D.4) */
T1E_DEV int t1w_mrp_column(u32 sig, u32 bits, u32 cand, u32 refined, u32 wv, u32 ev, int y0,
                           int y1, int x, unsigned short* out)
{
    int n = 0;
    for (int y = y0; y < y1; y++) {
        u32 me = 1u << y;
        if (!(cand & me))
            continue;
        if (out) {
            int cx;
            if (refined & me)
                cx = CTX_MR + 2;
            else if (t1w_flags(sig, wv, ev, 0u, 0u, 0u, y) & F_NEIGHBOURS)
                cx = CTX_MR + 1;
            else
                cx = CTX_MR;
            out[n] = T1W_SYM(cx, (bits & me) ? 1 : 0, y * 32 + x);
        }
        n++;
    }
    return n;
}

/* Lane 0: MQ-code syms[0:n] (pass `plane`) and add the distortion decreases to *dist in
 * order (one running sum over the pass, as the numba encoder adds them) */
T1E_DEV void t1w_code(Enc& e, int start, Mq& m, const unsigned short* syms, int n,
                      const u32* mags, int plane, double* dist_io)
{
    double dist = *dist_io;
    for (int t = 0; t < n; t++) {
        int s = syms[t];
        int cx = s & 0x1F;
        int d = (s >> 5) & 1;
        if (cx >= CTX_MR && cx < CTX_RL) {
            double g;
            refine(mags[s >> 6], plane, &g);
            dist += g;
            mq_encode_flat(e, start, m, cx, d);
        } else {
            mq_encode_flat(e, start, m, cx, d);
            if (cx >= CTX_SC && cx < CTX_MR)
                dist += gain_significant(mags[s >> 6], plane);
        }
    }
    *dist_io = dist;
}

/* The w x h block (w, h <= 32) at src[off], K = num_bps planes, down to floor_bp: code_block's
 * results with the passes decided by the whole warp.  Lane 0's return value counts (the coded
 * length, or -1 on overflow); rates and dists are written by lane 0. */
T1E_DEV int t1w_code_block(Enc& e, const int* src, i64 off, i64 stride, int w, int h, int style,
                           int num_bps, int floor_bp, const unsigned char* init, int* rates,
                           double* dists, u32* mags, unsigned short* syms, int lane)
{
    int x = lane;
    u32 colmask = x < w ? (h == 32 ? T1W_FULL : (1u << h) - 1u) : 0u;
    u32 neg = 0;
    for (int y = 0; y < h; y++) {
        int v = x < w ? src[off + y * stride + x] : 0;
        mags[y * 32 + x] = (u32)(v < 0 ? -(i64)v : (i64)v);
        if (v < 0)
            neg |= 1u << y;
    }
    u32 wn = __shfl_up_sync(T1W_FULL, neg, 1);
    u32 en = __shfl_down_sync(T1W_FULL, neg, 1);
    if (x == 0) wn = 0;
    if (x == 31) en = 0;
    __syncwarp();
    u32 sig = 0, refined = 0, visit = 0;
    int npasses = num_bps > floor_bp ? 3 * (num_bps - floor_bp) - 2 : 0;
    int seg_start = 0, seg_first_pass = 0, ovf = 0;
    Mq mq;
    if (lane == 0) {
        reset_contexts(e, init);
        mq_enc_init(mq, 0);
    }
    for (int k = 0; k < npasses; k++) {
        if (lane == 0 && k == seg_first_pass)
            mq_enc_init(mq, seg_start);
        int kind = (k + 2) % 3;
        int plane = num_bps - 1 - (k + 2) / 3;
        u32 bits = 0;
        for (int y = 0; y < h; y++)
            bits |= ((mags[y * 32 + x] >> plane) & 1u) << y;
        double dist = 0.0;
        for (int y0 = 0; y0 < h; y0 += 4) {
            int y1 = y0 + 4 < h ? y0 + 4 : h;
            u32 smask = (y1 - y0 == 4 ? 0xFu : (1u << (y1 - y0)) - 1u) << y0;
            u32 cw = __shfl_up_sync(T1W_FULL, sig, 1);
            u32 ce = __shfl_down_sync(T1W_FULL, sig, 1);
            if (x == 0) cw = 0;
            if (x == 31) ce = 0;
            int n = 0;
            u32 nsig = 0;
            if (kind == 0) {
                u32 cand = colmask & smask & ~sig;
                u32 left = 0, vis = 0;
                for (;;) {
                    n = t1w_spp_column(e, sig, bits, cand, cw | left, ce, neg, wn, en, y0, y1,
                                       x, &vis, &nsig, 0);
                    u32 got = __shfl_up_sync(T1W_FULL, nsig, 1);
                    if (x == 0) got = 0;
                    int changed = got != left;
                    left = got;
                    if (!__ballot_sync(T1W_FULL, changed))
                        break;
                }
                int total;
                int at = t1w_scan(n, lane, &total);
                t1w_spp_column(e, sig, bits, cand, cw | left, ce, neg, wn, en, y0, y1, x, &vis,
                               &nsig, syms + at);
                visit |= vis;
                n = total;
            } else if (kind == 1) {
                u32 cand = colmask & smask & sig & ~visit;
                int c = t1w_mrp_column(sig, bits, cand, refined, cw, ce, y0, y1, x, 0);
                int total;
                int at = t1w_scan(c, lane, &total);
                t1w_mrp_column(sig, bits, cand, refined, cw, ce, y0, y1, x, syms + at);
                refined |= cand;
                n = total;
            } else {
                u32 cand = colmask & smask & ~sig & ~visit;
                nsig = cand & bits;
                u32 left = __shfl_up_sync(T1W_FULL, nsig, 1);
                if (x == 0) left = 0;
                int c = t1w_cup_column(e, sig, bits, cand, cw | left, ce, neg, wn, en, visit, y0,
                                       y1, x, 0);
                int total;
                int at = t1w_scan(c, lane, &total);
                t1w_cup_column(e, sig, bits, cand, cw | left, ce, neg, wn, en, visit, y0, y1, x,
                               syms + at);
                n = total;
            }
            __syncwarp();
            if (lane == 0)
                t1w_code(e, seg_start, mq, syms, n, mags, plane, &dist);
            __syncwarp();
            sig |= nsig;
        }
        if (kind == 2)
            visit = 0;
        if (lane == 0) {
            if (kind == 2 && (style & CBLK_SEGSYM))
                segsym(e, seg_start, mq);
            dists[k] = dist;
            ovf = e.ovf;
        }
        if (__shfl_sync(T1W_FULL, ovf, 0))
            return -1;
        if (lane != 0)
            continue;
        if (style & CBLK_RESET)
            reset_contexts(e, init);
        if (!pass_ends_segment(k, npasses, style)) {
            e.snap[3 * k] = mq.bp;
            e.snap[3 * k + 1] = (int)mq.c;
            e.snap[3 * k + 2] = (int)(mq.a | ((u32)mq.ct << 16) | ((u32)mq.b << 20));
            continue;
        }
        int seg_len = mq_flush(e, seg_start, mq);
        if (e.ovf) {
            ovf = 1;
            continue;
        }
        for (int j = seg_first_pass; j < k; j++) {
            u32 packed = (u32)e.snap[3 * j + 2];
            rates[j] = seg_start + mq_trunc_length(e, seg_start, seg_len, e.snap[3 * j],
                                                   (int)(packed >> 20), (u32)e.snap[3 * j + 1],
                                                   packed & 0xFFFF, (int)((packed >> 16) & 0xF));
        }
        for (int j = seg_first_pass; j < k; j++)
            rates[j] = rates[j] < seg_start + seg_len ? rates[j] : seg_start + seg_len;
        seg_start += seg_len;
        rates[k] = seg_start;
        seg_first_pass = k + 1;
    }
    if (__shfl_sync(T1W_FULL, ovf, 0))
        return -1;
    if (lane == 0)
        for (int k = 1; k < npasses; k++)
            rates[k] = rates[k] > rates[k - 1] ? rates[k] : rates[k - 1];
    return seg_start;
}

/* t1enc_code_blocks for tiles whose blocks are all at most 32 x 32 and whose style has neither
 * BYPASS nor VCAUSAL: warp q of the grid codes blocks order[q], order[q + warps], ... (T1E_BLOCK
 * threads per CUDA block; same outputs as t1enc_code_blocks). */
extern "C" __global__ void t1enc_code_blocks_warp(
    const int* flat, const i64* cb, int ncols, int nblk, const int* order, int style,
    const int* num_bps, const i64* rate_off, const i64* cap_off, unsigned char* region,
    int* rates, double* dists, i64* lens, int* status, const u32* mq_lut,
    const unsigned char* zc_lut, const unsigned char* sc_lut, const unsigned char* ctx_init,
    int floor_bp)
{
    T1E_LOAD_TABLES();
    T1E_SHARED u32 s_mags[T1W_WARPS][32 * 32];
    T1E_SHARED unsigned short s_syms[T1W_WARPS][T1W_SYMS];
    T1E_SHARED int s_snap[T1W_WARPS][3 * MAX_PASSES];
    T1E_SHARED unsigned char s_ctx[T1W_WARPS][NUM_CONTEXTS + 1];
    int lane = threadIdx.x & 31;
    int wib = threadIdx.x >> 5;
    int warps = gridDim.x * T1W_WARPS;
    Enc e;
    e.fl = 0;
    e.sm = 0;
    e.snap = s_snap[wib];
    e.st = 1;
    e.ctx = s_ctx[wib];
    e.cst = 1;
    e.mq = s_mq;
    e.sc = s_sc;
    for (int q = blockIdx.x * T1W_WARPS + wib; q < nblk; q += warps) {
        int j = order[q];
        const i64* row = cb + (i64)j * ncols;
        int k = num_bps[j];
        if (k > MAX_ENCODE_BPS) {
            if (lane == 0) {
                lens[j] = 0;
                status[j] = STATUS_K_TOO_LARGE;
            }
            continue;
        }
        int n = 0;
        int st = 0;
        int w = (int)row[CB_WIDTH], h = (int)row[CB_HEIGHT];
        if (k > floor_bp && w > 0 && h > 0) {
            e.zc = s_zc + 256 * (int)row[CB_ORIENT];
            e.buf = region + cap_off[j];
            e.cap = (int)(cap_off[j + 1] - cap_off[j]);
            e.ovf = 0;
            n = t1w_code_block(e, flat, row[CB_OUT], row[CB_STRIDE], w, h, style, k, floor_bp,
                               s_init, rates + rate_off[j], dists + rate_off[j], s_mags[wib],
                               s_syms[wib], lane);
            if (n < 0) {
                n = 0;
                st = STATUS_OVERFLOW;
            }
        }
        if (lane == 0) {
            lens[j] = n;
            status[j] = st;
        }
        __syncwarp();
    }
}
#endif /* T1E_NO_WARP_KERNEL */
