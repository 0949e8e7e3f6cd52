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
from .plan_numba import (RES_COLUMNS, RES_X0, RES_X1, RES_Y0, RES_Y1, TC_C, TC_COLUMNS, TC_DECODED, TC_LAY_BAND,
                         TC_LAY_RECT, TC_RES, TC_REVERSIBLE)
from .transform.layout import FRAME_COLUMNS, FlatLayoutBatch, FrameLayout


def _check_mct(plan: TilePlan) -> bool:
    """Whether the MCT applies; raise if components 0-2 cannot carry it."""
    g = plan.geometry
    tcs = g.tcs[:3]
    last = g.res[tcs[:, TC_RES] + tcs[:, TC_DECODED] - 1]   # each one's decoded resolution
    sizes = {(x1 - x0, y1 - y0) for x0, y0, x1, y1 in last[:, RES_X0 : RES_Y1 + 1].tolist()}
    if len(sizes) != 1:
        raise InvalidSegment("multiple component transform over components of different sizes")
    rev = tcs[:, TC_REVERSIBLE].tolist()
    if not (rev[0] == rev[1] == rev[2]):
        raise InvalidSegment("multiple component transform mixes 5/3 and 9/7 components")
    return bool(rev[0])


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


def _planes(siz, reduce: int, dtypes) -> tuple[np.ndarray, tuple]:
    """Each component's plane (offset, rows, columns) in a frame's planes buffer at ``reduce``
    (B-2), the planes of one returned dtype consecutive in the order of their first component,
    and their groups (dtype, first, end, components) as :class:`~.transform.layout.FrameLayout`
    has them."""
    kinds = list(dict.fromkeys(np.dtype(d) for d in dtypes))
    kind = np.array([kinds.index(np.dtype(d)) for d in dtypes], np.int64)
    order = np.argsort(kind, kind="stable")
    wh = np.array(siz.component_sizes(reduce), np.int64).reshape(-1, 2)
    area = wh[:, 0] * wh[:, 1]
    planes = np.empty((siz.Csiz, 3), np.int64)
    planes[order, 0] = np.cumsum(area[order]) - area[order]
    planes[:, 1], planes[:, 2] = wh[:, 1], wh[:, 0]
    ends = np.cumsum([int(area[kind == i].sum()) for i in range(len(kinds))]).tolist()
    groups = tuple((k.type, ends[i - 1] if i else 0, ends[i], tuple(order[kind[order] == i].tolist()))
                   for i, k in enumerate(kinds))
    return planes, groups


