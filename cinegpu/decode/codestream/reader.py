"""A byte reader bounded to one marker segment or box.

Every marker segment is parsed from a :class:`SegmentReader` limited to the
length the segment declares (T.800 A.1.4: Lxxx counts itself but not the
marker); :meth:`SegmentReader.finish` then checks the parser consumed it
exactly. Offsets are absolute byte offsets into the input, for error messages.
"""

from __future__ import annotations

import struct

from ..errors import InvalidSegment, TruncatedCodestream


class SegmentReader:
    """Big-endian reads of ``data[start:end]``, raising on over-read."""

    __slots__ = ("data", "pos", "end", "name")

    def __init__(self, data: bytes | memoryview, start: int, end: int, name: str) -> None:
        self.data = data
        self.pos = start
        self.end = end
        self.name = name

    @property
    def remaining(self) -> int:
        """Bytes left before the segment's end."""
        return self.end - self.pos

    def _take(self, n: int) -> int:
        if self.pos + n > self.end:
            raise InvalidSegment(f"{self.name}: segment too short, needs {n} more bytes", self.pos)
        start = self.pos
        self.pos += n
        return start

    def u8(self) -> int:
        return self.data[self._take(1)]

    def u16(self) -> int:
        i = self._take(2)
        return (self.data[i] << 8) | self.data[i + 1]

    def u32(self) -> int:
        i = self._take(4)
        d = self.data
        return (d[i] << 24) | (d[i + 1] << 16) | (d[i + 2] << 8) | d[i + 3]

    def u16s(self, n: int) -> tuple[int, ...]:
        """``n`` big-endian u16 values in one read (a QCD lists up to 97)."""
        return struct.unpack_from(f">{n}H", self.data, self._take(2 * n))

    def uint(self, nbytes: int) -> int:
        """An unsigned integer of 1, 2 or 4 bytes."""
        return {1: self.u8, 2: self.u16, 4: self.u32}[nbytes]()

    def raw(self, n: int) -> bytes:
        i = self._take(n)
        return bytes(self.data[i : i + n])

    def rest(self) -> bytes:
        return self.raw(self.remaining)

    def finish(self) -> None:
        """Check the segment was consumed exactly (FFmpeg's rule)."""
        if self.pos != self.end:
            raise InvalidSegment(
                f"{self.name}: {self.end - self.pos} bytes left unparsed in the segment", self.pos
            )


def read_u16(data: bytes | memoryview, pos: int, what: str) -> int:
    """A big-endian u16 at ``pos``, or TruncatedCodestream naming ``what``."""
    if pos + 2 > len(data):
        raise TruncatedCodestream(f"data ends inside {what}", pos)
    return (data[pos] << 8) | data[pos + 1]
