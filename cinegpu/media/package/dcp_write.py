"""Writing an SMPTE DCP of one or more reels, each with a picture track file and
optionally a sound and a timed-text (subtitle) track file of its own, optionally encrypted
(ST 429-2, -3, -5, -6, -7, -8, -9, -16).

    CPL       Composition Playlist, ST 429-7: the content version and ratings given
              (:mod:`.cpl_metadata`), the reels in order, each with its markers (MainMarkers:
              FFOC and LFOC at least) and a MainPicture (edit
              rate, durations, KeyId where encrypted, hash, frame rate, screen aspect ratio),
              and with sound a MainSound (the same, and its Language where given), with
              subtitles a MainSubtitle (the same, with its Language); with sound the first
              reel holds the ST 429-16 CompositionMetadataAsset that declares the sound's
              channel configuration and sample rate
    PKL       Packing List, ST 429-8: every asset with its size and SHA-1 hash (base64); an
              encrypted track file keeps the type ``application/mxf``, as libdcp writes it
    ASSETMAP  Asset Map, ST 429-9: asset id -> file, the PKL flagged as a packing list
    VOLINDEX  Volume Index, ST 429-9

Encrypted packages (``keys``): each track file is encrypted (ST 429-6 triplets and the
cryptographic DM sets, :mod:`.mxf_write`) with a fresh AES-128 key of its own, and the keys go
into a key file (:mod:`.content_keys`) written before the package is finished.

Signed packages (``signer``, a :class:`.package_signature.Signer`): the CPL and the PKL each end
with a ``Signer`` and an enveloped ``ds:Signature`` (ST 429-7 clause 6.13, ST 429-8 clause 5.10;
:func:`.package_signature.sign_document`). The CPL is signed before its hash goes into the PKL,
and each signed document is read back and checked before the package is finished. DCI requires
an encrypted DCP's CPL and PKL to be signed (ClairMeta's check_dcp_signed).

A :class:`DCPWriter` writes everything into a hidden partial folder beside the destination and
renames it into place at the end; any failure (a full disk, Ctrl-C, an error in a frame) removes
the partial folder, so an interrupted run leaves nothing behind, least of all something that
looks like a DCP.
Frames come in as codestreams; :func:`encode_frame` makes them from X'Y'Z' 12-bit images, with
``cinegpu.encode.encode`` when it is there and OpenJPEG's ``opj_compress`` otherwise.
"""

from __future__ import annotations

import base64
import dataclasses
import errno
import hashlib
import itertools
import math
import os
import shutil
import subprocess
import tempfile
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

import numpy as np
from lxml import etree

from cinegpu import PRODUCT, __version__
from cinegpu.decode.codestream import dci
from cinegpu.encode import encode
from cinegpu.media.errors import MediaError
from cinegpu.media.files import new_partial_folder
from cinegpu.media.mxf.sound_write import SoundTrackFile, SoundTrackWriter
from cinegpu.media.mxf.timed_text_write import TimedTextTrackFile, TimedTextTrackWriter
from cinegpu.media.mxf.write import (
    EssenceEncryption,
    J2KHeader,
    PictureTrackWriter,
    StereoscopicPictureTrackWriter,
    TrackFile,
)
from cinegpu.media.package.cpl_metadata import CplMetadata, reel_markers
from cinegpu.media.security.content_keys import KEY_TYPES, TrackKey, new_track_key, write_key_file
from cinegpu.media.security.package_signature import Signer, check_package_signature, check_signer, sign_document
from cinegpu.media.sound.inputs import SoundInput
from cinegpu.media.subtitles.write import NS_DCST, TimedTextAsset, split_subtitles

__all__ = ["DCPWriter", "Package", "Reel", "check_key_path", "check_output", "check_reels",
           "reels_of_length", "encode_frame", "encoder_name", "file_hash"]

NS_CPL = "http://www.smpte-ra.org/schemas/429-7/2006/CPL"
NS_PKL = "http://www.smpte-ra.org/schemas/429-8/2007/PKL"
NS_AM = "http://www.smpte-ra.org/schemas/429-9/2007/AM"
NS_META = "http://www.smpte-ra.org/schemas/429-16/2014/CPL-Metadata"
NS_STEREO = "http://www.smpte-ra.org/schemas/429-10/2008/Main-Stereo-Picture-CPL"
NS_CAPTION = "http://www.smpte-ra.org/schemas/429-12/2008/TT"
CREATOR = f"{PRODUCT} {__version__}"
SHA1_ALGORITHM = "http://www.w3.org/2000/09/xmldsig#sha1"
CONTENT_KINDS = ("feature", "trailer", "test", "teaser", "rating", "advertisement", "short",
                 "transitional", "psa", "policy")
#: The OpenJPEG stand-in's default target: its cinema rate control overshoots its cap by a few
#: bytes a frame (1,302,095 seen against 1,302,083 at 4K), so it aims below libdcp's warning.
OPJ_DEFAULT_MBPS = 225


