"""``cinegpu cluster-tls DIR``: a CA and TLS credentials for a Dask cluster across machines."""

from __future__ import annotations

import sys
from pathlib import Path

from cinegpu.jobs.cluster_tls import ROLES, make_credentials

from .args import UsageError, positive_int


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster-tls", help="make TLS credentials for a Dask cluster (a CA, and a folder per role)",
        description="Make a new CA and, for each role, a folder DIR/ROLE of ca.pem, cert.pem and "
                    "key.pem (keys 0600, folders 0700) for a tls:// Dask cluster; the CA's key "
                    "stays in DIR/ca. Give the scheduler, worker and client folders to the "
                    "machines of those roles (docs/cluster.md).")
    p.add_argument("folder", type=Path, metavar="DIR", help="where to make them (nothing is overwritten)")
    p.add_argument("--role", action="append", default=None, metavar="NAME",
                   help=f"a folder to make (repeatable; default: {', '.join(ROLES)})")
    p.add_argument("--days", type=positive_int, default=365, metavar="N",
                   help="days the certificates are valid (default 365)")
    p.set_defaults(run=run)


def run(args) -> int:
    try:
        made = make_credentials(args.folder, tuple(args.role or ROLES), days=args.days)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    for role, folder in made.items():
        print(f"{role:10s} {folder}")
    print(f"the CA's key: {Path(args.folder) / 'ca' / 'ca.key'} (keep it here)", file=sys.stderr)
    return 0
