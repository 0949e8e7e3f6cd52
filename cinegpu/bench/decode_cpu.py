"""Our CPU decode against ``opj_decompress -threads 1``, one thread each, per conformance stream.

    python3 -m cinegpu.bench.decode_cpu [--set part1|all] [--repeat N] [--runs N] [--conformance DIR]
    python3 -m cinegpu.bench.decode_cpu [--repeat N] [--runs N] PATH [PATH ...]

For every codestream that ``MANIFEST.tsv`` lists (``part1``: the T.803 Part-1 profile-0 and
profile-1 streams, ``p0_*``/``p1_*``; ``all``: the HTJ2K and hi-fi ones too), or every file
named (a folder: its codestream and JP2 files, in natural order; one's own content), each
decoded whole (every component, reduce 0, what ``opj_decompress`` does by default):

* ours: :func:`cinegpu.decode.decode` on the CPU back end with one numba thread, after one DCI
  frame has been decoded in the process: the stream's first call (what ``cinegpu decode FILE``,
  ``info`` and the first frame of a composition pay), then the median of ``repeat`` calls. A
  later call of the same stream may use what the first one cached (its plans), as a user
  decoding a sequence of frames does.
* opj: OpenJPEG's library, ``libopenjp2`` (what ``opj_decompress`` runs), with one thread, in
  this process, after the same DCI frame: timed around ``opj_read_header``, ``opj_decode`` and
  ``opj_end_decompress``, the span ``opj_decompress`` prints as its "decode time": its first
  decode of the stream, then the median of ``repeat``. ``opj_decompress -threads 1`` prints
  that time in whole milliseconds (0 for a third of these streams), so its printed time is
  listed beside (one run, a process of its own) as a cross-check.

Each side is warmed as much as the other: the first calls are compared with each other (each
library's first decode of the stream in the process, right after other work, so with the
processor's caches cold for it: which of the two goes first alternates from stream to
stream), the warm medians with each other. The table gives the times and ratios (ours / opj),
each row printed as it is measured, then the median and the worst ratio of each.

A first call is timed once per process, and the same build's runs spread widely (docs/performance.md):
``--runs N`` runs the whole table in N fresh processes, one after another, prints each run's
summary as it ends, then the table of each stream's medians over the runs (each column's median
on its own; the ratios are those of the medians).
Nothing here asserts a time; ``tests/test_bench_cpu.py`` checks the table's shape only.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numba

from cinegpu.bench import decode_peers as peers
from cinegpu.decode.api import decode
from cinegpu.decode.errors import CodestreamError, LenientWarning
from cinegpu.media.errors import MediaError
from cinegpu.media.samples import BARS_2K
from cinegpu.media.source import frame_files, read_codestream_file

__all__ = ["Row", "first_ours", "format_table", "main", "manifest_streams", "median_rows", "table", "warm_ours"]

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance"
#: The DCI frame every run decodes first (numba's kernels loaded before any stream is timed).
SAMPLE = BARS_2K


@dataclass(frozen=True)
class Row:
    """One stream's line: our and OpenJPEG's milliseconds, and opj_decompress's printed time."""

    stream: str
    ours_ms: float | None  #: warm median; None: our decoder refused the stream
    opj_ms: float | None  #: libopenjp2's warm median in this process (None: it failed or is absent)
    printed_ms: float | None = None  #: what ``opj_decompress -threads 1`` printed (whole ms)
    first_ms: float | None = None  #: our first decode of the stream in this process
    opj_first_ms: float | None = None  #: libopenjp2's first decode of the stream in this process

    @property
    def ratio(self) -> float | None:
        return None if not self.opj_ms or self.ours_ms is None else self.ours_ms / self.opj_ms

    @property
    def first_ratio(self) -> float | None:
        return None if not self.opj_first_ms or self.first_ms is None else self.first_ms / self.opj_first_ms


