/* pcrd.cu compiled as plain C++ for the host: the kernels' own code checked against the numba
 * twins (encode/rate.py) where there is no GPU.  tests/test_rate_gpu.py builds this with
 * g++ -ffp-contract=off (nvrtc builds pcrd.cu with --fmad=false) and calls it through ctypes.
 * Each kernel runs as one CUDA block of one thread, whose grid-stride loop covers every item;
 * atomicMax is the plain read-compare-write it is for one thread.
 */

#define PCRD_HOST_EMULATION
typedef long long i64;
#define __global__

struct Dim {
    unsigned int x;
};
static const Dim threadIdx = {0}, blockIdx = {0}, blockDim = {1}, gridDim = {1};

static int atomicMax(int* p, int v)
{
    int old = *p;
    if (v > old)
        *p = v;
    return old;
}

#include "pcrd.cu"
