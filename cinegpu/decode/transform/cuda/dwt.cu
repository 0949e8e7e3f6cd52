// Inverse DWT of T.800 Annex F on the GPU: one 1D_SR (F.3.6) per block.
//
// Each block lifts one line (a row, or a column of a transposed plane) held
// interleaved in shared memory: local index i is absolute position i0 + i, the
// low-pass samples sit at local parity p = i0 & 1, the high-pass ones at 1 - p.
// Periodic symmetric extension (F.3.7) is a reflection of the local index.
// Vertical passes run as row passes on a transposed plane (transpose_b32).
//
// numpy twins: cinegpu.decode.transform.dwt._isr_53 / _isr_97.  The 9/7 steps
// use __fmul_rn/__fadd_rn (and the module is built with --fmad=false) so that
// every operation rounds as the twin's float32 numpy expressions and as
// OpenJPEG 2.5's opj_v8dwt_decode: x + (left + right) * c.
//
// Units: lengths and strides in samples (not bytes).

#include "dwt_common.cuh"

__device__ __forceinline__ int reflect(int j, int n)
{
    // F.3.7 periodic symmetric extension by one sample (n >= 2)
    return j < 0 ? -j : (j >= n ? 2 * n - 2 - j : j);
}

// Row r of the output is rebuilt from low-pass row r of lo and high-pass row r
// of hi; rows >= rows_a come from (lo_b, hi_b) (the LH/HH half of HOR_SR).
template <typename T>
__device__ __forceinline__ void load_line(T *s, int row, int n, int p, int nl, int nh,
                                          const T *lo_a, const T *hi_a, int rows_a,
                                          const T *lo_b, const T *hi_b,
                                          int lo_stride, int hi_stride)
{
    const T *lo, *hi;
    if (row < rows_a) {
        lo = lo_a + (long long)row * lo_stride;
        hi = hi_a + (long long)row * hi_stride;
    } else {
        lo = lo_b + (long long)(row - rows_a) * lo_stride;
        hi = hi_b + (long long)(row - rows_a) * hi_stride;
    }
    for (int k = threadIdx.x; k < nl; k += blockDim.x) s[2 * k + p] = lo[k];
    for (int k = threadIdx.x; k < nh; k += blockDim.x) s[2 * k + 1 - p] = hi[k];
}

extern "C" __global__ void idwt53_rows_i32(
    const int *lo_a, const int *hi_a, int rows_a, const int *lo_b, const int *hi_b,
    int lo_stride, int hi_stride, int nl, int nh, int p, int *out, int out_stride)
{
    extern __shared__ int s53[];
    const int row = blockIdx.x, n = nl + nh;
    load_line(s53, row, n, p, nl, nh, lo_a, hi_a, rows_a, lo_b, hi_b, lo_stride, hi_stride);
    __syncthreads();
    int *dst = out + (long long)row * out_stride;
    if (n == 1) {  // F.3.7: lone sample; odd: Y / 2 (C division, as OpenJPEG)
        if (threadIdx.x == 0) dst[0] = p ? s53[0] / 2 : s53[0];
        return;
    }
    // F-5: X(2n) = Y(2n) - floor((Y(2n-1) + Y(2n+1) + 2) / 4)
    for (int k = threadIdx.x; k < nl; k += blockDim.x) {
        int i = 2 * k + p;
        s53[i] -= (s53[reflect(i - 1, n)] + s53[reflect(i + 1, n)] + 2) >> 2;
    }
    __syncthreads();
    // F-6: X(2n+1) = Y(2n+1) + floor((X(2n) + X(2n+2)) / 2)
    for (int k = threadIdx.x; k < nh; k += blockDim.x) {
        int i = 2 * k + 1 - p;
        s53[i] += (s53[reflect(i - 1, n)] + s53[reflect(i + 1, n)]) >> 1;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = s53[i];
}

__device__ __forceinline__ void lift97(float *s, int n, int first, int count, float c)
{
    // X(i) = X(i) + (X(i-1) + X(i+1)) * c for i = first, first + 2, ...
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
        int i = 2 * k + first;
        s[i] = __fadd_rn(s[i], __fmul_rn(__fadd_rn(s[reflect(i - 1, n)], s[reflect(i + 1, n)]), c));
    }
    __syncthreads();
}

