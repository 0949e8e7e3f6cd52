"""Reading PGX reference images (ISO/IEC 15444-4 conformance format)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np


def read_pgx(path: str | Path) -> np.ndarray:
    """A PGX file as a 2-D int64 array: header ``PG ML|LM [+|-] depth w h``."""
    data = Path(path).read_bytes()
    end = data.index(b"\n")
    m = re.match(rb"PG\s*(ML|LM)\s*([+-]?)\s*(\d+)\s+(\d+)\s+(\d+)", data[:end])
    if not m:
        raise ValueError(f"{path}: not a PGX header: {data[:end]!r}")
    order, sign, depth, w, h = m.groups()
    depth, w, h = int(depth), int(w), int(h)
    size = 1 if depth <= 8 else 2 if depth <= 16 else 4
    dtype = np.dtype(f"{'>' if order == b'ML' else '<'}{'i' if sign == b'-' else 'u'}{size}")
    return np.frombuffer(data[end + 1 : end + 1 + w * h * size], dtype).reshape(h, w).astype(np.int64)
