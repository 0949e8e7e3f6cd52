/* tier1.cu compiled as plain C++ for the host: the kernel's logic checked against the numba
 * decoder where there is no GPU (tests/test_tier1_gpu.py builds it with g++).
 *
 * tier1_zero_rows runs as one thread.  Then each CUDA block of 32 threads is run
 * thread by thread, highest first, so the shared lookup tables are complete when thread 0
 * (the one working lane, lanes = 1) decodes its slot.
 */

#include <cstddef>

#define T1_HOST_EMULATION
#define T1_DEV static inline
#define T1_SHARED static
#define T1_SYNC()
#define __global__
#define T1_DYN_SHARED(name) alignas(16) static unsigned short name[1 << 20]
#define T1_CLZ64(x) __builtin_clzll(x)
#define T1_CLZ32(x) __builtin_clz(x)
#define T1_CTZ64(x) __builtin_ctzll(x)

struct Dim { unsigned int x; };
static int atomicAdd(int* p, int v) { int old = *p; *p += v; return old; }
static Dim threadIdx, blockIdx, blockDim, gridDim;

#include "tier1.cu"

/* shared_flags: run tier1_decode_thread_per_codeblock_shared_flags instead of
 * tier1_decode_thread_per_codeblock.  One warp per CUDA block, one lane: the first thread run
 * takes every row from the counter. */
extern "C" void tier1_emulate(
    const unsigned char* coded, i64 coded_len, const i64* table, int ncols, int nblk,
    const int* order, const int* seg_lengths, i64 n_lengths, const int* seg_passes,
    i64 n_passes, int* out, i64 out_len, int* status, unsigned short* flags, int* vals,
    int nslots, int slot_pitch, int vals_pitch, const unsigned int* mq_lut,
    const unsigned char* zc_lut, const unsigned char* sc_lut, const unsigned char* ctx_init,
    const unsigned short* vlc_lut, int shared_flags)
{
    blockDim.x = 1;
    gridDim.x = 1;
    blockIdx.x = threadIdx.x = 0;
    tier1_zero_rows(coded, coded_len, table, ncols, nblk, seg_lengths, n_lengths,
                    seg_passes, n_passes, out, out_len);
    blockDim.x = 32;
    int next_row = 0;
    for (int b = 0; b < nslots; b++) {
        blockIdx.x = b;
        for (int t = 31; t >= 0; t--) {
            threadIdx.x = t;
            if (shared_flags)
                tier1_decode_thread_per_codeblock_shared_flags(
                    coded, coded_len, table, ncols, nblk, order, seg_lengths, n_lengths,
                    seg_passes, n_passes, out, out_len, status, flags, vals, nslots,
                    slot_pitch, vals_pitch, 1, &next_row, mq_lut, zc_lut, sc_lut, ctx_init, vlc_lut);
            else
                tier1_decode_thread_per_codeblock(
                    coded, coded_len, table, ncols, nblk, order, seg_lengths, n_lengths,
                    seg_passes, n_passes, out, out_len, status, flags, vals, nslots,
                    slot_pitch, vals_pitch, 1, &next_row, mq_lut, zc_lut, sc_lut, ctx_init, vlc_lut);
        }
    }
}
