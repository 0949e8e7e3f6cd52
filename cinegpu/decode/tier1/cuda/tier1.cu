/* Tier-1 code-block decoding on the GPU, one CUDA thread per code-block: EBCOT, T.800 Annex C
 * (MQ decoder) and Annex D (coding passes), and HT code-blocks, T.814 clause 7 (ht_decode.cuh,
 * rows whose style has CBLK_HT).
 *
 * A line-by-line twin of the numba decoder in decode/tier1/ (mq.py, passes.py, ht.py, codeblock.py):
 * the same table columns, status bits, validation and value convention (2 x the reconstructed
 * coefficient, sign applied), bit for bit, corrupt input included.  Integer arithmetic on table
 * values and on the MQ code register C wraps like numba's int64 (wadd/wmul/wshl below).
 *
 * Memory layout.  Part-1 blocks of at most 64 x 64 samples in the default kernel take the
 * passes of mask_passes.cuh: four 64-bit words per row in the thread's run of shared memory,
 * values straight into the output.  Otherwise each thread ("slot") has flags (uint16, bits as
 * tables.py) and vals (int32) for the bordered block, entry i = (y + 1) * (w + 2) + x + 1.  The
 * default kernel keeps the flags in shared memory, a run per thread, and vals in global memory;
 * the other keeps both in global memory, interleaved across threads ([i * nslots + slot], so that lanes of a warp
 * decoding blocks of one geometry coalesce) or in runs.  An HT block uses the same two arrays,
 * its significance and exponents as flag bits (ht_decode.cuh).  Context states (sv = 2 * state
 * + MPS, as tables.py) live in shared memory, 19 bytes per thread; the lookup tables (Table C.2,
 * D.1, D.3, and T.814's CxtVLC decoding tables, 4 KB) are copied to shared memory per CUDA
 * block.  Threads are persistent: each takes the next
 * code-block from an atomic counter until none is left.
 *
 * The file also compiles as plain C++ (T1_HOST_EMULATION, see host_emulation.cpp) so the
 * logic can be checked against numba on a machine without a GPU.
 */

#ifndef T1_HOST_EMULATION
#define T1_DEV __device__ __forceinline__
#define T1_SHARED __shared__
#define T1_SYNC() __syncthreads()
#define T1_DYN_SHARED(name) extern __shared__ __align__(16) unsigned short name[]
#define T1_CLZ64(x) __clzll((long long)(x))
#define T1_CLZ32(x) __clz((int)(x))
#define T1_CTZ64(x) (__ffsll((long long)(x)) - 1)
#endif

typedef long long i64;
typedef unsigned long long u64;

/* Code-block table columns (codeblock.py CB_*) */
#define CB_DATA 0
#define CB_SEG_FIRST 1
#define CB_SEG_COUNT 2
#define CB_NUM_BPS 3
#define CB_ORIENT 4
#define CB_STYLE 5
#define CB_ROISHIFT 6
#define CB_OUT 7
#define CB_WIDTH 8
#define CB_HEIGHT 9
#define CB_STRIDE 10

/* Code-block style, T.800 Table A.19 */
#define CBLK_BYPASS 0x01
#define CBLK_RESET 0x02
#define CBLK_VCAUSAL 0x08
#define CBLK_SEGSYM 0x20

/* Status bits (codeblock.py STATUS_*) */
#define STATUS_TOO_MANY_PASSES 0x01
#define STATUS_SEGSYM 0x02
#define STATUS_K_TOO_LARGE 0x04
#define STATUS_BAD_ROW 0x08
#define STATUS_BAD_SEGMENTS 0x10

#define MAX_CBLK_SIDE 1024
#define MAX_CBLK_AREA 4096
#define MAX_NUM_BPS 30

/* Sample flags (tables.py) */
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

#define T1_BLOCK 128 /* threads per CUDA block of the global-flags kernel: launch exactly this */

/* numba int64 semantics: two's complement wrap-around */
T1_DEV i64 wadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
T1_DEV i64 wmul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
T1_DEV i64 wshl(i64 a, int s) { return (i64)((u64)a << s); }

/* One thread's view: its scratch column, its contexts, the shared lookup tables. */
struct Cb {
    unsigned short* fl; /* flags entry i at fl[i * fst] (global or shared memory) */
    int* va;            /* vals entry i at va[i * vst] */
    int fst, vst;       /* the wrapper keeps i * stride below 2^31 */
    unsigned char* ctx; /* context cx at ctx[cx * cst] (shared memory) */
    int cst;
    const unsigned int* mq; /* Table C.2 by sv: Qe | NMPS sv << 16 | NLPS sv << 24 */
    const unsigned char* zc; /* Table D.1 row of the orientation, by neighbour bits */
    const unsigned char* sc; /* Table D.3: context | XORbit << 7 */
};

