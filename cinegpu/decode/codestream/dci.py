"""The DCI codestream facts: the 2K and 4K digital cinema profiles of JPEG 2000.

ITU-T T.800 Amd.1 / ISO/IEC 15444-1 Amd 1 gives the profiles their Rsiz values (3: 2K, 4: 4K)
and constraints; SMPTE ST 429-4 (the MXF JPEG 2000 application of D-Cinema) carries them, and
SMPTE Bv2.1 verifiers (libdcp ``verify_j2k.cc``) check them; the bit-rate caps are DCI's
(``docs/dci-facts.md`` lists the sources). This is the one place these facts live: the
encoder's profiles, media's profile check, the mastering and MXF writers read them here.

Both profiles: one tile with image and tile origin (0, 0); 3 components (X'Y'Z') of 12 bits,
unsigned; 9/7 irreversible wavelet with the ICT; 32x32 code-blocks; precincts 128x128 in the
lowest resolution and 256x256 elsewhere; CPRL progression; a TLM marker; at most 250 Mbit/s
per frame and 200 Mbit/s per component (:data:`FRAME_BITRATE_SAFE`, 230 Mbit/s, is the level
that leaves room). They differ in what :class:`DCIProfile` holds.

Units: sizes in samples, bit rates in bits per second, byte caps in bytes per frame, frame
rates in frames per second, code-block and precinct sizes as exponents of two (A.6.1).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CODEBLOCK", "COMPONENT_BITRATE", "COMPONENTS", "DCI_2K", "DCI_4K", "DCIProfile",
    "FRAME_BITRATE", "FRAME_BITRATE_SAFE", "MCT", "PRECINCTS", "PRECISION", "PROFILES",
    "PROGRESSION", "bytes_per_frame", "profile", "profile_for",
]

#: Image bit rate cap, bits/s (DCI): 1,302,083 bytes per frame at 24 fps.
FRAME_BITRATE = 250_000_000
#: Per-component bit rate cap, bits/s: 1,041,666 bytes per component at 24 fps.
COMPONENT_BITRATE = 200_000_000
#: The safe image bit rate, bits/s: mastering's default and ``info``'s warning level (libdcp
#: ``verify.cc`` warns above it; not a DCI cap).  At 24 fps it is 1,197,916 codestream bytes
#: per frame.  Encryption adds bytes the rate control does not see: an encrypted triplet
#: (SMPTE ST 429-6 clause 7, 4-byte BER lengths as asdcplib writes them) holds, besides the
#: codestream, CryptographicContextLink 4+16, PlaintextOffset 4+8, SourceKey 4+16,
#: SourceLength 4+8, the EncryptedSourceValue's BER 4, IV 16 and check value 16, 1 to 16
#: bytes of CBC padding, and TrackFileID 4+16, SequenceNumber 4+8, MIC 4+20: at most 172
#: bytes a frame more than the clear KLV (whose key and length, 20 bytes, both have).  That
#: is 172 * 8 * 24 = 33,024 bit/s at 24 fps and 82,560 bit/s at 60 fps, so an encrypted
#: picture mastered at this rate stays under 230.1 Mbit/s: below ClairMeta's safe average of
#: 245 Mbit/s and asdcplib's 250 (at the 250 cap the same bytes make 250.03 Mbit/s, which
#: ``asdcp-info -r`` refuses).
FRAME_BITRATE_SAFE = 230_000_000
#: Components (X', Y', Z') and their precision, bits (unsigned).
COMPONENTS, PRECISION = 3, 12
#: COD's multiple component transform: 1, the ICT (with the 9/7 irreversible wavelet).
MCT = 1
#: Code-block width and height exponents: 2^5 = 32 samples.
CODEBLOCK = (5, 5)
#: Precinct exponents (both sides): the lowest resolution 2^7 = 128, every other 2^8 = 256.
PRECINCTS = (7, 8)
#: Progression order, SGcod value of T.800 Table A.16: 4 = CPRL.
PROGRESSION = 4


@dataclass(frozen=True)
class DCIProfile:
    """What sets DCI 2K and DCI 4K apart."""

    name: str                          #: the encoder's name: "dci-2k", "dci-4k"
    short: str                         #: the command line's and media's name: "2k", "4k"
    title: str                         #: "DCI 2K", "DCI 4K"
    Rsiz: int                          #: SIZ capabilities (T.800 Amd.1): 3 (2K), 4 (4K)
    container: tuple[int, int]         #: largest image, width x height in samples
    #: (name, (width, height)) of the image areas: "flat", "scope", "full" (the container)
    image_areas: tuple[tuple[str, tuple[int, int]], ...]
    levels: int                        #: decomposition levels (Bv2.1 wants exactly these)
    guard_bits: int                    #: QCD guard bits
    tile_parts: int                    #: one per component (4K: per component and POC step)
    #: POC progressions (RSpoc, CSpoc, LYEpoc, REpoc, CEpoc, Ppoc), A.6.6: 4K codes the 2K
    #: image (resolutions 0-5) of all components first, then resolution 6.
    pocs: tuple[tuple[int, int, int, int, int, int], ...]
    frame_rates: tuple[int, ...]       #: frames/s (2K: 2D and 3D; 4K: 2D only)

    def precincts(self) -> tuple[tuple[int, int], ...]:
        """(PPx, PPy) exponents per resolution, lowest first."""
        low, rest = PRECINCTS
        return ((low, low),) + ((rest, rest),) * self.levels


DCI_2K = DCIProfile(
    name="dci-2k", short="2k", title="DCI 2K", Rsiz=3, container=(2048, 1080),
    image_areas=(("flat", (1998, 1080)), ("scope", (2048, 858)), ("full", (2048, 1080))),
    levels=5, guard_bits=1, tile_parts=3, pocs=(), frame_rates=(24, 25, 30, 48, 50, 60))
DCI_4K = DCIProfile(
    name="dci-4k", short="4k", title="DCI 4K", Rsiz=4, container=(4096, 2160),
    image_areas=(("flat", (3996, 2160)), ("scope", (4096, 1716)), ("full", (4096, 2160))),
    levels=6, guard_bits=2, tile_parts=6, pocs=((0, 0, 1, 6, 3, 4), (6, 0, 1, 7, 3, 4)),
    frame_rates=(24, 25, 30))
#: The profiles by their encoder names.
PROFILES = {p.name: p for p in (DCI_2K, DCI_4K)}


def profile(name: str) -> DCIProfile:
    """The profile called ``name``: "dci-2k" / "dci-4k", or the short "2k" / "4k" of the
    command line and media (the one mapping between the two spellings); ValueError else."""
    for p in PROFILES.values():
        if name in (p.name, p.short):
            return p
    raise ValueError(f"no DCI profile {name!r}")


def profile_for(width: int, Rsiz: int | None = None) -> DCIProfile:
    """The profile a picture ``width`` samples wide is held to: 4K when ``Rsiz`` says so or the
    picture is wider than the 2K container, else 2K."""
    return DCI_4K if Rsiz == DCI_4K.Rsiz or width > DCI_2K.container[0] else DCI_2K


def bytes_per_frame(bitrate: int, fps) -> int:
    """floor(``bitrate`` / (8 ``fps``)): the bytes a frame may take at ``bitrate`` bits/s."""
    return int(bitrate / (8 * fps))
