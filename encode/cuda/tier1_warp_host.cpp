/* t1enc_code_blocks_warp (tier1_encode.cu) compiled as plain C++ for the host: the warp
 * kernel's logic checked against the numba tile encoder where there is no GPU
 * (tests/test_encode_tier1_warp.py builds this with g++ -ffp-contract=off and calls
 * t1w_emulate through ctypes; the other kernels run in tier1_encode_host.cpp).
 *
 * The T1E_BLOCK threads of a CUDA block run as cooperative contexts (ucontext), one at a time.
 * A warp intrinsic (__shfl_*_sync, __ballot_sync, __syncwarp) is a barrier of the thread's
 * warp: the lanes leave their values, wait until all 32 have arrived, read, and wait again
 * before the next exchange; __syncthreads (the tables' load) is a barrier of the block.  A
 * lane that leaves the kernel while others of its warp wait at an intrinsic is reported (-2),
 * as a divergent full-mask intrinsic is an error on the GPU.  Blocks run one after another.
 */

#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define T1E_HOST_EMULATION
#define T1E_DEV static inline
#define T1E_SHARED static
#define T1E_CLZ32(x) __builtin_clz((unsigned int)(x))
#define __global__

struct Dim {
    unsigned int x;
};
static Dim threadIdx, blockIdx, blockDim, gridDim;

enum { THREADS = 128, STACK = 1 << 17 };
static ucontext_t sched, ctx[THREADS];
static char* stacks[THREADS];
static int cur, finished[THREADS], waiting[THREADS];
static unsigned int xchg[THREADS];
static int arrived_warp[THREADS / 32], arrived_block;
static long events; /* arrivals, releases and exits: a sweep without any is a deadlock */

#include "host_atomics.h"

/* Wait until all `members` threads of the group from thread `first` (a warp, or the block)
 * have arrived; the last to arrive releases the others */
static void barrier(int* arrived, int members, int first)
{
    *arrived += 1;
    events++;
    if (*arrived == members) {
        for (int t = first; t < first + members; t++)
            waiting[t] = 0;
        *arrived = 0;
        return;
    }
    waiting[cur] = 1;
    while (waiting[cur])
        swapcontext(&ctx[cur], &sched);
}

static void warp_barrier()
{
    int w = cur / 32;
    barrier(&arrived_warp[w], 32, w * 32);
}

static void block_barrier() { barrier(&arrived_block, THREADS, 0); }

#define T1E_SYNC() block_barrier()

static unsigned int exchange(unsigned int v, int src_lane)
{
    int w = cur / 32;
    xchg[cur] = v;
    warp_barrier();
    unsigned int r = xchg[w * 32 + src_lane];
    warp_barrier();
    return r;
}

static unsigned int __shfl_up_sync(unsigned int, unsigned int v, int d)
{
    int lane = cur & 31;
    return exchange(v, lane >= d ? lane - d : lane);
}

static int __shfl_up_sync(unsigned int m, int v, int d) { return (int)__shfl_up_sync(m, (unsigned int)v, d); }

static unsigned int __shfl_down_sync(unsigned int, unsigned int v, int d)
{
    int lane = cur & 31;
    return exchange(v, lane + d < 32 ? lane + d : lane);
}

static int __shfl_sync(unsigned int, int v, int src) { return (int)exchange((unsigned int)v, src); }

static unsigned int __ballot_sync(unsigned int, int pred)
{
    int w = cur / 32;
    xchg[cur] = pred != 0;
    warp_barrier();
    unsigned int r = 0;
    for (int l = 0; l < 32; l++)
        r |= (xchg[w * 32 + l] ? 1u : 0u) << l;
    warp_barrier();
    return r;
}

static void __syncwarp() { warp_barrier(); }

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
    finished[cur] = 1;
    events++;
}

/* One CUDA block: threads run until each barrier; 0, -2 on a divergent barrier, -3 no memory */
static int run_block()
{
    for (int i = 0; i < THREADS; i++) {
        if (!stacks[i] && !(stacks[i] = (char*)malloc(STACK)))
            return -3;
        getcontext(&ctx[i]);
        ctx[i].uc_stack.ss_sp = stacks[i];
        ctx[i].uc_stack.ss_size = STACK;
        ctx[i].uc_link = &sched;
        makecontext(&ctx[i], thread_main, 0);
        finished[i] = 0;
        waiting[i] = 0;
    }
    memset(arrived_warp, 0, sizeof arrived_warp);
    arrived_block = 0;
    for (;;) {
        int live = 0;
        long before = events;
        for (int i = 0; i < THREADS; i++) {
            if (finished[i])
                continue;
            live++;
            cur = i;
            threadIdx.x = i;
            swapcontext(&sched, &ctx[i]);
        }
        if (!live)
            return 0;
        if (events == before)
            return -2; /* every thread left waits at a barrier some member never reaches */
    }
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
    blockDim.x = THREADS;
    gridDim.x = grid;
    for (int b = 0; b < grid; b++) {
        blockIdx.x = b;
        int rc = run_block();
        if (rc)
            return rc;
    }
    return 0;
}
