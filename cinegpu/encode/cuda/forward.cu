// Forward stage of the encoder (T.800 G.1.2, G.2, G.3, F.4.8, E.1) on the GPU.
// Numpy twins: cinegpu.decode.transform.forward_ict / fdwt_97 (_sd_97) and
// cinegpu.encode.forward.quantize_band.  Compiled with --fmad=false and written in
// the twins' float32 evaluation order, so results agree to the bit.
// Reversible path: forward_rct / fdwt_53 (_sd_53), int32 as the twins (additions
// wrap modulo 2^32 as numpy's, >> is the floor division of F-9 / F-10 and G-5).

// T.800 Table F.4 (float32, as cinegpu.decode.transform.dwt)
#define ALPHA (-1.586134342f)
#define BETA (-0.052980118f)
#define GAMMA (0.882911075f)
#define DELTA (0.443506852f)
#define K_LOW ((float)(1.0 / 1.230174104914001))
#define K_HIGH ((float)1.230174104914001)

// DC level shift (G.1.2) of one component, int32 samples -> float32.
extern "C" __global__ void dc_shift_f32(const int* x, float* out, float shift, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        out[i] = (float)x[i] - shift;
}

// DC level shift then the forward ICT (G.3, G-7) of components 0-2.
extern "C" __global__ void dc_shift_ict_f32(const int* r, const int* g, const int* b,
                                            float s0, float s1, float s2,
                                            float* y, float* cb, float* cr, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        float R = (float)r[i] - s0, G = (float)g[i] - s1, B = (float)b[i] - s2;
        y[i] = 0.299f * R + 0.587f * G + 0.114f * B;
        cb[i] = -0.16875f * R - 0.33126f * G + 0.5f * B;
        cr[i] = 0.5f * R - 0.41869f * G - 0.08131f * B;
    }
}

// ------------------------------------------------------------- 1D_SD -------
// 1D_SD (F.4.8) of lines of a row-major plane: the columns of an (n, lines) plane
// (sd*_cols*) or the rows of a (lines, n) plane (sd*_rows*).  A thread lifts a segment of
// one line in registers: a window of the segment's samples and SD_H more on each side, read
// at the periodic symmetric extension's positions (F.3.7: sample g of the line is sample
// sd_reflect(g, n)), every lifting step run over the window's inner samples (its two end
// samples stay as read).  A step reads neighbours at +-1 of the step before, so the 9/7's
// outputs depend on inputs within +-4 (the 5/3's within +-2): with SD_H = 4 every output is
// exact, the window's outer samples are not.  Lifting the extension gives the twins'
// results to the bit (_sd_97 / _sd_53 mirror a neighbour at the ends: i - 1 -> i + 1 at 0,
// i + 1 -> i - 1 at n - 1): a step's operation is symmetric in its two neighbours (a + b
// first, in either order the same float), so the extension stays mirrored about 0 and
// n - 1 step by step.  A line of one sample is copied, or doubled at an odd coordinate.
//   Columns (sd_cols): a thread a column, a warp along a row, the window read and the
//     outputs written coalesced from and to global memory, SDC_S outputs a segment; no
//     shared memory, no barriers.  Grid (gpu.py): (ceil(lines / threads), ceil(n / SDC_S)).
//   Rows (sd_rows): a block takes SD_ROWS rows by SD_S outputs; it copies their samples and
//     the halo into shared memory (coalesced, asynchronously where the GPU can: every copy
//     of the tile in flight at once), each thread lifts one row's window in registers and
//     puts its outputs back, and the block writes them (coalesced).  Grid (gpu.py):
//     (ceil(n / SD_S), ceil(lines / SD_ROWS)), a block of one warp.
// Blocks loop over line groups and segments, so any grid is correct, and any block size.
#define SD_H 4                        // halo samples on each side
#define SDC_S 32                      // columns: output samples of a line per segment
#define SDC_W (SDC_S + 2 * SD_H)      // columns: a thread's window
#define SD_S 64                       // rows: output samples of a line per segment
#define SD_BUF (SD_S + 2 * SD_H)      // rows: samples of a line in shared memory (its window)
#define SD_ROWS 32                    // rows per block
#define SD_PITCH (SD_BUF + 1)         // a row's samples in shared memory: odd, so that the
                                      // threads reading their own rows meet no bank twice
static_assert(SD_S / 2 == SD_ROWS, "sd_rows' one-warp row store: a sample pair a thread");
static_assert(SDC_S % 2 == 0 && SD_S % 2 == 0 && SD_H % 2 == 0,
              "a window's sample i has the parity of its line position");

// Position g of a line of n >= 2 samples under the periodic symmetric extension (F.3.7,
// period 2 (n - 1)): the sample it repeats, 0 .. n - 1.
__device__ __forceinline__ int sd_reflect(int g, int n)
{
    int per = 2 * (n - 1);
    g %= per;
    if (g < 0)
        g += per;
    return g > n - 1 ? per - g : g;
}

// One lifting step over a window v of W samples whose sample i has the parity of i + P:
// v[i] = op(v[i], v[i - 1], v[i + 1]) for the inner samples of parity PAR (1: high-pass
// positions, 0: low-pass).  The neighbours are of the other parity, so the order of the
// samples changes no result.
template <int P, int PAR, int W, typename T, typename Op>
__device__ __forceinline__ void sd_step(T (&v)[W], Op op)
{
#pragma unroll
    for (int i = 1; i < W - 1; i++)
        if (((i + P) & 1) == PAR)
            v[i] = op(v[i], v[i - 1], v[i + 1]);
}

