"""Sound beside the picture: sinks, the downmix, the WAV record, and the feed that ties them to the
playback clock.

Sync model: the picture clock (:class:`~cinegpu.player.clock.PlaybackClock`) is the master.
On each turn of the draw loop :class:`AudioFeed` hands the sink the composition's samples from
where it stopped up to the clock's position now (plus the sink's latency), each timeline sample
mapped through the clock to a media sample, so pause (nothing fed), seek and loop (the feed
follows the clock's media frame) and reel joins (:class:`~cinegpu.media.sound.composition.
CompositionSound` reads across them) need no separate logic. A device whose clock drifts from
the system clock fills or drains its queue; the feed corrects that by skipping or repeating
samples once the queue is off its target by more than :data:`DRIFT_LIMIT` seconds. A device
that plays behind the clock by more than :data:`STALL_LIMIT` (it stopped taking sound for a
while, as a sound server does on an underrun) has its queue dropped and the feed starts again
from the clock, as after a seek; the device sink waits for its stream to run steadily before
the first frame (:attr:`DeviceSink.SETTLE`). Stepping while paused plays no sound.

The meters (:class:`PeakMeter`, :attr:`AudioFeed.meter`): the peak of each of the composition's
channels over the last :data:`METER_WINDOW` seconds of sound fed to the sink (before downmix,
volume and mute; the null sink is fed as a device is), for the server's status.

The offset at the device (:meth:`AudioFeed.device_offset_ms`): each presented frame's first
sample is timed where the device's callbacks say it reaches the DAC (PortAudio's
outputBufferDacTime) against the stream's clock when the frame was shown.

The offset without a WAV record (:meth:`AudioFeed.offset_ms`): the feed keeps the runs it fed
(timeline sample -> composition sample) of the current segment, and each presented frame is
looked up in them: the composition sample fed at the frame's first timeline sample, minus where
the CPL's timing puts that frame's sound (``sample_of_frame``), plus how far the sink's queue
stands from its target (what it plays now against the clock; 0 for the null sink). A device's
own output latency (``output_latency``: what PortAudio reports for the stream, the time from
the callback's buffer to the DAC) is fed ahead, so that a frame's sound leaves the device when
the frame is shown rather than that much later; the offset counts it the same way. A seek,
loop or reel join that fed the wrong sound shows here.

Units: samples are sample frames at the composition's rate (Hz); times are seconds.
"""

from __future__ import annotations

import logging
import math
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cinegpu.media.sound.composition import open_composition_sound
from cinegpu.media.sound.track import decode_pcm

log = logging.getLogger(__name__)

DRIFT_LIMIT = 0.040       # seconds a device queue may stray from its target before correction
STALL_LIMIT = DRIFT_LIMIT  # seconds a device may fall behind the clock before the feed resyncs
DEVICE_LATENCY = 0.100    # seconds of sound queued ahead of the clock for a real device
DAC_MARKS = 512           # device callbacks whose DAC times are kept (several seconds)
A = math.sqrt(0.5)        # -3 dB, ITU-R BS.775 downmix coefficient for centre and surrounds

# ITU-R BS.775-3 Table 2 (3/2 -> 2/0): Lo = L + 0.7071 C + 0.7071 Ls, Ro = R + 0.7071 C + 0.7071 Rs;
# LFE is not mixed. Extended to 7.1 (ST 428-12 side and rear surrounds) at the same -3 dB.
STEREO = {"L": (1.0, 0.0), "R": (0.0, 1.0), "C": (A, A), "LFE": (0.0, 0.0),
          "Ls": (A, 0.0), "Rs": (0.0, A), "Lss": (A, 0.0), "Rss": (0.0, A),
          "Lrs": (A, 0.0), "Rrs": (0.0, A), "Cs": (0.5, 0.5), "M1": (A, A), "M2": (A, A)}
# Channel order of ST 429-2 / ST 428-12 when a track has no MCA labels.
DEFAULT_ORDER = ("L", "R", "C", "LFE", "Ls", "Rs", "Lc", "Rc", "Lrs", "Rrs")
# WAVEFORMATEXTENSIBLE dwChannelMask for the usual layouts (FL FR FC LFE BL BR [SL SR]).
CHANNEL_MASKS = {1: 0x4, 2: 0x3, 6: 0x3F, 8: 0x63F}
KSDATAFORMAT_SUBTYPE_PCM = bytes.fromhex("0100000000001000800000aa00389b71")
OFFSET_MARKS = 96         # presented frames over which AudioFeed.offset_ms takes the largest offset
DEVICE_MARKS = 4096       # presented frames whose offset at the device is kept
FED_RUNS = 64             # runs of fed sound kept to look presented frames up in
METER_WINDOW = 0.100      # seconds of sound fed over which PeakMeter takes each channel's peak


