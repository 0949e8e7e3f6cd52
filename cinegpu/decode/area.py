"""The decode area: a rectangle of the reference grid to decode instead of the whole image (what
``opj_decompress -d`` and ``-t`` decode), the tiles that meet it, and each component's window of
samples in it.

T.800 B.2: component c's samples lie on the reference grid at multiples of (XRsiz, YRsiz), and
``reduce`` levels down (B.5, B-14) at multiples of (XRsiz 2^r, YRsiz 2^r). An area
[x0, x1) x [y0, y1) holds its samples from ceil(x0 / (XRsiz 2^r)) up to ceil(x1 / (XRsiz 2^r))
across and likewise down, as the whole image holds them from its offsets (B-2): decoding an area
gives the whole image's samples in that window. The tiles whose rectangle (B-7) meets the area
are decoded whole and cut; the others are not read at all.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .codestream.header import Codestream
from .codestream.siz import SIZ

__all__ = ["Area", "component_windows", "tile_area", "tiles_meeting", "within_area"]


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

    def check(self, siz: SIZ) -> None:
        """ValueError where the area reaches outside the image (XOsiz..Xsiz, YOsiz..Ysiz, A.5.1),
        as OpenJPEG refuses it."""
        if self.x0 < siz.XOsiz or self.y0 < siz.YOsiz or self.x1 > siz.Xsiz or self.y1 > siz.Ysiz:
            raise ValueError(f"decode area ({self.x0}, {self.y0}, {self.x1}, {self.y1}) reaches outside the image "
                             f"({siz.XOsiz}, {siz.YOsiz}, {siz.Xsiz}, {siz.Ysiz}) on the reference grid")


def tiles_meeting(siz: SIZ, area: Area) -> list[int]:
    """The tiles whose rectangle (B-7) meets ``area``, in index order: found from the tile
    grid in time of their number, not of the image's."""
    def span(a0, a1, origin, size, count):
        return range(max(0, (a0 - origin) // size), min(count, (a1 - 1 - origin) // size + 1))

    across = span(area.x0, area.x1, siz.XTOsiz, siz.XTsiz, siz.num_tiles_x)
    down = span(area.y0, area.y1, siz.YTOsiz, siz.YTsiz, siz.num_tiles_y)
    return [q * siz.num_tiles_x + p for q in down for p in across]


def tile_area(siz: SIZ, t: int) -> Area:
    """Tile ``t``'s rectangle on the reference grid (B-7), within the image: what
    ``opj_decompress -t`` decodes. ValueError for a tile the grid does not have."""
    if not 0 <= t < siz.num_tiles:
        raise ValueError(f"tile {t}: the image has tiles 0 to {siz.num_tiles - 1}")
    p, q = t % siz.num_tiles_x, t // siz.num_tiles_x
    return Area(max(siz.XTOsiz + p * siz.XTsiz, siz.XOsiz), max(siz.YTOsiz + q * siz.YTsiz, siz.YOsiz),
                min(siz.XTOsiz + (p + 1) * siz.XTsiz, siz.Xsiz), min(siz.YTOsiz + (q + 1) * siz.YTsiz, siz.Ysiz))


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
