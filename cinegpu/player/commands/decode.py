"""``cinegpu decode FILE -o OUT``: decode one codestream or JP2 file to an image."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from cinegpu.decode import BackendUnavailable, CodestreamError, LenientWarning
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.jp2 import channel_depths, channel_order, read_jp2
from cinegpu.media.errors import MediaError
from cinegpu.media.images.jp2_colour import Picture, for_display
from cinegpu.media.images.write import write_image
from cinegpu.media.source import read_codestream_file

from .args import non_negative_int, positive_int
from .compiling import compile_decoder


def register(sub) -> None:
    p = sub.add_parser("decode", help="decode a .j2c/.j2k/.jp2 file to TIFF, PNG or PGX")
    p.add_argument("file", type=Path, help="the .j2c/.j2k codestream or .jp2 file to decode")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="IMAGE",
                   help="output image: .tif/.tiff or .png (components of one size), .pgx (one file each)")
    p.add_argument("-r", "--reduce", type=non_negative_int, default=0, metavar="N", help="discard the N highest resolution levels")
    p.add_argument("-l", "--layers", type=positive_int, default=None, metavar="N", help="decode only the first N quality layers")
    p.add_argument("--backend", choices=("cpu", "cuda", "auto"), default="cpu",
                   help="where to decode: cpu (default), cuda (the GPU) or auto (the GPU when there is one)")
    strictness = p.add_mutually_exclusive_group()
    strictness.add_argument("--strict", action="store_true",
                            help="fail on the first departure from ISO/IEC 15444-1 instead of decoding what "
                                 "OpenJPEG decodes and concealing damage (the default), each with a warning")
    strictness.add_argument("--resilient", action="store_true", help=argparse.SUPPRESS)  # the default, as before
    p.add_argument("--max-pixels", type=non_negative_int, default=None, metavar="N",
                   help="refuse a component of more than N samples (default 2^27; 0: no limit)")
    p.add_argument("--max-memory", type=non_negative_int, default=None, metavar="BYTES",
                   help="refuse a decode estimated to need more (default 4 GiB; 0: no limit)")
    p.set_defaults(run=run)


#: Output suffixes ``decode`` writes, as :func:`cinegpu.media.images.write.write_image` takes them.
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
    from cinegpu.decode.decoder import Decoder  # noqa: PLC0415  (start-up: the decoder, ~80 ms)
    from cinegpu.decode.limits import (  # noqa: PLC0415  (start-up: the decoder, ~80 ms)
        DEFAULT_MAX_MEMORY,
        DEFAULT_MAX_PIXELS,
    )

    def limit(value, default):
        return default if value is None else (value or None)

    problem = _check_paths(args.file, args.output)
    if problem:
        print(f"cinegpu decode: {problem}", file=sys.stderr)
        return 2
    try:
        data = read_codestream_file(args.file)
    except MediaError as exc:
        print(f"cinegpu decode: {exc}", file=sys.stderr)
        return 2
    compile_decoder("decode")
    with warnings.catch_warnings(record=True) as tolerated:
        warnings.simplefilter("always", LenientWarning)
        try:
            decoder = Decoder(args.backend, max_pixels=limit(args.max_pixels, DEFAULT_MAX_PIXELS),
                              max_memory=limit(args.max_memory, DEFAULT_MAX_MEMORY))
            frame = decoder.decode(data, reduce=args.reduce, layers=args.layers, strict=args.strict)
            picture = _picture(data, frame, args)
            error = None
        except (CodestreamError, BackendUnavailable) as exc:
            error = exc
    # what the peers tolerate (LenientWarning), each said once
    for message in dict.fromkeys(str(w.message) for w in tolerated if issubclass(w.category, LenientWarning)):
        print(f"cinegpu decode: {args.file}: warning: {message}", file=sys.stderr)
    if error is not None:
        print(f"cinegpu decode: {args.file}: {error}", file=sys.stderr)
        return 2
    comps = picture.components
    for note in picture.notes:
        print(f"cinegpu decode: {args.file}: warning: {note}", file=sys.stderr)
    out = args.output
    if out.suffix.lower() in (".tif", ".tiff", ".png") and len({c.shape for c in comps}) > 1:
        out = out.with_suffix(".pgx")
        print(f"components differ in size: writing PGX ({out.stem}_N.pgx)", file=sys.stderr)
    for path in write_image(out, comps, picture.bits, picture.signed, photometric=picture.photometric,
                            alpha=picture.alpha):
        print(path)
    for fault in dict.fromkeys(f.line() for f in frame.passed_over()):
        print(f"cinegpu decode: {args.file}: warning: {fault}", file=sys.stderr)
    return 0


def _picture(data: bytes, frame, args):
    """What to write: the frame's channels with their precision; for a JP2 file written as TIFF
    or PNG, converted to display colours (``cinegpu.media.images.jp2_colour``). PGX keeps the decoded
    values."""

    codestream, header = read_jp2(data)
    siz = parse_codestream(codestream).siz
    comps = frame.components
    depths = [(siz.precision(c), siz.signed(c)) for c in range(siz.Csiz)]
    if header is not None:
        depths = channel_depths(header, depths)
        if len(depths) == len(comps):
            depths = channel_order(header, len(comps)).apply(depths)
    if len(depths) != len(comps):
        depths = [(16, False)] * len(comps)
    bits, signed = [d[0] for d in depths], [d[1] for d in depths]
    suffix = args.output.suffix.lower()
    if header is None or suffix == ".pgx":
        return Picture(comps, bits, signed, frame.alpha)
    origins = None
    if len(comps) == siz.Csiz and header.palette is None and not header.cdef:
        # each component's first sample on its own grid, reduced (for sYCC chroma siting); the
        # channels after a palette or cdef are not the components: their origins stay 0
        origins = [(_ceil(_ceil(siz.XOsiz, siz.XRsiz[c]), 1 << args.reduce),
                    _ceil(_ceil(siz.YOsiz, siz.YRsiz[c]), 1 << args.reduce)) for c in range(siz.Csiz)]
    return for_display(comps, bits, signed, header, alpha=frame.alpha, tiff=suffix in (".tif", ".tiff"),
                       origins=origins)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)
