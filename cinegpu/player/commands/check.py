"""``cinegpu check PATH``: verify a DCP or IMF package's hashes and sizes against its PKLs;
with ``--decode``, decode every frame of every package under a folder (here, or on a Dask
cluster with ``--cluster``); with ``--report R.html``, also a QC report of the package
(:mod:`cinegpu.jobs.report`) beside the check's own output."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from cinegpu.media.package.check import check as check_package
from cinegpu.media.package.check import run as check_run
from cinegpu.media.package.read import find_assetmap

from .args import UsageError, cluster_address, cluster_arguments, positive_int


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check", help="verify every PKL asset's size and SHA-1 hash; report missing and extra "
                      "files (--decode: decode every frame of a library of packages)")
    p.add_argument("path", help="package folder (DCP or IMF) or its ASSETMAP; with --decode, a "
                                "package folder or a folder of packages (a library)")
    p.add_argument("--decode", action="store_true",
                   help="decode every frame of every picture track file the packages' CPLs "
                        "name, and report each frame that fails (package, track file, frame, "
                        "error), instead of checking hashes")
    cluster_arguments(p, "with --decode: decode", frames=False)
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="with --decode: decoding processes here, or a local cluster's workers "
                        "(default: one per CPU core)")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="cpu",
                   help="with --decode: the decoder's back end (default cpu; auto: the GPU "
                        "where there is one, on a cluster its GPU workers)")
    p.add_argument("--ov", action="append", default=[], metavar="DIR",
                   help="an original-version package whose track files the checked supplemental "
                        "package (VF) uses: its CPL assets found there are reported as in the OV "
                        "and checked against the CPL's hashes; repeatable")
    p.add_argument("--report", metavar="HTML", default=None,
                   help="also write a QC report of the package: one self-contained HTML page (bit rate, "
                        "loudness, subtitles, thumbnails, the verdicts) and its JSON twin (same stem, .json); "
                        "needs pip install 'cinegpu[report]'")
    p.add_argument("--thumbnails-every", type=_seconds, default=None, metavar="SECONDS",
                   help="with --report: a thumbnail every SECONDS (default 10; and each reel's first frame)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def _seconds(text: str) -> float:
    """A number of seconds above 0 (``--thumbnails-every``)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want a number of seconds, got {text!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return v


def _report_target(args) -> Path | None:
    """The report page asked for, checked before any work (UsageError: the report's
    dependencies missing, the path not a package, the page's folder missing)."""
    if args.report is None:
        if args.thumbnails_every is not None:
            raise UsageError("--thumbnails-every goes with --report")
        return None
    from cinegpu.jobs.report import check_target  # noqa: PLC0415  (start-up: only with --report)

    try:
        page = check_target(args.report)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    folder = Path(args.path)
    if find_assetmap(folder if folder.is_dir() else folder.parent) is None:
        raise UsageError(f"--report: {args.path} is not a package (a folder with an ASSETMAP); "
                         f"a report is of one package")
    return page


def _write_report(args, page: Path, checked=None, decoded=None) -> None:
    """Write the report of ``args.path`` with the check's verdicts, and say where it is."""
    from cinegpu.jobs.report import write_report  # noqa: PLC0415  (start-up: only with --report)

    from .compiling import compile_decoder  # noqa: PLC0415  (start-up: numba, for the thumbnails)
    compile_decoder("check")
    html, twin = write_report(page, args.path, checked=checked, decoded=decoded, ov=args.ov,
                              every=args.thumbnails_every or 10.0, progress=not args.no_progress)
    print(f"report: {html} ({twin.name})")


def run(args) -> int:
    """0: the package checks out (--decode: every frame decodes); 1: problems found (printed);
    2: bad arguments, a library that is not a folder, or a cluster that cannot be reached."""
    if not Path(args.path).exists():        # a mistake in what was asked, not a failing package
        raise UsageError(f"{args.path}: no such file or folder")
    page = _report_target(args)
    if not args.decode:
        if args.cluster or args.cluster_tls or args.insecure_cluster or args.workers or args.backend != "cpu":
            raise UsageError("--cluster, --cluster-tls, --insecure-cluster, --workers and --backend go with --decode")
        if page is None:
            return check_run(args.path, progress=not args.no_progress, ov=args.ov)
        checked = check_package(args.path, not args.no_progress, args.ov)
        print(checked.text())
        _write_report(args, page, checked=checked)
        return 0 if checked.ok else 1
    if args.ov:
        raise UsageError("--ov goes without --decode (a library's packages are decoded as they are)")
    from cinegpu.jobs.check_decode import run as decode_run  # noqa: PLC0415  (start-up: the decoder, ~80 ms)
    where = cluster_address(args)
    from .compiling import compile_decoder  # noqa: PLC0415  (start-up: numba, for --decode only)

    compile_decoder("check")
    if page is None:
        return decode_run(args.path, cluster=where, workers=args.workers,
                          backend=args.backend, progress=not args.no_progress)
    from cinegpu.jobs.check_decode import check_library  # noqa: PLC0415  (start-up: the decoder, ~80 ms)
    decoded = check_library(args.path, cluster=where, workers=args.workers, backend=args.backend,
                            progress=not args.no_progress)
    print(decoded.text())
    _write_report(args, page, decoded=decoded)
    return 0 if decoded.ok else 1
