"""The lint (issue 49): ``ruff check cinegpu tests`` under pyproject.toml's ``[tool.ruff]`` (ruff's
default rules, import sorting, imports at module top) finds nothing, as CI's ``.ci/run`` asks; and
every ``# noqa`` marker left says why, after its codes."""

from __future__ import annotations

import re
import subprocess
import sys
import tokenize
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: a noqa marker: its codes, then what follows them on the line
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?(?P<rest>.*)$")


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is not installed (the test extra pins it)")
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                          "cinegpu", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"ruff {version('ruff')} found:\n{run.stdout}{run.stderr}"


def _markers():
    """(file:line, match) of each noqa marker in a comment (not in a string) of the checkout."""
    for path in sorted([*(ROOT / "cinegpu").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]):
        with tokenize.open(path) as f:
            for token in tokenize.generate_tokens(f.readline):
                if token.type == tokenize.COMMENT and (found := NOQA.search(token.string)) is not None:
                    yield f"{path.relative_to(ROOT)}:{token.start[0]}", found


def test_every_noqa_marker_names_its_codes_and_a_reason():
    bare = [f"{where}: {found.group(0)}" for where, found in _markers()
            if not found.group("codes") or not re.search(r"\w", found.group("rest"))]
    assert not bare, "noqa without a code or a reason:\n" + "\n".join(bare)


@pytest.mark.parametrize("line,good", [
    ("import cupy as cp  # noqa: PLC0415  (optional: CuPy)", True),
    ("import cupy as cp  # noqa: PLC0415 - optional: CuPy", True),
    ("import cupy as cp  # noqa: PLC0415", False),
    ("import cupy as cp  # noqa", False),
    ("x = 1  # noqa: E731, F401 (both)", True),
])
def test_the_marker_check_reads_codes_and_reasons(line, good):
    found = NOQA.search(line)
    assert bool(found.group("codes") and re.search(r"\w", found.group("rest"))) == good
