"""Writing IMF picture track files: MXF OP-1a, frame-wrapped JPEG 2000 (ST 2067-5, ST 2067-21).

The layout is :class:`.mxf_write.TrackWriter`'s (closed, complete header written last, one body
partition of essence with BodySID 1, the VBR index table in the footer partition, which holds
no essence, and the random index pack), with what IMF changes, as the IMF packages of other
tools (``photon-imf-*`` in the shared samples: DaVinci Resolve through asdcplib) have it:

    operational pattern     OP-1a (ST 378), MXF version 1.3
    essence container       JPEG 2000 picture elements, progressive frame wrapping P1
                            (ST 422: ``0d010301.020c0600``), the only label
    descriptor              RGBAEssenceDescriptor with the picture coding label of the IMF
                            profile and level (ST 2067-21 5.4, from Rsiz), the colour primaries
                            and transfer characteristic (Rec. ITU-R BT.709 here), R, G, B of the
                            codestream's precision in PixelLayout, full-range Min/MaxRef; for
                            Y'CbCr frames (no component transform) a CDCIEssenceDescriptor:
                            ComponentDepth, Horizontal/VerticalSubsampling from the chroma's
                            XRsiz/YRsiz, co-sited, narrow-range Black/WhiteRefLevel and
                            ColorRange, the BT.709 coding equations; J2CLayout Y', Cb, Cr
    sub-descriptors         JPEG2000PictureSubDescriptor (ST 422) with J2CLayout (and for
                            HTJ2K J2KExtendedCapabilities: the CAP marker's Pcap and Ccap, as
                            ST 422:2019 and the photon HTJ2K sample have them), and the
                            ContainerConstraintsSubDescriptor (ST 379-2) ST 2067-2 asks for

:meth:`IMFPictureTrackWriter.essence_descriptor` gives the same descriptor as RegXML
(ST 2001-1) for the CPL's EssenceDescriptorList (ST 2067-3 6.1.6), element names and
namespaces as photon writes them.
"""

from __future__ import annotations

import struct
import uuid
from fractions import Fraction

from lxml import etree

from cinegpu.decode.codestream import imf

from cinegpu.media.images.colour import ycbcr_levels
from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.write import J2K_PRIMER, JP2K_SUBDESCRIPTOR, RGBA_DESCRIPTOR, SUBDESCRIPTORS_TAG, PictureTrackWriter, _batch, _rational, local_set

__all__ = ["IMFPictureTrackWriter", "JP2K_P1_WRAPPED", "OP_1A", "coding_label"]

OP_1A = bytes.fromhex("060e2b34040101010d01020101010100")
#: ST 422 JPEG 2000 essence container, progressive frame wrapping (P1), as ST 2067-21 asks.
JP2K_P1_WRAPPED = bytes.fromhex("060e2b340401010d0d010301020c0600")
#: Rec. ITU-R BT.709 primaries and transfer characteristic (ST 2067-21 Table 5 and 6 ULs).
BT709_PRIMARIES = bytes.fromhex("060e2b34040101060401010103030000")
BT709_TRANSFER = bytes.fromhex("060e2b34040101010401010101020000")
CONTAINER_CONSTRAINTS = 0x67
#: Static tags IMF adds to the primer (ST 377-1 Annex; ULs as asdcplib's dictionary has them).
IMF_PRIMER = {
    0x3204: "060e2b34010101010401050107000000", 0x3205: "060e2b34010101010401050108000000",
    0x320d: "060e2b34010101020401030205000000", 0x3210: "060e2b34010101020401020101010200",
    0x3219: "060e2b34010101090401020101060100", 0x3405: "060e2b34010101050401040401000000",
    0xfff1: "060e2b340101010e040106030e000000",     # J2CLayout (ST 422:2014)
    0xfff0: "060e2b340101010e040106030f000000",     # J2KExtendedCapabilities (ST 422:2019)
    # CDCIEssenceDescriptor (Y'CbCr) items and the coding equations
    0x3301: "060e2b3401010102040105030a000000", 0x3302: "060e2b34010101010401050105000000",
    0x3303: "060e2b34010101010401050106000000", 0x3304: "060e2b34010101010401050303000000",
    0x3305: "060e2b34010101010401050304000000", 0x3306: "060e2b34010101020401050305000000",
    0x3308: "060e2b34010101020401050110000000", 0x321a: "060e2b34010101020401020101030100",
}
CDCI_DESCRIPTOR = 0x28
#: Rec. ITU-R BT.709 Y'CbCr coding equations (the CodingEquations value)
BT709_CODING_EQUATIONS = bytes.fromhex("060e2b34040101010401010102020000")
YCBCR_CODES = (("CompLuma", 0x59), ("CompColorDifferenceU", 0x55),
               ("CompColorDifferenceV", 0x56))
