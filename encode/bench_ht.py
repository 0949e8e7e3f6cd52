"""HTJ2K encoder benchmark (CPU): ours (numba HT block coder, N threads) against
``ojph_compress`` and ``grk_compress -M 64`` on a synthetic 12-bit RGB frame.

    python -m cinegpu.encode.bench_ht [--size 2k|4k] [--frames N] [--workers N]
        [--budget BYTES]

Lossless (5/3 + RCT, 64 x 64 blocks, 5 levels) for all three; then 9/7 + ICT at a byte
budget for ours, and OpenJPH at the quantisation step (``-qstep``, its only rate knob)
whose stream is the largest not above our size, so PSNR compares at (about) equal sizes.
Grok 10 ignores ``-r``/``-q`` with ``-M 64``, so it appears in the lossless row only.
Every stream is decoded with :func:`cinegpu.decode.decode` for PSNR (the peers decode our
streams to the same samples: tests/test_ht_encode.py).  The peers' times are their
processes (PPM read, file write); ours is :meth:`Encoder.encode` from the array, warm.
Not a timed test: numbers depend on the machine.

Measured on the 2-core development machine (no GPU), 2K, 2 frames, ``--workers 2``:

    lossless  cinegpu        5483254 bytes   5.68 fps  exact
    lossless  ojph_compress  5481687 bytes   9.57 fps  exact
    lossless  grk -M 64      5481699 bytes   6.54 fps  exact
    9/7       cinegpu         677505 bytes   3.19 fps  52.03 dB  (budget 685406)
    9/7       ojph_compress   676250 bytes  17.32 fps  52.22 dB  (-qstep 0.003265)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from cinegpu.decode import decode

from .encoder import Encoder

SIZES = {"2k": (2048, 1080), "4k": (4096, 2160)}


def synthetic_frame(w: int, h: int, seed: int = 0) -> np.ndarray:
    """(h, w, 3) uint16 12-bit: smooth gradients, texture, edges and a little noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = 1800 + 1200 * np.sin(x / 97.0) * np.cos(y / 71.0)
    tex = 300 * np.sin(x / 3.1 + y / 5.3) * (((x // 256) + (y // 256)) % 2)
    out = np.empty((h, w, 3), np.uint16)
    for c in range(3):
        v = base * (0.8 + 0.15 * c) + tex + rng.normal(0, 12, (h, w)) + (x > w / 2) * 400 * c
        out[:, :, c] = np.clip(v, 0, 4095)
    return out


def psnr(a: np.ndarray, stream: bytes) -> float:
    got = np.stack(decode(stream), -1).astype(np.float64)
    mse = float(((got - a) ** 2).mean())
    return float("inf") if mse == 0 else 10 * np.log10(4095.0 ** 2 / mse)


def _ppm(a: np.ndarray, path: Path) -> None:
    h, w, _ = a.shape
    path.write_bytes(f"P6 {w} {h} 4095\n".encode() + a.astype(">u2").tobytes())


def _timed(cmd, frames) -> float:
    t = time.perf_counter()
    for _ in range(frames):
        subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return (time.perf_counter() - t) / frames


def ours(a, frames, workers, **opts) -> tuple[bytes, float]:
    with Encoder(codec="htj2k", codeblock=(64, 64), levels=5, workers=workers, **opts) as enc:
        data = enc.encode(a, bits=12)  # warm (compilation, geometry)
        t = time.perf_counter()
        for _ in range(frames):
            data = enc.encode(a, bits=12)
        return data, (time.perf_counter() - t) / frames


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="2k")
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budget", type=int, default=None,
                    help="bytes a frame for the 9/7 row (default: lossless size / 8)")
    args = ap.parse_args(argv)
    w, h = SIZES[args.size]
    a = synthetic_frame(w, h)
    print(f"{args.size} {w}x{h} 12-bit RGB, {args.frames} frame(s), ours on {args.workers} "
          "thread(s)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = tmp / "in.ppm"
        _ppm(a, src)
        data, dt = ours(a, args.frames, args.workers, reversible=True)
        print(f"lossless  cinegpu       {len(data):>9} bytes  {1 / dt:6.2f} fps  "
              f"{'exact' if psnr(a, data) == float('inf') else 'NOT EXACT'}")
        lossless = len(data)
        peers = []
        if shutil.which("ojph_compress"):
            peers.append(("ojph_compress", ["ojph_compress", "-i", str(src), "-o",
                                            str(tmp / "o.j2c"), "-num_decomps", "5",
                                            "-block_size", "{64,64}", "-reversible", "true"],
                          tmp / "o.j2c"))
        if shutil.which("grk_compress"):
            peers.append(("grk -M 64", ["grk_compress", "-i", str(src), "-o",
                                                 str(tmp / "g.j2k"), "-M", "64", "-n", "6",
                                                 "-b", "64,64"], tmp / "g.j2k"))
        for name, cmd, out in peers:
            t = _timed(cmd, args.frames)
            d = out.read_bytes()
            print(f"lossless  {name:<13} {len(d):>9} bytes  {1 / t:6.2f} fps  "
                  f"{'exact' if psnr(a, d) == float('inf') else 'NOT EXACT'}")
        budget = args.budget or lossless // 8
        data, dt = ours(a, args.frames, args.workers, bitrate=budget * 8 * 24, fps=24)
        print(f"9/7       cinegpu       {len(data):>9} bytes  {1 / dt:6.2f} fps  "
              f"{psnr(a, data):6.2f} dB  (budget {budget})")
        if shutil.which("ojph_compress"):
            best = None
            lo, hi = np.log(0.0002), np.log(0.5)  # bisection on log qstep: larger, smaller
            for _ in range(12):
                q = float(np.exp((lo + hi) / 2))
                out = tmp / "q.j2c"
                cmd = ["ojph_compress", "-i", str(src), "-o", str(out), "-num_decomps", "5",
                       "-block_size", "{64,64}", "-qstep", f"{q:.6f}"]
                subprocess.run(cmd, check=True, capture_output=True, timeout=600)
                if out.stat().st_size <= len(data):
                    hi = np.log(q)
                    if best is None or out.stat().st_size > len(best[1]):
                        best = cmd, out.read_bytes()
                else:
                    lo = np.log(q)
            if best is not None:
                t = _timed(best[0], args.frames)
                print(f"9/7       ojph_compress {len(best[1]):>9} bytes  {1 / t:6.2f} fps  "
                      f"{psnr(a, best[1]):6.2f} dB  (-qstep {best[0][-1]})")


if __name__ == "__main__":
    main()
