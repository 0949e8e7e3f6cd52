"""Key Delivery Messages: SMPTE ST 430-1 KDMs in the ST 430-3 Extra-Theater Message (ETM).

What a screening needs before it can decrypt a track file (ST 429-6):

- :func:`read_kdm` / :func:`parse_kdm`: the message's public part (ST 430-1 clause 6: the
  composition, the validity window, the recipient, the key ids and their types), its
  encrypted keys and the signer's certificates;
- :func:`check_signature`: the XML signature (ST 430-3 clause 5.3, W3C XML-DSig): each
  reference's digest over the canonical form of ``AuthenticatedPublic`` and
  ``AuthenticatedPrivate``, then ``SignatureValue`` over ``SignedInfo`` with the signer's key;
- :func:`check_chain`: the signer's certificate chain under ST 430-2 (clause 5): each
  certificate signed by the next, up to a self-signed root, issuers marked as CAs, the leaf
  not, every certificate valid at the time asked;
- :func:`decrypt_keys`: each ``CipherValue`` decrypted with the recipient's RSA private key
  (RSA-OAEP, SHA-1, MGF1: ST 430-1 clause 6.2), its 138-byte plaintext parsed (structure id,
  signer thumbprint, CPL id, key type, key id, validity window, AES-128 key) and checked
  against the message's public part;
- :func:`check_window`: the composition and the time against the message.

Cryptography through ``cryptography``; the XML through lxml, canonicalised by :mod:`.xml_c14n`;
the certificate chain by :mod:`.certificates`.
A key's bytes are in :class:`ContentKey` only: its ``repr`` leaves them out, and no error
message, log line or report here names them.  Errors: :class:`~.errors.CorruptMedia` for a
message that breaks the format (malformed XML, bad base64, a plaintext of the wrong shape),
:class:`~.errors.KdmRefused` for one that does not unlock (a broken signature or chain, a
private key of another recipient, another composition, outside its window).
"""

from __future__ import annotations

import base64
import binascii
import os
import uuid
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from lxml import etree

from cinegpu.media.errors import CorruptMedia, KdmRefused, MediaError, UnsupportedMedia
from cinegpu.media.files import read_bounded
from cinegpu.media.security.certificates import ChainReport, certificate_thumbprint, check_certificates, dn_string
from cinegpu.media.security.key_files import read_private_file
from cinegpu.media.security.xml_c14n import canonical_xml
from cinegpu.media.security.xml_signature import (
    DIGESTS,
    NS_DS,
    check_signature_value,
    digest_value,
)

__all__ = ["ContentKey", "Kdm", "TypedKeyId", "check_chain", "check_signature", "check_window",
           "decrypt_keys", "load_private_key", "parse_kdm", "read_kdm"]

NS_ETM = "http://www.smpte-ra.org/schemas/430-3/2006/ETM"
NS_KDM = "http://www.smpte-ra.org/schemas/430-1/2006/KDM"
NS_ENC = "http://www.w3.org/2001/04/xmlenc#"
#: a KDM is a few tens of KB (one EncryptedKey per content key); more is not one
MAX_KDM_BYTES = 1 << 20
#: the most bytes of a PEM private key read (an RSA 4096 key is about 3.3 KB)
MAX_PRIVATE_KEY_BYTES = 64 << 10
#: ST 430-1 clause 6.2: the first 16 bytes of every decrypted key block
KEY_STRUCTURE_ID = bytes.fromhex("f1dc124460169a0e85bc300642f866ab")
KEY_BLOCK_BYTES = 138


@dataclass(frozen=True)
class TypedKeyId:
    """One ``TypedKeyId`` of the ``KeyIdList``: the key's type (MDIK picture, MDAK sound,
    MDSK subtitles, FMIK/FMAK forensic marking, ...) and its id (a lower-case UUID)."""

    key_type: str
    key_id: str


@dataclass(frozen=True)
class Kdm:
    """A parsed KDM: its public fields (times as aware datetimes), its encrypted keys and
    the X.509 certificates of its ``KeyInfo`` (document order), with the document itself
    (``root``, an lxml element) for :func:`check_signature`."""

    path: str | None
    message_id: str
    annotation: str | None
    issue_date: str | None
    cpl_id: str
    content_title: str | None
    not_before: datetime
    not_after: datetime
    recipient_subject: str | None
    recipient_issuer: str | None
    recipient_serial: str | None
    device_thumbprints: tuple[str, ...]
    key_ids: tuple[TypedKeyId, ...]
    forensic_flags: tuple[str, ...]
    cipher_values: tuple[bytes, ...]
    certificates: tuple = ()
    root: object = field(default=None, repr=False, compare=False)
    #: ST 430-1 ``ContentAuthenticator`` (base64 certificate thumbprint; DCI formulations)
    content_authenticator: str | None = None


