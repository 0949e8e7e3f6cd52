"""KDMs made in the tests (ST 430-1 in the ST 430-3 message), until the project makes its own:
a signer chain of two certificates (ST 430-2: dnQualifier the public key's thumbprint, the root
a CA, the signer not), a recipient key and certificate, and a KDM signed by the signer (RSA-SHA256
over inclusive C14N with comments, each part's digest SHA-256), every content key an RSA-OAEP
block of ST 430-1 clause 6.2's 138 bytes.  Only what :mod:`cinegpu.media.kdm` reads is written."""

from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID
from lxml import etree

from cinegpu.media import kdm as K

NS_ETM, NS_KDM, NS_DS, NS_ENC = K.NS_ETM, K.NS_KDM, K.NS_DS, K.NS_ENC
EPOCH = datetime(2020, 1, 1, tzinfo=timezone.utc)


@dataclass
class Party:
    key: rsa.RSAPrivateKey
    cert: x509.Certificate

    def pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption())


def thumbprint(key) -> str:
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
    return base64.b64encode(hashlib.sha1(der).digest()).decode()


def _cert(key, name: str, issuer: Party | None, ca: bool, serial: int, years: int = 20) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "test.example"),
                         x509.NameAttribute(NameOID.COMMON_NAME, name),
                         x509.NameAttribute(NameOID.DN_QUALIFIER, thumbprint(key))])
    b = (x509.CertificateBuilder().subject_name(subject)
         .issuer_name(issuer.cert.subject if issuer else subject)
         .public_key(key.public_key()).serial_number(serial)
         .not_valid_before(EPOCH).not_valid_after(EPOCH + timedelta(days=365 * years))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    return b.sign(issuer.key if issuer else key, hashes.SHA256())


def make_chain() -> tuple[Party, Party]:
    """(root, signer): a self-signed CA and a leaf it signed."""
    rk = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    root = Party(rk, _cert(rk, ".test.ROOT", None, True, 1))
    sk = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return root, Party(sk, _cert(sk, "CS.test.SIGNER", root, False, 2))


def make_recipient(root: Party, name: str = "SM.test.PROJECTOR") -> Party:
    k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return Party(k, _cert(k, name, root, False, 3))


def _sub(parent, ns: str, tag: str, text=None):
    el = etree.SubElement(parent, f"{{{ns}}}{tag}")
    if text is not None:
        el.text = str(text)
    return el


def _time(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+00:00")


def key_block(signer: Party, cpl_id: str, key_type: str, key_id: str, nb: datetime, na: datetime,
              key: bytes) -> bytes:
    """ST 430-1 clause 6.2's plaintext of one content key (138 bytes)."""
    block = (K.KEY_STRUCTURE_ID + hashlib.sha1(signer.cert.tbs_certificate_bytes).digest()
             + uuid.UUID(cpl_id).bytes + key_type.encode() + uuid.UUID(key_id).bytes
             + _time(nb).encode() + _time(na).encode() + key)
    assert len(block) == K.KEY_BLOCK_BYTES
    return block


def make_kdm(*, root: Party, signer: Party, recipient: Party, cpl_id: str, title: str, keys,
             not_before: datetime, not_after: datetime, message_id: str | None = None) -> bytes:
    """A signed KDM for ``recipient`` of ``keys`` ((key type, key id, 16-byte key) each)."""
    oaep = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
    root_el = etree.Element(f"{{{NS_ETM}}}DCinemaSecurityMessage",
                            nsmap={None: NS_ETM, "ds": NS_DS, "enc": NS_ENC})
    pub = _sub(root_el, NS_ETM, "AuthenticatedPublic")
    pub.set("Id", "ID_AuthenticatedPublic")
    _sub(pub, NS_ETM, "MessageId", f"urn:uuid:{message_id or uuid.uuid4()}")
    _sub(pub, NS_ETM, "MessageType", "http://www.smpte-ra.org/430-1/2006/KDM#kdm-key-type")
    _sub(pub, NS_ETM, "AnnotationText", f"{title} test KDM")
    _sub(pub, NS_ETM, "IssueDate", _time(not_before))
    s = _sub(pub, NS_ETM, "Signer")
    _sub(s, NS_DS, "X509IssuerName", signer.cert.issuer.rfc4514_string())
    _sub(s, NS_DS, "X509SerialNumber", signer.cert.serial_number)
    ext = _sub(_sub(pub, NS_ETM, "RequiredExtensions"), NS_KDM, "KDMRequiredExtensions")
    r = _sub(ext, NS_KDM, "Recipient")
    ser = _sub(r, NS_KDM, "X509IssuerSerial")
    _sub(ser, NS_DS, "X509IssuerName", recipient.cert.issuer.rfc4514_string())
    _sub(ser, NS_DS, "X509SerialNumber", recipient.cert.serial_number)
    _sub(r, NS_KDM, "X509SubjectName", recipient.cert.subject.rfc4514_string())
    _sub(ext, NS_KDM, "CompositionPlaylistId", f"urn:uuid:{cpl_id}")
    _sub(ext, NS_KDM, "ContentTitleText", title)
    _sub(ext, NS_KDM, "ContentKeysNotValidBefore", _time(not_before))
    _sub(ext, NS_KDM, "ContentKeysNotValidAfter", _time(not_after))
    ids = _sub(ext, NS_KDM, "KeyIdList")
    for key_type, key_id, _ in keys:
        t = _sub(ids, NS_KDM, "TypedKeyId")
        _sub(t, NS_KDM, "KeyType", key_type).set("scope", "http://www.smpte-ra.org/430-1/2006/KDM#kdm-key-type")
        _sub(t, NS_KDM, "KeyId", f"urn:uuid:{key_id}")
    _sub(pub, NS_ETM, "NonCriticalExtensions")
    priv = _sub(root_el, NS_ETM, "AuthenticatedPrivate")
    priv.set("Id", "ID_AuthenticatedPrivate")
    for key_type, key_id, key in keys:
        block = key_block(signer, cpl_id, key_type, key_id, not_before, not_after, key)
        ek = _sub(priv, NS_ENC, "EncryptedKey")
        _sub(ek, NS_ENC, "EncryptionMethod").set("Algorithm", "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p")
        _sub(_sub(ek, NS_ENC, "CipherData"), NS_ENC, "CipherValue",
             base64.b64encode(recipient.cert.public_key().encrypt(block, oaep)).decode())
    sig = _sub(root_el, NS_DS, "Signature")
    info = _sub(sig, NS_DS, "SignedInfo")
    c14n = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments"
    _sub(info, NS_DS, "CanonicalizationMethod").set("Algorithm", c14n)
    _sub(info, NS_DS, "SignatureMethod").set("Algorithm", "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")
    for part in (pub, priv):
        ref = _sub(info, NS_DS, "Reference")
        ref.set("URI", "#" + part.get("Id"))
        _sub(ref, NS_DS, "DigestMethod").set("Algorithm", "http://www.w3.org/2001/04/xmlenc#sha256")
        _sub(ref, NS_DS, "DigestValue", base64.b64encode(hashlib.sha256(K._subset_c14n(part)).digest()).decode())
    value = _sub(sig, NS_DS, "SignatureValue")
    data = K._subset_c14n(info, comments=True)
    value.text = base64.b64encode(signer.key.sign(data, padding.PKCS1v15(), hashes.SHA256())).decode()
    key_info = _sub(sig, NS_DS, "KeyInfo")
    for c in (signer.cert, root.cert):
        _sub(_sub(key_info, NS_DS, "X509Data"), NS_DS, "X509Certificate",
             base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode())
    return etree.tostring(root_el, xml_declaration=True, encoding="UTF-8")
