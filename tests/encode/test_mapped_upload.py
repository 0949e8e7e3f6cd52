"""Frames copied to the GPU straight from their files: which TIFF files qualify
(media.images_in.tiff_run, on the CPU) and the mapped, locked upload itself
(encode.mapped_upload, on the GPU)."""

import os

import numpy as np
import pytest

from cinegpu.jobs.frame_uploads import UploadSettings
from cinegpu.media.errors import MediaError, UnsupportedMedia
from cinegpu.media.images.frames import ImageFrames, read_image, read_run, tiff_run
from helpers.images import noise_image
from helpers.upload_fakes import HostFitting, Uploader, seam_of

tifffile = pytest.importorskip("tifffile")


def _run_samples(run) -> np.ndarray:
    count = int(np.prod(run.shape))
    return np.fromfile(run.path, run.dtype, count, offset=run.offset).reshape(run.shape)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("strip_rows", [None, 5])
def test_a_plain_tiff_run_holds_what_read_image_reads(tmp_path, dtype, strip_rows):
    """An uncompressed interleaved RGB TIFF (one strip or several laid end to end) is one run
    of bytes, and that run holds the very samples read_image(stored=True) returns."""
    img = noise_image((37, 53, 3), dtype)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb", rowsperstrip=strip_rows)
    run = tiff_run(path)
    assert run is not None and run.shape == img.shape and run.dtype == np.dtype(dtype)
    assert run.nbytes == img.nbytes
    stored = read_image(path, stored=True)
    assert np.array_equal(_run_samples(run), stored) and np.array_equal(stored, img)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_read_run_reads_the_run_into_the_buffer_given(tmp_path, dtype):
    """read_run: the samples read_image(stored=True) returns, read into out(shape, dtype)
    where that is a C-contiguous array of the run's shape (else a new array); None for a
    file shorter than its run or one that is gone."""
    img = noise_image((37, 53, 3), dtype, seed=3)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb", rowsperstrip=7)
    run = tiff_run(path)
    buf = np.zeros(img.shape, dtype)
    got = read_run(run, lambda shape, dt: buf)
    assert got is buf and np.array_equal(buf, read_image(path, stored=True))
    assert np.array_equal(read_run(run), img) and np.array_equal(read_run(run, lambda *a: None), img)
    strided = np.zeros((img.shape[0], img.shape[1] * 2, 3), dtype)[:, ::2]
    other = read_run(run, lambda shape, dt: strided)
    assert other is not strided and np.array_equal(other, img) and not strided.any()
    short = tmp_path / "short.tif"
    short.write_bytes(path.read_bytes()[:run.offset + run.nbytes - 1])
    assert read_run(tiff_run(short) or run.__class__(str(short), run.offset, run.shape,
                                                       run.dtype)) is None
    gone = tmp_path / "gone.tif"
    assert read_run(run.__class__(str(gone), run.offset, run.shape, run.dtype)) is None


def test_code_frame_reads_a_located_run_without_parsing_again(tmp_path, monkeypatch):
    """Where the encoders take frames from their files but a frame's file cannot be locked,
    code_frame reads the run tiff_run located (read_run), not the whole file through
    read_image again, and encodes the same samples."""
    from cinegpu.jobs import frame_coders
    from cinegpu.media.images import frames as images_in
    img = noise_image((6, 8, 3), np.uint16, seed=5)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")
    parsed = []
    real = images_in.read_image
    monkeypatch.setattr(images_in, "read_image", lambda *a, **k: parsed.append(a) or real(*a, **k))

    class Encoders(HostFitting):
        uploads_runs, name = True, "fake"
        seen: list = []

        def upload_run(self, run):
            return None                     # as when another thread holds the gate

        def send_run(self, run, direct=False):
            return None                     # as when the run cannot be read through the ring

        def input_buffer(self, shape, dtype):
            return np.empty(shape, dtype)

        def encode(self, image):
            self.seen.append(np.array(image))
            return b"x"

        def last_header(self):
            return None

    enc = Encoders()
    enc.uploads = seam_of(enc)
    assert frame_coders.code_frame(enc, ImageFrames((str(path),), None), 0, 8, 6).codestream == b"x"
    assert parsed == [] and np.array_equal(enc.seen[0], img)
    enc.uploads_runs = False                # the usual way: read_image
    frame_coders.code_frame(enc, ImageFrames((str(path),), None), 0, 8, 6)
    assert len(parsed) == 1 and np.array_equal(enc.seen[1], img)