// Async copy of one sample from global to shared memory (cp.async, sm_80 and later; a
// plain copy elsewhere), complete for the thread after sd_copies_wait().
template <typename T>
__device__ __forceinline__ void sd_copy(T* to_shared, const T* from)
{
    static_assert(sizeof(T) == 4, "cp.async of 4 bytes");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned int at = (unsigned int)__cvta_generic_to_shared(to_shared);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(at), "l"(from));
#else
    *to_shared = *from;
#endif
}

__device__ __forceinline__ void sd_copies_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// A line of one sample (F.4.8): copied to the low band, or doubled to the high one when its
// coordinate is odd (p = 1).
template <typename F, typename T, typename Sink>
__device__ __forceinline__ void sd_lone(const Sink& out, int line, int p, T v)
{
    if (p == 0)
        out.low(line, 0, v);
    else
        out.high(line, 0, F::lone_high(v));
}

// sd_cols' segment [r0, r1) of column `line`, P the parity of the first row; EDGE: the
// window reaches past the column's ends (read at sd_reflect's rows).
template <typename F, int P, bool EDGE, typename T, typename Sink>
__device__ __forceinline__ void sd_col_segment(const T* x, const Sink& out, int n, int lines,
                                               int line, int r0, int r1)
{
    T v[SDC_W];
#pragma unroll
    for (int i = 0; i < SDC_W; i++) {   // unrolled: every load of the window in flight
        int g = r0 - SD_H + i;
        v[i] = x[(long long)(EDGE ? sd_reflect(g, n) : g) * lines + line];
    }
    F::template lift<P>(v);
#pragma unroll
    for (int i = SD_H; i < SD_H + SDC_S; i++) {
        int g = r0 - SD_H + i;
        if (g < r1) {
            if (((i + P) & 1) == 0)
                out.low(line, (g - P) >> 1, v[i]);
            else
                out.high(line, (g + P - 1) >> 1, F::high(v[i]));
        }
    }
}

// 1D_SD (filter F: Sd97 or Sd53) down the `lines` columns of an (n, lines) plane x, p the
// parity of the first row: low samples (i + p even) to the sink as sample (i - p) / 2 of
// their column, high ones as (i + p - 1) / 2.
template <typename F, typename T, typename Sink>
__device__ __forceinline__ void sd_cols(const T* x, const Sink& out, int n, int lines, int p)
{
    int ngroups = (lines + blockDim.x - 1) / blockDim.x, nseg = (n + SDC_S - 1) / SDC_S;
    for (int grp = blockIdx.x; grp < ngroups; grp += gridDim.x) {
        int line = grp * blockDim.x + threadIdx.x;
        if (line >= lines)
            continue;
        if (n == 1) {
            if (blockIdx.y == 0)
                sd_lone<F>(out, line, p, x[line]);
            continue;
        }
        for (int seg = blockIdx.y; seg < nseg; seg += gridDim.y) {
            int r0 = seg * SDC_S, r1 = r0 + SDC_S < n ? r0 + SDC_S : n;
            bool edge = r0 < SD_H || r0 + SDC_S + SD_H > n;
            if (p == 0) {
                if (edge) sd_col_segment<F, 0, true>(x, out, n, lines, line, r0, r1);
                else sd_col_segment<F, 0, false>(x, out, n, lines, line, r0, r1);
            } else {
                if (edge) sd_col_segment<F, 1, true>(x, out, n, lines, line, r0, r1);
                else sd_col_segment<F, 1, false>(x, out, n, lines, line, r0, r1);
            }
        }
    }
}

// sd_rows' lifting of one row's window in shared memory (row: the window, line positions
// r0 - SD_H ..), P the parity of the first sample: into registers, lifted, the segment's
// outputs back in place (the high ones not yet scaled).
template <typename F, int P, typename T>
__device__ __forceinline__ void sd_row_lift(T* row)
{
    T v[SD_BUF];
#pragma unroll
    for (int i = 0; i < SD_BUF; i++)
        v[i] = row[i];
    F::template lift<P>(v);
#pragma unroll
    for (int i = SD_H; i < SD_H + SD_S; i++)
        row[i] = v[i];
}

// Where 1D_SD's outputs go: low sample k of line `line` to lo, high sample k to hi, laid
// out as the input ((nl, lines) / (lines, nl) and so on).
template <bool COLS, typename T>
struct PlaneSink {
    T* lo;
    T* hi;
    int lines, nl, nh;
    __device__ void low(int line, int k, T v) const
    {
        lo[COLS ? (long long)k * lines + line : (long long)line * nl + k] = v;
    }
    __device__ void high(int line, int k, T v) const
    {
        hi[COLS ? (long long)k * lines + line : (long long)line * nh + k] = v;
    }
    // One row's outputs (rows only), as low / high of that line: its low samples at lo,
    // its high ones at hi
    struct Row {
        T* lo;
        T* hi;
        __device__ void low(int k, T v) const { lo[k] = v; }
        __device__ void high(int k, T v) const { hi[k] = v; }
    };
    __device__ Row row(int line) const
    {
        return {lo + (long long)line * nl, hi + (long long)line * nh};
    }
    __device__ void fold(int, const Row&) const {}
};

