/* ht_select.cu compiled as plain C++ for the host: the plane-choice kernels' own code checked
 * against their numba twins (encode/ht_select.py hull_steps, _moves, _planes_at) where there is
 * no GPU.  tests/test_ht_select_gpu.py builds this with g++ -ffp-contract=off and calls the
 * hts_* entry points through ctypes.
 *
 * Each entry point runs its kernel over a grid of `grid` CUDA blocks of `threads` threads, one
 * thread after another (host_grid.h): the kernels' threads never meet at a barrier.
 */

#define HTS_HOST
#define HTS_MUL(a, b) ((a) * (b))
#define HTS_INF __builtin_inf()
#define __global__
#define __device__

#include "host_grid.h"

#include "ht_select.cu"

extern "C" void hts_hull_steps(const double* w, const double* dist, const double* bits, int n,
                               int m, i64* start, double* lam, i64* nxt, i64* count, int grid,
                               int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads,
                         ht_hull_steps(w, dist, bits, n, m, start, lam, nxt, count));
}

extern "C" void hts_moves(const i64* start, const double* lam, const i64* nxt, const i64* count,
                          const double* bits, const i64* off, int n, int m, double* slopes,
                          double* gains, double* first_bits, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads,
                         ht_moves(start, lam, nxt, count, bits, off, n, m, slopes, gains,
                                  first_bits));
}

extern "C" void hts_planes_at(const i64* start, const double* lam, const i64* nxt, int n, int m,
                              double slope, int inclusive, i64* d, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads,
                         ht_planes_at(start, lam, nxt, n, m, slope, inclusive, d));
}

extern "C" void hts_planes_at_move(const i64* start, const double* lam, const i64* nxt, int n,
                                   int m, const double* slopes, const i64* at, double lo,
                                   double hi, i64* d, int grid, int threads)
{
    HOST_FOR_EACH_THREAD(grid, threads,
                         ht_planes_at_move(start, lam, nxt, n, m, slopes, at, lo, hi, d));
}