J2C_LAYOUT_TAG, J2K_CAPABILITIES_TAG = 0xFFF1, 0xFFF0
#: The picture coding label of HTJ2K in IMF (ST 2067-21:2020; RP 224 "HTJ2K generic"), as
#: the photon HTJ2K sample's descriptor has it.
HTJ2K_CODING = bytes.fromhex("060e2b340401010d0401020203010801")
RGB_CODES = (("CompRed", 0x52), ("CompGreen", 0x47), ("CompBlue", 0x42))

# RegXML namespaces (ST 2001-1 with the ST 335 elements, ST 395 groups, ST 2003 types).
NS_GROUPS = "http://www.smpte-ra.org/reg/395/2014/13/1/aaf"
NS_ELEMENTS = "http://www.smpte-ra.org/reg/335/2012"
NS_TYPES = "http://www.smpte-ra.org/reg/2003/2012"
REGXML_NSMAP = {"r0": NS_GROUPS, "r1": NS_ELEMENTS, "r2": NS_TYPES}


def coding_label(Rsiz: int) -> bytes:
    """The picture coding UL of an IMF codestream (ST 2067-21; RP 224's
    ``04010202.0301FFLL``: FF 02 for the 2K family, 03 for 4K, LL the level pair; HTJ2K,
    Rsiz :data:`imf.HT_RSIZ`: :data:`HTJ2K_CODING`)."""
    if Rsiz == imf.HT_RSIZ:
        return HTJ2K_CODING
    base = Rsiz & 0xFF00
    family = next((p.ul_family for p in imf.PROFILES.values() if p.base == base), None)
    if family is None:
        raise MediaError(None, f"Rsiz 0x{Rsiz:04x} is not an IMF 2K or 4K lossy profile")
    return bytes.fromhex("060e2b340401010d04010202030103")[:14] + bytes(
        [family, imf.coding_label_byte(Rsiz)])


def _ul_urn(ul: bytes) -> str:
    return "urn:smpte:ul:" + ul.hex(".", 4)


