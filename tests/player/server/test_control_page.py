"""The control page at ``/`` and its live picture, ``GET /api/v1/preview`` (issue 53, items 1-2).

Against a real ``cinegpu serve --headless`` (CPU back end, one worker) on the small library of
:func:`cinegpu.player.server.samples.make_library` (64 x 36 frames cycling through 8 pictures; a
48-frame sequence and a two-reel DCP), as ``test_server.py`` runs it:

- without a browser: the preview is refused without the token, is a JPEG of the frame's aspect
  with it, changes while playing, is cached between new pictures (ETag, 304), and what keeping
  its copy costs the display thread is reported (``X-Preview-Copy-Cost``, printed, not asserted);
  the library listing's fields; the ``loop`` command;
- in a real browser (Playwright driving Debian's Chromium, headless; Playwright's own browser
  download is not used): the page takes the token from its address, lists the library, loads,
  plays, shows the timecode advancing and the picture changing, pauses, seeks with the scrubber
  and shows the API's 409 and 422 errors.

Every wait has a deadline.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from PIL import Image

from cinegpu.player.server.client import ServerProcess
from cinegpu.player.server.preview import PreviewStore
from cinegpu.player.server.samples import DCP_CPL, sequence_id
from conftest import require_gl
from helpers.encrypted_dcp import make_dcp
from helpers.kdm_build import make_chain, make_kdm, make_recipient
from helpers.server import api, engine, pump, sample_library, stopped_cleanly, wait_for

pytestmark = pytest.mark.slow

WIDTH, HEIGHT = 64, 36          # the sample library's frames (samples)
CHROMIUM = ("/usr/bin/chromium", "chromium", "chromium-browser")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return sample_library(tmp_path_factory, width=WIDTH, height=HEIGHT)


def start_server(library) -> ServerProcess:
    return ServerProcess(library, "--backend", "cpu", "--workers", "1")


@pytest.fixture(scope="module")
def server(library):
    s = start_server(library)
    yield s
    stopped_cleanly(s)


def fetch(server, path: str, *, token: bool = True, headers: dict | None = None):
    """``GET path`` of the server: (status, headers, body bytes)."""
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {server.token}"
    req = urllib.request.Request(server.url + path, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def picture(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


# ---------------------------------------------------------------- without a browser


def test_page_and_its_files_are_served_without_the_token_and_confined(server):
    code, headers, body = fetch(server, "/", token=False)
    assert code == 200 and b'src="/static/app.js"' in body
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert headers["referrer-policy"] == "no-referrer"
    for path, kind in (("/static/app.js", "javascript"), ("/static/style.css", "css")):
        code, headers, body = fetch(server, path, token=False)
        assert code == 200 and kind in headers["content-type"] and body
    assert fetch(server, "/static/../app.py", token=False)[0] in (401, 404)
    assert fetch(server, "/static/preview.py", token=False)[0] == 401    # not a page file: the API's rules
    # the page's own files keep the Host and Origin checks
    assert fetch(server, "/static/app.js", token=False, headers={"Host": "evil.example"})[0] == 403
    assert fetch(server, "/", token=False, headers={"Origin": "http://evil.example"})[0] == 403


def test_library_lists_what_the_page_shows(server, library):
    code, lib = api(server, "/library")
    assert code == 200
    comps = {c["id"]: c for c in lib["compositions"]}
    dcp = comps[DCP_CPL]
    assert dcp["stereoscopic"] is False and dcp["encrypted"] is False and dcp["kdm"] is None
    assert dcp["seconds"] == 2.0 and dcp["content_kind"] == "test"
    mxfs = sum(p.stat().st_size for p in (library / "dcp").glob("*.mxf"))
    assert dcp["size"] == mxfs
    seq = comps[sequence_id(library, library / "seq")]
    assert seq["size"] == sum(p.stat().st_size for p in (library / "seq").glob("*.j2c"))
    assert seq["seconds"] is None and seq["stereoscopic"] is False


def test_preview_needs_the_token_and_shows_the_frame(server, library):
    assert fetch(server, "/api/v1/preview", token=False)[0] == 401
    if api(server, "/status")[1]["state"] == "idle":
        assert fetch(server, "/api/v1/preview")[:3:2] == (204, b"")     # nothing on screen
    code, _, body = fetch(server, "/api/v1/preview?width=5")
    assert code == 422 and b"width" in body
    code, st = api(server, "/load", "POST", {"cpl": sequence_id(library, library / "seq"), "loop": True},
                   timeout=120)
    assert code == 200, st
    wait_for(server, lambda s: s["shown_frame"] is not None, what="a frame on screen")
    code, headers, body = fetch(server, "/api/v1/preview")
    assert code == 200 and headers["content-type"] == "image/jpeg", body[:200]
    img = picture(body)
    assert img.shape[:2] == (HEIGHT, WIDTH)          # 64 x 36 is narrower than the copy's 480
    assert headers["x-preview-source-size"] == f"{WIDTH}x{HEIGHT}"
    assert img.std() > 10                            # the test pattern, not a blank picture
    code, headers, body = fetch(server, "/api/v1/preview?width=32")
    assert code == 200 and picture(body).shape[:2] == (18, 32)      # the frame's 16:9 kept
    # a page polling it: the same picture is not sent again
    etag = headers["etag"]
    assert fetch(server, "/api/v1/preview?width=32", headers={"If-None-Match": etag})[0] == 304

    code, st = api(server, "/play", "POST")
    assert code == 200
    wait_for(server, lambda s: s["state"] == "playing", what="playing")
    seen = set()
    end = time.monotonic() + 10
    while len(seen) < 3 and time.monotonic() < end:
        code, headers, body = fetch(server, "/api/v1/preview")
        assert code == 200
        seen.add(hashlib.sha256(body).hexdigest())
        time.sleep(0.15)
    assert len(seen) >= 3, "the preview did not change while playing"
    time.sleep(1.0)
    cost = dict(part.strip().split("=") for part in fetch(server, "/api/v1/preview")[1]
                ["x-preview-copy-cost"].split(";"))
    print(f"\npreview kept on the display thread (a reference), {WIDTH}x{HEIGHT} frames, headless CPU run: "
          f"{cost['count']} copies, mean {cost['mean_us']} us, max {cost['max_us']} us")
    assert int(cost["count"]) >= 24
    api(server, "/stop", "POST")


def test_loop_command(server, library):
    code, st = api(server, "/load", "POST", {"cpl": DCP_CPL}, timeout=120)
    assert code == 200 and st["loop"] is False
    code, st = api(server, "/loop", "POST", {"loop": True})
    assert code == 200 and st["loop"] is True
    assert api(server, "/loop", "POST", {"loop": "yes"})[0] == 422
    api(server, "/seek", "POST", {"frame": 44})
    api(server, "/play", "POST")
    # looping: past the last frame it goes on from the first, it does not end
    wait_for(server, lambda s: s["state"] == "playing" and s["frame"] < 40 and s["shown"] > 8, timeout=20,
             what="wrapped around")
    assert api(server, "/status")[1]["state"] == "playing"
    code, st = api(server, "/loop", "POST", {"loop": False})
    assert code == 200 and st["loop"] is False
    api(server, "/stop", "POST")


@pytest.mark.parametrize("copy", [False, True], ids=["reference", "copy"])
def test_preview_store_cost_and_cache(copy):
    """What keeping the preview costs per frame of a 2K picture (2048 x 1080 RGBA16): a reference
    (the default) or a downscaled copy, timed; the encoding reused within its interval.  Prints
    the cost; asserts no time."""
    t = [0.0]
    store = PreviewStore(copy=copy, now=lambda: t[0])
    assert store.encode() is None
    yy, xx = np.mgrid[0:1080, 0:2048]
    frames = [np.stack([xx * 32, yy * 60, np.full_like(xx, 20000 * k), np.full_like(xx, 65535)], -1).astype(np.uint16)
              for k in range(3)]
    for i in range(60):
        store.keep(frames[i % 3])
    c = store.cost
    print(f"\npreview kept ({'copy' if copy else 'reference'}) of a 2K RGBA16 frame: "
          f"mean {c.seconds / c.count * 1e6:.1f} us, max {c.worst * 1e6:.1f} us over {c.count}")
    first = store.encode()
    assert (first.width, first.height) == (410, 216) and (first.source_width, first.source_height) == (2048, 1080)
    assert np.abs(picture(first.data).astype(int) - (frames[2][::5, ::5, :3] >> 8)).mean() < 3
    store.keep(frames[0])
    assert store.encode() is first                  # a new picture within 0.1 s: the last encoding
    t[0] += 0.2
    again = store.encode()
    assert again is not first and again.serial == first.serial + 1
    assert store.encode() is again                  # nothing new: the same bytes
    small = store.encode(64)
    assert (small.width, small.height) == (64, 34)
    store.clear()
    assert store.encode() is None
    grey = PreviewStore(copy=copy)
    grey.keep(np.full((90, 160), 40000, np.uint16))      # (h, w): one component
    assert picture(grey.encode().data).shape == (90, 160, 3)


@pytest.mark.parametrize("copy", [False, True], ids=["reference", "copy"])
def test_preview_of_xyz_planes_is_their_transform(copy):
    """A picture the display converts (X'Y'Z' planes, the CPU back end's) is previewed as its
    RGBA16 transform: the planes sliced first, then converted (a 2K picture, step 5)."""
    from cinegpu.interop.xyz import XYZPlanes

    yy, xx = np.mgrid[0:1080, 0:2048]
    planes = tuple(p.astype(np.uint16) for p in (xx * 2, yy * 3, (xx + yy) * 4095 // 3126))
    xyz = XYZPlanes(planes, 12, "p3d65")
    store = PreviewStore(copy=copy)
    store.keep(xyz)
    got = store.encode()
    assert (got.width, got.height) == (410, 216) and (got.source_width, got.source_height) == (2048, 1080)
    want = XYZPlanes(tuple(p[::5, ::5] for p in planes), 12, "p3d65").rgba16()
    assert np.abs(picture(got.data).astype(int) - (want[..., :3] >> 8)).mean() < 3


def test_engine_keeps_the_preview_of_what_it_shows():
    """Through the engine's target wrapper (fake GL): a picture after a load, none after unload."""
    eng, entries, clock = engine()
    assert eng.preview.encode() is None
    eng.submit("load", entries=[entries[0]])
    pump(eng, clock, lambda: eng.state == "stopped" and eng.player.scheduler.current is not None)
    shot = eng.preview.encode()
    assert shot is not None and (shot.source_width, shot.source_height) == (16, 9)
    assert eng.player.target.name == "fake"          # the rest is the real target's
    future = eng.submit("loop", loop=True)
    pump(eng, clock, future.done)
    assert future.result()["loop"] is True and eng.player.clock.loop is True
    eng._shutdown(timeout=1)
    assert eng.preview.encode() is None


