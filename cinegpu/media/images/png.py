"""A PNG writer and a 16-bit PNG reader (ISO/IEC 15948: IHDR, sBIT, IDAT, IEND).

Pillow reads and writes 16-bit PNG only for grey, so decoded pictures and screenshots use
this: grey, grey+alpha, RGB or RGBA at bit depth 8 or 16, no interlace; rows written with
filter 0; the reader (for tests and screenshots) undoes all five filters of 15948 clause 9.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

__all__ = ["read_png16", "write_png", "write_png16"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_png(path, pixels: np.ndarray, *, significant_bits: int | None = None,
              level: int = 6) -> None:
    """Write ``pixels`` as a PNG (ISO/IEC 15948): (H, W) or (H, W, C) with C of 1-4 (grey,
    grey+alpha, RGB, RGBA), uint8 (bit depth 8) or uint16 (bit depth 16), any strides.

    ``significant_bits`` (1 to the bit depth) is written as an sBIT chunk (clause 11.3.3.4),
    telling viewers how many of each sample's high bits carry the picture.
    Rows are filtered, compressed and written about a megabyte at a time, one IDAT chunk
    each, so the writer holds little memory and, in a thread, seldom holds the GIL for
    long (zlib and the file writes release it): a 4K screenshot saved during playback
    does not stall the draw loop."""
    pixels = np.asarray(pixels)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or not 1 <= pixels.shape[2] <= 4 or pixels.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"want uint8 or uint16 (H, W[, 1-4]), got {pixels.dtype} {pixels.shape}")
    h, w, channels = pixels.shape
    depth = 8 * pixels.dtype.itemsize
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    stride = w * channels * pixels.dtype.itemsize    # bytes of one row's samples
    rows = max(1, (1 << 20) // (stride + 1))
    samples = np.empty((rows, w, channels), ">u2" if depth == 16 else np.uint8)
    raw = np.zeros((rows, 1 + stride), np.uint8)    # column 0: filter type 0 (None)
    deflate = zlib.compressobj(level)
    with open(path, "wb") as f:
        f.write(_SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0)))
        if significant_bits is not None:
            if not 1 <= significant_bits <= depth:
                raise ValueError(f"significant bits {significant_bits} not in 1..{depth}")
            f.write(_chunk(b"sBIT", bytes([significant_bits]) * channels))
        for y in range(0, h, rows):
            k = min(rows, h - y)
            samples[:k] = pixels[y:y + k]
            raw[:k, 1:] = samples[:k].reshape(k, -1).view(np.uint8)
            data = deflate.compress(raw[:k])
            if data:
                f.write(_chunk(b"IDAT", data))
        f.write(_chunk(b"IDAT", deflate.flush()) + _chunk(b"IEND", b""))


def write_png16(path, pixels: np.ndarray, *, alpha: bool = False, level: int = 6) -> None:
    """Write (H, W, 3 or 4) uint16 ``pixels`` (any strides) as a 16-bit RGB PNG (RGBA with
    ``alpha``; a fourth channel is dropped without it): a player screenshot."""
    pixels = np.asarray(pixels)
    if pixels.ndim != 3 or pixels.shape[2] not in (3, 4) or pixels.dtype != np.uint16:
        raise ValueError(f"want uint16 (H, W, 3|4), got {pixels.dtype} {pixels.shape}")
    write_png(path, pixels[:, :, :4 if alpha else 3], level=level)


def _unfilter(data: np.ndarray, h: int, stride: int, bpp: int) -> np.ndarray:
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    pos = 0
    for y in range(h):
        kind, line = data[pos], data[pos + 1:pos + 1 + stride].astype(np.int32)
        pos += 1 + stride
        if kind == 2:
            line = (line + prev) & 0xFF
        elif kind in (1, 3, 4):
            cur = line.copy()
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                if kind == 1:
                    p = a
                elif kind == 3:
                    p = (a + b) >> 1
                else:
                    c = prev[x - bpp] if x >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (cur[x] + p) & 0xFF
            line = cur
        elif kind != 0:
            raise ValueError(f"PNG row {y}: unknown filter {kind}")
        out[y] = line
        prev = line
    return out


def read_png16(path) -> np.ndarray:
    """Read a 16-bit RGB/RGBA PNG: (H, W, 3 or 4) uint16."""
    data = Path(path).read_bytes()
    if data[:8] != _SIGNATURE:
        raise ValueError(f"{path}: not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    if ihdr is None:
        raise ValueError(f"{path}: no IHDR")
    w, h, depth, colour, _, _, interlace = ihdr
    if depth != 16 or colour not in (2, 6) or interlace:
        raise ValueError(f"{path}: only 16-bit RGB/RGBA non-interlaced PNG (got depth {depth} type {colour})")
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8)
    rows = _unfilter(raw, h, w * channels * 2, channels * 2)
    return rows.view(">u2").reshape(h, w, channels).astype(np.uint16)