struct Mq {
    int a;  /* interval register A */
    int ct; /* MQ: coded bits loaded below Chigh; raw: bits left in c */
    i64 c;  /* MQ: code register C, Chigh at bits MQ_SHIFT.. (an int64 as in mq.py); raw: the byte */
    const unsigned char* bp; /* byte last read (MQ), next byte (raw) */
};

/* mq.py's buffered C register: Chigh at bit MQ_SHIFT, up to 40 coded bits wait below it */
#define MQ_SHIFT 40

#define FL(cb, i) ((cb).fl[(i) * (cb).fst])
#define VA(cb, i) ((cb).va[(i) * (cb).vst])
#define CTX(cb, cx) ((cb).ctx[(cx) * (cb).cst])

/* BYTEIN, T.800 Figure C.18, repeated until no further byte fits below Chigh (mq.py mq_fill):
 * after 0xFF the next byte holds 7 bits; a marker (0xFF then > 0x8F) feeds eight 1-bits
 * without advancing.  Segments end in 0xFF 0xFF: BP never passes the first of them. */
T1_DEV void mq_fill(Mq& m)
{
    while (m.ct <= MQ_SHIFT - 8) {
        if (m.bp[0] == 0xFF) {
            if (m.bp[1] > 0x8F) {
                m.c = wadd(m.c, (i64)0xFF << (MQ_SHIFT - 8 - m.ct));
                m.ct += 8;
            } else {
                m.bp++;
                m.c = wadd(m.c, (i64)m.bp[0] << (MQ_SHIFT - 7 - m.ct));
                m.ct += 7;
            }
        } else {
            m.bp++;
            m.c = wadd(m.c, (i64)m.bp[0] << (MQ_SHIFT - 8 - m.ct));
            m.ct += 8;
        }
    }
}

/* INITDEC, T.800 Figure C.19 (mq.py mq_init): the first byte straight to Chigh bits 7..14 */
T1_DEV void mq_init(Mq& m, const unsigned char* start)
{
    m.bp = start;
    m.c = (i64)start[0] << (MQ_SHIFT + 7);
    m.ct = -7;
    mq_fill(m);
    m.a = 0x8000;
}

/* The rare end of RENORMD (mq.py mq_renorm_fill): shift C by n with fewer than n bits loaded */
T1_DEV void mq_renorm_fill(Mq& m, int n)
{
    m.c = wshl(m.c, m.ct);
    n -= m.ct;
    m.ct = 0;
    mq_fill(m);
    m.c = wshl(m.c, n);
    m.ct -= n;
}

/* DECODE, T.800 Figures C.20-C.22 with the conditional exchanges, RENORMD Figure C.23 by the
 * whole shift at once (mq.py mq_decode): after an LPS exchange A = Qe shifts until bit 15 is
 * set (clz), after an MPS exchange by 1 or 2. */
T1_DEV int mq_decode(Mq& m, const Cb& cb, int cx)
{
    unsigned char* p = &CTX(cb, cx);
    int sv = *p;
    unsigned int e = cb.mq[sv];
    int qe = (int)(e & 0xFFFF);
    int d = sv & 1;
    int n;
    int lps;
    m.a -= qe;
    if ((m.c >> MQ_SHIFT) < qe) {
        /* LPS_EXCHANGE, Figure C.21 */
        lps = m.a >= qe;
        n = T1_CLZ32((unsigned int)qe) - 16;
        m.a = qe << n;
    } else {
        m.c = wadd(m.c, -((i64)qe << MQ_SHIFT));
        if (m.a & 0x8000)
            return d;
        /* MPS_EXCHANGE, Figure C.22; A >= 0x8000 - 0x5601 */
        lps = m.a < qe;
        n = 2 - (m.a >> 14);
        m.a <<= n;
    }
    *p = (unsigned char)(e >> (lps ? 24 : 16));
    if (n <= m.ct) {
        m.c = wshl(m.c, n);
        m.ct -= n;
    } else {
        mq_renorm_fill(m, n);
    }
    return d ^ lps;
}

