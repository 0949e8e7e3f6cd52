/* Per-plane figures of HT rate control on the GPU: the twin of the numba
 * encode/tier1/ht.py ht_plane_figures (read its docstring), which encode/ht.py's byte budget
 * mode weighs to choose each block's cleanup plane (ITU-T T.814 clause 7.3: a cleanup pass
 * at plane d codes mu = |q| >> d of every sample; 7.3.7 its exponent E).
 *
 * For block j (row rows[j] of the code-block table cb, columns of decode/tier1/codeblock.py)
 * and d = 0..dmax, into row j of dist and bits ((nblk, dmax + 1) float64, row-major):
 *
 *   dist[j][d]  the squared error of the block's indices reconstructed at (mu + 1/2) 2^d,
 *               or 0 where mu = 0, in index units squared;
 *   bits[j][d]  the estimated bits of a cleanup at plane d: per quad (2 x 2 samples) with
 *               A its largest magnitude, n its samples with mu > 0, U = bitlen(2 (A >> d)
 *               - 1): n (U - 1) + 7 bits and the U-VLC term where n > 0, half a bit
 *               (a neighbour significant) or a quarter (MEL) where n = 0; 0 for a block
 *               with no mu > 0.  The exact rule, kappa and the neighbours are the numba
 *               twin's docstring; the sums are integers in eighths.
 *
 * Integers, so the order of the sums does not matter: with a = |q|, mu = a >> d > 0 and
 * r = a mod 2^d, four times the squared error is (2r - 2^d)^2 <= 2^(2d); with mu = 0 it is
 * 4 a^2 < 2^(2d+2).  A legal block has at most 4096 samples, so for d <= HTF_DMAX (20) the
 * block's sum 4 dist < 2^54 fits a u64 (so does every lane's share of it), and being a
 * multiple of 4 for d >= 1 (at most 4096 for d = 0) its double, and the quarter of that, are
 * exact: the numba twin's int64 sums give the same doubles, bit for bit.  The bits, in
 * eighths, stay below 2^21 a block (at most 1136 eighths a quad, 1024 quads and a few).
 * No double arithmetic but those exact conversions, a quarter and an eighth, so --fmad does
 * not matter either.
 *
 * Kernel ht_plane_figures_warp: one warp per code-block (of fewer than 2^31 samples: w h is
 * taken as 32-bit), HTF_WARPS warps per CUDA block
 * (launch exactly HTF_THREADS threads a block); warp q of the grid takes j = q, q + warps,
 * ... < nblk.  Errors: lane l takes the samples i = l, l + 32, ... < w h in raster order
 * (row i / w, column i mod w, stepped without a division: consecutive lanes read
 * consecutive samples of a row; HTF_BATCH of its samples loaded at once) and sums per plane
 * in registers (planes unrolled up to
 * HTF_DMAX; a sample a visits planes d < min(bitlen(a), dmax + 1) only, its 4 a^2 above them
 * going into one sum for all planes, see there; zero samples add nothing); the lanes leave
 * their sums in the warp's shared rows and, after __syncwarp, lane d <= dmax adds plane d's
 * 32 sums and writes dist[j][d].  Bits: lane l
 * takes the quads i = l, l + 32, ... of the block in raster order (ceil(w / 2) a line-pair)
 * and writes each one's A into the warp's shared quad table (the memory the error sums used);
 * after __syncwarp it takes the same quads again, reads their left neighbour and the three
 * above in the table, and adds their cost per plane in registers for the planes below the
 * quad's top bit (the planes where it has a significant sample); the empty planes above cost
 * 4 or 2 eighths each, which the lane keeps as steps in its column of the count rows (where
 * the cost starts and where it drops) and sums over the planes once.  The lanes' sums are added
 * as the errors were, with the block's largest magnitude (a shuffle reduction) zeroing the
 * planes where it has none.  dmax outside 0..HTF_DMAX, and blocks of more than HTF_QUADS
 * quads, are the launcher's ValueError (encode/tier1/ht_gpu.py ht_plane_figures_cuda); here
 * nothing is written for them.
 *
 * The file also compiles as plain C++ (HTF_HOST, ht_figures_host.cpp, whose lanes are
 * host_warp.h's cooperative contexts), so CI checks this code against numba without a GPU.
 */