@dataclass(frozen=True)
class ContentKey:
    """A decrypted content key (ST 430-1 clause 6.2); ``repr`` leaves the key out."""

    key_type: str
    key_id: str
    cpl_id: str
    not_before: datetime
    not_after: datetime
    signer_thumbprint: bytes
    key: bytes = field(repr=False)


def read_kdm(path) -> Kdm:
    """:func:`parse_kdm` of the file at ``path``."""
    return parse_kdm(read_bounded(path, MAX_KDM_BYTES, "KDM"), path)


def parse_kdm(data: bytes, path=None) -> Kdm:
    """The KDM in ``data`` (ST 430-3 ETM with the ST 430-1 required extensions)."""

    if len(data) > MAX_KDM_BYTES:
        raise UnsupportedMedia(path, f"{len(data)} bytes is not a KDM (at most {MAX_KDM_BYTES >> 20} MiB)")
    # comments and whitespace kept: the signature covers the canonical form with them
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False,
                             remove_comments=False, remove_blank_text=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line, col = exc.position if exc.position else (None, None)
        raise CorruptMedia(path, f"malformed XML (line {line}, column {col}): {exc.msg}") from None
    if root.tag != f"{{{NS_ETM}}}DCinemaSecurityMessage":
        raise UnsupportedMedia(path, f"not a KDM: the root element is {_local(root.tag)!r}, not "
                                     f"DCinemaSecurityMessage (ST 430-3)")
    public = _one(root, f"{{{NS_ETM}}}AuthenticatedPublic", path)
    ext = _one(public, f"{{{NS_ETM}}}RequiredExtensions/{{{NS_KDM}}}KDMRequiredExtensions", path)
    recipient = ext.find(f"{{{NS_KDM}}}Recipient")
    key_ids = tuple(TypedKeyId(_text(t, f"{{{NS_KDM}}}KeyType", path), _urn_uuid(_text(t, f"{{{NS_KDM}}}KeyId", path), path))
                    for t in ext.iterfind(f"{{{NS_KDM}}}KeyIdList/{{{NS_KDM}}}TypedKeyId"))
    if not key_ids:
        raise CorruptMedia(path, "the KDM's KeyIdList names no key")
    private = _one(root, f"{{{NS_ETM}}}AuthenticatedPrivate", path)
    ciphers = tuple(_base64(c.text, path, "CipherValue")
                    for c in private.iterfind(f"{{{NS_ENC}}}EncryptedKey/{{{NS_ENC}}}CipherData/{{{NS_ENC}}}CipherValue"))
    certificates = tuple(_certificate(c.text, path)
                         for c in root.iterfind(f"{{{NS_DS}}}Signature/{{{NS_DS}}}KeyInfo/{{{NS_DS}}}X509Data/{{{NS_DS}}}X509Certificate"))
    return Kdm(
        path=None if path is None else os.fspath(path),
        message_id=_text(public, f"{{{NS_ETM}}}MessageId", path),
        annotation=_opt(public, f"{{{NS_ETM}}}AnnotationText"),
        issue_date=_opt(public, f"{{{NS_ETM}}}IssueDate"),
        cpl_id=_urn_uuid(_text(ext, f"{{{NS_KDM}}}CompositionPlaylistId", path), path),
        content_title=_opt(ext, f"{{{NS_KDM}}}ContentTitleText"),
        not_before=_time(_text(ext, f"{{{NS_KDM}}}ContentKeysNotValidBefore", path), path),
        not_after=_time(_text(ext, f"{{{NS_KDM}}}ContentKeysNotValidAfter", path), path),
        recipient_subject=None if recipient is None else _opt(recipient, f"{{{NS_KDM}}}X509SubjectName"),
        recipient_issuer=None if recipient is None else _opt(recipient, f"{{{NS_KDM}}}X509IssuerSerial/{{{NS_DS}}}X509IssuerName"),
        recipient_serial=None if recipient is None else _opt(recipient, f"{{{NS_KDM}}}X509IssuerSerial/{{{NS_DS}}}X509SerialNumber"),
        device_thumbprints=tuple((t.text or "").strip() for t in ext.iterfind(
            f"{{{NS_KDM}}}AuthorizedDeviceInfo/{{{NS_KDM}}}DeviceList/{{{NS_KDM}}}CertificateThumbprint")),
        key_ids=key_ids,
        forensic_flags=tuple((f.text or "").strip() for f in ext.iterfind(
            f"{{{NS_KDM}}}ForensicMarkFlagList/{{{NS_KDM}}}ForensicMarkFlag")),
        cipher_values=ciphers,
        certificates=certificates,
        root=root,
        content_authenticator=_opt(ext, f"{{{NS_KDM}}}ContentAuthenticator"),
    )


