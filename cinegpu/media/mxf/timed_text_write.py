"""Writing SMPTE DCP timed-text track files: MXF OP-Atom holding an ST 428-7 subtitle document
and its fonts and images (ST 429-5, ST 410).

The layout of :mod:`.mxf_write` (header written last into a reserve, the body partition, the
footer with the index, the random index pack), with the timed text as asdcplib writes it
(``AS_DCP_TimedText.cpp``, the writer libdcp uses for SMPTE subtitles):

    essence container  ST 429-5 timed text (060e2b34.0401010a.0d010301.02130101)
    element            the XML document, one KLV (key 060e2b34.01020101.0d010301.17010b01),
                       indexed as the one edit unit of body SID 1 (a VBR index of one entry)
    resources          each font or PNG in its own generic stream partition (ST 410: partition
                       key ...0d010201.01031100, BodySID = the resource's EssenceStreamID, from
                       10 up), holding one generic stream data element
                       (060e2b34.0101010c.0d010509.01000000) with the file's bytes
    descriptor         TimedTextDescriptor (SampleRate the edit rate, ContainerDuration the
                       reel's length in edit units, ResourceID the document's Id, UCSEncoding
                       "UTF-8", NamespaceURI, RFC5646LanguageTagList) and one
                       TimedTextResourceSubDescriptor per resource (AncillaryResourceID the
                       resource's UUID, MIMEMediaType, EssenceStreamID)

The timeline tracks last ``duration`` edit units (the reel's), though the index holds one entry;
their data definition is the picture one, as asdcplib writes it. :mod:`.mxf_timed_text` reads
such a file back.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from cinegpu.media.errors import MediaError
from cinegpu.media.security.essence_crypto import encrypt_element
from cinegpu.media.mxf.write import DATA_DEF_PICTURE, HEADER_RESERVE, GC_MULTIPLE_WRAPPINGS, TrackWriter, _batch, _rational, _utf16, klv, local_set

__all__ = ["TimedTextTrackFile", "TimedTextTrackWriter", "Resource", "write_timed_text",
           "TT_WRAPPING", "TT_ELEMENT", "GS_DATA_ELEMENT", "FONT_MIME", "PNG_MIME",
           "FIRST_STREAM_ID"]

TT_WRAPPING = bytes.fromhex("060e2b340401010a0d01030102130101")
TT_ELEMENT = bytes.fromhex("060e2b34010201010d01030117010b01")
GS_DATA_ELEMENT = bytes.fromhex("060e2b340101010c0d01050901000000")
TT_DESCRIPTOR, TT_RESOURCE = 0x64, 0x65
#: BodySID of the first resource's generic stream partition (asdcplib's numbering).
FIRST_STREAM_ID = 10
FONT_MIME, PNG_MIME = "application/x-font-opentype", "image/png"

#: Dynamic local tags of the descriptor items (ST 429-5; ULs as asdcplib's dictionary has them).
#: EssenceStreamID shares its UL with BodySID, so it takes BodySID's static tag 0x3F07.
TT_TAGS = {"ResourceID": 0xFFFE, "UCSEncoding": 0xFFFD, "NamespaceURI": 0xFFFC,
           "RFC5646LanguageTagList": 0xFFFB, "AncillaryResourceID": 0xFFFA, "MIMEMediaType": 0xFFF9}
TT_PRIMER = {
    0xfffe: "060e2b340101010c0101151200000000", 0xfffd: "060e2b340101010c0409050000000000",
    0xfffc: "060e2b34010101080102010501000000", 0xfffb: "060e2b340101010e0301010202160000",
    0xfffa: "060e2b340101010c0101151300000000", 0xfff9: "060e2b34010101070409020100000000",
}


@dataclass(frozen=True)
class Resource:
    """An ancillary resource: a font or a PNG, named in the document by ``urn:uuid:{id}``."""

    id: uuid.UUID
    mime: str
    data: bytes


@dataclass(frozen=True)
class TimedTextTrackFile:
    """What the CPL and PKL need to know about a finished timed-text track file. ``frames``:
    the reel's length in edit units; ``size``: bytes."""

    path: Path
    asset_id: uuid.UUID
    frames: int
    edit_rate: Fraction
    language: str | None
    size: int


