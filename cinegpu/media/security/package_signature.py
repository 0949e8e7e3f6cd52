"""Signed CPLs and PKLs: SMPTE ST 429-7 clause 6.13 (CPL) and ST 429-8 clause 5.10 (PKL).

A signed document ends with two elements: ``Signer``, in the document's namespace, of XML-DSig's
``KeyInfoType``, naming the signing certificate (``ds:X509Data``: ``X509IssuerSerial`` and
``X509SubjectName``), then ``ds:Signature``, an enveloped signature over the whole document.
The signature is laid out as libdcp (and so DCP-o-matic) writes it and ClairMeta checks it:

- one ``Reference`` with ``URI=""`` (the document, without comments) and the
  enveloped-signature transform, digested SHA-1 (``xmldsig#sha1``), the digest method ClairMeta's
  ``check_sign_digest_algorithm`` insists on;
- ``SignedInfo`` canonicalised by Canonical XML 1.0 without comments
  (``REC-xml-c14n-20010315``, ClairMeta's ``check_sign_canonicalization_algorithm``) and signed
  RSA-SHA256 (SMPTE; Interop's is RSA-SHA1);
- ``KeyInfo``: one ``X509Data`` per certificate, from the signer's up to the root (ST 430-2).

:func:`sign_document` signs an lxml tree in place (the package writer signs the CPL before it
hashes it for the PKL); :func:`check_package_signature` checks a CPL or PKL, with any of the
digests, signature methods and canonicalizations of :mod:`.xml_signature` (libdcp's Interop
documents: RSA-SHA1), and reports: unsigned, or signed by whom and whether the digest, the
signature value and the signer's chain (ST 430-2, :func:`.certificates.check_certificates`,
at the document's ``IssueDate`` as DCI and ClairMeta check it) hold.  :class:`Signer` is a
signing identity, a chain and its leaf's key, read by :func:`load_signer` from a folder as
``cinegpu kdm chain`` writes it; :func:`user_signer` is the user's own, made on first use under
the user's configuration folder, as DCP-o-matic keeps one.  No message, log line or ``repr``
here holds key bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import rsa
from lxml import etree

from cinegpu.media.errors import CorruptMedia, ExposedKey, MediaError
from cinegpu.media.files import read_bounded
from cinegpu.media.security.certificates import (
    CHAIN_FILES,
    check_certificates,
    dn_string,
    make_chain,
    order_chain,
    read_certificates,
    write_chain,
)
from cinegpu.media.security.kdm import load_private_key
from cinegpu.media.security.key_files import make_private_folder
from cinegpu.media.security.xml_c14n import canonical_xml
from cinegpu.media.security.xml_signature import (
    C14N_URI,
    DIGESTS,
    ENVELOPED,
    NS_DS,
    RSA_SHA1,
    RSA_SHA256,
    SHA1,
    add_signature,
    check_signature_value,
    digest_value,
    ds,
    issuer_serial,
    key_info_certificates,
    sign_info,
)

__all__ = ["PackageSignature", "Signer", "check_package_signature", "check_signer", "load_signer",
           "sign_document", "signer_folder", "user_signer"]

#: a CPL or PKL is a few MB at most
MAX_DOCUMENT_BYTES = 64 << 20
#: the user's own chain: a little under ten years, so that its root ends before ClairMeta's
#: "validity extends past 10 years" warning (check_certif_date_overflow) would say so
USER_CHAIN_DAYS = 3640


@dataclass(frozen=True)
class Signer:
    """A signing identity: ``chain``, certificates leaf first up to the root
    (:func:`.certificates.order_chain`), and ``key``, the leaf's RSA private key (out of the
    ``repr``); ``folder`` where it was read, if anywhere."""

    chain: tuple
    key: object = field(repr=False)
    folder: Path | None = None

    @property
    def subject(self) -> str:
        return dn_string(self.chain[0].subject)


@dataclass(frozen=True)
class PackageSignature:
    """:func:`check_package_signature`'s findings for one CPL or PKL: ``signed`` (a
    ``ds:Signature`` is there), the signer's subject, the signature and digest methods' names,
    the chain's subjects (signer to root) and the ``problems`` (empty: the signature holds)."""

    path: str | None
    signed: bool
    subject: str | None = None
    method: str | None = None
    digest: str | None = None
    chain: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.signed and not self.problems

    def text(self, with_warnings: bool = True) -> str:
        """One line: unsigned; signed by whom and that the signature holds (and, with
        ``with_warnings``, its warnings), or why not."""
        if not self.signed:
            return "unsigned"
        who = f"signed by {self.subject}" if self.subject else "signed"
        if self.problems:
            return f"{who}, signature does not hold: {'; '.join(self.problems)}"
        but = f"; but {'; '.join(self.warnings)}" if self.warnings and with_warnings else ""
        return f"{who}, signature holds ({self.method}, {self.digest} digest, chain of {len(self.chain)}){but}"


