"""KDMs (cinegpu.media.security.kdm): parsing, the XML signature, the certificate chain, the content
keys, the validity window, hostile input, and ``cinegpu kdm inspect``, on KDMs another
implementation produced (libdcp's test data in ../shared/dcp-samples/libdcp-kdm, read in
place, its world-readable private keys copied mode 600 first: an easyDCP KDM whose signature xmlsec verifies, and a cinemaslides one whose
AuthenticatedPublic no longer matches its signature, which xmlsec refuses too)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from cinegpu.media.errors import CorruptMedia, KdmRefused, UnsupportedMedia
from cinegpu.media.security import kdm as K
from conftest import DCP_SAMPLES
from helpers.cli import cinegpu
from helpers.kdm_build import private_copy

KDMS = DCP_SAMPLES / "libdcp-kdm"
pytestmark = pytest.mark.skipif(not KDMS.is_dir(), reason="../shared/dcp-samples/libdcp-kdm is absent")
EASYDCP = KDMS / "target.pem.crt.de5d4eba-e683-41ca-bdda-aa4ad96af3f4.kdm.xml"
SHARED_EASYDCP_KEY = KDMS / "failing-private.key"
SLIDES = KDMS / "kdm_TONEPLATES-SMPTE-ENC_.smpte-430-2.ROOT.NOT_FOR_PRODUCTION_20130706_20230702_CAR_OV_t1_8971c838.xml"
SHARED_SLIDES_KEY = KDMS / "private.key"


@pytest.fixture(scope="module")
def private_keys(tmp_path_factory):
    """The shared sample keys, copied mode 600 (they lie world-readable, which cinegpu refuses)."""
    folder = tmp_path_factory.mktemp("keys")
    return {"easydcp": private_copy(SHARED_EASYDCP_KEY, folder), "slides": private_copy(SHARED_SLIDES_KEY, folder)}


def test_the_public_fields():
    k = K.read_kdm(SLIDES)
    assert k.cpl_id == "eece17de-77e8-4a55-9347-b6bab5724b9f"
    assert [(t.key_type, t.key_id) for t in k.key_ids] == [
        ("MDIK", "4ac4f922-8239-4831-b23b-31426d0542c4"), ("MDAK", "73baf5de-e195-4542-ab28-8a465f7d4079")]
    assert k.not_before == datetime(2022, 12, 30, 17, 38, 54, tzinfo=timezone.utc)
    assert k.not_after == datetime(2023, 1, 19, 20, 2, 54, tzinfo=timezone.utc)
    assert "CS.smpte-430-2.LEAF" in k.recipient_subject and k.recipient_serial == "7"
    assert len(k.cipher_values) == 2 and len(k.certificates) == 3
    assert k.forensic_flags[0].endswith("#mrkflg-picture-disable")
    e = K.read_kdm(EASYDCP)
    assert e.cpl_id == "1296643f-e0ba-438e-bcfa-e47852173d5b"
    assert [t.key_type for t in e.key_ids] == ["MDIK", "MDAK", "MDIK", "MDAK"]
    assert len(e.cipher_values) == 4 and len(e.certificates) == 4


@pytest.mark.parametrize("path,key,count", [(SLIDES, "slides", 2), (EASYDCP, "easydcp", 4)])
def test_the_recipients_key_opens_every_content_key(private_keys, path, key, count):
    """Each block decrypts to the ST 430-1 structure id, the KDM's composition and a key id of
    its KeyIdList with the same type, in order: what a wrong decryption cannot give."""
    k = K.read_kdm(path)
    keys = K.decrypt_keys(k, K.load_private_key(private_keys[key]))
    assert len(keys) == count
    assert [(c.key_type, c.key_id) for c in keys] == [(t.key_type, t.key_id) for t in k.key_ids]
    for c in keys:
        assert c.cpl_id == k.cpl_id and len(c.key) == 16 and len(c.signer_thumbprint) == 20
        assert (c.not_before, c.not_after) == (k.not_before, k.not_after)
        assert c.key.hex() not in repr(c) and "key=" not in repr(c)
    assert len({c.key for c in keys}) == count


def test_another_recipients_key_is_refused_without_naming_a_key(private_keys):
    k = K.read_kdm(SLIDES)
    with pytest.raises(KdmRefused, match="not the recipient's key .*CS.smpte-430-2.LEAF"):
        K.decrypt_keys(k, K.load_private_key(private_keys["easydcp"]))
    with pytest.raises(KdmRefused, match="not the recipient's key"):
        K.decrypt_keys(K.read_kdm(EASYDCP), K.load_private_key(private_keys["slides"]))


def test_key_blocks_name_the_signer(private_keys):
    """Each block's signer thumbprint is SHA-1 of the signer certificate's signed part: a KDM
    whose Signer names another of its certificates is refused when its keys are opened."""
    data = EASYDCP.read_bytes()
    k = K.parse_kdm(data)
    other = [c for c in k.certificates if c is not K._signer_certificate(k)][0]
    changed = re.sub(rb"(<Signer>.*?<ds:X509SerialNumber>)\d+", lambda m: m.group(1) + str(other.serial_number).encode(),
                     data, count=1, flags=re.S)
    assert changed != data
    with pytest.raises(KdmRefused, match="made by another signer"):
        K.decrypt_keys(K.parse_kdm(changed), K.load_private_key(private_keys["easydcp"]))


def test_the_signature_as_xmlsec_sees_it():
    """The easyDCP KDM's signature holds, the cinemaslides one's does not (its public part
    changed); with python-xmlsec installed, the same two answers from it."""
    assert K.check_signature(K.read_kdm(EASYDCP)).startswith("RSA-SHA256 by ")
    with pytest.raises(KdmRefused, match="AuthenticatedPublic.*changed after it was signed"):
        K.check_signature(K.read_kdm(SLIDES))
    try:
        import xmlsec
    except Exception as exc:        # not installed, or built on another libxml2 than lxml's
        pytest.skip(f"python-xmlsec is not usable here: {exc}")
    from cryptography.hazmat.primitives import serialization
    from lxml import etree

    for path, want in ((EASYDCP, True), (SLIDES, False)):
        k = K.read_kdm(path)
        root = etree.fromstring(path.read_bytes())
        xmlsec.tree.add_ids(root, ["Id"])
        ctx = xmlsec.SignatureContext()
        signer = K._signer_certificate(k)
        ctx.key = xmlsec.Key.from_memory(signer.public_bytes(serialization.Encoding.PEM), xmlsec.KeyFormat.CERT_PEM)
        try:
            ctx.verify(root.find(f"{{{K.NS_DS}}}Signature"))
            got = True
        except xmlsec.Error:
            got = False
        assert got is want, path.name


@pytest.mark.parametrize("change,words", [
    (lambda b: b.replace(b"Assume Trust TDL", b"Assume Trust TDX"), "AuthenticatedPublic.*changed after"),
    (lambda b: re.sub(rb"(<enc:CipherValue>)(.)", lambda m: m.group(1) + (b"A" if m.group(2) != b"A" else b"B"), b, count=1),
     "AuthenticatedPrivate.*changed after"),
    (lambda b: re.sub(rb"(<ds:SignatureValue>)(.)", lambda m: m.group(1) + (b"A" if m.group(2) != b"A" else b"B"), b, count=1),
     "does not verify with the signer's certificate"),
    (lambda b: re.sub(rb"<ds:Signature>.*</ds:Signature>", b"", b, flags=re.S), "not signed"),
    (lambda b: b.replace(b'URI="#ID_AuthenticatedPrivate"', b'URI="#nowhere"'), "names no element"),
])
def test_a_changed_kdm_is_refused(change, words):
    data = change(EASYDCP.read_bytes())
    assert data != EASYDCP.read_bytes()
    with pytest.raises(KdmRefused, match=words):
        K.check_signature(K.parse_kdm(data))


def test_the_certificate_chain():
    """Signer to self-signed root, each signed by the next; dates checked at the time asked;
    the easyDCP leaf's basicConstraints (a path length on a non-CA) is reported."""
    e = K.read_kdm(EASYDCP)
    inside = datetime(2015, 1, 1, tzinfo=timezone.utc)
    r = K.check_chain(e, inside)
    assert len(r.subjects) == 4 and ".ROOT.DCINEMA" in r.subjects[-1] and "CS.DIAGONAL" in r.subjects[0]
    assert len(r.problems) == 1 and "malformed basicConstraints" in r.problems[0]
    late = K.check_chain(e, datetime(2200, 1, 1, tzinfo=timezone.utc))
    assert sum("not at 2200-01-01" in p for p in late.problems) == 4
    s = K.read_kdm(SLIDES)
    assert K.check_chain(s, s.not_before).ok
    assert len(K.check_chain(s, s.not_before).subjects) == 3
    # a certificate left out of KeyInfo breaks the chain
    data = SLIDES.read_bytes()
    certs = re.findall(rb"<ds:X509Data>.*?</ds:X509Data>", data, flags=re.S)
    broken = K.parse_kdm(data.replace(certs[1], b""))
    assert any("not among the KDM's certificates" in p for p in K.check_chain(broken, s.not_before).problems)


