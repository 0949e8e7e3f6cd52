"""A bounded soak of the playback server: thousands of mixed requests from several clients while it
plays, through the multi-process decode pipeline on the CPU back end.

Six client threads, each on its own keep-alive connection, send ``REQUESTS`` requests in all
(status polls, library rescans, the OpenAPI document, short event streams, idempotent play, bad
seeks and unknown loads) within ``DEADLINE`` seconds, going round them again until at least
``SOAK`` seconds have passed, so that the playback is judged over some hundreds of frames (a
few seconds' worth of requests left a 4-frame hiccup of a 2-core machine, busy with other
tests, over the 5 % of drops allowed).  Every request must be answered with the
expected status; the server must keep playing at its edit rate (frames shown ~ 24 x elapsed) with
few drops, and its resident memory must not grow by more than ``RSS_GROWTH`` after warm-up.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from urllib.parse import urlsplit

import pytest

from cinegpu.player.server.client import ServerProcess, request, rss_bytes
from cinegpu.player.server.samples import sequence_id
from helpers.server import sample_library, stopped_cleanly

pytestmark = pytest.mark.slow

REQUESTS = 2000
CLIENTS = 6
DEADLINE = 60.0                 # seconds for all requests
SOAK = 10.0                     # seconds the clients keep sending at least
RSS_GROWTH = 24 << 20           # bytes

MIX = [  # (weight, method, path, body, expected status)
    (60, "GET", "/api/v1/status", None, 200),
    (8, "GET", "/api/v1/library", None, 200),
    (4, "GET", "/api/v1/openapi.json", None, 200),
    (4, "GET", "/api/v1/events?max_events=2&max_seconds=5", None, 200),
    (8, "POST", "/api/v1/play", None, 200),
    (8, "POST", "/api/v1/seek", {"frame": -5}, 422),
    (4, "POST", "/api/v1/load", {"cpl": "00000000-0000-0000-0000-000000000000"}, 404),
    (4, "GET", "/api/v1/nothing-here", None, 404),
]


@pytest.fixture(scope="module")
def playing_server(tmp_path_factory):
    library = sample_library(tmp_path_factory, frames=72, dcp=False)
    s = ServerProcess(library, "--backend", "cpu", "--workers", "1")
    code, st = request(f"{s.url}/api/v1/load", "POST",
                       {"cpl": sequence_id(library, library / "seq"), "loop": True, "play": True}, timeout=120,
                       token=s.token)
    assert code == 200, st
    end = time.monotonic() + 60
    while request(f"{s.url}/api/v1/status", token=s.token)[1]["state"] != "playing":
        assert time.monotonic() < end, "never started playing"
        time.sleep(0.05)
    yield s
    stopped_cleanly(s)


def _client(base: str, jobs: list, results: list, deadline: float, token: str,
            until: float = 0.0) -> None:
    """``jobs`` sent in order on one keep-alive connection, round after round until
    ``until`` (time.monotonic()) has passed (one round at least); each answer appended to
    ``results``."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    while True:
        for method, path, body, expect in jobs:
            if time.monotonic() > deadline:
                results.append((path, "deadline"))
                continue
            data = None if body is None else json.dumps(body).encode()
            headers = {"Authorization": f"Bearer {token}", **({"Content-Type": "application/json"} if method == "POST" else {})}
            try:
                conn.request(method, path, body=data, headers=headers)
                r = conn.getresponse()
                raw = r.read()
                ok = r.status == expect and (path.startswith("/api/v1/events") or json.loads(raw) is not None)
                results.append((path, "ok" if ok else f"{r.status} {raw[:200]!r}"))
            except (OSError, http.client.HTTPException, ValueError) as exc:
                results.append((path, f"{type(exc).__name__}: {exc}"))
                conn.close()
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        if time.monotonic() >= until or time.monotonic() > deadline:
            break
    conn.close()


def test_soak_mixed_requests_during_playback(playing_server):
    s = playing_server
    rng = random.Random(7)
    weights = [m[0] for m in MIX]
    jobs = [rng.choices(MIX, weights)[0][1:] for _ in range(REQUESTS)]
    # warm-up: a first round so that caches, pools and the allocator settle before measuring memory
    warm: list = []
    _client(s.url, jobs[:200], warm, time.monotonic() + 30, s.token)
    assert all(r == "ok" for _, r in warm), [w for w in warm if w[1] != "ok"][:5]
    rss0 = rss_bytes(s.pid)
    _, st0 = request(f"{s.url}/api/v1/status", token=s.token)
    t0 = time.monotonic()
    results: list = []
    deadline = t0 + DEADLINE
    threads = [threading.Thread(target=_client, args=(s.url, jobs[200 + i::CLIENTS], results, deadline, s.token,
                                                      t0 + SOAK))
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE + 30)
    _, st1 = request(f"{s.url}/api/v1/status", token=s.token)
    t1 = time.monotonic()
    rss1 = rss_bytes(s.pid)

    failures = [r for r in results if r[1] != "ok"]
    assert len(results) >= REQUESTS - 200 and not failures, failures[:10]
    elapsed = t1 - t0
    assert SOAK <= elapsed < DEADLINE
    shown = st1["shown"] - st0["shown"]
    dropped = st1["dropped"] - st0["dropped"]
    rate = float(st1["edit_rate_fps"])
    assert st1["state"] == "playing"
    assert abs(shown + dropped - rate * elapsed) <= 0.05 * rate * elapsed + 3, (shown, dropped, elapsed)
    assert dropped <= 0.05 * rate * elapsed, (shown, dropped, elapsed)
    assert rss1 - rss0 < RSS_GROWTH, (rss0, rss1)
    print(f"\n{len(results) + len(warm)} requests in {elapsed:.1f} s ({len(results) / elapsed:.0f}/s) from "
          f"{CLIENTS} clients; shown {shown} dropped {dropped} late {st1['late'] - st0['late']} in {elapsed:.1f} s "
          f"({shown / elapsed:.2f} fps at edit rate {rate:g}); RSS {rss0 >> 20} -> {rss1 >> 20} MiB")
