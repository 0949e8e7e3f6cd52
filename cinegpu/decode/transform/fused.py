"""The fused entry points of the reconstruction stage, in the numpy reference.

:mod:`.cpu_backend` (numba) and :mod:`.cuda_backend` (CuPy) implement these two calls as
single passes that never write the intermediate planes; the reference defines them as what
they are specified to equal, the plain composition of its unfused functions, so that
:func:`cinegpu.decode.reconstruct.reconstruct_tile` calls every back end the same way
(:class:`.backend.TransformBackend`):

* :func:`dequantize_idwt` -- T.800 E.1 then F.3.2: ``idwt(dequantize(band) for every band)``;
* :func:`reconstruct_mct` -- the above for components 0-2, then G.2/G.3 (inverse RCT or
  ICT) and G.1.2 (DC level shift and clipping to each component's precision).

and each again with its bands given as a flat buffer and a :class:`.layout.FlatLayout`
(``dequantize_idwt_flat``, ``component_samples_flat``, ``components_samples_flat``,
``reconstruct_mct_flat``), which the decoder calls: :class:`FlatEntryPoints` composes them from
a back end's unfused functions, for the reference here and for CuPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .dwt import Level, idwt_53, idwt_97
from .level_shift import to_samples
from .mct import inverse_ict, inverse_rct
from .quantization import dequantize

__all__ = ["FlatEntryPoints", "component_samples_flat", "components_samples_flat", "dequantize_idwt", "dequantize_idwt_flat", "reconstruct_mct",
           "reconstruct_mct_flat", "as_samples"]


def dequantize_idwt(ll, levels: Sequence[Level], deltas: Sequence[float], reversible: bool):
    """``idwt(dequantize(ll), [dequantize(hl), ... per level])`` of one tile-component.

    ``ll`` and the bands of ``levels``: int32 tier-1 output (2 x the index, T.800 E.1), laid
    out as :func:`.dwt.idwt_53` takes them; ``deltas``: the step size Δb of every band (in
    coefficient units), LL first then HL, LH, HH of each level, coarsest first (ignored when
    ``reversible``).  Returns int32 (5/3) or float32 (9/7) coefficients of the finest level.
    """
    if len(deltas) != 1 + 3 * len(levels):
        raise ValueError(f"need {1 + 3 * len(levels)} step sizes, got {len(deltas)}")
    a = dequantize(ll, deltas[0], reversible)
    bands = [(*(dequantize(b, d, reversible) for b, d in zip((hl, lh, hh), deltas[1 + 3 * j : 4 + 3 * j])), rect)
             for j, (hl, lh, hh, rect) in enumerate(levels)]
    return (idwt_53 if reversible else idwt_97)(a, bands)


def reconstruct_mct(comps, reversible: bool, precisions: Sequence[int], signed: Sequence[bool]):
    """Samples (int32) of components 0-2 of a tile under the multiple component transformation.

    ``comps``: three ``(ll, levels, deltas)`` as :func:`dequantize_idwt` takes them;
    ``precisions``: bits per sample of each; ``signed``: whether each is signed.  Returns
    ``to_samples`` of the inverse RCT (``reversible``) or ICT of the three reconstructions.
    """
    if len(comps) != 3:
        raise ValueError(f"need three components, got {len(comps)}")
    planes = [dequantize_idwt(ll, levels, deltas, reversible) for ll, levels, deltas in comps]
    planes = (inverse_rct if reversible else inverse_ict)(*planes)
    return tuple(to_samples(p, pr, sg) for p, pr, sg in zip(planes, precisions, signed))


@dataclass(frozen=True)
class FlatEntryPoints:
    """The flat-buffer entry points of a back end as compositions of its own
    ``dequantize_idwt``, ``reconstruct_mct`` and ``to_samples`` (the reference's here; the CuPy
    back end's in :mod:`.cuda_backend`): one definition of what each entry point equals."""

    dequantize_idwt: Callable
    reconstruct_mct: Callable
    to_samples: Callable

    def dequantize_idwt_flat(self, coeffs, layout, reversible: bool):
        """``dequantize_idwt`` of the bands that ``layout`` (a :class:`.layout.FlatLayout`)
        places in the flat buffer ``coeffs``."""
        return self.dequantize_idwt(*layout.args(coeffs), reversible)

    def component_samples_flat(self, coeffs, layout, reversible: bool, precision: int, signed: bool):
        """``to_samples(dequantize_idwt_flat(...), precision, signed)`` of one tile-component."""
        return self.to_samples(self.dequantize_idwt_flat(coeffs, layout, reversible), precision, signed)

    def components_samples_flat(self, coeffs, batch) -> list:
        """``component_samples_flat`` of each component of a :class:`.layout.FlatLayoutBatch`."""
        return [self.component_samples_flat(coeffs, lay, rev, p, sg) for _, lay, rev, p, sg in batch.items]

    def reconstruct_mct_flat(self, coeffs, layouts, reversible: bool, precisions: Sequence[int],
                             signed: Sequence[bool], dtype=None):
        """``reconstruct_mct`` of the three components that ``layouts`` place in ``coeffs``, as
        ``dtype`` (None: int32)."""
        planes = self.reconstruct_mct([lay.args(coeffs) for lay in layouts], reversible, precisions, signed)
        return as_samples(planes, dtype)


def as_samples(planes, dtype) -> tuple:
    """``planes`` (int32 samples) as ``dtype`` (None: as they are), copied only if the type
    changes; samples are clipped to their precision, so a type that holds it holds them."""
    return tuple(planes) if dtype is None else tuple(p.astype(dtype, copy=False) for p in planes)


_FLAT = FlatEntryPoints(dequantize_idwt, reconstruct_mct, to_samples)
dequantize_idwt_flat = _FLAT.dequantize_idwt_flat
component_samples_flat = _FLAT.component_samples_flat
components_samples_flat = _FLAT.components_samples_flat
reconstruct_mct_flat = _FLAT.reconstruct_mct_flat
