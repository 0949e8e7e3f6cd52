"""``cinegpu serve --library DIR``: the player as a service, controlled over HTTP (JSON, /api/v1)."""

from __future__ import annotations

import os
from fractions import Fraction


def _size(text: str) -> tuple[int, int]:
    import argparse  # noqa: PLC0415

    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit() or not (0 < int(w) <= 16384 and 0 < int(h) <= 16384):
        raise argparse.ArgumentTypeError(f"want WxH, got {text!r}")
    return int(w), int(h)


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="playback server: play compositions of a library as told over HTTP")
    p.add_argument("--library", required=True, metavar="DIR", help="folder of DCPs, IMF packages and frame folders")
    p.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="address to serve on (default 127.0.0.1:8080; port 0: any free port); "
                        "a non-loopback address needs --token")
    p.add_argument("--token", default=os.environ.get("CINEGPU_SERVE_TOKEN"),
                   help="require 'Authorization: Bearer TOKEN' on every request "
                        "(default: $CINEGPU_SERVE_TOKEN)")
    p.add_argument("--headless", action="store_true", help="offscreen OpenGL (EGL) instead of a window")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto", help="decode back end")
    p.add_argument("--interop", choices=("auto", "surface", "pbo", "host"), default="auto",
                   help="texture upload path")
    p.add_argument("--colour", "--color", choices=("auto", "xyz", "rgb"), default="auto", help="content colour")
    p.add_argument("--primaries", choices=("p3d65", "rec709"), default="p3d65", help="display for X'Y'Z' content")
    p.add_argument("--fps", type=Fraction, default=None, help="override the edit rate (sequences: 24)")
    p.add_argument("--workers", type=int, default=None, help="tier-1 worker processes (with --threads: threads)")
    p.add_argument("--threads", action="store_true", help="decode in threads instead of the multi-process pipeline")
    p.add_argument("--preroll", type=int, default=2, help="frames decoded before play starts the clock")
    p.add_argument("--window", type=_size, default=(1280, 720), metavar="WxH", help="window size (default 1280x720)")
    p.add_argument("--load", action="append", default=[], metavar="ID",
                   help="load this composition at start (repeat for a playlist)")
    p.add_argument("--play", action="store_true", help="with --load: start playing")
    p.add_argument("--loop", action="store_true", help="with --load: loop")
    p.set_defaults(run=run)


def run(args) -> int:
    import logging
    import sys

    from cinegpu.media import MediaError

    from ..server import serve
    from ..window import has_display

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    try:
        return serve(args.library, listen=args.listen, token=args.token or None,
                     headless=args.headless or not has_display(), backend=args.backend, interop=args.interop,
                     colour=args.colour, primaries=args.primaries, workers=args.workers,
                     processes=not args.threads, fps=args.fps, preroll=args.preroll, window_size=args.window,
                     load=args.load, play=args.play, loop=args.loop)
    except (ValueError, MediaError, OSError) as exc:
        print(f"cinegpu serve: {exc}", file=sys.stderr)
        return 2
