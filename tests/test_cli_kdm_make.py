"""``cinegpu kdm chain`` and ``cinegpu kdm make`` end to end, through the command line as a
user runs them: a chain, a KDM for libdcp's encrypted CPL (../shared/dcp-samples, read in
place) with a key file written here, ``kdm inspect --key`` printing exactly the file's keys;
every refusal one line on stderr with exit code 2, naming no key and leaving no file behind."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

import pytest

from cinegpu.media.security.certificates import make_chain, write_chain
from cinegpu.media.security.content_keys import TrackKey, read_key_file, write_key_file

from conftest import DCP_SAMPLES
from test_cli import cinegpu

CPL = DCP_SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted" / "cpl_6affb8ee-0020-4dff-a53c-17652f6358ab.xml"
CPL_ID = "6affb8ee-0020-4dff-a53c-17652f6358ab"
KEY_IDS = [("MDIK", "ac8d301c-e5d9-4343-b6f3-ba2668adbe56"), ("MDAK", "7ab6c77b-6648-44b9-8549-a5290ada6238")]
pytestmark = pytest.mark.skipif(not CPL.is_file(), reason=f"{CPL} is absent")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Signer and recipient chains on disk (made in process, which is quicker), a key file for
    the CPL and one for another composition."""
    d = tmp_path_factory.mktemp("kdm")
    start = datetime.now(timezone.utc) - timedelta(days=1)
    write_chain(make_chain("cinegpu.test", "signer", not_before=start), d / "signer")
    write_chain(make_chain("cinema.test", "projector", role="SM", not_before=start, days=30), d / "projector")
    keys = [TrackKey(t, i, os.urandom(16)) for t, i in KEY_IDS]
    write_key_file(d / "keys", keys, CPL_ID)
    write_key_file(d / "other-keys", keys, "11111111-2222-3333-4444-555555555555")
    write_key_file(d / "short-keys", keys[:1], CPL_ID)
    return d


def _make(d, out, *extra, keys="keys", signer_key="signer/leaf.key", chain="signer/chain.pem",
          not_before="now", not_after="+7d"):
    return cinegpu("kdm", "make", "--cpl", str(CPL), "--keys", str(d / keys),
                   "--recipient", str(d / "projector" / "leaf.signed.pem"), "--signer-key", str(d / signer_key),
                   "--signer-chain", str(d / chain), f"--not-before={not_before}", f"--not-after={not_after}",
                   "-o", str(out), *extra)


def test_chain_make_inspect(tmp_path, setup):
    r = cinegpu("kdm", "chain", "-o", str(tmp_path / "mine"), "--organisation", "Example Films",
                "--common-name", "example")
    assert r.returncode == 0, r.stderr
    assert "CN=CS.example" in r.stdout and "O=Example Films" in r.stdout
    assert (tmp_path / "mine" / "leaf.key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "mine" / "chain.pem").read_text().count("BEGIN CERTIFICATE") == 3
    key = (tmp_path / "mine" / "leaf.key").read_bytes()
    again = cinegpu("kdm", "chain", "-o", str(tmp_path / "mine"))
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1 and "exist" in again.stderr
    assert (tmp_path / "mine" / "leaf.key").read_bytes() == key
    # sign with the chain just made, for the projector of the fixture
    (tmp_path / "keys").write_bytes((setup / "keys").read_bytes())
    os.chmod(tmp_path / "keys", 0o600)
    out = tmp_path / "kdm.xml"
    r = cinegpu("kdm", "make", "--cpl", str(CPL), "--keys", str(tmp_path / "keys"),
                "--recipient", str(setup / "projector" / "chain.pem"), "--signer-key", str(tmp_path / "mine" / "leaf.key"),
                "--signer-chain", str(tmp_path / "mine" / "chain.pem"), "--not-before", "now", "--not-after", "+2d",
                "-o", str(out), "--annotation", "For the projector")
    assert r.returncode == 0, r.stderr
    assert "2 keys" in r.stdout and "CN=SM.projector" in r.stdout
    r = cinegpu("kdm", "inspect", str(out), "--key", str(setup / "projector" / "leaf.key"), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["problems"] == [] and report["cpl_id"] == CPL_ID and report["annotation"] == "For the projector"
    assert report["content_title"] == "A Test DCP" and len(report["chain"]) == 3
    want = [(k.key_type, k.key_id, k.key.hex()) for k in read_key_file(setup / "keys").keys]
    assert [(k["type"], k["id"], k["key"]) for k in report["keys"]] == want
    start = datetime.fromisoformat(report["not_valid_before"])
    assert datetime.fromisoformat(report["not_valid_after"]) - start == timedelta(days=2)
    assert abs(start - datetime.now(timezone.utc)) < timedelta(minutes=5)


def test_an_existing_kdm_is_kept_unless_forced(tmp_path, setup):
    out = tmp_path / "kdm.xml"
    out.write_text("mine")
    r = _make(setup, out)
    assert r.returncode == 2 and "exists already" in r.stderr and out.read_text() == "mine"
    r = _make(setup, out, "--force")
    assert r.returncode == 0, r.stderr
    assert out.read_bytes().startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<DCinemaSecurityMessage')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kdm.xml"]


@pytest.mark.parametrize("kw,words", [
    (dict(keys="other-keys"), "key file is for composition 11111111-2222-3333-4444-555555555555"),
    (dict(keys="short-keys"), "has no key 7ab6c77b-6648-44b9-8549-a5290ada6238"),
    (dict(signer_key="projector/leaf.key"), "not the key of the chain's leaf"),
    (dict(chain="signer/leaf.signed.pem"), "signer's chain does not hold"),
    (dict(not_after="-1d"), "ends .* before it starts"),
    (dict(not_after="+60d"), "outside the recipient's certificate"),
    (dict(not_before="2020-01-01T00:00:00"), "outside the recipient's certificate"),
    (dict(not_after="next week"), "not a time"),
])
def test_refusals_are_one_line_and_leave_nothing(tmp_path, setup, kw, words):
    import re

    out = tmp_path / "kdm.xml"
    r = _make(setup, out, **kw)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cinegpu kdm: ") and re.search(words, lines[0]), r.stderr
    assert "Traceback" not in r.stderr and list(tmp_path.iterdir()) == []
    for k in read_key_file(setup / "keys").keys:
        assert k.key.hex() not in r.stderr + r.stdout
