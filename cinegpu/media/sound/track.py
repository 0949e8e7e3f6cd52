"""PCM sound track files: SMPTE ST 382 (wave-wrapped PCM in MXF), as DCPs (ST 429-3) and IMF
(ST 2067-2) use them, read by edit unit or by sample through the index table.

What is read:

* the Wave Audio Essence Descriptor (ST 382 7.3, over ST 377-1 G.2.x): ``AudioSamplingRate``
  (0x3D03, Hz), ``ChannelCount`` (0x3D07), ``QuantizationBits`` (0x3D01), ``BlockAlign``
  (0x3D0A, bytes per sample frame), ``SampleRate`` of the file descriptor (0x3001: edit units
  per second), ``ContainerDuration`` (0x3002, edit units), ``ChannelAssignment`` (0x3D32, a
  ST 429-2 configuration or the ST 377-4 MCA label);
* ST 377-4 multichannel audio labels where present: each ``AudioChannelLabelSubDescriptor``
  (``MCAChannelID``, ``MCATagSymbol`` such as ``chL``, ``MCATagName``) and the
  ``SoundfieldGroupLabelSubDescriptor`` (``sg51`` ...);
* the essence through :class:`~cinegpu.media.mxf.read.MXFFile`'s index table (ST 377-1 11), never by
  walking it: frame-wrapped (one KLV per edit unit, the DCP way: 2000 sample frames per 24 fps
  edit unit at 48 kHz) and clip-wrapped (one KLV for the clip, the IMF way, where the edit rate
  is often the sample rate and the index a constant ``EditUnitByteCount`` of one sample frame);
* encrypted frame-wrapped essence (ST 429-6, as a DCP's encrypted sound is): each edit unit's
  triplet decrypted with the track's content key and its MIC checked, a triplet whose
  ``EditUnitByteCount`` counts the triplet (asdcplib's CBR index of encrypted PCM).

Samples come back as ``int32`` arrays of shape (sample frames, channels) holding each sample's
own value at ``QuantizationBits`` precision (-2**23 .. 2**23 - 1 for 24-bit): ST 382's BWF
samples are little-endian two's complement, ``BlockAlign / ChannelCount`` bytes each.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, UnsupportedMedia
from cinegpu.media.mxf.klv import key_matches, ul_str
from cinegpu.media.mxf.read import ENCRYPTED_TRIPLET, GC_ELEMENT, MetadataSet, MXFFile

SOUND_ITEMS = (0x06, 0x16)          # CP sound, GC sound item types (ST 379-1 7.1)
MAX_CHANNELS = 64
MAX_SAMPLE_RATE = 384_000           # Hz
# ST 382 BWF / AES3 essence container ULs: 060e2b34.0401010x.0d010301.0206 + wrapping.
BWF_CONTAINER = bytes.fromhex("0d0103010206")
WRAPPINGS = {1: "frame", 2: "clip", 3: "frame", 4: "clip", 0x7F: "custom"}
# ST 377-4 MCA sub-descriptor set keys (060e2b34.02530101.0d010101.0101xx00), byte 13-14.
MCA_CHANNEL_LABEL, MCA_SOUNDFIELD_GROUP = 0x016B, 0x016C
# ST 377-4 items (dynamic tags, resolved to these ULs through the primer): bytes 8..16.
MCA_TAG_SYMBOL = bytes.fromhex("0103070102000000")
MCA_TAG_NAME = bytes.fromhex("0103070103000000")
MCA_CHANNEL_ID = bytes.fromhex("0103040a00000000")
# ST 429-2 channel configurations (ChannelAssignment 060e2b34.0401010x.04020210.0301nn00)
# and the ST 377-4 "MCA" assignment (04020210.04010000).
CHANNEL_ASSIGNMENTS = {bytes.fromhex("0402021003010100"): "ST 429-2 configuration 1 (5.1)",
                       bytes.fromhex("0402021003010200"): "ST 429-2 configuration 2 (6.1)",
                       bytes.fromhex("0402021003010300"): "ST 429-2 configuration 3 (7.1)",
                       bytes.fromhex("0402021003010400"): "ST 429-2 configuration 4 (WTF, MCA)",
                       bytes.fromhex("0402021003010500"): "ST 429-2 configuration 5 (7.1 DS)",
                       bytes.fromhex("0402021004010000"): "ST 377-4 MCA"}


@dataclass(frozen=True)
class ChannelLabel:
    """One ST 377-4 ``AudioChannelLabelSubDescriptor``: which channel (1-based) carries what."""

    channel: int        # MCAChannelID, 1-based
    symbol: str         # MCATagSymbol, e.g. "chL", "chLFE"
    name: str           # MCATagName, e.g. "Left"

    @property
    def short(self) -> str:
        """The symbol without its ``ch`` prefix ("L", "LFE"), as ST 429-16's MainSoundConfiguration writes it."""
        return self.symbol[2:] if self.symbol.startswith("ch") else self.symbol