def check_signature(kdm: Kdm) -> str:
    """Check the KDM's XML signature: every ``Reference``'s digest, then ``SignatureValue``
    over the canonical ``SignedInfo`` with the public key of the signer's certificate (the
    one ``Signer`` names by issuer and serial number; :func:`.xml_signature.check_signature_value`).
    Returns a one-line description (algorithm, references); :class:`~.errors.KdmRefused`
    names what does not hold."""
    root, path = kdm.root, kdm.path
    sig = root.find(f"{{{NS_DS}}}Signature")
    if sig is None:
        raise KdmRefused(path, "the KDM is not signed (no ds:Signature)")
    info = _one(sig, f"{{{NS_DS}}}SignedInfo", path)
    ids = {el.get("Id"): el for el in root.iter() if isinstance(el.tag, str) and el.get("Id")}
    covered = []
    for ref in info.iterfind(f"{{{NS_DS}}}Reference"):
        uri = ref.get("URI") or ""
        target = ids.get(uri[1:]) if uri.startswith("#") else None
        if target is None:
            raise KdmRefused(path, f"the signature's reference {uri!r} names no element of the KDM")
        if ref.find(f"{{{NS_DS}}}Transforms") is not None:
            raise KdmRefused(path, f"the reference {uri!r} has transforms, which a KDM's do not")
        algorithm = _one(ref, f"{{{NS_DS}}}DigestMethod", path).get("Algorithm")
        if algorithm not in DIGESTS:
            raise KdmRefused(path, f"digest method {algorithm!r} is not SHA-256 or SHA-1")
        want = "".join(_text(ref, f"{{{NS_DS}}}DigestValue", path).split())
        # a same-document reference without transforms: inclusive C14N without comments
        if digest_value(canonical_xml(target), algorithm) != want:
            raise KdmRefused(path, f"the signature does not cover {_local(target.tag)} as it is now "
                                   f"(its digest differs): the KDM was changed after it was signed")
        covered.append(_local(target.tag))
    for part in ("AuthenticatedPublic", "AuthenticatedPrivate"):
        if part not in covered:
            raise KdmRefused(path, f"the signature does not cover {part}")
    signer = _signer_certificate(kdm)
    name = check_signature_value(sig, signer, path, KdmRefused)
    return f"{name} by {_subject(signer)}, {len(covered)} references ({', '.join(covered)})"


def check_chain(kdm: Kdm, at: datetime | None = None) -> ChainReport:
    """The signer's certificate chain under ST 430-2 clause 5, at ``at`` (default: now):
    from the signer's certificate, each one's issuer among the KDM's certificates and its
    signature checked with the issuer's key, up to a self-signed root; issuers must say
    basicConstraints CA, the signer must not; each must be valid at ``at``.  The chain is
    reported, not raised: a diagnostic tool shows an expired chain and goes on."""
    at = at or datetime.now(timezone.utc)
    return check_certificates(_signer_certificate(kdm), kdm.certificates, at, "the KDM's certificates")