/* Raw bit of arithmetic-coding bypass, T.800 D.6: after 0xFF the next byte holds 7 bits */
T1_DEV int raw_decode(Mq& m)
{
    if (m.ct == 0) {
        if (m.c == 0xFF) {
            if (m.bp[0] > 0x8F) { /* marker or padding: 1-bits, do not advance */
                m.c = 0xFF;
                m.ct = 8;
            } else {
                m.c = m.bp[0];
                m.bp++;
                m.ct = 7;
            }
        } else {
            m.c = m.bp[0];
            m.bp++;
            m.ct = 8;
        }
    }
    m.ct--;
    return (int)((m.c >> m.ct) & 1);
}

/* Mark sample i significant, tell its neighbours (D.3.2); hide_north: VCAUSAL (D.7) on the
 * first row of a stripe, the row above must not see it. */
T1_DEV void set_significant(const Cb& cb, int i, int fs, int neg, bool hide_north)
{
    FL(cb, i) |= F_SIG;
    if (neg) {
        FL(cb, i - 1) |= F_E | F_NEG_E;
        FL(cb, i + 1) |= F_W | F_NEG_W;
        FL(cb, i + fs) |= F_N | F_NEG_N;
        if (!hide_north)
            FL(cb, i - fs) |= F_S | F_NEG_S;
    } else {
        FL(cb, i - 1) |= F_E;
        FL(cb, i + 1) |= F_W;
        FL(cb, i + fs) |= F_N;
        if (!hide_north)
            FL(cb, i - fs) |= F_S;
    }
    FL(cb, i + fs - 1) |= F_NE;
    FL(cb, i + fs + 1) |= F_NW;
    if (!hide_north) {
        FL(cb, i - fs - 1) |= F_SE;
        FL(cb, i - fs + 1) |= F_SW;
    }
}

/* Sign coding context and XOR bit, Tables D.2 and D.3 */
T1_DEV int sign_context(const Cb& cb, int f)
{
    return cb.sc[(f & 0xF) | ((f >> 4) & 0xF0)];
}

/* Sign of a newly significant sample (D.3.2), its value 3 << plane, its neighbours' flags */
T1_DEV void decode_sign_mq(Mq& m, const Cb& cb, int i, int f, int fs, int plane, bool hide)
{
    int sc = sign_context(cb, f);
    int s = mq_decode(m, cb, sc & 0x1F) ^ (sc >> 7);
    VA(cb, i) = s ? -(3 << plane) : (3 << plane);
    set_significant(cb, i, fs, s, hide);
}

/* Significance propagation pass, T.800 D.3.1; raw (bypass, D.6) when `raw` */
T1_DEV void spp(Mq& m, const Cb& cb, int w, int h, int plane, bool vcausal, bool raw)
{
    int fs = w + 2;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++, i += fs) {
                int f = FL(cb, i);
                if ((f & (F_SIG | F_VISIT)) != 0 || (f & F_NEIGHBOURS) == 0)
                    continue;
                bool hide = vcausal && (y & 3) == 0;
                if (raw) {
                    if (raw_decode(m)) {
                        int s = raw_decode(m);
                        VA(cb, i) = s ? -(3 << plane) : (3 << plane);
                        set_significant(cb, i, fs, s, hide);
                    }
                } else if (mq_decode(m, cb, cb.zc[f & F_NEIGHBOURS])) {
                    decode_sign_mq(m, cb, i, f, fs, plane, hide);
                }
                FL(cb, i) |= F_VISIT;
            }
        }
    }
}

/* Magnitude refinement pass, T.800 D.3.3, contexts of Table D.4; raw when `raw` */
T1_DEV void mrp(Mq& m, const Cb& cb, int w, int h, int plane, bool raw)
{
    int fs = w + 2;
    int half = 1 << plane;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            for (int y = y0; y < y1; y++, i += fs) {
                int f = FL(cb, i);
                if ((f & (F_SIG | F_VISIT)) != F_SIG)
                    continue;
                int d;
                if (raw) {
                    d = raw_decode(m);
                } else {
                    int cx = (f & F_REFINED) ? CTX_MR + 2 : ((f & F_NEIGHBOURS) ? CTX_MR + 1 : CTX_MR);
                    d = mq_decode(m, cb, cx);
                }
                int v = VA(cb, i);
                VA(cb, i) = (d ^ (v < 0)) ? v + half : v - half;
                FL(cb, i) = (unsigned short)(f | F_REFINED);
            }
        }
    }
}

