"""DCP and IMF packages: ASSETMAP/VOLINDEX (ST 429-9), PKL (ST 429-8), CPL (ST 429-7, ST 2067-3).

The XML namespace of each document decides its flavour (SMPTE, Interop ``PROTO-ASDCP``, IMF), never
the file name. Assets are resolved through the ASSETMAP; the CPL says which assets play, from which
entry point and for how long.

Hostile packages are refused, never followed:

* a chunk ``Path`` is relative to the volume root, the folder of the ASSETMAP (ST 429-9 6.x):
  an absolute path, a ``file:`` URI naming an absolute path (``file:///etc/passwd``), a path
  that leaves the folder through ``..``, or one that does after symlinks are resolved, raises
  a MediaError naming the asset id and the path; nothing outside the package is opened,
  sized, hashed or quoted. ``file://`` followed by a *relative* path (``file://video.mxf``,
  written by some tools) is read as that relative path;
* every number read from XML is bounded: edit rates positive with numerator and denominator
  at most :data:`MAX_RATE_TERM` and a rate between :data:`MIN_RATE` and :data:`MAX_RATE`
  frames per second; durations, entry points and repeat counts at most :data:`MAX_FRAMES`
  edit units, and so is a composition's picture, repeats included; sizes below 2^63 bytes;
* an asset id twice in an ASSETMAP or a PKL, a reel (segment) id or a resource id twice in a
  CPL, and a PKL without assets are errors;
* an XML document above :data:`MAX_XML_BYTES` (8 MiB) is refused before it is parsed, so
  reading one costs at most about a second and a hundred MB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from lxml import etree

from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia
from cinegpu.media.files import read_bounded
from cinegpu.media.package.cpl_metadata import MARKER_LABELS, ContentVersion, CplMetadata, Marker, Rating

NS_AM = {"http://www.smpte-ra.org/schemas/429-9/2007/AM": "smpte",
         "http://www.digicine.com/PROTO-ASDCP-AM-20040311#": "interop"}
NS_PKL = {"http://www.smpte-ra.org/schemas/429-8/2007/PKL": "smpte",
          "http://www.digicine.com/PROTO-ASDCP-PKL-20040311#": "interop",
          "http://www.smpte-ra.org/schemas/2067-2/2016/PKL": "imf"}
NS_CPL = {"http://www.smpte-ra.org/schemas/429-7/2006/CPL": "dcp-smpte",
          "http://www.digicine.com/PROTO-ASDCP-CPL-20040511#": "dcp-interop"}
IMF_CPL_PREFIX = "http://www.smpte-ra.org/schemas/2067-3/"
#: Largest XML document read (ASSETMAP, PKL, CPL), bytes.  Real ones are a few MB at most (a
#: feature's multi-reel CPL with sound, subtitles and a signature is tens of KB; an IMF CPL with
#: its essence descriptors some hundreds).  ``cinegpu info`` of a CPL of many reels costs about
#: 0.15 s and 10 bytes of memory a byte (2 cores): 63 MB took 16 s and 614 MB; at this cap the
#: whole command takes 1.5 s and 119 MB.
MAX_XML_BYTES = 8 << 20
#: Largest numerator or denominator of an edit rate (ST 429-7 and ST 2067-3 rationals).
MAX_RATE_TERM = 1_000_000
#: Plausible edit rates, frames per second.
MIN_RATE, MAX_RATE = Fraction(1, 1000), Fraction(1000)
#: IMF sound resources count edit units in samples (ST 2067-2 5.x: 48 or 96 kHz): per second.
MAX_SOUND_RATE = Fraction(384_000)
#: Largest duration, entry point or repeat count, and a composition's largest picture, in edit units.
MAX_FRAMES = (1 << 31) - 1
#: Sizes (bytes) are xs:unsignedLong in the PKL schema; we take them below 2^63.
MAX_SIZE = (1 << 63) - 1

# CPL reel asset elements (local names) and what they carry.
ASSET_KINDS = {"MainPicture": "picture", "MainStereoscopicPicture": "stereo-picture",
               "MainSound": "sound", "MainSubtitle": "subtitle", "MainCaption": "caption",
               "ClosedCaption": "caption", "MainMarkers": "markers", "AuxData": "aux"}
IMF_SEQUENCES = {"MainImageSequence": "picture", "MainAudioSequence": "sound",
                 "SubtitlesSequence": "subtitle", "MarkerSequence": "markers"}


def uuid_of(text: str | None) -> str:
    """A UUID as lower-case hex with dashes, ``urn:uuid:`` stripped."""
    t = (text or "").strip().lower()
    return t[9:] if t.startswith("urn:uuid:") else t


def local(el) -> str:
    """The element's name without its namespace ("" for comments and processing instructions)."""
    tag = el.tag
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def namespace(el) -> str:
    return etree.QName(el).namespace or ""


