"""The one loader of this package's CUDA kernels (``cuda/*.cu``).

Each ``.cu`` file is compiled once per device with NVRTC through
``cupy.RawModule`` (CuPy also caches the binary on disk) and memoised here
per (file, device).  Built with ``--fmad=false`` so float arithmetic rounds
step by step as the numpy twins do.  Importing this module needs CuPy.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cupy

__all__ = ["kernel", "kernel_optin", "launch_1d"]

CUDA_DIR = Path(__file__).with_name("cuda")
NVRTC_OPTIONS = ("--std=c++14", "--fmad=false")


@functools.lru_cache(maxsize=None)
def _module(name: str, device_id: int) -> cupy.RawModule:
    path = CUDA_DIR / f"{name}.cu"
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=path.read_text(), options=NVRTC_OPTIONS)
        try:
            module.compile()
        except cupy.cuda.compiler.CompileException as exc:
            raise RuntimeError(f"NVRTC compiling {path}: {exc}") from exc
    return module


def kernel(module: str, name: str) -> cupy.RawKernel:
    """Kernel ``name`` of ``cuda/<module>.cu`` for the current device."""
    return _kernel(module, name, cupy.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _kernel(module: str, name: str, device_id: int) -> cupy.RawKernel:
    return _module(module, device_id).get_function(name)


def kernel_optin(module: str, name: str) -> tuple[cupy.RawKernel, int]:
    """Kernel ``name`` allowed the device's whole opt-in dynamic shared memory
    per block (set once), and that limit in bytes."""
    return _kernel_optin(module, name, cupy.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _kernel_optin(module: str, name: str, device_id: int) -> tuple[cupy.RawKernel, int]:
    with cupy.cuda.Device(device_id):
        limit = int(cupy.cuda.Device(device_id).attributes["MaxSharedMemoryPerBlockOptin"])
        k = _kernel(module, name, device_id)
        k.max_dynamic_shared_size_bytes = limit
    return k, limit


def launch_1d(k: cupy.RawKernel, n: int, args: tuple, threads: int = 256) -> None:
    """Launch a grid-stride kernel over ``n`` samples (nothing when n == 0)."""
    if n:
        k((min((n + threads - 1) // threads, 65535),), (threads,), args)
