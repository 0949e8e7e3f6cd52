// The finest decomposition level's VER_SR (T.800 F.3.8) and the inverse MCT with each
// component's DC shift and clip (G.2 / G.3, G.1.2) in one kernel, for three components of one
// geometry: the level's reconstructed values never reach memory, only the samples do
// (cuda_backend._mct_schedule's last launch; before it, dwt.cu's idwt{53,97}_cols then
// pointwise.cu's *_to_samples wrote and read them again).
//
// A block takes FL_TW columns and FL_ROWS lines of the three planes (the level's horizontal
// pass already done: hor_dq's output, m lines x n columns each, cstride samples apart) and
// writes the FL_OUT lines in the middle; the FL_HALO lines above and below are read again by
// the blocks beside it.  A 9/7 output sample depends on the input lines at most 4 away (steps
// 3-6 of F-7 each reach one line further), a 5/3 one on those at most 2 away: each lifting
// step is computed on every loaded line that has both neighbours loaded, and the lines it
// leaves stale (at most 4 from either end after the 4 steps) are never written out.  Lines
// outside 0 .. m-1 are loaded from their mirror images under the periodic symmetric extension
// (F.3.7), which the lifting steps keep symmetric: every kept value is computed from the same
// operands, in the same order, as dwt.cu's column kernel computes it (and the numpy twins
// dwt._isr_97 / _isr_53 then mct / level_shift), bit for bit.
//
// Grid (ceil(n / FL_TW), ceil(m / FL_OUT), frames); block (FL_TW, any); m >= 2 lines (a lone
// line takes the general path).  Frames of one geometry batched on grid z: frame f's planes
// fwork samples after frame 0's, its samples fout after frame 0's.  Units: samples.

#include "dwt_common.cuh"
#include "samples.cuh"

#define FL_TW 32                              // columns a block: a warp reads 128 bytes a line
#define FL_ROWS 64                            // lines a block loads
#define FL_HALO 4                             // lines above and below those it writes
#define FL_OUT (FL_ROWS - 2 * FL_HALO)        // lines a block writes

// F.3.7: the line of 0 .. m-1 that line i (any integer) mirrors, m >= 2.
__device__ __forceinline__ int mirror_line(int i, int m)
{
    const int period = 2 * (m - 1);
    i %= period;
    if (i < 0) i += period;
    return i < m ? i : period - i;
}

// The block's lines of the three components into s: s[c][l][x] = plane c, line i0 + l
// (mirrored), column j0 + x; read through the read-only cache (__ldg), the three components'
// values of a place loaded before any is stored, so that several loads are in flight.
template <typename V>
__device__ __forceinline__ void load_lines(V (*s)[FL_ROWS][FL_TW], const V *buf, long long cstride,
                                           int m, int n, int i0, int j0)
{
#pragma unroll 4
    for (int l = threadIdx.y; l < FL_ROWS; l += blockDim.y) {
        const V *line = buf + (long long)mirror_line(i0 + l, m) * n + j0;
        for (int x = threadIdx.x; x < FL_TW; x += blockDim.x)
            if (j0 + x < n) {
                const V a = __ldg(line + x), b = __ldg(line + cstride + x), c = __ldg(line + 2 * cstride + x);
                s[0][l][x] = a;
                s[1][l][x] = b;
                s[2][l][x] = c;
            }
    }
}

// One lifting step on the loaded lines of parity q (absolute line i0 + l) that have both
// neighbours loaded (1 .. FL_ROWS-2), in the three components: X(l) = step(X(l), X(l-1), X(l+1)).
template <typename V, typename Step>
__device__ __forceinline__ void lift_lines(V (*s)[FL_ROWS][FL_TW], int i0, int q, Step step)
{
    const int first = 1 + ((q - i0 - 1) & 1);
    for (int c = 0; c < 3; ++c)
        for (int l = first + 2 * threadIdx.y; l < FL_ROWS - 1; l += 2 * blockDim.y)
            for (int x = threadIdx.x; x < FL_TW; x += blockDim.x)
                s[c][l][x] = step(s[c][l][x], s[c][l - 1][x], s[c][l + 1][x]);
    __syncthreads();
}

// F-7 steps 3-6: X = X + (left + right) * k, each operation rounded to nearest.
struct Lift97 {
    float k;
    __device__ __forceinline__ float operator()(float x, float left, float right) const
    {
        return __fadd_rn(x, __fmul_rn(__fadd_rn(left, right), k));
    }
};

// F-5, the low-pass lines: X(2n) = Y(2n) - floor((Y(2n-1) + Y(2n+1) + 2) / 4).
struct Lift53Low {
    __device__ __forceinline__ int operator()(int x, int left, int right) const { return x - ((left + right + 2) >> 2); }
};

// F-6, the high-pass lines: X(2n+1) = Y(2n+1) + floor((X(2n) + X(2n+2)) / 2).
struct Lift53High {
    __device__ __forceinline__ int operator()(int x, int left, int right) const { return x + ((left + right) >> 1); }
};

