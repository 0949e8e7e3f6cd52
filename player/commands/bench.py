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


def register(sub) -> None:
    p = sub.add_parser("bench", help="measure decode speed (the default command)")
    p.add_argument("path", nargs="?", type=Path, default=None,
                   help="codestream, folder, MXF or package (default: the shipped 2K sample)")
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--frames", type=int, default=None, help="frames to decode (default: all, at least 3 passes of a short source)")
    p.add_argument("--repeat", type=int, default=None, help="times to cycle through the frames")
    p.add_argument("--compare", action="store_true", help="also run opj_decompress and grk_decompress")
    p.add_argument("--peer-threads", type=int, default=None,
                   help="threads for each peer process (default: all cores)")
    p.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    p.set_defaults(run=run)


def _frames(path: Path | None, limit: int | None) -> tuple[str, list[bytes]]:
    from cinegpu.media import open_source

    path = path or SAMPLE
    with open_source(path) as src:
        n = src.frame_count if limit is None else min(limit, src.frame_count)
        return str(path), [src.frame(k) for k in range(n)]


def run(args) -> int:
    from tqdm import tqdm

    from cinegpu.decode import CodestreamError
    from cinegpu.decode.decoder import Decoder
    from cinegpu.decode import peers
    from cinegpu.media import MediaError

    try:
        name, frames = _frames(args.path, args.frames)
    except (MediaError, OSError) as exc:
        print(f"cinegpu bench: {exc}", file=sys.stderr)
        return 2
    if not frames:
        print("cinegpu bench: no frames", file=sys.stderr)
        return 2
    repeat = args.repeat or max(1, -(-3 // len(frames)))
    dec = Decoder(args.backend)
    try:
        dec.decode(frames[0])  # compile and plan outside the clock
    except CodestreamError as exc:
        print(f"cinegpu bench: frame 0: {exc}", file=sys.stderr)
        return 2
    stages: dict[str, float] = {}
    work = [f for _ in range(repeat) for f in frames]
    t0 = time.perf_counter()
    for data in tqdm(work, desc="decoding", unit="frame", disable=len(work) < 8 or not sys.stderr.isatty()):
        frame = dec.decode(data)
        for k, v in frame.timings.items():
            stages[k] = stages.get(k, 0.0) + v
    wall = time.perf_counter() - t0
    n = len(work)
    first = frame.components[0]
    print(f"{name}: {len(frames)} frame(s), {first.shape[1]}x{first.shape[0]}, "
          f"{len(frame.components)} components, decoded {n} times")
    print(f"cinegpu ({dec.backend}, 1 process): {n / wall:.2f} fps, {1e3 * wall / n:.1f} ms per frame")
    for k in ("parse", "tier2", "tier1", "reconstruct"):
        print(f"  {k:<12} {1e3 * stages.get(k, 0.0) / n:8.1f} ms per frame")
    result = {"source": name, "frames": n, "backend": dec.backend, "fps": n / wall,
              "ms_per_frame": {k: 1e3 * v / n for k, v in stages.items()}, "peers": []}
    if args.compare:
        threads = args.peer_threads or peers.cores()
        with tempfile.TemporaryDirectory(prefix="cinegpu-bench-") as tmp:
            files = []
            for k, data in enumerate(work):
                p = Path(tmp) / f"f{k:05d}.j2c"
                p.write_bytes(data)
                files.append(p)
            for run_peer in (peers.opj_decompress, peers.grk_decompress):
                r = run_peer(files, threads=threads)
                if r is None:
                    continue
                ratio = (wall / n) / (r.seconds / r.frames)
                print(f"{r.name}: {r.fps:.2f} fps, {1e3 * r.seconds / r.frames:.1f} ms per frame; "
                      f"our time / theirs = {ratio:.2f}")
                result["peers"].append({"name": r.name, "fps": r.fps, "time_ratio": ratio})
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0