class DrawRecorder:
    """A presenter that records whether each draw had an overlay (subtitles)."""

    converts_xyz = True

    def __init__(self):
        self.overlays: list[bool] = []

    def draw(self, *args, overlay=None, eyes=1, xyz=None):
        self.overlays.append(overlay is not None)

    def close(self):
        pass


class FakeOverlay:
    """Subtitles on every frame, in GL texture 7; counts its closes."""

    closed = 0

    def texture_for(self, n):
        return 7

    def close(self):
        self.closed += 1


def test_engine_subtitles_on_and_off():
    """The ``subtitles`` command hides and shows the overlay, redraws a held frame, holds for the
    next load and says so in the status; a hidden overlay is closed with its player."""
    eng, entries, clock = engine()
    load = eng.submit("load", entries=entries[:1])
    pump(eng, clock, load.done)
    assert load.result()["subtitles"] == {"on": True, "available": False}       # none read
    p, recorder, overlay = eng.player, DrawRecorder(), FakeOverlay()
    p.presenter, p.subtitles = recorder, overlay
    pump(eng, clock, lambda: p.scheduler.current is not None)

    def command(**args):
        future = eng.submit("subtitles", **args)
        pump(eng, clock, future.done)
        return future.result()

    st = command(on=False)
    assert st["subtitles"] == {"on": False, "available": True} and p.subtitles is None
    assert recorder.overlays[-1] is False           # the held frame drawn again, without them
    st = command(on=True)
    assert st["subtitles"]["on"] is True and p.subtitles is overlay and recorder.overlays[-1] is True
    command(on=False)
    load = eng.submit("load", entries=entries[1:])
    pump(eng, clock, load.done)
    assert overlay.closed == 1 and eng._hidden_overlay is None      # closed with its player
    assert load.result()["subtitles"] == {"on": False, "available": False}
    eng.player.presenter, eng.player.subtitles = DrawRecorder(), (second := FakeOverlay())
    command(on=True)
    command(on=False)
    eng._shutdown(timeout=1)
    assert second.closed == 1


