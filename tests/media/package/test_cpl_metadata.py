"""The CPL's content version, ratings and reel markers (ST 429-7 6.8, 6.9, 8.3): what the
options accept, where the writer puts them, what the reader and ``info`` give back, and
ClairMeta's view of a package that has them (issue 52, item 4)."""

from __future__ import annotations

import pytest
from lxml import etree

from cinegpu.jobs.demo import demo_frame
from cinegpu.media.describe import describe
from cinegpu.media.images.colour import to_xyz12
from cinegpu.media.images.frames import fit
from cinegpu.media.package.cpl_metadata import (
    ContentVersion,
    CplMetadata,
    Marker,
    Rating,
    parse_content_version,
    parse_marker,
    parse_rating,
    reel_markers,
    timecode,
    timecode_text,
)
from cinegpu.media.package.dcp_write import NS_CPL, DCPWriter, encode_frame
from cinegpu.media.package.read import read_package
from cinegpu.media.samples import BARS_2K
from helpers.mastering import clairmeta_ok

UUID = "0d8b8d2e-5c7e-4b36-9a3e-1f0a0b9c1d2e"


def test_content_version_option():
    assert parse_content_version(f"{UUID},Final cut v2") == ContentVersion(f"urn:uuid:{UUID}", "Final cut v2")
    assert parse_content_version(f"urn:uuid:{UUID.upper()},x").id == f"urn:uuid:{UUID}"
    assert parse_content_version("http://example.com/v/3, Third") == ContentVersion("http://example.com/v/3", "Third")
    for bad, words in (("v2", "wants ID,LABEL"), (f"{UUID},", "wants ID,LABEL"),
                       ("not a uri,label", "neither a UUID nor a URI"),
                       (f"{UUID},a\x07b", "label: character .* is not allowed")):
        with pytest.raises(ValueError, match=words):
            parse_content_version(bad)


def test_rating_option_splits_at_the_last_colon():
    assert parse_rating("http://www.mpaa.org/2003-ratings:PG-13") == \
        Rating("http://www.mpaa.org/2003-ratings", "PG-13")
    assert parse_rating("BBFC:12A") == Rating("BBFC", "12A")
    for bad, words in (("PG-13", "wants AGENCY:LABEL"), (":R", "wants AGENCY:LABEL"),
                       ("MPAA:", "wants AGENCY:LABEL"), ("my agency:R", "has no spaces")):
        with pytest.raises(ValueError, match=words):
            parse_rating(bad)


@pytest.mark.parametrize("rate,text,frame", [(24, "01:23:45:12", (5025 * 24) + 12), (24, "00:00:00:00", 0),
                                             (25, "00:00:02:24", 74), ("24000/1001", "00:01:00:00", 1440),
                                             (48, "00:00:01:47", 95), (24, "2012", 2012)])
def test_timecodes_both_ways(rate, text, frame):
    assert timecode(text, rate) == frame
    if ":" in text:
        assert timecode_text(frame, rate) == text


def test_marker_option():
    assert parse_marker("ffec=00:00:10:00", 24) == Marker("FFEC", 240)
    for bad, words in (("FFEC", "wants LABEL=HH:MM:SS:FF"), ("XXXX=10", "not a standard marker"),
                       ("FFEC=00:00:01:24", "frames to 23 at 24 fps"), ("FFEC=00:61:00:00", "run to 59"),
                       ("LFEC=later", "want a timecode")):
        with pytest.raises(ValueError, match=words):
            parse_marker(bad, 24)


def test_markers_default_to_ffoc_and_lfoc_and_go_to_their_reels():
    meta = CplMetadata(markers=(Marker("FFEC", 50), Marker("LFEC", 71)))
    markers = meta.markers_for(72)
    # in frame order, and at one frame in the standard's order of labels
    assert markers == (Marker("FFOC", 1), Marker("FFEC", 50), Marker("LFOC", 71), Marker("LFEC", 71))
    assert reel_markers(markers, [24, 24, 24]) == [[("FFOC", 1)], [], [("FFEC", 2), ("LFOC", 23), ("LFEC", 23)]]
    assert CplMetadata(markers=(Marker("FFOC", 0),)).markers_for(30)[0] == Marker("FFOC", 0)
    assert CplMetadata().markers_for(1) == (Marker("FFOC", 0), Marker("LFOC", 0))
    with pytest.raises(ValueError, match="past the composition's last frame"):
        CplMetadata(markers=(Marker("FFEC", 72),)).markers_for(72)
    with pytest.raises(ValueError, match="FFEC is given twice"):
        CplMetadata(markers=(Marker("FFEC", 1), Marker("FFEC", 2)))


