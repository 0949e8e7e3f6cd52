"""The library: the packages and compositions under one folder, found by a bounded walk.

A folder with an ASSETMAP is a package (DCP or IMF); each composition its packing lists name is
an entry, keyed by its CPL id.  A folder of ``.j2c/.j2k/.jp2`` frames with no ASSETMAP is an entry
too, keyed by a name-based UUID of its path under the library root (stable across rescans), so
that plain sequences can be loaded by id like compositions.  A package that fails to parse is
listed under ``errors`` with the reason; it never stops the scan.

Confinement: everything listed or loaded lies under the root's real path.  Symbolic links are
followed only where they resolve under the root; a folder, frame file or package asset that
resolves outside is listed under ``errors`` and never loaded.  Each real folder is visited once
(by its ``(st_dev, st_ino)``), so a link loop or an alias lists a package once, and the walk is
bounded by ``max_depth`` levels and ``max_folders`` folders.  :meth:`Library.check` repeats the
test when an entry is loaded (the tree may have changed since the scan).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from cinegpu.media import MediaError
from cinegpu.media.package.read import find_assetmap, read_package, relpath
from cinegpu.media.source import FRAME_SUFFIXES

__all__ = ["Entry", "Library", "Scan"]

#: Namespace for the ids of frame-sequence entries (uuid5 of the relative path).
SEQUENCE_NS = uuid.UUID("6c2f4d0e-3b8a-5d7e-9f21-0c1e2a3b4c5d")


@dataclass(frozen=True)
class Entry:
    """One playable composition: a CPL of a package, or a frame sequence."""

    id: str
    kind: str                     # "dcp-smpte", "dcp-interop", "imf", "j2k-sequence"
    title: str
    path: Path                    # the CPL file, or the sequence folder
    package: Path | None          # the package folder (None for a sequence)
    edit_rate: Fraction | None
    frames: int | None            # picture frames (sum of the reels' picture durations)
    reels: tuple[tuple[str, int], ...] = ()     # (reel id, picture frames) in order
    encrypted: bool = False
    stereoscopic: bool = False    # 3D: a reel has a MainStereoscopicPicture (ST 429-10)
    size: int | None = None       # bytes of the files it plays (track files, or frame files)
    content_kind: str | None = None     # the CPL's ContentKind (feature, trailer, ...)

    @property
    def seconds(self) -> float | None:
        """Its length in seconds (frames at the edit rate; None without an edit rate)."""
        if self.frames is None or not self.edit_rate:
            return None
        return float(self.frames / self.edit_rate)

    def to_json(self, root: Path) -> dict:
        seconds = self.seconds
        return {"id": self.id, "kind": self.kind, "title": self.title, "path": relpath(self.path, root),
                "package": None if self.package is None else relpath(self.package, root),
                "edit_rate": None if self.edit_rate is None else str(self.edit_rate),
                "frames": self.frames, "seconds": None if seconds is None else round(seconds, 3),
                "encrypted": self.encrypted, "stereoscopic": self.stereoscopic, "size": self.size,
                "content_kind": self.content_kind,
                "reels": [{"id": r, "frames": n} for r, n in self.reels]}


@dataclass
class Scan:
    root: Path
    entries: dict[str, Entry] = field(default_factory=dict)
    packages: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    when: float = 0.0             # time.time() of the scan

    def to_json(self) -> dict:
        return {"root": str(self.root), "scanned_at": self.when, "scan_seconds": round(self.seconds, 4),
                "packages": self.packages, "errors": self.errors,
                "compositions": [e.to_json(self.root) for e in self.entries.values()]}


class Library:
    """The scan of ``root`` (``max_depth`` folder levels, ``max_folders`` folders at most)."""

    def __init__(self, root, *, max_depth: int = 4, max_folders: int = 10_000, min_rescan: float = 1.0) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise MediaError(self.root, "library folder does not exist")
        self._real = os.path.realpath(self.root)
        self.max_depth, self.max_folders = max_depth, max_folders
        self.min_rescan = min_rescan      # seconds: an unknown id rescans at most this often
        self._lock = threading.Lock()
        self._scan: Scan | None = None

    @property
    def current(self) -> Scan:
        """The last scan (scanning once if there is none)."""
        return self._scan or self.rescan()

    def rescan(self, since: float | None = None) -> Scan:
        """Walk the folder again; the new scan replaces the old one.  With ``since`` (a
        ``time.time()``), a scan started after it (by a concurrent request) is reused."""
        with self._lock:
            if since is not None and self._scan is not None and self._scan.when >= since:
                return self._scan
            t0 = time.perf_counter()
            scan = Scan(self.root, when=time.time())
            for folder in self._folders(scan):
                self._scan_folder(scan, folder)
            scan.seconds = time.perf_counter() - t0
            self._scan = scan
            return scan

    def find(self, cpl_id: str) -> Entry | None:
        """The entry with this id (case-insensitive; ``urn:uuid:`` allowed); an unknown id rescans
        (at most every ``min_rescan`` seconds) before giving None."""
        key = cpl_id.strip().lower().removeprefix("urn:uuid:")
        scan = self.current
        entry = scan.entries.get(key)
        if entry is None and time.time() - scan.when > self.min_rescan:
            entry = self.rescan().entries.get(key)
        return entry

    def inside(self, path) -> bool:
        """Whether ``path`` resolves (symbolic links followed) to the root or under it."""
        real = os.path.realpath(path)
        return real == self._real or real.startswith(self._real + os.sep)

    def check(self, entry: Entry) -> None:
        """Refuse (MediaError) an entry whose files now resolve outside the root."""
        if entry.package is not None:
            pkg = read_package(entry.package)
            outside = self._outside(pkg.paths.values())
            if not self.inside(entry.package) or not self.inside(entry.path) or outside:
                raise MediaError(entry.path, f"{outside or 'the package'} resolves outside the library")
        elif not self.inside(entry.path) or self._frames(entry.path) is None:
            raise MediaError(entry.path, "the sequence resolves outside the library")

    def _outside(self, paths) -> str | None:
        """The first of ``paths`` (relative to the root) that resolves outside the root, or None."""
        for p in paths:
            if not self.inside(p):
                return relpath(p, self.root)
        return None

    def _folders(self, scan: Scan):
        """The folders to scan, depth first in name order, each real folder once."""
        count, seen = 0, set()
        stack = [(self.root, 0)]
        while stack and count < self.max_folders:
            folder, depth = stack.pop()
            try:
                st = os.stat(folder)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue                    # a link loop or a second name of a folder already seen
            seen.add((st.st_dev, st.st_ino))
            count += 1
            yield folder
            if depth >= self.max_depth or find_assetmap(folder) is not None:
                continue
            try:
                subs = sorted((e for e in os.scandir(folder) if not e.name.startswith(".") and e.is_dir()),
                              key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            for e in subs:
                if e.is_symlink() and not self.inside(e.path):
                    scan.errors.append({"path": relpath(Path(e.path), self.root),
                                        "error": "a link to a folder outside the library: skipped"})
                else:
                    stack.append((Path(e.path), depth + 1))

    def _frames(self, folder: Path) -> int | None:
        """Frame files in ``folder``; None when one of them links outside the root."""
        count = 0
        for e in os.scandir(folder):
            if Path(e.name).suffix.lower() in FRAME_SUFFIXES and e.is_file():
                if e.is_symlink() and not self.inside(e.path):
                    return None
                count += 1
        return count

    def _scan_folder(self, scan: Scan, folder: Path) -> None:
        if find_assetmap(folder) is not None:
            self._scan_package(scan, folder)
            return
        try:
            frames = self._frames(folder)
        except OSError:
            return
        if frames is None:
            scan.errors.append({"path": relpath(folder, self.root),
                                "error": "a frame file links outside the library: skipped"})
        elif frames:
            key = str(uuid.uuid5(SEQUENCE_NS, relpath(folder, self.root)))
            scan.entries[key] = Entry(key, "j2k-sequence", folder.name, folder, None, None, frames,
                                      (("", frames),), size=_frame_bytes(folder))

    def _scan_package(self, scan: Scan, folder: Path) -> None:
        try:
            pkg = read_package(folder)
        except (MediaError, OSError) as exc:
            scan.errors.append({"path": relpath(folder, self.root), "error": str(exc)})
            return
        outside = self._outside(pkg.paths.values())
        if outside is not None:
            scan.errors.append({"path": relpath(folder, self.root),
                                "error": f"asset {outside} resolves outside the library: skipped"})
            return
        ids = []
        for comp in pkg.compositions:
            reels = []
            encrypted = False
            for reel in comp.reels:
                pics = reel.of_kind("picture", "stereo-picture")
                reels.append((reel.id, sum(a.duration for a in pics)))
                encrypted = encrypted or any(a.key_id for a in pics)
            entry = Entry(comp.id, comp.flavour, comp.title, comp.path, folder, comp.edit_rate,
                          sum(n for _, n in reels), tuple(reels), encrypted, comp.stereoscopic,
                          _asset_bytes(comp), comp.content_kind)
            first = scan.entries.setdefault(comp.id, entry)
            if first is not entry:
                scan.errors.append({"path": relpath(comp.path, self.root),
                                    "error": f"CPL id {comp.id} is also in {relpath(first.path, self.root)}, "
                                             "which is the one loaded"})
            ids.append(comp.id)
        scan.packages.append({"path": relpath(folder, self.root), "kind": pkg.kind, "compositions": ids})


def _asset_bytes(comp) -> int | None:
    """Bytes of the track files ``comp`` (a :class:`~cinegpu.media.package.read.Composition`)
    plays, each counted once; None when one of them is missing."""
    paths = {a.path for reel in comp.reels for a in reel.assets if a.path is not None}
    total = 0
    for p in paths:
        try:
            total += os.stat(p).st_size
        except OSError:
            return None
    return total


def _frame_bytes(folder: Path) -> int | None:
    """Bytes of the frame files of a sequence folder (None when it cannot be read)."""
    total = 0
    try:
        for e in os.scandir(folder):
            if Path(e.name).suffix.lower() in FRAME_SUFFIXES and e.is_file():
                total += e.stat().st_size
    except OSError:
        return None
    return total