def downmix_matrix(names: list[str], out_channels: int) -> np.ndarray:
    """The (in, out) gain matrix from channels named ``names`` (ST 377-4 symbols without "ch",
    e.g. "L", "LFE") to a device of ``out_channels``: the same layout passes through; stereo
    per :data:`STEREO` (ITU-R BS.775), mono as the mean of that; other counts take the first
    channels in order. Unknown names (HI, VIN, ...) are not mixed."""
    n = len(names)
    m = np.zeros((n, out_channels), np.float64)
    if out_channels >= n:
        m[np.arange(n), np.arange(n)] = 1.0
        return m
    for i, name in enumerate(names):
        gains = STEREO.get(name, (0.0, 0.0))
        if out_channels == 2:
            m[i] = gains
        elif out_channels == 1:
            m[i, 0] = sum(gains) / 2
    if out_channels <= 2:
        return m
    m[np.arange(out_channels), np.arange(out_channels)] = 1.0
    return m


def channel_names(labels, channels: int) -> list[str]:
    """Names of ``channels`` channels from ST 377-4 labels, else the ST 429-2 order."""
    by_channel = {lab.channel: lab.short for lab in labels}
    if len(by_channel) == channels:
        return [by_channel.get(i + 1, "") for i in range(channels)]
    return [DEFAULT_ORDER[i] if i < len(DEFAULT_ORDER) else "" for i in range(channels)]


class WavWriter:
    """A RIFF/WAVE file of integer PCM (``bits`` 16/24/32), WAVE_FORMAT_EXTENSIBLE above 2
    channels (Microsoft WAVEFORMATEXTENSIBLE; the sizes are patched in on close)."""

    def __init__(self, path: Path, rate: int, channels: int, bits: int):
        self.path, self.rate, self.channels, self.bits = Path(path), rate, channels, bits
        self.frames = 0
        self.file = open(self.path, "wb")
        self.extensible = channels > 2
        fmt = struct.pack("<HHIIHH", 0xFFFE if self.extensible else 1, channels, rate,
                          rate * channels * bits // 8, channels * bits // 8, bits)
        if self.extensible:
            fmt += struct.pack("<HHI", 22, bits, CHANNEL_MASKS.get(channels, 0)) + KSDATAFORMAT_SUBTYPE_PCM
        self.file.write(b"RIFF\0\0\0\0WAVEfmt " + struct.pack("<I", len(fmt)) + fmt + b"data\0\0\0\0")
        self.data_at = self.file.tell()

    def write(self, pcm: np.ndarray) -> None:
        """Append int32 (frames, channels) samples at ``bits`` precision."""
        width = self.bits // 8
        raw = pcm.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :width]
        self.file.write(raw.tobytes())
        self.frames += len(pcm)

    def close(self) -> None:
        if self.file.closed:
            return
        size = self.frames * self.channels * self.bits // 8
        if size % 2:
            self.file.write(b"\0")
        self.file.seek(4)
        self.file.write(struct.pack("<I", self.data_at - 8 + size + size % 2))
        self.file.seek(self.data_at - 4)
        self.file.write(struct.pack("<I", size))
        self.file.close()


class AudioDeviceError(RuntimeError):
    """``--audio device`` asked for the sound device and there is none (no PortAudio, no
    output device, or it refused the stream's rate)."""


class NullSink:
    """A device that plays nothing and keeps the same clock: what it is given is "played" at
    once. Headless runs and machines without a sound device use it (CI tests sync with it)."""

    name = "null"
    latency = 0.0
    output_latency = 0.0

    def __init__(self, channels: int):
        self.channels = channels
        self.played = 0

    def queued(self) -> int:
        return 0

    def write(self, pcm: np.ndarray) -> None:
        self.played += len(pcm)

    def discard(self) -> None:
        pass

    def close(self) -> None:
        pass