@dataclass(frozen=True)
class SoundDescriptor:
    """A PCM track file's Wave Audio Essence Descriptor (ST 382 7.3) and its MCA labels."""

    descriptor: str
    sample_rate: Fraction       # AudioSamplingRate, sample frames per second (Hz)
    edit_rate: Fraction         # the file descriptor's SampleRate: edit units per second
    channels: int
    bits: int                   # QuantizationBits
    block_align: int            # bytes per sample frame (all channels)
    container_duration: int | None    # edit units
    wrapping: str               # "frame" or "clip"
    channel_assignment: str | None
    labels: tuple[ChannelLabel, ...]  # sorted by channel; empty when the file has none
    soundfield: str | None      # the soundfield group's MCATagSymbol ("sg51"), if any

    @property
    def samples_per_edit_unit(self) -> Fraction:
        return self.sample_rate / self.edit_rate

    def layout(self) -> str:
        """The channel layout as ST 429-16 writes MainSoundConfiguration ("51/L,R,C,LFE,Ls,Rs"),
        or "" when the track labels no channels (Interop)."""
        if not self.labels:
            return ""
        field = (self.soundfield or "").removeprefix("sg")
        names = ",".join(lab.short for lab in self.labels)
        return f"{field}/{names}" if field else names

    def channels_text(self) -> str:
        """"6 channels (51/L,R,C,LFE,Ls,Rs)", or "6 channels" without labels."""
        layout = self.layout()
        return f"{self.channels} channels" + (f" ({layout})" if layout else "")


def _text(raw: bytes | None) -> str:
    """A UTF-16BE MXF string, trailing NULs removed."""
    if not raw:
        return ""
    return raw[: len(raw) & ~1].decode("utf-16-be", "replace").rstrip("\x00")


def _item(s: MetadataSet, ul_tail: bytes) -> bytes | None:
    """A dynamic item of ``s`` by its UL (bytes 8..16; registry version ignored)."""
    for key, value in s.items.items():
        if isinstance(key, bytes) and len(key) == 16 and key[8:] == ul_tail:
            return value
    return None


def _set_kind(s: MetadataSet) -> int:
    return int.from_bytes(s.key[13:15], "big")


def _labels(mxf: MXFFile) -> tuple[tuple[ChannelLabel, ...], str | None]:
    labels, soundfield = [], None
    for s in mxf.set_list:
        kind = _set_kind(s)
        if kind == MCA_CHANNEL_LABEL:
            cid = _item(s, MCA_CHANNEL_ID)
            if cid is None or len(cid) != 4:
                continue
            labels.append(ChannelLabel(int.from_bytes(cid, "big"), _text(_item(s, MCA_TAG_SYMBOL)),
                                       _text(_item(s, MCA_TAG_NAME))))
        elif kind == MCA_SOUNDFIELD_GROUP and soundfield is None:
            soundfield = _text(_item(s, MCA_TAG_SYMBOL)) or None
    return tuple(sorted(labels, key=lambda lab: lab.channel)), soundfield


