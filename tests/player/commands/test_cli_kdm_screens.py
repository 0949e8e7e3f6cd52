"""``cinegpu kdm make --screens`` and ``--dkdm`` end to end, through the command line as a user
runs them (issue 55, item 4): a signer chain from ``cinegpu kdm chain``, a small encrypted DCP
(tests/helpers/encrypted_dcp.py), a CSV of 20 screens in 4 cinemas, each screen with its own
leaf certificate and key (some by path, some inline, some with trusted devices).

Every KDM is checked by xmlsec1 (libxmlsec1, not our code) against the signer's certificate and
opened with its own screen's key by the player's key ring, the package's frames decrypted to the
clear codestreams; the DKDM round trip (a KDM to one's own certificate, then screen KDMs from it
with no key file and no CPL) decrypts the same; mistakes are one line, exit 2, nothing written."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from cinegpu.media.security.certificates import certificate_thumbprint, make_chain, write_chain
from cinegpu.media.security.content_keys import write_key_file
from cinegpu.media.security.kdm import load_private_key, parse_kdm
from cinegpu.media.security.kdm_write import ASSUME_TRUST
from cinegpu.media.security.key_ring import KeyRing
from cinegpu.media.security.screens import kdm_file_name, zip_file_name
from cinegpu.media.source import open_source
from helpers.cli import cinegpu
from helpers.encrypted_dcp import make_dcp, no_key_in

CINEMAS = ["Odeon Leicester Sq", "Cinéma Łódź", "Ritz", "Plaza 4"]
SCREENS = 20
needs_xmlsec1 = pytest.mark.skipif(shutil.which("xmlsec1") is None, reason="the xmlsec1 command is not installed")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The encrypted package and its key file, the signer's chain (``kdm chain``), 20 screens'
    chains on disk and the CSV naming them: screens 0, 5, 10, 15 inline, screens 3 and 7 with
    trusted devices (a thumbprint and a path)."""
    d = tmp_path_factory.mktemp("kdm-screens")
    enc = make_dcp(d / "enc", encrypt=True, n=4)
    write_key_file(d / "keys", list(enc.keys.values()), enc.cpl_id)
    r = cinegpu("kdm", "chain", "-o", str(d / "signer"), "--organisation", "distributor.test")
    assert r.returncode == 0, r.stderr
    start = datetime.now(timezone.utc) - timedelta(days=1)
    rows, screens = ["cinema,screen,certificate,trusted_devices"], []
    for n in range(SCREENS):
        cinema, name = CINEMAS[n % 4], f"Screen {n // 4 + 1}"
        chain = make_chain("cinema.test", f"screen{n}", role="SM", not_before=start, days=90)
        write_chain(chain, d / "certs" / f"s{n}")
        pem = chain.leaf.public_bytes(serialization.Encoding.PEM).decode()
        cert = f'"{pem}"' if n % 5 == 0 else f"certs/s{n}/leaf.signed.pem"
        trusted = {3: "2jmj7l5rSw0yVb/vlWAYkK/YBwk=;certs/s4/chain.pem", 7: "certs/s8/leaf.signed.pem"}.get(n, "")
        rows.append(f"{cinema},{name},{cert},{trusted}")
        screens.append(dict(cinema=cinema, screen=name, key=d / "certs" / f"s{n}" / "leaf.key", cert=chain.leaf))
    (d / "screens.csv").write_text("\n".join(rows) + "\n")
    return dict(d=d, enc=enc, screens=screens)


def _make(w, out, *extra, source=("--keys",), not_before="-1h", not_after="+7d", who=None):
    d = w["d"]
    src = ["--cpl", str(w["enc"].root / "cpl.xml"), "--keys", str(d / "keys")] if source == ("--keys",) else list(source)
    return cinegpu("kdm", "make", *src, *(who or ["--screens", str(d / "screens.csv")]),
                   "--signer-key", str(d / "signer" / "leaf.key"), "--signer-chain", str(d / "signer" / "chain.pem"),
                   f"--not-before={not_before}", f"--not-after={not_after}", "-o", str(out), *extra)


