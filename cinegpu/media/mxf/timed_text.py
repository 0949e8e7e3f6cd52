"""Reading SMPTE DCP timed-text track files (ST 429-5): the ST 428-7 document and its fonts and
images, out of an OP-Atom MXF.

The file is opened by :class:`.mxf.MXFFile` (partitions through the random index pack, header
metadata, index). The document is the one essence element of the index's body SID (the timed
text essence key ``060e2b34.01020101.0d010301.17010b01``, frame wrapped). Each
TimedTextResourceSubDescriptor names a resource (AncillaryResourceID, a UUID), its MIME type and
its EssenceStreamID; the resource's bytes are the one generic stream data element of the
generic stream partition (ST 410) whose BodySID is that stream id. Nothing else of the file is
read. Encrypted elements (ST 429-6 triplets) are decrypted with the track's content key; without
one an encrypted file raises :class:`~.errors.EncryptedMedia`.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from fractions import Fraction

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, MediaError
from cinegpu.media.security.essence_crypto import ENCRYPTED_TRIPLET, decrypt_triplet
from cinegpu.media.mxf.klv import key_matches
from cinegpu.media.mxf.read import MXFFile, MetadataSet, _rational, _uint
from cinegpu.media.mxf.timed_text_write import GS_DATA_ELEMENT, TT_ELEMENT, TT_PRIMER

__all__ = ["TimedTextFile", "read_timed_text", "MAX_DOCUMENT_BYTES", "MAX_RESOURCE_BYTES"]

#: Largest document and resource read, bytes (asdcplib reads documents of up to 2 MiB).
MAX_DOCUMENT_BYTES = 8 << 20
MAX_RESOURCE_BYTES = 64 << 20
_UL = {name: bytes.fromhex(TT_PRIMER[tag]) for name, tag in (
    ("ResourceID", 0xFFFE), ("UCSEncoding", 0xFFFD), ("NamespaceURI", 0xFFFC),
    ("RFC5646LanguageTagList", 0xFFFB), ("AncillaryResourceID", 0xFFFA), ("MIMEMediaType", 0xFFF9))}
_ESSENCE_STREAM_ID = bytes.fromhex("060e2b34010101040103040400000000")


@dataclass
class TimedTextFile:
    """What an ST 429-5 track file holds: the document's bytes, its resources by UUID (lower-case
    text, no ``urn:uuid:``) as (MIME type, bytes), and what the descriptor says."""

    path: str
    document: bytes
    resources: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    resource_id: str = ""
    namespace: str = ""
    language: str = ""
    edit_rate: Fraction | None = None
    duration: int | None = None


def _item(s: MetadataSet, name: str) -> bytes | None:
    """A dynamic item of the set by its UL (version byte ignored)."""
    ul = _UL[name]
    for k, v in s.items.items():
        if isinstance(k, bytes) and len(k) == 16 and key_matches(k, ul):
            return v
    return None


def _text(raw: bytes | None) -> str:
    if not raw:
        return ""
    try:
        return raw.decode("utf-16-be").rstrip("\x00")
    except UnicodeDecodeError:
        return ""


def read_timed_text(path, key: bytes | None = None) -> TimedTextFile:
    """The document and resources of the timed-text track file ``path``; MediaError when it is
    not one, is encrypted without a ``key`` (its ST 429-6 content key), or a resource the
    descriptor names is missing or damaged.  With ``key``, encrypted elements (the document, and
    resources where they are encrypted too, as asdcplib writes them) are decrypted and their MIC
    checked."""
    with MXFFile(path, key=key) as m:
        try:
            return _read(m)
        except (struct.error, ValueError, IndexError) as exc:
            raise CorruptMedia(m.path, f"malformed timed-text track file: {exc}") from None


def _read(m: MXFFile) -> TimedTextFile:
    if m.encrypted and m.key is None:
        raise EncryptedMedia(m.path, "timed text is encrypted (SMPTE ST 429-6); a KDM (or a key file) "
                                     "is needed")
    descs = m.sets_named("TimedTextDescriptor")
    if not descs:
        raise MediaError(m.path, "no TimedTextDescriptor: not a timed-text track file (ST 429-5)")
    d = descs[-1]
    rid = _item(d, "ResourceID")
    out = TimedTextFile(m.path, _element(m, m.body_sid or 1, TT_ELEMENT, MAX_DOCUMENT_BYTES, "document"),
                        resource_id=str(uuid.UUID(bytes=rid)) if rid and len(rid) == 16 else "",
                        namespace=_text(_item(d, "NamespaceURI")),
                        language=_text(_item(d, "RFC5646LanguageTagList")),
                        edit_rate=_rational(d.items.get(0x3001, b"")),
                        duration=_uint(d.items.get(0x3002, b"")))
    for sub in m.sets_named("TimedTextResourceSubDescriptor"):
        aid = _item(sub, "AncillaryResourceID")
        sid = sub.items.get(0x3F07)
        if sid is None:
            sid = next((v for k, v in sub.items.items() if isinstance(k, bytes)
                        and key_matches(k, _ESSENCE_STREAM_ID)), None)
        if aid is None or len(aid) != 16 or sid is None or _uint(sid) is None:
            raise CorruptMedia(m.path, "a TimedTextResourceSubDescriptor without its "
                                       "AncillaryResourceID or EssenceStreamID", sub.offset)
        rid_text = str(uuid.UUID(bytes=aid))
        data = _element(m, _uint(sid), GS_DATA_ELEMENT, MAX_RESOURCE_BYTES, f"resource {rid_text}")
        out.resources[rid_text] = (_text(_item(sub, "MIMEMediaType")), data)
    return out


def _element(m: MXFFile, sid: int, key: bytes, limit: int, what: str) -> bytes:
    """The value of the first essence element of body SID ``sid``, which must have ``key``."""
    parts = [p for p in m.partitions if p.body_sid == sid and p.essence_start is not None]
    if not parts:
        raise CorruptMedia(m.path, f"the {what} is missing: no partition with body SID {sid}")
    r = m.reader
    klv = r.klv_at(parts[0].essence_start, parts[0].end)
    encrypted = key_matches(klv.key, ENCRYPTED_TRIPLET)
    if klv.length > limit + (1 << 10 if encrypted else 0):      # a triplet adds < 1 KiB
        raise CorruptMedia(m.path, f"the {what} is {klv.length} bytes, more than the {limit} read",
                           klv.offset)
    if encrypted:
        if m.key is None:
            raise EncryptedMedia(m.path, f"the {what} is encrypted (SMPTE ST 429-6)", klv.offset)
        element, data = decrypt_triplet(r.value(klv, limit + (1 << 10)), m.key, path=m.path,
                                        where=f"the {what}: ")
    else:
        element, data = klv.key, None
    if not key_matches(element, key[:12]) or element[12:] != key[12:]:
        raise CorruptMedia(m.path, f"the {what} is not a {key.hex('.', 4)} element", klv.offset)
    return data if data is not None else r.value(klv, limit)
