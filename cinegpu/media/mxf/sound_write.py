"""Writing SMPTE DCP sound track files: MXF OP-Atom, frame-wrapped PCM (ST 429-3, ST 382).

The layout of :mod:`.mxf_write` (header written last into a reserve, one body partition, the
footer with the index, the random index pack) with the sound essence as asdcplib writes it for
libdcp (checked field by field against libdcp's ``dcp_test1/audio.mxf``):

    essence container  ST 382 BWF frame-wrapped (060e2b34.04010101.0d010301.02060100)
    element            one GC sound element per picture edit unit (ST 382, ST 379-1; key
                       060e2b34.01020101.0d010301.16010101, track number 0x16010101), holding
                       ``samples_per_frame`` sample frames of 24-bit little-endian samples,
                       channels interleaved
    index              one CBR index table segment (ST 377-1 11.2): EditUnitByteCount is the
                       whole element (key, BER length and value), no entries
    descriptor         WaveAudioDescriptor (ST 382, ST 377-1 Annex G): SampleRate is
                       the edit rate, AudioSamplingRate, Locked 0, ChannelCount,
                       QuantizationBits 24, BlockAlign, AvgBps, and ChannelAssignment: SMPTE
                       ST 429-2 channel configuration 4 (Wild Track Format), the configuration
                       RDD 52 (DCP Bv2.1) requires, with the channels labelled by MCA
                       sub-descriptors (ST 377-4): one SoundfieldGroupLabelSubDescriptor and one
                       AudioChannelLabelSubDescriptor per used channel
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.read import GC_ELEMENT
from cinegpu.media.mxf.write import (
    BODY_SID,
    GC_MULTIPLE_WRAPPINGS,
    INDEX_SID,
    TrackWriter,
    _batch,
    _index_segment,
    _rational,
    _utf16,
    local_set,
)
from cinegpu.media.sound.inputs import CHANNEL_LABELS, Layout

__all__ = ["SoundTrackFile", "SoundTrackWriter"]

WAV_FRAME_WRAPPED = bytes.fromhex("060e2b34040101010d01030102060100")     # ST 382 BWF frame
#: GC sound element: item 0x16, count 1, BWF frame-wrapped 0x01, element 1 (ST 382).
SOUND_ELEMENT = GC_ELEMENT + bytes([0x16, 0x01, 0x01, 0x01])
DATA_DEF_SOUND = bytes.fromhex("060e2b34040101010103020202000000")
#: ST 429-2 Annex A channel configuration 4, Wild Track Format (asdcplib DCAudioChannelCfg_4_WTF).
CHANNEL_CONFIG_WTF = bytes.fromhex("060e2b340401010b0402021003010400")
WAVE_DESCRIPTOR, SOUNDFIELD_GROUP, AUDIO_CHANNEL = 0x48, 0x6C, 0x6B
#: Bits per sample in a DCP sound track (ST 428-2).
QUANTIZATION_BITS = 24

#: MCA sub-descriptor items (ST 377-4 Annex), by name -> dynamic local tag.
MCA_TAGS = {"MCALabelDictionaryID": 0xFFFE, "MCALinkID": 0xFFFD, "MCATagSymbol": 0xFFFC,
            "MCATagName": 0xFFFB, "RFC5646SpokenLanguage": 0xFFFA, "MCAChannelID": 0xFFF9,
            "SoundfieldGroupLinkID": 0xFFF8}
SOUND_PRIMER = {
    0x3d01: "060e2b34010101040402030304000000", 0x3d02: "060e2b34010101040402030104000000",
    0x3d03: "060e2b34010101050402030101010000", 0x3d07: "060e2b34010101050402010104000000",
    0x3d09: "060e2b34010101050402030305000000", 0x3d0a: "060e2b34010101050402030201000000",
    0x3d32: "060e2b34010101070402010105000000",
    0xfffe: "060e2b340101010e0103070101000000", 0xfffd: "060e2b340101010e0103070105000000",
    0xfffc: "060e2b340101010e0103070102000000", 0xfffb: "060e2b340101010e0103070103000000",
    0xfffa: "060e2b340101010d0301010203150000", 0xfff9: "060e2b340101010e0103040a00000000",
    0xfff8: "060e2b340101010e0103070106000000",
}


@dataclass(frozen=True)
class SoundTrackFile:
    """What the CPL and PKL need to know about a finished sound track file. ``frames``: edit
    units; ``rate``: samples per second; ``size``: bytes."""

    path: Path
    asset_id: uuid.UUID
    frames: int
    edit_rate: Fraction
    rate: int
    channels: int
    layout: Layout
    language: str | None
    size: int


class SoundTrackWriter(TrackWriter):
    """Write edit units of PCM into an ST 429-3 sound track file.

    ``rate``: samples per second (48000 or 96000); ``layout``: the channels and their labels;
    ``language``: RFC 5646 tag of the spoken language, or None. Each :meth:`write` takes one
    edit unit: ``rate / edit_rate`` sample frames of ``layout.track_channels`` 24-bit
    little-endian samples."""

    CONTAINERS = (WAV_FRAME_WRAPPED, GC_MULTIPLE_WRAPPINGS)
    ELEMENT = SOUND_ELEMENT
    DATA_DEF = DATA_DEF_SOUND
    TRACK_NAME = "Sound Track"
    PACKAGE_NAME = "File Package: SMPTE 382M frame wrapping of wave audio"
    DYNAMIC_TAGS = SOUND_PRIMER

    def __init__(self, path, *, edit_rate, rate: int, layout: Layout,
                 language: str | None = None, **kwargs):
        spf = Fraction(rate) / Fraction(edit_rate)
        if spf.denominator != 1:
            raise MediaError(path, f"{rate} Hz at {edit_rate} fps is not a whole number of "
                                   "samples a frame")
        self.rate, self.layout, self.language = rate, layout, language
        self.block_align = layout.track_channels * QUANTIZATION_BITS // 8      # bytes
        self.frame_bytes = int(spf) * self.block_align
        super().__init__(path, edit_rate=edit_rate, **kwargs)

    def write(self, edit_unit: bytes) -> None:
        """Append one edit unit of samples (its size is fixed: :attr:`frame_bytes`)."""
        if len(edit_unit) != self.frame_bytes:
            raise MediaError(self.path, f"edit unit {len(self.offsets)} is {len(edit_unit)} "
                                        f"bytes; {self.frame_bytes} expected")
        self._append(edit_unit)

    def close(self) -> SoundTrackFile:
        size = self._finish_file()
        return SoundTrackFile(self.path, self.asset_id, len(self.offsets), self.edit_rate,
                              self.rate, self.layout.track_channels, self.layout,
                              self.language, size)

    def _index_segments(self) -> bytes:
        """One CBR index table segment (ST 377-1 11.2): every edit unit is one element of
        ``16 + 4 + frame_bytes`` bytes, or one encrypted triplet of a fixed size (ST 429-6, as
        asdcplib counts it), so no entries are needed."""
        unit = self.stream_offset // len(self.offsets)      # every element has this size
        return _index_segment([
            (0x3C0A, uuid.uuid4().bytes),
            (0x3F0B, _rational(self.edit_rate)),
            (0x3F0C, struct.pack(">q", 0)),
            (0x3F0D, struct.pack(">q", len(self.offsets))),
            (0x3F05, struct.pack(">I", unit)),              # EditUnitByteCount
            (0x3F06, struct.pack(">I", INDEX_SID)),
            (0x3F07, struct.pack(">I", BODY_SID)),
            (0x3F08, b"\x00"),                              # SliceCount
            (0x3F0E, b"\x00"),                              # PosTableCount
            (0x3F0A, _batch([], 11)),
        ])

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The WaveAudioDescriptor (ST 382) and its MCA sub-descriptors (ST 377-4)."""
        def u32(v):
            return struct.pack(">I", v)

        t = MCA_TAGS
        lang = [] if self.language is None else \
            [(t["RFC5646SpokenLanguage"], self.language.encode("ascii"))]
        group_uid, group_link = uuid.uuid4().bytes, uuid.uuid4().bytes
        subs = [local_set(SOUNDFIELD_GROUP, [
            (0x3C0A, group_uid),
            (t["MCALabelDictionaryID"], bytes.fromhex(self.layout.ul)),
            (t["MCALinkID"], group_link),
            (t["MCATagSymbol"], _utf16(self.layout.symbol)),
            (t["MCATagName"], _utf16(self.layout.name)), *lang])]
        uids = [group_uid]
        for channel, label in enumerate(self.layout.track_labels(), 1):
            if label is None:
                continue
            name, ul = CHANNEL_LABELS[label]
            uid = uuid.uuid4().bytes
            uids.append(uid)
            subs.append(local_set(AUDIO_CHANNEL, [
                (0x3C0A, uid),
                (t["MCALabelDictionaryID"], bytes.fromhex(ul)),
                (t["MCALinkID"], uuid.uuid4().bytes),
                (t["MCATagSymbol"], _utf16("ch" + label)),
                (t["MCATagName"], _utf16(name)),
                (t["MCAChannelID"], u32(channel)), *lang,
                (t["SoundfieldGroupLinkID"], group_link)]))
        desc = local_set(WAVE_DESCRIPTOR, [(0x3C0A, ids["desc"]), (0xFFFF, _batch(uids, 16)),
                                           *self._wave_items(n), (0x3D32, CHANNEL_CONFIG_WTF)])
        return [desc, *subs]

    def _wave_items(self, n: int) -> list[tuple[int, bytes]]:
        """The WaveAudioDescriptor's items every sound track file has (ST 382, in asdcplib's
        order): SampleRate the edit rate, ContainerDuration ``n`` edit units, AudioSamplingRate
        in Hz, the channels, 24 bits, BlockAlign bytes a sample frame, AvgBps bytes a second."""
        def u32(v):
            return struct.pack(">I", v)

        return [(0x3006, u32(2)),                                   # LinkedTrackID
                (0x3001, _rational(self.edit_rate)),                # SampleRate: the edit rate
                (0x3002, struct.pack(">Q", n)),                     # ContainerDuration
                (0x3004, WAV_FRAME_WRAPPED),
                (0x3D03, _rational(Fraction(self.rate))),           # AudioSamplingRate, Hz
                (0x3D02, b"\x00"),                                  # Locked
                (0x3D07, u32(self.layout.track_channels)),
                (0x3D01, u32(QUANTIZATION_BITS)),
                (0x3D0A, struct.pack(">H", self.block_align)),      # bytes per sample frame
                (0x3D09, u32(self.rate * self.block_align))]        # AvgBps, bytes per second
