"""``cinegpu check --decode LIBRARY``: decode every frame of every package under a folder.

A library is a package folder (DCP or IMF) or a folder holding packages at any depth (a
folder with an ASSETMAP is a package; its subfolders are not searched).  Every picture track
file that a package's CPLs name is decoded once, every frame (both eyes of a stereoscopic
one), in strict mode (:func:`cinegpu.decode.decode`): a frame fails when its codestream
cannot be read from the track file or does not decode.

The work is cut into :class:`DecodeChunk` s of :data:`CHUNK_FRAMES` frames of one track file,
each one task (:func:`decode_chunk`, which opens the track file itself, so a cluster's
workers must see the library at the same path) answered by a :class:`ChunkChecked` listing the
frames that failed (:class:`FrameFault`).  Tasks run on a Dask cluster (``cluster``:
:func:`.cluster.parse_address`; with the ``cuda`` back end on its GPU workers only) or in
processes of this machine.  A task that fails (a worker that died) is tried once more; a
second failure reports its frames as not checked.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path

from tqdm import tqdm

from cinegpu.decode import decode
from cinegpu.decode.backend import select_backend
from cinegpu.decode.cpus import usable_cores
from cinegpu.decode.errors import CodestreamError
from cinegpu.jobs.cluster import ClusterAddress, connect, distributed_module, parse_address
from cinegpu.media.errors import EncryptedMedia, MediaError
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.package.read import find_assetmap, read_package, relpath

__all__ = ["CHUNK_FRAMES", "ChunkChecked", "DecodeChunk", "DecodeReport", "FrameFault",
           "check_library", "decode_chunk", "find_packages", "plan_library", "run"]

#: Frames of one track file decoded by one task: a second of 24 fps picture, about 25 MB of
#: codestreams at the DCI cap, a few seconds of one CPU core at 2K.
CHUNK_FRAMES = 24


@dataclass(frozen=True)
class DecodeChunk:
    """Frames ``first`` .. ``first + count - 1`` of the track file ``track`` of the package
    folder ``package``, each eye of ``eyes``, decoded with ``backend``."""

    package: str
    track: str
    first: int
    count: int
    eyes: tuple[str, ...] = ("left",)
    backend: str = "cpu"


@dataclass(frozen=True)
class FrameFault:
    """Frame ``frame`` (``eye``: of a stereoscopic track file) of ``track`` in ``package``
    failed with ``error`` (its kind and message); ``through``: the last frame of a run that
    was not checked at all."""

    package: str
    track: str
    frame: int
    error: str
    eye: str | None = None
    through: int | None = None

    def text(self) -> str:
        pkg = Path(self.package)
        try:
            name = os.path.relpath(self.track, pkg)
        except ValueError:
            name = self.track
        what = (f"frames {self.frame}..{self.through}" if self.through is not None
                else f"frame {self.frame}" + (f" ({self.eye} eye)" if self.eye else ""))
        return f"{pkg.name}: {name} {what}: {self.error}"


@dataclass(frozen=True)
class ChunkChecked:
    """What :func:`decode_chunk` found: the frames of ``chunk`` that failed."""

    chunk: DecodeChunk
    faults: tuple[FrameFault, ...]


def decode_chunk(chunk: DecodeChunk) -> ChunkChecked:
    """A task: decode the chunk's frames from its track file (opened here); each frame
    that fails is a :class:`FrameFault` (nothing is raised for bad media)."""
    stereo = len(chunk.eyes) > 1
    faults: list[FrameFault] = []
    try:
        mxf = MXFFile(chunk.track)
    except (MediaError, OSError) as exc:
        return ChunkChecked(chunk, (FrameFault(chunk.package, chunk.track, chunk.first,
                                               _why(exc), None,
                                               chunk.first + chunk.count - 1),))
    with mxf:
        for n in range(chunk.first, chunk.first + chunk.count):
            for eye in chunk.eyes:
                try:
                    decode(mxf.frame(n, eye), backend=chunk.backend, strict=True)
                except (CodestreamError, MediaError, OSError, IndexError) as exc:
                    faults.append(FrameFault(chunk.package, chunk.track, n, _why(exc),
                                             eye if stereo else None))
                except Exception as exc:     # a decoder bug on this input: still this frame's
                    faults.append(FrameFault(chunk.package, chunk.track, n,
                                             f"decoder failed: {_why(exc)}",
                                             eye if stereo else None))
    return ChunkChecked(chunk, tuple(faults))


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def find_packages(library) -> list[Path]:
    """The package folders at or under ``library``, in sorted order (MediaError when it is
    not a folder)."""
    root = Path(library)
    if not root.is_dir():
        raise MediaError(root, "not a folder (want a package folder or a folder of packages)")
    found = []
    for dirpath, dirs, _files in os.walk(root):
        dirs.sort()
        if find_assetmap(Path(dirpath)) is not None:
            found.append(Path(dirpath))
            dirs[:] = []                     # a package's subfolders are its own
    return found


@dataclass
class DecodeReport:
    """What ``check --decode`` found under ``root``."""

    root: Path
    packages: int = 0
    tracks: int = 0
    frames: int = 0
    faults: list[FrameFault] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.faults and not self.problems

    def text(self) -> str:
        lines = [f"decoded {self.frames} frame(s) of {self.tracks} picture track file(s) in "
                 f"{self.packages} package(s) under {self.root}"]
        lines += [f"FAILED: {f.text()}" for f in sorted(
            self.faults, key=lambda f: (f.package, f.track, f.frame, f.eye or ""))]
        lines += [f"PROBLEM: {p}" for p in self.problems]
        lines += [f"warning: {w}" for w in self.warnings]
        bad = len(self.faults) + len(self.problems)
        lines.append("OK" if self.ok else f"FAILED: {bad} problem(s)")
        return "\n".join(lines)


def plan_library(library, backend: str = "cpu",
                 chunk: int = CHUNK_FRAMES) -> tuple[DecodeReport, list[DecodeChunk]]:
    """The report so far (packages and track files found; those that cannot be read as
    problems, encrypted ones as warnings) and the chunks to decode."""
    report = DecodeReport(Path(library))
    chunks: list[DecodeChunk] = []
    for folder in find_packages(library):
        report.packages += 1
        try:
            pkg = read_package(folder)
        except MediaError as exc:
            report.problems.append(str(exc))
            continue
        tracks: dict[Path, None] = {}
        for comp in pkg.compositions:
            for reel in comp.reels:
                for a in reel.of_kind("picture", "stereo-picture"):
                    if a.path is None or not a.path.is_file():
                        report.problems.append(f"{relpath(comp.path, folder)}: picture asset "
                                               f"{a.id} is missing")
                        continue
                    tracks[a.path] = None
        for path in tracks:
            try:
                with MXFFile(path) as mxf:
                    mxf.check_readable()
                    frames, stereo = mxf.frame_count, mxf.stereoscopic
            except EncryptedMedia:
                report.warnings.append(f"{relpath(path, folder.parent)}: encrypted, not decoded")
                continue
            except MediaError as exc:
                report.problems.append(str(exc))
                continue
            report.tracks += 1
            eyes = ("left", "right") if stereo else ("left",)
            chunks += [DecodeChunk(str(folder), str(path), f, min(chunk, frames - f), eyes,
                                   backend) for f in range(0, frames, chunk)]
    return report, chunks


def check_library(library, *, cluster: ClusterAddress | str | None = None, workers: int | None = None,
                  backend: str = "cpu", chunk: int = CHUNK_FRAMES,
                  progress: bool = True) -> DecodeReport:
    """Decode every frame under ``library`` (see the module's text): on the Dask cluster
    ``cluster`` (a local one of ``workers`` processes when ``local`` without a count), else
    in ``workers`` processes here (default: one per core).  ``backend``: ``cpu``, ``cuda``
    or ``auto`` (on a cluster: ``cuda`` when it has GPU workers).  MediaError when the
    library is not a folder or the cluster cannot be reached."""
    report, chunks = plan_library(library, "cpu" if backend == "auto" else backend, chunk)
    total = sum(c.count for c in chunks)
    with tqdm(total=total, unit="frame", desc="decoding", dynamic_ncols=True,
              disable=None if progress else True) as bar:   # None: only on a terminal
        if not chunks:
            pass
        elif cluster is not None:
            _on_cluster(cluster, workers, backend, chunks, report, bar)
        else:
            _here(workers, backend, chunks, report, bar)
    return report


def _done(result: ChunkChecked, report: DecodeReport, bar) -> None:
    report.frames += result.chunk.count
    report.faults += result.faults
    bar.update(result.chunk.count)


def _not_checked(c: DecodeChunk, why: str, report: DecodeReport, bar) -> None:
    report.faults.append(FrameFault(c.package, c.track, c.first, f"not checked: {why}", None,
                                    c.first + c.count - 1))
    bar.update(c.count)


def _here(workers, backend: str, chunks: list[DecodeChunk], report: DecodeReport, bar) -> None:
    """The chunks in spawned processes of this machine."""
    if backend == "auto":
        b = select_backend("auto").name
        chunks = [DecodeChunk(c.package, c.track, c.first, c.count, c.eyes, b) for c in chunks]
    n = max(1, min(workers or usable_cores(), len(chunks)))
    with ProcessPoolExecutor(n, mp_context=mp.get_context("spawn")) as pool:
        futures = {pool.submit(decode_chunk, c): c for c in chunks}
        for fut in as_completed(futures):
            try:
                _done(fut.result(), report, bar)
            except Exception as exc:          # a process that died (BrokenProcessPool)
                _not_checked(futures[fut], _why(exc), report, bar)


def _on_cluster(where: ClusterAddress | str, workers, backend: str, chunks: list[DecodeChunk],
                report: DecodeReport, bar) -> None:
    """The chunks as Dask tasks, each tried twice at most."""
    address = parse_address(where) if isinstance(where, str) else where
    if address.local and workers is not None:
        address = replace(address, workers=workers)
    resources = None
    if address.local and backend in ("cuda", "auto"):
        backend = select_backend(backend).name
        resources = {"GPU": 1} if backend == "cuda" else None
    with connect(address, resources=resources) as cluster:
        if backend == "auto":
            backend = "cuda" if cluster.gpu_workers() else "cpu"
        need = {"GPU": cluster.gpu_share()} if backend == "cuda" else None
        token = uuid.uuid4().hex[:12]
        as_completed = distributed_module().as_completed

        def submit(k: int, c: DecodeChunk, tries: int):
            fut = cluster.client.submit(decode_chunk, c, pure=False, resources=need,
                                        key=f"cinegpu-decode-{token}-{k}-{tries}")
            info[fut.key] = (k, c, tries)
            return fut

        info: dict[str, tuple[int, DecodeChunk, int]] = {}
        chunks = [DecodeChunk(c.package, c.track, c.first, c.count, c.eyes, backend)
                  for c in chunks]
        pending = as_completed([submit(k, c, 0) for k, c in enumerate(chunks)],
                               loop=cluster.client.loop)
        for fut in pending:
            k, c, tries = info.pop(fut.key)
            try:
                result = fut.result()
            except Exception as exc:          # KilledWorker, or a bug on the worker
                if tries == 0:
                    pending.add(submit(k, c, 1))
                else:
                    _not_checked(c, _why(exc).split(". ")[0], report, bar)
                continue
            finally:
                fut.release()
            _done(result, report, bar)


def run(library, *, cluster: ClusterAddress | str | None = None, workers: int | None = None,
        backend: str = "cpu", progress: bool = True) -> int:
    """Print the report; 0 when every frame decodes, 1 otherwise (``cinegpu check``'s
    statuses)."""
    report = check_library(library, cluster=cluster, workers=workers, backend=backend,
                           progress=progress)
    print(report.text())
    return 0 if report.ok else 1
