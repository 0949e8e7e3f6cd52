"""``cinegpu check PATH``: verify a DCP or IMF package's hashes and sizes against its PKLs."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check", help="verify every PKL asset's size and SHA-1 hash; report missing and extra files")
    p.add_argument("path", help="package folder (DCP or IMF) or its ASSETMAP")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def run(args) -> int:
    from cinegpu.media.check import run as check_run
    return check_run(args.path, progress=not args.no_progress)
