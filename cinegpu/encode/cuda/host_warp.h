/* The host emulations' warp scheduler (tier1_warp_host.cpp, ht_encode_warp_host.cpp): the
 * HOST_WARP_THREADS threads of one CUDA block run as cooperative contexts (ucontext), one at
 * a time.  A warp intrinsic (__shfl_*_sync, __ballot_sync, __syncwarp) is a barrier of the
 * thread's warp: the lanes leave their values, wait until all 32 have arrived, read, and wait
 * again before the next exchange; block_barrier (a kernel's __syncthreads) is a barrier of the
 * block.  A lane that leaves the kernel while others of its warp wait at an intrinsic is
 * reported (-2), as a divergent full-mask intrinsic is an error on the GPU.
 *
 * The Dim globals (threadIdx, blockIdx, blockDim, gridDim) come from host_dim.h; the including
 * file runs a block with host_run_block(entry), entry being the kernel call of one
 * thread.  Host only; the kernels' own code is what the emulations test.
 */
#ifndef CINEGPU_HOST_WARP_H
#define CINEGPU_HOST_WARP_H

#include "host_dim.h"

#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#ifndef HOST_WARP_THREADS
#define HOST_WARP_THREADS 128
#endif

enum { THREADS = HOST_WARP_THREADS, STACK = 1 << 17 };
static ucontext_t sched, ctx[THREADS];
static char* stacks[THREADS];
static int cur, finished[THREADS], waiting[THREADS];
static unsigned int xchg[THREADS];
static int arrived_warp[THREADS / 32], arrived_block;
static long events; /* arrivals, releases and exits: a sweep without any is a deadlock */
static void (*host_entry)(void);

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

static inline void block_barrier() { barrier(&arrived_block, THREADS, 0); }

static unsigned int exchange(unsigned int v, int src_lane)
{
    int w = cur / 32;
    xchg[cur] = v;
    warp_barrier();
    unsigned int r = xchg[w * 32 + src_lane];
    warp_barrier();
    return r;
}

static inline unsigned int __shfl_up_sync(unsigned int, unsigned int v, int d)
{
    int lane = cur & 31;
    return exchange(v, lane >= d ? lane - d : lane);
}

static inline int __shfl_up_sync(unsigned int m, int v, int d) { return (int)__shfl_up_sync(m, (unsigned int)v, d); }

static inline unsigned int __shfl_down_sync(unsigned int, unsigned int v, int d)
{
    int lane = cur & 31;
    return exchange(v, lane + d < 32 ? lane + d : lane);
}

static inline int __shfl_sync(unsigned int, int v, int src) { return (int)exchange((unsigned int)v, src); }

static inline unsigned int __ballot_sync(unsigned int, int pred)
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

static inline int __ffs(unsigned int x) { return __builtin_ffs((int)x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }

/* Shared-memory atomics: the lanes run one at a time, so a plain read-modify-write is atomic */
static inline unsigned int atomicOr(unsigned int* p, unsigned int v)
{
    unsigned int old = *p;
    *p |= v;
    return old;
}

static void host_thread_main()
{
    host_entry();
    finished[cur] = 1;
    events++;
}

/* One CUDA block of THREADS threads running entry() until each barrier; 0, -2 on a divergent
 * barrier, -3 no memory */
static int host_run_block(void (*entry)(void))
{
    host_entry = entry;
    for (int i = 0; i < THREADS; i++) {
        if (!stacks[i] && !(stacks[i] = (char*)malloc(STACK)))
            return -3;
        getcontext(&ctx[i]);
        ctx[i].uc_stack.ss_sp = stacks[i];
        ctx[i].uc_stack.ss_size = STACK;
        ctx[i].uc_link = &sched;
        makecontext(&ctx[i], host_thread_main, 0);
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

/* A launch of `grid` CUDA blocks of THREADS threads each running entry(), block by block;
 * 0, or host_run_block's first failure */
static int host_run_grid(int grid, void (*entry)(void))
{
    blockDim.x = THREADS;
    gridDim.x = grid;
    for (int b = 0; b < grid; b++) {
        blockIdx.x = b;
        int rc = host_run_block(entry);
        if (rc)
            return rc;
    }
    return 0;
}

#endif
