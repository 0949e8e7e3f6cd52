"""Mastering benchmark: ``cinegpu master`` (:func:`cinegpu.media.mastering.master`: colour
conversion, one encoder per thread, the MXF track file and the DCP) against
``opj_compress -cinema2K/-cinema4K`` and ``grk_compress -cinema2K/-cinema4K`` on the same
synthetic frames.

    python -m cinegpu.media.bench_master [--profile dci-2k dci-4k] [--frames N]
        [--workers N] [--opj-processes N] [--grk-threads N] [--fps 24]

Frames are 16-bit RGB, as a 16-bit TIFF or PNG reads (the encoder benchmark's 12-bit pattern,
:func:`cinegpu.encode.bench.synthetic_frame`, scaled by 16), mastered with 1 thread and with
``--workers`` threads after a warm-up; OpenJPEG codes the same frames converted to X'Y'Z', as PPM
files, ``--opj-processes`` at once, and Grok all of them in one run of ``--grk-threads`` threads
(0: every core).  Not a timed test: the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from cinegpu.decode.codestream import dci
from cinegpu.encode.bench import opj_encode_frames, synthetic_frame
from cinegpu.encode.peers import grk_compress_dci, have_grk, have_opj

from .colour import to_xyz12
from .mastering import master

__all__ = ["run_master", "main"]


def _master_seconds(rgb, profile: str, fps: int, workers: int) -> float:
    with tempfile.TemporaryDirectory(prefix="cinegpu-bench-") as tmp:
        t0 = time.perf_counter()
        master(lambda i: rgb[i], len(rgb), f"{tmp}/dcp", title="bench", profile=dci.profile(profile).short,
               fps=fps, workers=workers, progress=False)
        return time.perf_counter() - t0


def run_master(profile: str, frames: int, fps: int, workers: int, processes: int,
               grk_threads: int = 0) -> dict:
    """Frames per second of mastering ``frames`` frames with 1 and ``workers`` threads, and of
    opj_compress (``processes`` at once) and grk_compress (``grk_threads``) on the same X'Y'Z'
    frames, where installed."""
    w, h = dci.profile(profile).container
    rgb = [(synthetic_frame(w, h, seed=k).astype(np.uint32) * 16).astype(np.uint16)
           for k in range(frames)]
    _master_seconds(rgb[:1], profile, fps, 1)  # warm: numba caches, imports
    row = {"profile": profile, "frames": frames, "workers": workers,
           "fps_1": frames / _master_seconds(rgb, profile, fps, 1)}
    if workers > 1:
        row["fps_n"] = frames / _master_seconds(rgb, profile, fps, workers)
    if have_opj() or have_grk():
        xyz = [to_xyz12(f.astype(np.float32) / np.float32(65535), "rec709") for f in rgb]
        if have_opj():
            row["opj_fps"] = frames / opj_encode_frames(xyz, profile, fps, processes)[1]
        if have_grk():
            row["grk_fps"] = frames / grk_compress_dci(xyz, profile, fps, grk_threads)[1]
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", nargs="+", default=["dci-2k", "dci-4k"])
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--fps", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--opj-processes", type=int, default=1)
    ap.add_argument("--grk-threads", type=int, default=0)
    a = ap.parse_args(argv)
    for profile in a.profile:
        r = run_master(profile, a.frames, a.fps, a.workers, a.opj_processes, a.grk_threads)
        line = f"{profile} master: {r['frames']} frames  1 thread {r['fps_1']:.3f} fps"
        if "fps_n" in r:
            line += f"  {r['workers']} threads {r['fps_n']:.3f} fps"
        print(line)
        best = max(r["fps_1"], r.get("fps_n", 0.0))
        if "opj_fps" in r:
            print(f"  opj_compress ({a.opj_processes} processes) {r['opj_fps']:.3f} fps  "
                  f"ratio x{best / r['opj_fps']:.2f}")
        if "grk_fps" in r:
            threads = f"{a.grk_threads} threads" if a.grk_threads else "all cores"
            print(f"  grk_compress ({threads}) {r['grk_fps']:.3f} fps  "
                  f"ratio x{best / r['grk_fps']:.2f}")


if __name__ == "__main__":
    main()
