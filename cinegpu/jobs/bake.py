"""``python -m cinegpu.jobs.bake``: compile the CPU kernels ahead, into the archive the
package ships (:mod:`cinegpu.jobs.prebuilt`, which says what it holds and how it is used).

It compiles, in a process of its own and into an empty cache (nothing compiled before, for
another processor, can leak in), every :data:`~cinegpu.jobs.first_run.ENTRY_KERNELS` by its
signature, then runs :func:`workloads` (what the commands compile beyond the demo's path).
The manifest lists the modules that define the kernels the cache then holds (``modules``)
and the SHA-256 of every cinegpu module they import, directly or not (``sources``: all a
compiled kernel can have taken a constant or a callee from). Run it after changing any of
those (``tests/jobs/test_prebuilt.py`` fails until then).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from cinegpu.decode import decode
from cinegpu.decode.kernel_cache import PACKAGE, PORTABLE_CPU
from cinegpu.encode import encode
from cinegpu.jobs.first_run import ENTRY_KERNELS, compile_entries
from cinegpu.jobs.frame_encode import FrameEncoders
from cinegpu.jobs.prebuilt import ARCHIVE, FOLDER, MANIFEST, sha256, target
from cinegpu.media.images.frames import fit
from cinegpu.media.video.ycbcr import YCbCrPlanes, to_rgb48

__all__ = ["bake", "kernel_modules", "kernel_sources", "main", "workloads"]


def kernel_modules(cache: Path) -> list[str]:
    """The modules defining the kernels a cinegpu numba cache folder holds: its index files are
    named ``<module>.<function>-<line>.py<ver>.nbi`` in the module's package folder."""
    return sorted({".".join(["cinegpu", *index.parent.relative_to(cache).parts, index.name.split(".")[0]])
                   for index in cache.rglob("*.nbi")})


def kernel_sources(modules: list[str]) -> dict[str, str]:
    """SHA-256 of each cinegpu module that ``modules`` import, directly or through one
    another (their ``import`` statements, read from the source: every module a kernel can have
    taken a callee or a constant from), by its path inside the package's parent folder
    (``cinegpu/decode/...py``)."""
    files: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if path is None or name in files:
            continue
        files[name] = path
        todo.extend(_imports(path, name))
    return {f.relative_to(PACKAGE.parent).as_posix(): sha256(f) for f in sorted(files.values())}


def _module_file(name: str) -> Path | None:
    """The source of cinegpu module ``name``, None for a name that is not one (an imported
    constant's, another package's)."""
    if name.split(".")[0] != "cinegpu":
        return None
    base = PACKAGE.parent.joinpath(*name.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _imports(path: Path, name: str) -> set[str]:
    """What module ``name`` (source ``path``) imports, and each ``from X import Y`` as both X
    and X.Y (Y may be a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                    if node.level else node.module)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def bake(folder: Path = FOLDER) -> dict:
    """Compile the kernels for :data:`PORTABLE_CPU` into an empty cache (a process of its
    own) and write ``folder``'s archive and manifest; the manifest."""
    with tempfile.TemporaryDirectory(prefix="cinegpu-bake-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env.update(XDG_CACHE_HOME=tmp, NUMBA_CPU_NAME=PORTABLE_CPU, NUMBA_CPU_FEATURES="")
        done = subprocess.run([sys.executable, "-m", "cinegpu.jobs.bake", "--compile-only"], env=env,
                              stdout=subprocess.PIPE, text=True, check=True)
        cache = Path(tmp) / "cinegpu" / "numba"
        modules = kernel_modules(cache)
        manifest = {**json.loads(done.stdout.strip().splitlines()[-1]), "modules": modules,
                    "sources": kernel_sources(modules)}
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


def workloads() -> None:
    """Small runs of what the commands do beyond the demo's path, each compiling the kernels
    (and signatures) it needs into numba's cache: codestreams of 1, 3 and 4 components, 8 to
    16 bits, 5/3 and 9/7, EBCOT and HT code-blocks, with and without a rate, decoded whole and
    at lower resolutions; the DCI and IMF frame encoders; the Lanczos resize of video frames and
    their Y'CbCr made R'G'B' (8- and 16-bit planes, packed and as views of padded rows)."""
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, (37, 53), np.uint8),
                rng.integers(0, 4096, (40, 56, 3), np.uint16),
                rng.integers(0, 1 << 16, (24, 40, 4), np.uint16)]
    for image in pictures:
        bits = 8 if image.dtype == np.uint8 else 12 if image.shape[-1] == 3 else 16
        for codec in ("j2k", "htj2k"):
            for reversible in (True, False):
                rate = None if reversible else image.size * bits * 24 // 6
                stream = encode(image, bits=bits, backend="cpu", codec=codec, levels=3, reversible=reversible,
                                fps=24, bitrate=rate)
                for reduce in (0, 1, 2):
                    decode(stream, reduce=reduce)
    frame = rng.random((270, 480, 3), np.float32)
    for size in ((2048, 1080), (4096, 2160)):
        fit(frame, *size)
        fit((frame * 65535).astype(np.uint16), *size)
    for dtype in (np.uint8, np.uint16):
        planes = [rng.integers(0, 256, (6, 12), dtype) for _ in range(3)]
        for p in (planes, [a[:, :n] for a, n in zip(planes, (10, 5, 5))]):
            to_rgb48(YCbCrPlanes(*p, bits=8, shift=1, kr=0.2126, kb=0.0722, full_range=False))
    for profile, codec, bitrate in (("2k", "j2k", None), ("2k", "j2k", 250), ("4k", "j2k", None),
                                    ("imf-2k", "htj2k", None), ("imf-2k", "j2k", 200)):
        with FrameEncoders(profile=profile, fps=24, bitrate=bitrate, colorspace="rec709", backend="cpu",
                           codec=codec) as encoders:
            size = (4096, 2160) if profile == "4k" else (2048, 1080)
            decode(encoders.encode(fit(frame, *size)))


def _compile_only() -> None:
    """In :func:`bake`'s process: compile every entry kernel and what :func:`workloads` runs
    into this process's cache and print the target compiled for (one JSON line)."""
    failed = compile_entries(tuple(ENTRY_KERNELS), progress=sys.stderr.isatty())
    if failed:
        raise SystemExit(f"did not compile: {failed}")
    workloads()
    print(json.dumps(target(), sort_keys=True))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m cinegpu.jobs.bake",
                                     description="compile the CPU kernels ahead into the package's archive")
    parser.add_argument("--compile-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compile_only:
        _compile_only()
        return
    manifest = bake()
    print(f"{ARCHIVE}: {ARCHIVE.stat().st_size} bytes, kernels of {len(manifest['modules'])} modules (sources: "
          f"{len(manifest['sources'])} modules), for "
          f"{manifest['cpu']} ({manifest['python']}, numba {manifest['numba']})")


if __name__ == "__main__":
    main()
