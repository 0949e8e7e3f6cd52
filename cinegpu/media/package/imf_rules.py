"""A check of an IMF package against the Application #2E rules (SMPTE ST 2067-21) as Netflix's
photon validator enforces them, without being photon: its rules re-stated, each finding naming
the clause and the photon class it follows.

What is checked, from the CPL and the image track's first frame:

    identification   the CPL's ApplicationIdentification against the picture its image
                     essence descriptor describes (colour model, colour system, bit depth from
                     J2CLayout, sampling, quantisation range, size, rate): ST 2067-21:2016 via
                     photon ``Application2Composition`` then ``Application2ExtendedComposition``;
                     ST 2067-21:2021/2023 Table 3 via ``Application2E2021``
                     (:func:`cinegpu.decode.codestream.imf.app_2e_2016_allows`, ``..._2021_allows``)
    coding label     the picture coding UL: an IMF 2K/4K (or broadcast) Part-1 profile label under
                     2016; under 2021 also the HTJ2K label, and the 2K/4K label against the size
                     (``Application2E2021.isValidJ2KProfile``)
    HTJ2K header     ST 2067-21:2023 Annex I (``Application2E2021.validateHTConstraints``): zero
                     offsets, one tile, 1..4 components of one depth 8..16 bits, sub-sampling,
                     CAP (Pcap 2^17, one Ccap15 with bits 12..15 clear, HTREV only with the 5/3),
                     code-block style 0x40, levels 1..5 (2K) / 6 (4K), one layer, code-blocks
                     32..128 wide and 32..64 high, precincts 128 then 256, parameter B against
                     :func:`~cinegpu.decode.codestream.imf.ht_b_limit` (warning; error above 21),
                     RPCL (warning)
    descriptor       the sub-descriptor's Rsiz, COD, QCD and CAP against the track's first
                     codestream (ST 422: they repeat the main header)

Findings are :class:`Finding` (level "error" or "warning", where, what, rule). Errors are what
photon reports as errors (fatal or not); warnings what it warns about.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from lxml import etree

from cinegpu.decode.codestream import imf
from cinegpu.decode.codestream import markers as M

from cinegpu.media.errors import MediaError

__all__ = ["Finding", "check_imf_package", "errors"]

#: photon ``Colorimetry``: (primaries UL byte 14, transfer UL byte 14) -> colour system.
#: Primaries 04010101.03xx: 02 PAL, 01 SMPTE 170M, 03 Rec. 709, 04 Rec. 2020, 06 P3D65;
#: transfer 04010101.01xx: 02 Rec. 709, 08 xvYCC, 09 Rec. 2020, 0A ST 2084, 0B HLG.
COLOURS = {(0x02, 0x02): 1, (0x01, 0x02): 2, (0x03, 0x02): 3, (0x03, 0x08): 4, (0x04, 0x09): 5,
           (0x06, 0x0A): 6, (0x04, 0x0A): 7, (0x04, 0x0B): 8}
#: ST 2067-21 picture coding labels: 04010202.0301 then family, level (photon ``JPEG2000``).
J2K_NODE = bytes.fromhex("0401020203010000")
HTJ2K_FAMILY = 0x08
#: photon ``JPEG2000.isIMF2KProfile``/``isIMF4KProfile`` lossy (M, S >= 1) and reversible bytes.
IMF_LOSSY_LEVELS = {0x03, 0x05, 0x07, 0x09, 0x0A, 0x0C, 0x0D, 0x0E, 0x10, 0x11, 0x12, 0x13}
IMF_4K_ONLY_LEVELS = {0x15, 0x16, 0x17, 0x18, 0x19, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20}
IMF_REV_LEVELS = {0x02, 0x04, 0x06, 0x08, 0x0B, 0x0F}
BROADCAST_LEVELS = set(range(0x11, 0x18))
CLAUSE_2016 = "ST 2067-21:2016 (photon Application2ExtendedComposition)"
CLAUSE_2021 = "ST 2067-21:2023 Table 3 (photon Application2E2021.validateImageCharacteristics)"
CLAUSE_HT = "ST 2067-21:2023 Annex I (photon Application2E2021.validateHTConstraints)"


@dataclass(frozen=True)
class Finding:
    """One rule broken: ``level`` "error" or "warning", ``where`` (file and item), ``what``
    happened, and the ``rule`` (clause, photon class) it follows."""

    level: str
    where: str
    what: str
    rule: str

    def __str__(self) -> str:
        return f"{self.level}: {self.where}: {self.what} [{self.rule}]"


def errors(findings) -> list[Finding]:
    """The findings of level "error"."""
    return [f for f in findings if f.level == "error"]


# -- reading the CPL ------------------------------------------------------------------------------
def _local(el) -> str:
    return etree.QName(el).localname


def _find(el, name):
    """The first descendant of ``el`` whose local name is ``name``, or None."""
    for d in el.iter():
        if isinstance(d.tag, str) and _local(d) == name:
            return d
    return None


def _text(el, name, cast=str):
    d = _find(el, name) if el is not None else None
    if d is None or d.text is None:
        return None
    try:
        return cast(d.text.strip())
    except ValueError:
        return None


def _ul_bytes(text: str | None) -> bytes | None:
    """A UL from its ``urn:smpte:ul:`` form (dots optional)."""
    if not text:
        return None
    hexed = text.rsplit(":", 1)[-1].replace(".", "")
    try:
        ul = bytes.fromhex(hexed)
    except ValueError:
        return None
    return ul if len(ul) == 16 else None


@dataclass(frozen=True)
class Picture:
    """What the image essence descriptor says (photon ``CompositionImageEssenceDescriptorModel``)."""

    ycbcr: bool
    width: int
    height: int
    rate: Fraction
    colour: int                 #: photon colour system, 0: unknown
    bits: int                   #: from J2CLayout (0: none)
    sampling: int               #: chroma horizontal subsampling (1 for R'G'B')
    narrow: bool | None         #: quantisation QE1 (True), QE2 (False), None: neither
    coding: bytes | None        #: PictureCompression UL
    full_frame: bool
    sub: etree._Element | None  #: the JPEG2000SubDescriptor


def read_picture(descriptor) -> Picture:
    """The :class:`Picture` of an ``RGBADescriptor`` or ``CDCIDescriptor`` RegXML element."""
    ycbcr = _local(descriptor) == "CDCIDescriptor"
    rate = _text(descriptor, "SampleRate")
    try:
        rate = Fraction(rate.replace(" ", "")) if rate else Fraction(0)
    except (ValueError, ZeroDivisionError):
        rate = Fraction(0)
    prim = _ul_bytes(_text(descriptor, "ColorPrimaries"))
    trans = _ul_bytes(_text(descriptor, "TransferCharacteristic"))
    colour = COLOURS.get((prim[13], trans[13]), 0) if prim and trans else 0
    sub = _find(descriptor, "JPEG2000SubDescriptor")
    bits = 0
    layout = _find(sub, "J2CLayout") if sub is not None else None
    if layout is not None:
        sizes = [int(c.text) for c in layout.iter() if isinstance(c.tag, str)
                 and _local(c) == "ComponentSize" and c.text and c.text.strip() != "0"]
        bits = sizes[0] if sizes and len(set(sizes)) == 1 else 0
    if ycbcr:
        lo, hi = _text(descriptor, "BlackRefLevel", int), _text(descriptor, "WhiteRefLevel", int)
        sampling = _text(descriptor, "HorizontalSubsampling", int) or 0
    else:
        lo, hi = _text(descriptor, "ComponentMinRef", int), _text(descriptor, "ComponentMaxRef", int)
        sampling = 1
    narrow = None
    if bits and lo is not None and hi is not None:
        if (lo, hi) == (16 << (bits - 8), 235 << (bits - 8)):
            narrow = True
        elif (lo, hi) == (0, (1 << bits) - 1):
            narrow = False
    return Picture(ycbcr, _text(descriptor, "StoredWidth", int) or -1,
                   _text(descriptor, "StoredHeight", int) or -1, rate, colour, bits, sampling,
                   narrow, _ul_bytes(_text(descriptor, "PictureCompression")),
                   _text(descriptor, "FrameLayout") == "FullFrame", sub)


# -- the rules ------------------------------------------------------------------------------------
def _identification_findings(apps: list[str], pic: Picture, where: str) -> list[Finding]:
    """The ApplicationIdentification(s) against the picture (photon
    ``ApplicationCompositionFactory`` and the application classes)."""
    out = []
    if not apps:
        return [Finding("error", where, "no ApplicationIdentification",
                        "ST 2067-2 (photon ApplicationCompositionFactory)")]
    if pic.colour == 0:
        out.append(Finding("error", where, "colour primaries and transfer characteristic are "
                           "not a known colour system", "photon Application2Composition."
                           "validateGenericPictureEssenceDescriptor"))
    if pic.narrow is None or (pic.ycbcr and not pic.narrow):
        out.append(Finding("error", where, f"component range is not QE.1/QE.2 at {pic.bits} bits"
                           f"{' (Y' + chr(39) + 'CbCr must be narrow range)' if pic.ycbcr else ''}",
                           "ST 2067-21 (photon Colorimetry.Quantization)"))
    if not pic.full_frame:
        out.append(Finding("error", where, "FrameLayout is not FullFrame (progressive only here)",
                           "ST 2067-21 Table 3"))
    args = (pic.ycbcr, pic.sampling, pic.bits, pic.width, pic.height, pic.rate, pic.colour)
    desc = (f"{pic.bits}-bit {'Y' + chr(39) + 'CbCr' if pic.ycbcr else 'R' + chr(39) + 'G' + chr(39) + 'B' + chr(39)} "
            f"{'4:2:2' if pic.sampling == 2 else '4:4:4'} colour {pic.colour}, "
            f"{pic.width}x{pic.height} at {pic.rate} fps")
    ht = pic.coding is not None and pic.coding[14] == HTJ2K_FAMILY
    for app in apps:
        if app == imf.APP_2E_2016:
            if not imf.app_2e_2016_allows(*args):
                out.append(Finding("error", where, f"{desc} is not allowed under {app}", CLAUSE_2016))
            if ht:
                out.append(Finding("error", where, f"the HTJ2K picture coding label needs {imf.APP_2E_2021}, "
                                   f"not {app}", CLAUSE_2016 + ".validateImageCharacteristics"))
        elif app == imf.APP_2E_2021:
            if not imf.app_2e_2021_allows(*args):
                out.append(Finding("error", where, f"{desc} is not allowed under {app}", CLAUSE_2021))
        else:
            out.append(Finding("warning", where, f"ApplicationIdentification {app} is not App #2E: "
                               "not checked here", "photon ApplicationCompositionFactory"))
    return out


def _coding_findings(pic: Picture, where: str) -> list[Finding]:
    """The picture coding label against the size (photon ``JPEG2000`` and
    ``Application2E2021.isValidJ2KProfile``)."""
    ul = pic.coding
    rule = "ST 2067-21 5.4 (photon JPEG2000, Application2E2021.isValidJ2KProfile)"
    if ul is None or ul[4:8] == b"" or bytes(ul[8:14]) != J2K_NODE[:6]:
        return [Finding("error", where, "PictureCompression is not a JPEG 2000 label", rule)]
    family, level = ul[14], ul[15]
    w, h = pic.width, pic.height
    if family == HTJ2K_FAMILY and level == 0x01:
        return []
    if family == 0x02 and level in IMF_LOSSY_LEVELS or family == 0x05 and level in IMF_REV_LEVELS:
        ok = 0 < w <= 2048 and 0 < h <= 1556
    elif family == 0x03 and level in IMF_LOSSY_LEVELS | IMF_4K_ONLY_LEVELS or \
            family == 0x06 and level in IMF_REV_LEVELS | {0x14, 0x1A}:
        ok = 2048 < w <= 4096 and 0 < h <= 3112
    elif family == 0x01 and level in BROADCAST_LEVELS:
        ok = 0 < w <= 3840 and 0 < h <= 2160
    else:
        return [Finding("error", where, f"picture coding label {ul.hex()} is no IMF profile", rule)]
    return [] if ok else [Finding("error", where, f"{w}x{h} does not fit the profile of label "
                                  f"{ul.hex()} (2K: up to 2048x1556; 4K: wider than 2048)", rule)]


@dataclass(frozen=True)
class Header:
    """The J2K header parameters photon reads (``J2KHeaderParameters``): SIZ fields, the COD,
    QCD and CAP bodies."""

    Rsiz: int
    size: tuple[int, int, int, int, int, int, int, int]   #: Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, ...
    components: tuple[tuple[int, int, int], ...]        #: (Ssiz, XRsiz, YRsiz)
    cod: bytes
    qcd: bytes
    cap: bytes | None


def header_of(codestream: bytes) -> Header:
    """The :class:`Header` of a codestream's main header."""
    from cinegpu.decode.codestream.header import parse_codestream
    cs = parse_codestream(codestream, main_only=True)
    s = cs.siz
    comps = tuple(zip(s.Ssiz, s.XRsiz, s.YRsiz))
    return Header(s.Rsiz, (s.Xsiz, s.Ysiz, s.XOsiz, s.YOsiz, s.XTsiz, s.YTsiz, s.XTOsiz, s.YTOsiz),
                  comps, cs.segment_body(M.COD) or b"", cs.segment_body(M.QCD) or b"",
                  cs.segment_body(M.CAP))


