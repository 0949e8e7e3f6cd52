// One sample's DC level shift and clip (T.800 G.1.2) and one pixel's inverse MCT then G.1.2
// (G.2, G.3), shared by pointwise.cu's *_to_samples kernels and final_level.cu, so the two
// compute every sample alike, and the sample types both instantiate their kernels for.  Float arithmetic with explicit round-to-nearest intrinsics
// (--fmad=false), in the order of OpenJPEG's opj_mct_decode_real and the numpy twins.

// KERNEL(name, body, in_t, suffix, T) for every type the decoder returns samples in: int (no
// suffix), then _u16, _i16, _u8, _i8 (cuda_backend._SAMPLE_SUFFIX).
#define FOR_SAMPLE_TYPES(KERNEL, name, body, in_t)     \
    KERNEL(name, body, in_t, , int)                    \
    KERNEL(name, body, in_t, _u16, unsigned short)     \
    KERNEL(name, body, in_t, _i16, short)              \
    KERNEL(name, body, in_t, _u8, unsigned char)       \
    KERNEL(name, body, in_t, _i8, signed char)

// G.1.2 of one value (as to_samples_f32 / to_samples_i32).
__device__ __forceinline__ int sample_f32(float x, int shift, int lo, int hi)
{
    float v = rintf(x);
    float flo = (float)(lo - shift), fhi = (float)(hi - shift);
    v = (v != v) ? flo : fminf(fmaxf(v, flo), fhi);
    return (int)v + shift;
}

__device__ __forceinline__ int sample_i32(int x, int shift, int lo, int hi)
{
    return min(max(x, lo - shift), hi - shift) + shift;
}

// inverse_ict_f32 then to_samples_f32 of one pixel (y, u, v) into (r, g, b).
template <typename T>
__device__ __forceinline__ void ict_pixel(float y, float u, float v, T &r, T &g, T &b,
                                          int s0, int lo0, int hi0, int s1, int lo1, int hi1,
                                          int s2, int lo2, int hi2)
{
    r = (T)sample_f32(__fadd_rn(y, __fmul_rn(v, 1.402f)), s0, lo0, hi0);
    g = (T)sample_f32(__fsub_rn(__fsub_rn(y, __fmul_rn(u, 0.34413f)), __fmul_rn(v, 0.71414f)), s1, lo1, hi1);
    b = (T)sample_f32(__fadd_rn(y, __fmul_rn(u, 1.772f)), s2, lo2, hi2);
}

// inverse_rct_i32 then to_samples_i32 of one pixel (y0, y1, y2) into (r, g, b).
template <typename T>
__device__ __forceinline__ void rct_pixel(int y0, int y1, int y2, T &r, T &g, T &b,
                                          int s0, int lo0, int hi0, int s1, int lo1, int hi1,
                                          int s2, int lo2, int hi2)
{
    const int gg = y0 - ((y1 + y2) >> 2);
    r = (T)sample_i32(y2 + gg, s0, lo0, hi0);
    g = (T)sample_i32(gg, s1, lo1, hi1);
    b = (T)sample_i32(y1 + gg, s2, lo2, hi2);
}
