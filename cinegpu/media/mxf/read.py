"""MXF track files (SMPTE ST 377-1): partitions, header metadata, index tables, frames by seek.

The subset that DCP (ST 429-3/-4/-10, OP-Atom) and IMF (ST 2067-5, OP-1a) track files use:

* partition packs (ST 377-1 7.1) found through the random index pack at the end of the file
  (ST 377-1 12), else through the footer partition's ``PreviousPartition`` chain;
* the primer pack and header metadata local sets (ST 377-1 9.x, 2-byte tags and lengths), kept as
  tag maps; dynamic tags are resolved through the primer to their ULs;
* index table segments (ST 377-1 11): CBR (``EditUnitByteCount``) and VBR index entries;
* frame-wrapped and clip-wrapped JPEG 2000 essence (ST 422) in the generic container
  (ST 379-1), picture items ``0x15``;
* stereoscopic picture (ST 429-10, as asdcplib writes it): two picture elements an edit unit,
  left eye then right eye, the index listing the left; :meth:`MXFFile.frame` takes the eye,
  :meth:`MXFFile.frame_pair` reads both.

Frame ``n`` is found by lookup: index segment -> stream offset -> the partition of the body SID
holding that offset -> a file offset, then one KLV read. Nothing walks the essence.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from fractions import Fraction

from cinegpu.media.errors import CorruptMedia, EncryptedMedia, MediaError, UnsupportedMedia
from cinegpu.media.mxf.klv import KLV, Cursor, FileReader, key_matches, ul_str
from cinegpu.media.security.essence_crypto import check_key, decrypt_triplet, parse_triplet_head

# Keys (ST 377-1 Annex; version byte 7 ignored by key_matches).
PARTITION_PACK = bytes.fromhex("060e2b34020501010d01020101")     # + kind, status, 00
PRIMER_PACK = bytes.fromhex("060e2b34020501010d01020101050100")
RANDOM_INDEX_PACK = bytes.fromhex("060e2b34020501010d01020101110100")
INDEX_SEGMENT = bytes.fromhex("060e2b34025301010d01020101100100")
FILL = bytes.fromhex("060e2b34010101010301021001")
METADATA_SET = bytes.fromhex("060e2b34025301010d010101")
DM_SET = bytes.fromhex("060e2b34025301010d010401")
CRYPTO_CONTEXT = bytes.fromhex("060e2b34025301010d01040102020000")  # ST 429-6
CRYPTO_FRAMEWORK = bytes.fromhex("060e2b34025301010d01040102010000")
GC_ELEMENT = bytes.fromhex("060e2b34010201010d010301")             # + item, count, type, number
ENCRYPTED_TRIPLET = bytes.fromhex("060e2b34020401010d010301027e01")  # ST 429-6 7.x
ENCRYPTED_CONTAINER = bytes.fromhex("060e2b34040101070d010301020b01")

PARTITION_KINDS = {2: "header", 3: "body", 4: "footer"}
PICTURE_ITEMS = (0x05, 0x15)   # CP picture, GC picture (ST 379-1 7.1)

# Header metadata set types: key bytes 13-14 (ST 377-1 Annex B).
SET_NAMES = {
    0x012F: "Preface", 0x0130: "Identification", 0x0118: "ContentStorage",
    0x0123: "EssenceContainerData", 0x0136: "MaterialPackage", 0x0137: "SourcePackage",
    0x013B: "TimelineTrack", 0x013A: "StaticTrack", 0x0139: "EventTrack", 0x010F: "Sequence",
    0x0111: "SourceClip", 0x0114: "TimecodeComponent", 0x0141: "DMSegment",
    0x0144: "MultipleDescriptor", 0x0127: "GenericPictureEssenceDescriptor",
    0x0128: "CDCIEssenceDescriptor", 0x0129: "RGBAEssenceDescriptor",
    0x0142: "GenericSoundEssenceDescriptor", 0x0147: "AES3PCMDescriptor",
    0x0148: "WAVEPCMDescriptor", 0x015A: "JPEG2000PictureSubDescriptor",
    0x0163: "StereoscopicPictureSubDescriptor",
    0x0164: "TimedTextDescriptor", 0x0165: "TimedTextResourceSubDescriptor",
}
PICTURE_DESCRIPTORS = ("CDCIEssenceDescriptor", "RGBAEssenceDescriptor",
                       "GenericPictureEssenceDescriptor")
SOUND_DESCRIPTORS = ("WAVEPCMDescriptor", "AES3PCMDescriptor", "GenericSoundEssenceDescriptor")

# JPEG2000PictureSubDescriptor items are dynamic tags: UL 060e2b34.0101010a.04010603.NN000000.
J2K_SUB_ITEMS = {1: "Rsiz", 2: "Xsiz", 3: "Ysiz", 4: "XOsiz", 5: "YOsiz", 6: "XTsiz",
                 7: "YTsiz", 8: "XTOsiz", 9: "YTOsiz", 10: "Csiz",
                 11: "PictureComponentSizing", 12: "CodingStyleDefault",
                 13: "QuantizationDefault"}
J2K_SUB_UL = bytes.fromhex("060e2b34010101010401060300")[:12]

MAX_KLVS_PER_PARTITION = 200_000
MAX_PARTITIONS = 100_000


@dataclass
class Partition:
    """One partition pack (ST 377-1 7.1), and where its essence begins (bytes)."""

    offset: int
    kind: str
    status: int
    this_partition: int
    previous_partition: int
    footer_partition: int
    header_byte_count: int
    index_byte_count: int
    index_sid: int
    body_offset: int
    body_sid: int
    operational_pattern: bytes
    essence_containers: list[bytes]
    essence_start: int | None = None   # file offset of the first essence KLV
    end: int = 0                        # file offset where the next partition begins


@dataclass
class MetadataSet:
    """A header metadata local set: its type and its items by local tag (raw values)."""

    key: bytes
    offset: int
    items: dict[int, bytes] = field(default_factory=dict)

    @property
    def type_name(self) -> str:
        return SET_NAMES.get(int.from_bytes(self.key[13:15], "big"), ul_str(self.key))


@dataclass
class IndexSegment:
    """An index table segment (ST 377-1 11.2); entries kept packed, decoded on demand."""

    offset: int
    edit_rate: Fraction | None
    start: int
    duration: int
    edit_unit_byte_count: int
    index_sid: int
    body_sid: int
    slice_count: int
    pos_table_count: int
    deltas: list[tuple[int, int, int]]
    entry_count: int
    entry_size: int
    entries: bytes
    entries_offset: int

    def stream_offset(self, i: int) -> int:
        """StreamOffset of entry ``i`` (bytes into the essence container)."""
        return struct.unpack_from(">Q", self.entries, i * self.entry_size + 3)[0]


@dataclass(frozen=True)
class PictureInfo:
    """What the picture descriptor says (ST 377-1 G.2, ST 422 for the JPEG 2000 part).

    ``sample_rate`` is the descriptor's SampleRate (elements a second): for a stereoscopic
    file as asdcplib writes it, twice the frame rate (48 for 24 frames a second per eye; the
    file's frame rate is :attr:`MXFFile.edit_rate`).  ``stereoscopic``: the header holds an
    ST 429-10 StereoscopicPictureSubDescriptor (asdcplib's test for ``ESS_JPEG_2000_S``), so
    each frame (edit unit) is two codestreams, left eye then right eye."""

    descriptor: str
    stored_width: int | None
    stored_height: int | None
    sample_rate: Fraction | None
    container_duration: int | None
    essence_container: bytes | None
    component_depth: int | None
    aspect_ratio: Fraction | None
    j2k: dict
    stereoscopic: bool = False


@dataclass(frozen=True)
class SoundInfo:
    """What the PCM descriptor says (ST 382)."""

    descriptor: str
    channels: int | None
    quantization_bits: int | None
    sample_rate: Fraction | None
    container_duration: int | None
    essence_container: bytes | None = None


def _rational(data: bytes) -> Fraction | None:
    if len(data) != 8:
        return None
    num, den = struct.unpack(">ii", data)
    return Fraction(num, den) if den else None


def _uint(data: bytes) -> int | None:
    return int.from_bytes(data, "big") if 0 < len(data) <= 8 else None


class MXFFile:
    """An MXF track file opened for random access to its picture (or for its sound descriptor).
    ``key``: the AES-128 content key of encrypted essence (ST 429-6), which :meth:`frame` then
    decrypts and checks (:mod:`.essence_crypto`); without it an encrypted file raises
    :class:`~.errors.EncryptedMedia` when a frame is asked for."""

    def __init__(self, path, key: bytes | None = None):
        if key is not None and len(key) != 16:
            raise ValueError("an ST 429-6 content key has 16 bytes")
        self.key = key
        self.reader = FileReader(path)
        self.path = self.reader.path
        try:
            self._load()
        except MediaError:
            self.reader.close()
            raise
        except (struct.error, ValueError, IndexError, ZeroDivisionError, OverflowError) as exc:
            self.reader.close()
            raise CorruptMedia(self.path, f"malformed MXF: {exc}") from None

    # -- structure -----------------------------------------------------------------------
    def _load(self) -> None:
        r = self.reader
        self.run_in = self._find_header()
        self.partitions = self._find_partitions()
        self.sets: dict[bytes, MetadataSet] = {}
        self.set_list: list[MetadataSet] = []
        self.index_segments: list[IndexSegment] = []
        self.encrypted = False
        for i, part in enumerate(self.partitions):
            part.end = self.partitions[i + 1].offset if i + 1 < len(self.partitions) else r.size
            self._walk_partition(part)
        for part in self.partitions:
            for ul in part.essence_containers:
                if key_matches(ul, ENCRYPTED_CONTAINER):
                    self.encrypted = True
        self._dedupe_index()
        self.picture = self._picture_info()
        self.sound = self._sound_info()
        self.stereoscopic = bool(self.picture and self.picture.stereoscopic)
        self.body_sid = self._picture_body_sid()
        self._essence_parts = sorted(
            (p for p in self.partitions if p.body_sid == self.body_sid and p.body_sid
             and p.essence_start is not None), key=lambda p: p.body_offset)
        self._essence_keys = [p.body_offset for p in self._essence_parts]
        self._seg_starts = [s.start for s in self.index_segments]
        self.clip_wrapped = self._is_clip_wrapped() if self.picture or self.sound else False
        self.frame_count = self._frame_count()

    def close(self) -> None:
        self.reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _find_header(self) -> int:
        """Offset of the header partition pack; a run-in of up to 64 KiB is allowed (ST 377-1 5.5)."""
        head = self.reader.read(0, min(self.reader.size, 65536 + 16), "file start")
        pos = head.find(PARTITION_PACK[:11])
        if pos < 0 or len(head) < pos + 16 or not key_matches(head[pos:pos + 16], PARTITION_PACK) \
                or head[pos + 13] != 2:
            raise self.reader.error("not an MXF file: no header partition pack in the first 64 KiB", 0)
        return pos

    def _read_partition(self, offset: int) -> Partition:
        r = self.reader
        klv = r.klv_at(offset)
        if not key_matches(klv.key, PARTITION_PACK) or klv.key[13] not in PARTITION_KINDS:
            raise r.error(f"expected a partition pack, found {ul_str(klv.key)}", offset)
        c = Cursor(r, r.value(klv, 1 << 20), klv.value_offset)
        c.u16("MajorVersion"), c.u16("MinorVersion"), c.u32("KAGSize")
        this, prev, footer = c.u64("ThisPartition"), c.u64("PreviousPartition"), c.u64("FooterPartition")
        hbc, ibc, index_sid = c.u64("HeaderByteCount"), c.u64("IndexByteCount"), c.u32("IndexSID")
        body_offset, body_sid = c.u64("BodyOffset"), c.u32("BodySID")
        op = c.take(16, "OperationalPattern")
        count, size = c.u32("EssenceContainers count"), c.u32("EssenceContainers item size")
        if size != 16 or count * 16 > c.remaining():
            raise r.error(f"bad EssenceContainers batch ({count} x {size})", klv.value_offset + c.pos)
        ecs = [c.take(16) for _ in range(count)]
        return Partition(offset, PARTITION_KINDS[klv.key[13]], klv.key[14], this, prev, footer,
                         hbc, ibc, index_sid, body_offset, body_sid, op, ecs)

    def _find_partitions(self) -> list[Partition]:
        r = self.reader
        header = self._read_partition(self.run_in)
        offsets = self._rip_offsets()
        if offsets is None and header.footer_partition:
            offsets = self._chain_offsets(self.run_in + header.footer_partition)
        if offsets is None:
            offsets = self._walk_offsets()
        offsets = sorted(set(offsets) | {self.run_in})
        parts = [header if off == self.run_in else self._read_partition(off) for off in offsets]
        for p in parts:
            if p.offset != self.run_in + p.this_partition:
                raise r.error(f"{p.kind} partition says it is at {p.this_partition}", p.offset)
        return parts

    def _rip_offsets(self) -> list[int] | None:
        """Partition offsets from the random index pack (ST 377-1 12), if the file ends with one."""
        r = self.reader
        if r.size < 20:
            return None
        total = int.from_bytes(r.read(r.size - 4, 4), "big")
        start = r.size - total
        if total < 20 or start < 0:
            return None
        if not key_matches(r.read(start, 16), RANDOM_INDEX_PACK):
            return None
        klv = r.klv_at(start)
        data = r.value(klv, 1 << 24)
        if (len(data) - 4) % 12:
            raise r.error(f"random index pack of {len(data)} bytes is not 12 n + 4", start)
        offsets = []
        for i in range(0, len(data) - 4, 12):
            off = self.run_in + int.from_bytes(data[i + 4:i + 12], "big")
            if off >= start:
                raise r.error(f"random index pack points past itself ({off})", klv.value_offset + i)
            offsets.append(off)
        return offsets

    def _chain_offsets(self, footer: int) -> list[int]:
        """Follow PreviousPartition from the footer back to the header (strictly decreasing)."""
        offsets, off = [], footer
        for _ in range(MAX_PARTITIONS):
            offsets.append(off)
            part = self._read_partition(off)
            prev = self.run_in + part.previous_partition
            if off == self.run_in:
                return offsets
            if prev >= off:
                raise self.reader.error(f"PreviousPartition {prev} does not go backwards", off)
            off = prev
        raise self.reader.error("too many partitions", footer)

    def _walk_offsets(self) -> list[int]:
        """No RIP and no footer pointer (an unfinished file): walk KLV headers for partition packs."""
        r, off, offsets = self.reader, self.run_in, []
        while off < r.size:
            klv = r.klv_at(off)
            if key_matches(klv.key, PARTITION_PACK) and klv.key[13] in PARTITION_KINDS:
                offsets.append(off)
            off = klv.end
        return offsets

    def _walk_partition(self, part: Partition) -> None:
        """Read what follows a partition pack: primer, metadata sets, index segments, up to the
        first essence element (or the next partition)."""
        r = self.reader
        off = r.klv_at(part.offset).end
        primer: dict[int, bytes] = {}
        for _ in range(MAX_KLVS_PER_PARTITION):
            if off >= part.end:
                return
            klv = r.klv_at(off, part.end)
            key = klv.key
            if key_matches(key, FILL) or key[4] == 0x01 and key[8:12] == FILL[8:12]:
                pass
            elif key_matches(key, PRIMER_PACK):
                primer = self._read_primer(klv)
            elif key_matches(key, INDEX_SEGMENT):
                self.index_segments.append(self._read_index(klv))
            elif key_matches(key, METADATA_SET) or key_matches(key, DM_SET) or key[5] == 0x53:
                self._read_set(klv, primer)
            elif key_matches(key, RANDOM_INDEX_PACK):
                return
            else:
                if key_matches(key, ENCRYPTED_TRIPLET):
                    self.encrypted = True
                part.essence_start = off
                return
            off = klv.end
        raise r.error("too many KLVs before the essence", part.offset)

    def _read_primer(self, klv: KLV) -> dict[int, bytes]:
        r = self.reader
        c = Cursor(r, r.value(klv, 1 << 24), klv.value_offset)
        count, size = c.u32("primer count"), c.u32("primer item size")
        if size != 18 or count * 18 != c.remaining():
            raise r.error(f"bad primer pack batch ({count} x {size})", klv.offset)
        return {c.u16(): c.take(16) for _ in range(count)}

    def _read_set(self, klv: KLV, primer: dict[int, bytes]) -> None:
        r = self.reader
        c = Cursor(r, r.value(klv, 1 << 24), klv.value_offset)
        s = MetadataSet(klv.key, klv.offset)
        while c.remaining():
            tag, n = c.u16("local tag"), c.u16("local length")
            data = c.take(n, f"value of local tag 0x{tag:04x}")
            if tag >= 0x8000 and tag in primer:
                ul = primer[tag]
                if ul[:7] == J2K_SUB_UL[:7] and ul[8:12] == bytes.fromhex("04010603"):
                    name = J2K_SUB_ITEMS.get(ul[12])
                    if name:
                        s.items[name] = data  # type: ignore[index]
                        continue
                s.items[ul] = data  # type: ignore[index]
            else:
                s.items[tag] = data
        if key_matches(klv.key, CRYPTO_CONTEXT) or key_matches(klv.key, CRYPTO_FRAMEWORK):
            self.encrypted = True
        uid = s.items.get(0x3C0A)
        if uid is not None:
            self.sets[uid] = s
        self.set_list.append(s)

    def _read_index(self, klv: KLV) -> IndexSegment:
        r = self.reader
        c = Cursor(r, r.value(klv, 1 << 24), klv.value_offset)
        items: dict[int, tuple[int, bytes]] = {}
        while c.remaining():
            tag, n = c.u16("index tag"), c.u16("index length")
            items[tag] = (klv.value_offset + c.pos, c.take(n, f"index item 0x{tag:04x}"))

        def num(tag, default=0):
            return _uint(items[tag][1]) if tag in items and _uint(items[tag][1]) is not None else default

        deltas = []
        if 0x3F09 in items:
            d = Cursor(r, items[0x3F09][1], items[0x3F09][0])
            count, size = d.u32("delta count"), d.u32("delta size")
            if size != 6 or count * 6 != d.remaining():
                raise r.error(f"bad DeltaEntryArray ({count} x {size})", items[0x3F09][0])
            deltas = [struct.unpack(">bBI", d.take(6)) for _ in range(count)]
        entries, count, size, eoff = b"", 0, 11, klv.value_offset
        slices, pos_tables = num(0x3F08), num(0x3F0E)
        if 0x3F0A in items:
            eoff, raw = items[0x3F0A]
            e = Cursor(r, raw, eoff)
            count, size = e.u32("index entry count"), e.u32("index entry size")
            if size < 11 + 4 * slices or count * size != e.remaining():
                raise r.error(f"bad IndexEntryArray ({count} x {size})", eoff)
            entries, eoff = raw[8:], eoff + 8
        seg = IndexSegment(klv.offset, _rational(items.get(0x3F0B, (0, b""))[1]),
                           struct.unpack(">q", items[0x3F0C][1])[0] if len(items.get(0x3F0C, (0, b""))[1]) == 8 else 0,
                           struct.unpack(">q", items[0x3F0D][1])[0] if len(items.get(0x3F0D, (0, b""))[1]) == 8 else 0,
                           num(0x3F05), num(0x3F06), num(0x3F07), slices, pos_tables, deltas,
                           count, size, entries, eoff)
        if seg.start < 0 or seg.duration < 0:
            raise r.error(f"negative index start {seg.start} or duration {seg.duration}", klv.offset)
        if not seg.edit_unit_byte_count and seg.entry_count < seg.duration:
            raise r.error(f"index segment has {seg.entry_count} entries for a duration of "
                          f"{seg.duration}", klv.offset)
        return seg

    def _dedupe_index(self) -> None:
        """Keep one segment per start position (repeated copies agree; the last one wins)."""
        by_start: dict[int, IndexSegment] = {}
        for seg in self.index_segments:
            if seg.duration or seg.edit_unit_byte_count:
                by_start[seg.start] = seg
        self.index_segments = [by_start[k] for k in sorted(by_start)]

    # -- descriptors -------------------------------------------------------------------------
    def sets_named(self, *names: str) -> list[MetadataSet]:
        return [s for s in self.set_list if s.type_name in names]

    def _picture_info(self) -> PictureInfo | None:
        found = self.sets_named(*PICTURE_DESCRIPTORS)
        if not found:
            return None
        d = found[-1]
        it = d.items
        j2k = {}
        for sub in self.sets_named("JPEG2000PictureSubDescriptor")[-1:]:
            for name in J2K_SUB_ITEMS.values():
                if name in sub.items:  # type: ignore[operator]
                    raw = sub.items[name]  # type: ignore[index]
                    j2k[name] = _uint(raw) if len(raw) <= 4 else raw
        depth = _uint(it.get(0x3301, b""))
        if depth is None and 0x3401 in it:  # RGBA PixelLayout: (code, depth) pairs
            layout = it[0x3401]
            depth = layout[1] if len(layout) >= 2 and layout[0] else None
        return PictureInfo(d.type_name, _uint(it.get(0x3203, b"")), _uint(it.get(0x3202, b"")),
                           _rational(it.get(0x3001, b"")), _uint(it.get(0x3002, b"")),
                           it.get(0x3004), depth, _rational(it.get(0x320E, b"")), j2k,
                           bool(self.sets_named("StereoscopicPictureSubDescriptor")))

    def _sound_info(self) -> SoundInfo | None:
        found = self.sets_named(*SOUND_DESCRIPTORS)
        if not found:
            return None
        it = found[-1].items
        return SoundInfo(found[-1].type_name, _uint(it.get(0x3D07, b"")),
                         _uint(it.get(0x3D01, b"")), _rational(it.get(0x3D03, b"")),
                         _uint(it.get(0x3002, b"")), it.get(0x3004))

    def _picture_body_sid(self) -> int:
        sids = {s.body_sid for s in self.index_segments if s.body_sid}
        if len(sids) == 1:
            return sids.pop()
        for s in self.sets_named("EssenceContainerData"):
            sid = _uint(s.items.get(0x3F07, b""))
            if sid:
                return sid
        with_essence = [p.body_sid for p in self.partitions if p.essence_start is not None and p.body_sid]
        return with_essence[0] if with_essence else 0

    def _is_clip_wrapped(self) -> bool:
        """Clip-wrapped when the ST 422 container UL ends in 02 (or, for sound, the ST 382 one
        names clip wrapping: 02 BWF, 04 AES3), or when the first essence KLV holds more than one
        edit unit of a VBR index (ffmpeg's OP-Atom writes one KLV for the whole clip under the
        frame-wrapped UL)."""
        ec = self.picture.essence_container if self.picture else None
        if ec and len(ec) == 16 and ec[8:14] == bytes.fromhex("0d010301020c") and ec[14] == 2:
            return True
        if self.picture is None:
            ec = self.sound.essence_container if self.sound else None
            return bool(ec and len(ec) == 16 and ec[8:14] == bytes.fromhex("0d0103010206")
                        and ec[14] in (2, 4))
        segs = [s for s in self.index_segments if s.entry_count]
        if not self._essence_parts or not segs or self.index_segments[0].edit_unit_byte_count:
            return False
        first = self._essence_parts[0]
        assert first.essence_start is not None
        klv = self.reader.klv_at(first.essence_start, first.end)
        if not (key_matches(klv.key, GC_ELEMENT) and klv.key[12] in PICTURE_ITEMS):
            return False
        offsets = [s.stream_offset(i) for s in segs[:1] for i in range(min(2, s.entry_count))]
        if len(offsets) < 2 and len(segs) > 1:
            offsets.append(segs[1].stream_offset(0))
        return len(offsets) == 2 and first.body_offset + (klv.end - first.essence_start) > offsets[1]

    def _frame_count(self) -> int:
        if self.index_segments and not self.index_segments[0].edit_unit_byte_count:
            last = self.index_segments[-1]
            n = last.start + last.duration
        elif self.picture and self.picture.container_duration is not None:
            n = self.picture.container_duration
        elif self.sound and self.sound.container_duration is not None:
            n = self.sound.container_duration
        else:
            n = 0
        if self.stereoscopic and self.picture and self.picture.container_duration \
                and n == 2 * self.picture.container_duration:
            self._eye_entries = True
            return n // 2
        self._eye_entries = False
        return n

    @property
    def edit_rate(self) -> Fraction | None:
        """Frames per second. ST 429-10 stereo files (asdcplib) give the descriptor twice the
        rate (one KLV per eye) but index only left eyes, at the composition's rate."""
        if self.stereoscopic:
            rates = [s.edit_rate for s in self.index_segments if s.edit_rate]
            if rates:
                return rates[0]
            if self.picture and self.picture.sample_rate:
                return self.picture.sample_rate / 2
        if self.picture and self.picture.sample_rate:
            return self.picture.sample_rate
        for seg in self.index_segments:
            if seg.edit_rate:
                return seg.edit_rate
        return None

    # -- frames --------------------------------------------------------------------------------
    def check_readable(self) -> None:
        """Raise unless the picture can be read: encrypted without a key, no picture, or no index."""
        if self.encrypted and self.key is None:
            raise EncryptedMedia(self.path, "essence is encrypted (SMPTE ST 429-6); a KDM is needed "
                             "to decrypt it (with the recipient's private key), or the content key file")
        if self.picture is None:
            raise UnsupportedMedia(self.path, "no picture essence descriptor (not a picture track file)")
        if not self.index_segments:
            raise UnsupportedMedia(self.path, "no index table: cannot seek to frames")
        if not self._essence_parts:
            raise CorruptMedia(self.path, f"no essence partition for body SID {self.body_sid}")

    def check_key(self, key: bytes) -> None:
        """Raise :class:`~.errors.EncryptedMedia` unless ``key`` opens this file's essence: the
        check value of its first encrypted triplet (ST 429-6 clause 7), without reading the
        essence's MIC (a damaged frame is that frame's error, not the key's)."""

        value = self.first_triplet()
        if value is not None:
            check_key(value, key, path=self.path)

    def first_triplet(self) -> bytes | None:
        """The value of the first encrypted triplet of the essence (body SID :attr:`body_sid`),
        None when its first elements are in the clear."""
        r = self.reader
        for part in self._essence_parts or [p for p in self.partitions if p.essence_start is not None][:1]:
            off = part.essence_start
            assert off is not None
            for _ in range(16):
                if off >= part.end:
                    break
                klv = r.klv_at(off, part.end)
                if key_matches(klv.key, ENCRYPTED_TRIPLET):
                    return r.read(klv.value_offset, klv.length, "the first encrypted triplet")
                if key_matches(klv.key, PARTITION_PACK):
                    break
                off = klv.end
            break
        return None

    def stream_offset(self, n: int) -> tuple[int, int | None]:
        """(stream offset, bytes or None) of edit unit ``n`` from the index (ST 377-1 11.4)."""
        i = bisect.bisect_right(self._seg_starts, n) - 1
        if i < 0:
            raise self.reader.error(f"no index segment covers edit unit {n}")
        seg = self.index_segments[i]
        if seg.edit_unit_byte_count:
            base = sum(s.duration * s.edit_unit_byte_count for s in self.index_segments[:i])
            return base + (n - seg.start) * seg.edit_unit_byte_count, seg.edit_unit_byte_count
        k = n - seg.start
        if k >= seg.entry_count:
            raise self.reader.error(f"no index entry for edit unit {n}", seg.offset)
        size = None
        if self.clip_wrapped:
            if k + 1 < seg.entry_count:
                size = seg.stream_offset(k + 1) - seg.stream_offset(k)
            elif i + 1 < len(self.index_segments):
                nxt = self.index_segments[i + 1]
                size = nxt.stream_offset(0) - seg.stream_offset(k) if nxt.entry_count else None
        return seg.stream_offset(k), size

    def file_offset(self, stream_offset: int) -> tuple[int, Partition]:
        """Map a stream offset of the picture's body SID to a file offset."""
        i = bisect.bisect_right(self._essence_keys, stream_offset) - 1
        if i < 0:
            raise self.reader.error(f"stream offset {stream_offset} precedes the essence")
        part = self._essence_parts[i]
        start = part.essence_start
        assert start is not None
        if self.clip_wrapped:
            start = self.reader.klv_at(start, part.end).value_offset
        off = start + stream_offset - part.body_offset
        if off >= part.end:
            raise self.reader.error(f"stream offset {stream_offset} lies past its partition's "
                                    f"essence (ends at {part.end})", part.offset)
        return off, part

    def frame(self, n: int, eye: str | None = None) -> bytes:
        """Codestream of frame ``n`` (0-based), located through the index table (decrypted,
        its integrity code checked, when the essence is encrypted).

        A stereoscopic file (ST 429-10) holds two codestreams a frame: ``eye`` ("left" or
        "right") says which, and without one it raises ValueError rather than hand over one
        eye as the frame (:meth:`frame_pair` reads both).  A 2D file's frame is its one
        codestream, whatever ``eye`` says (a composition's 2D reels beside 3D ones)."""
        off, size = self.locate_frame(n, eye)
        what = self._frame_name(n, eye)
        data = self.reader.read(off, size, what)
        if self.encrypted:
            _, data = decrypt_triplet(data, self.key, path=self.path, where=f"{what}: ")
        return data

    def frame_pair(self, n: int) -> tuple[bytes, bytes]:
        """(left, right) codestreams of frame ``n`` (0-based edit unit) of a stereoscopic
        track file (ST 429-10), each located, read and checked as :meth:`frame` does;
        UnsupportedMedia for a 2D file."""
        if not self.stereoscopic:
            raise UnsupportedMedia(self.path, "not a stereoscopic track file (no ST 429-10 "
                                              "StereoscopicPictureSubDescriptor): one codestream a frame")
        return self.frame(n, "left"), self.frame(n, "right")

    def frame_size(self, n: int, eye: str | None = None) -> int:
        """Bytes in frame ``n``'s codestream (``eye`` as :meth:`frame` takes it), without
        reading it (an encrypted frame's SourceLength, from its triplet's first fields)."""
        off, size = self.locate_frame(n, eye)
        if not self.encrypted:
            return size
        head = self.reader.read(off, min(size, 128), self._frame_name(n, eye))
        return parse_triplet_head(head, self.path)[3]

    def _frame_name(self, n: int, eye: str | None) -> str:
        """How errors name frame ``n`` (and its eye, in a stereoscopic file)."""
        return f"frame {n} ({eye} eye)" if self.stereoscopic and eye else f"frame {n}"

    def _right_eye(self, n: int, eye: str | None) -> bool:
        """Whether ``eye`` asks for the right codestream of an ST 429-10 frame; ValueError for
        an eye that is neither "left" nor "right", or none asked of a stereoscopic file."""
        if eye not in (None, "left", "right"):
            raise ValueError(f"eye must be 'left' or 'right', not {eye!r}")
        if eye is None and self.stereoscopic:
            raise ValueError(f"{self.path}: frame {n} of a stereoscopic track file (ST 429-10) "
                             f"is two codestreams: ask for eye='left' or 'right', or frame_pair({n})")
        return eye == "right" and self.stereoscopic

    def locate_frame(self, n: int, eye: str | None = None) -> tuple[int, int]:
        """(file offset, bytes) of frame ``n``'s codestream (``eye`` as :meth:`frame` takes
        it), from the index table.  An ST 429-10 right eye is the picture element after the
        left one (asdcplib indexes only the left), and must lie before the next frame's."""
        self.check_readable()
        right = self._right_eye(n, eye)
        if not 0 <= n < self.frame_count:
            raise IndexError(f"frame {n} out of range 0..{self.frame_count - 1}")
        what = self._frame_name(n, eye)
        unit = 2 * n + right if self._eye_entries else n
        try:
            so, size = self.stream_offset(unit)
            off, part = self.file_offset(so)
        except CorruptMedia as exc:
            raise self.reader.error(f"{what}: {exc.reason}", exc.offset) from None
        if self.clip_wrapped or (size is not None and not self._points_at_klv(off)):
            if size is None:
                size = self._clip_end(part) - off
            if size <= 0 or off + size > part.end:
                raise self.reader.error(f"index gives {what} an impossible size {size}", off)
            return off, size
        if not right or self._eye_entries:
            return self._picture_element(off, part, what)
        value_offset, length = self._picture_element(off, part, what, second=True)
        if n + 1 < self.frame_count:
            try:
                following = self.stream_offset(n + 1)[0]
            except CorruptMedia as exc:
                raise self.reader.error(f"{what}: {exc.reason}", exc.offset) from None
            if so + value_offset - off >= following:
                raise self.reader.error(f"{what}: the edit unit holds one picture element (the "
                                        f"next is frame {n + 1}'s; ST 429-10 pairs them)", off)
        return value_offset, length

    def _points_at_klv(self, off: int) -> bool:
        try:
            return self.reader.read(off, 4) == b"\x06\x0e\x2b\x34"
        except MediaError:
            return False

    def _clip_end(self, part: Partition) -> int:
        assert part.essence_start is not None
        return self.reader.klv_at(part.essence_start, part.end).end

    def _picture_element(self, off: int, part: Partition, what: str,
                         second: bool = False) -> tuple[int, int]:
        """(file offset, bytes) of the value of the picture element of the content package at
        ``off`` (a few KLVs read, within ``part``); ``second``: of its second one, an ST 429-10
        right eye. ``what`` names the frame in errors."""
        r = self.reader
        seen = 0
        for _ in range(16):
            if off >= part.end:
                break
            try:
                klv = r.klv_at(off, part.end)
            except MediaError as exc:
                raise r.error(f"index entry for {what} does not point at an essence element "
                              f"({exc.reason})", off) from None
            element = klv.key
            if key_matches(klv.key, ENCRYPTED_TRIPLET):
                if self.key is None:
                    raise EncryptedMedia(self.path, "essence is encrypted (SMPTE ST 429-6); a KDM is "
                                     "needed to decrypt it", off)

                element = parse_triplet_head(r.read(klv.value_offset, min(klv.length, 128),
                                                    what), self.path)[2]
            if key_matches(element, GC_ELEMENT) and element[12] in PICTURE_ITEMS:
                if not second or seen:
                    return klv.value_offset, klv.length
                seen += 1
            elif key_matches(klv.key, PARTITION_PACK) or not (
                    klv.key[8:12] == GC_ELEMENT[8:12] or key_matches(klv.key, FILL)
                    or klv.key[4] == 0x01):
                break   # not part of a content package (ST 379-1 6.x: system, picture, ... items)
            off = klv.end
        if second and seen:
            raise r.error(f"{what}: no second picture element (the right eye) follows the "
                          "left one in its edit unit (ST 429-10)", off)
        raise r.error(f"index entry for {what} does not point at a picture essence element", off)


def open_mxf(path) -> MXFFile:
    return MXFFile(path)
