"""The playback server's sound (issue 17): ``POST /api/v1/audio`` (volume, mute, routing) and
``status.audio`` (sink, channels, settings, the offset measured by the feed), against a real
``cinegpu serve`` process over the libdcp SMPTE sample (read in place: the library is its
folder), headless, so the sound goes to the null sink; and the engine's side with fakes (no
sound: audio null; a routing that does not fit the next sound is reset, and said)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from cinegpu.player.server.client import ServerProcess, request
from conftest import DCP_SAMPLES, needs_dcp_samples, require_gl
from helpers.server import api, engine, pump, wait_for

SMPTE = DCP_SAMPLES / "libdcp-dcp_test1-smpte-2k"
CPL = "6affb8ee-0020-4dff-a53c-17652f6358ab"
IDENTITY = [[1.0 if i == j else 0.0 for j in range(6)] for i in range(6)]


@pytest.fixture(scope="module")
def server():
    if not SMPTE.is_dir():
        pytest.skip("../shared/dcp-samples is absent")
    require_gl()
    s = ServerProcess(SMPTE, "--backend", "cpu", "--threads", "--workers", "1")
    yield s
    api(s, "/play", "POST")         # SIGTERM while the sound plays: still out within 3 s
    t0 = time.monotonic()
    code = s.stop()
    took = time.monotonic() - t0
    assert code == 0, "".join(s.stderr)[-3000:]
    assert took < 3.0 and "Traceback" not in "".join(s.stderr), (took, "".join(s.stderr)[-3000:])


@pytest.mark.slow
@needs_dcp_samples
def test_volume_mute_routing_in_status(server):
    code, st = api(server, "/audio", "POST", {"volume": 0.5})
    assert code == 409 and "nothing is loaded" in st["error"]
    code, st = api(server, "/load", "POST", {"cpl": CPL, "loop": True}, timeout=120)
    assert code == 200, st
    meters = {k: st["audio"].pop(k) for k in ("peaks_dbfs", "channel_labels")}
    assert meters == {"peaks_dbfs": [None] * 6, "channel_labels": ["L", "R", "C", "LFE", "Ls", "Rs"]}
    assert st["audio"] == {"sink": "null", "channels": 6, "sink_channels": 6, "rate": 48000, "volume": 1.0,
                           "mute": False, "routing": "default", "routing_note": None, "offset_ms": None}
    code, st = api(server, "/audio", "POST", {"volume": 0.5, "mute": True})
    assert code == 200 and st["audio"]["volume"] == 0.5 and st["audio"]["mute"] is True
    code, st = api(server, "/audio", "POST", {"routing": IDENTITY})
    assert code == 200 and st["audio"]["routing"] == "custom" and st["audio"]["volume"] == 0.5
    assert api(server, "/status")[1]["audio"]["routing"] == "custom"
    code, st = api(server, "/audio", "POST", {"routing": None, "mute": False})
    assert code == 200 and st["audio"]["routing"] == "default" and st["audio"]["mute"] is False
    code, st = api(server, "/audio", "POST", {})
    assert code == 200 and st["audio"]["volume"] == 0.5
    # the settings outlive a load
    code, st = api(server, "/load", "POST", {"cpl": CPL, "loop": True}, timeout=120)
    assert code == 200 and st["audio"]["volume"] == 0.5


@pytest.mark.slow
@needs_dcp_samples
@pytest.mark.parametrize("body,status,words", [
    ({"volume": 2.5}, 422, "volume must be in 0..2"),
    ({"volume": -0.1}, 422, "volume must be in 0..2"),
    ({"volume": "loud"}, 422, "volume must be a number"),
    ({"volume": True}, 422, "volume must be a number"),
    ({"mute": 1}, 422, "mute must be true or false"),
    ({"routing": [[1.0, 0.0]] * 2}, 422, "routing must be 6 rows (the sound's channels) of 6 gains"),
    ({"routing": [[1.0] * 6] * 5 + [[1.0] * 5]}, 422, "same length"),
    ({"routing": [[3.0] * 6] * 6}, 422, "routing[0][0] must be in -2..2"),
    ({"routing": []}, 422, "routing must be null or a list"),
    ({"routing": "stereo"}, 422, "routing must be null or a list"),
    ({"gain": 1}, 422, "unknown field(s): gain"),
    (None, 400, "a JSON body is required"),
])
def test_bad_bodies_are_refused(server, body, status, words):
    if api(server, "/status")[1]["audio"] is None:
        code, st = api(server, "/load", "POST", {"cpl": CPL, "loop": True}, timeout=120)
        assert code == 200, st
    api(server, "/audio", "POST", {"routing": None})
    code, st = api(server, "/audio", "POST", body)
    assert code == status and words in st["error"], st
    assert api(server, "/status")[1]["audio"]["routing"] == "default"


@pytest.mark.slow
@needs_dcp_samples
def test_offset_is_reported_and_small_across_a_seek_and_the_loop(server):
    code, st = api(server, "/load", "POST", {"cpl": CPL, "loop": True, "play": True}, timeout=120)
    assert code == 200, st
    st = wait_for(server, lambda s: s["audio"]["offset_ms"] is not None, what="an offset", timeout=60.0)
    assert abs(st["audio"]["offset_ms"]) <= 1.0, st["audio"]
    _conforms(server, st)
    shown = st["shown"]
    code, st = api(server, "/seek", "POST", {"frame": 20})
    assert code == 200
    # past the loop back to frame 0 (24 frames): the offset stays near 0
    st = wait_for(server, lambda s: s["shown"] >= shown + 8 and s["state"] == "playing", what="playing on", timeout=60.0)
    assert abs(st["audio"]["offset_ms"]) <= 1.0, st["audio"]
    assert api(server, "/stop", "POST")[0] == 200


def _conforms(server, status: dict) -> None:
    """``status`` (with its audio) is what the server's OpenAPI document says a Status is (the
    property test's server has no sound, so its statuses carry audio null)."""
    jsonschema = pytest.importorskip("jsonschema")
    doc = api(server, "/openapi.json")[1]
    schema = {**doc["components"]["schemas"]["Status"], "components": doc["components"]}
    jsonschema.validate(status, schema)


