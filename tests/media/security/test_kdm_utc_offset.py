"""KDM windows written in a cinema's UTC offset (issue 55: DCP-o-matic's per-cinema offset): two
screens of a screens CSV at +01:00 and -05:30 get KDMs whose ContentKeysNotValidBefore/After
and key-block times are the same instants written with each offset; our reader gives those
instants back, the key blocks agree with the XML, and xmlsec1 (not our code) verifies each."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives import serialization
from lxml import etree

from cinegpu.media.security.certificates import make_chain, write_chain
from cinegpu.media.security.content_keys import new_track_key
from cinegpu.media.security.kdm import check_signature, decrypt_keys, load_private_key, parse_kdm
from cinegpu.media.security.kdm_write import make_kdm
from cinegpu.media.security.screens import read_screens

START = datetime(2026, 12, 1, 19, 0, tzinfo=timezone.utc)
END = START + timedelta(days=3, hours=4)


@pytest.fixture(scope="module")
def two_cinemas(tmp_path_factory):
    """A signer, two screens' chains on disk and a CSV giving one cinema +01:00 and the other
    -05:30 (a negative half-hour offset, to see the sign and the minutes kept), and their KDMs."""
    d = tmp_path_factory.mktemp("kdm-offsets")
    born = datetime(2026, 1, 1, tzinfo=timezone.utc)
    signer = make_chain("distributor.test", "signer", not_before=born)
    for n in range(2):
        write_chain(make_chain("cinema.test", f"s{n}", role="SM", not_before=born), d / f"s{n}")
    (d / "screens.csv").write_text("cinema,screen,certificate,utc_offset\n"
                                   "Paris,1,s0/leaf.signed.pem,+01:00\n"
                                   "Far West,2,s1/leaf.signed.pem,-0530\n")
    keys = [new_track_key("MDIK"), new_track_key("MDAK")]
    made = []
    for screen in read_screens(d / "screens.csv"):
        made.append(make_kdm(cpl_id="6affb8ee-0020-4dff-a53c-17652f6358ab", content_title="Offsets", keys=keys,
                             recipient=screen.certificate, signer_key=signer.leaf_key,
                             signer_chain=signer.certificates, not_before=screen.local(START),
                             not_after=screen.local(END)))
    return d, signer, made


def test_the_same_instants_in_each_cinemas_offset(two_cinemas):
    d, _, made = two_cinemas
    written = {}
    for n, data in enumerate(made):
        k = parse_kdm(data)
        assert (k.not_before, k.not_after) == (START, END)          # the same instants ...
        text = etree.tostring(k.root).decode()
        before = text.split("<ContentKeysNotValidBefore>")[1].split("<")[0]
        after = text.split("<ContentKeysNotValidAfter>")[1].split("<")[0]
        written[n] = (before, after)
        check_signature(k)
    assert written == {0: ("2026-12-01T20:00:00+01:00", "2026-12-05T00:00:00+01:00"),  # ... as local times
                       1: ("2026-12-01T13:30:00-05:30", "2026-12-04T17:30:00-05:30")}


def test_the_key_blocks_carry_the_same_local_times(two_cinemas):
    d, _, made = two_cinemas
    for n, data in enumerate(made):
        k = parse_kdm(data)
        keys = decrypt_keys(k, load_private_key(d / f"s{n}" / "leaf.key"))
        assert len(keys) == 2
        assert all((c.not_before, c.not_after) == (START, END) for c in keys)
        assert all(c.not_before.utcoffset() == k.not_before.utcoffset() for c in keys)
    assert parse_kdm(made[1]).not_before.utcoffset() == -timedelta(hours=5, minutes=30)


@pytest.mark.skipif(shutil.which("xmlsec1") is None, reason="the xmlsec1 command is not installed")
def test_xmlsec1_verifies_each_cinemas_kdm(two_cinemas, tmp_path):
    _, signer, made = two_cinemas
    cert = tmp_path / "signer.pem"
    cert.write_bytes(signer.leaf.public_bytes(serialization.Encoding.PEM))
    for n, data in enumerate(made):
        kdm = tmp_path / f"kdm{n}.xml"
        kdm.write_bytes(data)
        run = subprocess.run(["xmlsec1", "--verify", "--pubkey-cert-pem", str(cert), "--id-attr:Id",
                              "AuthenticatedPublic", "--id-attr:Id", "AuthenticatedPrivate", str(kdm)],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and "OK" in run.stderr, (n, run.stderr)
