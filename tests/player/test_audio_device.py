"""The sound device path (player.audio.DeviceSink: python-sounddevice over PortAudio) on a real
sound server: PulseAudio started for the test with a null sink, whose monitor ``parec`` records.
What the sink is given comes out of the server, in order and at the rate; `cinegpu play --audio
device` plays a DCP's sound through it headless. Skipped where pulseaudio, parec, PortAudio or
sounddevice is missing (CI installs them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import DCP_SAMPLES, needs_dcp_samples

RATE = 48000
SINK = "cinegpu_null"


def _sounddevice():
    try:
        import sounddevice
        return sounddevice
    except (ImportError, OSError) as exc:   # OSError: PortAudio's library is missing
        pytest.skip(f"sounddevice not usable: {exc}")


@pytest.fixture(scope="module")
def pulse(tmp_path_factory):
    """A PulseAudio server of its own (runtime folder in tmp) whose default sink is a stereo
    48 kHz null sink; yields the environment that reaches it."""
    if not (shutil.which("pulseaudio") and shutil.which("parec") and shutil.which("pactl")):
        pytest.skip("pulseaudio, parec or pactl is not installed")
    run = tmp_path_factory.mktemp("pulse")
    env = {**os.environ, "XDG_RUNTIME_DIR": str(run), "PULSE_SERVER": f"unix:{run}/pulse/native"}
    started = subprocess.run(
        ["pulseaudio", "--daemonize=yes", "-n", "--exit-idle-time=-1", "--disallow-exit",
         f"--load=module-null-sink sink_name={SINK} rate={RATE} channels=2",
         "--load=module-native-protocol-unix", f"--log-target=file:{run}/pulse.log"],
        env=env, capture_output=True, text=True, timeout=30)
    deadline = time.monotonic() + 10
    while subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            pytest.skip(f"pulseaudio did not start: {started.stderr.strip()[:200]}")
        time.sleep(0.1)
    subprocess.run(["pactl", "set-default-sink", SINK], env=env, check=True)
    old = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", "PULSE_SERVER")}
    os.environ.update(XDG_RUNTIME_DIR=env["XDG_RUNTIME_DIR"], PULSE_SERVER=env["PULSE_SERVER"])
    sd = _sounddevice()
    # PortAudio lists ALSA's PulseAudio devices when it starts; it may have started (imported
    # by another test) before this server ran: start it again so that it sees the server
    sd._terminate()
    sd._initialize()
    try:
        yield env
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        subprocess.run(["pulseaudio", "--kill"], env=env, capture_output=True, timeout=30)


class Recorder:
    """``parec`` on the null sink's monitor: float32 stereo at 48 kHz, from start() to stop()."""

    def __init__(self, env, path: Path):
        self.env, self.path = env, path

    def __enter__(self):
        self.file = open(self.path, "wb")
        self.proc = subprocess.Popen(["parec", "-d", f"{SINK}.monitor", "--format=float32le",
                                      f"--rate={RATE}", "--channels=2", "--raw", "--latency-msec=20"],
                                     stdout=self.file, env=self.env)
        time.sleep(0.3)   # the stream is up before anything plays
        return self

    def __exit__(self, *exc):
        time.sleep(0.3)
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.file.close()

    def samples(self) -> np.ndarray:
        raw = self.path.read_bytes()
        return np.frombuffer(raw[: len(raw) // 8 * 8], "<f4").reshape(-1, 2)


def _best_correlation(rec: np.ndarray, sent: np.ndarray) -> float:
    """Largest normalised correlation of ``sent`` along ``rec`` (1-D each)."""
    n = len(sent)
    if len(rec) < n:
        return 0.0
    spec = np.fft.rfft(rec, len(rec) + n) * np.conj(np.fft.rfft(sent, len(rec) + n))
    corr = np.fft.irfft(spec)[: len(rec) - n + 1]
    energy = np.sqrt(np.convolve(rec * rec, np.ones(n), "valid"))
    return float(np.max(corr / (np.linalg.norm(sent) * np.maximum(energy, 1e-12))))


@pytest.mark.slow
def test_device_sink_plays_what_it_is_given_at_the_rate(pulse, tmp_path):
    from cinegpu.player.audio import DeviceSink

    rng = np.random.default_rng(5)
    n = RATE * 2
    with Recorder(pulse, tmp_path / "rec.f32") as rec:
        sink = DeviceSink(RATE)
        block = np.zeros((n, sink.channels), np.float32)
        left, right = (rng.standard_normal(n) * 0.2).astype(np.float32), \
            (np.sin(np.arange(n) * 2 * np.pi * 997 / RATE) * 0.3).astype(np.float32)
        block[:, 0], block[:, 1] = left, right
        for k in range(0, n, 4800):      # written in 0.1 s pieces, as the feed does
            sink.write(block[k:k + 4800])
        t0 = time.monotonic()
        # the server takes a moment to open the stream (its first callbacks come in a burst,
        # then a pause): the rate is measured once a quarter of a second has played
        while sink.played < RATE // 4 and time.monotonic() - t0 < 5:
            time.sleep(0.005)
        t1, p1 = time.monotonic(), sink.played
        time.sleep(0.6)
        t2, p2 = time.monotonic(), sink.played
        while sink.queued() and time.monotonic() - t0 < 8:
            time.sleep(0.01)
        sink.close()
    got = rec.samples()
    # the device takes the samples at its rate (its callbacks, timed by the host's clock)
    rate = (p2 - p1) / (t2 - t1)
    assert abs(rate / RATE - 1) < 0.15, rate
    # and what came out of the server is what was written, channel by channel: five stretches
    # of 0.1 s found in the recording, the median of them (a recorder on a loaded machine may
    # drop a moment of one; a wrong channel or wrong samples correlate near 0 in all)
    for c, sent in ((0, left), (1, right)):
        found = [_best_correlation(got[:, c], sent[k : k + 4800]) for k in range(20000, 68000, 9600)]
        assert np.median(found) > 0.9, (c, found)
    assert _best_correlation(got[:, 0], right[20000:44000]) < 0.3


def test_audio_device_mode_fails_clearly_without_a_device(monkeypatch):
    from cinegpu.player import audio

    def no_device(rate):
        raise OSError("PortAudio library not found")

    monkeypatch.setattr(audio, "DeviceSink", no_device)
    with pytest.raises(audio.AudioDeviceError, match="no sound device"):
        audio.open_sink("device", 48000, 6)
    assert isinstance(audio.open_sink("auto", 48000, 6), audio.NullSink)


@needs_dcp_samples
@pytest.mark.slow
def test_play_a_dcp_through_the_device(pulse, tmp_path, capsys):
    """`cinegpu play --headless --audio device`: the DCP's sound comes out of the server while
    the picture plays (a second of sound, heard for about a second), and the summary gives
    the measured audio/video offset."""
    from cinegpu.player.cli import main
    from helpers.sound_util import sound_dcp

    # the sample's own sound is silence: the copy's carries a position-coded pattern
    dcp = sound_dcp(tmp_path, [(0, 24, 0, 24)], DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k")
    with Recorder(pulse, tmp_path / "rec.f32") as rec:
        rc = main(["play", "--headless", "--threads", "--audio", "device", "--audio-out",
                   str(tmp_path / "played.wav"), str(dcp)])
    out = capsys.readouterr().out
    assert rc == 0 and "audio sounddevice (6 channels" in out and "audio/video offset: " in out, out
    assert "output latency" in out and "fed ahead" in out, out   # PortAudio's figure
    ms = float(out.split("audio/video offset: ")[1].split(" ms")[0])
    assert abs(ms) <= 1.0, out          # what was fed lines up with the frames presented
    if "offset at the device" in out:   # frames whose sound reached the DAC before the end
        at_device = float(out.split("offset at the device ")[1].split(" ms")[0])
        # the picture of a 2-core headless run is up to a frame late; a stalled or late start
        # of the device used to leave the sound seconds behind
        assert abs(at_device) < 100, out
    got = rec.samples()
    loud = np.flatnonzero(np.abs(got).max(1) > 1e-4)
    assert loud.size, "nothing came out of the sound server"
    heard = (loud[-1] - loud[0]) / RATE   # the sink plays out what it was given before closing
    assert 0.8 < heard < 1.5, heard
