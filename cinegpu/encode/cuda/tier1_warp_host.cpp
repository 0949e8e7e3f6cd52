/* t1enc_code_blocks_warp (tier1_encode.cu) compiled as plain C++ for the host: the warp
 * kernel's logic checked against the numba tile encoder where there is no GPU
 * (tests/test_encode_tier1_warp.py builds this with g++ -ffp-contract=off and calls
 * t1w_emulate through ctypes; the other kernels run in tier1_encode_host.cpp).
 *
 * The T1E_BLOCK threads of a CUDA block run as the cooperative contexts of host_warp.h, whose
 * warp intrinsics are barriers of the thread's warp; __syncthreads (the tables' load) is its
 * block barrier.  Blocks run one after another.
 */

#define T1E_HOST_EMULATION
#define T1E_DEV static inline
#define T1E_SHARED static
#define T1E_CLZ32(x) __builtin_clz((unsigned int)(x))
#define __global__

#include "host_warp.h"
#include "host_atomics.h"

#define T1E_SYNC() block_barrier()

#include "tier1_encode.cu"

static struct {
    const int* flat;
    const i64* cb;
    int ncols, nblk;
    const int* order;
    int style;
    const int* num_bps;
    const i64 *rate_off, *cap_off;
    unsigned char* region;
    int* rates;
    double* dists;
    i64* lens;
    int* status;
    const u32* mq_lut;
    const unsigned char *zc_lut, *sc_lut, *ctx_init;
    int floor_bp;
} a;

static void thread_main()
{
    t1enc_code_blocks_warp(a.flat, a.cb, a.ncols, a.nblk, a.order, a.style, a.num_bps,
                           a.rate_off, a.cap_off, a.region, a.rates, a.dists, a.lens, a.status,
                           a.mq_lut, a.zc_lut, a.sc_lut, a.ctx_init, a.floor_bp);
}

/* t1enc_code_blocks_warp over a grid of `grid` CUDA blocks of T1E_BLOCK threads.  Returns 0,
 * -1 for a bad argument, -2 for a divergent barrier, -3 out of memory. */
extern "C" int t1w_emulate(const int* flat, const i64* cb, int ncols, int nblk, const int* order,
                           int style, const int* num_bps, const i64* rate_off, const i64* cap_off,
                           unsigned char* region, int* rates, double* dists, i64* lens,
                           int* status, const u32* mq_lut, const unsigned char* zc_lut,
                           const unsigned char* sc_lut, const unsigned char* ctx_init,
                           int floor_bp, int grid)
{
    if (grid < 1)
        return -1;
    a.flat = flat;
    a.cb = cb;
    a.ncols = ncols;
    a.nblk = nblk;
    a.order = order;
    a.style = style;
    a.num_bps = num_bps;
    a.rate_off = rate_off;
    a.cap_off = cap_off;
    a.region = region;
    a.rates = rates;
    a.dists = dists;
    a.lens = lens;
    a.status = status;
    a.mq_lut = mq_lut;
    a.zc_lut = zc_lut;
    a.sc_lut = sc_lut;
    a.ctx_init = ctx_init;
    a.floor_bp = floor_bp;
    return host_run_grid(grid, thread_main);
}
