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

:func:`install` adds the locator to numba's list, once; importing this module does it, and
:mod:`cinegpu.decode` and :mod:`cinegpu.encode` import it before any of their kernels is
defined (a kernel's locator is chosen when its ``@njit(cache=True)`` runs).
"""

from __future__ import annotations

import os
from pathlib import Path

from numba.core import caching, config

__all__ = ["PackageCacheLocator", "cache_folder", "cache_root", "install"]

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


def install() -> None:
    """Put :class:`PackageCacheLocator` in numba's list of locators (once), after the one for
    ``$NUMBA_CACHE_DIR`` and before the one beside the source file."""
    locators = caching.CacheImpl._locator_classes
    if PackageCacheLocator not in locators:
        at = 1 if locators and locators[0] is caching.UserProvidedCacheLocator else 0
        locators.insert(at, PackageCacheLocator)


install()
