"""Writing SMPTE DCP picture track files: MXF OP-Atom, frame-wrapped JPEG 2000 (ST 429-4).

The layout is the one asdcplib writes for an unencrypted 2D picture track (checked field by field
against libdcp's ``dcp_test1/video.mxf``, written by asdcplib):

    offset 0       header partition pack (closed, complete)           ST 377-1 7.1
                   primer pack (local tag -> UL)                      ST 377-1 9.2
                   header metadata local sets                          ST 377-1 9.x, Annex B
                   KLV fill up to HEADER_RESERVE
    HEADER_RESERVE body partition pack (BodySID 1)
                   one GC picture element per frame                   ST 379-1, ST 422
    footer         footer partition pack, index table segments (VBR)  ST 377-1 11
                   random index pack                                  ST 377-1 12

:class:`TrackWriter` holds what every track file shares (partitions, index placement, RIP,
header metadata); :class:`PictureTrackWriter` adds the picture essence,
:class:`StereoscopicPictureTrackWriter` the ST 429-10 stereoscopic picture (two picture elements
an edit unit, left eye then right eye, as asdcplib's ``JP2K::MXFSWriter`` writes them), and
:class:`.mxf_sound_write.SoundTrackWriter` the sound essence of ST 429-3.

The header is written last (the reserve is zeros until then), so a file cut short by an
interrupted run is not an MXF file at all. Every KLV length is BER long form: 4 bytes
(``0x83``) as asdcplib writes them, longer only where a value needs it.

Header metadata: Preface, Identification, ContentStorage, EssenceContainerData, a
MaterialPackage and a SourcePackage (file package), each with a timecode track and a picture
track (TimelineTrack -> Sequence -> TimecodeComponent or SourceClip), the RGBAEssenceDescriptor
and its JPEG2000PictureSubDescriptor (ST 422), whose fields copy the first frame's SIZ, COD and
QCD. The file package's UMID carries the asset UUID that the CPL and PKL name (ST 429-3 as
asdcplib applies it).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path

from cinegpu import PRODUCT, __version__
from cinegpu.decode.codestream import dci
from cinegpu.decode.codestream import markers as M
from cinegpu.decode.codestream.header import Codestream, parse_codestream
from cinegpu.decode.codestream.siz import SIZ
from cinegpu.decode.errors import CodestreamError
from cinegpu.media.errors import MediaError, media_error_of
from cinegpu.media.mxf.positioned_writes import PositionedWrites
from cinegpu.media.mxf.read import (
    CRYPTO_CONTEXT,
    CRYPTO_FRAMEWORK,
    GC_ELEMENT,
    INDEX_SEGMENT,
    PRIMER_PACK,
    RANDOM_INDEX_PACK,
)
from cinegpu.media.security.essence_crypto import encrypt_element

__all__ = ["HEADER_RESERVE", "J2KHeader", "PictureTrackWriter", "StereoscopicPictureTrackWriter",
           "TrackFile", "TrackWriter", "parse_j2k_header"]

#: Bytes kept for the header partition, primer and metadata (asdcplib's default, 16 KiB).
HEADER_RESERVE = 16384
#: Index entries per index table segment: a local set item holds at most 65535 bytes (11 each).
ENTRIES_PER_SEGMENT = 4096
INDEX_SID, BODY_SID = 129, 1

# Labels (ST 377-1, ST 378, ST 422, ST 429-4; values as asdcplib writes them).
OP_ATOM = bytes.fromhex("060e2b34040101020d01020110000000")
GC_MULTIPLE_WRAPPINGS = bytes.fromhex("060e2b34040101030d010301027f0100")
#: the encrypted essence container label (ST 429-6 8.2)
ENCRYPTED_CONTAINER = bytes.fromhex("060e2b34040101070d010301020b0100")
JP2K_FRAME_WRAPPED = bytes.fromhex("060e2b34040101070d010301020c0100")
JP2K_CODING = {"dci-2k": bytes.fromhex("060e2b34040101090401020203010103"),   # ST 429-4 2K
               "dci-4k": bytes.fromhex("060e2b34040101090401020203010104")}   # ST 429-4 4K
DATA_DEF_TIMECODE = bytes.fromhex("060e2b34040101010103020101000000")
DATA_DEF_PICTURE = bytes.fromhex("060e2b34040101010103020201000000")
UMID_PREFIX = bytes.fromhex("060a2b340101010501010f2013000000")       # SMPTE UMID, ST 330
#: GC picture element, item 0x15, count 1, JPEG 2000 frame-wrapped 0x08, element 1 (ST 422).
PICTURE_ELEMENT = GC_ELEMENT + bytes([0x15, 0x01, 0x08, 0x01])
FILL_KEY = bytes.fromhex("060e2b34010101020301021001000000")
#: X'Y'Z', 12 bits each (ST 377-1 G.2.40 RGBALayout codes 0xD8..0xDA).
PIXEL_LAYOUT_XYZ = bytes([0xD8, 12, 0xD9, 12, 0xDA, 12]) + bytes(10)

# Header metadata set keys (ST 377-1 Annex B): 060e2b34.02530101.0d010101.0101xx00.
def _set_key(kind: int) -> bytes:
    return bytes.fromhex("060e2b34025301010d0101010101") + bytes([kind, 0])


PREFACE, IDENTIFICATION, CONTENT_STORAGE, ESSENCE_CONTAINER_DATA = 0x2F, 0x30, 0x18, 0x23
MATERIAL_PACKAGE, SOURCE_PACKAGE, TIMELINE_TRACK, SEQUENCE = 0x36, 0x37, 0x3B, 0x0F
SOURCE_CLIP, TIMECODE_COMPONENT, RGBA_DESCRIPTOR, JP2K_SUBDESCRIPTOR = 0x11, 0x14, 0x29, 0x5A
#: ST 429-10's StereoscopicPictureSubDescriptor (asdcplib's MDD: 060e2b34.02530101.0d010101.01016300)
STEREOSCOPIC_SUBDESCRIPTOR = 0x63

#: Local tags and their ULs, for the primer pack (ST 377-1 Annex; dynamic tags 0xFFxx for the
#: ST 422 sub-descriptor items and SubDescriptors, numbered as asdcplib numbers them).
PRIMER = {
    0x0201: "060e2b34010101020407010000000000", 0x0202: "060e2b34010101020702020101030000",
    0x1001: "060e2b34010101020601010406090000", 0x1101: "060e2b34010101020601010301000000",
    0x1102: "060e2b34010101020601010302000000", 0x1201: "060e2b34010101020702010301040000",
    0x1501: "060e2b34010101020702010301050000", 0x1502: "060e2b34010101020404010102060000",
    0x1503: "060e2b34010101010404010105000000", 0x1901: "060e2b34010101020601010405010000",
    0x1902: "060e2b34010101020601010405020000", 0x2701: "060e2b34010101020601010601000000",
    0x3001: "060e2b34010101010406010100000000", 0x3002: "060e2b34010101010406010200000000",
    0x3004: "060e2b34010101020601010401020000", 0x3006: "060e2b34010101050601010305000000",
    0x3201: "060e2b34010101020401060100000000", 0x3202: "060e2b34010101010401050201000000",
    0x3203: "060e2b34010101010401050202000000", 0x3208: "060e2b3401010101040105010b000000",
    0x3209: "060e2b3401010101040105010c000000", 0x320c: "060e2b34010101010401030104000000",
    0x320e: "060e2b34010101010401010101000000", 0x3401: "060e2b34010101020401050306000000",
    0x3406: "060e2b3401010105040105030b000000", 0x3407: "060e2b3401010105040105030c000000",
    0x3b02: "060e2b34010101020702011002040000", 0x3b03: "060e2b34010101020601010402010000",
    0x3b05: "060e2b34010101020301020105000000", 0x3b06: "060e2b34010101020601010406040000",
    0x3b07: "060e2b34010101020301020104000000", 0x3b08: "060e2b34010101040601010401080000",
    0x3b09: "060e2b34010101050102020300000000", 0x3b0a: "060e2b34010101050102021002010000",
    0x3b0b: "060e2b34010101050102021002020000", 0x3c01: "060e2b34010101020520070102010000",
    0x3c02: "060e2b34010101020520070103010000", 0x3c03: "060e2b34010101020520070104000000",
    0x3c04: "060e2b34010101020520070105010000", 0x3c05: "060e2b34010101020520070107000000",
    0x3c06: "060e2b34010101020702011002030000", 0x3c07: "060e2b3401010102052007010a000000",
    0x3c08: "060e2b34010101020520070106010000", 0x3c09: "060e2b34010101020520070101000000",
    0x3c0a: "060e2b34010101010101150200000000", 0x3f05: "060e2b34010101040406020100000000",
    0x3f06: "060e2b34010101040103040500000000", 0x3f07: "060e2b34010101040103040400000000",
    0x3f08: "060e2b34010101040404040101000000", 0x3f09: "060e2b34010101050404040106000000",
    0x3f0a: "060e2b34010101050404040205000000", 0x3f0b: "060e2b34010101050530040600000000",
    0x3f0c: "060e2b340101010507020103010a0000", 0x3f0d: "060e2b34010101050702020101020000",
    0x3f0e: "060e2b34010101050404040107000000", 0x4401: "060e2b34010101010101151000000000",
    0x4402: "060e2b34010101010103030201000000", 0x4403: "060e2b34010101020601010406050000",
    0x4404: "060e2b34010101020702011002050000", 0x4405: "060e2b34010101020702011001030000",
    0x4701: "060e2b34010101020601010402030000", 0x4801: "060e2b34010101020107010100000000",
    0x4802: "060e2b34010101020107010201000000", 0x4803: "060e2b34010101020601010402040000",
    0x4804: "060e2b34010101020104010300000000", 0x4b01: "060e2b34010101020530040500000000",
    0x4b02: "060e2b34010101020702010301030000",
    0xffff: "060e2b34010101090601010406100000",
}
#: The ST 422 JPEG2000PictureSubDescriptor items' dynamic tags and ULs.
J2K_PRIMER = {
    0xfff2: "060e2b340101010a040106030d000000", 0xfff3: "060e2b340101010a040106030c000000",
    0xfff4: "060e2b340101010a040106030b000000", 0xfff5: "060e2b340101010a040106030a000000",
    0xfff6: "060e2b340101010a0401060309000000", 0xfff7: "060e2b340101010a0401060308000000",
    0xfff8: "060e2b340101010a0401060307000000", 0xfff9: "060e2b340101010a0401060306000000",
    0xfffa: "060e2b340101010a0401060305000000", 0xfffb: "060e2b340101010a0401060304000000",
    0xfffc: "060e2b340101010a0401060303000000", 0xfffd: "060e2b340101010a0401060302000000",
    0xfffe: "060e2b340101010a0401060301000000",
}
# The ST 422 sub-descriptor items by name -> dynamic tag (UL byte 13 = item number).
J2K_TAGS = {"Rsiz": 0xFFFE, "Xsiz": 0xFFFD, "Ysiz": 0xFFFC, "XOsiz": 0xFFFB, "YOsiz": 0xFFFA,
            "XTsiz": 0xFFF9, "YTsiz": 0xFFF8, "XTOsiz": 0xFFF7, "YTOsiz": 0xFFF6, "Csiz": 0xFFF5,
            "PictureComponentSizing": 0xFFF4, "CodingStyleDefault": 0xFFF3,
            "QuantizationDefault": 0xFFF2}
SUBDESCRIPTORS_TAG = 0xFFFF

# ST 429-6 8.3 / 8.4: the cryptographic DM sets an encrypted track file's file package carries
# (a StaticTrack -> Sequence -> DMSegment -> CryptographicFramework -> CryptographicContext),
# with the keys, labels and items asdcplib writes (checked against libdcp's encrypted sample).
STATIC_TRACK, DM_SEGMENT = 0x3A, 0x41
DATA_DEF_DESCRIPTIVE = bytes.fromhex("060e2b34040101010103020110000000")
CRYPTO_DM_SCHEME = bytes.fromhex("060e2b34040101070d01040102010100")
CIPHER_AES_CBC = bytes.fromhex("060e2b34040101070209020101000000")
MIC_HMAC_SHA1 = bytes.fromhex("060e2b34040101070209020201000000")
#: Static tags of the DMSegment (EventComment, DMFramework) and dynamic tags of the
#: cryptographic sets' items (free in every writer's primer: 0xFFE0..0xFFE5).
CRYPTO_PRIMER = {
    0x0602: "060e2b34010101020530040401000000", 0x6101: "060e2b340101010506010104020c0000",
    0xFFE0: "060e2b340101010906010104020d0000",     # ContextSR
    0xFFE1: "060e2b34010101090101151100000000",     # ContextID
    0xFFE2: "060e2b34010101090601010202000000",     # SourceEssenceContainer
    0xFFE3: "060e2b34010101090209030101000000",     # CipherAlgorithm
    0xFFE4: "060e2b34010101090209030201000000",     # MICAlgorithm
    0xFFE5: "060e2b34010101090209030102000000",     # CryptographicKeyID
}

PRODUCT_UID = uuid.uuid5(uuid.NAMESPACE_URL, "cinegpu/media/mxf_write")


# -- KLV coding -------------------------------------------------------------------------------
def ber(n: int, size: int = 4) -> bytes:
    """BER long-form length (ST 336 / X.690): ``0x80 | k`` then k big-endian bytes, k >= size-1."""
    k = max(size - 1, (n.bit_length() + 7) // 8)
    if k > 8:
        raise ValueError(f"length {n} does not fit a BER length")
    return bytes([0x80 | k]) + n.to_bytes(k, "big")


def klv(key: bytes, value: bytes) -> bytes:
    return key + ber(len(value)) + value


def _batch(items: list[bytes], size: int) -> bytes:
    """An MXF batch/array: count, item size, items (ST 377-1 4.3)."""
    return struct.pack(">II", len(items), size) + b"".join(items)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be")


def _timestamp(t: datetime) -> bytes:
    """ST 377-1 TimeStamp: year u16, month, day, hour, minute, second, msec/4."""
    return struct.pack(">HBBBBBB", t.year, t.month, t.day, t.hour, t.minute, t.second,
                       t.microsecond // 4000)


def _rational(r: Fraction) -> bytes:
    return struct.pack(">ii", r.numerator, r.denominator)


#: ProductVersion and ToolkitVersion (ST 377-1 9.4, ProductVersion type: major, minor, patch,
#: build, release, u16 each) left 0, release "unknown", as asdcplib and libdcp write them: the
#: version is the VersionString, which readers (MediaInfo's "Writing application") then show
#: as written, not as five numbers.
NO_VERSION = bytes(10)


def _index_segment(items: list[tuple[int, bytes]]) -> bytes:
    """An index table segment (ST 377-1 11.2.1): a local set with 2-byte tags and lengths."""
    return klv(INDEX_SEGMENT, b"".join(struct.pack(">HH", t, len(v)) + v for t, v in items))


def _items(items: list[tuple[int, bytes]]) -> bytes:
    """A local set's value: 2-byte tags and 2-byte lengths (ST 377-1 9.6)."""
    body = bytearray()
    for tag, value in items:
        if len(value) > 0xFFFF:
            raise ValueError(f"local tag 0x{tag:04x} value of {len(value)} bytes is too long")
        body += struct.pack(">HH", tag, len(value)) + value
    return bytes(body)


