"""Playback at a lower resolution when decoding cannot keep up (cinegpu.player.resolution and
the sources that use it)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from cinegpu.bench.encode import synthetic_frame
from cinegpu.decode.decoder import Decoder
from cinegpu.encode import encode
from cinegpu.media import open_source
from cinegpu.player import resolution as res
from cinegpu.player.resolution import ResolutionGovernor, level_text, upscale
from cinegpu.player.source import DecodeAheadSource


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_governor_steps_down_once_a_level_is_measured_and_not_while_paused():
    clock = FakeClock()
    g = ResolutionGovernor(2, now=clock)
    assert g.observe(5.0, 24.0, res.SAMPLES - 1) == 0        # too few frames measured
    assert g.observe(0.0, 24.0, 10) == 0                     # nothing measured
    assert g.observe(5.0, 0.0, 10) == 0                      # paused
    assert g.observe(5.0, 24.0, res.SAMPLES) == 1
    assert g.observe(10.0, 24.0, res.SAMPLES) == 2
    assert g.observe(10.0, 24.0, res.SAMPLES) == 2           # never below max_level
    assert [lv for _, lv in g.changes] == [1, 2]


def test_governor_goes_back_up_when_the_level_above_was_fast_or_its_measure_is_old():
    clock = FakeClock()
    g = ResolutionGovernor(2, now=clock)
    assert g.observe(20.0, 24.0, 5) == 1                     # 20 fps at full: too slow for 24
    clock.t += res.SETTLE_SECONDS + 1
    assert g.observe(60.0, 24.0, 5) == 1                     # keeping up here; full was too slow
    clock.t += res.FORGET_SECONDS
    assert g.observe(60.0, 24.0, 5) == 0                     # that measure is old: full again
    clock.t += 0.1
    assert g.observe(30.0, 24.0, 5) == 0                     # and kept while it keeps up
    assert g.observe(21.0, 24.0, 5) == 1                     # content got harder: down again

    fast = ResolutionGovernor(1, now=clock)
    fast._capacity[0] = res._Measured(40.0, clock.t)        # measured fast at full before
    fast.level = 1
    assert fast.observe(24.0, 24.0, 5) == 0


def test_governor_steps_down_at_once_when_the_first_frames_are_far_too_slow():
    """A 4K frame decoded in 3 s by two decoders (0.67 frames/s) at 24 frames/s: judged on
    the first frames, before the measure is there, down as many levels as it takes (the same
    rule at every picture size); a moderately slow first look waits for the measure."""
    clock = FakeClock()
    g = ResolutionGovernor(5, now=clock)
    assert g.observe(0.0, 24.0, 0, first=2 / 3.0) == 4       # log3(0.97 * 24 * 1.5) -> 4 levels
    assert [lv for _, lv in g.changes] == [4]
    slow = ResolutionGovernor(5, now=clock)
    assert slow.observe(0.0, 24.0, 0, first=20.0) == 0      # slower than 24, not 4x: wait
    assert slow.observe(0.0, 0.0, 0, first=0.5) == 0        # paused: nothing is decided
    capped = ResolutionGovernor(2, now=clock)
    assert capped.observe(0.0, 24.0, 0, first=0.1) == 2     # never past the stream's levels


def test_the_advice_line_is_there_when_too_few_frames_were_decoded_for_a_rate():
    """A short clip of slow frames: no decode rate measured, the frame time tells it."""
    from fractions import Fraction

    from cinegpu.player.clock import PlaybackStats
    from cinegpu.player.player import Summary

    stats = PlaybackStats()
    stats.shown, stats.dropped = 2, 22
    summary = Summary(24, stats, 1.0, Fraction(24), "cpu", "headless", 0.0, latency=3.081)
    assert "decodes this material at 0.3 frames/s (cpu)" in summary.why_dropped()


def test_governor_without_levels_never_reduces():
    g = ResolutionGovernor(0, now=FakeClock())
    assert g.observe(1.0, 24.0, 10) == 0 and g.changes == []


def test_upscale_repeats_and_crops():
    pic = np.arange(3 * 5 * 4, dtype=np.uint16).reshape(3, 5, 4)
    assert upscale(pic, 0, 3, 5) is pic
    big = upscale(pic, 1, 5, 9)
    assert big.shape == (5, 9, 4) and big.flags.c_contiguous
    np.testing.assert_array_equal(big[::2, ::2], pic[:3, :5])
    np.testing.assert_array_equal(big[1::2, 1::2], pic[:2, :4])
    with pytest.raises(ValueError, match="does not cover"):
        upscale(pic, 1, 7, 9)
    assert level_text(0) == "full" and level_text(2) == "1/4"


def test_upscale_takes_xyz_planes_plane_by_plane():
    """X'Y'Z' planes the display converts (the CPU back end's pictures) are brought back to full
    size each as an RGBA16 picture's channel would be."""
    from cinegpu.interop.xyz import XYZPlanes

    rng = np.random.default_rng(4)
    planes = tuple(rng.integers(0, 4096, (3, 5)).astype(np.uint16) for _ in range(3))
    picture = XYZPlanes(planes, 12, "p3d65")
    assert upscale(picture, 0, 3, 5) is picture
    big = upscale(picture, 1, 5, 9)
    assert isinstance(big, XYZPlanes) and big.shape == (5, 9, 4) and (big.in_bits, big.primaries) == (12, "p3d65")
    for got, plane in zip(big.planes, planes):
        np.testing.assert_array_equal(got, upscale(plane[..., None], 1, 5, 9)[..., 0])
    with pytest.raises(ValueError, match="does not cover"):
        upscale(picture, 1, 7, 9)


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    """A folder of 24 codestreams of one 320x192 picture (3 levels), and the picture."""
    folder = tmp_path_factory.mktemp("seq")
    img = synthetic_frame(320, 192, seed=4)
    data = encode(img, bits=12, levels=3, backend="cpu")
    for n in range(24):
        (folder / f"f{n:03d}.j2c").write_bytes(data)
    return folder, data


