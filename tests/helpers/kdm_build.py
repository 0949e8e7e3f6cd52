"""KDMs for the playback tests, made by the project's own KDM maker (:func:`cinegpu.media.security.kdm_write.make_kdm`,
:func:`cinegpu.media.security.certificates.make_chain`): a signer chain and recipients whose certificates
are valid from 2026-01-01 for ten years, so that a test may choose a window in 2026."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from cinegpu.media.security.certificates import Chain
from cinegpu.media.security.certificates import make_chain as _make_chain
from cinegpu.media.security.content_keys import TrackKey
from cinegpu.media.security.kdm_write import make_kdm as _make_kdm

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


@dataclass
class Party:
    """A recipient: its private key and its certificate."""

    key: object
    cert: object

    def pem(self) -> bytes:
        return self.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption())


def private_copy(src, folder) -> Path:
    """A copy of the private key ``src`` in ``folder`` (made mode 700 if absent), mode 600: a
    shared sample key lies world-readable (mode 444) in a read-only folder, and cinegpu refuses
    to read a key others may read (:mod:`cinegpu.media.security.key_files`)."""
    folder = Path(folder)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    dst = folder / Path(src).name
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o600)
    return dst


def make_chain() -> tuple[Chain, Chain]:
    """(the recipients' issuing chain, the signer's chain)."""
    return (_make_chain(common_name="projectors", role="SM", not_before=START),
            _make_chain(common_name="distributor", not_before=START))


def make_recipient(root: Chain, name: str = "projector") -> Party:
    c = _make_chain(common_name=name, role="SM", not_before=START)
    return Party(c.leaf_key, c.leaf)


def make_kdm(*, root, signer: Chain, recipient: Party, cpl_id: str, title: str, keys, not_before, not_after,
             message_id: str | None = None) -> bytes:
    """A signed KDM for ``recipient`` of ``keys`` ((key type, key id, 16-byte key) each)."""
    return _make_kdm(cpl_id=cpl_id, content_title=title, keys=[TrackKey(t, i, k) for t, i, k in keys],
                     recipient=recipient.cert, signer_key=signer.leaf_key, signer_chain=signer.certificates,
                     not_before=not_before, not_after=not_after, annotation=f"{title} test KDM",
                     message_id=message_id)


def kdm_schema():
    """ClairMeta's ST 430-1 KDM schema with what it imports (ST 430-3 ETM, XML-DSig, XML-Enc),
    every import resolved to ClairMeta's own files, nothing from the network.  ClairMeta's ETM
    schema has its UUID pattern broken over two lines ("[0-9a-fA-\\nF]"), which libxml2 refuses
    to compile: joined here, as the standard prints it."""
    clairmeta = pytest.importorskip("clairmeta", reason="ClairMeta (a test dependency) is not installed")
    from lxml import etree

    xsd = Path(clairmeta.__file__).parent / "xsd"

    class Local(etree.Resolver):
        def resolve(self, url, pubid, context):
            name = url.rsplit("/", 1)[-1]
            if name == "SMPTE-430-3-2006-ETM.xsd":
                text = (xsd / name).read_text(encoding="utf-8")
                fixed = re.sub(r"A-\s*\nF", "A-F", text)
                return self.resolve_string(fixed, context)
            if (xsd / name).is_file():
                return self.resolve_filename(str(xsd / name), context)
            raise AssertionError(f"the schemas import {url}, which is not in ClairMeta's xsd folder")

    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(Local())
    return etree.XMLSchema(etree.parse(str(xsd / "SMPTE-430-1-2006-KDM.xsd"), parser))
