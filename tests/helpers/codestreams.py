"""Codestreams packed byte by byte with ``struct`` (T.800 Annex A), for the tests of the readers'
checks: the smallest valid stream (an 8 x 8, one-component, 8-bit image, one tile, no
decomposition levels, one empty packet, :func:`stream` with no arguments) and its marker
segments, each builder taking the field a test changes; the offsets of the default stream's
segments; and hostile but legal streams (:func:`empty_image`) for the decoder's limits.
"""

from __future__ import annotations

import struct

SOC, EOC, SOD = b"\xff\x4f", b"\xff\xd9", b"\xff\x93"


def seg(code: int, body: bytes) -> bytes:
    """A marker segment: marker, Lxxx (counting itself), body."""
    return struct.pack(">HH", code, len(body) + 2) + body


def siz(w=8, h=8, comps=((7, 1, 1),), tw=None, th=None, xo=0, yo=0, xto=0, yto=0, rsiz=0, csiz=None) -> bytes:
    body = struct.pack(">HIIIIIIIIH", rsiz, w, h, xo, yo, w if tw is None else tw, h if th is None else th, xto, yto,
                       len(comps) if csiz is None else csiz)
    body += b"".join(struct.pack(">BBB", *c) for c in comps)
    return seg(0xFF51, body)


def cod(scod=0, prog=0, layers=1, mct=0, levels=0, xcb=4, ycb=4, style=0, transform=1, precincts=b"") -> bytes:
    return seg(0xFF52, struct.pack(">BBHBBBBBB", scod, prog, layers, mct, levels, xcb, ycb, style, transform)
               + precincts)


def qcd(levels=0, guard=2, style=0, exponent=8) -> bytes:
    if style == 0:
        return seg(0xFF5C, bytes([guard << 5 | style]) + bytes([exponent << 3] * (3 * levels + 1)))
    return seg(0xFF5C, bytes([guard << 5 | style]) + struct.pack(">H", exponent << 11))


def sot(isot=0, psot=None, tpsot=0, tnsot=1, body=b"\x00") -> bytes:
    psot = 12 + 2 + len(body) if psot is None else psot
    return seg(0xFF90, struct.pack(">HIBB", isot, psot, tpsot, tnsot))


def tile_part(isot=0, tpsot=0, tnsot=1, body=b"\x00", header=b"", psot=None) -> bytes:
    psot = 12 + len(header) + 2 + len(body) if psot is None else psot
    return seg(0xFF90, struct.pack(">HIBB", isot, psot, tpsot, tnsot)) + header + SOD + body


def stream(main: bytes | None = None, tiles: bytes | None = None, *, size: bytes | None = None) -> bytes:
    """SOC, SIZ, main header (default COD + QCD), tile-parts, EOC."""
    main = cod() + qcd() if main is None else main
    tiles = tile_part() if tiles is None else tiles
    return SOC + (siz() if size is None else size) + main + tiles + EOC


# Offsets in the default stream: SIZ at 2 (Lsiz 4, Rsiz 6, Xsiz 8 ... Csiz 40, Ssiz 42),
# COD at 45 (Scod 49, SGcod 50-53, SPcod 54-58), QCD at 59, first SOT at 59 + 2 + 2 + 2 = 65.
SIZ_AT, COD_AT, QCD_AT = 2, 45, 59
SOT_AT = QCD_AT + len(qcd())


def empty_image(n: int, *, levels: int = 0, precincts: bytes = b"", layers: int = 1, xcb: int = 4,
                ycb: int = 4, body: bytes = b"\x00") -> bytes:
    """An n x n 8-bit grey image whose only packet is empty (one 0 bit): legal, all mid-grey (128)."""
    scod = 1 if precincts else 0
    main = cod(scod=scod, layers=layers, levels=levels, xcb=xcb, ycb=ycb, precincts=precincts) + qcd(levels=levels)
    return stream(main=main, tiles=tile_part(body=body), size=siz(w=n, h=n))


def one_by_one_precincts(n: int) -> bytes:
    return empty_image(n, precincts=b"\x00")  # PPx = PPy = 0 at resolution 0 (A.6.1)


def main_qcd(data: bytes) -> tuple[int, int]:
    """(offset of the main header's QCD marker, its Lqcd)."""
    at = data.index(b"\xff\x5c")
    return at, struct.unpack_from(">H", data, at + 2)[0]


def lower_exponents(data: bytes, by: int) -> bytes:
    """Every QCD exponent lowered by ``by``: each band's Mb (E-2) drops, the coded blocks keep
    their passes and zero bit-planes."""
    at, length = main_qcd(data)
    out = bytearray(data)
    style = out[at + 4] & 0x1F
    if style == 0:
        for i in range(at + 5, at + 2 + length):
            out[i] = ((out[i] >> 3) - by) << 3 | (out[i] & 7)
    else:
        for i in range(at + 5, at + 2 + length, 2):
            v = struct.unpack_from(">H", out, i)[0]
            struct.pack_into(">H", out, i, (((v >> 11) - by) << 11) | (v & 0x7FF))
    return bytes(out)
