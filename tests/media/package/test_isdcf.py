"""The ISDCF Digital Cinema Naming Convention (v9) name builder (:mod:`cinegpu.media.package.isdcf`).

Names built for many packages (2K/4K; flat, scope, full container; 24, 25, 48 fps; 2D and 3D; no
sound, stereo, 5.1, 7.1 and 16-channel 5.1 with HI/VI; subtitles, burned-in subtitles, closed
captions or none; SMPTE and Interop; OV and VF; with and without a rating) parse with ClairMeta's
``parse_isdcf_string`` without an error, say what the facts say, and pass ClairMeta's DCNC checks
that compare a name's claims with a CPL (run on a dict shaped as ClairMeta's parsed CPL). Golden
names, the title's cleaning, and each mistake of the ``--isdcf`` option and of fields that
contradict the facts (one ValueError each, naming the field) are checked without ClairMeta."""

from __future__ import annotations

import datetime
import itertools
from dataclasses import replace
from fractions import Fraction
from types import SimpleNamespace

import pytest

from cinegpu.media.package.isdcf import (
    CONTAINERS,
    CONTENT_TYPES,
    IsdcfFields,
    PackageFacts,
    isdcf_name,
    isdcf_title,
    parse_isdcf_option,
)

DAY = datetime.date(2024, 5, 17)

#: the channels, sound field code and accessibility tracks of the sounds the matrix tries
SOUNDS = {
    "mos": {},
    "stereo": {"sound_channels": 2},
    "5.1": {"sound_channels": 6},
    "7.1": {"sound_channels": 8},
    "5.1-hi-vi": {"sound_channels": 16, "sound_field": "51", "hearing_impaired": True, "visually_impaired": True},
}
#: the text a package carries: (facts, the fields that name it)
TEXTS = {
    "none": ({}, {}),
    "subtitles": ({"subtitles": True}, {"subtitle_language": "FR"}),
    "burned-in": ({"burned_in_subtitles": True}, {"subtitle_language": "DE"}),
    "closed-captions": ({"closed_captions": True}, {}),
}
#: the user's release fields: OV for everyone, and a rated US VF
RELEASES = {
    "ov-int": {"territory": "INT", "package_type": "OV"},
    "vf-us-r": {"territory": "US", "rating": "R", "package_type": "VF", "package_version": 2, "studio": "DI",
                "facility": "CGP"},
}


def _matrix():
    for size, rate, stereo, sound, text, standard, release in itertools.product(
            CONTAINERS, (24, 25, 48), (False, True), SOUNDS, TEXTS, ("SMPTE", "IOP"), RELEASES):
        text_facts, text_fields = TEXTS[text]
        facts = PackageFacts(*size, Fraction(rate), DAY, standard=standard, stereoscopic=stereo,
                             **SOUNDS[sound], **text_facts)
        fields = IsdcfFields(title="Matrix Film", language="EN", **text_fields, **RELEASES[release])
        yield f"{size}-{rate}-{stereo}-{sound}-{text}-{standard}-{release}", facts, fields


def _playlist(name: str, facts: PackageFacts) -> dict:
    """A CPL as ClairMeta's parser leaves it (``playlist["Info"]["CompositionPlaylist"]``), with
    the keys its DCNC checks read: what ``cpl_extract_characteristics`` sets from the reels."""
    from clairmeta.utils.time import format_ratio

    assets = {}
    if facts.sound_channels:
        assets["Sound"] = {"Probe": {"ChannelCount": facts.sound_channels}}
    if facts.immersive:
        assets["AuxData"] = {"Schema": facts.immersive}
    cpl = {
        "ContentTitleText": name,
        "EditRate": format_ratio(f"{facts.frame_rate.numerator} {facts.frame_rate.denominator}"),
        "Stereoscopic": facts.stereoscopic,
        "ScreenAspectRatio": format_ratio(f"{facts.width} {facts.height}"),
        "Resolution": f"{facts.width}x{facts.height}",
        "Subtitle": facts.subtitles,
        "OpenCaption": facts.open_captions,
        "ClosedCaption": facts.closed_captions,
        "DolbyVision": facts.dolby_vision,
        "EclairColor": facts.eclair_color,
        "ReelList": [{"Assets": assets}],
    }
    return {"FileName": "CPL.xml", "Info": {"CompositionPlaylist": cpl}}


