"""``open_source``: one picture source over packages, track files and frame sequences.

Encrypted track files (ST 429-6) open with ``keys``, a :class:`~.key_ring.KeyRing`: a
composition takes the keys of its KDMs (ST 430-1) valid now, each asset the key its CPL
``KeyId`` names, checked against the track file's check value before a frame is read; a bare
track file takes the ring's picture key that opens it.  The keys of a composition stay with its
Source (``keys``), for its sound and subtitles.

A Source is a list of spans; each span plays ``duration`` frames of one track (an MXF file or a
frame sequence) from ``entry_point``, looping over ``source_duration`` frames when an IMF resource
repeats. Frame ``n`` of the composition is found by bisection over the spans' starts.
"""

from __future__ import annotations

import bisect
import operator
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Protocol

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, KdmRefused, MediaError, UnsupportedMedia
from cinegpu.media.files import read_bounded
from cinegpu.media.j2k_profile import Profile, parse_profile
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.package.read import (
    Composition,
    Package,
    find_assetmap,
    local,
    missing_assets_error,
    missing_cpl_error,
    parse_xml,
    read_package,
)
from cinegpu.media.security.key_ring import CompositionKeys, KeyRing, check_track_key

#: Suffixes of one frame's file: Part-1 and HT (Part 15) codestreams, JP2 and JPH files.
FRAME_SUFFIXES = (".j2c", ".j2k", ".jp2", ".jpc", ".jhc", ".jph")
MAX_CODESTREAM_BYTES = 256 << 20


class Track(Protocol):
    frame_count: int

    def frame(self, n: int, eye: str = "left") -> bytes: ...

    def frame_size(self, n: int, eye: str = "left") -> int: ...

    def close(self) -> None: ...


def natural_key(name: str) -> list:
    """Sort key that puts "f2" before "f10"."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def read_codestream_file(path: Path) -> bytes:
    return read_bounded(path, MAX_CODESTREAM_BYTES, "a codestream file")


def folder_frames(folder: Path) -> list[Path]:
    """A folder's files with a codestream or JP2 suffix (:data:`FRAME_SUFFIXES`), in natural
    order (``f2`` before ``f10``)."""
    return sorted((p for p in folder.iterdir() if p.suffix.lower() in FRAME_SUFFIXES and p.is_file()),
                  key=lambda p: natural_key(p.name))


def frame_files(paths: list[Path]) -> list[Path]:
    """The files ``paths`` name: a file as it is, a folder's :func:`folder_frames`;
    :class:`MediaError` for a path that is neither."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += folder_frames(path)
        elif path.is_file():
            found.append(path)
        else:
            raise MediaError(path, "no such file or folder")
    return found


class FrameFiles:
    """A list of codestream files, one frame each."""

    def __init__(self, files: list[Path]):
        self.files = files
        self.frame_count = len(files)

    def frame(self, n: int, eye: str = "left") -> bytes:
        return read_codestream_file(self.files[n])

    def frame_size(self, n: int, eye: str = "left") -> int:
        try:
            return self.files[n].stat().st_size
        except OSError as exc:
            raise MediaError(self.files[n], f"cannot read: {exc.strerror or exc}") from None

    def close(self) -> None:
        pass


@dataclass
class Span:
    track: Track
    entry_point: int
    source_duration: int
    duration: int


class Source:
    """Picture frames of a composition, by one flat index (see the module docstring)."""

    def __init__(self, kind: str, title: str, edit_rate: Fraction | None, spans: list[Span],
                 stereoscopic: bool = False, width: int | None = None, height: int | None = None,
                 path: Path | None = None, composition: Composition | None = None,
                 package: Package | None = None, keys: CompositionKeys | None = None):
        self.kind, self.title, self.edit_rate = kind, title, edit_rate
        #: the composition's content keys (encrypted packages), for its sound and subtitles
        self.keys = keys
        self.spans, self.stereoscopic, self.path = spans, stereoscopic, path
        self.composition, self.package = composition, package
        self._starts, total = [], 0
        for s in spans:
            self._starts.append(total)
            total += s.duration
        self.frame_count = total
        #: The main header of frame 0, parsed once here (None: no frames, or unreadable).
        self.profile: Profile | None = None
        if total:   # the codestream's SIZ is the truth (ffmpeg pads the descriptor's stored size)
            try:
                self.profile = parse_profile(self.frame(0), path)
                width, height = self.profile.width, self.profile.height
            except MediaError:
                if width is None or height is None:
                    raise
        self.width, self.height = width or 0, height or 0

    @property
    def ycbcr(self) -> bool:
        """Whether the picture track says its samples are Y'CbCr (a CDCI descriptor, as IMF's
        Y'CbCr track files carry) rather than R'G'B' or X'Y'Z'."""
        track = self.spans[0].track if self.spans else None
        pic = getattr(track, "picture", None)
        return pic is not None and pic.descriptor == "CDCIEssenceDescriptor"

    def locate(self, n: int) -> tuple[Span, int]:
        """The span holding frame ``n`` and the frame's index within its track."""
        n = operator.index(n)
        if not 0 <= n < self.frame_count:
            raise IndexError(f"frame {n} out of range 0..{self.frame_count - 1}")
        i = bisect.bisect_right(self._starts, n) - 1
        span = self.spans[i]
        k = n - self._starts[i]
        if span.source_duration:
            k %= span.source_duration
        return span, span.entry_point + k

    def frame(self, n: int, eye: str = "left") -> bytes:
        """The codestream of frame ``n`` (0-based); ``eye`` is "left" or "right" (stereo)."""
        if eye not in ("left", "right"):
            raise ValueError(f"eye must be 'left' or 'right', not {eye!r}")
        span, k = self.locate(n)
        return span.track.frame(k, eye)

    def frame_size(self, n: int, eye: str = "left") -> int:
        """Bytes in frame ``n``'s codestream (read from the index or the file size)."""
        span, k = self.locate(n)
        return span.track.frame_size(k, eye)

    def close(self) -> None:
        for t in {id(s.track): s.track for s in self.spans}.values():
            t.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self) -> int:
        return self.frame_count

    def __repr__(self) -> str:
        return (f"<Source {self.kind} {self.title!r} {self.frame_count} frames "
                f"{self.width}x{self.height} @ {self.edit_rate}>")


