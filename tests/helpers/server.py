"""The playback server in the tests: :func:`sample_library` and :func:`stopped_cleanly` around a
``cinegpu serve`` process, :func:`api` and :func:`wait_for` against a running one, and
:func:`engine`, its engine over in-memory sources with a fake clock, window and GL, turned by
:func:`pump` without its thread.
"""

from __future__ import annotations

import time

import pytest

from cinegpu.player.server.client import ServerProcess, request
from cinegpu.player.server.samples import make_library, tools_missing
from conftest import require_gl
from helpers.playback import FakePresenter, FakeWindow


def sample_library(tmp_path_factory, **kw):
    """:func:`~cinegpu.player.server.samples.make_library` (``kw`` its options) in a new
    temporary folder; the test skipped, with the reason, without the tools it needs or OpenGL."""
    missing = tools_missing(dcp=kw.get("dcp", True))
    if missing:
        pytest.skip(f"needs {', '.join(missing)} to make the test library")
    require_gl()
    return make_library(tmp_path_factory.mktemp("library"), **kw)


def stopped_cleanly(server: ServerProcess) -> None:
    """Stop ``server``; an AssertionError with the end of its stderr unless it exited 0."""
    code = server.stop()
    assert code == 0, "".join(server.stderr)[-3000:]


def api(server, path, method="GET", body=None, **kw):
    """``METHOD /api/v1PATH`` of a running server, with its token: (status, decoded body)."""
    return request(f"{server.url}/api/v1{path}", method, body, token=server.token, **kw)


def wait_for(server, pred, timeout=30.0, what="condition"):
    """The server's status once ``pred`` holds of it, polled; an AssertionError naming ``what``
    after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    st = None
    while time.monotonic() < end:
        _, st = api(server, "/status")
        if pred(st):
            return st
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}; last status {st}")


class FakeTarget:
    name, texture, width, height = "fake", 0, 0, 0
    xyz = None      # as a TextureTarget's: no X'Y'Z' picture for the presenter to convert

    def open(self, w, h):
        self.width, self.height = w, h

    def write(self, picture):
        pass

    def close(self):
        pass


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += max(s, 0.001)


def engine(frames=(10, 5), **kw):
    """An engine over in-memory sources (ArraySource) with a fake clock, window and GL."""
    import numpy as np

    from cinegpu.player.server.engine import Engine
    from cinegpu.player.server.library import Entry
    from cinegpu.player.source import ArraySource

    clock = FakeClock()
    pictures = [np.zeros((9, 16, 4), np.uint16)]
    entries = [Entry(f"id{i}", "j2k-sequence", f"t{i}", None, None, None, n, (("", n),))
               for i, n in enumerate(frames)]

    class Media:
        def __init__(self, entry):
            self.frame_count = entry.frames

        def close(self):
            pass

    def make_source(media):
        return ArraySource(pictures, frame_count=media.frame_count, edit_rate=24)

    eng = Engine(FakeWindow((16, 9)), open_media=Media, make_source=make_source, make_target=lambda b: FakeTarget(),
                 make_presenter=FakePresenter, now=clock, sleep=clock.sleep, **kw)
    return eng, entries, clock


def pump(eng, clock, until, limit=5000):
    for _ in range(limit):
        eng._drain()
        eng._sleep(min(eng._turn(), 0.01))
        eng._publish()
        if until():
            return
        time.sleep(0.0005)          # let the loader thread run
    raise AssertionError(f"engine stuck in {eng.state}")
