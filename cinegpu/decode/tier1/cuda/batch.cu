// A tier-1 batch's parts rebased in one launch (tier1/gpu.py RowBatch.rebase_on_device; the
// numpy twin is RowBatch.rebase): part k holds rows [bounds[k], bounds[k + 1]) of the batch's
// code-block table (codeblock.py CB_* columns, CB_COLUMNS int64 a row) and of its work order;
// its CB_DATA, CB_SEG_FIRST and CB_OUT move by data[k], segs[k] and out[k], its work order by
// bounds[k].  `parts` holds bounds (nparts + 1), then data, segs, out (nparts each).

#define CB_DATA 0
#define CB_SEG_FIRST 1
#define CB_OUT 7
#define CB_COLUMNS 11

extern "C" __global__ void tier1_rebase_parts(long long *table, int *order, const long long *parts, int nparts,
                                              long long rows)
{
    const long long *bounds = parts, *data = parts + nparts + 1, *segs = data + nparts, *out = segs + nparts;
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows;
         r += (long long)blockDim.x * gridDim.x) {
        int lo = 0, hi = nparts - 1;  // the last part whose first row is at or before r
        while (lo < hi) {
            const int mid = (lo + hi + 1) >> 1;
            if (bounds[mid] <= r) lo = mid; else hi = mid - 1;
        }
        long long *row = table + r * CB_COLUMNS;
        row[CB_DATA] += data[lo];
        row[CB_SEG_FIRST] += segs[lo];
        row[CB_OUT] += out[lo];
        order[r] += (int)bounds[lo];
    }
}