def local_set(kind: int, items: list[tuple[int, bytes]]) -> bytes:
    """A header metadata local set of structural type ``kind`` (ST 377-1 9.6, Annex B)."""
    return klv(_set_key(kind), _items(items))


# -- the codestream's main header -------------------------------------------------------------
@dataclass(frozen=True)
class J2KHeader:
    """What the JPEG 2000 sub-descriptor repeats of a frame's main header: its SIZ, and its COD
    and QCD segment bodies as stored (ISO/IEC 15444-1 A.5.1, A.6.1, A.6.4), read from the
    codec's parse (:class:`cinegpu.decode.codestream.header.Codestream`)."""

    siz: SIZ
    cod: bytes                     # Scod, SGcod, SPcod
    qcd: bytes                     # Sqcd, SPqcd
    cap: bytes | None = None       # Pcap, Ccap (15444-1 A.5.2), where the stream has CAP

    @classmethod
    def of(cls, cs: Codestream) -> "J2KHeader":
        cod, qcd = cs.segment_body(M.COD), cs.segment_body(M.QCD)
        assert cod is not None and qcd is not None   # parse_codestream requires both
        return cls(cs.siz, cod, qcd, cs.segment_body(M.CAP))

    @property
    def Rsiz(self) -> int:
        return self.siz.Rsiz

    @property
    def width(self) -> int:
        return self.siz.Xsiz - self.siz.XOsiz

    @property
    def height(self) -> int:
        return self.siz.Ysiz - self.siz.YOsiz

    @property
    def components(self) -> tuple[bytes, ...]:
        """Ssiz, XRsiz, YRsiz per component, as SIZ stores them."""
        s = self.siz
        return tuple(bytes((s.Ssiz[c], s.XRsiz[c], s.YRsiz[c])) for c in range(s.Csiz))