class SlowAtFull:
    """A decoder that takes ``seconds`` longer at full resolution (a machine that cannot keep
    up there), recording the levels it was asked for."""

    def __init__(self, seconds: float, asked: list):
        self.inner, self.seconds, self.asked = Decoder("cpu"), seconds, asked

    def decode(self, data, *, strict=True, reduce=0):
        self.asked.append(reduce)
        if reduce == 0:
            time.sleep(self.seconds)
        return self.inner.decode(data, strict=strict, reduce=reduce)


def _play_at(source, rate: float, seconds: float, frame_count: int):
    """Drive ``source`` as a player would at ``rate`` frames/s for ``seconds``: pace, want the
    next frames, take what is ready; the pictures taken by frame."""
    got, t0, n = {}, time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        n = int((time.monotonic() - t0) * rate) % frame_count
        source.pace(rate)
        source.want([(n + k) % frame_count for k in range(8)])
        pic = source.get(n)
        if pic is not None:
            got[n] = pic
        time.sleep(0.01)
    return got


@pytest.mark.slow
def test_a_source_that_cannot_keep_up_decodes_smaller_pictures_shown_at_full_size(frames):
    folder, data = frames
    asked: list = []
    with open_source(folder) as media:
        src = DecodeAheadSource(media, backend="cpu", workers=1, depth=8,
                                decoder_factory=lambda: SlowAtFull(0.15, asked))
        try:
            got = _play_at(src, 24.0, 2.0, media.frame_count)
            assert src.level >= 1 and src.levels[0] > 0 and sum(src.levels.values()) > src.levels[0]
            assert any(r >= 1 for r in asked)
            assert all(p.shape == (192, 320, 4) for p in got.values())
            # a screenshot's frame is decoded at full resolution whatever the level
            src.pin(5)
            deadline = time.monotonic() + 10
            while src.get(5) is None and time.monotonic() < deadline:
                src.want([5])
                time.sleep(0.02)
            full = src._picture(5, Decoder("cpu").decode(data, strict=False))
            np.testing.assert_array_equal(src.get(5), full)
        finally:
            src.close()


@pytest.mark.slow
def test_full_resolution_when_asked(frames):
    folder, _ = frames
    asked: list = []
    with open_source(folder) as media:
        src = DecodeAheadSource(media, backend="cpu", workers=1, depth=8, auto_resolution=False,
                                decoder_factory=lambda: SlowAtFull(0.15, asked))
        try:
            _play_at(src, 24.0, 2.0, media.frame_count)
            assert src.level == 0 and set(asked) == {0}
        finally:
            src.close()


@pytest.mark.slow
def test_play_reports_reduced_resolution_when_decoding_cannot_keep_up(tmp_path):
    """The real player (headless, the pipeline source) at a rate this machine cannot decode
    full frames at: it goes down a level and says so in the summary; --full-resolution does
    not."""
    from conftest import require_gl
    require_gl()
    img = synthetic_frame(1024, 544, seed=2)
    data = encode(img, bits=12, levels=4, backend="cpu")
    for n in range(360):
        (tmp_path / f"f{n:03d}.j2c").write_bytes(data)
    cmd = [sys.executable, "-m", "cinegpu.player.cli", "play", "--headless", "--backend", "cpu",
           "--fps", "120", "--workers", "1", str(tmp_path)]
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert "decoded at 1/" in r.stdout and "resolution" in r.stdout, r.stdout
    r = subprocess.run(cmd[:-1] + ["--full-resolution", "--frames", "120", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "decoded at 1/" not in r.stdout, r.stdout


@pytest.mark.gpu
def test_upscale_on_the_gpu_equals_numpy():
    from conftest import require_cuda
    require_cuda()
    import cupy
    pic = np.random.default_rng(2).integers(0, 65535, (135, 256, 4)).astype(np.uint16)
    for level, (h, w) in ((1, (270, 511)), (2, (540, 1024))):
        got = upscale(cupy.asarray(pic), level, h, w)
        assert isinstance(got, cupy.ndarray) and got.flags.c_contiguous
        np.testing.assert_array_equal(cupy.asnumpy(got), upscale(pic, level, h, w))
