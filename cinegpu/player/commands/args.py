"""What every subcommand shares: argument types that refuse nonsense at parse time, and the
one error a command raises for a mistake found after parsing (:class:`UsageError`).

A mistake is reported as one line ``cinegpu COMMAND: what`` on stderr with exit code 2, before
any long work starts (argparse does the same for the mistakes it finds itself)."""

from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path

from cinegpu.decode.backend import TIER1_PLACES, select_backend
from cinegpu.interop.errors import NO_STEREO
from cinegpu.jobs.cluster import ClusterAddress, parse_address

from ..stereo import STEREO_MODES

__all__ = ["UsageError", "cluster_address", "cluster_arguments", "gpu_count", "non_negative_int", "one_line_text", "playback_options", "positive_int",
           "positive_rate", "captions_argument", "stereo_argument", "tier1_argument",
           "check_stereo", "check_tier1"]


class UsageError(Exception):
    """A command was given something it cannot do (a frame past the end, a missing optional
    dependency): exit code 2 with this message."""


def positive_rate(text: str) -> Fraction:
    """A frame rate: ``24``, ``23.976``, ``24000/1001``; above 0 and at most 1000 frames/s.
    A decimal within 0.005 of an NTSC rate N x 1000/1001 (23.976, 23.98, 29.97, 59.94, ...) is
    that rate, as ffmpeg and the IMF/DCP rate lists read it."""
    try:
        rate = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"want a rate such as 24 or 24000/1001, got {text!r}") from None
    if "." in text and rate.denominator != 1:
        ntsc = Fraction(round(rate * Fraction(1001, 1000)) * 1000, 1001)
        if ntsc.denominator != 1 and abs(rate - ntsc) < Fraction(5, 1000):
            rate = ntsc
    if not 0 < rate <= 1000:
        raise argparse.ArgumentTypeError(f"a rate must be above 0 and at most 1000, got {text}")
    return rate


def _whole_number(text: str, least: int) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a whole number, got {text!r}") from None
    if n < least:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}" if least == 1
                                         else f"must be {least} or more, got {n}")
    return n


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    return _whole_number(text, 1)


def gpu_count(text: str) -> int | None:
    """``all`` (None: every GPU CUDA shows) or a whole number of at least 1."""
    return None if text.strip().lower() == "all" else _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number of at least 0."""
    return _whole_number(text, 0)


def one_line_text(text: str) -> str:
    """Text for an XML element of a package (a title, a content kind): not empty, and only
    characters XML 1.0 allows (clause 2.2) other than tabs and line breaks."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    for k, ch in enumerate(text):
        o = ord(ch)
        if o < 0x20 or 0x7F <= o < 0xA0 or 0xD800 <= o <= 0xDFFF or o in (0xFFFE, 0xFFFF):
            raise argparse.ArgumentTypeError(f"character {k} is U+{o:04X}, a control character "
                                             f"or one XML cannot hold")
    return text


def playback_options(args) -> dict:
    """The :class:`~cinegpu.player.settings.Playback` fields (but ``headless``, which depends
    on the display) of the options ``cinegpu play`` and ``cinegpu serve`` share: ``--fps``,
    ``--backend``, ``--interop``, ``--colour``, ``--primaries``, ``--workers``, ``--threads``,
    ``--preroll``, ``--audio``, ``--subtitles``, ``--captions``, ``--stereo`` and ``--tier1``."""
    return dict(fps=args.fps, backend=args.backend, interop=args.interop, colour=args.colour,
                primaries=args.primaries, workers=args.workers, processes=not args.threads,
                preroll=args.preroll, audio=args.audio, subtitles=args.subtitles == "on",
                stereo=args.stereo, captions=args.captions == "on", tier1=args.tier1)


def tier1_argument(p) -> None:
    """``--tier1 auto|gpu|cpu``: where the code-blocks are decoded with the CUDA back end."""
    p.add_argument("--tier1", choices=TIER1_PLACES, default="auto",
                   help="where tier-1 (code-block decoding) runs with the cuda back end: gpu (auto's "
                        "choice there), or cpu (in the worker processes, the GPU doing the rest: for a "
                        "small GPU); gpu with the cpu back end is refused")


