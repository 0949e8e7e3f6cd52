"""``cinegpu decode FILE -o IMAGE``: decode one codestream or JP2 file to an image;
``cinegpu decode FILE|FOLDER ... -o FOLDER``: decode many, in parallel, one image each.

Many files go through a :class:`~cinegpu.decode.pipeline.FramePipeline` in one process, as
``opj_decompress -ImgDir`` and ``grk_decompress -ImgDir -OutDir`` decode a folder: each of its
worker processes loads the decoder once (numba's start-up, about half a second a process),
not once a file as a shell loop over ``cinegpu decode FILE`` does, and the files are
decoded on every core. A file that fails is reported and the others are decoded; the status
is then 2.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cinegpu.decode import BackendUnavailable, CodestreamError, LenientWarning, PipelineError, UnsupportedFeature
from cinegpu.decode.area import Area, component_windows, tile_area
from cinegpu.decode.codestream.header import parse_codestream
from cinegpu.decode.cpus import usable_cores
from cinegpu.decode.jp2 import channel_depths, channel_order, read_jp2
from cinegpu.decode.request import DecodeRequest
from cinegpu.media.errors import MediaError
from cinegpu.media.images.jp2_colour import Picture, codestream_for_display, for_display
from cinegpu.media.images.write import write_image
from cinegpu.media.source import frame_files, is_mxf, read_codestream_file, sniff

from .args import non_negative_int, positive_int
from .compiling import compile_decoder
from .interrupts import stoppable

#: Output suffixes ``decode`` writes, as :func:`cinegpu.media.images.write.write_image` takes them.
OUTPUT_SUFFIXES = (".tif", ".tiff", ".png", ".pgx")
#: ``--format`` of the folder mode: each file's image type.
FORMATS = ("tif", "png", "pgx")
#: Threads that write the folder mode's images at most (as many as the usable cores, if fewer).
IMAGE_WRITERS = 4


def register(sub) -> None:
    p = sub.add_parser("decode", help="decode .j2c/.j2k/.jp2 files to TIFF, PNG or PGX")
    p.add_argument("file", type=Path, nargs="+", metavar="FILE",
                   help="the .j2c/.j2k codestream or .jp2 file to decode; several, or folders (their "
                        ".j2c/.j2k/.jp2 files, in natural order), are decoded in parallel into the folder -o names")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT",
                   help="one file: its image, .tif/.tiff or .png (components of one size) or .pgx (one file "
                        "each); several files or a folder: the folder the images go to (made if missing), "
                        "each named after its file")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="several files or a folder: the images' type (default tif; one file's is -o's suffix)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="several files or a folder: decoding processes (default: the usable cores less one)")
    p.add_argument("-r", "--reduce", type=non_negative_int, default=0, metavar="N", help="discard the N highest resolution levels")
    p.add_argument("-l", "--layers", type=positive_int, default=None, metavar="N", help="decode only the first N quality layers")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-d", "--area", type=area_arg, default=None, metavar="X0,Y0,X1,Y1",
                       help="decode only this rectangle of the reference grid (the image's coordinates at full "
                            "resolution, its offset included), as opj_decompress -d; of every file, with several")
    where.add_argument("-t", "--tile", type=non_negative_int, default=None, metavar="N",
                       help="one file: decode only tile N (its rectangle), as opj_decompress -t")
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


def area_arg(text: str) -> Area:
    """``X0,Y0,X1,Y1``: a decode area (:class:`~cinegpu.decode.area.Area`)."""
    try:
        return Area.of(text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args) -> int:
    if len(args.file) == 1 and not args.file[0].is_dir():
        return _run_one(args)
    if args.tile is not None:
        _say("--tile decodes one file, not several or a folder (--area takes them all)")
        return 2
    return stoppable("decode", _run_many, args)


def _say(*parts) -> None:
    print("cinegpu decode:", *parts, file=sys.stderr)


#: The first bytes of a codestream (SOC, then SIZ's marker: T.800 A.4.1, A.5.1) and of a JP2
#: file (its signature box, T.800 I.5.1).
CODESTREAM_START, JP2_START = b"\xff\x4f\xff\x51", b"\x00\x00\x00\x0cjP  \r\n\x87\n"


#: What ``decode`` says of an MXF track file given to it.
MXF_GIVEN = "an MXF track file, not a codestream or JP2 file (cinegpu play and cinegpu bench take MXF files and packages)"


def _why(source: Path, data: bytes, error: Exception) -> str:
    """``error`` in words, saying what the file is where it is neither a codestream nor a JP2
    file (an MXF track file, an image, XML): a user who pointed the command at one learns
    which command takes it."""
    if data.startswith((CODESTREAM_START, JP2_START)) or not isinstance(error, CodestreamError):
        return str(error)
    if is_mxf(source):
        return MXF_GIVEN
    kind = sniff(source)
    if kind == "XML":
        return "XML, not a codestream or JP2 file (cinegpu play and cinegpu bench take a package's CPL or folder)"
    return f"not a codestream or JP2 file ({kind}): {error}"


@contextlib.contextmanager
def _tolerated(lines: list[str]):
    """The text of each :class:`LenientWarning` raised inside added to ``lines`` (said later,
    with the file's name), none printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LenientWarning)
        try:
            yield
        finally:
            lines += [str(w.message) for w in caught if issubclass(w.category, LenientWarning)]


def _limits(args):
    """The decoder's :class:`~cinegpu.decode.limits.Limits` from ``--max-pixels`` and
    ``--max-memory`` (absent: the defaults; 0: none)."""
    from cinegpu.decode.limits import (  # noqa: PLC0415  (start-up: the decoder, ~80 ms)
        DEFAULT_MAX_MEMORY,
        DEFAULT_MAX_PIXELS,
        Limits,
    )

    def limit(value, default):
        return default if value is None else (value or None)

    return Limits(limit(args.max_pixels, DEFAULT_MAX_PIXELS), limit(args.max_memory, DEFAULT_MAX_MEMORY))


# --- one file ------------------------------------------------------------------------------
def _check_paths(source: Path, output: Path) -> str | None:
    """The first mistake in the input and output paths, in words, or None: checked before
    anything is decoded."""
    if not source.exists():
        return f"{source}: no such file"
    if not source.is_file():
        return f"{source}: not a file (give .j2c/.j2k/.jp2 files or folders of them)"
    if source.suffix.lower() == ".mxf":
        return f"{source}: {MXF_GIVEN}"
    if output.suffix.lower() not in OUTPUT_SUFFIXES:
        return f"{output}: unknown image type {output.suffix or '(none)'!r}: use .tif, .png or .pgx"
    folder = output.parent
    if not folder.is_dir():
        return f"{output}: folder {folder} does not exist"
    if output.is_dir():
        return f"{output}: is a folder"
    return None


def _suffixes(fmt: str) -> tuple[str, ...]:
    """The suffixes (without the dot) of a ``--format``."""
    return ("tif", "tiff") if fmt == "tif" else (fmt,)


def _run_one(args) -> int:
    from cinegpu.decode.decoder import Decoder  # noqa: PLC0415  (start-up: the decoder, ~80 ms)

    source = args.file[0]
    problem = _check_paths(source, args.output)
    if problem is None and args.format is not None and args.output.suffix.lower().lstrip(".") not in _suffixes(args.format):
        problem = f"{args.output}: --format {args.format} names the images of several files; one file's is -o's suffix"
    if problem:
        _say(problem)
        return 2
    try:
        data = read_codestream_file(source)
    except MediaError as exc:
        _say(exc)
        return 2
    compile_decoder("decode")
    limits = _limits(args)
    said: list[str] = []
    with _tolerated(said):
        try:
            area = _area(source, data, args)
            decoder = Decoder(args.backend, max_pixels=limits.max_pixels, max_memory=limits.max_memory)
            frame = decoder.decode(data, reduce=args.reduce, layers=args.layers, strict=args.strict, area=area)
            picture = _picture(data, frame, args.reduce, args.output.suffix.lower(), area)
            error = None
        except (CodestreamError, BackendUnavailable, ValueError) as exc:   # ValueError: an area outside the image
            error = exc
    # what the peers tolerate (LenientWarning), each said once
    for message in dict.fromkeys(said):
        _say(f"{source}: warning: {message}")
    if error is not None:
        _say(f"{source}: {_why(source, data, error)}")
        return 2
    for path in _write(picture, _image_path(source, picture, frame, args.output)):
        print(path)
    return 0


def _area(source: Path, data: bytes, args) -> Area | None:
    """The decode area of ``-t`` (the tile's rectangle) or ``-d`` (cut to the image, as
    OpenJPEG cuts it, which is said), or None; ValueError where the image has no such tile
    or nothing of the area."""
    if args.tile is None and args.area is None:
        return None
    cs = parse_codestream(read_jp2(data)[0], main_only=True)
    if args.tile is not None:
        return tile_area(cs, args.tile)
    area = args.area.within(cs.siz)
    if area != args.area:
        _say(f"{source}: warning: decode area cut to the image: {area.x0},{area.y0},{area.x1},{area.y1}")
    return area


def _image_path(source: Path, picture: Picture, frame, out: Path) -> Path:
    """Where ``picture`` (``source``'s) goes: ``out``, or PGX where its components differ in
    size; its notes and what the decode passed over said on the way."""
    for note in picture.notes:
        _say(f"{source}: warning: {note}")
    if out.suffix.lower() in (".tif", ".tiff", ".png") and len({c.shape for c in picture.components}) > 1:
        out = out.with_suffix(".pgx")
        _say(f"{source}: components differ in size: writing PGX ({out.stem}_N.pgx)")
    for fault in dict.fromkeys(f.line() for f in frame.passed_over()):
        _say(f"{source}: warning: {fault}")
    return out


def _write(picture: Picture, out: Path) -> list[Path]:
    """``picture`` written to ``out`` (:func:`~cinegpu.media.images.write.write_image`): the files."""
    return write_image(out, picture.components, picture.bits, picture.signed, photometric=picture.photometric,
                       alpha=picture.alpha)


def _picture(data: bytes, frame, reduce: int, suffix: str, area: Area | None = None) -> Picture:
    """What to write: the frame's channels with their precision; written as TIFF or PNG
    (``suffix``), a JP2 file's converted to display colours, and a bare codestream's three
    components of sub-sampled chroma taken for sYCC as ``opj_decompress`` takes them
    (``cinegpu.media.images.jp2_colour``). PGX keeps the decoded values."""

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
    if suffix == ".pgx":
        return Picture(comps, bits, signed, frame.alpha)
    origins = sampling = None
    if len(comps) == siz.Csiz and (header is None or (header.palette is None and not header.cdef)):
        sampling = list(zip(siz.XRsiz, siz.YRsiz))
        # each component's first sample (x, y) on its own grid, reduced (for sYCC chroma
        # siting), of the image or the decode area; the channels after a palette or cdef are not
        # the components: their origins stay 0
        firsts = (siz.component_origins(reduce) if area is None
                  else component_windows(siz, area.within(siz), reduce)[1])
        origins = [(x, y) for y, x in firsts]
    if header is None:
        return codestream_for_display(comps, bits, signed, list(zip(siz.XRsiz, siz.YRsiz)), alpha=frame.alpha,
                                      origins=origins)
    return for_display(comps, bits, signed, header, alpha=frame.alpha, tiff=suffix in (".tif", ".tiff"),
                       origins=origins, sampling=sampling)


# --- many files ----------------------------------------------------------------------------
@dataclass(frozen=True)
class ImageJob:
    """One file of the folder mode: where it is read from and where its image goes."""

    source: Path
    image: Path


def plan_images(sources: list[Path], folder: Path, fmt: str) -> tuple[list[ImageJob], str | None]:
    """Each source's image in ``folder`` (its stem and ``.fmt``), and the first mistake in
    words (None: none): an ``-o`` that names an image rather than a folder, a folder whose
    parent does not exist, two sources that would write one image."""
    if folder.suffix.lower() in OUTPUT_SUFFIXES and not folder.is_dir():
        return [], f"{folder}: with several files or a folder, -o names a folder, not an image"
    if folder.exists() and not folder.is_dir():
        return [], f"{folder}: not a folder"
    if not folder.parent.is_dir():
        return [], f"{folder}: folder {folder.parent} does not exist"
    jobs, taken = [], {}
    for source in sources:
        image = folder / f"{source.stem}.{fmt}"
        if image.name in taken:
            return [], f"{taken[image.name]} and {source} would both write {image}"
        taken[image.name] = source
        jobs.append(ImageJob(source, image))
    return jobs, None


def _run_many(args) -> int:
    from cinegpu.decode.pipeline import FramePipeline  # noqa: PLC0415  (start-up: the decoder, ~80 ms)

    try:
        sources = frame_files(args.file)
    except MediaError as exc:
        _say(exc)
        return 2
    if not sources:
        _say(f"no .j2c/.j2k/.jp2 file in {', '.join(map(str, args.file))}")
        return 2
    jobs, problem = plan_images(sources, args.output, args.format or FORMATS[0])
    if problem:
        _say(problem)
        return 2
    args.output.mkdir(exist_ok=True)
    compile_decoder("decode")
    request = DecodeRequest(reduce=args.reduce, layers=args.layers, strict=args.strict, area=args.area)
    t0 = time.perf_counter()
    try:
        with FramePipeline(backend=args.backend, workers=args.workers, request=request, limits=_limits(args)) as pipe:
            failed = _decode_all(pipe, jobs, args.reduce, writers=min(IMAGE_WRITERS, usable_cores()), area=args.area)
            workers = pipe.num_workers
    except (BackendUnavailable, PipelineError, UnsupportedFeature) as exc:
        _say(exc)
        return 2
    took = time.perf_counter() - t0
    _say(f"{len(jobs) - failed} of {len(jobs)} files decoded into {args.output} in {took:.2f} s "
         f"({len(jobs) / took:.1f} files a second, {workers} decoding process{'es' if workers > 1 else ''})")
    return 2 if failed else 0


def _decode_all(pipe, jobs: list[ImageJob], reduce: int, writers: int, area: Area | None = None) -> int:
    """Every job's file through ``pipe`` (read as it is submitted, at most the pipeline's
    depth of them held), each image written as its frame comes back, by ``writers`` threads
    (zlib and file writes let the GIL go: a 16-bit PNG of a 2K frame takes longer to
    compress than the frame takes to decode) while this thread says everything, in order;
    the number that failed."""
    held: dict[int, tuple[ImageJob, bytes, list[str]]] = {}   # seq -> job, codestream, warnings so far
    writing: deque[tuple[ImageJob, Future]] = deque()           # in the order the files came
    failed = 0

    def written(limit: int) -> int:     # the writes done, in order, waiting while more than ``limit`` are not
        bad = 0
        while writing and (len(writing) > limit or writing[0][1].done()):
            job, future = writing.popleft()
            try:
                paths = future.result()
            except (OSError, ValueError) as exc:
                _say(f"{job.source}: cannot write {job.image}: {exc}")
                bad += 1
                continue
            for path in paths:      # a reader that left (`| head`) ends the command, as for cat
                print(path)
        return bad

    def finish() -> int:      # the pipeline hands frames back in the order they went in, as ``held`` holds them
        job, data, said = held.pop(next(iter(held)))
        with _tolerated(said):      # a JP2 file's channels, put in order
            _, result = pipe.get()
        picture = _finish(job, data, said, result, reduce, area)
        if picture is None:
            return 1
        writing.append((job, pool.submit(_write, *picture)))
        return written(limit=writers + 1)    # each picture waiting holds a frame's samples

    pool = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="cinegpu-image-writer")
    try:
        for job in jobs:
            if job.source.suffix.lower() == ".mxf":
                _say(f"{job.source}: {MXF_GIVEN}")
                failed += 1
                continue
            try:
                data = read_codestream_file(job.source)
            except MediaError as exc:
                _say(exc)
                failed += 1
                continue
            while pipe.in_flight >= pipe.depth:
                failed += finish()
            said: list[str] = []
            with _tolerated(said):
                try:
                    seq = pipe.submit(data)
                except (CodestreamError, ValueError) as exc:      # ValueError: an area outside the image
                    seq, error = None, exc
            if seq is None:
                _finish(job, data, said, error, reduce, area)
                failed += 1
            else:
                held[seq] = (job, data, said)
        while pipe.in_flight:
            failed += finish()
        failed += written(limit=0)
    finally:    # an image being written is finished (renamed into place), those not begun are dropped
        pool.shutdown(wait=True, cancel_futures=True)
    return failed


def _finish(job: ImageJob, data: bytes, said: list[str], result, reduce: int,
            area: Area | None = None) -> tuple[Picture, Path] | None:
    """One file's frame back: its picture and image path (None where it failed), what it
    tolerated said once each."""
    if not isinstance(result, Exception):
        with _tolerated(said):
            try:
                picture = _picture(data, result, reduce, job.image.suffix.lower(), area)
            except CodestreamError as exc:
                result = exc
    for message in dict.fromkeys(said):
        _say(f"{job.source}: warning: {message}")
    if isinstance(result, Exception):
        _say(f"{job.source}: {_why(job.source, data, result)}")
        return None
    return picture, _image_path(job.source, picture, result, job.image)
