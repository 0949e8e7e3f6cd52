"""Digital cinema certificates: SMPTE ST 430-2 (D-Cinema Operations, Digital Certificate).

A KDM (ST 430-1) is signed with the private key of a leaf certificate whose chain of issuers
ends at a self-signed root; it is encrypted for a recipient's leaf certificate. This module:

- :func:`make_chain`: a new three-certificate chain (self-signed root CA, intermediate CA,
  leaf) as ST 430-2 shapes it: X.509 v3, RSA 2048 with exponent 65537, sha256WithRSAEncryption,
  positive serial numbers of at most 64 bits, basicConstraints (CAs with a path length, the leaf
  not a CA), keyUsage (CAs keyCertSign and cRLSign, the leaf digitalSignature and
  keyEncipherment), subject and authority key identifiers, and a subject of O, OU, CN (a role
  prefix on the leaf's, e.g. ``CS.``) and dnQualifier, the public key's thumbprint, each a
  PrintableString (clause 5.3) where its characters allow;
- :func:`write_chain` / :func:`read_certificates` / :func:`order_chain`: PEM files;
- :func:`check_certificates`: the chain walk ST 430-2 clause 5 asks of a verifier (each
  certificate signed by the next, up to a self-signed root; issuers CAs, the leaf not; every
  certificate valid at a given time; dnQualifier equal to the public key's thumbprint), which
  :func:`.kdm.check_chain` runs on a KDM's ``KeyInfo``;
- :func:`public_key_thumbprint`, :func:`certificate_thumbprint`, :func:`dn_string`: the
  thumbprints and the name strings KDMs carry.

Only the leaf's private key is kept (:class:`Chain`'s ``leaf_key``, out of its ``repr``); the
CA keys sign their certificate and are dropped, so that no file holds a key that can issue
certificates. A new leaf means a new chain.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID

from cinegpu.media.errors import CorruptMedia, MediaError
from cinegpu.media.files import create_new_file, read_bounded
from cinegpu.media.security.key_files import make_private_folder

__all__ = ["CHAIN_FILES", "Chain", "ChainReport", "certificate_thumbprint", "check_certificates",
           "dn_string", "make_chain", "order_chain", "public_key_thumbprint", "read_certificates",
           "write_chain"]

#: file names :func:`write_chain` writes, by what they hold (DCP-o-matic's names for the first three)
CHAIN_FILES = {"root": "ca.self-signed.pem", "intermediate": "intermediate.signed.pem",
               "leaf": "leaf.signed.pem", "chain": "chain.pem", "key": "leaf.key"}
RSA_BITS = 2048
RSA_EXPONENT = 65537
#: a PEM file of a few certificates is a few KB
MAX_PEM_BYTES = 1 << 20


@dataclass(frozen=True)
class Chain:
    """A certificate chain made by :func:`make_chain` and the leaf's RSA private key
    (``repr`` leaves the key out)."""

    root: object
    intermediate: object
    leaf: object
    leaf_key: object = field(repr=False)

    @property
    def certificates(self) -> tuple:
        """Leaf first, then its issuers up to the root: the order of a KDM's ``KeyInfo``."""
        return (self.leaf, self.intermediate, self.root)


@dataclass(frozen=True)
class ChainReport:
    """:func:`check_certificates`' findings: the certificates' subjects from the signer to the
    root, and the problems found (empty: the chain holds at the time asked)."""

    subjects: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def make_chain(organisation: str = "cinegpu.example", common_name: str = "cinegpu", *,
               organisational_unit: str | None = None, role: str = "CS",
               not_before: datetime | None = None, days: int = 3640) -> Chain:
    """A new ST 430-2 chain: root CN ``.{common_name}.ROOT``, intermediate
    ``.{common_name}.INTERMEDIATE``, leaf ``{role}.{common_name}`` (``CS``, content signer, as
    DCP-o-matic names its leaf; ``SM`` for a security manager acting as a KDM's recipient).
    The leaf is valid from ``not_before`` (default: a day before now, to the second, UTC, so
    that a KDM starting now or an hour ago fits inside it, whatever the clocks of the machines
    that make and check it) for ``days`` days; its issuers a day longer each, so that no
    certificate outlives its issuer."""

    if days < 1:
        raise ValueError(f"a chain valid for {days} days is no chain")
    if not common_name or not organisation:
        raise ValueError("the organisation and the common name must not be empty")
    start = (not_before or datetime.now(timezone.utc) - timedelta(days=1)).astimezone(timezone.utc)
    start = start.replace(microsecond=0)
    ou = organisational_unit or organisation
    keys = [rsa.generate_private_key(public_exponent=RSA_EXPONENT, key_size=RSA_BITS) for _ in range(3)]
    names = [f".{common_name}.ROOT", f".{common_name}.INTERMEDIATE", f"{role}.{common_name}"]
    certs = []
    for depth, (key, cn) in enumerate(zip(keys, names)):
        issuer = certs[-1] if certs else None
        issuer_key = keys[depth - 1] if depth else key
        certs.append(_certificate(key, issuer, issuer_key, organisation, ou, cn, depth,
                                  start, start + timedelta(days=days + 2 - depth)))
    return Chain(certs[0], certs[1], certs[2], keys[2])