def header_from_sub(sub) -> Header | None:
    """The :class:`Header` the JPEG2000SubDescriptor (RegXML) carries, or None where items miss."""
    try:
        size = tuple(_text(sub, n, int) for n in ("Xsiz", "Ysiz", "XOsiz", "YOsiz", "XTsiz",
                                                  "YTsiz", "XTOsiz", "YTOsiz"))
        rsiz = _text(sub, "Rsiz", int)
        comps = tuple((int(_text(c, "Ssiz")), int(_text(c, "XRSiz")), int(_text(c, "YRSiz")))
                      for c in sub.iter() if isinstance(c.tag, str)
                      and _local(c) == "J2KComponentSizing")
        cod = bytes.fromhex(_text(sub, "CodingStyleDefault") or "")
        qcd = bytes.fromhex(_text(sub, "QuantizationDefault") or "")
    except (TypeError, ValueError):
        return None
    if rsiz is None or None in size:
        return None
    cap = None
    caps = _find(sub, "J2KExtendedCapabilities")
    if caps is not None:
        pcap = _text(caps, "Pcap", int)
        words = [int(c.text) for c in caps.iter() if isinstance(c.tag, str)
                 and _local(c) == "UInt16" and c.text]
        if pcap is not None:
            cap = struct.pack(">I", pcap) + b"".join(struct.pack(">H", w) for w in words)
    return Header(rsiz, size, comps, cod, qcd, cap)


