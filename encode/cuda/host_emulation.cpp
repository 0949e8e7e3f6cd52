/* forward.cu compiled as plain C++ for the host: the 1D_SD kernels' logic checked bit for
 * bit against their numpy twins where there is no GPU (tests/test_encode_dwt_host.py builds
 * it with g++ -ffp-contract=off, as NVRTC's --fmad=false).
 *
 * Every block is run as one thread (blockDim.x = 1), blocks one after another: the kernels
 * loop each phase over all of a block's work items in steps of blockDim.x and separate the
 * phases with __syncthreads, so one thread does the whole phase before the next and the
 * barrier is a no-op.  (No item of a phase reads what another item of it writes.)
 */

#include <math.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads()

struct Dim { unsigned int x, y, z; };
static Dim threadIdx, blockIdx, blockDim, gridDim;
static unsigned int atomicMax(unsigned int* p, unsigned int v)
{
    unsigned int old = *p;
    if (v > old) *p = v;
    return old;
}

#include "forward.cu"

/* Runs sd97_cols / sd97_rows (filt 97, float32) or sd53_cols_i32 / sd53_rows_i32 (filt 53,
 * int32) on a (gx, gy) grid of one-thread blocks: cols != 0 transforms the columns of an
 * (n, lines) plane, else the rows of a (lines, n) plane.  Returns 0, or -1 for a bad filt. */
extern "C" int sd_emulate(int filt, int cols, const void* x, void* lo, void* hi, int n,
                          int lines, int p, int gx, int gy)
{
    if (filt != 97 && filt != 53) return -1;
    blockDim.x = 1;
    blockDim.y = blockDim.z = 1;
    gridDim.x = gx;
    gridDim.y = gy;
    gridDim.z = 1;
    threadIdx.x = threadIdx.y = threadIdx.z = 0;
    for (int by = 0; by < gy; by++)
        for (int bx = 0; bx < gx; bx++) {
            blockIdx.x = bx;
            blockIdx.y = by;
            blockIdx.z = 0;
            if (filt == 97 && cols)
                sd97_cols((const float*)x, (float*)lo, (float*)hi, n, lines, p);
            else if (filt == 97)
                sd97_rows((const float*)x, (float*)lo, (float*)hi, n, lines, p);
            else if (cols)
                sd53_cols_i32((const int*)x, (int*)lo, (int*)hi, n, lines, p);
            else
                sd53_rows_i32((const int*)x, (int*)lo, (int*)hi, n, lines, p);
        }
    return 0;
}
