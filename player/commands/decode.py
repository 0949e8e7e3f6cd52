"""``cinegpu decode FILE -o OUT``: decode one codestream or JP2 file to an image."""

from __future__ import annotations

import sys
from pathlib import Path

from .args import non_negative_int, positive_int


def register(sub) -> None:
    p = sub.add_parser("decode", help="decode a .j2c/.j2k/.jp2 file to TIFF, PNG or PGX")
    p.add_argument("file", type=Path)
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="output image: .tif/.tiff or .png (components of one size), .pgx (one file each)")
    p.add_argument("-r", "--reduce", type=non_negative_int, default=0, help="discard the N highest resolution levels")
    p.add_argument("-l", "--layers", type=positive_int, default=None, help="decode only the first N quality layers")
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="cpu")
    p.add_argument("--resilient", action="store_true", help="conceal damage instead of failing")
    p.add_argument("--max-pixels", type=non_negative_int, default=None, metavar="N",
                   help="refuse a component of more than N samples (default 2^27; 0: no limit)")
    p.add_argument("--max-memory", type=non_negative_int, default=None, metavar="BYTES",
                   help="refuse a decode estimated to need more (default 4 GiB; 0: no limit)")
    p.set_defaults(run=run)


#: Output suffixes ``decode`` writes, as :func:`cinegpu.media.image_files.write_image` takes them.
OUTPUT_SUFFIXES = (".tif", ".tiff", ".png", ".pgx")


def _check_paths(source: Path, output: Path) -> str | None:
    """The first mistake in the input and output paths, in words, or None: checked before
    anything is decoded."""
    if not source.exists():
        return f"{source}: no such file"
    if not source.is_file():
        return f"{source}: not a file (give one .j2c/.j2k/.jp2 file)"
    if output.suffix.lower() not in OUTPUT_SUFFIXES:
        return f"{output}: unknown image type {output.suffix or '(none)'!r}: use .tif, .png or .pgx"
    folder = output.parent
    if not folder.is_dir():
        return f"{output}: folder {folder} does not exist"
    if output.is_dir():
        return f"{output}: is a folder"
    return None


def run(args) -> int:
    from cinegpu.decode import BackendUnavailable, CodestreamError
    from cinegpu.decode.codestream.header import parse_codestream
    from cinegpu.decode.decoder import Decoder
    from cinegpu.decode.jp2 import read_jp2
    from cinegpu.decode.limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_PIXELS
    from cinegpu.media.image_files import write_image

    def limit(value, default):
        return default if value is None else (value or None)

    problem = _check_paths(args.file, args.output)
    if problem:
        print(f"cinegpu decode: {problem}", file=sys.stderr)
        return 2
    data = args.file.read_bytes()
    try:
        decoder = Decoder(args.backend, max_pixels=limit(args.max_pixels, DEFAULT_MAX_PIXELS),
                          max_memory=limit(args.max_memory, DEFAULT_MAX_MEMORY))
        frame = decoder.decode(data, reduce=args.reduce, layers=args.layers,
                               strict=not args.resilient)
        siz = parse_codestream(read_jp2(data)[0]).siz
    except (CodestreamError, BackendUnavailable) as exc:
        print(f"cinegpu decode: {args.file}: {exc}", file=sys.stderr)
        return 2
    comps = frame.components
    bits = [siz.precision(c) for c in range(len(comps))] if len(comps) == siz.Csiz else [16] * len(comps)
    signed = [siz.signed(c) for c in range(len(comps))] if len(comps) == siz.Csiz else [False] * len(comps)
    out = args.output
    if out.suffix.lower() in (".tif", ".tiff", ".png") and len({c.shape for c in comps}) > 1:
        out = out.with_suffix(".pgx")
        print(f"components differ in size: writing PGX ({out.stem}_N.pgx)", file=sys.stderr)
    for path in write_image(out, comps, bits, signed):
        print(path)
    for r in frame.reports:
        for fault in r.faults:
            print(f"concealed: tile {r.tile}: {fault}", file=sys.stderr)
    return 0
