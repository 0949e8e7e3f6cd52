"""The CPU kernels compiled ahead and shipped with the package: a first run loads them instead
of compiling for a minute or more.

numba keeps what it compiles in a cache (:mod:`cinegpu.decode.kernel_cache`), each entry keyed
by its function's source and the processor it was compiled for. :mod:`cinegpu.jobs.bake` compiles every
:data:`~cinegpu.jobs.first_run.ENTRY_KERNELS` (and what they call) for
:data:`~cinegpu.decode.kernel_cache.PORTABLE_CPU` into an empty cache and packs that cache into
:data:`ARCHIVE`, with :data:`MANIFEST` saying what it was compiled from: numba's version,
Python's, the processor, and the SHA-256 of every cinegpu module that importing the entry
kernels loads (numba checks an entry against its own function's file only, not against the
modules whose kernels and constants it compiled in, so the archive is used only where all of
them are unchanged). :func:`install` unpacks it into the user's cache when everything matches,
never replacing an entry the user already has; anything else (another processor, numba or
Python, a changed module) leaves the first run compiling as before, saying why.

``python -m cinegpu.jobs.bake`` makes the archive again (about 45 s on two cores); the tests
fail while it is stale (``tests/jobs/test_prebuilt.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import llvmlite.binding as llvm
import numba
from numba.core import config

from cinegpu.decode.kernel_cache import PACKAGE, cache_folder

__all__ = ["ARCHIVE", "FOLDER", "MANIFEST", "Installed", "install", "sha256", "target", "unusable"]

#: The folder the archive and its manifest are shipped in (package data).
FOLDER = Path(__file__).with_name("compiled")
#: numba's cache of the entry kernels, as a tar of ``numba/<folder>/<file>`` compressed by xz.
ARCHIVE = FOLDER / "kernels.tar.xz"
#: What :data:`ARCHIVE` was compiled from and for (JSON).
MANIFEST = FOLDER / "manifest.json"
#: The most bytes one file of the archive may hold once unpacked (a kernel's code is < 1 MB).
MAX_MEMBER = 64 << 20


@dataclass(frozen=True)
class Installed:
    """What :func:`install` did: ``written`` kernels' cache entries put in the user's cache
    (those already there are kept), or ``why`` the archive cannot be used here."""
    written: int = 0
    why: str | None = None


def target() -> dict:
    """numba's version, Python's (as numba's cache names it) and the processor numba compiles
    for in this process (LLVM triple, name, features): what an archive must have been made for."""
    features = config.CPU_FEATURES
    if features is None:
        features = llvm.get_host_cpu_features().flatten()
    return {"numba": numba.__version__, "python": f"py{sys.version_info.major}{sys.version_info.minor}",
            "triple": llvm.get_process_triple(), "cpu": config.CPU_NAME or llvm.get_host_cpu_name(),
            "features": features}


def install(folder: Path | None = None) -> Installed:
    """Unpack :data:`ARCHIVE` into numba's cache ``folder`` (default
    :func:`~cinegpu.decode.kernel_cache.cache_folder`) if it was made for this target from
    these sources; a kernel whose index the cache already holds is left as it is."""
    why = unusable()
    if why is not None:
        return Installed(why=why)
    folder = Path(folder or cache_folder())
    written = 0
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        for index in (m for m in members if m.name.endswith(".nbi")):
            rel = _inside(index.name)
            if rel is None or (folder / rel).exists():
                continue
            stem = rel.name[:-len(".nbi")]
            data = [m for m in members if (r := _inside(m.name)) is not None and r.parent == rel.parent
                    and r.name.startswith(stem + ".") and r.name.endswith(".nbc")]
            for member in [*data, index]:       # the index last: it names the data files
                _write(tar, member, folder / _inside(member.name))
            written += 1
    return Installed(written=written)


def unusable() -> str | None:
    """Why :data:`ARCHIVE` cannot be used in this process, or None."""
    if not (ARCHIVE.is_file() and MANIFEST.is_file()):
        return "no compiled kernels were shipped with this copy"
    if config.CACHE_DIR:
        return "NUMBA_CACHE_DIR is set"
    made = json.loads(MANIFEST.read_text())
    here = target()
    for key in ("numba", "python", "triple", "cpu", "features"):
        if made.get(key) != here[key]:
            return f"they were compiled for {key} {made.get(key)!r}, this process has {here[key]!r}"
    for rel, digest in made.get("sources", {}).items():
        path = PACKAGE.parent / rel
        if not path.is_file() or sha256(path) != digest:
            return f"{rel} changed since they were compiled"
    return None


def _inside(name: str) -> Path | None:
    """The path below the cache folder an archive member ``numba/...`` goes to, None for a
    name that is not one (absolute, ``..``, elsewhere)."""
    parts = PurePosixPath(name).parts
    if len(parts) < 2 or parts[0] != "numba" or any(p in ("", "..", "/") for p in parts):
        return None
    return Path(*parts[1:])


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, path: Path) -> None:
    """Write one archive member at ``path`` through a temporary file renamed into place (a
    reader never meets half a file), the user's umask applying."""
    if member.size > MAX_MEMBER:
        raise ValueError(f"{ARCHIVE}: {member.name} is {member.size} bytes, more than {MAX_MEMBER}")
    path.parent.mkdir(parents=True, exist_ok=True)
    source = tar.extractfile(member)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(source.read(MAX_MEMBER + 1))
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hexadecimal."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
