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
from numba import njit

from .errors import InvalidSegment
from .plan import TilePlan, joined, stacked
from .plan_numba import (
    RES_COLUMNS,
    RES_X0,
    RES_X1,
    RES_Y0,
    RES_Y1,
    TC_C,
    TC_COLUMNS,
    TC_DECODED,
    TC_LAY_BAND,
    TC_LAY_RECT,
    TC_RES,
    TC_REVERSIBLE,
)
from .transform.backend import TransformBackend
from .transform.layout import (
    FRAME_BAND0,
    FRAME_COLS,
    FRAME_COLUMNS,
    FRAME_DST,
    FRAME_HI,
    FRAME_LEVELS,
    FRAME_LO,
    FRAME_MCT,
    FRAME_RECT0,
    FRAME_REVERSIBLE,
    FRAME_ROWS,
    FRAME_SHIFT,
    FRAME_STRIDE,
    FlatLayout,
    FlatLayoutBatch,
    FrameLayout,
)


def reconstruct_mct_of(plan: TilePlan) -> bool:
    """Whether the MCT of ``plan``'s components 0-2 is reversible (RCT) or not (ICT); raise
    :class:`InvalidSegment` if they cannot carry it (sizes or filters differ)."""
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
    reversible = reconstruct_mct_of(plan) if mct else False
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


# How :func:`_frame_items` ends: every tile-component placed; one outside its plane (the frame
# takes the per-tile path); a tile whose components 0-2 cannot carry its MCT (an error).
_FITS, _MISFIT, _NO_MCT = range(3)


def frame_layout(plans: list[TilePlan], offsets: list[int], siz, reduce: int, dtypes) -> FrameLayout | None:
    """Every tile-component of ``plans`` (tiles at ``offsets`` in the frame's coefficient buffer)
    placed in its component's plane at ``reduce`` (B-2, B-14), components returned as
    ``dtypes``; None where the frame needs the per-tile path (a precision above 24 bits, a
    tile-component outside its plane). Raises as :func:`reconstruct_tile` does for an MCT over
    components that cannot carry it. Made of the plans' arrays (:class:`~.plan.PlanGeometry`),
    stacked, in one compiled pass (:func:`_frame_items`): no Python per tile-component."""
    if any(v & 0x7F >= 24 for v in siz.Ssiz):   # a precision above 24 bits (A.5.1)
        return None
    ssiz = np.array(siz.Ssiz, np.int64)
    # the planes of one returned dtype consecutive, in the order of their first component
    named = {d: np.dtype(d) for d in dict.fromkeys(dtypes)}  # each distinct type looked at once
    kinds = list(dict.fromkeys(named.values()))
    index = {d: kinds.index(k) for d, k in named.items()}
    kind = [index[d] for d in dtypes]
    planes, ends = np.empty((siz.Csiz, 3), np.int64), np.empty(len(kinds), np.int64)
    geos = [p.geometry for p in plans]
    lays = [g.layout for g in geos]
    # per plan: tile-components, resolution rows, layout bands, layout levels, under the MCT, offset
    rows = np.array([(g.tcs.shape[0], g.res.shape[0], lay.bands.shape[0], lay.rects.shape[0], bool(p.mct), off)
                     for p, g, lay, off in zip(plans, geos, lays, offsets)], np.int64).reshape(-1, 6)
    bands = stacked([lay.bands for lay in lays], (3,), np.int64)    # a copy: _frame_items moves it
    rects = joined([lay.rects for lay in lays], (4,), np.int64)
    _place_planes(np.array(siz.component_sizes(reduce), np.int64).reshape(-1, 2), np.array(kind, np.int64), planes,
                  ends)
    tcs = joined([g.tcs for g in geos], (TC_COLUMNS,), np.int64)
    res = joined([g.res for g in geos], (RES_COLUMNS,), np.int64)
    items, stop, why = _frame_items(tcs, res, bands, rects, rows, planes,
                                    np.array(siz.component_origins(reduce), np.int64).reshape(-1, 2), ssiz)
    if why == _MISFIT:
        return None
    if why != _FITS:
        reconstruct_mct_of(plans[stop])   # raises
    comps: list[list[int]] = [[] for _ in kinds]
    for c, k in enumerate(kind):
        comps[k].append(c)
    ends = ends.tolist()
    groups = tuple((k.type, ends[i - 1] if i else 0, ends[i], tuple(comps[i])) for i, k in enumerate(kinds))
    return FrameLayout(bands, rects, joined([lay.dq97 for lay in lays], (4,), np.float32),
                       joined([lay.q53 for lay in lays], (4,), np.int32),
                       joined([lay.dq0 for lay in lays], (), np.float32),
                       items, ends[-1], tuple(map(tuple, planes.tolist())), groups)


