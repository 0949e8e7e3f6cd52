"""Making KDMs (cinegpu.media.security.kdm_write) with chains made by cinegpu.media.security.certificates: read
back by cinegpu's own reader (signature, chain, keys) and checked independently: the ST 430-3
ETM and ST 430-1 KDM schemas ClairMeta ships, lxml's whole-document C14N, openssl (signature,
chain, RSA-OAEP decryption) and python-xmlsec where it is usable; changed messages, wrong keys
and impossible requests are refused, and no key's bytes appear in an error."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import uuid
from copy import deepcopy
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cinegpu.media.errors import CorruptMedia, KdmRefused, MediaError
from cinegpu.media.package.read import read_cpl
from cinegpu.media.security import kdm as K
from cinegpu.media.security.certificates import (
    certificate_thumbprint,
    check_certificates,
    make_chain,
    order_chain,
    public_key_thumbprint,
    read_certificates,
    write_chain,
)
from cinegpu.media.security.content_keys import KeyFile, TrackKey, new_track_key, read_key_file, write_key_file
from cinegpu.media.security.kdm_write import ASSUME_TRUST, FORENSIC_FLAGS, composition_keys, make_kdm, parse_time
from cinegpu.media.security.xml_c14n import canonical_xml
from conftest import DCP_SAMPLES
from helpers.kdm_build import kdm_schema

LIBDCP_DCP = DCP_SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted"
LIBDCP_CPL = LIBDCP_DCP / "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml"
LIBDCP_KEY_IDS = [("MDIK", "ac8d301c-e5d9-4343-b6f3-ba2668adbe56"), ("MDAK", "7ab6c77b-6648-44b9-8549-a5290ada6238")]
needs_libdcp_dcp = pytest.mark.skipif(not LIBDCP_CPL.is_file(), reason=f"{LIBDCP_CPL} is absent")
DS = "{http://www.w3.org/2000/09/xmldsig#}"
NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture(scope="module")
def signer():
    return make_chain("cinegpu.test", "signer", not_before=NOW - timedelta(days=1))


@pytest.fixture(scope="module")
def recipient():
    return make_chain("cinema.test", "projector", role="SM", not_before=NOW - timedelta(days=1))


def _keys(*types):
    return [new_track_key(t) for t in types]


def _make(signer, recipient, keys, **kw):
    args = dict(cpl_id="6affb8ee-0020-4dff-a53c-17652f6358ab", content_title="A Test DCP", keys=keys,
                recipient=recipient.leaf, signer_key=signer.leaf_key, signer_chain=signer.certificates,
                not_before=NOW, not_after=NOW + timedelta(days=7))
    args.update(kw)
    return make_kdm(**args)


@pytest.fixture(scope="module")
def made(signer, recipient):
    keys = _keys("MDIK", "MDAK", "MDSK")
    return keys, _make(signer, recipient, keys)


# -- certificates ------------------------------------------------------------------------------
def test_a_made_chain_is_what_st_430_2_asks(signer):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    report = check_certificates(signer.leaf, [signer.root, signer.leaf, signer.intermediate], NOW)
    assert report.ok, report.problems
    assert len(report.subjects) == 3 and "CN=CS.signer" in report.subjects[0]
    assert [c.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value for c in signer.certificates] == \
        ["CS.signer", ".signer.INTERMEDIATE", ".signer.ROOT"]
    for depth, cert in enumerate(reversed(signer.certificates)):      # root, intermediate, leaf
        bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
        ku = cert.extensions.get_extension_for_class(x509.KeyUsage)
        assert bc.critical and ku.critical
        assert (bc.value.ca, bc.value.path_length) == [(True, 1), (True, 0), (False, None)][depth]
        assert (ku.value.key_cert_sign, ku.value.crl_sign) == ((True, True) if depth < 2 else (False, False))
        assert (ku.value.digital_signature, ku.value.key_encipherment) == ((False, False) if depth < 2 else (True, True))
        assert cert.public_key().key_size == 2048 and cert.public_key().public_numbers().e == 65537
        assert cert.signature_hash_algorithm.name == "sha256" and cert.version == x509.Version.v3
        assert 0 < cert.serial_number < 1 << 63
        assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.DN_QUALIFIER)] == [public_key_thumbprint(cert)]
        assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "cinegpu.test"
        assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATIONAL_UNIT_NAME)[0].value == "cinegpu.test"
    # the leaf's window is the one asked; no certificate outlives its issuer
    assert signer.leaf.not_valid_after_utc - signer.leaf.not_valid_before_utc == timedelta(days=3640)   # the default
    assert signer.leaf.not_valid_before_utc == NOW - timedelta(days=1)
    ends = [c.not_valid_after_utc for c in signer.certificates]
    assert ends == sorted(ends) and len(set(ends)) == 3
    assert "leaf_key" not in repr(signer) and "PRIVATE" not in repr(signer)


def test_check_certificates_finds_a_broken_chain(signer, recipient):
    assert not check_certificates(signer.leaf, [signer.leaf, signer.root], NOW).ok    # no intermediate
    mixed = check_certificates(signer.leaf, [signer.leaf, recipient.intermediate, signer.root], NOW)
    assert any("not among" in p for p in mixed.problems)
    late = check_certificates(signer.leaf, signer.certificates, NOW + timedelta(days=3655))
    assert sum("not at" in p for p in late.problems) == 3


def test_write_chain_writes_pem_files_and_never_overwrites(tmp_path, signer):
    paths = write_chain(signer, tmp_path / "chain")
    assert sorted(p.name for p in paths.values()) == sorted(
        ["ca.self-signed.pem", "intermediate.signed.pem", "leaf.signed.pem", "chain.pem", "leaf.key"])
    assert paths["key"].stat().st_mode & 0o777 == 0o600
    assert read_certificates(paths["chain"]) == signer.certificates            # leaf first
    assert read_certificates(paths["root"]) == (signer.root,)
    key = K.load_private_key(paths["key"])
    assert key.public_key().public_numbers() == signer.leaf.public_key().public_numbers()
    before = paths["key"].read_bytes()
    with pytest.raises(MediaError, match="exist.* already"):
        write_chain(make_chain(), tmp_path / "chain")
    assert paths["key"].read_bytes() == before
    # one file of the names taken: nothing written at all
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "chain.pem").write_text("mine")
    with pytest.raises(MediaError, match="chain.pem"):
        write_chain(signer, tmp_path / "other")
    assert [p.name for p in (tmp_path / "other").iterdir()] == ["chain.pem"]


def test_order_chain(signer, recipient):
    shuffled = [signer.root, signer.leaf, signer.intermediate]
    assert order_chain(shuffled) == signer.certificates
    assert order_chain([recipient.leaf]) == (recipient.leaf,)
    with pytest.raises(CorruptMedia, match="not one chain"):
        order_chain([signer.leaf, recipient.leaf])
    with pytest.raises(CorruptMedia, match="not one chain"):
        order_chain([signer.leaf, signer.intermediate, recipient.root])


# -- a KDM read back ---------------------------------------------------------------------------
def test_a_kdm_reads_back_with_exactly_its_keys(made, signer, recipient):
    keys, data = made
    k = K.parse_kdm(data)
    assert K.check_signature(k).startswith("RSA-SHA256 by ") and "CN=CS.signer" in K.check_signature(k)
    assert K.check_chain(k).ok and len(K.check_chain(k).subjects) == 3
    assert (k.cpl_id, k.content_title, k.annotation) == ("6affb8ee-0020-4dff-a53c-17652f6358ab", "A Test DCP", "A Test DCP")
    assert (k.not_before, k.not_after) == (NOW, NOW + timedelta(days=7))
    assert [(t.key_type, t.key_id) for t in k.key_ids] == [(x.key_type, x.key_id) for x in keys]
    assert "CN=SM.projector" in k.recipient_subject
    assert k.recipient_serial == str(recipient.leaf.serial_number)
    assert k.device_thumbprints == (ASSUME_TRUST,) and k.forensic_flags == ()
    assert ASSUME_TRUST == base64.b64encode(hashlib.sha1(b"").digest()).decode()
    got = K.decrypt_keys(k, recipient.leaf_key)
    assert [(c.key_type, c.key_id, c.key) for c in got] == [(x.key_type, x.key_id, x.key) for x in keys]
    assert all(c.signer_thumbprint == hashlib.sha1(signer.leaf.tbs_certificate_bytes).digest() for c in got)
    assert all((c.not_before, c.not_after, c.cpl_id) == (k.not_before, k.not_after, k.cpl_id) for c in got)
    K.check_window(k, "urn:uuid:6affb8ee-0020-4dff-a53c-17652f6358ab", NOW + timedelta(days=1))
    assert len(data) < 20_000 and all(x.key.hex() not in data.decode() for x in keys)


def test_element_order_and_namespaces_follow_the_schemas(made):
    """The layout libdcp and easyDCP write: ETM default namespace with ds and enc prefixes,
    KDMRequiredExtensions in its own default namespace, KeyType with its scope, and the
    signature's parts in XML-DSig's order."""
    from lxml import etree

    root = etree.fromstring(made[1])
    assert root.nsmap == {None: K.NS_ETM, "ds": K.NS_DS, "enc": K.NS_ENC}
    local = [etree.QName(c).localname for c in root]
    assert local == ["AuthenticatedPublic", "AuthenticatedPrivate", "Signature"]
    assert [etree.QName(c).localname for c in root[0]] == [
        "MessageId", "MessageType", "AnnotationText", "IssueDate", "Signer", "RequiredExtensions", "NonCriticalExtensions"]
    ext = root[0][5][0]
    assert etree.QName(ext).localname == "KDMRequiredExtensions" and ext.nsmap[None] == K.NS_KDM
    assert [etree.QName(c).localname for c in ext] == [
        "Recipient", "CompositionPlaylistId", "ContentTitleText", "ContentKeysNotValidBefore",
        "ContentKeysNotValidAfter", "AuthorizedDeviceInfo", "KeyIdList"]
    assert all(t.get("scope") == "http://www.smpte-ra.org/430-1/2006/KDM#kdm-key-type"
               for t in ext.iter(f"{{{K.NS_KDM}}}KeyType"))
    assert [etree.QName(c).localname for c in root[2]] == ["SignedInfo", "SignatureValue", "KeyInfo"]
    info = root[2][0]
    assert [r.get("URI") for r in info.iter(f"{DS}Reference")] == ["#ID_AuthenticatedPublic", "#ID_AuthenticatedPrivate"]
    assert info[0].get("Algorithm") == "http://www.w3.org/TR/2001/REC-xml-c14n-20010315#WithComments"
    assert info[1].get("Algorithm") == "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
    assert all(m.get("Algorithm") == "http://www.w3.org/2001/04/xmlenc#sha256" for m in info.iter(f"{DS}DigestMethod"))
    assert len(root[2][2]) == 3 and all(len(d) == 2 for d in root[2][2])     # X509IssuerSerial + certificate
    methods = root[1].findall(f"{{{K.NS_ENC}}}EncryptedKey/{{{K.NS_ENC}}}EncryptionMethod")
    assert len(methods) == 3 and {m.get("Algorithm") for m in methods} == {"http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"}
    times = [ext[3].text, ext[4].text, root[0][3].text]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", t) for t in times)


def test_the_kdm_validates_against_the_etm_and_kdm_schemas(made, signer, recipient):
    from lxml import etree

    schema = kdm_schema()
    flagged = _make(signer, recipient, _keys("MDIK"), forensic_flags=["picture", "audio"],
                    trusted_devices=[recipient.leaf])
    for data in (made[1], flagged):
        assert schema.validate(etree.fromstring(data)), schema.error_log
    libdcp = DCP_SAMPLES / "libdcp-kdm" / "target.pem.crt.de5d4eba-e683-41ca-bdda-aa4ad96af3f4.kdm.xml"
    if libdcp.is_file():        # the schema takes another implementation's KDM as well
        assert schema.validate(etree.parse(str(libdcp)))
    # and it can fail: IssueDate moved after Signer, a KeyId that is not a urn:uuid
    moved = etree.fromstring(made[1])
    public = moved[0]
    public.insert(5, public[3])
    assert not schema.validate(moved)
    bad = re.sub(rb"<KeyId>urn:uuid:", b"<KeyId>", made[1], count=1)
    assert not schema.validate(etree.fromstring(bad))


def test_forensic_flags_and_trusted_devices(signer, recipient):
    data = _make(signer, recipient, _keys("MDIK"), forensic_flags=["picture", FORENSIC_FLAGS["audio"]],
                 trusted_devices=[recipient.leaf, signer.leaf])
    k = K.parse_kdm(data)
    assert k.forensic_flags == (FORENSIC_FLAGS["picture"], FORENSIC_FLAGS["audio"])
    assert k.device_thumbprints == tuple(base64.b64encode(hashlib.sha1(c.tbs_certificate_bytes).digest()).decode()
                                         for c in (recipient.leaf, signer.leaf))
    assert certificate_thumbprint(signer.leaf) == hashlib.sha1(signer.leaf.tbs_certificate_bytes).digest()


def test_times_keep_their_offset(signer, recipient):
    """A time is written to the second in the offset it was given (ISO 8601, 25 characters, in
    the XML and in each key block); a naive one is UTC."""
    from lxml import etree

    plus2 = timezone(timedelta(hours=2))
    start = datetime(2027, 3, 1, 20, 0, 0, 123456, tzinfo=plus2)
    late = make_chain("cinema.test", "late", role="SM", not_before=datetime(2027, 1, 1, tzinfo=timezone.utc), days=365)
    k = K.parse_kdm(_make(signer, late, _keys("MDIK"), not_before=start, not_after=datetime(2027, 3, 2, 18, 0)))
    assert k.not_before == start.replace(microsecond=0)
    assert k.not_after == datetime(2027, 3, 2, 18, 0, tzinfo=timezone.utc)
    text = etree.tostring(k.root)
    assert b">2027-03-01T20:00:00+02:00</ContentKeysNotValidBefore>" in text
    assert b">2027-03-02T18:00:00+00:00</ContentKeysNotValidAfter>" in text
    [key] = K.decrypt_keys(k, late.leaf_key)
    assert (key.not_before, key.not_after) == (k.not_before, k.not_after)


# -- independent checks ------------------------------------------------------------------------
def _lxml_c14n(el, comments: bool) -> bytes:
    """libxml2's C14N 1.0 of ``el`` rebuilt as the root of a document of its own, declaring
    every namespace in scope at ``el`` (as the apex of a document subset does), where libxml2's
    output is right: an independent reading of the bytes cinegpu's canonicaliser writes."""
    from lxml import etree

    top = etree.Element(el.tag, dict(el.attrib), nsmap=el.nsmap)
    top.text = el.text
    for child in el:
        top.append(deepcopy(child))
    return etree.tostring(etree.ElementTree(top), method="c14n", with_comments=comments)