def test_code_frame_sends_a_located_run_through_the_ring_when_not_mapped(tmp_path):
    """A frame whose file could not be locked goes up through the encoders' ring
    (send_run) where it can, of the very run tiff_run located; it is read into the input
    buffer only where the ring gives None, and runs of another size are not sent."""
    from cinegpu.jobs import frame_coders
    img = noise_image((6, 8, 3), np.uint16, seed=7)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")

    class Encoders(HostFitting):
        uploads_runs, name = True, "fake"

        def __init__(self, ring):
            self.ring, self.sent, self.buffers, self.seen, self.direct = ring, [], 0, [], []
            self.uploads = seam_of(self)

        def upload_run(self, run):
            return None

        def send_run(self, run, direct=False):
            self.sent.append(run)
            self.direct.append(direct)
            return read_run(run) if self.ring else None

        def input_buffer(self, shape, dtype):
            self.buffers += 1
            return np.empty(shape, dtype)

        def encode(self, image):
            self.seen.append(np.array(image))
            return b"x"

        def last_header(self):
            return None

    frames = ImageFrames((str(path),), None)
    for ring in (True, False):
        enc, stamps = Encoders(ring), []
        assert frame_coders.code_frame(enc, frames, 0, 8, 6, stamps).codestream == b"x"
        assert [r.offset for r in enc.sent] == [frames.run(0).offset]
        assert enc.buffers == (0 if ring else 1) and stamps[2] is False
        assert np.array_equal(enc.seen[0], img)
    enc = Encoders(True)                    # another size: fitted on the host, not sent
    frame_coders.code_frame(enc, frames, 0, 10, 6)
    assert enc.sent == [] and enc.buffers == 1


def test_code_frame_reads_a_frame_on_storage_direct_through_the_ring(tmp_path, monkeypatch):
    """A frame whose file is not in the page cache is neither locked for the GPU nor read the
    usual way: it goes through the ring O_DIRECT (send_run's direct); one in memory is offered
    to upload_run first and sent the usual way; CINEGPU_DIRECT_READS=off (read by the upload
    seam when it is made) asks nothing."""
    from cinegpu.encode import direct_read
    from cinegpu.jobs import frame_coders
    img = noise_image((6, 8, 3), np.uint16, seed=9)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")
    on_storage = []
    monkeypatch.setattr(direct_read, "in_page_cache",
                        lambda fd, offset, nbytes: not on_storage[-1])

    class Encoders(HostFitting):
        uploads_runs, name = True, "fake"

        def __init__(self):
            self.mapped, self.direct, self.seen = 0, [], []
            self.uploads = seam_of(self, UploadSettings.of(os.environ))

        def upload_run(self, run):
            self.mapped += 1
            return None

        def send_run(self, run, direct=False):
            self.direct.append(direct)
            return read_run(run)

        def encode(self, image):
            self.seen.append(np.array(image))
            return b"x"

        def last_header(self):
            return None

    frames = ImageFrames((str(path),), None)
    for cold in (True, False):
        on_storage.append(cold)
        enc, stamps = Encoders(), []
        assert frame_coders.code_frame(enc, frames, 0, 8, 6, stamps).codestream == b"x"
        assert enc.direct == [cold] and enc.mapped == (0 if cold else 1)
        assert np.array_equal(enc.seen[0], img)
        assert stamps[2:] == [False, cold]        # not mapped; read O_DIRECT where cold
    monkeypatch.setenv("CINEGPU_DIRECT_READS", "off")
    on_storage.append(True)
    enc = Encoders()
    frame_coders.code_frame(enc, frames, 0, 8, 6)
    assert enc.direct == [False] and enc.mapped == 1


def test_pread_full_goes_on_after_short_reads(tmp_path, monkeypatch):
    """pread_full fills the whole view from the offset however short each read is, and says
    False where the file ends first."""
    from cinegpu.encode import mapped_upload
    data = bytes(range(256)) * 4
    path = tmp_path / "f.raw"
    path.write_bytes(data)
    real = os.preadv
    calls = []
    monkeypatch.setattr(mapped_upload.os, "preadv", lambda fd, bufs, off: calls.append(off) or
                        real(fd, [memoryview(bufs[0])[:7]], off))
    fd = os.open(path, os.O_RDONLY)
    try:
        out = np.zeros(100, np.uint8)
        assert mapped_upload.pread_full(fd, out, 30)
        assert out.tobytes() == data[30:130] and calls[:3] == [30, 37, 44] and len(calls) == 15
        assert not mapped_upload.pread_full(fd, np.zeros(100, np.uint8), len(data) - 50)
    finally:
        os.close(fd)


