"""cinegpu.player.audio: the sound fed beside the picture on the playback clock (null sink),
the WAV record and its measured offset, the downmix; and `cinegpu play --audio-out`."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.media.source import open_source
from cinegpu.media.sound.composition import open_composition_sound
from cinegpu.player.audio import (A, AudioFeed, NullSink, WavWriter, downmix_matrix,
                                  measure_offset)
from cinegpu.player.clock import PlaybackClock
from conftest import DCP_SAMPLES, needs_dcp_samples
from sound_util import ffmpeg_pcm, pattern, sound_dcp

pytestmark = needs_dcp_samples
SMPTE = DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k"


class FakeTime:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def run_feed(dcp, tmp_path, script, loop=False):
    """Drive a feed through ``script``: ("play",) / ("seek", f) / ("pause",) / ("advance", s)
    steps on a fake clock, noting each frame the clock is at as presented, as the player does."""
    now = FakeTime()
    src = open_source(dcp)
    sound = open_composition_sound(src)
    clock = PlaybackClock(src.edit_rate, len(src), now=now, loop=loop)
    wav = tmp_path / "out.wav"
    feed = AudioFeed(sound, NullSink(sound.channels), clock, WavWriter(wav, 48000, 6, 24))
    for step in script:
        if step[0] == "advance":
            end = now.t + step[1]
            while now.t < end - 1e-9:
                now.t = min(end, now.t + 0.007)      # turns of the draw loop, 7 ms apart
                feed.update(now.t)
                if clock.playing:
                    feed.shown(clock.timeline(), clock.due())
        else:
            getattr(clock, step[0])(*step[1:])
            feed.update(now.t)
    feed.wav.close()
    return src, sound, feed, wav


def test_sequential_play_equals_track(tmp_path):
    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], SMPTE)
    src, sound, feed, wav = run_feed(dcp, tmp_path, [("play",), ("advance", 0.5)])
    got = ffmpeg_pcm(wav, 6)
    assert len(got) == 24000
    assert np.array_equal(got, ffmpeg_pcm(dcp / "audio.mxf", 6)[:24000])
    ms, n = measure_offset(wav, sound, feed.marks())
    assert ms == 0.0 and n >= 10
    sound.close(), src.close()


def test_seek_pause_and_loop_follow_the_picture(tmp_path):
    """0.25 s from frame 0, a seek to 20, the loop back to 0, a pause (nothing written), then
    on from the held frame: the record is those pieces of the track, in that order."""
    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], SMPTE)
    script = [("play",), ("advance", 0.25), ("seek", 20), ("advance", 0.25), ("pause",),
              ("advance", 0.2), ("play",), ("advance", 0.125)]
    src, sound, feed, wav = run_feed(dcp, tmp_path, script, loop=True)
    got = ffmpeg_pcm(wav, 6)
    p = lambda a, b: pattern(a, b, 6)   # noqa: E731
    # 12000 samples from 0; from frame 20 (40000) to the end, the loop to 0 and 4000 more;
    # paused at frame 2 (the frame due), then 6000 samples from 4000 (frame 2)
    want = np.concatenate([p(0, 12000), p(40000, 48000), p(0, 4000), p(4000, 10000)])
    assert got.shape == want.shape
    assert np.array_equal(got, want)
    ms, n = measure_offset(wav, sound, feed.marks())
    assert ms == 0.0 and n >= 10
    assert feed.offset_ms() == 0.0 and len(feed._offsets) >= 10    # without the record: the same
    sound.close(), src.close()


def test_offset_without_a_record_sees_sound_fed_at_the_wrong_place(tmp_path):
    """The feed's own measure (no WAV): 0 along a seek and loop, and a frame presented where
    the feed put another frame's sound reads as that many frames off (1 frame: 41.667 ms)."""
    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], SMPTE)
    src, sound, feed, wav = run_feed(dcp, tmp_path, [("play",), ("advance", 0.3), ("seek", 22),
                                                     ("advance", 0.2)], loop=True)
    assert feed.offset_ms() == 0.0
    t = feed.clock.timeline() - 1
    feed.shown(t, (feed.clock.media_frame(t) + 1) % 24)      # the picture one frame later than the sound
    assert feed.offset_ms() == pytest.approx(-1000 / 24, abs=0.001)
    sound.close(), src.close()


