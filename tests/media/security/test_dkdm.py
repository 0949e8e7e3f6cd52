"""DKDMs (cinegpu.media.security.dkdm) and the KDM formulations (kdm_write.FORMULATIONS).

A DKDM is a KDM to one's own certificate: opened with one's own key it gives the content keys,
from which a screen's KDM is made that decrypts the package (the player's key ring and reader);
the window of a KDM made from it must lie inside its own; a DKDM that does not open is refused.
Each formulation writes the DeviceList and ContentAuthenticator libdcp writes for it."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import pytest

from cinegpu.media.errors import KdmRefused
from cinegpu.media.security.certificates import certificate_thumbprint, make_chain
from cinegpu.media.security.dkdm import check_inside, open_dkdm
from cinegpu.media.security.kdm import parse_kdm
from cinegpu.media.security.kdm_write import ASSUME_TRUST, FORMULATIONS, make_kdm
from cinegpu.media.security.key_ring import KeyRing
from cinegpu.media.source import open_source
from helpers.encrypted_dcp import key_lines, make_dcp
from helpers.kdm_build import kdm_schema

NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dkdm")
    start = NOW - timedelta(days=1)
    enc = make_dcp(tmp / "enc", encrypt=True, sound=False, subtitles=False, n=3)
    me = make_chain("distributor.test", "me", not_before=start)
    screen = make_chain("cinema.test", "screen", role="SM", not_before=start, days=60)
    dkdm = make_kdm(cpl_id=enc.cpl_id, content_title=enc.title, keys=list(enc.keys.values()), recipient=me.leaf,
                    signer_key=me.leaf_key, signer_chain=me.certificates, not_before=NOW - timedelta(hours=1),
                    not_after=NOW + timedelta(days=30))
    (tmp / "dkdm.xml").write_bytes(dkdm)
    return dict(tmp=tmp, enc=enc, me=me, screen=screen, dkdm=tmp / "dkdm.xml")


def test_a_kdm_made_from_a_dkdm_decrypts_the_package(world):
    enc, me, screen = world["enc"], world["me"], world["screen"]
    d = open_dkdm(world["dkdm"], me.leaf_key)
    assert (d.cpl_id, d.content_title) == (enc.cpl_id, enc.title)
    assert d.not_after - d.not_before == timedelta(days=30, hours=1)
    assert {(k.key_type, k.key_id, k.key) for k in d.keys} == {(k.key_type, k.key_id, k.key) for k in enc.keys.values()}
    for hexkey in key_lines(enc):
        assert hexkey not in repr(d)
    kdm = make_kdm(cpl_id=d.cpl_id, content_title=d.content_title, keys=d.keys, recipient=screen.leaf,
                   signer_key=me.leaf_key, signer_chain=me.certificates, not_before=NOW, not_after=NOW + timedelta(days=2))
    ring = KeyRing(screen.leaf_key)
    ring.add_kdm(parse_kdm(kdm, "screen.xml"))
    with open_source(enc.root, keys=ring) as src:
        assert [src.frame(n) for n in range(3)] == list(enc.codestreams[:3])


def test_the_window_must_lie_inside_the_dkdms(world):
    d = open_dkdm(world["dkdm"], world["me"].leaf_key)
    check_inside(d, d.not_before, d.not_after)
    for nb, na in ((d.not_before - timedelta(seconds=1), d.not_after),
                   (d.not_before, d.not_after + timedelta(days=1))):
        with pytest.raises(KdmRefused, match=r"lies outside the DKDM's, .* to "):
            check_inside(d, nb, na)


def test_a_dkdm_that_does_not_open_is_refused(world, tmp_path):
    with pytest.raises(KdmRefused, match=r"the DKDM dkdm.xml is refused: the private key does not open"):
        open_dkdm(world["dkdm"], world["screen"].leaf_key)
    changed = tmp_path / "dkdm.xml"
    changed.write_bytes(world["dkdm"].read_bytes().replace(world["enc"].title.encode(), b"OTHER TITLE", 1))
    with pytest.raises(KdmRefused, match=r"refused: the signature does not cover"):
        open_dkdm(changed, world["me"].leaf_key)
    with pytest.raises(KdmRefused, match=r"chain does not hold"):
        open_dkdm(world["dkdm"], world["me"].leaf_key, at=NOW + timedelta(days=4000))


@pytest.mark.parametrize("formulation,listed,authenticated", [
    ("modified-transitional-1", False, False),
    ("multiple-modified-transitional-1", True, False),
    ("dci-any", False, True),
    ("dci-specific", True, True),
])
def test_each_formulation_writes_what_libdcp_writes(world, formulation, listed, authenticated):
    me, screen = world["me"], world["screen"]
    other = make_chain("cinema.test", "other", role="SM", not_before=NOW - timedelta(days=1))
    thumb = base64.b64encode(certificate_thumbprint(other.leaf)).decode()
    d = open_dkdm(world["dkdm"], me.leaf_key)
    common = dict(cpl_id=d.cpl_id, content_title=d.content_title, keys=d.keys, recipient=screen.leaf,
                  signer_key=me.leaf_key, signer_chain=me.certificates, not_before=NOW,
                  not_after=NOW + timedelta(days=1), formulation=formulation)
    trusted = [other.leaf, base64.b64encode(certificate_thumbprint(me.leaf)).decode()]
    if listed:
        k = parse_kdm(make_kdm(trusted_devices=trusted, **common))
        assert k.device_thumbprints == (thumb, base64.b64encode(certificate_thumbprint(me.leaf)).decode())
    else:
        with pytest.raises(KdmRefused, match=f"a {formulation} KDM lists no trusted device"):
            make_kdm(trusted_devices=trusted, **common)
    k = parse_kdm(make_kdm(**common))
    assert k.device_thumbprints == (ASSUME_TRUST,)          # none given: "assume trust", as libdcp
    want = base64.b64encode(certificate_thumbprint(me.leaf)).decode() if authenticated else None
    assert k.content_authenticator == want
    ext = k.root.find(".//{http://www.smpte-ra.org/schemas/430-1/2006/KDM}KDMRequiredExtensions")
    order = [e.tag.rsplit("}", 1)[1] for e in ext]
    assert order[:4] == ["Recipient", "CompositionPlaylistId", "ContentTitleText",
                         "ContentAuthenticator" if authenticated else "ContentKeysNotValidBefore"]


def test_formulations_and_thumbprints_refused(world):
    me, screen = world["me"], world["screen"]
    d = open_dkdm(world["dkdm"], me.leaf_key)
    common = dict(cpl_id=d.cpl_id, content_title=d.content_title, keys=d.keys, recipient=screen.leaf,
                  signer_key=me.leaf_key, signer_chain=me.certificates, not_before=NOW, not_after=NOW + timedelta(days=1))
    assert set(FORMULATIONS) == {"modified-transitional-1", "multiple-modified-transitional-1", "dci-any", "dci-specific"}
    with pytest.raises(KdmRefused, match="formulation 'smpte' is none of"):
        make_kdm(formulation="smpte", **common)
    with pytest.raises(KdmRefused, match="'not a thumbprint' is not a certificate thumbprint"):
        make_kdm(formulation="dci-specific", trusted_devices=["not a thumbprint"], **common)


def test_every_formulation_validates_against_the_kdm_schema(world):
    """ClairMeta's ST 430-1 / ST 430-3 schemas (the helper of test_kdm_write) take each
    formulation's KDM: ContentAuthenticator where the schema places it."""
    from lxml import etree

    schema = kdm_schema()
    me, screen = world["me"], world["screen"]
    d = open_dkdm(world["dkdm"], me.leaf_key)
    for formulation, (listed, _) in FORMULATIONS.items():
        data = make_kdm(cpl_id=d.cpl_id, content_title=d.content_title, keys=d.keys, recipient=screen.leaf,
                        signer_key=me.leaf_key, signer_chain=me.certificates, not_before=NOW,
                        not_after=NOW + timedelta(days=1), formulation=formulation,
                        trusted_devices=[me.leaf] if listed else ())
        assert schema.validate(etree.fromstring(data)), (formulation, schema.error_log)
