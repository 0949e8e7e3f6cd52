"""Making KDMs: SMPTE ST 430-1 Key Delivery Messages in the ST 430-3 Extra-Theater Message.

:func:`make_kdm` writes and signs one message for one recipient:

- ``AuthenticatedPublic`` (ST 430-3 clause 5.2): message id and type, annotation, issue date,
  the ``Signer`` (the signing certificate's issuer and serial number) and, as required
  extensions, ST 430-1 clause 5's ``KDMRequiredExtensions``: the ``Recipient`` (issuer, serial
  and subject of its certificate), the composition, its title, the validity window, the
  ``AuthorizedDeviceInfo`` (what the formulation asks: see below), the ``KeyIdList`` and,
  when asked, the ``ForensicMarkFlagList``;
- ``AuthenticatedPrivate``: one ``xenc:EncryptedKey`` per content key, RSA-OAEP (MGF1, SHA-1)
  with the recipient's public key of the 138-byte block of ST 430-1 clause 6.2 (structure id,
  signer thumbprint, composition, key type, key id, window as two 25-character times, AES key);
- ``ds:Signature`` (ST 430-3 clause 5.3, W3C XML-DSig): two references, ``#ID_AuthenticatedPublic``
  and ``#ID_AuthenticatedPrivate``, digested with SHA-256 over their Canonical XML; ``SignedInfo``
  canonicalised by C14N 1.0 with comments and signed RSA-SHA256 (PKCS #1 v1.5) with the
  signer's key; ``KeyInfo`` one ``X509Data`` (issuer and serial, certificate) per certificate
  from the signer to the root (:mod:`.xml_signature`, shared with the CPL and PKL signatures).

The formulations (:data:`FORMULATIONS`) are DCP-o-matic's, written as libdcp's
``EncryptedKDM`` constructor writes them (libdcp ``src/encrypted_kdm.cc``, after ISDCF Doc 5,
isdcf.com/papers/ISDCF-Doc5-kdm-certs.pdf): what the ``DeviceList`` of ``AuthorizedDeviceInfo``
lists (ST 430-1 clause 5: the devices the recipient may pass keys to), and whether
``ContentAuthenticator`` (ST 430-1: base64 of the ST 430-2 certificate thumbprint of the
content signer's leaf, here the KDM signer's, as libdcp writes it) is present:

- ``modified-transitional-1``: the "assume trust" thumbprint (base64 of SHA-1 of nothing);
  no ContentAuthenticator;
- ``multiple-modified-transitional-1``: the trusted devices' thumbprints (none given: the
  "assume trust" one); no ContentAuthenticator;
- ``dci-any``: the "assume trust" thumbprint; a ContentAuthenticator;
- ``dci-specific``: the trusted devices' thumbprints (none given: "assume trust"); a
  ContentAuthenticator.

libdcp lists the trusted devices without the recipient's own thumbprint for the "specific"
formulations (its note: a reading of the standard would add the recipient's, but a working KDM
of a real installation does not, nor does another maker's); so does cinegpu.

Elements in the order of the ST 430-3 and ST 430-1 schemas. The canonical form is
:func:`.xml_c14n.canonical_xml`, the one :func:`.kdm.check_signature` checks with, and every
message is read back and checked (:func:`.kdm.parse_kdm`, ``check_signature``, ``check_chain``)
before it is returned. Key bytes appear in no error, log or ``repr``.
:func:`composition_keys` matches a CPL's encrypted assets to a key file's keys;
:func:`parse_time` reads the times a user gives.
"""

from __future__ import annotations

import base64
import re
import uuid
from datetime import datetime, timedelta, timezone

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID
from lxml import etree

from cinegpu.media.errors import KdmRefused
from cinegpu.media.security.certificates import certificate_thumbprint, check_certificates, dn_string
from cinegpu.media.security.content_keys import KEY_TYPES
from cinegpu.media.security.kdm import (
    KEY_BLOCK_BYTES,
    KEY_STRUCTURE_ID,
    NS_DS,
    NS_ENC,
    NS_ETM,
    NS_KDM,
    check_chain,
    check_signature,
    parse_kdm,
)
from cinegpu.media.security.xml_c14n import canonical_xml
from cinegpu.media.security.xml_signature import (
    C14N_WITH_COMMENTS,
    RSA_SHA256,
    SHA1,
    SHA256,
    add_signature,
    base64_lines,
    digest_value,
    issuer_serial,
    sign_info,
)

