"""``cinegpu demo``: master a synthetic test sequence to a 2K DCP (cached), then play it."""

from __future__ import annotations

import sys
from pathlib import Path

from cinegpu.decode import BackendUnavailable, PipelineError
from cinegpu.interop.window import has_display
from cinegpu.jobs.demo import DEMO_FRAMES, build_demo, demo_dir, find_demo
from cinegpu.jobs.first_run import cache_root, compile_kernels
from cinegpu.media import MediaError, open_source

from ..settings import PlaySettings
from .args import positive_int
from .play import play

#: The frame whose picture a headless demo leaves beside the DCP.
SHOWN_FRAME = 12


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="master a test sequence to a 2K DCP (cached) and play it")
    p.add_argument("--cache", type=Path, default=None, metavar="DIR",
                   help="where the demo DCP lives (default $CINEGPU_DEMO_DIR or ~/.cache/cinegpu/demo)")
    p.add_argument("--frames", type=positive_int, default=None, metavar="N",
                   help="distinct frames to generate (default 48; at least one second is mastered)")
    p.add_argument("--headless", action="store_true",
                   help="play offscreen and print a summary (automatic without a display)")
    p.add_argument("--no-play", action="store_true", help="only master (or find) the demo DCP")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto", help="decode back end")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N", help="encode workers")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def run(args) -> int:
    from cinegpu.media.package.dcp_write import encoder_name  # noqa: PLC0415  (start-up: the DCP writer, ~0.14 s)

    frames = args.frames or DEMO_FRAMES
    folder = args.cache or demo_dir()
    try:
        compile_kernels(cache_root(), progress=not args.quiet,
                        say=lambda line: print(f"cinegpu demo: {line}", file=sys.stderr))
        if find_demo(folder, frames) is None:
            print(f"cinegpu demo: mastering {frames} frames to {folder} (encoder {encoder_name()})",
                  file=sys.stderr)
            build_demo(folder, frames, workers=args.workers, progress=not args.quiet)
        else:
            print(f"cinegpu demo: using the DCP in {folder}", file=sys.stderr)
        if args.no_play:
            print(folder)
            return 0
        media = open_source(folder)
    except (MediaError, ValueError) as exc:
        print(f"cinegpu demo: {exc}", file=sys.stderr)
        return 2

    headless = args.headless or not has_display()
    # headless, nothing is seen: leave a picture of the master to look at (16-bit PNG)
    picture = folder.parent / f"{folder.name}-frame-{SHOWN_FRAME}.png"
    shots = {min(SHOWN_FRAME, media.frame_count - 1): picture} if headless else {}
    try:
        summary = play(media, PlaySettings(headless=headless, backend=args.backend, screenshots=shots))
    except (MediaError, BackendUnavailable, PipelineError) as exc:   # no frame readable; no GPU; no workers
        print(f"cinegpu demo: {exc}", file=sys.stderr)
        return 2
    finally:
        media.close()
    if headless:
        print(summary)
        if summary.why_dropped():
            print(summary.why_dropped())
        if summary.screenshots:
            print(f"picture of frame {next(iter(shots))} of the master: {picture}")
    return 0
