"""The package as pip installs it: every sub-package listed, kernels and samples inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"decode", "encode", "interop", "player", "media"}


def _packages() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def test_every_python_folder_is_a_listed_package():
    found = set()
    for top in FOLDERS:
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT)
            found.add("cinegpu." + ".".join(rel.parts))
    assert found == _packages()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                        "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"pip wheel failed: {r.stderr[-2000:]}")
    return zipfile.ZipFile(next(out.glob("*.whl")))


@pytest.mark.slow
def test_the_wheel_carries_every_kernel_and_the_sample(wheel):
    names = set(wheel.namelist())
    kernels = sorted(k for top in FOLDERS for pattern in ("*.cu", "*.cuh")
                     for k in (ROOT / top).rglob(pattern))
    assert len(kernels) >= 5
    for source in kernels:
        assert "cinegpu/" + str(source.relative_to(ROOT)) in names, source
    assert "cinegpu/media/samples/bars_2k.j2c" in names