def test_offset_measure_sees_a_shift(tmp_path):
    """The measure is not a constant: presented marks 48 samples off read as 1 ms."""
    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], SMPTE)
    src, sound, feed, wav = run_feed(dcp, tmp_path, [("play",), ("advance", 0.5)])
    shifted = [(pos + 48, t, f) for pos, t, f in feed.marks() if pos + 48 < 24000]
    ms, n = measure_offset(wav, sound, shifted)
    assert ms == pytest.approx(1.0) and n >= 10
    sound.close(), src.close()


def test_short_sound_plays_silence_and_warns(tmp_path):
    dcp = sound_dcp(tmp_path, [(0, 12, 0, 12), (12, 12, 14, 10)], SMPTE)
    src, sound, feed, wav = run_feed(dcp, tmp_path, [("play",), ("advance", 1.0)])
    assert any("shorter than the picture" in w for w in sound.warnings)
    got = ffmpeg_pcm(wav, 6)
    assert len(got) == 48000
    assert np.array_equal(got[24000:44000], pattern(28000, 48000, 6))
    assert not got[44000:].any()
    sound.close(), src.close()


def test_downmix_bs775():
    m = downmix_matrix(["L", "R", "C", "LFE", "Ls", "Rs"], 2)
    assert np.allclose(m, [[1, 0], [0, 1], [A, A], [0, 0], [A, 0], [0, A]])
    assert np.allclose(downmix_matrix(["L", "R"], 2), np.eye(2))
    assert np.allclose(downmix_matrix(["L", "R", "C", "LFE", "Ls", "Rs"], 8)[:, :6], np.eye(6))
    assert np.allclose(downmix_matrix(["L", "R"], 1), [[0.5], [0.5]])


def test_wav_header_extensible(tmp_path):
    w = WavWriter(tmp_path / "a.wav", 96000, 8, 24)
    w.write(pattern(0, 10, 8))
    w.close()
    assert np.array_equal(ffmpeg_pcm(tmp_path / "a.wav", 8), pattern(0, 10, 8))


@pytest.mark.slow
def test_play_command_writes_the_sound(tmp_path, capsys):
    """`cinegpu play --headless --audio-out`: the WAV holds the track's samples over the played
    range (ffmpeg on both sides) and the summary's measured offset is within 1 ms."""
    from cinegpu.player.cli import main

    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], SMPTE)
    out = tmp_path / "played.wav"
    assert main(["play", "--headless", "--threads", "--audio-out", str(out), str(dcp)]) == 0
    text = capsys.readouterr().out
    assert "audio/video offset: " in text
    ms = float(text.split("audio/video offset: ")[1].split(" ms")[0])
    assert abs(ms) <= 1.0
    assert np.array_equal(ffmpeg_pcm(out, 6), ffmpeg_pcm(dcp / "audio.mxf", 6))


@pytest.mark.parametrize("rate", ["60000/1001", "30000/1001", "24000/1001", "24", "25", "50"])
def test_every_sample_belongs_to_exactly_one_frame(rate):
    """frame_of_sample inverts timeline_sample at every rate (at 59.94 fps a frame is 800.8
    samples: sample 800 starts frame 1, and naming frame 0 there stalled the feed)."""
    from fractions import Fraction
    clock = PlaybackClock(Fraction(rate), 1000, now=FakeTime())

    class Sound:
        sample_rate, channels = 48000, 2
    feed = AudioFeed.__new__(AudioFeed)
    feed.clock, feed.rate = clock, 48000
    for s in range(20000):
        t = feed.frame_of_sample(s)
        assert feed.timeline_sample(t) <= s < feed.timeline_sample(t + 1), (rate, s, t)


def test_imf_at_59_94_plays_its_sound(tmp_path):
    """The HTJ2K IMF sample (59.94 fps, clip-wrapped stereo): the fed sound equals ffmpeg's."""
    imf = DCP_SAMPLES / "photon-imf-htj2k-1080p"
    now = FakeTime()
    src = open_source(imf)
    sound = open_composition_sound(src)
    clock = PlaybackClock(src.edit_rate, len(src), now=now)
    wav = tmp_path / "out.wav"
    feed = AudioFeed(sound, NullSink(sound.channels), clock,
                     WavWriter(wav, int(sound.sample_rate), sound.channels, 24))
    clock.play()
    feed.update(now.t)
    while now.t < 100.5:
        now.t += 0.007
        feed.update(now.t)
    feed.wav.close()
    got = ffmpeg_pcm(wav, sound.channels)
    track = next(imf.glob("AUDIO_*.mxf"))
    want = ffmpeg_pcm(track, sound.channels)
    assert len(got) >= 23000
    assert np.array_equal(got, want[:len(got)])
    sound.close(), src.close()
