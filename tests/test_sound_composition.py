"""cinegpu.media.sound.composition: a composition's sound by picture frame across reel joins,
and the warnings for sound that does not fit its picture."""

from __future__ import annotations

import numpy as np
import pytest

from cinegpu.media.source import open_source
from cinegpu.media.sound.composition import configuration_channels, open_composition_sound
from conftest import DCP_SAMPLES, needs_dcp_samples
from sound_util import ffmpeg_pcm, pattern, sound_dcp

pytestmark = needs_dcp_samples
SMPTE = DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k"


@pytest.mark.parametrize("name", ["photon-imf-htj2k-1080p", "photon-imf-phdr-4k-j2k"])
def test_imf_composition_sound_equals_ffmpeg(name):
    """IMF: sound at 48000 edit units/s beside 59.94 and 23.976 fps picture."""
    with open_source(DCP_SAMPLES / name) as src:
        sound = open_composition_sound(src)
        assert sound is not None and not sound.warnings
        track = next(DCP_SAMPLES.joinpath(name).glob("AUDIO_*.mxf"))
        ref = ffmpeg_pcm(track, sound.channels)
        assert np.array_equal(sound.read_frames(0, len(src)), ref[:sound.sample_count])
        # frame f starts at floor(f * 48000 / E): 2002 per frame at 24000/1001, 800.8 at 60000/1001
        f = 7
        s = sound.sample_of_frame(f)
        assert s == (f * 48000 * src.edit_rate.denominator) // src.edit_rate.numerator
        assert np.array_equal(sound.read_frames(f, f + 3), ref[s:sound.sample_of_frame(f + 3)])
        sound.close()


def test_reel_joins_and_short_sound(tmp_path):
    """Two reels of 12 frames; reel 2's sound starts 2 frames into the track and lasts 10
    frames: its last 2 frames are silent, with a warning."""
    dcp = sound_dcp(tmp_path, [(0, 12, 0, 12), (12, 12, 14, 10)], SMPTE)
    with open_source(dcp) as src:
        assert len(src) == 24
        sound = open_composition_sound(src)
        assert sound is not None
        assert len(sound.warnings) == 1 and "83.3 ms shorter than the picture" in sound.warnings[0]
        got = sound.read_frames(0, 24)
        assert np.array_equal(got[:24000], pattern(0, 24000, 6))
        assert np.array_equal(got[24000:44000], pattern(28000, 48000, 6))
        assert not got[44000:].any()
        # across the join, from the middle of frame 11 to frame 13
        assert np.array_equal(sound.read_samples(23000, 26000)[:1000], pattern(23000, 24000, 6))
        assert np.array_equal(sound.read_samples(23000, 26000)[1000:], pattern(28000, 30000, 6))
        sound.close()


def test_cpl_declares_other_channels(tmp_path):
    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], SMPTE)
    cpl = next(dcp.glob("cpl_*.xml"))
    cpl.write_text(cpl.read_text().replace("51/L,R,C,LFE,Ls,Rs", "71/L,R,C,LFE,Lss,Rss,Lrs,Rrs"))
    with open_source(dcp) as src:
        sound = open_composition_sound(src)
        assert sound.channels == 6
        assert any("declares 8 channels" in w for w in sound.warnings)
        assert np.array_equal(sound.read_frames(0, 1), pattern(0, 2000, 6))
        sound.close()


def test_configuration_channels():
    assert configuration_channels("51/L,R,C,LFE,Ls,Rs") == 6
    assert configuration_channels("WTF/L,R,C,LFE,Ls,Rs,-,-,VIN,HI") == 10


def test_info_lists_sound():
    from cinegpu.media.describe import describe
    text = describe(SMPTE)
    assert "sound: 6 channels (51/L,R,C,LFE,Ls,Rs), 48000 Hz, 24-bit, 1.000 s" in text
    assert "channel labels chL chR chC chLFE chLs chRs" in text