class IMFPictureTrackWriter(PictureTrackWriter):
    """Write frames (IMF JPEG 2000 codestreams, Rsiz of an IMF profile) into an OP-1a track
    file for ST 2067-21. As :class:`.mxf_write.PictureTrackWriter`; the picture is R'G'B' or
    Y'CbCr 4:4:4/4:2:2 in Rec. ITU-R BT.709 (the only colour space written so far)."""

    CONTAINERS = (JP2K_P1_WRAPPED,)
    OPERATIONAL_PATTERN = OP_1A
    MXF_VERSION = 0x0103
    TRACK_NAME = "Image Track"
    PACKAGE_NAME = "File Package: SMPTE ST 422 / ST 2067-21 frame wrapping of JPEG 2000"
    DYNAMIC_TAGS = {**J2K_PRIMER, **IMF_PRIMER}

    def __init__(self, path, **kwargs):
        self.instance_ids: dict[str, uuid.UUID] = {}
        super().__init__(path, **kwargs)

    def write(self, codestream: bytes, header=None) -> None:
        super().write(codestream, header)
        if len(self.offsets) == 1:
            coding_label(self.header.Rsiz)    # MediaError now for a codestream IMF cannot carry

    @property
    def ycbcr(self) -> bool:
        """Whether the frames are Y'CbCr: three components without a component transform (COD's
        MCT byte 0), as the encoder writes Y'CbCr for IMF; R'G'B' frames carry the ICT/RCT."""
        h = self.header
        return h is not None and len(h.components) == 3 and len(h.cod) > 4 and h.cod[4] == 0

    def _codes(self) -> tuple:
        return YCBCR_CODES if self.ycbcr else RGB_CODES

    def _layout(self) -> bytes:
        bits = self.header.siz.Ssiz[0] % 128 + 1
        return b"".join(bytes([code, bits]) for _, code in self._codes()) + bytes(10)

    def _picture_items(self, ids: dict[str, bytes], n: int) -> list[tuple[int, bytes]]:
        """The GenericPictureEssenceDescriptor items both descriptors share."""
        h = self.header
        u32, u64 = (lambda v: struct.pack(">I", v)), (lambda v: struct.pack(">Q", v))
        w, ht = h.width, h.height
        aspect = Fraction(w, ht)
        return [
            (0x3C0A, ids["desc"]),
            (SUBDESCRIPTORS_TAG, _batch([ids["sub"], ids["constraints"]], 16)),
            (0x3006, u32(2)), (0x3001, _rational(self.edit_rate)), (0x3002, u64(n)),
            (0x3004, JP2K_P1_WRAPPED), (0x320C, b"\x00"),
            (0x3203, u32(w)), (0x3202, u32(ht)), (0x3205, u32(w)), (0x3204, u32(ht)),
            (0x3209, u32(w)), (0x3208, u32(ht)),
            (0x320E, struct.pack(">ii", aspect.numerator, aspect.denominator)),
            (0x320D, _batch([u32(0), u32(0)], 4)),
            (0x3201, coding_label(h.Rsiz)), (0x3219, BT709_PRIMARIES),
            (0x3210, BT709_TRANSFER)]

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The RGBAEssenceDescriptor (R'G'B') or CDCIEssenceDescriptor (Y'CbCr: component depth,
        subsampling, co-sited chroma, narrow-range levels, BT.709 coding equations), its
        JPEG2000PictureSubDescriptor (with J2CLayout) and a ContainerConstraintsSubDescriptor."""
        h = self.header
        assert h is not None
        u32 = lambda v: struct.pack(">I", v)   # noqa: E731
        ids["sub"], ids["constraints"] = uuid.uuid4().bytes, uuid.uuid4().bytes
        self.instance_ids = {k: uuid.UUID(bytes=ids[k]) for k in ("desc", "sub", "constraints")}
        bits = h.siz.Ssiz[0] % 128 + 1
        if self.ycbcr:
            black, white, span = ycbcr_levels(bits)
            descriptor = local_set(CDCI_DESCRIPTOR, self._picture_items(ids, n) + [
                (0x321A, BT709_CODING_EQUATIONS), (0x3301, u32(bits)),
                (0x3302, u32(h.siz.XRsiz[1])), (0x3308, u32(h.siz.YRsiz[1])),
                (0x3303, b"\x00"), (0x3304, u32(black)), (0x3305, u32(white)),
                (0x3306, u32(span))])
        else:
            descriptor = local_set(RGBA_DESCRIPTOR, self._picture_items(ids, n) + [
                (0x3406, u32((1 << bits) - 1)), (0x3407, u32(0)), (0x3405, b"\x00"),
                (0x3401, self._layout())])
        return [
            descriptor,
            local_set(JP2K_SUBDESCRIPTOR, [(0x3C0A, ids["sub"])] + self._j2k_items(h)
                      + [(J2C_LAYOUT_TAG, self._layout())] + self._capabilities()),
            local_set(CONTAINER_CONSTRAINTS, [(0x3C0A, ids["constraints"])]),
        ]

    def _capabilities(self) -> list[tuple[int, bytes]]:
        """J2KExtendedCapabilities (ST 422:2019): Pcap, then the Ccap words as an array,
        from the codestream's CAP marker; none without one."""
        pcap, ccap = self._cap()
        if pcap is None:
            return []
        return [(J2K_CAPABILITIES_TAG, struct.pack(">I", pcap)
                 + _batch([struct.pack(">H", c) for c in ccap], 2))]

    def _cap(self) -> tuple[int | None, list[int]]:
        cap = self.header.cap if self.header is not None else None
        if cap is None or len(cap) < 4 or len(cap) % 2:
            return None, []
        return (struct.unpack(">I", cap[:4])[0],
                [struct.unpack(">H", cap[i:i + 2])[0] for i in range(4, len(cap), 2)])

    # -- RegXML for the CPL --
    def essence_descriptor(self) -> etree._Element:
        """The descriptor written into the file, as RegXML (an ``r0:RGBADescriptor`` or
        ``r0:CDCIDescriptor`` element for the CPL's EssenceDescriptor); call after :meth:`close`."""
        h = self.header
        if h is None or not self.instance_ids:
            raise MediaError(self.path, "the track file is not finished")
        bits = h.siz.Ssiz[0] % 128 + 1
        w, ht = h.width, h.height
        aspect = Fraction(w, ht)

        def el(parent, ns, tag, text=None):
            e = etree.SubElement(parent, f"{{{ns}}}{tag}")
            if text is not None:
                e.text = str(text)
            return e

        def layout(parent, tag):
            lay = el(parent, NS_ELEMENTS, tag)
            for name, _ in self._codes():
                c = el(lay, NS_TYPES, "RGBAComponent")
                el(c, NS_TYPES, "Code", name)
                el(c, NS_TYPES, "ComponentSize", bits)
            for _ in range(5):
                c = el(lay, NS_TYPES, "RGBAComponent")
                el(c, NS_TYPES, "Code", "CompNull")
                el(c, NS_TYPES, "ComponentSize", 0)

        if self.ycbcr:
            black, white, span = ycbcr_levels(bits)
            rgba = etree.Element(f"{{{NS_GROUPS}}}CDCIDescriptor", nsmap=REGXML_NSMAP)
            for tag, value in (("ComponentDepth", bits), ("HorizontalSubsampling", h.siz.XRsiz[1]),
                               ("VerticalSubsampling", h.siz.YRsiz[1]), ("ColorSiting", "CoSiting"),
                               ("BlackRefLevel", black), ("WhiteRefLevel", white),
                               ("ColorRange", span),
                               ("CodingEquations", _ul_urn(BT709_CODING_EQUATIONS))):
                el(rgba, NS_ELEMENTS, tag, value)
        else:
            rgba = etree.Element(f"{{{NS_GROUPS}}}RGBADescriptor", nsmap=REGXML_NSMAP)
            layout(rgba, "PixelLayout")
            el(rgba, NS_ELEMENTS, "ComponentMinRef", 0)
            el(rgba, NS_ELEMENTS, "ComponentMaxRef", (1 << bits) - 1)
            el(rgba, NS_ELEMENTS, "ScanningDirection", "ScanningDirection_LeftToRightTopToBottom")
        el(rgba, NS_ELEMENTS, "LinkedTrackID", 2)
        el(rgba, NS_ELEMENTS, "InstanceID", f"urn:uuid:{self.instance_ids['desc']}")
        vlm = el(rgba, NS_ELEMENTS, "VideoLineMap")
        el(vlm, NS_TYPES, "Int32", 0)
        el(vlm, NS_TYPES, "Int32", 0)
        for tag, value in (("StoredWidth", w), ("StoredHeight", ht), ("SampledWidth", w),
                           ("SampledHeight", ht), ("DisplayWidth", w), ("DisplayHeight", ht)):
            el(rgba, NS_ELEMENTS, tag, value)
        el(rgba, NS_ELEMENTS, "FrameLayout", "FullFrame")
        el(rgba, NS_ELEMENTS, "ImageAspectRatio", f"{aspect.numerator}/{aspect.denominator}")
        el(rgba, NS_ELEMENTS, "SampleRate",
           f"{self.edit_rate.numerator}/{self.edit_rate.denominator}")
        el(rgba, NS_ELEMENTS, "TransferCharacteristic", _ul_urn(BT709_TRANSFER))
        el(rgba, NS_ELEMENTS, "ColorPrimaries", _ul_urn(BT709_PRIMARIES))
        el(rgba, NS_ELEMENTS, "ContainerFormat", _ul_urn(JP2K_P1_WRAPPED))
        el(rgba, NS_ELEMENTS, "PictureCompression", _ul_urn(coding_label(h.Rsiz)))
        el(rgba, NS_ELEMENTS, "EssenceLength", len(self.offsets))
        subs = el(rgba, NS_ELEMENTS, "SubDescriptors")
        j2k = el(subs, NS_GROUPS, "JPEG2000SubDescriptor")
        el(j2k, NS_ELEMENTS, "InstanceID", f"urn:uuid:{self.instance_ids['sub']}")
        el(j2k, NS_ELEMENTS, "Rsiz", h.Rsiz)
        for name in ("Xsiz", "Ysiz", "XOsiz", "YOsiz", "XTsiz", "YTsiz", "XTOsiz", "YTOsiz"):
            el(j2k, NS_ELEMENTS, name, getattr(h.siz, name))
        el(j2k, NS_ELEMENTS, "Csiz", h.siz.Csiz)
        el(j2k, NS_ELEMENTS, "CodingStyleDefault", h.cod.hex())
        el(j2k, NS_ELEMENTS, "QuantizationDefault", h.qcd.hex())
        pcap, ccap = self._cap()
        if pcap is not None:
            caps = el(j2k, NS_ELEMENTS, "J2KExtendedCapabilities")
            el(caps, NS_TYPES, "Pcap", pcap)
            words = el(caps, NS_TYPES, "Ccapi")
            for c in ccap:
                el(words, NS_TYPES, "UInt16", c)
        sizing = el(j2k, NS_ELEMENTS, "PictureComponentSizing")
        for ssiz, dx, dy in h.components:
            c = el(sizing, NS_TYPES, "J2KComponentSizing")
            el(c, NS_TYPES, "Ssiz", ssiz)
            el(c, NS_TYPES, "XRSiz", dx)
            el(c, NS_TYPES, "YRSiz", dy)
        layout(j2k, "J2CLayout")
        cc = el(subs, NS_GROUPS, "ContainerConstraintsSubDescriptor")
        el(cc, NS_ELEMENTS, "InstanceID", f"urn:uuid:{self.instance_ids['constraints']}")
        return rgba
