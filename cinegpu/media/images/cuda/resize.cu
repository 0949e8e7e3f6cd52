// The Lanczos resize's two passes on the GPU (cinegpu/media/images/resize_gpu.py), twins of
// the numba passes _rows and _columns of resize.py: each output sample is the sum over its
// taps k, in order, of the float32 product src * w[k], taps of weight 0 skipped, from 0.
// NVRTC compiles without contraction (--fmad=false), so every product and sum is rounded as
// the host rounds it: the same bits.
//
// src: (rows, src_len) float32, each row an image row flat (W * C), or for resize_rows an
// image row whose rows are gathered; idx: (count, taps) int64 input pixel of each tap
// (clamped); w: (count, taps) float32 weights; out: float32.

extern "C" __global__ void resize_rows(const float* __restrict__ src, const long long* __restrict__ idx,
                                       const float* __restrict__ w, float* __restrict__ out,
                                       long long count, long long taps, long long row_len) {
    // out[j, x] = sum_k w[j, k] * src[idx[j, k], x]   (axis 0: rows of row_len samples)
    long long n = count * row_len;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long j = i / row_len, x = i - j * row_len;
        float acc = 0.0f;
        for (long long k = 0; k < taps; ++k) {
            float wk = w[j * taps + k];
            if (wk == 0.0f) continue;
            acc = __fadd_rn(acc, __fmul_rn(src[idx[j * taps + k] * row_len + x], wk));
        }
        out[i] = acc;
    }
}

extern "C" __global__ void resize_columns(const float* __restrict__ src, const long long* __restrict__ idx,
                                          const float* __restrict__ w, float* __restrict__ out,
                                          long long rows, long long count, long long taps,
                                          long long channels, long long src_len) {
    // out[y, j * C + c] = sum_k w[j, k] * src[y, idx[j, k] * C + c]   (axis 1)
    long long out_len = count * channels;
    long long n = rows * out_len;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long y = i / out_len, r = i - y * out_len;
        long long j = r / channels, c = r - j * channels;
        const float* row = src + y * src_len;
        float acc = 0.0f;
        for (long long k = 0; k < taps; ++k) {
            float wk = w[j * taps + k];
            if (wk == 0.0f) continue;
            acc = __fadd_rn(acc, __fmul_rn(row[idx[j * taps + k] * channels + c], wk));
        }
        out[i] = acc;
    }
}
