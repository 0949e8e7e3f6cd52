/* PCRD-opt on the GPU (T.800 J.14.3, Taubman's EBCOT): the kernels of encode/rate_gpu.py.
 *
 * pcrd_hull      one thread per code-block: the lower convex hull of its truncation points
 *                (0, 0), (rate_k, D_k) with D_k the running sum of the pass distortions times
 *                the block's weight; the hull's pass indices are kept in the block's own pass
 *                rows as a stack, then turned into segments (passes kept, bytes added, slope
 *                Delta D / Delta R).  Writes the number of segments per block.
 * pcrd_compact   the segments gathered block after block (offsets: the cumsum of the counts).
 * pcrd_passes    the passes each block keeps when, in the slope order, segment i is taken
 *                while i < lims[comp[i]] (the per-component thresholds as counts).
 * pcrd_kept      for every count c in 0..n, the bytes kept when each component takes the
 *                first min(own[comp], c) segments: the curve the frame threshold is read from.
 *
 * The numba twins are encode/rate.py's _cumdist, _hull and _max_passes; pcrd_host.cpp
 * compiles this file for the host so that CI compares the two without a GPU.  Built with
 * --fmad=false (decode/nvrtc.py): every double operation rounds as numba's do.
 */

#ifndef PCRD_HOST_EMULATION
typedef long long i64;
#endif

extern "C" __global__ void pcrd_hull(const i64* rate_off, const int* rates, const double* dists,
                                     const double* weights, int nblocks, double* cumdist,
                                     i64* seg_pass, double* seg_drate, double* seg_slope,
                                     i64* count)
{
    for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < nblocks;
         b += blockDim.x * gridDim.x) {
        const i64 a0 = rate_off[b], a1 = rate_off[b + 1];
        const double w = weights[b];
        double acc = 0.0;
        for (i64 k = a0; k < a1; k++) {
            acc += dists[k];
            cumdist[k] = acc * w;
        }
        /* the stack of hull points (pass rows) lives in seg_pass[a0 .. a0 + top) */
        i64* stack = seg_pass + a0;
        i64 top = 0;
        for (i64 k = a0; k < a1; k++) {
            const double r = (double)rates[k];
            const double d = cumdist[k];
            while (true) {
                double r0 = 0.0, d0 = 0.0;
                if (top > 0) {
                    r0 = (double)rates[stack[top - 1]];
                    d0 = cumdist[stack[top - 1]];
                }
                if (d <= d0)
                    break; /* no gain: never a hull point (for now) */
                if (r <= r0) {
                    /* same or smaller rate, more gain: replaces the previous point */
                    if (top == 0)
                        break;
                    top--;
                    continue;
                }
                const double s = (d - d0) / (r - r0);
                if (top >= 1) {
                    double rp = 0.0, dp = 0.0;
                    if (top >= 2) {
                        rp = (double)rates[stack[top - 2]];
                        dp = cumdist[stack[top - 2]];
                    }
                    const double sp = (d0 - dp) / (r0 - rp);
                    if (s >= sp) {
                        top--;
                        continue;
                    }
                }
                stack[top] = k;
                top++;
                break;
            }
        }
        double r0 = 0.0, d0 = 0.0;
        for (i64 i = 0; i < top; i++) {
            const i64 k = stack[i];
            const double r = (double)rates[k];
            seg_pass[a0 + i] = k - a0 + 1;
            seg_drate[a0 + i] = r - r0;
            seg_slope[a0 + i] = (cumdist[k] - d0) / (r - r0);
            r0 = r;
            d0 = cumdist[k];
        }
        count[b] = top;
    }
}

extern "C" __global__ void pcrd_compact(const i64* rate_off, const i64* count, const i64* seg_off,
                                        const i64* seg_pass, const double* seg_drate,
                                        const double* seg_slope, int nblocks, i64* out_block,
                                        i64* out_pass, double* out_drate, double* out_slope)
{
    for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < nblocks;
         b += blockDim.x * gridDim.x) {
        const i64 a0 = rate_off[b], o = seg_off[b];
        for (i64 i = 0; i < count[b]; i++) {
            out_block[o + i] = b;
            out_pass[o + i] = seg_pass[a0 + i];
            out_drate[o + i] = seg_drate[a0 + i];
            out_slope[o + i] = seg_slope[a0 + i];
        }
    }
}

extern "C" __global__ void pcrd_passes(const i64* block, const i64* npass, const i64* comp,
                                       const i64* lims, int n, int* out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        if (i < lims[comp[i]])
            atomicMax(out + block[i], (int)npass[i]);
    }
}

extern "C" __global__ void pcrd_kept(const double* comp_csum, const i64* own, int ncomp, int n,
                                     double* kept)
{
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c <= n; c += blockDim.x * gridDim.x) {
        double total = 0.0;
        for (int q = 0; q < ncomp; q++) {
            const i64 k = own[q] < c ? own[q] : c;
            if (k > 0)
                total += comp_csum[(i64)q * n + k - 1];
        }
        kept[c] = total;
    }
}
