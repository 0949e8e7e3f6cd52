"""Our CPU decode against ``opj_decompress -threads 1``, one thread each, per conformance stream.

    python3 -m cinegpu.decode.bench_cpu [--set part1|all] [--repeat N] [--conformance DIR]

For every codestream that ``MANIFEST.tsv`` lists (``part1``: the T.803 Part-1 profile-0 and
profile-1 streams, ``p0_*``/``p1_*``; ``all``: the HTJ2K and hi-fi ones too), each decoded
whole (every component, reduce 0, what ``opj_decompress`` does by default):

* ours: :func:`cinegpu.decode.decode` on the CPU back end with one numba thread, warmed up by
  one call, then the median of ``repeat`` calls. A later call of the same stream may use what
  the first one cached (its plans), as a user decoding a sequence of frames does.
* opj: OpenJPEG's library, ``libopenjp2`` (what ``opj_decompress`` runs), with one thread, in
  this process: timed around ``opj_read_header``, ``opj_decode`` and ``opj_end_decompress``, the
  span ``opj_decompress`` prints as its "decode time", warmed up by one run, median of
  ``repeat``. ``opj_decompress -threads 1`` prints that time in whole milliseconds (0 for a
  third of these streams), so its printed time is listed beside (one run) as a cross-check.

The table gives both times and their ratio (ours / opj), then the median and the worst ratio.
Nothing here asserts a time; ``tests/test_bench_cpu.py`` checks the table's shape only.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import peers
from .errors import CodestreamError

__all__ = ["Row", "format_table", "main", "manifest_streams", "table"]

CONFORMANCE = Path(__file__).resolve().parents[2] / "shared" / "conformance"


@dataclass(frozen=True)
class Row:
    """One stream's line: our and OpenJPEG's milliseconds, and opj_decompress's printed time."""

    stream: str
    ours_ms: float | None  #: None: our decoder refused the stream
    opj_ms: float | None  #: libopenjp2 in this process (None: it failed or is absent)
    printed_ms: float | None = None  #: what ``opj_decompress -threads 1`` printed (whole ms)

    @property
    def ratio(self) -> float | None:
        return None if not self.opj_ms or self.ours_ms is None else self.ours_ms / self.opj_ms


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


def time_ours(data: bytes, repeat: int) -> float:
    """Median ms of ``repeat`` calls of decode() after one warm-up call."""
    from .api import decode

    decode(data)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        decode(data)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def table(streams: list[Path], repeat: int = 5, *, printed: bool = True) -> list[Row]:
    """One :class:`Row` per stream (numba is asked for one thread here). ``printed``: also run
    ``opj_decompress`` once per stream for its printed decode time."""
    import numba

    numba.set_num_threads(1)
    rows = []
    for path in streams:
        try:
            ours = time_ours(path.read_bytes(), repeat)
        except CodestreamError:
            ours = None
        run = peers.opj_decode_time(path, threads=1) if printed else None
        rows.append(Row(path.name, ours, peers.openjpeg_decode_ms(path, threads=1, repeat=repeat),
                        None if run is None else run[0]))
    return rows


def format_table(rows: list[Row]) -> str:
    """The table as text: a header saying how each side was timed, the rows, median and worst."""
    lines = ["# ours: decode() on the CPU back end, 1 numba thread, warm, median; opj: libopenjp2 1 thread,"
             " read_header + decode + end_decompress, warm, median; printed: opj_decompress -threads 1's"
             " 'decode time' (whole ms, one run)",
             f"{'stream':24s} {'ours ms':>9s} {'opj ms':>9s} {'ratio':>7s} {'printed':>8s}"]
    for r in rows:
        ours = "refused" if r.ours_ms is None else f"{r.ours_ms:9.2f}"
        opj = "failed" if r.opj_ms is None else f"{r.opj_ms:9.2f}"
        ratio = "-" if r.ratio is None else f"{r.ratio:6.2f}x"
        printed = "-" if r.printed_ms is None else f"{r.printed_ms:g}"
        lines.append(f"{r.stream:24s} {ours:>9s} {opj:>9s} {ratio:>7s} {printed:>8s}")
    ratios = [r.ratio for r in rows if r.ratio is not None]
    if ratios:
        worst = max((r for r in rows if r.ratio is not None), key=lambda r: r.ratio)
        lines.append(f"median ratio {statistics.median(ratios):.2f}x, worst {worst.ratio:.2f}x ({worst.stream}); "
                     f"{sum(x > 2 for x in ratios)} of {len(ratios)} over 2x")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("part1", "all"), default="part1")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--conformance", type=Path, default=CONFORMANCE)
    args = ap.parse_args(argv)
    if not (args.conformance / "MANIFEST.tsv").is_file():
        sys.exit(f"no MANIFEST.tsv in {args.conformance}")
    print(format_table(table(manifest_streams(args.conformance, args.set), max(args.repeat, 1))), flush=True)


if __name__ == "__main__":
    main()
