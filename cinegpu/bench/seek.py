"""Random access benchmark: frame 10,000 of a long track file costs what frame 10 costs.

    python -m cinegpu.bench.seek [--frames 12000] [--mxf existing.mxf]

Without ``--mxf`` it writes a long OP-1a track file in a temporary folder with ffmpeg (one tiny
codestream from opj_compress, looped), then times ``frame(n)`` for n = 10 and n = 10,000 on a
freshly opened file and on a warm one. Not a test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cinegpu.media.mxf.read import MXFFile


def write_long_mxf(folder: Path, frames: int) -> Path:
    for tool in ("ffmpeg", "opj_compress"):
        if shutil.which(tool) is None:
            sys.exit(f"bench_seek: {tool} is needed to write the long track file")
    pgm = folder / "tiny.pgm"
    pgm.write_bytes(b"P5\n32 32\n255\n" + bytes(range(256)) * 4)
    j2c = folder / "tiny.j2c"
    subprocess.run(["opj_compress", "-i", str(pgm), "-o", str(j2c), "-n", "2"], check=True, capture_output=True)
    out = folder / "long.mxf"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-loop", "1", "-framerate", "24", "-i", str(j2c),
                    "-frames:v", str(frames), "-c:v", "copy", "-f", "mxf", str(out)],
                   check=True, capture_output=True)
    return out


def time_frame(mxf: MXFFile, n: int, repeat: int) -> float:
    """Best of ``repeat`` timings of frame(n), in microseconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        mxf.frame(n, "left")     # a 3D file: its left eye, as a one-eye player reads it
        best = min(best, time.perf_counter() - t0)
    return best * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=12000)
    ap.add_argument("--mxf", type=Path)
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.mxf or write_long_mxf(Path(tmp), args.frames)
        t0 = time.perf_counter()
        mxf = MXFFile(path)
        opened = (time.perf_counter() - t0) * 1e3
        print(f"{path.name}: {path.stat().st_size:,} bytes, {mxf.frame_count} frames, "
              f"{len(mxf.index_segments)} index segment(s), {len(mxf.partitions)} partitions; "
              f"opened in {opened:.1f} ms")
        far = min(10_000, mxf.frame_count - 1)
        for n in (10, far, 10, far):
            print(f"frame {n:>6}: best of {args.repeat}: {time_frame(mxf, n, args.repeat):7.1f} us")
        mxf.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