def child(el, name: str):
    """The first child element named ``name`` in any namespace (or none), else None."""
    return el.find(f"{{*}}{name}")


def text(el, name: str, default: str | None = None) -> str | None:
    c = child(el, name)
    return c.text.strip() if c is not None and c.text else default


def parse_xml(path: Path):
    """Parse ``path`` with entities and network off; MediaError names the line on failure."""
    data = read_bounded(path, MAX_XML_BYTES, "XML document",
                        "real CPLs, PKLs, ASSETMAPs and subtitle documents are a few MB at most")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False,
                             remove_comments=True)
    try:
        return etree.fromstring(data, parser, base_url=str(path))
    except etree.XMLSyntaxError as exc:
        line, col = exc.position if exc.position else (None, None)
        raise CorruptMedia(path, f"malformed XML (line {line}, column {col}): {exc.msg}") from None


def _int(el, name: str, path, default: int | None = None, limit: int = MAX_FRAMES) -> int | None:
    """The integer in child ``name``: 0 <= value <= ``limit``; MediaError names the line."""
    t = text(el, name)
    if t is None:
        return default
    line = child(el, name).sourceline
    if len(t) > 24 or not t.isascii():
        raise CorruptMedia(path, f"<{name}> is not a plausible integer: {_quote(t)} (line {line})")
    try:
        v = int(t)
    except ValueError:
        raise CorruptMedia(path, f"<{name}> is not an integer: {t!r} (line {line})") from None
    if v < 0:
        raise CorruptMedia(path, f"<{name}> is negative: {v} (line {line})")
    if v > limit:
        raise UnsupportedMedia(path, f"<{name}> {v} is above the limit of {limit} (line {line})")
    return v


def _quote(t: str, n: int = 40) -> str:
    """``t`` for an error message, cut to ``n`` characters."""
    return repr(t) if len(t) <= n else repr(t[:n]) + f"... ({len(t)} characters)"


def _rate(el, name: str, path, top: Fraction = MAX_RATE) -> Fraction | None:
    """An edit rate, "num den" (ST 429-7 Rational) or one number, in edit units per second:
    both terms in 1..MAX_RATE_TERM and the rate within MIN_RATE..``top``, else MediaError."""
    t = text(el, name)
    if t is None:
        return None
    line = child(el, name).sourceline
    parts = t.replace("/", " ").split()
    rate = None
    if len(t) <= 40 and t.isascii() and len(parts) in (1, 2):
        try:
            rate = Fraction(int(parts[0]), int(parts[1])) if len(parts) == 2 else Fraction(parts[0])
        except (ValueError, ZeroDivisionError, OverflowError):
            rate = None
        if len(parts) == 2 and rate is not None and not (
                0 < int(parts[0]) <= MAX_RATE_TERM and 0 < int(parts[1]) <= MAX_RATE_TERM):
            rate = None
    if rate is None or rate.numerator > MAX_RATE_TERM or rate.denominator > MAX_RATE_TERM:
        raise CorruptMedia(path, f"<{name}> is not a rate: {_quote(t)} (line {line}); want two "
                               f"integers 1..{MAX_RATE_TERM}")
    if not MIN_RATE <= rate <= top:
        raise CorruptMedia(path, f"<{name}> {rate} is outside {MIN_RATE}..{top} edit units per "
                               f"second (line {line})")
    return rate


@dataclass
class PKLAsset:
    """One asset of a packing list (ST 429-8 6.x)."""

    id: str
    hash: str | None
    size: int | None
    type: str | None
    original_file_name: str | None = None


@dataclass
class PackingList:
    path: Path
    id: str
    flavour: str
    assets: list[PKLAsset]


