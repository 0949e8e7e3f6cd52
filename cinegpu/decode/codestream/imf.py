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

__all__ = ["APP_2E_2016", "APP_2E_2021", "FRAME_RATES", "HT_RSIZ", "IMF_2K", "IMF_4K", "IMFProfile",
           "APP_2E_2016_BITS", "APP_2E_2021_ROWS", "PRECISIONS", "PROFILES", "app_2e_2016_allows", "app_2e_2021_allows", "ccap15_magb",
           "coding_label_byte", "ht_b_limit", "ht_magb_b", "identification", "levels_for",
           "magb_b", "profile", "profile_for", "rsiz", "sublevel_bitrate"]

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


# -- App #2E identifications and the image characteristics each allows ---------------------------
#: ApplicationIdentification of ST 2067-21:2016 (Part-1 JPEG 2000 only; photon's
#: ``Application2ExtendedComposition``, which checks App #2 first, then App #2E).
APP_2E_2016 = "http://www.smpte-ra.org/schemas/2067-21/2016"
#: ApplicationIdentification of ST 2067-21:2021 (and :2023): HTJ2K allowed (photon's
#: ``Application2E2021``, Table 3 of ST 2067-21:2023).
APP_2E_2021 = "http://www.smpte-ra.org/ns/2067-21/2021"
_FPS_ALL = FRAME_RATES
#: ST 2067-21:2023 Table 3's HD Y'CbCr rates (photon ``Application2E2021.FPS_HD``): 25, 29.97, 30.
_FPS_HD = (Fraction(25), Fraction(30000, 1001), Fraction(30))


#: ST 2067-21:2016 App #2E: the bit depths of each colour system (photon
#: ``Application2ExtendedComposition.colorToBitDepthMap``; Color3 is Rec. 709).
APP_2E_2016_BITS = {3: (8, 10), 4: (8, 10), 5: (10, 12), 6: (10, 12, 16), 7: (10, 12, 16)}
_UHD = _FPS_ALL
_4K = _FPS_ALL + (Fraction(120),)
#: ST 2067-21:2023 Table 3, progressive rows (photon ``Application2E2021.IMAGE_CHARACTERISTICS``):
#: (Y'CbCr, chroma subsampling, largest width, height, colour systems, bit depths, rates).
APP_2E_2021_ROWS = (
    (True, 2, 1920, 1080, (1, 2, 3), (8, 10), _FPS_HD),
    (True, 1, 1920, 1080, (1, 2, 3), (8, 10), _FPS_HD),
    (False, 1, 1920, 1080, (1, 2, 3), (8, 10), _FPS_HD),
    (True, 2, 3840, 2160, (4,), (8, 10), _UHD),
    (True, 2, 3840, 2160, (3,), (8, 10, 12, 16), _UHD),
    (True, 2, 3840, 2160, (5, 8), (10, 12), _UHD),
    (True, 2, 3840, 2160, (7,), (10, 12, 16), _UHD),
    (False, 1, 4096, 3112, (3,), (8, 10, 12, 16), _4K),
    (False, 1, 4096, 3112, (5, 8), (10, 12), _4K),
    (False, 1, 4096, 3112, (6, 7), (10, 12, 16), _4K),
)


def app_2e_2016_allows(ycbcr: bool, sampling: int, bits: int, width: int, height: int,
                       fps, colour: int = 3) -> bool:
    """Whether ST 2067-21:2016 (photon ``Application2ExtendedComposition``) allows a
    progressive picture: ``ycbcr`` Y'CbCr (else R'G'B'), ``sampling`` the chroma's horizontal
    subsampling (1: 4:4:4, 2: 4:2:2), ``bits`` per component, ``width`` x ``height`` samples
    at ``fps``, ``colour`` the photon colour system (3: Rec. 709). App #2 (ST 2067-20: up to
    1920x1080, 8 or 10 bits, any progressive rate) passes first; else App #2E:
    :data:`APP_2E_2016_BITS`, R'G'B' 4:4:4 up to 4096x3112 (120 fps too), Y'CbCr 4:2:2 only,
    up to 3840x2160."""
    rate = Fraction(fps)
    if width <= 1920 and height <= 1080 and bits in (8, 10) and rate in _FPS_ALL \
            and 1 <= colour <= 7:
        return True                                            # App #2
    if bits not in APP_2E_2016_BITS.get(colour, ()):
        return False
    if ycbcr:
        return sampling == 2 and width <= 3840 and height <= 2160 and rate in _FPS_ALL
    return width <= 4096 and height <= 3112 and rate in _4K