def read_descriptor(mxf: MXFFile) -> SoundDescriptor:
    """The sound descriptor of an opened track file, checked (ST 382 7.3); MediaError otherwise."""
    path = mxf.path
    if mxf.encrypted and mxf.key is None:
        raise EncryptedMedia(path, "sound essence is encrypted (SMPTE ST 429-6); a KDM (or a key "
                                   "file) is needed to decrypt it")
    found = mxf.sets_named("WAVEPCMDescriptor", "AES3PCMDescriptor", "GenericSoundEssenceDescriptor")
    if not found:
        raise UnsupportedMedia(path, "no sound essence descriptor (not a sound track file)")
    d = found[-1]
    it = d.items

    def uint(tag: int, what: str) -> int:
        raw = it.get(tag, b"")
        if not 1 <= len(raw) <= 8:
            raise CorruptMedia(path, f"{d.type_name} lacks {what} (local tag 0x{tag:04x})", d.offset)
        return int.from_bytes(raw, "big")

    def rational(tag: int, what: str) -> Fraction:
        raw = it.get(tag, b"")
        num, den = (int.from_bytes(raw[:4], "big", signed=True),
                    int.from_bytes(raw[4:], "big", signed=True)) if len(raw) == 8 else (0, 0)
        if num <= 0 or den <= 0 or Fraction(num, den) > MAX_SAMPLE_RATE:
            raise CorruptMedia(path, f"{d.type_name} {what} (local tag 0x{tag:04x}) is "
                                     f"{raw.hex() or 'missing'}, not a positive rate", d.offset)
        return Fraction(num, den)

    sample_rate = rational(0x3D03, "AudioSamplingRate")
    edit_rate = rational(0x3001, "SampleRate") if 0x3001 in it else sample_rate
    channels, bits = uint(0x3D07, "ChannelCount"), uint(0x3D01, "QuantizationBits")
    if not 1 <= channels <= MAX_CHANNELS:
        raise UnsupportedMedia(path, f"{channels} channels (cinegpu reads 1..{MAX_CHANNELS})", d.offset)
    if bits not in (16, 24, 32):
        raise UnsupportedMedia(path, f"{bits}-bit PCM (cinegpu reads 16, 24 and 32-bit)", d.offset)
    block_align = uint(0x3D0A, "BlockAlign") if 0x3D0A in it else channels * bits // 8
    if block_align != channels * bits // 8:
        raise CorruptMedia(path, f"BlockAlign {block_align} is not {channels} channels x "
                                 f"{bits // 8} bytes (ST 382 7.3)", d.offset)
    ec = it.get(0x3004) or b""
    if len(ec) != 16 or ec[8:14] != BWF_CONTAINER:
        raise UnsupportedMedia(path, f"essence container {ul_str(ec) if ec else 'missing'} is not "
                                     f"ST 382 wave PCM", d.offset)
    if ec[14] in (3, 4):
        raise UnsupportedMedia(path, "AES3-wrapped PCM (ST 382 AES3 mapping) is not read; only "
                                     "BWF-wrapped", d.offset)
    wrapping = "clip" if mxf.clip_wrapped else WRAPPINGS.get(ec[14], "custom")
    if wrapping == "custom":
        raise UnsupportedMedia(path, f"custom-wrapped sound essence ({ul_str(ec)})", d.offset)
    spu = sample_rate / edit_rate
    if wrapping == "frame" and spu.denominator != 1:
        raise UnsupportedMedia(path, f"frame-wrapped sound at {edit_rate} edit units/s and "
                                     f"{sample_rate} Hz: {spu} sample frames per edit unit is not "
                                     f"a whole number", d.offset)
    if wrapping == "clip" and spu != 1:
        raise UnsupportedMedia(path, f"clip-wrapped sound indexed at {edit_rate} edit units/s for "
                                     f"{sample_rate} Hz (one sample frame per edit unit expected)",
                               d.offset)
    assign = it.get(0x3D32)
    assignment = None
    if assign:
        assignment = CHANNEL_ASSIGNMENTS.get(assign[8:], ul_str(assign))
    labels, soundfield = _labels(mxf)
    cd = it.get(0x3002)
    return SoundDescriptor(d.type_name, sample_rate, edit_rate, channels, bits, block_align,
                           int.from_bytes(cd, "big") if cd and len(cd) <= 8 else None, wrapping,
                           assignment, labels, soundfield)


def decode_pcm(data: bytes | memoryview, channels: int, bits: int) -> np.ndarray:
    """Little-endian two's complement PCM bytes (ST 382 BWF) to int32 (sample frames, channels)."""
    width = bits // 8
    raw = np.frombuffer(data, dtype=np.uint8)
    frames = raw.size // (width * channels)
    raw = raw[: frames * width * channels]
    if bits == 16:
        out = raw.view("<i2").astype(np.int32)
    elif bits == 32:
        out = raw.view("<i4").astype(np.int32)
    else:
        b = raw.reshape(-1, 3).astype(np.int32)
        out = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        out = (out << 8) >> 8          # sign-extend bit 23
    return out.reshape(frames, channels)