def check_stereo(stereo: str | None, headless: bool) -> None:
    """:class:`UsageError` for ``--stereo quad-buffer`` headless (an offscreen EGL surface has no
    left and right back buffers), before any frame is decoded."""
    if stereo == "quad-buffer" and headless:
        raise UsageError(f"--stereo quad-buffer: {NO_STEREO}")


def check_tier1(backend: str, tier1: str) -> None:
    """:class:`UsageError` where ``--tier1 gpu`` is asked of a back end that decodes on the CPU
    (``--backend cpu``, or auto on a machine without CUDA); BackendUnavailable as
    :func:`~cinegpu.decode.backend.select_backend` raises it for ``--backend cuda``."""
    if tier1 == "gpu" and not select_backend(backend).gpu_tier1:
        raise UsageError(f"--tier1 gpu needs the cuda back end; --backend {backend} decodes on the CPU here")


def captions_argument(p) -> None:
    """``--captions on|off``: a composition's closed captions drawn over the picture."""
    p.add_argument("--captions", choices=("on", "off"), default="off",
                   help="draw the composition's closed captions (ST 429-12 ClosedCaption) over the "
                        "picture, above its subtitles (default off: in a cinema they go to viewers' "
                        "own devices)")


def stereo_argument(p) -> None:
    """``--stereo MODE``: how a 3D composition is shown (:mod:`cinegpu.player.stereo`)."""
    p.add_argument("--stereo", choices=STEREO_MODES, default=None,
                   help="a 3D composition shown as: left or right (one eye; default left), "
                        "side-by-side, top-bottom, anaglyph (red/cyan), frame-sequential (the "
                        "eyes in turn at twice the rate) or quad-buffer (an eye a back buffer of a "
                        "stereo OpenGL display: 3D projectors and monitors); refused for a 2D one")


def cluster_arguments(p, what: str, *, frames: bool = True) -> None:
    """``--cluster``, ``--cluster-tls``, ``--cluster-frames`` and ``--insecure-cluster``: where
    ``what`` is done on a Dask cluster, how it is reached and how the frames reach its workers
    (:mod:`cinegpu.jobs.cluster`)."""
    p.add_argument("--cluster", default=None, metavar="ADDRESS|local[:N]",
                   help=f"{what} on a Dask cluster: local[:N] (N worker processes here, TLS with "
                        "throw-away credentials) or a TLS scheduler's address, tls://host:8786"
                        + ("" if frames else " (the workers must see the files at the same paths)")
                        + "; needs cinegpu[cluster]")
    p.add_argument("--cluster-tls", type=Path, default=None, metavar="DIR",
                   help="this side's credentials for a tls:// scheduler: DIR/ca.pem, cert.pem, "
                        "key.pem (cinegpu cluster-tls makes them; default: Dask's configuration)")
    if frames:
        p.add_argument("--cluster-frames", choices=("sent", "shared"), default=None,
                       help="sent: this machine reads each frame and sends it to the worker that codes "
                            "it (the default with a scheduler); shared: the workers read the files "
                            "themselves, which they must see at the same paths (the default with local[:N])")
    p.add_argument("--insecure-cluster", action="store_true",
                   help="allow a plain tcp:// scheduler, which runs tasks from anyone who reaches "
                        "it: only on a network you trust")


def cluster_address(args) -> ClusterAddress | None:
    """The cluster :func:`cluster_arguments` asked for (None: none); UsageError for a bad
    address, a plain one without ``--insecure-cluster``, or TLS options without a cluster."""
    if args.cluster is None:
        if args.cluster_tls is not None or args.insecure_cluster or getattr(args, "cluster_frames", None):
            raise UsageError("--cluster-tls, --cluster-frames and --insecure-cluster go with --cluster")
        return None
    frames = getattr(args, "cluster_frames", None)
    shared = None if frames is None else frames == "shared"
    try:
        return parse_address(args.cluster, tls=args.cluster_tls, insecure=args.insecure_cluster, shared=shared)
    except ValueError as exc:
        raise UsageError(f"--cluster: {exc}") from None