def test_digests_recomputed_with_lxml_c14n(made):
    from lxml import etree

    root = etree.fromstring(made[1])
    refs = {r.get("URI"): r for r in root.iter(f"{DS}Reference")}
    for part in ("AuthenticatedPublic", "AuthenticatedPrivate"):
        el = root.find(f"{{{K.NS_ETM}}}{part}")
        c14n = _lxml_c14n(el, comments=False)
        assert c14n == canonical_xml(el)
        assert c14n.startswith(f'<{part} xmlns="{K.NS_ETM}" xmlns:ds="{K.NS_DS}" xmlns:enc="{K.NS_ENC}" Id='.encode())
        want = refs[f"#ID_{part}"].find(f"{DS}DigestValue").text
        assert base64.b64encode(hashlib.sha256(c14n).digest()).decode() == want
    info = root.find(f"{DS}Signature/{DS}SignedInfo")
    assert _lxml_c14n(info, comments=True) == canonical_xml(info, comments=True)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command on PATH")
def test_openssl_verifies_the_signature_the_chain_and_opens_the_keys(made, recipient, tmp_path):
    """openssl, knowing nothing of cinegpu: ``dgst -verify`` of SignatureValue over lxml's
    canonical SignedInfo with the public key of KeyInfo's first certificate; ``verify`` of that
    certificate through the others to the root; ``pkeyutl -decrypt`` (RSA-OAEP, SHA-1) of each
    CipherValue with the recipient's key, giving the 138-byte block with the key at its end."""
    from cryptography.hazmat.primitives import serialization
    from lxml import etree

    keys, data = made
    root = etree.fromstring(data)
    sig = root.find(f"{DS}Signature")
    certs = [base64.b64decode(c.text) for c in sig.iter(f"{DS}X509Certificate")]
    pems = []
    for n, der in enumerate(certs):
        (tmp_path / f"c{n}.der").write_bytes(der)
        subprocess.run(["openssl", "x509", "-inform", "DER", "-in", str(tmp_path / f"c{n}.der"),
                        "-out", str(tmp_path / f"c{n}.pem")], check=True, capture_output=True)
        pems.append(tmp_path / f"c{n}.pem")
    pub = subprocess.run(["openssl", "x509", "-in", str(pems[0]), "-pubkey", "-noout"],
                         check=True, capture_output=True).stdout
    (tmp_path / "pub.pem").write_bytes(pub)
    (tmp_path / "sig.bin").write_bytes(base64.b64decode(sig.find(f"{DS}SignatureValue").text))
    signed = _lxml_c14n(sig.find(f"{DS}SignedInfo"), comments=True)

    def verify(body: bytes) -> subprocess.CompletedProcess:
        (tmp_path / "signed.xml").write_bytes(body)
        return subprocess.run(["openssl", "dgst", "-sha256", "-verify", str(tmp_path / "pub.pem"),
                               "-signature", str(tmp_path / "sig.bin"), str(tmp_path / "signed.xml")],
                              capture_output=True, text=True)

    r = verify(signed)
    assert r.returncode == 0 and "Verified OK" in r.stdout, r.stdout + r.stderr
    assert verify(signed.replace(b"DigestValue>", b"DigestValue >", 1)).returncode != 0
    r = subprocess.run(["openssl", "verify", "-CAfile", str(pems[2]), "-untrusted", str(pems[1]), str(pems[0])],
                       capture_output=True, text=True)
    assert r.returncode == 0 and ": OK" in r.stdout, r.stdout + r.stderr
    key_pem = recipient.leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption())
    (tmp_path / "recipient.key").write_bytes(key_pem)
    os.chmod(tmp_path / "recipient.key", 0o600)
    ciphers = [base64.b64decode(c.text) for c in root.iter(f"{{{K.NS_ENC}}}CipherValue")]
    for cipher, key in zip(ciphers, keys, strict=True):
        (tmp_path / "cipher.bin").write_bytes(cipher)
        block = subprocess.run(["openssl", "pkeyutl", "-decrypt", "-inkey", str(tmp_path / "recipient.key"),
                                "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha1",
                                "-pkeyopt", "rsa_mgf1_md:sha1", "-in", str(tmp_path / "cipher.bin")],
                               check=True, capture_output=True).stdout
        assert len(block) == 138 and block[:16] == K.KEY_STRUCTURE_ID
        assert block[52:56] == key.key_type.encode() and block[56:72] == uuid.UUID(key.key_id).bytes
        assert block[122:] == key.key