class DeviceSink:
    """The default output device through PortAudio (python-sounddevice): a callback stream
    draining a queue of float32 blocks; underruns play silence."""

    name = "sounddevice"
    latency = DEVICE_LATENCY

    #: seconds close() waits at most for the queued sound to play out
    DRAIN_LIMIT = 2.0

    def __init__(self, rate: int):
        import sounddevice  # noqa: PLC0415  (optional: sounddevice, which needs PortAudio)

        self.rate = int(rate)

        info = sounddevice.query_devices(kind="output")
        self.channels = max(1, min(8, int(info["max_output_channels"])))
        self._lock = threading.Lock()
        self._blocks: deque = deque()
        self._held = 0
        self.played = 0
        self._taken = 0                      # queued samples handed to the device so far
        #: (first queued sample, count, DAC time of the first) of the last callbacks
        self._dac: deque = deque(maxlen=DAC_MARKS)
        self.stream = sounddevice.OutputStream(samplerate=rate, channels=self.channels,
                                               dtype="float32", callback=self._callback)
        #: seconds from a buffer the callback fills to its sound at the DAC (PortAudio's figure
        #: for the stream; 0 where the host API gives none)
        latency = self.stream.latency
        self.output_latency = float(latency) if isinstance(latency, (int, float)) and \
            0.0 <= latency < 1.0 else 0.0
        self.stream.start()
        self._settle()

    #: seconds of silence the device must have taken before the sink is ready, and the longest
    #: wait for it: a sound server's stream starts in fits (a first burst, a pause), and sound
    #: fed before it runs steadily would be late and then dropped to keep sync
    SETTLE, SETTLE_LIMIT = 0.25, 2.0

    def _settle(self) -> None:
        deadline = time.monotonic() + self.SETTLE_LIMIT
        while self.played < self.SETTLE * self.rate and time.monotonic() < deadline:
            time.sleep(0.005)

    def _callback(self, out, frames, time_info, status) -> None:
        out.fill(0)
        done = 0
        with self._lock:
            while done < frames and self._blocks:
                block = self._blocks[0]
                n = min(frames - done, len(block))
                out[done:done + n] = block[:n]
                if n == len(block):
                    self._blocks.popleft()
                else:
                    self._blocks[0] = block[n:]
                done += n
            self._held -= done
            self.played += frames
            dac = float(time_info.outputBufferDacTime)
            if done:
                self._dac.append((self._taken, done, dac))
                self._taken += done

    def queued(self) -> int:
        with self._lock:
            return self._held

    def now(self) -> float:
        """The stream's clock (seconds; the clock of :meth:`dac_time`)."""
        return float(self.stream.time)

    def dac_time(self, q: int) -> float | None:
        """When queued sample ``q`` (counted from the first ever written) reaches the DAC, on
        :meth:`now`'s clock; None while it is not handed to the device yet, or long gone."""
        with self._lock:
            for first, n, dac in reversed(self._dac):
                if first <= q < first + n:
                    return dac + (q - first) / self.rate
                if q >= first + n:
                    return None
        return None

    def taken(self) -> int:
        with self._lock:
            return self._taken

    def write(self, pcm: np.ndarray) -> None:
        with self._lock:
            self._blocks.append(pcm.astype(np.float32))
            self._held += len(pcm)

    def discard(self) -> None:
        """Drop the sound queued and not yet handed to the device (it counts as taken)."""
        with self._lock:
            self._taken += self._held
            self._blocks.clear()
            self._held = 0

    def close(self) -> None:
        """Let the sound queued so far play out (at most :attr:`DRAIN_LIMIT` seconds more than
        it lasts: a device that starts late, as a sound server's stream does, still plays the
        end of a short run), then stop the stream."""
        deadline = time.monotonic() + min(self.queued() / self.rate + self.DRAIN_LIMIT, 10.0)
        while self.queued() > 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        self.stream.stop()
        self.stream.close()


def open_sink(mode: str, rate: int, channels: int):
    """``null``: :class:`NullSink`; ``auto``: :class:`DeviceSink` when sounddevice imports and
    there is an output device, else the null sink (said once in the log); ``device``: the
    DeviceSink or :class:`AudioDeviceError` saying why there is none."""
    if mode == "device":
        try:
            return DeviceSink(rate)
        except Exception as exc:  # ImportError, OSError (no PortAudio), PortAudioError (no device)
            raise AudioDeviceError(f"--audio device: no sound device ({type(exc).__name__}: {exc})") from exc
    if mode == "auto":
        try:
            return DeviceSink(rate)
        except Exception as exc:  # ImportError, OSError (no PortAudio), PortAudioError (no device)
            log.info("no sound device (%s: %s): sound goes to the null sink", type(exc).__name__, exc)
    return NullSink(channels)