// 1D_SD (filter F) along the `lines` rows of n samples of a (lines, n) plane x, p the
// parity of the first sample, outputs to the sink as sd_cols'; s: the block's shared
// SD_PITCH * SD_ROWS samples.
template <typename F, typename T, typename Sink>
__device__ __forceinline__ void sd_rows(const T* x, const Sink& out, int n, int lines, int p,
                                        T* s)
{
    int ngroups = (lines + SD_ROWS - 1) / SD_ROWS, nseg = (n + SD_S - 1) / SD_S;
    // gpu.py's block: a warp, the loads and stores along each row in turn without the
    // general loop's (row, sample) of each item; any other block size takes the general loop
    bool one_warp = blockDim.x == SD_ROWS;
    for (int grp = blockIdx.y; grp < ngroups; grp += gridDim.y) {
        int l0 = grp * SD_ROWS;
        int nlines = lines - l0 < SD_ROWS ? lines - l0 : SD_ROWS;
        if (n == 1) {
            for (int t = threadIdx.x; blockIdx.x == 0 && t < nlines; t += blockDim.x)
                sd_lone<F>(out, l0 + t, p, x[l0 + t]);
            continue;
        }
        for (int seg = blockIdx.x; seg < nseg; seg += gridDim.x) {
            int r0 = seg * SD_S, r1 = r0 + SD_S < n ? r0 + SD_S : n, w0 = r0 - SD_H;
            bool edge = r0 < SD_H || r0 + SD_S + SD_H > n;
            const T* x0 = x + (long long)l0 * n;
            if (one_warp) {
#pragma unroll 4
                for (int line = 0; line < nlines; line++)
#pragma unroll
                    for (int k = 0; k < (SD_BUF + SD_ROWS - 1) / SD_ROWS; k++) {
                        int b = threadIdx.x + k * SD_ROWS, g = w0 + b;
                        if (b < SD_BUF)
                            sd_copy(s + line * SD_PITCH + b,
                                    x0 + (long long)line * n + (edge ? sd_reflect(g, n) : g));
                    }
            } else {
                for (int t = threadIdx.x; t < nlines * SD_BUF; t += blockDim.x) {
                    int line = t / SD_BUF, b = t % SD_BUF, g = w0 + b;
                    sd_copy(s + line * SD_PITCH + b,
                            x0 + (long long)line * n + (edge ? sd_reflect(g, n) : g));
                }
            }
            sd_copies_wait();
            __syncthreads();
            for (int line = threadIdx.x; line < nlines; line += blockDim.x) {
                if (p == 0)
                    sd_row_lift<F, 0>(s + line * SD_PITCH);
                else
                    sd_row_lift<F, 1>(s + line * SD_PITCH);
            }
            __syncthreads();
            int fl = r0 + ((r0 + p) & 1), fh = r0 + ((r0 + p + 1) & 1);
            if (one_warp) {          // the warp along each row in turn
                for (int line = 0; line < nlines; line++) {
                    auto row = out.row(l0 + line);
                    const T* sl = s + line * SD_PITCH - w0;
                    int i = fl + 2 * threadIdx.x;
                    if (i < r1) row.low((i - p) >> 1, sl[i]);
                    i = fh + 2 * threadIdx.x;
                    if (i < r1) row.high((i + p - 1) >> 1, F::high(sl[i]));
                    out.fold(l0 + line, row);
                }
            } else {
                for (int t = threadIdx.x; t < nlines * (SD_S / 2); t += blockDim.x) {
                    int line = t / (SD_S / 2), q = t % (SD_S / 2);
                    const T* sl = s + line * SD_PITCH - w0;
                    int i = fl + 2 * q;
                    if (i < r1) out.low(l0 + line, (i - p) >> 1, sl[i]);
                    i = fh + 2 * q;
                    if (i < r1) out.high(l0 + line, (i + p - 1) >> 1, F::high(sl[i]));
                }
            }
            __syncthreads();  // the next segment reuses s
        }
    }
}

// 9/7 lifting step of F-8 in the twin's float32 order: t = a + b; t *= c; x + t.
struct Lift97 {
    float c;
    __device__ float operator()(float x, float a, float b) const
    {
        float t = a + b;
        t *= c;
        return x + t;
    }
};

// The last 9/7 step, with the low-pass scaling: (x + (a + b) * DELTA) / K.
struct Lift97Last {
    __device__ float operator()(float x, float a, float b) const
    {
        float t = a + b;
        t *= DELTA;
        return (x + t) * K_LOW;
    }
};

// 1D_SD with the 9/7 filter (F.4.8.2): the four lifting steps, the high-pass scaling.
struct Sd97 {
    template <int P, int W>
    __device__ static void lift(float (&v)[W])
    {
        sd_step<P, 1>(v, Lift97{ALPHA});
        sd_step<P, 0>(v, Lift97{BETA});
        sd_step<P, 1>(v, Lift97{GAMMA});
        sd_step<P, 0>(v, Lift97Last());
    }
    __device__ static float high(float v) { return v * K_HIGH; }
    __device__ static float lone_high(float v) { return v * 2.0f; }
};

// 1D_SD with the 9/7 filter (F.4.8.2) down every column of a row-major (n, w) plane;
// p: parity of the first row.  Low-pass rows go to lo (nl, w), high-pass rows to hi
// (nh, w).  Grid: (ceil(w / threads), ceil(n / SDC_S)), as sd_cols'.
extern "C" __global__ void sd97_cols(const float* x, float* lo, float* hi, int n, int w, int p)
{
    int nl = (n - p + 1) / 2;
    PlaneSink<true, float> out = {lo, hi, w, nl, n - nl};
    sd_cols<Sd97>(x, out, n, w, p);
}

// The same along every row of a row-major (m, n) plane: lo (m, nl), hi (m, nh).
// Grid: (ceil(n / SD_S), ceil(m / SD_ROWS)).
extern "C" __global__ void sd97_rows(const float* x, float* lo, float* hi, int n, int m, int p)
{
    __shared__ float s[SD_PITCH * SD_ROWS];
    int nl = (n - p + 1) / 2;
    PlaneSink<false, float> out = {lo, hi, m, nl, n - nl};
    sd_rows<Sd97>(x, out, n, m, p, s);
}