class SoundTrack:
    """A PCM sound track file opened for random access by edit unit or by sample frame.

    ``duration`` is in edit units of the file (``descriptor.edit_rate``), ``sample_count`` in
    sample frames (``descriptor.sample_rate``). Reads go through the MXF index table: edit unit
    ``n`` costs what edit unit 0 costs.
    """

    def __init__(self, path: str | os.PathLike, key: bytes | None = None):
        self.mxf = MXFFile(path, key=key)
        self.path = self.mxf.path
        try:
            self.descriptor = read_descriptor(self.mxf)
            if self.mxf.encrypted and self.descriptor.wrapping == "clip":
                raise UnsupportedMedia(self.path, "encrypted clip-wrapped sound is not read (DCP sound "
                                                  "is frame-wrapped, ST 429-3)")
            if not self.mxf.index_segments:
                raise UnsupportedMedia(self.path, "no index table: cannot seek in the sound essence")
            if not self.mxf._essence_parts:
                raise CorruptMedia(self.path, f"no essence partition for body SID {self.mxf.body_sid}")
        except BaseException:
            self.mxf.close()
            raise
        self.duration = self.mxf.frame_count
        self.samples_per_unit = int(self.descriptor.samples_per_edit_unit)
        self.sample_count = self.duration * self.samples_per_unit

    def close(self) -> None:
        self.mxf.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        d = self.descriptor
        return (f"<SoundTrack {os.path.basename(self.path)} {d.channels} ch {d.sample_rate} Hz "
                f"{d.bits}-bit {self.duration} units ({d.wrapping}-wrapped)>")

    def read(self, a: int, b: int) -> np.ndarray:
        """Sample frames of edit units ``[a, b)`` as int32 (frames, channels)."""
        if not 0 <= a <= b <= self.duration:
            raise IndexError(f"edit units {a}..{b} outside 0..{self.duration}")
        return self.read_samples(a * self.samples_per_unit, b * self.samples_per_unit)

    def read_samples(self, s0: int, s1: int) -> np.ndarray:
        """Sample frames ``[s0, s1)`` (at ``descriptor.sample_rate``) as int32 (frames, channels)."""
        d = self.descriptor
        if not 0 <= s0 <= s1 <= self.sample_count:
            raise IndexError(f"sample frames {s0}..{s1} outside 0..{self.sample_count}")
        if s0 == s1:
            return np.zeros((0, d.channels), np.int32)
        if d.wrapping == "clip":
            data = self._clip_bytes(s0, s1)
        else:
            spu = self.samples_per_unit
            u0, u1 = s0 // spu, -(-s1 // spu)
            data = b"".join(self._unit_bytes(n) for n in range(u0, u1))
            cut = (s0 - u0 * spu) * d.block_align
            data = data[cut: cut + (s1 - s0) * d.block_align]
        return decode_pcm(data, d.channels, d.bits)

    def _unit_bytes(self, n: int) -> bytes:
        """The PCM bytes of frame-wrapped edit unit ``n``: the value of its sound element."""
        mxf, r = self.mxf, self.mxf.reader
        so, _ = mxf.stream_offset(n)
        off, part = mxf.file_offset(so)
        klv = r.klv_at(off, part.end)
        element, length, data = klv.key, klv.length, None
        if key_matches(klv.key, ENCRYPTED_TRIPLET):
            if mxf.key is None:
                raise EncryptedMedia(self.path, "sound essence is encrypted (SMPTE ST 429-6)", off)
            from cinegpu.media.security.essence_crypto import decrypt_triplet

            value = r.read(klv.value_offset, klv.length, f"sound of edit unit {n}")
            element, data = decrypt_triplet(value, mxf.key, path=self.path, where=f"sound of edit unit {n}: ")
            length = len(data)
        if not (key_matches(element, GC_ELEMENT) and element[12] in SOUND_ITEMS):
            raise CorruptMedia(self.path, f"index entry for edit unit {n} points at "
                                          f"{ul_str(element)}, not a sound element", off)
        want = self.samples_per_unit * self.descriptor.block_align
        if length != want:
            raise CorruptMedia(self.path, f"sound element of edit unit {n} holds {length} "
                                          f"bytes, {want} expected ({self.samples_per_unit} "
                                          f"sample frames)", off)
        return data if data is not None else r.read(klv.value_offset, klv.length, f"sound of edit unit {n}")

    def _clip_bytes(self, s0: int, s1: int) -> bytes:
        """The PCM bytes of sample frames ``[s0, s1)`` of clip-wrapped essence (one read per
        partition crossed; the index's stream offsets count from the clip KLV's value)."""
        mxf, r, align = self.mxf, self.mxf.reader, self.descriptor.block_align
        out, s = [], s0
        while s < s1:
            so, _ = mxf.stream_offset(s)
            off, part = mxf.file_offset(so)
            assert part.essence_start is not None
            clip = r.klv_at(part.essence_start, part.end)
            if key_matches(clip.key, ENCRYPTED_TRIPLET):
                raise EncryptedMedia(self.path, "sound essence is encrypted (SMPTE ST 429-6)",
                                     clip.offset)
            if not (key_matches(clip.key, GC_ELEMENT) and clip.key[12] in SOUND_ITEMS):
                raise CorruptMedia(self.path, f"clip-wrapped essence starts with "
                                              f"{ul_str(clip.key)}, not a sound element", clip.offset)
            n = min(s1 - s, (clip.end - off) // align)
            if n <= 0:
                raise CorruptMedia(self.path, f"sample frame {s} lies past the clip's sound "
                                              f"element (ends at {clip.end})", off)
            out.append(r.read(off, n * align, f"sample frames {s}..{s + n}"))
            s += n
        return b"".join(out)


def open_sound(path: str | os.PathLike, key: bytes | None = None) -> SoundTrack:
    """Open a PCM sound track file (ST 382; ``key``: its ST 429-6 content key when encrypted);
    a MediaError says why when it cannot be read."""
    return SoundTrack(path, key)
