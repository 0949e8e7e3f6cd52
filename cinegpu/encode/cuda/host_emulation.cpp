/* forward.cu compiled as plain C++ for the host: the 1D_SD kernels' logic checked bit for
 * bit against their numpy twins where there is no GPU (tests/encode/test_encode_dwt_host.py builds
 * it with g++ -ffp-contract=off, as NVRTC's --fmad=false); the batched, fused kernels
 * (colour_*, sd*_cols_c, sd*_rows_q) and image_extremes_* in tests/encode/test_forward_batched_host.py.
 *
 * A block's threads run as decode/transform/cuda/host_block.h runs them: cooperative contexts
 * between barriers, in thread order or reversed.
 */

#include <math.h>

#include "../../decode/transform/cuda/host_block.h"

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

/* The kernel a run starts (args.kind) and its arguments. */
enum Kind { K_SD, K_HIST, K_PLANE_EXT, K_COLOUR, K_COLS_C, K_ROWS_Q, K_IMAGE_EXT, K_CLIP };
static struct {
    int kind, filt, cols, n, lines, p;
    const void* x;
    void *lo, *hi;
    long long count, w, rs, ps;
    int code, rev, h, ncomp, mct;   /* colour_* (code: input type), image_extremes_* */
    const void *x1, *x2;            /* colour_*: components 1, 2 (0 at x) */
    double s[3];                    /* colour_*: the shifts */
    float scale, peak;              /* colour_*: the code-value step (peak <= 0: none) */
    long long cs, llcs;             /* component strides: of x (and out), of ll */
    int nlv, ll_q;                  /* sd*_rows_q (ll at lo, flat at hi) */
    const long long* offs;
    const float* inv;
    unsigned int* tops;             /* sd*_rows_q: each band's largest |index| */
    const long long* lens;          /* band_clip*: band lengths (offsets at offs) */
    const int* lims;                /* band_clip*: limits */
} args;

/* colour_f32_<in> / colour_i32_<in> of `args`, the kernels themselves (their wrappers
 * included): the shifts as float32 / int32, the code-value step's scale and peak as float32. */
#define RUN_COLOUR(name, In)                                                                        \
    (args.rev ? colour_i32_##name((const In*)args.x, (const In*)args.x1, (const In*)args.x2,        \
                                  args.rs, args.ps, args.h, (int)args.w, args.ncomp,                \
                                  args.mct, (int)args.s[0], (int)args.s[1], (int)args.s[2],         \
                                  (int*)args.lo, args.cs, args.scale, args.peak)                    \
              : colour_f32_##name((const In*)args.x, (const In*)args.x1, (const In*)args.x2,        \
                                  args.rs, args.ps, args.h, (int)args.w, args.ncomp,                \
                                  args.mct, (float)args.s[0], (float)args.s[1],                     \
                                  (float)args.s[2], (float*)args.lo, args.cs, args.scale,           \
                                  args.peak))

