"""What a DCP's composition playlist says about its content beyond the reels (ST 429-7):
the content version, the ratings and the reel markers, as the user gives them and as a CPL
holds them.

    ContentVersion  ST 429-7 6.8: an ``Id`` (a URI; a bare UUID is written ``urn:uuid:...``)
                    and a ``LabelText``
    RatingList      ST 429-7 6.9: ``Rating`` elements, each an ``Agency`` (a URI, such as
                    ``http://www.mpaa.org/2003-ratings``) and a ``Label`` (``PG-13``)
    MainMarkers     ST 429-7 8.3 (MarkerAssetType): per reel, a ``MarkerList`` of ``Marker``
                    elements, each a ``Label`` of the standard set (:data:`MARKER_LABELS`) and
                    an ``Offset`` in edit units from the start of its reel

Markers are held by their composition frame (0: the first frame) and placed in the reel that
holds that frame when the CPL is written. Without a user's FFOC and LFOC, the first-frame and
last-frame-of-composition markers are added where DCP-o-matic puts them: FFOC at frame 1, LFOC
at the last frame.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["MARKER_LABELS", "ContentVersion", "CplMetadata", "Marker", "Rating",
           "parse_content_version", "parse_marker", "parse_rating", "reel_markers", "timecode",
           "timecode_text"]

#: The standard marker labels (ST 429-7 Annex, the CPL's ``#standard-markers`` scope): first
#: and last frame of composition, title credits, intermission, end credits, moving credits,
#: ratings band.
MARKER_LABELS = ("FFOC", "LFOC", "FFTC", "LFTC", "FFOI", "LFOI", "FFEC", "LFEC", "FFMC", "LFMC",
                 "FFOB", "LFOB")
_TIMECODE = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})[:;](\d{2,3})$")
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class ContentVersion:
    """ST 429-7 ContentVersion: ``id`` a URI, ``label`` its LabelText."""

    id: str
    label: str


@dataclass(frozen=True)
class Rating:
    """ST 429-7 Rating: the rating ``agency`` (a URI) and its ``label``."""

    agency: str
    label: str


@dataclass(frozen=True)
class Marker:
    """A reel marker: ``label`` one of :data:`MARKER_LABELS`, ``frame`` the composition frame
    it marks (0: the first)."""

    label: str
    frame: int


@dataclass(frozen=True)
class CplMetadata:
    """The user's content version (None: a new ``urn:uuid`` id labelled with the title and
    date), ratings (an empty RatingList when none) and markers (FFOC and LFOC added by
    :meth:`markers_for` unless given)."""

    content_version: ContentVersion | None = None
    ratings: tuple[Rating, ...] = ()
    markers: tuple[Marker, ...] = ()

    def __post_init__(self):
        labels = [m.label for m in self.markers]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise ValueError(f"marker {twice[0]} is given twice")

    def markers_for(self, length: int) -> tuple[Marker, ...]:
        """The markers of a composition of ``length`` frames, in frame order: the user's (a
        frame past the end: ValueError), with FFOC at frame 1 and LFOC at the last frame
        unless the user placed them (frame 0 for a one-frame composition)."""
        out = list(self.markers)
        for m in out:
            if not 0 <= m.frame < length:
                raise ValueError(f"marker {m.label} at frame {m.frame} is past the composition's "
                                 f"last frame ({length - 1})")
        given = {m.label for m in out}
        if "FFOC" not in given:
            out.append(Marker("FFOC", min(1, length - 1)))
        if "LFOC" not in given:
            out.append(Marker("LFOC", length - 1))
        return tuple(sorted(out, key=lambda m: (m.frame, MARKER_LABELS.index(m.label))))


def reel_markers(markers, reels) -> list[list[tuple[str, int]]]:
    """Each reel's (label, offset in edit units from the reel's start) for ``markers`` (each
    in the reel that holds its frame); ``reels``: each reel's length in frames."""
    out: list[list[tuple[str, int]]] = [[] for _ in reels]
    starts = [sum(reels[:k]) for k in range(len(reels))]
    for m in markers:
        k = max(i for i, s in enumerate(starts) if s <= m.frame)
        out[k].append((m.label, m.frame - starts[k]))
    return out