def parse_j2k_header(data: bytes) -> J2KHeader:
    """The main header fields the JPEG 2000 sub-descriptor repeats (the main header alone is
    parsed); MediaError if malformed."""
    try:
        cs = parse_codestream(data, main_only=True)
    except CodestreamError as exc:
        raise media_error_of(exc)(None, exc.what, exc.offset) from None
    return J2KHeader.of(cs)


# -- the writer -----------------------------------------------------------------------------
@dataclass(frozen=True)
class EssenceEncryption:
    """How a track file's essence is encrypted (ST 429-6): the AES-128 content ``key``, its
    ``key_id`` (the CPL's KeyId, a KDM's KeyId) and the cryptographic context's id."""

    key: bytes = field(repr=False)
    key_id: uuid.UUID
    context_id: bytes = field(default_factory=lambda: uuid.uuid4().bytes)


@dataclass(frozen=True)
class TrackFile:
    """What the CPL and PKL need to know about a finished track file."""

    path: Path
    asset_id: uuid.UUID
    frames: int
    edit_rate: Fraction
    width: int
    height: int
    size: int          # bytes
    #: ST 429-10: each frame (edit unit) holds a left and a right eye's codestream
    stereoscopic: bool = False


class TrackWriter:
    """What every frame-wrapped OP-Atom track file shares (ST 377-1, ST 379-1): the body
    partition of essence elements, the footer, the random index pack and the header metadata
    written last. A subclass names its essence (class attributes below), appends each edit
    unit's element value with :meth:`_append`, and supplies its index table segments and its
    essence descriptor's sets.

    ``edit_rate``: edit units per second. Use as a context manager, or call :meth:`close`; a
    writer left by an exception (``abort``) removes its file.
    """

    #: Essence container labels of the partition packs and the Preface (ST 377-1 7.1, 9.5.1).
    CONTAINERS: tuple[bytes, ...] = ()
    #: The essence element key (ST 379-1 7); its last 4 bytes are the file package track number.
    ELEMENT = b""
    DATA_DEF = b""
    TRACK_NAME = ""
    PACKAGE_NAME = ""
    #: Dynamic local tags of the descriptor and sub-descriptors (tag -> UL hex), for the primer.
    DYNAMIC_TAGS: dict[int, str] = {}
    #: The operational pattern (ST 378 OP-Atom for DCPs; IMF writers name OP-1a, ST 378-1).
    OPERATIONAL_PATTERN = OP_ATOM
    #: The Preface's MXF version (ST 377-1 9.5.1): 1.2 as asdcplib writes DCPs.
    MXF_VERSION = 0x0102
    #: A body partition pack before the essence (ST 429-3 as asdcplib writes SMPTE files: three
    #: partitions); False: the essence follows the header partition, whose pack names BodySID 1
    #: (asdcplib's MXF Interop: two partitions, the RIP's first pair (1, 0)).
    BODY_PARTITION = True
    #: Threads that write the elements at their offsets (:class:`.positioned_writes.
    #: PositionedWrites`), for a subclass whose every byte between the body partition pack
    #: and the footer goes through :meth:`_append`; 0: written in the calling thread.
    WRITE_THREADS = 0

    def __init__(self, path, *, edit_rate, asset_id: uuid.UUID | None = None,
                 product: str = f"{PRODUCT} master", version: str = __version__,
                 encryption: "EssenceEncryption | None" = None):
        self.path = Path(path)
        self.encryption = encryption
        self.edit_rate = Fraction(edit_rate)
        self.asset_id = asset_id or uuid.uuid4()
        self.product, self.version = product, version
        self.created = datetime.now(timezone.utc)
        self.offsets: list[int] = []      # stream offset of each edit unit's KLV (bytes)
        self.elements = 0                 # essence elements written (ST 429-10: two a unit)
        self.stream_offset = 0
        self.file = open(self.path, "wb")
        self._writes: PositionedWrites | None = None
        try:
            self.file.write(bytes(HEADER_RESERVE))
            if self.BODY_PARTITION:
                self.file.write(self._partition(3, HEADER_RESERVE, 0, 0, body_sid=BODY_SID))
            if self.WRITE_THREADS:
                self.file.flush()
                self._body = self.file.tell()     # element k at _body + offsets[k]
                self._writes = PositionedWrites(self.file.fileno(), self.WRITE_THREADS)
        except BaseException:
            self.abort()
            raise

    def _append(self, value: bytes, *, indexed: bool = True) -> None:
        """Write one essence element (frame wrapping: one KLV per edit unit), as an encrypted
        triplet (ST 429-6) when the writer has an ``encryption``, its SequenceNumber counting
        elements from 1.  ``indexed``: it begins an edit unit, so the index lists it; an ST
        429-10 right eye is not (the unit's second element, as asdcplib writes it)."""
        e = self.encryption
        if e is None:            # key and length, then the value as it is (not copied into one)
            parts = (self.ELEMENT + ber(len(value)), value)
        else:
            parts = (encrypt_element(
                self.ELEMENT, value, e.key, context_id=e.context_id,
                track_file_id=self.asset_id.bytes, sequence=self.elements + 1),)
        size = sum(len(p) for p in parts)
        if self._writes is not None:
            # written later by another thread: a buffer the caller may change is copied first
            parts = tuple(p if isinstance(p, bytes) else bytes(p) for p in parts)
            self._writes.put(parts, self._body + self.stream_offset)
        else:
            for p in parts:
                self.file.write(p)
        if indexed:
            self.offsets.append(self.stream_offset)
        self.elements += 1
        self.stream_offset += size

    def _finish_file(self) -> int:
        """Write the footer, the index and the random index pack, then the header; the file's
        size in bytes."""
        if not self.offsets:
            self.abort()
            raise MediaError(self.path, "no frames written")
        if self._writes is not None:          # every element written, then on from the last
            self._writes.drain()
            self._writes.close()
            self._writes = None
            self.file.seek(self._body + self.stream_offset)
        streams = self._generic_streams()
        footer = self.file.tell()
        index = self._index_segments()
        body = [(0, 0), (BODY_SID, HEADER_RESERVE)] if self.BODY_PARTITION else [(BODY_SID, 0)]
        previous = streams[-1][1] if streams else body[-1][1]
        self.file.write(self._partition(4, footer, previous, footer,
                                        index_byte_count=len(index), index_sid=INDEX_SID))
        self.file.write(index)
        self.file.write(self._rip([*body, *streams, (0, footer)]))
        size = self.file.tell()
        if self.BODY_PARTITION:
            self.file.seek(HEADER_RESERVE)
            self.file.write(self._partition(3, HEADER_RESERVE, 0, footer, body_sid=BODY_SID))
        self.file.seek(0)
        self.file.write(self._header(footer))
        self.file.close()
        return size

    def _containers(self) -> tuple[bytes, ...]:
        """The partition packs' and Preface's essence container labels: encrypted essence is
        declared by the encrypted container label in place of its wrapping (ST 429-6 8.2, as
        asdcplib writes it); the descriptor keeps the wrapping."""
        if self.encryption is None:
            return self.CONTAINERS
        return tuple(c for c in self.CONTAINERS if c == GC_MULTIPLE_WRAPPINGS) + (ENCRYPTED_CONTAINER,)

    def _generic_streams(self) -> list[tuple[int, int]]:
        """Write any generic stream partitions (ST 410) after the essence; their (BodySID,
        offset) pairs for the random index pack. None by default."""
        return []

    def _duration(self) -> int:
        """Edit units the tracks and the descriptor declare: one per element by default."""
        return len(self.offsets)

    def _timecode(self) -> tuple[Fraction, int]:
        """The timecode tracks' edit rate and duration: the essence's by default."""
        return self.edit_rate, self._duration()

    def _timecode_base(self, tc_rate: Fraction) -> int:
        """The TimecodeComponents' RoundedTimecodeBase (ST 377-1 G.2.x; frames a second):
        the timecode tracks' rate, rounded."""
        return round(tc_rate)

    def _index_segments(self) -> bytes:
        """VBR index table segments (ST 377-1 11.2): one entry per edit unit, the stream offset
        of its (first) element."""
        out = bytearray()
        for start in range(0, len(self.offsets), ENTRIES_PER_SEGMENT):
            chunk = self.offsets[start:start + ENTRIES_PER_SEGMENT]
            # TemporalOffset 0, KeyFrameOffset 0, Flags 0x80 (random access), StreamOffset
            entries = [struct.pack(">bbBQ", 0, 0, 0x80, so) for so in chunk]
            items = [
                (0x3C0A, uuid.uuid4().bytes),
                (0x3F0B, _rational(self.edit_rate)),
                (0x3F0C, struct.pack(">q", start)),
                (0x3F0D, struct.pack(">q", len(chunk))),
                (0x3F05, struct.pack(">I", 0)),            # EditUnitByteCount 0: VBR
                (0x3F06, struct.pack(">I", INDEX_SID)),
                (0x3F07, struct.pack(">I", BODY_SID)),
                (0x3F08, b"\x00"),                         # SliceCount
                (0x3F0E, b"\x00"),                         # PosTableCount
                (0x3F09, _batch([struct.pack(">bBI", 0, 0, 0)], 6)),
                (0x3F0A, _batch(entries, 11)),
            ]
            out += _index_segment(items)
        return bytes(out)

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The essence descriptor (InstanceUID ``ids["desc"]``) and its sub-descriptors."""
        raise NotImplementedError

    def _crypto_sets(self, ids: dict[str, bytes]) -> list[bytes]:
        """With an ``encryption``, the file package's descriptive track and the ST 429-6 8.3
        CryptographicFramework and 8.4 CryptographicContext sets (context id, the essence's
        own wrapping label, AES-128-CBC, HMAC-SHA-1, the key id), in asdcplib's order; its
        track's InstanceUID goes into ``ids["dm_track"]``. None without."""
        e = self.encryption
        if e is None:
            return []
        for name in ("dm_track", "dm_seq", "dm_segment", "dm_framework", "dm_context"):
            ids[name] = uuid.uuid4().bytes
        wrapping = next((c for c in self.CONTAINERS if c != GC_MULTIPLE_WRAPPINGS), b"")
        return [
            local_set(STATIC_TRACK, [
                (0x3C0A, ids["dm_track"]), (0x4801, struct.pack(">I", 3)),
                (0x4804, struct.pack(">I", 0)), (0x4802, _utf16("Descriptive Track")),
                (0x4803, ids["dm_seq"])]),
            local_set(SEQUENCE, [(0x3C0A, ids["dm_seq"]), (0x0201, DATA_DEF_DESCRIPTIVE),
                                 (0x1001, _batch([ids["dm_segment"]], 16))]),
            local_set(DM_SEGMENT, [(0x3C0A, ids["dm_segment"]), (0x0201, DATA_DEF_DESCRIPTIVE),
                                   (0x0602, _utf16("AS-DCP KLV Encryption")),
                                   (0x6101, ids["dm_framework"])]),
            klv(CRYPTO_FRAMEWORK, _items([(0x3C0A, ids["dm_framework"]),
                                             (0xFFE0, ids["dm_context"])])),
            klv(CRYPTO_CONTEXT, _items([
                (0x3C0A, ids["dm_context"]), (0xFFE1, e.context_id), (0xFFE2, wrapping),
                (0xFFE3, CIPHER_AES_CBC), (0xFFE4, MIC_HMAC_SHA1), (0xFFE5, e.key_id.bytes)])),
        ]

    def abort(self) -> None:
        """Close and remove the file; a flush that fails again (a full disk) is not reported."""
        if self._writes is not None:
            self._writes.close()
            self._writes = None
        if not self.file.closed:
            try:
                self.file.close()
            except OSError:
                pass
        self.path.unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        elif not self.file.closed:
            self.close()

    # -- partitions, index, RIP --
    def _partition(self, kind: int, this: int, previous: int, footer: int, *,
                   header_byte_count: int = 0, index_byte_count: int = 0, index_sid: int = 0,
                   body_sid: int = 0, status: int = 0x04, containers=None) -> bytes:
        """A closed, complete partition pack (ST 377-1 7.1): kind 2 header, 3 body, 4 footer;
        ``status`` 0x11 with kind 3 is a generic stream partition (ST 410)."""
        key = bytes.fromhex("060e2b34020501010d01020101") + bytes([kind, status, 0x00])
        value = struct.pack(">HHIQQQQQIQI", 1, self.MXF_VERSION & 0xFF, 1, this, previous,
                            footer, header_byte_count, index_byte_count, index_sid, 0, body_sid)
        value += self.OPERATIONAL_PATTERN + _batch(
            list(self._containers() if containers is None else containers), 16)
        return klv(key, value)

    @staticmethod
    def _rip(partitions: list[tuple[int, int]]) -> bytes:
        """Random index pack (ST 377-1 12): (BodySID, offset) pairs, then its own length."""
        value = b"".join(struct.pack(">IQ", sid, off) for sid, off in partitions)
        length = 16 + len(ber(len(value) + 4)) + len(value) + 4
        return klv(RANDOM_INDEX_PACK, value + struct.pack(">I", length))

    # -- header metadata --
    def _header(self, footer: int) -> bytes:
        metadata = self._primer() + self._metadata()
        pack_len = len(self._partition(2, 0, 0, footer))
        room = HEADER_RESERVE - pack_len - len(metadata)
        if room < 20:
            raise MediaError(self.path, f"header metadata ({len(metadata)} bytes) does not fit "
                             f"the {HEADER_RESERVE}-byte header reserve")
        fill = FILL_KEY + ber(room - 20) + bytes(room - 20)
        pack = self._partition(2, 0, 0, footer, header_byte_count=len(metadata) + len(fill),
                               body_sid=0 if self.BODY_PARTITION else BODY_SID)
        out = pack + metadata + fill
        assert len(out) == HEADER_RESERVE
        return out

    def _primer(self) -> bytes:
        tags = {**PRIMER, **self.DYNAMIC_TAGS, **(CRYPTO_PRIMER if self.encryption else {})}
        items = [struct.pack(">H", tag) + bytes.fromhex(ul) for tag, ul in sorted(tags.items())]
        return klv(PRIMER_PACK, _batch(items, 18))

    def _metadata(self) -> bytes:
        n, rate = self._duration(), self.edit_rate
        # the timecode tracks run at the picture's rate (an IMF sound file's edit rate is
        # its sample rate; its timecode counts picture frames, as other tools write it)
        tc_rate, tc_n = self._timecode()
        tc_base = self._timecode_base(tc_rate)
        ids = {name: uuid.uuid4().bytes for name in (
            "preface", "ident", "storage", "ecd", "mp", "fp", "desc",
            "mp_tc", "mp_tc_seq", "mp_tc_comp", "mp_pic", "mp_pic_seq", "mp_clip",
            "fp_tc", "fp_tc_seq", "fp_tc_comp", "fp_pic", "fp_pic_seq", "fp_clip")}
        generation = uuid.uuid4().bytes
        crypto = self._crypto_sets(ids)
        now = _timestamp(self.created)
        mp_umid = UMID_PREFIX + uuid.uuid4().bytes
        fp_umid = UMID_PREFIX + self.asset_id.bytes
        u32, u64 = (lambda v: struct.pack(">I", v)), (lambda v: struct.pack(">Q", v))

        def track(uid, seq_uid, track_id, number, name, rate=rate):
            return local_set(TIMELINE_TRACK, [
                (0x3C0A, uid), (0x4801, u32(track_id)), (0x4804, u32(number)),
                (0x4802, _utf16(name)), (0x4803, seq_uid), (0x4B01, _rational(rate)),
                (0x4B02, u64(0))])

        def sequence(uid, data_def, component, n=n):
            return local_set(SEQUENCE, [(0x3C0A, uid), (0x0201, data_def), (0x0202, u64(n)),
                                        (0x1001, _batch([component], 16))])

        def timecode(uid):
            return local_set(TIMECODE_COMPONENT, [
                (0x3C0A, uid), (0x0201, DATA_DEF_TIMECODE), (0x0202, u64(tc_n)),
                (0x1502, struct.pack(">H", tc_base)), (0x1501, u64(0)), (0x1503, b"\x00")])

        def clip(uid, package, track_id):
            return local_set(SOURCE_CLIP, [
                (0x3C0A, uid), (0x0201, self.DATA_DEF), (0x0202, u64(n)), (0x1201, u64(0)),
                (0x1101, package), (0x1102, u32(track_id))])

        def package(kind_, uid, umid, name, tracks, extra=()):
            return local_set(kind_, [
                (0x3C0A, uid), (0x4401, umid), (0x4402, _utf16(name)), (0x4405, now),
                (0x4404, now), (0x4403, _batch(tracks, 16)), *extra])

        sets = [
            local_set(PREFACE, [
                (0x3C0A, ids["preface"]), (0x3B02, now),
                (0x3B05, struct.pack(">H", self.MXF_VERSION)),
                (0x3B07, u32(1)), (0x3B08, ids["fp"]), (0x3B06, _batch([ids["ident"]], 16)),
                (0x3B03, ids["storage"]), (0x3B09, self.OPERATIONAL_PATTERN),
                (0x3B0A, _batch(list(self._containers()), 16)),
                (0x3B0B, _batch([CRYPTO_DM_SCHEME] if self.encryption else [], 16))]),
            local_set(IDENTIFICATION, [
                # CompanyName the project, ProductName what wrote the file: MediaInfo shows
                # "cinegpu master 0.1.0" (a product named as its company read "cinegpu cinegpu")
                (0x3C0A, ids["ident"]), (0x3C09, generation), (0x3C01, _utf16(PRODUCT)),
                (0x3C02, _utf16(self.product)), (0x3C03, NO_VERSION),
                (0x3C04, _utf16(self.version)), (0x3C05, PRODUCT_UID.bytes), (0x3C06, now),
                (0x3C07, NO_VERSION), (0x3C08, _utf16(f"{PRODUCT} (Python)"))]),
            local_set(CONTENT_STORAGE, [
                (0x3C0A, ids["storage"]), (0x1901, _batch([ids["mp"], ids["fp"]], 16)),
                (0x1902, _batch([ids["ecd"]], 16))]),
            local_set(ESSENCE_CONTAINER_DATA, [
                (0x3C0A, ids["ecd"]), (0x2701, fp_umid), (0x3F06, u32(INDEX_SID)),
                (0x3F07, u32(BODY_SID))]),
            package(MATERIAL_PACKAGE, ids["mp"], mp_umid, "Material Package",
                    [ids["mp_tc"], ids["mp_pic"]]),
            track(ids["mp_tc"], ids["mp_tc_seq"], 1, 0, "Timecode Track", tc_rate),
            sequence(ids["mp_tc_seq"], DATA_DEF_TIMECODE, ids["mp_tc_comp"], tc_n),
            timecode(ids["mp_tc_comp"]),
            track(ids["mp_pic"], ids["mp_pic_seq"], 2, 0, self.TRACK_NAME),
            sequence(ids["mp_pic_seq"], self.DATA_DEF, ids["mp_clip"]),
            clip(ids["mp_clip"], fp_umid, 2),
            package(SOURCE_PACKAGE, ids["fp"], fp_umid, self.PACKAGE_NAME,
                    [ids["fp_tc"], ids["fp_pic"]] + ([ids["dm_track"]] if crypto else []),
                    [(0x4701, ids["desc"])]),
            track(ids["fp_tc"], ids["fp_tc_seq"], 1, 0, "Timecode Track", tc_rate),
            sequence(ids["fp_tc_seq"], DATA_DEF_TIMECODE, ids["fp_tc_comp"], tc_n),
            timecode(ids["fp_tc_comp"]),
            track(ids["fp_pic"], ids["fp_pic_seq"], 2, int.from_bytes(self.ELEMENT[12:], "big"),
                  self.TRACK_NAME),
            sequence(ids["fp_pic_seq"], self.DATA_DEF, ids["fp_clip"]),
            clip(ids["fp_clip"], bytes(32), 0),
            *crypto,
            *self._descriptor(ids, n),
        ]
        return b"".join(sets)