extern "C" __global__ void idwt97_rows_f32(
    const float *lo_a, const float *hi_a, int rows_a, const float *lo_b, const float *hi_b,
    int lo_stride, int hi_stride, int nl, int nh, int p, float *out, int out_stride)
{
    extern __shared__ float s97[];
    const int row = blockIdx.x, n = nl + nh;
    load_line(s97, row, n, p, nl, nh, lo_a, hi_a, rows_a, lo_b, hi_b, lo_stride, hi_stride);
    __syncthreads();
    float *dst = out + (long long)row * out_stride;
    if (n == 1) {  // F.3.7: X = Y, or Y / 2 for a lone odd sample
        if (threadIdx.x == 0) dst[0] = p ? __fmul_rn(s97[0], 0.5f) : s97[0];
        return;
    }
    // F-7 steps 1, 2: low-pass times K, high-pass times 1/K
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s97[i] = __fmul_rn(s97[i], ((i & 1) == p) ? DWT_K : DWT_INV_K_HIGH);
    __syncthreads();
    lift97(s97, n, p, nl, -DWT_DELTA);       // step 3
    lift97(s97, n, 1 - p, nh, -DWT_GAMMA);   // step 4
    lift97(s97, n, p, nl, -DWT_BETA);        // step 5
    lift97(s97, n, 1 - p, nh, -DWT_ALPHA);   // step 6
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = s97[i];
}

// out (cols x rows) = transpose of in (rows x cols); 4-byte elements, bit copy.
// Block 32 x 8 threads, 32 x 32 tile, padded against bank conflicts.
extern "C" __global__ void transpose_b32(const unsigned int *in, unsigned int *out,
                                         int rows, int cols)
{
    __shared__ unsigned int tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8) {
        int y = y0 + j;
        if (x < cols && y < rows) tile[j][threadIdx.x] = in[(long long)y * cols + x];
    }
    __syncthreads();
    int ox = y0 + threadIdx.x;           // column of out = row of in
    int oy0 = blockIdx.x * 32;           // row of out = column of in
    for (int j = threadIdx.y; j < 32; j += 8) {
        int oy = oy0 + j;
        if (ox < rows && oy < cols) out[(long long)oy * rows + ox] = tile[threadIdx.x][j];
    }
}

// ---------------------------------------------------------------------------
// Fused dequantisation + IDWT, components batched (cuda_backend.dequantize_idwt
// and reconstruct_mct).  Two launches a level for every component at once
// (blockIdx.y = component, up to 3 of the same geometry):
//
//  * idwt{53,97}_hor_dq: HOR_SR of one output row per block, reading the
//    tier-1 bands (int32) and dequantising on load (T.800 E.1: 9/7 times
//    Δb / 2, 5/3 halved toward zero); the LL band is the previous level's
//    output (already dequantised) unless ll_done is 0.  Row r of the level
//    goes to its interleaved place (2D_INTERLEAVE, F.3.3).
//  * idwt{53,97}_cols: VER_SR in place on a strip of w = 2^lw columns, the
//    whole column height in shared memory (line i of strip column j at
//    s[(i << lw) + j]): no transposes.
//
// Component c's bands are passed as raw device addresses (ll_c, hl_c, lh_c,
// hh_c) with their four dequantisation factors (9/7; ignored by 5/3); the
// output planes of all components lie in one buffer, cstride samples apart.
// Arithmetic as the kernels above (and the numpy twins), step for step.
//
// Frames of one geometry batched (cuda_backend.reconstruct_mct_frames):
// blockIdx.z = frame f, whose tier-1 bands lie f * fcoeffs bytes after frame
// 0's and whose level planes (a workspace: the LL a level reads when ll_done,
// the planes it writes) lie f * fwork samples after frame 0's; one frame: 0.

