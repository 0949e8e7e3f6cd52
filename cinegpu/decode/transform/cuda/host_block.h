/* The block runner of the host emulations whose kernels meet at __syncthreads (final_level_host.cpp
 * here, encode/cuda/host_emulation.cpp for forward.cu): a .cu compiled as plain C++, so that CI
 * checks a kernel's own code bit for bit without a GPU.
 *
 * A block's threads run as cooperative contexts (ucontext), one at a time in thread order (or
 * reversed): each runs until its __syncthreads, and the block's next phase starts when every
 * thread has reached the barrier, as on the GPU. A missing barrier then shows as a thread
 * reading what another has not written yet; a barrier that some threads of the block skip is
 * reported (-2: some threads left the kernel while others waited). Blocks run one after another
 * (x fastest, z slowest); __shared__ arrays are static. The warp-level emulations of the tier-1
 * encoders have their own scheduler (encode/cuda/host_warp.h). Host only.
 */
#ifndef CINEGPU_HOST_BLOCK_H
#define CINEGPU_HOST_BLOCK_H

#include <stdlib.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() host_sync()

struct Dim { unsigned int x, y, z; };
static Dim threadIdx, blockIdx, blockDim, gridDim;

enum { HOST_MAX_THREADS = 1024, HOST_STACK = 1 << 16 };
static ucontext_t host_sched, host_ctx[HOST_MAX_THREADS];
static char* host_stacks[HOST_MAX_THREADS];
static int host_cur, host_finished[HOST_MAX_THREADS];
static void (*host_block_entry)(void);

static void host_sync() { swapcontext(&host_ctx[host_cur], &host_sched); }

static void host_block_thread()
{
    host_block_entry();
    host_finished[host_cur] = 1;
}

/* One block of bx x by threads (threadIdx.x fastest) running host_block_entry, phase by phase:
 * 0, -2 where some threads finished while others waited at a barrier, -3 out of memory. */
static int host_run_block(int bx, int by, int reverse)
{
    const int nthreads = bx * by;
    for (int i = 0; i < nthreads; i++) {
        if (!host_stacks[i] && !(host_stacks[i] = (char*)malloc(HOST_STACK))) return -3;
        getcontext(&host_ctx[i]);
        host_ctx[i].uc_stack.ss_sp = host_stacks[i];
        host_ctx[i].uc_stack.ss_size = HOST_STACK;
        host_ctx[i].uc_link = &host_sched;
        makecontext(&host_ctx[i], host_block_thread, 0);
        host_finished[i] = 0;
    }
    for (int left = nthreads; left;) {
        int done_now = 0;
        for (int k = 0; k < nthreads; k++) {
            const int i = reverse ? nthreads - 1 - k : k;
            if (host_finished[i]) continue;
            host_cur = i;
            threadIdx.x = i % bx;
            threadIdx.y = i / bx;
            swapcontext(&host_sched, &host_ctx[i]);
            done_now += host_finished[i];
        }
        if (done_now && done_now != left) return -2;
        left -= done_now;
    }
    return 0;
}

/* A launch of entry (one thread's kernel call) on a (gx, gy, gz) grid of blocks of bx x by
 * threads, block after block: 0, -1 for a block of no threads or more than HOST_MAX_THREADS,
 * else the first nonzero host_run_block result. */
static int host_run_grid(void (*entry)(void), int gx, int gy, int gz, int bx, int by, int reverse)
{
    if (bx < 1 || by < 1 || bx * by > HOST_MAX_THREADS) return -1;
    host_block_entry = entry;
    blockDim.x = bx;
    blockDim.y = by;
    blockDim.z = 1;
    gridDim.x = gx;
    gridDim.y = gy;
    gridDim.z = gz;
    threadIdx.z = 0;
    for (int z = 0; z < gz; z++)
        for (int y = 0; y < gy; y++)
            for (int x = 0; x < gx; x++) {
                blockIdx.x = x;
                blockIdx.y = y;
                blockIdx.z = z;
                const int rc = host_run_block(bx, by, reverse);
                if (rc) return rc;
            }
    return 0;
}

#endif
