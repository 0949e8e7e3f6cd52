"""How an encoder process waits for its GPUs.

CUDA's default for a context ("auto") spins a CPU core while a host thread waits for the GPU
(a stream or event synchronisation, a copy back) whenever the process has fewer active contexts
than the machine has cores, as every encoder process has.  Mastering runs several encoder
processes of several threads per GPU, and their rate control and tier-2 on the host are what
bounds them on several GPUs: a thread spinning through the GPU's share of its frame takes a
core another thread's tier-2 could use.  Measured on the GPU machine, a 4K DCI frame's thread
spent most of its CPU time spinning where many threads share one GPU, and less on four
(docs/performance.md, "Several GPUs").

:func:`sleep_on_waits` sets the primary context's ``CU_CTX_SCHED_BLOCKING_SYNC`` (CUDA driver
API, ``cuDevicePrimaryCtxSetFlags``): a waiting thread sleeps until the GPU signals.  The
environment variable ``CINEGPU_CUDA_WAITS=spin`` keeps CUDA's default (an A/B switch for
benchmarks).
"""

from __future__ import annotations

import os

__all__ = ["sleep_on_waits"]


def sleep_on_waits(devices) -> bool:
    """Make this process's waits on each of ``devices`` (CUDA ordinals as this process sees
    them) sleep instead of spin; True where every device took the flag, False where the
    driver bindings (``cuda.bindings``) are missing, the driver refused, or
    ``CINEGPU_CUDA_WAITS=spin``.  Call it before the process's first CUDA work where
    possible (a driver older than CUDA 12 refuses an active context)."""
    if os.environ.get("CINEGPU_CUDA_WAITS", "sleep").strip().lower() == "spin":
        return False
    try:
        from cuda.bindings import driver  # noqa: PLC0415 (optional, with CuPy 13+)
    except ImportError:
        return False
    ok = driver.CUresult.CUDA_SUCCESS
    if driver.cuInit(0)[0] != ok:
        return False
    flag = driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC
    for d in devices:
        err, dev = driver.cuDeviceGet(int(d))
        if err != ok or driver.cuDevicePrimaryCtxSetFlags(dev, flag)[0] != ok:
            return False
        err, flags, _active = driver.cuDevicePrimaryCtxGetState(dev)
        if err != ok or int(flags) & int(driver.CUctx_flags.CU_CTX_SCHED_MASK) != int(flag):
            return False
    return True
