"""The playback server (``cinegpu serve``), as a real process on 127.0.0.1 driven over HTTP.

The library is made in a temporary folder by :func:`cinegpu.player.server.samples.make_library`
(``opj_compress`` and ``ffmpeg``): a 48-frame sequence, a two-reel SMPTE DCP, a sequence with a
truncated and a garbage frame, and a DCP whose second reel is missing.  The server runs headless
(EGL) on the CPU back end through the multi-process pipeline (one worker).  Every request has a
timeout and every wait loop a deadline.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from fractions import Fraction

import pytest

from cinegpu.player.server.client import ServerProcess, request
from cinegpu.player.server.samples import DCP_CPL, MISSING_CPL, sequence_id
from helpers.server import api, engine, pump, sample_library, stopped_cleanly, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return sample_library(tmp_path_factory)


@pytest.fixture(scope="module")
def server(library):
    s = ServerProcess(library, "--backend", "cpu", "--workers", "1")
    yield s
    stopped_cleanly(s)


def test_openapi_and_library(server, library):
    code, doc = api(server, "/openapi.json")
    assert code == 200 and doc["openapi"].startswith("3.1")
    for path in ("/api/v1/library", "/api/v1/load", "/api/v1/play", "/api/v1/pause", "/api/v1/stop",
                 "/api/v1/step", "/api/v1/seek", "/api/v1/status", "/api/v1/events"):
        assert path in doc["paths"], path
    code, lib = api(server, "/library")
    assert code == 200
    comps = {c["id"]: c for c in lib["compositions"]}
    assert comps[DCP_CPL]["title"] == "Two reels" and [r["frames"] for r in comps[DCP_CPL]["reels"]] == [24, 24]
    assert comps[DCP_CPL]["edit_rate"] == "24"
    assert comps[sequence_id(library, library / "seq")]["frames"] == 48
    assert MISSING_CPL in comps
    # a package added after start is found on the next request (re-scanned on request)
    (library / "late").mkdir()
    (library / "late" / "f0.j2c").write_bytes((library / "seq" / "f00000.j2c").read_bytes())
    _, lib = api(server, "/library")
    assert sequence_id(library, library / "late") in {c["id"] for c in lib["compositions"]}


def test_load_play_pause_seek_step_stop_against_the_clock(server):
    code, st = api(server, "/load", "POST", {"cpl": f"urn:uuid:{DCP_CPL.upper()}"}, timeout=120)
    assert code == 200, st
    assert st["state"] == "stopped" and st["frame"] == 0 and st["composition"]["id"] == DCP_CPL
    assert st["frame_count"] == 48 and st["edit_rate"] == "24" and st["backend"] == "cpu"
    assert st["reel"]["index"] == 0 and st["timecode"] == "00:00:00:00"

    code, st = api(server, "/play", "POST")
    assert code == 200 and st["state"] in ("starting", "playing") and st["playing"] is True
    st = wait_for(server, lambda s: s["state"] == "playing", what="playing")
    # frames advance with the clock: frame ~ 24 x elapsed
    samples = []
    t_end = time.monotonic() + 1.0
    while time.monotonic() < t_end:
        t = time.monotonic()
        _, s = api(server, "/status")
        samples.append((t, s["frame"], s["shown"]))
        time.sleep(0.1)
    (t0, f0, n0), (t1, f1, n1) = samples[0], samples[-1]
    expected = 24 * (t1 - t0)
    assert abs((f1 - f0) - expected) <= 4, samples
    assert (n1 - n0) >= expected - 6, samples           # pictures really drawn
    assert all(b[1] >= a[1] for a, b in zip(samples, samples[1:]))

    code, st = api(server, "/pause", "POST")
    assert code == 200 and st["state"] == "paused" and st["playing"] is False
    held = st["frame"]
    time.sleep(0.3)
    assert api(server, "/status")[1]["frame"] == held

    code, st = api(server, "/seek", "POST", {"frame": 30})
    assert code == 200 and st["frame"] == 30 and st["state"] == "paused"
    assert st["reel"] == {"index": 1, "id": st["reel"]["id"], "frame": 6} and st["timecode"] == "00:00:01:06"
    wait_for(server, lambda s: s["shown_frame"] == 30, what="frame 30 on screen")
    code, st = api(server, "/seek", "POST", {"timecode": "00:00:01:02"})
    assert code == 200 and st["frame"] == 26
    code, st = api(server, "/step", "POST", {"frames": 3})
    assert code == 200 and st["frame"] == 29
    code, st = api(server, "/step", "POST")
    assert code == 200 and st["frame"] == 30

    # play to the end: state ended on the last frame, nothing dropped
    dropped = st["dropped"]
    api(server, "/play", "POST")
    st = wait_for(server, lambda s: s["state"] == "ended", timeout=30, what="the end")
    assert st["frame"] == 47 and st["dropped"] - dropped <= 2
    code, st = api(server, "/stop", "POST")
    assert code == 200 and st["state"] == "stopped" and st["frame"] == 0


def test_seek_while_playing_keeps_playing(server, library):
    code, st = api(server, "/load", "POST", {"cpl": sequence_id(library, library / "seq"), "play": True}, timeout=120)
    assert code == 200 and st["state"] in ("starting", "playing")
    wait_for(server, lambda s: s["state"] == "playing")
    code, st = api(server, "/seek", "POST", {"frame": 24})
    assert code == 200 and st["frame"] == 24 and st["playing"]
    st = wait_for(server, lambda s: s["state"] == "playing" and s["frame"] >= 30, timeout=10)
    api(server, "/pause", "POST")


def test_dcpomatic_player_api(server):
    """DCP-o-matic's player: GET /api/v1/status {playing, position h:mm:ss, dcp_name};
    POST /api/v1/play and /api/v1/stop answer 303 to / to a client that accepts text/html.
    The POSTs must be JSON (with the token): a form post, which any web page can send, is refused."""
    api(server, "/load", "POST", {"cpl": DCP_CPL}, timeout=120)
    code, st = api(server, "/status")
    assert code == 200 and st["playing"] is False and st["position"] == "0:00:00" and st["dcp_name"] == "Two reels"

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    auth = {"Authorization": f"Bearer {server.token}"}
    form = urllib.request.Request(f"{server.url}/api/v1/play", data=b"", method="POST",
                                  headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html",
                                           **auth})
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(form, timeout=10)
    assert refused.value.code == 415 and not api(server, "/status")[1]["playing"]
    for path in ("/play", "/stop"):
        req = urllib.request.Request(f"{server.url}/api/v1{path}", data=b"", method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "text/html", **auth})
        try:
            opener.open(req, timeout=10)
            raise AssertionError("no redirect")
        except urllib.error.HTTPError as exc:
            assert exc.code == 303 and exc.headers["Location"] == "/"
        if path == "/play":
            st = wait_for(server, lambda s: s["playing"], what="playing")
    st = wait_for(server, lambda s: s["state"] == "stopped", what="stopped")
    assert st["playing"] is False
    code, page = request(server.url + "/")
    assert code == 200 and "cinegpu" in page


BAD = [
    ("POST", "/load", None, {}, 400),
    ("POST", "/load", b"{not json", {"Content-Type": "application/json"}, 400),
    ("POST", "/load", b"[1, 2]", {"Content-Type": "application/json"}, 422),
    ("POST", "/load", {"cpl": "a", "playlist": ["b"]}, {}, 422),
    ("POST", "/load", {"playlist": []}, {}, 422),
    ("POST", "/load", {"cpl": 5}, {}, 422),
    ("POST", "/load", {"cpl": "no-such-id"}, {}, 404),
    ("POST", "/load", {"cpl": DCP_CPL, "loop": "yes"}, {}, 422),
    ("POST", "/load", b"cpl=x", {"Content-Type": "text/plain"}, 415),
    ("POST", "/seek", {"frame": -1}, {}, 422),
    ("POST", "/seek", {"frame": 10 ** 6}, {}, 422),
    ("POST", "/seek", {"frame": True}, {}, 422),
    ("POST", "/seek", {"timecode": "1:2"}, {}, 422),
    ("POST", "/seek", {"timecode": "00:00:00:99"}, {}, 422),
    ("POST", "/seek", {}, {}, 422),
    ("POST", "/step", {"frames": "x"}, {}, 422),
    ("POST", "/play", {"now": True}, {}, 422),
    ("POST", "/pause", b"x" * (70 << 10), {"Content-Type": "application/json"}, 413),
    ("GET", "/play", None, {}, 405),
    ("GET", "/nowhere", None, {}, 404),
    ("GET", "/events?max_events=0", None, {}, 422),
    ("GET", "/status", None, {"Host": "evil.example:8080"}, 403),
    ("POST", "/play", None, {"Origin": "http://evil.example"}, 403),
    ("POST", "/play", None, {"Origin": "null"}, 403),
    ("POST", "/play", b"", {"Content-Type": "text/plain"}, 415),
    ("POST", "/load", b'{"cpl": "x"}', {"Content-Type": "application/evil+json"}, 415),
    ("POST", "/load", b'\xef\xbb\xbf{"cpl": "x"}', {"Content-Type": "application/json"}, 400),
    ("GET", "/status", None, {"Authorization": "Bearer wrong"}, 401),
]


@pytest.mark.parametrize("method,path,body,headers,expect", BAD, ids=[f"{b[0]} {b[1]} {b[4]}" for b in BAD])
def test_bad_requests_get_a_json_4xx(server, method, path, body, headers, expect):
    assert len(BAD) == 28
    if path == "/seek" and api(server, "/status")[1]["frame_count"] != 48:
        api(server, "/load", "POST", {"cpl": DCP_CPL}, timeout=120)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    h = {"Content-Type": "application/json"} if method == "POST" else {}
    h["Authorization"] = f"Bearer {server.token}"
    req = urllib.request.Request(f"{server.url}/api/v1{path}", data=data, method=method, headers={**h, **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            code, raw = r.status, r.read()
    except urllib.error.HTTPError as exc:
        code, raw = exc.code, exc.read()
    assert code == expect, raw
    err = json.loads(raw)
    assert err["status"] == expect and isinstance(err["error"], str) and err["error"]


def test_playlist_conceals_bad_frames_and_goes_on(server, library):
    """A truncated and a garbage frame are concealed and reported; the next composition follows."""
    broken, seq = sequence_id(library, library / "broken"), DCP_CPL
    code, st = api(server, "/load", "POST", {"playlist": [broken, seq], "play": True}, timeout=120)
    assert code == 200 and st["playlist"] == [broken, seq] and st["playlist_index"] == 0
    st = wait_for(server, lambda s: s["playlist_index"] == 1 and s["state"] == "playing", timeout=40,
                  what="the second composition playing")
    assert st["composition"]["id"] == DCP_CPL
    # the frame counts are the composition on screen's (issue 50, 7): the bad frames were the
    # first one's, so they are in the playlist's totals and not in the second's
    assert st["session"]["frame_errors"] >= 1 and st["frame_errors"] == 0 and st["error_count"] >= 1
    assert any("frame 9" in e["message"] for e in st["errors"]), st["errors"]
    assert api(server, "/status")[0] == 200
    api(server, "/stop", "POST")


def test_missing_asset_is_a_409_and_the_server_keeps_serving(server):
    before = api(server, "/status")[1]["error_count"]
    code, err = api(server, "/load", "POST", {"cpl": MISSING_CPL}, timeout=120)
    assert code == 409 and "missing" in err["error"], err
    code, st = api(server, "/status")
    assert code == 200 and st["state"] == "idle" and st["error_count"] > before
    code, st = api(server, "/play", "POST")
    assert code == 409
    code, st = api(server, "/load", "POST", {"cpl": DCP_CPL}, timeout=120)
    assert code == 200 and st["state"] == "stopped"


def test_event_stream(server):
    req = urllib.request.Request(f"{server.url}/api/v1/events?max_events=3&max_seconds=10",
                                 headers={"Authorization": f"Bearer {server.token}"})
    with urllib.request.urlopen(req, timeout=15) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = r.read().decode()
    events = [b for b in text.split("\n\n") if b.startswith("event: status")]
    assert len(events) == 3
    versions = [json.loads(e.split("data: ", 1)[1])["version"] for e in events]
    assert versions == sorted(set(versions))


@pytest.fixture(scope="module")
def token_server(library):
    s = ServerProcess(library, "--backend", "cpu", "--threads", token="s3cret-t0ken")
    yield s
    s.stop()


def test_token_is_required_when_set(token_server):
    url = token_server.url + "/api/v1/status"
    assert request(url)[0] == 401
    assert request(url, token="wrong")[0] == 401
    assert request(url, headers={"Authorization": "Basic s3cret-t0ken"})[0] == 401
    code, st = request(url, token="s3cret-t0ken")
    assert code == 200 and st["state"] == "idle"
    code, doc = request(token_server.url + "/api/v1/openapi.json", token="s3cret-t0ken")
    assert doc["security"] == [{"bearer": []}]


def test_sigterm_stops_cleanly(token_server):
    code = token_server.stop(60)
    assert code == 0 and any("stopped" in line for line in token_server.stdout), token_server.stderr[-5:]


def test_other_addresses_need_a_token(library):
    r = subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "serve", "--library", str(library),
                        "--listen", "0.0.0.0:0", "--headless", "--no-token"], capture_output=True, text=True,
                       timeout=120, env={**__import__("os").environ, "CINEGPU_SERVE_TOKEN": ""})
    assert r.returncode == 2 and "needs a token" in r.stderr and "loopback only" in r.stderr


# ---------------------------------------------------------------- in-process pieces


def test_timecodes():
    from cinegpu.player.server.engine import CommandError, hms, parse_timecode
    assert parse_timecode("00:00:01:06", Fraction(24)) == 30
    assert parse_timecode("01:00:00:00", Fraction(24000, 1001)) == 3600 * 24
    assert parse_timecode("00:00:00;29", Fraction(30000, 1001)) == 29
    for bad in ("00:00:00:24", "0:0:0:0", "00:60:00:00", "x"):
        with pytest.raises(CommandError) as e:
            parse_timecode(bad, Fraction(24))
        assert e.value.status == 422
    assert hms(24 * 3725, Fraction(24)) == "1:02:05"


def test_library_lists_bad_packages_and_duplicate_ids(tmp_path):
    from cinegpu.player.server.library import Library
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "ASSETMAP.xml").write_text("<AssetMap><oops")
    scan = Library(tmp_path).rescan()
    assert scan.entries == {} and len(scan.errors) == 1 and scan.errors[0]["path"] == "bad"


def test_engine_plays_a_playlist_through_with_commands_from_a_queue():
    eng, entries, clock = engine()
    play = eng.submit("play")
    eng._drain()
    assert play.exception(0).status == 409                                  # nothing loaded
    load = eng.submit("load", entries=entries, play=True)
    pump(eng, clock, lambda: load.done())
    assert load.result()["state"] == "starting"
    pump(eng, clock, lambda: eng.state == "playing")
    pump(eng, clock, lambda: eng.index == 1 and eng.state == "playing")
    pump(eng, clock, lambda: eng.state == "ended")
    st = eng.snapshot()
    assert st["composition"]["id"] == "id1" and st["frame"] == 4 and st["dropped"] == 0
    # the counts are the composition's, all reset when it started; the playlist's are kept apart
    assert st["shown"] == 5 and st["late"] == 0 and st["dropped_at"] == ""
    assert st["session"] == {"shown": 15, "late": 0, "dropped": 0, "frame_errors": 0}
    seek = eng.submit("seek", frame=2)
    pump(eng, clock, lambda: seek.done())
    assert seek.result()["frame"] == 2 and seek.result()["state"] == "paused"
    bad = eng.submit("seek", frame=7)
    pump(eng, clock, lambda: bad.done())
    assert bad.exception().status == 422
    eng.request_quit()
    eng._shutdown()
    assert eng.player is None and eng.submit("play").exception(0).status == 503


@pytest.mark.parametrize("on", [True, False])
def test_engine_gives_the_player_the_compositions_subtitles(gl, tmp_path, monkeypatch, on):
    """The loader reads a composition's subtitles (here an SRT standing in for the package's
    own) and the engine's player draws them; ``subtitles=False`` reads none."""
    from cinegpu.player import subtitles as subs
    from cinegpu.player.server import engine as engine_module
    srt = tmp_path / "s.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:00,300\nHello\n", encoding="utf-8")
    asked = []

    def with_file(media, frames, rate, **kw):
        asked.append((frames, rate))
        return subs.subtitles_for(media, frames, rate, file=srt)
    monkeypatch.setattr(engine_module, "subtitles_for", with_file)
    eng, entries, clock = engine(subtitles=on)
    load = eng.submit("load", entries=entries[:1])
    pump(eng, clock, lambda: load.done())
    assert (eng.player.subtitles is not None) == on
    assert asked == ([(10, 24)] if on else [])
    if on:
        assert [c.lines[0].runs[0].text for c, _ in eng.player.subtitles.subtitles.at(0)] == ["Hello"]
    eng.request_quit()
    eng._shutdown()
