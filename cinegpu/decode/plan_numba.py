"""The plans' tables of tiles in two compiled passes (T.800 B.5-B.7, B.10.2, E.1, F.3).

:func:`tile_counts` walks a tile's components, resolutions and subbands and counts what the
plan holds (resolutions, subbands, precincts, precinct-bands, code-blocks, decoded samples),
finding the first header fault in the order the plan meets it; :mod:`cinegpu.decode.limits`
takes its figures for the tile's geometry. :func:`tile_tables` then fills every table of the
plan in packet order: the tile-components, resolutions and subbands as rows (the objects of
:mod:`cinegpu.decode.plan` are made from them only when asked for), the precinct,
precinct-band and code-block tables tier-2 and tier-1 read, and the decoded bands' layout in
the flat coefficient buffer that the reconstruction reads (:class:`.transform.layout.FlatLayout`).
:func:`tiles_counts` and :func:`tiles_tables` run them over many tiles at once (each of its
own coding, each tile's tables in its rows of stacked ones), so a frame of 225 tiles of 24
resolutions costs one call of each, not a numpy pass per subband nor a call per tile.

Inputs: ``trect`` int64 (tx0, ty0, tx1, ty1) on the reference grid (B-7); ``coding`` int64
(Csiz, CODING_COLUMNS), each component's sub-sampling, SPcod/SPcoc (A.6.1, A.6.2) and ROI shift
(A.6.3); ``pp`` int64 (PPx, PPy) of every resolution of every component (A.6.1); ``steps`` int64
(Mb (E-2), 1 where the QCD/QCC lists no step size) and ``deltas`` float64 (Delta_b, E-3) of every
subband of every component, in the order of Table A.30.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import tier1

__all__ = ["plan_arrays", "tile_counts", "tile_tables", "tiles_counts", "tiles_tables"]

# Columns of ``coding``: XRsiz, YRsiz, NL, xcb, ycb (exponents), code-block style, 1 when
# reversible (5/3), ROI shift, first row of ``pp``, first row of ``steps``.
CODING_XR, CODING_YR, CODING_LEVELS, CODING_XCB, CODING_YCB, CODING_STYLE, CODING_REVERSIBLE, CODING_ROI, \
    CODING_PP, CODING_STEP = range(10)
CODING_COLUMNS = 10
# Columns of ``steps``.
STEP_MB, STEP_ABSENT = 0, 1

# Entries of :func:`tile_counts`' result: resolutions, subbands, precincts, precinct-bands,
# code-blocks, coefficients at the decoded resolution, decoded decomposition levels and their
# subbands (the layout's rows), then the first fault: its code (E_*), component, subband
# (Table A.30 order) and value (Mb for E_BITPLANES).
COUNT_RES, COUNT_BANDS, COUNT_PREC, COUNT_PB, COUNT_CB, COUNT_SAMPLES, COUNT_LEVELS, COUNT_KEPT, \
    COUNT_ERROR, COUNT_ERROR_C, COUNT_ERROR_BAND, COUNT_ERROR_VALUE = range(12)
COUNT_COLUMNS = 12
E_NONE, E_REDUCE, E_STEP, E_CODEBLOCKS, E_BITPLANES = range(5)
#: Cap on the code-blocks of one tile (guards memory against absurd headers).
MAX_CODEBLOCKS = 1 << 24

# Columns of the tile-component rows: component, rectangle (B-12), NL, reversible, resolutions
# decoded, first resolution row, first layout band row, first layout level row, float32 bits of
# Delta_LL / 2 (the LL's dequantisation where no level is decoded).
TC_C, TC_X0, TC_Y0, TC_X1, TC_Y1, TC_LEVELS, TC_REVERSIBLE, TC_DECODED, TC_RES, TC_LAY_BAND, TC_LAY_RECT = range(11)
TC_COLUMNS = 11
# Columns of the resolution rows: r, rectangle (B-14), PPx, PPy, precincts across and down (B-16),
# first precinct of the tile, first subband row, subbands (1 or 3), tile-component row.
RES_R, RES_X0, RES_Y0, RES_X1, RES_Y1, RES_PPX, RES_PPY, RES_NPX, RES_NPY, RES_PREC, RES_BAND, RES_NBANDS, \
    RES_TC = range(13)
RES_COLUMNS = 13
# Columns of the subband rows: orientation, rectangle (B-15), first sample in the flat buffer, Mb.
BAND_ORIENT, BAND_X0, BAND_Y0, BAND_X1, BAND_Y1, BAND_OFFSET, BAND_MB = range(7)
BAND_COLUMNS = 7
#: the rectangle's columns (x0, y0, x1, y1) of each of the three, the same four
RECT_COLUMNS = slice(1, 5)
# Columns of the precinct-band table (as :mod:`cinegpu.decode.plan`'s PB_*).
PB_NCBX, PB_NCBY, PB_CB_FIRST, PB_NODES = range(4)
PB_COLUMNS = 4

# Columns of the stacked codings' first rows (tiles_counts, tiles_tables): coding, pp, steps.
FIRST_CODING, FIRST_PP, FIRST_STEP = range(3)
FIRST_COLUMNS = 3
# Columns of each tile's first rows in the stacked tables (plan_arrays): tile-components (and dq0),
# resolutions, subbands (and their deltas), precincts, precinct-bands, code-blocks (and keep),
# layout bands, layout levels (and dq97, q53).
ROWS_TCS, ROWS_RES, ROWS_BANDS, ROWS_PREC, ROWS_PB, ROWS_CB, ROWS_KEPT, ROWS_LEVELS = range(8)
ROWS_COLUMNS = 8
#: The counts (COUNT_*) that size the stacked tables of ROWS_RES onwards.
_ROWS_COUNTS = np.array([COUNT_RES, COUNT_BANDS, COUNT_PREC, COUNT_PB, COUNT_CB, COUNT_KEPT, COUNT_LEVELS])

# The walks allocate nothing and run without numba's reference counting: each call of a helper
# would otherwise pay an atomic increment and decrement per array it is handed (as
# tier2/packets.py says of the packet walk).
_NO_RC = dict(cache=True, _nrt=False)

# The running rows of the fill: resolution, subband, precinct, precinct-band, code-block,
# tag-tree node, coefficient, layout band, layout level.
_AT_RES, _AT_BAND, _AT_PREC, _AT_PB, _AT_CB, _AT_NODES, _AT_COEFF, _AT_LAY_BAND, _AT_LAY_RECT = range(9)


@njit(cache=True, inline="always")
def _cdiv(a, b):
    """ceil(a / b) for b > 0."""
    return -(-a // b)


@njit(cache=True)
def _res_rect(tcx0, tcy0, tcx1, tcy1, nl, r, ppx, ppy):
    """(rx0, ry0, rx1, ry1, npx, npy): resolution ``r``'s rectangle (B-14) and its precincts
    across and down (B-16)."""
    d = 1 << (nl - r)
    rx0, ry0, rx1, ry1 = _cdiv(tcx0, d), _cdiv(tcy0, d), _cdiv(tcx1, d), _cdiv(tcy1, d)
    npx = _cdiv(rx1, 1 << ppx) - (rx0 >> ppx) if rx1 > rx0 else 0
    npy = _cdiv(ry1, 1 << ppy) - (ry0 >> ppy) if ry1 > ry0 else 0
    return rx0, ry0, rx1, ry1, npx, npy


@njit(cache=True)
def _band_rect(tcx0, tcy0, tcx1, tcy1, nl, r, k):
    """(orient, bx0, by0, bx1, by1): subband ``k`` (0..2: HL, LH, HH) of resolution ``r`` >= 1
    (B-15), or the LL band (``r`` = 0, the resolution's rectangle)."""
    if r == 0:
        d = 1 << nl
        return tier1.ORIENT_LL, _cdiv(tcx0, d), _cdiv(tcy0, d), _cdiv(tcx1, d), _cdiv(tcy1, d)
    orient = k + 1
    nb = nl - r + 1
    h = 1 << (nb - 1)
    xo, yo = h * (orient & 1), h * (orient >> 1)
    s = 1 << nb
    return orient, _cdiv(tcx0 - xo, s), _cdiv(tcy0 - yo, s), _cdiv(tcx1 - xo, s), _cdiv(tcy1 - yo, s)


@njit(cache=True, inline="always")
def _cells(k, pp, b0, b1, cb):
    """(first cell, cells) of the code-block cells of 2**cb samples that precinct ``k`` (band
    samples [k << pp, (k + 1) << pp)) holds of the band's [b0, b1) along one axis (B.6, B.7)."""
    p0 = max(k << pp, b0)
    p1 = min((k + 1) << pp, b1)
    c0 = p0 >> cb
    c1 = -(-p1 >> cb) if p1 > p0 else c0
    return c0, max(c1 - c0, 0)


@njit(cache=True)
def _axis_cells(k0, n, pp, b0, b1, cb):
    """Code-block cells of ``n`` precincts from ``k0`` along one axis of a band, summed."""
    total = 0
    for k in range(n):
        total += _cells(k0 + k, pp, b0, b1, cb)[1]
    return total


@njit(cache=True, inline="always")
def _tree_nodes(w, h):
    """Nodes of a tag tree over w x h leaves (B.10.2): every level down to one node."""
    total = 0
    if w <= 0 or h <= 0:
        return 0
    while True:
        total += w * h
        if w == 1 and h == 1:
            return total
        w, h = (w + 1) // 2, (h + 1) // 2


@njit(cache=True, inline="always")
def _fault(counts, code, c, band, value):
    """Keep the first fault met."""
    if counts[COUNT_ERROR] == E_NONE:
        counts[COUNT_ERROR], counts[COUNT_ERROR_C], counts[COUNT_ERROR_BAND], counts[COUNT_ERROR_VALUE] = \
            code, c, band, value


@njit(**_NO_RC)
def tile_counts(trect, coding, pp, steps, reduce, counts):
    """Counts of the plan of the tile at ``trect`` decoded ``reduce`` levels down, into ``counts``
    (int64 COUNT_COLUMNS, zeros), and its first fault in the order :func:`cinegpu.decode.plan.build_tile_plan`
    meets them: per component, ``reduce`` above NL; per resolution, a subband without a step
    size (strict), then more than MAX_CODEBLOCKS code-blocks, then a subband of a resolution
    with precincts whose Mb + ROI shift exceeds 30 or whose Mb is negative (B.10.5, Annex H).
    Every count goes on past a fault: they bound the work whether or not the plan is made."""
    for c in range(coding.shape[0]):
        xr, yr, nl = coding[c, CODING_XR], coding[c, CODING_YR], coding[c, CODING_LEVELS]
        if reduce > nl:
            _fault(counts, E_REDUCE, c, 0, nl)
        else:
            counts[COUNT_LEVELS] += nl - reduce
            counts[COUNT_KEPT] += 1 + 3 * (nl - reduce)
        tcx0, tcy0, tcx1, tcy1 = _cdiv(trect[0], xr), _cdiv(trect[1], yr), _cdiv(trect[2], xr), _cdiv(trect[3], yr)
        s0 = coding[c, CODING_STEP]
        for r in range(nl + 1):
            ppx, ppy = pp[coding[c, CODING_PP] + r, 0], pp[coding[c, CODING_PP] + r, 1]
            rx0, ry0, _, _, npx, npy = _res_rect(tcx0, tcy0, tcx1, tcy1, nl, r, ppx, ppy)
            nbands = 1 if r == 0 else 3
            first = 0 if r == 0 else 3 * r - 2   # Table A.30 index of the resolution's first subband
            for k in range(nbands):
                if steps[s0 + first + k, STEP_ABSENT]:
                    _fault(counts, E_STEP, c, first + k, 0)
            counts[COUNT_RES] += 1
            counts[COUNT_BANDS] += nbands
            counts[COUNT_PREC] += npx * npy
            pp_x, pp_y = (ppx, ppy) if r == 0 else (ppx - 1, ppy - 1)
            xcb, ycb = min(coding[c, CODING_XCB], pp_x), min(coding[c, CODING_YCB], pp_y)
            blocks = 0
            for k in range(nbands):
                _, bx0, by0, bx1, by1 = _band_rect(tcx0, tcy0, tcx1, tcy1, nl, r, k)
                if r <= nl - reduce:
                    counts[COUNT_SAMPLES] += max(bx1 - bx0, 0) * max(by1 - by0, 0)
                if npx and npy:
                    blocks += (_axis_cells(rx0 >> ppx, npx, pp_x, bx0, bx1, xcb)
                               * _axis_cells(ry0 >> ppy, npy, pp_y, by0, by1, ycb))
            if npx and npy:
                counts[COUNT_PB] += npx * npy * nbands
                if counts[COUNT_CB] + blocks > MAX_CODEBLOCKS:
                    _fault(counts, E_CODEBLOCKS, c, first, 0)
                for k in range(nbands):
                    mb = steps[s0 + first + k, STEP_MB]
                    if mb + coding[c, CODING_ROI] > 30 or mb < 0:
                        _fault(counts, E_BITPLANES, c, first + k, mb)
            counts[COUNT_CB] += blocks


def plan_arrays(counts, components) -> tuple:
    """The stacked tables of tiles for :func:`tiles_tables` to fill, sized by their ``counts``
    (:func:`tiles_counts`, a row a tile) and ``components`` (each tile's), as numpy allocates
    them (in a fraction of what returning them from compiled code costs), and each tile's first
    row in them (ROWS_* columns; one more row at the end: the totals). The tables, one tuple
    (the kernels take it whole, see :func:`tile_tables`): tcs, res, bands, band_deltas, prec_pb,
    pb, cb, keep, lay_bands, lay_rects, dq97, q53, dq0."""
    rows = np.zeros((counts.shape[0] + 1, ROWS_COLUMNS), np.int64)
    rows[1:, ROWS_TCS] = components
    rows[1:, ROWS_RES:] = counts[:, _ROWS_COUNTS]
    np.cumsum(rows, axis=0, out=rows)
    n_tcs, n_res, n_bands, n_prec, n_pb, n_cb, kept, levels = rows[-1].tolist()
    return rows, (np.empty((n_tcs, TC_COLUMNS), np.int64), np.empty((n_res, RES_COLUMNS), np.int64),
                  np.empty((n_bands, BAND_COLUMNS), np.int64), np.empty(n_bands, np.float64),
                  np.empty((n_prec, 2), np.int64), np.empty((n_pb, PB_COLUMNS), np.int64),
                  np.zeros((n_cb, tier1.CB_COLUMNS), np.int64), np.zeros(n_cb, np.int8),
                  np.empty((kept, 3), np.int64), np.empty((levels, 4), np.int64), np.empty((levels, 4), np.float32),
                  np.empty((levels, 4), np.int32), np.empty(n_tcs, np.float32))


@njit(cache=True)
def tiles_counts(rects, which, coding, pp, steps, firsts, reduce, counts):
    """:func:`tile_counts` of every tile (``rects``: their (tx0, ty0, tx1, ty1)), each coded by
    coding ``which[i]``, whose rows of the stacked ``coding``, ``pp`` and ``steps`` start at
    ``firsts[which[i]]`` (FIRST_* columns) and end at the next coding's; into ``counts[i]``."""
    for i in range(rects.shape[0]):
        k = which[i]
        tile_counts(rects[i], coding[firsts[k, FIRST_CODING] : firsts[k + 1, FIRST_CODING]],
                    pp[firsts[k, FIRST_PP] : firsts[k + 1, FIRST_PP]],
                    steps[firsts[k, FIRST_STEP] : firsts[k + 1, FIRST_STEP]], reduce, counts[i])


@njit(cache=True)
def tiles_tables(rects, which, coding, pp, steps, deltas, firsts, reduce, rows, tables, results):
    """:func:`tile_tables` of every tile (as :func:`tiles_counts` takes them, none at fault)
    into its rows of the stacked ``tables`` (:func:`plan_arrays`' tuple; a tile's from ``rows[i]``
    to ``rows[i + 1]``, ROWS_* columns), each tile's tables as if alone (indices from its own
    first rows); ``results[i]``: its tag-tree nodes, flat buffer's samples, HT flag and largest
    code-block side."""
    tcs, res, bands, band_deltas, prec_pb, pb, cb, keep, lay_bands, lay_rects, dq97, q53, dq0 = tables
    for i in range(rects.shape[0]):
        k = which[i]
        a, b = rows[i], rows[i + 1]
        s0, s1 = firsts[k, FIRST_STEP], firsts[k + 1, FIRST_STEP]
        tile = (tcs[a[ROWS_TCS] : b[ROWS_TCS]], res[a[ROWS_RES] : b[ROWS_RES]], bands[a[ROWS_BANDS] : b[ROWS_BANDS]],
                band_deltas[a[ROWS_BANDS] : b[ROWS_BANDS]], prec_pb[a[ROWS_PREC] : b[ROWS_PREC]],
                pb[a[ROWS_PB] : b[ROWS_PB]], cb[a[ROWS_CB] : b[ROWS_CB]], keep[a[ROWS_CB] : b[ROWS_CB]],
                lay_bands[a[ROWS_KEPT] : b[ROWS_KEPT]], lay_rects[a[ROWS_LEVELS] : b[ROWS_LEVELS]],
                dq97[a[ROWS_LEVELS] : b[ROWS_LEVELS]], q53[a[ROWS_LEVELS] : b[ROWS_LEVELS]],
                dq0[a[ROWS_TCS] : b[ROWS_TCS]])
        results[i, 0], results[i, 1], results[i, 2], results[i, 3] = tile_tables(
            rects[i], coding[firsts[k, FIRST_CODING] : firsts[k + 1, FIRST_CODING]],
            pp[firsts[k, FIRST_PP] : firsts[k + 1, FIRST_PP]], steps[s0:s1], deltas[s0:s1], reduce, tile)


@njit(cache=True)
def tile_tables(trect, coding, pp, steps, deltas, reduce, tables):
    """Fill every table of the plan of the tile at ``trect`` (``tables``: the tuple of
    :func:`plan_arrays` for a :func:`tile_counts` without a fault, one argument for the 13
    arrays: tests/test_shape.py allows no function more than 16 parameters), in packet order: per component (a component's
    subbands, Table A.30 order, lie one after another in the flat buffer), per resolution, per
    precinct in raster order, per subband, code-blocks in raster order (B.6, B.9).

    The tables: the TC_*, RES_* and BAND_* rows and Delta_b of each subband; prec_pb (first
    precinct-band, count), pb (PB_*), cb (the tier-1 table, ``tier1.CB_*``) and keep (1 where the
    block's resolution is decoded); the decoded subbands as a FlatLayout places them: (offset,
    rows, columns), each decoded level's rectangle (F.3.2, coarsest first), Delta_b / 2 of its
    subbands (1.0 for the LL of a level above the first, E.1) and the 5/3 halving flags, and
    Delta_LL / 2 of each tile-component. Returns (tag-tree nodes, the flat buffer's samples, 1
    where a code-block has the HT style bit (ISO/IEC 15444-15), the largest side of a decoded
    code-block)."""
    tcs, res, bands, _, prec_pb, pb, cb, keep = tables[:8]
    at = np.zeros(9, np.int64)
    ht = 0
    for c in range(coding.shape[0]):
        _fill_component(trect, coding, pp, steps, deltas, reduce, c, at, tables)
        blocks = at[_AT_CB]
        for i in range(tcs[c, TC_RES], at[_AT_RES]):
            _fill_precincts(coding, c, res, bands, at, prec_pb, pb, cb, keep, res[i, RES_R] <= tcs[c, TC_DECODED] - 1,
                            i)
        if at[_AT_CB] > blocks and coding[c, CODING_STYLE] & tier1.CBLK_HT:
            ht = 1
    side = 0
    for row in range(cb.shape[0]):
        side = max(side, cb[row, tier1.CB_WIDTH], cb[row, tier1.CB_HEIGHT])
    return at[_AT_NODES], at[_AT_COEFF], ht, side


@njit(**_NO_RC)
def _fill_component(trect, coding, pp, steps, deltas, reduce, c, at, tables):
    """Component ``c``'s row, its resolutions' and subbands' rows (each subband's samples
    placed after the last one's when its resolution is decoded) and its decoded layout, in
    ``tables`` (:func:`tile_tables`')."""
    tcs, res, bands, band_deltas = tables[:4]
    lay_bands, lay_rects, dq97, q53, dq0 = tables[8:]
    xr, yr, nl = coding[c, CODING_XR], coding[c, CODING_YR], coding[c, CODING_LEVELS]
    tcx0, tcy0, tcx1, tcy1 = _cdiv(trect[0], xr), _cdiv(trect[1], yr), _cdiv(trect[2], xr), _cdiv(trect[3], yr)
    decoded = nl + 1 - reduce
    tcs[c, TC_C], tcs[c, TC_X0], tcs[c, TC_Y0], tcs[c, TC_X1], tcs[c, TC_Y1] = c, tcx0, tcy0, tcx1, tcy1
    tcs[c, TC_LEVELS], tcs[c, TC_REVERSIBLE], tcs[c, TC_DECODED] = nl, coding[c, CODING_REVERSIBLE], decoded
    tcs[c, TC_RES], tcs[c, TC_LAY_BAND], tcs[c, TC_LAY_RECT] = at[_AT_RES], at[_AT_LAY_BAND], at[_AT_LAY_RECT]
    s0 = coding[c, CODING_STEP]
    for r in range(nl + 1):
        ppx, ppy = pp[coding[c, CODING_PP] + r, 0], pp[coding[c, CODING_PP] + r, 1]
        rx0, ry0, rx1, ry1, npx, npy = _res_rect(tcx0, tcy0, tcx1, tcy1, nl, r, ppx, ppy)
        i = at[_AT_RES]
        at[_AT_RES] += 1
        nbands = 1 if r == 0 else 3
        res[i, RES_R], res[i, RES_X0], res[i, RES_Y0], res[i, RES_X1], res[i, RES_Y1] = r, rx0, ry0, rx1, ry1
        res[i, RES_PPX], res[i, RES_PPY], res[i, RES_NPX], res[i, RES_NPY] = ppx, ppy, npx, npy
        res[i, RES_PREC], res[i, RES_BAND], res[i, RES_NBANDS], res[i, RES_TC] = \
            at[_AT_PREC], at[_AT_BAND], nbands, c
        at[_AT_PREC] += npx * npy
        kept = r < decoded
        if kept and r > 0:
            lv = at[_AT_LAY_RECT]
            at[_AT_LAY_RECT] += 1
            lay_rects[lv, 0], lay_rects[lv, 1], lay_rects[lv, 2], lay_rects[lv, 3] = rx0, ry0, rx1, ry1
            q53[lv, 0], q53[lv, 1], q53[lv, 2], q53[lv, 3] = 1 if r == 1 else 0, 1, 1, 1
            dq97[lv, 0] = dq0[c] if r == 1 else np.float32(1.0)
        first = 0 if r == 0 else 3 * r - 2
        for k in range(nbands):
            orient, bx0, by0, bx1, by1 = _band_rect(tcx0, tcy0, tcx1, tcy1, nl, r, k)
            j = at[_AT_BAND]
            at[_AT_BAND] += 1
            bands[j, BAND_ORIENT], bands[j, BAND_X0], bands[j, BAND_Y0], bands[j, BAND_X1], bands[j, BAND_Y1] = \
                orient, bx0, by0, bx1, by1
            bands[j, BAND_OFFSET], bands[j, BAND_MB] = at[_AT_COEFF], steps[s0 + first + k, STEP_MB]
            band_deltas[j] = deltas[s0 + first + k]
            if kept:
                m = at[_AT_LAY_BAND]
                at[_AT_LAY_BAND] += 1
                lay_bands[m, 0], lay_bands[m, 1], lay_bands[m, 2] = at[_AT_COEFF], by1 - by0, bx1 - bx0
                at[_AT_COEFF] += (bx1 - bx0) * (by1 - by0)
                if r == 0:
                    dq0[c] = np.float32(band_deltas[j] / 2.0)
                else:
                    dq97[at[_AT_LAY_RECT] - 1, 1 + k] = np.float32(band_deltas[j] / 2.0)


@njit(**_NO_RC)
def _fill_precincts(coding, c, res, bands, at, prec_pb, pb, cb, keep, kept, i):
    """The precinct, precinct-band and code-block rows of resolution row ``i`` of component
    ``c``: precincts in raster order, in each its subbands, in each its code-blocks in raster
    order (B.6, B.7), with the nodes of each precinct-band's tag trees (B.10.2) counted on."""
    r, npx, npy, nbands = res[i, RES_R], res[i, RES_NPX], res[i, RES_NPY], res[i, RES_NBANDS]
    ppx, ppy = res[i, RES_PPX], res[i, RES_PPY]
    pp_x, pp_y = (ppx, ppy) if r == 0 else (ppx - 1, ppy - 1)
    xcb, ycb = min(coding[c, CODING_XCB], pp_x), min(coding[c, CODING_YCB], pp_y)
    kx0, ky0 = res[i, RES_X0] >> ppx, res[i, RES_Y0] >> ppy
    style, roi = coding[c, CODING_STYLE], coding[c, CODING_ROI]
    p = res[i, RES_PREC]
    for py in range(npy):
        for px in range(npx):
            prec_pb[p, 0], prec_pb[p, 1] = at[_AT_PB], nbands
            p += 1
            for j in range(res[i, RES_BAND], res[i, RES_BAND] + nbands):
                bx0, by0, bx1, by1 = bands[j, BAND_X0], bands[j, BAND_Y0], bands[j, BAND_X1], bands[j, BAND_Y1]
                cx0, ncbx = _cells(kx0 + px, pp_x, bx0, bx1, xcb)
                cy0, ncby = _cells(ky0 + py, pp_y, by0, by1, ycb)
                q = at[_AT_PB]
                at[_AT_PB] += 1
                pb[q, PB_NCBX], pb[q, PB_NCBY], pb[q, PB_CB_FIRST], pb[q, PB_NODES] = ncbx, ncby, at[_AT_CB], \
                    at[_AT_NODES]
                at[_AT_NODES] += _tree_nodes(ncbx, ncby)
                for ky in range(ncby):
                    gy = (cy0 + ky) << ycb
                    y0, y1 = max(gy, by0), min(gy + (1 << ycb), by1)
                    for kx in range(ncbx):
                        gx = (cx0 + kx) << xcb
                        x0, x1 = max(gx, bx0), min(gx + (1 << xcb), bx1)
                        row = at[_AT_CB]
                        at[_AT_CB] += 1
                        if kept:    # blocks of resolutions dropped by ``reduce`` are read, not decoded
                            cb[row, tier1.CB_WIDTH], cb[row, tier1.CB_HEIGHT] = x1 - x0, y1 - y0
                            cb[row, tier1.CB_OUT] = bands[j, BAND_OFFSET] + (y0 - by0) * (bx1 - bx0) + (x0 - bx0)
                            keep[row] = 1
                        cb[row, tier1.CB_STRIDE], cb[row, tier1.CB_ORIENT] = bx1 - bx0, bands[j, BAND_ORIENT]
                        cb[row, tier1.CB_STYLE], cb[row, tier1.CB_ROISHIFT] = style, roi
                        cb[row, tier1.CB_NUM_BPS] = bands[j, BAND_MB]  # tier-2: Mb - zero bit-planes (+ roi)
