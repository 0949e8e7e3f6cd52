"""Reconstruction of a tile: dequantise, inverse DWT, inverse MCT, DC shift.

One path for every transform back end (:class:`~cinegpu.decode.transform.backend.TransformBackend`:
the numpy reference :mod:`cinegpu.decode.transform`, the numba ``cpu_backend``
and the CuPy ``cuda_backend``), through their fused entry points
``component_samples_flat`` and ``reconstruct_mct_flat``, which take the flat buffer and each
tile-component's :class:`~cinegpu.decode.transform.layout.FlatLayout` (kept in the plan).  Input is the flat coefficient
buffer from :mod:`cinegpu.decode.tile`; output one int32 array per component
at the decoded resolution (T.800 Annexes E, F, G).
"""

from __future__ import annotations

from .errors import InvalidSegment
from .plan import TilePlan
from .transform.backend import TransformBackend
from .transform.layout import FlatLayoutBatch


def _check_mct(plan: TilePlan) -> bool:
    """Whether the MCT applies; raise if components 0-2 cannot carry it."""
    c0, c1, c2 = plan.components[:3]
    sizes = {(tc.resolutions[tc.decoded - 1].x1 - tc.resolutions[tc.decoded - 1].x0,
              tc.resolutions[tc.decoded - 1].y1 - tc.resolutions[tc.decoded - 1].y0) for tc in (c0, c1, c2)}
    if len(sizes) != 1:
        raise InvalidSegment("multiple component transform over components of different sizes")
    if not (c0.reversible == c1.reversible == c2.reversible):
        raise InvalidSegment("multiple component transform mixes 5/3 and 9/7 components")
    return c0.reversible


def reconstruct_tile(plan: TilePlan, coeffs, siz, tf: TransformBackend, components=None) -> list:
    """Samples of the tile's components (clipped ints, DC shift applied).

    ``components``: the indices wanted (None: all); others come back as None.
    The inverse MCT needs components 0-2 and is skipped when one of them is
    not wanted (as ``opj_decompress -c`` does).
    """
    n = len(plan.components)
    wanted = set(range(n) if components is None else components)
    mct = bool(plan.mct) and n >= 3 and {0, 1, 2} <= wanted
    reversible = _check_mct(plan) if mct else False
    out: list = [None] * n
    first = 0
    if mct:
        layouts = [tc.flat_layout() for tc in plan.components[:3]]
        out[0], out[1], out[2] = tf.reconstruct_mct_flat(coeffs, layouts, reversible,
                                                         [siz.precision(c) for c in range(3)],
                                                         [siz.signed(c) for c in range(3)])
        first = 3
    batch = _batch(plan, first, siz) if components is None and n - first > 1 else None
    if batch is not None:   # every remaining component in one call
        for (c, *_), plane in zip(batch.items, tf.components_samples_flat(coeffs, batch)):
            out[c] = plane
        return out
    for tc in plan.components[first:]:
        if tc.c in wanted:
            out[tc.c] = tf.component_samples_flat(coeffs, tc.flat_layout(), tc.reversible,
                                                  siz.precision(tc.c), siz.signed(tc.c))
    return out


def _batch(plan: TilePlan, first: int, siz) -> FlatLayoutBatch | None:
    """The plan's components from ``first`` on as one batch (built once per plan), or None
    when one of them has no decomposition level or more than 24 bits."""
    if first not in plan.batches:
        tcs = plan.components[first:]
        layouts = [tc.flat_layout() for tc in tcs]
        ok = all(lay.levels for lay in layouts) and all(siz.precision(tc.c) <= 24 for tc in tcs)
        plan.batches[first] = FlatLayoutBatch.build(
            [(tc.c, lay, tc.reversible, siz.precision(tc.c), siz.signed(tc.c))
             for tc, lay in zip(tcs, layouts)]) if ok else None
    return plan.batches[first]
