"""The subtitle font cut to the characters shown (cinegpu.media.subtitles.font_subset), checked with
fontTools' own reader: the characters' glyphs stay (outlines equal to the whole font's), the
others go, names stay, missing characters are named, and a file that is not a font is refused
by name.  prepare_subtitles embeds the subset and warns about missing glyphs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from cinegpu.media.errors import MediaError
from cinegpu.media.subtitles.font_subset import subset_font

from test_subtitles import FONT, needs_font

fontTools = pytest.importorskip("fontTools")


def _font(data: bytes):
    from fontTools.ttLib import TTFont
    return TTFont(io.BytesIO(data))


@needs_font
def test_subset_keeps_the_characters_shown_and_their_outlines():
    whole = Path(FONT).read_bytes()
    cut = subset_font(whole, "Bonjour, été — ✓ 日")
    assert cut.missing == ("日",)
    sub, full = _font(cut.data), _font(whole)
    cmap, full_cmap = sub.getBestCmap(), full.getBestCmap()
    assert set(cmap) == {ord(c) for c in "Bonjur,ét—✓ \u00a0"}
    assert len(cut.data) < len(whole) // 10 and cut.data[:4] == whole[:4]
    for ch in "Bé✓":   # the glyph's outline is the whole font's
        g_sub, g_full = sub["glyf"][cmap[ord(ch)]], full["glyf"][full_cmap[ord(ch)]]
        assert g_sub.getCoordinates(sub["glyf"])[0] == g_full.getCoordinates(full["glyf"])[0]
    assert sub["name"].getDebugName(1) == full["name"].getDebugName(1)


@needs_font
def test_empty_text_keeps_a_usable_font():
    cut = subset_font(Path(FONT).read_bytes(), "")
    assert cut.missing == () and ord(" ") in _font(cut.data).getBestCmap()


@pytest.mark.parametrize("data", [b"", b"\x00\x01\x00\x00" + b"\x00" * 40, b"OTTO garbage" * 10])
def test_not_a_font_is_refused_by_name(data):
    with pytest.raises(MediaError, match="my.ttf"):
        subset_font(data, "abc", name="my.ttf")


@needs_font
def test_prepare_subtitles_embeds_the_subset_and_names_missing_glyphs(tmp_path):
    from cinegpu.media.subtitles.write import prepare_subtitles

    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:00:00,100 --> 00:00:00,900\nHello 世界\n", encoding="utf-8")
    asset, warnings = prepare_subtitles(srt, frames=24, fps=24, title="t", language="en")
    font = asset.resources[0].data
    assert len(font) < 64 << 10
    assert {ord(c) for c in "Helo"} <= set(_font(font).getBestCmap())
    assert any("no glyph for '世界'" in w for w in warnings), warnings
