"""A readable dump of a codestream's headers, in the way of ``opj_dump``."""

from __future__ import annotations

from ..jp2 import read_jp2
from . import markers as M
from .header import parse_codestream

_STYLE_FLAGS = ((0x01, "BYPASS"), (0x02, "RESET"), (0x04, "TERMALL"), (0x08, "VCAUSAL"),
                (0x10, "PTERM"), (0x20, "SEGSYM"), (0x40, "HT"), (0x80, "MIXED"))
_PROFILES = {0: "Part-1 (no restrictions)", 1: "profile 0", 2: "profile 1", 3: "DCI 2K (cinema 2K)",
             4: "DCI 4K (cinema 4K)", 0x4000: "HTJ2K"}


def _style(flags: int) -> str:
    names = [n for bit, n in _STYLE_FLAGS if flags & bit]
    return "+".join(names) if names else "none"


def describe_codestream(data, name: str = "codestream") -> str:
    """Multi-line text: image and tile geometry, coding style, markers."""
    codestream, jp2 = read_jp2(data)
    cs = parse_codestream(codestream, strict=False)
    s, cod = cs.siz, cs.main.cod
    assert cod is not None and cs.main.qcd is not None
    lines = [f"{name}: {'JP2 file' if jp2 else 'raw codestream'}, {len(codestream)} bytes"]
    lines.append(f"  Rsiz 0x{s.Rsiz:04X} ({_PROFILES.get(s.Rsiz, 'other profile')})")
    lines.append(f"  image {s.Xsiz - s.XOsiz} x {s.Ysiz - s.YOsiz} at offset ({s.XOsiz}, {s.YOsiz}), "
                 f"{s.Csiz} components")
    lines.append(f"  tiles {s.XTsiz} x {s.YTsiz} at offset ({s.XTOsiz}, {s.YTOsiz}): "
                 f"{s.num_tiles_x} x {s.num_tiles_y} = {s.num_tiles}, "
                 f"{sum(len(t.parts) for t in cs.tiles.values())} tile-parts present")
    for c in range(min(s.Csiz, 16)):
        w, h = s.component_size(c)
        lines.append(f"  component {c}: {w} x {h}, {s.precision(c)} bit {'signed' if s.signed(c) else 'unsigned'}, "
                     f"subsampling {s.XRsiz[c]}x{s.YRsiz[c]}")
    if s.Csiz > 16:
        lines.append(f"  ... {s.Csiz - 16} more components")
    sp = cod.spcod
    lines.append(f"  progression {cod.progression_name}, {cod.layers} layers, MCT {'on' if cod.mct else 'off'}, "
                 f"SOP {'yes' if cod.sop else 'no'}, EPH {'yes' if cod.eph else 'no'}")
    lines.append(f"  {sp.levels} decomposition levels, {'5/3 reversible' if sp.reversible else '9/7 irreversible'}, "
                 f"code-blocks {1 << sp.xcb} x {1 << sp.ycb}, style {_style(sp.cblk_style)}")
    lines.append("  precincts " + " ".join(f"{1 << px}x{1 << py}" for px, py in sp.precincts))
    q = cs.main.qcd
    lines.append(f"  quantization {['none', 'scalar derived', 'scalar expounded'][q.style]}, "
                 f"{q.guard_bits} guard bits, {len(q.steps)} step sizes")
    for p in cs.main.poc:
        lines.append(f"  POC: resolutions {p.RSpoc}-{p.REpoc}, components {p.CSpoc}-{p.CEpoc}, "
                     f"layers <{p.LYEpoc}, {('LRCP', 'RLCP', 'RPCL', 'PCRL', 'CPRL')[p.Ppoc]}")
    for com in cs.main.com:
        lines.append(f"  comment: {com.text[:120]}")
    counts: dict[str, int] = {}
    for code, _, _ in cs.markers:
        counts[M.name(code)] = counts.get(M.name(code), 0) + 1
    lines.append("  markers " + ", ".join(f"{k} x{v}" if v > 1 else k for k, v in counts.items()))
    lines.extend(f"  warning: {w}" for w in cs.warnings)
    return "\n".join(lines)
