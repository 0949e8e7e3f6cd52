"""Loader of this package's CUDA kernels (``cuda/*.cu``), compiled once per (file, device).

The same scheme as :mod:`cinegpu.decode.transform.gpu` (whose loader is bound to its own
folder): NVRTC through ``cupy.RawModule``, memoised here.  Importing needs CuPy.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cupy

__all__ = ["kernel"]

CUDA_DIR = Path(__file__).with_name("cuda")
NVRTC_OPTIONS = ("--std=c++14",)


@functools.lru_cache(maxsize=None)
def _kernel(module: str, name: str, device_id: int) -> cupy.RawKernel:
    path = CUDA_DIR / f"{module}.cu"
    with cupy.cuda.Device(device_id):
        raw = cupy.RawModule(code=path.read_text(), options=NVRTC_OPTIONS)
        try:
            raw.compile()
        except cupy.cuda.compiler.CompileException as exc:
            raise RuntimeError(f"NVRTC compiling {path}: {exc}") from exc
        return raw.get_function(name)


def kernel(module: str, name: str) -> cupy.RawKernel:
    """Kernel ``name`` of ``cuda/<module>.cu`` for the current device."""
    return _kernel(module, name, cupy.cuda.runtime.getDevice())
