"""Sound mapping, gain and the mix's loudness (issue 55, item 2): ``--channel-map`` places input
channels (or a preset stem order) into a 5.1 or 7.1 track, ``--gain`` scales every sample, and
``master`` prints the mix's BS.1770-4 loudness, which agrees with FFmpeg's ``ebur128``."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from cinegpu.jobs.demo import demo_frame
from cinegpu.media.errors import MediaError
from cinegpu.media.package.read import read_package
from cinegpu.media.sound.channel_map import map_channels, open_mapped_sound, parse_channel_map
from cinegpu.media.sound.inputs import SEVEN_ONE, open_sound
from cinegpu.media.sound.loudness import int24, mix_loudness
from cinegpu.media.sound.track import SoundTrack
from helpers.cli import cinegpu
from helpers.ebur128 import ffmpeg_ebur128, write_pcm_wav
from helpers.mastering import needs_encoder, write_png16
from helpers.sound_util import tones, write_wav


def test_the_map_option():
    assert parse_channel_map("L=2, R=1 ,c=3,lfe=4") == {"L": 2, "R": 1, "C": 3, "LFE": 4}
    assert parse_channel_map("film") == "film"
    for bad, words in (("L2", "wants CHANNEL=INPUT"), ("X=1", "no channel of 5.1 or 7.1"),
                       ("L=1,L=2", "L is given twice"), ("L=0", "from 1"), ("R=two", "from 1")):
        with pytest.raises(ValueError, match=words):
            parse_channel_map(bad)


def _input(tmp_path, channels: int, n: int = 4800):
    samples, path = tones(n, channels), tmp_path / f"in{channels}.wav"
    write_wav(path, samples)
    return path, samples


def _track(sound, n: int) -> np.ndarray:
    return np.concatenate([int24(raw, len(sound.layout.inputs)) for raw in sound.sample_blocks(n)])


def test_presets_and_maps_place_the_channels(tmp_path):
    path, samples = _input(tmp_path, 6)
    film = map_channels(open_sound([path]), "film")         # input L C R Ls Rs LFE
    got = _track(film, 4800)
    assert [np.array_equal(got[:, k], samples[:, j]) for k, j in enumerate((0, 2, 1, 5, 3, 4))] == [True] * 6
    assert "L from input 1, R from input 3, C from input 2, LFE from input 6" in film.note
    four, samples4 = _input(tmp_path, 4)                    # a channel count no layout has
    mapped = open_mapped_sound([four], None, parse_channel_map("L=1,R=2,Lss=3,Rss=4"))
    assert mapped.layout is SEVEN_ONE
    got = _track(mapped, 4800)
    assert np.array_equal(got[:, [0, 1, 4, 5]], samples4) and not got[:, [2, 3, 6, 7]].any()
    with pytest.raises(MediaError, match="R=5: the input has 4 channels"):
        open_mapped_sound([four], None, {"L": 1, "R": 5})
    with pytest.raises(MediaError, match="a preset of 6 or 8 channels, the input has 4"):
        open_mapped_sound([four], None, "film")


def test_gain_scales_and_clips(tmp_path):
    path, samples = _input(tmp_path, 6)
    sound = open_sound([path])
    quieter = _track(type(sound)(**{**sound.__dict__, "gain_db": -6.0}), 4800)
    assert np.abs(quieter - np.rint(samples * 10 ** (-6 / 20))).max() <= 1
    louder = _track(type(sound)(**{**sound.__dict__, "gain_db": 30.0}), 4800)
    assert louder.max() == (1 << 23) - 1 and louder.min() == -(1 << 23)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
def test_the_mix_loudness_agrees_with_ffmpeg(tmp_path):
    samples = tones(48000 * 4, 6) >> 3
    path = write_pcm_wav(tmp_path / "mix.wav", samples)
    ours = mix_loudness(open_sound([path]), len(samples))
    theirs = ffmpeg_ebur128(path)
    assert abs(ours.integrated - theirs["I"]) < 0.1, (ours, theirs)
    assert abs(ours.true_peak - theirs["true_peak"]) < 0.2, (ours, theirs)


@pytest.mark.slow  # long: a master with 5.1 sound, its loudness and ffmpeg's (6 s)
@needs_encoder
def test_master_maps_gains_and_reports_the_loudness(tmp_path):
    (tmp_path / "in").mkdir()
    write_png16(tmp_path / "in" / "f0.png", demo_frame(0, 480, 270))
    path, samples = _input(tmp_path, 6, 48000)
    r = cinegpu("master", str(tmp_path / "in"), "-o", str(tmp_path / "dcp"), "--title", "s", "--frames", "24",
                "--quiet", "--backend", "cpu", "--audio", str(path), "--channel-map", "L=2,R=1,C=3", "--gain", "-6")
    assert r.returncode == 0, r.stderr
    assert "L from input 2, R from input 1, C from input 3; LFE, Ls, Rs silent; gain -6 dB" in r.stderr
    line = [x for x in r.stdout.splitlines() if x.startswith("sound: ")]
    assert len(line) == 1 and "LUFS integrated" in line[0] and "dBTP" in line[0], r.stdout
    (asset,) = read_package(tmp_path / "dcp").compositions[0].reels[0].of_kind("sound")
    with SoundTrack(asset.path) as t:
        got = t.read(0, 24)
    want = np.rint(samples * 10 ** (-6 / 20))
    assert np.abs(got[:, 0] - want[:, 1]).max() <= 1 and np.abs(got[:, 1] - want[:, 0]).max() <= 1
    assert np.abs(got[:, 2] - want[:, 2]).max() <= 1 and not got[:, 3:].any()
    # info measures the track the master wrote: the same figures as the master's line
    r = cinegpu("info", str(tmp_path / "dcp"), "--loudness")
    assert r.returncode == 0, r.stderr
    (measured,) = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("loudness: ")]
    assert measured.removeprefix("loudness: ") == line[0].removeprefix("sound: "), (measured, line)
