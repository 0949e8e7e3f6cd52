"""The DCI profile check and summary of a JPEG 2000 frame that ``cinegpu info`` reports.

A :class:`Profile` is a view of the codec's own parse of the codestream
(:func:`cinegpu.decode.codestream.header.parse_codestream`, ISO/IEC 15444-1 A.4-A.6; the
JP2 box walk of :mod:`cinegpu.decode.jp2.boxes` for JP2 files): it adds the terms ``info``
reports in and :meth:`Profile.dci_problems`, the check against the DCI 2K and 4K profiles
(ISO 15444-1 Amd 1, SMPTE Bv2.1 as libdcp verifies them; the facts are those of
:mod:`cinegpu.decode.codestream.dci`).
Every decode error becomes a :class:`MediaError` naming the file and the byte offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from cinegpu.decode.codestream import dci
from cinegpu.decode.codestream import markers as M
from cinegpu.decode.codestream.cod import PROGRESSIONS
from cinegpu.decode.codestream.header import Codestream, parse_codestream
from cinegpu.decode.codestream.reader import SegmentReader, read_u16
from cinegpu.decode.codestream.siz import RSIZ_HTJ2K, parse_siz
from cinegpu.decode.errors import CodestreamError
from cinegpu.decode.jp2.boxes import is_jp2, top_boxes

from cinegpu.media.errors import CorruptMedia, UnsupportedMedia, media_error_of

__all__ = ["Profile", "codestream_of", "image_size", "parse_profile", "profile_of"]


@dataclass(frozen=True)
class Profile:
    """What a codestream's main header says, in the spec's terms (a view of ``codestream``)."""

    codestream: Codestream

    # -- SIZ (A.5.1)
    @property
    def Rsiz(self) -> int:
        return self.codestream.siz.Rsiz

    @property
    def Xsiz(self) -> int:
        return self.codestream.siz.Xsiz

    @property
    def Ysiz(self) -> int:
        return self.codestream.siz.Ysiz

    @property
    def XOsiz(self) -> int:
        return self.codestream.siz.XOsiz

    @property
    def YOsiz(self) -> int:
        return self.codestream.siz.YOsiz

    @property
    def XTsiz(self) -> int:
        return self.codestream.siz.XTsiz

    @property
    def YTsiz(self) -> int:
        return self.codestream.siz.YTsiz

    @property
    def XTOsiz(self) -> int:
        return self.codestream.siz.XTOsiz

    @property
    def YTOsiz(self) -> int:
        return self.codestream.siz.YTOsiz

    @property
    def components(self) -> list[tuple[int, bool, int, int]]:
        """(bit depth, signed, XRsiz, YRsiz) per component."""
        s = self.codestream.siz
        return [(s.precision(c), s.signed(c), s.XRsiz[c], s.YRsiz[c]) for c in range(s.Csiz)]

    @property
    def width(self) -> int:
        return self.Xsiz - self.XOsiz

    @property
    def height(self) -> int:
        return self.Ysiz - self.YOsiz

    # -- the main header's COD (A.6.1) and QCD (A.6.4)
    @property
    def progression(self) -> str:
        return self._cod.progression_name

    @property
    def layers(self) -> int:
        return self._cod.layers

    @property
    def mct(self) -> int:
        return self._cod.mct

    @property
    def levels(self) -> int:
        return self._cod.spcod.levels

    @property
    def codeblock(self) -> tuple[int, int]:
        """Code-block width, height in samples."""
        sp = self._cod.spcod
        return 1 << sp.xcb, 1 << sp.ycb

    @property
    def reversible(self) -> bool:
        return self._cod.spcod.reversible

    @property
    def precincts(self) -> list[tuple[int, int]]:
        """Precinct width, height in samples per resolution, lowest first."""
        return [(1 << px, 1 << py) for px, py in self._cod.spcod.precincts]

    @property
    def guard_bits(self) -> int:
        assert self.codestream.main.qcd is not None
        return self.codestream.main.qcd.guard_bits

    @property
    def _cod(self):
        return self.codestream.cod(None)

    # -- markers and tile-parts (A.4)
    @property
    def markers(self) -> list[str]:
        """Names of the main header's markers, SOC first, up to the first SOT."""
        return [M.name(code) for code, _, _ in self.codestream.main_markers]

    @property
    def tile_parts(self) -> int:
        return self.codestream.tile_part_count

    @property
    def tiles(self) -> int:
        """Distinct tiles with at least one tile-part."""
        return len(self.codestream.tiles)

    @property
    def tlm(self) -> bool:
        return bool(self.codestream.main.tlm)

    @property
    def htj2k(self) -> bool:
        """Part 15 (HTJ2K): Rsiz bit 14 or a CAP marker."""
        return bool(self.Rsiz & RSIZ_HTJ2K) or self.codestream.main.cap is not None

    def summary(self) -> str:
        depth = "/".join(str(c[0]) for c in self.components)
        cb = f"{self.codeblock[0]}x{self.codeblock[1]}"
        wavelet = "5/3 reversible" if self.reversible else "9/7 irreversible"
        return (f"Rsiz 0x{self.Rsiz:04x}, {self.width}x{self.height}, {len(self.components)} "
                f"components of {depth} bits, {self.levels} levels, code-blocks {cb}, "
                f"{self.progression}, {self.layers} layer(s), {wavelet}, MCT {self.mct}, "
                f"{self.tiles} tile(s) in {self.tile_parts} tile-part(s), "
                f"TLM {'present' if self.tlm else 'absent'}"
                + (", HTJ2K (Part 15)" if self.htj2k else ""))

    def dci_problems(self) -> tuple[str, list[str]]:
        """(profile name, list of deviations) against the DCI 2K or 4K profile
        (:mod:`cinegpu.decode.codestream.dci`)."""
        want = dci.profile_for(self.width, self.Rsiz)
        p: list[str] = []
        if self.Rsiz != want.Rsiz:
            p.append(f"Rsiz 0x{self.Rsiz:04x} (want {want.Rsiz})")
        if (self.width, self.height) not in dict(want.image_areas).values():
            p.append(f"size {self.width}x{self.height} is not a {want.title} container")
        if (self.XOsiz, self.YOsiz, self.XTOsiz, self.YTOsiz) != (0, 0, 0, 0) or \
                self.XTsiz < self.Xsiz or self.YTsiz < self.Ysiz:
            p.append("not one tile at origin (0,0)")
        if len(self.components) != dci.COMPONENTS or \
                any(c[:2] != (dci.PRECISION, False) for c in self.components):
            p.append("not 3 unsigned 12-bit components")
        if self.reversible or self.mct != dci.MCT:
            p.append("not 9/7 irreversible with ICT")
        if self.levels != want.levels:
            p.append(f"{self.levels} decomposition levels (Bv2.1 wants {want.levels})")
        if self.codeblock != tuple(1 << e for e in dci.CODEBLOCK):
            p.append(f"code-blocks {self.codeblock[0]}x{self.codeblock[1]} (want 32x32)")
        low, rest = (1 << e for e in dci.PRECINCTS)
        if self.precincts != [(low, low)] + [(rest, rest)] * self.levels:
            p.append("precincts not 128x128 (lowest resolution) and 256x256 elsewhere")
        if self.progression != PROGRESSIONS[dci.PROGRESSION]:
            p.append(f"progression {self.progression} (want CPRL)")
        if want.pocs and "POC" not in self.markers:
            p.append("no POC marker in the main header (4K wants one)")
        if self.tile_parts != want.tile_parts:
            p.append(f"{self.tile_parts} tile-parts (want {want.tile_parts})")
        if not self.tlm:
            p.append("no TLM marker")
        if self.guard_bits != want.guard_bits:
            p.append(f"{self.guard_bits} guard bits (want {want.guard_bits})")
        if self.htj2k:
            p.append("HTJ2K (Part 15) is not part of the DCI profile")
        return want.title, p


