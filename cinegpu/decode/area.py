"""The decode area: a rectangle of the reference grid to decode instead of the whole image (what
``opj_decompress -d`` and ``-t`` decode), the tiles that meet it, and each component's window of
samples in it.

T.800 B.2: component c's samples lie on the reference grid at multiples of (XRsiz, YRsiz), and
``reduce`` levels down (B.5, B-14) at multiples of (XRsiz 2^r, YRsiz 2^r). An area
[x0, x1) x [y0, y1) holds its samples from ceil(x0 / (XRsiz 2^r)) up to ceil(x1 / (XRsiz 2^r))
across and likewise down, as the whole image holds them from its offsets (B-2): decoding an area
gives the whole image's samples in that window. Only the tiles whose rectangle (B-7) meets the
area are read. In those tiles, tier-1 decodes only the code-blocks whose coefficients can reach
the area (:func:`codeblocks_meeting`; the others come out zero, as a block without coding passes
does), and on the host the inverse DWT runs over a window about it
(:func:`~.reconstruct.reconstruct_tile_window`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import plan_numba as N
from . import tier1
from .codestream.header import Codestream
from .codestream.siz import SIZ
from .plan import tile_rect

__all__ = ["Area", "codeblocks_meeting", "component_windows", "tile_area", "tiles_meeting", "within_area"]

#: How far the inverse DWT spreads a coefficient of a subband m levels above the decoded
#: resolution, in its samples, over 2^m: the 9/7 synthesis filters (7 and 9 taps, F.3) carry a
#: coefficient 3 samples one way and 5 the other a level, 5 (2^m - 1) over m levels (the 5/3
#: ones less); 8 leaves room. The same margin keeps a reconstruction window's cut edges
#: (:func:`~.reconstruct.reconstruct_tile_window`) away from the area.
REACH = 8


@dataclass(frozen=True)
class Area:
    """[x0, x1) x [y0, y1) on the reference grid (the image's coordinates, its offset
    included, at full resolution)."""

    x0: int
    y0: int
    x1: int
    y1: int

    @classmethod
    def of(cls, value) -> Area:
        """An :class:`Area` of ``value`` (an Area, or four integers x0, y0, x1, y1); ValueError
        where it is empty or not four integers."""
        if isinstance(value, Area):
            return value
        try:
            x0, y0, x1, y1 = (int(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"a decode area is four integers x0, y0, x1, y1, not {value!r}") from None
        if not (0 <= x0 < x1 and 0 <= y0 < y1):
            raise ValueError(f"decode area ({x0}, {y0}, {x1}, {y1}) is empty or negative: want 0 <= x0 < x1, "
                             "0 <= y0 < y1")
        return cls(x0, y0, x1, y1)

    def within(self, siz: SIZ) -> Area:
        """The area cut to the image (XOsiz..Xsiz, YOsiz..Ysiz, A.5.1), as OpenJPEG cuts one that
        reaches outside it; ValueError where nothing of it is inside."""
        cut = Area(max(self.x0, siz.XOsiz), max(self.y0, siz.YOsiz), min(self.x1, siz.Xsiz), min(self.y1, siz.Ysiz))
        if cut.x0 >= cut.x1 or cut.y0 >= cut.y1:
            raise ValueError(f"decode area ({self.x0}, {self.y0}, {self.x1}, {self.y1}) lies outside the image "
                             f"({siz.XOsiz}, {siz.YOsiz}, {siz.Xsiz}, {siz.Ysiz}) on the reference grid")
        return cut


def tiles_meeting(siz: SIZ, area: Area) -> list[int]:
    """The tiles whose rectangle (B-7) meets ``area``, in index order: found from the tile
    grid in time of their number, not of the image's."""
    def span(a0, a1, origin, size, count):
        return range(max(0, (a0 - origin) // size), min(count, (a1 - 1 - origin) // size + 1))

    across = span(area.x0, area.x1, siz.XTOsiz, siz.XTsiz, siz.num_tiles_x)
    down = span(area.y0, area.y1, siz.YTOsiz, siz.YTsiz, siz.num_tiles_y)
    return [q * siz.num_tiles_x + p for q in down for p in across]


def tile_area(cs: Codestream, t: int) -> Area:
    """Tile ``t``'s rectangle on the reference grid (B-7, :func:`~.plan.tile_rect`), within the
    image: what ``opj_decompress -t`` decodes. ValueError for a tile the grid does not have."""
    if not 0 <= t < cs.siz.num_tiles:
        raise ValueError(f"tile {t}: the image has tiles 0 to {cs.siz.num_tiles - 1}")
    return Area(*tile_rect(cs, t))


def within_area(cs: Codestream, area: Area) -> tuple[Codestream, list[int]]:
    """``cs`` with only the tiles that meet ``area`` (a view: the same segments and data, ``cs``
    as its ``whole`` for PPM's packed headers; no main-header cache entry, so that no later frame
    takes its plans for the whole image's), and those tiles' indices, present or not."""
    meeting = tiles_meeting(cs.siz, area)
    tiles = {t: cs.tiles[t] for t in meeting if t in cs.tiles}
    return replace(cs, tiles=tiles, header_key=None, whole=cs), meeting


def component_windows(siz: SIZ, area: Area, reduce: int) -> tuple[tuple[tuple[int, int], ...],
                                                                    tuple[tuple[int, int], ...]]:
    """Each component's (width, height) of samples in ``area`` at ``reduce`` levels down, and
    its first sample's (y, x) on the component's own grid: :meth:`SIZ.component_sizes` and
    :meth:`SIZ.component_origins` with the area in place of the image (B-2)."""
    sizes, origins = [], []
    for xr, yr in zip(siz.XRsiz, siz.YRsiz):
        sx, sy = xr << reduce, yr << reduce
        cx0, cy0 = -(-area.x0 // sx), -(-area.y0 // sy)
        sizes.append((-(-area.x1 // sx) - cx0, -(-area.y1 // sy) - cy0))
        origins.append((cy0, cx0))
    return tuple(sizes), tuple(origins)


def codeblocks_meeting(plan, siz: SIZ, area: Area, reduce: int) -> np.ndarray:
    """Whether each of ``plan``'s code-blocks (a row of ``plan.cb``) can reach a sample of
    ``area`` at ``reduce``: its rectangle in its subband (B-15: from the block's first
    coefficient in the tile's buffer, ``CB_OUT``, and its size), on the decoded resolution's
    grid (2^m of its samples a coefficient, m = the subband's level less ``reduce``) and
    widened by :data:`REACH` 2^m, meets the area's window on the component's grid
    (:func:`component_windows`). Generous: a block kept needlessly costs its decoding, never a
    sample."""
    cb = plan.cb
    if not cb.shape[0]:
        return np.zeros(0, bool)
    g = plan.geometry
    bands, res, tcs = g.bands, g.res, g.tcs
    order = np.argsort(res[:, N.RES_BAND], kind="stable")
    band_res = np.repeat(order, res[order, N.RES_NBANDS])          # each subband's resolution row
    tc = res[band_res, N.RES_TC]
    r = res[band_res, N.RES_R]
    levels = tcs[tc, N.TC_LEVELS]
    level = np.where(r == 0, levels, levels - r + 1)                # B.5: resolution r's subbands
    b = np.searchsorted(bands[:, N.BAND_OFFSET], cb[:, tier1.CB_OUT], side="right") - 1
    rel = cb[:, tier1.CB_OUT] - bands[b, N.BAND_OFFSET]
    stride = np.maximum(cb[:, tier1.CB_STRIDE], 1)
    u0 = bands[b, N.BAND_X0] + rel % stride
    v0 = bands[b, N.BAND_Y0] + rel // stride
    scale = np.left_shift(1, np.maximum(level[b] - reduce, 0)).astype(np.int64)
    reach = REACH * scale
    sizes, origins = component_windows(siz, area, reduce)
    c = tcs[tc[b], N.TC_C]
    wx0 = np.array([o[1] for o in origins], np.int64)[c]
    wy0 = np.array([o[0] for o in origins], np.int64)[c]
    wx1 = wx0 + np.array([w for w, _ in sizes], np.int64)[c]
    wy1 = wy0 + np.array([h for _, h in sizes], np.int64)[c]
    return ((u0 * scale - reach < wx1) & ((u0 + cb[:, tier1.CB_WIDTH]) * scale + reach > wx0)
            & (v0 * scale - reach < wy1) & ((v0 + cb[:, tier1.CB_HEIGHT]) * scale + reach > wy0))