# -- encoding ----------------------------------------------------------------------------------
def _cinegpu_encoder():
    """``cinegpu.encode.encode``, unless missing or ``CINEGPU_ENCODER=opj_compress``."""
    if os.environ.get("CINEGPU_ENCODER") == "opj_compress":
        return None
    return encode


def encoder_name() -> str:
    return "cinegpu.encode" if _cinegpu_encoder() is not None else "opj_compress"


def encode_frame(xyz12: np.ndarray, *, profile: str = "2k", fps=24, bitrate: float | None = None,
                 workdir=None) -> bytes:
    """A DCI codestream of an (H, W, 3) X'Y'Z' 12-bit image. ``bitrate`` in Mbit/s (default:
    the DCI cap). Switch point between the project's encoder and the OpenJPEG stand-in."""
    encode = _cinegpu_encoder()
    if encode is not None:
        return encode(xyz12, profile=dci.profile(profile).name, fps=fps,
                      bitrate=None if bitrate is None else bitrate * 1e6)
    return _opj_encode(xyz12, profile, Fraction(fps), bitrate, workdir)


def _opj_encode(xyz12, profile, fps, bitrate, workdir) -> bytes:
    if shutil.which("opj_compress") is None:
        raise MediaError(None, "no encoder: cinegpu.encode.encode is missing and OpenJPEG's "
                               "opj_compress is not installed (apt-get install libopenjp2-tools)")
    h, w = xyz12.shape[:2]
    with tempfile.TemporaryDirectory(dir=workdir, prefix="enc") as tmp:
        src, dst = Path(tmp) / "f.ppm", Path(tmp) / "f.j2c"
        src.write_bytes(b"P6\n%d %d\n4095\n" % (w, h) + xyz12.astype(">u2").tobytes())
        args = ["opj_compress", "-i", str(src), "-o", str(dst)]
        two_k = dci.profile(profile) is dci.DCI_2K
        args += ["-cinema2K", "48" if fps > 30 else "24"] if two_k else ["-cinema4K"]
        budget = min(bitrate or OPJ_DEFAULT_MBPS, OPJ_DEFAULT_MBPS) * 1e6 / 8 / float(fps)
        args += ["-r", f"{max(1.0, w * h * 3 * 12 / 8 / budget):.3f}"]   # bytes per frame
        run = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if run.returncode != 0 or not dst.is_file():
            raise MediaError(None, f"opj_compress failed ({run.returncode}): "
                                   f"{(run.stderr or run.stdout).strip()[-400:]}")
        return dst.read_bytes()


# -- XML -----------------------------------------------------------------------------------------
def file_hash(path) -> str:
    """SHA-1 of a file, base64 (ST 429-8 6.3)."""
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return base64.b64encode(h.digest()).decode("ascii")


def _track_asset(assets, kind: str, track, track_hash: str, key_ids=None):
    """A reel's asset element (ST 429-7 8.2: Id, EditRate, IntrinsicDuration, EntryPoint,
    Duration, KeyId where ``key_ids`` (asset id -> key id) names the track file's key, Hash)
    for a whole track file: ``track`` has ``asset_id``, ``edit_rate``, ``frames``. ``kind``
    None: the children go into ``assets`` itself (an element made by the caller)."""
    el = assets if kind is None else _sub(assets, kind)
    _sub(el, "Id", _urn(track.asset_id))
    _sub(el, "EditRate", _rational(track.edit_rate))
    _sub(el, "IntrinsicDuration", track.frames)
    _sub(el, "EntryPoint", 0)
    _sub(el, "Duration", track.frames)
    key_id = (key_ids or {}).get(track.asset_id)
    if key_id is not None:
        _sub(el, "KeyId", _urn(key_id))
    _sub(el, "Hash", track_hash)
    return el


def _moved_reel(r: Reel, out: Path, tmp: Path) -> Reel:
    """``r`` with its track files' paths, in the partial folder ``tmp``, in the finished folder
    ``out`` (at the same place under it: an Interop subtitle lies in a folder of its own)."""
    def moved(t):
        return None if t is None else dataclasses.replace(t, path=out / t.path.relative_to(tmp))
    return dataclasses.replace(r, picture=moved(r.picture), sound=moved(r.sound),
                               subtitle=moved(r.subtitle), caption=moved(r.caption))


def check_reels(reels, edit_rate) -> tuple[int, ...]:
    """``reels`` (each reel's length in frames) as a tuple, or ValueError: at least one reel,
    and each lasts at least one second (ST 429-7 9.2; ClairMeta's check_cpl_reel_duration)."""
    lengths = tuple(int(n) for n in reels)
    second = math.ceil(Fraction(edit_rate))
    if not lengths:
        raise ValueError("no reels")
    short = [k for k, n in enumerate(lengths, 1) if n < second]
    if short:
        raise ValueError(f"reel {short[0]} lasts {lengths[short[0] - 1]} frames; a reel lasts at "
                         f"least one second ({second} frames at {edit_rate} fps, ST 429-7)")
    return lengths


