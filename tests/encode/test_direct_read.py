"""Frames read around the page cache (encode.direct_read): the aligned pieces, the probe of
the page cache, the host reader, and the GPU ring and mapped uploads' use of them."""

import os
import time

import numpy as np
import pytest

from cinegpu.encode import direct_read
from cinegpu.encode.direct_read import ALIGN, in_page_cache, pieces, read_run_direct
from cinegpu.encode.mapped_upload import FileRun, pread_full


def _cold_file(path, data: bytes) -> None:
    """``data`` written to ``path`` and dropped from the page cache; skips the test where this
    file system keeps the pages anyway or cannot say (``RWF_NOWAIT``)."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    _evict(path, len(data))


def _drop(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _evict(path, nbytes: int) -> None:
    """``path`` dropped from the page cache, the test skipped where that cannot be seen (the
    probe's misses bring their pages in, so the file is dropped again after it; the read-ahead
    they start can land after that drop, so it is dropped once more when that has settled)."""
    _drop(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        if in_page_cache(fd, 0, nbytes):
            pytest.skip("this file system keeps the pages, or cannot tell whether it does")
    finally:
        os.close(fd)
    _settled_drop(path)


def _settled_drop(path) -> None:
    """``path`` dropped from the page cache once the read-ahead a probe's miss may have started
    has landed (it can land after a drop made at once)."""
    _drop(path)
    time.sleep(0.2)
    _drop(path)


@pytest.mark.parametrize("align", [1, 512, ALIGN])
def test_pieces_cover_the_run_exactly_in_aligned_reads(align):
    """Every read starts and (but for the file's end) ends on an ``align`` boundary, is at most
    a chunk long, and the pieces of the run they carry follow one another without a gap or an
    overlap, each the file's bytes at the same place."""
    rng = np.random.default_rng(align)
    cases = [(0, 1), (1, 1), (align - 1, 2), (3, align * 5 + 7), (align * 3, align * 2)]
    cases += [(int(rng.integers(0, 5 * align)), int(rng.integers(1, 40 * align))) for _ in range(50)]
    for offset, nbytes in cases:
        for chunk in (align, 3 * align, 16 * align):
            want = 0
            for at, length, skip, out_at, n in pieces(offset, nbytes, chunk, align):
                assert at % align == 0 and length % align == 0 and 0 < length <= chunk
                assert out_at == want and n > 0 and skip + n <= length
                assert at + skip == offset + out_at      # the same byte of the file
                assert skip == 0 or out_at == 0           # only the first read starts early
                want += n
            assert want == nbytes
    with pytest.raises(ValueError):
        list(pieces(0, 10, 1000, 512))


@pytest.mark.parametrize("offset, shape, chunk, slots", [
    (8, (37, 51, 3), ALIGN, 2), (4096, (300, 211, 3), 1 << 16, 4), (13, (1, 1, 3), ALIGN, 1),
    (12345, (64, 64, 3), 3 * ALIGN, 3)])
def test_read_run_direct_reads_a_cold_file_exactly(tmp_path, offset, shape, chunk, slots):
    """A run at any offset of a file not in memory, read O_DIRECT in aligned pieces through
    a few reused slots, is the file's samples; a file that ends before its run gives None."""
    rng = np.random.default_rng(offset)
    img = rng.integers(0, 65536, shape, dtype=np.uint16)
    path = tmp_path / "f.raw"
    data = bytes(rng.integers(0, 256, offset, dtype=np.uint8)) + img.tobytes() + b"tail"
    _cold_file(path, data)
    run = FileRun(str(path), offset, shape, np.dtype(np.uint16))
    got = read_run_direct(run, chunk=chunk, slots=slots)
    if got is None and direct_read.open_direct(str(path)) is None:
        pytest.skip("this file system does not read O_DIRECT")
    np.testing.assert_array_equal(got, img)
    out = np.zeros(shape, np.uint16)
    assert read_run_direct(run, out, chunk=chunk, slots=slots) is out
    np.testing.assert_array_equal(out, img)
    short = FileRun(str(path), offset, (shape[0] + 1,) + shape[1:], np.dtype(np.uint16))
    assert read_run_direct(short, chunk=chunk, slots=slots) is None
    assert read_run_direct(FileRun(str(tmp_path / "gone"), 0, shape, np.dtype(np.uint16))) is None


#: fresh cold files a page-cache question may take before it counts as failed
ATTEMPTS = 8


def test_in_page_cache_tells_a_read_file_from_a_dropped_one(tmp_path):
    """A file just read is in memory; dropped from the page cache it is not, and reading one
    of its ends brings only that end back (the probe looks at the start, middle and end).
    Each "not in memory" question is asked of a file written and dropped for it, and on a
    fresh one again where the answer was "in memory": on a shared machine of two cores a drop
    does not always hold (pages brought in on the other core are sometimes kept), so one
    answer alone cannot fail the probe; a probe that never says "not in memory" does."""
    data = os.urandom(64 * ALIGN)

    def cold_copy(name: str):
        path = tmp_path / name
        _cold_file(path, data)      # skipped where a drop cannot be seen at all
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)     # reads here start no read-ahead
        return path, fd

    def dropped(k: int) -> bool:
        _, fd = cold_copy(f"dropped-{k}.raw")
        try:
            return not in_page_cache(fd, 0, len(data))
        finally:
            os.close(fd)

    def end_read(k: int) -> bool:
        _, fd = cold_copy(f"end-read-{k}.raw")
        try:
            os.pread(fd, 16, len(data) - 16)              # the end only
            return not in_page_cache(fd, 0, len(data))
        finally:
            os.close(fd)

    def asked(k: int) -> bool:
        path, fd = cold_copy(f"asked-{k}.raw")
        os.close(fd)
        return direct_read.cold(FileRun(str(path), 0, (len(data),), np.dtype(np.uint8)))

    for question in (dropped, end_read, asked):
        assert any(question(k) for k in range(ATTEMPTS)), question.__name__
    path, fd = cold_copy("read.raw")
    try:
        assert os.pread(fd, len(data), 0) == data      # all of it
        assert in_page_cache(fd, 0, len(data))
        assert in_page_cache(fd, 0, 0)                 # nothing asked: nothing to read
        assert not direct_read.cold(FileRun(str(path), 0, (len(data),), np.dtype(np.uint8)))
    finally:
        os.close(fd)