/* Cleanup pass, T.800 D.3.4, with run-length coding of full stripe columns; clears VISIT */
T1_DEV void cup(Mq& m, const Cb& cb, int w, int h, int plane, bool vcausal)
{
    int fs = w + 2;
    for (int y0 = 0; y0 < h; y0 += 4) {
        int y1 = y0 + 4 < h ? y0 + 4 : h;
        bool full = y1 - y0 == 4;
        for (int x = 0; x < w; x++) {
            int i = (y0 + 1) * fs + x + 1;
            int y = y0;
            if (full && (FL(cb, i) | FL(cb, i + fs) | FL(cb, i + 2 * fs) | FL(cb, i + 3 * fs)) == 0) {
                if (!mq_decode(m, cb, CTX_RL))
                    continue;
                int r = mq_decode(m, cb, CTX_UNI) << 1;
                r |= mq_decode(m, cb, CTX_UNI);
                i += r * fs;
                y += r;
                decode_sign_mq(m, cb, i, FL(cb, i), fs, plane, vcausal && (y & 3) == 0);
                i += fs;
                y++;
            }
            for (; y < y1; y++, i += fs) {
                int f = FL(cb, i);
                if ((f & (F_SIG | F_VISIT)) == 0 && mq_decode(m, cb, cb.zc[f & F_NEIGHBOURS]))
                    decode_sign_mq(m, cb, i, f, fs, plane, vcausal && (y & 3) == 0);
                FL(cb, i) &= (unsigned short)~F_VISIT;
            }
        }
    }
}

/* Pass k (0 = first cleanup) is raw: BYPASS, after the first 10 passes, SPP or MRP (D.6) */
T1_DEV bool pass_is_raw(int k, i64 style)
{
    return (style & CBLK_BYPASS) != 0 && k >= 10 && (k + 2) % 3 != 2;
}

T1_DEV void reset_contexts(const Cb& cb, const unsigned char* init)
{
    for (int cx = 0; cx < NUM_CONTEXTS; cx++)
        CTX(cb, cx) = init[cx];
}

/* The flag-array state of a block: its sample flags (cb.fl) and vals (cb.va), w x h */
struct Flags {
    int w, h;
};

T1_DEV void pass_spp(Mq& m, const Cb& cb, Flags& st, int plane, bool vcausal, bool raw)
{
    spp(m, cb, st.w, st.h, plane, vcausal, raw);
}

T1_DEV void pass_mrp(Mq& m, const Cb& cb, Flags& st, int plane, bool vcausal, bool raw)
{
    mrp(m, cb, st.w, st.h, plane, raw);
}

T1_DEV void pass_cup(Mq& m, const Cb& cb, Flags& st, int plane, bool vcausal)
{
    cup(m, cb, st.w, st.h, plane, vcausal);
}

#include "mask_passes.cuh"

T1_DEV void pass_spp(Mq& m, const Cb& cb, Masks& st, int plane, bool vcausal, bool raw)
{
    mask_spp(m, cb, st, plane, vcausal, raw);
}

T1_DEV void pass_mrp(Mq& m, const Cb& cb, Masks& st, int plane, bool vcausal, bool raw)
{
    mask_mrp(m, cb, st, plane, vcausal, raw);
}

T1_DEV void pass_cup(Mq& m, const Cb& cb, Masks& st, int plane, bool vcausal)
{
    mask_cup(m, cb, st, plane, vcausal);
}

/* codeblock.py decode_into: the passes of every segment (D.4), RESET (D.5), SEGSYM (D.5),
 * bypass (D.6), on a cleared state (Flags or Masks).  The block is validated.  Returns the
 * status bits. */