def test_xmlsec_verifies_the_signature(made, signer):
    try:
        import xmlsec
    except Exception as exc:        # not installed, or built on another libxml2 than lxml's
        pytest.skip(f"python-xmlsec is not usable here: {exc}")
    from cryptography.hazmat.primitives import serialization
    from lxml import etree

    def verify(data: bytes) -> bool:
        root = etree.fromstring(data)
        xmlsec.tree.add_ids(root, ["Id"])
        ctx = xmlsec.SignatureContext()
        ctx.key = xmlsec.Key.from_memory(signer.leaf.public_bytes(serialization.Encoding.PEM), xmlsec.KeyFormat.CERT_PEM)
        try:
            ctx.verify(root.find(f"{DS}Signature"))
        except xmlsec.Error:
            return False
        return True

    assert verify(made[1])
    assert not verify(made[1].replace(b"A Test DCP</ContentTitleText>", b"A Test DCQ</ContentTitleText>"))


@pytest.mark.skipif(shutil.which("xmlsec1") is None, reason="the xmlsec1 command is not installed")
def test_the_xmlsec1_command_verifies_the_signature(made, signer, tmp_path):
    """xmlsec1 (libxmlsec1, not our code) verifies the KDM against the signer's certificate, and
    refuses it once a signed value changed."""
    from cryptography.hazmat.primitives import serialization

    cert = tmp_path / "leaf.pem"
    cert.write_bytes(signer.leaf.public_bytes(serialization.Encoding.PEM))

    def verify(data: bytes) -> subprocess.CompletedProcess:
        (tmp_path / "kdm.xml").write_bytes(data)
        return subprocess.run(["xmlsec1", "--verify", "--pubkey-cert-pem", str(cert), "--id-attr:Id",
                               "AuthenticatedPublic", "--id-attr:Id", "AuthenticatedPrivate",
                               str(tmp_path / "kdm.xml")], capture_output=True, text=True, timeout=60)

    good = verify(made[1])
    assert good.returncode == 0 and "OK" in good.stderr, good.stderr
    bad = verify(made[1].replace(b"A Test DCP</ContentTitleText>", b"A Test DCQ</ContentTitleText>"))
    assert bad.returncode != 0 and "FAIL" in bad.stderr, bad.stderr