def frame_layout(plans: list[TilePlan], offsets: list[int], siz, reduce: int, dtypes) -> FrameLayout | None:
    """Every tile-component of ``plans`` (tiles at ``offsets`` in the frame's coefficient buffer)
    placed in its component's plane at ``reduce`` (B-2, B-14), components returned as
    ``dtypes``; None where the frame needs the per-tile path (a precision above 24 bits, a
    tile-component outside its plane). Raises as :func:`reconstruct_tile` does for an MCT over
    components that cannot carry it. Made of the plans' arrays (:class:`~.plan.PlanGeometry`)
    in numpy passes over the frame's tile-components: no Python per tile-component."""
    ssiz = np.array(siz.Ssiz, np.int64)
    precision, signed = (ssiz & 0x7F) + 1, (ssiz & 0x80) != 0
    if (precision > 24).any():
        return None
    planes, groups = _planes(siz, reduce, dtypes)
    geos = [p.geometry for p in plans]
    lays = [g.layout for g in geos]
    per_plan = np.array([g.tcs.shape[0] for g in geos], np.int64)
    mct = np.array([bool(p.mct) for p in plans], bool) & (per_plan >= 3)
    cat = (lambda xs, cols, dt: np.ascontiguousarray(np.concatenate(xs), dt) if xs else np.zeros((0, cols), dt))
    tcs, rects = cat([g.tcs for g in geos], TC_COLUMNS, np.int64), cat([lay.rects for lay in lays], 4, np.int64)
    bands = cat([lay.bands for lay in lays], 3, np.int64)
    # each plan's first resolution, layout band and layout level rows, per tile-component
    firsts = [np.cumsum([0] + [a.shape[0] for a in arrays])[:-1] for arrays in
              ([g.res for g in geos], [lay.bands for lay in lays], [lay.rects for lay in lays])]
    res0, band0, rect0 = (np.repeat(np.asarray(f, np.int64), per_plan) for f in firsts)
    res = cat([g.res for g in geos], RES_COLUMNS, np.int64)[tcs[:, TC_RES] + tcs[:, TC_DECODED] - 1 + res0]
    levels, b0, r0 = tcs[:, TC_DECODED] - 1, tcs[:, TC_LAY_BAND] + band0, tcs[:, TC_LAY_RECT] + rect0
    # each one's reconstructed size: its finest level's rectangle, else its LL band's
    size = bands[b0, 1:3].copy()
    fine = levels > 0
    last = rects[r0[fine] + levels[fine] - 1]
    size[fine, 0], size[fine, 1] = last[:, 3] - last[:, 1], last[:, 2] - last[:, 0]
    c = tcs[:, TC_C]
    origins = np.array(siz.component_origins(reduce), np.int64).reshape(-1, 2)[c]
    y, x = res[:, RES_Y0] - origins[:, 0], res[:, RES_X0] - origins[:, 1]
    rh, rw = res[:, RES_Y1] - res[:, RES_Y0], res[:, RES_X1] - res[:, RES_X0]
    start, h, w = planes[c, 0], planes[c, 1], planes[c, 2]
    fits = (0 <= y) & (y + rh <= h) & (0 <= x) & (x + rw <= w) & (size[:, 0] == rh) & (size[:, 1] == rw)
    # tile by tile: an MCT is checked up to the first tile that does not fit
    misfit = np.repeat(np.arange(len(plans)), per_plan)[~fits]
    upto = int(misfit[0]) if misfit.shape[0] else len(plans) - 1
    for plan, under in zip(plans[: upto + 1], mct[: upto + 1].tolist()):
        if under:
            _check_mct(plan)
    if misfit.shape[0]:
        return None
    half = 1 << (precision - 1)   # G.1.2: the DC shift and clip range of each component
    shift, lo, hi = np.where(signed, 0, half), np.where(signed, -half, 0), np.where(signed, half - 1, 2 * half - 1)
    # a tile's components are planned in order: an MCT row is followed by components 1 and 2
    items = np.stack([b0, r0, levels, tcs[:, TC_REVERSIBLE], shift[c], lo[c], hi[c], start + y * w + x, w, rh, rw,
                      (np.repeat(mct, per_plan) & (c == 0)).astype(np.int64)], axis=1)
    bands[:, 0] += np.repeat(np.asarray(offsets, np.int64), [lay.bands.shape[0] for lay in lays])
    return FrameLayout(bands, rects, cat([lay.dq97 for lay in lays], 4, np.float32),
                       cat([lay.q53 for lay in lays], 4, np.int32),
                       np.ascontiguousarray(np.concatenate([lay.dq0 for lay in lays]) if lays else np.zeros(0),
                                            np.float32),
                       np.ascontiguousarray(items, np.int64).reshape(-1, FRAME_COLUMNS),
                       int((planes[:, 1] * planes[:, 2]).sum()), tuple(map(tuple, planes.tolist())), groups)


def reconstruct_frame(layout: FrameLayout, coeffs: np.ndarray, tf: TransformBackend) -> list:
    """The frame's component arrays (clipped samples of their dtypes, DC shift applied) from
    its flat coefficient buffer, through the back end's ``frame_samples_flat``; zeros where no
    tile lands (a tile missing from the codestream)."""
    out = np.zeros(layout.samples, np.int32)
    tf.frame_samples_flat(coeffs, layout, out)
    return layout.split(out)