@njit(cache=True)
def _place_planes(wh, kind, planes, ends):
    """Each component's plane (offset, rows, columns) in a frame's planes buffer (``planes``),
    from its (width, height) ``wh`` at the decoded resolution (B-2): the planes of kind 0 first,
    each kind's in component order; ``ends``: where each kind's planes end."""
    at = 0
    for k in range(ends.shape[0]):
        for c in range(kind.shape[0]):
            if kind[c] == k:
                planes[c, 0], planes[c, 1], planes[c, 2] = at, wh[c, 1], wh[c, 0]
                at += wh[c, 0] * wh[c, 1]
        ends[k] = at


@njit(cache=True)
def _frame_items(tcs, res, bands, rects, plans, planes, origins, ssiz):
    """:class:`~.transform.layout.FrameLayout` rows (FRAME_*) of the stacked tile-component and
    resolution rows (``plan_numba``'s TC_*, RES_*) of ``plans`` (rows: tile-components,
    resolution rows, layout bands, layout levels, MCT, offset in the frame's coefficient
    buffer), each placed in its component's plane (``planes``: offset, rows, columns) at its
    decoded resolution's place from the component's origin (B-2, B-14), with its DC shift and
    clip range (G.1.2); ``bands`` (the stacked layout bands) get their tile's offset. Tile by
    tile, as the per-tile path meets them, it stops at a tile under the MCT whose components
    0-2 cannot carry it (:func:`_mct_fits`) or at a tile-component outside its plane or of
    another size than its layout's. Returns (items, the plan it stopped at or -1, _FITS,
    _MISFIT or _NO_MCT)."""
    items = np.zeros((tcs.shape[0], FRAME_COLUMNS), np.int64)
    i = r0 = b0 = l0 = np.int64(0)     # not literal 0s: _mct_fits compiles once
    for p in range(plans.shape[0]):
        for k in range(b0, b0 + plans[p, 2]):
            bands[k, 0] += plans[p, 5]
        if plans[p, 4] and plans[p, 0] >= 3 and not _mct_fits(tcs, res, i, r0):
            return items, p, _NO_MCT
        for _ in range(plans[p, 0]):
            c, levels = tcs[i, TC_C], tcs[i, TC_DECODED] - 1
            j = r0 + tcs[i, TC_RES] + levels
            y, x = res[j, RES_Y0] - origins[c, 0], res[j, RES_X0] - origins[c, 1]
            rh, rw = res[j, RES_Y1] - res[j, RES_Y0], res[j, RES_X1] - res[j, RES_X0]
            b, r = b0 + tcs[i, TC_LAY_BAND], l0 + tcs[i, TC_LAY_RECT]
            # its reconstructed size: its finest level's rectangle, else its LL band's
            h, w = bands[b, 1], bands[b, 2]
            if levels:
                f = r + levels - 1
                h, w = rects[f, 3] - rects[f, 1], rects[f, 2] - rects[f, 0]
            if not (0 <= y and y + rh <= planes[c, 1] and 0 <= x and x + rw <= planes[c, 2] and (h, w) == (rh, rw)):
                return items, p, _MISFIT
            precision, signed = (ssiz[c] & 0x7F) + 1, ssiz[c] & 0x80
            half = 1 << (precision - 1)
            items[i, FRAME_BAND0], items[i, FRAME_RECT0], items[i, FRAME_LEVELS] = b, r, levels
            items[i, FRAME_REVERSIBLE] = tcs[i, TC_REVERSIBLE]
            items[i, FRAME_SHIFT], items[i, FRAME_LO], items[i, FRAME_HI] = \
                (0, -half, half - 1) if signed else (half, 0, 2 * half - 1)
            items[i, FRAME_DST] = planes[c, 0] + y * planes[c, 2] + x
            items[i, FRAME_STRIDE], items[i, FRAME_ROWS], items[i, FRAME_COLS] = planes[c, 2], rh, rw
            # a tile's components are planned in order: an MCT row is followed by components 1 and 2
            items[i, FRAME_MCT] = 1 if plans[p, 4] and plans[p, 0] >= 3 and c == 0 else 0
            i += 1
        r0, b0, l0 = r0 + plans[p, 1], b0 + plans[p, 2], l0 + plans[p, 3]
    return items, -1, _FITS


