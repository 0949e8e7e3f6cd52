"""W3C XML-DSig pieces shared by every signed document cinegpu writes and reads: KDMs
(SMPTE ST 430-3 clause 5.3) and CPLs and PKLs (ST 429-7 clause 6.13, ST 429-8 clause 5.10).

- the algorithm identifiers (:data:`C14N`, :data:`DIGESTS`, :data:`SIGNATURES`) a reader
  accepts;
- :func:`add_signature`: a ``ds:Signature`` element with its ``SignedInfo`` (canonicalization,
  signature method, references), an empty ``SignatureValue`` and a ``KeyInfo`` holding one
  ``X509Data`` (issuer and serial, certificate) per certificate, leaf to root;
- :func:`sign_info`: ``SignatureValue`` over the canonical ``SignedInfo`` (RSA PKCS #1 v1.5,
  RSA-SHA256 or RSA-SHA1) with the signer's key;
- :func:`check_signature_value`: the reverse, with the signer certificate's public key;
- :func:`key_info_certificates`, :func:`digest_value`, :func:`issuer_serial`,
  :func:`base64_lines`.

The canonical forms are :func:`.xml_c14n.canonical_xml`'s, so that what is signed here is byte
for byte what is checked.  The checks raise ``error(path, message)``, the caller's
:class:`~.errors.MediaError` class (:class:`~.errors.KdmRefused` for a KDM), and never name key
bytes.
"""

from __future__ import annotations

import base64
import binascii
import warnings

from cinegpu.media.security.certificates import dn_string
from cinegpu.media.errors import CorruptMedia, MediaError
from cinegpu.media.security.xml_c14n import canonical_xml

__all__ = ["C14N", "C14N_URI", "C14N_WITH_COMMENTS", "DIGESTS", "ENVELOPED", "NS_DS", "RSA_SHA1",
           "RSA_SHA256", "SHA1", "SHA256", "SIGNATURES", "add_signature", "base64_lines",
           "canonical_signed_info", "check_signature_value", "decode_base64", "digest_value", "ds",
           "issuer_serial", "key_info_certificates", "sign_info"]

NS_DS = "http://www.w3.org/2000/09/xmldsig#"
C14N_URI = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315"
C14N_WITH_COMMENTS = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments"
ENVELOPED = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
RSA_SHA1 = "http://www.w3.org/2000/09/xmldsig#rsa-sha1"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"
SHA1 = "http://www.w3.org/2000/09/xmldsig#sha1"
#: canonicalization methods: URI -> (exclusive, with comments)
C14N = {C14N_URI: (False, False), C14N_WITH_COMMENTS: (False, True),
        "http://www.w3.org/2001/10/xml-exc-c14n#": (True, False),
        "http://www.w3.org/2001/10/xml-exc-c14n#WithComments": (True, True)}
#: digest methods: URI -> (name, hashlib name)
DIGESTS = {SHA256: ("SHA-256", "sha256"), SHA1: ("SHA-1", "sha1")}
#: signature methods: URI -> (name, hash name)
SIGNATURES = {RSA_SHA256: ("RSA-SHA256", "sha256"), RSA_SHA1: ("RSA-SHA1", "sha1")}


def ds(name: str) -> str:
    """The Clark name of XML-DSig element ``name``."""
    return f"{{{NS_DS}}}{name}"


def add_signature(parent, chain, references, *, c14n: str = C14N_WITH_COMMENTS,
                  method: str = RSA_SHA256, nsmap=None):
    """Append an unsigned ``ds:Signature`` to ``parent`` (W3C XML-DSig clause 4): ``SignedInfo``
    with ``c14n`` and ``method``, then per reference, given as (URI, transform URIs, digest
    method URI), a ``Reference`` with its ``Transforms``, ``DigestMethod`` and an empty
    ``DigestValue``; an empty ``SignatureValue``; ``KeyInfo`` with one ``X509Data`` per
    certificate of ``chain`` (leaf first: issuer and serial, then the DER certificate in base64),
    as ST 430-3 clause 5.3 and libdcp lay it out.  ``nsmap``: namespace declarations on the
    ``Signature`` element (e.g. ``{"dsig": NS_DS}``).  Returns (signature, signed info, the
    ``DigestValue`` elements in the references' order)."""
    from cryptography.hazmat.primitives import serialization

    sig = _sub(parent, ds("Signature"), nsmap=nsmap)
    info = _sub(sig, ds("SignedInfo"))
    _sub(info, ds("CanonicalizationMethod"), Algorithm=c14n)
    _sub(info, ds("SignatureMethod"), Algorithm=method)
    values = []
    for uri, transforms, digest in references:
        ref = _sub(info, ds("Reference"), URI=uri)
        if transforms:
            t = _sub(ref, ds("Transforms"))
            for algorithm in transforms:
                _sub(t, ds("Transform"), Algorithm=algorithm)
        _sub(ref, ds("DigestMethod"), Algorithm=digest)
        values.append(_sub(ref, ds("DigestValue")))
    _sub(sig, ds("SignatureValue"))
    key_info = _sub(sig, ds("KeyInfo"))
    for cert in chain:
        data = _sub(key_info, ds("X509Data"))
        issuer_serial(_sub(data, ds("X509IssuerSerial")), cert)
        _sub(data, ds("X509Certificate"), base64_lines(cert.public_bytes(serialization.Encoding.DER)))
    return sig, info, values