def manifest_streams(conformance: Path, which: str = "part1") -> list[Path]:
    """The distinct codestreams MANIFEST.tsv lists that are present, in its order."""
    seen: list[Path] = []
    with open(conformance / "MANIFEST.tsv", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            name = row["file"].split()[0]
            if which == "part1" and not name.startswith("part1/"):
                continue
            path = conformance / name
            if path.is_file() and path not in seen:
                seen.append(path)
    return seen


def first_ours(data: bytes) -> float:
    """ms of the first decode() of this stream in the process: it pays for the stream's plans
    and limits, the later ones reuse them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LenientWarning)
        t0 = time.perf_counter()
        decode(data)
        return (time.perf_counter() - t0) * 1e3


def warm_ours(data: bytes, repeat: int) -> float:
    """Median ms of ``repeat`` decode() calls of a stream decoded before."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LenientWarning)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            decode(data)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def warm_up() -> None:
    """One decode of a DCI frame (the package's sample) by each side before any stream is
    timed: numba's kernels loaded from its cache, as in a player or a `cinegpu decode` that has
    run once, and libopenjp2 loaded and run once."""

    decode(SAMPLE.read_bytes())
    peers.openjpeg_decode_ms(SAMPLE, threads=1, repeat=1)


def table(streams: list[Path], repeat: int = 5, *, printed: bool = True, emit=None) -> list[Row]:
    """One :class:`Row` per stream (numba is asked for one thread here), each stream's first
    decode in this process timed as well as the warm ones. ``printed``: also run
    ``opj_decompress`` once per stream for its printed decode time. ``emit``: called with each
    row as it is measured."""

    numba.set_num_threads(1)
    warm_up()
    rows = []
    for k, path in enumerate(streams):
        data = read_codestream_file(path)
        opj = None
        if k % 2:       # OpenJPEG's first call first on every other stream
            opj = peers.openjpeg_first_and_warm_ms(path, threads=1, repeat=repeat)
        try:
            first = first_ours(data)
            ours = warm_ours(data, repeat)
        except CodestreamError:
            first = ours = None
        if not k % 2:
            opj = peers.openjpeg_first_and_warm_ms(path, threads=1, repeat=repeat)
        run = peers.opj_decode_time(path, threads=1) if printed else None
        opj_first, opj_warm = (None, None) if opj is None else opj
        rows.append(Row(path.name, ours, opj_warm, None if run is None else run[0], first, opj_first))
        if emit is not None:
            emit(rows[-1])
    return rows


def median_rows(runs: list[list[Row]]) -> list[Row]:
    """Each stream's :class:`Row` of medians over ``runs`` (tables of the same streams in the same
    order): every column's median over the runs that have it (None where none has)."""
    def med(values):
        got = [v for v in values if v is not None]
        return statistics.median(got) if got else None

    names = [f.name for f in dataclasses.fields(Row) if f.name != "stream"]
    out = []
    for rows in zip(*runs):
        if len({r.stream for r in rows}) != 1:
            raise ValueError(f"the runs' tables differ: {sorted({r.stream for r in rows})}")
        out.append(Row(rows[0].stream, **{n: med(getattr(r, n) for r in rows) for n in names}))
    return out


def _run_apart(argv: list[str], runs: int) -> list[Row]:
    """The table of ``argv`` (this module's options and paths) in ``runs`` fresh processes, one
    after another, each run's summary printed as it ends; each stream's medians."""
    tables = []
    with tempfile.TemporaryDirectory(prefix="cinegpu-bench-cpu-") as tmp:
        for k in range(runs):
            out = Path(tmp) / f"run{k}.json"
            done = subprocess.run([sys.executable, "-m", "cinegpu.bench.decode_cpu", *argv, "--rows", str(out)],
                                  capture_output=True, text=True)
            if done.returncode != 0 or not out.is_file():
                sys.exit(f"decode_cpu: run {k + 1} of {runs} failed: {done.stderr.strip()[-2000:]}")
            rows = [Row(**r) for r in json.loads(out.read_text())]
            tables.append(rows)
            for line in summary(rows):
                print(f"run {k + 1} of {runs}: {line}", flush=True)
    return median_rows(tables)


HEADER = ("# ours: decode() on the CPU back end, 1 numba thread; opj: libopenjp2 1 thread, read_header + decode +"
          " end_decompress; each after one DCI frame: the stream's first call in the process (first, opj first),"
          " then warm, median; printed: opj_decompress -threads 1's 'decode time' (whole ms, one run)")
COLUMNS = (f"{'stream':24s} {'first ms':>9s} {'opj 1st':>9s} {'ratio':>7s} {'ours ms':>9s} {'opj ms':>9s} "
           f"{'ratio':>7s} {'printed':>8s}")


def format_row(r: Row) -> str:
    """One stream's line of the table."""
    def ms(v, missing):
        return missing if v is None else f"{v:9.2f}"

    def ratio(v):
        return "-" if v is None else f"{v:6.2f}x"

    printed = "-" if r.printed_ms is None else f"{r.printed_ms:g}"
    return (f"{r.stream:24s} {ms(r.first_ms, 'refused'):>9s} {ms(r.opj_first_ms, 'failed'):>9s}"
            f" {ratio(r.first_ratio):>7s} {ms(r.ours_ms, 'refused'):>9s} {ms(r.opj_ms, 'failed'):>9s}"
            f" {ratio(r.ratio):>7s} {printed:>8s}")


def summary(rows: list[Row]) -> list[str]:
    """Median and worst ratio, first calls and warm ones."""
    lines = []
    for what, key in (("first call", "first_ratio"), ("warm", "ratio")):
        got = [(getattr(r, key), r.stream) for r in rows if getattr(r, key) is not None]
        if got:
            worst = max(got)
            lines.append(f"{what}: median ratio {statistics.median(v for v, _ in got):.2f}x, worst {worst[0]:.2f}x "
                         f"({worst[1]}); {sum(v > 2 for v, _ in got)} of {len(got)} over 2x")
    return lines


def format_table(rows: list[Row]) -> str:
    """The table as text: a header saying how each side was timed, the rows, median and worst."""
    return "\n".join([HEADER, COLUMNS, *map(format_row, rows), *summary(rows)])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("part1", "all"), default="part1")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--conformance", type=Path, default=CONFORMANCE)
    ap.add_argument("--runs", type=int, default=1,
                    help="the table in this many fresh processes, then each stream's medians (default 1)")
    ap.add_argument("--rows", type=Path, help=argparse.SUPPRESS)    # a run's rows, as JSON (--runs' children)
    ap.add_argument("paths", type=Path, nargs="*", metavar="PATH",
                    help="codestream or JP2 files, or folders of them, instead of the conformance streams")
    args = ap.parse_args(argv)
    try:
        if args.paths:
            streams = frame_files(args.paths)
            if not streams:
                sys.exit("no codestream or JP2 file among " + ", ".join(map(str, args.paths)))
        elif not (args.conformance / "MANIFEST.tsv").is_file():
            sys.exit(f"no MANIFEST.tsv in {args.conformance}")
        else:
            streams = manifest_streams(args.conformance, args.set)
        if args.runs > 1:
            passed = ["--set", args.set, "--repeat", str(args.repeat), "--conformance", str(args.conformance),
                      *map(str, args.paths)]
            rows = _run_apart(passed, args.runs)
            print(f"{HEADER}; each column the median of {args.runs} runs in fresh processes", COLUMNS,
                  *map(format_row, rows), sep="\n", flush=True)
        elif args.rows is not None:
            rows = table(streams, max(args.repeat, 1))
            args.rows.write_text(json.dumps([dataclasses.asdict(r) for r in rows]))
        else:
            print(HEADER, COLUMNS, sep="\n", flush=True)
            rows = table(streams, max(args.repeat, 1), emit=lambda row: print(format_row(row), flush=True))
    except MediaError as exc:
        sys.exit(f"decode_cpu: {exc}")
    if args.rows is None:
        print(*summary(rows), sep="\n", flush=True)


if __name__ == "__main__":
    main()
