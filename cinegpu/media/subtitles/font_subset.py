"""A subtitle font cut down to the characters a document uses (``fontTools.subset``), so that
the font a DCP embeds stays small: ClairMeta's "Subtitle maximum font size" check refuses fonts
above 640 KiB (DejaVu Sans is 742 KiB whole, some tens of KiB for a film's characters).

    subset_font(data, text) -> FontSubset(data, missing)

``data`` the TrueType/OpenType bytes, ``text`` every character the document shows; the result
keeps those characters' glyphs (with the composites and layout features they use, the
.notdef glyph and the font's names and hinting), and names the characters the font has no
glyph for (``missing``: a renderer draws them as .notdef boxes, or with another font).  A font
fontTools cannot read raises MediaError.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from cinegpu.media.errors import MediaError

__all__ = ["FontSubset", "subset_font"]

#: characters kept whatever the text: the space and the no-break space (line layout asks for them)
ALWAYS = " \u00a0"


@dataclass(frozen=True)
class FontSubset:
    data: bytes                 #: the subset font (same format as the input)
    missing: tuple[str, ...]    #: characters of the text the font has no glyph for, sorted


def subset_font(data: bytes, text: str, *, name: str = "subtitle font") -> FontSubset:
    """The font ``data`` keeping the glyphs of ``text`` (see the module docstring)."""
    from fontTools import subset  # noqa: PLC0415 - a dependency of mastering only
    from fontTools.ttLib import TTFont, TTLibError  # noqa: PLC0415

    try:
        font = TTFont(io.BytesIO(data), lazy=False)
        cmap = font.getBestCmap() or {}
    except (TTLibError, ValueError, KeyError, AssertionError, IndexError, OSError) as exc:
        raise MediaError(None, f"{name}: fontTools cannot read it ({type(exc).__name__}: {exc})") from None
    wanted = {ord(c) for c in text + ALWAYS if not c.isspace() or c in ALWAYS}
    missing = tuple(sorted(chr(u) for u in wanted if u not in cmap and chr(u) not in ALWAYS))
    options = subset.Options()
    options.layout_features = ["*"]      # kerning, ligatures, marks: as the whole font lays out
    options.name_IDs = ["*"]             # family and licence names stay
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.hinting = True
    options.glyph_names = False
    options.drop_tables = [*options.drop_tables, "FFTM"]   # FontForge's timestamps
    options.recalc_timestamp = False
    sub = subset.Subsetter(options)
    sub.populate(unicodes=sorted(u for u in wanted if u in cmap))
    try:
        sub.subset(font)
        out = io.BytesIO()
        font.save(out)
    except Exception as exc:  # noqa: BLE001 - a malformed table shows here: named, not raised raw
        raise MediaError(None, f"{name}: cannot be subset ({type(exc).__name__}: {exc})") from None
    return FontSubset(out.getvalue(), missing)
