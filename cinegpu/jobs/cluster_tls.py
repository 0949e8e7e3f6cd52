"""TLS credentials for a Dask cluster across machines: made, read and checked.

Dask authenticates both ends of every connection of a ``tls://`` cluster (``distributed``'s
:class:`~distributed.security.Security`: each side shows a certificate the other's CA file
vouches for, ``ssl.CERT_REQUIRED`` both ways), so a process that cannot show one is refused
before it can send a task. Each machine of the cluster holds a folder of three PEM files:

- ``ca.pem``: the cluster's own CA certificate, the only issuer either side trusts;
- ``cert.pem``: this side's certificate, issued by that CA;
- ``key.pem``: this side's private key, mode 0600 in a folder only its owner may write
  (:func:`cinegpu.media.security.key_files.check_private_file`).

:func:`make_credentials` makes a CA and one such folder per role (``scheduler``, ``worker``,
``client`` by default): ``cinegpu cluster-tls DIR``. The CA's own key stays in ``DIR/ca`` to
issue more later and need not leave the machine. :func:`read_credentials` reads a folder
through the bounded readers (the key through the private-key check) for :mod:`.cluster`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from cinegpu.media.errors import MediaError
from cinegpu.media.files import create_new_file, read_bounded
from cinegpu.media.security.key_files import make_private_folder, read_private_file

__all__ = ["CA_FILE", "CERT_FILE", "KEY_FILE", "ROLES", "TlsCredentials", "make_credentials",
           "read_credentials"]

CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "cert.pem", "key.pem"
#: the folders :func:`make_credentials` makes by default, one for each kind of process
ROLES = ("scheduler", "worker", "client")
#: bytes a PEM certificate or key file may have (a few KiB in practice)
PEM_LIMIT = 64 * 1024


@dataclass(frozen=True)
class TlsCredentials:
    """One side's PEM texts: the cluster CA's certificate, its own certificate and key."""

    ca: str
    cert: str
    key: str

    def __repr__(self) -> str:                      # never the key in a log line
        return "TlsCredentials(ca=..., cert=..., key=<hidden>)"


def read_credentials(folder) -> TlsCredentials:
    """The three PEM files of ``folder`` (:data:`CA_FILE`, :data:`CERT_FILE`, :data:`KEY_FILE`),
    each read through a bounded reader, the key only when private. MediaError (ExposedKey for
    a key others may read) naming the file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise MediaError(folder, f"not a folder of cluster TLS credentials ({CA_FILE}, {CERT_FILE}, "
                                 f"{KEY_FILE}); make them with: cinegpu cluster-tls DIR")
    texts = []
    for name, what in ((CA_FILE, "cluster CA certificate"), (CERT_FILE, "cluster certificate")):
        texts.append(_pem(read_bounded(folder / name, PEM_LIMIT, what), folder / name, "CERTIFICATE"))
    key = _pem(read_private_file(folder / KEY_FILE, PEM_LIMIT, "cluster private key"), folder / KEY_FILE,
               "PRIVATE KEY")
    return TlsCredentials(texts[0], texts[1], key)


def _pem(data: bytes, path: Path, kind: str) -> str:
    """``data`` as text when it is a PEM block of ``kind``; MediaError otherwise."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    if f"-----BEGIN {kind}-----" not in text and not (kind == "PRIVATE KEY" and "PRIVATE KEY-----" in text):
        raise MediaError(path, f"not a PEM {kind.lower()} (no '-----BEGIN {kind}-----' line)")
    return text


def make_credentials(folder, roles=ROLES, *, days: int = 365, name: str = "cinegpu cluster") -> dict[str, Path]:
    """A new cluster CA and, for each role, a folder ``folder/ROLE`` of :data:`CA_FILE`,
    :data:`CERT_FILE` and :data:`KEY_FILE` (keys mode 0600, folders 0700 whatever the umask);
    the CA's key in ``folder/ca``. Certificates valid from an hour ago for ``days`` days.
    Role -> its folder. MediaError when ``folder`` has credentials already (nothing is
    overwritten) or cannot be written."""
    if days < 1:
        raise ValueError(f"credentials valid for {days} days are none")
    roles = tuple(dict.fromkeys(roles))
    for role in roles:
        if not role or role == "ca" or "/" in role or role.startswith("."):
            raise ValueError(f"a role is a plain folder name other than 'ca', got {role!r}")
    folder = make_private_folder(folder, "cluster TLS folder")
    for sub in ("ca", *roles):
        if (folder / sub).exists():
            raise MediaError(folder / sub, "cluster TLS credentials exist there already; "
                                           "choose another folder (nothing was overwritten)")
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate(ca_key.public_key(), f"{name} CA", None, ca_key, start, days + 1)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    made = {}
    ca_dir = make_private_folder(folder / "ca", "cluster CA folder")
    create_new_file(ca_dir / CA_FILE, ca_pem, 0o644, "cluster CA certificate")
    create_new_file(ca_dir / "ca.key", _key_pem(ca_key), 0o600, "cluster CA private key")
    for role in roles:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(key.public_key(), f"{name} {role}", ca_cert, ca_key, start, days)
        d = make_private_folder(folder / role, f"cluster {role} folder")
        create_new_file(d / CA_FILE, ca_pem, 0o644, "cluster CA certificate")
        create_new_file(d / CERT_FILE, cert.public_bytes(serialization.Encoding.PEM), 0o644,
                        f"cluster {role} certificate")
        create_new_file(d / KEY_FILE, _key_pem(key), 0o600, f"cluster {role} private key")
        made[role] = d
    return made


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(public, cn: str, issuer, issuer_key, start: datetime, days: int):
    """A CA certificate (``issuer`` None: self-signed) or one for a cluster process, good as
    both TLS server and client (every Dask process is both)."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    ca = issuer is None
    ski = x509.SubjectKeyIdentifier.from_public_key(public)
    b = (x509.CertificateBuilder()
         .subject_name(subject)
         .issuer_name(subject if ca else issuer.subject)
         .public_key(public)
         .serial_number(secrets.randbits(63) | 1)
         .not_valid_before(start)
         .not_valid_after(start + timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
         .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                      key_encipherment=not ca, data_encipherment=False, key_agreement=not ca,
                                      key_cert_sign=ca, crl_sign=ca, encipher_only=False,
                                      decipher_only=False), critical=True)
         .add_extension(ski, critical=False))
    if not ca:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                   ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                            critical=False)
    return b.sign(issuer_key, hashes.SHA256())