# -- signing -----------------------------------------------------------------------------------
def sign_document(root, signer: Signer, *, interop: bool = False) -> None:
    """Sign the CPL or PKL ``root`` (an lxml element, its content complete) in place: lay it
    out (indented: the digest covers its whitespace), append ``Signer`` (ST 429-7 clause 6.13,
    ST 429-8 clause 5.10) and the enveloped ``ds:Signature``, as the module says.  Serialise
    the result as it is, without pretty-printing."""

    ns = root.nsmap.get(None)
    if ns is None:
        raise ValueError("a CPL or PKL has a default namespace")
    leaf = signer.chain[0]
    who = etree.SubElement(root, f"{{{ns}}}Signer", nsmap={"dsig": NS_DS})
    data = etree.SubElement(who, ds("X509Data"))
    issuer_serial(etree.SubElement(data, ds("X509IssuerSerial")), leaf)
    etree.SubElement(data, ds("X509SubjectName")).text = dn_string(leaf.subject)
    sig, _, (digest,) = add_signature(root, signer.chain, [("", (ENVELOPED,), SHA1)], c14n=C14N_URI,
                                      method=RSA_SHA1 if interop else RSA_SHA256, nsmap={"dsig": NS_DS})
    etree.indent(root, space="  ")
    digest.text = digest_value(canonical_xml(root, exclude=sig), SHA1)
    sign_info(sig, signer.key)


def check_signer(signer: Signer, at: datetime | None = None, path=None) -> None:
    """:class:`~.errors.MediaError` unless ``signer`` can sign at ``at`` (default now): an RSA
    key that is the leaf's, and a chain that holds then (ST 430-2 clause 5: a package signed
    by an expired chain fails DCI's and ClairMeta's checks at its IssueDate)."""

    where = path or signer.folder
    if not signer.chain:
        raise MediaError(where, "no signer certificate")
    if not isinstance(signer.key, rsa.RSAPrivateKey):
        raise MediaError(where, "the signer's key is not an RSA private key")
    leaf = signer.chain[0]
    if signer.key.public_key().public_numbers() != leaf.public_key().public_numbers():
        raise MediaError(where, f"the private key is not the key of the chain's leaf ({dn_string(leaf.subject)})")
    report = check_certificates(leaf, signer.chain, at or datetime.now(timezone.utc), "the signer's chain")
    if not report.ok:
        raise MediaError(where, f"the signer's chain does not hold (ST 430-2): {'; '.join(report.problems)}")


def load_signer(folder) -> Signer:
    """The signer in ``folder`` as ``cinegpu kdm chain`` writes it: ``chain.pem`` (the
    certificates, any order) and ``leaf.key`` (the leaf's unencrypted PEM key), checked by
    :func:`check_signer`."""

    folder = Path(folder)
    if not folder.is_dir():
        raise MediaError(folder, "not a folder: --sign takes a chain folder as 'cinegpu kdm chain' writes "
                                 f"it ({CHAIN_FILES['chain']} and {CHAIN_FILES['key']})")
    missing = [CHAIN_FILES[k] for k in ("chain", "key") if not (folder / CHAIN_FILES[k]).is_file()]
    if missing:
        raise MediaError(folder, f"no {' nor '.join(missing)} in the chain folder (cinegpu kdm chain -o DIR "
                                 f"makes one)")
    chain = order_chain(read_certificates(folder / CHAIN_FILES["chain"]), folder / CHAIN_FILES["chain"])
    signer = Signer(chain, load_private_key(folder / CHAIN_FILES["key"]), folder)
    check_signer(signer)
    return signer


