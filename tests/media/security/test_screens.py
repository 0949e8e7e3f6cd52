"""The screens CSV (cinegpu.media.security.screens): its columns, certificates by path or inline,
trusted devices by thumbprint or path; every mistake one error naming the CSV's line; DCP-o-matic's
file names; the output folder written whole (or as ZIPs per cinema) or not at all."""

from __future__ import annotations

import base64
import os
import zipfile
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives import serialization

from cinegpu.media.errors import CorruptMedia, MediaError
from cinegpu.media.security.certificates import certificate_thumbprint, make_chain, write_chain
from cinegpu.media.security.screens import (
    careful_name,
    kdm_file_name,
    parse_utc_offset,
    read_screens,
    write_kdm_folder,
    zip_file_name,
)

NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    """Three projector chains on disk, in certs/pN/ (leaf.signed.pem, chain.pem, leaf.key)."""
    d = tmp_path_factory.mktemp("screens")
    out = []
    for n in range(3):
        c = make_chain("cinema.test", f"p{n}", role="SM", not_before=NOW - timedelta(days=1))
        write_chain(c, d / "certs" / f"p{n}")
        out.append(c)
    return d, out


def _pem(cert) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _csv(folder, text: str, name: str = "screens.csv"):
    path = folder / name
    path.write_text(text)
    return path


def test_columns_paths_inline_pem_and_trusted_devices(chains):
    d, cs = chains
    thumb = base64.b64encode(certificate_thumbprint(cs[2].leaf)).decode()
    inline = _pem(cs[1].leaf).replace('"', "")
    path = _csv(d, "Screen,Cinema,Certificate,Trusted_Devices\r\n"
                   "1,Odeon Left,certs/p0/leaf.signed.pem,\r\n"
                   "\r\n"
                   f'2,Odeon Left,"{inline}",{thumb}; certs/p0/chain.pem\r\n'
                   "Salle 1,Cinéma Łódź,certs/p2/chain.pem,\r\n")
    s = read_screens(path)
    assert [(x.cinema, x.screen, x.line) for x in s] == [("Odeon Left", "1", 2), ("Odeon Left", "2", 4),
                                                          ("Cinéma Łódź", "Salle 1", 5 + inline.count("\n"))]
    assert [x.certificate for x in s] == [cs[0].leaf, cs[1].leaf, cs[2].leaf]
    assert s[1].trusted_devices == (thumb, base64.b64encode(certificate_thumbprint(cs[0].leaf)).decode())
    assert s[0].trusted_devices == s[2].trusted_devices == ()


def test_without_the_optional_column(chains):
    d, cs = chains
    s = read_screens(_csv(d, "cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\n", "two.csv"))
    assert len(s) == 1 and s[0].trusted_devices == ()


@pytest.mark.parametrize("text,words", [
    ("cinema,screen\nA,1\n", r"line 1: the header must name the columns cinema, screen, certificate"),
    ("cinema,screen,certificate,notes\nA,1,x\n", r"line 1: the header"),
    ("cinema,screen,certificate\n", r"no screen"),
    ("cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,2\n", r"line 3: 2 cells, the header names 3"),
    ("cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\n,2,certs/p1/leaf.signed.pem\n",
     r"line 3: the cinema name must be one line of text, not empty"),
    ("cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,2,\n", r"line 3 \(A / 2\): no certificate"),
    ("cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,2,certs/missing.pem\n",
     r"screens.csv: line 3 \(A / 2\): .*certs/missing.pem: cannot read"),
    ("cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,2,certs/p0/leaf.key\n",
     r"line 3 \(A / 2\): .*no PEM certificate"),
    ("cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,1,certs/p1/leaf.signed.pem\n",
     r"line 3 \(A / 1\): the same screen as line 2"),
    ("cinema,screen,certificate\nA,Screen 1,certs/p0/leaf.signed.pem\nA,Screen1,certs/p1/leaf.signed.pem\n",
     r"line 3 \(A / Screen1\): its KDM's file name would be that of line 2"),
    ('cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,2,"-----BEGIN CERTIFICATE-----\nxx\n"\n',
     r"line 3 \(A / 2\): the inline certificate is not PEM"),
    ('cinema,screen,certificate,trusted_devices\nA,1,certs/p0/leaf.signed.pem,nothing/here.pem\n',
     r"line 2 \(A / 1\), trusted device: .*nothing/here.pem: cannot read"),
    ('cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\nA,"2\n', r"line 3: not CSV"),
    ("cinema,screen,certificate,utc_offset\nA,1,certs/p0/leaf.signed.pem,+01:00\nB,2,certs/p1/leaf.signed.pem,+15:00\n",
     r"line 3 \(B / 2\), column utc_offset: '\+15:00' is not a UTC offset from -12:00 to \+14:00"),
    ("cinema,screen,certificate,utc_offset\nA,1,certs/p0/leaf.signed.pem,CET\n",
     r"line 2 \(A / 1\), column utc_offset: 'CET' is not a UTC offset"),
])
def test_a_mistake_is_one_error_naming_the_line(chains, text, words):
    d, _ = chains
    with pytest.raises(MediaError, match=words) as e:
        read_screens(_csv(d, text))
    assert "\n" not in str(e.value) and str(e.value).startswith(str(d / "screens.csv"))


