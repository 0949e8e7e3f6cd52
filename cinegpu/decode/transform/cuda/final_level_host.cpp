/* final_level.cu compiled as plain C++ for the host: the fused finest-level VER_SR and
 * inverse MCT checked bit for bit against the numpy twins where there is no GPU
 * (tests/decode/transform/test_final_level_host.py builds it with g++ -ffp-contract=off, as
 * NVRTC's --fmad=false). A block's threads run as host_block.h runs them: cooperative contexts
 * between barriers, in thread order or reversed.
 */

#include <math.h>

#include "host_block.h"

static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
#define __ldg(p) (*(p))

#include "final_level.cu"

/* The launch a run makes: the kernel's arguments (out_type: 0 int, 1 u16, 2 i16, 3 u8, 4 i8). */
static struct {
    int reversible, out_type, m, n, pv;
    const void* buf;
    long long cstride, fwork, fout;
    void *r, *g, *b;
    const int* bounds; /* s0, lo0, hi0, s1, lo1, hi1, s2, lo2, hi2 */
} args;

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
    /* cuda_backend's grid: (ceil(n / FL_TW), ceil(m / FL_OUT), frames), blocks of FL_TW x 8 there */
    return host_run_grid(thread_main, (n + FL_TW - 1) / FL_TW, (m + FL_OUT - 1) / FL_OUT, frames, bx, by,
                         reverse);
}