#ifndef HTF_HOST
#define HTF_DEV __device__ __forceinline__
#define HTF_SHARED __shared__
#define HTF_CLZ32(x) __clz((int)(x))
#endif

typedef long long i64;
typedef unsigned long long u64;

/* Code-block table columns (decode/tier1/codeblock.py CB_*) */
#define CB_OUT 7
#define CB_WIDTH 8
#define CB_HEIGHT 9
#define CB_STRIDE 10

#define HTF_DMAX 20                  /* encode/tier1/ht.py FIGURES_DMAX */
#define HTF_QUADS 1024               /* encode/tier1/ht.py FIGURES_QUADS: most quads a block */
#define HTF_PLANES (HTF_DMAX + 1)
#define HTF_WARPS 4                  /* warps per CUDA block */
#define HTF_THREADS (32 * HTF_WARPS) /* threads per CUDA block: launch exactly this */
#define HTF_BATCH 4                  /* samples a lane loads at once in the error pass */

/* One warp's shared rows: the lanes' sums per plane, 33 columns so that the lanes writing a
 * plane and the lanes reading their planes meet few bank conflicts; the quads' largest
 * magnitudes for the bits pass share the error sums' memory (used after those are added) */
typedef struct {
    union {
        u64 err4[HTF_PLANES][33];                 /* 4 x squared error */
        unsigned int quad[HTF_QUADS];             /* each quad's A, in raster order */
    } u;
    unsigned int count[HTF_PLANES][33]; /* estimated bits in eighths */
} HtfShared;

#define HTF_SHARED_BYTES ((int)sizeof(HtfShared))

/* Bits of v > 0 */
HTF_DEV int htf_bitlen(unsigned int v) { return 32 - HTF_CLZ32(v); }

/* Bits of v >= 0 */
HTF_DEV int htf_bitlen0(unsigned int v) { return v ? htf_bitlen(v) : 0; }

/* Magnitude of q, 0 outside the block */
HTF_DEV unsigned int htf_mag(const int* flat, i64 at, bool inside)
{
    int q = inside ? flat[at] : 0;
    return q < 0 ? 0u - (unsigned int)q : (unsigned int)q;
}

/* A lane's place in a raster of w > 0 columns, stepping 32 places at a time without a
 * division a step: (y, x) of place i, and the step's (32 / w, 32 mod w) */
typedef struct {
    unsigned int y, x, sy, sx;
} HtfStep;

HTF_DEV HtfStep htf_step(int lane, unsigned int w)
{
    HtfStep at;
    w = w ? w : 1;                      /* no places then: never stepped */
    at.y = (unsigned int)lane / w;
    at.x = (unsigned int)lane - at.y * w;
    at.sy = 32u / w;
    at.sx = 32u - at.sy * w;
    return at;
}

HTF_DEV void htf_next(HtfStep* at, unsigned int w)
{
    at->x += at->sx;
    at->y += at->sy;
    if (at->x >= w) {
        at->x -= w;
        at->y++;
    }
}