# -- refusals ----------------------------------------------------------------------------------
def _flip_first(data: bytes, tag: bytes) -> bytes:
    return re.sub(rb"(<" + tag + rb">)(.)", lambda m: m.group(1) + (b"A" if m.group(2) != b"A" else b"B"), data, count=1)


@pytest.mark.parametrize("change,words", [
    (lambda b: b.replace(b"A Test DCP</ContentTitleText>", b"A Test DCQ</ContentTitleText>"), "AuthenticatedPublic.*changed after"),
    (lambda b: re.sub(rb"(<ContentKeysNotValidAfter>\d)\d", rb"\g<1>9", b), "AuthenticatedPublic.*changed after"),
    (lambda b: _flip_first(b, b"enc:CipherValue"), "AuthenticatedPrivate.*changed after"),
    (lambda b: _flip_first(b, b"ds:SignatureValue"), "does not verify"),
    (lambda b: b.replace(b"2001/04/xmldsig-more#rsa-sha256", b"2000/09/xmldsig#rsa-sha1"), "does not verify"),
])
def test_a_changed_kdm_is_refused(made, change, words):
    data = change(made[1])
    assert data != made[1]
    with pytest.raises(KdmRefused, match=words):
        K.check_signature(K.parse_kdm(data))


def test_another_recipients_key_opens_nothing(made, signer):
    with pytest.raises(KdmRefused, match="not the recipient's key .*SM.projector"):
        K.decrypt_keys(K.parse_kdm(made[1]), signer.leaf_key)


