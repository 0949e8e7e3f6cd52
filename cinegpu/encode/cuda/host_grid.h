/* The host emulations' grid loop: `call` run for every thread of a grid of `grid` CUDA blocks
 * of `threads` threads, one after another (blockIdx.x, threadIdx.x set as on the GPU; the
 * Dim globals come from host_dim.h).  For kernels whose threads never meet at a barrier. */
#ifndef CINEGPU_HOST_GRID_H
#define CINEGPU_HOST_GRID_H

#include "host_dim.h"

#define HOST_FOR_EACH_THREAD(grid, threads, call)                                           \
    do {                                                                                    \
        gridDim.x = (grid);                                                                 \
        blockDim.x = (threads);                                                             \
        for (int host_b = 0; host_b < (int)(grid); host_b++) {                              \
            blockIdx.x = host_b;                                                            \
            for (int host_t = 0; host_t < (int)(threads); host_t++) {                       \
                threadIdx.x = host_t;                                                       \
                call;                                                                       \
            }                                                                               \
        }                                                                                   \
    } while (0)

#endif
