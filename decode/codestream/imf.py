"""The IMF codestream facts: the JPEG 2000 IMF 2K and 4K single-tile lossy profiles.

ISO/IEC 15444-1 Amd 8 (T.800 Annex A, Table A.10) defines the IMF profiles and their Rsiz
values; SMPTE ST 2067-21 (IMF Application #2E) allows them for RGB or Y'C'bC'r 4:4:4/4:2:2
pictures of 8..16 bits (10 and 12 here), up to 4096x3112, at 23.976..60 frames/s. This is
the one place these facts live: the encoder's IMF profiles, the IMF track file writer and
mastering read them here.

Both lossy profiles: one tile with image and tile origin (0, 0); at most 3 components,
unsigned; 9/7 irreversible wavelet (with the ICT for RGB); 32x32 code-blocks, no code-block
mode switches; precincts 128x128 in the lowest resolution, 256x256 elsewhere; CPRL, no POC;
one quality layer. The 2K profile allows 1..5 decomposition levels, the 4K profile 1..6.

Rsiz = 0x0400 (2K) or 0x0500 (4K) | sublevel << 4 | mainlevel. The main level bounds the
sample rate (Table A.47: luma samples per second), the sub level the bit rate (Table A.48:
200 Mbit/s times 2^(sublevel - 1)); a main level allows sub levels up to
:data:`MAX_SUBLEVEL` of it.

HTJ2K (ISO/IEC 15444-15 | T.814) in IMF (ST 2067-21:2020, App #2E 2021): the same geometry
with the HT code-block style (COD 0x40) and a CAP marker; Rsiz is :data:`HT_RSIZ` (bit 14,
no Part-1 profile: 0x4000, as the HTJ2K packages of other tools carry it), the 9/7 lossy or
the 5/3 reversible path, and the picture coding label is the HTJ2K "generic" one.

Units: sizes in samples, rates in frames per second, bit rates in bits per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = ["FRAME_RATES", "HT_RSIZ", "IMF_2K", "IMF_4K", "IMFProfile", "PRECISIONS", "PROFILES",
           "coding_label_byte", "levels_for", "profile", "profile_for", "rsiz", "sublevel_bitrate"]

#: Edit rates ST 2067-21 allows (frames/s): 23.976, 24, 25, 29.97, 30, 50, 59.94, 60.
FRAME_RATES = tuple(Fraction(r) for r in (Fraction(24000, 1001), 24, 25, Fraction(30000, 1001),
                                          30, 50, Fraction(60000, 1001), 60))
#: Rsiz of an HTJ2K codestream in IMF (T.814 A.2: bit 14; bits 0..13 zero).
HT_RSIZ = 0x4000
#: Component precisions the encoder writes for IMF (bits, unsigned).
PRECISIONS = (10, 12)
#: Main level -> the most luma samples per second (T.800 Amd 8 Table A.47), levels 1..8.
MAINLEVEL_RATE = {1: 65_280_000, 2: 130_560_000, 3: 195_840_000, 4: 260_928_000,
                  5: 521_856_000, 6: 1_043_712_000, 7: 2_087_424_000, 8: 4_174_848_000}
#: Main level -> its highest sub level (T.800 Amd 8 Table A.46).
MAX_SUBLEVEL = {1: 1, 2: 1, 3: 1, 4: 2, 5: 3, 6: 4, 7: 5, 8: 6}


@dataclass(frozen=True)
class IMFProfile:
    """What sets the IMF 2K and 4K lossy profiles apart."""

    name: str                          #: the encoder's name: "imf-2k", "imf-4k"
    title: str                         #: "IMF 2K", "IMF 4K"
    base: int                          #: Rsiz without levels: 0x0400, 0x0500
    container: tuple[int, int]         #: largest image, width x height in samples
    max_levels: int                    #: decomposition levels allowed: 1..max_levels
    ul_family: int                     #: byte 14 of the picture coding UL (ST 2067-21)


IMF_2K = IMFProfile("imf-2k", "IMF 2K", 0x0400, (2048, 1556), 5, 0x02)
IMF_4K = IMFProfile("imf-4k", "IMF 4K", 0x0500, (4096, 3112), 6, 0x03)
PROFILES = {p.name: p for p in (IMF_2K, IMF_4K)}


def profile(name: str) -> IMFProfile:
    """The profile called ``name`` ("imf-2k", "imf-4k"); ValueError else."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"no IMF profile {name!r}") from None


def profile_for(width: int, height: int) -> IMFProfile:
    """The smallest profile whose container holds ``width`` x ``height``; ValueError above 4K."""
    for p in (IMF_2K, IMF_4K):
        if width <= p.container[0] and height <= p.container[1]:
            return p
    raise ValueError(f"{width}x{height} is larger than IMF allows "
                     f"({IMF_4K.container[0]}x{IMF_4K.container[1]})")


def sublevel_bitrate(sublevel: int) -> int:
    """The most bits per second sub level ``sublevel`` (>= 1) allows: 200 Mbit/s x 2^(s-1)."""
    return 200_000_000 << (sublevel - 1)


def rsiz(p: IMFProfile, width: int, height: int, fps, bitrate: float) -> int:
    """Rsiz for a ``width`` x ``height`` picture at ``fps`` and ``bitrate`` bits/s: the lowest
    main level whose sample rate holds the picture's, the lowest sub level whose bit rate
    holds ``bitrate`` (the main level raised where that sub level needs it)."""
    rate = width * height * Fraction(fps)
    sub = 1
    while sublevel_bitrate(sub) < bitrate:
        sub += 1
    for main in sorted(MAINLEVEL_RATE):
        if rate <= MAINLEVEL_RATE[main] and sub <= MAX_SUBLEVEL[main]:
            return p.base | sub << 4 | main
    raise ValueError(f"{width}x{height} at {fps} fps and {bitrate / 1e6:g} Mbit/s exceeds "
                     f"every {p.title} level")


def levels_for(p: IMFProfile, width: int, height: int) -> int:
    """Decomposition levels: the profile's most, fewer where the picture is too small for
    them (the lowest resolution keeps at least 8 samples a side), at least 1."""
    levels = p.max_levels
    while levels > 1 and min(width, height) >> levels < 8:
        levels -= 1
    return levels


def coding_label_byte(Rsiz: int) -> int:
    """Byte 15 of the ST 2067-21 picture coding UL for an IMF lossy Rsiz: the (main level,
    sub level) pairs numbered in order, each main level's sub level 0 first."""
    main, sub = Rsiz & 0x0F, (Rsiz >> 4) & 0x0F
    first = 2
    for m in range(1, main):
        first += MAX_SUBLEVEL[m] + 1
    return first + sub