extern "C" __global__ void ht_plane_figures_warp(const int* flat, const i64* cb, int ncols,
                                                 int nblk, const i64* rows, int dmax,
                                                 double* dist, double* bits)
{
    HTF_SHARED HtfShared shared[HTF_WARPS];
    if (dmax < 0 || dmax > HTF_DMAX)
        return;
    int lane = threadIdx.x & 31;
    HtfShared* s = &shared[threadIdx.x >> 5];
    int warps = gridDim.x * HTF_WARPS;
    for (int j = blockIdx.x * HTF_WARPS + (threadIdx.x >> 5); j < nblk; j += warps) {
        const i64* r = cb + rows[j] * ncols;
        i64 w = r[CB_WIDTH], h = r[CB_HEIGHT], off = r[CB_OUT], stride = r[CB_STRIDE];
        i64 qw = w > 0 ? (w + 1) >> 1 : 0, qh = h > 0 ? (h + 1) >> 1 : 0;
        if (qw * qh > HTF_QUADS)
            continue;                       /* the same for every lane */
        unsigned int n = w > 0 && h > 0 ? (unsigned int)(w * h) : 0, uw = (unsigned int)w;
        unsigned int top = 0;               /* the lane's largest magnitude */
        {
            /* Four times the error at plane d is 4 a^2 from a's first zero plane bitlen(a)
             * up, (2r - 2^d)^2 below it: so the lane keeps sum4 = sum of 4 a^2 and, per
             * plane, less[d] = sum over the samples with bitlen(a) > d of (2r - 2^d)^2
             * - 4 a^2, and 4 dist = sum4 + less[d].  In u64, modulo 2^64, which the true
             * sums (below 2^54) come out of exactly; a sample costs bitlen(a) planes, not
             * dmax + 1. */
            u64 sum4 = 0, less[HTF_PLANES];
#pragma unroll
            for (int d = 0; d < HTF_PLANES; d++)
                less[d] = 0;
            HtfStep at = htf_step(lane, uw);
            for (unsigned int i = lane; i < n; i += 32 * HTF_BATCH) {
                /* HTF_BATCH samples loaded before any is used, so that their loads overlap */
                int qs[HTF_BATCH];
#pragma unroll
                for (int u = 0; u < HTF_BATCH; u++) {
                    qs[u] = i + 32 * u < n ? flat[off + (i64)at.y * stride + at.x] : 0;
                    htf_next(&at, uw);
                }
#pragma unroll
                for (int u = 0; u < HTF_BATCH; u++) {
                    int q = qs[u];
                    unsigned int a = q < 0 ? 0u - (unsigned int)q : (unsigned int)q;
                    if (a == 0)
                        continue;
                    top = a > top ? a : top;
                    u64 a4 = 4 * ((u64)a * a);
                    sum4 += a4;
                    int b = htf_bitlen(a);
#pragma unroll
                    for (int d = 0; d < HTF_PLANES; d++) {
                        if (d >= b || d > dmax)
                            break;
                        /* 2 (a - (mu + 1/2) 2^d) = 2r - 2^d, |.| <= 2^d */
                        int t = (int)((a & ((1u << d) - 1)) << 1) - (1 << d);
                        less[d] += (u64)((i64)t * t) - a4;
                    }
                }
            }
#pragma unroll
            for (int d = 0; d < HTF_PLANES; d++)
                s->u.err4[d][lane] = sum4 + less[d];
            __syncwarp();
            if (lane <= dmax) {
                u64 e = 0;
                for (int l = 0; l < 32; l++)
                    e += s->u.err4[lane][l];
                dist[(i64)j * (dmax + 1) + lane] = (double)(i64)e * 0.25;
            }
            __syncwarp();
        }
        for (int k = 16; k > 0; k >>= 1) {  /* the block's largest magnitude, in every lane */
            unsigned int o = __shfl_down_sync(0xffffffffu, top, k);
            top = o > top ? o : top;
        }
        top = (unsigned int)__shfl_sync(0xffffffffu, (int)top, 0);

        unsigned int count[HTF_PLANES];
#pragma unroll
        for (int d = 0; d < HTF_PLANES; d++) {
            count[d] = 0;
            s->count[d][lane] = 0;          /* the lane's empty-plane steps, by plane */
        }
        unsigned int quads = (unsigned int)(qw * qh), uqw = (unsigned int)qw;
        HtfStep qat = htf_step(lane, uqw);
        for (unsigned int i = lane; i < quads; i += 32, htf_next(&qat, uqw)) {
            unsigned int qy = qat.y, qx = qat.x;
            i64 y = 2 * (i64)qy, x = 2 * (i64)qx, at = off + y * stride + x;
            bool two = y + 1 < h, right = x + 1 < w;
            unsigned int a0 = htf_mag(flat, at, true), a1 = htf_mag(flat, at + 1, right);
            unsigned int a2 = htf_mag(flat, at + stride, two);
            unsigned int a3 = htf_mag(flat, at + stride + 1, two && right);
            unsigned int m01 = a0 > a1 ? a0 : a1, m23 = a2 > a3 ? a2 : a3;
            s->u.quad[i] = m01 > m23 ? m01 : m23;
        }
        __syncwarp();
        qat = htf_step(lane, uqw);
        for (unsigned int i = lane; i < quads; i += 32, htf_next(&qat, uqw)) {
            unsigned int qy = qat.y, qx = qat.x;
            i64 y = 2 * (i64)qy, x = 2 * (i64)qx, at = off + y * stride + x;
            bool two = y + 1 < h, right = x + 1 < w;
            int b0 = htf_bitlen0(htf_mag(flat, at, true));
            int b1 = htf_bitlen0(htf_mag(flat, at + 1, right));
            int b2 = htf_bitlen0(htf_mag(flat, at + stride, two));
            int b3 = htf_bitlen0(htf_mag(flat, at + stride + 1, two && right));
            const unsigned int* quad = s->u.quad;
            unsigned int amax = quad[i], left = qx ? quad[i - 1] : 0, above = 0;
            if (qy) {                       /* the (up to) three quads above */
                const unsigned int* up = quad + (i - uqw);
                above = up[0];
                if (qx && up[-1] > above)
                    above = up[-1];
                if (qx + 1 < uqw && up[1] > above)
                    above = up[1];
            }
            /* see _exponents: the exponent of a >> d < B is B - d + (d < L) */
            int qtop = htf_bitlen0(amax);
            int qlow = amax ? htf_bitlen0(amax ^ (1u << (qtop - 1))) : 0;
            int atop = htf_bitlen0(above);
            int alow = above ? htf_bitlen0(above ^ (1u << (atop - 1))) : 0;
            int ctx = htf_bitlen0(left | above);
            /* empty from plane qtop up: 4 eighths (a CxtVLC symbol) while d < ctx, a
             * significant neighbour, 2 (a MEL symbol) from there; as steps of the lane's
             * column, summed over the planes once at the end */
            if (qtop <= dmax) {
                s->count[qtop][lane] += ctx > qtop ? 4 : 2;
                if (ctx > qtop && ctx <= dmax)
                    s->count[ctx][lane] -= 2;
            }
#pragma unroll
            for (int d = 0; d < HTF_PLANES; d++) {
                if (d > dmax || d >= qtop)
                    break;
                int nsig = (b0 > d) + (b1 > d) + (b2 > d) + (b3 > d);
                int big = qtop - d + (d < qlow);        /* U_q (7.3.7) */
                int kappa = 1;
                if (nsig > 1 && d < atop) {  /* above = 0 on the first line-pair */
                    int k = atop - d + (d < alow) - 1;
                    kappa = k > 1 ? k : 1;
                }
                unsigned int c = 8 * (unsigned int)(nsig * (big - 1) + 7);
                if (big > kappa)
                    c += 8 * (unsigned int)(htf_bitlen((unsigned int)(big - kappa)) + 1);
                count[d] += c;
            }
        }
        unsigned int step = 0;
#pragma unroll
        for (int d = 0; d < HTF_PLANES; d++) {
            step += s->count[d][lane];
            s->count[d][lane] = count[d] + step;
        }
        __syncwarp();
        if (lane <= dmax) {
            unsigned int c = 0;
            for (int l = 0; l < 32; l++)
                c += s->count[lane][l];
            bits[(i64)j * (dmax + 1) + lane] = (top >> lane) ? (double)c / 8.0 : 0.0;
        }
        __syncwarp();
    }
}
