"""The folder layers (ARCHITECTURE.md): decode (the codec core) <- encode <- media and interop
<- player.  No module imports a layer above its own or a sibling of its own rank, at module
level or inside a function, written absolute (``cinegpu.media``) or relative (``..media``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RANK = {"decode": 0, "encode": 1, "media": 2, "interop": 2, "player": 3}


def imported_layers(source: str, module: str):
    """(line, layer) of every cinegpu layer that ``source``, the text of ``module``
    (``cinegpu.encode.tier1.gpu``), imports."""
    package = module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = base + (node.module.split(".") if node.module else [])
            # "from .. import media" names a layer in the imported names
            names = [".".join(target + [a.name]) for a in node.names] if not node.module \
                else [".".join(target)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "cinegpu" and len(parts) > 1 and parts[1] in RANK:
                yield node.lineno, parts[1]


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
    ("from cinegpu.media.colour import to_xyz12", "cinegpu.encode.bench", True),
    ("def f():\n    import cinegpu.player.cli", "cinegpu.media.demo", True),
    ("from ...media import colour", "cinegpu.encode.tier1.gpu", True),
    ("from ... import player", "cinegpu.decode.tier1.gpu", True),
    ("from cinegpu.interop import x", "cinegpu.media.source", True),
    ("from cinegpu.decode import decode", "cinegpu.encode.encoder", False),
    ("from . import markers\nfrom ..decode import plan", "cinegpu.encode.writer", False),
    ("from cinegpu.media import open_source", "cinegpu.player.cli", False),
])
def test_the_check_sees_each_way_of_importing(source, module, bad):
    assert bool(violations(source, module)) == bad
