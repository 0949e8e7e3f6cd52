"""``cinegpu bench [PATH]``: decode speed on your own content, beside the peers.

PATH is a codestream, a folder of them, an MXF track file or a package
(anything :func:`cinegpu.media.open_source` opens); without it, the sample
2K DCI frame shipped with the project. The timing itself is a benchmark, outside the
library: :func:`cinegpu.bench.decode.run`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cinegpu.decode.errors import BackendUnavailable
from cinegpu.media import MediaError, open_source
from cinegpu.media.samples import BARS_2K

from .args import UsageError, check_tier1, gpu_count, non_negative_int, positive_int, tier1_argument
from .compiling import compile_decoder
from .interrupts import stoppable
from .keys import add_key_args, key_ring

SAMPLE = BARS_2K


def register(sub) -> None:
    p = sub.add_parser("bench", help="measure decode speed, beside the peer decoders on the machine")
    p.add_argument("path", nargs="?", type=Path, default=None,
                   help="codestream, folder, MXF or package (default: the shipped 2K sample)")
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="auto",
                   help="reconstruction on the CPU or the GPU (auto: GPU when CUDA is there)")
    p.add_argument("--workers", type=non_negative_int, default=None, metavar="N",
                   help="tier-1 worker processes (default: one per core this process may use; 0: decode in this "
                        "process only)")
    p.add_argument("--frames", type=positive_int, default=None, metavar="N", help="frames to decode (default: all, at least 3 passes of a short source)")
    p.add_argument("--repeat", type=positive_int, default=None, metavar="N", help="times to cycle through the frames")
    p.add_argument("--compare", action="store_true",
                   help="also time opj_decompress, grk_decompress, ojph_expand (HTJ2K) and nvJPEG2000 where "
                        "installed, each on at most 64 of the frames or 20 s")
    p.add_argument("--peer-threads", type=positive_int, default=None, metavar="N",
                   help="threads for each peer process (default: all cores)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the figures as JSON here")
    p.add_argument("--batch", type=positive_int, default=1, metavar="N",
                   help="CUDA with GPU tier-1: decode N frames' code-blocks in one tier-1 launch (throughput "
                        "at N frames of latency; the player uses 1)")
    p.add_argument("--gpus", type=gpu_count, nargs="+", default=[1], metavar="N|all",
                   help="CUDA: spread the frames over N GPUs (all: every one CUDA shows); several values "
                        "run once each and print the scaling (fps, and efficiency per GPU against the first)")
    p.add_argument("--to-host", action="store_true",
                   help="CUDA: copy decoded components back to host memory (the player keeps them on the GPU)")
    tier1_argument(p)
    add_key_args(p)     # an encrypted package's frames, decrypted once before the timing
    p.set_defaults(run=run)


def _frames(path: Path | None, limit: int | None, keys=None) -> tuple[str, list[bytes]]:
    path = path or SAMPLE
    with open_source(path, keys=keys) as src:
        n = src.frame_count if limit is None else min(limit, src.frame_count)
        return str(path), [src.frame(k) for k in range(n)]


def run(args) -> int:
    """Exit status: 0 measured; 2 a mistake or no frames (one line on stderr); 143 after
    SIGTERM, 130 after Ctrl-C, each with the decode workers ended and their shared memory
    unlinked (one line, no traceback)."""
    return stoppable("bench", _run, args)


def _run(args) -> int:
    try:
        check_tier1(args.backend, args.tier1)
        name, frames = _frames(args.path, args.frames, key_ring(args))
    except (MediaError, OSError, UsageError, BackendUnavailable) as exc:
        print(f"cinegpu bench: {exc}", file=sys.stderr)
        return 2
    if not frames:
        print("cinegpu bench: no frames", file=sys.stderr)
        return 2
    from cinegpu.bench import decode as bench_decode  # noqa: PLC0415  (start-up: the decoder and pipeline, ~0.11 s)

    compile_decoder("bench")
    return bench_decode.run(name, frames, args)
