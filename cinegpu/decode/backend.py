"""Back-end selection: the one place a back-end name becomes a :class:`Backend`.

The names, for the decoder, the pipeline, the encoder and mastering alike:

- ``"numpy"``: the reference transforms (:mod:`cinegpu.decode.transform`), on the CPU;
- ``"cpu"``: the numba transforms (:mod:`cinegpu.decode.transform.cpu_backend`);
- ``"cuda"``: the CuPy kernels (:mod:`cinegpu.decode.transform.cuda_backend`); tier-1 may
  run on the GPU too; :class:`~cinegpu.decode.errors.BackendUnavailable` when CuPy or a CUDA
  device is missing;
- ``"auto"``: ``"cuda"`` when CuPy imports and sees a CUDA device, else ``"cpu"``.

The encoder takes ``"auto"``, ``"cpu"`` and ``"cuda"`` only (``names=ENCODER_NAMES``): its
CPU forward stage is the numpy one whatever the name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy

from . import transform
from .codestream.siz import MAX_PRECISION
from .errors import CUDA_INSTALL_HINT, BackendUnavailable

__all__ = ["BACKEND_NAMES", "CUDA_MAX_PRECISION", "ENCODER_NAMES", "TIER1_PLACES", "Backend", "cuda_missing", "gpu_tier1_of",
           "select_backend"]

log = logging.getLogger("cinegpu.decode")

#: Names :func:`select_backend` takes by default (the decoder's).
BACKEND_NAMES = ("auto", "cpu", "cuda", "numpy")
#: Names the encoder and mastering take.
ENCODER_NAMES = ("auto", "cpu", "cuda")
#: Where tier-1 (the code-blocks' decoding, T.800 Annex C-D; Part 15 clause 7) may be asked to
#: run (``--tier1``): "auto" (on the GPU with the CUDA back end), "gpu", or "cpu" (in the worker
#: processes, the GPU doing dequantisation, inverse DWT and ICT: the design card's split, what a
#: machine with a small GPU runs).
TIER1_PLACES = ("auto", "gpu", "cpu")
#: The most bits a sample may have on the CUDA back end (:attr:`Backend.max_precision`).
CUDA_MAX_PRECISION = 16


def gpu_tier1_of(place: str) -> bool | None:
    """The :class:`~cinegpu.decode.decoder.Decoder`'s ``gpu_tier1`` for a :data:`TIER1_PLACES`
    name: None (the back end's default) for "auto", True for "gpu", False for "cpu"."""
    if place not in TIER1_PLACES:
        raise ValueError(f"tier-1 place {place!r}: one of {', '.join(TIER1_PLACES)}")
    return {"auto": None, "gpu": True, "cpu": False}[place]


@dataclass(frozen=True)
class Backend:
    """A selected back end: ``name`` ("numpy", "cpu" or "cuda", never "auto") and
    ``gpu_tier1``, whether tier-1 can run on the GPU (the CUDA back end)."""

    name: str
    gpu_tier1: bool = False

    @property
    def cuda(self) -> bool:
        """Whether arrays live on a CUDA device (CuPy)."""
        return self.name == "cuda"

    @property
    def max_precision(self) -> int:
        """The most bits a sample may have (A.5.1) for this back end to reconstruct it: the
        CUDA kernels are built and checked against their twins for up to 16; the CPU back ends
        take what the codestream parser does (:data:`~.codestream.siz.MAX_PRECISION`)."""
        return CUDA_MAX_PRECISION if self.cuda else MAX_PRECISION

    @property
    def transform(self):
        """The :class:`~cinegpu.decode.transform.backend.TransformBackend` module
        (the numba and CuPy ones imported when first asked for: the numba one costs ~50 ms to
        load, which a probe such as :func:`cuda_missing` need not pay, and CuPy is optional)."""
        if self.name == "numpy":
            return transform
        if self.name == "cpu":
            from .transform import cpu_backend  # noqa: PLC0415  (start-up: the numba transforms, ~50 ms)

            return cpu_backend
        from .transform import cuda_backend  # noqa: PLC0415  (optional: CuPy)

        return cuda_backend

    @property
    def xp(self):
        """The array module: numpy, or cupy for the CUDA back end."""
        if self.cuda:
            import cupy  # noqa: PLC0415  (optional: CuPy)

            return cupy

        return numpy


def cuda_missing() -> tuple[str, str] | None:
    """None when CuPy imports and sees a CUDA device; else (what is missing, how to get it).

    Probing is quiet: any import or driver failure is an answer, not an exception.
    """

    try:
        import cupy  # noqa: PLC0415  (optional: CuPy)
    except ImportError as exc:
        return f"CuPy is not installed ({exc})", CUDA_INSTALL_HINT
    except Exception as exc:  # a broken CuPy install, named as it says
        return f"CuPy cannot be imported ({type(exc).__name__}: {exc})", CUDA_INSTALL_HINT
    driver = "check that the NVIDIA driver is loaded (nvidia-smi lists the GPU), or use the cpu back end"
    # the device count itself, not cupy.cuda.is_available(): that one caches "no device"
    # while its first call runs, so threads asking together were told there was none
    try:
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
    except Exception as exc:  # the driver's own error, named as it says
        if "cudaErrorNoDevice" not in str(exc):
            return f"CuPy cannot use CUDA ({type(exc).__name__}: {exc})", driver
    return "CuPy finds no CUDA device", driver


def select_backend(name: str, *, names: tuple[str, ...] = BACKEND_NAMES) -> Backend:
    """The :class:`Backend` for ``name``, one of ``names`` (see the module docstring).

    ``ValueError`` for a name not in ``names``; :class:`BackendUnavailable` for ``"cuda"`` on a
    machine without CuPy or a CUDA device (``"auto"`` then takes ``"cpu"``, logged).
    """
    if name not in names:
        raise ValueError(f"unknown back end {name!r}: use one of {', '.join(map(repr, names))}")
    if name in ("numpy", "cpu"):
        return Backend(name)
    missing = cuda_missing()
    if missing is None:
        return Backend("cuda", gpu_tier1=True)
    if name == "cuda":
        raise BackendUnavailable("cuda", *missing)
    log.info("no CUDA device (%s): using the CPU back end", missing[0])
    return Backend("cpu")
