"""The project's one loader of CUDA kernels (the ``cuda/*.cu`` files beside the modules that use them).

A ``.cu`` file is compiled with NVRTC through ``cupy.RawModule`` once per device
(CuPy also caches the binary on disk) and memoised here per (file, device);
kernels are looked up in it by name.  Every file is built with the same options,
``--fmad=false`` among them, so float arithmetic rounds step by step as the
numpy twins do (the integer kernels are unaffected).  A ``#include "name"`` line of a
``.cu`` file names a file beside it, whose text is put in its place before compiling (CuPy
compiles the text under a temporary name, and caches by the text, so an edited included file
is a new module).  Importing needs CuPy.

    from cinegpu.decode import nvrtc
    CUDA_DIR = Path(__file__).with_name("cuda")
    nvrtc.kernel(CUDA_DIR / "dwt.cu", "transpose_b32")
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

import cupy

__all__ = ["NVRTC_OPTIONS", "kernel", "kernel_optin", "launch_1d", "module", "source_text"]

NVRTC_OPTIONS = ("--std=c++14", "--fmad=false")


_INCLUDE = re.compile(r'^#include "([^"/]+)"[ \t]*$', re.MULTILINE)


def source_text(source: Path) -> str:
    """The text of ``source`` with each ``#include "name"`` line replaced by the text of the
    file ``name`` beside it (recursively)."""
    return _INCLUDE.sub(lambda m: source_text(source.with_name(m.group(1))), source.read_text())


def module(source: Path) -> cupy.RawModule:
    """``source`` (a .cu file) compiled for the current device."""
    return _module(str(source), cupy.cuda.runtime.getDevice())


def kernel(source: Path, name: str) -> cupy.RawKernel:
    """Kernel ``name`` of ``source`` for the current device."""
    return _kernel(str(source), name, cupy.cuda.runtime.getDevice())


def kernel_optin(source: Path, name: str) -> tuple[cupy.RawKernel, int]:
    """Kernel ``name`` of ``source`` allowed the device's whole opt-in dynamic shared memory
    per block (set once), and that limit in bytes."""
    return _kernel_optin(str(source), name, cupy.cuda.runtime.getDevice())


def launch_1d(k: cupy.RawKernel, n: int, args: tuple, threads: int = 256) -> None:
    """Launch a grid-stride kernel over ``n`` items (nothing when n == 0)."""
    if n:
        k((min((n + threads - 1) // threads, 65535),), (threads,), args)


#: One thread compiles a module while the others wait for it (encoders start together).
_COMPILE_LOCK = threading.Lock()


def _module(source: str, device_id: int) -> cupy.RawModule:
    with _COMPILE_LOCK:
        return _compiled(source, device_id)


@functools.lru_cache(maxsize=None)
def _compiled(source: str, device_id: int) -> cupy.RawModule:
    with cupy.cuda.Device(device_id):
        compiled = cupy.RawModule(code=source_text(Path(source)), options=NVRTC_OPTIONS)
        try:
            compiled.compile()
        except cupy.cuda.compiler.CompileException as exc:
            raise RuntimeError(f"NVRTC compiling {source}: {exc}") from exc
    return compiled


@functools.lru_cache(maxsize=None)
def _kernel(source: str, name: str, device_id: int) -> cupy.RawKernel:
    return _module(source, device_id).get_function(name)


@functools.lru_cache(maxsize=None)
def _kernel_optin(source: str, name: str, device_id: int) -> tuple[cupy.RawKernel, int]:
    with cupy.cuda.Device(device_id):
        limit = int(cupy.cuda.Device(device_id).attributes["MaxSharedMemoryPerBlockOptin"])
        k = _kernel(source, name, device_id)
        k.max_dynamic_shared_size_bytes = limit
    return k, limit
