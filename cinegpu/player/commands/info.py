"""``cinegpu info PATH``: headers of a codestream (like opj_dump) or a package."""

from __future__ import annotations

import sys
from pathlib import Path

from cinegpu.decode import CodestreamError
from cinegpu.decode.codestream.describe import describe_codestream
from cinegpu.media import MediaError, describe
from cinegpu.media.source import kind_of, read_codestream_file


def register(sub) -> None:
    p = sub.add_parser("info", help="describe a codestream, MXF track file, DCP, IMF package or frame folder")
    p.add_argument("path", type=Path, help="a package folder (DCP or IMF), CPL, MXF track file, J2K/JP2 "
                   "codestream, folder of frames or sound file to describe")
    p.add_argument("--ov", action="append", default=[], metavar="DIR",
                   help="an original-version package whose track files a supplemental package "
                        "(VF) uses; repeatable")
    p.add_argument("--loudness", action="store_true",
                   help="also measure each composition's sound: integrated loudness, loudness "
                        "range and true peak (ITU-R BS.1770-4; reads the whole sound)")
    p.set_defaults(run=run)


def run(args) -> int:
    path: Path = args.path
    try:
        kind = kind_of(path)
    except MediaError as exc:
        print(f"cinegpu info: {exc}", file=sys.stderr)
        return 2
    if kind == "codestream":
        try:
            data = read_codestream_file(path)
        except MediaError as exc:
            print(f"cinegpu info: {exc}", file=sys.stderr)
            return 2
        try:
            print(describe_codestream(data, name=str(path)))
        except CodestreamError as exc:
            print(f"cinegpu info: {path}: {exc}", file=sys.stderr)
            return 2
        return 0
    try:
        print(describe(path, ov=args.ov, loudness=args.loudness))
    except MediaError as exc:
        print(f"cinegpu info: {exc}", file=sys.stderr)
        return 2
    return 0