def test_library_says_whether_a_kdm_opens_an_encrypted_composition(tmp_path):
    """``kdm`` of each encrypted composition in ``GET /api/v1/library``: no keys, none for it, valid
    (with its end), not valid now; in process (Starlette's TestClient), no key in the answer."""
    import warnings
    from datetime import datetime, timedelta, timezone

    with warnings.catch_warnings():     # starlette's note that httpx2 will replace httpx
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    from cinegpu.media.security.kdm import parse_kdm
    from cinegpu.media.security.key_ring import KeyRing
    from cinegpu.player.server.app import create_app
    from cinegpu.player.server.library import Library
    from helpers.encrypted_dcp import make_dcp
    from helpers.kdm_build import make_chain, make_kdm, make_recipient

    now = datetime.now(timezone.utc)
    library = tmp_path / "library"
    library.mkdir()
    made = make_dcp(library / "film", encrypt=True, title="LOCKED")
    root, signer = make_chain()
    me = make_recipient(root)

    def kdm(start, end):
        return make_kdm(root=root, signer=signer, recipient=me, cpl_id=made.cpl_id, title=made.title,
                        keys=[(k.key_type, k.key_id, k.key) for k in made.keys.values()],
                        not_before=now + start, not_after=now + end)

    def state(keys):
        app = create_app(engine()[0], Library(library), token=None, hosts=("testserver",), keys=keys)
        comps = TestClient(app).get("/api/v1/library").json()["compositions"]
        (comp,) = [c for c in comps if c["id"] == made.cpl_id]
        assert comp["encrypted"] is True and comp["title"] == "LOCKED"
        return comp["kdm"]

    assert state(None)["state"] == "no-keys"
    keys = KeyRing(me.key)
    assert state(keys)["state"] == "missing"
    keys.add_kdm(parse_kdm(kdm(timedelta(days=1), timedelta(days=2)), "later.xml"))
    later = state(keys)
    assert later["state"] == "not-valid-now" and "valid from" in later["message"]
    keys.add_kdm(parse_kdm(kdm(-timedelta(days=1), timedelta(days=3)), "now.xml"))
    valid = state(keys)
    assert valid["state"] == "valid" and valid["not_after"].startswith((now + timedelta(days=3)).date().isoformat())