@dataclass
class ReelAsset:
    """A track file's use in a reel (DCP) or a resource in a sequence (IMF)."""

    kind: str
    id: str                       # the track file's asset id
    edit_rate: Fraction | None
    entry_point: int
    duration: int                 # frames played, repeats included
    intrinsic_duration: int | None
    frame_rate: Fraction | None = None
    screen_aspect_ratio: str | None = None
    key_id: str | None = None
    hash: str | None = None
    repeat_count: int = 1
    path: Path | None = None      # resolved through the ASSETMAP
    ov: Path | None = None        # the OV package it was found in (a supplemental package)


@dataclass
class Reel:
    id: str
    assets: list[ReelAsset]

    def of_kind(self, *kinds: str) -> list[ReelAsset]:
        return [a for a in self.assets if a.kind in kinds]


@dataclass
class Composition:
    path: Path
    id: str
    flavour: str                  # "dcp-smpte", "dcp-interop", "imf"
    title: str
    content_kind: str | None
    edit_rate: Fraction | None
    reels: list[Reel]
    #: the CPL's content version, ratings and markers (a DCP's: ST 429-7 6.8, 6.9, 8.3)
    metadata: CplMetadata = field(default_factory=CplMetadata)

    @property
    def stereoscopic(self) -> bool:
        return any(r.of_kind("stereo-picture") for r in self.reels)


@dataclass
class Package:
    """A DCP or IMF package folder, through its ASSETMAP."""

    root: Path
    assetmap_path: Path
    flavour: str                  # of the ASSETMAP: "smpte" or "interop"
    paths: dict[str, Path]        # asset id -> file
    packing_list_ids: list[str]
    #: asset id -> the chunk's ``Length`` as the ASSETMAP gives it (text, bytes; ST 429-9
    #: makes it optional: assets without one are not here), which ``check`` compares
    lengths: dict[str, str] = field(default_factory=dict)
    pkls: list[PackingList] = field(default_factory=list)
    compositions: list[Composition] = field(default_factory=list)
    volindex: Path | None = None
    #: XML assets a packing list names that may be composition playlists (see
    #: :func:`read_package`) but whose files are missing: (path, packing list, asset)
    missing_cpls: list[tuple[Path, PackingList, PKLAsset]] = field(default_factory=list)
    #: the original-version packages the compositions' assets were looked up in (``ov=``)
    ovs: list[Path] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.compositions:
            return self.compositions[0].flavour
        return "dcp-interop" if self.flavour == "interop" else "dcp-smpte"


def find_assetmap(folder: Path) -> Path | None:
    for name in ("ASSETMAP.xml", "ASSETMAP", "assetmap.xml"):
        p = folder / name
        if p.is_file():
            return p
    return None


def read_assetmap(path: Path) -> Package:
    root = parse_xml(path)
    flavour = NS_AM.get(namespace(root))
    if local(root) != "AssetMap" or flavour is None:
        raise CorruptMedia(path, f"not an ASSETMAP: root <{local(root)}> in namespace "
                               f"{namespace(root) or 'none'}")
    folder = path.parent
    paths: dict[str, Path] = {}
    lengths: dict[str, str] = {}
    pkl_ids: list[str] = []
    asset_list = child(root, "AssetList")
    if asset_list is None:
        raise CorruptMedia(path, "ASSETMAP has no <AssetList>")
    for asset in asset_list:
        if local(asset) != "Asset":
            continue
        aid = uuid_of(text(asset, "Id"))
        chunks = child(asset, "ChunkList")
        chunk = child(chunks, "Chunk") if chunks is not None else None
        rel = text(chunk, "Path") if chunk is not None else None
        if not aid or not rel:
            raise CorruptMedia(path, f"asset {aid or '?'} without an Id or a chunk Path "
                                   f"(line {asset.sourceline})")
        if aid in paths:
            raise CorruptMedia(path, f"asset {aid} is listed twice (line {asset.sourceline}): "
                                   "which file it names is ambiguous")
        paths[aid] = confined(folder, rel, f"asset {aid} (line {asset.sourceline})", path)
        length = text(chunk, "Length")
        if length is not None:
            lengths[aid] = length.strip()
        if (text(asset, "PackingList") or "").lower() == "true":
            pkl_ids.append(aid)
    vol = None
    for n in ("VOLINDEX.xml", "VOLINDEX"):
        if (folder / n).is_file() and inside(folder / n, folder):
            vol = folder / n
            break
    return Package(folder, path, flavour, paths, pkl_ids, lengths, volindex=vol)


