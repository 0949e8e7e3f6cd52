"""``cinegpu kdm make`` with cinemas' UTC offsets (issue 55): the screens CSV's ``utc_offset``
column and ``--utc-offset`` write each KDM's window as the cinema's local time, the same instants
(read back by our reader, verified by xmlsec1); a bad offset is one line naming the CSV's row
and column, exit 2, nothing written."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from cinegpu.media.security.certificates import make_chain, write_chain
from cinegpu.media.security.content_keys import write_key_file
from cinegpu.media.security.kdm import read_kdm
from cinegpu.media.security.screens import kdm_file_name
from helpers.cli import cinegpu
from helpers.encrypted_dcp import make_dcp

NOT_BEFORE, NOT_AFTER = "2026-12-01T19:00:00Z", "2026-12-08T19:00:00+00:00"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """An encrypted package's CPL and key file, a signer chain, two screens' chains."""
    d = tmp_path_factory.mktemp("kdm-utc")
    enc = make_dcp(d / "enc", encrypt=True, n=2, sound=False, subtitles=False)
    write_key_file(d / "keys", list(enc.keys.values()), enc.cpl_id)
    born = datetime.now(timezone.utc) - timedelta(days=400)
    for name in ("signer", "s0", "s1"):
        write_chain(make_chain("cinema.test", name, role="CS" if name == "signer" else "SM", not_before=born,
                               days=3000), d / name)
    return d, enc


def _make(d, enc, out, *who):
    return cinegpu("kdm", "make", "--cpl", enc.root / "cpl.xml", "--keys", d / "keys", *who,
                   "--signer-key", d / "signer" / "leaf.key", "--signer-chain", d / "signer" / "chain.pem",
                   f"--not-before={NOT_BEFORE}", f"--not-after={NOT_AFTER}", "-o", out)


def _window_text(path) -> tuple[str, str]:
    text = path.read_text()
    return (text.split("<ContentKeysNotValidBefore>")[1].split("<")[0],
            text.split("<ContentKeysNotValidAfter>")[1].split("<")[0])


@pytest.mark.slow  # long: three cinegpu processes (2.4 s; the fixture, a package and three chains, 6 s)
def test_two_cinemas_at_their_offsets_and_one_recipient(setup, tmp_path):
    d, enc = setup
    (d / "screens.csv").write_text("cinema,screen,certificate,utc_offset\n"
                                   "Paris,1,s0/leaf.signed.pem,+01:00\n"
                                   "Toronto,1,s1/leaf.signed.pem,-5\n")
    r = _make(d, enc, tmp_path / "kdms", "--screens", d / "screens.csv")
    assert r.returncode == 0, r.stderr
    start = datetime(2026, 12, 1, 19, tzinfo=timezone.utc)
    want = {"Paris": ("2026-12-01T20:00:00+01:00", "2026-12-08T20:00:00+01:00"),
            "Toronto": ("2026-12-01T14:00:00-05:00", "2026-12-08T14:00:00-05:00")}
    for cinema, window in want.items():
        path = tmp_path / "kdms" / kdm_file_name(enc.title, cinema, "1")
        assert _window_text(path) == window
        k = read_kdm(path)
        assert (k.not_before, k.not_after) == (start, start + timedelta(days=7))
        if shutil.which("xmlsec1"):
            run = subprocess.run(["xmlsec1", "--verify", "--pubkey-cert-pem", str(d / "signer" / "leaf.signed.pem"),
                                  "--id-attr:Id", "AuthenticatedPublic", "--id-attr:Id", "AuthenticatedPrivate",
                                  str(path)], capture_output=True, text=True, timeout=60)
            assert run.returncode == 0 and "OK" in run.stderr, run.stderr
    one = _make(d, enc, tmp_path / "one.xml", "--recipient", d / "s0" / "leaf.signed.pem", "--utc-offset", "+0530")
    assert one.returncode == 0, one.stderr
    assert _window_text(tmp_path / "one.xml") == ("2026-12-02T00:30:00+05:30", "2026-12-09T00:30:00+05:30")
    assert "valid 2026-12-02T00:30:00+05:30 to 2026-12-09T00:30:00+05:30" in one.stdout
    assert read_kdm(tmp_path / "one.xml").not_before == start


@pytest.mark.slow  # long: two cinegpu processes (2.3 s)
def test_a_bad_offset_is_one_line_naming_the_row(setup, tmp_path):
    d, enc = setup
    (d / "bad.csv").write_text("cinema,screen,certificate,utc_offset\n"
                               "Paris,1,s0/leaf.signed.pem,+01:00\n"
                               "Kiritimati,1,s1/leaf.signed.pem,+14:30\n")
    r = _make(d, enc, tmp_path / "kdms", "--screens", d / "bad.csv")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "line 3 (Kiritimati / 1), column utc_offset: '+14:30' is not a UTC offset" in r.stderr
    assert not (tmp_path / "kdms").exists()
    r = _make(d, enc, tmp_path / "one.xml", "--recipient", d / "s0" / "leaf.signed.pem", "--utc-offset", "CET")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--utc-offset: 'CET'" in r.stderr, r.stderr
    assert not (tmp_path / "one.xml").exists()
