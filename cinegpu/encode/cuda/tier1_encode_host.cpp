/* tier1_encode.cu compiled as plain C++ for the host: the kernels' logic checked against the
 * numba tile encoder where there is no GPU (tests/test_encode_tier1_gpu.py builds this with
 * g++ -ffp-contract=off and calls t1enc_emulate through ctypes).
 *
 * The three kernels run one after the other, the host doing the wrapper's steps in between
 * (encode/tier1/gpu_plan.py: offsets, order, capacities).  t1enc_code_blocks runs with
 * lanes = 1 and one warp per CUDA block: each block's threads run highest first, so the shared
 * lookup tables are complete when thread 0 (the one working lane) codes; the first thread 0
 * takes every block from the counter, its scratch laid out with nslots slots as on the GPU.
 */

#define T1E_HOST_EMULATION
#define T1E_NO_WARP_KERNEL /* the warp kernel has its own emulation, tier1_warp_host.cpp */
#define T1E_DEV static inline
#define T1E_SHARED static
#define T1E_SYNC()
#define T1E_CLZ32(x) __builtin_clz((unsigned int)(x))
#define __global__

#include "host_atomics.h"
#include "host_grid.h"

#include "tier1_encode.cu"

/* t1enc_num_bps on a grid of `grid` CUDA blocks of `threads` threads */
extern "C" void t1enc_emulate_num_bps(const int* flat, const i64* cb, int ncols, int nblk,
                                      int* num_bps, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads, t1enc_num_bps(flat, cb, ncols, nblk, num_bps));
}

/* t1enc_code_blocks with lanes = 1 over nslots CUDA blocks of 32 threads (one warp, slot =
 * block): threads 31..1 load their share of the tables and return, then thread 0 codes. */
extern "C" void t1enc_emulate_code(const int* flat, const i64* cb, int ncols, int nblk,
                                   const int* order, int style, const int* num_bps,
                                   const i64* rate_off, const i64* cap_off,
                                   unsigned char* region, int* rates, double* dists, i64* lens,
                                   int* status, unsigned short* flags, u32* sm, int* snap,
                                   int nslots, int slot_pitch, const u32* mq_lut,
                                   const unsigned char* zc_lut,
                                   const unsigned char* sc_lut, const unsigned char* ctx_init,
                                   int floor_bp)
{
    int next_row = 0;
    blockDim.x = 32;
    gridDim.x = nslots;
    for (unsigned int b = 0; b < gridDim.x; b++) {
        blockIdx.x = b;
        for (int t = 31; t >= 0; t--) {
            threadIdx.x = t;
            t1enc_code_blocks(flat, cb, ncols, nblk, order, style, num_bps, rate_off, cap_off,
                              region, rates, dists, lens, status, flags, sm, snap, nslots,
                              slot_pitch, 1,
                              &next_row, mq_lut, zc_lut, sc_lut, ctx_init, floor_bp);
        }
    }
}

/* t1enc_compact on a grid of `grid` CUDA blocks of `threads` threads */
extern "C" void t1enc_emulate_compact(const unsigned char* region, const i64* cap_off,
                                      const i64* lens, const i64* coded_off, int nblk,
                                      unsigned char* out, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads, t1enc_compact(region, cap_off, lens, coded_off, nblk, out));
}
