"""Reading PCM WAV files for mastering: a bounded RIFF chunk parser.

Python's :mod:`wave` (3.11) reads only ``WAVE_FORMAT_PCM``; the multichannel 24-bit files a
sound studio delivers are ``WAVE_FORMAT_EXTENSIBLE`` (0xFFFE), which it refuses, so this
module parses the RIFF structure itself (Microsoft's RIFF/WAVE, "Multimedia Programming
Interface and Data Specifications 1.0" 1991, and the WAVEFORMATEXTENSIBLE addendum):

    "RIFF" size "WAVE"  then chunks: id (4 bytes), size (u32 little-endian), body, pad to even
    "fmt "  wFormatTag u16, nChannels u16, nSamplesPerSec u32, nAvgBytesPerSec u32,
            nBlockAlign u16, wBitsPerSample u16 [, cbSize u16, wValidBitsPerSample u16,
            dwChannelMask u32, SubFormat GUID (16 bytes)]
    "data"  the interleaved samples, little-endian, signed (16, 24, 32 bits)

A WAV over 4 GiB (a feature's 5.1 mix at 24 bits and 48 kHz passes it after about 2 h 4 min)
is an RF64 file (EBU Tech 3306; ITU-R BS.2088's BW64 is the same layout): "RF64" (or "BW64")
in place of "RIFF", 0xFFFFFFFF in the 32-bit sizes that overflow, and as the first chunk

    "ds64"  riffSize u64, dataSize u64, sampleCount u64, tableLength u32, then tableLength
            entries of chunkId (4 bytes) and chunkSize u64 for other chunks over 4 GiB

whose 64-bit sizes stand in for the 0xFFFFFFFF ones.

Only the header is read by :func:`read_wav_info`; samples are read a block at a time by
:func:`read_samples`. Every count is checked against the file's size before it is used, at
most :data:`MAX_CHUNKS` chunks are looked at, and a malformed header raises
:class:`~.errors.CorruptMedia` (or :class:`~.errors.UnsupportedMedia` for a valid file of a
kind not read here) naming the file and the byte offset.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cinegpu.media.errors import CorruptMedia, MediaError, UnsupportedMedia

__all__ = ["WavInfo", "read_samples", "read_wav_info"]

#: Chunks looked at before "data" is given up on (a RIFF file of a real WAV has a handful).
MAX_CHUNKS = 64
WAVE_FORMAT_PCM, WAVE_FORMAT_EXTENSIBLE = 0x0001, 0xFFFE
#: KSDATAFORMAT_SUBTYPE_PCM, as stored (GUID 00000001-0000-0010-8000-00aa00389b71, mixed endian).
SUBTYPE_PCM = bytes.fromhex("0100000000001000800000aa00389b71")
#: Container sizes read (bits per sample); 8-bit WAV is unsigned and never cinema material.
SAMPLE_BITS = (16, 24, 32)
#: The first four bytes of a WAV: RIFF, and the 64-bit forms (EBU Tech 3306 RF64, BS.2088 BW64).
RIFF_IDS, RF64_IDS = (b"RIFF",), (b"RF64", b"BW64")
#: A 32-bit chunk size that defers to the ds64 chunk (EBU Tech 3306).
SIZE_IN_DS64 = 0xFFFFFFFF
#: ds64 table entries looked at (EBU Tech 3306 expects none in practice).
MAX_DS64_TABLE = 64


@dataclass(frozen=True)
class WavInfo:
    """A PCM WAV file's format and where its samples lie.

    ``rate`` in samples per second per channel; ``bits``: the container size of one sample
    (16, 24 or 32); ``frames``: samples per channel; ``data_offset`` and ``data_size`` in bytes
    from the start of the file; ``block_align``: bytes per sample frame (all channels)."""

    path: Path
    channels: int
    rate: int
    bits: int
    frames: int
    data_offset: int
    data_size: int
    block_align: int
    channel_mask: int | None = None     # dwChannelMask of an extensible file

    @property
    def duration(self) -> float:
        """Seconds."""
        return self.frames / self.rate


def _chunks(f, path: Path, size: int, big: dict[bytes, int] | None = None):
    """(id, body offset, body size) of each chunk after the RIFF header, bounded.  ``big``
    (an RF64 file's, :func:`_read_ds64`): the 64-bit sizes of chunks whose 32-bit size is
    :data:`SIZE_IN_DS64`; such a chunk not in it is CorruptMedia."""
    pos = 12
    for _ in range(MAX_CHUNKS):
        if pos + 8 > size:
            return
        f.seek(pos)
        head = f.read(8)
        if len(head) < 8:
            return
        cid, n = head[:4], struct.unpack("<I", head[4:])[0]
        if big is not None and n == SIZE_IN_DS64:
            if cid not in big:
                raise CorruptMedia(path, f"{cid!r} chunk's size is deferred to the ds64 chunk, "
                                         "which does not give it", pos + 4)
            n = big[cid]
        yield cid, pos + 8, n
        pos += 8 + n + (n & 1)
    raise CorruptMedia(path, f"no data chunk among the first {MAX_CHUNKS} chunks", pos)


def _parse_fmt(path: Path, body: bytes, offset: int) -> tuple[int, int, int, int, int, int | None]:
    """(format tag, channels, rate, block align, bits, channel mask) of a "fmt " chunk body."""
    if len(body) < 16:
        raise CorruptMedia(path, f"fmt chunk of {len(body)} bytes; at least 16 expected", offset)
    tag, channels, rate, _avg, align, bits = struct.unpack("<HHIIHH", body[:16])
    mask = None
    if tag == WAVE_FORMAT_EXTENSIBLE:
        if len(body) < 40:
            raise CorruptMedia(path, f"WAVE_FORMAT_EXTENSIBLE fmt chunk of {len(body)} bytes; "
                                     "40 expected", offset)
        valid, mask = struct.unpack("<HI", body[18:24])
        if body[24:40] != SUBTYPE_PCM:
            raise UnsupportedMedia(path, f"extensible sub-format {body[24:40].hex()} is not "
                                         "integer PCM", offset + 24)
        if valid not in (0, bits) and not (bits == 32 and valid == 24):
            raise UnsupportedMedia(path, f"{valid} valid bits in {bits}-bit samples", offset + 18)
    elif tag != WAVE_FORMAT_PCM:
        raise UnsupportedMedia(path, f"format tag 0x{tag:04x} is not integer PCM "
                                     "(1 or 0xFFFE)", offset)
    if bits not in SAMPLE_BITS:
        raise UnsupportedMedia(path, f"{bits}-bit samples; 16, 24 or 32-bit PCM expected",
                               offset + 14)
    if channels < 1:
        raise CorruptMedia(path, "0 channels", offset + 2)
    if align != channels * bits // 8:
        raise CorruptMedia(path, f"block align {align}; {channels} channels of {bits} bits "
                                 f"make {channels * bits // 8}", offset + 12)
    if rate < 1:
        raise CorruptMedia(path, "sample rate 0", offset + 4)
    return tag, channels, rate, align, bits, mask


def _read_ds64(f, path: Path, size: int) -> dict[bytes, int]:
    """The 64-bit chunk sizes of an RF64/BW64 file's ds64 chunk, its first (EBU Tech 3306
    clause 3): ``b"data"``'s from dataSize, others from its table."""
    f.seek(12)
    head = f.read(8)
    if len(head) < 8 or head[:4] != b"ds64":
        raise CorruptMedia(path, "RF64 file without a ds64 chunk first", 12)
    n = struct.unpack("<I", head[4:])[0]
    if n < 28 or 20 + n > size:
        raise CorruptMedia(path, f"ds64 chunk of {n} bytes; at least 28, within the file, "
                                 "expected", 16)
    body = f.read(min(n, 28 + 12 * MAX_DS64_TABLE))
    _riff, data, _count, entries = struct.unpack("<QQQI", body[:28])
    if entries > MAX_DS64_TABLE or 28 + 12 * entries > n:
        raise CorruptMedia(path, f"ds64 table of {entries} entries in a {n}-byte chunk", 44)
    big = {body[28 + 12 * k:32 + 12 * k]: struct.unpack("<Q", body[32 + 12 * k:40 + 12 * k])[0]
           for k in range(entries)}
    big[b"data"] = data
    return big


