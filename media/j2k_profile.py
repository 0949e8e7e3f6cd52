"""The little of a JPEG 2000 main header that ``cinegpu info`` reports (ISO/IEC 15444-1 A.5, A.6).

Only SIZ (A.5.1), COD (A.6.1), QCD's guard bits (A.6.4) and the list of markers up to the first
SOT are parsed, plus the SOT chain to count tile-parts (A.4.2, each jump by Psot). This is
deliberately independent of ``cinegpu.decode``; it checks the DCI 2K / 4K profiles (Rsiz 3 / 4,
ISO/IEC 15444-1 Amd 1; SMPTE Bv2.1 as libdcp verifies them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .errors import MediaError

SOC, SOT, EOC = 0xFF4F, 0xFF90, 0xFFD9
MARKER_NAMES = {
    0xFF4F: "SOC", 0xFF51: "SIZ", 0xFF52: "COD", 0xFF53: "COC", 0xFF5C: "QCD", 0xFF5D: "QCC",
    0xFF5E: "RGN", 0xFF5F: "POC", 0xFF55: "TLM", 0xFF57: "PLM", 0xFF60: "PPM", 0xFF63: "CRG",
    0xFF64: "COM", 0xFF50: "CAP", 0xFF59: "CPF", 0xFF90: "SOT",
}
PROGRESSIONS = ("LRCP", "RLCP", "RPCL", "PCRL", "CPRL")
DCI_SIZES = {2: {(2048, 1080), (1998, 1080), (2048, 858)},
             4: {(4096, 2160), (3996, 2160), (4096, 1716)}}
MAX_TILE_PARTS = 1 << 16


@dataclass(frozen=True)
class Profile:
    """What the main header says, in the spec's terms."""

    Rsiz: int
    Xsiz: int
    Ysiz: int
    XOsiz: int
    YOsiz: int
    XTsiz: int
    YTsiz: int
    XTOsiz: int
    YTOsiz: int
    components: list[tuple[int, bool, int, int]]   # (bit depth, signed, XRsiz, YRsiz)
    progression: str
    layers: int
    mct: int
    levels: int
    codeblock: tuple[int, int]                      # width, height in samples
    reversible: bool
    precincts: list[tuple[int, int]]                # per resolution, lowest first
    guard_bits: int | None
    markers: list[str] = field(default_factory=list)
    tile_parts: int = 0
    tiles: int = 0

    @property
    def width(self) -> int:
        return self.Xsiz - self.XOsiz

    @property
    def height(self) -> int:
        return self.Ysiz - self.YOsiz

    @property
    def tlm(self) -> bool:
        return "TLM" in self.markers

    @property
    def htj2k(self) -> bool:
        """Part 15 (HTJ2K): Rsiz bit 14 or a CAP marker."""
        return bool(self.Rsiz & 0x4000) or "CAP" in self.markers

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
        """(profile name, list of deviations) against the DCI 2K or 4K profile."""
        kind = 4 if self.Rsiz == 4 or self.width > 2048 else 2
        p: list[str] = []
        if self.Rsiz != (3 if kind == 2 else 4):
            p.append(f"Rsiz 0x{self.Rsiz:04x} (want {3 if kind == 2 else 4})")
        if (self.width, self.height) not in DCI_SIZES[kind]:
            p.append(f"size {self.width}x{self.height} is not a DCI {kind}K container")
        if (self.XOsiz, self.YOsiz, self.XTOsiz, self.YTOsiz) != (0, 0, 0, 0) or \
                self.XTsiz < self.Xsiz or self.YTsiz < self.Ysiz:
            p.append("not one tile at origin (0,0)")
        if len(self.components) != 3 or any(c[:2] != (12, False) for c in self.components):
            p.append("not 3 unsigned 12-bit components")
        if self.reversible or self.mct != 1:
            p.append("not 9/7 irreversible with ICT")
        want_levels = 5 if kind == 2 else 6
        if self.levels != want_levels:
            p.append(f"{self.levels} decomposition levels (Bv2.1 wants {want_levels})")
        if self.codeblock != (32, 32):
            p.append(f"code-blocks {self.codeblock[0]}x{self.codeblock[1]} (want 32x32)")
        want_prec = [(128, 128)] + [(256, 256)] * self.levels
        if self.precincts != want_prec:
            p.append("precincts not 128x128 (lowest resolution) and 256x256 elsewhere")
        if self.progression != "CPRL":
            p.append(f"progression {self.progression} (want CPRL)")
        if kind == 4 and "POC" not in self.markers:
            p.append("no POC marker in the main header (4K wants one)")
        want_parts = 3 if kind == 2 else 6
        if self.tile_parts != want_parts:
            p.append(f"{self.tile_parts} tile-parts (want {want_parts})")
        if not self.tlm:
            p.append("no TLM marker")
        if self.guard_bits is not None and self.guard_bits != (1 if kind == 2 else 2):
            p.append(f"{self.guard_bits} guard bits (want {1 if kind == 2 else 2})")
        if self.htj2k:
            p.append("HTJ2K (Part 15) is not part of the DCI profile")
        return f"DCI {kind}K", p


def _codestream(data: bytes, path) -> tuple[bytes, int]:
    """The codestream inside ``data``: itself, or a JP2 file's contiguous codestream box."""
    if data[:2] == b"\xff\x4f":
        return data, 0
    if data[4:8] == b"jP  ":
        pos = 0
        for _ in range(1000):
            if pos + 8 > len(data):
                break
            length, box = struct.unpack(">I4s", data[pos:pos + 8])
            head = 8
            if length == 1:
                if pos + 16 > len(data):
                    break
                length, head = struct.unpack(">Q", data[pos + 8:pos + 16])[0], 16
            elif length == 0:
                length = len(data) - pos
            if box == b"jp2c":
                return data[pos + head:pos + length], pos + head
            if length < head:
                break
            pos += length
        raise MediaError(path, "JP2 file without a contiguous codestream box", pos)
    raise MediaError(path, f"not a JPEG 2000 codestream (starts {data[:4].hex()})", 0)