def test_a_kdm_signed_by_another_chain_is_refused(made, signer, recipient):
    """KeyInfo swapped for another chain's certificates: the signature no longer verifies."""
    other = _make(recipient, signer, _keys("MDIK"))
    info = re.compile(rb"<ds:KeyInfo>.*</ds:KeyInfo>", re.S)
    swapped = info.sub(info.search(other).group(0).replace(b"\\", b"\\\\"), made[1])
    swapped = re.sub(rb"(<Signer>.*?<ds:X509SerialNumber>)\d+", lambda m: m.group(1) + str(recipient.leaf.serial_number).encode(),
                     swapped, count=1, flags=re.S)
    with pytest.raises(KdmRefused):
        K.check_signature(K.parse_kdm(swapped))


def _refusal(signer, recipient, keys, words, **kw):
    with pytest.raises(KdmRefused, match=words) as e:
        _make(signer, recipient, keys, **kw)
    assert all(k.key.hex() not in str(e.value) for k in keys)


def test_impossible_requests_are_refused(signer, recipient):
    keys = _keys("MDIK", "MDAK")
    _refusal(signer, recipient, keys, "ends .* before it starts", not_after=NOW - timedelta(seconds=1))
    _refusal(signer, recipient, keys, "ends .* before it starts", not_after=NOW)
    _refusal(signer, recipient, keys, "outside the recipient's certificate", not_after=NOW + timedelta(days=3700))
    _refusal(signer, recipient, keys, "outside the recipient's certificate", not_before=NOW - timedelta(days=2))
    short = make_chain("cinegpu.test", "short", not_before=NOW - timedelta(days=1), days=2)
    _refusal(short, recipient, keys, "outside the signer's certificate", not_after=NOW + timedelta(days=5))
    _refusal(signer, recipient, keys, "not the key of the chain's leaf", signer_key=recipient.leaf_key)
    _refusal(signer, recipient, keys, "signer's chain does not hold", signer_chain=(signer.leaf, signer.root))
    _refusal(signer, recipient, keys, "signer's chain does not hold",
             signer_chain=(signer.leaf, signer.intermediate, recipient.root))
    _refusal(signer, recipient, [], "no content key")
    _refusal(signer, recipient, [keys[0], keys[0]], "given twice")
    _refusal(signer, recipient, [TrackKey("MDIK", keys[0].key_id, keys[0].key[:15])], "not 16 bytes")
    _refusal(signer, recipient, [TrackKey("XXXX", keys[0].key_id, keys[0].key)], "type 'XXXX'")
    _refusal(signer, recipient, [TrackKey("MDIK", "not-a-uuid", keys[0].key)], "key id, 'not-a-uuid', is not a UUID")
    _refusal(signer, recipient, keys, "composition id, 'urn:uuid:123', is not a UUID", cpl_id="urn:uuid:123")


