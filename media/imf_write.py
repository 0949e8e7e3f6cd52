"""Writing an IMF package (Interoperable Master Package, ST 2067-2): one segment, a picture
track file for Application #2E (ST 2067-21), its CPL, PKL and ASSETMAP.

    CPL       Composition Playlist, ST 2067-3 (2016 schema): the EssenceDescriptorList with the
              track file's descriptor as RegXML, EditRate, the ApplicationIdentification of
              App #2E in ExtensionProperties, one Segment with a MainImageSequence
              (ST 2067-2 namespace) of one TrackFileResource (entry point, durations, hash)
    PKL       Packing List, ST 2067-2 8: every asset with size, SHA-1 hash and HashAlgorithm
    ASSETMAP  Asset Map, ST 429-9 as ST 2067-2 9 uses it (no VOLINDEX)

:class:`IMFWriter` is a :class:`.dcp_write.DCPWriter` with another track writer and other
documents: the same partial folder renamed into place only when complete, the same
one-line errors for a full disk. Sound is not written yet.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

from lxml import etree

from .dcp_write import (CONTENT_KINDS, DCPWriter, Package, SHA1_ALGORITHM, _rational, _sub, _urn,
                        _write_xml, file_hash)
from .errors import MediaError
from .mxf_imf_write import IMFPictureTrackWriter
from .mxf_write import TrackFile

__all__ = ["APP_2E", "IMFWriter", "NS_CPL", "NS_PKL"]

NS_CPL = "http://www.smpte-ra.org/schemas/2067-3/2016"
NS_PKL = "http://www.smpte-ra.org/schemas/2067-2/2016/PKL"
#: The core constraints' namespace: the sequence elements and ApplicationIdentification.
NS_CORE = "http://www.smpte-ra.org/schemas/2067-2/2016"
NS_XSI = "http://www.w3.org/2001/XMLSchema-instance"
#: Application #2E's identification (ST 2067-21:2016 6.x).
APP_2E = "http://www.smpte-ra.org/schemas/2067-21/2016"
#: ST 2067-3 content kinds are open; these are the ones ST 2067-3 Annex lists with DCP's.
IMF_CONTENT_KINDS = CONTENT_KINDS + ("episode", "highlights", "event", "promo")


class IMFWriter(DCPWriter):
    """One-segment IMF package with a picture track, written frame by frame (codestreams of
    an IMF JPEG 2000 profile, :mod:`cinegpu.decode.codestream.imf`). ``out``, ``title``,
    ``edit_rate``, ``kind`` and the partial-folder rule as :class:`.dcp_write.DCPWriter`."""

    TRACK_WRITER = IMFPictureTrackWriter
    TRACK_PREFIX = "IMAGE_"
    PKL_NAMESPACE = NS_PKL

    def __init__(self, out, *, title: str, edit_rate=24, kind: str = "feature", sound=None,
                 **kwargs):
        if sound is not None:
            raise MediaError(None, "sound in IMF packages is not supported yet")
        if kind not in IMF_CONTENT_KINDS:
            raise ValueError(f"content kind must be one of {IMF_CONTENT_KINDS}, got {kind!r}")
        super().__init__(out, title=title, edit_rate=edit_rate, kind="feature", **kwargs)
        self.kind = kind

    def _finish(self) -> Package:
        with self._writing(self.mxf_name):
            track = self.track_writer.close()
            track_hash = file_hash(track.path)
        cpl_id, pkl_id = uuid.uuid4(), uuid.uuid4()
        cpl = self.tmp / f"CPL_{cpl_id}.xml"
        pkl = self.tmp / f"PKL_{pkl_id}.xml"
        with self._writing(cpl.name):
            self._write_imf_cpl(cpl, cpl_id, track, track_hash)
        with self._writing(pkl.name):
            self._write_pkl(pkl, pkl_id, [(cpl_id, cpl, "text/xml", file_hash(cpl)),
                                          (track.asset_id, track.path, "application/mxf",
                                           track_hash)])
        with self._writing("ASSETMAP.xml"):
            self._write_assetmap([(pkl_id, pkl, True), (cpl_id, cpl, False),
                                  (track.asset_id, track.path, False)])
        self._move_into_place()
        moved = dataclasses.replace(track, path=self.out / track.path.name)
        return Package(self.out, cpl_id, pkl_id, moved, self.title, None)

    def _write_imf_cpl(self, path: Path, cpl_id, track: TrackFile, track_hash: str) -> None:
        """ST 2067-3 CompositionPlaylist (element order of the 2016 schema)."""
        root = etree.Element(f"{{{NS_CPL}}}CompositionPlaylist",
                             nsmap={None: NS_CPL, "xsi": NS_XSI, "cc": NS_CORE})
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
        descriptor_id = uuid.uuid4()
        entry = _sub(_sub(root, "EssenceDescriptorList"), "EssenceDescriptor")
        _sub(entry, "Id", _urn(descriptor_id))
        entry.append(self.track_writer.essence_descriptor())
        _sub(root, "EditRate", _rational(track.edit_rate))
        ext = _sub(root, "ExtensionProperties")
        etree.SubElement(ext, f"{{{NS_CORE}}}ApplicationIdentification").text = APP_2E
        segment = _sub(_sub(root, "SegmentList"), "Segment")
        _sub(segment, "Id", _urn(uuid.uuid4()))
        sequences = _sub(segment, "SequenceList")
        image = etree.SubElement(sequences, f"{{{NS_CORE}}}MainImageSequence")
        for tag, text in (("Id", _urn(uuid.uuid4())), ("TrackId", _urn(uuid.uuid4()))):
            etree.SubElement(image, f"{{{NS_CPL}}}{tag}").text = text
        resources = etree.SubElement(image, f"{{{NS_CPL}}}ResourceList")
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
        _write_xml(root, path)