def signer_folder(environ=None) -> Path:
    """The user's own signer folder: ``$XDG_CONFIG_HOME/cinegpu/signer``, else
    ``$HOME/.config/cinegpu/signer`` (``environ``: default ``os.environ``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return Path(base) / "cinegpu" / "signer"


def user_signer(environ=None) -> tuple[Signer, bool]:
    """The user's own signer (:func:`signer_folder`) and whether it was made now: on first use
    a new ST 430-2 chain (:func:`.certificates.make_chain`, leaf ``CS.cinegpu.signer``) is
    written there, the folder (and each parent made for it, e.g. ``$XDG_CONFIG_HOME/cinegpu``)
    mode 700 and ``leaf.key`` 600 whatever the umask, as DCP-o-matic makes its own; a
    ``leaf.key`` or folder others may read or write is refused (:class:`~.errors.ExposedKey`)."""
    folder = signer_folder(environ)
    if (folder / CHAIN_FILES["chain"]).is_file() or (folder / CHAIN_FILES["key"]).exists():
        try:
            return load_signer(folder), False
        except ExposedKey:
            raise                   # its message says the chmod that fixes it
        except MediaError as exc:
            raise MediaError(folder, f"{exc.reason} (your own signer: move the folder away and a new "
                                     f"chain is made, or sign with --sign DIR)") from None
    make_private_folder(folder, "signer folder")
    chain = make_chain("cinegpu", "cinegpu.signer", role="CS", days=USER_CHAIN_DAYS)
    write_chain(chain, folder)
    return load_signer(folder), True


# -- checking ----------------------------------------------------------------------------------
def check_package_signature(document, path=None) -> PackageSignature:
    """The signature of a CPL or PKL: ``document`` a path, the document's bytes, or a parsed
    root element (with its comments and whitespace).  Never raises for a bad signature: its
    problems are reported (digest, signature value, ``Signer``, chain); a document that is not
    XML is a :class:`~.errors.CorruptMedia`."""
    root, path = _root(document, path)
    sig = root.find(ds("Signature"))
    if sig is None:
        return PackageSignature(path, False)
    problems: list[str] = []
    if sig is not _last_element(root):
        problems.append("ds:Signature is not the document's last element (ST 429-7 6.13, ST 429-8 5.10)")
    try:
        certs = key_info_certificates(sig, path)
    except CorruptMedia as exc:
        problems.append(exc.reason)
        certs = ()
    signer = _named_signer(root, certs, problems)
    digest = _check_digest(root, sig, path, problems)
    method = None
    if signer is not None:
        try:
            method = check_signature_value(sig, signer, path, MediaError)
        except MediaError as exc:
            problems.append(exc.reason)
    subjects: tuple[str, ...] = ()
    warnings: list[str] = []
    if signer is not None:
        # the chain's structure, and its issuers' validity, when the signer's certificate began
        report = check_certificates(signer, certs, signer.not_valid_before_utc, "the certificates of KeyInfo")
        subjects = report.subjects
        problems += [f"chain: {p}" for p in report.problems]
        warnings += _issue_date_outside(root, certs)
    return PackageSignature(path, True, None if signer is None else dn_string(signer.subject), method,
                            digest, subjects, tuple(problems), tuple(warnings))


def _root(document, path):
    if not isinstance(document, (bytes, str, os.PathLike)):
        return document, path
    if not isinstance(document, bytes):
        path = path or os.fspath(document)
        document = read_bounded(document, MAX_DOCUMENT_BYTES, "CPL or PKL")
    # comments and whitespace kept: the digest covers the document as it is
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False,
                             remove_comments=False, remove_blank_text=False)
    try:
        return etree.fromstring(document, parser), None if path is None else os.fspath(path)
    except etree.XMLSyntaxError as exc:
        line, col = exc.position if exc.position else (None, None)
        raise CorruptMedia(path, f"malformed XML (line {line}, column {col}): {exc.msg}") from None


def _last_element(root):
    elements = [c for c in root if isinstance(c.tag, str)]
    return elements[-1] if elements else None


def _named_signer(root, certs, problems: list):
    """The certificate ``Signer`` names by issuer and serial number (a problem, and None, when
    there is no ``Signer``, no certificate, or none it names)."""
    ns = root.nsmap.get(None)
    who = root.find(f"{{{ns}}}Signer" if ns else "Signer")
    if not certs:
        problems.append("KeyInfo holds no X509Certificate to check the signature with")
        return None
    if who is None:
        problems.append("a ds:Signature without a Signer element (ST 429-7 6.13, ST 429-8 5.10)")
        return None
    serial = (who.findtext(f".//{ds('X509SerialNumber')}") or "").strip()
    issuer = (who.findtext(f".//{ds('X509IssuerName')}") or "").strip()
    for c in certs:
        if serial.isdigit() and c.serial_number == int(serial) and dn_string(c.issuer) == issuer:
            subject = (who.findtext(f".//{ds('X509SubjectName')}") or "").strip()
            if subject and subject != dn_string(c.subject):
                problems.append(f"Signer's X509SubjectName {subject} is not its certificate's "
                                f"subject {dn_string(c.subject)}")
            return c
    problems.append(f"Signer names serial number {serial or '(none)'} of {issuer or '(no issuer)'}, which "
                    f"no certificate of KeyInfo is")
    return None


def _check_digest(root, sig, path, problems: list) -> str | None:
    """The one reference's digest over the document without ``sig``: ``URI=""`` with the
    enveloped-signature transform (XML-DSig 4.3.3.3, 6.6.4).  Returns the digest's name."""
    info = sig.find(ds("SignedInfo"))
    refs = [] if info is None else info.findall(ds("Reference"))
    if len(refs) != 1 or (refs[0].get("URI") or "") != "":
        problems.append(f"the signature has {len(refs)} reference(s), not one to the whole document (URI=\"\")")
        return None
    ref = refs[0]
    transforms = [t.get("Algorithm") for t in ref.iterfind(f"{ds('Transforms')}/{ds('Transform')}")]
    if transforms != [ENVELOPED]:
        problems.append(f"the reference's transforms are {transforms}, not the enveloped-signature transform")
        return None
    method = (ref.find(ds("DigestMethod")).get("Algorithm") if ref.find(ds("DigestMethod")) is not None
              else None)
    if method not in DIGESTS:
        problems.append(f"digest method {method!r} is not SHA-1 or SHA-256")
        return None
    want = "".join((ref.findtext(ds("DigestValue")) or "").split())
    if digest_value(canonical_xml(root, exclude=sig), method) != want:
        problems.append("the document's digest differs from the signed DigestValue: the document was "
                        "changed after it was signed")
    return DIGESTS[method][0]


def _issue_date_outside(root, certs) -> list[str]:
    """A warning per certificate whose validity does not cover the document's ``IssueDate``
    (UTC when it names no offset), the time at which DCI (DCSS 9.4.3.5) and ClairMeta check
    the signer's chain: the signature still holds, but such a package may be refused."""
    ns = root.nsmap.get(None)
    t = (root.findtext(f"{{{ns}}}IssueDate" if ns else "IssueDate") or "").strip()
    try:
        d = datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith("Z") else t)
    except ValueError:
        return [f"the IssueDate {t[:40]!r} is not a date, so the chain's validity was not checked at it"]
    issued = d if d.tzinfo is not None else d.replace(tzinfo=timezone.utc)
    return [f"the IssueDate {t} lies outside the validity of {dn_string(c.subject)} "
            f"({c.not_valid_before_utc:%Y-%m-%d} to {c.not_valid_after_utc:%Y-%m-%d}), at which DCI "
            f"checks the chain" for c in certs
            if not (c.not_valid_before_utc <= issued <= c.not_valid_after_utc)]