def test_an_expired_signer_chain_is_refused(recipient):
    old = make_chain("cinegpu.test", "old", not_before=NOW - timedelta(days=30), days=10)
    with pytest.raises(KdmRefused, match="outside the signer's certificate|does not hold"):
        _make(old, recipient, _keys("MDIK"))
    old_recipient = make_chain("cinema.test", "old", role="SM", not_before=NOW - timedelta(days=30))
    with pytest.raises(KdmRefused, match="signer's chain does not hold.*not at"):
        _make(old, old_recipient, _keys("MDIK"), not_before=NOW - timedelta(days=25), not_after=NOW - timedelta(days=24))


# -- compositions and key files ----------------------------------------------------------------
def _hand_cpl(path: Path, cpl_id: str, picture_key: str | None, sound_key: str | None, subtitle_key: str | None) -> Path:
    def asset(tag, key, extra=""):
        key_id = f"<KeyId>urn:uuid:{key}</KeyId>" if key else ""
        return (f"<{tag}><Id>urn:uuid:{uuid.uuid4()}</Id><EditRate>24 1</EditRate><IntrinsicDuration>48"
                f"</IntrinsicDuration><EntryPoint>0</EntryPoint><Duration>48</Duration>{key_id}{extra}</{tag}>")
    reels = "".join(
        f"<Reel><Id>urn:uuid:{uuid.uuid4()}</Id><AssetList>"
        + asset("MainPicture", picture_key, "<FrameRate>24 1</FrameRate><ScreenAspectRatio>1998 1080</ScreenAspectRatio>")
        + asset("MainSound", sound_key) + (asset("MainSubtitle", subtitle_key) if subtitle_key or n else "")
        + "</AssetList></Reel>" for n in range(2))
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n<CompositionPlaylist xmlns="http://www.smpte-ra.org/'
                    f'schemas/429-7/2006/CPL"><Id>urn:uuid:{cpl_id}</Id><AnnotationText>Hand</AnnotationText>'
                    f"<IssueDate>2026-01-01T00:00:00+00:00</IssueDate><ContentTitleText>Hand made</ContentTitleText>"
                    f"<ContentKind>test</ContentKind><ReelList>{reels}</ReelList></CompositionPlaylist>\n")
    return path


