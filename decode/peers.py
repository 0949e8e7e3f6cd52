"""Other decoders on this machine, run on the same frames for comparison.

Each peer is timed on whole files, start-up and writing raw output to a
temporary folder included (that is what a user of the tool gets); the
caller prints the ratio against our own decode of the same frames.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PeerResult:
    name: str
    frames: int
    seconds: float  #: wall time for all frames
    note: str = ""

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else float("inf")


class PeerFailed(Exception):
    """A peer decoder failed on one frame: ``str()`` names the frame, the exit code and the
    last line the tool printed."""


def _run_files(argv_for, files: list[Path], processes: int) -> float:
    with tempfile.TemporaryDirectory(prefix="cinegpu-peer-") as tmp:
        def one(k_file):
            k, f = k_file
            argv = argv_for(f, Path(tmp) / f"out_{k}.raw")
            run = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if run.returncode != 0:
                said = run.stderr.decode(errors="replace").strip().splitlines()
                raise PeerFailed(f"failed on {f.name} (frame {k}): exit code {run.returncode}"
                                 + (f": {said[-1][:200]}" if said else ""))

        t0 = time.perf_counter()
        if processes <= 1:
            for item in enumerate(files):
                one(item)
        else:
            with ThreadPoolExecutor(processes) as pool:
                list(pool.map(one, enumerate(files)))
        return time.perf_counter() - t0


def _timed(name: str, argv_for, files: list[Path], processes: int) -> PeerResult:
    """The peer's wall time over ``files``, or a result with no frames whose note says where
    it failed."""
    try:
        return PeerResult(name, len(files), _run_files(argv_for, files, processes))
    except PeerFailed as exc:
        return PeerResult(name, 0, 0.0, note=str(exc))


def opj_decompress(files: list[Path], threads: int = 1, processes: int = 1) -> PeerResult | None:
    """OpenJPEG's ``opj_decompress``: ``threads`` per frame, ``processes`` frames at once."""
    exe = shutil.which("opj_decompress")
    if exe is None:
        return None
    return _timed(f"opj_decompress ({threads} thread{'s' if threads > 1 else ''} x {processes} proc)",
                  lambda f, o: [exe, "-i", str(f), "-o", str(o), "-threads", str(threads), "-quiet"],
                  files, processes)


def grk_decompress(files: list[Path], threads: int = 1, processes: int = 1) -> PeerResult | None:
    """Grok's ``grk_decompress`` (``-H`` threads)."""
    exe = shutil.which("grk_decompress")
    if exe is None:
        return None
    return _timed(f"grk_decompress ({threads} thread{'s' if threads > 1 else ''} x {processes} proc)",
                  lambda f, o: [exe, "-i", str(f), "-o", str(o), "-H", str(threads)], files, processes)


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def nvjpeg2000(frames: list[bytes], batch: int = 1) -> PeerResult | None:
    """NVIDIA nvJPEG2000 through nvImageCodec (``nvidia.nvimgcodec``), on the GPU.

    Decodes to device memory; ``batch`` frames per call. One untimed pass over the same
    frames in the same batches comes first (the first call of each batch size pays for its
    set-up), then one timed pass. None when the package or a GPU is missing.
    """
    try:
        from nvidia import nvimgcodec
    except Exception:
        return None
    try:
        import cupy

        dec = nvimgcodec.Decoder()

        def one_pass():
            for k in range(0, len(frames), batch):
                chunk = frames[k : k + batch]
                out = dec.decode(chunk) if batch > 1 else [dec.decode(chunk[0])]
                del out
            cupy.cuda.runtime.deviceSynchronize()

        one_pass()   # warmed as we warm ourselves: every batch shape set up outside the clock
        t0 = time.perf_counter()
        one_pass()
        secs = time.perf_counter() - t0
    except Exception as exc:
        return PeerResult("nvJPEG2000 (nvImageCodec)", 0, 0.0, note=f"failed: {exc}")
    return PeerResult(f"nvJPEG2000 (nvImageCodec, batch {batch})", len(frames), secs)
