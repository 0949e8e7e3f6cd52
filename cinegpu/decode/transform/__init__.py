"""Reconstruction stage of T.800: dequantisation, inverse DWT, inverse
component transform, DC level shift and clipping, and the DCI output
transform (X'Y'Z' -> display RGB).

numpy reference here (the ``"numpy"`` back end); every function has a CuPy
twin of the same signature in :mod:`cinegpu.decode.transform.cuda_backend`
and a numba one (single-threaded, bit for bit equal, ~3-6x faster) in
:mod:`cinegpu.decode.transform.cpu_backend`.  All three implement
:class:`.backend.TransformBackend`; the reference's fused entry points
(:mod:`.fused`) are the compositions of its unfused functions.
Forward transforms (for the encoder) sit next to their inverses.
"""

from .display import xyz_to_rgb
from .dwt import fdwt_53, fdwt_97, idwt_53, idwt_97, level_rects
from .fused import (
                    component_samples_flat,
                    components_samples_flat,
                    dequantize_idwt,
                    dequantize_idwt_flat,
                    reconstruct_mct,
                    reconstruct_mct_flat,
)
from .level_shift import to_samples
from .mct import forward_ict, forward_rct, inverse_ict, inverse_rct
from .quantization import dequantize, quantize

__all__ = [
    "component_samples_flat",
    "components_samples_flat",
    "dequantize",
    "dequantize_idwt",
    "dequantize_idwt_flat",
    "fdwt_53",
    "fdwt_97",
    "forward_ict",
    "forward_rct",
    "idwt_53",
    "idwt_97",
    "inverse_ict",
    "inverse_rct",
    "level_rects",
    "quantize",
    "reconstruct_mct",
    "reconstruct_mct_flat",
    "to_samples",
    "xyz_to_rgb",
]
