"""The package as pip installs it: the import names are the folders under cinegpu/ (setuptools'
package discovery, no mapping), kernels and samples inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile

import pytest

from conftest import PACKAGE, ROOT


def test_every_python_folder_is_a_package_found_by_discovery():
    """Each folder of the library that holds Python is a package (its __init__.py), which
    setuptools finds as pyproject.toml asks; no folder is mapped to a name by hand."""
    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-dir" not in config and set(config["packages"]) == {"find"}
    folders = {p.parent for p in PACKAGE.rglob("*.py")} - {p for p in PACKAGE.rglob("__pycache__")}
    assert all((f / "__init__.py").is_file() for f in folders), sorted(f for f in folders if not (f / "__init__.py").is_file())
    found = set(find_packages(str(ROOT), include=config["packages"]["find"]["include"]))
    assert found == {".".join(f.relative_to(ROOT).parts) for f in folders}


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
    kernels = sorted(k for pattern in ("*.cu", "*.cuh") for k in PACKAGE.rglob(pattern))
    assert len(kernels) >= 5
    for source in kernels:
        assert str(source.relative_to(ROOT)) in names, source
    assert "cinegpu/media/samples/bars_2k.j2c" in names
