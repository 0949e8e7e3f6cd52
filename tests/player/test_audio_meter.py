"""cinegpu.player.audio's meters (issue 53): :class:`PeakMeter`, each channel's peak over the
last 0.1 s of sound fed, in dBFS; and an :class:`AudioFeed` on a null sink keeping it as the
clock runs (an in-memory sound: no files)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from cinegpu.player.audio import METER_WINDOW, AudioFeed, NullSink, PeakMeter
from cinegpu.player.clock import PlaybackClock
from helpers.sound_util import SquareWaveSound

FULL_24 = float(1 << 23)        # 0 dBFS of 24-bit PCM


def test_known_block_gives_known_peaks():
    meter = PeakMeter(4, 4800, FULL_24)
    block = np.zeros((1000, 4), np.int32)
    block[10, 0] = 1 << 22                  # half scale: -6.02 dBFS
    block[20, 1] = -(1 << 23)               # the negative full scale: 0 dBFS
    block[30, 2] = 8388                     # about -60 dBFS
    meter.feed(block)
    assert meter.peaks().tolist() == [0.5, 1.0, 8388 / FULL_24, 0.0]
    assert meter.peaks_dbfs() == [-6.0, 0.0, -60.0, None]
    assert meter.peaks_dbfs(decimals=3)[0] == round(20 * math.log10(0.5), 3)
    # the larger of the blocks within the window, per channel; float PCM against 1.0
    half = np.full((100, 4), 1 << 20, np.int32)
    meter.feed(half)
    assert meter.peaks_dbfs()[3] == round(20 * math.log10(1 / 8), 1)
    f = PeakMeter(2, 10)
    f.feed(np.array([[0.25, -0.5], [-0.125, 0.0]], np.float32))
    assert f.peaks_dbfs(3) == [-12.041, -6.021]


def test_silence_and_nothing_fed_read_as_none():
    meter = PeakMeter(6, 4800, FULL_24)
    assert meter.peaks_dbfs() == [None] * 6 and meter.peaks().tolist() == [0.0] * 6
    meter.feed(np.zeros((2000, 6), np.int32))
    assert meter.peaks_dbfs() == [None] * 6
    meter.feed(np.zeros((0, 6), np.int32))       # an empty block changes nothing
    assert meter.peaks_dbfs() == [None] * 6


def test_window_forgets_old_blocks():
    meter = PeakMeter(2, 4800, FULL_24)
    loud = np.full((2000, 2), 1 << 22, np.int32)
    meter.feed(loud)
    meter.feed(np.zeros((2000, 2), np.int32))
    assert meter.peaks_dbfs() == [-6.0, -6.0]         # 4000 sample frames: still in the window
    meter.feed(np.zeros((2000, 2), np.int32))
    assert meter.peaks_dbfs() == [-6.0, -6.0]         # 6000: the loud block still covers some of the 4800
    meter.feed(np.zeros((1000, 2), np.int32))
    assert meter.peaks_dbfs() == [None, None]         # the last 5000 cover the window: forgotten
    # a block longer than the window: only its last ``window`` sample frames count
    long = np.zeros((10000, 2), np.int32)
    long[0] = 1 << 22
    long[-1, 1] = 1 << 21
    meter.feed(long)
    assert meter.peaks_dbfs() == [None, -12.0]
    meter.clear()
    assert meter.peaks_dbfs() == [None, None]


def test_integer_extremes_do_not_overflow():
    meter = PeakMeter(1, 10, float(1 << 31))
    meter.feed(np.array([[np.iinfo(np.int32).min]], np.int32))
    assert meter.peaks_dbfs() == [0.0]


def test_feed_meters_what_it_feeds_the_null_sink():
    """Playing on a null sink the meters move (the null sink is fed as a device is), name the
    channels (ST 429-2 order without MCA labels), and fall to silence once paused."""
    t = [100.0]
    clock = PlaybackClock(Fraction(24), 48, now=lambda: t[0])
    sound = SquareWaveSound([1.0, 0.5, 0.1, 0.0, 0.25, 0.25])
    feed = AudioFeed(sound, NullSink(6), clock, volume=0.0, mute=True)     # meters before volume and mute
    assert feed.meter.window == round(METER_WINDOW * 48000)
    assert feed.meter.peaks_dbfs() == [None] * 6
    assert feed.names == ["L", "R", "C", "LFE", "Ls", "Rs"]
    clock.play()
    for _ in range(30):
        t[0] += 0.01
        feed.update(t[0])
    assert feed.sink.played > 0
    assert feed.meter.peaks_dbfs() == pytest.approx([0.0, -6.0, -20.0, None, -12.0, -12.0], abs=0.1)
    clock.pause()
    feed.update(t[0])
    assert feed.meter.peaks_dbfs() == [None] * 6