@pytest.mark.slow
@needs_dcp_samples
def test_audio_off_reports_null_and_refuses_settings():
    require_gl()
    s = ServerProcess(SMPTE, "--backend", "cpu", "--threads", "--workers", "1", "--audio", "off")
    try:
        code, st = request(f"{s.url}/api/v1/load", "POST", {"cpl": CPL}, token=s.token, timeout=120)
        assert code == 200 and st["audio"] is None, st
        code, st = request(f"{s.url}/api/v1/audio", "POST", {"mute": True}, token=s.token)
        assert code == 409 and "sound is off" in st["error"]
    finally:
        assert s.stop() == 0, "".join(s.stderr)[-3000:]


def test_engine_without_sound_reports_audio_null():
    eng, entries, clock = engine(audio="null")
    load = eng.submit("load", entries=entries[:1])
    pump(eng, clock, lambda: load.done())
    assert load.result()["audio"] is None
    bad = eng.submit("audio", volume=0.5)
    eng._drain()
    assert bad.exception(0).status == 409 and "has no sound" in str(bad.exception(0))
    eng.request_quit()
    eng._shutdown()


def test_engine_resets_a_routing_that_does_not_fit_the_next_sound():
    eng, _, _ = engine(audio="null")
    eng.audio.routing, eng.audio.volume = IDENTITY, 0.25
    feed = SimpleNamespace(sound=SimpleNamespace(channels=2), sink=SimpleNamespace(channels=2),
                           volume=1.0, mute=False, routing=None)
    eng._apply_audio(feed)
    assert feed.routing is None and feed.volume == 0.25 and eng.audio.routing is None
    assert eng.audio.note == "routing reset to the default downmix: it was 6 x 6, this sound is 2 channels to 2"
    eng.audio.routing = [[1.0, 0.0], [0.0, 1.0]]
    eng._apply_audio(feed)
    assert feed.routing.tolist() == [[1.0, 0.0], [0.0, 1.0]]