def parse_profile(data: bytes, path=None) -> Profile:
    """Parse the main header of ``data`` (a codestream or a JP2 file)."""
    cs, base = _codestream(data, path)
    try:
        return _parse(cs, path, base)
    except (struct.error, IndexError) as exc:
        raise MediaError(path, f"malformed main header: {exc}", base) from None


def main_header_segments(cs: bytes, path=None, base: int = 0) -> tuple[list[tuple[str, bytes, int]], int]:
    """The marker segments of a codestream's main header, in order: (name, body, offset),
    and the offset of the first SOT. MediaError where the walk breaks off."""
    pos, out = 2, []
    while True:
        if pos + 4 > len(cs):
            raise MediaError(path, "main header ends before the first SOT", base + pos)
        marker, length = struct.unpack(">HH", cs[pos:pos + 4])
        if marker >> 8 != 0xFF or length < 2:
            raise MediaError(path, f"expected a marker segment, found 0x{marker:04x}", base + pos)
        name = MARKER_NAMES.get(marker, f"0x{marker:04X}")
        if marker == SOT:
            return out, pos
        seg = cs[pos + 4:pos + 2 + length]
        if len(seg) != length - 2:
            raise MediaError(path, f"{name} segment runs past the end", base + pos)
        out.append((name, seg, base + pos))
        pos += 2 + length


def _parse(cs: bytes, path, base: int) -> Profile:
    markers, siz, cod, guard = ["SOC"], None, None, None
    segments, sot = main_header_segments(cs, path, base)
    for name, seg, offset in segments:
        markers.append(name)
        if name == "SIZ":
            siz = _siz(seg, path, offset)
        elif name == "COD":
            cod = _cod(seg, path, offset)
        elif name == "QCD" and seg:
            guard = seg[0] >> 5
    if siz is None or cod is None:
        raise MediaError(path, "main header lacks SIZ or COD", base)
    tiles, parts = _count_tile_parts(cs, sot, path, base)
    return Profile(**siz, **cod, guard_bits=guard, markers=markers, tile_parts=parts, tiles=tiles)


def _siz(seg: bytes, path, offset: int) -> dict:
    if len(seg) < 36:
        raise MediaError(path, "SIZ segment too short", offset)
    rsiz, *geo = struct.unpack(">H8I", seg[:34])
    csiz = struct.unpack(">H", seg[34:36])[0]
    if csiz == 0 or len(seg) != 36 + 3 * csiz:
        raise MediaError(path, f"SIZ length does not match Csiz {csiz}", offset)
    comps = [((seg[36 + 3 * i] & 0x7F) + 1, bool(seg[36 + 3 * i] & 0x80), seg[37 + 3 * i],
              seg[38 + 3 * i]) for i in range(csiz)]
    names = ("Xsiz", "Ysiz", "XOsiz", "YOsiz", "XTsiz", "YTsiz", "XTOsiz", "YTOsiz")
    out = dict(zip(names, geo), Rsiz=rsiz, components=comps)
    if out["Xsiz"] <= out["XOsiz"] or out["Ysiz"] <= out["YOsiz"] or not out["XTsiz"] or not out["YTsiz"]:
        raise MediaError(path, "SIZ describes an empty image or tile", offset)
    return out


def _cod(seg: bytes, path, offset: int) -> dict:
    if len(seg) < 10:
        raise MediaError(path, "COD segment too short", offset)
    scod, prog, layers, mct, levels, xcb, ycb, _style, transform = struct.unpack(">BBHBBBBBB", seg[:10])
    if prog >= len(PROGRESSIONS) or levels > 32 or xcb > 8 or ycb > 8:
        raise MediaError(path, "COD values out of range", offset)
    if scod & 1:
        if len(seg) != 10 + levels + 1:
            raise MediaError(path, "COD precinct list does not match the levels", offset)
        prec = [(1 << (b & 0xF), 1 << (b >> 4)) for b in seg[10:]]
    else:
        prec = [(32768, 32768)] * (levels + 1)
    return dict(progression=PROGRESSIONS[prog], layers=layers, mct=mct, levels=levels,
                codeblock=(1 << (xcb + 2), 1 << (ycb + 2)), reversible=transform == 1,
                precincts=prec)


def _count_tile_parts(cs: bytes, pos: int, path, base: int) -> tuple[int, int]:
    """Follow the SOT chain by Psot (A.4.2); returns (distinct tiles, tile-parts)."""
    tiles, parts = set(), 0
    for _ in range(MAX_TILE_PARTS):
        if pos + 2 <= len(cs) and cs[pos:pos + 2] == b"\xff\xd9":
            return len(tiles), parts
        if pos + 12 > len(cs):
            raise MediaError(path, "codestream ends without EOC", base + pos)
        marker, lsot, isot, psot = struct.unpack(">HHHI", cs[pos:pos + 10])
        if marker != SOT or lsot != 10:
            raise MediaError(path, f"expected SOT, found 0x{marker:04x}", base + pos)
        tiles.add(isot)
        parts += 1
        if psot == 0:   # last tile-part runs to EOC
            return len(tiles), parts
        if psot < 14:
            raise MediaError(path, f"Psot {psot} too small", base + pos)
        pos += psot
    raise MediaError(path, "too many tile-parts", base + pos)
