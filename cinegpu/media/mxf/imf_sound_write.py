"""Writing IMF audio track files: MXF OP-1a, clip-wrapped wave PCM (ST 2067-2, ST 382).

The layout is :class:`.mxf_write.TrackWriter`'s (header written last into the reserve, one
body partition of essence with BodySID 1, the index in the footer, the random index pack) with
the sound as the photon samples' ``AUDIO_*.mxf`` (DaVinci Resolve) have it:

    operational pattern  OP-1a (ST 378), MXF version 1.3
    essence container    ST 382 BWF clip-wrapped (060e2b34.04010101.0d010301.02060200)
    element              one GC sound element holding every sample (ST 382 clip wrapping; key
                         060e2b34.01020101.0d010301.16010201, track number 0x16010201):
                         24-bit little-endian samples, channels interleaved
    edit rate            the sample rate (ST 2067-2 5.3: the audio track's edit units are
                         samples); the timecode tracks count picture frames
    index                one CBR index table segment: EditUnitByteCount = BlockAlign
    descriptor           WaveAudioDescriptor: SampleRate and AudioSamplingRate the sample rate,
                         Locked 1, AudioRefLevel 0, ElectroSpatialFormulation 0, ChannelCount,
                         QuantizationBits 24, BlockAlign, AvgBps, ChannelAssignment the IMF MCA
                         label framework (ST 2067-2: 060e2b34.0401010d.04020210.04010000), and
                         MCA sub-descriptors (ST 377-4): a SoundfieldGroupLabelSubDescriptor with
                         MCATitle, MCATitleVersion, MCAAudioContentKind (PRM),
                         MCAAudioElementKind (FCMP) and RFC5646SpokenLanguage as ST 2067-2
                         asks, and one AudioChannelLabelSubDescriptor per channel, each
                         naming the group's MCALinkID as its SoundfieldGroupLinkID (ST 377-4
                         6.4.1); SubDescriptors, an ordered array (ST 377-1), lists the group
                         first, then the channels in channel order, as asdcplib writes it and
                         as the RegXML in the CPL has it

:meth:`IMFSoundTrackWriter.essence_descriptor` gives the same descriptor as RegXML for the
CPL's EssenceDescriptorList (``r0:WAVEPCMDescriptor``, as photon writes it).
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from fractions import Fraction

from lxml import etree

from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.read import GC_ELEMENT
from cinegpu.media.mxf.imf_write import NS_ELEMENTS, NS_GROUPS, OP_1A, REGXML_NSMAP, _ul_urn
from cinegpu.media.mxf.sound_write import AUDIO_CHANNEL, DATA_DEF_SOUND, QUANTIZATION_BITS, SOUND_PRIMER, SOUNDFIELD_GROUP, WAVE_DESCRIPTOR, SoundTrackFile
from cinegpu.media.mxf.write import BODY_SID, INDEX_SID, TrackWriter, _batch, _index_segment, _rational, _utf16, local_set
from cinegpu.media.sound.inputs import CHANNEL_LABELS, Layout

__all__ = ["IMFSoundTrackWriter", "WAV_CLIP_WRAPPED"]

WAV_CLIP_WRAPPED = bytes.fromhex("060e2b34040101010d01030102060200")    # ST 382 BWF clip
#: GC sound element: item 0x16, count 1, BWF clip-wrapped 0x02, element 1 (ST 382).
SOUND_CLIP_ELEMENT = GC_ELEMENT + bytes([0x16, 0x01, 0x02, 0x01])
#: ST 2067-2 channel assignment: the IMF MCA label framework.
CHANNEL_ASSIGNMENT_IMF = bytes.fromhex("060e2b340401010d0402021004010000")
#: An 8-byte BER length, patched when the element is complete.
_BER8 = 0x88
#: ST 377-4 / ST 2067-2 soundfield group items, by name -> dynamic local tag.
IMF_MCA_TAGS = {"MCALabelDictionaryID": 0xFFFE, "MCALinkID": 0xFFFD, "MCATagSymbol": 0xFFFC,
                "MCATagName": 0xFFFB, "RFC5646SpokenLanguage": 0xFFFA, "MCAChannelID": 0xFFF9,
                "SoundfieldGroupLinkID": 0xFFF8, "MCATitle": 0xFFF7, "MCATitleVersion": 0xFFF6,
                "MCAAudioContentKind": 0xFFF5, "MCAAudioElementKind": 0xFFF4}
IMF_SOUND_PRIMER = {
    **SOUND_PRIMER,
    0x3d04: "060e2b34010101010402010103000000",     # AudioRefLevel
    0x3d05: "060e2b34010101010402010101000000",     # ElectroSpatialFormulation
    0xfff7: "060e2b340101010e0105100000000000", 0xfff6: "060e2b340101010e0105110000000000",
    0xfff5: "060e2b340101010e0302010220000000", 0xfff4: "060e2b340101010e0302010221000000",
}


class IMFSoundTrackWriter(TrackWriter):
    """Write samples into an ST 2067-2 audio track file.

    ``rate``: samples per second (48000 or 96000), also the edit rate; ``picture_rate``: the
    composition's frames per second (timecode); ``layout``: the soundfield, written with its
    input channels only (``len(layout.inputs)``); ``language``: RFC 5646 tag (default
    ``und``, undetermined). :meth:`write` takes whole sample frames, 24-bit little-endian."""

    CONTAINERS = (WAV_CLIP_WRAPPED,)
    ELEMENT = SOUND_CLIP_ELEMENT
    DATA_DEF = DATA_DEF_SOUND
    TRACK_NAME = "Sound Track"
    PACKAGE_NAME = "File Package: SMPTE ST 382 clip wrapping of wave audio"
    DYNAMIC_TAGS = IMF_SOUND_PRIMER
    OPERATIONAL_PATTERN = OP_1A
    MXF_VERSION = 0x0103

    def __init__(self, path, *, rate: int, picture_rate, layout: Layout,
                 language: str | None = None, **kwargs):
        self.rate, self.layout, self.language = int(rate), layout, language
        self.picture_rate = Fraction(picture_rate)
        self.channels = len(layout.inputs)
        self.block_align = self.channels * QUANTIZATION_BITS // 8      # bytes a sample frame
        self.samples = 0
        self.element_at: int | None = None       # file offset of the element's key
        self.ids: dict[str, uuid.UUID] = {}
        super().__init__(path, edit_rate=Fraction(self.rate), **kwargs)

    def write(self, samples: bytes) -> None:
        """Append whole sample frames to the one clip-wrapped element."""
        if len(samples) % self.block_align:
            raise MediaError(self.path, f"{len(samples)} bytes are not whole sample frames "
                                        f"of {self.block_align} bytes")
        if self.element_at is None:
            self.element_at = self.file.tell()
            self.file.write(self.ELEMENT + bytes([_BER8]) + bytes(8))
            self.offsets.append(0)
        self.file.write(samples)
        self.samples += len(samples) // self.block_align

    def close(self) -> SoundTrackFile:
        if self.element_at is not None:
            end = self.file.tell()
            self.file.seek(self.element_at + 17)
            self.file.write(struct.pack(">Q", self.samples * self.block_align))
            self.file.seek(end)
        size = self._finish_file()
        layout = dataclasses.replace(self.layout, positions=tuple(range(self.channels)),
                                     track_channels=self.channels)
        return SoundTrackFile(self.path, self.asset_id, self.samples, self.edit_rate,
                              self.rate, self.channels, layout, self.language, size)

    def _duration(self) -> int:
        return self.samples

    def _timecode(self) -> tuple[Fraction, int]:
        return self.picture_rate, round(self.samples * self.picture_rate / self.rate)

    def _index_segments(self) -> bytes:
        """One CBR index table segment: every edit unit (a sample frame) is BlockAlign bytes."""
        return _index_segment([
            (0x3C0A, uuid.uuid4().bytes),
            (0x3F0B, _rational(self.edit_rate)),
            (0x3F0C, struct.pack(">q", 0)),
            (0x3F0D, struct.pack(">q", self.samples)),
            (0x3F05, struct.pack(">I", self.block_align)),     # EditUnitByteCount
            (0x3F06, struct.pack(">I", INDEX_SID)),
            (0x3F07, struct.pack(">I", BODY_SID)),
        ])

    def _labels(self):
        return [(label, *CHANNEL_LABELS[label]) for label in self.layout.inputs]

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The WaveAudioDescriptor and its MCA sub-descriptors (ST 377-4, ST 2067-2)."""
        u32 = (lambda v: struct.pack(">I", v))
        t = IMF_MCA_TAGS
        self.ids = {"desc": uuid.UUID(bytes=ids["desc"]), "group": uuid.uuid4(),
                    "group_link": uuid.uuid4()}
        group_link = self.ids["group_link"].bytes
        subs = [local_set(SOUNDFIELD_GROUP, [
            (0x3C0A, self.ids["group"].bytes),
            (t["MCALabelDictionaryID"], bytes.fromhex(self.layout.ul)),
            (t["MCALinkID"], group_link),
            (t["MCATagSymbol"], _utf16(self.layout.symbol)),
            (t["MCATagName"], _utf16(self.layout.name)),
            (t["MCATitle"], _utf16("n/a")), (t["MCATitleVersion"], _utf16("n/a")),
            (t["MCAAudioContentKind"], _utf16("PRM")),
            (t["MCAAudioElementKind"], _utf16("FCMP")),
            (t["RFC5646SpokenLanguage"], (self.language or "und").encode("ascii"))])]
        uids = []
        for channel, (symbol, name, ul) in enumerate(self._labels(), 1):
            uid, link = uuid.uuid4(), uuid.uuid4()
            self.ids[f"ch{channel}"], self.ids[f"ch{channel}_link"] = uid, link
            uids.append(uid.bytes)
            subs.append(local_set(AUDIO_CHANNEL, [
                (0x3C0A, uid.bytes),
                (t["MCALabelDictionaryID"], bytes.fromhex(ul)),
                (t["MCALinkID"], link.bytes),
                (t["MCATagSymbol"], _utf16("ch" + symbol)),
                (t["MCATagName"], _utf16(name)),
                (t["MCAChannelID"], u32(channel)),
                (t["SoundfieldGroupLinkID"], group_link)]))
        desc = local_set(WAVE_DESCRIPTOR, [
            # SubDescriptors: the group, then the channels; the same order as the RegXML of
            # essence_descriptor (the CPL's copy of this descriptor, ST 2067-3)
            (0x3C0A, ids["desc"]), (0xFFFF, _batch([self.ids["group"].bytes] + uids, 16)),
            (0x3006, u32(2)),                                   # LinkedTrackID
            (0x3001, _rational(self.edit_rate)),                # SampleRate: the edit rate
            (0x3002, struct.pack(">Q", n)),                     # ContainerDuration
            (0x3004, WAV_CLIP_WRAPPED),
            (0x3D03, _rational(Fraction(self.rate))),           # AudioSamplingRate, Hz
            (0x3D02, b"\x01"),                                  # Locked
            (0x3D04, b"\x00"), (0x3D05, b"\x00"),               # AudioRefLevel, ESF
            (0x3D07, u32(self.channels)),
            (0x3D01, u32(QUANTIZATION_BITS)),
            (0x3D0A, struct.pack(">H", self.block_align)),
            (0x3D09, u32(self.rate * self.block_align)),        # AvgBps, bytes per second
            (0x3D32, CHANNEL_ASSIGNMENT_IMF)])
        return [desc, *subs]

    # -- RegXML for the CPL --
    def essence_descriptor(self) -> etree._Element:
        """The descriptor written into the file as RegXML (``r0:WAVEPCMDescriptor``, element
        order as photon writes it); call after :meth:`close`."""
        if not self.ids:
            raise MediaError(self.path, "the track file is not finished")

        def el(parent, ns, tag, text=None):
            e = etree.SubElement(parent, f"{{{ns}}}{tag}")
            if text is not None:
                e.text = str(text)
            return e

        urn = (lambda u: f"urn:uuid:{u}")
        wave = etree.Element(f"{{{NS_GROUPS}}}WAVEPCMDescriptor", nsmap=REGXML_NSMAP)
        for tag, value in (
                ("LinkedTrackID", 2), ("InstanceID", urn(self.ids["desc"])),
                ("AudioSampleRate", f"{self.rate}/1"), ("SampleRate", f"{self.rate}/1"),
                ("ChannelCount", self.channels),
                ("ElectrospatialFormulation", "ElectroSpatialFormulation_Default"),
                ("QuantizationBits", QUANTIZATION_BITS), ("Locked", "True"),
                ("AudioReferenceLevel", 0), ("BlockAlign", self.block_align),
                ("AverageBytesPerSecond", self.rate * self.block_align),
                ("ContainerFormat", _ul_urn(WAV_CLIP_WRAPPED)),
                ("ChannelAssignment", _ul_urn(CHANNEL_ASSIGNMENT_IMF)),
                ("EssenceLength", self.samples)):
            el(wave, NS_ELEMENTS, tag, value)
        subs = el(wave, NS_ELEMENTS, "SubDescriptors")
        group = el(subs, NS_GROUPS, "SoundfieldGroupLabelSubDescriptor")
        for tag, value in (
                ("InstanceID", urn(self.ids["group"])), ("MCALinkID", urn(self.ids["group_link"])),
                ("MCALabelDictionaryID", _ul_urn(bytes.fromhex(self.layout.ul))),
                ("MCATagName", self.layout.name), ("MCATagSymbol", self.layout.symbol),
                ("MCATitle", "n/a"), ("MCATitleVersion", "n/a"),
                ("MCAAudioContentKind", "PRM"), ("MCAAudioElementKind", "FCMP"),
                ("RFC5646SpokenLanguage", self.language or "und")):
            el(group, NS_ELEMENTS, tag, value)
        for channel, (symbol, name, ul) in enumerate(self._labels(), 1):
            ch = el(subs, NS_GROUPS, "AudioChannelLabelSubDescriptor")
            for tag, value in (
                    ("InstanceID", urn(self.ids[f"ch{channel}"])),
                    ("SoundfieldGroupLinkID", urn(self.ids["group_link"])),
                    ("MCALinkID", urn(self.ids[f"ch{channel}_link"])),
                    ("MCALabelDictionaryID", _ul_urn(bytes.fromhex(ul))),
                    ("MCATagName", name), ("MCATagSymbol", "ch" + symbol),
                    ("MCAChannelID", channel)):
                el(ch, NS_ELEMENTS, tag, value)
        return wave
