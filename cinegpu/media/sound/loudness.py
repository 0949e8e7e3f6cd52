"""Loudness of a sound track: ITU-R BS.1770-4 and EBU R 128 (Tech 3341, Tech 3342).

What is measured, each over the samples handed to :meth:`LoudnessMeter.add` in order, a block
at a time (memory bounded by the block, not by the track):

* K-weighting (BS.1770-4 Annex 1, clause 2.1): the pre-filter (a high shelf, +4 dB above about
  1.7 kHz) then the RLB high-pass (about 38 Hz), both biquads.  Their coefficients are derived
  for any sample rate by the bilinear transform of the analogue prototypes, as libebur128 and
  FFmpeg's ``ebur128`` filter derive them; at 48 kHz they are BS.1770-4's Tables 1 and 2.
* The mean square of each channel's K-weighted signal over consecutive 100 ms sub-blocks.
  A 400 ms gating block (75 % overlap, BS.1770-4 clause 2.8) is four consecutive sub-blocks;
  a 3 s short-term block (EBU Tech 3341) thirty.  A last sub-block shorter than 100 ms is not
  counted (as BS.1770-4 counts only whole gating blocks).
* Block loudness ``L = -0.691 + 10 log10(sum_i G_i z_i)`` in LUFS (LKFS), ``G_i`` the channel
  weights (:func:`channel_weights`: 1.0 for L, R, C, 1.41 for surrounds, LFE left out).
* Integrated loudness (BS.1770-4 clause 2.8, EBU R 128): the gating blocks above the absolute
  gate of -70 LUFS, then those also above the relative gate, 10 LU below the loudness of the
  mean energy of the first set; the loudness of the mean energy of what is left.
* Loudness range, LRA (EBU Tech 3342): the short-term loudness every 100 ms (10 Hz) above
  -70 LUFS and above 20 LU below their mean energy's loudness; LRA is the 95th percentile
  minus the 10th (linear interpolation between ranks), in LU.
* True peak (BS.1770-4 Annex 2): each channel oversampled (x4 below 96 kHz, x2 below 192 kHz,
  as Annex 2 asks for a 192 kHz result) by a polyphase FIR interpolator (a Kaiser-windowed
  sinc, :func:`interpolator`) run block by block with its state carried, and the largest
  absolute value of the oversampled signal, in dBTP (dB relative to full scale, 1.0).  The
  Annex's 12.04 dB attenuation before the interpolator is for integer arithmetic and is not
  needed in float64.  A true peak is never reported below the sample peak.
* Leq(m), ISO 21727:2016 (:mod:`.leqm`): each channel M-weighted (the BS.468-4 curve less
  5.6 dB), squared, summed over the channels in power (surrounds 3 dB down, LFE left out),
  kept per 100 ms sub-block like the K-weighted energy, and its mean over the stretch in dB
  (85 dB for a 2 kHz tone at -20 dBFS in one screen channel).

Samples are floats where 1.0 is full scale; integer PCM (``SoundTrack``'s int32 at
``QuantizationBits``) is divided by ``full_scale`` (2**(bits - 1)).  Silence has no loudness:
a figure that no block passes the gates for is ``None`` (and ``-inf`` dB peaks are ``None``).
pyloudnorm holds the whole signal and has no true peak, which a feature's sound (hours of 6 to
16 channels) does not allow; the tests compare this meter with pyloudnorm and FFmpeg's
``ebur128`` filter.  scipy (its ``signal`` filters) is needed, an optional dependency of the
report (``pip install 'cinegpu[report]'``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from cinegpu.media.sound.leqm import MWeighting, leq_m_db, leqm_weights, scipy_signal

__all__ = ["composition_loudness", "int24", "loudness_text", "mix_loudness", "ABSOLUTE_GATE", "Loudness", "LoudnessMeter", "RELATIVE_GATE", "SURROUND", "channel_weights",
           "interpolator", "k_weighting", "loudness_of", "oversampling"]

#: Sub-block length, seconds: the hop of the gating and short-term blocks (BS.1770-4 2.8: 75 %
#: overlap of 400 ms blocks; EBU Tech 3342: short-term loudness at 10 Hz).
SUB_BLOCK = 0.1
#: Sub-blocks in a gating (momentary, 400 ms) and a short-term (3 s) block.
MOMENTARY, SHORT_TERM = 4, 30
#: Absolute gate, LUFS (BS.1770-4 clause 2.8, EBU Tech 3342).
ABSOLUTE_GATE = -70.0
#: Relative gate of the integrated loudness, LU below the absolute-gated loudness (BS.1770-4 2.8).
RELATIVE_GATE = -10.0
#: Relative gate of the loudness range, LU (EBU Tech 3342).
LRA_GATE = -20.0
#: Percentiles of the gated short-term loudness whose difference is the LRA (EBU Tech 3342).
LRA_PERCENTILES = (10.0, 95.0)
#: Weight of a surround channel (BS.1770-4 Table 3: +1.5 dB, 1.41).
SURROUND_WEIGHT = 1.41
#: Loudspeaker symbols (ST 377-4 / ST 428-12 MCA tags, without the ``ch`` prefix) weighted as
#: surrounds (azimuth 60 to 120 degrees and behind, BS.1770-4 Table 3 and Table 4).
SURROUND = frozenset({"Ls", "Rs", "Lss", "Rss", "Lrs", "Rrs", "Lsr", "Rsr", "Cs", "Bsl", "Bsr",
                      "Lsd", "Rsd", "Ltb", "Rtb", "Lts", "Rts"})
#: Front loudspeakers, weight 1.0.
FRONT = frozenset({"L", "R", "C", "Lc", "Rc", "Lw", "Rw", "Ltf", "Rtf", "Tc", "M1", "M2", "M", "Lt", "Rt"})
#: ST 429-2 configuration 1 channel order, the order of an unlabelled DCP track (5.1, then
#: HI and VI-N, which are not programme loudspeakers and carry no loudness).
UNLABELLED_5_1 = ("L", "R", "C", "LFE", "Ls", "Rs")
#: Interpolator taps per phase of the true-peak oversampler (BS.1770-4 Annex 2's example: 12).
TAPS_PER_PHASE = 16


def k_weighting(rate: float) -> np.ndarray:
    """The K-weighting filter at ``rate`` Hz as second-order sections, shape (2, 6) (scipy's
    ``sos``): the pre-filter (BS.1770-4 Table 1), then the RLB high-pass (Table 2), each
    ``[b0, b1, b2, 1, a1, a2]``, by the bilinear transform libebur128 uses."""
    f0, gain, q = 1681.974450955533, 3.999843853973347, 0.7071752369554196
    k = math.tan(math.pi * f0 / rate)
    vh = 10.0 ** (gain / 20.0)
    vb = vh ** 0.4996667741545416
    a0 = 1.0 + k / q + k * k
    pre = [(vh + vb * k / q + k * k) / a0, 2.0 * (k * k - vh) / a0, (vh - vb * k / q + k * k) / a0,
           1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0]
    f0, q = 38.13547087602444, 0.5003270373238773
    k = math.tan(math.pi * f0 / rate)
    a0 = 1.0 + k / q + k * k
    rlb = [1.0, -2.0, 1.0, 1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / q + k * k) / a0]
    return np.array([pre, rlb])


def oversampling(rate: float) -> int:
    """The true-peak oversampling factor at ``rate`` Hz (BS.1770-4 Annex 2: at least 192 kHz)."""
    return 4 if rate < 96000 else 2 if rate < 192000 else 1


def interpolator(factor: int) -> np.ndarray:
    """The polyphase interpolator of the true-peak meter, shape (factor, taps): phase ``p``
    gives the oversampled output at ``n + p / factor`` from inputs ``n, n - 1, ...``.  A
    low-pass at the input's Nyquist frequency (Kaiser window, beta 8, :data:`TAPS_PER_PHASE`
    taps a phase), each phase's gain 1 at DC."""
    if factor == 1:
        return np.ones((1, 1))
    h = scipy_signal().firwin(TAPS_PER_PHASE * factor, 1.0 / factor, window=("kaiser", 8.0)) * factor
    return h.reshape(-1, factor).T.copy()


