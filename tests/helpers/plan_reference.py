"""The decode plan as cinegpu built it before its tables were filled in numba (commit c6ac69b):
the reference that tests/test_plan_tables.py checks ``cinegpu.decode.plan`` against, field by
field, on many geometries.  Test code only.

The original docstring follows.

The decode plan: the geometry of one tile, built once per header (Annex B).

A :class:`TilePlan` holds, for one tile, its tile-components, resolutions
and subbands as small objects, and its precincts and code-blocks as flat
numpy tables that the numba tier-2 and tier-1 kernels read:

* ``prec_pb`` (n_prec, 2): first precinct-band row and how many (1 or 3);
* ``pb`` (n_pb, PB_COLUMNS): code-block grid of a precinct in one subband;
* ``cb`` (n_cb, tier1.CB_COLUMNS): the tier-1 table of every code-block,
  in packet order (precinct, subband, raster), output offsets into one flat
  coefficient buffer laid out per subband.

Every frame of a reel shares its main header, so a plan is reused across
frames: only coded bytes change. Coordinates are in samples on each
component's own grid at the resolution named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cinegpu.decode import tier1
from cinegpu.decode.codestream.header import Codestream, Tile
from cinegpu.decode.codestream.qcd import QUANT_DERIVED
from cinegpu.decode.errors import InvalidSegment, UnsupportedFeature
from cinegpu.decode.transform.layout import FRAME_COLUMNS, FlatLayout, FrameLayout
from cinegpu.decode.transform.level_shift import sample_bounds

# Columns of the precinct-band table.
PB_NCBX, PB_NCBY, PB_CB_FIRST, PB_NODES = 0, 1, 2, 3
PB_COLUMNS = 4

#: log2 of the band gain (Table E.1) by orientation LL, HL, LH, HH.
LOG2_GAIN = (0, 1, 1, 2)
#: Cap on the code-blocks of one tile (guards memory against absurd headers).
MAX_CODEBLOCKS = 1 << 24


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


@dataclass
class TilePlan:
    """Geometry of one tile and the flat tables of its precincts and code-blocks."""

    index: int
    x0: int
    y0: int
    x1: int
    y1: int
    components: list[TileComponent]
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


def build_tile_plan(cs: Codestream, t: int, reduce: int = 0, lenient: bool = False) -> TilePlan:
    """Lay out tile ``t``: resolutions, subbands, precincts, code-blocks.

    ``lenient``: a subband that its QCD/QCC lists no step size for (A.6.4 wants one each; a
    scalar-derived one derives them, E-5) takes what OpenJPEG's decoder holds for it: a tile
    header's missing step from the main header's, else exponent and mantissa 0; the plan
    counts them in ``missing_steps``. Strict, such a band raises :class:`InvalidSegment`."""
    tile = cs.tiles.get(t)
    tx0, ty0, tx1, ty1 = tile_rect(cs, t)
    cod = cs.cod(tile)
    comps: list[TileComponent] = []
    prec_pb: list[np.ndarray] = []
    pb_rows: list[np.ndarray] = []
    cb_rows: list[np.ndarray] = []
    keep_rows: list[np.ndarray] = []
    counters = {"prec": 0, "pb": 0, "cb": 0, "nodes": 0, "coeff": 0, "missing_steps": 0}
    for c in range(cs.siz.Csiz):
        tc = _tile_component(cs, tile, c, (tx0, ty0, tx1, ty1), reduce, counters,
                             prec_pb, pb_rows, cb_rows, keep_rows, lenient)
        comps.append(tc)
    prec = np.concatenate(prec_pb) if prec_pb else np.zeros((0, 2), np.int64)
    pb = np.concatenate(pb_rows) if pb_rows else np.zeros((0, PB_COLUMNS), np.int64)
    cb = np.concatenate(cb_rows) if cb_rows else np.zeros((0, tier1.CB_COLUMNS), np.int64)
    keep = np.concatenate(keep_rows) if keep_rows else np.zeros(0, np.int8)
    return TilePlan(
        t, tx0, ty0, tx1, ty1, comps, cod.layers,
        prec, pb, cb, keep, counters["nodes"], counters["coeff"], prec.shape[0], cod.sop, cod.eph,
        cod.progression, list(cs.progressions(tile)), cod.mct,
        ht=bool(cb.shape[0]) and bool((cb[:, tier1.CB_STYLE] & tier1.CBLK_HT).any()),
        missing_steps=counters["missing_steps"],
    )


def component_rect(siz, c: int, trect) -> tuple[int, int, int, int]:
    """(tcx0, tcy0, tcx1, tcy1): the tile-component on component ``c``'s grid (B-12)."""
    tx0, ty0, tx1, ty1 = trect
    return (_cdiv(tx0, siz.XRsiz[c]), _cdiv(ty0, siz.YRsiz[c]),
            _cdiv(tx1, siz.XRsiz[c]), _cdiv(ty1, siz.YRsiz[c]))