// Deadzone quantisation (E.1): q = sign(c) floor(|c| * (1 / Delta_b)), into out + offset.
extern "C" __global__ void quantize_f32(const float* c, int* out, long long offset, float inv,
                                        long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        float v = c[i];
        int q = (int)floorf(fabsf(v) * inv);
        out[offset + i] = v < 0.0f ? -q : q;
    }
}

// ------------------------------------------------------------- reversible -------

// int32 a + b wrapping modulo 2^32 as numpy's int32 (no signed-overflow UB).
__device__ __forceinline__ int add_wrap(int a, int b)
{
    return (int)((unsigned int)a + (unsigned int)b);
}

// int32 a - b wrapping modulo 2^32.
__device__ __forceinline__ int sub_wrap(int a, int b)
{
    return (int)((unsigned int)a - (unsigned int)b);
}

// DC level shift (G.1.2) of one component, int32 -> int32 (x - shift).
extern "C" __global__ void dc_shift_i32(const int* x, int* out, int shift, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        out[i] = sub_wrap(x[i], shift);
}

// DC level shift then the forward RCT (G.2, G-5) of components 0-2, int32:
// Y0 = floor((R + 2G + B) / 4), Y1 = B - G, Y2 = R - G.
extern "C" __global__ void dc_shift_rct_i32(const int* r, const int* g, const int* b,
                                            int s0, int s1, int s2,
                                            int* y0, int* y1, int* y2, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        int R = sub_wrap(r[i], s0), G = sub_wrap(g[i], s1), B = sub_wrap(b[i], s2);
        y0[i] = add_wrap(add_wrap(R, add_wrap(G, G)), B) >> 2;
        y1[i] = sub_wrap(B, G);
        y2[i] = sub_wrap(R, G);
    }
}

// 5/3 predict step (F-9): Y(2k+1) = X(2k+1) - floor((X(2k) + X(2k+2)) / 2), int32 wrapping.
struct Predict53 {
    __device__ int operator()(int x, int a, int b) const { return sub_wrap(x, add_wrap(a, b) >> 1); }
};

// 5/3 update step (F-10): Y(2k) = X(2k) + floor((Y(2k-1) + Y(2k+1) + 2) / 4).
struct Update53 {
    __device__ int operator()(int x, int a, int b) const
    {
        return add_wrap(x, add_wrap(add_wrap(a, b), 2) >> 2);
    }
};

// 1D_SD with the 5/3 filter (F.4.8.1): predict then update; a lone odd sample is doubled.
struct Sd53 {
    template <int P, int W>
    __device__ static void lift(int (&v)[W])
    {
        sd_step<P, 1>(v, Predict53());
        sd_step<P, 0>(v, Update53());
    }
    __device__ static int high(int v) { return v; }
    __device__ static int lone_high(int v) { return add_wrap(v, v); }
};

// 1D_SD with the 5/3 filter (F.4.8.1, F-9 then F-10) down every column of a row-major
// int32 (n, w) plane, as sd97_cols (same tiles, grid and outputs):
//   Y(2k+1) = X(2k+1) - floor((X(2k) + X(2k+2)) / 2)
//   Y(2k)   = X(2k)   + floor((Y(2k-1) + Y(2k+1) + 2) / 4)
// with the periodic symmetric extension of F.3.7.  p: parity of the first row.
extern "C" __global__ void sd53_cols_i32(const int* x, int* lo, int* hi, int n, int w, int p)
{
    int nl = (n - p + 1) / 2;
    PlaneSink<true, int> out = {lo, hi, w, nl, n - nl};
    sd_cols<Sd53>(x, out, n, w, p);
}

// The same along every row of a row-major int32 (m, n) plane, as sd97_rows.
extern "C" __global__ void sd53_rows_i32(const int* x, int* lo, int* hi, int n, int m, int p)
{
    __shared__ int s[SD_PITCH * SD_ROWS];
    int nl = (n - p + 1) / 2;
    PlaneSink<false, int> out = {lo, hi, m, nl, n - nl};
    sd_rows<Sd53>(x, out, n, m, p, s);
}

// ------------------------------------------------------------- batched, fused -------
// The forward stage of a tile whose components (at most 3) share one geometry, in two
// launches a DWT level for all components at once (cinegpu.encode.gpu.forward_tile_cuda's
// batched path; blockIdx.z = component, planes stacked in one buffer `cs` samples apart):
//   colour_{f32,i32}_<in>: DC level shift (and ICT / RCT) read from the input's own sample
//     type and strides (the components of an interleaved image read in place), optionally
//     after IMF's code-value scaling (code_value: no int32 planes from code_values first);
//   sd{97,53}_cols_c: VER_SD, low rows then high rows into one (n, w) plane per component;
//   sd{97,53}_rows_q: HOR_SD of that plane with the quantisation (E.1) of the level's final
//     bands fused: HL, LH, HH (and LL at the last level) written as indices straight into
//     the tile's flat buffer, the LL plane kept for the next level.
// Each sample is computed by the same operations as the per-component kernels above (and
// their numpy twins), so the flat buffer is the same to the bit.

// A sample as colour_* read it: itself (peak <= 0), or IMF's R'G'B' code value at
// peak = 2^bits - 1, rint(peak clip(x scale, 0, 1)) with scale float32 1 / top, in the float32
// operations of rgb_to_xyz12's in_gamma <= 0 branch (cinegpu.encode.gpu.code_values; twin:
// cinegpu.encode.forward.code_value_samples), so that the colour kernel reading an image in
// place codes what code_values' int32 planes would give it.
template <typename In>
__device__ __forceinline__ int code_value(In x, float scale, float peak)
{
    if (peak <= 0.0f)
        return (int)x;
    float s = (float)x * scale;
    s = s < 0.0f ? 0.0f : (s > 1.0f ? 1.0f : s);
    return (int)rintf(s * peak);
}