def _certificate(key, issuer, issuer_key, organisation, ou, cn, depth, start, end):
    """One certificate at ``depth`` (0 root, 1 intermediate, 2 leaf)."""

    public = key.public_key()
    subject = x509.Name([_name_attribute(NameOID.ORGANIZATION_NAME, organisation),
                         _name_attribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
                         _name_attribute(NameOID.COMMON_NAME, cn),
                         _name_attribute(NameOID.DN_QUALIFIER, _thumbprint_of_key(public))])
    ca = depth < 2
    ski = x509.SubjectKeyIdentifier.from_public_key(public)
    issuer_ski = (ski if issuer is None else
                  issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value)
    builder = (x509.CertificateBuilder()
               .subject_name(subject)
               .issuer_name(subject if issuer is None else issuer.subject)
               .public_key(public)
               .serial_number(secrets.randbits(63) | 1)     # positive, at most 64 bits
               .not_valid_before(start)
               .not_valid_after(end)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=1 - depth if ca else None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False,
                                            key_encipherment=not ca, data_encipherment=False,
                                            key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                            encipher_only=False, decipher_only=False), critical=True)
               .add_extension(ski, critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer_ski),
                              critical=False))
    return builder.sign(issuer_key, hashes.SHA256())


#: the characters of an ASN.1 PrintableString (X.680 41.4)
_PRINTABLE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 '()+,-./:=?")


def _name_attribute(oid, value: str):
    """A name attribute as ST 430-2 clause 5.3 wants it, a PrintableString (ClairMeta's
    check_certif_fields_encoding); UTF8String only for a value PrintableString cannot hold."""

    printable = bool(value) and set(value) <= _PRINTABLE
    return x509.NameAttribute(oid, value, _type=_ASN1Type.PrintableString if printable else _ASN1Type.UTF8String)


def write_chain(chain: Chain, directory) -> dict[str, Path]:
    """Write ``chain`` into ``directory`` (made if absent) as :data:`CHAIN_FILES` names them:
    each certificate as PEM, ``chain.pem`` with all three leaf first (the order of a KDM's
    ``KeyInfo``, what ``cinegpu kdm make --signer-chain`` reads), and ``leaf.key``, the leaf's
    private key (PKCS #8 PEM, unencrypted) with mode 600 from its creation, whatever the umask.
    The folder and any parent made for it are made mode 700 (:func:`.key_files.make_private_folder`;
    an existing one others may write is refused, :class:`~.errors.ExposedKey`). No file is ever
    overwritten: when one of the names is taken nothing is written (:class:`MediaError`)."""

    directory = make_private_folder(directory, "chain folder")
    paths = {what: directory / name for what, name in CHAIN_FILES.items()}
    taken = [p.name for p in paths.values() if p.exists() or p.is_symlink()]
    if taken:
        raise MediaError(directory, f"{', '.join(taken)} exist(s) already; a chain is never written "
                                    f"over another (its leaf.key may be the only copy)")
    pem = {what: c.public_bytes(serialization.Encoding.PEM)
           for what, c in (("root", chain.root), ("intermediate", chain.intermediate), ("leaf", chain.leaf))}
    key = chain.leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption())
    create_new_file(paths["key"], key, 0o600, "private key", "it may be the only copy")
    for what in ("root", "intermediate", "leaf"):
        create_new_file(paths[what], pem[what], 0o644, "certificate")
    create_new_file(paths["chain"], pem["leaf"] + pem["intermediate"] + pem["root"], 0o644, "chain")
    return paths


def read_certificates(path) -> tuple:
    """The X.509 certificates of the PEM file at ``path``, in file order."""

    data = read_bounded(path, MAX_PEM_BYTES, "PEM file")
    try:
        with warnings.catch_warnings():     # serial number 0 and the like: check_certificates says
            warnings.simplefilter("ignore")
            certs = tuple(x509.load_pem_x509_certificates(data))
    except ValueError:
        raise CorruptMedia(path, "no PEM certificate in the file (-----BEGIN CERTIFICATE-----)") from None
    return certs


