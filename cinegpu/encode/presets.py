"""Coding parameters of one codestream, and the DCI profiles that fix them.

:func:`make_params` turns a :class:`Coding` (what the codestream is asked to be: the
coding options of :func:`cinegpu.encode.encode`) and the image's shape into a frozen
:class:`Params`; the DCI profiles override the options they constrain, with the facts of
:mod:`cinegpu.decode.codestream.dci` (ISO/IEC 15444-1 Amd 1, SMPTE ST 429-4, as SMPTE Bv2.1
verifiers check them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cinegpu.decode.codestream import dci, imf
from cinegpu.decode.codestream.cod import PROGRESSIONS

__all__ = [
    "DCI_COMPONENT_BITRATE",
    "DCI_FRAME_BITRATE",
    "Coding",
    "Params",
    "dci_caps",
    "make_params",
]

#: The DCI caps, bits/s (re-exported from :mod:`cinegpu.decode.codestream.dci`).
DCI_FRAME_BITRATE = dci.FRAME_BITRATE
DCI_COMPONENT_BITRATE = dci.COMPONENT_BITRATE
PROFILES = ("generic", *dci.PROFILES, *imf.PROFILES)


@dataclass(frozen=True, kw_only=True)
class Coding:
    """What a codestream is asked to be, before it meets an image (:func:`make_params` checks
    it against the image's components and fixes what a profile fixes).

    ``profile``: "generic", a DCI profile ("dci-2k", "dci-4k": everything but ``fps`` and
    ``bitrate`` fixed) or an IMF one ("imf-2k", "imf-4k").  ``fps``: frames per second, with
    ``bitrate`` (bits per second; None: the generic profile keeps every coding pass) the byte
    budget of a frame, bitrate / 8 / fps.  ``reversible``: 5/3 + RCT, lossless without a
    bitrate; else 9/7 + ICT.  ``levels``: decomposition levels (None: min(5, log2(min side) -
    2)).  ``codeblock``: (width, height) as sizes or exponents (T.800 A.6.1).
    ``progression``: LRCP, RLCP, RPCL, PCRL or CPRL (or its index, Table A.16).  ``layers``:
    quality layers.  ``tiles``: (XTsiz, YTsiz), None for one tile.  ``precincts``:
    per-resolution (PPx, PPy) sizes or exponents, lowest resolution first, or None.
    ``style``: code-block style bits (CBLK_* of :mod:`cinegpu.decode.tier1`).
    ``quantization``: "expounded" or "derived" (irreversible only; Table A.28).
    ``guard_bits``: G (None: 2; E.1.1.1).  ``mct``: the multiple component transform (ICT/RCT,
    T.800 Annex G) over components 0-2; None: where they can take it (three or more components
    of one size, R'G'B' as given); False: never (Y'CbCr input; DCI profiles always use it)."""

    profile: str = "generic"
    fps: float = 24
    bitrate: float | None = None
    reversible: bool = False
    levels: int | None = None
    codeblock: tuple[int, int] = (32, 32)
    progression: str | int = "LRCP"
    layers: int = 1
    tiles: tuple[int, int] | None = None
    precincts: object = None
    style: int = 0
    quantization: str = "expounded"
    guard_bits: int | None = None
    mct: bool | None = None


@dataclass(frozen=True, kw_only=True)
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
    #: HTJ2K in IMF: the most Ccap15 parameter B the 9/7 steps may need (T.814 A.3,
    #: ST 2067-21:2023 Annex I); None: no bound
    max_B: int | None = None

    @property
    def ncomp(self) -> int:
        return len(self.precisions)

    @property
    def num_tiles(self) -> int:
        return math.ceil(self.width / self.tile[0]) * math.ceil(self.height / self.tile[1])


def dci_caps(fps: float) -> tuple[int, int]:
    """(frame, component) byte caps at ``fps``: floor(250e6 / 8 / fps), floor(200e6 / 8 / fps)."""
    return dci.bytes_per_frame(dci.FRAME_BITRATE, fps), dci.bytes_per_frame(dci.COMPONENT_BITRATE, fps)


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


def make_params(shapes, precisions, signed, coding: Coding) -> Params:
    """The :class:`Params` of ``coding`` for components of ``shapes`` ((h, w) each),
    ``precisions`` (bits) and ``signed``, validated against them (ValueError)."""
    c = coding
    if c.profile not in PROFILES:
        raise ValueError(f"profile {c.profile!r} not in {PROFILES}")
    h0, w0 = shapes[0]
    XRsiz = tuple(max(1, round(w0 / w)) for h, w in shapes)
    YRsiz = tuple(max(1, round(h0 / h)) for h, w in shapes)
    for (h, w), dx, dy in zip(shapes, XRsiz, YRsiz):
        if (-(-w0 // dx), -(-h0 // dy)) != (w, h):
            raise ValueError(f"component of {w}x{h} is not a subsampling of {w0}x{h0}")
    ncomp = len(shapes)
    same = all(s == shapes[0] for s in shapes[:3])
    if c.profile in imf.PROFILES:
        return _imf_params(c.profile, shapes, precisions, c.fps, c.bitrate, c.reversible, c.style,
                           c.mct is not False)
    if c.profile != "generic":
        return _dci_params(c.profile, shapes, precisions, c.fps, c.bitrate)
    levels = c.levels
    if levels is None:
        levels = min(5, max(0, int(math.log2(max(1, min(w0, h0)))) - 2))
    xcb, ycb = codeblock_exponents(c.codeblock)
    tile = (w0, h0) if c.tiles is None else (int(c.tiles[0]), int(c.tiles[1]))
    frame_bytes = None if c.bitrate is None else int(c.bitrate / 8 / c.fps)
    return Params(
        profile=c.profile, Rsiz=0, width=w0, height=h0, precisions=tuple(precisions),
        signed=tuple(signed), XRsiz=XRsiz, YRsiz=YRsiz, tile=tile, levels=int(levels),
        xcb=xcb, ycb=ycb, cblk_style=int(c.style), reversible=bool(c.reversible),
        mct=1 if (ncomp >= 3 and same and c.mct is not False) else 0,
        progression=_progression(c.progression),
        layers=int(c.layers), precincts=precinct_exponents(c.precincts, int(levels)), pocs=(),
        guard_bits=2 if c.guard_bits is None else int(c.guard_bits), guard_bits_fixed=False,
        quant_style=0 if c.reversible else (1 if c.quantization == "derived" else 2),
        tlm=False, split_components=False, frame_bytes=frame_bytes, component_bytes=None,
    )


def _dci_params(profile, shapes, precisions, fps, bitrate) -> Params:
    p = dci.PROFILES[profile]
    h, w = shapes[0]
    cw, ch = p.container
    if len(shapes) != dci.COMPONENTS or any(s != shapes[0] for s in shapes):
        raise ValueError(f"{profile}: need 3 components of one size, got {shapes}")
    if w > cw or h > ch:
        raise ValueError(f"{profile}: {w}x{h} is larger than the {cw}x{ch} container")
    if any(b != dci.PRECISION for b in precisions):
        raise ValueError(f"{profile}: components must be 12 bit, got {precisions}")
    if fps not in p.frame_rates:
        raise ValueError(f"{profile}: {fps} fps not in {p.frame_rates}")
    frame_cap, comp_cap = dci_caps(fps)
    frame_bytes = frame_cap if bitrate is None else min(frame_cap, int(bitrate / 8 / fps))
    xcb, ycb = dci.CODEBLOCK
    n = dci.COMPONENTS
    return Params(
        profile=profile, Rsiz=p.Rsiz, width=w, height=h, precisions=(dci.PRECISION,) * n,
        signed=(False,) * n, XRsiz=(1,) * n, YRsiz=(1,) * n, tile=(w, h), levels=p.levels,
        xcb=xcb, ycb=ycb, cblk_style=0, reversible=False, mct=dci.MCT,
        progression=dci.PROGRESSION, layers=1, precincts=p.precincts(), pocs=p.pocs,
        guard_bits=p.guard_bits, guard_bits_fixed=True, quant_style=2, tlm=True,
        split_components=True, frame_bytes=frame_bytes, component_bytes=comp_cap,
    )


#: HTJ2K in IMF: RPCL, which ST 2067-21:2023 Annex I (Note 3) prefers and photon warns
#: without (``Application2E2021.validateHTConstraints``); Part-1 IMF keeps CPRL.
HT_PROGRESSION = PROGRESSIONS.index("RPCL")
#: The IMF profiles' bit rate when none is given, bits/s (sub level 1's cap).
IMF_DEFAULT_BITRATE = imf.sublevel_bitrate(1)


def _imf_params(profile, shapes, precisions, fps, bitrate, reversible=False, style=0,
                rgb=True) -> Params:
    """An IMF lossy profile (:mod:`cinegpu.decode.codestream.imf`): R'G'B' 4:4:4 (``rgb``: the
    ICT, or the RCT) or Y'CbCr 4:4:4 or 4:2:2 (``rgb`` False: no component transform; Cb and
    Cr of half the width for 4:2:2, ST 2067-21 Table 3) of 10 or 12 bits as given, the sub
    level chosen from ``bitrate``. With the HT
    code-block style (``style`` 0x40, ``codec="htj2k"``) the same geometry as HTJ2K in IMF:
    Rsiz :data:`imf.HT_RSIZ`, and ``reversible`` (5/3 + RCT) lossless when no ``bitrate``
    is given; Part-1 IMF codestreams are 9/7 only here."""
    p = imf.profile(profile)
    ht = bool(int(style) & 0x40)
    if reversible and not ht:
        raise ValueError(f"{profile}: the reversible path is written for HTJ2K only "
                         "(codec='htj2k')")
    h, w = shapes[0]
    cw, ch = p.container
    chroma = {tuple(s) for s in shapes[1:]}
    if len(shapes) != 3 or len(chroma) != 1 or chroma.pop() not in ((h, w), (h, -(-w // 2))):
        raise ValueError(f"{profile}: need 3 components, 4:4:4 or 4:2:2, got {shapes}")
    if shapes[1] != shapes[0] and rgb:
        raise ValueError(f"{profile}: 4:2:2 is Y'CbCr (no component transform), got R'G'B'")
    xr = 1 if shapes[1] == shapes[0] else 2
    if w > cw or h > ch:
        raise ValueError(f"{profile}: {w}x{h} is larger than the {cw}x{ch} container")
    if len(set(precisions)) != 1 or precisions[0] not in imf.PRECISIONS:
        raise ValueError(f"{profile}: components must be {imf.PRECISIONS} bit, got {precisions}")
    lossless = reversible and bitrate is None
    # HTJ2K 9/7: one guard bit kept (indices clipped, as DCI) and no band's step finer than
    # ST 2067-21:2023 Annex I's bound on Ccap15's B allows (photon warns above it)
    lossy_ht = ht and not reversible
    max_B = imf.ht_b_limit(precisions[0], False, rgb, imf.levels_for(p, w, h)) \
        if lossy_ht else None
    bitrate = IMF_DEFAULT_BITRATE if bitrate is None else float(bitrate)
    Rsiz = imf.HT_RSIZ if ht else imf.rsiz(p, w, h, fps, bitrate)
    levels = imf.levels_for(p, w, h)
    xcb, ycb = dci.CODEBLOCK
    low, rest = dci.PRECINCTS
    return Params(
        profile=profile, Rsiz=Rsiz, width=w, height=h, precisions=tuple(precisions),
        signed=(False,) * 3, XRsiz=(1, xr, xr), YRsiz=(1,) * 3, tile=(w, h), levels=levels,
        xcb=xcb, ycb=ycb, cblk_style=0x40 if ht else 0, reversible=bool(reversible),
        mct=1 if rgb else 0,
        progression=HT_PROGRESSION if ht else dci.PROGRESSION, layers=1,
        precincts=((low, low),) + ((rest, rest),) * levels, pocs=(),
        guard_bits=1 if lossy_ht else 2, guard_bits_fixed=lossy_ht,
        quant_style=0 if reversible else 2, tlm=True, split_components=not ht,
        frame_bytes=None if lossless else int(bitrate / 8 / fps), component_bytes=None,
        max_B=max_B,
    )
