"""Time the reconstruction of one 3-component frame, numpy twin vs numba (ms).

    python3 -m cinegpu.bench.transform [--runs N]

Per frame size (2K 2048x1080 with 5 levels, 4K 4096x2160 with 6, as DCI
allows) and filter (9/7 + ICT, 5/3 + RCT): dequantise every band of a flat
int32 coefficient buffer (as :mod:`..reconstruct` does), inverse DWT, inverse
MCT, DC shift and clip to 12 bits; best and median of ``runs``.  Three ways:

* ``numpy``: :mod:`cinegpu.decode.transform`, call by call;
* ``numba``: :mod:`.cpu_backend`, the same calls;
* ``numba fused``: :func:`.cpu_backend.dequantize_idwt` per component, then
  :func:`.cpu_backend.inverse_mct_to_samples`;
* ``numba frame``: :func:`.cpu_backend.reconstruct_mct` (finest level and MCT
  row by row together).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from cinegpu.decode.transform import cpu_backend
from cinegpu.decode.transform.dwt import _band_sizes, level_rects

__all__ = ["frame_bands", "main"]


def frame_bands(rng, width: int, height: int, nlevels: int):
    """(ll, levels, deltas) of one component: int32 views of one flat buffer."""
    rects = level_rects((0, 0, width, height), nlevels)[::-1]
    shapes = []
    if rects:
        u0, v0, u1, v1 = rects[0]
        shapes.append((_band_sizes(v0, v1)[0], _band_sizes(u0, u1)[0]))
    else:
        shapes.append((height, width))
    for u0, v0, u1, v1 in rects:
        (nl, nh), (ml, mh) = _band_sizes(u0, u1), _band_sizes(v0, v1)
        shapes += [(ml, nh), (mh, nl), (mh, nh)]
    flat = rng.integers(-600, 600, sum(h * w for h, w in shapes)).astype(np.int32)
    views, off = [], 0
    for h, w in shapes:
        views.append(flat[off : off + h * w].reshape(h, w))
        off += h * w
    levels = [(*views[1 + 3 * i : 4 + 3 * i], rect) for i, rect in enumerate(rects)]
    deltas = [1.0] + [0.5, 0.5, 0.25] * len(rects)
    return views[0], levels, deltas


def _frame_calls(tf, comps, reversible):
    planes = []
    for ll, levels, deltas in comps:
        a = tf.dequantize(ll, deltas[0], reversible)
        lv = [(tf.dequantize(hl, deltas[1 + 3 * i], reversible), tf.dequantize(lh, deltas[2 + 3 * i], reversible),
               tf.dequantize(hh, deltas[3 + 3 * i], reversible), rect)
              for i, (hl, lh, hh, rect) in enumerate(levels)]
        planes.append((tf.idwt_53 if reversible else tf.idwt_97)(a, lv))
    planes = (tf.inverse_rct if reversible else tf.inverse_ict)(*planes)
    return [tf.to_samples(p, 12, False) for p in planes]


def _frame_fused(comps, reversible):
    planes = [cpu_backend.dequantize_idwt(ll, levels, deltas, reversible) for ll, levels, deltas in comps]
    return cpu_backend.inverse_mct_to_samples(*planes, (12, 12, 12), (False, False, False))


def _frame_mct(comps, reversible):
    return cpu_backend.reconstruct_mct(comps, reversible, (12, 12, 12), (False, False, False))


def _time(fn, runs: int) -> tuple[float, float]:
    fn()  # compile / warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return min(times), float(np.median(times))


def main(argv=None) -> None:
    from cinegpu.decode import transform as numpy_tf

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    for name, (w, h, nlev) in (("2K", (2048, 1080, 5)), ("4K", (4096, 2160, 6))):
        comps = [frame_bands(rng, w, h, nlev) for _ in range(3)]
        for filt, rev in (("9/7+ICT", False), ("5/3+RCT", True)):
            ways = (
                ("numpy", lambda: _frame_calls(numpy_tf, comps, rev)),
                ("numba", lambda: _frame_calls(cpu_backend, comps, rev)),
                ("numba fused", lambda: _frame_fused(comps, rev)),
                ("numba frame", lambda: _frame_mct(comps, rev)),
            )
            for way, fn in ways:
                best, med = _time(fn, args.runs)
                print(f"{name} {w}x{h}x3 {nlev} levels {filt:8s} {way:12s} best {best:6.1f} ms  median {med:6.1f} ms",
                      flush=True)


if __name__ == "__main__":
    main()