def digest_value(data: bytes, method: str) -> str:
    """Base64 of the ``method`` digest (a :data:`DIGESTS` URI) of ``data``."""
    import hashlib

    return base64.b64encode(hashlib.new(DIGESTS[method][1], data).digest()).decode("ascii")


def canonical_signed_info(info) -> bytes:
    """``SignedInfo`` in the canonical form its ``CanonicalizationMethod`` names (clause 4.3):
    inclusive C14N 1.0 by :func:`.xml_c14n.canonical_xml`, exclusive by libxml2."""
    from lxml import etree

    exclusive, comments = C14N[info.find(ds("CanonicalizationMethod")).get("Algorithm")]
    if exclusive:
        return etree.tostring(info, method="c14n", exclusive=True, with_comments=comments)
    return canonical_xml(info, comments)


def sign_info(sig, key) -> None:
    """Fill ``SignatureValue`` of ``sig``: RSA PKCS #1 v1.5 over the canonical ``SignedInfo``
    with ``key`` and the hash of its ``SignatureMethod`` (XML-DSig clause 3.1.2).  Every
    ``DigestValue`` must be filled first."""
    from cryptography.hazmat.primitives.asymmetric import padding

    info = sig.find(ds("SignedInfo"))
    method = info.find(ds("SignatureMethod")).get("Algorithm")
    value = key.sign(canonical_signed_info(info), padding.PKCS1v15(), _hash(SIGNATURES[method][1]))
    sig.find(ds("SignatureValue")).text = base64_lines(value)


def check_signature_value(sig, cert, path=None, error=MediaError) -> str:
    """Check ``SignatureValue`` of ``sig`` (a ``ds:Signature``) over its canonical
    ``SignedInfo`` with ``cert``'s RSA public key; returns the method's name (``RSA-SHA256``);
    ``error(path, why)`` for an unknown method or canonicalization or a value that does not
    verify.  The references' digests are the caller's to check."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    info = _one(sig, ds("SignedInfo"), path)
    c14n = _one(info, ds("CanonicalizationMethod"), path).get("Algorithm")
    if c14n not in C14N:
        raise error(path, f"canonicalization {c14n!r} is not one XML-DSig defines")
    method = _one(info, ds("SignatureMethod"), path).get("Algorithm")
    if method not in SIGNATURES:
        raise error(path, f"signature method {method!r} is not RSA-SHA256 or RSA-SHA1")
    value = decode_base64(_one(sig, ds("SignatureValue"), path).text, path, "SignatureValue")
    key = cert.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise error(path, f"the signer's certificate ({dn_string(cert.subject)}) does not hold an RSA key")
    name, hash_name = SIGNATURES[method]
    try:
        key.verify(value, canonical_signed_info(info), padding.PKCS1v15(), _hash(hash_name))
    except InvalidSignature:
        raise error(path, f"the {name} signature value does not verify with the signer's certificate "
                          f"({dn_string(cert.subject)})") from None
    return name


def key_info_certificates(sig, path=None) -> tuple:
    """The X.509 certificates of ``sig``'s ``KeyInfo`` (document order)."""
    from cryptography import x509

    certs = []
    for el in sig.iterfind(f"{ds('KeyInfo')}/{ds('X509Data')}/{ds('X509Certificate')}"):
        der = decode_base64(el.text, path, "X509Certificate")
        try:
            with warnings.catch_warnings():     # serial number 0 and the like: the chain walk says
                warnings.simplefilter("ignore")
                certs.append(x509.load_der_x509_certificate(der))
        except ValueError:
            raise CorruptMedia(path, "an X509Certificate of the signature is not a DER certificate") from None
    return tuple(certs)


def issuer_serial(parent, cert) -> None:
    """``ds:X509IssuerName`` (RFC 4514, :func:`.certificates.dn_string`) and
    ``ds:X509SerialNumber`` (decimal) of ``cert`` into ``parent``."""
    _sub(parent, ds("X509IssuerName"), dn_string(cert.issuer))
    _sub(parent, ds("X509SerialNumber"), str(cert.serial_number))


def base64_lines(data: bytes) -> str:
    """Base64 in lines of 64 characters, as PEM and libdcp write it."""
    text = base64.b64encode(data).decode("ascii")
    return "\n".join(text[i:i + 64] for i in range(0, len(text), 64))


def decode_base64(text: str | None, path, what: str) -> bytes:
    """``text`` (whitespace ignored) as base64; :class:`~.errors.CorruptMedia` naming ``what``."""
    try:
        return base64.b64decode("".join((text or "").split()), validate=True)
    except (binascii.Error, ValueError):
        raise CorruptMedia(path, f"the {what} is not base64") from None


def _hash(name: str):
    from cryptography.hazmat.primitives import hashes

    return hashes.SHA256() if name == "sha256" else hashes.SHA1()


def _one(el, tag: str, path):
    found = el.find(tag)
    if found is None:
        raise CorruptMedia(path, f"the signature has no {tag.rsplit('}', 1)[-1]} in "
                                 f"{el.tag.rsplit('}', 1)[-1]} (line {el.sourceline})")
    return found


def _sub(parent, tag: str, text: str | None = None, nsmap=None, **attrib):
    from lxml import etree

    el = etree.SubElement(parent, tag, attrib, nsmap=nsmap) if nsmap else etree.SubElement(parent, tag, attrib)
    if text is not None:
        el.text = text
    return el
