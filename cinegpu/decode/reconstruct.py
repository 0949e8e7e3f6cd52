"""Reconstruction of a tile: dequantise, inverse DWT, inverse MCT, DC shift.

One path for every transform back end (:class:`~cinegpu.decode.transform.backend.TransformBackend`:
the numpy reference :mod:`cinegpu.decode.transform`, the numba ``cpu_backend``
and the CuPy ``cuda_backend``), through their fused entry points
``component_samples_flat`` and ``reconstruct_mct_flat``, which take the flat buffer and each
tile-component's :class:`~cinegpu.decode.transform.layout.FlatLayout` (kept in the plan).  Input is the flat coefficient
buffer from :mod:`cinegpu.decode.tile`; output one int32 array per component
at the decoded resolution (T.800 Annexes E, F, G).

A back end with ``frame_samples_flat`` (the numba one) can instead reconstruct a whole frame
in one call: :func:`frame_layout` lays every tile-component of the frame out as one
:class:`~cinegpu.decode.transform.layout.FrameLayout` (once per frame geometry) and
:func:`reconstruct_frame` returns the component arrays.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidSegment
from .plan import TilePlan
from .transform.backend import TransformBackend
from .transform.layout import FRAME_COLUMNS, FlatLayoutBatch, FrameLayout
from .transform.level_shift import sample_bounds


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


def reconstruct_tile(plan: TilePlan, coeffs, siz, tf: TransformBackend, components=None, dtypes=None) -> list:
    """Samples of the tile's components (clipped ints, DC shift applied).

    ``components``: the indices wanted (None: all); others come back as None.
    The inverse MCT needs components 0-2 and is skipped when one of them is
    not wanted (as ``opj_decompress -c`` does).  ``dtypes``: the type each
    component's samples are returned in by the caller; the components under
    the MCT come in it already when the three share one (a GPU writes them
    so in its last kernel), the others as int32.
    """
    n = len(plan.components)
    wanted = set(range(n) if components is None else components)
    mct = bool(plan.mct) and n >= 3 and {0, 1, 2} <= wanted
    reversible = _check_mct(plan) if mct else False
    out: list = [None] * n
    first = 0
    if mct:
        layouts = [tc.flat_layout() for tc in plan.components[:3]]
        dtype = dtypes[0] if dtypes is not None and dtypes[0] == dtypes[1] == dtypes[2] else None
        out[0], out[1], out[2] = tf.reconstruct_mct_flat(coeffs, layouts, reversible,
                                                         [siz.precision(c) for c in range(3)],
                                                         [siz.signed(c) for c in range(3)], dtype)
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


def frame_layout(plans: list[TilePlan], offsets: list[int], siz, reduce: int, dtypes) -> FrameLayout | None:
    """Every tile-component of ``plans`` (tiles at ``offsets`` in the frame's coefficient buffer)
    placed in its component's plane at ``reduce`` (B-2, B-14), components returned as
    ``dtypes``; None where the frame needs the per-tile path (a precision above 24 bits, a
    tile-component outside its plane). Raises as :func:`reconstruct_tile` does for an MCT over
    components that cannot carry it."""
    n = siz.Csiz
    if any(siz.precision(c) > 24 for c in range(n)):
        return None
    sizes, origins = siz.component_sizes(reduce), siz.component_origins(reduce)
    kinds = list(dict.fromkeys(np.dtype(d) for d in dtypes))
    order = sorted(range(n), key=lambda c: kinds.index(np.dtype(dtypes[c])))
    planes: list = [None] * n
    total = 0
    for c in order:
        w, h = sizes[c]
        planes[c] = (total, h, w)
        total += h * w
    groups, first = [], 0
    for kind in kinds:
        comps = [c for c in order if np.dtype(dtypes[c]) == kind]
        end = planes[comps[-1]][0] + planes[comps[-1]][1] * planes[comps[-1]][2]
        groups.append((kind.type, first, end, tuple(comps)))
        first = end
    rows, bands, rects, dq97, q53, dq0 = [], [], [], [], [], []
    b0 = r0 = 0
    for plan, off in zip(plans, offsets):
        mct = bool(plan.mct) and len(plan.components) >= 3
        if mct:
            _check_mct(plan)
        for tc in plan.components:
            lay = tc.flat_layout()
            res = tc.resolutions[tc.decoded - 1]
            cy0, cx0 = origins[tc.c]
            start, h, w = planes[tc.c]
            y, x, rh, rw = res.y0 - cy0, res.x0 - cx0, res.y1 - res.y0, res.x1 - res.x0
            if not (0 <= y and y + rh <= h and 0 <= x and x + rw <= w) or lay.size != (rh, rw):
                return None
            shift, lo, hi = sample_bounds(siz.precision(tc.c), siz.signed(tc.c))
            rows.append((b0, r0, lay.levels, int(bool(tc.reversible)), shift, lo, hi, start + y * w + x, w, rh, rw,
                         int(mct and tc.c == 0)))
            b = lay.bands.copy()
            b[:, 0] += off
            bands.append(b)
            rects.append(lay.rects)
            dq97.append(lay.dq97)
            q53.append(lay.q53)
            dq0.append(np.float32(lay.deltas[0] / 2.0))
            b0 += b.shape[0]
            r0 += lay.levels
    def cat(xs, cols, dt):
        return np.ascontiguousarray(np.concatenate(xs), dt) if xs else np.zeros((0, cols), dt)
    # a tile's components are planned in order: an MCT row is followed by components 1 and 2
    return FrameLayout(cat(bands, 3, np.int64), cat(rects, 4, np.int64), cat(dq97, 4, np.float32),
                       cat(q53, 4, np.int32), np.array(dq0, np.float32),
                       np.array(rows, np.int64).reshape(-1, FRAME_COLUMNS), total, tuple(planes), tuple(groups))


def reconstruct_frame(layout: FrameLayout, coeffs: np.ndarray, tf: TransformBackend) -> list:
    """The frame's component arrays (clipped samples of their dtypes, DC shift applied) from
    its flat coefficient buffer, through the back end's ``frame_samples_flat``; zeros where no
    tile lands (a tile missing from the codestream)."""
    out = np.zeros(layout.samples, np.int32)
    tf.frame_samples_flat(coeffs, layout, out)
    return layout.split(out)