template <class State>
T1_DEV int decode_passes(const Cb& cb, State& st, const unsigned char* coded, i64 data_start,
                         const int* seg_lengths, const int* seg_passes, i64 seg_first,
                         i64 seg_count, int num_bps, i64 style, const unsigned char* ctx_init)
{
    reset_contexts(cb, ctx_init);
    bool vcausal = (style & CBLK_VCAUSAL) != 0;
    /* codeblock.py: 3K - 2 passes; those beyond are ignored (and flagged), as OpenJPEG */
    int max_passes = num_bps > 0 ? 3 * num_bps - 2 : 0;
    /* codeblock.py: the last pass's segmentation symbol is not checked */
    i64 last_pass = -1;
    for (i64 j = seg_first; j < wadd(seg_first, seg_count); j++)
        last_pass += seg_passes[j];
    int status = 0;
    int k = 0;
    i64 pos = data_start;
    Mq m;
    m.a = 0;
    m.c = 0;
    m.ct = 0;
    m.bp = coded;
    i64 seg_end = wadd(seg_first, seg_count);
    for (i64 j = seg_first; j < seg_end; j++) {
        i64 start = pos;
        pos += (i64)seg_lengths[j] + 2;
        int npass = seg_passes[j];
        if (npass == 0)
            continue;
        bool raw = pass_is_raw(k, style);
        if (raw) {
            m.c = 0;
            m.ct = 0;
            m.bp = coded + start;
        } else {
            mq_init(m, coded + start);
        }
        for (int q = 0; q < npass; q++) {
            if (k >= max_passes)
                return status | STATUS_TOO_MANY_PASSES;
            if (pass_is_raw(k, style) != raw)
                return status | STATUS_BAD_SEGMENTS;
            int kind = (k + 2) % 3; /* 0 SPP, 1 MRP, 2 CUP */
            int plane = num_bps - 1 - (k + 2) / 3;
            if (kind == 0) {
                pass_spp(m, cb, st, plane, vcausal, raw);
            } else if (kind == 1) {
                pass_mrp(m, cb, st, plane, vcausal, raw);
            } else {
                pass_cup(m, cb, st, plane, vcausal);
                if (style & CBLK_SEGSYM) {
                    int sym = 0;
                    for (int b = 0; b < 4; b++)
                        sym = (sym << 1) | mq_decode(m, cb, CTX_UNI);
                    if (sym != 0xA && k != last_pass)
                        status |= STATUS_SEGSYM;
                }
            }
            if (style & CBLK_RESET)
                reset_contexts(cb, ctx_init);
            k++;
        }
    }
    return status;
}

/* decode_passes on the flag arrays of cb, cleared first */
T1_DEV int decode_into(const Cb& cb, const unsigned char* coded, i64 data_start,
                       const int* seg_lengths, const int* seg_passes, i64 seg_first,
                       i64 seg_count, int w, int h, int num_bps, i64 style,
                       const unsigned char* ctx_init)
{
    int n = (h + 2) * (w + 2);
    for (int i = 0; i < n; i++)
        FL(cb, i) = 0;
    Flags st;
    st.w = w;
    st.h = h;
    return decode_passes(cb, st, coded, data_start, seg_lengths, seg_passes, seg_first,
                         seg_count, num_bps, style, ctx_init);
}

/* Annex H max-shift: a magnitude >= 2^s (2^(s+1) in this convention) is shifted down by s */
T1_DEV int roi_unshift(int v, i64 roishift)
{
    if (roishift <= 0)
        return v;
    int mag = v < 0 ? -v : v;
    if (roishift >= 30 || mag < (1 << (roishift + 1)))
        return v;
    mag >>= roishift;
    return v < 0 ? -mag : mag;
}

#include "ht_decode.cuh"

/* A row's K as the passes take it: every K < 0 (zero bit-planes past Mb, tolerated by tier-2)
 * decodes nothing, as numba's int64 arithmetic has it; check_params caps it above */
T1_DEV int row_bps(i64 k)
{
    return k < 0 ? -1 : (int)k;
}

/* codeblock.py check_params: 0 or the status bits of parameters out of range */
T1_DEV int check_params(i64 w, i64 h, i64 num_bps, i64 orient, i64 roishift)
{
    if (w < 0 || h < 0 || w > MAX_CBLK_SIDE || h > MAX_CBLK_SIDE || w * h > MAX_CBLK_AREA)
        return STATUS_BAD_ROW;
    if (orient < 0 || orient > 3 || roishift < 0)
        return STATUS_BAD_ROW;
    if (num_bps > MAX_NUM_BPS)
        return STATUS_K_TOO_LARGE;
    return 0;
}

/* codeblock.py check_segments: every segment and its 0xFF 0xFF padding inside `coded`.
 * One departure: a position that wraps past 2^63 is refused (numba would index from the end). */
T1_DEV bool check_segments(const unsigned char* coded, i64 n, i64 data_start,
                           const int* seg_lengths, i64 n_lengths, const int* seg_passes,
                           i64 n_passes, i64 seg_first, i64 seg_count)
{
    i64 seg_end = wadd(seg_first, seg_count);
    if (seg_first < 0 || seg_count < 0 || seg_end > n_lengths)
        return false;
    if (seg_end > n_passes || data_start < 0)
        return false;
    i64 pos = data_start;
    for (i64 j = seg_first; j < seg_end; j++) {
        int length = seg_lengths[j];
        if (length < 0 || seg_passes[j] < 0 || seg_passes[j] > 1000)
            return false;
        pos = wadd(pos, length);
        if (pos < 0 || wadd(pos, 2) > n)
            return false;
        if (coded[pos] != 0xFF || coded[pos + 1] != 0xFF)
            return false;
        pos += 2;
    }
    return true;
}