def _clairmeta(name: str, facts: PackageFacts, package_type: str):
    """ClairMeta's parse of ``name`` (fields, errors) and the messages of its DCNC checks run
    against a CPL and a package with ``facts``."""
    isdcf = pytest.importorskip("clairmeta.utils.isdcf")
    dcnc = pytest.importorskip("clairmeta.dcp_check_isdcf_dcnc")
    parsed, errors = isdcf.parse_isdcf_string(name)
    dcp = SimpleNamespace(path="dcp", schema="SMPTE" if facts.standard == "SMPTE" else "Interop",
                          package_type=package_type)
    checker = dcnc.Checker(dcp)
    playlist = _playlist(name, facts)
    checker.check_dcnc_compliance(playlist)
    for check in checker.find_check("dcnc_field"):
        check(playlist, checker.fields)
    return parsed, errors, [e.message for e in checker.errors]


def _claims(parsed: dict) -> dict:
    """What ClairMeta read in a name, as the facts would say it."""
    return {
        "frame rate": parsed["ContentType"]["FrameRate"],
        "3D": (parsed["ContentType"]["Dimension"], parsed["Standard"]["Dimension"]),
        "aspect": parsed["ProjectorAspectRatio"]["AspectRatio"],
        "resolution": parsed["Resolution"]["Value"],
        "channels": parsed["AudioType"]["Channels"],
        "accessibility": (bool(parsed["AudioType"]["HearingImpaired"]), bool(parsed["AudioType"]["VisionImpaired"])),
        "subtitles": (parsed["Language"]["Subtitle"], parsed["Language"]["BurnedSubtitle"]),
        "captions": parsed["Language"]["Caption"] or "",
        "standard": parsed["Standard"]["Schema"],
        "date": parsed["Date"]["Value"],
        "package": parsed["PackageType"]["Type"],
    }


def _expected(facts: PackageFacts, fields: IsdcfFields) -> dict:
    return {
        "frame rate": "" if facts.frame_rate == 24 else str(facts.frame_rate),
        "3D": ("3D", "3D") if facts.stereoscopic else ("", ""),
        "aspect": CONTAINERS[(facts.width, facts.height)][0],
        "resolution": CONTAINERS[(facts.width, facts.height)][1],
        "channels": facts.sound_field or "MOS",
        "accessibility": (facts.hearing_impaired, facts.visually_impaired),
        "subtitles": (facts.subtitles or facts.burned_in_subtitles or facts.closed_captions,
                      facts.burned_in_subtitles and not facts.subtitles),
        "captions": "CCAP" if facts.closed_captions else "",
        "standard": "SMPTE" if facts.standard == "SMPTE" else "Interop",
        "date": "20240517",
        "package": fields.package_type,
    }


def test_names_of_the_matrix_parse_and_pass_clairmeta_checks():
    cases = list(_matrix())
    assert len(cases) == 6 * 3 * 2 * len(SOUNDS) * len(TEXTS) * 2 * len(RELEASES) == 2880
    failures = []
    for case, facts, fields in cases:
        name = isdcf_name(facts, fields)
        parsed, errors, findings = _clairmeta(name, facts, fields.package_type)
        if errors or findings or _claims(parsed) != _expected(facts, fields):
            failures.append((case, name, errors, findings, _claims(parsed)))
    assert not failures, failures[:5]


@pytest.mark.parametrize("kind", sorted(CONTENT_TYPES))
def test_every_content_type_with_its_modifiers_parses(kind):
    assert len(CONTENT_TYPES) == 18
    facts = PackageFacts(1998, 1080, Fraction(24), DAY, sound_channels=6, active_area=(1440, 1080))
    fields = IsdcfFields(title="Kinds", content_type=kind, version=3, temp=True, pre_release=True,
                         red_band=kind == "TLR", theatre_chain="A", luminance=14, language="FR")
    name = isdcf_name(facts, fields)
    parsed, errors, findings = _clairmeta(name, facts, "OV")
    assert (errors, findings) == ([], []), name
    content = parsed["ContentType"]
    assert (content["Type"], content["Version"], content["Temporary"], content["PreRelease"]) == (kind, "3", "Temp", "Pre")
    assert (content["RedBand"], content["TheatreChain"], content["MasteringLuminance"]) == (
        "RedBand" if kind == "TLR" else False, "A", "14fl")
    assert parsed["ProjectorAspectRatio"]["ImageAspectRatio"] == ("" if kind in ("TLR", "TSR") else "133")


def test_immersive_sound_and_picture_extensions_pass_clairmeta_checks():
    facts = PackageFacts(4096, 1716, Fraction(24), DAY, sound_channels=16, sound_field="71", sign_language=True,
                         immersive="iab", motion_simulator=True, dolby_vision=True, eclair_color=True)
    name = isdcf_name(facts, IsdcfFields(title="Loud", language="EN", territory="UK", rating="15"))
    assert name == "Loud_FTR-1-DVis-EC_S_EN-XX_UK-15_71-SL-IAB-DBOX_4K_NULL_20240517_NULL_SMPTE_OV"
    parsed, errors, findings = _clairmeta(name, facts, "OV")
    assert (errors, findings) == ([], [])
    assert (parsed["AudioType"]["ImmersiveSound"], parsed["ContentType"]["DolbyVision"]) == ("IAB", "DVis")