def reels_of_length(total: int, edit_rate, seconds) -> tuple[int, ...]:
    """Reel lengths (frames) for ``total`` frames cut every ``seconds`` (DCP-o-matic's "split
    by length"): reels of ``round(seconds x edit_rate)`` frames, the last taking the rest; a
    rest shorter than a second joins the reel before it, since no reel may last less
    (ST 429-7 9.2). ValueError for ``seconds`` under one second."""
    rate = Fraction(edit_rate)
    second = math.ceil(rate)
    length = round(Fraction(seconds) * rate)
    if length < second:
        raise ValueError(f"--reel-length {seconds} s: a reel lasts at least one second")
    lengths = [length] * (total // length)
    rest = total - sum(lengths)
    if rest >= second or not lengths:
        lengths.append(rest)
    else:
        lengths[-1] += rest
    return tuple(n for n in lengths if n > 0)


def check_key_path(path) -> Path:
    """``path`` as a Path if a content key file may be created there, else MediaError: it must
    not exist (a key file is never overwritten) and its folder must."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        raise MediaError(path, "the key file exists already; name a new file (it may hold the "
                               "only copy of other keys)")
    if not path.parent.is_dir():
        raise MediaError(path, f"folder {path.parent} for the key file does not exist")
    return path


def _urn(u: uuid.UUID) -> str:
    return f"urn:uuid:{u}"


def _sub(parent, tag: str, text=None):
    el = etree.SubElement(parent, f"{{{parent.nsmap[None]}}}{tag}")
    if text is not None:
        el.text = str(text)
    return el


def _write_xml(root, path: Path, signer: Signer | None = None) -> None:
    """UTF-8 with the declaration written as libdcp and asdcplib write it (ClairMeta checks it);
    with ``signer`` signed (laid out first, written as signed) and read back: a signature that
    does not check here is cinegpu's bug, and no package leaves with it."""
    if signer is None:
        path.write_bytes(b'<?xml version="1.0" encoding="UTF-8"?>\n'
                         + etree.tostring(root, encoding="UTF-8", pretty_print=True))
        return
    sign_document(root, signer)
    data = b'<?xml version="1.0" encoding="UTF-8"?>\n' + etree.tostring(root, encoding="UTF-8") + b"\n"
    report = check_package_signature(data, path)
    if not report.ok:
        raise MediaError(path, f"the signed document does not check (a cinegpu bug): {report.text()}")
    path.write_bytes(data)


def _rational(r: Fraction) -> str:
    return f"{r.numerator} {r.denominator}"


def _asset_chunks(root, assets, folder: Path) -> None:
    """An AssetMap's AssetList (ST 429-9 and Interop's alike): per (id, file, is packing list)
    of ``assets``, one chunk on volume 1, its path relative to the package ``folder``."""
    al = _sub(root, "AssetList")
    for aid, file, is_pkl in assets:
        a = _sub(al, "Asset")
        _sub(a, "Id", _urn(aid))
        if is_pkl:
            _sub(a, "PackingList", "true")
        chunk = _sub(_sub(a, "ChunkList"), "Chunk")
        _sub(chunk, "Path", file.relative_to(folder).as_posix())
        _sub(chunk, "VolumeIndex", 1)
        _sub(chunk, "Offset", 0)
        _sub(chunk, "Length", file.stat().st_size)


def _marker_asset(assets, track, markers: list[tuple[str, int]]) -> None:
    """A reel's MainMarkers (ST 429-7 MarkerAssetType, first in the AssetList): as long as
    the reel's picture ``track``, each marker a Label and an Offset in edit units from the
    reel's start."""
    el = _sub(assets, "MainMarkers")
    _sub(el, "Id", _urn(uuid.uuid4()))
    _sub(el, "EditRate", _rational(track.edit_rate))
    _sub(el, "IntrinsicDuration", track.frames)
    _sub(el, "EntryPoint", 0)
    _sub(el, "Duration", track.frames)
    marker_list = _sub(el, "MarkerList")
    for label, offset in markers:
        marker = _sub(marker_list, "Marker")
        _sub(marker, "Label", label)
        _sub(marker, "Offset", offset)


@dataclass(frozen=True)
class Reel:
    """A finished reel (ST 429-2 8.3: each reel has its own track files): its picture, sound
    and subtitle track files with their SHA-1 hashes (base64), and where encrypted each
    track file's key id (asset id -> KeyId, ST 429-6)."""

    picture: TrackFile
    picture_hash: str
    sound: SoundTrackFile | None = None
    sound_hash: str | None = None
    subtitle: TimedTextTrackFile | None = None
    subtitle_hash: str | None = None
    key_ids: dict = dataclasses.field(default_factory=dict)
    caption: TimedTextTrackFile | None = None
    caption_hash: str | None = None

    def tracks(self) -> list[tuple[object, str]]:
        """(track file, hash) of each track file, picture first."""
        return [(t, h) for t, h in ((self.picture, self.picture_hash), (self.sound, self.sound_hash),
                                    (self.subtitle, self.subtitle_hash),
                                    (self.caption, self.caption_hash)) if t is not None]


@dataclass(frozen=True)
class Package:
    """A finished DCP. ``track``, ``sound``, ``subtitle``: the first reel's; ``reels``: every
    reel (empty for an IMF package); ``keys``: the content key file written (encrypted)."""

    root: Path
    cpl_id: uuid.UUID
    pkl_id: uuid.UUID
    track: TrackFile
    title: str
    sound: SoundTrackFile | None = None
    subtitle: TimedTextTrackFile | None = None
    reels: tuple[Reel, ...] = ()
    keys: Path | None = None
    signer: str | None = None


def check_output(out) -> Path:
    """``out`` as a Path if a DCP folder may be created there, else MediaError saying why: it
    must not be a symbolic link, its parent must be an existing folder, and it must not exist
    or be an empty folder."""
    out = Path(out)
    if out.name in ("", ".", ".."):
        raise MediaError(out, "not a folder name to create the DCP under")
    if out.is_symlink():
        raise MediaError(out, "is a symbolic link; give the DCP folder's own path")
    parent = out.parent
    if not parent.exists():
        raise MediaError(out, f"parent folder {parent} does not exist")
    if not parent.is_dir():
        raise MediaError(out, f"parent {parent} is not a folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MediaError(out, "destination exists and is not an empty folder")
    return out


def _write_error(out: Path, name: str, exc: OSError) -> MediaError:
    """The one-line MediaError for an OSError while writing file ``name`` of the DCP ``out``."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return MediaError(out, f"disk full writing {name} ({why})")
    return MediaError(out, f"cannot write {name}: {why}")


class DCPWriter:
    """SMPTE DCP of one or more reels, written frame by frame; with ``sound`` (checked input,
    see :func:`.sound_in.open_sound`) each reel's sound track file is written at
    :meth:`close`, the input cut at the reels' frame boundaries (``rate / edit rate`` samples
    a frame, ST 429-2 8.3), from the input's first sample; with ``subtitles``
    (:func:`.subtitle_write.prepare_subtitles`) each reel's timed-text track file, cut by
    :func:`.subtitle_write.split_subtitles`.

    ``out``: the DCP folder to create (see :func:`check_output`). ``aspect``: the screen aspect
    ratio as (width, height) of the image area. ``reels``: each reel's length in frames (None:
    one reel of every frame written); frames arrive in order, and the writer moves to the next
    reel's picture track file at each boundary. ``keys``: a content key file to create
    (:func:`.content_keys.write_key_file`); with it every track file is encrypted (ST 429-6)
    under its own fresh key, the CPL names each key's ``KeyId``, and the file is written, with
    the CPL's id, before the package is finished. ``signer``: a
    :class:`.package_signature.Signer` that signs the CPL and PKL (checked here: its key is
    the leaf's, its chain holds now). ``metadata``: the CPL's content version, ratings and
    markers (:class:`.cpl_metadata.CplMetadata`). ``stereoscopic``: a 3D picture, each reel's
    an ST 429-10 track file (:class:`.mxf_write.StereoscopicPictureTrackWriter`) that the CPL
    names as its MainStereoscopicPicture; codestreams then arrive left eye, right eye, frame
    after frame, and ``reels`` count frames (pairs). ``captions``: closed captions, as
    ``subtitles`` but named in the CPL as ST 429-12 ClosedCaption (shown on a viewer's own
    device, not on the screen). Use :meth:`write` per codestream, then
    :meth:`close`. Everything is written into a partial folder ``.NAME.partial-*`` beside
    ``out``, renamed to ``out`` only when complete; on any exception (inside a ``with`` block,
    or in :meth:`close`), KeyboardInterrupt included, the partial folder is removed, and so is
    the key file if it was written. An OSError while writing (ENOSPC, EFBIG: "disk full
    writing X") becomes a MediaError.
    """

    #: The picture track file's writer and file name prefix; the PKL's namespace.
    TRACK_WRITER: type[PictureTrackWriter] = PictureTrackWriter
    TRACK_PREFIX = "j2c_"
    PKL_NAMESPACE = NS_PKL
    #: The sound track file's writer; the CPL's PKL type; the asset map's and volume index's
    #: file names (ST 429-9).
    SOUND_WRITER: type[SoundTrackWriter] = SoundTrackWriter
    CPL_TYPE = "text/xml"
    ASSETMAP_NAME, VOLINDEX_NAME = "ASSETMAP.xml", "VOLINDEX.xml"
    #: Whether each PKL asset names its digest's algorithm (ST 2067-2's PKL does, ST 429-8's
    #: and Interop's do not).
    PKL_HASH_ALGORITHM = False
    #: Whether each PKL asset carries its OriginalFileName (libdcp writes none in Interop's).
    PKL_ORIGINAL_NAMES = True

    def __init__(self, out, *, title: str, edit_rate=24, aspect: tuple[int, int] | None = None,
                 kind: str = "feature", issuer: str = CREATOR, sound: SoundInput | None = None,
                 subtitles: TimedTextAsset | None = None, reels=None, keys=None,
                 signer: Signer | None = None, metadata: CplMetadata | None = None,
                 stereoscopic: bool = False, captions: TimedTextAsset | None = None):
        if kind not in CONTENT_KINDS:
            raise ValueError(f"content kind must be one of {CONTENT_KINDS}, got {kind!r}")
        self.out = check_output(out)
        if signer is not None:
            check_signer(signer)
        self.signer = signer
        self.title, self.kind, self.issuer = title, kind, issuer
        self.metadata = CplMetadata() if metadata is None else metadata
        #: a 3D picture (ST 429-10): codestreams come left eye, right eye, and the left one
        #: waits here for its right one
        self.stereoscopic = stereoscopic
        self._left: tuple[bytes, J2KHeader | None] | None = None
        self.edit_rate = Fraction(edit_rate)
        self.reel_lengths = None if reels is None else check_reels(reels, self.edit_rate)
        self.key_path = None if keys is None else check_key_path(keys)
        self.keys: list[TrackKey] = []
        self.key_ids: dict[uuid.UUID, uuid.UUID] = {}
        self.keys_written: Path | None = None
        self.aspect = aspect
        self.sound = sound
        self.sound_writer: SoundTrackWriter | None = None
        self.subtitles, self.captions = subtitles, captions
        self.subtitle_writer: TimedTextTrackWriter | None = None
        #: the finished reels' pictures, each with its hash being worked out
        self.pictures: list[tuple[TrackFile, Future]] = []
        self._hasher: ThreadPoolExecutor | None = None
        prefix = f".{self.out.name}.partial-"
        with self._writing(prefix + "*"):
            self.tmp = new_partial_folder(self.out.parent, prefix)
        try:
            self._next_picture()
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self.issued = datetime.now(timezone.utc).replace(microsecond=0).isoformat()

    @contextmanager
    def _writing(self, name: str):
        try:
            yield
        except OSError as exc:
            raise _write_error(self.out, name, exc) from None

    def _encryption(self, asset: str, asset_id: uuid.UUID) -> EssenceEncryption | None:
        """A fresh key (:func:`.content_keys.new_track_key`, of ``asset``'s ST 430-1 type) for
        track file ``asset_id``, when the package is encrypted."""
        if self.key_path is None:
            return None
        key = new_track_key(KEY_TYPES[asset])
        self.keys.append(key)
        self.key_ids[asset_id] = uuid.UUID(key.key_id)
        return EssenceEncryption(key.key, uuid.UUID(key.key_id))

    def _next_picture(self) -> None:
        """Open the next reel's picture track file."""
        self.asset_id = uuid.uuid4()
        self.mxf_name = f"{self.TRACK_PREFIX}{self.asset_id}.mxf"
        writer = StereoscopicPictureTrackWriter if self.stereoscopic else self.TRACK_WRITER
        with self._writing(self.mxf_name):
            self.track_writer = writer(
                self.tmp / self.mxf_name, edit_rate=self.edit_rate, asset_id=self.asset_id,
                encryption=self._encryption("picture", self.asset_id))

    def _close_picture(self) -> None:
        with self._writing(self.mxf_name):
            track = self.track_writer.close()
        self.pictures.append((track, self._hash_later(track.path)))

    def _hash_later(self, path: Path) -> Future:
        """:func:`file_hash` of a finished track file, worked out on a thread of this writer
        (reading the file and SHA-1 release the GIL): a reel's picture is hashed while the
        next reel's frames are coded, the last reel's while the sound and subtitle track files
        are written. (The hash cannot be worked out as the file is written: its header,
        first in the file, is written again last.)"""
        if self._hasher is None:
            self._hasher = ThreadPoolExecutor(1, thread_name_prefix="cinegpu-hash")
        return self._hasher.submit(file_hash, path)

    def _hashed(self, track, digest: Future) -> str:
        """The hash of ``track`` (waited for), a MediaError naming it if it could not be read."""
        with self._writing(track.path.name):
            return digest.result()

    def _stop_hashing(self) -> None:
        """End the hashing thread (hashes not begun are dropped; one being worked out is waited
        for, so that its file is not removed under it)."""
        if self._hasher is not None:
            self._hasher.shutdown(wait=True, cancel_futures=True)
            self._hasher = None

    def write(self, codestream: bytes, header: J2KHeader | None = None) -> None:
        """Append one frame; ``header``: its main header as its encoder hands it over, where
        the caller has it (:meth:`.PictureTrackWriter.write`: not parsed again).  At a reel's
        last frame's successor the reel's picture track file is finished and the next one
        begun.  A 3D picture's codestreams come left eye, right eye: a left one is held until
        its right one comes."""
        if self.stereoscopic and self._left is None:
            self._left = (codestream, header)
            return
        lengths = self.reel_lengths
        if lengths is not None and len(self.track_writer.offsets) == lengths[len(self.pictures)]:
            if len(self.pictures) + 1 == len(lengths):
                raise MediaError(self.out, f"more frames than the reels' {sum(lengths)}")
            self._close_picture()
            self._next_picture()
        with self._writing(self.mxf_name):
            if self.stereoscopic:
                (left, left_header), self._left = self._left, None
                self.track_writer.write(left, codestream, left_header, header)
            else:
                self.track_writer.write(codestream, header)

    def abort(self) -> None:
        """Remove the partial folder (and so everything written so far), and the key file
        if this writer wrote it."""
        self._stop_hashing()
        self.track_writer.abort()
        for w in (self.sound_writer, self.subtitle_writer):
            if w is not None:
                w.abort()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.keys_written is not None:
            self.keys_written.unlink(missing_ok=True)
            self.keys_written = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()

    def close(self) -> Package:
        """Finish the track files, write the key file (encrypted), CPL, PKL, ASSETMAP and
        VOLINDEX, move into place."""
        try:
            return self._finish()
        except BaseException:
            self.abort()
            raise

    def _finish(self) -> Package:
        if self._left is not None:
            raise MediaError(self.out, "a 3D picture's last frame has its left eye and not its right")
        self._close_picture()
        lengths = [t.frames for t, _ in self.pictures]
        if self.reel_lengths is not None and lengths != list(self.reel_lengths):
            raise MediaError(self.out, f"{sum(lengths)} frames written; the reels hold "
                                       f"{sum(self.reel_lengths)}")
        sounds = self._write_sounds(lengths)
        subtitles = self._write_subtitles(lengths, self.subtitles, "sub", "subtitle")
        captions = self._write_subtitles(lengths, self.captions, "ccap", "caption")
        pictures = [(t, self._hashed(t, h)) for t, h in self.pictures]
        self._stop_hashing()
        reels = tuple(Reel(pic, ph, snd, sh, sub, th, {
            t.asset_id: self.key_ids[t.asset_id] for t in (pic, snd, sub, cap)
            if t is not None and t.asset_id in self.key_ids}, cap, ch)
            for (pic, ph), (snd, sh), (sub, th), (cap, ch) in zip(pictures, sounds, subtitles, captions))
        track = reels[0].picture
        aspect = self.aspect or (track.width, track.height)
        cpl_id, pkl_id = uuid.uuid4(), uuid.uuid4()
        if self.key_path is not None:      # before the package is finished: keys not lost
            self.keys_written = write_key_file(self.key_path, self.keys, str(cpl_id))
        cpl = self.tmp / f"cpl_{cpl_id}.xml"
        pkl = self.tmp / f"pkl_{pkl_id}.xml"
        with self._writing(cpl.name):
            self._write_cpl(cpl, cpl_id, reels, aspect)
        assets = self._track_assets([th for r in reels for th in r.tracks()])
        with self._writing(pkl.name):
            self._write_pkl(pkl, pkl_id, [(cpl_id, cpl, self.CPL_TYPE, file_hash(cpl))] + assets)
        with self._writing(self.ASSETMAP_NAME):
            self._write_assetmap([(pkl_id, pkl, True), (cpl_id, cpl, False)] + [
                (aid, path, False) for aid, path, _, _ in assets])
        with self._writing(self.VOLINDEX_NAME):
            self._write_volindex()
        self._move_into_place()
        keys, self.keys_written = self.keys_written, None       # the package owns it now
        reels = tuple(_moved_reel(r, self.out, self.tmp) for r in reels)
        first = reels[0]
        return Package(self.out, cpl_id, pkl_id, first.picture, self.title, first.sound,
                       first.subtitle, reels, keys, None if self.signer is None else self.signer.subject)

    def _track_assets(self, tracks) -> list[tuple[uuid.UUID, Path, str, str]]:
        """(id, file, PKL type, hash) of each asset of the reels' ``tracks`` ((track file,
        hash) pairs): every track file ``application/mxf`` (ST 429-8 6.4, as libdcp writes it)."""
        return [(t.asset_id, t.path, "application/mxf", h) for t, h in tracks]

    def _move_into_place(self) -> None:
        """Rename the finished partial folder to ``out`` (an empty ``out`` is replaced)."""
        with self._writing(self.out.name):
            if self.out.is_dir() and not self.out.is_symlink():
                self.out.rmdir()          # empty (checked at the start)
            os.replace(self.tmp, self.out)

    def _write_sounds(self, lengths: list[int]) -> list[tuple[SoundTrackFile | None, str | None]]:
        """Each reel's sound track file and its hash ((None, None) each: no sound): the
        input's edit units in order, ``lengths[k]`` of them in reel k, so the cut falls
        exactly on the frame boundary (ST 429-2 8.3)."""
        if self.sound is None:
            return [(None, None)] * len(lengths)
        s = self.sound
        units = s.edit_units(sum(lengths), self.edit_rate)
        out = []
        for length in lengths:
            sid = uuid.uuid4()
            name = f"pcm_{sid}.mxf"
            with self._writing(name):
                self.sound_writer = self.SOUND_WRITER(
                    self.tmp / name, edit_rate=self.edit_rate, rate=s.rate, layout=s.layout,
                    language=s.language, asset_id=sid, encryption=self._encryption("sound", sid))
                for unit in itertools.islice(units, length):
                    self.sound_writer.write(unit)
                sound = self.sound_writer.close()
                self.sound_writer = None
                out.append((sound, file_hash(sound.path)))
        return out

    def _write_subtitles(self, lengths: list[int], s: TimedTextAsset | None, prefix: str, kind: str
                         ) -> list[tuple[TimedTextTrackFile | None, str | None]]:
        """Each reel's ST 429-5 timed-text track file of ``s`` (the subtitles or the closed
        captions, ``kind``, in files named ``prefix_<id>.mxf``) and its hash ((None, None) each:
        none), the cues cut at the joins (:func:`.subtitle_write.split_subtitles`)."""
        if s is None:
            return [(None, None)] * len(lengths)
        if s.duration != sum(lengths):
            raise MediaError(self.out, f"{kind}s prepared for {s.duration} frames; the picture "
                                       f"has {sum(lengths)}")
        out = []
        for part in split_subtitles(s, lengths):
            sid = uuid.uuid4()
            name = f"{prefix}_{sid}.mxf"
            with self._writing(name):
                self.subtitle_writer = TimedTextTrackWriter(
                    self.tmp / name, edit_rate=self.edit_rate, duration=part.duration,
                    resource_id=part.resource_id, namespace=NS_DCST, language=part.language,
                    asset_id=sid, encryption=self._encryption(kind, sid))
                self.subtitle_writer.write(part.document, list(part.resources))
                done = self.subtitle_writer.close()
                self.subtitle_writer = None
                out.append((done, file_hash(done.path)))
        return out

    # -- documents --
    def _cpl_head(self, namespace: str, cpl_id) -> etree._Element:
        """A CompositionPlaylist root of ``namespace`` (ST 429-7 or Interop's) with what comes
        before its ReelList, in the schema's order: Id to ContentKind, ContentVersion (the
        metadata's, or a new one labelled title_date) and RatingList."""
        root = etree.Element(f"{{{namespace}}}CompositionPlaylist", nsmap={None: namespace})
        for tag, text in (("Id", _urn(cpl_id)), ("AnnotationText", self.title), ("IssueDate", self.issued),
                          ("Issuer", self.issuer), ("Creator", CREATOR), ("ContentTitleText", self.title),
                          ("ContentKind", self.kind)):
            _sub(root, tag, text)
        meta = self.metadata
        version, given = _sub(root, "ContentVersion"), meta.content_version
        _sub(version, "Id", f"urn:uuid:{uuid.uuid4()}" if given is None else given.id)
        _sub(version, "LabelText", f"{self.title}_{self.issued[:10]}" if given is None else given.label)
        ratings = _sub(root, "RatingList")
        for rating in meta.ratings:
            el = _sub(ratings, "Rating")
            _sub(el, "Agency", rating.agency)
            _sub(el, "Label", rating.label)
        return root

    def _cpl_reels(self, root, reels: tuple[Reel, ...]):
        """The ReelList of ``root``: yields (index, reel, its AssetList) for each of ``reels``
        in order, the AssetList holding the reel's markers (MainMarkers, the metadata's
        markers that fall in the reel) already."""
        lengths = [r.picture.frames for r in reels]
        markers = reel_markers(self.metadata.markers_for(sum(lengths)), lengths)
        reel_list = _sub(root, "ReelList")
        for k, r in enumerate(reels):
            reel = _sub(reel_list, "Reel")
            _sub(reel, "Id", _urn(uuid.uuid4()))
            assets = _sub(reel, "AssetList")
            if markers[k]:
                _marker_asset(assets, r.picture, markers[k])
            yield k, r, assets

    def _write_cpl(self, path: Path, cpl_id, reels: tuple[Reel, ...], aspect) -> None:
        """ST 429-7 CompositionPlaylist, its reels in order (element order of the schema);
        the ST 429-16 CompositionMetadataAsset in the first reel."""
        root = self._cpl_head(NS_CPL, cpl_id)
        for k, r, assets in self._cpl_reels(root, reels):
            track, keys = r.picture, r.key_ids
            if track.stereoscopic:     # ST 429-10 8: its own namespace, two frames an edit unit
                pic = etree.SubElement(assets, f"{{{NS_STEREO}}}MainStereoscopicPicture",
                                       nsmap={"msp-cpl": NS_STEREO})
                _track_asset(pic, None, track, r.picture_hash, keys)
            else:
                pic = _track_asset(assets, "MainPicture", track, r.picture_hash, keys)
            _sub(pic, "FrameRate", _rational(track.edit_rate * (2 if track.stereoscopic else 1)))
            _sub(pic, "ScreenAspectRatio", f"{aspect[0]} {aspect[1]}")
            if r.sound is not None:
                snd = _track_asset(assets, "MainSound", r.sound, r.sound_hash, keys)
                if r.sound.language is not None:
                    _sub(snd, "Language", r.sound.language)
            if r.subtitle is not None:
                st = _track_asset(assets, "MainSubtitle", r.subtitle, r.subtitle_hash, keys)
                if r.subtitle.language:
                    _sub(st, "Language", r.subtitle.language)
            if r.caption is not None:     # ST 429-12: in its own namespace, children in the CPL's
                cc = etree.SubElement(assets, f"{{{NS_CAPTION}}}ClosedCaption", nsmap={"tt": NS_CAPTION})
                _track_asset(cc, None, r.caption, r.caption_hash, keys)
                if r.caption.language:
                    _sub(cc, "Language", r.caption.language)
            if r.sound is not None and k == 0:
                self._composition_metadata(assets, track, r.sound)
        _write_xml(root, path, self.signer)

    def _composition_metadata(self, assets, track: TrackFile, sound: SoundTrackFile) -> None:
        """The ST 429-16 CompositionMetadataAsset (required elements, in the schema's order):
        MainSoundConfiguration names the soundfield and each channel (ISDCF / ST 429-16
        syntax, ``51/L,R,C,LFE,Ls,Rs``; ``-`` an unused channel), MainSoundSampleRate in Hz."""
        meta = etree.SubElement(assets, f"{{{NS_META}}}CompositionMetadataAsset",
                                nsmap={"meta": NS_META})

        def sub(parent, tag, text=None, ns=NS_CPL):
            el = etree.SubElement(parent, f"{{{ns}}}{tag}")
            if text is not None:
                el.text = str(text)
            return el

        sub(meta, "Id", _urn(uuid.uuid4()))
        sub(meta, "EditRate", _rational(track.edit_rate))
        sub(meta, "IntrinsicDuration", track.frames)
        sub(meta, "FullContentTitleText", self.title, NS_META)
        sub(meta, "MainSoundConfiguration", sound.layout.configuration, NS_META)
        sub(meta, "MainSoundSampleRate", f"{sound.rate} 1", NS_META)
        for area in ("MainPictureStoredArea", "MainPictureActiveArea"):
            el = sub(meta, area, None, NS_META)
            sub(el, "Width", track.width, NS_META)
            sub(el, "Height", track.height, NS_META)

    def _write_pkl(self, path: Path, pkl_id, assets) -> None:
        """ST 429-8 PackingList (ST 2067-2's for IMF): (id, file, type, hash) per asset."""
        ns = self.PKL_NAMESPACE
        root = etree.Element(f"{{{ns}}}PackingList", nsmap={None: ns})
        _sub(root, "Id", _urn(pkl_id))
        _sub(root, "AnnotationText", self.title)
        _sub(root, "IssueDate", self.issued)
        _sub(root, "Issuer", self.issuer)
        _sub(root, "Creator", CREATOR)
        al = _sub(root, "AssetList")
        for aid, file, mime, digest in assets:
            a = _sub(al, "Asset")
            _sub(a, "Id", _urn(aid))
            _sub(a, "AnnotationText", file.name)
            _sub(a, "Hash", digest)
            _sub(a, "Size", file.stat().st_size)
            _sub(a, "Type", mime)
            if self.PKL_ORIGINAL_NAMES:
                _sub(a, "OriginalFileName", file.name)
            if self.PKL_HASH_ALGORITHM:
                _sub(a, "HashAlgorithm").set("Algorithm", SHA1_ALGORITHM)
        _write_xml(root, path, self.signer)

    def _write_assetmap(self, assets) -> None:
        """ST 429-9 AssetMap: (id, file, is packing list) per asset, all on volume 1."""
        root = etree.Element(f"{{{NS_AM}}}AssetMap", nsmap={None: NS_AM})
        _sub(root, "Id", _urn(uuid.uuid4()))
        _sub(root, "AnnotationText", self.title)
        _sub(root, "Creator", CREATOR)
        _sub(root, "VolumeCount", 1)
        _sub(root, "IssueDate", self.issued)
        _sub(root, "Issuer", self.issuer)
        _asset_chunks(root, assets, self.tmp)
        _write_xml(root, self.tmp / "ASSETMAP.xml")

    def _write_volindex(self) -> None:
        root = etree.Element(f"{{{NS_AM}}}VolumeIndex", nsmap={None: NS_AM})
        _sub(root, "Index", 1)
        _write_xml(root, self.tmp / "VOLINDEX.xml")
