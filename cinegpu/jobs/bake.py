"""``python -m cinegpu.jobs.bake``: compile the CPU kernels ahead, into the archive the
package ships (:mod:`cinegpu.jobs.prebuilt`, which says what it holds and how it is used).

Run it after changing any module the manifest lists (``tests/jobs/test_prebuilt.py`` fails
until then); it compiles in a process of its own into an empty cache, so that nothing compiled
before, for another processor, can leak into the archive.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from cinegpu.decode.kernel_cache import PACKAGE, PORTABLE_CPU
from cinegpu.jobs.first_run import ENTRY_KERNELS, compile_entries, entry_kernel
from cinegpu.jobs.prebuilt import ARCHIVE, FOLDER, MANIFEST, sha256, target

__all__ = ["bake", "kernel_sources", "main"]


def kernel_sources() -> dict[str, str]:
    """SHA-256 of each cinegpu module that importing the entry kernels loads, the jobs' own
    (this tool's) left out, by its path inside the package's parent folder
    (``cinegpu/decode/...py``)."""
    for name in ENTRY_KERNELS:
        entry_kernel(name)
    files = sorted({Path(m.__file__).resolve() for name, m in list(sys.modules.items())
                    if name.split(".")[0] == "cinegpu" and not name.startswith("cinegpu.jobs")
                    and getattr(m, "__file__", None)})
    return {f.relative_to(PACKAGE.parent).as_posix(): sha256(f) for f in files}


def bake(folder: Path = FOLDER) -> dict:
    """Compile every entry kernel for :data:`PORTABLE_CPU` into an empty cache (a process of
    its own, so nothing compiled before can leak in) and write ``folder``'s archive and
    manifest; the manifest."""
    with tempfile.TemporaryDirectory(prefix="cinegpu-bake-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env.update(XDG_CACHE_HOME=tmp, NUMBA_CPU_NAME=PORTABLE_CPU, NUMBA_CPU_FEATURES="")
        done = subprocess.run([sys.executable, "-m", "cinegpu.jobs.bake", "--compile-only"], env=env,
                              stdout=subprocess.PIPE, text=True, check=True)
        manifest = json.loads(done.stdout.strip().splitlines()[-1])
        cache = Path(tmp) / "cinegpu" / "numba"
        folder.mkdir(parents=True, exist_ok=True)
        archive, listed = folder / ARCHIVE.name, folder / MANIFEST.name
        with tarfile.open(archive.with_suffix(".tmp"), "w:xz", preset=9) as tar:
            for path in sorted(cache.rglob("*")):
                if path.is_file() and path.suffix in (".nbi", ".nbc"):
                    info = tar.gettarinfo(path, arcname=f"numba/{path.relative_to(cache).as_posix()}")
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    info.mtime = 0
                    with path.open("rb") as f:
                        tar.addfile(info, f)
        os.replace(archive.with_suffix(".tmp"), archive)
        listed.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _compile_only() -> None:
    """In :func:`bake`'s process: compile every entry kernel into this process's cache and
    print the manifest (one JSON line)."""
    failed = compile_entries(tuple(ENTRY_KERNELS), progress=sys.stderr.isatty())
    if failed:
        raise SystemExit(f"did not compile: {failed}")
    print(json.dumps({**target(), "sources": kernel_sources()}, sort_keys=True))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cinegpu.jobs.bake",
                                     description="compile the CPU kernels ahead into the package's archive")
    parser.add_argument("--compile-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compile_only:
        _compile_only()
        return
    manifest = bake()
    print(f"{ARCHIVE}: {ARCHIVE.stat().st_size} bytes, {len(manifest['sources'])} modules, for "
          f"{manifest['cpu']} ({manifest['python']}, numba {manifest['numba']})")


if __name__ == "__main__":
    main()