@njit(cache=True)
def _mct_fits(tcs, res, i, r0):
    """Whether tile-components ``i``..``i + 2`` (their resolution rows from ``r0``) can carry
    the MCT (G.2, G.3): one size at their decoded resolutions, one wavelet transform."""
    for k in range(i + 1, i + 3):
        a, b = r0 + tcs[i, TC_RES] + tcs[i, TC_DECODED] - 1, r0 + tcs[k, TC_RES] + tcs[k, TC_DECODED] - 1
        if (res[a, RES_X1] - res[a, RES_X0] != res[b, RES_X1] - res[b, RES_X0]
                or res[a, RES_Y1] - res[a, RES_Y0] != res[b, RES_Y1] - res[b, RES_Y0]
                or tcs[i, TC_REVERSIBLE] != tcs[k, TC_REVERSIBLE]):
            return False
    return True


def reconstruct_frame(layout: FrameLayout, coeffs: np.ndarray, tf: TransformBackend) -> list:
    """The frame's component arrays (clipped samples of their dtypes, DC shift applied) from
    its flat coefficient buffer, through the back end's ``frame_samples_flat``; zeros where no
    tile lands (a tile missing from the codestream)."""
    out = np.zeros(layout.samples, np.int32)
    tf.frame_samples_flat(coeffs, layout, out)
    return layout.split(out)


# --------------------------------------------------------------------- a decode area's window

