/* CUDA's int atomics for the host emulations (tier1_encode_host.cpp, tier1_warp_host.cpp):
 * their threads run one at a time, so a plain read-modify-write is atomic there. */
#ifndef CINEGPU_HOST_ATOMICS_H
#define CINEGPU_HOST_ATOMICS_H

static int atomicAdd(int* p, int v)
{
    int old = *p;
    *p += v;
    return old;
}

static int atomicMax(int* p, int v)
{
    int old = *p;
    if (v > old)
        *p = v;
    return old;
}

#endif
