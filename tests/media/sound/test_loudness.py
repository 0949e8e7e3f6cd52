"""The BS.1770-4 / EBU R 128 meter (``cinegpu.media.sound.loudness``): the K-weighting of
BS.1770-4's tables, the reference tone's -3.01 LKFS, the true peak between samples, the same
figures however the samples are cut into blocks, and FFmpeg's ``ebur128`` and pyloudnorm
agreeing within 0.1 LU (true peak within 0.2 dB) on generated tone and noise (issue 53, item 3)."""

from __future__ import annotations

import importlib.util
import math
import shutil

import numpy as np
import pytest

from cinegpu.media.sound.loudness import (
    SURROUND_WEIGHT,
    LoudnessMeter,
    channel_weights,
    k_weighting,
    loudness_of,
)
from helpers.ebur128 import ffmpeg_ebur128, write_pcm_wav

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                reason="the loudness meter needs scipy (the report extra)")

RATE = 48000
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg")


def _programme(seconds: float = 12.0, seed: int = 1) -> np.ndarray:
    """Stereo, 24-bit values: a 997 Hz tone at -12 dBFS left, noise right whose level drops by
    14 dB half way (a loudness range of a few LU)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(RATE * seconds)) / RATE
    x = np.stack([0.25 * np.sin(2 * np.pi * 997 * t), 0.1 * rng.standard_normal(len(t))], 1)
    x[len(t) // 2:, 1] *= 0.2
    return np.round(np.clip(x, -0.99, 0.99) * (1 << 23)).astype(np.int32)


def test_k_weighting_at_48k_is_bs1770s_tables():
    sos = k_weighting(48000)
    # BS.1770-4 Table 1 (pre-filter) and Table 2 (RLB), a0 = 1
    assert np.allclose(sos[0], [1.53512485958697, -2.69169618940638, 1.19839281085285,
                                1.0, -1.69065929318241, 0.73248077421585], atol=1e-8)
    assert np.allclose(sos[1], [1.0, -2.0, 1.0, 1.0, -1.99004745483398, 0.99007225036621], atol=1e-8)


def test_a_full_scale_1k_tone_in_one_channel_is_minus_3_lkfs():
    """BS.1770-4 clause 2: a 0 dBFS 997 Hz sine in one front channel reads -3.01 LKFS."""
    t = np.arange(RATE * 5) / RATE
    x = np.stack([np.sin(2 * np.pi * 997 * t), np.zeros_like(t)], 1)
    got = loudness_of(x, RATE)
    assert abs(got.integrated - (-3.01)) < 0.05, got
    assert got.channel_integrated[1] is None                # silence: no figure
    assert abs(got.sample_peak) < 0.01 and abs(got.true_peak) < 0.05
    assert got.range is not None and got.range < 0.05       # a steady tone


def test_the_true_peak_lies_between_the_samples():
    """A sine at a quarter of the rate, sampled 45 degrees off its crests: the samples peak
    3.01 dB below the wave's 0.5 (-6.02 dBTP), which 4x oversampling finds."""
    n = np.arange(RATE * 2)
    x = 0.5 * np.sin(2 * np.pi * n / 4 + np.pi / 4)
    got = loudness_of(np.stack([x, x], 1), RATE)
    assert abs(got.sample_peak - 20 * math.log10(0.5 / math.sqrt(2))) < 0.01
    assert abs(got.true_peak - 20 * math.log10(0.5)) < 0.1, got


def test_the_figures_do_not_depend_on_the_blocks_fed():
    x = _programme(6.0)
    whole = loudness_of(x, RATE, full_scale=1 << 23, block=len(x))
    for block in (1, 777, 4800, 65536):
        if block == 1:
            meter = LoudnessMeter(RATE, 2, full_scale=1 << 23)
            for piece in np.array_split(x, 997):           # pieces of ~289 samples, uneven
                meter.add(piece)
            got = meter.measure()
        else:
            got = loudness_of(x, RATE, full_scale=1 << 23, block=block)
        assert got.integrated == pytest.approx(whole.integrated, abs=1e-9)
        assert got.range == pytest.approx(whole.range, abs=1e-9)
        assert got.true_peak == pytest.approx(whole.true_peak, abs=1e-9)
        assert got.channel_true_peak == pytest.approx(whole.channel_true_peak, abs=1e-9)


def test_a_stretch_measures_as_that_stretch_alone():
    """:meth:`measure` of seconds 6..12 is the second half measured on its own (the filters'
    state at the cut aside: within 0.02 LU)."""
    x = _programme(12.0)
    meter = LoudnessMeter(RATE, 2, full_scale=1 << 23)
    meter.add(x)
    part = meter.measure(6.0, 12.0)
    alone = loudness_of(x[6 * RATE:], RATE, full_scale=1 << 23)
    assert part.integrated == pytest.approx(alone.integrated, abs=0.02)
    assert part.true_peak == pytest.approx(alone.true_peak, abs=0.02)
    assert part.blocks == alone.blocks == 57
    assert len(meter.momentary()) == 117 and len(meter.short_term()) == 91


def test_silence_has_no_loudness():
    got = loudness_of(np.zeros((RATE * 4, 6), np.int32), RATE, full_scale=1 << 23)
    assert (got.integrated, got.range, got.true_peak, got.sample_peak) == (None, None, None, None)
    assert got.as_dict()["channel_integrated_lufs"] == [None] * 6


def test_channel_weights_follow_the_labels_or_st_429_2():
    assert channel_weights(["chL", "chR", "chC", "chLFE", "chLs", "chRs"], 6) == \
        (1.0, 1.0, 1.0, 0.0, SURROUND_WEIGHT, SURROUND_WEIGHT)
    assert channel_weights(["L", "R", "C", "LFE", "Lss", "Rss", "Lrs", "Rrs"], 8)[4:] == (SURROUND_WEIGHT,) * 4
    assert channel_weights(["chHI", "chVIN"], 2) == (0.0, 0.0)
    assert channel_weights(None, 8) == (1.0, 1.0, 1.0, 0.0, SURROUND_WEIGHT, SURROUND_WEIGHT, 0.0, 0.0)
    assert channel_weights(None, 2) == (1.0, 1.0)
    with pytest.raises(ValueError, match="3 weights for 2 channels"):
        LoudnessMeter(RATE, 2, weights=(1, 1, 1))


@needs_ffmpeg
def test_the_meter_agrees_with_ffmpeg_ebur128(tmp_path):
    x = _programme(12.0)
    ref = ffmpeg_ebur128(write_pcm_wav(tmp_path / "p.wav", x))
    got = loudness_of(x, RATE, full_scale=1 << 23)
    assert abs(got.integrated - ref["I"]) <= 0.1, (got, ref)
    assert abs(got.range - ref["LRA"]) <= 0.1, (got, ref)
    assert abs(got.true_peak - ref["true_peak"]) <= 0.2, (got, ref)
    for mine, theirs in zip(got.channel_true_peak, ref["true_peaks"]):
        assert abs(mine - theirs) <= 0.2, (got, ref)


def test_the_meter_agrees_with_pyloudnorm():
    pyln = pytest.importorskip("pyloudnorm")
    x = _programme(12.0)
    got = loudness_of(x, RATE, full_scale=1 << 23)
    assert abs(got.integrated - pyln.Meter(RATE).integrated_loudness(x / (1 << 23))) <= 0.1