def test_where_the_system_cannot_tell_a_run_counts_as_in_memory(tmp_path, monkeypatch):
    """A file system that refuses RWF_NOWAIT (EOPNOTSUPP, as NFS does) or a system without the
    flag: the run counts as in memory, so it is read the usual way (never wrongly O_DIRECT);
    a file that cannot be opened is not cold either (the usual read names what is wrong)."""
    import errno
    path = tmp_path / "f.raw"
    path.write_bytes(os.urandom(4 * ALIGN))
    run = FileRun(str(path), 0, (4 * ALIGN,), np.dtype(np.uint8))

    def refuse(fd, bufs, off, *flags):
        raise OSError(errno.EOPNOTSUPP, "not supported")
    monkeypatch.setattr(direct_read.os, "preadv", refuse)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert in_page_cache(fd, 0, 4 * ALIGN)
    finally:
        os.close(fd)
    assert not direct_read.cold(run)
    monkeypatch.undo()
    monkeypatch.delattr(direct_read.os, "RWF_NOWAIT", raising=False)
    assert not direct_read.cold(run)
    assert not direct_read.cold(FileRun(str(tmp_path / "gone"), 0, (8,), np.dtype(np.uint8)))


def test_short_direct_reads_go_on_only_at_block_boundaries(tmp_path, monkeypatch):
    """A read that stops at a block boundary is taken up where it stopped; one that stops
    elsewhere has met the file's end, so the run is not all there."""
    path = tmp_path / "f.raw"
    data = os.urandom(8 * ALIGN)
    path.write_bytes(data)
    real = os.preadv
    calls = []

    def short(fd, bufs, off, *flags):
        calls.append(off)
        return real(fd, [memoryview(bufs[0])[:ALIGN]], off)
    monkeypatch.setattr(direct_read.os, "preadv", short)
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = np.zeros(4 * ALIGN, np.uint8)
        assert pread_full(fd, memoryview(buf), ALIGN, 3 * ALIGN + 5, ALIGN)
        assert buf.tobytes() == data[ALIGN:5 * ALIGN] and calls == [k * ALIGN for k in (1, 2, 3, 4)]
        monkeypatch.setattr(direct_read.os, "preadv",
                            lambda fd, bufs, off, *f: real(fd, [memoryview(bufs[0])[:100]], off))
        assert not pread_full(fd, memoryview(buf), 0, 200, ALIGN)
        assert pread_full(fd, memoryview(buf), 0, 200, 1)
    finally:
        os.close(fd)


