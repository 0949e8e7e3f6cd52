"""Writing an Interop DCP (the DCI "Interop" packages older servers still play), as libdcp and
asdcplib write them: :class:`InteropDCPWriter`, the :class:`.dcp_write.DCPWriter` of SMPTE
packages with what Interop does otherwise.

    track files  asdcplib's MXF Interop picture and sound (:mod:`.mxf_interop_write`: Interop
                 OP-Atom, two partitions; sound 24-bit 48 kHz WAVE without a channel label)
    CPL          the DCI Interop CPL schema PROTO-ASDCP-CPL-20040511: the SMPTE elements in the
                 same order (ContentVersion, RatingList, MainMarkers, MainPicture, MainSound,
                 MainSubtitle with their Language), in its namespace; a MainPicture's
                 ScreenAspectRatio is a decimal, width / height to two places (1.85, 2.39, as
                 libdcp writes it); no ST 429-16 CompositionMetadataAsset, no 3D, no captions
    PKL          PROTO-ASDCP-PKL-20040311: Id, AnnotationText, Hash (SHA-1, base64), Size and
                 Type of each asset (no OriginalFileName); the types carry asdcplib's
                 ``asdcpKind``: ``text/xml;asdcpKind=CPL``, ``application/x-smpte-mxf;asdcpKind=
                 Picture`` and ``...=Sound``, ``text/xml;asdcpKind=Subtitle``, a font
                 ``application/ttf``, a subtitle image ``image/png`` (libdcp's types)
    ASSETMAP     PROTO-ASDCP-AM-20040311, in the file ``ASSETMAP`` (no extension); its header in
                 that schema's order (VolumeCount before IssueDate, Issuer, Creator)
    VOLINDEX     the file ``VOLINDEX``, in the asset map's namespace
    subtitles    not wrapped in MXF: each reel's ``DCSubtitle`` XML (:mod:`.subtitle_interop_write`)
                 lies in a folder named by its SubtitleID (the CPL's MainSubtitle Id) as
                 ``<id>/sub_<id>.xml``, beside its font ``<id>/font_0.ttf`` and any images
                 ``<id>/<image id>.png``, each an asset of the PKL and the ASSETMAP (the layout
                 ClairMeta's check_subtitle_cpl_uuid expects, as DCP-o-matic writes it)

Interop packages are written at 24 or 48 frames a second, in the clear, unsigned, 2D (what
:class:`.master_job.Picture` and :class:`.master_job.MasterJob` check before any frame is coded;
the writer refuses them too).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from lxml import etree

from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.interop_write import InteropPictureTrackWriter, InteropSoundTrackWriter
from cinegpu.media.mxf.sound_write import SoundTrackFile
from cinegpu.media.package.dcp_write import (
    CREATOR,
    DCPWriter,
    Reel,
    _asset_chunks,
    _sub,
    _track_asset,
    _urn,
    _write_xml,
    file_hash,
)
from cinegpu.media.sound.inputs import SoundInput
from cinegpu.media.subtitles.interop_write import interop_document
from cinegpu.media.subtitles.write import TimedTextAsset, split_subtitles

__all__ = ["INTEROP_RATES", "InteropDCPWriter", "InteropSubtitleFile", "NS_INTEROP_AM", "check_interop_sound",
           "NS_INTEROP_CPL", "NS_INTEROP_PKL"]

NS_INTEROP_CPL = "http://www.digicine.com/PROTO-ASDCP-CPL-20040511#"
NS_INTEROP_PKL = "http://www.digicine.com/PROTO-ASDCP-PKL-20040311#"
NS_INTEROP_AM = "http://www.digicine.com/PROTO-ASDCP-AM-20040311#"
#: The edit rates (frames a second) an Interop DCP is written at.
INTEROP_RATES = (Fraction(24), Fraction(48))
#: PKL types (asdcplib's and libdcp's Interop ``asdcpKind`` types).
PICTURE_TYPE = "application/x-smpte-mxf;asdcpKind=Picture"
SOUND_TYPE = "application/x-smpte-mxf;asdcpKind=Sound"
SUBTITLE_TYPE = "text/xml;asdcpKind=Subtitle"
FONT_TYPE = "application/ttf"
PNG_TYPE = "image/png"
FONT_FILE = "font_0.ttf"


def check_interop_sound(sound: SoundInput | None) -> None:
    """ValueError unless ``sound`` (or None) goes into an Interop sound track file as it is:
    48 kHz, in a 5.1 track (six channels, Interop's L, R, C, LFE, Ls, Rs; a stereo or mono
    mix is placed in it)."""
    if sound is None:
        return
    if sound.rate != 48000:
        raise ValueError(f"Interop sound is written at 48 kHz: this sound is at {sound.rate} Hz")
    if sound.layout.track_channels != 6:
        raise ValueError(f"{sound.layout.name} sound in Interop DCPs is not written yet: "
                         "give 5.1, stereo or mono sound")


@dataclass(frozen=True)
class InteropSubtitleFile:
    """A reel's Interop subtitle XML as the CPL and PKL name it: its ``path`` (in its own
    folder), SubtitleID ``asset_id``, length ``frames`` in edit units at ``edit_rate``, its
    ``language`` and ``size`` in bytes; ``resources``: (asset id, file name in the same folder,
    PKL type) of its font and images."""

    path: Path
    asset_id: uuid.UUID
    frames: int
    edit_rate: Fraction
    language: str
    size: int
    resources: tuple[tuple[uuid.UUID, str, str], ...] = ()


class InteropDCPWriter(DCPWriter):
    """An Interop DCP of one or more reels, written as :class:`.dcp_write.DCPWriter` writes an
    SMPTE one (same arguments, same partial folder and clean-up), with the Interop track files,
    documents and subtitles of the module's docstring. ValueError for an edit rate other than
    24 or 48, ``keys``, ``signer``, ``stereoscopic`` or ``captions``."""

    TRACK_WRITER = InteropPictureTrackWriter
    SOUND_WRITER = InteropSoundTrackWriter
    PKL_NAMESPACE = NS_INTEROP_PKL
    CPL_TYPE = "text/xml;asdcpKind=CPL"
    ASSETMAP_NAME, VOLINDEX_NAME = "ASSETMAP", "VOLINDEX"
    PKL_ORIGINAL_NAMES = False

    def __init__(self, out, *, edit_rate=24, keys=None, signer=None, stereoscopic: bool = False,
                 captions: TimedTextAsset | None = None, **kwargs):
        if Fraction(edit_rate) not in INTEROP_RATES:
            raise ValueError(f"an Interop DCP runs at 24 or 48 fps, not {edit_rate}")
        if keys is not None or signer is not None:
            raise ValueError("encrypted or signed Interop DCPs are not supported yet")
        if stereoscopic or captions is not None:
            raise ValueError("3D and closed captions are written in SMPTE DCPs only")
        check_interop_sound(kwargs.get("sound"))
        super().__init__(out, edit_rate=edit_rate, **kwargs)

    # -- subtitles --
    def _write_subtitles(self, lengths: list[int], s: TimedTextAsset | None, prefix: str, kind: str):
        """Each reel's Interop subtitle XML, font and images, in the folder named by its
        SubtitleID, and the XML's hash ((None, None) each: no subtitles), the cues cut at the
        joins as SMPTE's are (:func:`.subtitle_write.split_subtitles`)."""
        if s is None:
            return [(None, None)] * len(lengths)
        if s.duration != sum(lengths):
            raise MediaError(self.out, f"{kind}s prepared for {s.duration} frames; the picture "
                                       f"has {sum(lengths)}")
        if s.track is None:
            raise MediaError(self.out, f"{kind}s not prepared by prepare_subtitles: no cues to write")
        out = []
        for number, part in enumerate(split_subtitles(s, lengths), 1):
            doc, images, sid = interop_document(part.track, title=s.title, language=s.language,
                                                fps=s.fps, font_uri=FONT_FILE, reel_number=number)
            folder = self.tmp / str(sid)
            path = folder / f"sub_{sid}.xml"
            with self._writing(path.name):
                folder.mkdir()
                path.write_bytes(doc)
                (folder / FONT_FILE).write_bytes(s.font)
                resources = [(uuid.uuid4(), FONT_FILE, FONT_TYPE)]
                for iid, png in images:
                    (folder / f"{iid}.png").write_bytes(png)
                    resources.append((iid, f"{iid}.png", PNG_TYPE))
                done = InteropSubtitleFile(path, sid, part.duration, self.edit_rate, s.language,
                                           path.stat().st_size, tuple(resources))
                out.append((done, file_hash(path)))
        return out

    def _track_assets(self, tracks) -> list[tuple[uuid.UUID, Path, str, str]]:
        """(id, file, PKL type, hash) of each track file, and of each subtitle XML followed by
        its font and images."""
        out = []
        for t, h in tracks:
            if isinstance(t, InteropSubtitleFile):
                out.append((t.asset_id, t.path, SUBTITLE_TYPE, h))
                for rid, name, kind in t.resources:
                    path = t.path.parent / name
                    with self._writing(name):
                        out.append((rid, path, kind, file_hash(path)))
            else:
                out.append((t.asset_id, t.path, SOUND_TYPE if isinstance(t, SoundTrackFile) else PICTURE_TYPE, h))
        return out

    # -- documents --
    def _write_cpl(self, path: Path, cpl_id, reels: tuple[Reel, ...], aspect) -> None:
        """The Interop CompositionPlaylist (PROTO-ASDCP-CPL-20040511, its elements in the
        schema's order)."""
        root = self._cpl_head(NS_INTEROP_CPL, cpl_id)
        for _, r, assets in self._cpl_reels(root, reels):
            pic = _track_asset(assets, "MainPicture", r.picture, r.picture_hash)
            _sub(pic, "FrameRate", f"{r.picture.edit_rate.numerator} {r.picture.edit_rate.denominator}")
            _sub(pic, "ScreenAspectRatio", f"{aspect[0] / aspect[1]:.2f}")
            for kind, track, digest in (("MainSound", r.sound, r.sound_hash),
                                        ("MainSubtitle", r.subtitle, r.subtitle_hash)):
                if track is not None:
                    el = _track_asset(assets, kind, track, digest)
                    if track.language:
                        _sub(el, "Language", track.language)
        _write_xml(root, path)

    def _write_assetmap(self, assets) -> None:
        """The Interop AssetMap (PROTO-ASDCP-AM-20040311) in ``ASSETMAP``: (id, file, is
        packing list) per asset, each path relative to the package folder, all on volume 1."""
        root = etree.Element(f"{{{NS_INTEROP_AM}}}AssetMap", nsmap={None: NS_INTEROP_AM})
        for tag, text in (("Id", _urn(uuid.uuid4())), ("AnnotationText", self.title),
                          ("VolumeCount", 1), ("IssueDate", self.issued), ("Issuer", self.issuer),
                          ("Creator", CREATOR)):
            _sub(root, tag, text)
        _asset_chunks(root, assets, self.tmp)
        _write_xml(root, self.tmp / self.ASSETMAP_NAME)

    def _write_volindex(self) -> None:
        root = etree.Element(f"{{{NS_INTEROP_AM}}}VolumeIndex", nsmap={None: NS_INTEROP_AM})
        _sub(root, "Index", 1)
        _write_xml(root, self.tmp / self.VOLINDEX_NAME)
