"""Mastering's upload seam (jobs.frame_uploads): which path an input frame takes to the
encoder, under which conditions, and the four CINEGPU_* switches, read once into
UploadSettings.  The GPU paths are stand-ins here (upload_fakes); the real ones have their own
tests (test_mapped_upload, test_direct_read, GPU only)."""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
import pytest

from cinegpu.encode import direct_read
from cinegpu.encode.mapped_upload import TURNS, MappedUploads
from cinegpu.jobs.frame_uploads import PATHS, FrameUploads, UploadSettings
from cinegpu.media.errors import CorruptMedia
from cinegpu.media.images import frames as images_in
from cinegpu.media.images.frames import ImageFrames
from helpers.upload_fakes import Uploader, seam_of

tifffile = pytest.importorskip("tifffile")

SWITCHES = ("CINEGPU_MAPPED_UPLOADS", "CINEGPU_MAPPED_TURNS", "CINEGPU_RING_UPLOADS",
            "CINEGPU_DIRECT_READS", "CINEGPU_VIDEO_PLANES")


class Encoders:
    """A GPU encoder's side of the seam: whether its GPU paths give the frame (``mapped``,
    ``ring``: True gives the run's samples, False None), and what was asked of them."""

    def __init__(self, mapped: bool = True, ring: bool = True, takes_runs: bool = True):
        self.gives = {"mapped": mapped, "ring": ring}
        self.uploads_runs = takes_runs
        self.asked: list = []          # ("mapped",) or ("ring", direct), in order
        self.buffers = 0

    def upload_run(self, run):
        self.asked.append(("mapped",))
        return images_in.read_run(run) if self.gives["mapped"] else None

    def send_run(self, run, direct=False):
        self.asked.append(("ring", direct))
        return images_in.read_run(run) if self.gives["ring"] else None

    def input_buffer(self, shape, dtype):
        self.buffers += 1
        return np.empty(shape, dtype)


@pytest.fixture
def tiff(tmp_path):
    """An uncompressed 16-bit RGB TIFF of 6 x 8 pixels (one run of its file), its samples."""
    img = np.random.default_rng(4).integers(0, 65536, (6, 8, 3)).astype(np.uint16)
    path = tmp_path / "a.tif"
    tifffile.imwrite(path, img, photometric="rgb")
    return ImageFrames((str(path),), None), img


@pytest.fixture
def storage(monkeypatch):
    """Whether the files are on storage (True) or in the page cache (False), as the kernel
    tells direct_read; the questions asked counted."""
    state = {"cold": False, "asked": 0}

    def in_page_cache(fd, offset, nbytes):
        state["asked"] += 1
        return not state["cold"]
    monkeypatch.setattr(direct_read, "in_page_cache", in_page_cache)
    return state


def test_upload_settings_read_the_five_switches():
    """Every path on by default and where its variable is anything but "off"; the turns a
    positive integer (the default TURNS), anything else a ValueError naming the variable."""
    assert UploadSettings.of({}) == UploadSettings() == UploadSettings(True, TURNS, True, True, True)
    assert UploadSettings.of({k: "on" for k in SWITCHES if "TURNS" not in k}) == UploadSettings()
    assert UploadSettings.of({"CINEGPU_DIRECT_READS": "auto"}).direct
    assert UploadSettings.of({"CINEGPU_MAPPED_UPLOADS": "off"}) == UploadSettings(mapped=False)
    assert UploadSettings.of({"CINEGPU_RING_UPLOADS": "off"}) == UploadSettings(ring=False)
    assert UploadSettings.of({"CINEGPU_DIRECT_READS": "off"}) == UploadSettings(direct=False)
    assert UploadSettings.of({"CINEGPU_VIDEO_PLANES": "off"}) == UploadSettings(planes=False)
    assert UploadSettings.of({"CINEGPU_MAPPED_TURNS": " 3 "}) == UploadSettings(turns=3)
    assert UploadSettings.of({"CINEGPU_MAPPED_TURNS": ""}).turns == TURNS
    for bad in ("0", "two", "-1", "1.5"):
        with pytest.raises(ValueError, match="CINEGPU_MAPPED_TURNS must be a positive integer"):
            UploadSettings.of({"CINEGPU_MAPPED_TURNS": bad})