def test_the_clairmeta_harness_sees_a_false_claim():
    """A name built for one package, checked against another, draws ClairMeta's complaints."""
    told = PackageFacts(1998, 1080, Fraction(48), DAY, stereoscopic=True, sound_channels=8, subtitles=True)
    name = isdcf_name(told, IsdcfFields(title="Liar", subtitle_language="FR"))
    real = PackageFacts(4096, 1716, Fraction(24), DAY, sound_channels=2, standard="IOP")
    _, errors, findings = _clairmeta(name, real, "VF")
    assert not errors
    for claim in ("Framerate", "3D", "AspectRatio", "Subtitle", "71", "claims 2K", "SMPTE", "OV"):
        assert any(claim in f for f in findings), (claim, findings)


GOLDEN = (
    (PackageFacts(1998, 1080, Fraction(24), DAY, sound_channels=6),
     IsdcfFields(title="My Film", language="en", territory="us", rating="r", studio="di", facility="cgp"),
     "MyFilm_FTR-1_F_EN-XX_US-R_51_2K_DI_20240517_CGP_SMPTE_OV"),
    (PackageFacts(2048, 858, Fraction(48), DAY, standard="IOP", stereoscopic=True, sound_channels=16,
                  sound_field="71", hearing_impaired=True, visually_impaired=True, subtitles=True),
     IsdcfFields(title="the lord of the rings", version=2, temp=True, luminance=6, language="EN",
                 subtitle_language="FR", subtitle_language2="NL", territory="BE", package_type="VF",
                 package_version=2),
     "TheLordOfTheRi_FTR-2-Temp-3D-6fl-48_S_EN-FR-NL_BE_71-HI-VI_2K_NULL_20240517_NULL_IOP-3D_VF-2"),
    (PackageFacts(3996, 2160, Fraction(25), DAY, burned_in_subtitles=True, active_area=(2880, 2160)),
     IsdcfFields(title="Amélie", content_type="TLR", red_band=True, two_d=True, language="FR",
                 subtitle_language="EN", territory="US"),
     "Amelie_TLR-1-RedBand-2D-25_F_FR-en_US_MOS_4K_NULL_20240517_NULL_SMPTE_OV"),
    (PackageFacts(2048, 1080, Fraction(24), DAY, sound_channels=2, closed_captions=True, active_area=(1920, 1080)),
     IsdcfFields(title="Spider-man: far", version=None, language="EN", package_type="VF"),
     "Spider-ManFar_FTR_C-178_EN-EN-CCAP_INT_20_2K_NULL_20240517_NULL_SMPTE_VF"),
)


@pytest.mark.parametrize("facts, fields, name", GOLDEN, ids=[g[2][:14] for g in GOLDEN])
def test_golden_names(facts, fields, name):
    assert len(GOLDEN) == 4
    assert isdcf_name(facts, fields) == name


@pytest.mark.parametrize("text, title", [
    ("My Film", "MyFilm"),
    ("the lord of the rings", "TheLordOfTheRi"),
    ("World's End", "WorldsEnd"),
    ("Amélie", "Amelie"),
    ("step-up-3d", "Step-Up-3d"),
    ("McQueen", "McQueen"),
    ("  2001: a space odyssey ", "2001ASpaceOdys"),
    ("-dash-", "Dash"),
    ("abcdefghijklm-nop", "Abcdefghijklm"),
])
def test_titles_are_made_valid(text, title):
    assert isdcf_title(text) == title


def test_the_title_comes_from_the_caller_when_the_user_gives_none():
    facts = PackageFacts(1998, 1080, Fraction(24), DAY)
    assert isdcf_name(facts, IsdcfFields(), default_title="bars").startswith("Bars_FTR-1_F_XX-XX_INT_MOS_2K_")
    with pytest.raises(ValueError, match="--isdcf title"):
        isdcf_name(facts, IsdcfFields())


def test_the_option_is_parsed():
    fields = parse_isdcf_option("type=tlr,version=2,language=EN,subtitles=FR,territory=US,rating=R,studio=DI,"
                                "facility=CGP,package=VF,temp,pre=no,redband,chain=c,luminance=6fl,"
                                "captions=en,title=The Film = Good ,")
    assert fields == IsdcfFields(title="The Film = Good", content_type="TLR", version=2, temp=True, red_band=True,
                                 theatre_chain="c", luminance=6, language="EN", subtitle_language="FR",
                                 caption_language="EN", territory="US", rating="R", studio="DI", facility="CGP",
                                 package_type="VF")
    assert parse_isdcf_option("") == IsdcfFields()
    assert parse_isdcf_option("version=none,subtitles=XX,package=VF-3,2d") == IsdcfFields(
        version=None, package_type="VF", package_version=3, two_d=True)
    assert parse_isdcf_option("subtitles=fr-nl").subtitle_language2 == "NL"