def channel_weights(symbols: Sequence[str] | None, channels: int) -> tuple[float, ...]:
    """BS.1770-4 channel weights ``G_i`` (Table 3 and 4) of a track of ``channels`` channels.

    ``symbols``: each channel's ST 377-4 MCA tag symbol (``chL``, ``chLFE``...; the ``ch``
    prefix optional) where the track labels its channels.  Front channels weigh 1.0,
    surrounds :data:`SURROUND_WEIGHT`, LFE 0, and channels that are no loudspeaker's (HI,
    VI-N, sync, unknown symbols) 0.  Without labels: one to five channels as L, R, C, Ls, Rs
    (as FFmpeg and pyloudnorm take them), six or more as ST 429-2 configuration 1 (L, R, C,
    LFE, Ls, Rs; the rest carry no loudness)."""
    if symbols and len(symbols) == channels:
        out = []
        for s in symbols:
            s = s[2:] if s.startswith("ch") else s
            out.append(SURROUND_WEIGHT if s in SURROUND else 1.0 if s in FRONT else 0.0)
        return tuple(out)
    if channels <= 2:
        return (1.0,) * channels
    if channels <= 5:
        return (1.0, 1.0, 1.0, SURROUND_WEIGHT, SURROUND_WEIGHT)[:channels]
    return (1.0, 1.0, 1.0, 0.0, SURROUND_WEIGHT, SURROUND_WEIGHT) + (0.0,) * (channels - 6)


