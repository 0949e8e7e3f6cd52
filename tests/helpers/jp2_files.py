"""Hand-built JP2 files for the tests (T.800 Annex I): signature, ftyp, jp2h, jp2c, and whatever
else a test puts around them. Codestreams come from cinegpu's own encoder (lossless 5/3)."""

from __future__ import annotations

import struct

import numpy as np


def box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", 8 + len(body)) + kind + body


SIGNATURE = box(b"jP  ", b"\r\n\x87\n")
FTYP = box(b"ftyp", b"jp2 " + struct.pack(">I", 0) + b"jp2 ")


def ihdr(h: int, w: int, nc: int, bpc: int = 7) -> bytes:
    """bpc: bits - 1 (7 for 8-bit unsigned); 255: the components differ (then a bpcc box)."""
    return box(b"ihdr", struct.pack(">IIHBBBB", h, w, nc, bpc, 7, 0, 0))


def colr(enumcs: int | None = None, icc: bytes | None = None, extra: bytes = b"") -> bytes:
    if icc is not None:
        return box(b"colr", b"\x02\x00\x00" + icc)
    return box(b"colr", b"\x01\x00\x00" + struct.pack(">I", enumcs) + extra)


def cdef(*entries: tuple[int, int, int]) -> bytes:
    """(channel, type, association) each."""
    return box(b"cdef", struct.pack(">H", len(entries)) + b"".join(struct.pack(">HHH", *e) for e in entries))


def pclr(table: np.ndarray, bits: int = 8) -> bytes:
    """A palette of ``table`` (entries, columns) unsigned ``bits``-bit values (<= 8)."""
    ne, npc = table.shape
    return box(b"pclr", struct.pack(">HB", ne, npc) + bytes([bits - 1] * npc) + table.astype(np.uint8).tobytes())


def cmap(*entries: tuple[int, int, int]) -> bytes:
    """(component, mtyp, palette column) each."""
    return box(b"cmap", b"".join(struct.pack(">HBB", *e) for e in entries))


def jp2(codestream: bytes, header: bytes, *, before: bytes = b"", after: bytes = b"") -> bytes:
    """signature, ftyp, ``before``, jp2h(``header``), jp2c(``codestream``), ``after``."""
    return SIGNATURE + FTYP + before + box(b"jp2h", header) + box(b"jp2c", codestream) + after


def planes(shapes, seed: int = 1, top: int = 255) -> list[np.ndarray]:
    """Smooth gradients with noise, one per (h, w) shape, 0..top."""
    rng = np.random.default_rng(seed)
    out = []
    for k, (h, w) in enumerate(shapes):
        y, x = np.mgrid[0:h, 0:w]
        f = (x * (k + 1) * 7 + y * (5 - k) * 3) % (top + 1)
        out.append(np.clip(f + rng.integers(-9, 10, (h, w)), 0, top).astype(np.uint8 if top < 256 else np.uint16))
    return out


def codestream(components: list[np.ndarray], bits: int | None = None) -> bytes:
    """A lossless codestream of ``components`` (any sizes: subsampled ones allowed)."""
    from cinegpu.encode import encode

    return encode(components, reversible=True, backend="cpu", workers=0, bits=bits)
