"""The ``cinegpu`` command line: one program, one subcommand per job.

Each subcommand lives in its own module under ``cinegpu.player.commands``
and exposes ``register(subparsers)``; this file only assembles them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

import cinegpu
from cinegpu.decode.errors import BackendUnavailable, CodestreamError, PipelineError
from cinegpu.decode.kernel_cache import skip_blas_probe
from cinegpu.interop import InteropError
from cinegpu.media import MediaError

from .commands.args import UsageError

#: Subcommand modules, in the order ``cinegpu --help`` lists them.
#: the sub-commands, each by the module of cinegpu.player.commands that registers it
COMMANDS = {"play": "play", "decode": "decode", "info": "info", "bench": "speed", "check": "check", "serve": "serve",
            "master": "master", "demo": "demo", "kdm": "kdm", "cluster-tls": "cluster_tls"}


#: Shown under ``cinegpu --help``.
EXAMPLES = """examples:
  cinegpu                                  master a test sequence to a DCP and play it
  cinegpu play /media/MY_DCP               play a DCP (or IMF package, MXF, J2K folder)
  cinegpu bench /media/MY_DCP --compare    decode speed beside OpenJPEG, Grok, nvJPEG2000
  cinegpu master frames/ -o OUT --title T  master TIFF/PNG/DPX frames into a 2K DCP
  cinegpu kdm inspect KDM.xml --key K.pem  a KDM's fields, signature, chain and keys
  cinegpu COMMAND --help                   one command's options

exit codes: 0 done; 1 a check or a playback found problems; 2 a mistake in what was asked
(one line on stderr, before any long work)."""


def version() -> str:
    """The installed distribution's version."""
    return cinegpu.__version__


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported in one line (``cinegpu play: argument --fps: ...``)
    and exit code 2, as every other mistake is; ``--help`` still shows the usage."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="cinegpu",
        description="JPEG 2000 decoder, player and playback server for digital cinema.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cinegpu {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS.values():
        importlib.import_module(f"cinegpu.player.commands.{module}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    skip_blas_probe()       # this process is cinegpu's: numba starts without probing for BLAS
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # the built-in default: master the demo sequence, then play it
        args = parser.parse_args(["demo"])
    try:
        return int(args.run(args) or 0)
    except ORDINARY_ERRORS as exc:    # a mistake or bad media, not a bug: one line
        print(f"cinegpu {args.command or 'demo'}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:           # `cinegpu info X | head`: the reader left, as for cat
        _quiet_stdout()
        return 128 + signal.SIGPIPE


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises nothing more (Python's
    advice for a closed pipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _ordinary_errors() -> tuple[type[BaseException], ...]:
    return (UsageError, CodestreamError, MediaError, InteropError, BackendUnavailable, PipelineError)


#: What a command may raise for bad input or an impossible request, reported in one line.
ORDINARY_ERRORS = _ordinary_errors()


if __name__ == "__main__":
    sys.exit(main())