def _xmlsec1_ok(kdm: Path, signer_leaf: Path) -> None:
    r = subprocess.run(["xmlsec1", "--verify", "--pubkey-cert-pem", str(signer_leaf), "--id-attr:Id",
                        "AuthenticatedPublic", "--id-attr:Id", "AuthenticatedPrivate", str(kdm)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "OK" in r.stderr, (kdm.name, r.stderr)


def _decrypts(w, data: bytes, key_path: Path, name: str) -> None:
    """The player's key ring opens the KDM with the screen's key; the package's frames decrypt
    to the clear codestreams."""
    ring = KeyRing(load_private_key(key_path))
    ring.add_kdm(parse_kdm(data, name))
    with open_source(w["enc"].root, keys=ring) as src:
        assert [src.frame(n) for n in range(4)] == list(w["enc"].codestreams[:4])


def _thumb(w, n: int) -> str:
    return base64.b64encode(certificate_thumbprint(w["screens"][n]["cert"])).decode()


@needs_xmlsec1
@pytest.mark.slow  # long: 20 KDMs, each checked by xmlsec1 and by decrypting the package twice (3 s, 7 s with its fixture)
def test_twenty_screens_each_get_a_kdm_that_verifies_and_decrypts(world, tmp_path):
    w, out = world, tmp_path / "kdms"
    r = _make(w, out)
    assert r.returncode == 0, r.stderr
    assert f"{SCREENS} KDMs for ENCRYPTION_TEST (3 keys) to {SCREENS} screens of 4 cinemas" in r.stdout
    no_key_in(w, r.stdout, r.stderr)
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == SCREENS and "KDM_ENCRYPTION_TEST_CinemaLodz_Screen1.xml" in names
    assert "KDM_ENCRYPTION_TEST_OdeonLeicesterSq_Screen5.xml" in names
    assert [p.name for p in tmp_path.iterdir()] == ["kdms"]             # no partial folder left
    for n, s in enumerate(w["screens"]):
        path = out / kdm_file_name("ENCRYPTION_TEST", s["cinema"], s["screen"])
        _xmlsec1_ok(path, w["d"] / "signer" / "leaf.signed.pem")
        data = path.read_bytes()
        k = parse_kdm(data)
        assert k.recipient_subject.split(",")[1] == f"CN=SM.screen{n}"
        assert k.cpl_id == w["enc"].cpl_id and len(k.key_ids) == 3
        # the default formulation: modified-transitional-1, or the multiple one where the CSV lists devices
        assert k.device_thumbprints == {3: (ASSUME_TRUST, _thumb(w, 4)), 7: (_thumb(w, 8),)}.get(n, (ASSUME_TRUST,))
        assert k.content_authenticator is None
        _decrypts(w, data, s["key"], path.name)
        other = w["screens"][(n + 1) % SCREENS]["key"]
        with pytest.raises(Exception, match="not the recipient's key"):
            _decrypts(w, data, other, path.name)
    again = _make(w, out)
    assert again.returncode == 2 and "exists already" in again.stderr


@pytest.mark.slow  # long: a DKDM, screen KDMs from it and a play with each (7-17 s)
@needs_xmlsec1
def test_dkdm_round_trip_without_the_key_file(world, tmp_path):
    """A DKDM to the signer's own certificate; from it, with no key file and no CPL, KDMs for the
    screens (dci-specific, zipped per cinema) that verify and decrypt; a window outside the
    DKDM's is refused."""
    w, d = world, world["d"]
    dkdm = tmp_path / "dkdm.xml"
    r = _make(w, dkdm, who=["--recipient", str(d / "signer" / "leaf.signed.pem")], not_after="+30d")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "zips"
    source = ("--dkdm", str(dkdm), "--dkdm-key", str(d / "signer" / "leaf.key"))
    r = _make(w, out, "--zip", "--formulation", "dci-specific", source=source, not_before="now", not_after="+2d")
    assert r.returncode == 0, r.stderr
    no_key_in(w, r.stdout, r.stderr)
    zips = sorted(p.name for p in out.iterdir())
    assert zips == sorted(f"KDM_ENCRYPTION_TEST_{c}.zip" for c in ("OdeonLeicesterSq", "CinemaLodz", "Ritz", "Plaza4"))
    checked = 0
    for n, s in enumerate(w["screens"]):
        name = kdm_file_name("ENCRYPTION_TEST", s["cinema"], s["screen"])
        with zipfile.ZipFile(out / zip_file_name("ENCRYPTION_TEST", s["cinema"])) as z:
            data = z.read(name)
        k = parse_kdm(data)
        assert k.content_authenticator is not None and k.not_after - k.not_before == timedelta(days=2)
        assert k.device_thumbprints == {3: (ASSUME_TRUST, _thumb(w, 4)), 7: (_thumb(w, 8),)}.get(n, (ASSUME_TRUST,))
        if n in (0, 3, 7, 13, 19):
            (tmp_path / name).write_bytes(data)
            _xmlsec1_ok(tmp_path / name, d / "signer" / "leaf.signed.pem")
            _decrypts(w, data, s["key"], name)
            checked += 1
    assert checked == 5
    # one screen, from the DKDM with the CPL named: it must be the DKDM's composition
    r = _make(w, tmp_path / "one.xml", source=source[:4] + ("--cpl", str(w["enc"].root / "cpl.xml")),
              who=["--recipient", str(d / "certs" / "s2" / "leaf.signed.pem")])
    assert r.returncode == 0, r.stderr
    _decrypts(w, (tmp_path / "one.xml").read_bytes(), w["screens"][2]["key"], "one.xml")
    r = cinegpu("kdm", "inspect", str(tmp_path / "one.xml"), "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["problems"] == [], r.stdout + r.stderr
    assert report["device_list"] == [ASSUME_TRUST] and report["content_authenticator"] is None
    r = _make(w, tmp_path / "late", source=source, not_before="now", not_after="+31d")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert re.search(r"lies outside the DKDM's, .* to ", r.stderr), r.stderr
    assert not (tmp_path / "late").exists()


def _bad_csv(w, line: str) -> Path:
    """A CSV of one good screen and then ``line`` (line 3)."""
    path = w["d"] / "screens-bad.csv"
    path.write_text(f"cinema,screen,certificate,trusted_devices\nRitz,Screen 8,certs/s1/leaf.signed.pem,\n{line}\n")
    return path


@pytest.mark.parametrize("case,words", [
    ("short row", r"screens-bad.csv: line 3: 2 cells, the header names 4 columns"),
    ("missing certificate", r"screens-bad.csv: line 3 \(Ritz / Screen 9\): .*certs/nowhere.pem: cannot read"),
    ("expiring certificate", r"screens.csv: line \d+ \(.* / Screen \d\): the validity window .* lies outside "
                             r"the recipient's certificate"),
    ("dkdm without its key", r"--dkdm needs --dkdm-key"),
    ("zip without screens", r"--zip packs the KDMs of --screens"),
    ("trusted devices for mt1", r"a modified-transitional-1 KDM lists no trusted device"),
    ("key file without cpl", r"--cpl is needed with --keys"),
])
def test_mistakes_are_one_line_and_write_nothing(world, tmp_path, case, words):
    w, d = world, world["d"]
    out = tmp_path / "out"
    if case == "short row":
        r = _make(w, out, who=["--screens", str(_bad_csv(w, "Ritz,Screen 9"))])
    elif case == "missing certificate":
        r = _make(w, out, who=["--screens", str(_bad_csv(w, "Ritz,Screen 9,certs/nowhere.pem,"))])
    elif case == "expiring certificate":
        r = _make(w, out, not_after="+120d")
    elif case == "dkdm without its key":
        r = _make(w, out, source=("--dkdm", str(d / "nothing.xml")))
    elif case == "zip without screens":
        r = _make(w, out, "--zip", who=["--recipient", str(d / "certs" / "s1" / "leaf.signed.pem")])
    elif case == "trusted devices for mt1":
        r = _make(w, out, "--formulation", "modified-transitional-1", "--trusted-device",
                  str(d / "certs" / "s2" / "leaf.signed.pem"), who=["--recipient", str(d / "certs" / "s1" / "leaf.signed.pem")])
    else:
        r = _make(w, out, source=("--keys", str(d / "keys")))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cinegpu kdm: ") and re.search(words, lines[0]), r.stderr
    assert "Traceback" not in r.stderr and list(tmp_path.iterdir()) == []
    no_key_in(w, r.stdout, r.stderr)