// The filters' VER_SR on a block's tile of lines (the level's horizontal pass done), and the
// inverse MCT of each place's three values that follows it (G.2, G.3).
struct Vertical97 {
    typedef float value;
    __device__ __forceinline__ void operator()(float (*s)[FL_ROWS][FL_TW], int i0, int pv) const
    {
        // F-7 steps 1, 2: low-pass lines (parity pv) times K, high-pass ones times 1/K
        for (int c = 0; c < 3; ++c)
            for (int l = threadIdx.y; l < FL_ROWS; l += blockDim.y)
                for (int x = threadIdx.x; x < FL_TW; x += blockDim.x)
                    s[c][l][x] = __fmul_rn(s[c][l][x], ((i0 + l) & 1) == pv ? DWT_K : DWT_INV_K_HIGH);
        __syncthreads();
        lift_lines(s, i0, pv, Lift97{-DWT_DELTA});        // step 3
        lift_lines(s, i0, 1 - pv, Lift97{-DWT_GAMMA});    // step 4
        lift_lines(s, i0, pv, Lift97{-DWT_BETA});         // step 5
        lift_lines(s, i0, 1 - pv, Lift97{-DWT_ALPHA});    // step 6
    }
    template <typename T>
    __device__ __forceinline__ void mct(float y, float u, float v, T &r, T &g, T &b, int s0, int lo0, int hi0,
                                        int s1, int lo1, int hi1, int s2, int lo2, int hi2) const
    {
        ict_pixel(y, u, v, r, g, b, s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2);
    }
};

struct Vertical53 {
    typedef int value;
    __device__ __forceinline__ void operator()(int (*s)[FL_ROWS][FL_TW], int i0, int pv) const
    {
        lift_lines(s, i0, pv, Lift53Low());         // F-5 on the low-pass lines (parity pv)
        lift_lines(s, i0, 1 - pv, Lift53High());    // F-6 on the high-pass lines
    }
    template <typename T>
    __device__ __forceinline__ void mct(int y0, int y1, int y2, T &r, T &g, T &b, int s0, int lo0, int hi0,
                                        int s1, int lo1, int hi1, int s2, int lo2, int hi2) const
    {
        rct_pixel(y0, y1, y2, r, g, b, s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2);
    }
};

// A block's tile: its lines loaded (mirrored at the level's edges), the filter's VER_SR, then
// the FL_OUT lines in the middle (those of 0 .. m-1) written as samples after the inverse MCT.
template <typename Vertical, typename T>
__device__ __forceinline__ void final_level(const typename Vertical::value *buf, long long cstride, int m, int n,
                                            int pv, long long fwork, T *r, T *g, T *b,
                                            int s0, int lo0, int hi0, int s1, int lo1, int hi1,
                                            int s2, int lo2, int hi2, long long fout)
{
    __shared__ typename Vertical::value s[3][FL_ROWS][FL_TW];
    const Vertical vertical{};
    const int j0 = blockIdx.x * FL_TW, i0 = blockIdx.y * FL_OUT - FL_HALO;
    const long long f = blockIdx.z;
    load_lines(s, buf + f * fwork, cstride, m, n, i0, j0);
    __syncthreads();
    vertical(s, i0, pv);
    const long long o = f * fout;
    for (int l = FL_HALO + threadIdx.y; l < FL_HALO + FL_OUT && i0 + l < m; l += blockDim.y)
        for (int x = threadIdx.x; x < FL_TW && j0 + x < n; x += blockDim.x) {
            const long long at = o + (long long)(i0 + l) * n + j0 + x;
            vertical.mct(s[0][l][x], s[1][l][x], s[2][l][x], r[at], g[at], b[at],
                         s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2);
        }
}

// The kernels: the samples written as int or as the decoder's sample type (suffix _u16, _i16,
// _u8, _i8, as pointwise.cu's *_to_samples; the values are clipped to the precision first).
#define FINAL_LEVEL(name, body, in_t, suffix, T)                                                     \
    extern "C" __global__ void name##suffix(const in_t *buf, long long cstride, int m, int n, int pv,  \
                                            T *r, T *g, T *b,                                        \
                                            int s0, int lo0, int hi0, int s1, int lo1, int hi1,      \
                                            int s2, int lo2, int hi2, long long fwork, long long fout) \
    {                                                                                                \
        final_level<body, T>(buf, cstride, m, n, pv, fwork, r, g, b, s0, lo0, hi0, s1, lo1, hi1, s2,  \
                             lo2, hi2, fout);                                                        \
    }

FOR_SAMPLE_TYPES(FINAL_LEVEL, idwt97_cols_ict_f32, Vertical97, float)
FOR_SAMPLE_TYPES(FINAL_LEVEL, idwt53_cols_rct_i32, Vertical53, int)