// DC level shift (and ICT, G-7) of up to 3 components read as In at element strides rs
// (rows) and ps (samples) from x0, x1, x2 (each sample first its code value where peak > 0:
// code_value), into out + c * cs (h x w float32 planes).
template <typename In>
__device__ __forceinline__ void colour_f32(const In* x0, const In* x1, const In* x2,
                                           long long rs, long long ps, int h, int w,
                                           int ncomp, int mct, float s0, float s1, float s2,
                                           float* out, long long cs, float scale, float peak)
{
    for (int r = blockIdx.y; r < h; r += gridDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < w; c += blockDim.x * gridDim.x) {
            long long src = r * rs + c * ps, i = (long long)r * w + c;
            float R = (float)code_value(x0[src], scale, peak) - s0;
            if (ncomp < 2) {
                out[i] = R;
                continue;
            }
            float G = (float)code_value(x1[src], scale, peak) - s1;
            if (ncomp < 3) {
                out[i] = R;
                out[cs + i] = G;
                continue;
            }
            float B = (float)code_value(x2[src], scale, peak) - s2;
            if (mct) {
                out[i] = 0.299f * R + 0.587f * G + 0.114f * B;
                out[cs + i] = -0.16875f * R - 0.33126f * G + 0.5f * B;
                out[2 * cs + i] = 0.5f * R - 0.41869f * G - 0.08131f * B;
            } else {
                out[i] = R;
                out[cs + i] = G;
                out[2 * cs + i] = B;
            }
        }
}

// The same for the reversible path: int32 shift (and RCT, G-5), wrapping as numpy's.
template <typename In>
__device__ __forceinline__ void colour_i32(const In* x0, const In* x1, const In* x2,
                                           long long rs, long long ps, int h, int w,
                                           int ncomp, int mct, int s0, int s1, int s2,
                                           int* out, long long cs, float scale, float peak)
{
    for (int r = blockIdx.y; r < h; r += gridDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < w; c += blockDim.x * gridDim.x) {
            long long src = r * rs + c * ps, i = (long long)r * w + c;
            int R = sub_wrap(code_value(x0[src], scale, peak), s0);
            if (ncomp < 2) {
                out[i] = R;
                continue;
            }
            int G = sub_wrap(code_value(x1[src], scale, peak), s1);
            if (ncomp < 3) {
                out[i] = R;
                out[cs + i] = G;
                continue;
            }
            int B = sub_wrap(code_value(x2[src], scale, peak), s2);
            if (mct) {
                out[i] = add_wrap(add_wrap(R, add_wrap(G, G)), B) >> 2;
                out[cs + i] = sub_wrap(B, G);
                out[2 * cs + i] = sub_wrap(R, G);
            } else {
                out[i] = R;
                out[cs + i] = G;
                out[2 * cs + i] = B;
            }
        }
}

#define COLOUR(name, In)                                                                      \
    extern "C" __global__ void colour_f32_##name(                                            \
        const In* x0, const In* x1, const In* x2, long long rs, long long ps, int h, int w,  \
        int ncomp, int mct, float s0, float s1, float s2, float* out, long long cs,          \
        float scale, float peak)                                                             \
    {                                                                                        \
        colour_f32<In>(x0, x1, x2, rs, ps, h, w, ncomp, mct, s0, s1, s2, out, cs, scale,     \
                       peak);                                                                \
    }                                                                                        \
    extern "C" __global__ void colour_i32_##name(                                            \
        const In* x0, const In* x1, const In* x2, long long rs, long long ps, int h, int w,  \
        int ncomp, int mct, int s0, int s1, int s2, int* out, long long cs, float scale,     \
        float peak)                                                                          \
    {                                                                                        \
        colour_i32<In>(x0, x1, x2, rs, ps, h, w, ncomp, mct, s0, s1, s2, out, cs, scale,     \
                       peak);                                                                \
    }
COLOUR(u8, unsigned char)
COLOUR(u16, unsigned short)
COLOUR(i16, short)
COLOUR(i32, int)

// VER_SD of every column of component z's (n, w) plane at x + z * cs into out + z * cs:
// its nl low rows, then its n - nl high rows.  Grid: (ceil(w / threads), ceil(n / SDC_S),
// components).
extern "C" __global__ void sd97_cols_c(const float* x, float* out, long long cs, int n, int w,
                                       int p)
{
    int nl = (n - p + 1) / 2;
    float* o = out + blockIdx.z * cs;
    PlaneSink<true, float> sink = {o, o + (long long)nl * w, w, nl, n - nl};
    sd_cols<Sd97>(x + blockIdx.z * cs, sink, n, w, p);
}

extern "C" __global__ void sd53_cols_c(const int* x, int* out, long long cs, int n, int w,
                                       int p)
{
    int nl = (n - p + 1) / 2;
    int* o = out + blockIdx.z * cs;
    PlaneSink<true, int> sink = {o, o + (long long)nl * w, w, nl, n - nl};
    sd_cols<Sd53>(x + blockIdx.z * cs, sink, n, w, p);
}

// E.1 index of a coefficient: sign(c) floor(|c| / Delta_b) (9/7, as quantize_f32), or the
// integer coefficient itself (5/3).
__device__ __forceinline__ int band_index(float v, float inv)
{
    int q = (int)floorf(fabsf(v) * inv);
    return v < 0.0f ? -q : q;
}
__device__ __forceinline__ int band_index(int v, float) { return v; }

// |q| as unsigned, so that |INT_MIN| is exact (as band_absmax_i32).
__device__ __forceinline__ unsigned int abs_index(int q)
{
    return q < 0 ? 0u - (unsigned int)q : (unsigned int)q;
}