static void thread_main()
{
    long long* ext = (long long*)args.lo;
    if (args.kind == K_HIST)
        bit_length_histogram((const int*)args.x, args.count, (unsigned long long*)args.lo);
    else if (args.kind == K_PLANE_EXT)       /* p is the dtype's code */
        switch (args.p) {
        case 0: plane_extremes_u8((const unsigned char*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 1: plane_extremes_i8((const signed char*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 2: plane_extremes_u16((const unsigned short*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 3: plane_extremes_i16((const short*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 4: plane_extremes_u32((const unsigned int*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        case 5: plane_extremes_i32((const int*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        default: plane_extremes_i64((const long long*)args.x, args.count, args.w, args.rs, args.ps, ext); break;
        }
    else if (args.kind == K_IMAGE_EXT)       /* code: the dtype's, as plane_extremes */
        switch (args.code) {
        case 0: image_extremes_u8((const unsigned char*)args.x, args.count, args.ncomp, ext); break;
        case 1: image_extremes_i8((const signed char*)args.x, args.count, args.ncomp, ext); break;
        case 2: image_extremes_u16((const unsigned short*)args.x, args.count, args.ncomp, ext); break;
        case 3: image_extremes_i16((const short*)args.x, args.count, args.ncomp, ext); break;
        case 4: image_extremes_u32((const unsigned int*)args.x, args.count, args.ncomp, ext); break;
        case 5: image_extremes_i32((const int*)args.x, args.count, args.ncomp, ext); break;
        default: image_extremes_i64((const long long*)args.x, args.count, args.ncomp, ext); break;
        }
    else if (args.kind == K_COLOUR)          /* code: 0 u8, 1 u16, 2 i16, 3 i32 */
        switch (args.code) {
        case 0: RUN_COLOUR(u8, unsigned char); break;
        case 1: RUN_COLOUR(u16, unsigned short); break;
        case 2: RUN_COLOUR(i16, short); break;
        default: RUN_COLOUR(i32, int); break;
        }
    else if (args.kind == K_COLS_C && args.filt == 97)
        sd97_cols_c((const float*)args.x, (float*)args.lo, args.cs, args.n, args.lines, args.p);
    else if (args.kind == K_COLS_C)
        sd53_cols_c((const int*)args.x, (int*)args.lo, args.cs, args.n, args.lines, args.p);
    else if (args.kind == K_CLIP && args.tops)
        band_clip_over_i32((int*)args.hi, args.offs, args.lens, args.lims, args.tops);
    else if (args.kind == K_CLIP)
        band_clip_i32((int*)args.hi, args.offs, args.lens, args.lims);
    else if (args.kind == K_ROWS_Q && args.filt == 97)
        sd97_rows_q((const float*)args.x, args.cs, args.n, args.lines, args.p, args.nlv,
                    (float*)args.lo, args.llcs, (int*)args.hi, args.offs, args.inv, args.ll_q,
                    args.tops);
    else if (args.kind == K_ROWS_Q)
        sd53_rows_q((const int*)args.x, args.cs, args.n, args.lines, args.p, args.nlv,
                    (int*)args.lo, args.llcs, (int*)args.hi, args.offs, args.inv, args.ll_q,
                    args.tops);
    else if (args.filt == 97 && args.cols)
        sd97_cols((const float*)args.x, (float*)args.lo, (float*)args.hi, args.n, args.lines, args.p);
    else if (args.filt == 97)
        sd97_rows((const float*)args.x, (float*)args.lo, (float*)args.hi, args.n, args.lines, args.p);
    else if (args.cols)
        sd53_cols_i32((const int*)args.x, (int*)args.lo, (int*)args.hi, args.n, args.lines, args.p);
    else
        sd53_rows_i32((const int*)args.x, (int*)args.lo, (int*)args.hi, args.n, args.lines, args.p);
}

/* The kernel of `args` on a (gx, gy, gz) grid of blocks of `threads` threads (host_run_grid). */
static int run_grid(int gx, int gy, int gz, int threads, int reverse)
{
    return host_run_grid(thread_main, gx, gy, gz, threads, 1, reverse);
}

/* Runs sd97_cols / sd97_rows (filt 97, float32) or sd53_cols_i32 / sd53_rows_i32 (filt 53,
 * int32) on a (gx, gy) grid of blocks of `threads` threads: cols != 0 transforms the columns
 * of an (n, lines) plane, else the rows of a (lines, n) plane.  Returns 0, -1 for bad
 * arguments, -2 for a barrier not reached by a whole block, -3 out of memory. */
extern "C" int sd_emulate(int filt, int cols, const void* x, void* lo, void* hi, int n,
                          int lines, int p, int gx, int gy, int threads, int reverse)
{
    if ((filt != 97 && filt != 53) || threads < 1 || threads > HOST_MAX_THREADS) return -1;
    args.kind = K_SD;
    args.filt = filt;
    args.cols = cols;
    args.n = n;
    args.lines = lines;
    args.p = p;
    args.x = x;
    args.lo = lo;
    args.hi = hi;
    return run_grid(gx, gy, 1, threads, reverse);
}

/* bit_length_histogram over n int32 indices on gx blocks of `threads` threads, added to
 * out[0..32].  Returns as sd_emulate. */
extern "C" int hist_emulate(const int* v, long long n, unsigned long long* out, int gx,
                            int threads, int reverse)
{
    if (threads < 1 || threads > HOST_MAX_THREADS || gx < 1) return -1;
    args.kind = K_HIST;
    args.x = v;
    args.lo = out;
    args.count = n;
    return run_grid(gx, 1, 1, threads, reverse);
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
    args.kind = K_PLANE_EXT;
    args.p = code;
    args.x = x;
    args.lo = out;
    args.count = h;
    args.w = w;
    args.rs = rs;
    args.ps = ps;
    return run_grid(gx, gy, 1, threads, reverse);
}

/* image_extremes_<dtype> (code as extremes_emulate) of a C-contiguous interleaved image of n
 * elements and ncomp components on gx blocks of `threads` threads (a multiple of ncomp),
 * into out[2 c], out[2 c + 1] (preset to LLONG_MAX, LLONG_MIN).  Returns as sd_emulate. */
extern "C" int image_extremes_emulate(int code, const void* x, long long n, int ncomp,
                                      long long* out, int gx, int threads, int reverse)
{
    if (threads < 1 || threads > EXT_THREADS || gx < 1 || code < 0 || code > 6 || ncomp < 1 ||
        ncomp > 4 || threads % ncomp)
        return -1;
    args.kind = K_IMAGE_EXT;
    args.code = code;
    args.x = x;
    args.count = n;
    args.ncomp = ncomp;
    args.lo = out;
    return run_grid(gx, 1, 1, threads, reverse);
}

/* colour_f32_<in> (rev 0: float32 shifts s0..s2) or colour_i32_<in> (rev != 0: int32
 * shifts), in code 0 u8, 1 u16, 2 i16, 3 i32: the DC level shift (and with mct the ICT /
 * RCT) of ncomp (1-3) components read at element strides rs, ps from x0, x1, x2 (each
 * sample first its code value where peak > 0: code_value, float32 scale and peak), into the
 * (h, w) planes out + c * cs, on a (gx, gy) grid of blocks of `threads` threads.  Returns
 * as sd_emulate. */
extern "C" int colour_emulate(int code, int rev, const void* x0, const void* x1, const void* x2,
                              long long rs, long long ps, int h, int w, int ncomp, int mct,
                              double s0, double s1, double s2, void* out, long long cs,
                              float scale, float peak, int gx, int gy, int threads, int reverse)
{
    if (threads < 1 || threads > HOST_MAX_THREADS || gx < 1 || gy < 1 || code < 0 || code > 3 ||
        ncomp < 1 || ncomp > 3)
        return -1;
    args.kind = K_COLOUR;
    args.code = code;
    args.rev = rev;
    args.x = x0;
    args.x1 = x1;
    args.x2 = x2;
    args.rs = rs;
    args.ps = ps;
    args.h = h;
    args.w = w;
    args.ncomp = ncomp;
    args.mct = mct;
    args.s[0] = s0;
    args.s[1] = s1;
    args.s[2] = s2;
    args.scale = scale;
    args.peak = peak;
    args.lo = out;
    args.cs = cs;
    return run_grid(gx, gy, 1, threads, reverse);
}

/* sd97_cols_c (filt 97, float32) or sd53_cols_c (filt 53, int32): VER_SD of the (n, w)
 * planes x + z * cs into out + z * cs (low rows, then high rows) for z < gz, on a
 * (gx, gy, gz) grid of blocks of `threads` threads.  Returns as sd_emulate. */
extern "C" int sd_cols_c_emulate(int filt, const void* x, void* out, long long cs, int n,
                                 int w, int p, int gx, int gy, int gz, int threads, int reverse)
{
    if ((filt != 97 && filt != 53) || threads < 1 || threads > HOST_MAX_THREADS || gx < 1 ||
        gy < 1 || gz < 1)
        return -1;
    args.kind = K_COLS_C;
    args.filt = filt;
    args.x = x;
    args.lo = out;
    args.cs = cs;
    args.n = n;
    args.lines = w;
    args.p = p;
    return run_grid(gx, gy, gz, threads, reverse);
}

/* sd97_rows_q (filt 97, float32) or sd53_rows_q (filt 53, int32): HOR_SD of the m rows of n
 * samples of the planes x + z * xcs (rows [0, nlv) the vertical low half) for z < gz, LL to
 * ll + z * llcs (ll_q 0) or, as every other band, quantised into flat at offs[4 z ..] with
 * inv[4 z ..], each band's largest |index| atomically into tops[4 z ..], on a (gx, gy, gz)
 * grid of blocks of `threads` threads.  Returns as sd_emulate. */
extern "C" int sd_rows_q_emulate(int filt, const void* x, long long xcs, int n, int m, int p,
                                 int nlv, void* ll, long long llcs, int* flat,
                                 const long long* offs, const float* inv, int ll_q,
                                 unsigned int* tops, int gx, int gy, int gz, int threads,
                                 int reverse)
{
    if ((filt != 97 && filt != 53) || threads < 1 || threads > HOST_MAX_THREADS || gx < 1 ||
        gy < 1 || gz < 1)
        return -1;
    args.kind = K_ROWS_Q;
    args.filt = filt;
    args.x = x;
    args.cs = xcs;
    args.n = n;
    args.lines = m;
    args.p = p;
    args.nlv = nlv;
    args.lo = ll;
    args.llcs = llcs;
    args.hi = flat;
    args.offs = offs;
    args.inv = inv;
    args.ll_q = ll_q;
    args.tops = tops;
    return run_grid(gx, gy, gz, threads, reverse);
}

/* band_clip_i32 (tops NULL) or band_clip_over_i32 of the nb bands (off, len, lim, tops) of
 * flat, on a (gx, nb) grid of blocks of `threads` threads.  Returns as sd_emulate. */
extern "C" int band_clip_emulate(int* flat, const long long* off, const long long* len,
                                 const int* lim, const unsigned int* tops, int nb, int gx,
                                 int threads, int reverse)
{
    if (threads < 1 || threads > HOST_MAX_THREADS || gx < 1 || nb < 1)
        return -1;
    args.kind = K_CLIP;
    args.hi = flat;
    args.offs = off;
    args.lens = len;
    args.lims = lim;
    args.tops = (unsigned int*)tops;
    return run_grid(gx, nb, 1, threads, reverse);
}
