"""Writing decoded images: TIFF, PNG and PGX.

``cinegpu decode`` writes TIFF or PNG when every component has the same size
and PGX (one file per component, ISO/IEC 15444-4's format) otherwise. TIFF and PNG
samples are 8 or 16 bit, scaled to the file's full range so that viewers show the picture
(a 12-bit 4095 becomes 65535; PNG records the 12 significant bits in sBIT); PGX keeps the
codestream's own values and precision.

Each file is written under a temporary name beside its own and renamed into place once
whole, so that an interrupted decode never leaves a partial image under an image's name.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import tifffile

from cinegpu.media.images import png


def _interleave(components: list[np.ndarray]) -> np.ndarray:
    shapes = {c.shape for c in components}
    if len(shapes) != 1:
        raise ValueError(f"components of different sizes {sorted(shapes)}: write PGX instead")
    if len(components) == 1:
        return components[0]
    return np.stack(components, axis=-1)


def file_depth(bits: list[int]) -> int:
    """Bit depth of a PNG or TIFF sample holding components of ``bits`` bits: 8 or 16."""
    return 8 if max(bits) <= 8 else 16


def to_file_range(component: np.ndarray, bits: int, signed: bool, depth: int) -> np.ndarray:
    """A component of ``bits``-bit samples scaled to the full range of a ``depth``-bit file
    sample (8 or 16), as viewers expect: ``v * (2**depth - 1) // (2**bits - 1)``, so 0 stays 0
    and the largest code becomes 255 or 65535 (what ``opj_decompress`` writes in PNG).
    Signed samples of at most ``depth`` bits are scaled as ``opj_decompress`` scales them, by
    ``2**(depth - bits)`` (-2**(bits - 1) to -2**(depth - 1)), then offset by ``2**(depth - 1)``;
    deeper ones are offset by ``2**(bits - 1)`` and scaled as unsigned ones."""
    a = component.astype(np.int64)
    if signed and bits <= depth:
        a = np.clip(a, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        return ((a << (depth - bits)) + (1 << (depth - 1))).astype(np.uint8 if depth == 8 else np.uint16)
    if signed:
        a = a + (1 << (bits - 1))
    top = (1 << bits) - 1
    a = np.clip(a, 0, top)
    if bits != depth:
        a = a * ((1 << depth) - 1) // top
    return a.astype(np.uint8 if depth == 8 else np.uint16)


def _samples(components: list[np.ndarray], bits: list[int], signed: list[bool]) -> tuple[np.ndarray, int]:
    depth = file_depth(bits)
    return _interleave([to_file_range(c, b, s, depth)
                        for c, b, s in zip(components, bits, signed)]), depth


def write_png(path: str | Path, components: list[np.ndarray], bits: list[int],
              signed: list[bool]) -> None:
    """PNG (grey, grey+alpha, RGB, RGBA), 8 or 16 bit, samples scaled to the file's range
    and their precision recorded in sBIT when all components share it."""
    img, depth = _samples(components, bits, signed)
    if img.ndim == 3 and img.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"PNG holds 1-4 channels, not {img.shape[2]}: write TIFF or PGX")
    same = len(set(bits)) == 1 and bits[0] < depth
    png.write_png(path, img, significant_bits=bits[0] if same else None)


def write_tiff(path: str | Path, components: list[np.ndarray], bits: list[int],
               signed: list[bool], *, photometric: str | None = None, alpha: int | None = None) -> None:
    """TIFF through tifffile: 8 or 16 bit per sample, any number of samples, scaled to the
    file's range. ``photometric``: "separated" for CMYK (default: RGB for 3 or 4 samples, else
    grey); ``alpha``: the index of an opacity channel, marked as unassociated alpha when it is
    the one extra sample after the colour ones."""

    img, _ = _samples(components, bits, signed)
    if photometric is None:
        photometric = "rgb" if img.ndim == 3 and img.shape[2] in (3, 4) else "minisblack"
    colours = {"rgb": 3, "separated": 4, "minisblack": 1}.get(photometric, 1)
    extra = {}
    if alpha is not None and img.ndim == 3 and img.shape[2] == colours + 1 and alpha == colours:
        extra["extrasamples"] = ("unassalpha",)
    tifffile.imwrite(path, img, photometric=photometric, **extra)


def write_pgx(path: str | Path, component: np.ndarray, bits: int, signed: bool) -> None:
    """One component as PGX: ``PG ML [+|-] bits w h`` (spaced as ISO/IEC 15444-4's reference
    images and ``opj_decompress`` write it) then big-endian samples of 1, 2 or 4 bytes (up to
    8, 16 or 32 bits)."""
    h, w = component.shape
    dtype = (">i" if signed else ">u") + ("1" if bits <= 8 else "2" if bits <= 16 else "4")
    head = f"PG ML {'-' if signed else '+'} {bits} {w} {h}\n".encode()
    Path(path).write_bytes(head + component.astype(dtype).tobytes())


def write_image(path: str | Path, components: list[np.ndarray], bits: list[int],
                signed: list[bool], *, photometric: str | None = None,
                alpha: int | None = None) -> list[Path]:
    """Write by suffix (.tif/.tiff, .png, .pgx); returns the files written, each renamed into
    place once whole (:func:`in_place`).

    PGX writes ``stem_K.pgx`` per component (what opj_decompress does). ``photometric`` and
    ``alpha`` are for TIFF (:func:`write_tiff`); PNG takes a 2- or 4-channel picture as grey or
    RGB with alpha last.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".pgx":
        out = []
        for k, c in enumerate(components):
            p = path.with_name(f"{path.stem}_{k}.pgx")
            in_place(p, lambda tmp, c=c, k=k: write_pgx(tmp, c, bits[k], signed[k]))
            out.append(p)
        return out
    if suffix in (".tif", ".tiff"):
        in_place(path, lambda tmp: write_tiff(tmp, components, bits, signed, photometric=photometric, alpha=alpha))
    elif suffix == ".png":
        in_place(path, lambda tmp: write_png(tmp, components, bits, signed))
    else:
        raise ValueError(f"unknown image type {suffix!r}: use .tif, .png or .pgx")
    return [path]


def in_place(path: Path, write) -> None:
    """``write(tmp)`` to a hidden temporary name beside ``path`` (same suffix), then renamed
    to ``path`` (atomic on one file system): ``path`` never holds a partial file. The
    temporary is removed if ``write`` fails."""
    tmp = path.with_name(f".{path.stem}.{secrets.token_hex(4)}.partial{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