__all__ = ["ASSUME_TRUST", "FORENSIC_FLAGS", "FORMULATIONS", "composition_keys", "device_thumbprint",
           "make_kdm", "parse_time"]

MESSAGE_TYPE = "http://www.smpte-ra.org/430-1/2006/KDM#kdm-key-type"
KEY_TYPE_SCOPE = "http://www.smpte-ra.org/430-1/2006/KDM#kdm-key-type"
#: the "assume trust" device thumbprint: base64 of SHA-1 of nothing
ASSUME_TRUST = "2jmj7l5rSw0yVb/vlWAYkK/YBwk="
#: DCP-o-matic's KDM formulations (libdcp's ``Formulation``): whether the DeviceList names the
#: trusted devices ("specific", "multiple") and whether ContentAuthenticator is written ("dci")
FORMULATIONS = {"modified-transitional-1": (False, False), "multiple-modified-transitional-1": (True, False),
                "dci-any": (False, True), "dci-specific": (True, True)}
#: an ST 430-2 certificate thumbprint as a DeviceList writes it: base64 of 20 bytes
_THUMBPRINT = re.compile(r"[A-Za-z0-9+/]{27}=")
#: ST 430-1's forensic marking flags, by what they switch off
FORENSIC_FLAGS = {"picture": "http://www.smpte-ra.org/430-1/2006/KDM#mrkflg-picture-disable",
                  "audio": "http://www.smpte-ra.org/430-1/2006/KDM#mrkflg-audio-disable"}
#: key types a KDM made here may carry (ST 430-1: content keys, forensic marking keys)
ALLOWED_KEY_TYPES = frozenset(KEY_TYPES.values()) | {"FMIK", "FMAK"}
RSA_OAEP = "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"
AES_KEY_BYTES = 16
#: ST 430-1 clause 6.2 writes each time of the key block as 25 characters: 2026-01-01T00:00:00+00:00
TIME_CHARS = 25


def make_kdm(*, cpl_id: str, content_title: str, keys, recipient, signer_key, signer_chain,
             not_before: datetime, not_after: datetime, annotation: str | None = None,
             issue_date: datetime | None = None, message_id: str | None = None,
             trusted_devices=(), forensic_flags=(), formulation: str | None = None, path=None) -> bytes:
    """A signed KDM (the XML document's bytes, UTF-8) giving ``keys`` (``TrackKey``-like: key
    type, key id, 16-byte key) of composition ``cpl_id`` to the holder of ``recipient``'s
    private key (an X.509 certificate), from ``not_before`` to ``not_after`` (datetimes, kept
    to the second in their own offset; naive ones are UTC).  ``signer_chain`` is the signer's
    certificates leaf first up to the root (:func:`.certificates.order_chain`), ``signer_key``
    the leaf's RSA private key.  ``trusted_devices``: certificates, or their ST 430-2
    thumbprints (base64, 28 characters), for the ``DeviceList``; ``formulation``: one of
    :data:`FORMULATIONS` (None: multiple-modified-transitional-1 when trusted devices are
    given, else modified-transitional-1, which write the same when none are); the
    formulations without a device list refuse trusted devices.  ``forensic_flags``: keys of
    :data:`FORENSIC_FLAGS` or the flags' URIs.  ``path`` names the KDM being made in errors.
    :class:`~.errors.KdmRefused` says what does not hold: a window that ends before it starts
    or lies outside the recipient's or the signer's certificates, a key that does not match
    the signer's certificate, a broken chain, a malformed key."""

    now = datetime.now(timezone.utc).replace(microsecond=0)
    not_before, not_after = _second(not_before), _second(not_after)
    chain = tuple(signer_chain)
    if not chain:
        raise KdmRefused(path, "no signer certificate")
    leaf = chain[0]
    _check_window(not_before, not_after, recipient, chain, path)
    _check_signer(signer_key, chain, now, path)
    public = recipient.public_key()
    if not isinstance(public, rsa.RSAPublicKey):
        raise KdmRefused(path, f"the recipient's certificate ({dn_string(recipient.subject)}) holds no RSA key")
    keys = tuple(keys)
    _check_keys(keys, path)
    cpl = _uuid(cpl_id, path, "the composition id")
    devices, authenticator = _devices(formulation, tuple(trusted_devices), leaf, path)
    root = _document(cpl, content_title, keys, recipient, chain, not_before, not_after,
                     annotation if annotation is not None else content_title,
                     _second(issue_date or now), message_id or str(uuid.uuid4()),
                     devices, tuple(FORENSIC_FLAGS.get(f, f) for f in forensic_flags), authenticator)
    blocks = [_key_block(certificate_thumbprint(leaf), cpl, k, not_before, not_after) for k in keys]
    _encrypt(root, blocks, public)
    _sign(root, signer_key, chain)
    data = b'<?xml version="1.0" encoding="UTF-8"?>\n' + etree.tostring(root, encoding="UTF-8") + b"\n"
    _read_back(data, cpl, keys, now, path)
    return data


