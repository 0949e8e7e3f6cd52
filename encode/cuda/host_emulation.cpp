/* forward.cu compiled as plain C++ for the host: the 1D_SD kernels' logic checked bit for
 * bit against their numpy twins where there is no GPU (tests/test_encode_dwt_host.py builds
 * it with g++ -ffp-contract=off, as NVRTC's --fmad=false).
 *
 * A block's threads are run as cooperative contexts (ucontext), one at a time in thread order
 * (or reversed): each runs until its __syncthreads, and the block's next phase starts when
 * every thread has reached the barrier, as on the GPU.  A missing barrier then shows as a
 * thread reading what a later thread has not written yet; a barrier that some threads of
 * the block skip is reported (-2).  Blocks run one after another; shared arrays are static.
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
Dim threadIdx, blockIdx, blockDim, gridDim;
static void host_sync();
static unsigned int atomicMax(unsigned int* p, unsigned int v)
{
    unsigned int old = *p;
    if (v > old) *p = v;
    return old;
}

static unsigned int atomicAdd(unsigned int* p, unsigned int v)
{
    unsigned int old = *p;
    *p = old + v;
    return old;
}
static unsigned long long atomicAdd(unsigned long long* p, unsigned long long v)
{
    unsigned long long old = *p;
    *p = old + v;
    return old;
}
static int __clz(int x) { return x ? __builtin_clz((unsigned int)x) : 32; }
static long long atomicMin(long long* p, long long v)
{
    long long old = *p;
    if (v < old) *p = v;
    return old;
}
static long long atomicMax(long long* p, long long v)
{
    long long old = *p;
    if (v > old) *p = v;
    return old;
}

#include "forward.cu"

enum { MAX_THREADS = 1024, STACK = 1 << 16 };
static ucontext_t sched, ctx[MAX_THREADS];
static char* stacks[MAX_THREADS];
static int cur, finished[MAX_THREADS];
static struct {
    int filt, cols, n, lines, p;
    const void* x;
    void *lo, *hi;
    long long count, w, rs, ps;
} args;

static void host_sync() { swapcontext(&ctx[cur], &sched); }

static void thread_main()
{
    long long* ext = (long long*)args.lo;
    if (args.filt == 0)
        bit_length_histogram((const int*)args.x, args.count, (unsigned long long*)args.lo);
    else if (args.filt == 1)       /* plane_extremes: p is the dtype's code */
        switch (args.p) {
        case 0: plane_extremes_u8((const unsigned char*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 1: plane_extremes_i8((const signed char*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 2: plane_extremes_u16((const unsigned short*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 3: plane_extremes_i16((const short*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 4: plane_extremes_u32((const unsigned int*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 5: plane_extremes_i32((const int*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        default: plane_extremes_i64((const long long*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        }
    else if (args.filt == 97 && args.cols)
        sd97_cols((const float*)args.x, (float*)args.lo, (float*)args.hi, args.n, args.lines, args.p);
    else if (args.filt == 97)
        sd97_rows((const float*)args.x, (float*)args.lo, (float*)args.hi, args.n, args.lines, args.p);
    else if (args.cols)
        sd53_cols_i32((const int*)args.x, (int*)args.lo, (int*)args.hi, args.n, args.lines, args.p);
    else
        sd53_rows_i32((const int*)args.x, (int*)args.lo, (int*)args.hi, args.n, args.lines, args.p);
    finished[cur] = 1;
}

/* One block: threads run phase by phase.  0, or -2 where some threads finished while others
 * waited at a barrier (a barrier not reached by the whole block). */
static int run_block(int nthreads, int reverse)
{
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
            int i = reverse ? nthreads - 1 - k : k;
            if (finished[i]) continue;
            cur = i;
            threadIdx.x = i;
            swapcontext(&sched, &ctx[i]);
            done_now += finished[i];
        }
        if (done_now && done_now != left) return -2;
        left -= done_now;
    }
    return 0;
}

/* The kernel of `args` on a (gx, gy) grid of blocks of `threads` threads, block after block
 * (run_block); the first nonzero run_block result, else 0. */
static int run_grid(int gx, int gy, int threads, int reverse)
{
    blockDim.x = threads;
    blockDim.y = blockDim.z = 1;
    gridDim.x = gx;
    gridDim.y = gy;
    gridDim.z = 1;
    threadIdx.y = threadIdx.z = 0;
    for (int by = 0; by < gy; by++)
        for (int bx = 0; bx < gx; bx++) {
            blockIdx.x = bx;
            blockIdx.y = by;
            blockIdx.z = 0;
            int rc = run_block(threads, reverse);
            if (rc) return rc;
        }
    return 0;
}

/* Runs sd97_cols / sd97_rows (filt 97, float32) or sd53_cols_i32 / sd53_rows_i32 (filt 53,
 * int32) on a (gx, gy) grid of blocks of `threads` threads: cols != 0 transforms the columns
 * of an (n, lines) plane, else the rows of a (lines, n) plane.  Returns 0, -1 for bad
 * arguments, -2 for a barrier not reached by a whole block, -3 out of memory. */
extern "C" int sd_emulate(int filt, int cols, const void* x, void* lo, void* hi, int n,
                          int lines, int p, int gx, int gy, int threads, int reverse)
{
    if ((filt != 97 && filt != 53) || threads < 1 || threads > MAX_THREADS) return -1;
    args.filt = filt;
    args.cols = cols;
    args.n = n;
    args.lines = lines;
    args.p = p;
    args.x = x;
    args.lo = lo;
    args.hi = hi;
    return run_grid(gx, gy, threads, reverse);
}

/* bit_length_histogram over n int32 indices on gx blocks of `threads` threads, added to
 * out[0..32].  Returns as sd_emulate. */
extern "C" int hist_emulate(const int* v, long long n, unsigned long long* out, int gx,
                            int threads, int reverse)
{
    if (threads < 1 || threads > MAX_THREADS || gx < 1) return -1;
    args.filt = 0;
    args.x = v;
    args.lo = out;
    args.count = n;
    return run_grid(gx, 1, threads, reverse);
}

/* plane_extremes_<dtype> (code: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 i64) of an
 * (h, w) plane at x with element strides rs, ps on a (gx, gy) grid of blocks of `threads`
 * threads, into out[0..1] (preset to LLONG_MAX, LLONG_MIN).  Returns as sd_emulate. */
extern "C" int extremes_emulate(int code, const void* x, long long h, long long w, long long rs,
                                long long ps, long long* out, int gx, int gy, int threads,
                                int reverse)
{
    if (threads < 1 || threads > EXT_THREADS || gx < 1 || gy < 1 || code < 0 || code > 6)
        return -1;
    args.filt = 1;
    args.p = code;
    args.x = x;
    args.lo = out;
    args.count = h;
    args.w = w;
    args.rs = rs;
    args.ps = ps;
    return run_grid(gx, gy, threads, reverse);
}