class PeakMeter:
    """The peak magnitude of each of ``channels`` channels over the last ``window`` sample frames
    fed (the blocks that cover them: a block counts whole once any of its last ``window`` sample
    frames is within them), against ``full_scale`` (the magnitude of 0 dBFS: 2**(bits - 1) for
    integer PCM, 1.0 for float).  :meth:`feed` costs a max and a min per channel over the block
    (no copy of it); :meth:`peaks_dbfs` may be called from any thread."""

    def __init__(self, channels: int, window: int, full_scale: float = 1.0):
        self.channels, self.window, self.full_scale = channels, max(1, int(window)), float(full_scale)
        self._lock = threading.Lock()
        self._blocks: deque = deque()       # (sample frames, peak magnitude per channel)
        self._held = 0                      # sample frames of the blocks kept

    def feed(self, pcm: np.ndarray) -> None:
        """Note a (sample frames, channels) block fed to the sink."""
        tail = pcm[-self.window:]
        if not len(tail):
            return
        peak = np.maximum(tail.max(axis=0).astype(np.float64), -tail.min(axis=0).astype(np.float64))
        with self._lock:
            self._blocks.append((len(tail), peak))
            self._held += len(tail)
            while self._held - self._blocks[0][0] >= self.window:    # the rest covers the window
                self._held -= self._blocks.popleft()[0]

    def clear(self) -> None:
        """Forget what was fed (nothing plays: paused, stopped)."""
        with self._lock:
            self._blocks.clear()
            self._held = 0

    def peaks(self) -> np.ndarray:
        """Each channel's peak over the window, linear (1.0: full scale); zeros when nothing was fed."""
        with self._lock:
            kept = [p for _, p in self._blocks]
        if not kept:
            return np.zeros(self.channels)
        return np.max(kept, axis=0) / self.full_scale

    def peaks_dbfs(self, decimals: int = 1) -> list[float | None]:
        """Each channel's peak over the window in dBFS (20 log10 of :meth:`peaks`), rounded to
        ``decimals``; None for silence (-inf dBFS, which JSON cannot carry)."""
        return [round(20.0 * math.log10(p), decimals) if p > 0 else None for p in self.peaks().tolist()]


@dataclass
class Segment:
    """A run of the WAV record fed without a jump: where it starts in the file, on the clock's
    timeline (frames) and its first timeline sample."""

    wav: int
    timeline_frame: int
    timeline_sample: int


