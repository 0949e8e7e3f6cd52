"""``cinegpu serve --library DIR``: the player as a service, controlled over HTTP (JSON, /api/v1)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from cinegpu.decode import BackendUnavailable
from cinegpu.interop.window import has_display
from cinegpu.media import MediaError

from ..settings import Access, ConnectionLimits, Playback, ServeSettings
from .args import (
    UsageError,
    captions_argument,
    check_stereo,
    check_tier1,
    playback_options,
    positive_int,
    positive_rate,
    stereo_argument,
    tier1_argument,
)
from .keys import add_key_args, key_ring


def _size(text: str) -> tuple[int, int]:
    w, sep, h = text.lower().partition("x")
    if not sep or not w.isdigit() or not h.isdigit() or not (0 < int(w) <= 16384 and 0 < int(h) <= 16384):
        raise argparse.ArgumentTypeError(f"want WxH, got {text!r}")
    return int(w), int(h)


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="playback server: play compositions of a library as told over HTTP")
    p.add_argument("--library", required=True, metavar="DIR", help="folder of DCPs, IMF packages and frame folders")
    p.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="address to serve on (default 127.0.0.1:8080; port 0: any free port)")
    tok = p.add_mutually_exclusive_group()
    tok.add_argument("--token-file", metavar="FILE",
                     help="read the bearer token from FILE (mode 600 or stricter); default: $CINEGPU_SERVE_TOKEN, "
                          "else a token generated at start and printed")
    tok.add_argument("--no-token", action="store_true",
                     help="no token (loopback addresses only): any local program may drive the player")
    tok.add_argument("--token", metavar="TOKEN",
                     help="refused unless --insecure-token-on-command-line is also given: every local user can "
                          "read a command line; use $CINEGPU_SERVE_TOKEN or --token-file")
    p.add_argument("--insecure-token-on-command-line", action="store_true",
                   help="accept --token although every local user can read it (ps, /proc/PID/cmdline)")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="also accept requests whose Host header is NAME (a DNS name the server is reached by)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                   help="also accept browser requests from this origin (e.g. http://console.example:8000)")
    p.add_argument("--max-connections", type=positive_int, default=256, metavar="N",
                   help="open connections at most (one more evicts the one waiting longest for a request)")
    p.add_argument("--head-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="time a client has to send a complete request head; idle connections close then too")
    p.add_argument("--headless", action="store_true", help="offscreen OpenGL (EGL) instead of a window")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto", help="decode back end")
    p.add_argument("--interop", choices=("auto", "surface", "pbo", "host"), default="auto",
                   help="texture upload path")
    p.add_argument("--colour", "--color", choices=("auto", "xyz", "rgb"), default="auto", help="content colour")
    p.add_argument("--primaries", choices=("p3d65", "rec709"), default="p3d65", help="display for X'Y'Z' content")
    p.add_argument("--fps", type=positive_rate, default=None, metavar="RATE", help="override the edit rate (sequences: 24)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N", help="tier-1 worker processes (with --threads: threads)")
    p.add_argument("--threads", action="store_true", help="decode in threads instead of the multi-process pipeline")
    p.add_argument("--preroll", type=positive_int, default=2, metavar="N", help="frames decoded before play starts the clock")
    p.add_argument("--window", type=_size, default=(1280, 720), metavar="WxH", help="window size (default 1280x720)")
    p.add_argument("--subtitles", choices=("on", "off"), default="on",
                   help="draw the compositions' subtitles (Interop or SMPTE) over the picture (default on)")
    stereo_argument(p)
    captions_argument(p)
    tier1_argument(p)
    p.add_argument("--audio", choices=("auto", "null", "off"), default="auto",
                   help="sound: auto (the default output device through sounddevice when there is one, "
                        "else the null sink; headless: null), null (a silent sink on the same clock), off; "
                        "volume, mute and routing through POST /api/v1/audio")
    p.add_argument("--load", action="append", default=[], metavar="ID",
                   help="load this composition at start (repeat for a playlist)")
    p.add_argument("--play", action="store_true", help="with --load: start playing")
    p.add_argument("--loop", action="store_true", help="with --load: loop")
    add_key_args(p)
    p.add_argument("--kdm-dir", type=Path, default=None, metavar="DIR",
                   help="load every KDM (*.xml) of DIR at start (needs --key; one that does not hold is "
                        "warned about and left out); with --key, more through POST /api/v1/kdms")
    p.set_defaults(run=run)


def token_of(args, environ=os.environ, warn=None) -> str | None:
    """The token from --token-file, else $CINEGPU_SERVE_TOKEN, else --token, which is a
    :class:`UsageError` without --insecure-token-on-command-line and a warning with it (a command
    line is readable by every local user); None: generate one (or --no-token)."""
    from ..server.access import check_token, read_token_file  # noqa: PLC0415  (start-up: the HTTP server, ~0.16 s)

    if args.token_file:
        return read_token_file(args.token_file)
    if args.token and not args.insecure_token_on_command_line:
        raise UsageError("--token puts the token in the command line, which every local user can read "
                         "(ps, /proc/PID/cmdline): give it as $CINEGPU_SERVE_TOKEN or in a --token-file "
                         "(mode 600), or add --insecure-token-on-command-line")
    if args.insecure_token_on_command_line and not args.token:
        raise UsageError("--insecure-token-on-command-line without --token")
    if args.token:
        if warn:
            warn("cinegpu serve: warning: --token puts the token in the command line, which every local user can "
                 "read (ps, /proc/PID/cmdline); use $CINEGPU_SERVE_TOKEN or --token-file instead")
        return check_token(args.token, "--token")
    env = environ.get("CINEGPU_SERVE_TOKEN")
    if env and not args.no_token:
        return check_token(env, "$CINEGPU_SERVE_TOKEN")
    return None


def _settings(args, token: str | None, keys, *, headless: bool) -> ServeSettings:
    """The :class:`ServeSettings` of ``cinegpu serve``'s arguments, with the ``token`` of
    :func:`token_of` and the key ring ``keys``."""
    return ServeSettings(
        library=args.library, listen=args.listen,
        access=Access(token=token, no_token=args.no_token, hosts=tuple(args.allow_host),
                      origins=tuple(args.allow_origin)),
        limits=ConnectionLimits(max_connections=args.max_connections, head_timeout=args.head_timeout),
        playback=Playback(**playback_options(args), headless=headless), window_size=args.window,
        load=tuple(args.load), play=args.play, loop=args.loop, keys=keys)


def run(args) -> int:
    from ..server import serve  # noqa: PLC0415  (start-up: the HTTP server, ~0.16 s)

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    try:
        check_tier1(args.backend, args.tier1)
        check_stereo(args.stereo, args.headless or not has_display())
        token = token_of(args, warn=lambda m: print(m, file=sys.stderr))
        keys = key_ring(args, args.kdm_dir, warn=lambda m: print(f"cinegpu serve: {m}", file=sys.stderr),
                        key_alone=True)
        return serve(_settings(args, token, keys, headless=args.headless or not has_display()))
    except (ValueError, MediaError, BackendUnavailable, OSError, UsageError) as exc:
        print(f"cinegpu serve: {exc}", file=sys.stderr)
        return 2