/* codeblock.py check_out_region: all h x w samples at out[off + y * stride + x] inside `out` */
T1_DEV bool check_out_region(i64 out_len, i64 off, i64 w, i64 h, i64 stride)
{
    if (w == 0 || h == 0)
        return true;
    if (off < 0 || stride < w)
        return false;
    return wadd(wadd(off, wmul(h - 1, stride)), w) <= out_len;
}

/* Python slice normalisation of out[start:stop] (numba zeroes a rejected row this way) */
T1_DEV i64 slice_index(i64 i, i64 n)
{
    if (i < 0) {
        i = wadd(i, n);
        return i < 0 ? 0 : i;
    }
    return i > n ? n : i;
}

/* codeblock.py decode_codeblocks' checks of row b: 0 (decode it) or its status bits.
 * *zero: the row is rejected but its output window passed check_out_region, so numba zeroes
 * out[off + y * stride : off + y * stride + w] for y < h (Python slices). */
T1_DEV int check_row(const i64* row, i64 out_len, const unsigned char* coded, i64 coded_len,
                     const int* seg_lengths, i64 n_lengths, const int* seg_passes,
                     i64 n_passes, bool* zero)
{
    *zero = false;
    if (!check_out_region(out_len, row[CB_OUT], row[CB_WIDTH], row[CB_HEIGHT], row[CB_STRIDE]))
        return STATUS_BAD_ROW;
    int st = check_params(row[CB_WIDTH], row[CB_HEIGHT], row[CB_NUM_BPS], row[CB_ORIENT],
                          row[CB_ROISHIFT]);
    if (st == 0 && !check_segments(coded, coded_len, row[CB_DATA], seg_lengths, n_lengths,
                                   seg_passes, n_passes, row[CB_SEG_FIRST], row[CB_SEG_COUNT]))
        st = STATUS_BAD_ROW;
    *zero = st != 0;
    return st;
}

/* The passes of a row's segments, once check_row has passed it (its segments inside the
 * tables): with none, the block's samples are all 0 and its status 0 (D.4: no coding pass,
 * every coefficient zero), on each of the passes' paths (flags, masks, HT). */
T1_DEV i64 row_passes(const i64* row, const int* seg_passes)
{
    i64 n = 0;
    i64 seg_end = wadd(row[CB_SEG_FIRST], row[CB_SEG_COUNT]);
    for (i64 j = row[CB_SEG_FIRST]; j < seg_end; j++)
        n += seg_passes[j];
    return n;
}

/* First launch, before any block is decoded: zero the windows of the rows with nothing to
 * decode, a group of min(32, blockDim.x) threads a row, each thread every group's-width-th
 * sample of a line (a warp writes a line of a block at once).  Rejected rows: their windows,
 * as numba zeroes them (Python slices, in table order, interleaved with the decoding; only a
 * corrupt table, a window reaching into another row's, can tell the two orders apart).  Rows
 * of no pass: all of their window, which the second launch then leaves alone. */
extern "C" __global__ void tier1_zero_rows(
    const unsigned char* coded, i64 coded_len, const i64* table, int ncols, int nblk,
    const int* seg_lengths, i64 n_lengths, const int* seg_passes, i64 n_passes, int* out,
    i64 out_len)
{
    int width = blockDim.x < 32 ? (int)blockDim.x : 32;
    int lane = (int)threadIdx.x % width;
    int groups = (int)(blockDim.x / width) * (int)gridDim.x;
    for (int b = (int)((blockIdx.x * blockDim.x + threadIdx.x) / width); b < nblk; b += groups) {
        const i64* row = table + (size_t)b * ncols;
        bool zero;
        int st = check_row(row, out_len, coded, coded_len, seg_lengths, n_lengths, seg_passes,
                           n_passes, &zero);
        i64 w = row[CB_WIDTH], h = row[CB_HEIGHT], off = row[CB_OUT], stride = row[CB_STRIDE];
        if (zero) {
            for (i64 y = 0; y < h; y++) {
                i64 o = wadd(off, wmul(y, stride));
                i64 lo = slice_index(o, out_len), hi = slice_index(wadd(o, w), out_len);
                for (i64 t = lo + lane; t < hi; t += width)
                    out[t] = 0;
            }
        } else if (st == 0 && row_passes(row, seg_passes) == 0) {
            for (i64 y = 0; y < h; y++) {
                int* o = out + off + y * stride;
                for (i64 x = lane; x < w; x += width)
                    o[x] = 0;
            }
        }
    }
}

