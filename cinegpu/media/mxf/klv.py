"""KLV coding (SMPTE ST 336) over a seekable file, every read bounded.

A key is 16 bytes (a SMPTE UL, ``06 0E 2B 34 ...``); the length is BER coded
(short form below 0x80, long form ``0x80 | n`` followed by n big-endian bytes,
n <= 8). Keys are compared with byte 7 (the registry version) ignored, since
writers differ there (ST 377-1 7.2 asks readers to ignore it).
"""

from __future__ import annotations

import os
import struct
import threading
from dataclasses import dataclass
from typing import BinaryIO

from cinegpu.media.errors import CorruptMedia, MediaError

UL_PREFIX = b"\x06\x0e\x2b\x34"


def ul_str(key: bytes) -> str:
    """A key as dotted hex groups of four bytes (as asdcplib and ffprobe print them)."""
    return key.hex(".", 4)


def key_matches(key: bytes, pattern: bytes) -> bool:
    """True when ``key`` starts like ``pattern``, ignoring the version byte 7."""
    n = len(pattern)
    if len(key) < n:
        return False
    return key[:7] == pattern[:7] and key[8:n] == pattern[8:]


@dataclass(frozen=True)
class KLV:
    """One KLV triplet's position in the file (bytes)."""

    key: bytes
    offset: int        # first byte of the key
    value_offset: int  # first byte of the value
    length: int        # bytes in the value

    @property
    def end(self) -> int:
        return self.value_offset + self.length


class FileReader:
    """A read-only file with bounded, offset-checked reads."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        try:
            self.file: BinaryIO = open(self.path, "rb")
        except OSError as exc:
            raise MediaError(self.path, f"cannot open: {exc.strerror or exc}") from None
        self.size = os.fstat(self.file.fileno()).st_size
        self._lock = threading.Lock()

    def close(self) -> None:
        self.file.close()

    def error(self, message: str, offset: int | None = None) -> CorruptMedia:
        """The error for bytes of this file that break the KLV or MXF rules."""
        return CorruptMedia(self.path, message, offset)

    def read(self, offset: int, n: int, what: str = "data") -> bytes:
        """Exactly ``n`` bytes at ``offset``, or a MediaError naming the truncation."""
        if offset < 0 or n < 0 or offset + n > self.size:
            raise self.error(f"truncated {what}: {n} bytes wanted, file has {self.size}", offset)
        data = self._read_at(offset, n)
        if len(data) != n:
            raise self.error(f"short read of {what}", offset)
        return data

    def _read_at(self, offset: int, n: int) -> bytes:
        """Positional reads (``os.pread``): threads reading frames of one file at once must not
        share a seek position (a seek then a read raced, and a frame came from another's
        offset); a lock where the platform has no pread."""
        if not hasattr(os, "pread"):
            with self._lock:
                self.file.seek(offset)
                return self.file.read(n)
        parts, fd = [], self.file.fileno()
        while n > 0:
            chunk = os.pread(fd, n, offset)
            if not chunk:
                break
            parts.append(chunk)
            offset += len(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def klv_at(self, offset: int, limit: int | None = None) -> KLV:
        """The key and BER length at ``offset``; the value must end by ``limit`` (default EOF)."""
        limit = self.size if limit is None else min(limit, self.size)
        head = self.read(offset, min(25, max(0, self.size - offset)), "KLV header")
        if len(head) < 17:
            raise self.error("truncated KLV header", offset)
        key = head[:16]
        if key[:4] != UL_PREFIX:
            raise self.error(f"no SMPTE key here (found {head[:4].hex()})", offset)
        first = head[16]
        if first < 0x80:
            length, lsize = first, 1
        else:
            n = first & 0x7F
            if n == 0 or n > 8:
                raise self.error(f"bad BER length form 0x{first:02x}", offset + 16)
            if 17 + n > len(head):
                raise self.error("truncated BER length", offset + 16)
            length, lsize = int.from_bytes(head[17:17 + n], "big"), 1 + n
        value_offset = offset + 16 + lsize
        if value_offset + length > limit:
            raise self.error(
                f"KLV {ul_str(key)} length {length} runs past the end ({limit})", offset)
        return KLV(key, offset, value_offset, length)

    def value(self, klv: KLV, max_bytes: int = 1 << 28) -> bytes:
        if klv.length > max_bytes:
            raise self.error(f"KLV value of {klv.length} bytes is implausibly large", klv.offset)
        return self.read(klv.value_offset, klv.length, f"value of {ul_str(klv.key)}")


class Cursor:
    """Sequential big-endian reads from a bytes value; errors name the absolute offset."""

    def __init__(self, reader: FileReader, data: bytes, base: int):
        self.reader, self.data, self.base, self.pos = reader, data, base, 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int, what: str = "field") -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.reader.error(f"truncated {what}", self.base + self.pos)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str = "field"):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size, what))

    def u8(self, what: str = "field") -> int:
        return self.take(1, what)[0]

    def u16(self, what: str = "field") -> int:
        return self.unpack(">H", what)[0]

    def u32(self, what: str = "field") -> int:
        return self.unpack(">I", what)[0]

    def u64(self, what: str = "field") -> int:
        return self.unpack(">Q", what)[0]

    def i64(self, what: str = "field") -> int:
        return self.unpack(">q", what)[0]
