/* ht_enc_blocks_warp (ht_encode_warp.cuh, included by ht_encode.cu) compiled as plain C++ for
 * the host: the warp kernel's own code checked against its numba twin (encode/tier1/ht.py)
 * where there is no GPU.  tests/test_ht_encode_warp.py builds this with g++
 * -ffp-contract=off and calls htw_emulate through ctypes.
 *
 * The HTW_THREADS threads of a CUDA block run as the cooperative contexts of host_warp.h
 * (the lane scheduler tier1_warp_host.cpp uses too): every warp intrinsic is a barrier of
 * the warp, __shared__ memory is static, blocks run one after another.
 */

#define HTE_HOST
#define HTE_HOST_WARP
#define HTE_DEV static inline
#define HTE_SHARED static
#define HTE_CLZ64(x) __builtin_clzll((unsigned long long)(x))
#define __global__

#define HOST_WARP_THREADS 128
#include "host_warp.h"
#include "ht_encode.cu"

static_assert(HTW_THREADS == HOST_WARP_THREADS, "the emulated block is the kernel's block");

static struct {
    const int* flat;
    const i64* cb;
    int ncols, nblk;
    const i64 *rows, *drops, *cap_off;
    u8* out;
    i64* lens;
    const int *vlc0, *vlc1, *mel_exp;
} a;

static void thread_main()
{
    ht_enc_blocks_warp(a.flat, a.cb, a.ncols, a.nblk, a.rows, a.drops, a.cap_off, a.out, a.lens,
                       a.vlc0, a.vlc1, a.mel_exp);
}

/* Bytes of one warp's shared memory (HTW_SHARED_BYTES) */
extern "C" int htw_shared_bytes(void)
{
    return HTW_SHARED_BYTES;
}

/* ht_enc_blocks_warp over a grid of `grid` CUDA blocks of HTW_THREADS threads.  Returns 0,
 * -1 for a bad argument, -2 for a divergent barrier, -3 out of memory. */
extern "C" int htw_emulate(const int* flat, const i64* cb, int ncols, int nblk, const i64* rows,
                           const i64* drops, const i64* cap_off, u8* out, i64* lens,
                           const int* vlc0, const int* vlc1, const int* mel_exp, int grid)
{
    if (grid < 1)
        return -1;
    a.flat = flat;
    a.cb = cb;
    a.ncols = ncols;
    a.nblk = nblk;
    a.rows = rows;
    a.drops = drops;
    a.cap_off = cap_off;
    a.out = out;
    a.lens = lens;
    a.vlc0 = vlc0;
    a.vlc1 = vlc1;
    a.mel_exp = mel_exp;
    return host_run_grid(grid, thread_main);
}