@dataclass
class AudioFeed:
    """Feeds ``sound`` (a CompositionSound) to ``sink`` as ``clock`` advances; optionally keeps
    a WAV record of all channels before any downmix, volume or mute."""

    sound: object
    sink: object
    clock: object
    wav: WavWriter | None = None
    volume: float = 1.0
    mute: bool = False
    routing: np.ndarray | None = None      # (in, out) gains; None: the downmix matrix
    segments: list[Segment] = field(default_factory=list)
    presented: list[tuple[int, int, int]] = field(default_factory=list)  # (wav sample, timeline, media frame)
    _mark_segment: list[int] = field(default_factory=list)   # segment of each presented mark
    _next: int | None = None               # next timeline sample to feed
    _jumps: int = -1
    #: runs fed in this segment: (first timeline sample, end, first composition sample)
    _fed: deque = field(default_factory=lambda: deque(maxlen=FED_RUNS))
    _waiting: deque = field(default_factory=lambda: deque(maxlen=16))  # (timeline sample, frame, lag)
    _offsets: deque = field(default_factory=lambda: deque(maxlen=OFFSET_MARKS))  # samples
    _lag: int = 0                          # samples the sink plays ahead of the clock (last turn)
    _written: int = 0                      # samples written to the sink
    _skip: int = 0                         # samples fed to the record but not to the device
    _writes: deque = field(default_factory=lambda: deque(maxlen=FED_RUNS))  # (queue, timeline, n)
    _av_waiting: deque = field(default_factory=lambda: deque(maxlen=64))  # (timeline sample, shown)
    _device_offsets: deque = field(default_factory=lambda: deque(maxlen=DEVICE_MARKS))  # seconds

    def __post_init__(self):
        snd = self.sound
        self.rate = snd.sample_rate
        labels = snd.descriptor.labels if snd.descriptor else ()
        self.names = channel_names(labels, snd.channels)
        self.matrix = downmix_matrix(self.names, self.sink.channels)
        self.scale = float(1 << (snd.bits - 1))
        #: the sink tells when a sample reaches the DAC (a device): offsets at the device kept
        self.timed = hasattr(self.sink, "dac_time")
        #: each channel's peak over the last METER_WINDOW seconds fed to the sink
        self.meter = PeakMeter(snd.channels, round(METER_WINDOW * float(self.rate)), self.scale)

    def timeline_sample(self, t: float) -> int:
        """Timeline sample at timeline position ``t`` (frames, may be fractional)."""
        return math.floor(t * self.rate / self.clock.rate + 1e-9)

    def frame_of_sample(self, s: int) -> int:
        """The timeline frame holding sample ``s``: the t with timeline_sample(t) <= s <
        timeline_sample(t + 1) (at 59.94 fps a frame is 800.8 samples, so s * E / F alone
        can name the frame before: sample 800 starts frame 1)."""
        t = math.floor(s * self.clock.rate / self.rate)
        while self.timeline_sample(t + 1) <= s:
            t += 1
        while t > 0 and self.timeline_sample(t) > s:
            t -= 1
        return t

    def update(self, now: float) -> None:
        """Feed what the clock has reached by ``now`` (seconds), plus the sink's latency."""
        clock = self.clock
        if clock.jumps != self._jumps:
            self._jumps = clock.jumps
            self._next = None
        if not clock.playing:
            self._next = None
            self.meter.clear()                 # nothing plays: the meters fall to silence
            return
        # what the device outputs now reaches the DAC output_latency later: feed that far ahead
        position = (now - clock.presentation_time(0) + self.sink.output_latency) * float(clock.rate)
        if self._next is not None and self.sink.queued() and \
                self._next - self.sink.queued() < self.timeline_sample(position) - STALL_LIMIT * float(self.rate):
            # the device plays behind the clock (it started late, or stopped taking sound for a
            # while: a sound server's underrun): drop what is queued and start again from the
            # clock, as after a seek
            self.sink.discard()
            self._next = None
        if self._next is None:
            t = clock.timeline()
            self._next = self.timeline_sample(t)
            if self.sink.output_latency > 0:
                # a device plays what it is given from now on: it starts at the clock's sample (its
                # latency ahead); the record still starts with the frame the clock is in
                self._skip = max(0, self.timeline_sample(position) - self._next)
            self.segments.append(Segment(self.wav.frames if self.wav else 0, t, self._next))
            self._fed.clear()
            self._waiting.clear()
        target = self.timeline_sample(position + self.sink.latency * float(clock.rate))
        target = self._drift(target)
        if target > self._next:
            self._feed(self._next, target)
            self._next = target
        self._lag = self._next - self.sink.queued() - self.timeline_sample(position)

    def _drift(self, target: int) -> int:
        """Hold back or push on a device whose queue strays from its latency target."""
        want = self.sink.latency * float(self.rate)
        off = self.sink.queued() + (target - (self._next or 0)) - want
        if abs(off) > DRIFT_LIMIT * float(self.rate) and self.sink.queued():
            return target - int(off)
        return target

    def _feed(self, s0: int, s1: int) -> None:
        clock, snd = self.clock, self.sound
        pieces = []
        past = 0                  # samples past the composition's end (silence, not recorded)
        s = s0
        while s < s1:
            t = self.frame_of_sample(s)
            end = min(s1, self.timeline_sample(t + 1))
            media = clock.media_frame(t)
            if media is None:     # past the end (not looping): the device keeps time on silence
                pieces.append(np.zeros((end - s, snd.channels), np.int32))
                past += end - s
            else:
                first = snd.sample_of_frame(media) + (s - self.timeline_sample(t))
                pieces.append(snd.read_samples(first, first + end - s))
                self._note_fed(s, end, first)
            s = end
        self._resolve()
        pcm = np.concatenate(pieces) if pieces else np.zeros((0, snd.channels), np.int32)
        if self.wav is not None:  # the record ends with the composition
            self.wav.write(pcm[:len(pcm) - past])
        if self.mute:
            out = np.zeros((len(pcm), self.sink.channels), np.float32)
        else:
            gains = self.routing if self.routing is not None else self.matrix
            out = (pcm / self.scale) @ gains * self.volume
            np.clip(out, -1.0, 1.0, out=out)
        drop = min(self._skip, len(out))       # the part of a (re)start's frame already past
        self._skip -= drop
        self.meter.feed(pcm[drop:])
        if len(out) > drop:
            self._writes.append((self._written, s0 + drop, len(out) - drop))
            self._written += len(out) - drop
            self.sink.write(out[drop:].astype(np.float32))

    def finish(self, end: int) -> None:
        """Feed up to timeline position ``end`` (frames): the last frames' sound, which the
        clock passed after the draw loop's last turn."""
        if self._next is not None:
            target = self.timeline_sample(end)
            if target > self._next:
                self._feed(self._next, target)
                self._next = target

    def shown(self, t: int, frame: int) -> None:
        """Note that the picture of media ``frame`` was presented at timeline position ``t``:
        for :meth:`offset_ms` (the sound fed there) and, with a WAV record, where the record
        says its sound begins (for :func:`measure_offset`)."""
        if not self.segments:
            return
        self._waiting.append((self.timeline_sample(t), frame, self._lag))
        self._resolve()
        if self.timed:
            self._av_waiting.append((self.timeline_sample(t), self.sink.now()))
            self.resolve_device()
        if self.wav is None:
            return
        seg = self.segments[-1]
        self.presented.append((seg.wav + self.timeline_sample(t) - seg.timeline_sample, t, frame))
        self._mark_segment.append(len(self.segments) - 1)

    def _note_fed(self, s: int, end: int, first: int) -> None:
        """Keep timeline samples ``[s, end)`` fed from composition sample ``first`` (joined to
        the run before when it goes on from it)."""
        if self._fed:
            a, b, f = self._fed[-1]
            if b == s and f + (b - a) == first:
                self._fed[-1] = (a, end, f)
                return
        self._fed.append((s, end, first))

    def _resolve(self) -> None:
        """Look the presented frames up in the runs fed: those fed already give an offset;
        those not fed yet wait (a frame shown on its first sample's turn); those before the
        runs kept, or shown over silence past the end, give none."""
        while self._waiting and self._fed:
            s, frame, lag = self._waiting[0]
            if s >= self._fed[-1][1]:
                return                      # not fed yet
            self._waiting.popleft()
            for a, b, first in self._fed:
                if a <= s < b:
                    self._offsets.append(first + (s - a) - self.sound.sample_of_frame(frame) + lag)
                    break

    def resolve_device(self) -> None:
        """Time the presented frames' sound at the device: a frame's first sample reaches the
        DAC at the time its callback reports (PortAudio's outputBufferDacTime, on the stream's
        clock), against the stream's clock when the frame was shown.  Frames whose sample the
        device has not taken yet wait; those no longer in the kept runs are dropped."""
        if not self.timed:
            return
        taken = self.sink.taken()
        while self._av_waiting:
            s, shown = self._av_waiting[0]
            # the latest run that fed the sample (a loop or a seek feeds a timeline sample again)
            q = next((q0 + s - t0 for q0, t0, n in reversed(self._writes) if t0 <= s < t0 + n), None)
            if q is None:
                if self._writes and s < self._writes[0][1]:
                    self._av_waiting.popleft()          # fed before the runs kept: give up
                    continue
                return                                  # not fed yet
            if q >= taken:
                return                                  # not at the device yet
            self._av_waiting.popleft()
            dac = self.sink.dac_time(q)
            if dac is not None:
                self._device_offsets.append(shown - dac)

    def device_offset_ms(self) -> tuple[float, float, int] | None:
        """(median, largest magnitude, frames) of the offset at the device, in ms, positive when
        the sound leaves the device before its frame is shown; None without a device or before
        a frame's sound reached it."""
        if not self._device_offsets:
            return None
        v = np.array(self._device_offsets) * 1e3
        return float(np.median(v)), float(v[np.argmax(np.abs(v))]), len(v)

    def offset_ms(self) -> float | None:
        """The offset of sound from picture over the last :data:`OFFSET_MARKS` presented frames
        (the one of largest magnitude, signed: positive, the sound is ahead), in ms; None before
        any frame was presented with sound fed under it. See the module docstring."""
        if not self._offsets:
            return None
        worst = max(self._offsets, key=abs)
        return round(worst * 1000.0 / float(self.rate), 3)

    def marks(self, probe: int = 64) -> list[tuple[int, int, int]]:
        """The presented marks whose frame's first ``probe`` samples were written before the
        record jumped on (a frame shown as a seek or the end came was never heard)."""
        ends = [seg.wav for seg in self.segments[1:]] + [self.wav.frames if self.wav else 0]
        return [m for m, i in zip(self.presented, self._mark_segment) if m[0] + probe <= ends[i]]

    def close(self) -> None:
        self.sink.close()
        if self.wav is not None:
            self.wav.close()