// HOR_SD's outputs of one level plane (its first nlv rows the vertical low-pass half): the
// low half's low samples are LL (to the plane ll, nlv x nl, or with ll_q as indices to
// flat), every other band is written as indices into flat.  Band j of the component
// (0 LL, 1 HL, 2 LH, 3 HH) starts at flat[off[j]], row-major, quantised with inv[j]; the
// largest |index| this thread wrote to band j is kept in top[j] (band_maxima).
template <typename T>
struct BandSink {
    T* ll;
    int* flat;
    long long off[4];   // in registers: a row's band pointers without a load from memory
    float inv[4];
    int nlv, nl, nh, ll_q;
    mutable unsigned int top[4];
    __device__ void put(int j, long long at, int q) const
    {
        flat[off[j] + at] = q;
        unsigned int a = abs_index(q);
        top[j] = a > top[j] ? a : top[j];
    }
    __device__ void low(int line, int k, T v) const
    {
        if (line >= nlv)
            put(2, (long long)(line - nlv) * nl + k, band_index(v, inv[2]));
        else if (ll_q)
            put(0, (long long)line * nl + k, band_index(v, inv[0]));
        else
            ll[(long long)line * nl + k] = v;
    }
    __device__ void high(int line, int k, T v) const
    {
        if (line >= nlv)
            put(3, (long long)(line - nlv) * nh + k, band_index(v, inv[3]));
        else
            put(1, (long long)line * nh + k, band_index(v, inv[1]));
    }
    // One row's outputs, as low / high of that line with the band chosen once: the low
    // samples into the LL plane at ll (not quantised) or as indices at lo, the high ones as
    // indices at hi; the largest |index| of each in mlo, mhi until fold() keeps them
    struct Row {
        T* ll;
        int* lo;
        int* hi;
        float ilo, ihi;
        mutable unsigned int mlo, mhi;
        __device__ void low(int k, T v) const
        {
            if (ll) {
                ll[k] = v;
                return;
            }
            int q = band_index(v, ilo);
            lo[k] = q;
            unsigned int a = abs_index(q);
            mlo = a > mlo ? a : mlo;
        }
        __device__ void high(int k, T v) const
        {
            int q = band_index(v, ihi);
            hi[k] = q;
            unsigned int a = abs_index(q);
            mhi = a > mhi ? a : mhi;
        }
    };
    __device__ Row row(int line) const
    {
        if (line >= nlv) {
            long long r = line - nlv;
            return {nullptr, flat + off[2] + r * nl, flat + off[3] + r * nh, inv[2], inv[3],
                    0, 0};
        }
        return {ll_q ? nullptr : ll + (long long)line * nl, flat + off[0] + (long long)line * nl,
                flat + off[1] + (long long)line * nh, inv[0], inv[1], 0, 0};
    }
    __device__ void fold(int line, const Row& r) const
    {
        int j = line >= nlv ? 2 : 0;
        if (j) {
            top[2] = r.mlo > top[2] ? r.mlo : top[2];
            top[3] = r.mhi > top[3] ? r.mhi : top[3];
        } else {
            top[0] = r.mlo > top[0] ? r.mlo : top[0];
            top[1] = r.mhi > top[1] ? r.mhi : top[1];
        }
    }
};

// The block's largest |index| of each band (the threads' BandSink tops) into tops[0..3]
// (atomicMax; tops zeroed before the level's launch): the guard-bit check's figures
// (E-2) without another pass over the flat buffer.  Twin: band_absmax_i32.
template <typename T>
__device__ __forceinline__ void band_maxima(const BandSink<T>& sink, unsigned int* tops)
{
    __shared__ unsigned int best[4];
    if (threadIdx.x < 4)
        best[threadIdx.x] = 0;
    __syncthreads();
    for (int j = 0; j < 4; j++)
        if (sink.top[j])
            atomicMax(&best[j], sink.top[j]);
    __syncthreads();
    if (threadIdx.x < 4 && best[threadIdx.x])
        atomicMax(tops + threadIdx.x, best[threadIdx.x]);
}

// HOR_SD of component z's (m, n) level plane at x + z * xcs (rows [0, nlv) low-pass), LL to
// ll + z * llcs, the bands to flat at offs[4 z ..] with inv[4 z ..] (BandSink), each band's
// largest |index| to tops[4 z ..] (band_maxima).  Grid: (ceil(n / SD_S), ceil(m / SD_ROWS),
// components).
extern "C" __global__ void sd97_rows_q(const float* x, long long xcs, int n, int m, int p,
                                       int nlv, float* ll, long long llcs, int* flat,
                                       const long long* offs, const float* inv, int ll_q,
                                       unsigned int* tops)
{
    __shared__ float s[SD_PITCH * SD_ROWS];
    int z = blockIdx.z, nl = (n - p + 1) / 2;
    const long long* o = offs + 4 * z;
    const float* q = inv + 4 * z;
    BandSink<float> sink = {ll + z * llcs, flat, {o[0], o[1], o[2], o[3]},
                            {q[0], q[1], q[2], q[3]}, nlv, nl, n - nl, ll_q, {0, 0, 0, 0}};
    sd_rows<Sd97>(x + z * xcs, sink, n, m, p, s);
    band_maxima(sink, tops + 4 * z);
}

extern "C" __global__ void sd53_rows_q(const int* x, long long xcs, int n, int m, int p,
                                       int nlv, int* ll, long long llcs, int* flat,
                                       const long long* offs, const float* inv, int ll_q,
                                       unsigned int* tops)
{
    __shared__ int s[SD_PITCH * SD_ROWS];
    int z = blockIdx.z, nl = (n - p + 1) / 2;
    const long long* o = offs + 4 * z;
    const float* q = inv + 4 * z;
    BandSink<int> sink = {ll + z * llcs, flat, {o[0], o[1], o[2], o[3]},
                          {q[0], q[1], q[2], q[3]}, nlv, nl, n - nl, ll_q, {0, 0, 0, 0}};
    sd_rows<Sd53>(x + z * xcs, sink, n, m, p, s);
    band_maxima(sink, tops + 4 * z);
}