def _half_up(a: int) -> int:
    return -(-a // 2)


def window_layout(layout: FlatLayout, window: tuple[int, int, int, int], coeffs: np.ndarray,
                  out: list) -> FlatLayout | None:
    """A tile-component's :class:`FlatLayout` cut to ``window`` (u0, v0, u1, v1) of its finest
    level (within its rectangle), its bands' coefficients appended to ``out`` (a list of flat
    arrays; the layout's offsets count from the first's start, ``sum`` of the sizes already
    in ``out``): each coarser level the ceil halves of the one above (F.3.3), each band the
    samples of its level's window (low: ceil halves, high: floor halves, B-15), at their own
    positions, so the inverse DWT keeps every level's parity (F.3). Samples near the window's
    edges come out wrong (the extension there is not the signal's): the caller's window reaches
    beyond the samples it wants. None where the tile-component has no level."""
    if not layout.levels:
        return None
    rects = [tuple(int(v) for v in r) for r in layout.rects.tolist()]   # coarsest first
    windows = [window]
    for _ in range(len(rects) - 1):
        a0, b0, a1, b1 = windows[0]
        windows.insert(0, (_half_up(a0), _half_up(b0), _half_up(a1), _half_up(b1)))
    at = sum(a.size for a in out)
    bands = []

    def cut(row: int, rows: tuple[int, int], cols: tuple[int, int]) -> None:
        nonlocal at
        o, h, w = (int(v) for v in layout.bands[row])
        part = coeffs[o : o + h * w].reshape(h, w)[rows[0] : rows[1], cols[0] : cols[1]]
        out.append(np.ascontiguousarray(part).ravel())
        bands.append((at, part.shape[0], part.shape[1]))
        at += part.size

    (u0, v0, _, _), (a0, b0, a1, b1) = rects[0], windows[0]
    cut(0, (_half_up(b0) - _half_up(v0), _half_up(b1) - _half_up(v0)),
        (_half_up(a0) - _half_up(u0), _half_up(a1) - _half_up(u0)))
    for j, ((u0, v0, _, _), (a0, b0, a1, b1)) in enumerate(zip(rects, windows)):
        low_x = (_half_up(a0) - _half_up(u0), _half_up(a1) - _half_up(u0))
        high_x = (a0 // 2 - u0 // 2, a1 // 2 - u0 // 2)
        low_y = (_half_up(b0) - _half_up(v0), _half_up(b1) - _half_up(v0))
        high_y = (b0 // 2 - v0 // 2, b1 // 2 - v0 // 2)
        cut(1 + 3 * j, low_y, high_x)       # HL
        cut(2 + 3 * j, high_y, low_x)       # LH
        cut(3 + 3 * j, high_y, high_x)      # HH
    return FlatLayout.build(bands, windows, layout.deltas)


def reconstruct_tile_window(plan: TilePlan, coeffs: np.ndarray, siz, tf: TransformBackend,
                            windows: list, components=None) -> tuple[list, list]:
    """:func:`reconstruct_tile` of the samples in ``windows`` (each component's (x0, y0, x1, y1)
    on its grid at the decoded resolution, the caller's want and a margin; None: not wanted)
    alone: (planes, each one's rectangle, None for a component left out). A tile-component the
    window misses is left out; one without levels is reconstructed whole (its rectangle). A
    plan moved from another (:func:`~.plan.translated`) keeps that one's level rectangles,
    whole steps of every level away: the window is cut in them, moved by as much."""
    n = len(plan.components)
    wanted = set(range(n) if components is None else components)
    whole = {}                  # each tile-component's decoded rectangle
    cut: dict[int, tuple] = {}  # its window within it, for those the windows meet
    for tc in plan.components:
        res = tc.resolutions[tc.decoded - 1]
        whole[tc.c] = (res.x0, res.y0, res.x1, res.y1)
        w = windows[tc.c] if tc.c in wanted else None
        if w is None:
            continue
        box = (max(w[0], res.x0), max(w[1], res.y0), min(w[2], res.x1), min(w[3], res.y1))
        if box[0] < box[2] and box[1] < box[3]:
            cut[tc.c] = box if tc.flat_layout().levels else whole[tc.c]
    if not cut:
        return [None] * n, [None] * n
    mct = bool(plan.mct) and n >= 3 and {0, 1, 2} <= wanted and all(c in cut for c in range(3))
    if all(cut[c] == whole[c] for c in cut) or (mct and len({cut[c] for c in range(3)}) > 1):
        # the windows take every sample, or the MCT's three do not share one: the whole tile's way
        planes = reconstruct_tile(plan, coeffs, siz, tf, components)
        return [planes[c] if c in cut else None for c in range(n)], [whole[c] if c in cut else None for c in range(n)]
    planes, rects = [None] * n, [None] * n
    if mct and all(tc.flat_layout().levels for tc in plan.components[:3]):
        reversible = reconstruct_mct_of(plan)
        parts: list = []
        layouts = [window_layout(tc.flat_layout(), _in_layout(tc, cut[tc.c]), coeffs, parts)
                   for tc in plan.components[:3]]
        buffer = np.concatenate(parts)
        planes[0], planes[1], planes[2] = tf.reconstruct_mct_flat(buffer, layouts, reversible,
                                                                  [siz.precision(c) for c in range(3)],
                                                                  [siz.signed(c) for c in range(3)])
        for c in range(3):
            rects[c] = cut[c]
    for tc in plan.components:
        if tc.c not in cut or planes[tc.c] is not None:
            continue
        layout, parts = tc.flat_layout(), []
        small = window_layout(layout, _in_layout(tc, cut[tc.c]), coeffs, parts)
        if small is None:       # no level: the LL alone, whole
            planes[tc.c] = tf.component_samples_flat(coeffs, layout, tc.reversible, siz.precision(tc.c),
                                                     siz.signed(tc.c))
        else:
            planes[tc.c] = tf.component_samples_flat(np.concatenate(parts), small, tc.reversible,
                                                     siz.precision(tc.c), siz.signed(tc.c))
        rects[tc.c] = cut[tc.c]
    return planes, rects


def _in_layout(tc, box: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """``box`` (on the tile-component's decoded grid) in its layout's rectangles: moved by the
    finest rectangle's distance from the tile-component's own (0 but in a moved plan)."""
    res = tc.resolutions[tc.decoded - 1]
    u0, v0 = (int(v) for v in tc.flat_layout().rects[-1][:2])
    dx, dy = res.x0 - u0, res.y0 - v0
    return box[0] - dx, box[1] - dy, box[2] - dx, box[3] - dy
