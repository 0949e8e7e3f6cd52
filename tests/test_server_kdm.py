"""KDMs in the playback server (issue 16): ``cinegpu serve --kdm-dir DIR --key recipient.pem``
loads every KDM of the folder at start, ``POST /api/v1/kdms`` adds one (201 with its public
fields; 4xx saying why for one that is not a KDM or does not hold; 409 without a private key),
``GET /api/v1/kdms`` lists public fields only, and encrypted compositions load and play with
them.  No key (content or private) appears in any answer, the OpenAPI document or the output."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import pytest

from cinegpu.media.security.key_ring import KeyRing

from encrypted_dcp import key_lines, make_dcp
from kdm_build import make_chain, make_kdm, make_recipient

NOW = datetime.now(timezone.utc)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("kdmserve")
    library = tmp / "library"
    library.mkdir()
    a = make_dcp(library / "first", encrypt=True, title="FIRST_FILM")
    b = make_dcp(library / "second", encrypt=True, title="SECOND_FILM")
    root, signer = make_chain()
    me, other = make_recipient(root), make_recipient(root, "SM.test.OTHER")

    def kdm(made, recipient=me, **kw):
        return make_kdm(root=root, signer=signer, recipient=recipient, cpl_id=made.cpl_id, title=made.title,
                        keys=[(k.key_type, k.key_id, k.key) for k in made.keys.values()],
                        not_before=NOW - timedelta(days=1), not_after=NOW + timedelta(days=1), **kw)

    kdms = tmp / "kdms"
    kdms.mkdir()
    (kdms / "first.xml").write_bytes(kdm(a))
    (kdms / "broken.xml").write_bytes(kdm(a).replace(b"FIRST_FILM test KDM", b"FIRST_FILM test KDX"))
    pem = tmp / "me.pem"
    pem.write_bytes(me.pem())
    pem.chmod(0o600)
    secrets = key_lines(a) + key_lines(b) + [me.pem().decode().splitlines()[1]]
    return dict(tmp=tmp, library=library, a=a, b=b, me=me, other=other, kdm=kdm, kdms=kdms, pem=pem,
                secrets=secrets)


def no_secret_in(world, *texts) -> None:
    for t in texts:
        for s in world["secrets"]:
            assert s not in t


class _Engine:      # what the KDM routes need of an engine: nothing
    quitting = False

    def snapshot(self):
        return {}


@pytest.fixture
def client(world):
    import warnings

    with warnings.catch_warnings():     # starlette's note that httpx2 will replace httpx
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    from cinegpu.player.server.app import create_app
    from cinegpu.player.server.library import Library

    def make(keys):
        app = create_app(_Engine(), Library(world["library"]), token=None, hosts=("testserver",), keys=keys)
        return TestClient(app)
    return make


def post(c, body, **headers):
    return c.post("/api/v1/kdms", content=json.dumps(body), headers={"Content-Type": "application/json", **headers})


def test_upload_and_list(world, client):
    c = client(KeyRing(world["me"].key))
    assert c.get("/api/v1/kdms").json() == {"kdms": []}
    r = post(c, {"kdm": world["kdm"](world["b"]).decode()})
    assert r.status_code == 201, r.text
    info = r.json()
    assert info["cpl_id"] == world["b"].cpl_id and info["content_title"] == "SECOND_FILM"
    assert sorted(k["type"] for k in info["keys"]) == ["MDAK", "MDIK", "MDSK"]
    listed = c.get("/api/v1/kdms").json()["kdms"]
    assert listed == [info]
    no_secret_in(world, r.text, json.dumps(listed))


@pytest.mark.parametrize("body,status,words", [
    ({"kdm": "<DCinemaSecurityMessage"}, 422, "uploaded KDM: malformed XML"),
    ({"kdm": "<CompositionPlaylist/>"}, 422, "not a KDM"),
    ({"kdm": "tampered"}, 422, "is refused: the signature does not cover AuthenticatedPublic"),
    ({"kdm": "other"}, 422, "is refused: the private key does not open"),
    ({"kdm": 5}, 422, "kdm must be the KDM's XML document"),
    ({}, 422, "kdm must be"),
    ({"kdm": "x", "key": "y"}, 422, "unknown field"),
])
def test_a_bad_kdm_is_a_4xx_saying_why(world, client, body, status, words):
    good = world["kdm"](world["b"]).decode()
    if body.get("kdm") == "tampered":
        body = {"kdm": good.replace("SECOND_FILM test KDM", "SECOND_FILM test KDX")}
    elif body.get("kdm") == "other":
        body = {"kdm": world["kdm"](world["b"], recipient=world["other"]).decode()}
    c = client(KeyRing(world["me"].key))
    r = post(c, body)
    assert r.status_code == status and words in r.json()["error"], r.text
    assert c.get("/api/v1/kdms").json() == {"kdms": []}
    no_secret_in(world, r.text)


def test_without_a_private_key_uploads_are_refused(world, client):
    for keys in (None, KeyRing()):
        r = post(client(keys), {"kdm": world["kdm"](world["b"]).decode()})
        assert r.status_code == 409 and "start it with --key" in r.json()["error"]
    r = client(None).post("/api/v1/kdms", content=b"x" * (2 << 20), headers={"Content-Type": "application/json"})
    assert r.status_code == 413


def test_the_openapi_document_has_the_routes_and_no_key(world, client):
    doc = client(KeyRing(world["me"].key)).get("/api/v1/openapi.json").json()
    assert set(doc["paths"]["/api/v1/kdms"]) == {"get", "post"}
    assert doc["paths"]["/api/v1/kdms"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "properties"].keys() == {"kdm"}
    assert "private" not in json.dumps(doc["components"]).lower()


# -- the server process --------------------------------------------------------------------------
@pytest.mark.slow
def test_serve_loads_kdms_plays_and_takes_uploads(world):
    from cinegpu.player.server.client import ServerProcess, request

    from conftest import require_gl

    require_gl()
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))     # the child's 0 is then its own doing
    try:
        s = ServerProcess(world["library"], "--backend", "cpu", "--threads", "--workers", "1", "--audio", "null",
                          "--kdm-dir", str(world["kdms"]), "--key", str(world["pem"]))
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))
    answers = []

    def api(path, method="GET", body=None, **kw):
        code, got = request(f"{s.url}/api/v1{path}", method, body, token=s.token, **kw)
        answers.append(json.dumps(got) if not isinstance(got, str) else got)
        return code, got

    try:
        limits = open(f"/proc/{s.proc.pid}/limits").read()
        assert any(line.startswith("Max core file size") and line.split()[4:6] == ["0", "0"]
                   for line in limits.splitlines()), limits
        code, got = api("/kdms")
        assert code == 200 and [k["content_title"] for k in got["kdms"]] == ["FIRST_FILM"]
        code, st = api("/load", "POST", {"cpl": world["a"].cpl_id, "play": True}, timeout=120)
        assert code == 200, st
        end = time.monotonic() + 60
        while time.monotonic() < end:
            _, st = api("/status")
            if st["state"] == "ended" or (st.get("shown") or 0) >= 6:
                break
            time.sleep(0.05)
        assert st.get("frame_errors", 0) == 0 and (st.get("shown") or 0) >= 1, st
        code, got = api("/load", "POST", {"cpl": world["b"].cpl_id}, timeout=120)
        assert code == 409 and "no KDM for composition" in got["error"] and "SECOND_FILM" in got["error"], got
        code, got = api("/kdms", "POST", {"kdm": world["kdm"](world["b"]).decode()})
        assert code == 201, got
        code, st = api("/load", "POST", {"cpl": world["b"].cpl_id}, timeout=120)
        assert code == 200, st
        code, got = api("/kdms")
        assert sorted(k["content_title"] for k in got["kdms"]) == ["FIRST_FILM", "SECOND_FILM"]
    finally:
        assert s.stop() == 0, "".join(s.stderr)[-3000:]
    out, err = "".join(s.stdout), "".join(s.stderr)
    assert "KDM not loaded" in err and "broken.xml" in err and "signature" in err
    no_secret_in(world, out, err, *answers)


def test_serve_refuses_kdms_without_a_key(world):
    r = subprocess.run([sys.executable, "-m", "cinegpu.player.cli", "serve", "--library", str(world["library"]),
                        "--listen", "127.0.0.1:0", "--headless", "--kdm-dir", str(world["kdms"])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--kdm needs --key" in r.stderr


def test_keys_turn_core_dumps_off():
    """A process holding keys gives up core dumps (checked in a child whose soft limit is first
    raised to its hard limit, so that a limit of 0 is the function's doing)."""
    code = ("import resource, sys; from cinegpu.player.commands.keys import no_core_dumps; "
            "hard = resource.getrlimit(resource.RLIMIT_CORE)[1]; "
            "resource.setrlimit(resource.RLIMIT_CORE, (hard, hard)); "
            "assert hard == 0 or resource.getrlimit(resource.RLIMIT_CORE)[0] != 0; "
            "no_core_dumps(); sys.exit(resource.getrlimit(resource.RLIMIT_CORE) != (0, 0))")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