def test_the_window_and_the_composition():
    k = K.read_kdm(EASYDCP)
    K.check_window(k, "urn:uuid:" + k.cpl_id, k.not_before + timedelta(days=1))
    with pytest.raises(KdmRefused, match="valid from"):
        K.check_window(k, k.cpl_id, k.not_before - timedelta(seconds=1))
    with pytest.raises(KdmRefused, match="expired"):
        K.check_window(k, k.cpl_id, k.not_after + timedelta(seconds=1))
    with pytest.raises(KdmRefused, match="is for composition 1296643f"):
        K.check_window(k, "eece17de-77e8-4a55-9347-b6bab5724b9f", k.not_before + timedelta(days=1))


@pytest.mark.parametrize("make,kind,words", [
    (lambda b: b[: len(b) // 2], CorruptMedia, "malformed XML"),
    (lambda b: b"<CompositionPlaylist/>", UnsupportedMedia, "not a KDM"),
    (lambda b: b + b" " * K.MAX_KDM_BYTES, UnsupportedMedia, "is not a KDM"),
    (lambda b: re.sub(rb"<enc:CipherValue>", b"<enc:CipherValue>!!", b, count=1), CorruptMedia, "CipherValue is not base64"),
    (lambda b: b.replace(b"urn:uuid:1296643f-e0ba-438e-bcfa-e47852173d5b", b"urn:uuid:not-a-uuid"), CorruptMedia, "not a UUID"),
    (lambda b: re.sub(rb"<KeyIdList>.*</KeyIdList>", b"<KeyIdList/>", b, flags=re.S), CorruptMedia, "names no key"),
    (lambda b: b.replace(b"2013-07-08T07:13:26+02:00</ContentKeysNotValidBefore>", b"soon</ContentKeysNotValidBefore>"),
     CorruptMedia, "not a date"),
    (lambda b: b"<!DOCTYPE d [<!ENTITY a 'aaaaaaaaaa'><!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;'>]>" + b[b.index(b"<DCinema"):]
     .replace(b"Assume Trust TDL", b"&b;&b;&b;&b;&b;&b;&b;&b;"), KdmRefused, "AuthenticatedPublic.*changed after"),
])
def test_hostile_kdms_are_one_media_error(make, kind, words):
    data = make(EASYDCP.read_bytes())
    with pytest.raises(kind, match=words):
        k = K.parse_kdm(data)
        K.check_signature(k)        # entities: parsed without expansion, then refused


@pytest.mark.slow  # long: in the slow pass (issue 50: the quick pass under 150 s)
def test_inspect_prints_the_fields_and_with_the_key_the_keys(tmp_path, private_keys):
    r = cinegpu("kdm", "inspect", str(EASYDCP), "--key", str(private_keys["easydcp"]), "--json")
    assert r.returncode == 1, r.stderr          # the window and the leaf's extension: problems
    report = json.loads(r.stdout)
    assert report["cpl_id"] == "1296643f-e0ba-438e-bcfa-e47852173d5b"
    assert report["signature"].startswith("RSA-SHA256")
    assert len(report["chain"]) == 4 and [k["type"] for k in report["keys"]] == ["MDIK", "MDAK", "MDIK", "MDAK"]
    assert all(re.fullmatch("[0-9a-f]{32}", k["key"]) for k in report["keys"])
    assert any(p.startswith("validity:") for p in report["problems"])
    r = cinegpu("kdm", "inspect", str(SLIDES))
    assert r.returncode == 1 and "problem: signature:" in r.stdout and "key " not in r.stdout.replace("key id", "")
    r = cinegpu("kdm", "inspect", str(tmp_path / "missing.xml"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "cannot read" in r.stderr