def order_chain(certificates, path=None) -> tuple:
    """``certificates`` (any order) as one chain, leaf first, each followed by its issuer, the
    self-signed root last; :class:`~.errors.CorruptMedia` when they are not one such chain."""
    certs = list(certificates)
    issuers = {c.issuer for c in certs if c.issuer != c.subject}
    leaves = [c for c in certs if c.subject not in issuers]
    if len(leaves) != 1:
        raise CorruptMedia(path, f"the certificates are not one chain: {len(leaves)} of them issue no "
                                 f"other ({', '.join(dn_string(c.subject) for c in leaves) or 'a loop'})")
    by_subject = {c.subject: c for c in certs}
    chain = [leaves[0]]
    while chain[-1].issuer != chain[-1].subject and len(chain) <= len(certs):
        issuer = by_subject.get(chain[-1].issuer)
        if issuer is None:
            break
        chain.append(issuer)
    if len(chain) != len(certs):
        raise CorruptMedia(path, f"the certificates are not one chain: {len(certs) - len(chain)} of them "
                                 f"are not on the path from {dn_string(leaves[0].subject)} to its root")
    return tuple(chain)


def check_certificates(signer, certificates, at: datetime, where: str = "the certificates") -> ChainReport:
    """ST 430-2 clause 5's checks of the chain from ``signer`` through ``certificates`` (which
    may hold others, in any order) at ``at``: each certificate's issuer found and its signature
    checked with the issuer's key, up to a self-signed root; issuers basicConstraints CA, the
    signer not; each valid at ``at``; each dnQualifier its public key's thumbprint.  Reported,
    not raised; ``where`` names the certificates in a problem (e.g. "the KDM's certificates")."""
    with warnings.catch_warnings():     # cryptography's about serial number 0: not ours to say
        warnings.simplefilter("ignore")
        return _walk(signer, tuple(certificates), at, where)


def _walk(cert, certificates: tuple, at: datetime, where: str) -> ChainReport:
    problems: list[str] = []
    chain = [cert]
    by_subject = {c.subject: c for c in certificates}
    while True:
        if not (cert.not_valid_before_utc <= at <= cert.not_valid_after_utc):
            problems.append(f"{_subject(cert)} is valid from {cert.not_valid_before_utc:%Y-%m-%d} to "
                            f"{cert.not_valid_after_utc:%Y-%m-%d}, not at {at:%Y-%m-%d %H:%M} UTC")
        try:
            ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            ca = None
        except ValueError as exc:       # e.g. a path length on a non-CA (RFC 5280 4.2.1.9)
            ca = False
            problems.append(f"{_subject(cert)} has a malformed basicConstraints: {exc}")
        if ca is None:
            problems.append(f"{_subject(cert)} has no basicConstraints (ST 430-2 requires it)")
        elif ca != (len(chain) > 1):
            problems.append(f"{_subject(cert)} {'is' if ca else 'is not'} marked as a CA, which a "
                            f"{'signer' if len(chain) == 1 else 'certificate that signs others'} "
                            f"{'must not be' if ca else 'must be'}")
        thumbprint = public_key_thumbprint(cert)
        qualifiers = [a.value for a in cert.subject.get_attributes_for_oid(x509.NameOID.DN_QUALIFIER)]
        if qualifiers != [thumbprint]:
            problems.append(f"{_subject(cert)}: its dnQualifier is not its public key's thumbprint "
                            f"{thumbprint} (ST 430-2)")
        issuer = by_subject.get(cert.issuer)
        if issuer is None:
            problems.append(f"the issuer of {_subject(cert)} is not among {where}")
            break
        if not _signed_by(cert, issuer):
            problems.append(f"{_subject(cert)} is not signed by {_subject(issuer)}")
            break
        if issuer is cert:      # self-signed: the root
            break
        if len(chain) > len(certificates):
            problems.append("the certificates' issuers loop")
            break
        cert = issuer
        chain.append(cert)
    return ChainReport(tuple(_subject(c) for c in chain), tuple(problems))


def public_key_thumbprint(cert) -> str:
    """ST 430-2's public key thumbprint, a certificate's dnQualifier: base64 of the SHA-1 of
    the PKCS #1 RSAPublicKey (DER), 28 characters."""
    return _thumbprint_of_key(cert.public_key())


def certificate_thumbprint(cert) -> bytes:
    """ST 430-2's certificate thumbprint: SHA-1 of the signed part (the DER tbsCertificate),
    20 bytes; a KDM's key blocks name their signer by it (ST 430-1 clause 6.2), its
    ``DeviceList`` the trusted devices (base64 of it)."""
    return hashlib.sha1(cert.tbs_certificate_bytes).digest()


def dn_string(name) -> str:
    """A distinguished name as KDMs write it (RFC 4514, last attribute first, ``dnQualifier``
    named, ``+`` escaped), e.g. ``dnQualifier=...,CN=CS.cinegpu,OU=...,O=...``."""

    return name.rfc4514_string({NameOID.DN_QUALIFIER: "dnQualifier"})


def _thumbprint_of_key(public) -> str:
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1)
    return base64.b64encode(hashlib.sha1(der).digest()).decode("ascii")


def _subject(cert) -> str:
    return dn_string(cert.subject)


def _signed_by(cert, issuer) -> bool:
    key = issuer.public_key()
    if not isinstance(key, rsa.RSAPublicKey) or cert.signature_hash_algorithm is None:
        return False
    try:
        key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    except InvalidSignature:
        return False
    return True