def ht_findings(h: Header, where: str) -> list[Finding]:
    """ST 2067-21:2023 Annex I on an HTJ2K codestream's main header (photon
    ``Application2E2021.validateHTConstraints``)."""
    out = []

    def err(what, level="error"):
        out.append(Finding(level, where, what, CLAUSE_HT))

    X, Y, XO, YO, XT, YT, XTO, YTO = h.size
    if XO or YO or XTO or YTO:
        err("XOsiz, YOsiz, XTOsiz or YTOsiz is not 0")
    if XT < X or YT < Y:
        err("more than one tile (XTsiz < Xsiz or YTsiz < Ysiz)")
    c = h.components
    if not 1 <= len(c) <= 4:
        err(f"{len(c)} components (1..4)")
        return out
    if c[0][1] != 1 or (len(c) > 3 and c[3][1] != 1):
        err("component 1 (or 4) is horizontally sub-sampled")
    if len(c) > 2 and not (c[1][1] == c[2][1] == 1 or c[1][1] == c[2][1] == 2):
        err("components 2 and 3 are neither 4:4:4 nor 4:2:2")
    if any(dy != 1 for _, _, dy in c):
        err("a component is vertically sub-sampled")
    if not 7 <= c[0][0] <= 15:
        err(f"bit depth {c[0][0] % 128 + 1} (8..16, unsigned)")
    if any(s != c[0][0] for s, _, _ in c):
        err("components of different bit depths")
    cap = h.cap
    if cap is None or len(cap) != 6 or struct.unpack(">I", cap[:4])[0] != 1 << 17:
        err("no CAP marker with Pcap 2^17 (Part 15 only) and one Ccap word")
        return out
    ccap15 = struct.unpack(">H", cap[4:6])[0]
    if ccap15 & 0xF000:
        err(f"Ccap15 0x{ccap15:04x}: bits 12..15 are not 0")
    if len(h.cod) < 10:
        err("no COD marker")
        return out
    scod, order, layers, mct, levels, xcb, ycb, style, wavelet = struct.unpack(">BBHBBBBBB", h.cod[:10])
    precincts = h.cod[10:]
    reversible = wavelet == 1
    if style != 0x40:
        err(f"code-block style 0x{style:02x} (0x40: HT only)")
    if order != 2:
        err(f"progression order {order} is not RPCL", "warning")
    longest = max(X, Y)
    if levels == 0 or (longest <= 2048 and levels > 5) or (longest <= 4096 and levels > 6) or \
            (longest <= 8192 and levels > 7):
        err(f"{levels} decomposition levels for {X}x{Y}")
    if layers != 1:
        err(f"{layers} quality layers (1)")
    if not 5 <= ycb + 2 <= 6 or not 5 <= xcb + 2 <= 7:
        err(f"code-blocks 2^{xcb + 2} x 2^{ycb + 2} (32..128 wide, 32..64 high)")
    if not ccap15 & 0x20 and not reversible:
        err("HTREV signalled (Ccap15 bit 5 clear) with the 9/7 irreversible wavelet")
    if not scod & 1 or not precincts or precincts[0] != 0x77 or any(p != 0x88 for p in precincts[1:]):
        err("precincts are not 128x128 in resolution 0 and 256x256 above")
    B = (ccap15 & 0x1F) + 8                       # as photon reads MAGB
    limit = imf.ht_b_limit(c[0][0] + 1, reversible, mct == 1, levels)
    if B > 21:
        err(f"parameter B {B} > 21")
    elif B > limit:
        err(f"parameter B {B} > {limit}, the bound for {c[0][0] + 1} bits", "warning")
    return out