@dataclass(frozen=True)
class Loudness:
    """Loudness figures of a stretch of sound (None where silence leaves no figure).

    ``integrated``: LUFS (BS.1770-4 2.8); ``range``: LU (EBU Tech 3342); ``true_peak`` and
    ``sample_peak``: dBTP and dBFS, the largest over the channels; ``channel_integrated`` and
    ``channel_true_peak``: each channel's own (its integrated loudness measured alone, weight 1);
    ``seconds``: the stretch's length; ``blocks``: the gating blocks it holds; ``leq_m``: the
    ISO 21727 Leq(m), dB (:mod:`.leqm`; None for silence)."""

    integrated: float | None
    range: float | None
    true_peak: float | None
    sample_peak: float | None
    channel_integrated: tuple[float | None, ...]
    channel_true_peak: tuple[float | None, ...]
    seconds: float
    blocks: int
    leq_m: float | None = None

    def as_dict(self) -> dict:
        """The figures as JSON values (rounded to 0.01 dB)."""
        def r(v):
            return None if v is None else round(v, 2)
        return {"integrated_lufs": r(self.integrated), "range_lu": r(self.range),
                "true_peak_dbtp": r(self.true_peak), "sample_peak_dbfs": r(self.sample_peak),
                "channel_integrated_lufs": [r(v) for v in self.channel_integrated],
                "channel_true_peak_dbtp": [r(v) for v in self.channel_true_peak],
                "seconds": round(self.seconds, 3), "gating_blocks": self.blocks,
                "leq_m_db": r(self.leq_m)}


def _db(power_or_amplitude: float, scale: float) -> float | None:
    return scale * math.log10(power_or_amplitude) if power_or_amplitude > 0 else None


def _lufs(energy) -> np.ndarray:
    """Loudness of weighted mean-square energies, LUFS (-inf for 0)."""
    with np.errstate(divide="ignore"):
        return -0.691 + 10.0 * np.log10(np.asarray(energy, np.float64))


def _windows(energy: np.ndarray, size: int) -> np.ndarray:
    """Mean of every run of ``size`` consecutive rows of ``energy`` (hop 1 row)."""
    if len(energy) < size:
        return np.zeros((0,) + energy.shape[1:])
    c = np.cumsum(np.concatenate([np.zeros((1,) + energy.shape[1:]), energy]), axis=0)
    return (c[size:] - c[:-size]) / size