// ------------------------------------------------------------- guard bits -------

// Largest |index| of each band of a flat buffer (band b: flat[off[b] .. off[b] + len[b])),
// as unsigned so that |INT_MIN| is exact; out must be zeroed.  Grid: (chunks, bands).
// Twin: the per-band np.abs(...).max() of cinegpu.encode.encoder.Encoder._guard_bits.
extern "C" __global__ void band_absmax_i32(const int* flat, const long long* off,
                                           const long long* len, unsigned int* out)
{
    __shared__ unsigned int best[256];
    int b = blockIdx.y;
    long long n = len[b];
    const int* x = flat + off[b];
    unsigned int m = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        int v = x[i];
        unsigned int a = v < 0 ? 0u - (unsigned int)v : (unsigned int)v;
        m = a > m ? a : m;
    }
    best[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x])
            best[threadIdx.x] = best[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0 && best[0])
        atomicMax(out + b, best[0]);
}

// Clip band b's indices (flat[off[b] .. off[b] + len[b])) to [-lim[b], lim[b]] in place,
// this block's share of them (grid x).
__device__ __forceinline__ void clip_band(int* flat, const long long* off, const long long* len,
                                          const int* lim, int b)
{
    long long n = len[b];
    int* x = flat + off[b];
    int hi = lim[b];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        int v = x[i];
        x[i] = v > hi ? hi : (v < -hi ? -hi : v);
    }
}

// Clip each band's indices to [-lim[b], lim[b]] in place (the DCI profile keeps its guard
// bits and clips, E.1 / Encoder._guard_bits).  Grid: (chunks, bands).
extern "C" __global__ void band_clip_i32(int* flat, const long long* off, const long long* len,
                                         const int* lim)
{
    clip_band(flat, off, len, lim, blockIdx.y);
}

// The same for the bands of the batched path's tables (gpu.py band_tables: off, len, lim per
// level, component and band, len 0 where unused), where tops[b], the band's largest |index|
// from the row pass (band_maxima), is above lim[b]: the others are not read at all.
// Grid: (chunks, table entries).
extern "C" __global__ void band_clip_over_i32(int* flat, const long long* off,
                                              const long long* len, const int* lim,
                                              const unsigned int* tops)
{
    int b = blockIdx.y;
    if (tops[b] > (unsigned int)lim[b])
        clip_band(flat, off, len, lim, b);
}

// ------------------------------------------------------------- early stop -------

// Histogram of the bit lengths of |v| (0 for a zero index, 32 for |INT_MIN|) over n int32
// indices, added to out[0..32]: the frame statistic of early stop (encode/early_stop.py).
// Each block counts in shared memory and adds its 33 counts to out once.  Grid: any.
// Twin: cinegpu.encode.early_stop._histogram.
#define HIST_BINS 33
extern "C" __global__ void bit_length_histogram(const int* v, long long n,
                                                unsigned long long* out)
{
    __shared__ unsigned int h[HIST_BINS];
    for (int i = threadIdx.x; i < HIST_BINS; i += blockDim.x)
        h[i] = 0;
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        int x = v[i];
        unsigned int m = x < 0 ? 0u - (unsigned int)x : (unsigned int)x;
        atomicAdd(&h[m ? 32 - __clz((int)m) : 0], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < HIST_BINS; i += blockDim.x)
        if (h[i])
            atomicAdd(out + i, (unsigned long long)h[i]);
}

// ------------------------------------------------------------- sample checks -------

// Smallest and largest sample of one component plane of an input image, a strided view
// (h rows of w samples; element strides rs between rows, ps between samples, as an
// (H, W, C) image's component is), as int64 into out[0] (min) and out[1] (max), which must
// hold LLONG_MAX and LLONG_MIN.  Grid: (column chunks, row chunks); each block reduces in
// shared memory (256 threads) and meets the others through atomics once.
// Twin: the (c.min(), c.max()) of cinegpu.encode.encoder._extremes on the host.
#define EXT_THREADS 256
template <typename T>
__device__ __forceinline__ void plane_extremes(const T* x, long long h, long long w,
                                               long long rs, long long ps, long long* out)
{
    __shared__ long long lo[EXT_THREADS], hi[EXT_THREADS];
    long long a = 0x7fffffffffffffffLL, b = -a - 1;
    for (long long r = blockIdx.y; r < h; r += gridDim.y)
        for (long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x; c < w;
             c += (long long)blockDim.x * gridDim.x) {
            long long v = (long long)x[r * rs + c * ps];
            a = v < a ? v : a;
            b = v > b ? v : b;
        }
    lo[threadIdx.x] = a;
    hi[threadIdx.x] = b;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            if (lo[threadIdx.x + s] < lo[threadIdx.x])
                lo[threadIdx.x] = lo[threadIdx.x + s];
            if (hi[threadIdx.x + s] > hi[threadIdx.x])
                hi[threadIdx.x] = hi[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        atomicMin(out, lo[0]);
        atomicMax(out + 1, hi[0]);
    }
}

#define PLANE_EXTREMES(name, T)                                                              \
    extern "C" __global__ void name(const T* x, long long h, long long w, long long rs,     \
                                    long long ps, long long* out)                          \
    {                                                                                       \
        plane_extremes<T>(x, h, w, rs, ps, out);                                            \
    }