def _track_path(root: Path, cpl, track_id: str | None) -> Path | None:
    """The image track file: by TrackFileId through the ASSETMAP, else the one IMAGE_/VIDEO_ MXF."""
    assetmap = root / "ASSETMAP.xml"
    if track_id and assetmap.is_file():
        am = etree.parse(str(assetmap)).getroot()
        for asset in am.iter():
            if isinstance(asset.tag, str) and _local(asset) == "Asset" and \
                    _text(asset, "Id") == track_id:
                path = _text(asset, "Path")
                if path and (root / path).is_file():
                    return root / path
    found = sorted(root.glob("IMAGE_*.mxf")) + sorted(root.glob("VIDEO_*.mxf"))
    return found[0] if len(found) == 1 else None


def _first_codestream(path: Path) -> bytes:
    from cinegpu.media.source import open_source
    src = open_source(path)
    try:
        return src.frame(0)
    finally:
        src.close()


def check_imf_package(folder) -> list[Finding]:
    """Check the IMF package at ``folder`` (every CPL in it) against the App #2E rules above;
    [] when it keeps them. MediaError where there is no CPL."""
    root = Path(folder)
    cpls = []
    for p in sorted(root.glob("*.xml")):
        try:
            doc = etree.parse(str(p)).getroot()
        except etree.XMLSyntaxError:
            continue
        if _local(doc) == "CompositionPlaylist":
            cpls.append((p, doc))
    if not cpls:
        raise MediaError(root, "no CompositionPlaylist in the folder")
    out: list[Finding] = []
    for path, cpl in cpls:
        out += _check_cpl(root, path, cpl)
    return out