def _gated(blocks: np.ndarray) -> float | None:
    """Integrated loudness of gating-block energies (BS.1770-4 2.8, both gates), LUFS."""
    loud = _lufs(blocks)
    kept = blocks[loud > ABSOLUTE_GATE]
    if not len(kept):
        return None
    gate = float(_lufs(kept.mean())) + RELATIVE_GATE
    kept = blocks[(loud > ABSOLUTE_GATE) & (loud > gate)]
    return float(_lufs(kept.mean())) if len(kept) else None


def _range(short_term: np.ndarray) -> float | None:
    """Loudness range of short-term block energies (EBU Tech 3342), LU."""
    loud = _lufs(short_term)
    loud = loud[loud > ABSOLUTE_GATE]
    if not len(loud):
        return None
    gate = float(_lufs(np.mean(10.0 ** ((loud + 0.691) / 10.0)))) + LRA_GATE
    loud = loud[loud > gate]
    if not len(loud):
        return None
    lo, hi = np.percentile(loud, LRA_PERCENTILES)
    return float(hi - lo)


class LoudnessMeter:
    """A BS.1770-4 / EBU R 128 meter fed blocks of samples in order (see the module).

    ``rate``: Hz; ``channels``; ``weights``: BS.1770-4 ``G_i`` (default
    :func:`channel_weights` without labels); ``full_scale``: the sample value of 0 dBFS (1.0 for
    floats, 2**23 for 24-bit PCM).  What is kept is 100 ms figures: per channel the K-weighted
    energy, the true peak and the sample peak, so :meth:`measure` can give any stretch's
    figures afterwards (a reel's, say) and the memory is bounded by the length in tenths of a
    second, not in samples."""

    def __init__(self, rate: float, channels: int, weights: Sequence[float] | None = None,
                 full_scale: float = 1.0):
        if rate <= 0 or channels < 1:
            raise ValueError(f"a loudness meter wants a rate above 0 and channels, not {rate} Hz, {channels}")
        self.rate, self.channels = float(rate), channels
        self.weights = np.asarray(weights if weights is not None else channel_weights(None, channels),
                                  np.float64)
        if self.weights.shape != (channels,):
            raise ValueError(f"{len(self.weights)} weights for {channels} channels")
        self.full_scale = float(full_scale)
        self.sub_block = round(self.rate * SUB_BLOCK)          # samples of 100 ms
        self._sos = k_weighting(self.rate)
        self._k_state = np.zeros((2, channels, 2))              # sosfilt's zi: (sections, ch, 2)
        self._phases = interpolator(oversampling(self.rate))
        self._tp_state = [np.zeros((channels, self._phases.shape[1] - 1)) for _ in self._phases]
        self._energy: list[np.ndarray] = []                    # (k, ch) per add()
        self._true: list[np.ndarray] = []
        self._sample: list[np.ndarray] = []
        self._m_weighting = MWeighting(self.rate, channels)
        self._m_weights = leqm_weights(self.weights)
        self._m_energy: list[np.ndarray] = []                  # (k, ch): M-weighted, summed
        self._pending = np.zeros((4, channels))                 # energy sum, true peak, sample peak, M sum
        self._filled = 0                                        # samples in the pending sub-block
        self.samples = 0

    def add(self, samples: np.ndarray) -> None:
        """Feed the next samples, shape (n, channels), ints or floats (see ``full_scale``)."""
        x = np.asarray(samples)
        if x.ndim != 2 or x.shape[1] != self.channels:
            raise ValueError(f"want (n, {self.channels}) samples, got {x.shape}")
        if not len(x):
            return
        x = np.ascontiguousarray(x.T, np.float64)              # (channels, n): filters run along rows
        x /= self.full_scale
        sig = scipy_signal()
        y, self._k_state = sig.sosfilt(self._sos, x, axis=-1, zi=self._k_state)
        np.multiply(y, y, out=y)
        sample = np.abs(x)
        true = sample.copy()
        if len(self._phases) > 1:
            for p, taps in enumerate(self._phases):
                out, self._tp_state[p] = sig.lfilter(taps, [1.0], x, axis=-1, zi=self._tp_state[p])
                np.maximum(true, np.abs(out, out=out), out=true)
        m = self._m_weighting.filter(x)
        self._split(y, true, sample, np.multiply(m, m, out=m))
        self.samples += x.shape[1]

    def _split(self, squares: np.ndarray, true: np.ndarray, sample: np.ndarray, m_squares: np.ndarray) -> None:
        """Fold per-sample figures (channels, n) into 100 ms sub-blocks, carrying the unfinished one."""
        n, spb = squares.shape[1], self.sub_block
        head = min(n, spb - self._filled)
        p = self._pending
        p[0] += squares[:, :head].sum(1)
        p[1] = np.maximum(p[1], true[:, :head].max(1))
        p[2] = np.maximum(p[2], sample[:, :head].max(1))
        p[3] += m_squares[:, :head].sum(1)
        self._filled += head
        if self._filled < spb:
            return
        whole = (n - head) // spb
        end = head + whole * spb
        shape = (self.channels, whole, spb)
        self._energy.append(np.concatenate([p[0:1] / spb, squares[:, head:end].reshape(shape).sum(2).T / spb]))
        self._true.append(np.concatenate([p[1:2], true[:, head:end].reshape(shape).max(2).T]))
        self._sample.append(np.concatenate([p[2:3], sample[:, head:end].reshape(shape).max(2).T]))
        self._m_energy.append(np.concatenate([p[3:4], m_squares[:, head:end].reshape(shape).sum(2).T]))
        p[:] = 0.0
        self._filled = n - end
        if self._filled:
            p[0] = squares[:, end:].sum(1)
            p[1] = true[:, end:].max(1)
            p[2] = sample[:, end:].max(1)
            p[3] = m_squares[:, end:].sum(1)

    def _rows(self, kind: list[np.ndarray]) -> np.ndarray:
        if len(kind) > 1:
            kind[:] = [np.concatenate(kind)]
        return kind[0] if kind else np.zeros((0, self.channels))

    @property
    def sub_blocks(self) -> int:
        """Whole 100 ms sub-blocks measured so far."""
        return len(self._rows(self._energy))

    def momentary(self) -> np.ndarray:
        """Momentary loudness (400 ms, EBU Tech 3341), LUFS, one value every 100 ms: value
        ``j`` is the block of sub-blocks ``j .. j + 3`` (ending at ``(j + 4) / 10`` s)."""
        return _lufs(_windows(self._rows(self._energy), MOMENTARY) @ self.weights)

    def short_term(self) -> np.ndarray:
        """Short-term loudness (3 s, EBU Tech 3341), LUFS, every 100 ms: value ``j`` ends at
        ``(j + 30) / 10`` s."""
        return _lufs(_windows(self._rows(self._energy), SHORT_TERM) @ self.weights)

    def measure(self, start: float = 0.0, end: float | None = None) -> Loudness:
        """The figures of seconds ``[start, end)`` of what was fed (default: all of it), to the
        100 ms sub-block (a sub-block is counted where it starts).  Leq(m) is that of the
        M-weighted signal, which lags the input by :data:`.leqm.FIR_SECONDS` (40 ms)."""
        energy = self._rows(self._energy)
        a = max(0, math.ceil(start / SUB_BLOCK - 1e-9))
        b = len(energy) if end is None else min(len(energy), math.ceil(end / SUB_BLOCK - 1e-9))
        energy = energy[a:b]
        true, sample = self._rows(self._true)[a:b], self._rows(self._sample)[a:b]
        m_energy = self._rows(self._m_energy)[a:b].sum(0)      # M-weighted sums of squares
        m_samples = len(energy) * self.sub_block
        if end is None or end * self.rate >= self.samples:     # the unfinished sub-block, the FIR's tail
            true = np.concatenate([true, self._pending[1:2]])
            sample = np.concatenate([sample, self._pending[2:3]])
            tail = self._m_weighting.tail()
            m_energy = m_energy + self._pending[3] + (tail * tail).sum(1)
            m_samples += self._filled
        blocks = _windows(energy, MOMENTARY)
        whole = _gated(blocks @ self.weights)
        per_channel = tuple(_gated(blocks[:, c]) for c in range(self.channels))
        tp = true.max(0) if len(true) else np.zeros(self.channels)
        sp = sample.max(0) if len(sample) else np.zeros(self.channels)
        tp = np.maximum(tp, sp)
        seconds = ((end if end is not None else self.samples / self.rate) - start)
        leq_m = leq_m_db(float(m_energy @ self._m_weights) / m_samples) if m_samples else None
        return Loudness(whole, _range(_windows(energy, SHORT_TERM) @ self.weights),
                        _db(float(tp.max()), 20.0), _db(float(sp.max()), 20.0), per_channel,
                        tuple(_db(float(v), 20.0) for v in tp), max(0.0, seconds), len(blocks), leq_m)