/* Decode code-blocks order[q] with the scratch of `cb`, q taken in turn from the counter
 * *next_row (persistent threads: whoever is free takes the next block): the rest of
 * codeblock.py decode_codeblocks. */
T1_DEV void decode_slot(Cb& cb, int* next_row, const unsigned char* coded, i64 coded_len,
                        const i64* table, int ncols, int nblk, const int* order,
                        const int* seg_lengths, i64 n_lengths, const int* seg_passes,
                        i64 n_passes, int* out, i64 out_len, int* status,
                        const unsigned char* s_zc, const unsigned char* s_init,
                        const unsigned short* s_vlc, u64* masks, int mask_words,
                        const unsigned char* s_zc9)
{
    for (;;) {
        int q = atomicAdd(next_row, 1);
        if (q >= nblk)
            break;
        int b = order[q];
        const i64* row = table + (size_t)b * ncols;
        bool zero;
        int st = check_row(row, out_len, coded, coded_len, seg_lengths, n_lengths, seg_passes,
                           n_passes, &zero);
        if (st || row_passes(row, seg_passes) == 0) {   /* zeroed by tier1_zero_rows */
            status[b] = st;
            continue;
        }
        int w = (int)row[CB_WIDTH], h = (int)row[CB_HEIGHT];
        i64 off = row[CB_OUT], stride = row[CB_STRIDE], roishift = row[CB_ROISHIFT];
        cb.zc = s_zc + 256 * (int)row[CB_ORIENT];
        i64 style = row[CB_STYLE];
        int known; /* flags of the samples whose vals hold a decoded value */
        if (!(style & CBLK_HT) && masks && w <= MASK_SIDE && h <= MASK_SIDE
            && 4 * (h + MASK_ROWS_EXTRA) <= mask_words) {
            int rows = h + MASK_ROWS_EXTRA;
            Masks mk;
            mk.sig = masks;
            mk.neg = masks + rows;
            mk.vis = masks + 2 * rows;
            mk.ref = masks + 3 * rows;
            mk.out = out + off;
            mk.stride = stride;
            mk.w = w;
            mk.h = h;
            mk.wmask = w == 64 ? ~0ULL : (1ULL << w) - 1;
            mk.zc9 = s_zc9 + 512 * (int)row[CB_ORIENT];
            mask_clear(mk);
            st = decode_passes(cb, mk, coded, row[CB_DATA], seg_lengths, seg_passes,
                               row[CB_SEG_FIRST], row[CB_SEG_COUNT], row_bps(row[CB_NUM_BPS]),
                               style, s_init);
            if (roishift > 0)
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++)
                        mk.out[y * stride + x] = roi_unshift(mk.out[y * stride + x], roishift);
            status[b] = st;
            continue;
        }
        if (style & CBLK_HT) {
            st = ht_decode_into(cb, coded, row[CB_DATA], seg_lengths, seg_passes,
                                row[CB_SEG_FIRST], row[CB_SEG_COUNT], w, h,
                                row_bps(row[CB_NUM_BPS]), style, s_vlc);
            known = HT_VAL | HT_NEW;
        } else {
            st = decode_into(cb, coded, row[CB_DATA], seg_lengths, seg_passes,
                             row[CB_SEG_FIRST], row[CB_SEG_COUNT], w, h, row_bps(row[CB_NUM_BPS]),
                             style, s_init);
            known = F_SIG;
        }
        int fs = w + 2;
        for (int y = 0; y < h; y++) {
            int* o = out + off + y * stride;
            int i = (y + 1) * fs + 1;
            for (int x = 0; x < w; x++, i++)
                o[x] = (FL(cb, i) & known) ? roi_unshift(VA(cb, i), roishift) : 0;
        }
        status[b] = st;
    }
}

/* The lookup tables into shared memory, per CUDA block */
#define T1_LOAD_TABLES()                                                                     \
    T1_SHARED unsigned int s_mq[94];                                                         \
    T1_SHARED unsigned char s_zc[4 * 256];                                                   \
    T1_SHARED unsigned char s_sc[256];                                                       \
    T1_SHARED unsigned char s_init[NUM_CONTEXTS];                                            \
    T1_SHARED unsigned short s_vlc[2 * 1024];                                                \
    T1_SHARED unsigned char s_zc9[4 * 512];                                                  \
    for (int i = threadIdx.x; i < 4 * 512; i += blockDim.x)                                  \
        s_zc9[i] = zc_by_window(zc_lut + 256 * (i >> 9), i & 511);                           \
    for (int i = threadIdx.x; i < 2 * 1024; i += blockDim.x)                                 \
        s_vlc[i] = vlc_lut[i];                                                               \
    for (int i = threadIdx.x; i < 4 * 256; i += blockDim.x) {                                \
        s_zc[i] = zc_lut[i];                                                                 \
        if (i < 256)                                                                         \
            s_sc[i] = sc_lut[i];                                                             \
        if (i < 94)                                                                          \
            s_mq[i] = mq_lut[i];                                                             \
        if (i < NUM_CONTEXTS)                                                                \
            s_init[i] = ctx_init[i];                                                         \
    }                                                                                        \
    T1_SYNC()