def test_the_environment_turns_ring_uploads_off(tmp_path, monkeypatch):
    """CINEGPU_RING_UPLOADS=off: every frame is read the usual way (no GPU needed to see it:
    the upload seam made from the environment opens and makes no ring)."""
    import contextlib

    from cinegpu.encode.mapped_upload import FileRun
    from cinegpu.jobs.frame_uploads import FrameUploads
    path = tmp_path / "f.raw"
    path.write_bytes(bytes(48))
    monkeypatch.setenv("CINEGPU_RING_UPLOADS", "off")
    made = []

    class Encoders(HostFitting):
        uploads_runs, input_buffer = True, None
        on_stream = staticmethod(contextlib.nullcontext)

    uploads = FrameUploads(Encoders(), UploadSettings.of(os.environ),
                           mapped=lambda: Uploader(lambda run: None),     # no turn free
                           ring=lambda: made.append("ring"))
    assert not uploads.settings.ring
    assert uploads.send(FileRun(str(path), 0, (2, 4, 3), np.dtype(np.uint16))) is None
    assert made == []
    monkeypatch.setenv("CINEGPU_RING_UPLOADS", "on")
    assert UploadSettings.of(os.environ).ring


@pytest.mark.gpu
@pytest.mark.parametrize("chunk, slots", [(1000, 3), (1 << 20, 4), (7, 1)])
def test_ring_upload_equals_the_samples(tmp_path, chunk, slots):
    """RingUploads copies a run to the device exactly, in chunks of any size (the last one
    short) and slots reused many times over; a file shorter than the run, or gone, gives
    None; the ring is made once and freed by close."""
    cupy = pytest.importorskip("cupy")
    from cinegpu.encode.mapped_upload import FileRun
    from cinegpu.encode.ring_upload import RingUploads
    rng = np.random.default_rng(chunk)
    ring = RingUploads(chunk, slots)
    with cupy.cuda.Stream(non_blocking=True):
        for k, shape in enumerate([(6, 8, 3), (37, 51, 3), (300, 211, 3)]):
            img = rng.integers(0, 65536, shape, dtype=np.uint16)
            path = tmp_path / f"f{k}.raw"
            path.write_bytes(b"h" * (13 + k) + img.tobytes() + b"tail")
            run = FileRun(str(path), 13 + k, shape, np.dtype(np.uint16))
            d = ring.upload(run)
            assert d.shape == shape and d.dtype == np.uint16
            np.testing.assert_array_equal(cupy.asnumpy(d), img)
        mem = ring._rings[False].mem
        short = FileRun(str(path), 13 + k, (301, 211, 3), np.dtype(np.uint16))
        assert ring.upload(short) is None
        assert ring.upload(FileRun(str(tmp_path / "gone.raw"), 0, (2, 2, 3),
                                   np.dtype(np.uint16))) is None
        assert ring.upload(FileRun(str(path), 0, (0, 2, 3), np.dtype(np.uint16))) is None
        d = ring.upload(run)
        np.testing.assert_array_equal(cupy.asnumpy(d), img)
        assert ring._rings[False].mem is mem     # one ring for every upload
        assert ring.made == chunk * slots         # and none for O_DIRECT reads
    ring.close()
    assert ring._rings == {} and ring.made == 0
    with pytest.raises(ValueError):
        RingUploads(0, 4)


@pytest.mark.parametrize("kind", ["zlib", "planar", "big-endian", "rgba", "grey", "float",
                                  "tiled", "minisblack-3"])