// dptr, PICK3 and BANDS_PARAMS: dwt_common.cuh

// The low/high band rows and factors that rebuild level row `row` of component c.
struct RowSource {
    const void *lo;
    const int *hi;
    float qlo, qhi;
    bool lo_done;  // lo holds dequantised values of the transform's type
    int out_row;   // interleaved row index (F.3.3)
};

__device__ __forceinline__ RowSource row_source(
    int c, int row, int ml, int nl, int nh, int pv, int ll_done,
    dptr ll0, dptr hl0, dptr lh0, dptr hh0, float qll0, float qhl0, float qlh0, float qhh0,
    dptr ll1, dptr hl1, dptr lh1, dptr hh1, float qll1, float qhl1, float qlh1, float qhh1,
    dptr ll2, dptr hl2, dptr lh2, dptr hh2, float qll2, float qhl2, float qlh2, float qhh2)
{
    RowSource r;
    const bool top = row < ml;  // a low-pass row: LL and HL; else LH and HH
    const int br = top ? row : row - ml;
    const dptr lo = top ? PICK3(c, ll0, ll1, ll2) : PICK3(c, lh0, lh1, lh2);
    const dptr hi = top ? PICK3(c, hl0, hl1, hl2) : PICK3(c, hh0, hh1, hh2);
    r.lo = (const void *)(lo + 4ull * (unsigned long long)br * (unsigned long long)nl);
    r.hi = (const int *)(hi + 4ull * (unsigned long long)br * (unsigned long long)nh);
    r.qlo = top ? PICK3(c, qll0, qll1, qll2) : PICK3(c, qlh0, qlh1, qlh2);
    r.qhi = top ? PICK3(c, qhl0, qhl1, qhl2) : PICK3(c, qhh0, qhh1, qhh2);
    r.lo_done = top && ll_done;
    r.out_row = top ? 2 * row + pv : 2 * (row - ml) + 1 - pv;
    return r;
}

#define ROW_SOURCE(c, row) row_source(c, row, ml, nl, nh, pv, ll_done, \
    ll0, hl0, lh0, hh0, qll0, qhl0, qlh0, qhh0, ll1, hl1, lh1, hh1, qll1, qhl1, qlh1, qhh1, \
    ll2, hl2, lh2, hh2, qll2, qhl2, qlh2, qhh2)

// The row source of frame blockIdx.z: the bands fcoeffs bytes a frame further on, the LL of
// a level above the first (the workspace, 4-byte samples) fwork samples a frame.
__device__ __forceinline__ RowSource frame_source(RowSource r, long long fcoeffs, long long fwork)
{
    const long long f = blockIdx.z;
    r.lo = (const char *)r.lo + f * (r.lo_done ? 4 * fwork : fcoeffs);
    r.hi = (const int *)((const char *)r.hi + f * fcoeffs);
    return r;
}

// 9/7 lifting step on every column of a strip: line sample i of column j at
// s[(i << lw) + j]; X(i) += (X(i-1) + X(i+1)) * c for i = first, first + 2, ...
__device__ __forceinline__ void lift97_strip(float *s, int n, int lw, int first, int count, float c)
{
    const int w1 = (1 << lw) - 1;
    for (int e = threadIdx.x; e < (count << lw); e += blockDim.x) {
        const int i = 2 * (e >> lw) + first, j = e & w1;
        const float l = s[(reflect(i - 1, n) << lw) + j], r = s[(reflect(i + 1, n) << lw) + j];
        s[(i << lw) + j] = __fadd_rn(s[(i << lw) + j], __fmul_rn(__fadd_rn(l, r), c));
    }
    __syncthreads();
}

