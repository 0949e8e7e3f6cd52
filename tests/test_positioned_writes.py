"""Track-file elements written at their offsets by threads (media/positioned_writes.py): the
same bytes as one sequential write, short writes continued, errors raised to the writer."""

import os
import random
import threading
from fractions import Fraction

import pytest
from cinegpu.media.mxf import positioned_writes
from cinegpu.media.mxf.read import MXFFile
from cinegpu.media.mxf.write import HEADER_RESERVE, PictureTrackWriter
from cinegpu.media.mxf.positioned_writes import PositionedWrites, pwrite_all


def _pieces(seed: int, n: int = 60):
    rng = random.Random(seed)
    return [[rng.randbytes(rng.choice((0, 1, 17, 4096, 70_000))) for _ in range(rng.randint(1, 3))]
            for _ in range(n)]


def test_parts_land_at_their_offsets_from_several_threads(tmp_path):
    pieces = _pieces(1)
    path = tmp_path / "f"
    with open(path, "wb") as f:
        w = PositionedWrites(f.fileno(), threads=4, depth=3)
        at = 0
        for parts in pieces:
            w.put(parts, at)
            at += sum(map(len, parts))
        w.drain()
        w.close()
    assert path.read_bytes() == b"".join(b"".join(p) for p in pieces)


def test_short_writes_are_continued(tmp_path, monkeypatch):
    real = os.pwritev
    calls = []

    def short(fd, views, offset):            # at most 1000 bytes a call, as a signal might cut
        left, cut = 1000, []
        for v in views:
            cut.append(v[:left])
            left -= len(cut[-1])
            if not left:
                break
        calls.append(offset)
        if len(calls) > 20:                  # a loop that does not advance: fail, not fill a disk
            raise AssertionError(f"pwritev called {len(calls)} times")
        return real(fd, cut, offset)
    monkeypatch.setattr(positioned_writes.os, "pwritev", short)
    parts = [os.urandom(2500), b"", os.urandom(999), os.urandom(1)]
    path = tmp_path / "f"
    with open(path, "wb") as f:
        f.write(b"x" * 10)
        f.flush()
        pwrite_all(f.fileno(), parts, 10)
    assert path.read_bytes() == b"x" * 10 + b"".join(parts)
    assert calls == [10, 1010, 2010, 3010]


def test_a_write_of_nothing_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(positioned_writes.os, "pwritev", lambda fd, views, offset: 0)
    with open(tmp_path / "f", "wb") as f, pytest.raises(OSError, match="wrote nothing"):
        pwrite_all(f.fileno(), [b"abc"], 0)


def test_a_failed_write_is_raised_by_a_later_put_or_by_drain(tmp_path):
    with open(tmp_path / "f", "wb") as f:
        fd = os.dup(f.fileno())
    os.close(fd)                               # a closed descriptor: every write fails
    w = PositionedWrites(fd, threads=2, depth=2)
    with pytest.raises(OSError):
        for k in range(5):
            w.put([b"abc"], 3 * k)
    w.close()
    w = PositionedWrites(fd, threads=2, depth=8)
    w.put([b"abc"], 0)
    with pytest.raises(OSError):
        w.drain()
    w.close()


def test_close_drops_the_writes_not_begun(tmp_path):
    gate = threading.Event()
    real = positioned_writes.pwrite_all
    path = tmp_path / "f"
    with open(path, "wb") as f:
        w = PositionedWrites(f.fileno(), threads=1, depth=8)
        w._pool.submit(gate.wait)              # holds the one thread
        for k in range(4):
            w.put([bytes([65 + k])], k)
        gate.set()
        w.close()
    assert len(path.read_bytes()) <= 4 and real is positioned_writes.pwrite_all
    with pytest.raises(ValueError):
        PositionedWrites(0, threads=0)


class _Sequential(PictureTrackWriter):
    WRITE_THREADS = 0


@pytest.mark.parametrize("encrypted", [False, True])
def test_a_track_file_written_by_threads_has_the_sequential_writers_essence(tmp_path, encrypted):
    import numpy as np
    from cinegpu.encode.encoder import encode
    rng = np.random.default_rng(3)
    frames = [encode(rng.integers(0, 1 << k % 8 + 1, (48, 64), dtype=np.uint8), bits=8)
              for k in range(12)]
    assert len(set(map(len, frames))) > 6         # elements of many sizes
    out = {}
    for cls in (PictureTrackWriter, _Sequential):
        kw = {}
        if encrypted:
            pytest.importorskip("cryptography")    # AES for the triplets (ST 429-6)
            import uuid

            from cinegpu.media.mxf.write import EssenceEncryption
            kw["encryption"] = EssenceEncryption(bytes(range(16)), uuid.UUID(int=7), bytes(16))
        w = cls(tmp_path / f"{cls.__name__}.mxf", edit_rate=Fraction(24), **kw)
        with w:
            for cs in frames:
                w.write(cs)
            size = w.close().size
        body = len(w._partition(3, HEADER_RESERVE, 0, 0, body_sid=1)) + w.stream_offset
        data = w.path.read_bytes()
        assert len(data) == size
        out[cls] = (data[HEADER_RESERVE:HEADER_RESERVE + body], len(data), list(w.offsets))
        mxf = MXFFile(w.path)                  # and our reader finds every frame
        try:
            if not encrypted:
                assert [mxf.frame(k) for k in range(len(frames))] == frames
            assert mxf.frame_count == len(frames)
        finally:
            mxf.close()
    assert PictureTrackWriter.WRITE_THREADS > 1
    if not encrypted:     # encryption draws a fresh IV for each element
        assert out[PictureTrackWriter] == out[_Sequential]
    else:
        assert out[PictureTrackWriter][1:] == out[_Sequential][1:]


def test_a_frame_in_a_buffer_the_caller_reuses_is_written_as_it_was(tmp_path, monkeypatch):
    import numpy as np
    from cinegpu.encode.encoder import encode
    cs = encode(np.arange(48 * 64, dtype=np.uint16).reshape(48, 64) % 251, bits=8)
    gate, real = threading.Event(), positioned_writes.pwrite_all

    def held(*args):                           # no write before the caller has reused its buffer
        gate.wait(10)
        real(*args)
    monkeypatch.setattr(positioned_writes, "pwrite_all", held)
    buf = bytearray(cs)
    w = PictureTrackWriter(tmp_path / "t.mxf", edit_rate=Fraction(24))
    with w:
        for _ in range(3):
            w.write(buf)
        buf[:] = bytes(len(buf))
        gate.set()
        w.close()
    mxf = MXFFile(w.path)
    try:
        assert [mxf.frame(k) for k in range(3)] == [cs] * 3
    finally:
        mxf.close()
