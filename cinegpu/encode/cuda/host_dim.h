/* The CUDA built-in index variables of the host emulations whose kernels use only .x: one
 * set of globals, which host_grid.h and host_warp.h set before each thread's call. */
#ifndef CINEGPU_HOST_DIM_H
#define CINEGPU_HOST_DIM_H

struct Dim {
    unsigned int x;
};
static Dim threadIdx, blockIdx, blockDim, gridDim;

#endif