def test_a_hand_built_cpl_gets_a_key_per_key_id(tmp_path, signer, recipient):
    """Picture and subtitles encrypted (one key each, the same in both reels), sound not:
    two keys, MDIK and MDSK, in the CPL's order; the file's extra key is left out."""
    cpl_id = str(uuid.uuid4())
    pic, sub, extra = new_track_key("MDIK"), new_track_key("MDSK"), new_track_key("MDAK")
    cpl = read_cpl(_hand_cpl(tmp_path / "cpl.xml", cpl_id, pic.key_id, None, sub.key_id))
    write_key_file(tmp_path / "keys", [sub, extra, pic], cpl_id)
    keys = composition_keys(cpl, read_key_file(tmp_path / "keys"), tmp_path / "keys")
    assert [(k.key_type, k.key_id) for k in keys] == [("MDIK", pic.key_id), ("MDSK", sub.key_id)]
    k = K.parse_kdm(make_kdm(cpl_id=cpl.id, content_title=cpl.title, keys=keys, recipient=recipient.leaf,
                             signer_key=signer.leaf_key, signer_chain=signer.certificates,
                             not_before=NOW, not_after=NOW + timedelta(hours=3), annotation="hand"))
    assert (k.cpl_id, k.content_title, k.annotation) == (cpl_id, "Hand made", "hand")
    got = K.decrypt_keys(k, recipient.leaf_key)
    assert [(c.key_type, c.key_id, c.key) for c in got] == [("MDIK", pic.key_id, pic.key), ("MDSK", sub.key_id, sub.key)]