// 1D_SR (F.3.8.2) of every column of a strip, n >= 2 lines, low-pass at parity p.
__device__ __forceinline__ void sr97_strip(float *s, int n, int lw, int p)
{
    for (int e = threadIdx.x; e < (n << lw); e += blockDim.x)
        s[e] = __fmul_rn(s[e], (((e >> lw) & 1) == p) ? DWT_K : DWT_INV_K_HIGH);
    __syncthreads();
    const int nl = (n + 1 - p) >> 1, nh = n - nl;
    lift97_strip(s, n, lw, p, nl, -DWT_DELTA);       // step 3
    lift97_strip(s, n, lw, 1 - p, nh, -DWT_GAMMA);   // step 4
    lift97_strip(s, n, lw, p, nl, -DWT_BETA);        // step 5
    lift97_strip(s, n, lw, 1 - p, nh, -DWT_ALPHA);   // step 6
}

// 5/3 (F-5 then F-6) on every column of a strip, n >= 2 lines, low-pass at parity p.
__device__ __forceinline__ void sr53_strip(int *s, int n, int lw, int p)
{
    const int w1 = (1 << lw) - 1;
    const int nl = (n + 1 - p) >> 1, nh = n - nl;
    for (int e = threadIdx.x; e < (nl << lw); e += blockDim.x) {
        const int i = 2 * (e >> lw) + p, j = e & w1;
        s[(i << lw) + j] -= (s[(reflect(i - 1, n) << lw) + j] + s[(reflect(i + 1, n) << lw) + j] + 2) >> 2;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < (nh << lw); e += blockDim.x) {
        const int i = 2 * (e >> lw) + 1 - p, j = e & w1;
        s[(i << lw) + j] += (s[(reflect(i - 1, n) << lw) + j] + s[(reflect(i + 1, n) << lw) + j]) >> 1;
    }
    __syncthreads();
}

// Grid (m, components, frames); block: any width; shared: (nl + nh) floats.  The bands are
// read through the read-only cache (__ldg: no aliasing with the shared stores, so a thread's
// loads of several iterations are in flight together).
extern "C" __global__ void idwt97_hor_dq_f32(
    BANDS_PARAMS(0), BANDS_PARAMS(1), BANDS_PARAMS(2),
    int ll_done, int ml, int nl, int nh, int p, int pv, float *out, long long cstride,
    long long fcoeffs, long long fwork)
{
    extern __shared__ float sh97[];
    const int c = blockIdx.y, n = nl + nh;
    const RowSource src = frame_source(ROW_SOURCE(c, blockIdx.x), fcoeffs, fwork);
    if (src.lo_done) {
        const float *lo = (const float *)src.lo;
#pragma unroll 4
        for (int k = threadIdx.x; k < nl; k += blockDim.x) sh97[2 * k + p] = __ldg(lo + k);
    } else {
        const int *lo = (const int *)src.lo;
#pragma unroll 4
        for (int k = threadIdx.x; k < nl; k += blockDim.x) sh97[2 * k + p] = __fmul_rn((float)__ldg(lo + k), src.qlo);
    }
#pragma unroll 4
    for (int k = threadIdx.x; k < nh; k += blockDim.x) sh97[2 * k + 1 - p] = __fmul_rn((float)__ldg(src.hi + k), src.qhi);
    __syncthreads();
    float *dst = out + blockIdx.z * fwork + c * cstride + (long long)src.out_row * n;
    if (n == 1) {  // F.3.7: X = Y, or Y / 2 for a lone odd sample
        if (threadIdx.x == 0) dst[0] = p ? __fmul_rn(sh97[0], 0.5f) : sh97[0];
        return;
    }
    sr97_strip(sh97, n, 0, p);
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = sh97[i];
}

