// A frame's Y'CbCr planes to 16-bit R'G'B' on the GPU (cinegpu/media/video/ycbcr_gpu.py), the
// twin of to_rgb48 in ycbcr.py: the same float32 operations in the same order, each rounded on
// its own (NVRTC compiles without contraction, --fmad=false, and the products and sums are
// written __fmul_rn / __fadd_rn / __fsub_rn besides), so the bits are the host's.
//
// src: the three planes one after the other, uint16, Y (h, w) then Cb and Cr (h, cw), rows
// packed; c: the 16 float32 constants of ycbcr.coefficients (luma offset and scale, chroma
// offset and scale, R<-Cr, G<-Cb, G<-Cr, B<-Cb, the even and odd columns' four weights);
// shift: 1 for chroma on every second column (4:2:2), 0 for 4:4:4; out: (h, w, 3) uint16.

__device__ __forceinline__ float chroma(const unsigned short* plane, long long row, long long first,
                                        long long cw, const float* wt) {
    float acc = 0.0f;
    for (int t = 0; t < 4; ++t) {
        long long k = first + t;
        k = k < 0 ? 0 : (k > cw - 1 ? cw - 1 : k);
        float term = __fmul_rn((float)plane[row * cw + k], wt[t]);
        acc = t == 0 ? term : __fadd_rn(acc, term);
    }
    return acc;
}

__device__ __forceinline__ unsigned short code16(float v) {
    v = fminf(fmaxf(v, 0.0f), 1.0f);
    return (unsigned short)rintf(__fmul_rn(v, 65535.0f));
}

extern "C" __global__ void ycbcr_to_rgb48(const unsigned short* __restrict__ src, const float* __restrict__ c,
                                          unsigned short* __restrict__ out, long long h, long long w,
                                          long long cw, int shift) {
    long long n = h * w;
    const unsigned short* cb_plane = src + n;
    const unsigned short* cr_plane = cb_plane + h * cw;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long row = i / w, x = i - row * w;
        bool odd = shift && (x & 1);
        long long first = shift ? (odd ? (x >> 1) - 1 : (x >> 1) - 2) : x - 2;
        const float* wt = c + (odd ? 12 : 8);
        float y = __fmul_rn(__fsub_rn((float)src[i], c[0]), c[1]);
        float cb = __fmul_rn(__fsub_rn(chroma(cb_plane, row, first, cw, wt), c[2]), c[3]);
        float cr = __fmul_rn(__fsub_rn(chroma(cr_plane, row, first, cw, wt), c[2]), c[3]);
        float r = __fadd_rn(y, __fmul_rn(c[4], cr));
        float g = __fadd_rn(__fadd_rn(y, __fmul_rn(c[5], cb)), __fmul_rn(c[6], cr));
        float b = __fadd_rn(y, __fmul_rn(c[7], cb));
        out[3 * i] = code16(r);
        out[3 * i + 1] = code16(g);
        out[3 * i + 2] = code16(b);
    }
}
