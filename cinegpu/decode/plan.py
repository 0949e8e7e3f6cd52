"""The decode plan: the geometry of one tile, built once per header (Annex B).

A :class:`TilePlan` holds, for one tile, its tile-components, resolutions
and subbands as small objects, and its precincts and code-blocks as flat
numpy tables that the numba tier-2 and tier-1 kernels read:

* ``prec_pb`` (n_prec, 2): first precinct-band row and how many (1 or 3);
* ``pb`` (n_pb, PB_COLUMNS): code-block grid of a precinct in one subband;
* ``cb`` (n_cb, tier1.CB_COLUMNS): the tier-1 table of every code-block,
  in packet order (precinct, subband, raster), output offsets into one flat
  coefficient buffer laid out per subband.

The tables are filled in numba (:mod:`.plan_numba`, two passes over the tile); the
tile-components, resolutions and subbands come as rows of arrays too (``TilePlan.geometry``),
made into objects only when asked for (``TilePlan.components``), so the decoder's CPU path
plans a tile of many small resolutions without a Python object per resolution or subband.
What shapes a tile's plan apart from its rectangle (its components' coding and step sizes)
is worked out once per coding (:func:`tile_coding`), not per tile.

Every frame of a reel shares its main header, so a plan is reused across
frames: only coded bytes change. Coordinates are in samples on each
component's own grid at the resolution named.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from . import plan_numba as N
from .codestream.header import Codestream, Tile
from .errors import InvalidSegment, UnsupportedFeature
from .plan_numba import MAX_CODEBLOCKS, PB_CB_FIRST, PB_COLUMNS, PB_NCBX, PB_NCBY, PB_NODES
from .transform.layout import FlatLayout

__all__ = ["MAX_CODEBLOCKS", "PB_CB_FIRST", "PB_COLUMNS", "PB_NCBX", "PB_NCBY", "PB_NODES", "Band", "PlanGeometry",
           "Resolution", "TileCoding", "TileComponent", "TilePlan", "build_tile_plan", "build_tile_plans", "check_plan",
           "plan_counts", "sampling_pairs", "tile_coding", "tile_counts", "tile_covers_samples", "tile_rect",
           "translated", "translation_period"]

#: log2 of the band gain (Table E.1) by orientation LL, HL, LH, HH.
LOG2_GAIN = (0, 1, 1, 2)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Band:
    """A subband (B.5): orientation, rectangle [x0, x1) x [y0, y1), step size."""

    orient: int
    x0: int
    y0: int
    x1: int
    y1: int
    offset: int  #: first sample in the tile's flat coefficient buffer
    delta: float  #: quantization step size Delta_b (E-3); 1.0 when reversible
    Mb: int  #: magnitude bit-planes (E-2)

    @property
    def width(self) -> int:
        return self.x1 - self.x0

    @property
    def height(self) -> int:
        return self.y1 - self.y0


@dataclass
class Resolution:
    """Resolution level r of a tile-component (B.5): rectangle and bands."""

    r: int
    x0: int
    y0: int
    x1: int
    y1: int
    bands: list[Band]
    PPx: int
    PPy: int
    npx: int  #: precincts across
    npy: int  #: precincts down
    prec_first: int  #: global index of precinct 0 in the tile

    @property
    def rect(self) -> tuple[int, int, int, int]:
        return self.x0, self.y0, self.x1, self.y1


@dataclass
class TileComponent:
    c: int
    x0: int
    y0: int
    x1: int
    y1: int
    levels: int
    reversible: bool
    resolutions: list[Resolution]  #: all NL+1, decoded or not
    decoded: int  #: resolutions kept after ``reduce``: 0..decoded-1
    #: the decoded bands in the flat buffer, for the reconstruction (None: built on first use)
    layout: FlatLayout | None = field(default=None, repr=False, compare=False)

    def flat_layout(self) -> FlatLayout:
        """Where the decoded resolutions' bands lie in the tile's flat buffer (built once)."""
        if self.layout is None:
            res = self.resolutions[: self.decoded]
            bands = [res[0].bands[0]] + [b for r in res[1:] for b in r.bands]
            self.layout = FlatLayout.build([(b.offset, b.height, b.width) for b in bands],
                                           [r.rect for r in res[1:]], [b.delta for b in bands])
        return self.layout


@dataclass(frozen=True, eq=False)
class PlanLayout:
    """The decoded subbands of every tile-component of a plan as
    :class:`~.transform.layout.FlatLayout` arrays one after another (each tile-component's from
    its ``TC_LAY_BAND`` and ``TC_LAY_RECT`` rows, ``TC_DECODED`` - 1 levels): ``bands`` (offset,
    rows, columns), ``rects`` (each level's rectangle, F.3.2), ``dq97`` and ``q53`` (the
    per-level dequantisation arguments, E.1) and ``dq0``, float32 Delta_LL / 2 per tile-component.
    Shared by the plans moved from one (:func:`translated`)."""

    bands: np.ndarray
    rects: np.ndarray
    dq97: np.ndarray
    q53: np.ndarray
    dq0: np.ndarray


@dataclass(frozen=True, eq=False)
class PlanGeometry:
    """A plan's tile-components, resolutions and subbands as rows of :mod:`.plan_numba`
    (``tcs``: TC_*, ``res``: RES_*, ``bands``: BAND_*, in samples of each one's grid), the step
    size Delta_b of each subband (``deltas``, E-3), the decoded subbands' :class:`PlanLayout` and
    the largest side of a decoded code-block (samples)."""

    tcs: np.ndarray
    res: np.ndarray
    bands: np.ndarray
    deltas: np.ndarray
    layout: PlanLayout
    largest_block: int = 0

    def flat_layout(self, i: int) -> FlatLayout:
        """Tile-component row ``i``'s :class:`~.transform.layout.FlatLayout` (views of the
        plan's layout arrays, whose shapes fit each level by B-15 and F.3.3 alike)."""
        lay = self.layout
        b0, r0, levels = (int(v) for v in self.tcs[i, [N.TC_LAY_BAND, N.TC_LAY_RECT, N.TC_DECODED]])
        levels -= 1
        first = int(self.res[self.tcs[i, N.TC_RES], N.RES_BAND])
        return FlatLayout(lay.bands[b0 : b0 + 1 + 3 * levels], lay.rects[r0 : r0 + levels],
                          tuple(self.deltas[first : first + 1 + 3 * levels].tolist()),
                          lay.dq97[r0 : r0 + levels], lay.q53[r0 : r0 + levels])

    def divisors(self, siz) -> np.ndarray:
        """What a move of the tile by (dx, dy) on the reference grid moves each rectangle of
        ``tcs``, ``res`` and ``bands`` (their rows one after another) by, as divisors of (dx, dy,
        dx, dy): XRsiz, YRsiz for a tile-component (B-12), that times 2^(NL - r) for resolution r
        (B-14), times 2 more for the subbands of r >= 1 (B-15); floor divisions compose so.
        Made once per geometry (kept: a class's first tile is moved to each of the others)."""
        found = self.__dict__.get("_divisors")
        if found is None:
            c = self.tcs[:, N.TC_C]
            xt, yt = np.asarray(siz.XRsiz, np.int64)[c], np.asarray(siz.YRsiz, np.int64)[c]
            of = self.res[:, N.RES_TC]
            d = self.tcs[of, N.TC_LEVELS] - self.res[:, N.RES_R]
            xr, yr = xt[of] << d, yt[of] << d
            per_band = np.repeat(np.arange(self.res.shape[0]), self.res[:, N.RES_NBANDS])
            sub = (self.res[per_band, N.RES_R] > 0).astype(np.int64)
            x, y = np.concatenate([xt, xr, xr[per_band] << sub]), np.concatenate([yt, yr, yr[per_band] << sub])
            found = self.__dict__["_divisors"] = np.stack([x, y, x, y], axis=1)
        return found

    def components(self) -> list[TileComponent]:
        """The tile-components as objects, with their resolutions, subbands and layouts."""
        res, bands, deltas = self.res.tolist(), self.bands.tolist(), self.deltas.tolist()
        out = []
        for i, (c, x0, y0, x1, y1, nl, rev, decoded, r0, _, _) in enumerate(self.tcs.tolist()):
            resolutions = []
            for r, rx0, ry0, rx1, ry1, ppx, ppy, npx, npy, prec, b0, nb, _ in res[r0 : r0 + nl + 1]:
                subbands = [Band(*bands[j][:6], deltas[j], bands[j][N.BAND_MB]) for j in range(b0, b0 + nb)]
                resolutions.append(Resolution(r, rx0, ry0, rx1, ry1, subbands, ppx, ppy, npx, npy, prec))
            out.append(TileComponent(c, x0, y0, x1, y1, nl, bool(rev), resolutions, decoded, self.flat_layout(i)))
        return out


@dataclass
class TilePlan:
    """Geometry of one tile and the flat tables of its precincts and code-blocks."""

    index: int
    x0: int
    y0: int
    x1: int
    y1: int
    geometry: PlanGeometry
    layers: int
    prec_pb: np.ndarray
    pb: np.ndarray
    cb: np.ndarray
    cb_keep: np.ndarray  #: 1 where the code-block's resolution is decoded
    nodes: int  #: tag-tree nodes over all precinct-bands
    coeff_size: int  #: samples in the flat coefficient buffer
    num_precincts: int
    sop: bool
    eph: bool
    progression: int
    pocs: list = field(default_factory=list)
    mct: int = 0
    #: the tile's packet orders by layer count, filled by tier2.progression.packet_order (a plan
    #: is reused frame after frame, and the order depends on the plan and the layers alone)
    packet_orders: dict = field(default_factory=dict, repr=False, compare=False)
    #: some code-block is (or, mixed, may be) an HT block (ISO/IEC 15444-15: code-block style
    #: bit 6), known from the headers; set by :func:`build_tile_plan`
    ht: bool = False
    #: the components reconstructed without the MCT as one :class:`~.transform.layout.FlatLayoutBatch`
    #: (or None where one cannot be batched), by the first such component, filled by
    #: :func:`cinegpu.decode.reconstruct.reconstruct_tile`
    batches: dict = field(default_factory=dict, repr=False, compare=False)
    #: subbands quantised with a step size their QCD/QCC does not list (lenient plans only)
    missing_steps: int = 0
    _components: list | None = field(default=None, repr=False, compare=False)

    @property
    def components(self) -> list[TileComponent]:
        """The tile-components (:class:`TileComponent`), made from ``geometry`` on first use
        and kept."""
        if self._components is None:
            self._components = self.geometry.components()
        return self._components


def tile_rect(cs: Codestream, t: int) -> tuple[int, int, int, int]:
    """(tx0, ty0, tx1, ty1) of tile ``t`` on the reference grid (B-7)."""
    s = cs.siz
    p, q = t % s.num_tiles_x, t // s.num_tiles_x
    tx0 = max(s.XTOsiz + p * s.XTsiz, s.XOsiz)
    ty0 = max(s.YTOsiz + q * s.YTsiz, s.YOsiz)
    tx1 = min(s.XTOsiz + (p + 1) * s.XTsiz, s.Xsiz)
    ty1 = min(s.YTOsiz + (q + 1) * s.YTsiz, s.Ysiz)
    return tx0, ty0, tx1, ty1


def sampling_pairs(siz) -> list[tuple[int, int]]:
    """The distinct (XRsiz, YRsiz) of the components, smallest first: what decides whether a
    tile holds samples of a component (:func:`tile_covers_samples`)."""
    return sorted({(siz.XRsiz[c], siz.YRsiz[c]) for c in range(siz.Csiz)}, key=lambda p: (p[0] * p[1], p))


def tile_covers_samples(cs: Codestream, t: int, reduce: int = 0, pairs: list | None = None) -> bool:
    """Whether tile ``t`` holds a sample of some component at the resolution decoded.

    A tile-component's samples are those of its rectangle on the component's grid (B-12),
    divided by ``2**reduce`` (B-14, r = NL - reduce): a tile narrower than a component's
    sub-sampling, or than ``2**reduce`` samples, can hold none. A tile holding none may be
    left out of the codestream without loss (its packets would be empty).
    ``pairs``: :func:`sampling_pairs` of ``cs.siz``, when the caller has them.
    """
    tx0, ty0, tx1, ty1 = tile_rect(cs, t)
    for xr, yr in sampling_pairs(cs.siz) if pairs is None else pairs:
        mx, my = xr << reduce, yr << reduce
        if _cdiv(tx1, mx) > _cdiv(tx0, mx) and _cdiv(ty1, my) > _cdiv(ty0, my):
            return True
    return False


@dataclass(frozen=True, eq=False)
class TileCoding:
    """How a tile's components are coded, as :mod:`.plan_numba` reads it: ``coding`` (CODING_*
    rows: sub-sampling, SPcod/SPcoc, ROI shift), ``pp`` (PPx, PPy of each resolution), ``steps``
    (Mb, E-2, and 1 where no step size is listed) and ``deltas`` (Delta_b, E-3) of every subband;
    ``missing_steps``: the subbands quantised with a step size their QCD/QCC does not list
    (lenient). Depends on the main and tile headers alone, so tiles of one coding share it."""

    coding: np.ndarray
    pp: np.ndarray
    steps: np.ndarray
    deltas: np.ndarray
    missing_steps: int


def _in_force(n: int, default, main: dict, tile_default, tile: dict, get) -> tuple[list, list[int]]:
    """The segments in force for ``n`` components by A.6's precedence (a tile's per-component
    segment, else its default, else the main header's per-component one, else its default):
    the distinct ones and each component's index among them (plain lists: a frame has a few
    components, for which numpy's calls cost more than the work)."""
    found, of = [default], [0] * n
    for c, seg in main.items():
        found.append(get(seg))
        of[c] = len(found) - 1
    if tile_default is not None:
        found.append(tile_default)
        of = [len(found) - 1] * n
    for c, seg in tile.items():
        found.append(get(seg))
        of[c] = len(found) - 1
    return found, of


def _spcods(cs: Codestream, tile: Tile | None) -> tuple[list, list[int]]:
    """The SPcod of every component (A.6.1, A.6.2), as :func:`_in_force` gives them."""
    h = tile.header if tile is not None else None
    return _in_force(cs.siz.Csiz, cs.cod(None).spcod, cs.main.coc, h.cod.spcod if h and h.cod else None,
                     h.coc if h else {}, lambda coc: coc.spcod)


def _band_steps(cs: Codestream, sp, q, c: int, precision: int, lenient: bool):
    """(rows of (Mb, absent), Delta_b, missing) of every subband of a component coded ``sp``,
    quantised ``q`` (E-2, E-3; Table A.30 order). A subband its QCD/QCC lists no step size for
    is absent (strict: the plan raises where it meets it) or, lenient, takes what OpenJPEG's
    decoder holds (:func:`_missing_step`) and counts as missing."""
    n = 3 * sp.levels + 1
    pairs = q.listed_steps(sp.levels)
    listed, missing = len(pairs), 0
    if listed < n and lenient:
        pairs += [_missing_step(cs, q, c, k) for k in range(listed, n)]
        listed, missing = n, n - listed
    guard = q.guard_bits
    rows = [(guard + eps - 1, 0) for eps, _ in pairs] + [(0, 1)] * (n - listed)
    if sp.reversible:
        deltas = [1.0] * listed
    else:
        # R_b: the precision plus the subband's gain (E-3), LL then HL, LH, HH of each level
        deltas = [(2.0 ** (precision + LOG2_GAIN[0 if k == 0 else (k - 1) % 3 + 1] - eps)) * (1.0 + mu / 2048.0)
                  for k, (eps, mu) in enumerate(pairs)]
    return rows, deltas + [0.0] * (n - listed), missing


def tile_coding(cs: Codestream, tile: Tile | None, lenient: bool = False) -> TileCoding:
    """The :class:`TileCoding` of ``tile`` (None: the main header's), its step sizes worked out
    once per distinct coding, quantization and precision among the components (A.6, E.1)."""
    s = cs.siz
    n = s.Csiz
    h = tile.header if tile is not None else None
    sps, sp_of = _spcods(cs, tile)
    qs, q_of = _in_force(n, cs.main.qcd, cs.main.qcc, h.qcd if h else None, h.qcc if h else {},
                         lambda qcc: qcc.quantization)
    # a missing step is the main header's, which depends on the component (lenient only)
    mq_of = _in_force(n, cs.main.qcd, cs.main.qcc, None, {}, lambda qcc: qcc.quantization)[1] if lenient \
        else [0] * n
    roi = [0] * n
    for rgn in (cs.main.rgn, h.rgn if h else {}):
        for c, seg in rgn.items():
            roi[c] = seg.SPrgn
    precision = [(v & 0x7F) + 1 for v in s.Ssiz]
    # the components of one coding, quantization and precision share their steps
    nq, n1 = len(qs), n + 1
    keys = [((k * nq + q) * n1 + m) * 256 + p for k, q, m, p in zip(sp_of, q_of, mq_of, precision)]
    first = dict(zip(reversed(keys), range(n - 1, -1, -1)))   # each kind's first component
    steps, deltas, step_first, short = [], [], {}, {}
    for key, c in first.items():
        rows, ds, m = _band_steps(cs, sps[sp_of[c]], qs[q_of[c]], c, precision[c], lenient)
        step_first[key] = len(steps)
        steps += rows
        deltas += ds
        if m:
            short[key] = m      # subbands without a step size, in each component of this kind
    # counted only where some kind lacks steps (rare: a lenient decode of a short QCD/QCC)
    missing = sum(short.get(k, 0) for k in keys) if short else 0
    pp_first = list(itertools.accumulate((len(sp.precincts) for sp in sps), initial=0))
    # CODING_* columns: XR, YR, LEVELS, XCB, YCB, STYLE, REVERSIBLE, ROI, PP, STEP
    per_sp = [(sp.levels, sp.xcb, sp.ycb, sp.cblk_style, int(sp.reversible)) for sp in sps]
    coding = np.array([(xr, yr, *per_sp[k], r, pp_first[k], step_first[key])
                       for xr, yr, k, r, key in zip(s.XRsiz, s.YRsiz, sp_of, roi, keys)],
                      np.int64).reshape(n, N.CODING_COLUMNS)
    pp = np.array([p for sp in sps for p in sp.precincts], np.int64).reshape(-1, 2)
    return TileCoding(coding, pp, np.array(steps, np.int64).reshape(-1, 2), np.array(deltas, np.float64), missing)


def _stacked(codings: list[TileCoding]) -> tuple:
    """The distinct ``codings`` (each tile's) stacked as :func:`.plan_numba.tiles_counts` takes
    them: (coding, pp, steps, deltas, each one's first rows (FIRST_*; one more at the end), and
    each tile's among them)."""
    index: dict[int, int] = {}
    kinds: list[TileCoding] = []
    which = []
    for c in codings:
        k = index.get(id(c))
        if k is None:
            k = index[id(c)] = len(kinds)
            kinds.append(c)
        which.append(k)
    if len(kinds) == 1:
        one = kinds[0]
        firsts = np.array([(0, 0, 0), (one.coding.shape[0], one.pp.shape[0], one.steps.shape[0])],
                          np.int64).reshape(2, N.FIRST_COLUMNS)
        return one.coding, one.pp, one.steps, one.deltas, firsts, np.zeros(len(codings), np.int64)
    firsts = np.zeros((len(kinds) + 1, N.FIRST_COLUMNS), np.int64)
    firsts[1:] = [(c.coding.shape[0], c.pp.shape[0], c.steps.shape[0]) for c in kinds]
    np.cumsum(firsts, axis=0, out=firsts)
    return (np.concatenate([c.coding for c in kinds]), np.concatenate([c.pp for c in kinds]),
            np.concatenate([c.steps for c in kinds]), np.concatenate([c.deltas for c in kinds]), firsts,
            np.array(which, np.int64))


def plan_counts(cs: Codestream, tiles: list[int], reduce: int, codings: list[TileCoding]) -> np.ndarray:
    """:func:`.plan_numba.tile_counts` of each of ``tiles`` (coded as ``codings``, each tile's
    :func:`tile_coding`, lenient or not alike here) in one call: what its plan holds and its
    first fault, a row a tile."""
    coding, pp, steps, _, firsts, which = _stacked(codings)
    counts = np.zeros((len(tiles), N.COUNT_COLUMNS), np.int64)
    N.tiles_counts(np.array([tile_rect(cs, t) for t in tiles], np.int64).reshape(-1, 4), which, coding, pp, steps,
                   firsts, reduce, counts)
    return counts


def tile_counts(cs: Codestream, t: int, reduce: int, coding: TileCoding | None = None) -> np.ndarray:
    """:func:`plan_counts` of tile ``t`` alone (``coding``: its :func:`tile_coding`, when the
    caller has it)."""
    return plan_counts(cs, [t], reduce, [tile_coding(cs, cs.tiles.get(t), lenient=True) if coding is None
                                         else coding])[0]


def stacked(parts: list, tail: tuple, dtype) -> np.ndarray:
    """The arrays ``parts`` one after another along their first axis, C-contiguous, of
    ``dtype``; an empty ``(0, *tail)`` array where there are none (a frame's tables of every
    tile stacked)."""
    return np.ascontiguousarray(np.concatenate(parts), dtype) if parts else np.zeros((0, *tail), dtype)


def joined(parts: list, tail: tuple, dtype) -> np.ndarray:
    """:func:`stacked` of ``parts``, or the one part itself where it is already a C-contiguous
    array of ``dtype`` (a frame of one tile: its plan's arrays, for reading, not copied)."""
    if len(parts) == 1:
        one = parts[0]
        if one.dtype == dtype and one.flags.c_contiguous:
            return one
    return stacked(parts, tail, dtype)


def build_tile_plans(cs: Codestream, tiles: list[int], reduce: int = 0, lenient: bool = False,
                     codings: list[TileCoding] | None = None, counts: np.ndarray | None = None) -> list[TilePlan]:
    """:func:`build_tile_plan` of each of ``tiles``, in one pass of each kernel over them all
    (a frame of 225 tiles costs two compiled calls and a few views per tile); a tile's tables
    are views of the stacked ones. Raises as :func:`build_tile_plan` does for the first of
    ``tiles`` at fault, before any table is filled. ``codings`` and ``counts``: each tile's
    :func:`tile_coding` (of ``lenient``) and its row of :func:`plan_counts`, when the caller
    keeps them."""
    if codings is None:
        codings = [tile_coding(cs, cs.tiles.get(t), lenient) for t in tiles]
    coding, pp, steps, deltas, firsts, which = _stacked(codings)
    trects = [tile_rect(cs, t) for t in tiles]
    rects = np.array(trects, np.int64).reshape(-1, 4)
    if counts is None:
        counts = np.zeros((len(tiles), N.COUNT_COLUMNS), np.int64)
        N.tiles_counts(rects, which, coding, pp, steps, firsts, reduce, counts)
    if counts[:, N.COUNT_ERROR].any():
        i = int(np.flatnonzero(counts[:, N.COUNT_ERROR])[0])
        _raise_fault(cs, cs.tiles.get(tiles[i]), counts[i], reduce)
    rows, arrays = N.plan_arrays(counts, [c.coding.shape[0] for c in codings])
    results = np.empty((len(tiles), 4), np.int64)
    N.tiles_tables(rects, which, coding, pp, steps, deltas, firsts, reduce, rows, arrays, results)
    rows = rows.tolist()
    return [_tile_plan(cs, t, trect, rows[i], rows[i + 1], arrays, result, codings[i].missing_steps)
            for i, (t, trect, result) in enumerate(zip(tiles, trects, results.tolist()))]


def _tile_plan(cs: Codestream, t: int, trect, a: list, b: list, arrays: tuple, result: list,
               missing_steps: int) -> TilePlan:
    """Tile ``t``'s plan: its rows ``a[k]`` to ``b[k]`` (``plan_numba.ROWS_*``) of each stacked
    table of ``arrays`` and its ``result`` (nodes, samples, HT, largest block) of
    :func:`.plan_numba.tiles_tables`."""
    tcs, res, bands, deltas, prec_pb, pb, cb, keep, lay_bands, lay_rects, dq97, q53, dq0 = arrays
    tile = cs.tiles.get(t)
    cod = cs.cod(tile)
    c0, c1, l0, l1 = a[N.ROWS_TCS], b[N.ROWS_TCS], a[N.ROWS_LEVELS], b[N.ROWS_LEVELS]
    layout = PlanLayout(lay_bands[a[N.ROWS_KEPT] : b[N.ROWS_KEPT]], lay_rects[l0:l1], dq97[l0:l1], q53[l0:l1],
                        dq0[c0:c1])
    band = slice(a[N.ROWS_BANDS], b[N.ROWS_BANDS])
    geometry = PlanGeometry(tcs[c0:c1], res[a[N.ROWS_RES] : b[N.ROWS_RES]], bands[band], deltas[band], layout,
                            result[3])
    block = slice(a[N.ROWS_CB], b[N.ROWS_CB])
    prec = prec_pb[a[N.ROWS_PREC] : b[N.ROWS_PREC]]
    return TilePlan(t, *trect, geometry, cod.layers, prec, pb[a[N.ROWS_PB] : b[N.ROWS_PB]], cb[block], keep[block],
                    result[0], result[1], prec.shape[0], cod.sop, cod.eph, cod.progression, list(cs.progressions(tile)),
                    cod.mct, ht=bool(result[2]), missing_steps=missing_steps)


def build_tile_plan(cs: Codestream, t: int, reduce: int = 0, lenient: bool = False,
                    coding: TileCoding | None = None, counts: np.ndarray | None = None) -> TilePlan:
    """Lay out tile ``t``: resolutions, subbands, precincts, code-blocks.

    ``lenient``: a subband that its QCD/QCC lists no step size for (A.6.4 wants one each; a
    scalar-derived one derives them, E-5) takes what OpenJPEG's decoder holds for it: a tile
    header's missing step from the main header's, else exponent and mantissa 0; the plan
    counts them in ``missing_steps``. Strict, such a band raises :class:`InvalidSegment`.
    ``coding`` and ``counts``: the tile's :func:`tile_coding` (of the same ``lenient``) and
    :func:`tile_counts` (with that coding), when the caller keeps them."""
    return build_tile_plans(cs, [t], reduce, lenient, None if coding is None else [coding],
                            None if counts is None else counts.reshape(1, -1))[0]


def _raise_fault(cs: Codestream, tile: Tile | None, counts: np.ndarray, reduce: int):
    """Raise the fault :func:`.plan_numba.tile_counts` met first, as the plan's checks word it."""
    code, c, band, value = (int(v) for v in counts[N.COUNT_ERROR : N.COUNT_ERROR_VALUE + 1])
    if code == N.E_REDUCE:
        raise UnsupportedFeature(f"reduce {reduce} is more than the {value} levels of component {c}")
    if code == N.E_STEP:
        cs.quantization(tile, c).step(band, cs.spcod(tile, c).levels)   # raises InvalidSegment
    if code == N.E_CODEBLOCKS:
        raise UnsupportedFeature(f"more than {MAX_CODEBLOCKS} code-blocks in one tile")
    raise UnsupportedFeature(f"subband with {value} magnitude bit-planes and ROI shift {cs.roi_shift(tile, c)}")


def translation_period(cs: Codestream, tile: Tile | None) -> tuple[int, int]:
    """(Px, Py): reference-grid steps by which a tile may move and keep its plan (B.5-B.7).

    Moved by a multiple of 2**(NL - r + PP_r) samples of a component's grid for every
    resolution r (2**(NL + PP_0) at r = 0), a tile-component's resolutions, subbands, precinct
    and code-block partitions all move by whole cells, and its inverse DWT keeps the parity of
    every level (F.3). A resolution whose precincts are wider than the whole image (one
    precinct, the usual default of 2**15) asks only that its code-block cells move whole:
    2**(nb + xcb') for its subbands at level nb (and 2**NL for the DWT). Times the sub-sampling
    XRsiz/YRsiz on the reference grid, and over every component (their least common
    multiple), the packet order (B.12, on reference-grid positions) moves with them. Tiles that
    differ by such steps, of one size and one coding, share one plan (:func:`translated`).
    Components of one coding and sub-sampling are looked at once."""
    s = cs.siz
    sps, sp_of = _spcods(cs, tile)
    px = py = 1
    for k, xr, yr in set(zip(sp_of, s.XRsiz, s.YRsiz)):
        sp = sps[k]
        nl = sp.levels
        ex = ey = nl
        for r in range(nl + 1):
            pp_x, pp_y = sp.precincts[r]
            d = nl - r  # resolution r is the component divided by 2**d (B-14)
            nb = nl if r == 0 else d + 1  # its subbands' level
            cell_x, cell_y = (pp_x, pp_y) if r == 0 else (pp_x - 1, pp_y - 1)
            one_x = (xr << (pp_x + d)) >= s.Xsiz  # one precinct across the image
            one_y = (yr << (pp_y + d)) >= s.Ysiz
            ex = max(ex, nb + min(sp.xcb, cell_x) if one_x else d + pp_x)
            ey = max(ey, nb + min(sp.ycb, cell_y) if one_y else d + pp_y)
        px = math.lcm(px, xr << ex)
        py = math.lcm(py, yr << ey)
    return px, py


def translated(plan: TilePlan, t: int, trect: tuple[int, int, int, int], siz) -> TilePlan:
    """The plan of tile ``t`` at ``trect``, moved from ``plan`` by a multiple of
    :func:`translation_period` (the caller checks it): the same tables (shared, read-only),
    packet orders and reconstruction layouts, the rectangles moved. A layout keeps ``plan``'s
    level rectangles, of the same sizes and parities as the moved ones (an even number of
    samples away at every level): all that the inverse DWT reads of them (F.3)."""
    g = plan.geometry
    dx, dy = trect[0] - plan.x0, trect[1] - plan.y0
    moves = np.array((dx, dy, dx, dy), np.int64) // g.divisors(siz)
    nt, nr = g.tcs.shape[0], g.res.shape[0]
    tcs, res, bands = g.tcs.copy(), g.res.copy(), g.bands.copy()
    tcs[:, N.RECT_COLUMNS] += moves[:nt]
    res[:, N.RECT_COLUMNS] += moves[nt : nt + nr]
    bands[:, N.RECT_COLUMNS] += moves[nt + nr :]
    return TilePlan(t, *trect, PlanGeometry(tcs, res, bands, g.deltas, g.layout, g.largest_block), plan.layers,
                    plan.prec_pb, plan.pb, plan.cb, plan.cb_keep, plan.nodes, plan.coeff_size, plan.num_precincts,
                    plan.sop, plan.eph, plan.progression, plan.pocs, plan.mct, plan.packet_orders, plan.ht,
                    plan.batches, plan.missing_steps)


def _missing_step(cs, q, c: int, band_index: int) -> tuple[int, int]:
    """What OpenJPEG's decoder holds for a subband its QCD/QCC lists no step size for: a tile
    header's copy of the main header's (it starts a tile's parameters as a copy of them),
    else zeros (its tables start zeroed)."""
    main = cs.quantization(None, c)
    if main is not q and main.style == q.style and band_index < len(main.steps):
        return main.steps[band_index]
    return (0, 0)


def check_plan(plan: TilePlan) -> None:
    """Sanity checks of a finished plan (cheap; catches header nonsense): no code-block's
    width or height (``tier1.CB_WIDTH``, ``CB_HEIGHT``) above 1024 samples."""
    if plan.geometry.largest_block > 1024:
        raise InvalidSegment("code-block larger than 1024 samples a side")
