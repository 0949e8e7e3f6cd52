"""``cinegpu check PATH``: verify a DCP or IMF package's hashes and sizes against its PKLs;
with ``--decode``, decode every frame of every package under a folder (here, or on a Dask
cluster with ``--cluster``)."""

from __future__ import annotations

from pathlib import Path

from cinegpu.media.package.check import run as check_run

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
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def run(args) -> int:
    """0: the package checks out (--decode: every frame decodes); 1: problems found (printed);
    2: bad arguments, a library that is not a folder, or a cluster that cannot be reached."""
    if not Path(args.path).exists():        # a mistake in what was asked, not a failing package
        raise UsageError(f"{args.path}: no such file or folder")
    if not args.decode:
        if args.cluster or args.cluster_tls or args.insecure_cluster or args.workers or args.backend != "cpu":
            raise UsageError("--cluster, --cluster-tls, --insecure-cluster, --workers and --backend go with --decode")
        return check_run(args.path, progress=not args.no_progress, ov=args.ov)
    if args.ov:
        raise UsageError("--ov goes without --decode (a library's packages are decoded as they are)")
    from cinegpu.jobs.check_decode import run as decode_run  # noqa: PLC0415  (start-up: the decoder, ~80 ms)
    where = cluster_address(args)
    from .compiling import compile_decoder  # noqa: PLC0415  (start-up: numba, for --decode only)

    compile_decoder("check")
    return decode_run(args.path, cluster=where, workers=args.workers,
                      backend=args.backend, progress=not args.no_progress)