def codestream_of(data, path=None) -> tuple[memoryview, int]:
    """(codestream, its byte offset in ``data``): ``data`` itself when it starts with SOC, or a
    JP2 file's first Contiguous Codestream box (T.800 I.5.4); MediaError otherwise."""
    view = memoryview(data)
    if bytes(view[:2]) == b"\xff\x4f":
        return view, 0
    if is_jp2(data):
        try:
            top = top_boxes(data)  # tolerant as decode() is (LenientWarning)
        except CodestreamError as exc:
            raise media_error_of(exc)(path, exc.what, exc.offset) from None
        for box in top:
            if box.type == b"jp2c":
                return view[box.start:box.end], box.start
        raise UnsupportedMedia(path, "JP2 file without a contiguous codestream box", len(data))
    raise CorruptMedia(path, f"not a JPEG 2000 codestream (starts {bytes(view[:4]).hex()})", 0)


def image_size(head, path=None) -> tuple[int, int]:
    """(width, height) of the image area (Xsiz - XOsiz, Ysiz - YOsiz, A.5.1) from the first
    bytes of a codestream or JP2 file (``head``: enough to hold the SIZ segment, which follows
    SOC), read by the codec's SIZ parser; MediaError where they do not hold it."""
    view = memoryview(head)
    start = 0
    if bytes(view[:2]) != b"\xff\x4f":
        at = bytes(view).find(b"\xff\x4f\xff\x51")      # a JP2 file's codestream box
        if at < 0:
            raise CorruptMedia(path, "no SOC and SIZ markers in the first "
                                     f"{len(view)} bytes", 0)
        start = at
    try:
        if read_u16(view, start + 2, "the SIZ marker") != M.SIZ:
            raise CorruptMedia(path, "the SIZ segment does not follow SOC (A.5.1)", start + 2)
        length = read_u16(view, start + 4, "Lsiz")
        siz = parse_siz(SegmentReader(view, start + 6, start + 4 + length, "SIZ"))
    except CodestreamError as exc:
        raise media_error_of(exc)(path, exc.what, exc.offset) from None
    return siz.Xsiz - siz.XOsiz, siz.Ysiz - siz.YOsiz


def parse_profile(data, path=None) -> Profile:
    """The profile of ``data`` (a codestream or a JP2 file), parsed by the codec's parser in
    strict mode, every tile-part header included; MediaError where it fails."""
    cs, base = codestream_of(data, path)
    try:
        parsed = parse_codestream(cs)
    except CodestreamError as exc:
        raise media_error_of(exc)(path, exc.what,
                                  None if exc.offset is None else base + exc.offset) from None
    return profile_of(parsed, path, base)


def profile_of(cs: Codestream, path=None, base: int = 0) -> Profile:
    """The profile of a codestream already parsed (with its tile-parts). A frame must end with
    EOC (A.3) unless its last tile-part runs to the end (Psot 0, A.4.2); MediaError otherwise.
    ``base``: the codestream's byte offset in its file, for the message."""
    if cs.main_only:
        raise ValueError("profile_of needs the tile-parts: parse without main_only")
    last = cs.markers[-1]
    if last[0] != M.EOC:
        parts = [tp for t in cs.tiles.values() for tp in t.parts]
        if not parts or max(parts, key=lambda tp: tp.offset).sot.Psot != 0:
            raise CorruptMedia(path, "codestream ends without EOC", base + len(cs.data))
    return Profile(cs)