def load_private_key(path):
    """The RSA private key in the PEM file at ``path`` (unencrypted).  Its bytes are read
    here and go nowhere else.  A key others may read or replace is refused
    (:func:`.key_files.read_private_file`: :class:`~.errors.ExposedKey`, with the fix)."""

    data = read_private_file(path, MAX_PRIVATE_KEY_BYTES)
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise MediaError(path, "not an unencrypted PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise MediaError(path, "not an RSA private key (a KDM's keys are RSA-OAEP)")
    return key


def decrypt_keys(kdm: Kdm, private_key) -> list[ContentKey]:
    """Every content key of the KDM, decrypted with the recipient's ``private_key`` (a
    :func:`load_private_key` result) by RSA-OAEP (SHA-1, MGF1), each block checked: its
    structure id, the KDM's composition, its key id and type in the ``KeyIdList``, and its
    signer thumbprint (SHA-1 of the signer certificate's signed part, ST 430-2)."""

    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
    listed = {t.key_id: t.key_type for t in kdm.key_ids}
    signer = certificate_thumbprint(_signer_certificate(kdm))
    keys = []
    for k, cipher in enumerate(kdm.cipher_values):
        try:
            block = private_key.decrypt(cipher, oaep)
        except ValueError:
            who = f" (it is for {kdm.recipient_subject})" if kdm.recipient_subject else ""
            raise KdmRefused(kdm.path, f"the private key does not open the KDM's key {k + 1}: it is not "
                                       f"the recipient's key{who}") from None
        if len(block) != KEY_BLOCK_BYTES or block[:16] != KEY_STRUCTURE_ID:
            raise CorruptMedia(kdm.path, f"key {k + 1} decrypts to a block that is not an ST 430-1 key "
                                         f"block ({len(block)} bytes, structure id not f1dc1244...)")
        cpl_id = str(uuid.UUID(bytes=block[36:52]))
        key_type = block[52:56].decode("ascii", "replace")
        key_id = str(uuid.UUID(bytes=block[56:72]))
        if cpl_id != kdm.cpl_id:
            raise CorruptMedia(kdm.path, f"key {k + 1} is for composition {cpl_id}, the KDM for {kdm.cpl_id}")
        if listed.get(key_id) != key_type:
            raise CorruptMedia(kdm.path, f"key {k + 1} ({key_type} {key_id}) is not in the KDM's KeyIdList")
        if block[16:36] != signer:      # ST 430-2 thumbprint: SHA-1 of the signed part
            raise KdmRefused(kdm.path, f"key {k + 1} was made by another signer than the one the KDM "
                                       f"names ({_subject(_signer_certificate(kdm))})")
        keys.append(ContentKey(key_type, key_id, cpl_id,
                               _time(block[72:97].decode("ascii", "replace"), kdm.path),
                               _time(block[97:122].decode("ascii", "replace"), kdm.path),
                               block[16:36], block[122:138]))
    return keys


def check_window(kdm: Kdm, cpl_id: str | None = None, at: datetime | None = None) -> None:
    """Refuse the KDM for composition ``cpl_id`` (a UUID, with or without ``urn:uuid:``) at
    ``at`` (default: now): another composition, or a time outside its window."""
    at = at or datetime.now(timezone.utc)
    if cpl_id is not None and _urn_uuid(cpl_id, kdm.path) != kdm.cpl_id:
        raise KdmRefused(kdm.path, f"the KDM is for composition {kdm.cpl_id}, not {_urn_uuid(cpl_id, kdm.path)}")
    if at < kdm.not_before:
        raise KdmRefused(kdm.path, f"the KDM's keys are valid from {kdm.not_before.isoformat()}, not yet at "
                                   f"{at.isoformat(timespec='seconds')}")
    if at > kdm.not_after:
        raise KdmRefused(kdm.path, f"the KDM expired at {kdm.not_after.isoformat()} "
                                   f"(it is {at.isoformat(timespec='seconds')})")


# -- helpers -----------------------------------------------------------------------------------
def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else str(tag)


def _one(el, name: str, path):
    found = el.find(name)
    if found is None:
        raise CorruptMedia(path, f"the KDM has no {'/'.join(_local(p) for p in name.split('/'))} "
                                 f"in {_local(el.tag)} (line {el.sourceline})")
    return found


def _text(el, name: str, path) -> str:
    found = _one(el, name, path)
    t = (found.text or "").strip()
    if not t:
        raise CorruptMedia(path, f"the KDM's {_local(found.tag)} is empty (line {found.sourceline})")
    return t


def _opt(el, name: str) -> str | None:
    found = el.find(name)
    return (found.text or "").strip() or None if found is not None else None


def _base64(text: str | None, path, what: str) -> bytes:
    try:
        return base64.b64decode("".join((text or "").split()), validate=True)
    except (binascii.Error, ValueError):
        raise CorruptMedia(path, f"the KDM's {what} is not base64") from None


def _urn_uuid(text: str, path) -> str:
    t = text.strip()
    body = t[9:] if t.lower().startswith("urn:uuid:") else t
    try:
        return str(uuid.UUID(body))
    except ValueError:
        raise CorruptMedia(path, f"{t[:60]!r} is not a UUID") from None


def _time(text: str, path) -> datetime:
    """An xs:dateTime with its offset (ST 430-1 writes one; a bare time is UTC)."""
    t = text.strip()
    try:
        d = datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith("Z") else t)
    except ValueError:
        raise CorruptMedia(path, f"{t[:40]!r} is not a date and time") from None
    return d if d.tzinfo is not None else d.replace(tzinfo=timezone.utc)


def _certificate(text: str | None, path):
    der = _base64(text, path, "X509Certificate")
    try:
        with warnings.catch_warnings():     # serial number 0 and the like: reported by check_chain
            warnings.simplefilter("ignore")
            return x509.load_der_x509_certificate(der)
    except ValueError:
        raise CorruptMedia(path, "an X509Certificate of the KDM is not a DER certificate") from None


def _subject(cert) -> str:
    return dn_string(cert.subject)


def _signer_certificate(kdm: Kdm):
    """The certificate ``Signer`` names (issuer and serial), else the first of ``KeyInfo``."""
    root = kdm.root
    serial = _opt(root, f"{{{NS_ETM}}}AuthenticatedPublic/{{{NS_ETM}}}Signer/{{{NS_DS}}}X509SerialNumber")
    if not kdm.certificates:
        raise KdmRefused(kdm.path, "the KDM carries no certificate to check its signature with")
    if serial is not None and serial.isdigit():
        for c in kdm.certificates:
            if c.serial_number == int(serial):
                return c
    return kdm.certificates[0]
