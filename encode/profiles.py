"""Coding parameters of one codestream, and the DCI profiles that fix them.

:func:`make_params` turns the options of :func:`cinegpu.encode.encode` and the
image's shape into a frozen :class:`Params`; the DCI profiles (ISO/IEC
15444-1 Amd 1, as checked by SMPTE Bv2.1 verifiers) override the options
they constrain.

DCI 2K (Rsiz 3) / 4K (Rsiz 4): one tile at (0, 0), 3 components of 12 bit,
9/7 irreversible with the ICT, 5 / 6 decomposition levels, 32x32
code-blocks, precincts 2^7 at resolution 0 and 2^8 elsewhere, CPRL (4K: a
POC, resolutions 0-5 of all components then resolution 6), one tile-part
per component (4K: per component and POC progression, 6), TLM, guard bits
1 (2K) / 2 (4K); at most 250 Mbit/s per frame and 200 Mbit/s per component.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cinegpu.decode.codestream.cod import PROGRESSIONS

__all__ = [
    "DCI_COMPONENT_BITRATE",
    "DCI_FRAME_BITRATE",
    "Params",
    "dci_caps",
    "make_params",
]

#: Image bit rate cap, bits/s (DCI; OpenJPEG OPJ_CINEMA_24_CS = 1,302,083 bytes at 24 fps).
DCI_FRAME_BITRATE = 250_000_000
#: Per-component cap, bits/s (OpenJPEG OPJ_CINEMA_24_COMP = 1,041,666 bytes at 24 fps).
DCI_COMPONENT_BITRATE = 200_000_000
DCI_FPS = {"dci-2k": (24, 25, 30, 48, 50, 60), "dci-4k": (24, 25, 30)}
DCI_SIZE = {"dci-2k": (2048, 1080), "dci-4k": (4096, 2160)}
PROFILES = ("generic", "dci-2k", "dci-4k")


@dataclass(frozen=True)
class Params:
    """Everything the headers say, plus the byte budgets (None: no limit)."""

    profile: str
    Rsiz: int
    width: int
    height: int
    precisions: tuple[int, ...]
    signed: tuple[bool, ...]
    XRsiz: tuple[int, ...]
    YRsiz: tuple[int, ...]
    tile: tuple[int, int]  #: XTsiz, YTsiz
    levels: int
    xcb: int
    ycb: int
    cblk_style: int
    reversible: bool
    mct: int
    progression: int
    layers: int
    precincts: tuple[tuple[int, int], ...] | None
    pocs: tuple[tuple[int, int, int, int, int, int], ...]
    guard_bits: int
    guard_bits_fixed: bool  #: DCI: never raised (indices are clipped instead)
    quant_style: int  #: 0 none, 1 derived, 2 expounded (Table A.28)
    tlm: bool
    split_components: bool  #: a new tile-part where the component changes
    frame_bytes: int | None
    component_bytes: int | None
    comment: str = "cinegpu"

    @property
    def ncomp(self) -> int:
        return len(self.precisions)

    @property
    def num_tiles(self) -> int:
        return math.ceil(self.width / self.tile[0]) * math.ceil(self.height / self.tile[1])


def dci_caps(fps: float) -> tuple[int, int]:
    """(frame, component) byte caps at ``fps``: floor(250e6 / 8 / fps), floor(200e6 / 8 / fps)."""
    return int(DCI_FRAME_BITRATE / 8 / fps), int(DCI_COMPONENT_BITRATE / 8 / fps)


def _exponent(v: int, what: str) -> int:
    e = int(v).bit_length() - 1
    if v <= 0 or (1 << e) != v:
        raise ValueError(f"{what} {v} is not a power of two")
    return e


def codeblock_exponents(codeblock) -> tuple[int, int]:
    """(xcb, ycb) from exponents (both <= 10) or sizes (powers of two, 4..1024)."""
    a, b = (int(v) for v in codeblock)
    if a <= 10 and b <= 10 and not (a in (4, 8) and b in (4, 8) and a != b):
        xcb, ycb = a, b
    else:
        xcb, ycb = _exponent(a, "code-block width"), _exponent(b, "code-block height")
    if not (2 <= xcb <= 10 and 2 <= ycb <= 10 and xcb + ycb <= 12):
        raise ValueError(f"code-block 2^{xcb} x 2^{ycb}: sides 4..1024, area <= 4096 (A.6.1)")
    return xcb, ycb


def precinct_exponents(precincts, levels: int) -> tuple[tuple[int, int], ...] | None:
    """Per resolution (PPx, PPy), lowest first; a short list repeats its last entry.
    Entries are exponents (<= 15) or sizes (powers of two > 15)."""
    if precincts is None:
        return None
    items = [precincts] if isinstance(precincts[0], int) else list(precincts)
    out = []
    for item in items:
        px, py = (int(v) for v in item)
        px = px if px <= 15 else _exponent(px, "precinct width")
        py = py if py <= 15 else _exponent(py, "precinct height")
        out.append((px, py))
    while len(out) < levels + 1:
        out.append(out[-1])
    out = out[: levels + 1]
    for r, (px, py) in enumerate(out):
        if r > 0 and (px < 1 or py < 1):
            raise ValueError("precinct exponents must be >= 1 above resolution 0 (A.6.1)")
    return tuple(out)


def _progression(progression) -> int:
    if isinstance(progression, int):
        return progression
    return PROGRESSIONS.index(progression.upper())


def make_params(shapes, precisions, signed, *, profile, fps, bitrate, reversible, levels,
                codeblock, progression, layers, tiles, precincts, style, quantization,
                guard_bits) -> Params:
    """Validate the options against the image (``shapes``: (h, w) per component)."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} not in {PROFILES}")
    h0, w0 = shapes[0]
    XRsiz = tuple(max(1, round(w0 / w)) for h, w in shapes)
    YRsiz = tuple(max(1, round(h0 / h)) for h, w in shapes)
    for (h, w), dx, dy in zip(shapes, XRsiz, YRsiz):
        if (-(-w0 // dx), -(-h0 // dy)) != (w, h):
            raise ValueError(f"component of {w}x{h} is not a subsampling of {w0}x{h0}")
    ncomp = len(shapes)
    same = all(s == shapes[0] for s in shapes[:3])
    if profile != "generic":
        return _dci_params(profile, shapes, precisions, fps, bitrate)
    if levels is None:
        levels = min(5, max(0, int(math.log2(max(1, min(w0, h0)))) - 2))
    xcb, ycb = codeblock_exponents(codeblock)
    tile = (w0, h0) if tiles is None else (int(tiles[0]), int(tiles[1]))
    frame_bytes = None if bitrate is None else int(bitrate / 8 / fps)
    return Params(
        profile, 0, w0, h0, tuple(precisions), tuple(signed), XRsiz, YRsiz, tile, int(levels),
        xcb, ycb, int(style), bool(reversible), 1 if (ncomp >= 3 and same) else 0,
        _progression(progression), int(layers), precinct_exponents(precincts, int(levels)),
        (), 2 if guard_bits is None else int(guard_bits), False,
        0 if reversible else (1 if quantization == "derived" else 2),
        False, False, frame_bytes, None,
    )


def _dci_params(profile, shapes, precisions, fps, bitrate) -> Params:
    four_k = profile == "dci-4k"
    h, w = shapes[0]
    cw, ch = DCI_SIZE[profile]
    if len(shapes) != 3 or any(s != shapes[0] for s in shapes):
        raise ValueError(f"{profile}: need 3 components of one size, got {shapes}")
    if w > cw or h > ch:
        raise ValueError(f"{profile}: {w}x{h} is larger than the {cw}x{ch} container")
    if any(p != 12 for p in precisions):
        raise ValueError(f"{profile}: components must be 12 bit, got {precisions}")
    if fps not in DCI_FPS[profile]:
        raise ValueError(f"{profile}: {fps} fps not in {DCI_FPS[profile]}")
    frame_cap, comp_cap = dci_caps(fps)
    frame_bytes = frame_cap if bitrate is None else min(frame_cap, int(bitrate / 8 / fps))
    levels = 6 if four_k else 5
    pocs = ((0, 0, 1, 6, 3, 4), (6, 0, 1, 7, 3, 4)) if four_k else ()
    return Params(
        profile, 4 if four_k else 3, w, h, (12,) * 3, (False,) * 3, (1,) * 3, (1,) * 3, (w, h),
        levels, 5, 5, 0, False, 1, 4, 1, ((7, 7),) + ((8, 8),) * levels, pocs,
        2 if four_k else 1, True, 2, True, True, frame_bytes, comp_cap,
    )