def resolution_rects(tcrect, NL: int, r: int, PPx: int, PPy: int):
    """Geometry of resolution ``r`` of a tile-component with ``NL`` levels (B-14, B-15, B-16).

    Returns ((rx0, ry0, rx1, ry1), [(orient, bx0, by0, bx1, by1) per subband], npx, npy),
    in samples of the resolution and of each subband; npx x npy precincts of 2**PPx x 2**PPy.
    """
    tcx0, tcy0, tcx1, tcy1 = tcrect
    d = 1 << (NL - r)
    rx0, rx1, ry0, ry1 = _cdiv(tcx0, d), _cdiv(tcx1, d), _cdiv(tcy0, d), _cdiv(tcy1, d)
    if r == 0:
        bands = [(tier1.ORIENT_LL, rx0, ry0, rx1, ry1)]
    else:
        nb = NL - r + 1
        h = 1 << (nb - 1)
        bands = []
        for orient in (tier1.ORIENT_HL, tier1.ORIENT_LH, tier1.ORIENT_HH):
            xob, yob = (orient & 1), (orient >> 1)
            bands.append((orient, _cdiv(tcx0 - h * xob, 1 << nb), _cdiv(tcy0 - h * yob, 1 << nb),
                          _cdiv(tcx1 - h * xob, 1 << nb), _cdiv(tcy1 - h * yob, 1 << nb)))
    npx = (_cdiv(rx1, 1 << PPx) - (rx0 >> PPx)) if rx1 > rx0 else 0
    npy = (_cdiv(ry1, 1 << PPy) - (ry0 >> PPy)) if ry1 > ry0 else 0
    return (rx0, ry0, rx1, ry1), bands, npx, npy


def _missing_step(cs, q, c: int, band_index: int) -> tuple[int, int]:
    """What OpenJPEG's decoder holds for a subband its QCD/QCC lists no step size for: a tile
    header's copy of the main header's (it starts a tile's parameters as a copy of them),
    else zeros (its tables start zeroed)."""
    main = cs.quantization(None, c)
    if main is not q and main.style == q.style and band_index < len(main.steps):
        return main.steps[band_index]
    return (0, 0)


