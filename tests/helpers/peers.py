"""Helpers for the peer tests: synthetic images, encoder inputs, peer tools.

Images are made with numpy (smooth gradients + seeded noise + hard edges)
and written in the formats ``opj_compress`` and ``grk_compress`` read:
PGM/PPM (P5/P6, maxval 2**bits - 1), PGX (one component, any depth 1..16,
signed or unsigned, big-endian ``PG ML``) and raw (``-F w,h,n,bits,{s,u}@dxXdy:...``;
planar, one byte per sample up to 8 bits, else two bytes big-endian, each
component at its own subsampled size).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from helpers.pgx import read_pgx


@dataclass(frozen=True)
class Image:
    """A synthetic test image: ``w`` x ``h`` samples, ``n`` components."""

    w: int = 67
    h: int = 53
    n: int = 3
    bits: int = 8
    signed: bool = False
    fmt: str = "pnm"  #: "pnm", "pgx" (n == 1) or "raw"
    sub: tuple[tuple[int, int], ...] = ()  #: (dx, dy) per component, raw only
    seed: int = 1

    def component_sizes(self) -> list[tuple[int, int]]:
        sub = self.sub or ((1, 1),) * self.n
        return [(-(-self.w // dx), -(-self.h // dy)) for dx, dy in sub]


def make_plane(w: int, h: int, bits: int, signed: bool, seed: int) -> np.ndarray:
    """Gradients + noise + edges spanning the full range of ``bits``."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    f = 0.45 * (x / max(w - 1, 1)) + 0.25 * (y / max(h - 1, 1))
    f += 0.12 * np.sin(x * 0.3 + seed) * np.cos(y * 0.21)
    f += np.where((x > w // 3) & (y < 2 * h // 3), 0.2, 0.0)  # a hard-edged block
    f += np.where(((x + y) // 5) % 2 == 0, 0.05, 0.0) * (x > 2 * w // 3)  # a checker strip
    f += rng.normal(0, 0.03, (h, w))
    f[rng.random((h, w)) < 0.01] = 1.0  # salt
    f = np.clip(f, 0.0, 1.0)
    top = (1 << bits) - 1
    v = np.rint(f * top).astype(np.int64)
    if signed:
        v -= 1 << (bits - 1)
    return v


def image_planes(img: Image) -> list[np.ndarray]:
    return [make_plane(w, h, img.bits, img.signed, img.seed * 7 + c)
            for c, (w, h) in enumerate(img.component_sizes())]


def write_input(img: Image, folder: Path) -> tuple[Path, list[str]]:
    """Write ``img`` in its format; return the file and extra encoder args."""
    planes = image_planes(img)
    if img.fmt == "pnm":
        assert not img.signed and img.n in (1, 3) and not img.sub
        dtype = ">u1" if img.bits <= 8 else ">u2"
        magic = b"P5" if img.n == 1 else b"P6"
        pix = np.stack(planes, axis=-1).astype(dtype)
        path = folder / ("in.pgm" if img.n == 1 else "in.ppm")
        path.write_bytes(magic + b"\n%d %d\n%d\n" % (img.w, img.h, (1 << img.bits) - 1) + pix.tobytes())
        return path, []
    if img.fmt == "pgx":
        assert img.n == 1 and not img.sub
        kind = "i" if img.signed else "u"
        dtype = f">{kind}1" if img.bits <= 8 else f">{kind}2" if img.bits <= 16 else f">{kind}4"
        path = folder / "in.pgx"
        sign = b"-" if img.signed else b"+"
        path.write_bytes(b"PG ML %s %d %d %d\n" % (sign, img.bits, img.w, img.h) + planes[0].astype(dtype).tobytes())
        return path, []
    if img.fmt == "raw":
        kind = "i" if img.signed else "u"
        dtype = f">{kind}1" if img.bits <= 8 else f">{kind}2"
        path = folder / "in.raw"
        path.write_bytes(b"".join(p.astype(dtype).tobytes() for p in planes))
        spec = f"{img.w},{img.h},{img.n},{img.bits},{'s' if img.signed else 'u'}"
        if img.sub:
            spec += "@" + ":".join(f"{dx}x{dy}" for dx, dy in img.sub)
        return path, ["-F", spec]
    raise ValueError(img.fmt)


TOOLS = {"opj": "opj_compress", "grk": "grk_compress"}


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def encode(tool: str, img: Image, args: list[str], folder: Path, ext: str = "j2k") -> Path:
    """Encode ``img`` with ``opj_compress`` or ``grk_compress``; the output path."""
    src, extra = write_input(img, folder)
    out = folder / f"x.{ext}"
    run([TOOLS[tool], "-i", str(src), "-o", str(out), *extra, *args], folder)
    if not out.exists() or out.stat().st_size == 0:
        raise AssertionError(f"{tool} wrote no {out.name} for {args}")
    return out


def opj_reference(stream: Path, folder: Path, reduce: int = 0, layers: int | None = None) -> list[np.ndarray]:
    """What ``opj_decompress`` writes per component (PGX), as int64 arrays."""
    ref = folder / "ref"
    ref.mkdir(exist_ok=True)
    cmd = ["opj_decompress", "-i", str(stream), "-o", str(ref / "out.pgx")]
    if reduce:
        cmd += ["-r", str(reduce)]
    if layers is not None:
        cmd += ["-l", str(layers)]
    run(cmd, folder)
    files = sorted(ref.glob("out*.pgx"), key=lambda p: int(p.stem.rpartition("_")[2] or 0)
                   if p.stem != "out" else -1)
    if not files:
        raise AssertionError(f"opj_decompress wrote no PGX for {stream.name}")
    return [read_pgx(f) for f in files]


def compare(got: list[np.ndarray], ref: list[np.ndarray], peak: int) -> list[str]:
    """Differences between our components and the reference's, as messages."""
    problems = []
    if len(got) != len(ref):
        return [f"{len(got)} components, reference has {len(ref)}"]
    for c, (g, r) in enumerate(zip(got, ref)):
        if g.shape != r.shape:
            problems.append(f"component {c}: shape {g.shape}, reference {r.shape}")
            continue
        if g.size == 0:
            continue
        err = np.abs(g.astype(np.int64) - r)
        if int(err.max()) > peak:
            y, x = np.unravel_index(int(err.argmax()), err.shape)
            problems.append(f"component {c}: peak error {int(err.max())} > {peak} "
                            f"({int((err > peak).sum())} samples; first worst at y={y} x={x}: "
                            f"ours {int(g[y, x])}, reference {int(r[y, x])})")
    return problems


@dataclass(frozen=True)
class Case:
    """One peer case: encoder, image, encoder args, how to decode."""

    id: str
    tool: str
    img: Image
    args: tuple[str, ...] = ()
    reduce: int = 0
    layers: int | None = None
    lossy: bool = False  #: irreversible: peak error 1 allowed
    ext: str = "j2k"
    notes: dict = field(default_factory=dict, compare=False)


def pgx_image(bits: int, signed: bool = False, w: int = 45, h: int = 38, seed: int = 5) -> Image:
    """A one-component PGX input (opj_compress reads any precision, signed or not, from PGX)."""
    return Image(w=w, h=h, n=1, bits=bits, signed=signed, fmt="pgx", seed=seed)
