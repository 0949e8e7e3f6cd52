"""A DCP's title (ContentTitleText) built by the ISDCF Digital Cinema Naming Convention, version 9.

The convention (ISDCF Document 1, "Digital Cinema Naming Convention", https://isdcf.com/dcnc,
and the ISDCF registry pages it points to) names a composition with twelve fields joined by
``_``, each field's parts joined by ``-``::

    FilmTitle_ContentType-Modifiers_ProjectorAspect-ImageAspect_Language-Subtitles-Captions_
    Territory-Rating_AudioType-Immersive_Resolution_Studio_Date_Facility_Standard_PackageType

Two things fill it. :class:`PackageFacts` is what the package itself says (picture container and
active area, frame rate, 3D, sound, subtitles and captions, standard, date); :class:`IsdcfFields`
is what only the user knows (title, content type and version, languages, territory and rating,
studio and facility codes, OV or VF), given on the command line as ``--isdcf key=value,...``
(:func:`parse_isdcf_option`). :func:`isdcf_name` joins them. Nothing is silently made up: a value
that the convention cannot carry, or a claim the facts contradict (subtitles named for a package
without any), raises ValueError naming the field. What the convention itself prescribes is done
without asking: a missing studio or facility code is written ``NULL`` ("if you have a
nonrelevant field, fill it with the letters NULL"), a title is shortened to its 14 characters.

Where the convention's prose and ClairMeta's parser of it (``clairmeta.utils.isdcf``, DCNC 9.6)
differ, the name follows the parser, so that the checks exhibitors run accept it: the audio field
puts the channel code first (``51-HI-VI-IAB``, where the registry's newest page writes
``IAB-HI-VI-51``), a version number is one digit, a theatre chain code one letter.
"""

from __future__ import annotations

import datetime
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

__all__ = ["KIND_TYPES", "IsdcfFields", "PackageFacts", "isdcf_name", "isdcf_title", "parse_isdcf_option"]

#: Content types, Appendix 3 ("Content Type and Version Number") and the registry's list
CONTENT_TYPES = frozenset({
    "FTR", "EPS", "TLR", "TSR", "PRO", "TST", "RTG-F", "RTG-T", "RTG", "SHR", "ADV", "XSN", "PSA",
    "POL", "CLP", "STR", "HLT", "EVT",
})
#: A CPL's ContentKind (ST 429-7 Table 3, and ST 2067-3's episode and promo) -> its content
#: type code in the name (DCNC Appendix 3), as DCP-o-matic pairs them.
KIND_TYPES = MappingProxyType({"feature": "FTR", "trailer": "TLR", "teaser": "TSR", "test": "TST", "rating": "RTG",
              "advertisement": "ADV", "short": "SHR", "transitional": "XSN", "psa": "PSA",
              "policy": "POL", "episode": "EPS", "promo": "PRO"})


#: Content types that are trailers: no image aspect ratio qualifier on them (Appendix 7, "Never use
#: this labeling device with Trailers!")
TRAILERS = frozenset({"TLR", "TSR"})

#: DCI containers (width, height in pixels) -> (projector aspect code, resolution, the container's
#: own aspect ratio x 100), Appendix 7 ("Projector Aspect Ratio"): Flat 1.85, Scope 2.39, Full 1.90
CONTAINERS = MappingProxyType({
    (1998, 1080): ("F", "2K", 185),
    (3996, 2160): ("F", "4K", 185),
    (2048, 858): ("S", "2K", 239),
    (4096, 1716): ("S", "4K", 239),
    (2048, 1080): ("C", "2K", 190),
    (4096, 2160): ("C", "4K", 190),
})

#: Audio type channel codes, Appendix 4 ("Audio Configuration") -> the channels they need at least
SOUND_FIELDS = MappingProxyType({"10": 1, "20": 2, "51": 6, "71": 8})

#: Immersive sound codes of the audio type field, Appendix 4
IMMERSIVE = frozenset({"ATMOS", "AURO", "DTS-X", "IAB"})

#: The convention's standards (Appendix 8, "Standard and Package Type")
STANDARDS = frozenset({"SMPTE", "IOP"})

#: What stands in a field the user left empty ("fill it with the letters NULL")
NULL = "NULL"

#: The film title's length, characters
TITLE_LENGTH = 14

