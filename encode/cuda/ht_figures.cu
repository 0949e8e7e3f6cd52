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
 *   bits[j][d]  the sum over samples with mu > 0 of 2 + bitlen(2 mu - 1), plus w h / 8.
 *
 * Integers, so the order of the sums does not matter: with a = |q|, mu = a >> d > 0 and
 * r = a mod 2^d, four times the squared error is (2r - 2^d)^2 <= 2^(2d); with mu = 0 it is
 * 4 a^2 < 2^(2d+2).  A legal block has at most 4096 samples, so for d <= HTF_DMAX (20) the
 * block's sum 4 dist < 2^54 fits a u64 (so does every lane's share of it), and being a
 * multiple of 4 for d >= 1 (at most 4096 for d = 0) its double, and the quarter of that, are
 * exact: the numba twin's int64 sums give the same doubles, bit for bit.  The bit counts stay
 * below 34 x 4096.  No double arithmetic but those exact conversions, a quarter and
 * (double)count + w h / 8.0, so --fmad does not matter either.
 *
 * Kernel ht_plane_figures_warp: one warp per code-block (of fewer than 2^31 samples: w h is
 * taken as 32-bit), HTF_WARPS warps per CUDA block
 * (launch exactly HTF_THREADS threads a block); warp q of the grid takes j = q, q + warps,
 * ... < nblk.  Lane l takes the samples i = l, l + 32, ... < w h in raster order (row
 * i / w, column i mod w: consecutive lanes read consecutive samples of a row) and sums per
 * plane in registers (planes unrolled up to HTF_DMAX, those above dmax skipped; zero samples
 * add nothing); the lanes leave their sums in the warp's shared rows and, after __syncwarp,
 * lane d <= dmax adds plane d's 32 sums and writes dist[j][d] and bits[j][d].  A second
 * __syncwarp lets the next block's sums overwrite the rows.  dmax outside 0..HTF_DMAX is the
 * launcher's ValueError (encode/tier1/ht_gpu.py ht_plane_figures_cuda); here it writes
 * nothing.
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
#define HTF_PLANES (HTF_DMAX + 1)
#define HTF_WARPS 4                  /* warps per CUDA block */
#define HTF_THREADS (32 * HTF_WARPS) /* threads per CUDA block: launch exactly this */

/* One warp's shared rows: the lanes' sums per plane, 33 columns so that the lanes writing a
 * plane and the lanes reading their planes meet few bank conflicts */
typedef struct {
    u64 err4[HTF_PLANES][33];         /* 4 x squared error */
    unsigned int count[HTF_PLANES][33]; /* 2 + E bits of the significant samples */
} HtfShared;

#define HTF_SHARED_BYTES ((int)sizeof(HtfShared))

/* Bits of v > 0 */
HTF_DEV int htf_bitlen(unsigned int v) { return 32 - HTF_CLZ32(v); }

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
        unsigned int n = w > 0 && h > 0 ? (unsigned int)(w * h) : 0, uw = (unsigned int)w;
        u64 err4[HTF_PLANES];
        unsigned int count[HTF_PLANES];
#pragma unroll
        for (int d = 0; d < HTF_PLANES; d++) {
            err4[d] = 0;
            count[d] = 0;
        }
        for (unsigned int i = lane; i < n; i += 32) {
            unsigned int y = i / uw;
            int q = flat[off + (i64)y * stride + (i - y * uw)];
            unsigned int a = q < 0 ? 0u - (unsigned int)q : (unsigned int)q;
            if (a == 0)
                continue;
#pragma unroll
            for (int d = 0; d < HTF_PLANES; d++) {
                if (d > dmax)
                    break;
                unsigned int mu = a >> d;
                if (mu) {
                    /* 2 (a - (mu + 1/2) 2^d) = 2r - 2^d, |.| <= 2^d */
                    int t = (int)((a & ((1u << d) - 1)) << 1) - (1 << d);
                    err4[d] += (u64)((i64)t * t);
                    count[d] += 2 + htf_bitlen(2 * mu - 1);
                } else {
                    err4[d] += 4 * ((u64)a * a);
                }
            }
        }
#pragma unroll
        for (int d = 0; d < HTF_PLANES; d++) {
            s->err4[d][lane] = err4[d];
            s->count[d][lane] = count[d];
        }
        __syncwarp();
        if (lane <= dmax) {
            u64 e = 0;
            unsigned int c = 0;
            for (int l = 0; l < 32; l++) {
                e += s->err4[lane][l];
                c += s->count[lane][l];
            }
            dist[(i64)j * (dmax + 1) + lane] = (double)(i64)e * 0.25;
            bits[(i64)j * (dmax + 1) + lane] = (double)c + (double)(w * h) / 8.0;
        }
        __syncwarp();
    }
}