def _tile_component(cs, tile: Tile | None, c, trect, reduce, counters, prec_pb, pb_rows, cb_rows, keep_rows,
                    lenient: bool = False):
    s = cs.siz
    sp = cs.spcod(tile, c)
    q = cs.quantization(tile, c)
    roi = cs.roi_shift(tile, c)
    NL = sp.levels
    if reduce > NL:
        raise UnsupportedFeature(f"reduce {reduce} is more than the {NL} levels of component {c}")
    tcrect = component_rect(s, c, trect)
    precision = s.precision(c)
    resolutions = []
    band_index = 0
    for r in range(NL + 1):
        PPx, PPy = sp.precincts[r]
        (rx0, ry0, rx1, ry1), rects, npx, npy = resolution_rects(tcrect, NL, r, PPx, PPy)
        keep = r <= NL - reduce
        bands = []
        for orient, bx0, by0, bx1, by1 in rects:
            missing = None
            if lenient and band_index >= len(q.steps):
                missing = _missing_step(cs, q, c, band_index)
                counters["missing_steps"] += q.style != QUANT_DERIVED
            eps, mu = q.step(band_index, NL, missing)
            band_index += 1
            Rb = precision + LOG2_GAIN[orient]
            delta = 1.0 if sp.reversible else (2.0 ** (Rb - eps)) * (1.0 + mu / 2048.0)
            Mb = q.guard_bits + eps - 1
            size = (bx1 - bx0) * (by1 - by0) if keep else 0
            bands.append(Band(orient, bx0, by0, bx1, by1, counters["coeff"], delta, Mb))
            counters["coeff"] += size
        res = Resolution(r, rx0, ry0, rx1, ry1, bands, PPx, PPy, npx, npy, counters["prec"])
        counters["prec"] += npx * npy
        _precincts(res, sp, roi, keep, counters, prec_pb, pb_rows, cb_rows, keep_rows)
        resolutions.append(res)
    tcx0, tcy0, tcx1, tcy1 = tcrect
    return TileComponent(c, tcx0, tcy0, tcx1, tcy1, NL, sp.reversible, resolutions, NL + 1 - reduce)