def open_mxf_source(path: Path, keys: KeyRing | None = None) -> Source:
    mxf = MXFFile(path)
    try:
        if mxf.encrypted and keys is not None:
            mxf.key = _bare_track_key(mxf, keys)
        mxf.check_readable()
        pic = mxf.picture
        assert pic is not None
        return Source("mxf", path.stem, mxf.edit_rate,
                      [Span(mxf, 0, mxf.frame_count, mxf.frame_count)], mxf.stereoscopic,
                      pic.stored_width, pic.stored_height, path)
    except BaseException:
        mxf.close()
        raise


def _bare_track_key(mxf: MXFFile, keys: KeyRing) -> bytes:
    """The picture key (MDIK) of the ring that opens the track file (its check value): no CPL
    names the key id of a track file opened alone."""
    found = keys.candidate_keys("MDIK")
    for _, key, _ in found:
        try:
            mxf.check_key(key)
        except EncryptedMedia:
            continue
        return key
    if not found:
        raise KdmRefused(mxf.path, "the track file is encrypted and no picture key (MDIK) is held now "
                                   "(no KDM in its window, no key file)")
    raise KdmRefused(mxf.path, f"none of the {len(found)} picture keys held now decrypts this track file "
                               f"(their check values differ, ST 429-6)")


def open_sequence(folder: Path) -> Source:
    files = folder_frames(folder)
    if not files:
        raise UnsupportedMedia(folder, "no ASSETMAP, and no .j2c/.j2k/.jp2 frames in this folder")
    return Source("j2k-sequence", folder.name, None, [Span(FrameFiles(files), 0, 0, len(files))],
                  path=folder)


def composition_keys(comp: Composition, keys: KeyRing | None) -> CompositionKeys | None:
    """The keys of ``comp`` from the ring, every asset's CPL ``KeyId`` checked to be among them
    (:class:`KdmRefused` naming the first asset and reel whose key no KDM holds); None when the
    CPL names no key or no ring is given."""
    encrypted = [(reel, a) for reel in comp.reels for a in reel.assets if a.key_id]
    if keys is None or not encrypted:
        return None
    ck = keys.for_composition(comp.id, comp.title, comp.path)
    for reel, a in encrypted:
        ck.key(a.key_id, kind=a.kind, asset_id=a.id, reel_id=reel.id, path=comp.path)
    return ck


def _picture_track(asset, reel, ck: CompositionKeys | None, comp: Composition) -> MXFFile:
    """The picture track file of ``asset``, with its key when it is encrypted."""
    mxf = MXFFile(asset.path)
    try:
        if mxf.encrypted and ck is not None:
            key = ck.key(asset.key_id, kind=asset.kind, asset_id=asset.id, reel_id=reel.id, path=comp.path)
            check_track_key(mxf, key, kind=asset.kind, asset_id=asset.id, reel_id=reel.id,
                            key_id=asset.key_id, where=ck.where(asset.key_id))
            mxf.key = key
        return mxf
    except BaseException:
        mxf.close()
        raise