# ---------------------------------------------------------------- in a browser


def chromium_path() -> str | None:
    for name in CHROMIUM:
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium (apt-get install chromium); Playwright's own browser download is not used")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, headless=True)
        yield b
        b.close()


@pytest.fixture
def fresh_server(library):
    """A server of its own: nothing loaded yet (the page's first Play must be refused)."""
    s = start_server(library)
    yield s
    stopped_cleanly(s)


def wait_text(page, selector: str, pred, timeout: float = 30.0, what: str = "") -> str:
    """The text of ``selector`` once ``pred`` holds of it (polled every 50 ms)."""
    end = time.monotonic() + timeout
    text = None
    while time.monotonic() < end:
        text = page.locator(selector).text_content()
        if pred(text):
            return text
        page.wait_for_timeout(50)
    raise AssertionError(f"timed out waiting for {what or selector}; last {text!r}")


#: Draws the page's preview image into a canvas: its size, mean, spread and a digest of its pixels.
SHOWN_PICTURE = """async () => {
  const img = document.getElementById('preview');
  if (img.hidden || !img.complete || !img.naturalWidth) return null;
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let sum = 0, sq = 0, n = 0;
  for (let i = 0; i < d.length; i += 4) for (let k = 0; k < 3; k++) { sum += d[i + k]; sq += d[i + k] ** 2; n++; }
  const digest = await crypto.subtle.digest('SHA-256', d);
  const mean = sum / n;
  return {w: c.width, h: c.height, mean, std: Math.sqrt(sq / n - mean * mean),
          digest: Array.from(new Uint8Array(digest)).map(b => b.toString(16).padStart(2, '0')).join(''),
          serial: img.dataset.serial};
}"""


