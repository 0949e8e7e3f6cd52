"""Writing an IMF package (Interoperable Master Package, ST 2067-2): one segment, a picture
track file for Application #2E (ST 2067-21), its CPL, PKL and ASSETMAP.

    CPL       Composition Playlist, ST 2067-3 (2016 schema): the EssenceDescriptorList with the
              track files' descriptors as RegXML, EditRate, the ApplicationIdentification of
              App #2E in ExtensionProperties (:meth:`IMFWriter.identification`: the 2016
              edition's for the 8/10-bit Part-1 pictures it allows, else the 2021 edition's,
              with the ST 2067-2:2020 namespace, as the photon HTJ2K sample), one Segment with
              a MainImageSequence (ST 2067-2 namespace) of one TrackFileResource (entry point,
              durations, hash) and with sound a MainAudioSequence whose resource counts
              samples (EditRate the sample rate, ST 2067-2), as long as the picture
    PKL       Packing List, ST 2067-2 8: every asset with size, SHA-1 hash and HashAlgorithm
    ASSETMAP  Asset Map, ST 429-9 as ST 2067-2 9 uses it (no VOLINDEX)

:class:`IMFWriter` is a :class:`.dcp_write.DCPWriter` with another track writer and other
documents: the same partial folder renamed into place only when complete, the same
one-line errors for a full disk. The sound track file (``sound``,
:class:`.mxf_imf_sound_write.IMFSoundTrackWriter`) is written into the partial folder when the
picture is complete.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from lxml import etree

from cinegpu.decode.codestream import imf
from cinegpu.media.mxf.imf_sound_write import IMFSoundTrackWriter
from cinegpu.media.mxf.imf_write import IMFPictureTrackWriter
from cinegpu.media.mxf.sound_write import SoundTrackFile
from cinegpu.media.mxf.write import TrackFile
from cinegpu.media.package.dcp_write import (
    CONTENT_KINDS,
    SHA1_ALGORITHM,
    DCPWriter,
    Package,
    _rational,
    _sub,
    _urn,
    _write_xml,
    file_hash,
)

__all__ = ["APP_2E", "IMFWriter", "NS_CPL", "NS_PKL"]

NS_CPL = "http://www.smpte-ra.org/schemas/2067-3/2016"
NS_PKL = "http://www.smpte-ra.org/schemas/2067-2/2016/PKL"
#: The core constraints' namespace: the sequence elements and ApplicationIdentification.
NS_CORE = "http://www.smpte-ra.org/schemas/2067-2/2016"
NS_XSI = "http://www.w3.org/2001/XMLSchema-instance"
#: Application #2E's identification (ST 2067-21:2016 6.x).
APP_2E = imf.APP_2E_2016
#: ST 2067-21:2021 (HTJ2K allowed) and the ST 2067-2:2020 core namespace it goes with.
APP_2E_2021 = imf.APP_2E_2021
NS_CORE_2020 = "http://www.smpte-ra.org/ns/2067-2/2020"
#: ST 2067-3 content kinds are open; these are the ones ST 2067-3 Annex lists with DCP's.
IMF_CONTENT_KINDS = CONTENT_KINDS + ("episode", "highlights", "event", "promo")


class IMFWriter(DCPWriter):
    """One-segment IMF package with a picture track, written frame by frame (codestreams of
    an IMF JPEG 2000 profile, :mod:`cinegpu.decode.codestream.imf`). ``out``, ``title``,
    ``edit_rate``, ``kind`` and the partial-folder rule as :class:`.dcp_write.DCPWriter`."""

    TRACK_WRITER = IMFPictureTrackWriter
    TRACK_PREFIX = "IMAGE_"
    PKL_NAMESPACE = NS_PKL
    PKL_HASH_ALGORITHM = True

    def __init__(self, out, *, title: str, edit_rate=24, kind: str = "feature", sound=None,
                 **kwargs):
        if kwargs.get("reels") is not None and len(kwargs["reels"]) > 1:
            raise ValueError("IMF packages are written with one segment: several reels are "
                             "for DCPs (leave out --reel-length, give one INPUT folder)")
        if kwargs.get("keys") is not None:
            raise ValueError("encrypted IMF packages are not written: --encrypt is for DCPs")
        if kwargs.get("signer") is not None:
            raise ValueError("signed IMF packages are not written: --sign is for DCPs")
        if kind not in IMF_CONTENT_KINDS:
            raise ValueError(f"content kind must be one of {IMF_CONTENT_KINDS}, got {kind!r}")
        super().__init__(out, title=title, edit_rate=edit_rate, kind="feature", sound=sound,
                         **kwargs)
        self.kind = kind
        self.sound_writer: IMFSoundTrackWriter | None = None    # type: ignore[assignment]

    def _finish(self) -> Package:
        with self._writing(self.mxf_name):
            track = self.track_writer.close()
        digest = self._hash_later(track.path)      # while the sound track file is written
        sound, sound_hash = self._write_imf_sound(track.frames)
        track_hash = self._hashed(track, digest)
        self._stop_hashing()
        cpl_id, pkl_id = uuid.uuid4(), uuid.uuid4()
        cpl = self.tmp / f"CPL_{cpl_id}.xml"
        pkl = self.tmp / f"PKL_{pkl_id}.xml"
        with self._writing(cpl.name):
            self._write_imf_cpl(cpl, cpl_id, track, track_hash, sound, sound_hash)
        mxfs = [(track, track_hash)] + ([] if sound is None else [(sound, sound_hash)])
        with self._writing(pkl.name):
            self._write_pkl(pkl, pkl_id, [(cpl_id, cpl, "text/xml", file_hash(cpl))] +
                            [(t.asset_id, t.path, "application/mxf", h) for t, h in mxfs])
        with self._writing("ASSETMAP.xml"):
            self._write_assetmap([(pkl_id, pkl, True), (cpl_id, cpl, False)] +
                                 [(t.asset_id, t.path, False) for t, _ in mxfs])
        self._move_into_place()
        moved = dataclasses.replace(track, path=self.out / track.path.name)
        if sound is not None:
            sound = dataclasses.replace(sound, path=self.out / sound.path.name)
        return Package(self.out, cpl_id, pkl_id, moved, self.title, sound)

    def identification(self) -> str:
        """The ApplicationIdentification the picture needs (:func:`imf.identification`: HTJ2K,
        12-bit pictures and the rest ST 2067-21:2016 does not allow take the 2021 edition's);
        a picture neither edition allows keeps the 2021 one (:mod:`.imf_rules` reports it)."""
        w = self.track_writer
        h = w.header
        if h is None:
            return APP_2E
        bits = h.siz.Ssiz[0] % 128 + 1
        app = imf.identification(h.Rsiz == imf.HT_RSIZ, w.ycbcr, h.siz.XRsiz[1], bits,
                                 h.width, h.height, self.edit_rate)
        return app or APP_2E_2021

    def _write_imf_sound(self, frames: int) -> tuple[SoundTrackFile | None, str | None]:
        """The audio track file as long as ``frames`` picture frames, and its hash."""
        if self.sound is None:
            return None, None
        s = self.sound
        sid = uuid.uuid4()
        name = f"AUDIO_{sid}.mxf"
        samples = s.imf_samples(frames, self.edit_rate)
        with self._writing(name):
            self.sound_writer = IMFSoundTrackWriter(
                self.tmp / name, rate=s.rate, picture_rate=self.edit_rate, layout=s.layout,
                language=s.language, asset_id=sid)
            for block in s.sample_blocks(samples):
                self.sound_writer.write(block)
            sound = self.sound_writer.close()
            return sound, file_hash(sound.path)

    def _write_imf_cpl(self, path: Path, cpl_id, track: TrackFile, track_hash: str,
                       sound: SoundTrackFile | None = None, sound_hash: str | None = None
                       ) -> None:
        """ST 2067-3 CompositionPlaylist (element order of the 2016 schema)."""
        app = self.identification()
        core = NS_CORE if app == APP_2E else NS_CORE_2020
        root = etree.Element(f"{{{NS_CPL}}}CompositionPlaylist",
                             nsmap={None: NS_CPL, "xsi": NS_XSI, "cc": core})
        _sub(root, "Id", _urn(cpl_id))
        _sub(root, "Annotation", self.title)
        _sub(root, "IssueDate", self.issued)
        _sub(root, "Issuer", self.issuer)
        _sub(root, "Creator", self.issuer)
        _sub(root, "ContentTitle", self.title)
        _sub(root, "ContentKind", self.kind)
        version = _sub(_sub(root, "ContentVersionList"), "ContentVersion")
        _sub(version, "Id", _urn(uuid.uuid4()))
        _sub(version, "LabelText", f"{self.title} {self.issued[:10]}")
        descriptor_id, sound_descriptor_id = uuid.uuid4(), uuid.uuid4()
        descriptors = _sub(root, "EssenceDescriptorList")
        entry = _sub(descriptors, "EssenceDescriptor")
        _sub(entry, "Id", _urn(descriptor_id))
        entry.append(self.track_writer.essence_descriptor())
        if sound is not None:
            assert self.sound_writer is not None
            entry = _sub(descriptors, "EssenceDescriptor")
            _sub(entry, "Id", _urn(sound_descriptor_id))
            entry.append(self.sound_writer.essence_descriptor())
        _sub(root, "EditRate", _rational(track.edit_rate))
        ext = _sub(root, "ExtensionProperties")
        etree.SubElement(ext, f"{{{core}}}ApplicationIdentification").text = app
        segment = _sub(_sub(root, "SegmentList"), "Segment")
        _sub(segment, "Id", _urn(uuid.uuid4()))
        sequences = _sub(segment, "SequenceList")
        _sequence(sequences, core, "MainImageSequence", track, track_hash, descriptor_id)
        if sound is not None:
            _sequence(sequences, core, "MainAudioSequence", sound, sound_hash, sound_descriptor_id)
        _write_xml(root, path)


def _sequence(sequences, core: str, name: str, track, track_hash, descriptor_id) -> None:
    """A ``cc:`` sequence of one TrackFileResource: the whole track file, in its own edit
    units (``track.frames`` at ``track.edit_rate``: samples at the sample rate for sound)."""
    seq = etree.SubElement(sequences, f"{{{core}}}{name}")
    for tag, text in (("Id", _urn(uuid.uuid4())), ("TrackId", _urn(uuid.uuid4()))):
        etree.SubElement(seq, f"{{{NS_CPL}}}{tag}").text = text
    resources = etree.SubElement(seq, f"{{{NS_CPL}}}ResourceList")
    res = etree.SubElement(resources, f"{{{NS_CPL}}}Resource")
    res.set(f"{{{NS_XSI}}}type", "TrackFileResourceType")
    for tag, text in (("Id", _urn(uuid.uuid4())), ("Annotation", track.path.name),
                      ("EditRate", _rational(track.edit_rate)),
                      ("IntrinsicDuration", track.frames), ("EntryPoint", 0),
                      ("SourceDuration", track.frames), ("RepeatCount", 1),
                      ("SourceEncoding", _urn(descriptor_id)),
                      ("TrackFileId", _urn(track.asset_id)), ("Hash", track_hash)):
        etree.SubElement(res, f"{{{NS_CPL}}}{tag}").text = str(text)
    etree.SubElement(res, f"{{{NS_CPL}}}HashAlgorithm").set("Algorithm", SHA1_ALGORITHM)
