"""Writing Interop DCP track files: asdcplib's "MXF Interop" picture and sound, as
``asdcp-wrap`` writes them without ``-L`` (asdcplib 2.13.3: ``DefaultInteropDict``,
``h__ASDCPWriter::CreateBodyPart`` and ``WriteASDCPHeader`` for ``LS_MXF_INTEROP``).

What differs from the SMPTE files of :mod:`.mxf_write` and :mod:`.mxf_sound_write` (checked
against files ``asdcp-wrap`` wrote from the same codestreams and WAVE, field by field, and
against libdcp's Interop sample ``dcp_test3``):

    operational pattern  MXF Interop OP-Atom, 060e2b34.04010101.0d010201.10000000 (version
                         byte 01 where SMPTE's ST 378 label has 02), in the partition packs and
                         the Preface
    partitions           two: the header partition (its pack names BodySID 1) holds the essence
                         right after the 16 KiB header reserve, no body partition pack; the
                         footer's PreviousPartition is 0; the random index pack is (1, 0),
                         (0, footer)
    SubDescriptors       the primer maps local tag 0xFFFF to asdcplib's
                         MXFInterop_GenericDescriptor_SubDescriptors UL
                         (060e2b34.01010102.06010104.06100000; SMPTE's has version byte 09)
    sound                the WaveAudioDescriptor has no ChannelAssignment and no MCA
                         sub-descriptors (asdcp-wrap's default "no label, valid for Interop
                         only"): the channels are in the Interop order of their count
                         (5.1: L, R, C, LFE, Ls, Rs), 24-bit little-endian PCM at 48 kHz

The essence container labels (JPEG 2000 frame wrapping 060e2b34.04010107.0d010301.020c0100, WAVE
frame wrapping 060e2b34.04010101.0d010301.02060100), the picture coding labels (ST 429-4 2K and
4K), the element keys, the index tables (VBR picture, CBR sound) and the header metadata sets
are the ones asdcplib's Interop dictionary shares with SMPTE's, so they are inherited as they are.
Encryption (asdcplib's MXFInterop_CryptEssence) is not written here.
"""

from __future__ import annotations

import struct

from cinegpu.media.errors import MediaError
from cinegpu.media.mxf.read import PRIMER_PACK
from cinegpu.media.mxf.sound_write import (
    SOUND_PRIMER,
    WAVE_DESCRIPTOR,
    SoundTrackWriter,
)
from cinegpu.media.mxf.write import (
    J2K_PRIMER,
    PRIMER,
    SUBDESCRIPTORS_TAG,
    PictureTrackWriter,
    _batch,
    klv,
    local_set,
)

__all__ = ["INTEROP_OP_ATOM", "InteropPictureTrackWriter", "InteropSoundTrackWriter"]

#: asdcplib's MXFInterop_OPAtom (MDD.cpp entry 1).
INTEROP_OP_ATOM = bytes.fromhex("060e2b34040101010d01020110000000")
#: asdcplib's MXFInterop_GenericDescriptor_SubDescriptors (MDD.cpp entry 272).
INTEROP_SUBDESCRIPTORS = "060e2b34010101020601010406100000"
#: The WaveAudioDescriptor's items asdcplib's Interop dictionary writes (no ChannelAssignment).
INTEROP_SOUND_PRIMER = {tag: ul for tag, ul in SOUND_PRIMER.items() if 0x3D00 <= tag < 0x3D32}


class InteropPictureTrackWriter(PictureTrackWriter):
    """Write frames (JPEG 2000 codestreams) into an Interop picture track file (asdcplib's MXF
    Interop JPEG 2000, as :class:`.mxf_write.PictureTrackWriter` otherwise): see the module's
    docstring for what differs. Not encrypted."""

    OPERATIONAL_PATTERN = INTEROP_OP_ATOM
    BODY_PARTITION = False
    DYNAMIC_TAGS = {**J2K_PRIMER, SUBDESCRIPTORS_TAG: INTEROP_SUBDESCRIPTORS}

    def __init__(self, path, *, encryption=None, **kwargs):
        if encryption is not None:
            raise MediaError(path, "encrypted Interop track files are not written")
        super().__init__(path, **kwargs)


class InteropSoundTrackWriter(SoundTrackWriter):
    """Write edit units of PCM into an Interop sound track file (asdcplib's MXF Interop PCM:
    WAVE frame wrapping, 24-bit samples): ``rate`` 48000 Hz, ``layout`` whose track channels
    are those of the Interop order (5.1: six). The descriptor carries no channel assignment
    label and no MCA sub-descriptors. Not encrypted."""

    OPERATIONAL_PATTERN = INTEROP_OP_ATOM
    BODY_PARTITION = False
    DYNAMIC_TAGS = INTEROP_SOUND_PRIMER

    def __init__(self, path, *, rate: int, encryption=None, **kwargs):
        if encryption is not None:
            raise MediaError(path, "encrypted Interop track files are not written")
        if rate != 48000:
            raise MediaError(path, f"Interop sound is written at 48000 Hz, not {rate}")
        super().__init__(path, rate=rate, **kwargs)

    def _primer(self) -> bytes:
        """The primer without the SubDescriptors tag, which the descriptor does not use (as
        asdcplib's Interop PCM writer's primer: 62 entries)."""
        tags = {**{t: ul for t, ul in PRIMER.items() if t != SUBDESCRIPTORS_TAG}, **self.DYNAMIC_TAGS}
        items = [struct.pack(">H", tag) + bytes.fromhex(ul) for tag, ul in sorted(tags.items())]
        return klv(PRIMER_PACK, _batch(items, 18))

    def _descriptor(self, ids: dict[str, bytes], n: int) -> list[bytes]:
        """The WaveAudioDescriptor (ST 382 items, in asdcplib's order): SampleRate the edit
        rate, ContainerDuration ``n`` edit units, AudioSamplingRate in Hz, BlockAlign bytes a
        sample frame, AvgBps bytes a second; no SubDescriptors, no ChannelAssignment."""
        return [local_set(WAVE_DESCRIPTOR, [(0x3C0A, ids["desc"]), *self._wave_items(n)])]
