"""The shape of the checkout (issue 49's "done when"): a real package folder found by discovery,
benchmarks and peers in ``cinegpu/bench`` only, no folder over 25 modules, no function over 16
parameters or (outside numba and CUDA kernels) over 150 lines, no GPU timings in the library,
and a README that is a quick start; and the tests laid out as the package, their shared helpers
in tests/helpers/ once."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from conftest import PACKAGE, ROOT, TESTS

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


# -- the tests' own layout (issue 49, item 9) ---------------------------------------------------
#: folders of tests/ that hold no test areas: the shared helpers and the stand-in programs
NOT_AREAS = ("helpers", "tools")


def _test_folders(tests):
    return sorted(d for d in tests.rglob("*") if d.is_dir() and "__pycache__" not in d.parts
                  and not any(part.startswith(".") for part in d.relative_to(tests).parts))


def _stray_test_folders(tests, package) -> list[str]:
    """Folders under ``tests`` that mirror no folder of ``package`` (helpers/, tools/ aside)."""
    return [str(d.relative_to(tests)) for d in _test_folders(tests)
            if d.relative_to(tests).parts[0] not in NOT_AREAS
            and not (package / d.relative_to(tests)).is_dir()]


def _shared_names(tree) -> set[str]:
    """Names a module imports from conftest or tests/helpers."""
    return {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 0
            and (n.module == "conftest" or (n.module or "").startswith("helpers")) for a in n.names}


def _copied_definitions(tests) -> list[list[str]]:
    """Top-level functions and classes defined with the same body (``ast.dump``, docstring aside)
    in more than one file under ``tests`` (tools/ aside), whatever their names: each group as
    ["file:line name", ...].  A body that is one call of a name the module imports from conftest
    or tests/helpers (a ``lib`` fixture's ``return host_library(SOURCE)``) uses a shared helper
    and copies none."""
    bodies: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(tests)
        if rel.parts[0] == "tools" or "__pycache__" in rel.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        shared = _shared_names(tree)
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            if not body:
                continue
            if len(body) == 1 and isinstance(body[0], (ast.Return, ast.Expr)) \
                    and isinstance(body[0].value, ast.Call) and isinstance(body[0].value.func, ast.Name) \
                    and body[0].value.func.id in shared:
                continue
            key = ast.dump(ast.Module(body=body, type_ignores=[]))
            bodies.setdefault(key, []).append((str(rel), f"{rel}:{node.lineno} {node.name}"))
    return [[where for _, where in found] for found in bodies.values() if len({f for f, _ in found}) > 1]


def _test_module_imports(tests) -> list[str]:
    """Imports of a test module by another module under ``tests`` (at any depth of the code)."""
    modules = {p.stem for p in tests.rglob("test_*.py")}
    found = []
    for path in sorted(tests.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            found += [f"{path.relative_to(tests)}:{node.lineno} imports {n}" for n in names
                      if n in modules and n != path.stem]
    return found


def test_test_folders_mirror_the_package():
    """Every folder of tests/ is a folder of cinegpu/ (tests/decode/tier1/ for
    cinegpu/decode/tier1/ ...), tests/helpers/ and tests/tools/ aside."""
    assert not _stray_test_folders(TESTS, PACKAGE)
    assert {d.name for d in _test_folders(TESTS) if d.parent == TESTS} >= {"decode", "encode", "media", "helpers"}


def test_test_modules_keep_prepend_mode():
    """No __init__.py in a test folder and one conftest.py (pytest's "prepend" import mode: tests/
    and each test module's folder on sys.path), so every test module's name is unique."""
    folders = [d for d in _test_folders(TESTS) if d.relative_to(TESTS).parts[0] != "helpers"]
    assert not [str(d) for d in folders if (d / "__init__.py").exists()]
    assert [p.relative_to(TESTS) for p in TESTS.rglob("conftest.py")] == [Path("conftest.py")]
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert (TESTS / "helpers" / "__init__.py").is_file()


def test_no_function_is_copied_between_test_modules():
    """Shared helpers live in tests/helpers/ (or conftest.py), once."""
    copied = _copied_definitions(TESTS)
    assert not copied, copied


def test_no_test_module_imports_another():
    """A test module imports conftest and tests/helpers, never another test module (whose folder
    need not be on sys.path)."""
    found = _test_module_imports(TESTS)
    assert not found, found


def test_the_layout_checks_see_what_they_look_for(tmp_path):
    """A stray folder, a copied function (under another name too), and an import of a test module
    are found; a one-line use of a shared helper is not a copy."""
    package, tests = tmp_path / "cinegpu", tmp_path / "tests"
    for folder in ("cinegpu/decode/tier1", "tests/decode/tier1", "tests/decode/tier9", "tests/helpers",
                   "tests/tools/x"):
        (tmp_path / folder).mkdir(parents=True)
    assert _stray_test_folders(tests, package) == ["decode/tier9"]
    seg = 'def seg(code, body):\n    """A segment."""\n    return struct.pack(">HH", code, len(body) + 2) + body\n'
    segment = seg.replace("seg(", "_segment(").replace('    """A segment."""\n', "")
    lib = 'from conftest import host_library\n\n\ndef lib():\n    return host_library(SOURCE)\n'
    (tests / "decode" / "test_a.py").write_text(seg + "\n\n" + lib)
    (tests / "decode" / "tier1" / "test_b.py").write_text(segment + "\n\n" + lib + "\nimport test_a\n")
    copied = _copied_definitions(tests)
    assert copied == [["decode/test_a.py:1 seg", "decode/tier1/test_b.py:1 _segment"]], copied
    assert _test_module_imports(tests) == ["decode/tier1/test_b.py:11 imports test_a"]
