/* ht_encode.cu compiled as plain C++ for the host: the HT cleanup-pass kernel's own code
 * checked against its numba twin (encode/tier1/ht.py ht_encode_block / ht_encode_rows) where
 * there is no GPU.  tests/test_ht_encode_host.py builds this with g++ -ffp-contract=off and
 * calls it through ctypes.
 *
 * hte_emulate runs ht_enc_blocks for every (blockIdx, threadIdx) of a grid of `grid` CUDA
 * blocks of `threads` threads, one after the other; the kernel's threads share nothing but
 * their disjoint output regions, so the order does not matter.
 */

#define HTE_HOST
#define HTE_DEV static inline
#define HTE_CLZ64(x) __builtin_clzll((unsigned long long)(x))
#define __global__

#include "host_grid.h"
#include "ht_encode.cu"

/* Bytes of one thread's scratch (HTE_SCRATCH_BYTES): the smallest scratch_pitch */
extern "C" long long hte_scratch_bytes(void)
{
    return HTE_SCRATCH_BYTES;
}

/* ht_enc_blocks over a grid of `grid` CUDA blocks of `threads` threads; scratch holds
 * grid * threads pitches.  Returns 0. */
extern "C" int hte_emulate(const int* flat, const i64* cb, int ncols, int nblk, const i64* rows,
                           const i64* drops, const i64* cap_off, u8* out, i64* lens,
                           u8* scratch, i64 scratch_pitch, const int* vlc0, const int* vlc1,
                           const int* mel_exp, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads,
                         ht_enc_blocks(flat, cb, ncols, nblk, rows, drops, cap_off, out, lens,
                                       scratch, scratch_pitch, vlc0, vlc1, mel_exp));
    return 0;
}

/* ht_gather over a grid of `grid` CUDA blocks of `threads` threads.  Returns 0. */
extern "C" int hte_gather(const u8* out, const i64* cap_off, const i64* coded_off, int nblk,
                          u8* coded, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads, ht_gather(out, cap_off, coded_off, nblk, coded));
    return 0;
}