def test_other_tiffs_are_read_the_usual_way(tmp_path, kind):
    """Compressed, planar, big-endian, RGBA, grey, float, tiled (tiles narrower than the
    image) and 3-sample files that are not RGB have no run; read_image still reads them."""
    img = noise_image((32, 48, 3), np.uint16)
    path = tmp_path / "b.tif"
    if kind == "zlib":
        tifffile.imwrite(path, img, photometric="rgb", compression="zlib")
    elif kind == "planar":
        tifffile.imwrite(path, np.moveaxis(img, -1, 0), photometric="rgb",
                         planarconfig="separate")
    elif kind == "big-endian":
        tifffile.imwrite(path, img, photometric="rgb", byteorder=">")
    elif kind == "rgba":
        tifffile.imwrite(path, noise_image((32, 48, 4), np.uint16), photometric="rgb",
                         extrasamples=[2])
    elif kind == "grey":
        tifffile.imwrite(path, img[:, :, 0], photometric="minisblack")
    elif kind == "float":
        tifffile.imwrite(path, img.astype(np.float32) / 65535, photometric="rgb")
    elif kind == "tiled":
        tifffile.imwrite(path, img, photometric="rgb", tile=(16, 16))
    else:
        tifffile.imwrite(path, img, photometric="minisblack", planarconfig="contig")
    assert tiff_run(path) is None
    assert read_image(path, stored=True).shape == (32, 48, 3)


def test_run_checks_the_size_and_leaves_damage_to_read_image(tmp_path):
    """The header's size is checked as read_image checks it (the frame named through
    ImageFrames); a damaged file or one that is no TIFF has no run, and read_image names
    the fault."""
    img = noise_image((37, 53, 3), np.uint16)
    big, other = tmp_path / "big.tif", tmp_path / "other.tif"
    tifffile.imwrite(big, img, photometric="rgb")
    with pytest.raises(UnsupportedMedia, match="larger than"):
        tiff_run(big, limit=(40, 30))
    tifffile.imwrite(other, img[:20], photometric="rgb")
    frames = ImageFrames((str(big), str(other)), None, (53, 37))
    assert frames.run(0) is not None
    with pytest.raises(UnsupportedMedia, match="frame 1: 53x20 pixels, but the sequence"):
        frames.run(1)
    cut = tmp_path / "cut.tif"
    cut.write_bytes(big.read_bytes()[:60])
    assert tiff_run(cut) is None
    with pytest.raises(MediaError):
        read_image(cut)
    png = tmp_path / "c.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    assert tiff_run(png) is None
    with pytest.raises(MediaError):
        tiff_run(tmp_path / "missing.tif")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.gpu
def test_mapped_upload_equals_the_samples_and_releases_its_file(tmp_path):
    """MappedUploads copies a run to the GPU straight from its file: the same samples as
    read_image; a run the file no longer holds gives None (read it then); no file stays
    open once closed; a failure to lock turns the path off for good."""
    cupy = pytest.importorskip("cupy")
    from cinegpu.encode.mapped_upload import MappedUploads
    img = noise_image((300, 400, 3), np.uint16, seed=3)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")
    run = tiff_run(path)
    up = MappedUploads()
    up.upload(run)                       # CUDA's own files opened on first use
    up.close()
    before = _open_fds()
    out = up.upload(run)
    assert out is not None and np.array_equal(cupy.asnumpy(out), img)
    out2 = up.upload(run)                # the first one released on the way
    assert np.array_equal(cupy.asnumpy(out2), img)
    up.close()
    assert _open_fds() == before
    short = tmp_path / "short.tif"
    short.write_bytes(path.read_bytes()[:run.offset + run.nbytes - 1])
    from dataclasses import replace
    assert up.upload(replace(run, path=str(short))) is None and up.supported
    up.close()                           # the gate's file closed too
    assert _open_fds() == before


@pytest.mark.gpu
def test_a_failure_to_lock_turns_mapped_uploads_off(tmp_path, monkeypatch):
    cupy = pytest.importorskip("cupy")
    from cinegpu.encode.mapped_upload import MappedUploads
    img = noise_image((20, 30, 3), np.uint8)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")

    def refuse(*args):
        raise cupy.cuda.runtime.CUDARuntimeError(801)       # cudaErrorNotSupported
    monkeypatch.setattr(cupy.cuda.runtime, "hostRegister", refuse)
    cupy.empty(1)                        # CUDA's own files opened before counting
    before = _open_fds()
    up = MappedUploads()
    assert up.upload(tiff_run(path)) is None and not up.supported
    assert up.upload(tiff_run(path)) is None
    up.close()
    assert _open_fds() == before


def test_the_register_gate_is_one_holder_at_a_time(tmp_path):
    """RegisterGate of one turn: taken by one open file at a time (two gates on one path, as
    two processes or threads hold them), free again once left."""
    from cinegpu.encode.mapped_upload import RegisterGate
    a, b = RegisterGate(str(tmp_path / "g.lock"), 1), RegisterGate(str(tmp_path / "g.lock"), 1)
    try:
        assert a.try_enter() and not b.try_enter()
        a.leave()
        assert b.try_enter() and not a.try_enter()
        b.leave()
        a.enter()
        a.leave()
    finally:
        a.close()
        b.close()
    assert RegisterGate().path.endswith(f"cinegpu-{os.getuid()}-host-register.lock")


