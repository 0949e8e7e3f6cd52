"""The folder layers (ARCHITECTURE.md): decode (the codec core) <- encode <- media and interop
<- jobs <- bench <- player.  No module imports a layer above its own or a sibling of its own
rank, at module level or inside a function, written absolute (``cinegpu.media``) or relative
(``..media``): so no library layer imports the benchmarks, which only the command line runs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "cinegpu"
RANK = {"decode": 0, "encode": 1, "media": 2, "interop": 2, "jobs": 3, "bench": 4, "player": 5}


def imports(source: str, module: str):
    """(line, absolute module, imported names or None) of every import in ``source``, the
    text of ``module`` (``cinegpu.encode.tier1.gpu``), lazy ones included."""
    package = module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name, None
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + (node.module.split(".") if node.module else []))
            yield node.lineno, target, [a.name for a in node.names]


def imported_layers(source: str, module: str):
    """(line, layer) of every cinegpu layer that ``source``, the text of ``module``, imports."""
    for line, target, names in imports(source, module):
        # "from .. import media" names a layer in the imported names
        for name in [f"{target}.{n}" for n in names] if names and target.count(".") < 1 else [target]:
            parts = name.split(".")
            if parts[0] == "cinegpu" and len(parts) > 1 and parts[1] in RANK:
                yield line, parts[1]


def violations(source: str, module: str) -> list[str]:
    own = module.split(".")[1]
    return [f"{module}:{line} imports cinegpu.{layer}" for line, layer in
            imported_layers(source, module)
            if layer != own and RANK[layer] >= RANK[own]]


def _modules():
    for top in RANK:
        for f in sorted((ROOT / top).rglob("*.py")):
            rel = f.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1] + ["__init__"]
            yield f, "cinegpu." + ".".join(parts)


def test_no_module_imports_upward_or_sideways():
    found = [v for f, module in _modules() for v in violations(f.read_text(), module)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source,module,bad", [
    ("from cinegpu.media.images.colour import to_xyz12", "cinegpu.encode.writer", True),
    ("from cinegpu.bench import decode_peers", "cinegpu.jobs.mastering", True),
    ("from cinegpu.jobs.mastering import master", "cinegpu.media.demo", True),
    ("from cinegpu.jobs.mastering import master", "cinegpu.bench.master", False),
    ("from cinegpu.bench import decode", "cinegpu.player.commands.speed", False),
    ("def f():\n    import cinegpu.player.cli", "cinegpu.jobs.demo", True),
    ("from ...media import colour", "cinegpu.encode.tier1.gpu", True),
    ("from ... import player", "cinegpu.decode.tier1.gpu", True),
    ("from cinegpu.interop import x", "cinegpu.media.source", True),
    ("from cinegpu.decode import decode", "cinegpu.encode.encoder", False),
    ("from . import markers\nfrom ..decode import plan", "cinegpu.encode.writer", False),
    ("from cinegpu.media import open_source", "cinegpu.player.cli", False),
])
def test_the_check_sees_each_way_of_importing(source, module, bad):
    assert bool(violations(source, module)) == bad


def imported_modules(source: str, module: str, known: set[str]):
    """Every module of ``known`` that ``source`` (the text of ``module``) imports, lazily or
    not; ``from pkg import name`` counts as importing ``pkg.name`` when that is a module."""
    for _, target, names in imports(source, module):
        for t in [f"{target}.{n}" if f"{target}.{n}" in known else target for n in names] \
                if names else [target]:
            if t in known:
                yield t


def module_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules():
    """A module and the modules it imports never import it back (a package's ``__init__``,
    which only gathers names, is left out)."""
    files = {module.removesuffix(".__init__"): f for f, module in _modules()}
    known = set(files)
    inits = {m for m, f in files.items() if f.name == "__init__.py"}
    graph = {m: {t for t in imported_modules(f.read_text(), m if m not in inits else m + ".x",
                                             known) if t not in inits and t != m}
             for m, f in files.items() if m not in inits}
    cycles = module_cycles(graph)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_lazy_cycle():
    known = {"cinegpu.encode.encoder", "cinegpu.encode.writer"}
    graph = {"cinegpu.encode.writer": set(imported_modules(
                 "def f():\n    from .encoder import main_header", "cinegpu.encode.writer", known)),
             "cinegpu.encode.encoder": set(imported_modules(
                 "from .writer import write", "cinegpu.encode.encoder", known))}
    assert module_cycles(graph) == [["cinegpu.encode.encoder", "cinegpu.encode.writer"]]
