/* final_level.cu compiled as plain C++ for the host: the fused finest-level VER_SR and
 * inverse MCT checked bit for bit against the numpy twins where there is no GPU
 * (tests/decode/transform/test_final_level_host.py builds it with g++ -ffp-contract=off, as
 * NVRTC's --fmad=false).
 *
 * A block's threads run as cooperative contexts (ucontext), one at a time in thread order (or
 * reversed): each runs until its __syncthreads, and the block's next phase starts when every
 * thread has reached the barrier, as on the GPU; a missing barrier then shows as a thread
 * reading what another has not written yet, and a barrier some threads skip is reported (-2).
 * Blocks run one after another; shared arrays are static.
 */

#include <math.h>
#include <stdlib.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() host_sync()

struct Dim { unsigned int x, y, z; };
static Dim threadIdx, blockIdx, blockDim, gridDim;
static void host_sync();
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
#define __ldg(p) (*(p))

#include "final_level.cu"

enum { MAX_THREADS = 1024, STACK = 1 << 16 };
static ucontext_t sched, ctx[MAX_THREADS];
static char* stacks[MAX_THREADS];
static int cur, finished[MAX_THREADS];

/* The launch a run makes: the kernel's arguments (out_type: 0 int, 1 u16, 2 i16, 3 u8, 4 i8). */
static struct {
    int reversible, out_type, m, n, pv;
    const void* buf;
    long long cstride, fwork, fout;
    void *r, *g, *b;
    const int* bounds; /* s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2 */
} args;

static void host_sync() { swapcontext(&ctx[cur], &sched); }

#define RUN(prefix, in_t, T, suffix)                                                               \
    prefix##suffix((const in_t*)args.buf, args.cstride, args.m, args.n, args.pv, (T*)args.r,      \
                   (T*)args.g, (T*)args.b, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8],  \
                   args.fwork, args.fout)
#define RUN_ALL(prefix, in_t)                                             \
    switch (args.out_type) {                                              \
    case 0: RUN(prefix, in_t, int, ); break;                              \
    case 1: RUN(prefix, in_t, unsigned short, _u16); break;               \
    case 2: RUN(prefix, in_t, short, _i16); break;                        \
    case 3: RUN(prefix, in_t, unsigned char, _u8); break;                 \
    default: RUN(prefix, in_t, signed char, _i8); break;                  \
    }

static void thread_main()
{
    const int* q = args.bounds;
    if (args.reversible)
        RUN_ALL(idwt53_cols_rct_i32, int)
    else
        RUN_ALL(idwt97_cols_ict_f32, float)
    finished[cur] = 1;
}

/* One block of bx x by threads, run phase by phase: 0, or -2 where some threads finished
 * while others waited at a barrier, -3 out of memory. */
static int run_block(int bx, int by, int reverse)
{
    const int nthreads = bx * by;
    for (int i = 0; i < nthreads; i++) {
        if (!stacks[i] && !(stacks[i] = (char*)malloc(STACK))) return -3;
        getcontext(&ctx[i]);
        ctx[i].uc_stack.ss_sp = stacks[i];
        ctx[i].uc_stack.ss_size = STACK;
        ctx[i].uc_link = &sched;
        makecontext(&ctx[i], thread_main, 0);
        finished[i] = 0;
    }
    for (int left = nthreads; left;) {
        int done_now = 0;
        for (int k = 0; k < nthreads; k++) {
            const int i = reverse ? nthreads - 1 - k : k;
            if (finished[i]) continue;
            cur = i;
            threadIdx.x = i % bx;
            threadIdx.y = i / bx;
            swapcontext(&sched, &ctx[i]);
            done_now += finished[i];
        }
        if (done_now && done_now != left) return -2;
        left -= done_now;
    }
    return 0;
}

/* The launch of `args` on cuda_backend's grid, (ceil(n / FL_TW), ceil(m / FL_OUT), frames), with
 * blocks of bx x by threads (FL_TW x 8 there), block after block: 0, or run_block's first failure. */
static int run_grid(int frames, int bx, int by, int reverse)
{
    if (bx * by > MAX_THREADS) return -1;
    blockDim.x = bx;
    blockDim.y = by;
    blockDim.z = 1;
    threadIdx.z = 0;
    gridDim.x = (args.n + FL_TW - 1) / FL_TW;
    gridDim.y = (args.m + FL_OUT - 1) / FL_OUT;
    gridDim.z = frames;
    for (unsigned int z = 0; z < gridDim.z; z++)
        for (unsigned int y = 0; y < gridDim.y; y++)
            for (unsigned int x = 0; x < gridDim.x; x++) {
                blockIdx.x = x;
                blockIdx.y = y;
                blockIdx.z = z;
                const int rc = run_block(bx, by, reverse);
                if (rc) return rc;
            }
    return 0;
}

/* idwt*_cols_{ict,rct}_*: the vertical pass of planes (3, m, n) at buf, cstride samples apart. */
extern "C" int final_level_emulate(int reversible, int out_type, const void* buf, long long cstride,
                                   int m, int n, int pv, void* r, void* g, void* b, const int* bounds,
                                   int frames, long long fwork, long long fout, int bx, int by,
                                   int reverse)
{
    args.reversible = reversible;
    args.out_type = out_type;
    args.buf = buf;
    args.cstride = cstride;
    args.m = m;
    args.n = n;
    args.pv = pv;
    args.r = r;
    args.g = g;
    args.b = b;
    args.bounds = bounds;
    args.fwork = fwork;
    args.fout = fout;
    return run_grid(frames, bx, by, reverse);
}