def inside(path: Path, root: Path) -> bool:
    """True when ``path``, symlinks resolved, lies in ``root`` (symlinks resolved)."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):   # a symlink loop, a NUL byte
        return False


def confined(root: Path, rel: str, what: str, where: Path) -> Path:
    """The file a chunk ``Path`` names, which must stay in the volume ``root`` (ST 429-9 6.x:
    a path relative to the root); MediaError naming ``what`` and the path otherwise."""
    name = rel[7:] if rel.lower().startswith("file://") else rel
    bad = None
    if "\0" in name or not name.strip():
        bad = "is not a file name"
    elif name.startswith(("/", "\\")) or name[1:3] in (":/", ":\\"):
        bad = "is absolute; package paths are relative to the ASSETMAP's folder (ST 429-9)"
    elif not inside(root / name, root):
        bad = "leads outside the package folder"
    else:
        try:
            (root / name).stat()
        except (FileNotFoundError, NotADirectoryError):
            pass                      # a missing asset: reported where it is needed
        except OSError as exc:        # a name too long, a symlink loop
            bad = f"cannot be used ({exc.strerror or exc})"
    if bad:
        raise CorruptMedia(where, f"{what}: path {_quote(rel, 300)} {bad}; refused")
    return root / (root / name).resolve().relative_to(root.resolve())


def read_pkl(path: Path) -> PackingList:
    root = parse_xml(path)
    flavour = NS_PKL.get(namespace(root))
    if local(root) != "PackingList" or flavour is None:
        raise CorruptMedia(path, f"not a packing list: root <{local(root)}> in namespace "
                               f"{namespace(root) or 'none'}")
    asset_list = child(root, "AssetList")
    if asset_list is None:
        raise CorruptMedia(path, "packing list has no <AssetList>")
    assets: dict[str, PKLAsset] = {}
    for a in asset_list:
        if local(a) != "Asset":
            continue
        aid = uuid_of(text(a, "Id"))
        if not aid:
            raise CorruptMedia(path, f"packing list asset without an <Id> (line {a.sourceline})")
        if aid in assets:
            raise CorruptMedia(path, f"asset {aid} is listed twice (line {a.sourceline}): which "
                                   "hash and size it has is ambiguous")
        assets[aid] = PKLAsset(aid, text(a, "Hash"), _int(a, "Size", path, limit=MAX_SIZE),
                               text(a, "Type"), text(a, "OriginalFileName"))
    if not assets:
        raise CorruptMedia(path, f"packing list's <AssetList> (line {asset_list.sourceline}) lists "
                               "no asset")
    return PackingList(path, uuid_of(text(root, "Id")), flavour, list(assets.values()))


def cpl_flavour(root) -> str | None:
    ns = namespace(root)
    if local(root) != "CompositionPlaylist":
        return None
    if ns.startswith(IMF_CPL_PREFIX):
        return "imf"
    return NS_CPL.get(ns)


def read_cpl(path: Path, paths: dict[str, Path] | None = None) -> Composition:
    root = parse_xml(path)
    flavour = cpl_flavour(root)
    if flavour is None:
        raise CorruptMedia(path, f"not a composition playlist: root <{local(root)}> in namespace "
                               f"{namespace(root) or 'none'}")
    title = text(root, "ContentTitleText") or text(root, "ContentTitle") or text(root, "AnnotationText") \
        or text(root, "Annotation") or ""
    reels = _imf_segments(root, path) if flavour == "imf" else _dcp_reels(root, path)
    _check_reels(reels, path)
    for reel in reels:
        for a in reel.assets:
            a.path = (paths or {}).get(a.id)
    edit_rate = _rate(root, "EditRate", path)
    if edit_rate is None:
        pics = [a for r in reels for a in r.of_kind("picture", "stereo-picture")]
        edit_rate = pics[0].edit_rate if pics else None
    metadata = CplMetadata() if flavour == "imf" else _dcp_metadata(root, path, reels)
    return Composition(path, uuid_of(text(root, "Id")), flavour, title,
                       text(root, "ContentKind"), edit_rate, reels, metadata)


def _dcp_metadata(root, path, reels: list[Reel]) -> CplMetadata:
    """A DCP CPL's ContentVersion, RatingList and the markers of its reels' MainMarkers
    (ST 429-7 6.8, 6.9, 8.3), each marker at its composition frame (the reels before it
    counted by their pictures' durations); a marker of a label outside the standard set, or
    given twice, is left out (other tools write their own)."""
    version = child(root, "ContentVersion")
    content_version = None
    if version is not None and text(version, "Id"):
        content_version = ContentVersion(text(version, "Id").strip(), (text(version, "LabelText") or "").strip())
    ratings = tuple(Rating((text(el, "Agency") or "").strip(), (text(el, "Label") or "").strip())
                    for el in (child(root, "RatingList") if child(root, "RatingList") is not None else ())
                    if local(el) == "Rating")
    markers: dict[str, Marker] = {}
    start = 0
    for reel, parsed in zip((r for r in child(root, "ReelList") if local(r) == "Reel"), reels):
        al = child(reel, "AssetList")
        for el in (al if al is not None else ()):
            if local(el) != "MainMarkers" or child(el, "MarkerList") is None:
                continue
            entry = _int(el, "EntryPoint", path, 0) or 0
            for m in child(el, "MarkerList"):
                label = (text(m, "Label") or "").strip()
                if local(m) == "Marker" and label in MARKER_LABELS and label not in markers:
                    offset = _int(m, "Offset", path, 0) or 0
                    markers[label] = Marker(label, start + max(0, offset - entry))
        start += sum(a.duration for a in parsed.of_kind("picture", "stereo-picture")[:1])
    return CplMetadata(content_version, ratings, tuple(markers.values()))


def _check_reels(reels: list[Reel], path: Path) -> None:
    """Reel (segment) ids are unique, and so are a DCP reel's asset ids; the picture lasts at
    most MAX_FRAMES edit units, repeats included."""
    seen: set[str] = set()
    for reel in reels:
        if reel.id and reel.id in seen:
            raise CorruptMedia(path, f"reel (segment) id {reel.id} is listed twice")
        seen.add(reel.id)
    frames = sum(a.duration for r in reels for a in r.of_kind("picture", "stereo-picture"))
    if frames > MAX_FRAMES:
        raise UnsupportedMedia(path, f"the picture lasts {frames} edit units, above the limit of "
                               f"{MAX_FRAMES}")


def _dcp_reels(root, path) -> list[Reel]:
    reel_list = child(root, "ReelList")
    if reel_list is None:
        raise CorruptMedia(path, "CPL has no <ReelList>")
    reels = []
    for reel in reel_list:
        if local(reel) != "Reel":
            continue
        assets = []
        ids: set[str] = set()
        al = child(reel, "AssetList")
        for el in (al if al is not None else []):
            kind = ASSET_KINDS.get(local(el))
            if kind is None:
                continue
            aid = uuid_of(text(el, "Id"))
            if aid in ids:
                raise CorruptMedia(path, f"{local(el)} {aid}: asset id listed twice in reel "
                                       f"{uuid_of(text(reel, 'Id'))} (line {el.sourceline})")
            ids.add(aid)
            intrinsic = _int(el, "IntrinsicDuration", path)
            entry = _int(el, "EntryPoint", path, 0) or 0
            duration = _int(el, "Duration", path)
            if duration is None:
                duration = max(0, (intrinsic or 0) - entry)
            if intrinsic is not None and entry + duration > intrinsic:
                raise CorruptMedia(path, f"{local(el)} {uuid_of(text(el, 'Id'))}: entry point {entry} "
                                       f"+ duration {duration} exceeds intrinsic duration {intrinsic} "
                                       f"(line {el.sourceline})")
            assets.append(ReelAsset(kind, uuid_of(text(el, "Id")), _rate(el, "EditRate", path),
                                    entry, duration, intrinsic, _rate(el, "FrameRate", path),
                                    text(el, "ScreenAspectRatio"), uuid_of(text(el, "KeyId")) or None,
                                    text(el, "Hash")))
        reels.append(Reel(uuid_of(text(reel, "Id")), assets))
    return reels


def _imf_segments(root, path) -> list[Reel]:
    """IMF segments as reels (ST 2067-3 6.x): one ReelAsset per track file resource."""
    seg_list = child(root, "SegmentList")
    if seg_list is None:
        raise CorruptMedia(path, "IMF CPL has no <SegmentList>")
    reels = []
    resource_ids: set[str] = set()
    for seg in seg_list:
        if local(seg) != "Segment":
            continue
        assets = []
        seqs = child(seg, "SequenceList")
        for seq in (seqs if seqs is not None else []):
            kind = IMF_SEQUENCES.get(local(seq))
            resources = child(seq, "ResourceList")
            if kind is None or resources is None:
                continue
            for res in resources:
                if local(res) != "Resource" or text(res, "TrackFileId") is None:
                    continue
                intrinsic = _int(res, "IntrinsicDuration", path)
                entry = _int(res, "EntryPoint", path, 0) or 0
                source = _int(res, "SourceDuration", path)
                if source is None:
                    source = max(0, (intrinsic or 0) - entry)
                rid = uuid_of(text(res, "Id"))
                if rid and rid in resource_ids:
                    raise CorruptMedia(path, f"resource id {rid} is listed twice (line "
                                           f"{res.sourceline})")
                resource_ids.add(rid)
                repeat = _int(res, "RepeatCount", path, 1)
                if not repeat:
                    raise CorruptMedia(path, f"resource {rid}: <RepeatCount> 0; ST 2067-3 wants a "
                                           f"positive count (line {res.sourceline})")
                if source * repeat > MAX_FRAMES:
                    raise UnsupportedMedia(path, f"resource {rid}: {source} edit units repeated "
                                           f"{repeat} times exceeds the limit of {MAX_FRAMES} "
                                           f"(line {res.sourceline})")
                if intrinsic is not None and entry + source > intrinsic:
                    raise CorruptMedia(path, f"resource {uuid_of(text(res, 'Id'))}: entry point "
                                           f"{entry} + source duration {source} exceeds intrinsic "
                                           f"duration {intrinsic} (line {res.sourceline})")
                assets.append(ReelAsset(kind, uuid_of(text(res, "TrackFileId")),
                                        _rate(res, "EditRate", path,
                                              MAX_SOUND_RATE if kind == "sound" else MAX_RATE),
                                        entry, source * repeat,
                                        intrinsic, hash=text(res, "Hash"), repeat_count=repeat))
        reels.append(Reel(uuid_of(text(seg, "Id")), assets))
    return reels


def read_package(folder_or_assetmap: Path, ov=()) -> Package:
    """Read an ASSETMAP, its packing lists and every composition they list; ``ov``: the
    folders of original-version packages whose ASSETMAPs resolve the CPL assets this one
    lacks (a supplemental package, a VF: :func:`resolve_from_ov`)."""
    p = Path(folder_or_assetmap)
    am = p if p.is_file() else find_assetmap(p)
    if am is None:
        raise UnsupportedMedia(p, "no ASSETMAP or ASSETMAP.xml in this folder")
    if am is not p and not inside(am, p):
        raise CorruptMedia(am, "the ASSETMAP leads outside the package folder (a symlink); refused")
    pkg = read_assetmap(am)
    pkl_ids = pkg.packing_list_ids
    for pid in pkl_ids:
        pkl_path = pkg.paths[pid]
        if not pkl_path.is_file():
            raise CorruptMedia(pkl_path, "packing list named in the ASSETMAP is missing")
        pkg.pkls.append(read_pkl(pkl_path))
    cpl_paths: list[Path] = []
    for pkl in pkg.pkls:
        for a in pkl.assets:
            path = pkg.paths.get(a.id)
            if path is None or path.suffix.lower() != ".xml" and "CPL" not in (a.type or ""):
                continue
            if path.is_file():
                if _is_cpl(path):
                    cpl_paths.append(path)
            elif _may_be_cpl(a):
                pkg.missing_cpls.append((path, pkl, a))
    if not pkg.pkls:   # no PackingList flag (some writers): look at every XML asset
        cpl_paths = [p for p in pkg.paths.values() if p.suffix.lower() == ".xml" and p.is_file()
                     and _is_cpl(p)]
    by_id: dict[str, Path] = {}
    for cp in dict.fromkeys(cpl_paths):
        comp = read_cpl(cp, pkg.paths)
        if comp.id and comp.id in by_id:
            raise CorruptMedia(cp, f"composition id {comp.id} is also the id of "
                                 f"{relpath(by_id[comp.id], pkg.root)}")
        by_id[comp.id] = cp
        pkg.compositions.append(comp)
    if ov:
        resolve_from_ov(pkg, ov)
    return pkg


def resolve_from_ov(pkg: Package, ovs) -> None:
    """Resolve the CPL assets that ``pkg``'s ASSETMAP lacks through the ASSETMAPs of the
    original-version packages at ``ovs`` (folders or ASSETMAPs, searched in order): a
    supplemental package (VF) names the OV's track files by their asset ids and carries only
    what it adds (ST 429-9 asset ids are the one link; the VF's PKL does not list them). Each
    asset found gets its ``path`` and ``ov`` (the OV's folder)."""
    maps = []
    for ov in ovs:
        o = Path(ov)
        am = o if o.is_file() else find_assetmap(o)
        if am is None:
            raise UnsupportedMedia(o, "--ov: no ASSETMAP or ASSETMAP.xml in this folder (not a package)")
        maps.append(read_assetmap(am))
        pkg.ovs.append(maps[-1].root)
    for a in unresolved_assets(pkg):
        for m in maps:
            if a.id in m.paths:
                a.path, a.ov = m.paths[a.id], m.root
                break


def unresolved_assets(pkg: Package, comp: Composition | None = None) -> list[ReelAsset]:
    """The CPL assets (of ``comp``, else of every composition) that no ASSETMAP names,
    markers aside."""
    comps = [comp] if comp is not None else pkg.compositions
    return [a for c in comps for r in c.reels for a in r.assets
            if a.path is None and a.kind != "markers"]


def missing_assets_error(pkg: Package, comp: Composition) -> CorruptMedia:
    """The error for a composition whose assets no ASSETMAP names: their ids, and how to give
    the original version (``--ov``) or that the OVs given lack them."""
    missing = unresolved_assets(pkg, comp)
    ids = ", ".join(f"{a.kind} {a.id}" for a in missing[:6]) + (
        f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    if pkg.ovs:
        where = ", ".join(str(o) for o in pkg.ovs)
        return CorruptMedia(comp.path, f"{len(missing)} asset(s) named by the CPL are neither in "
                                       f"the ASSETMAP ({pkg.assetmap_path.name}) nor in the OV "
                                       f"package(s) {where}: {ids}")
    return CorruptMedia(comp.path, f"{len(missing)} asset(s) named by the CPL are not in the "
                                   f"ASSETMAP ({pkg.assetmap_path.name}): {ids}; if this is a "
                                   f"supplemental package (VF), give its original version with --ov DIR")


def _may_be_cpl(asset: PKLAsset) -> bool:
    """Whether a packing list's XML asset may be a CPL from its type alone: Interop says
    ``asdcpKind=CPL``; SMPTE and IMF say ``text/xml`` for CPLs (and IMF for OPLs too), while
    Interop subtitles and fonts carry another ``asdcpKind``."""
    kind = (asset.type or "").replace(" ", "").lower()
    return "asdcpkind=cpl" in kind or "asdcpkind" not in kind


def missing_cpl_error(pkg: Package) -> CorruptMedia | None:
    """The error for the first XML asset that may be a CPL and is missing, or None."""
    if not pkg.missing_cpls:
        return None
    path, pkl, a = pkg.missing_cpls[0]
    what = "the composition playlist" if "cpl" in (a.type or "").lower() else "an XML asset (a composition playlist?)"
    return CorruptMedia(path, f"missing: {relpath(pkl.path, pkg.root)} lists it as {what}, asset {a.id}"
                              + (f" ({len(pkg.missing_cpls) - 1} more such missing)" if len(pkg.missing_cpls) > 1
                                 else ""))


def _is_cpl(path: Path) -> bool:
    """True when the root element is a CompositionPlaylist (reads only the start of the file)."""
    try:
        for _event, el in etree.iterparse(str(path), events=("start",), resolve_entities=False,
                                          no_network=True):
            return local(el) == "CompositionPlaylist"
    except etree.XMLSyntaxError:
        parse_xml(path)   # raises the MediaError naming line and column
    except OSError as exc:
        raise MediaError(path, f"cannot read: {exc}") from None
    return False


def relpath(path: Path, root: Path) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return str(path)