def open_feed(media, clock, mode: str, audio_out: Path | None = None, sound=None) -> AudioFeed | None:
    """The feed of ``media``'s sound on ``clock`` into a sink of ``mode`` (see :func:`open_sink`),
    or None: ``mode`` "off", no sound, or a clock rate other than the edit rate (no resampling).
    ``audio_out``: a WAV record. ``sound``: ``media``'s CompositionSound opened already (the
    server opens it in its loader thread; closed here when no feed takes it), else opened here.
    ``cinegpu play`` and ``cinegpu serve`` both build their feed here."""

    if mode == "off":
        if sound is not None:
            sound.close()
        return None
    if sound is None:
        sound = open_composition_sound(media)
    if sound is None or not sound.channels:
        if audio_out is not None:
            log.warning("--audio-out %s: %s has no sound to write", audio_out, getattr(media, "title", "it"))
        if sound is not None:
            sound.close()
        return None
    for w in sound.warnings:
        log.warning("sound: %s", w)
    if media.edit_rate is not None and clock.rate != media.edit_rate:
        log.warning("sound off: --fps %s differs from the edit rate %s (no resampling)", clock.rate,
                    media.edit_rate)
        sound.close()
        return None
    rate = int(sound.sample_rate)
    wav = WavWriter(audio_out, rate, sound.channels, sound.bits) if audio_out is not None else None
    return AudioFeed(sound, open_sink(mode, rate, sound.channels), clock, wav)