def read_wav_info(path) -> WavInfo:
    """The format and data extent of a PCM WAV file; MediaError if it is missing, not a
    RIFF/WAVE (or RF64/BW64 WAVE) file, or not 16/24/32-bit integer PCM; the data chunk
    must lie in the file."""
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise MediaError(path, f"cannot read: {exc.strerror or exc}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(12)
        if len(head) < 12 or head[:4] not in RIFF_IDS + RF64_IDS or head[8:12] != b"WAVE":
            raise UnsupportedMedia(path, "not a RIFF/WAVE file", 0)
        big = _read_ds64(f, path, size) if head[:4] in RF64_IDS else None
        fmt = None
        for cid, offset, n in _chunks(f, path, size, big):
            if cid == b"fmt ":
                if n > 1024:
                    raise CorruptMedia(path, f"fmt chunk of {n} bytes", offset - 4)
                f.seek(offset)
                fmt = _parse_fmt(path, f.read(n), offset)
            elif cid == b"data":
                if fmt is None:
                    raise CorruptMedia(path, "data chunk before the fmt chunk", offset - 8)
                if offset + n > size:
                    raise CorruptMedia(path, f"data chunk of {n} bytes runs past the end of the "
                                             f"{size}-byte file (truncated)", offset - 4)
                _tag, channels, rate, align, bits, mask = fmt
                if n % align:
                    raise CorruptMedia(path, f"data chunk of {n} bytes is not a whole number "
                                             f"of {align}-byte sample frames", offset - 4)
                return WavInfo(path, channels, rate, bits, n // align, offset, n, align, mask)
        raise CorruptMedia(path, "no data chunk" if fmt is not None else "no fmt chunk", size)


def read_samples(info: WavInfo, start: int, count: int) -> np.ndarray:
    """Samples ``start`` .. ``start + count`` (per channel) as an (n, channels) int32 array of
    24-bit values: 16-bit samples shifted up 8 bits (exact), 24-bit as stored, 32-bit
    truncated to their top 24 bits. Fewer than ``count`` rows past the end of the data."""
    count = max(0, min(count, info.frames - start))
    width = info.bits // 8
    with open(info.path, "rb") as f:
        f.seek(info.data_offset + start * info.block_align)
        raw = f.read(count * info.block_align)
    if len(raw) != count * info.block_align:
        raise CorruptMedia(info.path, "file shrank while being read",
                           info.data_offset + start * info.block_align + len(raw))
    if width == 2:
        out = np.frombuffer(raw, "<i2").astype(np.int32) << 8
    elif width == 4:
        out = np.frombuffer(raw, "<i4") >> 8
    else:
        b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        out = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        out = np.where(out >= 1 << 23, out - (1 << 24), out)
    return out.reshape(count, info.channels).astype(np.int32, copy=False)
