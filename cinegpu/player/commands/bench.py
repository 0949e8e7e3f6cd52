"""``cinegpu bench [PATH]``: decode speed on your own content, beside the peers.

PATH is a codestream, a folder of them, an MXF track file or a package
(anything :func:`cinegpu.media.open_source` opens); without it, the sample
2K DCI frame shipped with the project. Prints frames per second and the time
per frame of each stage; ``--compare`` runs the peer decoders installed on
the machine on the same frames in the same run and prints our ratio to each.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "media" / "samples" / "bars_2k.j2c"

from .args import UsageError, gpu_count, non_negative_int, positive_int
from .keys import add_key_args, key_ring


def register(sub) -> None:
    p = sub.add_parser("bench", help="measure decode speed, beside the peer decoders on the machine")
    p.add_argument("path", nargs="?", type=Path, default=None,
                   help="codestream, folder, MXF or package (default: the shipped 2K sample)")
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="auto",
                   help="reconstruction on the CPU or the GPU (auto: GPU when CUDA is there)")
    p.add_argument("--workers", type=non_negative_int, default=None,
                   help="tier-1 worker processes (default: cores - 1; 0: decode in this process only)")
    p.add_argument("--frames", type=positive_int, default=None, help="frames to decode (default: all, at least 3 passes of a short source)")
    p.add_argument("--repeat", type=positive_int, default=None, help="times to cycle through the frames")
    p.add_argument("--compare", action="store_true", help="also run opj_decompress and grk_decompress")
    p.add_argument("--peer-threads", type=positive_int, default=None,
                   help="threads for each peer process (default: all cores)")
    p.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    p.add_argument("--batch", type=positive_int, default=1,
                   help="CUDA with GPU tier-1: decode N frames' code-blocks in one tier-1 launch (throughput "
                        "at N frames of latency; the player uses 1)")
    p.add_argument("--gpus", type=gpu_count, nargs="+", default=[1], metavar="N|all",
                   help="CUDA: spread the frames over N GPUs (all: every one CUDA shows); several values "
                        "run once each and print the scaling (fps, and efficiency per GPU against the first)")
    p.add_argument("--to-host", action="store_true",
                   help="CUDA: copy decoded components back to host memory (the player keeps them on the GPU)")
    add_key_args(p)     # an encrypted package's frames, decrypted once before the timing
    p.set_defaults(run=run)


def _frames(path: Path | None, limit: int | None, keys=None) -> tuple[str, list[bytes]]:
    from cinegpu.media import open_source

    path = path or SAMPLE
    with open_source(path, keys=keys) as src:
        n = src.frame_count if limit is None else min(limit, src.frame_count)
        return str(path), [src.frame(k) for k in range(n)]


def run(args) -> int:
    from cinegpu.decode import BackendUnavailable, CodestreamError, PipelineError, peers
    from cinegpu.media import MediaError

    try:
        name, frames = _frames(args.path, args.frames, key_ring(args))
    except (MediaError, OSError, UsageError) as exc:
        print(f"cinegpu bench: {exc}", file=sys.stderr)
        return 2
    if not frames:
        print("cinegpu bench: no frames", file=sys.stderr)
        return 2
    workers = peers.cores() - 1 if args.workers is None else args.workers
    repeat = args.repeat or max(1, -(-max(3, 2 * workers) // len(frames)))
    work = [f for _ in range(repeat) for f in frames]
    if workers == 0 and args.gpus != [1]:
        print("cinegpu bench: --gpus needs worker processes (--workers 1 or more)", file=sys.stderr)
        return 2
    scaling = []    # (GPUs, fps) of each run
    try:
        for gpus in args.gpus:
            if workers > 0:
                wall, stages, frame, backend, used = _bench_pipeline(work, args.backend, workers, args.to_host,
                                                                     args.batch, gpus)
            else:
                (wall, stages, frame, backend), used = _bench_inline(work, args.backend), 1
            scaling.append((used, len(work) / wall))
            if len(args.gpus) > 1:
                print(f"{used} GPU(s): {len(work) / wall:.2f} fps", flush=True)
    except (CodestreamError, PipelineError, BackendUnavailable, ValueError) as exc:
        print(f"cinegpu bench: {exc}", file=sys.stderr)
        return 2
    n = len(work)
    first = frame.components[0]
    print(f"{name}: {len(frames)} frame(s), {first.shape[1]}x{first.shape[0]}, "
          f"{len(frame.components)} components, decoded {n} times")
    how = f"{workers} tier-1 worker processes" if workers else "1 process"
    if workers and args.batch > 1 and backend == "cuda":
        how += f", tier-1 in batches of {args.batch} frames"
    if scaling[-1][0] > 1:
        how += f", {scaling[-1][0]} GPUs"
    print(f"cinegpu ({backend}, {how}): {n / wall:.2f} fps, {1e3 * wall / n:.1f} ms per frame end to end")
    print("  time per frame in each stage" + (" (summed over workers)" if workers else "") + ":")
    names = ("parse", "tier2", "tier1", "reconstruct", "upload", "gpu", "download", "launch")
    labels = {"reconstruct": "reconstruction" + (" (all GPU steps)" if backend == "cuda" else ""),
              "upload": "  host->GPU", "gpu": "  GPU kernels", "download": "  GPU->host",
              "launch": "GPU stage, host time to launch"}
    for k in names:
        if k in stages:
            print(f"  {labels.get(k, k):<30} {1e3 * stages[k] / n:8.1f} ms")
    result = {"source": name, "frames": n, "backend": backend, "workers": workers, "batch": args.batch, "fps": n / wall,
              "gpus": scaling[-1][0], "ms_per_frame": {k: 1e3 * v / n for k, v in stages.items()}, "peers": []}
    if len(scaling) > 1:
        result["scaling"] = _print_scaling(scaling)
    if args.compare:
        threads = args.peer_threads or peers.cores()
        with tempfile.TemporaryDirectory(prefix="cinegpu-bench-") as tmp:
            files = []
            for k, data in enumerate(work):
                p = Path(tmp) / f"f{k:05d}.j2c"
                p.write_bytes(data)
                files.append(p)
            runs = [peers.opj_decompress(files, threads=threads), peers.grk_decompress(files, threads=threads)]
            if threads > 1:  # the other way to use every core: one single-threaded process per core
                runs.append(peers.opj_decompress(files, threads=1, processes=threads))
            if _is_ht(work[0]):     # OpenJPH decodes HTJ2K only, one thread a process
                shapes = {c.shape for c in frame.components}
                suffix = ".pgm" if len(frame.components) == 1 else \
                    ".ppm" if len(frame.components) == 3 and len(shapes) == 1 else ".yuv"
                runs.append(peers.ojph_expand(files, processes=threads, suffix=suffix))
            for size in (1, 16, 32):
                runs.append(peers.nvjpeg2000(work, batch=size))
            for r in runs:
                if r is None:
                    continue
                if not r.frames:
                    print(f"{r.name}: {r.note}")
                    continue
                ratio = (n / wall) / r.fps
                print(f"{r.name}: {r.fps:.2f} fps, {1e3 / r.fps:.1f} ms per frame; "
                      f"our time / theirs = {1 / ratio:.2f}, our fps / theirs = {ratio:.2f}")
                result["peers"].append({"name": r.name, "fps": r.fps, "our_fps_ratio": ratio,
                                        "time_ratio": 1 / ratio})
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


def _print_scaling(scaling: list[tuple[int, float]]) -> list[dict]:
    """The table of a run per GPU count: fps, speed-up over the first run and efficiency per
    GPU (the speed-up over the first run divided by the ratio of their GPU counts)."""
    g0, f0 = scaling[0]
    rows = []
    print("GPUs        fps   speed-up   efficiency per GPU")
    for g, f in scaling:
        speedup, eff = f / f0, (f / f0) / (g / g0)
        print(f"{g:4d} {f:10.2f} {speedup:9.2f}x {100 * eff:12.1f} %")
        rows.append({"gpus": g, "fps": f, "speedup": speedup, "efficiency": eff})
    return rows


def _is_ht(data: bytes) -> bool:
    """Whether the frame has HT code-blocks (ISO/IEC 15444-15)."""
    from cinegpu.decode import CodestreamError
    from cinegpu.decode.decoder import Decoder

    try:
        return Decoder("cpu").prepare(data, strict=False).ht
    except CodestreamError:
        return False


def _add(stages: dict, timings: dict) -> None:
    for k, v in timings.items():
        stages[k] = stages.get(k, 0.0) + v


def _bench_inline(work: list[bytes], backend: str):
    """Everything in this process, one frame after another."""
    from tqdm import tqdm

    from cinegpu.decode.decoder import Decoder

    dec = Decoder(backend)
    frame = dec.decode(work[0])  # compile and plan outside the clock
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    for data in tqdm(work, desc="decoding", unit="frame", disable=len(work) < 8 or not sys.stderr.isatty()):
        frame = dec.decode(data)
        _add(stages, frame.timings)
    return time.perf_counter() - t0, stages, frame, dec.backend


def _bench_pipeline(work: list[bytes], backend: str, workers: int, to_host: bool, batch: int = 1,
                    gpus: int | None = 1):
    """The multi-process pipeline, started and warmed up outside the clock (every worker, two
    whole batches, every GPU): (wall seconds, stage seconds, the last frame, back end, GPUs)."""
    from tqdm import tqdm

    from cinegpu.decode import CodestreamError, PipelineError
    from cinegpu.decode.pipeline import FramePipeline

    stages: dict[str, float] = {}
    with FramePipeline(backend=backend, workers=workers, to_host=to_host, batch=batch,
                       gpus=gpus) as pipe:
        pipe.reserve(work[0])   # every slot made (and pinned) before the clock, as the player does
        warm = [work[k % len(work)] for k in range(max(workers, 2 * batch * pipe.gpus if batch > 1 else pipe.gpus))]
        for _, frame in pipe.map(warm):  # warm every worker
            if isinstance(frame, (CodestreamError, PipelineError)):
                raise frame
        t0 = time.perf_counter()
        for _, frame in tqdm(pipe.map(work), total=len(work), desc="decoding", unit="frame",
                             disable=len(work) < 8 or not sys.stderr.isatty()):
            if isinstance(frame, (CodestreamError, PipelineError)):
                raise frame
            _add(stages, {k: v for k, v in frame.timings.items() if k != "latency"})
        wall = time.perf_counter() - t0
        return wall, stages, frame, pipe.backend, pipe.gpus