@needs_libdcp_dcp
def test_libdcps_encrypted_cpl(tmp_path, signer, recipient):
    cpl = read_cpl(LIBDCP_CPL)
    file_keys = [TrackKey(t, i, os.urandom(16)) for t, i in LIBDCP_KEY_IDS]
    write_key_file(tmp_path / "keys", file_keys, cpl.id)
    keys = composition_keys(cpl, read_key_file(tmp_path / "keys"), tmp_path / "keys")
    data = make_kdm(cpl_id=cpl.id, content_title=cpl.title, keys=keys, recipient=recipient.leaf,
                    signer_key=signer.leaf_key, signer_chain=signer.certificates,
                    not_before=NOW, not_after=NOW + timedelta(days=1))
    k = K.parse_kdm(data)
    K.check_signature(k)
    assert K.check_chain(k).ok and k.cpl_id == "6affb8ee-0020-4dff-a53c-17652f6358ab" and k.content_title == "A Test DCP"
    assert [(c.key_type, c.key_id, c.key) for c in K.decrypt_keys(k, recipient.leaf_key)] == \
        [(t.key_type, t.key_id, t.key) for t in file_keys]


def test_composition_keys_refusals(tmp_path):
    cpl_id = str(uuid.uuid4())
    pic, snd = new_track_key("MDIK"), new_track_key("MDAK")
    cpl = read_cpl(_hand_cpl(tmp_path / "cpl.xml", cpl_id, pic.key_id, snd.key_id, None))
    with pytest.raises(KdmRefused, match="key file is for composition"):
        composition_keys(cpl, KeyFile(str(uuid.uuid4()), (pic, snd)))
    with pytest.raises(KdmRefused, match=f"has no key {snd.key_id} .*sound"):
        composition_keys(cpl, KeyFile(cpl_id, (pic,)))
    with pytest.raises(KdmRefused, match="says MDIK .*sound asset \\(MDAK\\)") as e:
        composition_keys(cpl, KeyFile(None, (pic, TrackKey("MDIK", snd.key_id, snd.key))))
    assert snd.key.hex() not in str(e.value) and pic.key.hex() not in str(e.value)
    assert len(composition_keys(cpl, KeyFile(None, (snd, pic)))) == 2       # a file naming no CPL
    plain = read_cpl(_hand_cpl(tmp_path / "plain.xml", cpl_id, None, None, None))
    with pytest.raises(KdmRefused, match="no encrypted asset"):
        composition_keys(plain, KeyFile(cpl_id, (pic,)))


def test_parse_time():
    now = datetime(2026, 11, 26, 13, 0, 0, 500000, tzinfo=timezone.utc)
    assert parse_time("now", now) == now.replace(microsecond=0)
    assert parse_time("+7d", now) == datetime(2026, 12, 3, 13, 0, tzinfo=timezone.utc)
    assert parse_time("-90m", now) == datetime(2026, 11, 26, 11, 30, tzinfo=timezone.utc)
    assert parse_time("+2w", now) - parse_time("+1h", now) == timedelta(days=14) - timedelta(hours=1)
    assert parse_time("2027-01-02T03:04:05", now) == datetime(2027, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    t = parse_time("2027-01-02T03:04:05+05:30", now)
    assert t.utcoffset() == timedelta(hours=5, minutes=30) and t.isoformat() == "2027-01-02T03:04:05+05:30"
    assert parse_time("2027-01-02", now) == datetime(2027, 1, 2, tzinfo=timezone.utc)
    assert parse_time("2027-01-02T03:04:05Z", now).utcoffset() == timedelta(0)
    for bad in ("soon", "+7y", "7d", "", "2027-13-01"):
        with pytest.raises(ValueError, match="not a time"):
            parse_time(bad, now)
