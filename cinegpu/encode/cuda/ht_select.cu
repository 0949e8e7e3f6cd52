/* The HT byte budget's choice of planes on the GPU (PCRD-opt, ISO/IEC 15444-1 J.14.2, over the
 * cleanup planes of ITU-T T.814 clause 7): the twins of the numba steps of encode/ht_select.py,
 * which encode/ht_select_gpu.py PlaneChoiceCuda launches (read ht_select.py's docstrings).
 *
 * Per code-block j of n, planes d = 0..m-1, row-major (n, m) float64 inputs:
 *   w[j]           the block's synthesis weight;
 *   dist[j][d]     the squared error with d planes dropped (index units squared);
 *   bits[j][d]     the estimated bits with d planes dropped;
 * slopes are in weighted squared error per estimated bit.
 *
 * ht_hull_steps  hull_steps of wd = w[j] * dist[j][d]: start[j] the plane at lambda -> 0+,
 *                lam[j][k] / nxt[j][k] the k-th move to fewer bits (its slope, its plane),
 *                count[j] moves; lam = inf and nxt = 0 in the rows' unused entries.
 * ht_moves       _moves: block j's moves written at off[j] .. off[j + 1] (off the exclusive
 *                prefix sum of count, n + 1 entries) of slopes and gains (bits saved), and
 *                first_bits[j] = bits[j][start[j]] (summed by the caller).
 * ht_planes_at   _planes_at: d[j] the plane of block j at `slope`, its moves of slope below
 *                it taken (`inclusive` != 0: or equal).
 * ht_planes_at_move  the same at the slope of move `at[0]` of the sorted `slopes` (read on
 *                the device, so that it never comes back to the host): s, clamped to lo if
 *                below it, inclusive, when s <= hi; else hi, exclusive (PlaneChoiceCuda.select).
 *
 * One thread per code-block, grid-stride (any grid and block size; no barriers, no shared
 * memory).  The double arithmetic is numba's, operation for operation: one product
 * w[j] * dist[j][d] (HTS_MUL: __dmul_rn on the GPU, never contracted into an FMA; nvrtc builds
 * with --fmad=false besides), one subtraction each side and one IEEE division per slope, the
 * same comparisons and tie rules, so every output equals the numba twin's bit for bit.
 *
 * The file also compiles as plain C++ (HTS_HOST, ht_select_host.cpp, g++ -ffp-contract=off),
 * so CI checks this code against numba without a GPU.
 */

#ifndef HTS_HOST
#define HTS_MUL(a, b) __dmul_rn((a), (b))
#define HTS_INF __longlong_as_double(0x7ff0000000000000LL)
#endif

typedef long long i64;

extern "C" __global__ void ht_hull_steps(const double* w, const double* dist, const double* bits,
                                         int n, int m, i64* start, double* lam, i64* nxt,
                                         i64* count)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += blockDim.x * gridDim.x) {
        const double wj = w[j];
        const double* dj = dist + (i64)j * m;
        const double* bj = bits + (i64)j * m;
        double* lj = lam + (i64)j * m;
        i64* nj = nxt + (i64)j * m;
        /* the start: least wd, then least bits, then least d */
        int c = 0;
        for (int d = 1; d < m; d++) {
            const double wd = HTS_MUL(wj, dj[d]), wc = HTS_MUL(wj, dj[c]);
            if (wd < wc || (wd == wc && bj[d] < bj[c]))
                c = d;
        }
        start[j] = c;
        /* the moves: from plane c the least slope to fewer bits (ties: fewest bits) */
        int k = 0;
        while (k < m) {
            const double wc = HTS_MUL(wj, dj[c]);
            int best = -1;
            double slope = HTS_INF;
            for (int d = 0; d < m; d++) {
                if (bj[d] < bj[c]) {
                    const double s = (HTS_MUL(wj, dj[d]) - wc) / (bj[c] - bj[d]);
                    if (best < 0 || s < slope || (s == slope && bj[d] < bj[best])) {
                        slope = s;
                        best = d;
                    }
                }
            }
            if (best < 0)
                break;
            lj[k] = slope;
            nj[k] = best;
            c = best;
            k++;
        }
        count[j] = k;
        for (int r = k; r < m; r++) {
            lj[r] = HTS_INF;
            nj[r] = 0;
        }
    }
}

extern "C" __global__ void ht_moves(const i64* start, const double* lam, const i64* nxt,
                                    const i64* count, const double* bits, const i64* off, int n,
                                    int m, double* slopes, double* gains, double* first_bits)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += blockDim.x * gridDim.x) {
        const double* bj = bits + (i64)j * m;
        i64 c = start[j];
        first_bits[j] = bj[c];
        for (i64 k = 0, i = off[j]; k < count[j]; k++, i++) {
            const i64 to = nxt[(i64)j * m + k];
            slopes[i] = lam[(i64)j * m + k];
            gains[i] = bj[c] - bj[to];
            c = to;
        }
    }
}

/* block j's plane at `slope`: its moves of slope below it taken (inclusive: or equal) */
static __device__ i64 plane_at(const i64* start, const double* lam, const i64* nxt, int j, int m,
                               double slope, int inclusive)
{
    i64 c = start[j];
    for (int k = 0; k < m; k++) {
        const double s = lam[(i64)j * m + k];
        if (s < slope || (inclusive && s == slope))
            c = nxt[(i64)j * m + k];
        else
            break;
    }
    return c;
}

extern "C" __global__ void ht_planes_at(const i64* start, const double* lam, const i64* nxt,
                                        int n, int m, double slope, int inclusive, i64* d)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += blockDim.x * gridDim.x)
        d[j] = plane_at(start, lam, nxt, j, m, slope, inclusive);
}

extern "C" __global__ void ht_planes_at_move(const i64* start, const double* lam, const i64* nxt,
                                             int n, int m, const double* slopes, const i64* at,
                                             double lo, double hi, i64* d)
{
    const double s = slopes[at[0]];
    const int inclusive = s <= hi;
    const double slope = inclusive ? (lo > s ? lo : s) : hi;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += blockDim.x * gridDim.x)
        d[j] = plane_at(start, lam, nxt, j, m, slope, inclusive);
}