def measure_offset(path: Path, sound, presented: list[tuple[int, int, int]], most: int = 200,
                   search: float = 0.050, probe: int = 64) -> tuple[float | None, int]:
    """How far the WAV record at ``path`` puts each presented frame's sound from where the CPL's
    timing puts it: for up to ``most`` presented frames, the composition's samples of the frame
    (``probe`` sample frames from its start) are looked for in the file within ``search``
    seconds of the position noted at presentation. Returns (the largest |offset| in ms, or None
    when no frame could be measured (silence, or sound that repeats), frames measured); a frame
    whose sound is not found counts as ``search`` seconds off."""
    if not presented:
        return None, 0
    header = path.read_bytes()[:128]
    data_at = header.find(b"data") + 8
    width = sound.bits // 8
    raw = np.memmap(path, np.uint8, "r", offset=data_at)
    frames = raw.size // (width * sound.channels)
    worst, measured = 0, 0
    step = max(1, len(presented) // most)
    k = int(search * float(sound.sample_rate))
    for pos, _, frame in presented[::step]:
        ref = sound.read_samples(sound.sample_of_frame(frame), sound.sample_of_frame(frame) + probe)
        if len(ref) < probe or not np.ptp(ref, axis=0).any():
            continue                        # silent or constant here: nothing to find
        if pos + probe > frames:
            continue                        # shown as playback stopped: its sound never written
        lo, hi = max(0, pos - k), min(frames, pos + k + probe)
        window = np.frombuffer(raw[lo * width * sound.channels:hi * width * sound.channels], np.uint8)
        got = decode_pcm(window.tobytes(), sound.channels, sound.bits)
        views = np.lib.stride_tricks.sliding_window_view(got, (probe, sound.channels))[:, 0]
        hits = np.flatnonzero((views == ref).all(axis=(1, 2)))
        if len(hits) != 1:
            if len(hits) > 1:
                continue                    # the probe repeats: ambiguous
            worst = max(worst, k)
        else:
            worst = max(worst, abs(lo + int(hits[0]) - pos))
        measured += 1
    if not measured:
        return None, 0
    return worst * 1000.0 / float(sound.sample_rate), measured


def offset_text(ms: float | None, measured: int) -> str:
    if ms is None:
        return "audio/video offset: not measurable (the sound played is silent or repeats)"
    return f"audio/video offset: {ms:.3f} ms (largest of {measured} frames, measured in the WAV)"

