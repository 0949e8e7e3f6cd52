"""The error taxonomy: each family raised where its cause is, and the player's use of them.

- decode: ``CodestreamError`` for bad input only; ``PipelineError`` (``WorkerCrashed``) when
  the pipeline loses a frame; ``BackendUnavailable`` for a machine without the back end;
- media: ``MediaError`` split into ``CorruptMedia``, ``UnsupportedMedia`` and
  ``EncryptedMedia`` (an ``UnsupportedMedia``), the constructor unchanged;
- the player conceals a frame that fails with one of these and goes on.
"""

from __future__ import annotations

import os
import signal

import sys
import time

import pytest

from cinegpu.decode import BackendUnavailable, CodestreamError, PipelineError, UnsupportedFeature, WorkerCrashed
from cinegpu.media import CorruptMedia, EncryptedMedia, MediaError, UnsupportedMedia, open_source

from conformance import CONFORMANCE
from conftest import DCP_SAMPLES

SAMPLES = DCP_SAMPLES
ENCRYPTED = SAMPLES / "libdcp-encryption_test-smpte-2k-encrypted"
SMALL = CONFORMANCE / "part1" / "codestreams" / "p0_01.j2k"


def test_the_families_are_apart():
    assert issubclass(UnsupportedFeature, CodestreamError) and issubclass(CodestreamError, ValueError)
    assert issubclass(WorkerCrashed, PipelineError) and not issubclass(PipelineError, CodestreamError)
    assert not issubclass(BackendUnavailable, (CodestreamError, MediaError, PipelineError))
    for cls in (CorruptMedia, UnsupportedMedia, EncryptedMedia):
        assert issubclass(cls, MediaError) and issubclass(cls, ValueError)
    assert issubclass(EncryptedMedia, UnsupportedMedia) and not issubclass(EncryptedMedia, CorruptMedia)
    e = CorruptMedia("a.mxf", "truncated KLV header", 12)      # MediaError's constructor
    assert (e.path, e.reason, e.offset, str(e)) == ("a.mxf", "truncated KLV header", 12,
                                                     "a.mxf at byte 12: truncated KLV header")


@pytest.mark.skipif(not ENCRYPTED.exists(), reason=f"{ENCRYPTED} is not present")
def test_an_encrypted_package_is_encrypted_media():
    for target in (ENCRYPTED, ENCRYPTED / "video.mxf"):
        with pytest.raises(EncryptedMedia, match="KDM"):
            open_source(target)


def test_corrupt_and_unsupported_media(tmp_path):
    from cinegpu.media.j2k_profile import parse_profile

    with pytest.raises(CorruptMedia, match="not a JPEG 2000 codestream"):
        parse_profile(b"garbage!", "f.j2c")
    mxf = tmp_path / "cut.mxf"
    mxf.write_bytes(b"\x06\x0e\x2b\x34\x02\x05\x01\x01\x0d\x01\x02\x01\x01\x02\x04\x00\x83\x00")
    with pytest.raises(CorruptMedia):
        open_source(mxf)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ASSETMAP.xml").write_text("<AssetMap><unclosed></AssetMap>")
    with pytest.raises(CorruptMedia, match="malformed XML"):
        open_source(tmp_path / "pkg")
    other = tmp_path / "a.xml"
    other.write_text("<a/>")
    with pytest.raises(UnsupportedMedia, match="XML root <a>"):
        open_source(other)
    with pytest.raises(MediaError, match="no such file") as info:       # neither: a missing file
        open_source(tmp_path / "absent.mxf")
    assert type(info.value) is MediaError


@pytest.mark.skipif(not SMALL.exists(), reason=f"{SMALL} is not present")
def test_a_killed_worker_is_a_pipeline_error_not_bad_input():
    from cinegpu.decode.pipeline import FramePipeline

    with FramePipeline(backend="cpu", workers=1, depth=2) as pipe:
        worker = pipe._workers.procs[0]
        os.kill(worker.pid, signal.SIGSTOP)   # it cannot answer the frame before it is killed
        pipe.submit(SMALL.read_bytes(), key="doomed")
        worker.kill()
        key, result = pipe.get()
    assert key == "doomed" and isinstance(result, WorkerCrashed) and isinstance(result, PipelineError)
    assert not isinstance(result, CodestreamError)


def test_the_decode_command_names_a_missing_cuda(tmp_path, monkeypatch, capsys):
    from cinegpu.player.cli import main

    monkeypatch.setitem(sys.modules, "cupy", None)
    src = tmp_path / "f.j2c"
    src.write_bytes(b"\xff\x4f")
    assert main(["decode", str(src), "-o", str(tmp_path / "f.tif"), "--backend", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "cuda back end unavailable: CuPy is not installed" in err and "pip install 'cinegpu[cuda13]'" in err


class _Media:
    """Frame 0 good, 1 truncated (concealed in the decode), 2 an index entry pointing nowhere,
    3 a header the decoder refuses."""

    kind, path, edit_rate, width, height = None, None, None, 0, 0
    frame_count = 4

    def __init__(self, good: bytes) -> None:
        self.good = good

    def frame(self, n: int) -> bytes:
        if n == 2:
            raise CorruptMedia("track.mxf", "index entry for frame 2 points past the essence", 4096)
        return {0: self.good, 1: self.good[: len(self.good) * 2 // 3], 3: b"\xff\x4f\xff\x51\x00\x02"}[n]

    def close(self) -> None:
        pass


@pytest.mark.skipif(not SMALL.exists(), reason=f"{SMALL} is not present")
def test_the_player_source_conceals_frames_of_each_family():
    from cinegpu.player.source import DecodeAheadSource, FrameError

    src = DecodeAheadSource(_Media(SMALL.read_bytes()), backend="cpu", workers=1, depth=4)
    try:
        src.want([0, 1, 2, 3])
        results: dict = {}
        end = time.perf_counter() + 60
        while time.perf_counter() < end and len(results) < 4:
            for n in range(4):
                try:
                    if src.get(n) is not None:
                        results[n] = "picture"
                except FrameError as exc:
                    results[n] = exc.cause
            time.sleep(0.01)
    finally:
        src.close()
    assert results[0] == "picture" and results[1] == "picture"
    assert isinstance(results[2], CorruptMedia) and isinstance(results[3], CodestreamError)