def test_the_environment_turns_direct_reads_off(tmp_path, monkeypatch):
    """CINEGPU_DIRECT_READS=off: no run is taken for cold, whatever the page cache holds (the
    upload seam made from the environment sends it the usual way)."""
    from cinegpu.jobs.frame_uploads import UploadSettings
    from helpers.upload_fakes import seam_of
    path = tmp_path / "f.raw"
    _cold_file(path, os.urandom(8 * ALIGN))
    run = FileRun(str(path), 0, (8 * ALIGN,), np.dtype(np.uint8))

    class Encoders:
        uploads_runs, input_buffer = True, None

        def __init__(self):
            self.direct = []

        def upload_run(self, run):
            return None

        def send_run(self, run, direct=False):
            self.direct.append(direct)
            return np.zeros(run.shape, run.dtype)

    monkeypatch.setenv("CINEGPU_DIRECT_READS", "off")
    enc = Encoders()
    settings = UploadSettings.of(os.environ)
    assert not settings.direct and not seam_of(enc, settings).send(run).direct
    monkeypatch.delenv("CINEGPU_DIRECT_READS")
    _evict(path, 8 * ALIGN)
    settings = UploadSettings.of(os.environ)
    assert settings.direct and seam_of(enc, settings).send(run).direct
    assert enc.direct == [False, True]


@pytest.mark.gpu
def test_the_ring_reads_direct_what_it_is_told_to(tmp_path):
    """The ring reads a run O_DIRECT when told to (counted), through its own ring of larger
    slots, the samples exactly either way and the same as its host twin's; told so for a file
    in memory, it reads it O_DIRECT too."""
    cupy = pytest.importorskip("cupy")
    from cinegpu.encode.ring_upload import RingUploads
    rng = np.random.default_rng(5)
    shape = (301, 517, 3)
    img = rng.integers(0, 65536, shape, dtype=np.uint16)
    path = tmp_path / "f.raw"
    _cold_file(path, b"h" * 21 + img.tobytes() + b"tail")
    run = FileRun(str(path), 21, shape, np.dtype(np.uint16))
    if direct_read.open_direct(str(path)) is None:
        pytest.skip("this file system does not read O_DIRECT")
    assert direct_read.cold(run)
    ring = RingUploads(1 << 16, 3, 3 * ALIGN, 2)
    try:
        with cupy.cuda.Stream(non_blocking=True):
            d = ring.upload(run, True)
            np.testing.assert_array_equal(cupy.asnumpy(d), img)
            assert ring.direct_reads == 1
            np.testing.assert_array_equal(read_run_direct(run), cupy.asnumpy(d))
            d = ring.upload(run)
            np.testing.assert_array_equal(cupy.asnumpy(d), img)
            assert ring.direct_reads == 1
            short = FileRun(str(path), 21, (302, 517, 3), np.dtype(np.uint16))
            assert ring.upload(short, True) is None
            d = ring.upload(run, True)
            np.testing.assert_array_equal(cupy.asnumpy(d), img)
            assert ring.direct_reads == 2
            assert ring.made == 3 * (1 << 16) + 2 * 3 * ALIGN   # a ring each way
    finally:
        ring.close()


@pytest.mark.gpu
def test_frames_on_storage_code_the_same_read_direct(tmp_path):
    """Mastering's GPU encoder threads read frames whose files are not in the page cache
    O_DIRECT through their ring (code_frame asks once a frame), and code them to the same
    IMF HTJ2K codestreams as the same frames read from memory."""
    pytest.importorskip("cupy")
    import tifffile

    from cinegpu.jobs.frame_coders import code_frame
    from cinegpu.jobs.frame_encode import FrameEncoders
    from cinegpu.media.images.frames import ImageFrames
    rng = np.random.default_rng(8)
    files = []
    for k in range(3):
        files.append(str(tmp_path / f"f{k}.tif"))
        tifffile.imwrite(files[-1], rng.integers(0, 65536, (1080, 2048, 3)).astype(np.uint16),
                         photometric="rgb")
    if direct_read.open_direct(files[0]) is None:
        pytest.skip("this file system does not read O_DIRECT")
    frames = ImageFrames(tuple(files), (4096, 2160))

    def master_three():
        with FrameEncoders(profile="imf-2k", fps=24, bitrate=100, colorspace="rec709",
                           backend="cuda", bits=12, codec="htj2k") as enc:
            stamps = [[] for _ in range(3)]
            out = [code_frame(enc, frames, k, 2048, 1080, stamps[k]) for k in range(3)]
            return out, enc.uploads.direct_reads, [st[3] for st in stamps]
    warm, direct, said = master_three()
    assert direct == 0 and said == [False] * 3         # just written: in memory
    for f in files:
        with open(f, "rb+") as fh:
            os.fsync(fh.fileno())
        _evict(f, os.path.getsize(f))
    cold, direct, said = master_three()
    assert cold == warm and direct == 3 and said == [True] * 3
