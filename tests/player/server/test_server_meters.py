"""The sound meters in the server's status (issue 53): ``audio.peaks_dbfs`` and
``audio.channel_labels`` of the engine's status while a sound plays on the null sink, as the
OpenAPI document says, and silence once paused; the engine with fakes (helpers.server), a feed
over an in-memory sound given to its player as ``Engine._install_audio`` would."""

from __future__ import annotations

import pytest

from cinegpu.player.audio import AudioFeed, NullSink
from cinegpu.player.server.openapi import openapi
from helpers.server import engine, pump
from helpers.sound_util import SquareWaveSound


def conforms(status: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    doc = openapi(token=True)
    jsonschema.validate(status, {**doc["components"]["schemas"]["Status"], "components": doc["components"]})


def test_status_carries_the_peaks_per_channel():
    eng, entries, clock = engine(frames=(48,), audio="null")
    load = eng.submit("load", entries=entries[:1])
    pump(eng, clock, load.done)
    assert load.result()["audio"] is None                   # the fake media have no sound
    p = eng.player
    p.audio = AudioFeed(SquareWaveSound([0.5, 1.0, 0.0]), NullSink(3), p.clock)
    eng._apply_audio(p.audio)
    play = eng.submit("play")
    pump(eng, clock, lambda: play.done() and eng.state == "playing" and p.scheduler.stats.shown >= 6)
    eng._publish(force=True)
    audio = eng.snapshot()["audio"]
    assert audio["peaks_dbfs"] == [-6.0, 0.0, None]
    assert audio["channel_labels"] == ["L", "R", "C"]
    assert {"sink", "channels", "sink_channels", "rate", "volume", "mute", "routing", "routing_note",
            "offset_ms"} <= set(audio)
    conforms(eng.snapshot())
    pause = eng.submit("pause")
    pump(eng, clock, pause.done)
    pump(eng, clock, lambda: eng.snapshot()["audio"]["peaks_dbfs"] == [None] * 3)    # within 0.25 s
    conforms(eng.snapshot())
    eng._shutdown(timeout=1)