#define T1_DECODE_ARGS                                                                       \
    const unsigned char *coded, i64 coded_len, const i64 *table, int ncols, int nblk,        \
        const int *order, const int *seg_lengths, i64 n_lengths, const int *seg_passes,      \
        i64 n_passes, int *out, i64 out_len, int *status, unsigned short *flags, int *vals,  \
        int nslots, int slot_pitch, int vals_pitch, int lanes, int *next_row,                \
        const unsigned int *mq_lut, const unsigned char *zc_lut, const unsigned char *sc_lut, \
        const unsigned char *ctx_init, const unsigned short *vlc_lut

/* Second launch, flags in global memory: T1_BLOCK threads per CUDA block, `lanes` (1..32) of
 * each warp work, slot = warp * lanes + lane.  flags and vals: (w + 2) * (h + 2) entries per
 * slot, interleaved across slots (slot_pitch = 0) or one run of slot_pitch entries per slot. */
extern "C" __global__ void tier1_decode_thread_per_codeblock(T1_DECODE_ARGS)
{
    T1_LOAD_TABLES();
    T1_SHARED unsigned char s_ctx[NUM_CONTEXTS * T1_BLOCK];
    int lane = threadIdx.x & 31;
    int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    if (lane >= lanes)
        return;
    int slot = warp * lanes + lane;
    if (slot >= nslots)
        return;
    Cb cb;
    size_t base = slot_pitch ? (size_t)slot * (size_t)slot_pitch : (size_t)slot;
    cb.fl = flags + base;
    cb.va = vals + base;
    cb.fst = cb.vst = slot_pitch ? 1 : nslots;
    cb.ctx = s_ctx + threadIdx.x;
    cb.cst = T1_BLOCK;
    cb.mq = s_mq;
    cb.sc = s_sc;
    decode_slot(cb, next_row, coded, coded_len, table, ncols, nblk, order, seg_lengths,
                n_lengths, seg_passes, n_passes, out, out_len, status, s_zc, s_init, s_vlc,
                (u64*)0, 0, s_zc9);
}

/* Second launch, flags in shared memory: warps of `lanes` working threads (1..32), any number
 * of warps per CUDA block; slot = (block * warps + warp) * lanes + lane, local slot ls = warp *
 * lanes + lane.  Dynamic shared memory: the flags of local slot ls at [ls * slot_pitch + i]
 * (uint16), then the contexts (NUM_CONTEXTS bytes per local slot, [cx * local slots + ls]).
 * vals (global): interleaved across slots (vals_pitch = 0) or vals_pitch entries per slot.
 * `flags` is unused. */
extern "C" __global__ void tier1_decode_thread_per_codeblock_shared_flags(T1_DECODE_ARGS)
{
    T1_LOAD_TABLES();
    T1_DYN_SHARED(s_dyn);
    int lane = threadIdx.x & 31;
    if (lane >= lanes)
        return;
    int nlocal = (blockDim.x >> 5) * lanes;
    int ls = (threadIdx.x >> 5) * lanes + lane;
    int slot = blockIdx.x * nlocal + ls;
    if (slot >= nslots)
        return;
    Cb cb;
    cb.fl = s_dyn + ls * slot_pitch;
    cb.fst = 1;
    cb.va = vals_pitch ? vals + (size_t)slot * (size_t)vals_pitch : vals + slot;
    cb.vst = vals_pitch ? 1 : nslots;
    cb.ctx = (unsigned char*)(s_dyn + nlocal * slot_pitch) + ls;
    cb.cst = nlocal;
    cb.mq = s_mq;
    cb.sc = s_sc;
    decode_slot(cb, next_row, coded, coded_len, table, ncols, nblk, order, seg_lengths,
                n_lengths, seg_passes, n_passes, out, out_len, status, s_zc, s_init, s_vlc,
                slot_pitch % 4 ? (u64*)0 : (u64*)(s_dyn + ls * slot_pitch), slot_pitch / 4,
                s_zc9);
}