@pytest.mark.parametrize("text,hours,minutes", [
    ("+01:00", 1, 0), ("-05:30", -5, -30), ("+0100", 1, 0), ("+1", 1, 0), ("-1", -1, 0), ("5:45", 5, 45),
    ("+0545", 5, 45), (" 0 ", 0, 0), ("-12:00", -12, 0), ("+14:00", 14, 0), ("-0930", -9, -30),
])
def test_utc_offsets_dcp_o_matic_style(text, hours, minutes):
    assert parse_utc_offset(text) == timedelta(hours=hours, minutes=minutes)


@pytest.mark.parametrize("text", ["+14:30", "-12:01", "+01:60", "1h", "+01:00:00", "UTC+1", "", "+", "+123"])
def test_a_bad_utc_offset_says_what_is_wanted(text):
    with pytest.raises(ValueError, match=r"is not a UTC offset from -12:00 to \+14:00 \(want \+HH:MM") as e:
        parse_utc_offset(text)
    assert "\n" not in str(e.value)


def test_the_utc_offset_column(chains):
    """Each cinema's offset (an empty cell: none); a screen writes an instant in its offset."""
    d, _ = chains
    s = read_screens(_csv(d, "cinema,screen,certificate,utc_offset\n"
                             "Paris,1,certs/p0/leaf.signed.pem,+01:00\n"
                             "Mumbai,1,certs/p1/leaf.signed.pem,+0530\n"
                             "London,1,certs/p2/leaf.signed.pem,\n", "offsets.csv"))
    assert [x.utc_offset for x in s] == [timedelta(hours=1), timedelta(hours=5, minutes=30), None]
    at = datetime(2026, 12, 1, 19, 0, tzinfo=timezone.utc)
    assert [x.local(at).isoformat() for x in s] == ["2026-12-01T20:00:00+01:00", "2026-12-02T00:30:00+05:30",
                                                    "2026-12-01T19:00:00+00:00"]
    assert all(x.local(at) == at for x in s)


def test_not_utf8_and_too_large(chains, tmp_path):
    d, _ = chains
    with pytest.raises(CorruptMedia, match="not UTF-8"):
        read_screens(_bytes(d, b"cinema,screen,certificate\nA\xff,1,x\n"))
    with pytest.raises(MediaError, match="a folder"):
        read_screens(tmp_path)


def _bytes(folder, data: bytes):
    p = folder / "raw.csv"
    p.write_bytes(data)
    return p


def test_dcp_o_matics_file_names():
    assert careful_name("Cinéma Łódź / Salle #1") == "CinemaLodzSalle1"
    assert kdm_file_name("My Film", "Odeon Left", "Screen 1") == "KDM_MyFilm_OdeonLeft_Screen1.xml"
    assert zip_file_name("My Film", "Odeon Left") == "KDM_MyFilm_OdeonLeft.zip"
    assert kdm_file_name("../x", "a/b", "c%d+e.f") == "KDM_..x_ab_c%d+e.f.xml"


def test_the_folder_is_written_whole_or_not_at_all(chains, tmp_path, monkeypatch):
    d, cs = chains
    screens = read_screens(_csv(d, "cinema,screen,certificate\nA,1,certs/p0/leaf.signed.pem\n"
                                   "A,2,certs/p1/leaf.signed.pem\nB,1,certs/p2/leaf.signed.pem\n"))
    made = [(s, f"<kdm {n}/>".encode()) for n, s in enumerate(screens)]
    out = write_kdm_folder(tmp_path / "out", made, "T")
    assert sorted(p.name for p in out) == ["KDM_T_A_1.xml", "KDM_T_A_2.xml", "KDM_T_B_1.xml"]
    assert (tmp_path / "out" / "KDM_T_A_2.xml").read_bytes() == b"<kdm 1/>"
    zips = write_kdm_folder(tmp_path / "zips", made, "T", zip_by_cinema=True)
    assert [p.name for p in zips] == ["KDM_T_A.zip", "KDM_T_B.zip"]
    with zipfile.ZipFile(zips[0]) as z:
        assert z.namelist() == ["KDM_T_A_1.xml", "KDM_T_A_2.xml"] and z.read("KDM_T_A_1.xml") == b"<kdm 0/>"
    with pytest.raises(MediaError, match="exists already"):
        write_kdm_folder(tmp_path / "out", made, "T")
    (tmp_path / "empty").mkdir()
    assert len(write_kdm_folder(tmp_path / "empty", made, "T")) == 3
    # a failure half-way leaves nothing: no partial folder, no destination
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(MediaError, match="cannot write the KDMs: No space left"):
        write_kdm_folder(tmp_path / "full", made, "T")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "out", "zips"]
