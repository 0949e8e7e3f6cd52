"""The library: the packages and compositions under one folder, found by a bounded walk.

A folder with an ASSETMAP is a package (DCP or IMF); each composition its packing lists name is
an entry, keyed by its CPL id.  A folder of ``.j2c/.j2k/.jp2`` frames with no ASSETMAP is an entry
too, keyed by a name-based UUID of its path under the library root (stable across rescans), so
that plain sequences can be loaded by id like compositions.  A package that fails to parse is
listed under ``errors`` with the reason; it never stops the scan.
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
from cinegpu.media.package import find_assetmap, read_package, relpath
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

    def to_json(self, root: Path) -> dict:
        return {"id": self.id, "kind": self.kind, "title": self.title, "path": relpath(self.path, root),
                "package": None if self.package is None else relpath(self.package, root),
                "edit_rate": None if self.edit_rate is None else str(self.edit_rate),
                "frames": self.frames, "encrypted": self.encrypted,
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
            for folder in self._folders():
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

    def _folders(self):
        count = 0
        stack = [(self.root, 0)]
        while stack and count < self.max_folders:
            folder, depth = stack.pop()
            count += 1
            yield folder
            if depth >= self.max_depth or find_assetmap(folder) is not None:
                continue
            try:
                subs = sorted((e for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")),
                              key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            stack.extend((Path(e.path), depth + 1) for e in subs)

    def _scan_folder(self, scan: Scan, folder: Path) -> None:
        if find_assetmap(folder) is not None:
            self._scan_package(scan, folder)
            return
        try:
            frames = sum(1 for e in os.scandir(folder) if e.is_file() and Path(e.name).suffix.lower() in FRAME_SUFFIXES)
        except OSError:
            return
        if frames:
            key = str(uuid.uuid5(SEQUENCE_NS, relpath(folder, self.root)))
            scan.entries[key] = Entry(key, "j2k-sequence", folder.name, folder, None, None, frames,
                                      (("", frames),))

    def _scan_package(self, scan: Scan, folder: Path) -> None:
        try:
            pkg = read_package(folder)
        except (MediaError, OSError) as exc:
            scan.errors.append({"path": relpath(folder, self.root), "error": str(exc)})
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
                          sum(n for _, n in reels), tuple(reels), encrypted)
            first = scan.entries.setdefault(comp.id, entry)
            if first is not entry:
                scan.errors.append({"path": relpath(comp.path, self.root),
                                    "error": f"CPL id {comp.id} is also in {relpath(first.path, self.root)}, "
                                             "which is the one loaded"})
            ids.append(comp.id)
        scan.packages.append({"path": relpath(folder, self.root), "kind": pkg.kind, "compositions": ids})
