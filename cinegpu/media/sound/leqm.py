"""Leq(m): the M-weighted equivalent level of ISO 21727:2016 (cinema loudness, Dolby's Leq(M)).

ISO 21727:2016 clause 4.2 measures a programme in the electrical domain:

* 4.2.1: each channel scaled to its recommended replay level (ISO 22234; the Table 2 typical
  calibration: L, C, R 85 dB, each surround 82 dB, LFE 95 dB), then M-weighted.  Here the screen
  channels weigh 1 and each surround 3 dB less (:data:`SURROUND_GAIN_DB`), in power; the LFE is
  left out, and so are channels that are no loudspeaker's (HI, VI-N, sync).
* 3.5 and Table 1: the M-type weighting is the ITU-R BS.468-4 weighting curve re-referenced to
  0 dB at 2 kHz: the 468 curve (0 dB at 1 kHz, +5.6 dB at 2 kHz, +12.2 dB at 6.3 kHz) less
  :data:`M_OFFSET_DB` (5.6 dB): -5.6 dB at 1 kHz, +6.6 dB at 6.3 kHz, -35.5 dB at 31.5 Hz.
* 4.2.2: the weighted signals squared and summed over the channels (a scalar, power sum).
* The equivalent level: the mean of that sum over the whole programme, in dB, where the
  reference level (3.1: -20 dBFS, a steady tone, so -20 dB re a full-scale sine's mean square
  of 1/2, AES17) reads the recommended replay level, 85 dB: ``Leq(m) = 10 log10(mean) +``
  :data:`LEVEL_OFFSET_DB` (108.01 dB, as leqm-nrt, the reference implementation DCP-o-matic
  uses, derives it).  So a 2 kHz tone at -20 dBFS (peak 0.1 of full scale) in one screen
  channel reads 85.0 dB, a 1 kHz one 79.4 dB; pink noise at -20 dBFS RMS (20 Hz to 20 kHz,
  clause 3.2's reference pink noise, which reads 85 dB(C) in the room) reads 85 dB plus the
  M-weighting's gain for pink noise (-0.97 dB, see the tests: 84.0 dB): Leq(m) is not C-weighted.
  ISO 21727 asks the reference level be read by an average-responding meter; like leqm-nrt
  this meter takes it as RMS (the average-responding reading of a sine is 0.9 dB lower).

The M weighting is a digital filter made with scipy for the signal's rate: a linear-phase FIR
(:func:`m_weighting`, 80 ms of taps, Hamming window) sampled from the 468 network's published
transfer function (:func:`bs468_db`, the sixth-order rational of the BS.468-4 weighting network,
as Wikipedia's ITU-R 468 article gives it).  The bilinear transform of that network is exact
below 5 kHz but, the curve still falling 30 dB an octave at the Nyquist frequency, its warping
takes the response 12.7 dB below the curve at 12.5 kHz at 48 kHz (the table allows 1.2 dB); the
FIR follows the curve within 0.1 dB from 31.5 Hz to 20 kHz at 44.1, 48 and 96 kHz.  Its delay
(half its length) does not change an energy mean; :meth:`MWeighting.tail` gives what the last
samples still owe.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["FIR_SECONDS", "scipy_signal", "LEVEL_OFFSET_DB", "M_OFFSET_DB", "MWeighting", "SURROUND_GAIN_DB", "bs468_db",
           "leq_m_db", "leqm_weights", "m_weighting"]

#: The M weighting is the BS.468-4 curve less this, dB: 0 dB at 2 kHz (ISO 21727 Table 1).
M_OFFSET_DB = 5.6
#: Recommended replay level of a screen channel's reference level, dB SPL (ISO 21727 Table 2).
REFERENCE_SPL = 85.0
#: Reference level, dBFS (ISO 21727 clause 3.1), as RMS relative to a full-scale sine (AES17).
REFERENCE_DBFS = -20.0
#: dB added to ``10 log10`` of the mean weighted square (full scale 1.0) to read dB SPL:
#: 85 dB at the reference level, a mean square of ``0.5 * 10**(-20/10)`` (108.0103 dB).
LEVEL_OFFSET_DB = REFERENCE_SPL - 10.0 * math.log10(0.5 * 10.0 ** (REFERENCE_DBFS / 10.0))
#: A surround channel's calibration relative to a screen channel's, dB (ISO 21727 Table 2).
SURROUND_GAIN_DB = -3.0
#: Length of the FIR, seconds (taps: twice this times the rate, plus one).
FIR_SECONDS = 0.04
#: Samples filtered at a time, per channel.
CHUNK = 1 << 16


def scipy_signal():
    """``scipy.signal``, imported on first use: it takes about 0.8 s, which every ``cinegpu``
    command would pay at start-up, and only the loudness meters need it."""
    import scipy.signal  # noqa: PLC0415  (start-up: 0.8 s, for the loudness meters only)
    return scipy.signal


def bs468_db(frequency) -> np.ndarray:
    """The ITU-R BS.468-4 weighting at ``frequency`` Hz (array-like), dB (0 at 1 kHz, -inf at
    0 Hz): ``18.2 + 20 log10 R(f)``, ``R(f) = 1.2463e-4 f / |h1(f) + j h2(f)|``, the magnitude of
    the weighting network's transfer function ``s / D(s)`` (D of degree 6)."""
    f = np.asarray(frequency, np.float64)
    f2 = f * f
    h1 = ((-4.737338981378384e-24 * f2 + 2.043828333606125e-15) * f2 - 1.363894795463638e-07) * f2 + 1.0
    h2 = ((1.306612257412824e-19 * f2 - 2.118150887518656e-11) * f2 + 5.559488023498642e-04) * f
    with np.errstate(divide="ignore"):
        return 18.2 + 20.0 * np.log10(1.246332637532143e-4 * f / np.hypot(h1, h2))