def composition_keys(composition, key_file, key_file_path=None) -> list:
    """The key file's keys (:class:`.content_keys.KeyFile`) for every encrypted asset of
    ``composition`` (:func:`.package.read_cpl`), in the CPL's order, each key id once; each
    asset's key type by its kind (:data:`.content_keys.KEY_TYPES`).  :class:`~.errors.KdmRefused`
    for a key file of another composition, a key id it lacks, a key of another type, a
    composition with nothing encrypted or an encrypted asset of a kind without a key type."""
    where = key_file_path
    if composition.flavour == "imf":
        raise KdmRefused(composition.path, "an IMF composition: ST 430-1 KDMs are for DCPs")
    if key_file.cpl_id is not None and key_file.cpl_id != composition.id:
        raise KdmRefused(where, f"the key file is for composition {key_file.cpl_id}, not {composition.id} "
                                f"({composition.path})")
    have = key_file.by_id()
    keys, seen = [], set()
    for reel in composition.reels:
        for asset in reel.assets:
            if not asset.key_id or asset.key_id in seen:
                continue
            seen.add(asset.key_id)
            want = KEY_TYPES.get(asset.kind)
            if want is None:
                raise KdmRefused(composition.path, f"the {asset.kind} asset {asset.id} is encrypted, and "
                                                   f"cinegpu knows no ST 430-1 key type for a {asset.kind}")
            key = have.get(asset.key_id)
            if key is None:
                raise KdmRefused(where, f"the key file has no key {asset.key_id} (the {asset.kind} "
                                        f"asset {asset.id} of {composition.path})")
            if key.key_type != want:
                raise KdmRefused(where, f"the key file says {key.key_type} for key {asset.key_id}, which "
                                        f"encrypts a {asset.kind} asset ({want})")
            keys.append(key)
    if not keys:
        raise KdmRefused(composition.path, "the composition has no encrypted asset (no KeyId): a KDM "
                                           "would deliver nothing")
    return keys


