"""Time one picture's write into an OpenGL texture through each interop target (ms a frame).

    python3 -m cinegpu.bench.interop [--size WxH] [--repeat N]

For each target of :mod:`cinegpu.interop` (``surface``, ``surface-copy``, ``pbo``, ``host``), in
a hidden headless OpenGL 3.3 context (EGL without a display): open a texture of ``--size``
(default 4096x2160, DCI 4K), write a random RGBA16 picture five times to warm up, then
``--repeat`` times (a fifth of that, at least two, for ``host``, whose picture starts in host
memory), and print one row as each target is measured: the milliseconds a write took on the
GPU (CUDA events around the writes) and on the wall clock (the writes and a final
synchronisation, divided by the count). A target that cannot open (no CuPy, no CUDA-GL
interop) prints why instead of a row. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["main", "time_target"]

TARGETS = ("surface", "surface-copy", "pbo", "host")


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    if not (0 < w <= 16384 and 0 < h <= 16384):
        raise argparse.ArgumentTypeError(f"width and height must be 1..16384, got {text!r}")
    return w, h


def _target(name: str):
    from cinegpu.interop import HostUploadTarget, PixelBufferTarget, SurfaceTarget  # noqa: PLC0415  (after the context)

    return {"surface": lambda: SurfaceTarget(), "surface-copy": lambda: SurfaceTarget(method="copy"),
            "pbo": PixelBufferTarget, "host": HostUploadTarget}[name]()


def time_target(name: str, picture, count: int) -> tuple[float, float]:
    """(device ms, wall ms) a write of ``picture`` (a CuPy array, or numpy for ``host``) takes
    through target ``name``, averaged over ``count`` writes after five warm-up writes."""
    import cupy  # noqa: PLC0415  (optional: CuPy)

    target = _target(name)
    h, w = picture.shape[:2]
    target.open(w, h)
    try:
        for _ in range(5):
            target.write(picture)
        cupy.cuda.Device().synchronize()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        t0 = time.perf_counter()
        start.record()
        for _ in range(count):
            target.write(picture)
        stop.record()
        stop.synchronize()
        wall = (time.perf_counter() - t0) / count * 1e3
        return cupy.cuda.get_elapsed_time(start, stop) / count, wall
    finally:
        target.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=_size, default=(4096, 2160), metavar="WxH")
    ap.add_argument("--repeat", type=int, default=100, metavar="N", help="writes timed per target")
    args = ap.parse_args(argv)
    try:
        import cupy  # noqa: PLC0415  (optional: CuPy)
        cupy.cuda.runtime.getDeviceCount()
        from cinegpu.interop.window import open_window  # noqa: PLC0415  (optional: pyglet, GL loaded on demand)

        window = open_window(64, 64, headless=True)
    except Exception as exc:   # no CuPy, no CUDA device, no headless OpenGL: say which
        print(f"interop bench: cannot run here: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    w, h = args.size
    repeat = max(args.repeat, 1)
    picture = cupy.asarray(np.random.default_rng(1).integers(0, 65536, (h, w, 4), dtype=np.uint16))
    print(f"# one {w}x{h} RGBA16 picture written into a texture; ms a write: device (CUDA events), wall",
          flush=True)
    try:
        for name in TARGETS:
            host = name == "host"
            try:
                dev, wall = time_target(name, picture.get() if host else picture,
                                        max(repeat // 5, 2) if host else repeat)
            except Exception as exc:   # this target cannot run here (no interop, GL error): say why
                print(f"{name:12s} not measured: {type(exc).__name__}: {exc}", flush=True)
                continue
            print(f"{name:12s} {dev:8.3f} ms device {wall:8.3f} ms wall", flush=True)
    finally:
        window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
