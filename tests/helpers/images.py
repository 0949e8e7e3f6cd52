"""Test images: :func:`noise_image` for the encoder's tests, seeded, so that a test's input is the
same on every run and on every machine; and :func:`read_ppm16`, a reader of the 16-bit PPM files
the peers write.

Each ``pattern`` draws its samples in its own way (the tests that use one were written, and some
of their codestreams pinned, against exactly those samples):

* ``"uniform"``: every sample drawn uniformly from the range of ``bits`` (by default the
  dtype's whole range), signed or not; ``extremes`` puts the range's two ends at the first and
  the last sample;
* ``"ramp"``: half the samples uniform noise over the range of ``bits``, half a diagonal ramp,
  so that bit-planes and zero bit-planes vary between code-blocks; the dtype by default the
  smallest that holds ``bits``;
* ``"picture"``: a picture's statistics, (h, w, components) uint16 of ``bits``: gradients, a
  texture in checkers, an edge and a little Gaussian noise;
* ``"code_values"``: three planes over the dtype's whole range, two ramps and uniform noise
  (for IMF's code-value scaling).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

PATTERNS = ("uniform", "ramp", "picture", "code_values")


def noise_image(shape: tuple[int, ...], dtype=None, *, bits: int | None = None, signed: bool = False,
                seed: int = 0, pattern: str = "uniform", extremes: bool = False) -> np.ndarray:
    """A ``shape`` ((h, w) or (h, w, components)) image of ``pattern`` (see the module), from
    ``np.random.default_rng(seed)``; ``bits``: the samples' precision, ``signed`` their sign."""
    rng = np.random.default_rng(seed)
    if pattern == "uniform":
        if bits is None:
            lo, hi = 0, np.iinfo(dtype).max
        else:
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        img = rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
        if extremes:
            img[0, 0] = lo
            img[-1, -1] = hi
        return img
    if pattern == "ramp":
        return _ramp(rng, shape, bits, signed, dtype)
    if pattern == "picture":
        return _picture(rng, shape, seed, 12 if bits is None else bits)
    if pattern == "code_values":
        return _code_values(rng, shape, np.uint16 if dtype is None else dtype, seed)
    raise ValueError(f"pattern {pattern!r}: not one of {PATTERNS}")


def _ramp(rng, shape, bits, signed, dtype):
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
    noise = rng.integers(lo, hi, shape)
    yy, xx = np.indices(shape[:2])
    ramp = ((xx * 3 + yy * 5) % max(1, hi - lo)) + lo
    if len(shape) == 3:
        ramp = ramp[..., None]
    img = np.where(rng.random(shape) < 0.5, noise, np.broadcast_to(ramp, shape))
    if dtype is None:
        dtype = (np.int8 if bits <= 8 else np.int16 if bits <= 16 else np.int32) if signed else \
            (np.uint8 if bits <= 8 else np.uint16)
    return img.astype(dtype)


def _picture(rng, shape, seed, bits):
    h, w, comps = shape
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    top = (1 << bits) - 1
    base = top * (0.45 + 0.3 * np.sin(x / 37.0 + seed) * np.cos(y / 23.0))
    tex = top * 0.07 * np.sin(x / 3.1 + y / 5.3) * (((x // 32) + (y // 32) + seed) % 2)
    out = np.empty((h, w, comps), np.uint16)
    for c in range(comps):
        v = base * (0.8 + 0.1 * c) + tex + rng.normal(0, top / 300, (h, w)) + (x > w / 2) * 90 * c
        out[:, :, c] = np.clip(np.rint(v), 0, top)
    return out


def _code_values(rng, shape, dtype, seed):
    h, w, _ = shape
    top = np.iinfo(dtype).max
    y, x = np.mgrid[0:h, 0:w]
    ramp = np.stack([(x * 37 + y * 11 + seed * 101) % (top + 1), (x ^ y) * 257 % (top + 1),
                     rng.integers(0, top + 1, (h, w))], -1)
    return ramp.astype(dtype)


def read_ppm16(path: Path) -> np.ndarray:
    """A binary 16-bit PPM (P6), comments allowed in the header."""
    data = path.read_bytes()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[pos + 1:], ">u2").reshape(h, w, 3).astype(int)
