"""The shape of the checkout (issue 49's "done when"): a real package folder found by discovery,
benchmarks and peers in ``cinegpu/bench`` only, no folder over 25 modules, no function over 16
parameters or (outside numba and CUDA kernels) over 150 lines, no GPU timings in the library,
and a README that is a quick start."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cinegpu"
#: the most modules one folder holds
MAX_MODULES = 25
#: the most parameters one function takes
MAX_PARAMETERS = 16
#: the most lines one function spans, numba and CUDA kernels aside (one loop nest each)
MAX_LINES = 150
MAX_README_LINES = 250
#: a decorator that makes a compiled kernel (numba.njit, numba.jit, numba.cuda.jit, vectorize ...)
KERNEL = re.compile(r"\b(n?jit|vectorize|guvectorize|stencil|cfunc)\b")
#: a GPU's name, as a timing on one would name it
GPU_NAME = re.compile(r"\b(H100|H200|A100|A10G?|L4|L40S?|V100|T4|RTX ?\d{4}|GTX ?\d{3,4})\b")


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _functions():
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(ROOT), node


def _kernel(node) -> bool:
    return any(KERNEL.search(ast.unparse(d)) for d in node.decorator_list)


def test_the_package_is_a_folder_found_by_discovery():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tools = meta.get("tool", {}).get("setuptools", {})
    assert "package-dir" not in tools and "packages" not in tools or isinstance(tools.get("packages"), dict)
    assert (PACKAGE / "__init__.py").is_file()
    for sub in ("decode", "encode", "media", "interop", "jobs", "bench", "player"):
        assert (PACKAGE / sub / "__init__.py").is_file(), sub


def test_benchmarks_and_peers_live_in_bench_only():
    outside = [str(p.relative_to(ROOT)) for p in _modules()
               if "bench" not in p.relative_to(PACKAGE).parts[:1]
               and re.search(r"(^|_)(bench|peers?|profiler|profiling)(_|$)", p.stem)]
    assert not outside, outside


@pytest.mark.parametrize("folder", sorted({p.parent for p in _modules()}), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_folder_holds_more_than_25_modules(folder):
    modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    assert len(modules) <= MAX_MODULES, f"{folder.relative_to(ROOT)}: {len(modules)} modules"


def test_no_function_takes_more_than_16_parameters():
    wide = []
    for path, node in _functions():
        a = node.args
        n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
        if n > MAX_PARAMETERS:
            wide.append(f"{path}:{node.lineno} {node.name}: {n} parameters")
    assert not wide, wide


def test_no_function_outside_kernels_is_over_150_lines():
    long = [f"{path}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
            for path, node in _functions()
            if node.end_lineno - node.lineno + 1 > MAX_LINES and not _kernel(node)]
    assert not long, long


def test_no_gpu_timings_in_the_library():
    """Measurements live in docs/performance.md, dated, with the machine and the command: none
    in docstrings or comments, where they go stale unseen."""
    named = []
    for path in [*_modules(), *PACKAGE.rglob("*.cu"), *PACKAGE.rglob("*.cuh")]:
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if GPU_NAME.search(line):
                named.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not named, named


def test_the_checks_see_what_they_look_for(tmp_path):
    """The kernel and GPU-name patterns match what they are for, and only that."""
    assert KERNEL.search("numba.njit(cache=True)") and KERNEL.search("cuda.jit") and KERNEL.search("njit")
    assert not KERNEL.search("functools.lru_cache") and not KERNEL.search("injection")
    assert GPU_NAME.search("2.1 ms on an H200") and GPU_NAME.search("RTX 4090: 300 fps")
    assert not GPU_NAME.search("the H-tree of 4 levels") and not GPU_NAME.search("T.800 Annex H")


def test_the_readme_is_a_quick_start():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, len(lines)
