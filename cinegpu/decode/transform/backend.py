"""What a transform back end of the reconstruction stage provides (T.800 Annexes E, F, G).

Three modules implement :class:`TransformBackend`: the numpy reference
(:mod:`cinegpu.decode.transform`, whose fused calls are the compositions of
:mod:`.fused`), the numba CPU back end (:mod:`.cpu_backend`) and the CuPy back end
(:mod:`.cuda_backend`), whose fused calls are single-pass specialisations equal to those
compositions.  :func:`cinegpu.decode.reconstruct.reconstruct_tile` calls the fused entry
points only, in their ``_flat`` forms (bands placed by a :class:`.layout.FlatLayout`); the
unfused ones are the reference API the back ends are tested against.
Arrays are numpy arrays, or CuPy arrays for the CUDA back end; coefficients are int32
tier-1 output (2 x the quantisation index), step sizes in coefficient units.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from .dwt import Level

__all__ = ["TransformBackend"]


@runtime_checkable
class TransformBackend(Protocol):
    """The entry points of a reconstruction back end (a module satisfies it structurally)."""

    def dequantize(self, coeffs, delta: float, reversible: bool):
        """T.800 E.1: int32 (reversible) or float32 coefficients of one subband."""

    def idwt_53(self, ll, levels: Sequence[Level]):
        """T.800 F.3.2 with the 5/3 lifting of F.3.8.1 (int32)."""

    def idwt_97(self, ll, levels: Sequence[Level]):
        """T.800 F.3.2 with the 9/7 lifting of F.3.8.2 (float32)."""

    def inverse_rct(self, y0, y1, y2):
        """T.800 G.2: three int32 components."""

    def inverse_ict(self, y0, y1, y2):
        """T.800 G.3: three float32 components."""

    def to_samples(self, x, precision: int, signed: bool):
        """T.800 G.1.2: DC level shift and clipping to ``precision`` bits (int32)."""

    def dequantize_idwt(self, ll, levels: Sequence[Level], deltas: Sequence[float], reversible: bool):
        """``idwt(dequantize(band) for every band)`` of one tile-component."""

    def reconstruct_mct(self, comps, reversible: bool, precisions: Sequence[int], signed: Sequence[bool]):
        """Samples of components 0-2: ``to_samples(inverse_rct/ict(dequantize_idwt(c) ...))``."""

    def dequantize_idwt_flat(self, coeffs, layout, reversible: bool):
        """:meth:`dequantize_idwt` of the bands a :class:`.layout.FlatLayout` places in ``coeffs``."""

    def component_samples_flat(self, coeffs, layout, reversible: bool, precision: int, signed: bool):
        """``to_samples(dequantize_idwt_flat(coeffs, layout, reversible), precision, signed)``:
        the samples of a tile-component without the MCT (int32)."""

    def components_samples_flat(self, coeffs, batch) -> list:
        """:meth:`component_samples_flat` of every component of a :class:`.layout.FlatLayoutBatch`
        (its ``items``), in order."""

    def reconstruct_mct_flat(self, coeffs, layouts, reversible: bool, precisions: Sequence[int],
                             signed: Sequence[bool], dtype=None):
        """:meth:`reconstruct_mct` of the three components ``layouts`` place in ``coeffs``, the
        samples as ``dtype`` (None: int32; the decoder asks for the type it returns, so that a
        GPU writes them so in its last kernel)."""