def m_weighting(rate: float) -> np.ndarray:
    """The M-weighting FIR at ``rate`` Hz: ``2 round(rate * FIR_SECONDS) + 1`` taps (type I,
    linear phase), by frequency sampling (scipy's ``firwin2``) of :func:`bs468_db` less
    :data:`M_OFFSET_DB` on a grid from 0 Hz to the Nyquist frequency."""
    taps = 2 * round(rate * FIR_SECONDS) + 1
    points = 1 + 2 ** math.ceil(math.log2(taps))
    grid = np.linspace(0.0, rate / 2.0, points)
    gain = 10.0 ** ((bs468_db(grid) - M_OFFSET_DB) / 20.0)
    return scipy_signal().firwin2(taps, grid, gain, nfreqs=points, fs=rate)


def leqm_weights(weights: Sequence[float]) -> np.ndarray:
    """Each channel's power weight in Leq(m) from its BS.1770-4 weight (``loudness.channel_weights``):
    a front channel (1.0) 1, a surround (above 1) :data:`SURROUND_GAIN_DB`, the LFE and
    channels that are no loudspeaker's (0) 0 (ISO 21727 4.2.1 and Table 2)."""
    w = np.asarray(weights, np.float64)
    return np.where(w > 1.0, 10.0 ** (SURROUND_GAIN_DB / 10.0), np.where(w > 0.0, 1.0, 0.0))


def leq_m_db(mean_square: float) -> float | None:
    """Leq(m), dB, of the programme's mean channel-weighted M-weighted square (full scale 1.0);
    None for silence (no signal: nothing to weigh)."""
    return 10.0 * math.log10(mean_square) + LEVEL_OFFSET_DB if mean_square > 0.0 else None


class MWeighting:
    """The M weighting of ``channels`` channels at ``rate`` Hz run block by block: each block's
    output continues the last (the FIR's input history is carried), delayed by
    ``(taps - 1) / 2`` samples."""

    def __init__(self, rate: float, channels: int):
        self.taps = m_weighting(rate)
        self._history = np.zeros((channels, len(self.taps) - 1))

    def filter(self, x: np.ndarray) -> np.ndarray:
        """The weighted signal of the next samples ``x``, shape (channels, n), as many outputs,
        :data:`CHUNK` samples at a time (FFTs of a few times the taps run fastest)."""
        out = np.empty(x.shape)
        for i in range(0, x.shape[1], CHUNK):
            whole = np.concatenate([self._history, x[:, i:i + CHUNK]], axis=1)
            self._history = whole[:, whole.shape[1] - self._history.shape[1]:]
            out[:, i:i + CHUNK] = scipy_signal().fftconvolve(whole, self.taps[None, :], mode="valid", axes=-1)
        return out

    def tail(self) -> np.ndarray:
        """The outputs still owed after the last sample, shape (channels, taps - 1): the filter
        run on silence (nothing is changed)."""
        whole = np.concatenate([self._history, np.zeros_like(self._history)], axis=1)
        return scipy_signal().fftconvolve(whole, self.taps[None, :], mode="valid", axes=-1)