@pytest.mark.parametrize("cold, mapped, ring, path, asked", [
    # in the page cache: locked for the GPU where a turn is free, else through the ring, else
    # read into the page-locked buffer from the run located
    (False, True, True, "mapped", [("mapped",)]),
    (False, False, True, "ring", [("mapped",), ("ring", False)]),
    (False, False, False, "staged", [("mapped",), ("ring", False)]),
    # on storage: never locked; through the ring O_DIRECT, else read into the buffer
    (True, True, True, "direct", [("ring", True)]),
    (True, True, False, "staged", [("ring", True)]),
])
def test_the_path_a_frame_of_the_image_size_takes(tiff, storage, cold, mapped, ring, path,
                                                  asked):
    frames, img = tiff
    storage["cold"] = cold
    enc = Encoders(mapped, ring)
    up = seam_of(enc).up(frames, 0, 8, 6)
    assert up.path == path and enc.asked == asked and storage["asked"] == 1   # once a frame
    assert np.array_equal(up.image, img) and enc.buffers == (path == "staged")
    assert up.mapped == (path == "mapped") and up.direct == (path == "direct")


def test_frames_the_gpu_does_not_take_as_stored_are_read(tiff, storage, tmp_path, monkeypatch):
    """A frame of another size is read from its run into the buffer (fitted on the host),
    nothing sent up and the page cache not asked; an encoder that does not take runs (the
    CPU, the OpenJPEG stand-in, IMF Y'CbCr) and a file that is no run (compressed) have their
    files read by the reader, into the buffer; frames not from image files as read gives
    them."""
    frames, img = tiff
    parsed = []
    real = images_in.read_image
    monkeypatch.setattr(images_in, "read_image",
                        lambda *a, **k: parsed.append(k.get("out")) or real(*a, **k))
    enc = Encoders()
    uploads = seam_of(enc)
    up = uploads.up(frames, 0, 10, 6)
    assert up.path == "staged" and np.array_equal(up.image, img)
    assert enc.asked == [] and storage["asked"] == 0 and parsed == []
    enc.uploads_runs = False
    up = uploads.up(frames, 0, 8, 6)
    assert up.path == "read" and np.array_equal(up.image, img) and enc.asked == []
    assert parsed == [enc.input_buffer] and enc.buffers == 2
    enc.uploads_runs = True
    packed = tmp_path / "z.tif"
    tifffile.imwrite(packed, img, photometric="rgb", compression="zlib")
    up = uploads.up(ImageFrames((str(packed),), None), 0, 8, 6)
    assert up.path == "read" and np.array_equal(up.image, img) and enc.asked == []
    asked = []
    up = uploads.up(lambda i, **kw: asked.append((i, kw)) or img, 5, 8, 6)
    assert up.path == "read" and up.image is img and asked == [(5, {})]
    assert set(PATHS) == {"direct", "mapped", "ring", "staged", "read"}


