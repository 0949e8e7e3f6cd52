// Per-sample stages of reconstruction on the GPU, one thread per sample
// (grid-stride loops; n in samples).  numpy twins in quantization.py,
// mct.py, level_shift.py and display.py; float arithmetic with explicit
// round-to-nearest intrinsics (module built with --fmad=false) in the same
// order as the twins, so only powf can differ (by an ulp).

#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

// T.800 E.1, reversible: trunc(v / 2) (C division, as OpenJPEG).
extern "C" __global__ void dequantize_reversible_i32(const int *in, int *out, long long n)
{
    GRID_STRIDE(i, n) out[i] = in[i] / 2;
}

// T.800 E.1.1, irreversible: v * (delta / 2).
extern "C" __global__ void dequantize_irreversible_f32(const int *in, float *out,
                                                       float half_delta, long long n)
{
    GRID_STRIDE(i, n) out[i] = __fmul_rn((float)in[i], half_delta);
}

// T.800 G.2 (G-6): (Y0, Y1, Y2) -> (R, G, B); outputs may alias inputs.
extern "C" __global__ void inverse_rct_i32(const int *c0, const int *c1, const int *c2,
                                           int *r, int *g, int *b, long long n)
{
    GRID_STRIDE(i, n) {
        int y0 = c0[i], y1 = c1[i], y2 = c2[i];
        int gg = y0 - ((y1 + y2) >> 2);
        r[i] = y2 + gg;
        g[i] = gg;
        b[i] = y1 + gg;
    }
}

// T.800 G.3 (G-8), order of OpenJPEG's opj_mct_decode_real; outputs may alias.
extern "C" __global__ void inverse_ict_f32(const float *c0, const float *c1, const float *c2,
                                           float *r, float *g, float *b, long long n)
{
    GRID_STRIDE(i, n) {
        float y = c0[i], u = c1[i], v = c2[i];
        r[i] = __fadd_rn(y, __fmul_rn(v, 1.402f));
        g[i] = __fsub_rn(__fsub_rn(y, __fmul_rn(u, 0.34413f)), __fmul_rn(v, 0.71414f));
        b[i] = __fadd_rn(y, __fmul_rn(u, 1.772f));
    }
}

// T.800 G.1.2: round half to even (lrintf), clip to [lo - shift, hi - shift],
// add the DC level shift.  NaN gives lo.
extern "C" __global__ void to_samples_f32(const float *in, int *out, int shift, int lo, int hi,
                                          long long n)
{
    GRID_STRIDE(i, n) {
        float v = rintf(in[i]);
        float flo = (float)(lo - shift), fhi = (float)(hi - shift);
        v = (v != v) ? flo : fminf(fmaxf(v, flo), fhi);
        out[i] = (int)v + shift;
    }
}

extern "C" __global__ void to_samples_i32(const int *in, int *out, int shift, int lo, int hi,
                                          long long n)
{
    GRID_STRIDE(i, n) out[i] = min(max(in[i], lo - shift), hi - shift) + shift;
}

// DCI output transform (display.py): X'Y'Z' code values -> display code values,
// written interleaved, `channels` (3 or 4, alpha = scale) uint16 per pixel.
// lut: code value -> relative linear XYZ; m: row-major 3x3 XYZ -> RGB.
extern "C" __global__ void xyz_to_rgb_u16(const int *x, const int *y, const int *z,
                                          const float *lut, const float *m, int in_max,
                                          float inv_gamma, float scale, int channels,
                                          unsigned short *out, long long n)
{
    GRID_STRIDE(i, n) {
        float X = lut[min(max(x[i], 0), in_max)];
        float Y = lut[min(max(y[i], 0), in_max)];
        float Z = lut[min(max(z[i], 0), in_max)];
        unsigned short *px = out + i * channels;
        for (int c = 0; c < 3; ++c) {
            float v = __fmul_rn(X, m[3 * c]);
            v = __fadd_rn(v, __fmul_rn(Y, m[3 * c + 1]));
            v = __fadd_rn(v, __fmul_rn(Z, m[3 * c + 2]));
            v = fminf(fmaxf(v, 0.0f), 1.0f);
            v = __fmul_rn(powf(v, inv_gamma), scale);
            px[c] = (unsigned short)rintf(v);
        }
        if (channels == 4) px[3] = (unsigned short)scale;
    }
}

#include "samples.cuh"

// inverse_ict_f32 then to_samples_f32 per component (shift, lo, hi of each):
// the last kernel of cuda_backend.reconstruct_mct.  The samples are written
// as T: int (ict_to_samples_f32) or the type the decoder returns them in
// (suffix _u8, _i8, _u16, _i16; the values are clipped to the component's
// precision first, so every such type holds them exactly).
template <typename T>
__device__ __forceinline__ void ict_to_samples(const float *c0, const float *c1, const float *c2,
                                               T *r, T *g, T *b,
                                               int s0, int lo0, int hi0, int s1, int lo1, int hi1,
                                               int s2, int lo2, int hi2, long long n)
{
    GRID_STRIDE(i, n) ict_pixel(c0[i], c1[i], c2[i], r[i], g[i], b[i], s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2);
}

// inverse_rct_i32 then to_samples_i32 per component, written as T (as above).
template <typename T>
__device__ __forceinline__ void rct_to_samples(const int *c0, const int *c1, const int *c2,
                                               T *r, T *g, T *b,
                                               int s0, int lo0, int hi0, int s1, int lo1, int hi1,
                                               int s2, int lo2, int hi2, long long n)
{
    GRID_STRIDE(i, n) rct_pixel(c0[i], c1[i], c2[i], r[i], g[i], b[i], s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2);
}

// Frames of one geometry batched: blockIdx.y = frame f, its inputs fin samples and its
// outputs fout samples after frame 0's (one frame: 0).
#define MCT_TO_SAMPLES(name, body, in_t, suffix, T)                                                  \
    extern "C" __global__ void name##suffix(const in_t *c0, const in_t *c1, const in_t *c2,          \
                                            T *r, T *g, T *b,                                        \
                                            int s0, int lo0, int hi0, int s1, int lo1, int hi1,      \
                                            int s2, int lo2, int hi2, long long n,                   \
                                            long long fin, long long fout)                           \
    {                                                                                                \
        const long long i0 = blockIdx.y * fin, o0 = blockIdx.y * fout;                               \
        body<T>(c0 + i0, c1 + i0, c2 + i0, r + o0, g + o0, b + o0,                                  \
                s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2, n);                                        \
    }
FOR_SAMPLE_TYPES(MCT_TO_SAMPLES, ict_to_samples_f32, ict_to_samples, float)
FOR_SAMPLE_TYPES(MCT_TO_SAMPLES, rct_to_samples_i32, rct_to_samples, int)