_LANGUAGE = re.compile(r"[A-Z]{2,3}")
_TERRITORY = re.compile(r"[A-Z]{2,3}")
_RATING = re.compile(r"[A-Z0-9+]{1,3}")
_CODE = re.compile(r"[A-Z0-9]{2,4}")
_CHAIN = re.compile(r"[A-Za-z]")
_CONTENT_TYPE = re.compile(r"[A-Z]+(-[A-Z])?")
_PACKAGE_TYPE = re.compile(r"OV|VF")  # Appendix 8: original version, version file
_NO_SUBTITLES = "XX"

#: The ``--isdcf`` key of each :class:`IsdcfFields` attribute, for messages
_KEY_OF = MappingProxyType({
    "title": "title", "content_type": "type", "version": "version", "temp": "temp",
    "pre_release": "pre", "red_band": "redband", "theatre_chain": "chain", "two_d": "2d",
    "luminance": "luminance", "language": "language", "subtitle_language": "subtitles",
    "subtitle_language2": "subtitles", "caption_language": "captions", "territory": "territory",
    "rating": "rating", "studio": "studio", "facility": "facility", "package_type": "package",
    "package_version": "package",
})


def _field_error(attribute: str, why: str) -> ValueError:
    """A ValueError naming the IsdcfFields attribute and its ``--isdcf`` key."""
    return ValueError(f"ISDCF field {attribute} (--isdcf {_KEY_OF[attribute]}=): {why}")


def _fact_error(attribute: str, why: str) -> ValueError:
    return ValueError(f"package fact {attribute}: {why}")


def isdcf_title(text: str) -> str:
    """The film title field made valid: letters, digits and ``-`` only, CamelCase, 14 characters.

    Accents are taken off (``Amélie`` -> ``Amelie``), apostrophes dropped (``World's`` ->
    ``Worlds``), every other character separates words, and each word (and each part after a
    hyphen) starts with a capital, the rest kept as given: ``the lord of the rings`` ->
    ``TheLordOfTheRi``. ValueError when nothing is left."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    plain = plain.replace("'", "")
    words = [w for w in re.split(r"[^A-Za-z0-9-]+", plain) if w]
    camel = "".join("-".join(p[:1].upper() + p[1:] for p in w.split("-")) for w in words)
    title = camel.strip("-")[:TITLE_LENGTH].rstrip("-")
    if not title:
        raise _field_error("title", f"{text!r} has no letter or digit the convention can carry")
    return title


def _code(attribute: str, value: str | None, pattern: re.Pattern[str], what: str) -> str | None:
    """``value`` upper-cased when it matches ``pattern``; ValueError naming the field otherwise."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _field_error(attribute, f"{value!r} is not text")
    code = value.strip().upper()
    if not pattern.fullmatch(code):
        raise _field_error(attribute, f"{value!r} is not {what}")
    return code