def _tree_nodes(w: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Nodes of tag trees over w x h leaves (B.10.2), elementwise."""
    total = np.zeros_like(w)
    w, h = w.copy(), h.copy()
    live = (w > 0) & (h > 0)
    while live.any():
        total += np.where(live, w * h, 0)
        done = live & (w == 1) & (h == 1)
        live &= ~done
        w, h = (w + 1) // 2, (h + 1) // 2
    return total


def cell_span(k0: int, n: int, pp: int, b0: int, b1: int, cb: int) -> tuple[np.ndarray, np.ndarray]:
    """Code-block cells of ``n`` precincts along one axis of a band (B.6, B.7).

    Precinct ``k0 + k`` covers band samples [(k0 + k) << pp, (k0 + k + 1) << pp), cut to
    [b0, b1); code-blocks are cells of 2**cb samples (cb <= pp), so they never straddle a
    precinct. Returns (first cell, cells) per precinct, int64 arrays of length ``n``.
    """
    k = np.arange(n, dtype=np.int64)
    p0 = np.maximum((k0 + k) << pp, b0)
    p1 = np.minimum((k0 + k + 1) << pp, b1)
    c0 = p0 >> cb
    c1 = np.where(p1 > p0, -(-p1 >> cb), c0)
    return c0, np.maximum(c1 - c0, 0)


def precinct_shape(r: int, PPx: int, PPy: int, sp) -> tuple[int, int, int, int]:
    """(pp_x, pp_y, xcb, ycb): precinct and code-block size exponents in the subband samples
    of resolution ``r`` (B-16, B-17)."""
    pp_x = PPx if r == 0 else PPx - 1
    pp_y = PPy if r == 0 else PPy - 1
    return pp_x, pp_y, min(sp.xcb, pp_x), min(sp.ycb, pp_y)


def _precincts(res: Resolution, sp, roi, keep, counters, prec_pb, pb_rows, cb_rows, keep_rows):
    """Fill the precinct, precinct-band and code-block tables of one resolution.

    Everything is array arithmetic over the precincts and code-blocks: no Python loop runs
    per precinct, so a resolution of many (even 1 x 1) precincts costs a few numpy passes.
    """
    n_prec = res.npx * res.npy
    nbands = len(res.bands)
    pp_x, pp_y, xcb, ycb = precinct_shape(res.r, res.PPx, res.PPy, sp)
    kx0, ky0 = res.x0 >> res.PPx, res.y0 >> res.PPy
    pb_first = counters["pb"]
    if n_prec == 0:
        return
    prec_pb.append(np.stack([pb_first + np.arange(n_prec, dtype=np.int64) * nbands,
                             np.full(n_prec, nbands, np.int64)], axis=1))
    tables = np.zeros((n_prec, nbands, PB_COLUMNS), np.int64)
    per_band = []
    for bi, b in enumerate(res.bands):
        cx0, ncbx = cell_span(kx0, res.npx, pp_x, b.x0, b.x1, xcb)
        cy0, ncby = cell_span(ky0, res.npy, pp_y, b.y0, b.y1, ycb)
        tables[:, bi, PB_NCBX] = np.tile(ncbx, res.npy)
        tables[:, bi, PB_NCBY] = np.repeat(ncby, res.npx)
        per_band.append((b, cx0, cy0))
    counts = tables[:, :, PB_NCBX] * tables[:, :, PB_NCBY]
    total = int(counts.sum())
    if counters["cb"] + total > MAX_CODEBLOCKS:
        raise UnsupportedFeature(f"more than {MAX_CODEBLOCKS} code-blocks in one tile")
    firsts = counters["cb"] + np.concatenate(([0], np.cumsum(counts.ravel())[:-1])).reshape(n_prec, nbands)
    tables[:, :, PB_CB_FIRST] = firsts
    nodes = _tree_nodes(tables[:, :, PB_NCBX].ravel(), tables[:, :, PB_NCBY].ravel())
    tables[:, :, PB_NODES] = counters["nodes"] + np.concatenate(([0], np.cumsum(nodes)[:-1])).reshape(n_prec, nbands)
    counters["nodes"] += int(nodes.sum())
    pb_rows.append(tables.reshape(-1, PB_COLUMNS))
    counters["pb"] += n_prec * nbands
    cbs = np.zeros((total, tier1.CB_COLUMNS), np.int64)
    for bi, (b, cx0, cy0) in enumerate(per_band):
        _codeblocks(cbs, tables[:, bi], counters["cb"], b, cx0, cy0, xcb, ycb, res.npx, sp, roi, keep)
    cb_rows.append(cbs)
    keep_rows.append(np.full(total, 1 if keep else 0, np.int8))
    counters["cb"] += total


def _codeblocks(cbs, pbt, cb_base, b: Band, cx0, cy0, xcb, ycb, npx, sp, roi, keep):
    """Tier-1 rows of the code-blocks of band ``b`` in every precinct (raster order in each)."""
    nx, ny = pbt[:, PB_NCBX], pbt[:, PB_NCBY]
    counts = nx * ny
    total = int(counts.sum())
    if b.Mb + roi > 30 or b.Mb < 0:
        raise UnsupportedFeature(f"subband with {b.Mb} magnitude bit-planes and ROI shift {roi}")
    if total == 0:
        return
    prec = np.repeat(np.arange(pbt.shape[0], dtype=np.int64), counts)  # each block's precinct
    k = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    rows = pbt[prec, PB_CB_FIRST] - cb_base + k
    w = nx[prec]
    gx = (cx0[prec % npx] + k % w) << xcb
    gy = (cy0[prec // npx] + k // w) << ycb
    x0, x1 = np.maximum(gx, b.x0), np.minimum(gx + (1 << xcb), b.x1)
    y0, y1 = np.maximum(gy, b.y0), np.minimum(gy + (1 << ycb), b.y1)
    # blocks of resolutions dropped by ``reduce`` are read but not decoded
    if keep:
        cbs[rows, tier1.CB_WIDTH] = x1 - x0
        cbs[rows, tier1.CB_HEIGHT] = y1 - y0
        cbs[rows, tier1.CB_OUT] = b.offset + (y0 - b.y0) * b.width + (x0 - b.x0)
    cbs[rows, tier1.CB_STRIDE] = b.width
    cbs[rows, tier1.CB_ORIENT] = b.orient
    cbs[rows, tier1.CB_STYLE] = sp.cblk_style
    cbs[rows, tier1.CB_ROISHIFT] = roi
    cbs[rows, tier1.CB_NUM_BPS] = b.Mb  # tier-2 replaces this by Mb - zero bit-planes (+ roi)


def check_plan(plan: TilePlan) -> None:
    """Sanity checks of a finished plan (cheap; catches header nonsense)."""
    if plan.cb.shape[0] and (plan.cb[:, tier1.CB_WIDTH].max() > 1024 or plan.cb[:, tier1.CB_HEIGHT].max() > 1024):
        raise InvalidSegment("code-block larger than 1024 samples a side")


@dataclass(frozen=True)
class TileGeometry:
    """Counts of one tile's plan, from its headers alone (cacheable with the plan)."""

    resolutions: int  #: tile-component resolutions
    precincts: int
    codeblocks: int
    layers: int
    samples: int  #: coefficients at the decoded resolution, all components


def tile_geometry(cs: Codestream, t: int, reduce: int) -> TileGeometry:
    """Precincts, code-blocks and decoded samples of tile ``t`` (B.5-B.7), without tables.

    Counts exactly what :func:`cinegpu.decode.plan.build_tile_plan` would lay out: code-block
    cells never straddle precincts, so a band's blocks are (cells across) x (cells down).
    """
    tile = cs.tiles.get(t)
    trect = tile_rect(cs, t)
    n_res = n_prec = n_cb = samples = 0
    for c in range(cs.siz.Csiz):
        sp = cs.spcod(tile, c)
        tcrect = component_rect(cs.siz, c, trect)
        for r in range(sp.levels + 1):
            PPx, PPy = sp.precincts[r]
            (rx0, ry0, _, _), bands, npx, npy = resolution_rects(tcrect, sp.levels, r, PPx, PPy)
            n_res += 1
            n_prec += npx * npy
            keep = r <= sp.levels - reduce
            pp_x, pp_y, xcb, ycb = precinct_shape(r, PPx, PPy, sp)
            for _, bx0, by0, bx1, by1 in bands:
                if keep:
                    samples += max(bx1 - bx0, 0) * max(by1 - by0, 0)
                if npx and npy:
                    _, ncbx = cell_span(rx0 >> PPx, npx, pp_x, bx0, bx1, xcb)
                    _, ncby = cell_span(ry0 >> PPy, npy, pp_y, by0, by1, ycb)
                    n_cb += int(ncbx.sum()) * int(ncby.sum())
    return TileGeometry(n_res, n_prec, n_cb, cs.cod(tile).layers, samples)


# --- tier2/progression.py before the plan tables (the packet order of a reference plan)
LRCP, RLCP, RPCL, PCRL, CPRL = range(5)


def _precinct_table(plan: TilePlan, siz) -> np.ndarray:
    """Rows (precinct, c, r, px, py, x_ref, y_ref) for every precinct of the tile."""
    rows = []
    for tc in plan.components:
        xr, yr = siz.XRsiz[tc.c], siz.YRsiz[tc.c]
        for res in tc.resolutions:
            n = res.npx * res.npy
            if n == 0:
                continue
            d = tc.levels - res.r
            i = np.arange(n) % res.npx
            j = np.arange(n) // res.npx
            kx0, ky0 = res.x0 >> res.PPx, res.y0 >> res.PPy
            x_ref = ((kx0 + i) << (res.PPx + d)) * xr
            y_ref = ((ky0 + j) << (res.PPy + d)) * yr
            # a first precinct whose corner lies before the tile is met at the tile's corner
            x_ref = np.where((i == 0) & (x_ref < plan.x0), plan.x0, x_ref)
            y_ref = np.where((j == 0) & (y_ref < plan.y0), plan.y0, y_ref)
            rows.append(np.stack([res.prec_first + np.arange(n), np.full(n, tc.c), np.full(n, res.r),
                                  i, j, x_ref, y_ref], axis=1))
    if not rows:
        return np.zeros((0, 7), np.int64)
    return np.concatenate(rows).astype(np.int64)


def _ordered(table: np.ndarray, layers: int, order: int) -> np.ndarray:
    """All packets (precinct, layer) of ``table`` x ``range(layers)`` in ``order``."""
    n = table.shape[0]
    if n == 0 or layers <= 0:
        return np.zeros((0, 2), np.int64)
    prec = np.repeat(table[:, 0], layers)
    layer = np.tile(np.arange(layers), n)
    c, r = np.repeat(table[:, 1], layers), np.repeat(table[:, 2], layers)
    p = prec  # precinct index within (c, r) sorts like the global index
    x, y = np.repeat(table[:, 5], layers), np.repeat(table[:, 6], layers)
    keys = {
        LRCP: (p, c, r, layer),
        RLCP: (p, c, layer, r),
        RPCL: (layer, c, x, y, r),
        PCRL: (layer, r, c, x, y),
        CPRL: (layer, r, x, y, c),
    }[order]  # np.lexsort sorts by the last key first
    idx = np.lexsort(keys)
    return np.stack([prec[idx], layer[idx]], axis=1)


def packet_order(plan: TilePlan, siz, layers: int) -> np.ndarray:
    """:func:`packet_order` for ``layers`` layers, computed."""
    table = _precinct_table(plan, siz)
    if not plan.pocs:
        return _ordered(table, layers, plan.progression)
    n_prec = plan.num_precincts
    done = np.zeros(n_prec * layers, bool)
    out = []
    for poc in plan.pocs:
        sel = (
            (table[:, 1] >= poc.CSpoc) & (table[:, 1] < poc.CEpoc)
            & (table[:, 2] >= poc.RSpoc) & (table[:, 2] < poc.REpoc)
        )
        pk = _ordered(table[sel], min(poc.LYEpoc, layers), poc.Ppoc)
        if pk.shape[0] == 0:
            continue
        flat = pk[:, 0] * layers + pk[:, 1]
        fresh = ~done[flat]
        # a packet listed twice within one progression is taken once
        _, first = np.unique(flat, return_index=True)
        once = np.zeros(flat.shape[0], bool)
        once[first] = True
        take = fresh & once
        done[flat[take]] = True
        out.append(pk[take])
    return np.concatenate(out) if out else np.zeros((0, 2), np.int64)


# --- reconstruct.py before the plan tables (the frame layout of reference plans)
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


def frame_layout(plans: list, offsets: list[int], siz, reduce: int, dtypes) -> FrameLayout | None:
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
        return (np.ascontiguousarray(np.concatenate(xs), dt) if xs
               else np.zeros((0, cols), dt))
    # a tile's components are planned in order: an MCT row is followed by components 1 and 2
    return FrameLayout(cat(bands, 3, np.int64), cat(rects, 4, np.int64), cat(dq97, 4, np.float32),
                       cat(q53, 4, np.int32), np.array(dq0, np.float32),
                       np.array(rows, np.int64).reshape(-1, FRAME_COLUMNS), total, tuple(planes), tuple(groups))


# --- frame_entropy.FrameTables.build before the plan tables, as a tuple of its fields
def frame_tables(plans: list, offsets: list[int]) -> tuple:
    prec_pb, pb, cb, keep = [], [], [], []
    prec_first, cb_first = [0], [0]
    n_pb = nodes = 0
    for plan, off in zip(plans, offsets):
        a = plan.prec_pb.copy()
        a[:, 0] += n_pb
        b = plan.pb.copy()
        b[:, PB_CB_FIRST] += cb_first[-1]
        b[:, PB_NODES] += nodes
        c = plan.cb.copy()
        c[:, tier1.CB_OUT] += off
        prec_pb.append(a)
        pb.append(b)
        cb.append(c)
        keep.append(plan.cb_keep)
        n_pb += plan.pb.shape[0]
        nodes += plan.nodes
        prec_first.append(prec_first[-1] + plan.prec_pb.shape[0])
        cb_first.append(cb_first[-1] + plan.cb.shape[0])
    def cat(xs, shape, dt):
        return (np.ascontiguousarray(np.concatenate(xs), dt) if xs else np.zeros(shape, dt))
    return (cat(prec_pb, (0, 2), np.int64), cat(pb, (0, 4), np.int64),
            cat(cb, (0, tier1.CB_COLUMNS), np.int64), cat(keep, (0,), np.int8), nodes, prec_first, cb_first,
            # a code-block whose style has the HT bit (all-HT and mixed styles both have it)
            any(bool((plan.cb[:, tier1.CB_STYLE] & tier1.CBLK_HT).any()) for plan in plans))
