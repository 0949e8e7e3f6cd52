"""SIZ, image and tile size (T.800 A.5.1), and CAP (Part 15 A.5.2)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidSegment, UnsupportedFeature
from .reader import SegmentReader

#: Rsiz bit 14: the codestream uses HTJ2K block coding (ISO/IEC 15444-15).
RSIZ_HTJ2K = 0x4000
#: Largest supported sample precision, bits (A.5.1 allows 38): OpenJPEG's limit, the most a
#: component returned as int32 holds (unsigned). A subband whose magnitude bit-planes would not
#: fit tier-1's 32-bit values is refused when the tile is planned (plan.py).
MAX_PRECISION = 31
#: Largest supported image side, samples (guards against absurd allocations).
MAX_SIDE = 1 << 17


@dataclass(frozen=True)
class SIZ:
    """Image and tile geometry on the reference grid, in samples."""

    Rsiz: int
    Xsiz: int
    Ysiz: int
    XOsiz: int
    YOsiz: int
    XTsiz: int
    YTsiz: int
    XTOsiz: int
    YTOsiz: int
    Ssiz: tuple[int, ...]
    XRsiz: tuple[int, ...]
    YRsiz: tuple[int, ...]

    @property
    def Csiz(self) -> int:
        return len(self.Ssiz)

    def precision(self, c: int) -> int:
        """Bit depth of component ``c`` (Ssiz low 7 bits + 1)."""
        return (self.Ssiz[c] & 0x7F) + 1

    def signed(self, c: int) -> bool:
        return bool(self.Ssiz[c] & 0x80)

    @property
    def num_tiles_x(self) -> int:
        return -(-(self.Xsiz - self.XTOsiz) // self.XTsiz)

    @property
    def num_tiles_y(self) -> int:
        return -(-(self.Ysiz - self.YTOsiz) // self.YTsiz)

    @property
    def num_tiles(self) -> int:
        return self.num_tiles_x * self.num_tiles_y

    def component_sizes(self, reduce: int = 0) -> tuple[tuple[int, int], ...]:
        """:meth:`component_size` of every component, worked out once per ``reduce`` (kept on
        the instance: a frame with hundreds of components asks for them several times)."""
        memo = self.__dict__.setdefault("_sizes_memo", {})   # not a field: eq/hash ignore it
        sizes = memo.get(reduce)
        if sizes is None:
            # B-2, in plain ints (a few components cost less than numpy's calls would)
            X, Y, XO, YO = self.Xsiz, self.Ysiz, self.XOsiz, self.YOsiz
            sizes = memo[reduce] = tuple((-(-X // (xr << reduce)) + (-XO // (xr << reduce)),
                                          -(-Y // (yr << reduce)) + (-YO // (yr << reduce)))
                                         for xr, yr in zip(self.XRsiz, self.YRsiz))
        return sizes

    def component_origins(self, reduce: int = 0) -> tuple[tuple[int, int], ...]:
        """(y, x) of every component's first sample on its own grid at ``reduce`` levels down
        (B-2: ceil(YOsiz / (YRsiz 2^reduce)), ceil(XOsiz / (XRsiz 2^reduce))), memoised as
        :meth:`component_sizes`."""
        memo = self.__dict__.setdefault("_origins_memo", {})
        found = memo.get(reduce)
        if found is None:
            XO, YO = self.XOsiz, self.YOsiz
            found = memo[reduce] = tuple((-(-YO // (yr << reduce)), -(-XO // (xr << reduce)))
                                         for xr, yr in zip(self.XRsiz, self.YRsiz))
        return found

    def component_size(self, c: int, reduce: int = 0) -> tuple[int, int]:
        """(width, height) of component ``c`` at ``reduce`` levels down (B-2)."""
        sx = self.XRsiz[c] << reduce
        sy = self.YRsiz[c] << reduce
        w = -(-self.Xsiz // sx) - -(-self.XOsiz // sx)
        h = -(-self.Ysiz // sy) - -(-self.YOsiz // sy)
        return w, h


def parse_siz(r: SegmentReader) -> SIZ:
    """Parse and check a SIZ segment body (after Lsiz)."""
    at = r.pos
    Rsiz = r.u16()
    Xsiz, Ysiz, XOsiz, YOsiz = r.u32(), r.u32(), r.u32(), r.u32()
    XTsiz, YTsiz, XTOsiz, YTOsiz = r.u32(), r.u32(), r.u32(), r.u32()
    Csiz = r.u16()
    if not 1 <= Csiz <= 16384:
        raise InvalidSegment(f"SIZ: Csiz {Csiz} outside 1..16384", at + 34)
    if r.remaining != 3 * Csiz:
        raise InvalidSegment(f"SIZ: Lsiz does not match Csiz {Csiz}", at + 34)
    comps = r.raw(3 * Csiz)   # Ssiz, XRsiz, YRsiz of each component
    siz = SIZ(Rsiz, Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz, XTOsiz, YTOsiz,
              tuple(comps[0::3]), tuple(comps[1::3]), tuple(comps[2::3]))
    _check(siz, at)
    return siz


def _check(s: SIZ, at: int) -> None:
    if not (s.XOsiz < s.Xsiz and s.YOsiz < s.Ysiz):
        raise InvalidSegment("SIZ: image offset not inside the reference grid", at)
    if s.XTsiz == 0 or s.YTsiz == 0:
        raise InvalidSegment("SIZ: tile size of zero", at)
    if not (s.XTOsiz <= s.XOsiz and s.YTOsiz <= s.YOsiz):
        raise InvalidSegment("SIZ: tile offset beyond image offset", at)
    if not (s.XTOsiz + s.XTsiz > s.XOsiz and s.YTOsiz + s.YTsiz > s.YOsiz):
        raise InvalidSegment("SIZ: first tile does not cover the image offset", at)
    if s.Xsiz - s.XOsiz > MAX_SIDE or s.Ysiz - s.YOsiz > MAX_SIDE:
        raise UnsupportedFeature(f"SIZ: image larger than {MAX_SIDE} samples a side", at)
    if s.num_tiles > 65535:
        raise InvalidSegment(f"SIZ: {s.num_tiles} tiles, more than Isot can index", at)
    if min(s.XRsiz) and min(s.YRsiz) and max(v & 0x7F for v in s.Ssiz) < MAX_PRECISION:
        return   # every component as supported (looked at one by one below only when one is not)
    for c in range(s.Csiz):
        if s.XRsiz[c] == 0 or s.YRsiz[c] == 0:
            raise InvalidSegment(f"SIZ: component {c} has a subsampling factor of 0", at)
        if s.Ssiz[c] & 0x7F >= 38:
            raise InvalidSegment(f"SIZ: component {c} precision above 38 bits", at)
        if s.precision(c) > MAX_PRECISION:
            raise UnsupportedFeature(
                f"SIZ: component {c} has {s.precision(c)} bits; up to {MAX_PRECISION} are supported", at
            )


#: Pcap bit of Part 15 (bits count from the most significant, Pcap^15 = 1 << (32 - 15)).
PCAP_PART15 = 1 << (32 - 15)


@dataclass(frozen=True)
class CAP:
    """Extended capabilities: Pcap and its Ccap words (15444-1 A.5.2, T.814 A.3)."""

    Pcap: int
    Ccap: tuple[int, ...]

    @property
    def ccap15(self) -> int | None:
        """The Part-15 word (T.814 Table A.3), or None: Ccap words follow Pcap's set bits from
        the most significant one."""
        if not self.Pcap & PCAP_PART15:
            return None
        return self.Ccap[bin(self.Pcap >> (32 - 15)).count("1") - 1]

    @property
    def ht_mixed(self) -> bool:
        """Ccap15 bits 14-15 = 3: HT and EBCOT code-blocks may be mixed."""
        c = self.ccap15
        return c is not None and (c >> 14) == 3


def parse_cap(r: SegmentReader) -> CAP:
    at = r.pos
    pcap = r.u32()
    n = bin(pcap).count("1")
    if r.remaining != 2 * n:
        raise InvalidSegment("CAP: Lcap does not match the bits set in Pcap", at)
    return CAP(pcap, tuple(r.u16() for _ in range(n)))