class PictureTrackWriter(TrackWriter):
    """Write frames (JPEG 2000 codestreams) into an ST 429-4 picture track file.

    ``edit_rate``: frames per second. The first frame fixes the picture descriptor; later
    frames must have the same size. Use as a context manager, or call :meth:`close`; a writer
    left by an exception (``abort``) removes its file.
    """

    CONTAINERS = (GC_MULTIPLE_WRAPPINGS, JP2K_FRAME_WRAPPED)
    ELEMENT = PICTURE_ELEMENT
    DATA_DEF = DATA_DEF_PICTURE
    TRACK_NAME = "Picture Track"
    PACKAGE_NAME = "File Package: SMPTE 429-4 frame wrapping of JPEG 2000 codestreams"
    DYNAMIC_TAGS = J2K_PRIMER
    #: frames of 1-6 MB copied into the file by threads of the writer's own
    WRITE_THREADS = 3

    def __init__(self, path, **kwargs):
        self.header: J2KHeader | None = None
        super().__init__(path, **kwargs)

    # -- frames --
    def write(self, codestream: bytes, header: J2KHeader | None = None) -> None:
        """Append one frame (ST 422 frame wrapping: one picture element per edit unit).
        ``header``: its main header as the encoder that wrote it hands it over
        (:meth:`cinegpu.jobs.frame_encode.FrameEncoders.last_header`), so that a frame's header
        is not parsed again; else it is read from the codestream.  The first frame, whose
        header the descriptor repeats, is read either way, and a header handed with it must be
        its own."""
        self._frame_header(codestream, header, f"frame {len(self.offsets)}")
        self._append(codestream)

    def _frame_header(self, codestream: bytes, header: J2KHeader | None, what: str) -> J2KHeader:
        """The main header of the codestream ``what`` (see :meth:`write`), checked against the
        track's: the first one fixes it, later ones must have its size and Rsiz."""
        if self.header is None or header is None:
            own = parse_j2k_header(codestream)
            if header is not None and header != own:
                raise MediaError(self.path, f"{what}: the main header handed with it is not its own")
            header = own
        if self.header is None:
            self.header = header
        elif (header.width, header.height, header.Rsiz) != \
                (self.header.width, self.header.height, self.header.Rsiz):
            raise MediaError(self.path, f"{what} is {header.width}x{header.height} (Rsiz "
                             f"{header.Rsiz}); the track is {self.header.width}x"
                             f"{self.header.height} (Rsiz {self.header.Rsiz})")
        return header

    def close(self) -> TrackFile:
        """Write the footer, the index and the random index pack, then the header."""
        size = self._finish_file()
        assert self.header is not None
        return TrackFile(self.path, self.asset_id, len(self.offsets), self.edit_rate,
                         self.header.width, self.header.height, size)

    def _sample_rate(self) -> Fraction:
        """The descriptor's SampleRate (ST 377-1 G.2.x, elements a second): the edit rate."""
        return self.edit_rate

    def _subdescriptors(self, ids: dict[str, bytes]) -> list[tuple[bytes, bytes]]:
        """(InstanceUID, local set) of each sub-descriptor the descriptor links, in order: the
        ST 422 JPEG2000PictureSubDescriptor."""
        h = self.header
        assert h is not None
        ids["sub"] = uuid.uuid4().bytes
        return [(ids["sub"], local_set(JP2K_SUBDESCRIPTOR, [(0x3C0A, ids["sub"])] + self._j2k_items(h)))]

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The RGBAEssenceDescriptor and its sub-descriptors (:meth:`_subdescriptors`)."""
        h = self.header
        assert h is not None
        coding = JP2K_CODING[dci.profile_for(h.width).name]
        u32, u64 = (lambda v: struct.pack(">I", v)), (lambda v: struct.pack(">Q", v))
        subs = self._subdescriptors(ids)
        return [
            local_set(RGBA_DESCRIPTOR, [
                (0x3C0A, ids["desc"]), (SUBDESCRIPTORS_TAG, _batch([uid for uid, _ in subs], 16)),
                (0x3006, u32(2)), (0x3001, _rational(self._sample_rate())), (0x3002, u64(n)),
                (0x3004, JP2K_FRAME_WRAPPED), (0x320C, b"\x00"),
                (0x3203, u32(h.width)), (0x3202, u32(h.height)),
                (0x3209, u32(h.width)), (0x3208, u32(h.height)),
                (0x320E, struct.pack(">ii", h.width, h.height)),
                (0x3201, coding), (0x3406, u32(4095)), (0x3407, u32(0)),
                (0x3401, PIXEL_LAYOUT_XYZ)]),
            *(sub for _, sub in subs),
        ]

    @staticmethod
    def _j2k_items(h: J2KHeader) -> list[tuple[int, bytes]]:
        """The ST 422 JPEG2000PictureSubDescriptor items, from the main header."""
        t = J2K_TAGS
        u32 = [(t[name], struct.pack(">I", getattr(h.siz, name))) for name in
               ("Xsiz", "Ysiz", "XOsiz", "YOsiz", "XTsiz", "YTsiz", "XTOsiz", "YTOsiz")]
        return ([(t["Rsiz"], struct.pack(">H", h.Rsiz))] + u32 +
                [(t["Csiz"], struct.pack(">H", len(h.components))),
                 (t["PictureComponentSizing"], _batch(list(h.components), 3)),
                 (t["CodingStyleDefault"], h.cod),
                 (t["QuantizationDefault"], h.qcd)])


class StereoscopicPictureTrackWriter(PictureTrackWriter):
    """Write frame pairs into an ST 429-10 stereoscopic picture track file, as asdcplib's
    ``JP2K::MXFSWriter`` writes it.

    Each edit unit is two picture elements, the left eye's codestream then the right eye's,
    both under the one JPEG 2000 element key (element number 1, file package track number
    ``0x15010801``: asdcplib gives both eyes the same key, and ST 429-10 tells them apart by
    their order in the unit).  The index table lists each unit once, at its left element, at
    ``edit_rate`` (frames a second per eye, e.g. 24); the tracks run at that rate too.  The
    RGBAEssenceDescriptor keeps the ST 429-4 frame-wrapped container label and counts
    elements: its SampleRate is twice the edit rate (48 for 24), its ContainerDuration the
    units; it links a JPEG2000PictureSubDescriptor and then a StereoscopicPictureSubDescriptor
    (ST 429-10; an InstanceUID alone), whose presence is what marks the file stereoscopic.
    The TimecodeComponents' RoundedTimecodeBase is the element rate (48), as asdcplib derives
    it.  Encrypted (ST 429-6), each eye is its own triplet, SequenceNumber 2n+1 and 2n+2 for
    unit n (from 0).
    """

    PACKAGE_NAME = ("File Package: SMPTE 429-10 frame wrapping of stereoscopic JPEG 2000 "
                    "codestreams")
    #: Edit rates (frames a second per eye) whose doubled SampleRate asdcplib's reader accepts.
    EDIT_RATES = tuple(Fraction(r) for r in (24, 25, 30, 48, 50, 60, 96, 100, 120))

    def __init__(self, path, *, edit_rate, **kwargs):
        if Fraction(edit_rate) not in self.EDIT_RATES:
            raise ValueError(f"a stereoscopic track file's edit rate is one of "
                             f"{', '.join(str(r) for r in self.EDIT_RATES)} frames a second "
                             f"per eye, not {edit_rate}")
        super().__init__(path, edit_rate=edit_rate, **kwargs)

    def write(self, left: bytes, right: bytes, left_header: J2KHeader | None = None,   # type: ignore[override]
              right_header: J2KHeader | None = None) -> None:
        """Append one edit unit: the ``left`` eye's codestream, then the ``right`` eye's (each
        ``*_header`` as :meth:`PictureTrackWriter.write` takes it). Both are checked against
        the track before either is written."""
        n = len(self.offsets)
        self._frame_header(left, left_header, f"frame {n} (left eye)")
        self._frame_header(right, right_header, f"frame {n} (right eye)")
        self._append(left)
        self._append(right, indexed=False)

    def close(self) -> TrackFile:
        """Write the footer, the index and the random index pack, then the header; the
        TrackFile's ``frames`` are edit units (pairs)."""
        return replace(super().close(), stereoscopic=True)

    def _sample_rate(self) -> Fraction:
        """Two elements an edit unit: twice the edit rate (asdcplib's 48 for 24)."""
        return 2 * self.edit_rate

    def _timecode_base(self, tc_rate: Fraction) -> int:
        """asdcplib derives it from the descriptor's rate, so 48 for 24 frames a second."""
        return round(2 * tc_rate)

    def _subdescriptors(self, ids: dict[str, bytes]) -> list[tuple[bytes, bytes]]:
        """The JPEG2000PictureSubDescriptor, then the ST 429-10 StereoscopicPictureSubDescriptor."""
        ids["stereo"] = uuid.uuid4().bytes
        return super()._subdescriptors(ids) + [
            (ids["stereo"], local_set(STEREOSCOPIC_SUBDESCRIPTOR, [(0x3C0A, ids["stereo"])]))]


def write_track(path, codestreams, *, edit_rate, asset_id: uuid.UUID | None = None,
                encryption: EssenceEncryption | None = None) -> TrackFile:
    """Write an iterable of codestreams as one picture track file (``encryption``: its
    essence encrypted, ST 429-6)."""
    with PictureTrackWriter(path, edit_rate=edit_rate, asset_id=asset_id, encryption=encryption) as w:
        for cs in codestreams:
            w.write(cs)
        return w.close()

