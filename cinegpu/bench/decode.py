"""What ``cinegpu bench`` runs: decode speed on your own content, beside the peers.

The command (:mod:`cinegpu.player.commands.speed`) reads the frames; :func:`run` times them
in this process or the multi-process pipeline and prints frames per second and the time per
frame of each stage; ``--compare`` runs the peer decoders installed on the machine on the same
frames in the same run (:mod:`.decode_peers`) and prints our ratio to each. With batches on the
GPU it also prints the GPU stage's own rate (:mod:`.gpu_stage`), the most the run could reach.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from cinegpu.bench import decode_peers as peers
from cinegpu.bench.gpu_stage import gpu_stage_rate
from cinegpu.decode import BackendUnavailable, CodestreamError, PipelineError
from cinegpu.decode.backend import gpu_tier1_of
from cinegpu.decode.cpus import usable_cores
from cinegpu.decode.decoder import Decoder
from cinegpu.decode.pipeline import FramePipeline

#: How ``--compare`` names nvJPEG2000 where nvImageCodec's Python package is missing.
NVJPEG2000_MISSING = "nvJPEG2000 (nvImageCodec's Python package, nvidia-nvimgcodec-cu12 or -cu13)"


def run(name: str, frames: list[bytes], args) -> int:
    """Time ``frames`` (read from ``name``) as ``args`` (``cinegpu bench``'s options) says, print
    the figures and return the exit code."""
    # every core this process may use: the tier-1 workers, the main process reconstructing
    # while they work; the peers below get as many
    workers = usable_cores() if args.workers is None else args.workers
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
                                                                     args.batch, gpus, gpu_tier1_of(args.tier1))
            else:
                (wall, stages, frame, backend), used = _bench_inline(work, args.backend, gpu_tier1_of(args.tier1)), 1
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
    how = f"{workers} tier-1 worker processes on {usable_cores()} cores" if workers else "1 process"
    if backend == "cuda":
        how += ", tier-1 on the CPU" if args.tier1 == "cpu" else ", tier-1 on the GPU"
        if workers and args.batch > 1 and args.tier1 != "cpu":
            how += f" in batches of {args.batch} frames"
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
    gpu_tier1 = backend == "cuda" and args.tier1 != "cpu"
    busy, stage_fps = {}, None
    if workers:
        lines, busy = busy_lines(stages, wall, workers, scaling[-1][0], cuda=backend == "cuda", gpu_tier1=gpu_tier1)
        for line in lines:
            print(line)
    if workers and gpu_tier1 and args.batch > 1:
        # the rate the GPU's kernels allow, beside the run's: which side bounds it
        try:
            stage = gpu_stage_rate(frames, args.batch)
        except (CodestreamError, MemoryError) as exc:     # a GPU too small for more batches than the run's
            print(f"  the GPU stage alone: not measured ({exc})", flush=True)
        else:
            print(f"  the GPU stage alone, one GPU (tier-2 done beforehand): {stage.fps:.2f} fps in batches of "
                  f"{stage.batch}" + ("" if stage.identical else "; its frames differ from decode()'s"), flush=True)
            stage_fps = stage.fps
    result = {"source": name, "frames": n, "backend": backend, "workers": workers, "batch": args.batch,
              "tier1": "gpu" if gpu_tier1 else "cpu", "fps": n / wall,
              "gpus": scaling[-1][0], "ms_per_frame": {k: 1e3 * v / n for k, v in stages.items()}, "busy": busy,
              "peers": []}
    if stage_fps is not None:
        result["gpu_stage_fps"] = stage_fps
    if len(scaling) > 1:
        result["scaling"] = _print_scaling(scaling)
    if args.compare:
        threads = args.peer_threads or usable_cores()
        with tempfile.TemporaryDirectory(prefix="cinegpu-bench-") as tmp:
            files = []
            for k, data in enumerate(work[:peers.SAMPLE_FRAMES]):
                p = Path(tmp) / f"f{k:05d}.j2c"
                p.write_bytes(data)
                files.append(p)
            # (the peer's name where it is not installed, its run)
            runs = [("opj_decompress", lambda: peers.opj_decompress(files, threads=threads)),
                    ("grk_decompress", lambda: peers.grk_decompress(files, threads=threads))]
            if threads > 1:  # the other way to use every core: one single-threaded process per core
                runs.append(("opj_decompress", lambda: peers.opj_decompress(files, threads=1, processes=threads)))
            if _is_ht(work[0]):     # OpenJPH decodes HTJ2K only, one thread a process
                shapes = {c.shape for c in frame.components}
                suffix = ".pgm" if len(frame.components) == 1 else \
                    ".ppm" if len(frame.components) == 3 and len(shapes) == 1 else ".yuv"
                runs.append(("ojph_expand", lambda: peers.ojph_expand(files, processes=threads, suffix=suffix)))
            runs += [(NVJPEG2000_MISSING, lambda size=size: peers.nvjpeg2000(work, batch=size))
                     for size in (1, 16, 32)]
            print(f"peers: at most {peers.SAMPLE_FRAMES} frames or {peers.BUDGET_S:.0f} s each, "
                  f"{threads} thread(s) or process(es) each", flush=True)
            left_out = []
            for missing, peer in runs:       # each row as it is measured
                r = peer()
                if r is None:
                    if missing not in left_out:
                        left_out.append(missing)
                    continue
                if not r.frames:
                    print(f"{r.name}: {r.note}", flush=True)
                    continue
                ratio = (n / wall) / r.fps
                print(f"{r.name}: {r.fps:.2f} fps over {r.frames} frames, {1e3 / r.fps:.1f} ms per frame; "
                      f"our time / theirs = {1 / ratio:.2f}, our fps / theirs = {ratio:.2f}", flush=True)
                result["peers"].append({"name": r.name, "fps": r.fps, "frames": r.frames, "our_fps_ratio": ratio,
                                        "time_ratio": 1 / ratio})
            if left_out:
                print(f"left out, not installed here: {', '.join(left_out)}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


def busy_lines(stages: dict, wall: float, workers: int, gpus: int, *, cuda: bool,
               gpu_tier1: bool) -> tuple[list[str], dict[str, float]]:
    """How busy each side of the pipeline was over a run of ``wall`` seconds, from its stage
    seconds summed over the frames (``stages``, as the frames' timings name them): the workers'
    steps (tier-2; tier-1 where it runs on the CPU; the reconstruction with the CPU back end)
    over ``workers`` x ``wall``, and the GPU's spans (tier-1 where it runs there, with its
    copies; the reconstruction) over ``gpus`` x ``wall``, each span measured between events of
    its stream, so that frames or stages on the GPU at once each count in full. The printed
    lines and the fractions by name.

    A side near 100 % bounds the run; with none near it, the pipeline's own process (headers,
    copies into the slots, launches) or the supply of frames does."""

    in_workers = stages.get("tier2", 0.0) + (0.0 if gpu_tier1 else stages.get("tier1", 0.0))
    if not cuda:
        in_workers += stages.get("reconstruct", 0.0)
    busy = {"workers": in_workers / (workers * wall)}
    what = "tier-2" + ("" if gpu_tier1 else ", tier-1") + ("" if cuda else ", reconstruction")
    line = f"  busy over the run: the workers {100 * busy['workers']:.0f} % ({what})"
    if not cuda:
        return [line], busy
    if gpu_tier1:
        busy["gpu_tier1"] = stages.get("tier1", 0.0) / (gpus * wall)
        line += f", tier-1 on the GPU {100 * busy['gpu_tier1']:.0f} %"
    busy["gpu_reconstruct"] = stages.get("gpu", 0.0) / (gpus * wall)
    line += f", the GPU's reconstruction {100 * busy['gpu_reconstruct']:.0f} %"
    return [line, "  (the GPU's figures are spans of its streams: work that ran at once counts in each)"], busy


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

    try:
        return Decoder("cpu").prepare(data, strict=False).ht
    except CodestreamError:
        return False


def _add(stages: dict, timings: dict) -> None:
    for k, v in timings.items():
        stages[k] = stages.get(k, 0.0) + v


def _bench_inline(work: list[bytes], backend: str, gpu_tier1: bool | None = None):
    """Everything in this process, one frame after another."""

    dec = Decoder(backend, gpu_tier1=gpu_tier1)
    frame = dec.decode(work[0])  # compile and plan outside the clock
    stages: dict[str, float] = {}
    t0 = time.perf_counter()
    for data in tqdm(work, desc="decoding", unit="frame", disable=len(work) < 8 or not sys.stderr.isatty()):
        frame = dec.decode(data)
        _add(stages, frame.timings)
    return time.perf_counter() - t0, stages, frame, dec.backend


def _bench_pipeline(work: list[bytes], backend: str, workers: int, to_host: bool, batch: int = 1,
                    gpus: int | None = 1, gpu_tier1: bool | None = None):
    """The multi-process pipeline, started and warmed up outside the clock (every worker, two
    whole batches, every GPU): (wall seconds, stage seconds, the last frame, back end, GPUs)."""

    stages: dict[str, float] = {}
    with FramePipeline(backend=backend, workers=workers, to_host=to_host, batch=batch,
                       gpus=gpus, gpu_tier1=gpu_tier1) as pipe:
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
