"""Time the numpy inverse DWTs on one 4096x2160 plane, 6 levels (ms).

    python3 -m cinegpu.decode.transform.bench
"""

from __future__ import annotations

import time

import numpy as np

from .dwt import fdwt_53, fdwt_97, idwt_53, idwt_97


def main(runs: int = 5) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(-2048, 2048, (2160, 4096)).astype(np.int32)
    for name, fwd, inv, dtype in (("5/3", fdwt_53, idwt_53, np.int32), ("9/7", fdwt_97, idwt_97, np.float32)):
        ll, levels = fwd(x.astype(dtype), 6)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            inv(ll, levels)
            times.append((time.perf_counter() - t0) * 1e3)
        print(f"numpy idwt {name} 4096x2160 6 levels: best {min(times):.1f} ms, median {np.median(times):.1f} ms")


if __name__ == "__main__":
    main()
