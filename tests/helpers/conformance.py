"""The ISO/IEC 15444-4 conformance cases of ../shared/conformance/MANIFEST.tsv, as data.

The tab-separated columns are read by :func:`load_cases`; the folder is conftest.CONFORMANCE.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from conftest import CONFORMANCE


@dataclass(frozen=True)
class Case:
    """One row: a codestream, how to decode it, the references and tolerances."""

    file: str
    klass: str  #: "class0" or "class1"
    reduce: int
    window: tuple[int, int, int, int] | None  #: (x0, y0, x1, y1) at full resolution, class 0 only
    references: tuple[str, ...]
    peak: tuple[float, ...]
    mse: tuple[float, ...]
    missing: bool

    @property
    def id(self) -> str:
        stem = Path(self.file.split()[0]).stem
        ref = Path(self.references[0].split()[0]).stem if self.references else ""
        return f"{self.klass}-{ref or stem}"

    @property
    def path(self) -> Path:
        return CONFORMANCE / self.file.split()[0]


def _floats(field: str) -> tuple[float, ...]:
    return tuple(float(v) for v in field.split(";") if v.strip())


def load_cases(part: str = "part1") -> list[Case]:
    """Rows of MANIFEST.tsv whose codestream lies under ``part`` (or 'hifi')."""
    rows = list(csv.DictReader(open(CONFORMANCE / "MANIFEST.tsv", newline=""), delimiter="\t"))
    cases = []
    for row in rows:
        if not row["file"].startswith(part):
            continue
        params = row["decode_params"]
        m = re.search(r"reduce (\d+)", params)
        reduce = int(m.group(1)) if m else 0
        window = (0, 0, 128, 128) if "128x128 window" in params else None
        refs = tuple(r.strip() for r in row["reference_files"].split(";") if r.strip())
        missing = "[MISSING]" in row["file"] or any("[MISSING]" in r for r in refs)
        cases.append(Case(row["file"], row["conformance_class"], reduce, window, refs,
                          _floats(row["tol_peak_per_comp"]), _floats(row["tol_mse_per_comp"]), missing))
    return cases


def read_streams(paths) -> list[bytes]:
    """The bytes of each codestream of ``paths``, in order (a module's frames fixture)."""
    return [Path(p).read_bytes() for p in paths]
