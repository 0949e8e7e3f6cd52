"""The ``cinegpu`` command line: one program, one subcommand per job.

Each subcommand lives in its own module under ``cinegpu.player.commands``
and exposes ``register(subparsers)``; this file only assembles them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: Subcommand modules, in the order ``cinegpu --help`` lists them.
COMMANDS = ("play", "decode", "info", "bench", "check", "serve", "master", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cinegpu",
        description="JPEG 2000 decoder, player and playback server for digital cinema.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"cinegpu.player.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # the built-in default: master the demo sequence, then play it
        args = parser.parse_args(["demo"])
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