def _check_cpl(root: Path, path: Path, cpl) -> list[Finding]:
    apps = [e.text.strip() for e in cpl.iter() if isinstance(e.tag, str)
            and _local(e) == "ApplicationIdentification" and e.text]
    apps = [a for text in apps for a in text.split()]
    descriptors = [d for d in cpl.iter() if isinstance(d.tag, str)
                   and _local(d) in ("RGBADescriptor", "CDCIDescriptor")]
    where = path.name
    if not descriptors:
        return [Finding("error", where, "no image essence descriptor (RGBA or CDCI)",
                        "ST 2067-21 (photon CompositionImageEssenceDescriptorModel)")]
    pic = read_picture(descriptors[0])
    out = _identification_findings(apps, pic, where)
    out += _coding_findings(pic, where)
    ht = pic.coding is not None and pic.coding[14] == HTJ2K_FAMILY
    sub = header_from_sub(pic.sub) if pic.sub is not None else None
    if ht:
        if sub is None:
            out.append(Finding("error", where, "missing or incomplete JPEG2000SubDescriptor",
                               CLAUSE_HT))
        else:
            out += ht_findings(sub, f"{where}: JPEG2000SubDescriptor")
    seq = _find(cpl, "MainImageSequence")
    track = _track_path(root, cpl, _text(seq, "TrackFileId") if seq is not None else None)
    if track is None:
        return out
    try:
        first = header_of(_first_codestream(track))
    except (MediaError, ValueError) as exc:
        return out + [Finding("error", track.name, f"first frame unreadable: {exc}", "ST 2067-5")]
    where_cs = f"{track.name}: frame 0"
    if ht:
        out += ht_findings(first, where_cs)
    if sub is not None:
        for name in ("Rsiz", "size", "components", "cod", "qcd", "cap"):
            if getattr(sub, name) != getattr(first, name):
                out.append(Finding("error", f"{where}: JPEG2000SubDescriptor",
                                   f"{name} differs from the track's first codestream",
                                   "ST 422 (J2K sub-descriptor repeats the main header)"))
    return out
