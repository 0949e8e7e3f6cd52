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

__device__ __forceinline__ int clampi(int v, int hi)
{
    return v < 0 ? 0 : (v > hi ? hi : v);
}

// 1D_SD with the 9/7 filter (F.4.8.2) down every column of a row-major (n, w) plane:
// one thread per column (coalesced across the warp).  p: parity of the first row.
// Low-pass rows go to lo (nl, w), high-pass rows to hi (nh, w).  Neighbour indices
// are clamped to the band: the periodic symmetric extension of F.3.7.
extern "C" __global__ void sd97_cols(const float* x, float* lo, float* hi, int n, int w, int p)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= w) return;
    int nl = (n - p + 1) / 2, nh = n - nl;
    if (n == 1) {
        if (nl) lo[j] = x[j];
        else hi[j] = x[j] * 2.0f;
        return;
    }
#define XL(k) x[(long long)(2 * (k) + p) * w + j]
#define XH(k) x[(long long)(2 * (k) + 1 - p) * w + j]
#define LO(k) lo[(long long)(k) * w + j]
#define HI(k) hi[(long long)(k) * w + j]
    for (int k = 0; k < nh; k++) {
        float t = XL(clampi(k - p, nl - 1)) + XL(clampi(k - p + 1, nl - 1));
        t *= ALPHA;
        HI(k) = XH(k) + t;
    }
    for (int k = 0; k < nl; k++) {
        float t = HI(clampi(k + p - 1, nh - 1)) + HI(clampi(k + p, nh - 1));
        t *= BETA;
        LO(k) = XL(k) + t;
    }
    for (int k = 0; k < nh; k++) {
        float t = LO(clampi(k - p, nl - 1)) + LO(clampi(k - p + 1, nl - 1));
        t *= GAMMA;
        HI(k) = HI(k) + t;
    }
    for (int k = 0; k < nl; k++) {
        float t = HI(clampi(k + p - 1, nh - 1)) + HI(clampi(k + p, nh - 1));
        t *= DELTA;
        LO(k) = (LO(k) + t) * K_LOW;
    }
    for (int k = 0; k < nh; k++) HI(k) = HI(k) * K_HIGH;
#undef XL
#undef XH
#undef LO
#undef HI
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

// 1D_SD with the 5/3 filter (F.4.8.1, F-9 then F-10) down every column of a row-major
// int32 (n, w) plane, one thread per column, as sd97_cols:
//   Y(2k+1) = X(2k+1) - floor((X(2k) + X(2k+2)) / 2)
//   Y(2k)   = X(2k)   + floor((Y(2k-1) + Y(2k+1) + 2) / 4)
// with clamped neighbours (periodic symmetric extension, F.3.7); a lone sample at an
// odd coordinate is doubled.  p: parity of the first row.
extern "C" __global__ void sd53_cols_i32(const int* x, int* lo, int* hi, int n, int w, int p)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= w) return;
    int nl = (n - p + 1) / 2, nh = n - nl;
    if (n == 1) {
        if (nl) lo[j] = x[j];
        else hi[j] = add_wrap(x[j], x[j]);
        return;
    }
#define XL(k) x[(long long)(2 * (k) + p) * w + j]
#define XH(k) x[(long long)(2 * (k) + 1 - p) * w + j]
#define LO(k) lo[(long long)(k) * w + j]
#define HI(k) hi[(long long)(k) * w + j]
    for (int k = 0; k < nh; k++) {
        int t = add_wrap(XL(clampi(k - p, nl - 1)), XL(clampi(k - p + 1, nl - 1))) >> 1;
        HI(k) = sub_wrap(XH(k), t);
    }
    for (int k = 0; k < nl; k++) {
        int s = add_wrap(HI(clampi(k + p - 1, nh - 1)), HI(clampi(k + p, nh - 1)));
        int t = add_wrap(s, 2) >> 2;
        LO(k) = add_wrap(XL(k), t);
    }
#undef XL
#undef XH
#undef LO
#undef HI
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

// Clip each band's indices to [-lim[b], lim[b]] in place (the DCI profile keeps its guard
// bits and clips, E.1 / Encoder._guard_bits).  Grid: (chunks, bands).
extern "C" __global__ void band_clip_i32(int* flat, const long long* off, const long long* len,
                                         const int* lim)
{
    int b = blockIdx.y;
    long long n = len[b];
    int* x = flat + off[b];
    int hi = lim[b];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        int v = x[i];
        x[i] = v > hi ? hi : (v < -hi ? -hi : v);
    }
}

// ------------------------------------------------------------- mastering colour -------

// Display-encoded RGB (or X'Y'Z') samples -> DCI X'Y'Z' 12-bit code values (ST 428-1), one
// pixel per thread, interleaved (H, W, 3) input -> three int32 planes.  Twin:
// cinegpu.media.colour.to_xyz12 of cinegpu.media.images_in normalised samples, in the same
// float32 order: V = clip(s / top, 0, 1); lin = V ^ in_gamma; XYZ = M lin (M already divided
// by 52.37 / 48); CV = rint(4095 clip(XYZ, 0, 1) ^ (1 / 2.6)).  in_gamma <= 0: the input is
// X'Y'Z' already, CV = rint(4095 V).
template <typename T>
__device__ __forceinline__ void rgb_to_xyz12(const T* img, long long npix, float top,
                                             float in_gamma, const float* m, float inv_gamma,
                                             int* x, int* y, int* z)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < npix;
         i += (long long)blockDim.x * gridDim.x) {
        float v[3];
        for (int ch = 0; ch < 3; ch++) {
            float s = (float)img[3 * i + ch] / top;
            v[ch] = s < 0.0f ? 0.0f : (s > 1.0f ? 1.0f : s);
        }
        int* out[3] = {x, y, z};
        if (in_gamma <= 0.0f) {
            for (int ch = 0; ch < 3; ch++)
                out[ch][i] = (int)rintf(v[ch] * 4095.0f);
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
            out[ch][i] = (int)rintf(t * 4095.0f);
        }
    }
}

extern "C" __global__ void rgb_to_xyz12_u16(const unsigned short* img, long long npix, float top,
                                            float in_gamma, const float* m, float inv_gamma,
                                            int* x, int* y, int* z)
{
    rgb_to_xyz12(img, npix, top, in_gamma, m, inv_gamma, x, y, z);
}

extern "C" __global__ void rgb_to_xyz12_u8(const unsigned char* img, long long npix, float top,
                                           float in_gamma, const float* m, float inv_gamma,
                                           int* x, int* y, int* z)
{
    rgb_to_xyz12(img, npix, top, in_gamma, m, inv_gamma, x, y, z);
}

extern "C" __global__ void rgb_to_xyz12_f32(const float* img, long long npix, float top,
                                            float in_gamma, const float* m, float inv_gamma,
                                            int* x, int* y, int* z)
{
    rgb_to_xyz12(img, npix, top, in_gamma, m, inv_gamma, x, y, z);
}