def _write(out, metadata, reels=(24, 24), frame: bytes | None = None):
    """A DCP of ``reels`` of one frame (default: the shipped 2K sample) with ``metadata``."""
    frame = BARS_2K.read_bytes() if frame is None else frame
    with DCPWriter(out, title="Meta_TST-1_F_XX-XX_2K_CGP_20260101_CGP_SMPTE_OV", edit_rate=24,
                   aspect=(1998, 1080), kind="test", reels=reels, metadata=metadata) as dcp:
        for _ in range(sum(reels)):
            dcp.write(frame)
        return dcp.close()


META = CplMetadata(ContentVersion(f"urn:uuid:{UUID}", "Final v2"),
                   (Rating("http://www.mpaa.org/2003-ratings", "PG-13"), Rating("BBFC", "12A")),
                   (Marker("FFEC", 30), Marker("LFEC", 40)))


def test_written_read_back_and_described(tmp_path):
    package = _write(tmp_path / "dcp", META)
    cpl = etree.parse(str(next((tmp_path / "dcp").glob("cpl_*.xml")))).getroot()
    ns = {"c": NS_CPL}
    assert cpl.findtext("c:ContentVersion/c:Id", namespaces=ns) == f"urn:uuid:{UUID}"
    assert [(r.findtext("c:Agency", namespaces=ns), r.findtext("c:Label", namespaces=ns))
            for r in cpl.findall("c:RatingList/c:Rating", ns)] == [(r.agency, r.label) for r in META.ratings]
    reels = cpl.findall("c:ReelList/c:Reel", ns)
    # MainMarkers first in each AssetList that has markers (the schema's order)
    assert [a.tag.split("}")[1] for a in reels[0].find("c:AssetList", ns)][:2] == ["MainMarkers", "MainPicture"]
    second = reels[1].find("c:AssetList/c:MainMarkers", ns)
    assert [(m.findtext("c:Label", namespaces=ns), m.findtext("c:Offset", namespaces=ns))
            for m in second.iterfind("c:MarkerList/c:Marker", ns)] == [("FFEC", "6"), ("LFEC", "16"), ("LFOC", "23")]
    assert second.findtext("c:Duration", namespaces=ns) == "24"
    comp = read_package(package.root).compositions[0]
    assert comp.metadata.content_version == META.content_version
    assert comp.metadata.ratings == META.ratings
    assert sorted(comp.metadata.markers, key=lambda m: m.frame) == \
        [Marker("FFOC", 1), Marker("FFEC", 30), Marker("LFEC", 40), Marker("LFOC", 47)]
    text = describe(package.root)
    assert f"content version: 'Final v2' (urn:uuid:{UUID})" in text
    assert "ratings: PG-13 (http://www.mpaa.org/2003-ratings); 12A (BBFC)" in text
    assert "FFEC 00:00:01:06 (frame 30)" in text and "LFOC 00:00:01:23 (frame 47)" in text


def test_without_options_the_cpl_has_a_new_version_and_the_two_markers(tmp_path):
    package = _write(tmp_path / "dcp", None, reels=(24,))
    meta = read_package(package.root).compositions[0].metadata
    assert meta.content_version.id.startswith("urn:uuid:")
    assert meta.content_version.label.startswith("Meta_TST-1_F_XX-XX_2K_CGP_20260101_CGP_SMPTE_OV_20")
    assert meta.ratings == () and meta.markers == (Marker("FFOC", 1), Marker("LFOC", 23))


@pytest.mark.slow  # long: ClairMeta's whole check, ~10 s
def test_clairmeta_accepts_the_metadata(tmp_path):
    flat = encode_frame(to_xyz12(fit(demo_frame(3, 1024, 540), 1998, 1080), "rec709"), profile="2k", fps=24)
    package = _write(tmp_path / "dcp", META, frame=flat)
    clairmeta_ok(package.root)