@pytest.mark.parametrize("text, key", [
    ("type=XYZ", "type"),
    ("language=E", "language"),
    ("language=ENGL", "language"),
    ("language=E1", "language"),
    ("rating=PG_13", "rating"),
    ("rating=PG-13", "rating"),
    ("subtitles=F1", "subtitles"),
    ("subtitles=FR-NL-DE", "subtitles"),
    ("captions=E", "captions"),
    ("territory=U5", "territory"),
    ("studio=D", "studio"),
    ("facility=TOOLONG", "facility"),
    ("package=XX", "package"),
    ("package=OV-2", "package"),
    ("package=VF-x", "package"),
    ("version=two", "version"),
    ("version=10", "version"),
    ("luminance=bright", "luminance"),
    ("temp=maybe", "temp"),
    ("redband", "redband"),
    ("chain=AMC", "chain"),
    ("title=!!!", "title"),
    ("colour=red", "colour"),
    ("language=EN,language=FR", "language"),
    ("language", "language"),
    ("studio=", "studio"),
])
def test_each_option_mistake_names_its_field(text, key):
    with pytest.raises(ValueError, match=f"--isdcf {key}\\b"):
        parse_isdcf_option(text)


@pytest.mark.parametrize("facts, attribute", [
    ({"width": 1920, "height": 1080}, "width x height"),
    ({"frame_rate": Fraction(24000, 1001)}, "frame_rate"),
    ({"frame_rate": "fast"}, "frame_rate"),
    ({"standard": "Interop"}, "standard"),
    ({"date": "2024-05-17"}, "date"),
    ({"active_area": (2000, 1080)}, "active_area"),
    ({"sound_channels": 16}, "sound_field"),
    ({"sound_channels": 6, "sound_field": "71"}, "sound_field"),
    ({"sound_channels": 6, "sound_field": "5.1"}, "sound_field"),
    ({"sound_channels": -1}, "sound_channels"),
    ({"hearing_impaired": True}, "hearing_impaired"),
    ({"sound_channels": 6, "immersive": "Spatial"}, "immersive"),
])
def test_each_fact_the_convention_cannot_name_raises(facts, attribute):
    given = {"width": 1998, "height": 1080, "frame_rate": Fraction(24), "date": DAY} | facts
    with pytest.raises(ValueError, match=f"package fact {attribute}:"):
        PackageFacts(**given)


@pytest.mark.parametrize("facts, fields, key", [
    ({"subtitles": True}, {}, "subtitles"),
    ({"burned_in_subtitles": True}, {}, "subtitles"),
    ({}, {"subtitle_language": "FR"}, "subtitles"),
    ({}, {"caption_language": "EN"}, "captions"),
    ({"closed_captions": True}, {"language": "XX"}, "captions"),
    ({"stereoscopic": True}, {"two_d": True}, "2d"),
    ({}, {"subtitle_language2": "NL"}, "subtitles"),
    ({}, {"content_type": "FTR", "red_band": True}, "redband"),
    ({}, {"version": 0}, "version"),
    ({}, {"package_version": 1}, "package"),
])
def test_fields_that_the_facts_deny_raise(facts, fields, key):
    with pytest.raises(ValueError, match=f"--isdcf {key}="):
        isdcf_name(PackageFacts(1998, 1080, Fraction(24), DAY, **facts), IsdcfFields(title="T", **fields))


def test_both_caption_kinds_are_refused_not_half_named():
    facts = PackageFacts(1998, 1080, Fraction(24), DAY, open_captions=True, closed_captions=True)
    with pytest.raises(ValueError, match="open_captions"):
        isdcf_name(facts, IsdcfFields(title="T", language="EN"))


def test_image_aspect_is_named_only_when_it_differs_and_never_on_trailers():
    facts = PackageFacts(1998, 1080, Fraction(24), DAY, active_area=(1998, 1080))
    fields = IsdcfFields(title="T")
    assert isdcf_name(facts, fields).split("_")[2] == "F"
    pillar = replace(facts, active_area=(1440, 1080))
    assert isdcf_name(pillar, fields).split("_")[2] == "F-133"
    assert isdcf_name(pillar, replace(fields, content_type="TLR")).split("_")[2] == "F"
    letterbox = PackageFacts(2048, 858, Fraction(24), DAY, active_area=(2048, 770))
    assert isdcf_name(letterbox, fields).split("_")[2] == "S-266"
