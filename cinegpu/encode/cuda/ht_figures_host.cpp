/* ht_figures.cu compiled as plain C++ for the host: the plane-figures kernel's own code
 * checked against its numba twin (encode/tier1/ht.py ht_plane_figures) where there is no GPU.
 * tests/test_ht_figures.py builds this with g++ -ffp-contract=off and calls htf_emulate
 * through ctypes.
 *
 * The HTF_THREADS threads of a CUDA block run as the cooperative contexts of host_warp.h
 * (the lane scheduler of ht_encode_warp_host.cpp): __syncwarp is a barrier of the warp,
 * __shared__ memory is static, blocks run one after another.
 */

#define HTF_HOST
#define HTF_DEV static inline
#define HTF_SHARED static
#define HTF_CLZ32(x) __builtin_clz((unsigned int)(x))
#define __global__

#define HOST_WARP_THREADS 128
#include "host_warp.h"
#include "ht_figures.cu"

static_assert(HTF_THREADS == HOST_WARP_THREADS, "the emulated block is the kernel's block");

static struct {
    const int* flat;
    const i64* cb;
    int ncols, nblk;
    const i64* rows;
    int dmax;
    double *dist, *bits;
} a;

static void thread_main()
{
    ht_plane_figures_warp(a.flat, a.cb, a.ncols, a.nblk, a.rows, a.dmax, a.dist, a.bits);
}

/* HTF_DMAX, HTF_WARPS, one warp's shared memory (HTF_SHARED_BYTES) and HTF_QUADS */
extern "C" int htf_limit(int which)
{
    return which == 0 ? HTF_DMAX : which == 1 ? HTF_WARPS : which == 2 ? HTF_SHARED_BYTES
                                                                       : HTF_QUADS;
}

/* ht_plane_figures_warp over a grid of `grid` CUDA blocks of HTF_THREADS threads.  Returns 0,
 * -1 for a bad argument, -2 for a divergent barrier, -3 out of memory. */
extern "C" int htf_emulate(const int* flat, const i64* cb, int ncols, int nblk, const i64* rows,
                           int dmax, double* dist, double* bits, int grid)
{
    if (grid < 1)
        return -1;
    a.flat = flat;
    a.cb = cb;
    a.ncols = ncols;
    a.nblk = nblk;
    a.rows = rows;
    a.dmax = dmax;
    a.dist = dist;
    a.bits = bits;
    return host_run_grid(grid, thread_main);
}