def shown_pictures(page, count: int, timeout: float = 15.0) -> list[dict]:
    """``count`` different pictures shown by the page's preview (by their pixels' digest)."""
    seen: dict[str, dict] = {}
    end = time.monotonic() + timeout
    while len(seen) < count and time.monotonic() < end:
        shot = page.evaluate(SHOWN_PICTURE)
        if shot is not None:
            seen.setdefault(shot["digest"], shot)
        page.wait_for_timeout(100)
    assert len(seen) >= count, f"the page showed {len(seen)} different pictures, not {count}"
    return list(seen.values())


def expected(console: str) -> bool:
    """Whether a console error is Chromium's line for a refusal the test asks for (409, 422)."""
    return console.startswith("Failed to load resource") and ("status of 409" in console or "status of 422" in console)


def test_control_page_in_a_browser(browser, fresh_server, library):
    server = fresh_server
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" and not expected(m.text) else None)
    page.goto(f"{server.url}/#token={server.token}")
    # the token left the address, kept for this tab
    assert page.url == f"{server.url}/"
    assert page.evaluate("sessionStorage.getItem('cinegpu-token')") == server.token
    titles = page.locator("#library tbody td.title")
    titles.filter(has_text="Two reels").wait_for(timeout=15_000)
    assert {"Two reels", "seq"} <= set(titles.all_text_contents())
    row = page.locator(f"#library tbody tr[data-id='{DCP_CPL}']")
    assert row.locator("td").nth(4).text_content() == "2D" and row.locator("td").nth(5).text_content() == "clear"
    wait_text(page, "#connection", lambda t: t == "connected", what="the event stream")

    # nothing loaded: the API's 409, shown
    page.click("#play")
    wait_text(page, "#error", lambda t: "409" in t and "nothing is loaded" in t, what="the 409")

    row.locator("button.load").click()
    wait_text(page, "#state", lambda t: t == "stopped", timeout=120, what="loaded")
    assert page.locator("#error").is_hidden()
    assert page.locator("#title").text_content() == "Two reels"
    assert page.locator("#reels .reel-mark").count() == 1           # the boundary between the two reels
    page.check("#loop")                                              # 48 frames: loop while we look
    wait_for(server, lambda s: s["loop"] is True, what="loop on")

    page.click("#play")
    wait_text(page, "#state", lambda t: t == "playing", what="playing")
    first = page.locator("#timecode").text_content()
    wait_text(page, "#timecode", lambda t: t != first, timeout=5, what="the timecode to advance")
    wait_text(page, "#fps", lambda t: t.replace(".", "").isdigit(), what="fps achieved")
    for shot in shown_pictures(page, 3):
        assert (shot["w"], shot["h"]) == (WIDTH, HEIGHT) and shot["std"] > 10, shot   # not blank
    # and two fetches of the picture, 150 ms apart (the pictures cycle every 8 frames, 333 ms), differ
    auth = {"Authorization": f"Bearer {server.token}"}
    pairs = []
    for _ in range(3):
        one = page.request.get(f"{server.url}/api/v1/preview", headers=auth).body()
        page.wait_for_timeout(150)
        pairs.append((one, page.request.get(f"{server.url}/api/v1/preview", headers=auth).body()))
    assert all(a[:2] == b"\xff\xd8" for a, _ in pairs) and any(a != b for a, b in pairs)

    page.click("#pause")
    wait_text(page, "#state", lambda t: t == "paused", what="paused")
    held = page.locator("#timecode").text_content()
    page.wait_for_timeout(300)
    assert page.locator("#timecode").text_content() == held

    # seek with the scrubber: a click at 3/4 of its length
    box = page.locator("#scrubber").bounding_box()
    api(server, "/seek", "POST", {"frame": 5})          # from afar: the paused frame may be near 3/4
    wait_text(page, "#frame", lambda t: t.startswith("5 /"), what="the page at frame 5")
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)
    target = int(page.locator("#scrubber").input_value())
    assert abs(target - 35) <= 3, target
    st = wait_for(server, lambda s: s["frame"] == target and s["shown_frame"] == target, what="the scrubber's seek")
    wait_text(page, "#frame", lambda t: t.startswith(f"{target} /"), what="the page at the new frame")
    assert st["state"] == "paused" and st["reel"]["index"] == 1

    # an invalid seek: the API's 422, shown
    page.fill("#seek-timecode", "00:00:01:99")
    page.click("#seek-form button")
    wait_text(page, "#error", lambda t: "422" in t and "frame field" in t, what="the 422")
    page.fill("#seek-timecode", "00:00:01:00")
    page.click("#seek-form button")
    wait_text(page, "#timecode", lambda t: t == "00:00:01:00", what="the timecode seek")
    assert page.locator("#error").is_hidden()
    page.uncheck("#subtitles")
    wait_for(server, lambda s: s["subtitles"]["on"] is False, what="subtitles off")
    page.check("#subtitles")
    wait_for(server, lambda s: s["subtitles"]["on"] is True, what="subtitles on")
    assert not problems, problems
    page.close()

    # ?token= is taken too, and dropped from the address
    page = browser.new_page()
    page.goto(f"{server.url}/?token={server.token}")
    page.locator("#library tbody td.title").filter(has_text="Two reels").wait_for(timeout=15_000)
    assert page.url == f"{server.url}/"
    wait_text(page, "#title", lambda t: t == "Two reels", what="the status in a second page")
    page.close()

    # without the token: the page says so and offers a field for it
    page = browser.new_page()
    page.goto(f"{server.url}/")
    wait_text(page, "#error", lambda t: "401" in t, what="the 401")
    assert page.locator("#token-form").is_visible()
    page.fill("#token-input", server.token)
    page.click("#token-form button")
    page.locator("#library tbody td.title").filter(has_text="Two reels").wait_for(timeout=15_000)
    page.close()


