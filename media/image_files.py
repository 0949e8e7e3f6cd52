"""Writing decoded images: 16-bit TIFF, PNG and PGX.

``cinegpu decode`` writes TIFF or PNG when every component has the same size
and PGX (one file per component, ISO/IEC 15444-4's format) otherwise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import png


def _interleave(components: list[np.ndarray]) -> np.ndarray:
    shapes = {c.shape for c in components}
    if len(shapes) != 1:
        raise ValueError(f"components of different sizes {sorted(shapes)}: write PGX instead")
    if len(components) == 1:
        return components[0]
    return np.stack(components, axis=-1)


def _unsigned(a: np.ndarray, bits: int) -> np.ndarray:
    dtype = np.uint8 if bits <= 8 else np.uint16
    if a.dtype.kind == "i":  # signed samples: shift to unsigned for viewers
        a = a.astype(np.int32) + (1 << (bits - 1))
    return a.astype(dtype)


def write_png(path: str | Path, components: list[np.ndarray], bits: int) -> None:
    """PNG (grey, grey+alpha, RGB, RGBA; 8 or 16 bit by ``bits``)."""
    img = _unsigned(_interleave(components), bits)
    if img.ndim == 3 and img.shape[2] not in (1, 2, 3, 4):
        raise ValueError(f"PNG holds 1-4 channels, not {img.shape[2]}: write TIFF or PGX")
    png.write_png(path, img)


def write_tiff(path: str | Path, components: list[np.ndarray], bits: int) -> None:
    """TIFF through tifffile: 8 or 16 bit per sample, any number of samples."""
    import tifffile

    img = _unsigned(_interleave(components), bits)
    photometric = "rgb" if img.ndim == 3 and img.shape[2] in (3, 4) else "minisblack"
    tifffile.imwrite(path, img, photometric=photometric)


def write_pgx(path: str | Path, component: np.ndarray, bits: int, signed: bool) -> None:
    """One component as PGX: ``PG ML [+|-] bits w h`` then big-endian samples."""
    h, w = component.shape
    dtype = (">i" if signed else ">u") + ("1" if bits <= 8 else "2")
    head = f"PG ML {'-' if signed else '+'}{bits} {w} {h}\n".encode()
    Path(path).write_bytes(head + component.astype(dtype).tobytes())


def write_image(path: str | Path, components: list[np.ndarray], bits: list[int],
                signed: list[bool]) -> list[Path]:
    """Write by suffix (.tif/.tiff, .png, .pgx); returns the files written.

    PGX writes ``stem_K.pgx`` per component (what opj_decompress does).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".pgx":
        out = []
        for k, c in enumerate(components):
            p = path.with_name(f"{path.stem}_{k}.pgx")
            write_pgx(p, c, bits[k], signed[k])
            out.append(p)
        return out
    if suffix in (".tif", ".tiff"):
        write_tiff(path, components, max(bits))
    elif suffix == ".png":
        write_png(path, components, max(bits))
    else:
        raise ValueError(f"unknown image type {suffix!r}: use .tif, .png or .pgx")
    return [path]