_RELATIVE = re.compile(r"([+-])(\d{1,6})([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_time(text: str, now: datetime) -> datetime:
    """A time a user gives: ``now``; ``now`` plus or minus an amount (``+7d``, ``-2h``; units
    s, m, h, d, w); or ISO 8601 (``2026-12-01T20:00:00+01:00``, ``2026-12-01``), UTC when it
    names no offset.  Returns an aware datetime to the second; ``ValueError`` otherwise."""
    t = text.strip()
    if t.lower() == "now":
        return _second(now)
    m = _RELATIVE.fullmatch(t)
    if m:
        delta = timedelta(**{_UNITS[m.group(3)]: int(m.group(2))})
        return _second(now + delta if m.group(1) == "+" else now - delta)
    try:
        d = datetime.fromisoformat(t)
    except ValueError:
        raise ValueError(f"{t!r} is not a time: want ISO 8601 (2026-12-01T20:00:00+01:00; no offset "
                         f"means UTC), 'now', or now plus or minus an amount ('+7d', '-2h')") from None
    return _second(d)


def device_thumbprint(device, path=None) -> str:
    """A ``DeviceList`` entry: the ST 430-2 certificate thumbprint (base64 of the SHA-1 of the
    signed part, 28 characters) of ``device``, a certificate, or ``device`` itself when it is
    such a thumbprint already (a string); :class:`~.errors.KdmRefused` for any other string."""
    if isinstance(device, str):
        text = device.strip()
        if not _THUMBPRINT.fullmatch(text):
            raise KdmRefused(path, f"trusted device {text[:60]!r} is not a certificate thumbprint (base64 of "
                                   f"20 bytes, 28 characters ending in '=')")
        return text
    return base64.b64encode(certificate_thumbprint(device)).decode("ascii")


def _devices(formulation, trusted: tuple, leaf, path) -> tuple[tuple[str, ...], str | None]:
    """The ``DeviceList``'s thumbprints and the ``ContentAuthenticator`` (or None) of
    ``formulation`` (:data:`FORMULATIONS`; libdcp's table in the module's docstring)."""
    if formulation is None:
        formulation = "multiple-modified-transitional-1" if trusted else "modified-transitional-1"
    if formulation not in FORMULATIONS:
        raise KdmRefused(path, f"formulation {formulation!r} is none of {', '.join(FORMULATIONS)}")
    specific, dci = FORMULATIONS[formulation]
    if trusted and not specific:
        raise KdmRefused(path, f"a {formulation} KDM lists no trusted device (its DeviceList is the "
                               f"'assume trust' thumbprint): ask for multiple-modified-transitional-1 "
                               f"or dci-specific")
    devices = tuple(dict.fromkeys(device_thumbprint(d, path) for d in trusted)) or (ASSUME_TRUST,)
    authenticator = base64.b64encode(certificate_thumbprint(leaf)).decode("ascii") if dci else None
    return devices, authenticator


# -- checks ------------------------------------------------------------------------------------
def _second(d: datetime) -> datetime:
    """``d`` to the second, aware (naive: UTC), in an offset of whole minutes (ST 430-1 writes
    +HH:MM)."""
    d = (d if d.tzinfo is not None else d.replace(tzinfo=timezone.utc)).replace(microsecond=0)
    offset = d.utcoffset()
    return d if offset.total_seconds() % 60 == 0 else d.astimezone(timezone.utc)


def _check_window(not_before, not_after, recipient, chain, path) -> None:
    if not_after <= not_before:
        raise KdmRefused(path, f"the validity window ends ({_iso(not_after)}) before it starts "
                               f"({_iso(not_before)})")
    for role, cert in [("recipient", recipient)] + [("signer", c) for c in chain]:
        start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
        if not_before < start or not_after > end:
            raise KdmRefused(path, f"the validity window {_iso(not_before)} to {_iso(not_after)} lies outside "
                                   f"the {role}'s certificate {dn_string(cert.subject)}, valid from "
                                   f"{_iso(start)} to {_iso(end)}")


def _check_signer(signer_key, chain, now, path) -> None:
    if not isinstance(signer_key, rsa.RSAPrivateKey):
        raise KdmRefused(path, "the signer's key is not an RSA private key")
    if signer_key.public_key().public_numbers() != chain[0].public_key().public_numbers():
        raise KdmRefused(path, f"the signer's private key is not the key of the chain's leaf "
                               f"({dn_string(chain[0].subject)})")
    report = check_certificates(chain[0], chain, now, "the signer's chain")
    if not report.ok:
        raise KdmRefused(path, f"the signer's chain does not hold (ST 430-2): {'; '.join(report.problems)}")


def _check_keys(keys, path) -> None:
    if not keys:
        raise KdmRefused(path, "no content key to deliver")
    seen = set()
    for k in keys:
        if k.key_type not in ALLOWED_KEY_TYPES:
            raise KdmRefused(path, f"key {k.key_id}: type {k.key_type!r} is none of {sorted(ALLOWED_KEY_TYPES)}")
        if not isinstance(k.key, bytes) or len(k.key) != AES_KEY_BYTES:
            raise KdmRefused(path, f"key {k.key_id} is not {AES_KEY_BYTES} bytes (AES-128)")
        kid = str(_uuid(k.key_id, path, "a key id"))
        if kid in seen:
            raise KdmRefused(path, f"key id {kid} is given twice")
        seen.add(kid)


# -- the document ------------------------------------------------------------------------------
def _document(cpl, title, keys, recipient, chain, not_before, not_after, annotation, issued,
              message_id, thumbprints, flags, authenticator):
    """The message without its encrypted keys and signature values: ST 430-3's
    ``DCinemaSecurityMessage`` with ST 430-1's required extensions."""

    root = etree.Element(_etm("DCinemaSecurityMessage"), nsmap={None: NS_ETM, "ds": NS_DS, "enc": NS_ENC})
    public = _sub(root, _etm("AuthenticatedPublic"), Id="ID_AuthenticatedPublic")
    _sub(public, _etm("MessageId"), f"urn:uuid:{uuid.UUID(message_id.removeprefix('urn:uuid:'))}")
    _sub(public, _etm("MessageType"), MESSAGE_TYPE)
    if annotation:
        _sub(public, _etm("AnnotationText"), annotation)
    _sub(public, _etm("IssueDate"), _iso(issued))
    issuer_serial(_sub(public, _etm("Signer")), chain[0])
    required = _sub(public, _etm("RequiredExtensions"))
    ext = etree.SubElement(required, _kdm("KDMRequiredExtensions"), nsmap={None: NS_KDM})
    who = _sub(ext, _kdm("Recipient"))
    issuer_serial(_sub(who, _kdm("X509IssuerSerial")), recipient)
    _sub(who, _kdm("X509SubjectName"), dn_string(recipient.subject))
    _sub(ext, _kdm("CompositionPlaylistId"), f"urn:uuid:{cpl}")
    _sub(ext, _kdm("ContentTitleText"), title)
    if authenticator is not None:
        _sub(ext, _kdm("ContentAuthenticator"), authenticator)
    _sub(ext, _kdm("ContentKeysNotValidBefore"), _iso(not_before))
    _sub(ext, _kdm("ContentKeysNotValidAfter"), _iso(not_after))
    devices = _sub(ext, _kdm("AuthorizedDeviceInfo"))
    _sub(devices, _kdm("DeviceListIdentifier"), f"urn:uuid:{uuid.uuid4()}")
    _sub(devices, _kdm("DeviceListDescription"), _device_description(recipient))
    device_list = _sub(devices, _kdm("DeviceList"))
    for thumbprint in thumbprints:
        _sub(device_list, _kdm("CertificateThumbprint"), thumbprint)
    id_list = _sub(ext, _kdm("KeyIdList"))
    for k in keys:
        typed = _sub(id_list, _kdm("TypedKeyId"))
        _sub(typed, _kdm("KeyType"), k.key_type, scope=KEY_TYPE_SCOPE)
        _sub(typed, _kdm("KeyId"), f"urn:uuid:{uuid.UUID(k.key_id.removeprefix('urn:uuid:'))}")
    if flags:
        flag_list = _sub(ext, _kdm("ForensicMarkFlagList"))
        for f in flags:
            _sub(flag_list, _kdm("ForensicMarkFlag"), f)
    _sub(public, _etm("NonCriticalExtensions"))
    _sub(root, _etm("AuthenticatedPrivate"), Id="ID_AuthenticatedPrivate")
    return root


def _key_block(signer_thumbprint: bytes, cpl: uuid.UUID, key, not_before, not_after) -> bytes:
    """ST 430-1 clause 6.2's plaintext: structure id (16 bytes), signer certificate thumbprint
    (20), CPL id (16), key type (4, ASCII), key id (16), not-valid-before and -after (25 each,
    ASCII), AES key (16): 138 bytes."""
    block = b"".join([KEY_STRUCTURE_ID, signer_thumbprint, cpl.bytes, key.key_type.encode("ascii"),
                      uuid.UUID(key.key_id.removeprefix("urn:uuid:")).bytes,
                      _iso(not_before).encode("ascii"), _iso(not_after).encode("ascii"), key.key])
    if len(block) != KEY_BLOCK_BYTES:        # a time not of 25 characters
        raise KdmRefused(None, f"a key block of {len(block)} bytes, not {KEY_BLOCK_BYTES}")
    return block


def _encrypt(root, blocks, public) -> None:
    """One ``enc:EncryptedKey`` per block into ``AuthenticatedPrivate``: RSA-OAEP, MGF1 and
    digest SHA-1, with the recipient's public key (ST 430-1 clause 6.2)."""

    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
    private = root.find(_etm("AuthenticatedPrivate"))
    for block in blocks:
        key = _sub(private, f"{{{NS_ENC}}}EncryptedKey")
        method = _sub(key, f"{{{NS_ENC}}}EncryptionMethod", Algorithm=RSA_OAEP)
        _sub(method, f"{{{NS_DS}}}DigestMethod", Algorithm=SHA1)
        _sub(_sub(key, f"{{{NS_ENC}}}CipherData"), f"{{{NS_ENC}}}CipherValue", base64_lines(public.encrypt(block, oaep)))


def _sign(root, signer_key, chain) -> None:
    """The enveloped ``ds:Signature`` of ST 430-3 clause 5.3 (:func:`.xml_signature.add_signature`:
    two references digested SHA-256, ``SignedInfo`` canonicalised with comments, RSA-SHA256);
    the document is laid out (indented) first, since the digests cover its whitespace."""

    parts = ("AuthenticatedPublic", "AuthenticatedPrivate")
    sig, _, values = add_signature(root, chain, [(f"#ID_{part}", (), SHA256) for part in parts],
                                   c14n=C14N_WITH_COMMENTS, method=RSA_SHA256)
    etree.indent(root, space="  ")
    for element, part in zip(values, parts):
        element.text = digest_value(canonical_xml(root.find(_etm(part))), SHA256)
    sign_info(sig, signer_key)


def _read_back(data: bytes, cpl: uuid.UUID, keys, now, path) -> None:
    """The message as a reader sees it: parsed, its signature and chain checked, its public
    part what was asked.  A failure here is cinegpu's bug; no KDM leaves that fails it."""

    kdm = parse_kdm(data, path)
    check_signature(kdm)
    report = check_chain(kdm, now)
    listed = [(t.key_type, t.key_id) for t in kdm.key_ids]
    want = [(k.key_type, str(uuid.UUID(k.key_id.removeprefix("urn:uuid:")))) for k in keys]
    if not report.ok or kdm.cpl_id != str(cpl) or listed != want or len(kdm.cipher_values) != len(keys):
        raise KdmRefused(path, "the KDM made does not read back as asked (a cinegpu bug): "
                               + "; ".join(report.problems or ("its public part differs",)))


# -- small helpers -----------------------------------------------------------------------------
def _sub(parent, tag: str, text: str | None = None, **attrib):
    el = etree.SubElement(parent, tag, attrib)
    if text is not None:
        el.text = text
    return el


def _device_description(cert) -> str:
    """The recipient's common name without its role prefix (``SM.projector`` -> ``projector``),
    as libdcp describes the device list."""

    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    cn = str(names[0].value) if names else dn_string(cert.subject)
    return cn.split(".", 1)[1] if "." in cn and cn.split(".", 1)[1] else cn


def _uuid(text, path, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(text).strip().removeprefix("urn:uuid:"))
    except ValueError:
        raise KdmRefused(path, f"{what}, {str(text)[:60]!r}, is not a UUID") from None


def _iso(d: datetime) -> str:
    """ISO 8601 with its offset, to the second: 25 characters (``2026-12-01T20:00:00+01:00``)."""
    return d.isoformat(timespec="seconds")


def _etm(name: str) -> str:
    return f"{{{NS_ETM}}}{name}"


def _kdm(name: str) -> str:
    return f"{{{NS_KDM}}}{name}"