def loudness_of(samples: np.ndarray, rate: float, weights: Sequence[float] | None = None,
                full_scale: float = 1.0, block: int = 1 << 16) -> Loudness:
    """The figures of a whole array of samples (n, channels), fed ``block`` samples at a time."""
    x = np.asarray(samples)
    if x.ndim == 1:
        x = x[:, None]
    meter = LoudnessMeter(rate, x.shape[1], weights, full_scale)
    for i in range(0, len(x), block):
        meter.add(x[i:i + block])
    return meter.measure()


def int24(raw: bytes, channels: int) -> np.ndarray:
    """24-bit little-endian signed samples, ``channels`` interleaved, as (n, channels) int32."""
    b = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
    v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
    return (v - ((v & 0x800000) << 1)).reshape(-1, channels)


def mix_loudness(sound, samples: int) -> Loudness:
    """The figures of ``samples`` sample frames of a mastering input's sound
    (:class:`.inputs.SoundInput`, as the track carries it: mapped, converted, with its gain;
    silence past its end), its channels weighted by their layout's labels."""
    labels = sound.layout.inputs
    meter = LoudnessMeter(sound.rate, len(labels), channel_weights(labels, len(labels)), float(1 << 23))
    for raw in sound.sample_blocks(samples):
        meter.add(int24(raw, len(labels)))
    return meter.measure()