def open_composition(pkg: Package, comp: Composition, keys: KeyRing | None = None) -> Source:
    spans: list[Span] = []
    tracks: dict[Path, MXFFile] = {}
    ck = composition_keys(comp, keys)
    try:
        for reel in comp.reels:
            for asset in reel.of_kind("picture", "stereo-picture"):
                if asset.path is None:        # a VF without its OV (--ov), or a broken package
                    raise missing_assets_error(pkg, comp)
                if not asset.path.is_file():
                    raise CorruptMedia(asset.path, f"picture asset {asset.id} is missing "
                                                 f"(named by {pkg.assetmap_path.name})")
                mxf = tracks.get(asset.path) or _picture_track(asset, reel, ck, comp)
                tracks[asset.path] = mxf
                mxf.check_readable()
                source = asset.duration // max(1, asset.repeat_count)
                if asset.entry_point + source > mxf.frame_count:
                    raise CorruptMedia(comp.path, f"reel {reel.id} plays frames {asset.entry_point}.."
                                                f"{asset.entry_point + source - 1} of {asset.path.name}, "
                                                f"which has {mxf.frame_count}")
                spans.append(Span(mxf, asset.entry_point, source, asset.duration))
        if not spans:
            raise UnsupportedMedia(comp.path, "composition has no picture")
        if not any(s.duration for s in spans):
            raise CorruptMedia(comp.path, "composition's picture lasts 0 frames")
        first = spans[0].track
        pic = first.picture if isinstance(first, MXFFile) else None
        return Source(comp.flavour, comp.title, comp.edit_rate, spans,
                      comp.stereoscopic or any(isinstance(s.track, MXFFile) and s.track.stereoscopic
                                               for s in spans),
                      pic.stored_width if pic else None, pic.stored_height if pic else None,
                      comp.path, comp, pkg, ck)
    except BaseException:
        for t in tracks.values():
            t.close()
        raise


def open_package(path: Path, cpl: Path | None = None, keys: KeyRing | None = None, ov=()) -> Source:
    pkg = read_package(path, ov=ov)
    comps = pkg.compositions
    if cpl is not None:
        comps = [c for c in comps if c.path.resolve() == cpl.resolve()]
        if not comps:
            raise CorruptMedia(cpl, f"this CPL is not listed in the packing lists of {pkg.assetmap_path}")
    if not comps:
        raise missing_cpl_error(pkg) or UnsupportedMedia(pkg.assetmap_path, "package has no composition playlist")
    return open_composition(pkg, comps[0], keys)


def is_mxf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(65536 + 16)
    except OSError:
        return False
    return head.find(bytes.fromhex("060e2b34020501010d01020101")) >= 0


#: Leading bytes of files people point the player at by mistake, and what they are.
_MAGIC = ((b"\xff\x4f\xff\x51", "JPEG 2000 codestream"),
          (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "JP2 file"),
          (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
          (b"II*\x00", "a TIFF image"), (b"MM\x00*", "a TIFF image"),
          (b"SDPX", "a DPX image"), (b"XPDS", "a DPX image"), (b"PK\x03\x04", "a ZIP archive"),
          (b"%PDF", "a PDF document"), (b"RIFF", "a RIFF (WAV/AVI) file"),
          (b"RF64", "an RF64 (WAV) file"), (b"BW64", "a BW64 (WAV) file"))


def sniff(path: Path) -> str:
    """What the file at ``path`` holds, judged by its first bytes: one of the kinds of
    :data:`_MAGIC`, ``"XML"`` (text starting with ``<``, after a BOM and white space),
    ``"an empty file"`` or ``"not XML"``."""
    with open(path, "rb") as f:
        head = f.read(512)
    if not head:
        return "an empty file"
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"<") or head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "XML"
    return "not XML"


def kind_of(path) -> str:
    """What ``path`` is to the media commands: ``"folder"``, ``"mxf"``, ``"codestream"`` (a
    codestream or JP2 file, by suffix or first bytes) or ``"xml"``. Anything else raises one
    :class:`MediaError` for every command: no such path, or what the file is instead."""
    p = Path(path)
    if p.is_dir():
        return "folder"
    if not p.exists():
        raise MediaError(p, "no such file or folder")
    if not p.is_file():
        raise MediaError(p, "not a regular file or a folder (a device or a pipe?)")
    if p.suffix.lower() == ".mxf" or is_mxf(p):
        return "mxf"
    kind = sniff(p)
    if p.suffix.lower() in FRAME_SUFFIXES or kind in ("JPEG 2000 codestream", "JP2 file"):
        return "codestream"
    if kind != "XML":
        raise UnsupportedMedia(p, f"not a package, track file or codestream ({kind})")
    return "xml"


def open_source(path, keys: KeyRing | None = None, ov=()) -> Source:
    """Open a DCP folder, a CPL/ASSETMAP file, an IMF folder, an MXF track file, a folder of
    .j2c/.j2k/.jp2 frames (natural sort) or one codestream file. ``keys``: the content keys of
    encrypted track files (see the module docstring); ``ov``: original-version package folders
    that resolve a supplemental package's (VF's) assets (:func:`.package.resolve_from_ov`)."""
    p = Path(path)
    kind = kind_of(p)
    if kind == "folder":
        if find_assetmap(p) is not None:
            return open_package(p, keys=keys, ov=ov)
        return open_sequence(p)
    if kind == "mxf":
        return open_mxf_source(p, keys)
    if kind == "codestream":
        return Source("codestream", p.stem, None, [Span(FrameFiles([p]), 0, 0, 1)], path=p)
    root = parse_xml(p)
    name = local(root)
    if name in ("AssetMap", "PackingList", "VolumeIndex"):
        return open_package(p if name == "AssetMap" else p.parent, keys=keys, ov=ov)
    if name == "CompositionPlaylist":
        return open_package(p.parent, cpl=p, keys=keys, ov=ov)
    raise UnsupportedMedia(p, f"not a package, track file or codestream (XML root <{name}>)")