def _xml_text(what: str, text: str) -> str:
    """``text`` for a CPL element: not empty, one line of characters XML 1.0 allows (clause
    2.2); ValueError naming ``what``."""
    bad = [ch for ch in text if ch < " " or "\ud800" <= ch <= "\udfff" or ch in "\ufffe\uffff"]
    if not text or bad:
        raise ValueError(f"{what}: {'empty' if not text else f'character {bad[0]!r} is not allowed'}")
    return text


def parse_content_version(text: str) -> ContentVersion:
    """``ID,LABEL`` (``--content-version``): the id a URI, or a UUID (written
    ``urn:uuid:...``); the label its text. ValueError naming what is wrong."""
    ident, sep, label = text.partition(",")
    ident, label = ident.strip(), label.strip()
    if not sep or not ident or not label:
        raise ValueError(f"--content-version wants ID,LABEL (an id such as urn:uuid:... or a UUID, "
                         f"then its label), got {text!r}")
    try:
        ident = f"urn:uuid:{uuid.UUID(ident)}"
    except ValueError:
        if not _URI_SCHEME.match(ident) or any(c.isspace() for c in ident):
            raise ValueError(f"--content-version: the id {ident!r} is neither a UUID nor a URI "
                             f"(such as urn:uuid:... or http://...)") from None
    return ContentVersion(_xml_text("--content-version's id", ident), _xml_text("--content-version's label", label))


def parse_rating(text: str) -> Rating:
    """``AGENCY:LABEL`` (``--rating``), split at the last colon so that the agency may be a URI
    (``http://www.mpaa.org/2003-ratings:PG-13``). ValueError naming what is wrong."""
    agency, sep, label = text.rpartition(":")
    agency, label = agency.strip(), label.strip()
    if not sep or not agency or not label:
        raise ValueError(f"--rating wants AGENCY:LABEL (such as "
                         f"http://www.mpaa.org/2003-ratings:PG-13), got {text!r}")
    if any(c.isspace() for c in agency):
        raise ValueError(f"--rating: the agency {agency!r} is a URI and has no spaces")
    return Rating(_xml_text("--rating's agency", agency), _xml_text("--rating's label", label))


def _per_second(edit_rate) -> int:
    """Frames per timecode second at ``edit_rate``: the rate rounded up (24 for 23.976)."""
    rate = Fraction(edit_rate)
    return -(-rate.numerator // rate.denominator)


def timecode(text: str, edit_rate) -> int:
    """The frame (0: the first) of ``HH:MM:SS:FF`` at ``edit_rate`` (:func:`_per_second`
    frames a timecode second), or of a plain frame count. ValueError."""
    rate = Fraction(edit_rate)
    per_second = _per_second(rate)
    if text.isdigit():
        return int(text)
    m = _TIMECODE.match(text)
    if m is None:
        raise ValueError(f"want a timecode HH:MM:SS:FF or a frame number, got {text!r}")
    h, mi, s, f = map(int, m.groups())
    if mi > 59 or s > 59 or f >= per_second:
        raise ValueError(f"timecode {text}: minutes and seconds run to 59, frames to "
                         f"{per_second - 1} at {rate} fps")
    return ((h * 60 + mi) * 60 + s) * per_second + f


def timecode_text(frame: int, edit_rate) -> str:
    """``frame`` (0: the first) as ``HH:MM:SS:FF`` at ``edit_rate`` (the inverse of
    :func:`timecode`)."""
    seconds, f = divmod(frame, _per_second(edit_rate))
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}:{f:02d}"


def parse_marker(text: str, edit_rate) -> Marker:
    """``LABEL=HH:MM:SS:FF`` or ``LABEL=FRAME`` (``--marker``): a standard label
    (:data:`MARKER_LABELS`) at a composition timecode at ``edit_rate``. ValueError."""
    label, sep, when = text.partition("=")
    label = label.strip().upper()
    if not sep:
        raise ValueError(f"--marker wants LABEL=HH:MM:SS:FF (such as FFEC=01:23:45:12), got {text!r}")
    if label not in MARKER_LABELS:
        raise ValueError(f"--marker: {label!r} is not a standard marker ({', '.join(MARKER_LABELS)})")
    try:
        return Marker(label, timecode(when.strip(), edit_rate))
    except ValueError as exc:
        raise ValueError(f"--marker {label}: {exc}") from None