def loudness_text(figures: Loudness) -> str:
    """The figures in a line: integrated loudness, loudness range, true peak, Leq(m)."""
    def f(v, unit, sign=""):
        return "n/a" if v is None else f"{v:{sign}.1f} {unit}"
    return (f"{f(figures.integrated, 'LUFS')} integrated, range {f(figures.range, 'LU')}, "
            f"true peak {f(figures.true_peak, 'dBTP', '+')} (ITU-R BS.1770-4, EBU R 128), "
            f"Leq(m) {f(figures.leq_m, 'dB')} (ISO 21727)")


def composition_loudness(sound, seconds: float = 10.0) -> Loudness:
    """The figures of a composition's whole sound (:class:`.composition.CompositionSound`),
    read ``seconds`` at a time, its channels weighted by their MCA labels where the track has
    them (:func:`channel_weights`)."""
    d = sound.descriptor
    labels = [lab.symbol for lab in d.labels] if d and d.labels else None
    rate = float(sound.sample_rate)
    meter = LoudnessMeter(rate, sound.channels, channel_weights(labels, sound.channels),
                          full_scale=float(1 << (sound.bits - 1)))
    block = max(1, int(rate * seconds))
    for s in range(0, sound.sample_count, block):
        meter.add(sound.read_samples(s, min(sound.sample_count, s + block)))
    return meter.measure()