#: The widths (percent) of the page's meter bars, one per channel.
METER_WIDTHS = "() => Array.from(document.querySelectorAll('#meters .meter-fill')).map(e => parseFloat(e.style.width) || 0)"


def test_kdm_upload_and_sound_meters_in_a_browser(browser, tmp_path):
    """A server with a private key (``--key``) and an encrypted DCP with 5.1 sound: a file that is
    no KDM is refused (422, shown), the KDM uploaded through the page's file input is added (201,
    its fields shown) and the library's KDM column says it is valid; the composition then plays
    (on the null sink) and the meters show a bar per channel, labelled, not all empty."""
    require_gl()
    now = datetime.now(timezone.utc)
    library = tmp_path / "library"
    library.mkdir()
    made = make_dcp(library / "locked", encrypt=True, title="LOCKED_SOUND", n=24, subtitles=False)
    root, signer = make_chain()
    me = make_recipient(root)
    kdm = tmp_path / "locked_kdm.xml"
    kdm.write_bytes(make_kdm(root=root, signer=signer, recipient=me, cpl_id=made.cpl_id, title=made.title,
                             keys=[(k.key_type, k.key_id, k.key) for k in made.keys.values()],
                             not_before=now - timedelta(days=1), not_after=now + timedelta(days=2)))
    not_kdm = tmp_path / "not_a_kdm.xml"
    not_kdm.write_text('<?xml version="1.0"?><Nothing/>')
    pem = tmp_path / "me.pem"
    pem.write_bytes(me.pem())
    pem.chmod(0o600)
    server = ServerProcess(library, "--backend", "cpu", "--threads", "--workers", "1", "--audio", "null",
                           "--key", str(pem))
    try:
        page = browser.new_page()
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" and not expected(m.text) else None)
        page.goto(f"{server.url}/#token={server.token}")
        row = page.locator(f"#library tbody tr[data-id='{made.cpl_id}']")
        row.wait_for(timeout=15_000)
        kdm_cell = row.locator("td").nth(6)
        assert row.locator("td").nth(5).text_content() == "encrypted" and kdm_cell.text_content() == "no KDM"
        wait_text(page, "#connection", lambda t: t == "connected", what="the event stream")

        page.set_input_files("#kdm-file", str(not_kdm))
        page.click("#kdm-upload")
        wait_text(page, "#error", lambda t: "KDM not_a_kdm.xml: 422" in t, what="the 422 of a file that is no KDM")
        assert page.locator("#kdm-result").text_content() == ""

        page.set_input_files("#kdm-file", str(kdm))
        page.click("#kdm-upload")
        shown = wait_text(page, "#kdm-result", lambda t: t.startswith("added"), what="the KDM added")
        assert "LOCKED_SOUND" in shown and f"to {(now + timedelta(days=2)).date().isoformat()}" in shown, shown
        assert page.locator("#error").is_hidden()
        assert page.locator("#kdm-file").input_value() == ""
        row = page.locator(f"#library tbody tr[data-id='{made.cpl_id}']")     # the library read again
        wait_text(page, f"#library tbody tr[data-id='{made.cpl_id}'] td:nth-child(7)",
                  lambda t: t.startswith("valid to"), what="the KDM column")
        assert api(server, "/kdms")[1]["kdms"][0]["cpl_id"] == made.cpl_id

        assert page.locator("#meters").is_hidden()                   # nothing with sound loaded
        row.locator("button.load").click()
        wait_text(page, "#state", lambda t: t == "stopped", timeout=120, what="loaded")
        page.check("#loop")
        wait_for(server, lambda s: s["loop"] is True, what="loop on")
        page.click("#play")
        wait_text(page, "#state", lambda t: t == "playing", what="playing")
        assert page.locator("#meters").is_visible()
        assert page.locator("#meters .meter-label").all_text_contents() == ["L", "R", "C", "LFE", "Ls", "Rs"]
        end = time.monotonic() + 10
        widths = []
        while time.monotonic() < end and not any(w > 0 for w in widths):
            widths = page.evaluate(METER_WIDTHS)
            page.wait_for_timeout(50)
        assert len(widths) == 6 and any(w > 0 for w in widths), widths
        values = page.locator("#meters .meter-value").all_text_contents()
        assert any(v != "-inf" and float(v) < 0 for v in values), values
        st = api(server, "/status")[1]
        assert len(st["audio"]["peaks_dbfs"]) == 6
        page.click("#pause")
        wait_text(page, "#state", lambda t: t == "paused", what="paused")
        end = time.monotonic() + 5
        while time.monotonic() < end and any(w > 0 for w in widths):
            widths = page.evaluate(METER_WIDTHS)
            page.wait_for_timeout(50)
        assert widths == [0] * 6, widths                             # nothing plays: silence
        assert not problems, problems
        page.close()
    finally:
        stopped_cleanly(server)