def _small_int(attribute: str, value: int | None, low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _field_error(attribute, f"{value!r} is not a whole number from {low} to {high}")


@dataclass(frozen=True)
class IsdcfFields:
    """What the user says of the composition: the fields of the name only they know.

    Codes are upper-cased on construction; a value the convention cannot carry raises ValueError
    naming the field. ``title``: the film title as the user wrote it (None: the caller's default;
    made valid by :func:`isdcf_title`). ``content_type``: Appendix 3's code (FTR, TLR, TSR, ...).
    ``version``: the composition's version number, 1-9 (None: none written). Content type
    modifiers, in the convention's order: ``temp`` (picture or sound unfinished), ``pre_release``
    (final but not all accessibility features present), ``red_band`` (US restricted trailer, TLR
    only), ``theatre_chain`` (one letter), ``two_d`` (the 2D version of a film also released in
    3D, Appendix 3a), ``luminance`` (mastering luminance, foot-lamberts). ``language``: the audio
    language code (Appendix 1; XX: none). ``subtitle_language`` and ``subtitle_language2``: the
    subtitles' languages (XX or None: none); ``caption_language``: the captions' language, written
    where subtitles would be when there are none (Appendix 9; None: the audio language).
    ``territory`` and ``rating``: the release territory (Appendix 2ab; INT: international) and its
    local rating code (Appendix 2c: ``US-13`` for PG-13). ``studio``, ``facility``: Appendix 5 and
    6 codes, 2-4 characters (None: NULL). ``package_type``: OV or VF; ``package_version``: a VF's
    number, 1-9.
    """

    title: str | None = None
    content_type: str = "FTR"
    version: int | None = 1
    temp: bool = False
    pre_release: bool = False
    red_band: bool = False
    theatre_chain: str | None = None
    two_d: bool = False
    luminance: int | None = None
    language: str = "XX"
    subtitle_language: str | None = None
    subtitle_language2: str | None = None
    caption_language: str | None = None
    territory: str = "INT"
    rating: str | None = None
    studio: str | None = None
    facility: str | None = None
    package_type: str = "OV"
    package_version: int | None = None

    def __post_init__(self) -> None:
        self._check_content_type()
        self._check_languages()
        self._check_codes()

    def _set(self, attribute: str, value: object) -> None:
        object.__setattr__(self, attribute, value)

    def _check_content_type(self) -> None:
        if self.title is not None:
            if not isinstance(self.title, str):
                raise _field_error("title", f"{self.title!r} is not text")
            isdcf_title(self.title)
        kind = _code("content_type", self.content_type, _CONTENT_TYPE, "a content type")
        if kind not in CONTENT_TYPES:
            raise _field_error("content_type", f"unknown content type {self.content_type!r}; one of "
                               + ", ".join(sorted(CONTENT_TYPES)) + " (DCNC Appendix 3)")
        self._set("content_type", kind)
        _small_int("version", self.version, 1, 9)
        _small_int("luminance", self.luminance, 1, 999)
        if self.red_band and kind != "TLR":
            raise _field_error("red_band", f"RedBand marks trailers (type=TLR) only, not {kind}")
        _code("theatre_chain", self.theatre_chain, _CHAIN, "a theatre chain code (one letter)")

    def _check_languages(self) -> None:
        self._set("language", _code("language", self.language, _LANGUAGE, "a language code (2-3 letters)"))
        for attribute in ("subtitle_language", "subtitle_language2", "caption_language"):
            code = _code(attribute, getattr(self, attribute), _LANGUAGE, "a language code (2-3 letters)")
            self._set(attribute, None if code == _NO_SUBTITLES else code)
        if self.subtitle_language2 is not None and self.subtitle_language is None:
            raise _field_error("subtitle_language2", "a second subtitle language without a first one")

    def _check_codes(self) -> None:
        self._set("territory", _code("territory", self.territory, _TERRITORY, "a territory code (2-3 letters)"))
        hint = " (the convention writes PG-13 as 13, 1-3 of A-Z, 0-9, +)"
        self._set("rating", _code("rating", self.rating, _RATING, "a rating code" + hint))
        self._set("studio", _code("studio", self.studio, _CODE, "a studio code (2-4 of A-Z, 0-9)"))
        self._set("facility", _code("facility", self.facility, _CODE, "a facility code (2-4 of A-Z, 0-9)"))
        package = _code("package_type", self.package_type, _PACKAGE_TYPE, "a package type (OV or VF)")
        self._set("package_type", package)
        _small_int("package_version", self.package_version, 1, 9)
        if package == "OV" and self.package_version is not None:
            raise _field_error("package_version", "an OV carries no version number; only a VF does")


@dataclass(frozen=True)
class PackageFacts:
    """What the package itself says, for the name.

    ``width``, ``height``: the picture container, pixels, one of the DCI containers
    (:data:`CONTAINERS`); ``frame_rate``: frames per second per eye, a whole number; ``date``: the
    composition's date; ``standard``: ``SMPTE`` or ``IOP``; ``stereoscopic``: a 3D picture;
    ``active_area``: the image's (width, height) inside the container, pixels (ST 429-16
    MainPictureActiveArea; None: the whole container). Sound: ``sound_channels`` in the main
    sound track (0: no sound, MOS), ``sound_field`` its code (10, 20, 51, 71; None: from 1, 2, 6
    or 8 channels), ``hearing_impaired``, ``visually_impaired``, ``sign_language``: those tracks
    present; ``immersive``: ATMOS, AURO, DTS-X or IAB when an immersive track is; and
    ``motion_simulator``: D-BOX data. Text: ``subtitles`` (rendered by the projector),
    ``burned_in_subtitles`` (in the picture), ``open_captions``, ``closed_captions``. Picture
    extensions: ``dolby_vision``, ``eclair_color``. A fact the convention cannot name raises
    ValueError naming it.
    """

    width: int
    height: int
    frame_rate: Fraction
    date: datetime.date
    standard: str = "SMPTE"
    stereoscopic: bool = False
    active_area: tuple[int, int] | None = None
    sound_channels: int = 0
    sound_field: str | None = None
    hearing_impaired: bool = False
    visually_impaired: bool = False
    sign_language: bool = False
    immersive: str | None = None
    motion_simulator: bool = False
    subtitles: bool = False
    burned_in_subtitles: bool = False
    open_captions: bool = False
    closed_captions: bool = False
    dolby_vision: bool = False
    eclair_color: bool = False

    def __post_init__(self) -> None:
        self._check_picture()
        self._check_sound()

    def _check_picture(self) -> None:
        if (self.width, self.height) not in CONTAINERS:
            raise _fact_error("width x height", f"{self.width}x{self.height} is not a DCI container: "
                              + ", ".join(f"{w}x{h}" for w, h in CONTAINERS) + " (DCNC Appendix 7)")
        try:
            rate = Fraction(self.frame_rate)
        except (TypeError, ValueError):
            raise _fact_error("frame_rate", f"{self.frame_rate!r} is not a number") from None
        if rate <= 0 or rate.denominator != 1:
            raise _fact_error("frame_rate", f"{rate} frames per second is not a whole positive number")
        object.__setattr__(self, "frame_rate", rate)
        if not isinstance(self.date, datetime.date):
            raise _fact_error("date", f"{self.date!r} is not a date")
        if self.standard not in STANDARDS:
            raise _fact_error("standard", f"{self.standard!r} is not SMPTE or IOP")
        if self.active_area is not None:
            w, h = self.active_area
            if not (0 < w <= self.width and 0 < h <= self.height):
                raise _fact_error("active_area", f"{w}x{h} does not fit the {self.width}x{self.height} container")
            if round(100 * w / h) > 999:
                raise _fact_error("active_area", f"{w}x{h} is wider than the convention's 3 digits carry")

    def _check_sound(self) -> None:
        channels = self.sound_channels
        if isinstance(channels, bool) or not isinstance(channels, int) or channels < 0:
            raise _fact_error("sound_channels", f"{channels!r} is not a channel count")
        if channels == 0:
            extras = [n for n in ("sound_field", "hearing_impaired", "visually_impaired", "sign_language",
                                  "immersive") if getattr(self, n)]
            if extras:
                raise _fact_error(extras[0], "named for a package without sound (MOS)")
            return
        field = self.sound_field
        if field is None:
            field = {n: code for code, n in SOUND_FIELDS.items()}.get(channels)
            if field is None:
                raise _fact_error("sound_field", f"{channels} channels: say which of "
                                  + ", ".join(SOUND_FIELDS) + " they carry")
            object.__setattr__(self, "sound_field", field)
        elif field not in SOUND_FIELDS:
            raise _fact_error("sound_field", f"{field!r} is not one of " + ", ".join(SOUND_FIELDS))
        elif channels < SOUND_FIELDS[field]:
            raise _fact_error("sound_field", f"{field} needs {SOUND_FIELDS[field]} channels, the sound has {channels}")
        if self.immersive is not None:
            code = str(self.immersive).upper()
            if code not in IMMERSIVE:
                raise _fact_error("immersive", f"{self.immersive!r} is not one of " + ", ".join(sorted(IMMERSIVE)))
            object.__setattr__(self, "immersive", code)

    @property
    def projector_aspect(self) -> str:
        """``F`` (flat, 1.85), ``S`` (scope, 2.39) or ``C`` (full container, 1.90), Appendix 7."""
        return CONTAINERS[(self.width, self.height)][0]

    @property
    def resolution(self) -> str:
        """``2K`` or ``4K``."""
        return CONTAINERS[(self.width, self.height)][1]


def _content_type(facts: PackageFacts, fields: IsdcfFields) -> str:
    """ContentType-Version-Temp-Pre-RedBand-Chain-2D/3D-Luminance-FrameRate-DVis-EC (Appendix 3,
    the registry's "Content Type Modifiers", in its order)."""
    if fields.two_d and facts.stereoscopic:
        raise _field_error("two_d", "the picture is 3D; 2D marks the 2D version of a 3D film")
    parts = [fields.content_type]
    parts += [str(fields.version)] if fields.version is not None else []
    parts += ["Temp"] if fields.temp else []
    parts += ["Pre"] if fields.pre_release else []
    parts += ["RedBand"] if fields.red_band else []
    parts += [fields.theatre_chain] if fields.theatre_chain else []
    parts += ["3D"] if facts.stereoscopic else ["2D"] if fields.two_d else []
    parts += [f"{fields.luminance}fl"] if fields.luminance is not None else []
    parts += [str(facts.frame_rate.numerator)] if facts.frame_rate != 24 else []
    parts += ["DVis"] if facts.dolby_vision else []
    parts += ["EC"] if facts.eclair_color else []
    return "-".join(parts)


def _aspect(facts: PackageFacts, fields: IsdcfFields) -> str:
    """Projector aspect, and the image's aspect x 100 when it differs from the container's and the
    content is not a trailer (Appendix 7: ``F-133``, a 1.33 image pillar-boxed in a flat one)."""
    letter, _, own = CONTAINERS[(facts.width, facts.height)]
    if facts.active_area is None or fields.content_type in TRAILERS:
        return letter
    w, h = facts.active_area
    image = round(100 * w / h)
    return letter if image == own else f"{letter}-{image}"


def _text_language(facts: PackageFacts, fields: IsdcfFields) -> list[str]:
    """What stands after the audio language: subtitle languages (lower case when burned in,
    Appendix 1), else the caption language (Appendix 9), else XX."""
    subtitles = [s for s in (fields.subtitle_language, fields.subtitle_language2) if s is not None]
    captions = facts.open_captions or facts.closed_captions
    if fields.caption_language is not None and not captions:
        raise _field_error("caption_language", "the package has no captions")
    if facts.subtitles or facts.burned_in_subtitles:
        if not subtitles:
            raise _field_error("subtitle_language", "the package has subtitles: say their language")
        return subtitles if facts.subtitles else [s.lower() for s in subtitles]
    if subtitles:
        raise _field_error("subtitle_language", "the package has no subtitles")
    if captions:
        language = fields.caption_language or fields.language
        if language == _NO_SUBTITLES:
            raise _field_error("caption_language", "the package has captions: say their language")
        return [language]
    return [_NO_SUBTITLES]


def _language(facts: PackageFacts, fields: IsdcfFields) -> str:
    """Audio-Subtitles(-Subtitles2)(-CCAP|-OCAP), Appendix 1 and Appendix 9."""
    if facts.open_captions and facts.closed_captions:
        raise _fact_error("open_captions", "the convention names one caption kind, OCAP or CCAP, not both")
    parts = [fields.language, *_text_language(facts, fields)]
    parts += ["CCAP"] if facts.closed_captions else ["OCAP"] if facts.open_captions else []
    return "-".join(parts)


def _audio(facts: PackageFacts) -> str:
    """Channels-HI-VI-SL-Immersive-DBOX, or MOS for no sound (Appendix 4)."""
    parts = [facts.sound_field if facts.sound_channels else "MOS"]
    parts += ["HI"] if facts.hearing_impaired else []
    parts += ["VI"] if facts.visually_impaired else []
    parts += ["SL"] if facts.sign_language else []
    parts += [facts.immersive] if facts.immersive else []
    parts += ["DBOX"] if facts.motion_simulator else []
    return "-".join(parts)


def isdcf_name(facts: PackageFacts, fields: IsdcfFields, *, default_title: str | None = None) -> str:
    """The ContentTitleText of the package by the ISDCF Digital Cinema Naming Convention, v9.

    ``default_title`` stands in for ``fields.title`` when that is None. ValueError, naming the
    field, when the fields claim what the facts deny (subtitles in a package without any, 2D for
    a 3D picture) or leave out what the facts need (the language of the package's subtitles).
    """
    title = fields.title if fields.title is not None else default_title
    if title is None:
        raise _field_error("title", "no title given")
    d = facts.date
    territory = fields.territory + (f"-{fields.rating}" if fields.rating else "")
    standard = facts.standard + ("-3D" if facts.stereoscopic else "")
    package = fields.package_type + (f"-{fields.package_version}" if fields.package_version else "")
    return "_".join((
        isdcf_title(title),
        _content_type(facts, fields),
        _aspect(facts, fields),
        _language(facts, fields),
        territory,
        _audio(facts),
        facts.resolution,
        fields.studio or NULL,
        f"{d.year:04d}{d.month:02d}{d.day:02d}",
        fields.facility or NULL,
        standard,
        package,
    ))


_FLAGS = MappingProxyType({"temp": "temp", "pre": "pre_release", "redband": "red_band", "2d": "two_d"})
_TEXTS = MappingProxyType({
    "title": "title", "type": "content_type", "chain": "theatre_chain", "language": "language",
    "captions": "caption_language", "territory": "territory", "rating": "rating", "studio": "studio",
    "facility": "facility",
})
_OPTION_KEYS = ("title", "type", "version", "temp", "pre", "redband", "chain", "2d", "luminance", "language",
                "subtitles", "captions", "territory", "rating", "studio", "facility", "package")


def _option_error(key: str, why: str) -> ValueError:
    return ValueError(f"--isdcf {key}: {why}")


def _option_number(key: str, value: str, suffix: str = "") -> int | None:
    if key == "version" and value.lower() == "none":
        return None
    digits = value[: -len(suffix)] if suffix and value.lower().endswith(suffix) else value
    if not digits.isdigit():
        raise _option_error(key, f"{value!r} is not a whole number")
    return int(digits)


def _option_item(key: str, value: str | None) -> dict[str, object]:
    """One ``key=value`` (or bare flag) of the option, as IsdcfFields keyword arguments."""
    if key in _FLAGS:
        if value is None or value.lower() in ("yes", "true", "1"):
            return {_FLAGS[key]: True}
        if value.lower() in ("no", "false", "0"):
            return {_FLAGS[key]: False}
        raise _option_error(key, f"a flag: write {key}, or {key}=yes or {key}=no, not {key}={value}")
    if value is None or not value:
        raise _option_error(key, f"needs a value: {key}=...")
    if key in _TEXTS:
        return {_TEXTS[key]: value}
    if key == "version":
        return {"version": _option_number(key, value)}
    if key == "luminance":
        return {"luminance": _option_number(key, value, "fl")}
    if key == "subtitles":
        languages = value.split("-")
        if len(languages) > 2:
            raise _option_error(key, f"{value!r}: at most two subtitle languages, as FR or FR-NL")
        return {"subtitle_language": languages[0], "subtitle_language2": languages[1] if languages[1:] else None}
    kind, _, number = value.partition("-")
    return {"package_type": kind, "package_version": _option_number(key, number) if number else None}


def parse_isdcf_option(text: str) -> IsdcfFields:
    """The ``--isdcf`` option: comma-separated ``key=value`` items and bare flags.

    Keys: ``title`` (no commas), ``type`` (FTR, TLR, ...), ``version`` (1-9 or none), flags
    ``temp``, ``pre``, ``redband``, ``2d`` (bare, or ``=yes``/``=no``), ``chain`` (one letter),
    ``luminance`` (foot-lamberts, ``6`` or ``6fl``), ``language`` (audio), ``subtitles`` (``FR``
    or two as ``FR-NL``; ``XX``: none), ``captions``, ``territory``, ``rating``, ``studio``,
    ``facility``, ``package`` (``OV``, ``VF`` or ``VF-2``). Example:
    ``type=FTR,version=2,language=EN,subtitles=FR,territory=US,rating=R,studio=DI,facility=CGP,package=VF,temp``.
    ValueError naming the key: an unknown or repeated key, a flag with a value, a value that the
    convention cannot carry.
    """
    arguments: dict[str, object] = {}
    seen: set[str] = set()
    for item in text.split(","):
        if not item.strip():
            continue
        key, equals, value = item.partition("=")
        key = key.strip().lower()
        if key not in _OPTION_KEYS:
            raise _option_error(key, "unknown field; the fields are " + ", ".join(_OPTION_KEYS))
        if key in seen:
            raise _option_error(key, "given twice")
        seen.add(key)
        arguments.update(_option_item(key, value.strip() if equals else None))
    return IsdcfFields(**arguments)