class TimedTextTrackWriter(TrackWriter):
    """Write one ST 428-7 document and its resources into an ST 429-5 track file.

    ``duration``: the reel's length in edit units; ``resource_id``: the document's ``<Id>``
    UUID (the descriptor's ResourceID: it must differ from ``asset_id``);
    ``namespace``: the document's root namespace; ``language``: RFC 5646 tag or None.
    Call :meth:`write` once with the document and the resources, then :meth:`close`."""

    CONTAINERS = (GC_MULTIPLE_WRAPPINGS, TT_WRAPPING)
    ELEMENT = TT_ELEMENT
    DATA_DEF = DATA_DEF_PICTURE
    TRACK_NAME = "Timed Text Track"
    PACKAGE_NAME = "File Package: SMPTE 429-5 clip wrapping of D-Cinema Timed Text data"
    DYNAMIC_TAGS = TT_PRIMER

    def __init__(self, path, *, duration: int, resource_id: uuid.UUID, namespace: str,
                 language: str | None = None, **kwargs):
        if duration < 1:
            raise MediaError(path, f"a timed-text track of {duration} edit units")
        self.duration, self.resource_id = duration, resource_id
        self.namespace, self.language = namespace, language
        self.resources: list[Resource] = []
        super().__init__(path, **kwargs)
        if self.resource_id == self.asset_id:
            self.abort()
            raise MediaError(path, "the document's Id must differ from the track file's asset id")

    def write(self, document: bytes, resources: list[Resource] = ()) -> None:
        """The XML document (UTF-8) and its fonts and images, in the order they are stored."""
        if self.offsets:
            raise MediaError(self.path, "a timed-text track file holds one document")
        if len({r.id for r in resources}) != len(resources):
            raise MediaError(self.path, "two resources with one id")
        self.resources = list(resources)
        self._append(document)

    def close(self) -> TimedTextTrackFile:
        size = self._finish_file()
        return TimedTextTrackFile(self.path, self.asset_id, self.duration, self.edit_rate,
                                  self.language, size)

    def _duration(self) -> int:
        return self.duration

    def _generic_streams(self) -> list[tuple[int, int]]:
        """One generic stream partition per resource, BodySID 10, 11, ... (ST 410)."""
        out: list[tuple[int, int]] = []
        previous = HEADER_RESERVE             # the body partition
        for k, r in enumerate(self.resources):
            here, sid = self.file.tell(), FIRST_STREAM_ID + k
            self.file.write(self._partition(3, here, previous, 0, body_sid=sid, status=0x11,
                                            containers=[TT_ELEMENT]))
            e = self.encryption        # asdcplib encrypts the resources too (ST 429-6)
            self.file.write(klv(GS_DATA_ELEMENT, r.data) if e is None else encrypt_element(
                GS_DATA_ELEMENT, r.data, e.key, context_id=e.context_id,
                track_file_id=self.asset_id.bytes, sequence=k + 2))
            out.append((sid, here))
            previous = here
        return out

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The TimedTextDescriptor and one TimedTextResourceSubDescriptor per resource."""
        t = TT_TAGS
        subs, uids = [], []
        for k, r in enumerate(self.resources):
            uid = uuid.uuid4().bytes
            uids.append(uid)
            subs.append(local_set(TT_RESOURCE, [
                (0x3C0A, uid), (t["AncillaryResourceID"], r.id.bytes),
                (t["MIMEMediaType"], _utf16(r.mime)),
                (0x3F07, struct.pack(">I", FIRST_STREAM_ID + k))]))       # EssenceStreamID
        lang = [] if not self.language else [(t["RFC5646LanguageTagList"], _utf16(self.language))]
        desc = local_set(TT_DESCRIPTOR, [
            (0x3C0A, ids["desc"]), (0xFFFF, _batch(uids, 16)),
            (0x3006, struct.pack(">I", 2)),                     # LinkedTrackID
            (0x3001, _rational(self.edit_rate)),                # SampleRate: the edit rate
            (0x3002, struct.pack(">Q", n)),                     # ContainerDuration
            (0x3004, TT_WRAPPING),
            (t["ResourceID"], self.resource_id.bytes),
            (t["UCSEncoding"], _utf16("UTF-8")),
            (t["NamespaceURI"], _utf16(self.namespace)), *lang])
        return [desc, *subs]


def write_timed_text(path, document: bytes, resources: list[Resource], *, edit_rate, duration: int,
                     resource_id: uuid.UUID, namespace: str, language: str | None = None,
                     asset_id: uuid.UUID | None = None) -> TimedTextTrackFile:
    """Write one timed-text track file (see :class:`TimedTextTrackWriter`)."""
    with TimedTextTrackWriter(path, edit_rate=edit_rate, duration=duration, resource_id=resource_id,
                              namespace=namespace, language=language, asset_id=asset_id) as w:
        w.write(document, resources)
        return w.close()
