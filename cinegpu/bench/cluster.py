"""What a Dask cluster costs per frame: ``cinegpu master`` with T threads of one process,
and with T encoder processes of one thread, against ``--cluster`` local clusters of T worker
processes of one thread and of one worker process of T threads, on this machine: the same
back end, the same number of encoders, the same frames.

    python -m cinegpu.bench.cluster [--frames 36] [--threads 2] [--profile 2k]
        [--backend cpu] [--rounds 2]

The input is ``--frames`` 16-bit RGB TIFF files at the profile's flat image area (two
distinct images of :func:`cinegpu.bench.encode.synthetic_frame`, the rest links to them).
Each local cluster is started once and warmed by a first job (its workers then hold their
encoders, as a long-running cluster does), and the other ways by a first job too; then each
round masters the frames once each way, in turn.  Printed per run: milliseconds per frame
from the first frame written to the last (the steady state) and seconds end to end (the
cluster's connection included, not its start); then each way's best and median against the
threads of one process (on a machine shared with other work the best run is the steadier
figure).  Not a timed test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from cinegpu.decode.codestream import dci
from cinegpu.bench.encode import synthetic_frame

from cinegpu.bench.master import write_frames
from cinegpu.jobs.cluster import connect
from cinegpu.jobs.master_job import Compute, MasterJob
from cinegpu.jobs.mastering import master

__all__ = ["main"]


def _run(src: Path, out: Path, profile: str, compute: Compute) -> tuple[float, float]:
    """(seconds per frame from the first written to the last, seconds end to end)."""
    t0 = time.perf_counter()
    job = MasterJob.of_images(src, out, title="bench", profile=profile)
    stats = master(replace(job, compute=compute), progress=False).stats
    return ((stats.total_s - stats.first_s) / max(1, job.input.count - 1),
            time.perf_counter() - t0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=36)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default="2k", choices=("2k", "4k"))
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    prof = dci.profile(a.profile)
    w, h = dict(prof.image_areas)["flat"]
    images = [synthetic_frame(w, h, seed=s) * 16 for s in range(2)]
    resources = {"GPU": 1} if a.backend == "cuda" else None
    t = a.threads
    with tempfile.TemporaryDirectory(prefix="cinegpu-bench-cluster-") as tmp, \
            connect(f"local:{t}", threads=1, resources=resources) as wide, \
            connect("local:1", threads=t, resources=resources) as deep:
        src = Path(tmp, "in")
        src.mkdir()
        write_frames(src, images, a.frames)
        ways = {f"threads 1x{t}": Compute(a.backend, processes=1, workers=t),
                f"processes {t}x1": Compute(a.backend, processes=t, workers=1),
                f"cluster {t}x1": Compute(a.backend, cluster=wide.client.scheduler.address),
                f"cluster 1x{t}": Compute(a.backend, cluster=deep.client.scheduler.address)}
        print(f"{a.profile.upper()} {w}x{h}, {a.frames} frames, backend {a.backend}, "
              f"{t} encoders each way (PxT: processes x threads)")
        for k, compute in enumerate(ways.values()):   # warm-up: numba, encoders, worker caches
            _run(src, Path(tmp, f"warm-{k}"), a.profile, compute)
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in ways}
        for r in range(a.rounds):
            for k, (name, compute) in enumerate(ways.items()):
                per, total = _run(src, Path(tmp, f"run-{r}-{k}"), a.profile, compute)
                got[name].append((per, total))
                print(f"  round {r + 1} {name:14s}: {per * 1000:7.1f} ms/frame steady, "
                      f"{total:6.2f} s end to end ({a.frames / total:5.2f} fps)")
        per = {k: statistics.median(p for p, _ in v) for k, v in got.items()}
        tot = {k: statistics.median(t for _, t in v) for k, v in got.items()}
        best = {k: min(p for p, _ in v) for k, v in got.items()}
        base = next(iter(ways))
        for name in ways:
            print(f"best   {name:14s}: {best[name] * 1000:7.1f} ms/frame steady "
                  f"({(best[name] / best[base] - 1) * 100:+5.1f}% against {base})")
        for name in ways:
            print(f"median {name:14s}: {per[name] * 1000:7.1f} ms/frame steady "
                  f"({(per[name] / per[base] - 1) * 100:+5.1f}% against {base}), "
                  f"{tot[name]:6.2f} s end to end ({(tot[name] / tot[base] - 1) * 100:+5.1f}%)")

if __name__ == "__main__":
    main()
