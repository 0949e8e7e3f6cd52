"""Signed CPLs and PKLs (issue 16): SMPTE ST 429-7 clause 6.13, ST 429-8 clause 5.10.

What we sign is checked by our checker, by xmlsec (python-xmlsec, the xmlsec1 command where
installed), by openssl over SignedInfo canonicalised by libxml2 (not by our canonicaliser), by
ClairMeta (no errors, on the encrypted and on the clear package) and by the ST 429-7 / 429-8
schemas ClairMeta ships. libdcp's signed SMPTE and Interop documents (DCP-o-matic's chain)
verify with our checker; a changed byte, value or certificate is reported. ``cinegpu master``
signs with ``--sign DIR``, with the user's own chain under ``$XDG_CONFIG_HOME`` when encrypting
without it (conftest points that at a temporary folder), and not at all with ``--no-sign``.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from lxml import etree

from cinegpu.decode.kernel_cache import cache_root
from cinegpu.jobs.demo import demo_frame
from cinegpu.media import MediaError
from cinegpu.media.package.check import check
from cinegpu.media.package.dcp_write import DCPWriter
from cinegpu.media.security.certificates import make_chain, write_chain
from cinegpu.media.security.package_signature import (
    Signer,
    check_package_signature,
    check_signer,
    load_signer,
    sign_document,
    signer_folder,
    user_signer,
)
from cinegpu.media.security.xml_signature import C14N_URI, ENVELOPED, NS_DS, RSA_SHA1, RSA_SHA256, SHA1
from cinegpu.player.cli import main
from conftest import DCP_SAMPLES, needs_dcp_samples
from helpers.mastering import HAVE_ENCODER, dci_codestream, master_cli, write_png16

DS = {"ds": NS_DS}
SMPTE = DCP_SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted"
INTEROP = DCP_SAMPLES / "libdcp-dcp_test3-interop-2k"
LIBDCP_LEAF = "CN=CS.dcpomatic.smpte-430-2.LEAF,OU=dcpomatic.com,O=dcpomatic.com"


def _libdcp_documents():
    return sorted(SMPTE.glob("[cp][pk]l_*.xml")) + sorted(INTEROP.glob("[cp][pk]l_*.xml"))


# -- libdcp's signatures -----------------------------------------------------------------------
@needs_dcp_samples
@pytest.mark.parametrize("name", ["smpte-cpl", "smpte-pkl", "interop-cpl", "interop-pkl"])
def test_libdcps_signatures_hold(name):
    docs = _libdcp_documents()
    assert len(docs) == 4
    path = docs[["smpte-cpl", "smpte-pkl", "interop-cpl", "interop-pkl"].index(name)]
    sig = check_package_signature(path)
    assert sig.signed and sig.ok, sig.text()
    assert sig.subject.endswith(LIBDCP_LEAF) and len(sig.chain) == 3
    assert sig.digest == "SHA-1"
    assert sig.method == ("RSA-SHA256" if name.startswith("smpte") else "RSA-SHA1")
    # libdcp's test re-signs a 2012 package with a 2025 chain: the IssueDate is outside it
    assert bool(sig.warnings) == name.startswith("smpte")
    assert all("IssueDate 2012-07-17" in w for w in sig.warnings)
    assert "signature holds" in sig.text()


@needs_dcp_samples
@pytest.mark.parametrize("change,words", [
    (lambda b: b.replace(b"<Duration>24</Duration>", b"<Duration>23</Duration>", 1), "digest differs"),
    (lambda b: b.replace(b"<Duration>", b"<!-- a comment --><Duration>", 1), None),   # not in URI=""
    (lambda b: re.sub(rb"(<dsig:SignatureValue>)(.)", lambda m: m.group(1) + (b"A" if m.group(2) != b"A" else b"B"),
                      b, count=1), "does not verify"),
    (lambda b: b.replace(b"2001/04/xmldsig-more#rsa-sha256", b"2000/09/xmldsig#rsa-sha1"), "does not verify"),
    (lambda b: b.replace(b"<dsig:X509SerialNumber>7<", b"<dsig:X509SerialNumber>8<", 1), "no certificate of KeyInfo"),
    (lambda b: re.sub(rb"(<dsig:X509Certificate>MIIE)(.)", lambda m: m.group(1) + (b"b" if m.group(2) != b"b" else b"c"),
                      b, count=1), None),
])
def test_a_change_to_a_libdcp_signed_document_is_reported(change, words):
    cpl = sorted(SMPTE.glob("cpl_*.xml"))[0]
    data = cpl.read_bytes()
    changed = change(data)
    assert changed != data
    sig = check_package_signature(changed, "changed.xml")
    if words is None and b"<!--" in changed:
        assert sig.ok, sig.text()           # a comment is outside what URI="" digests
        return
    assert sig.signed and not sig.ok
    if words:
        assert any(words in p for p in sig.problems), sig.problems
    assert "signature does not hold" in sig.text()


@needs_dcp_samples
def test_an_unsigned_package_is_reported_as_unsigned_never_as_a_problem():
    report = check(DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k", progress=False)
    assert report.ok
    assert sum(n.endswith(": unsigned") for n in report.notes) == 2
    report = check(SMPTE, progress=False)
    assert report.ok and sum("signature holds" in n for n in report.notes) == 2


# -- signing -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chain") / "signer"
    # the default: under ten years to the root's end, ClairMeta warns of longer ones
    # (check_certif_date_overflow)
    write_chain(make_chain("example.org", "mastering"), folder)
    return folder


@pytest.fixture(scope="module")
def signer(chain_dir):
    return load_signer(chain_dir)


def _cpl_like(ns="http://www.smpte-ra.org/schemas/429-7/2006/CPL"):
    root = etree.Element(f"{{{ns}}}CompositionPlaylist", nsmap={None: ns})
    for tag, text in (("Id", "urn:uuid:8e4b6d8a-4c4e-4a6a-9d0e-2c4b7a2f3e10"), ("AnnotationText", "a & b"),
                      ("IssueDate", datetime.now(timezone.utc).isoformat(timespec="seconds"))):
        etree.SubElement(root, f"{{{ns}}}{tag}").text = text
    return root


def test_a_signed_document_is_laid_out_as_libdcp_writes_it(signer):
    root = _cpl_like()
    sign_document(root, signer)
    children = [etree.QName(c).localname for c in root]
    assert children[-2:] == ["Signer", "Signature"]
    who = root[-2]
    assert who.findtext("ds:X509Data/ds:X509IssuerSerial/ds:X509SerialNumber", namespaces=DS) == \
        str(signer.chain[0].serial_number)
    assert who.findtext("ds:X509Data/ds:X509SubjectName", namespaces=DS) == signer.subject
    info = root[-1].find("ds:SignedInfo", DS)
    assert info.find("ds:CanonicalizationMethod", DS).get("Algorithm") == C14N_URI
    assert info.find("ds:SignatureMethod", DS).get("Algorithm") == RSA_SHA256
    refs = info.findall("ds:Reference", DS)
    assert len(refs) == 1 and refs[0].get("URI") == ""
    assert [t.get("Algorithm") for t in refs[0].iterfind("ds:Transforms/ds:Transform", DS)] == [ENVELOPED]
    assert refs[0].find("ds:DigestMethod", DS).get("Algorithm") == SHA1
    serials = [int(s) for s in root[-1].xpath("ds:KeyInfo/ds:X509Data/ds:X509IssuerSerial/ds:X509SerialNumber/text()",
                                              namespaces=DS)]
    assert serials == [c.serial_number for c in signer.chain]       # leaf to root
    assert check_package_signature(etree.tostring(root)).ok


def test_interop_signing_is_rsa_sha1(signer):
    root = _cpl_like("http://www.digicine.com/PROTO-ASDCP-CPL-20040511#")
    sign_document(root, signer, interop=True)
    assert root.find(".//ds:SignatureMethod", DS).get("Algorithm") == RSA_SHA1
    sig = check_package_signature(etree.tostring(root))
    assert sig.ok and sig.method == "RSA-SHA1", sig.text()


@pytest.mark.parametrize("damage,words", [
    (lambda r: r.append(r[-2]), "not the document's last element"),         # Signer moved after it
    (lambda r: r.remove(r[-2]), "without a Signer"),
    (lambda r: r[-1].find("ds:SignedInfo/ds:Reference", DS).set("URI", "#x"), "not one to the whole document"),
    (lambda r: r[-1].find("ds:SignedInfo/ds:Reference/ds:DigestMethod", DS).set("Algorithm", "urn:md5"), "digest method"),
    (lambda r: r[-1].find("ds:SignedInfo/ds:CanonicalizationMethod", DS).set("Algorithm", "urn:x"), "canonicalization"),
    (lambda r: r[-1].find("ds:KeyInfo", DS).clear(), "no X509Certificate"),
    (lambda r: r[-1].find("ds:KeyInfo", DS).remove(r[-1].find("ds:KeyInfo", DS)[-1]), "chain: the issuer of"),
])
def test_a_broken_signature_of_ours_is_reported(signer, damage, words):
    root = _cpl_like()
    sign_document(root, signer)
    damage(root)
    sig = check_package_signature(etree.tostring(root))
    assert not sig.ok and any(words in p for p in sig.problems), sig.problems


def test_the_signer_is_checked_before_anything_is_signed(tmp_path, signer):
    other = make_chain()
    with pytest.raises(MediaError, match="not the key of the chain's leaf"):
        check_signer(Signer(signer.chain, other.leaf_key))
    old = make_chain(not_before=datetime.now(timezone.utc) - timedelta(days=30), days=2)
    with pytest.raises(MediaError, match="does not hold"):
        check_signer(Signer(old.certificates, old.leaf_key))
    with pytest.raises(MediaError, match="not a folder"):
        load_signer(tmp_path / "nowhere")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "chain.pem").write_bytes(b"")
    with pytest.raises(MediaError, match="no leaf.key"):
        load_signer(tmp_path / "half")
    with pytest.raises(MediaError, match="does not hold"):
        DCPWriter(tmp_path / "out", title="t", signer=Signer(old.certificates, old.leaf_key))
    assert not (tmp_path / "out").exists()


def test_no_key_bytes_in_a_signers_repr_or_errors(signer, chain_dir):
    key_pem = (chain_dir / "leaf.key").read_bytes()
    body = b"".join(key_pem.splitlines()[1:-1]).decode("ascii")
    assert body[:40] not in repr(signer) and "key=" not in repr(signer)
    try:
        check_signer(Signer(signer.chain, make_chain().leaf_key))
    except MediaError as exc:
        assert body[:40] not in str(exc)


def test_the_users_signer_is_made_once_with_private_modes(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path / "home")}
    assert signer_folder(env) == tmp_path / "config" / "cinegpu" / "signer"
    assert signer_folder({"HOME": str(tmp_path / "home")}) == tmp_path / "home" / ".config" / "cinegpu" / "signer"
    first, made = user_signer(env)
    again, made_again = user_signer(env)
    assert made and not made_again
    assert first.chain == again.chain and first.subject.split(",")[1] == "CN=CS.cinegpu.signer"
    folder = signer_folder(env)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "leaf.key").stat().st_mode) == 0o600
    assert not (tmp_path / "home").exists()
    # ClairMeta warns of a chain past ten years (check_certif_date_overflow): ours ends before
    assert first.chain[-1].not_valid_after_utc < datetime.now(timezone.utc) + timedelta(days=3650)
    expired = {"XDG_CONFIG_HOME": str(tmp_path / "expired")}
    write_chain(make_chain(not_before=datetime.now(timezone.utc) - timedelta(days=30), days=2),
                signer_folder(expired))
    with pytest.raises(MediaError, match="does not hold.*move the folder away"):
        user_signer(expired)


# -- signed packages -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def packages(tmp_path_factory, signer):
    """A clear and an encrypted one-reel DCP signed with ``signer``, and an encrypted unsigned
    one (24 frames of one codestream)."""
    if not HAVE_ENCODER:
        pytest.skip("no encoder: cinegpu.encode nor opj_compress")
    cs = dci_codestream()
    base = tmp_path_factory.mktemp("signed")
    made = {}
    for name, keys, who in (("clear", None, signer), ("encrypted", base / "keys.txt", signer),
                            ("unsigned", base / "keys2.txt", None)):
        with DCPWriter(base / name, title="Signed", keys=keys, signer=who) as w:
            for _ in range(24):
                w.write(cs)
            made[name] = w.close()
    return made


def _docs(root: Path):
    return next(root.glob("cpl_*.xml")), next(root.glob("pkl_*.xml"))


def test_our_signed_cpl_and_pkl_verify(packages, signer):
    for name in ("clear", "encrypted"):
        pkg = packages[name]
        assert pkg.signer == signer.subject
        for doc in _docs(pkg.root):
            sig = check_package_signature(doc)
            assert sig.ok and not sig.warnings, sig.text()
            assert sig.subject == signer.subject and sig.method == "RSA-SHA256"
    for doc in _docs(packages["unsigned"].root):
        assert not check_package_signature(doc).signed


def test_the_pkl_lists_the_signed_cpls_hash(packages):
    cpl, pkl = _docs(packages["encrypted"].root)
    assert b"<dsig:Signature" in cpl.read_bytes()
    want = base64.b64encode(hashlib.sha1(cpl.read_bytes()).digest()).decode("ascii")
    doc = etree.parse(str(pkl))
    ns = {"p": doc.getroot().nsmap[None]}
    cpl_id = cpl.stem.removeprefix("cpl_")
    asset = [a for a in doc.findall("p:AssetList/p:Asset", ns) if a.findtext("p:Id", None, ns).endswith(cpl_id)]
    assert asset[0].findtext("p:Hash", None, ns) == want
    assert int(asset[0].findtext("p:Size", None, ns)) == cpl.stat().st_size


def test_openssl_verifies_signed_info_canonicalised_by_libxml2(packages, signer, tmp_path):
    """Independent of our canonicaliser: libxml2's C14N (as ClairMeta uses it, its spurious
    xmlns="" taken out) of the document without its Signature and of SignedInfo."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    from cryptography.hazmat.primitives import serialization
    (tmp_path / "pub.pem").write_bytes(signer.chain[0].public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    for doc in _docs(packages["encrypted"].root):
        tree = etree.parse(str(doc))
        sig = tree.getroot().find("ds:Signature", DS)
        info = etree.tostring(sig.find("ds:SignedInfo", DS), method="c14n")
        (tmp_path / "info.xml").write_bytes(info.replace(b' xmlns=""', b""))
        (tmp_path / "sig.bin").write_bytes(base64.b64decode("".join(sig.findtext("ds:SignatureValue", None, DS).split())))
        run = subprocess.run(["openssl", "dgst", "-sha256", "-verify", str(tmp_path / "pub.pem"), "-signature",
                              str(tmp_path / "sig.bin"), str(tmp_path / "info.xml")], capture_output=True, text=True)
        assert run.returncode == 0 and "Verified OK" in run.stdout, run.stdout + run.stderr
        etree.strip_elements(tree, f"{{{NS_DS}}}Signature", with_tail=False)
        whole = etree.tostring(tree, method="c14n").replace(b' xmlns=""', b"")
        want = sig.findtext("ds:SignedInfo/ds:Reference/ds:DigestValue", None, DS)
        assert base64.b64encode(hashlib.sha1(whole).digest()).decode() == want


def test_python_xmlsec_verifies_our_signatures(packages, signer):
    try:
        import xmlsec
    except ImportError:
        pytest.skip("python-xmlsec is not installed")
    except Exception as exc:        # its wheel's libxml2 differs from lxml's (as on CI)
        pytest.skip(f"python-xmlsec is not usable here: {exc}")
    from cryptography.hazmat.primitives import serialization
    pem = signer.chain[0].public_bytes(serialization.Encoding.PEM)
    for doc in _docs(packages["clear"].root):
        for tamper in (False, True):
            data = doc.read_bytes()
            if tamper:
                data = data.replace(b"<AnnotationText>Signed<", b"<AnnotationText>Signet<", 1)
            root = etree.fromstring(data)
            ctx = xmlsec.SignatureContext()
            ctx.key = xmlsec.Key.from_memory(pem, xmlsec.constants.KeyDataFormatCertPem)
            if tamper:
                with pytest.raises(xmlsec.Error):
                    ctx.verify(root.find("ds:Signature", DS))
            else:
                ctx.verify(root.find("ds:Signature", DS))


@pytest.mark.skipif(shutil.which("xmlsec1") is None, reason="the xmlsec1 command is not installed")
def test_xmlsec1_verifies_our_signatures(packages, chain_dir):
    for doc in _docs(packages["encrypted"].root):
        run = subprocess.run(["xmlsec1", "--verify", "--pubkey-cert-pem", str(chain_dir / "leaf.signed.pem"),
                              str(doc)], capture_output=True, text=True)
        assert run.returncode == 0 and "OK" in run.stderr, run.stderr


def _schema(name: str):
    clairmeta = pytest.importorskip("clairmeta", reason="ClairMeta (a test dependency) is not installed")
    xsd = Path(clairmeta.__file__).parent / "xsd"

    class Local(etree.Resolver):
        def resolve(self, url, pubid, context):
            local = xsd / url.rsplit("/", 1)[-1]
            if local.is_file():
                return self.resolve_filename(str(local), context)
            raise AssertionError(f"the schema imports {url}, which is not in ClairMeta's xsd folder")

    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(Local())
    return etree.XMLSchema(etree.parse(str(xsd / name), parser))


@pytest.mark.parametrize("which,schema", [(0, "SMPTE-429-7-2006-CPL.xsd"), (0, "SMPTE-429-16-2014-CPL-Metadata.xsd"),
                                          (1, "SMPTE-429-8-2006-PKL.xsd")])
def test_the_signed_documents_are_schema_valid(packages, which, schema):
    xsd = _schema(schema)
    doc = etree.parse(str(_docs(packages["encrypted"].root)[which]))
    assert xsd.validate(doc), xsd.error_log
    root = doc.getroot()
    root.insert(1, root[-2])             # the Signer out of its place: invalid
    assert not xsd.validate(doc)


def _clairmeta(root: Path) -> tuple[list[str], list[str]]:
    """ClairMeta's errors and warnings for the DCP at ``root`` (its command line's report)."""
    pytest.importorskip("clairmeta", reason="ClairMeta not installed")
    run = subprocess.run([sys.executable, "-m", "clairmeta.cli", "check", "-type", "dcp", str(root)],
                         capture_output=True, text=True, timeout=300)
    report = run.stdout + run.stderr
    assert "Check" in report, report

    def section(title):
        if f"{title}:" not in report:
            return []
        body = re.split(r"\n\S[^\n]*\(s\):|\nInfo", report.split(f"{title}:", 1)[1])[0]
        return [ln.strip() for ln in body.splitlines() if ln.strip().startswith(". ")]
    return section("Error(s)"), section("Warning(s)")


@pytest.mark.parametrize("name", ["clear", "encrypted"])
def test_clairmeta_accepts_our_signed_dcps(packages, name):
    errors, warnings = _clairmeta(packages[name].root)
    assert errors == [], errors
    assert not [w for w in warnings if "ertificat" in w or "ignature" in w], warnings


def test_clairmeta_refuses_the_unsigned_encrypted_dcp_for_its_signature_only(packages):
    errors, _ = _clairmeta(packages["unsigned"].root)
    assert errors == [". Encrypted DCP must be digitally signed (XMLs include Signer and Signature)."]


def test_check_reports_signatures_and_a_changed_byte(packages, tmp_path, capsys):
    report = check(packages["encrypted"].root, progress=False)
    assert report.ok and sum("signature holds" in n for n in report.notes) == 2, report.text()
    report = check(packages["unsigned"].root, progress=False)
    assert report.ok and sum("unsigned, in an encrypted package" in w for w in report.warnings) == 2
    copy = tmp_path / "copy"
    shutil.copytree(packages["clear"].root, copy)
    cpl = next(copy.glob("cpl_*.xml"))
    data = cpl.read_bytes()
    at = data.index(b"<ContentTitleText>Signed") + len(b"<ContentTitleText>")
    cpl.write_bytes(data[:at] + b"Z" + data[at + 1:])          # one byte, same size
    assert main(["check", str(copy), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert re.search(rf"PROBLEM: {cpl.name}: signed by .*signature does not hold: the document's digest "
                     rf"differs", out), out
    pkl = next(copy.glob("pkl_*.xml"))
    assert f"{pkl.name}: signed by" in out and "PROBLEM: " + pkl.name not in out


def test_info_shows_the_signature(packages, capsys):
    assert main(["info", str(packages["clear"].root)]) == 0
    out = capsys.readouterr().out
    assert out.count("signature holds") == 2, out


# -- the command line ----------------------------------------------------------------------------
@pytest.fixture
def still(tmp_path):
    if not HAVE_ENCODER:
        pytest.skip("no encoder: cinegpu.encode nor opj_compress")
    write_png16(tmp_path / "still.png", demo_frame(3, 96, 54))
    return tmp_path / "still.png"


def test_encrypting_signs_with_the_users_own_chain_made_on_first_use(still, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # the compiled kernels stay where they are (a module first imported here finds them)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_root().parent))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    master_cli(still, tmp_path / "a", "--encrypt", "--keys", str(tmp_path / "ka.txt"), frames=24)
    err = capsys.readouterr().err
    folder = tmp_path / "config" / "cinegpu" / "signer"
    made = [ln for ln in err.splitlines() if "made your own signing certificate chain" in ln]
    assert len(made) == 1 and str(folder) in made[0], err
    subject = load_signer(folder).subject
    master_cli(still, tmp_path / "b", "--encrypt", "--keys", str(tmp_path / "kb.txt"), frames=24)
    assert "made your own" not in capsys.readouterr().err
    for out in ("a", "b"):
        for doc in _docs(tmp_path / out):
            sig = check_package_signature(doc)
            assert sig.ok and sig.subject == subject, sig.text()
    assert not (tmp_path / "home").exists()


def test_sign_and_no_sign_on_the_command_line(still, tmp_path, capsys, chain_dir, signer):
    master_cli(still, tmp_path / "signed", "--sign", str(chain_dir), frames=24)
    assert f"signed by {signer.subject}" in capsys.readouterr().out
    assert all(check_package_signature(d).subject == signer.subject for d in _docs(tmp_path / "signed"))
    master_cli(still, tmp_path / "clear", frames=24)
    assert not any(check_package_signature(d).signed for d in _docs(tmp_path / "clear"))
    master_cli(still, tmp_path / "plain", "--encrypt", "--keys", str(tmp_path / "k.txt"), "--no-sign",
               frames=24)
    assert not any(check_package_signature(d).signed for d in _docs(tmp_path / "plain"))


@pytest.mark.parametrize("args,words", [
    (["--sign", "nowhere"], "not a folder"),
    (["--sign", "SIGNER", "--no-sign"], "--sign goes without --no-sign"),
    (["--sign", "SIGNER", "--format", "imf"], "--sign goes without --no-sign, and signs DCPs"),
    (["--sign", "HALF"], "no leaf.key"),
])
def test_signing_mistakes_exit_2_and_leave_nothing(still, tmp_path, capsys, chain_dir, args, words, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "HALF").mkdir()
    shutil.copy(chain_dir / "chain.pem", tmp_path / "HALF")
    args = [str(chain_dir) if a == "SIGNER" else a for a in args]
    master_cli(still, tmp_path / "out", *args, frames=24, expect=2)
    assert words in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