def app_2e_2021_allows(ycbcr: bool, sampling: int, bits: int, width: int, height: int,
                       fps, colour: int = 3) -> bool:
    """Whether ST 2067-21:2021/2023 Table 3 allows a progressive picture (a row of
    :data:`APP_2E_2021_ROWS` holds it); arguments as :func:`app_2e_2016_allows`. For Rec. 709:
    R'G'B' 8..16 bits up to 4096x3112; Y'CbCr 4:2:2 8..16 bits up to 3840x2160; Y'CbCr 4:4:4
    8 or 10 bits up to 1920x1080 at 25, 29.97 or 30 frames/s only."""
    rate = Fraction(fps)
    return any(ycbcr == y and sampling == s and width <= w and height <= h and colour in cs
               and bits in bs and rate in rates
               for y, s, w, h, cs, bs, rates in APP_2E_2021_ROWS)


def identification(ht: bool, ycbcr: bool, sampling: int, bits: int, width: int, height: int,
                   fps) -> str | None:
    """The App #2E ApplicationIdentification a package must carry: HTJ2K only under
    :data:`APP_2E_2021` (the 2016 edition's picture coding labels are Part-1 profiles only:
    photon's ``Application2ExtendedComposition`` refuses the HTJ2K label); Part-1 under
    :data:`APP_2E_2016` where that edition allows the picture (the one older checkers know),
    else :data:`APP_2E_2021`; None where neither does."""
    args = (ycbcr, sampling, bits, width, height, fps)
    if not ht and app_2e_2016_allows(*args):
        return APP_2E_2016
    if app_2e_2021_allows(*args):
        return APP_2E_2021
    return None


# -- HTJ2K: the CAP marker's Ccap15 parameter B (T.814 A.3) and its IMF bound --------------------
def ht_magb_b(steps, guard_bits: int, levels: int, reversible: bool) -> int:
    """Parameter B of Ccap15 (T.814 Table A.3, MAGB) for a QCD's ``steps`` ((epsilon_b, mu_b),
    LL first, Table A.30) and ``guard_bits``: the most magnitude bit-planes of any band, where
    the 5/3 band's count is M_b = G + epsilon_b - 1 (T.800 E-2) and the 9/7 band at level
    n_b (1 finest, the LL at ``levels``) counts G + epsilon_b - n_b (the step sizes of the
    normalised 9/7 fall by one bit a level), as OpenJPH (the T.814 reference software)
    and the photon HTJ2K sample compute it."""
    best = 0
    for i, (eps, _) in enumerate(steps):
        nb = levels if i == 0 else levels - (i - 1) // 3
        best = max(best, guard_bits + eps - (1 if reversible else nb))
    return best


def ccap15_magb(B: int) -> int:
    """Ccap15 bits 4..0 (MAGB) for parameter ``B`` (T.814 Table A.3): 0 for B <= 8,
    B - 8 below 28, 13 + B / 4 below 48, else 31."""
    if B <= 8:
        return 0
    if B < 28:
        return B - 8
    if B < 48:
        return 13 + (B >> 2)
    return 31


def magb_b(magb: int) -> int:
    """The largest B that Ccap15's ``magb`` field allows (the inverse of :func:`ccap15_magb`);
    photon reads B as MAGB + 8."""
    if magb == 0:
        return 8
    if magb < 20:
        return magb + 8
    if magb < 31:
        return 4 * (magb - 13) + 3
    return 74


def ht_b_limit(precision: int, reversible: bool, mct: bool, levels: int) -> int:
    """The most B ST 2067-21:2023 Annex I allows an IMF HTJ2K codestream (photon
    ``Application2E2021.validateHTConstraints``): precision + 1, plus 2 and one for the RCT
    (one more above 5 levels) on the 5/3 path, plus one for the ICT above 10 bits on the 9/7;
    photon warns above it and fails above 21."""
    b = precision + 1
    if reversible:
        b += 2 + int(mct) + (1 if levels > 5 else 0)
    elif mct and precision > 10:
        b += 1
    return b