PLANE_EXTREMES(plane_extremes_u8, unsigned char)
PLANE_EXTREMES(plane_extremes_i8, signed char)
PLANE_EXTREMES(plane_extremes_u16, unsigned short)
PLANE_EXTREMES(plane_extremes_i16, short)
PLANE_EXTREMES(plane_extremes_u32, unsigned int)
PLANE_EXTREMES(plane_extremes_i32, int)
PLANE_EXTREMES(plane_extremes_i64, long long)

// Smallest and largest sample of every component of a C-contiguous interleaved image
// (n elements, component of element e: e % ncomp, ncomp <= 4) in one pass, into out[2 c]
// (min) and out[2 c + 1] (max) preset as for plane_extremes.  blockDim.x (at most
// EXT_THREADS) must be a multiple of ncomp: thread t then reads component t % ncomp only,
// and thread c < ncomp of each block gathers its component's extremes.  Grid: any.
// Twin: the per-component (c.min(), c.max()) of cinegpu.encode.encoder._extremes.
template <typename T>
__device__ __forceinline__ void image_extremes(const T* x, long long n, int ncomp,
                                               long long* out)
{
    __shared__ long long lo[EXT_THREADS], hi[EXT_THREADS];
    long long a = 0x7fffffffffffffffLL, b = -a - 1;
    long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (long long e = first; e < n; e += (long long)blockDim.x * gridDim.x) {
        long long v = (long long)x[e];
        a = v < a ? v : a;
        b = v > b ? v : b;
    }
    lo[threadIdx.x] = a;
    hi[threadIdx.x] = b;
    __syncthreads();
    int t = threadIdx.x;
    if (t < ncomp) {
        for (int j = t + ncomp; j < (int)blockDim.x; j += ncomp) {
            a = lo[j] < a ? lo[j] : a;
            b = hi[j] > b ? hi[j] : b;
        }
        atomicMin(out + 2 * t, a);
        atomicMax(out + 2 * t + 1, b);
    }
}

#define IMAGE_EXTREMES(name, T)                                                              \
    extern "C" __global__ void name(const T* x, long long n, int ncomp, long long* out)     \
    {                                                                                       \
        image_extremes<T>(x, n, ncomp, out);                                                \
    }
IMAGE_EXTREMES(image_extremes_u8, unsigned char)
IMAGE_EXTREMES(image_extremes_i8, signed char)
IMAGE_EXTREMES(image_extremes_u16, unsigned short)
IMAGE_EXTREMES(image_extremes_i16, short)
IMAGE_EXTREMES(image_extremes_u32, unsigned int)
IMAGE_EXTREMES(image_extremes_i32, int)
IMAGE_EXTREMES(image_extremes_i64, long long)

// ------------------------------------------------------------- mastering colour -------

// Display-encoded RGB (or X'Y'Z') samples -> DCI X'Y'Z' 12-bit code values (ST 428-1), one
// pixel per thread, interleaved (H, W, 3) input -> three int32 planes.  Twin:
// cinegpu.media.colour.to_xyz12 of cinegpu.media.images_in.unit_scale's samples, in the same
// float32 order: V = clip(s * scale, 0, 1) (scale: float32 1 / top, as unit_scale);
// lin = V ^ in_gamma; XYZ = M lin (M already divided by 52.37 / 48);
// CV = rint(peak clip(XYZ, 0, 1) ^ (1 / 2.6)).  in_gamma <= 0: no transform (the input is
// X'Y'Z', or IMF R'G'B' at peak = 2^bits - 1), CV = rint(peak V), exactly numpy's.
template <typename T>
__device__ __forceinline__ void rgb_to_xyz12(const T* img, long long npix, float scale,
                                             float in_gamma, const float* m, float inv_gamma,
                                             float peak, int* x, int* y, int* z)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < npix;
         i += (long long)blockDim.x * gridDim.x) {
        float v[3];
        for (int ch = 0; ch < 3; ch++) {
            float s = (float)img[3 * i + ch] * scale;
            v[ch] = s < 0.0f ? 0.0f : (s > 1.0f ? 1.0f : s);
        }
        int* out[3] = {x, y, z};
        if (in_gamma <= 0.0f) {
            for (int ch = 0; ch < 3; ch++)
                out[ch][i] = (int)rintf(v[ch] * peak);
            continue;
        }
        float lin[3];
        for (int ch = 0; ch < 3; ch++)
            lin[ch] = powf(v[ch], in_gamma);
        for (int ch = 0; ch < 3; ch++) {
            float t = lin[0] * m[3 * ch];
            t += lin[1] * m[3 * ch + 1];
            t += lin[2] * m[3 * ch + 2];
            t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
            t = powf(t, inv_gamma);
            out[ch][i] = (int)rintf(t * peak);
        }
    }
}

extern "C" __global__ void rgb_to_xyz12_u16(const unsigned short* img, long long npix, float scale,
                                            float in_gamma, const float* m, float inv_gamma,
                                            float peak, int* x, int* y, int* z)
{
    rgb_to_xyz12(img, npix, scale, in_gamma, m, inv_gamma, peak, x, y, z);
}

extern "C" __global__ void rgb_to_xyz12_u8(const unsigned char* img, long long npix, float scale,
                                           float in_gamma, const float* m, float inv_gamma,
                                           float peak, int* x, int* y, int* z)
{
    rgb_to_xyz12(img, npix, scale, in_gamma, m, inv_gamma, peak, x, y, z);
}

extern "C" __global__ void rgb_to_xyz12_f32(const float* img, long long npix, float scale,
                                            float in_gamma, const float* m, float inv_gamma,
                                            float peak, int* x, int* y, int* z)
{
    rgb_to_xyz12(img, npix, scale, in_gamma, m, inv_gamma, peak, x, y, z);
}