def test_a_run_that_cannot_be_read_leaves_the_reader_to_name_it(tiff, storage):
    """Where neither the GPU paths nor the run's read can take a frame (its file cut short
    after it was located), the reader reads it, and names what is wrong."""
    frames, _ = tiff
    run = frames.run(0)
    with open(frames.files[0], "r+b") as f:
        f.truncate(run.offset + run.nbytes // 2)
    assert frames.run(0) == run                   # its header still says where the run lies
    enc = Encoders(mapped=False, ring=False)
    with pytest.raises(CorruptMedia, match="frame 0"):
        seam_of(enc).up(frames, 0, 8, 6)
    assert enc.asked == [("mapped",), ("ring", False)]


@pytest.mark.parametrize("switch, cold, path, asked, questions", [
    # mapped off: a frame in memory goes through the ring, never locked
    ("CINEGPU_MAPPED_UPLOADS", False, "ring", [("ring", False)], 1),
    # ring off: what is not locked is read into the buffer, on storage too
    ("CINEGPU_RING_UPLOADS", False, "staged", [("mapped",)], 1),
    ("CINEGPU_RING_UPLOADS", True, "staged", [], 1),
    # direct off: the page cache is not asked, and a frame on storage is locked like any other
    ("CINEGPU_DIRECT_READS", True, "mapped", [("mapped",)], 0),
])
def test_each_switch_turns_its_path_off(tiff, storage, monkeypatch, switch, cold, path, asked,
                                        questions):
    frames, _ = tiff
    storage["cold"] = cold
    for name in SWITCHES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(switch, "off")
    enc = Encoders(mapped=switch != "CINEGPU_RING_UPLOADS", ring=True)
    uploads = seam_of(enc, UploadSettings.of(os.environ))
    assert uploads.up(frames, 0, 8, 6).path == path
    assert enc.asked == asked and storage["asked"] == questions


def test_the_turns_reach_the_mapped_uploads():
    """CINEGPU_MAPPED_TURNS reaches each thread's MappedUploads (whose gate it sizes when its
    first upload makes it)."""
    made = FrameUploads(Encoders(), UploadSettings(turns=3))._make["mapped"]()
    assert isinstance(made, MappedUploads) and made._turns == 3
    made.close()


def test_each_thread_keeps_its_own_uploaders_until_closed(tiff, storage):
    """A thread's mapped uploader and ring are made at its first frame that needs them and
    kept for its next frames; every thread's are closed once by close()."""
    frames, _ = tiff
    made = []

    def make(send):
        made.append(Uploader(send))
        return made[-1]
    enc = Encoders(mapped=False)
    enc.on_stream = contextlib.nullcontext
    uploads = FrameUploads(enc, mapped=lambda: make(enc.upload_run),
                           ring=lambda: make(enc.send_run))

    def frames_of_one_thread():
        for _ in range(3):
            assert uploads.up(frames, 0, 8, 6).path == "ring"
    threads = [threading.Thread(target=frames_of_one_thread) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 4 and len(enc.asked) == 12     # a mapped uploader and a ring each
    uploads.close()
    assert [u.closed for u in made] == [1] * 4
    uploads.close()
    assert [u.closed for u in made] == [1] * 4


def test_frame_encoders_read_the_switches_once(monkeypatch):
    """FrameEncoders that take frames as stored on their GPU read the switches once, when
    made (a bad CINEGPU_MAPPED_TURNS refused then); later changes of the environment are not
    seen.  On the CPU, which takes no frame as stored, none is read (not even a bad
    CINEGPU_MAPPED_TURNS): its seam has the defaults."""
    from cinegpu.jobs.frame_encode import FrameEncoders

    def encoders():
        return FrameEncoders(profile="2k", fps=24, bitrate=None, colorspace="rec709",
                             backend="cpu")
    monkeypatch.setenv("CINEGPU_RING_UPLOADS", "off")
    monkeypatch.setenv("CINEGPU_MAPPED_TURNS", "none")
    with encoders() as enc:
        assert enc.uploads.settings == UploadSettings() and enc.uploads.encoders is enc
    monkeypatch.setattr(FrameEncoders, "uploads_runs", property(lambda self: True))  # a GPU's
    with pytest.raises(ValueError, match="CINEGPU_MAPPED_TURNS"):
        encoders()
    monkeypatch.setenv("CINEGPU_MAPPED_TURNS", "5")
    with encoders() as enc:
        monkeypatch.setenv("CINEGPU_RING_UPLOADS", "on")
        assert enc.uploads.settings == UploadSettings(ring=False, turns=5)
