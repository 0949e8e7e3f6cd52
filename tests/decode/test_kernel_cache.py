"""numba's cache of cinegpu's kernels in one folder per user (cinegpu/decode/kernel_cache.py):
a second copy of the same source (an editable install beside a regular one, a reinstall)
loads what the first compiled instead of compiling again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cinegpu.decode import kernel_cache
from cinegpu.decode.tier1 import mq

PACKAGE = Path(kernel_cache.__file__).resolve().parents[1]

#: compiles (or loads) one small kernel and says which: its cache hits and misses, and its folder
PROBE = """
import numpy as np
from cinegpu.decode.tier1 import mq
data = np.full(8, 0xFF, np.uint8)
mq.mq_init(data, 0)
print(sum(mq.mq_init.stats.cache_hits.values()), sum(mq.mq_init.stats.cache_misses.values()),
      mq.mq_init._cache._cache_path)
"""


def test_the_locator_puts_each_module_under_the_package_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    here = kernel_cache.PackageCacheLocator.from_function(mq.mq_init.py_func, mq.__file__)
    assert Path(here.get_cache_path()) == tmp_path / "cinegpu" / "numba" / "decode" / "tier1"
    outside = tmp_path / "elsewhere.py"
    outside.write_text("def f():\n    return 1\n")
    assert kernel_cache.PackageCacheLocator.from_function(mq.mq_init.py_func, str(outside)) is None


def _probe(package_parent: Path, cache: Path) -> tuple[int, int, str]:
    """(cache hits, cache misses, cache folder) of the kernel PROBE runs from the copy of
    cinegpu in ``package_parent``, with its cache under ``cache``."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(package_parent))
    env.pop("NUMBA_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=600,
                       cwd=package_parent)
    assert r.returncode == 0, r.stderr[-2000:]
    hits, misses, folder = r.stdout.split()[-3:]
    return int(hits), int(misses), folder


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_a_second_copy_of_the_package_loads_what_the_first_compiled(tmp_path):
    cache = tmp_path / "cache"
    copies = []
    for name in ("one", "two"):
        parent = tmp_path / name
        shutil.copytree(PACKAGE, parent / "cinegpu", ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(parent)
    hits, misses, folder = _probe(copies[0], cache)
    assert not hits and misses and Path(folder) == cache / "cinegpu" / "numba" / "decode" / "tier1"
    hits, misses, folder = _probe(copies[1], cache)
    assert hits and not misses      # the same source at another path: loaded, not compiled


#: the processor numba compiles for once cinegpu is imported, after what ``BEFORE`` ran
TARGET = """
import os, sys
exec(sys.argv[1])
import cinegpu.decode
from numba.core.registry import cpu_target
print(os.environ.get("NUMBA_CPU_NAME"), cpu_target.target_context.codegen().magic_tuple()[1])
"""


def _target(before: str = "", **env) -> list[str]:
    run_env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    run_env.update(env)
    r = subprocess.run([sys.executable, "-c", TARGET, before], capture_output=True, text=True, env=run_env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_numba_compiles_for_the_portable_level_where_the_host_has_it():
    import llvmlite.binding as llvm
    features = llvm.get_host_cpu_features()
    if not llvm.get_process_triple().startswith("x86_64"):
        pytest.skip("not an x86-64 machine: numba compiles for the host's own processor")
    if not all(features.get(f, False) for f in kernel_cache.PORTABLE_FEATURES):
        missing = [f for f in kernel_cache.PORTABLE_FEATURES if not features.get(f, False)]
        pytest.skip(f"this processor lacks {', '.join(missing)} of x86-64-v3")
    assert _target() == ["x86-64-v3", "x86-64-v3"]
    # the user's choice wins
    assert _target(NUMBA_CPU_NAME="generic") == ["generic", "generic"]
    # numba already compiled for the host in this process: its processor is fixed, left alone
    compiled_first = "import numba\nnumba.njit(lambda x: x + 1)(1)"
    env_name, codegen_name = _target(compiled_first)
    assert env_name == "None" and codegen_name == llvm.get_host_cpu_name()


#: decodes a tiny stream in a fresh process (numba's CPU target starts), then says whether numba
#: probed for BLAS (scipy.linalg imported, numba's flag) and that scipy.linalg still imports
BLAS_PROBE = """
import sys
{before}
from cinegpu.decode import decode
from cinegpu.decode.pipeline import tiny_codestream
decode(tiny_codestream())
import numba.np.arraymath as arraymath
probed = "scipy.linalg" in sys.modules
import scipy.linalg.cython_blas
print(probed, arraymath._HAVE_BLAS)
"""


def _blas_probe(before: str) -> str:
    pytest.importorskip("scipy.linalg", reason="scipy is not installed: numba has no BLAS to probe for")
    done = subprocess.run([sys.executable, "-c", BLAS_PROBE.format(before=before)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()[-2:]


def test_a_process_of_cinegpus_own_starts_numba_without_the_blas_probe():
    got = _blas_probe("from cinegpu.decode.kernel_cache import skip_blas_probe\n"
                      "assert skip_blas_probe()\nassert not skip_blas_probe()   # once")
    assert got == ["False", "False"]


def test_importing_cinegpu_leaves_numbas_probe_alone():
    """A program that imports cinegpu keeps numba's BLAS for its own kernels."""
    assert _blas_probe("") == ["True", "True"]


def test_the_command_line_skips_the_probe(tmp_path):
    """``cinegpu`` is a process of cinegpu's own: its decode starts numba without the probe."""
    pytest.importorskip("scipy.linalg", reason="scipy is not installed: numba has no BLAS to probe for")
    from cinegpu.decode.pipeline import tiny_codestream

    stream = tmp_path / "tiny.j2k"
    stream.write_bytes(tiny_codestream())
    code = ("import sys\nfrom cinegpu.player.cli import main\n"
            f"assert main(['decode', {str(stream)!r}, '-o', {str(tmp_path / 'out.png')!r}]) == 0\n"
            "print('scipy.linalg' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "False"
