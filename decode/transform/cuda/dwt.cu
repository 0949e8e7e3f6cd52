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

// T.800 Table F.4 (float32, as OpenJPEG); INV_K_HIGH: see dwt.py.
#define DWT_ALPHA (-1.586134342f)
#define DWT_BETA (-0.052980118f)
#define DWT_GAMMA (0.882911075f)
#define DWT_DELTA (0.443506852f)
#define DWT_K (1.230174105f)
#define DWT_INV_K_HIGH (0.8128662109375f)

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
