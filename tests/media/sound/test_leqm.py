"""Leq(m), ISO 21727:2016 (``cinegpu.media.sound.leqm`` and the loudness meter's ``leq_m``): the
M-weighting FIR against the ITU-R BS.468-4 table, the 85 dB calibration of the -20 dBFS
reference tone at 2 kHz, pink noise, surrounds 3 dB down, the LFE left out, silence (issue 55)."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

from cinegpu.media.sound.leqm import FIR_SECONDS, LEVEL_OFFSET_DB, M_OFFSET_DB, bs468_db, m_weighting
from cinegpu.media.sound.loudness import LoudnessMeter, loudness_of, loudness_text

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                reason="the loudness meter needs scipy (the report extra)")

#: ITU-R BS.468-4 Table 1, the weighting network's response: (Hz, dB, tolerance dB).  Source:
#: Rec. ITU-R BS.468-4 as quoted by Wikipedia's "ITU-R 468 noise weighting" and by endolith's
#: waveform_analysis tests; ISO 21727:2016 Table 1 is the same less 5.6 dB (-35.5 dB at 31 Hz,
#: 0.0 at 2 kHz, +6.6 at 6.3 kHz, -27.8 at 20 kHz).  6.3 kHz is the curve's fixing point (no
#: tolerance in the table): 0.05 dB is allowed for the table's rounding.
BS468_TABLE = (
    (31.5, -29.9, 2.0), (63, -23.9, 1.4), (100, -19.8, 1.0), (200, -13.8, 0.85), (400, -7.8, 0.7),
    (800, -1.9, 0.55), (1000, 0.0, 0.5), (2000, 5.6, 0.5), (3150, 9.0, 0.5), (4000, 10.5, 0.5),
    (5000, 11.7, 0.5), (6300, 12.2, 0.05), (7100, 12.0, 0.2), (8000, 11.4, 0.4), (9000, 10.1, 0.6),
    (10000, 8.1, 0.8), (12500, 0.0, 1.2), (14000, -5.3, 1.4), (16000, -11.7, 1.6), (20000, -22.2, 2.0),
)


def _sine(frequency: float, amplitude: float, channel: int, channels: int = 6,
          rate: int = 48000, seconds: float = 5.0) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    x = np.zeros((len(t), channels))
    x[:, channel] = amplitude * np.sin(2 * np.pi * frequency * t)
    return x


def test_the_analytic_468_curve_is_the_table():
    f = np.array([row[0] for row in BS468_TABLE])
    want = np.array([row[1] for row in BS468_TABLE])
    assert np.all(np.abs(bs468_db(f) - want) <= 0.1), bs468_db(f) - want
    assert bs468_db(0.0) == -math.inf


@pytest.mark.parametrize("rate", [44100, 48000, 96000])
def test_the_m_weighting_filter_meets_bs468s_table(rate):
    """The FIR's response plus 5.6 dB is BS.468-4's table within its tolerances to 20 kHz
    (it is within 0.1 dB at each point)."""
    from scipy.signal import freqz  # noqa: PLC0415  (scipy: skipped without it)
    f = np.array([row[0] for row in BS468_TABLE])
    _, h = freqz(m_weighting(rate), worN=f, fs=rate)
    got = 20 * np.log10(np.abs(h)) + M_OFFSET_DB
    for (hz, want, tol), g in zip(BS468_TABLE, got):
        assert abs(g - want) <= min(tol, 0.1), (rate, hz, g, want)
    assert len(BS468_TABLE) == 20


def test_the_calibration_constant():
    """-20 dBFS (AES17: a sine of peak 0.1, mean square 0.005) reads 85 dB: 108.0103 dB."""
    assert abs(LEVEL_OFFSET_DB - 108.010299957) < 1e-6


@pytest.mark.parametrize(("frequency", "want"), [(2000, 85.0), (1000, 85.0 - 5.6), (6300, 85.0 + 6.6)])
def test_a_reference_level_tone_in_a_screen_channel(frequency, want):
    """A -20 dBFS tone in L of a 5.1 track: 85 dB at 2 kHz, where M is 0 dB; the M curve's
    -5.6 dB at 1 kHz and +6.6 dB at 6.3 kHz (ISO 21727 Table 1) elsewhere."""
    got = loudness_of(_sine(frequency, 0.1, 0), 48000).leq_m
    assert abs(got - want) < 0.05, got


def test_96k_reads_as_48k():
    got = loudness_of(_sine(2000, 0.1, 2, rate=96000, seconds=2.0), 96000).leq_m
    assert abs(got - 85.0) < 0.05, got


def test_channels_sum_in_power_surrounds_3_db_down_lfe_out():
    """L and R both at the reference level: +3.01 dB; a surround alone 82 dB (ISO 21727 Table 2);
    the LFE (channel 4 of ST 429-2's 5.1) carries no Leq(m)."""
    both = _sine(2000, 0.1, 0) + _sine(2000, 0.1, 1)
    assert abs(loudness_of(both, 48000).leq_m - (85.0 + 10 * math.log10(2))) < 0.05
    assert abs(loudness_of(_sine(2000, 0.1, 4), 48000).leq_m - 82.0) < 0.05
    assert loudness_of(_sine(2000, 0.5, 3), 48000).leq_m is None
    with_lfe = _sine(2000, 0.1, 0) + _sine(60, 0.9, 3)
    assert abs(loudness_of(with_lfe, 48000).leq_m - 85.0) < 0.05


def _pink(seconds: float, rate: int, rms: float, seed: int = 5) -> np.ndarray:
    """Pink noise band-limited to 20 Hz .. 20 kHz (ISO 21727 3.2), ``rms`` its RMS."""
    n = int(seconds * rate)
    spec = np.fft.rfft(np.random.default_rng(seed).standard_normal(n))
    f = np.fft.rfftfreq(n, 1 / rate)
    spec[(f < 20) | (f > 20000)] = 0
    spec[f > 0] /= np.sqrt(f[f > 0])
    x = np.fft.irfft(spec, n)
    return x * rms / np.sqrt(np.mean(x * x))


def test_reference_pink_noise():
    """Pink noise at -20 dBFS RMS (RMS 0.1 / sqrt 2) in one channel: its unweighted level is the
    reference level's 85 dB, and Leq(m) adds the M curve's gain for pink noise, the mean of
    ``10**(M/10)`` over log frequency from 20 Hz to 20 kHz (-0.97 dB): 84.0 dB."""
    x = _pink(20.0, 48000, 0.1 / math.sqrt(2))
    assert abs(10 * math.log10(np.mean(x * x)) + LEVEL_OFFSET_DB - 85.0) < 1e-9
    logf = np.linspace(math.log(20), math.log(20000), 20001)
    gain = 10 * math.log10(np.mean(10 ** ((bs468_db(np.exp(logf)) - M_OFFSET_DB) / 10)))
    assert abs(gain - (-0.97)) < 0.01
    got = loudness_of(x[:, None], 48000).leq_m
    assert abs(got - (85.0 + gain)) < 0.15, got


def test_silence_has_no_leq_m_and_the_line_says_so():
    got = loudness_of(np.zeros((48000, 6)), 48000)
    assert got.leq_m is None and got.as_dict()["leq_m_db"] is None
    assert "Leq(m) n/a" in loudness_text(got)
    tone = loudness_of(_sine(2000, 0.1, 0, seconds=1.0), 48000)
    assert "Leq(m) 85.0 dB" in loudness_text(tone), loudness_text(tone)


def test_leq_m_does_not_depend_on_the_blocks_fed_and_reels_have_theirs():
    x = _sine(1000, 0.1, 0, channels=2, seconds=4.0)
    x[len(x) // 2:] *= 0.1                                 # the second half 20 dB down
    whole = loudness_of(x, 48000).leq_m
    meter = LoudnessMeter(48000, 2)
    for piece in np.array_split(x, 613):
        meter.add(piece)
    assert abs(meter.measure().leq_m - whole) < 1e-6
    # a stretch's Leq(m) is of the weighted signal, which lags by the FIR's 40 ms (FIR_SECONDS)
    loud, lag = 10 ** ((85.0 - 5.6) / 10), FIR_SECONDS / 2.0
    first, second = meter.measure(0.0, 2.0).leq_m, meter.measure(2.0, 4.0).leq_m
    assert abs(first - 10 * math.log10(loud * (1 - lag))) < 0.05, first
    assert abs(second - 10 * math.log10(loud * (lag + 0.01 * (1 - lag)))) < 0.05, second