// Grid (m, components, frames); shared: (nl + nh) ints.  The q factors are unused:
// tier-1 values are halved toward zero (E.1.2, C division), LL too unless ll_done.
extern "C" __global__ void idwt53_hor_dq_i32(
    BANDS_PARAMS(0), BANDS_PARAMS(1), BANDS_PARAMS(2),
    int ll_done, int ml, int nl, int nh, int p, int pv, int *out, long long cstride,
    long long fcoeffs, long long fwork)
{
    extern __shared__ int sh53[];
    const int c = blockIdx.y, n = nl + nh;
    const RowSource src = frame_source(ROW_SOURCE(c, blockIdx.x), fcoeffs, fwork);
    const int *lo = (const int *)src.lo;
    if (src.lo_done) {
#pragma unroll 4
        for (int k = threadIdx.x; k < nl; k += blockDim.x) sh53[2 * k + p] = __ldg(lo + k);
    } else {
#pragma unroll 4
        for (int k = threadIdx.x; k < nl; k += blockDim.x) sh53[2 * k + p] = __ldg(lo + k) / 2;
    }
#pragma unroll 4
    for (int k = threadIdx.x; k < nh; k += blockDim.x) sh53[2 * k + 1 - p] = __ldg(src.hi + k) / 2;
    __syncthreads();
    int *dst = out + blockIdx.z * fwork + c * cstride + (long long)src.out_row * n;
    if (n == 1) {  // F.3.7: lone sample; odd: Y / 2 (C division, as OpenJPEG)
        if (threadIdx.x == 0) dst[0] = p ? sh53[0] / 2 : sh53[0];
        return;
    }
    sr53_strip(sh53, n, 0, p);
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = sh53[i];
}

// VER_SR in place: grid (ceil(n / 2^lw), components, frames); shared: m << lw samples;
// block: any width (512 used).
// buf: components' m x n planes, cstride samples apart, frames fwork apart; pv: parity of v0.
#define COLS_BODY(T, s, LONE, SR)                                                  \
    extern __shared__ T s[];                                                       \
    const int w = 1 << lw, c0 = blockIdx.x << lw, wc = min(w, n - c0);             \
    T *base = buf + blockIdx.z * fwork + blockIdx.y * cstride + c0;               \
    /* loads in batches of 4 a thread: more bytes in flight at low occupancy */ \
    for (int e0 = threadIdx.x; e0 < (m << lw); e0 += 4 * blockDim.x) {            \
        T v[4];                                                                    \
        _Pragma("unroll") for (int u = 0; u < 4; ++u) {                            \
            const int e = e0 + u * blockDim.x, j = e & (w - 1);                    \
            if (e < (m << lw) && j < wc) v[u] = base[(long long)(e >> lw) * n + j]; \
        }                                                                          \
        _Pragma("unroll") for (int u = 0; u < 4; ++u) {                            \
            const int e = e0 + u * blockDim.x, j = e & (w - 1);                    \
            if (e < (m << lw) && j < wc) s[e] = v[u];                              \
        }                                                                          \
    }                                                                              \
    __syncthreads();                                                               \
    if (m == 1) {                                                                  \
        for (int j = threadIdx.x; j < w; j += blockDim.x) s[j] = LONE(s[j]);       \
        __syncthreads();                                                           \
    } else {                                                                       \
        SR(s, m, lw, pv);                                                          \
    }                                                                              \
    for (int e = threadIdx.x; e < (m << lw); e += blockDim.x) {                    \
        const int j = e & (w - 1);                                                 \
        if (j < wc) base[(long long)(e >> lw) * n + j] = s[e];                     \
    }

extern "C" __global__ void idwt97_cols_f32(float *buf, long long cstride, int m, int n, int lw, int pv,
                                           long long fwork)
{
#define LONE97(x) (pv ? __fmul_rn((x), 0.5f) : (x))  // F.3.7: X = Y, or Y / 2 if odd
    COLS_BODY(float, sv97, LONE97, sr97_strip)
#undef LONE97
}

extern "C" __global__ void idwt53_cols_i32(int *buf, long long cstride, int m, int n, int lw, int pv,
                                           long long fwork)
{
#define LONE53(x) (pv ? (x) / 2 : (x))  // F.3.7: lone odd sample halved (C division)
    COLS_BODY(int, sv53, LONE53, sr53_strip)
#undef LONE53
}
