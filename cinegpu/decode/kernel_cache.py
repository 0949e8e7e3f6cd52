"""Where numba keeps cinegpu's compiled kernels: one folder per user, whichever copy of
cinegpu compiled them.

numba's own cache (``cache=True``) lies beside each source file (``__pycache__``), so a
checkout, an editable install and a regular install of the same code each compiled every
kernel again: minutes on a two-core machine. :class:`PackageCacheLocator` puts the cache of
every kernel of the ``cinegpu`` package in ``$XDG_CACHE_HOME/cinegpu/numba`` (``~/.cache``
when unset), under the module's path inside the package; numba checks each entry against
its source file (a SHA-256 of its content in the numba this project is developed with; its
modification time and size in older ones, where a reinstall still compiles again), so any
copy of the same source reuses it and a changed source compiles again. ``$NUMBA_CACHE_DIR``, where set, still
wins (numba's own locator for it comes first), and a cache folder that cannot be written
leaves numba's default in force.

numba compiles for the host's own processor by default, and keys each cache entry by its name
and features, so a kernel compiled on one machine is of no use on another. On an x86-64
processor with every feature of the x86-64-v3 level (AVX2, FMA, BMI2, ...: :data:`PORTABLE_CPU`,
most processors since 2013), :func:`portable_target` has numba compile for that level instead
(``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``, so spawned processes do the same), which the
kernels shipped with the package (:mod:`cinegpu.jobs.prebuilt`) were compiled for: the first
run loads them instead of compiling. Measured, the level costs the decoder nothing against the
host's own target (``docs/performance.md``). A ``NUMBA_CPU_NAME`` set by the user wins, and
so does a process that compiled with numba before importing cinegpu (its target is fixed).

:func:`install` adds the locator to numba's list, once, and chooses the target; importing this
module does it, and :mod:`cinegpu.decode` and :mod:`cinegpu.encode` import it before any of
their kernels is defined (a kernel's locator is chosen when its ``@njit(cache=True)`` runs).
"""

from __future__ import annotations

import importlib
import importlib.abc
import os
import sys
from pathlib import Path

import llvmlite.binding as llvm
from numba.core import caching, config
from numba.core.registry import cpu_target

__all__ = ["PORTABLE_CPU", "PackageCacheLocator", "cache_folder", "cache_root", "install", "portable_target",
           "skip_blas_probe"]

#: The processor level numba compiles for where the host has all of :data:`PORTABLE_FEATURES`
#: (LLVM's name for x86-64 microarchitecture level 3).
PORTABLE_CPU = "x86-64-v3"
#: LLVM's names of the features x86-64-v3 implies (with levels 1 and 2).
PORTABLE_FEATURES = ("avx", "avx2", "bmi", "bmi2", "cx16", "f16c", "fma", "lzcnt", "movbe", "popcnt",
                     "sahf", "sse3", "sse4.1", "sse4.2", "ssse3", "xsave")

#: the cinegpu package folder: the kernels whose cache this locator keeps lie under it
PACKAGE = Path(__file__).resolve().parents[1]


def cache_root() -> Path:
    """cinegpu's cache folder, ``$XDG_CACHE_HOME/cinegpu`` (``~/.cache/cinegpu`` when unset): the
    compiled kernels, the first run's stamps, the demo DCP, the default media."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cinegpu"


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/cinegpu/numba`` (``~/.cache/cinegpu/numba`` when unset)."""
    return cache_root() / "numba"


class PackageCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's cache locator for the kernels of this copy of cinegpu: the cache of
    ``cinegpu/<path>/<module>.py`` lies in :func:`cache_folder` ``/<path>``, the same folder
    for every copy of the package (source stamps and file names tell the modules apart)."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        inside = Path(py_file).resolve().relative_to(PACKAGE)
        self._cache_path = str(cache_folder().joinpath(*inside.parent.parts))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        """The locator for ``py_func`` of ``py_file``, or None (numba tries the next one) for a
        file outside the package or with ``$NUMBA_CACHE_DIR`` set."""
        if config.CACHE_DIR:
            return None
        try:
            Path(py_file).resolve().relative_to(PACKAGE)
        except ValueError:
            return None
        return super().from_function(py_func, py_file)


def portable_target() -> str | None:
    """Have numba compile for :data:`PORTABLE_CPU` when the host has its features, no
    ``NUMBA_CPU_NAME`` is set and numba has not compiled anything in this process yet (its
    processor is then chosen); the processor name numba compiles for, None for the host's own."""
    if os.environ.get("NUMBA_CPU_NAME"):
        return os.environ["NUMBA_CPU_NAME"]
    if "_toplevel_target_context" in vars(cpu_target) or not llvm.get_process_triple().startswith("x86_64"):
        return None
    features = llvm.get_host_cpu_features()
    if not all(features.get(name, False) for name in PORTABLE_FEATURES):
        return None
    # the environment, not numba's config alone: numba reloads its config from the environment
    # when that changes, and spawned processes inherit it
    os.environ["NUMBA_CPU_NAME"] = PORTABLE_CPU
    os.environ["NUMBA_CPU_FEATURES"] = ""
    config.reload_config()
    return PORTABLE_CPU


class _Refuse(importlib.abc.MetaPathFinder):
    """An import finder that refuses ``package`` and its modules (ImportError)."""

    def __init__(self, package: str):
        self.package = package

    def find_spec(self, name, path, target=None):
        if name == self.package or name.startswith(self.package + "."):
            raise ImportError(f"{name}: not imported while numba's array maths starts")
        return None


def skip_blas_probe() -> bool:
    """Start numba's array maths without its BLAS probe, in a process cinegpu owns.

    The first kernel numba loads or compiles in a process sets up its CPU target, which imports
    ``numba.np.arraymath``, which imports ``scipy.linalg`` (a dependency of cinegpu's loudness
    meter) only to learn whether ``np.dot`` and ``np.vdot`` of floats may call BLAS: the largest
    part of numba's start in every process (docs/performance.md). No cinegpu kernel calls BLAS
    (none uses ``np.dot``, ``np.vdot`` or ``np.linalg``). This imports ``numba.np.arraymath``
    with ``scipy.linalg`` refused for that moment, so numba takes such products with its own
    loop in this process; ``scipy.linalg`` imports as usual afterwards. The command line and
    cinegpu's worker processes call it first thing; importing cinegpu does not (a program
    that does keeps numba's probe for its own kernels). True where it skipped the probe, False
    where ``numba.np.arraymath`` or ``scipy.linalg`` was imported already."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return False
    refuse = _Refuse("scipy.linalg")
    sys.meta_path.insert(0, refuse)
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        sys.meta_path.remove(refuse)
    return True


def install() -> None:
    """Put :class:`PackageCacheLocator` in numba's list of locators (once), after the one for
    ``$NUMBA_CACHE_DIR`` and before the one beside the source file, and choose numba's
    processor (:func:`portable_target`)."""
    locators = caching.CacheImpl._locator_classes
    if PackageCacheLocator not in locators:
        at = 1 if locators and locators[0] is caching.UserProvidedCacheLocator else 0
        locators.insert(at, PackageCacheLocator)
    portable_target()


install()