def test_a_gate_of_several_turns(tmp_path, monkeypatch):
    """RegisterGate(turns=N): N holders at once (each on its own file), the next refused
    until one leaves; enter() takes a free turn; CINEGPU_MAPPED_TURNS sets the count (read
    by the upload seam's settings), and a value that is not a positive integer is a clear
    ValueError."""
    from cinegpu.encode.mapped_upload import TURNS, RegisterGate
    lock = str(tmp_path / "g.lock")
    gates = [RegisterGate(lock, turns=2) for _ in range(3)]
    try:
        assert gates[0].try_enter() and gates[1].try_enter() and not gates[2].try_enter()
        gates[0].leave()
        assert gates[2].try_enter() and not gates[0].try_enter()
        gates[1].leave()
        gates[0].enter()                 # the free turn, without waiting
        gates[0].leave()
        gates[2].leave()
    finally:
        for g in gates:
            g.close()
    assert sorted(os.listdir(tmp_path)) == ["g.lock", "g.lock.1"]
    monkeypatch.delenv("CINEGPU_MAPPED_TURNS", raising=False)
    g = RegisterGate(lock, UploadSettings.of(os.environ).turns)
    assert g.turns == TURNS
    g.close()
    monkeypatch.setenv("CINEGPU_MAPPED_TURNS", "3")
    g = RegisterGate(lock, UploadSettings.of(os.environ).turns)
    assert g.turns == 3
    g.close()
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("CINEGPU_MAPPED_TURNS", bad)
        with pytest.raises(ValueError, match="CINEGPU_MAPPED_TURNS"):
            RegisterGate(lock, UploadSettings.of(os.environ).turns)
    with pytest.raises(ValueError, match="at least one turn"):
        RegisterGate(lock, turns=0)


@pytest.mark.gpu
def test_a_taken_gate_sends_the_frame_the_usual_way(tmp_path):
    """While another holds the gate, upload gives None (the caller reads the frame) and
    stays supported, the last file it mapped still locked; once the gate is free, the frame
    goes up straight from its file and the last one is unlocked in the same turn."""
    cupy = pytest.importorskip("cupy")
    from cinegpu.encode.mapped_upload import MappedUploads, RegisterGate
    img = noise_image((20, 30, 3), np.uint16)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")
    lock = str(tmp_path / "g.lock")
    cupy.empty(1)                        # CUDA's own files opened before counting
    before = _open_fds()
    other = RegisterGate(lock, 1)
    up = MappedUploads(RegisterGate(lock, 1))
    assert other.try_enter()
    assert up.upload(tiff_run(path)) is None and up.supported
    other.leave()
    assert np.array_equal(cupy.asnumpy(up.upload(tiff_run(path))), img)
    # a taken gate leaves the last file locked (unlocked in the next turn, one turn a frame)
    held = _open_fds()
    assert other.try_enter()
    assert up.upload(tiff_run(path)) is None and _open_fds() == held
    other.leave()
    assert np.array_equal(cupy.asnumpy(up.upload(tiff_run(path))), img)
    assert _open_fds() == held           # the last one unlocked and closed, this one open
    up.close()
    other.close()
    assert _open_fds() == before


def test_which_encoders_take_frames_from_their_files(tmp_path):
    """Only cinegpu's encoder on the cuda back end takes frames straight from their files,
    and not where IMF Y'CbCr is made from them on the host."""
    from cinegpu.jobs.frame_encode import FrameEncoders
    tifffile.imwrite(tmp_path / "a.tif", noise_image((6, 8, 3), np.uint16), photometric="rgb")
    enc = FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709", backend="cpu")
    assert not enc.uploads_runs and \
        enc.uploads.up(ImageFrames((str(tmp_path / "a.tif"),), None), 0, 8, 6).path == "read"
    enc.backend = "cuda"                 # as on a GPU machine (nothing is uploaded here)
    assert enc.uploads_runs == enc.ours
    ycc = FrameEncoders(profile="imf-2k", fps=24, bitrate=100, colorspace="rec709",
                        backend="cpu", codec="htj2k", sampling="ycbcr444", bits=10)
    ycc.backend = "cuda"
    assert not ycc.uploads_runs
