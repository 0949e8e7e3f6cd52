"""``serve()``: the process of ``cinegpu serve``: window and engine on the main thread, HTTP beside it.

The main thread opens the GL window (EGL when headless) and runs :meth:`Engine.run`; uvicorn
serves the ASGI app from a background thread with its own asyncio loop, on a socket bound here
(so ``--listen 127.0.0.1:0`` picks a free port and the line ``listening on http://HOST:PORT``
says which).  A token is required unless ``Access.no_token`` (loopback only): without one given, it is
generated and printed on the next line with how to use it.  Connections are bounded (see
:mod:`.protocol`: head deadline, idle keep-alive timeout, connection cap, TCP_NODELAY), and the
library is confined to its folder (:meth:`Library.check` before each load).

SIGTERM and SIGINT end the engine's loop and start uvicorn's shutdown beside it; the engine
rejects what is still queued, closes the player, ends the decode workers (a frame mid-decode is
abandoned, a pipeline still starting is cancelled) and unlinks their shared memory, waiting at
most :data:`~.engine.SHUTDOWN_SECONDS`; whatever segment of this process is left then is
unlinked too, and the process exits 0, within 3 s of the signal.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import signal
import socket
import sys
import threading

import uvicorn

from cinegpu.decode.cpus import usable_cores
from cinegpu.decode.shm import unlink_own
from cinegpu.interop import TARGETS, choose_target
from cinegpu.interop.window import open_window
from cinegpu.media.source import open_package, open_source

from ..presenter import Presenter
from ..settings import Access, ConnectionLimits, ServeSettings
from ..source import DecodeAheadSource, PipelineSource
from ..stereo import stereo_source
from .access import check_token, generate_token
from .app import create_app
from .engine import Engine
from .library import Library
from .protocol import bounded_protocol

__all__ = ["parse_listen", "is_loopback", "serve"]

log = logging.getLogger("cinegpu.server")

#: Seconds uvicorn's graceful shutdown may take (it runs beside the engine's, from the signal).
HTTP_GRACE = 1


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT`` or ``:PORT`` (loopback) -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen wants HOST:PORT, got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port). A port another program
    holds is an OSError saying so and how to choose another."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise OSError(f"port {port} on {host} is in use (another server?): choose another with "
                          f"--listen {host}:PORT, or --listen {host}:0 for any free one") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise OSError(f"{host} is not an address of this machine (--listen {host}:{port})") from None
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(settings: ServeSettings, *, out=sys.stdout) -> int:
    """Run the server ``settings`` describe until SIGTERM/SIGINT (or the window closes); the exit
    status.  It prints where it listens (and a generated token) to ``out``.  ValueError for
    settings that cannot serve (see :func:`check_access`)."""

    host, port = parse_listen(settings.listen)
    settings.limits.check()
    token, generated = check_access(settings.access, host)
    library = Library(settings.library)
    window = open_window(*settings.window_size, headless=settings.playback.headless, title="cinegpu serve",
                         stereo=settings.playback.stereo == "quad-buffer")
    engine = make_engine(settings, library, window)
    sock = bind(host, port)
    access = settings.access
    app = create_app(engine, library, token=token, listen_host=host, hosts=access.hosts, origins=access.origins,
                     keys=settings.keys)
    server = http_server(app, settings.limits)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="http", daemon=True)

    def on_signal(signum, frame):
        engine.request_quit()
        server.should_exit = True       # HTTP winds down while the engine does

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        thread.start()
        announce(out, host, sock, library, token, generated, settings.keys)
        if settings.load:
            load_at_start(engine, library, settings)
        try:
            engine.run()
        finally:
            server.should_exit = True
            thread.join(timeout=HTTP_GRACE)
            window.close()
            sock.close()
            left = unlink_own()     # a source whose close was still running
            if left:
                log.warning("unlinked %d shared-memory segment(s) left open at shutdown", len(left))
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    print("cinegpu serve: stopped", file=out, flush=True)
    return 0


def check_access(access: Access, host: str) -> tuple[str | None, bool]:
    """(the bearer token, whether it was generated here): ``access.token`` checked, or a fresh
    one, or None with ``no_token``, which only a loopback ``host`` may go without (ValueError)."""

    if access.no_token and access.token:
        raise ValueError("--no-token and a token (--token-file, $CINEGPU_SERVE_TOKEN) exclude each other")
    if access.no_token and not is_loopback(host):
        raise ValueError(f"listening on {host} (not loopback) needs a token: --no-token is for loopback only")
    if access.no_token:
        return None, False
    if access.token:
        return check_token(access.token, "--token"), False
    return generate_token(), True


def make_engine(settings: ServeSettings, library, window):
    """The :class:`~.engine.Engine` playing ``library``'s entries in ``window`` as
    ``settings.playback`` says, opening encrypted ones with ``settings.keys``."""

    p, keys = settings.playback, settings.keys

    def open_media(entry):
        library.check(entry)                # still inside the library (links may have changed)
        if entry.package is None:
            return open_source(entry.path, keys=keys)
        return open_package(entry.package, cpl=entry.path, keys=keys)

    def make_view_source(view, share):
        if p.processes:     # a shutdown does not wait for the workers to start
            workers = None if p.workers is None and share == 1 else \
                max(1, int((p.workers or usable_cores() - 1) * share))
            return PipelineSource(view, backend=p.backend, colour=p.colour, primaries=p.primaries,
                                  workers=workers, cancelled=lambda: engine.quitting, tier1=p.tier1)
        n = max(1, int((p.workers or 2) * share))
        return DecodeAheadSource(view, backend=p.backend, colour=p.colour, primaries=p.primaries, workers=n,
                                 depth=max(8, p.preroll, 2 * n), tier1=p.tier1)

    def make_source(media):
        # --stereo shows a 3D composition as it says; a 2D one is shown as it is
        return stereo_source(media, p.stereo if getattr(media, "stereoscopic", False) else None,
                             make_view_source)

    def make_target(source_backend):
        return choose_target(source_backend) if p.interop == "auto" else TARGETS[p.interop]()

    engine = Engine(window, open_media=open_media, make_source=make_source, make_target=make_target,
                    make_presenter=Presenter, headless=p.headless, fps=p.fps, preroll=p.preroll,
                    backend=p.backend, audio="null" if p.headless and p.audio == "auto" else p.audio,
                    subtitles=p.subtitles, captions=p.captions)
    return engine


def http_server(app, limits: ConnectionLimits):
    """The uvicorn server of ``app``, its connections bounded by ``limits``
    (:func:`~.protocol.bounded_protocol`; keep-alive idle for the head timeout, 1..5 s)."""

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none",
                            http=bounded_protocol(head_timeout=limits.head_timeout,
                                                  max_connections=limits.max_connections),
                            timeout_graceful_shutdown=HTTP_GRACE,
                            timeout_keep_alive=max(1, min(5, round(limits.head_timeout))),
                            h11_max_incomplete_event_size=16 << 10, backlog=128)
    return uvicorn.Server(config)


def announce(out, host: str, sock: socket.socket, library, token: str | None, generated: bool, keys) -> None:
    """The start lines: the address and library, the KDMs held, and a generated token with how
    to use it."""
    name = f"[{host}]" if ":" in host else host
    url = f"http://{name}:{sock.getsockname()[1]}"
    print(f"cinegpu serve: listening on {url} "
          f"(library {library.root}, {'token required' if token else 'no token, loopback only'})",
          file=out, flush=True)
    if keys is not None:
        print(f"cinegpu serve: {len(keys.kdms())} KDMs held"
              f"{'; more through POST /api/v1/kdms' if keys.can_open_kdms else ''}", file=out, flush=True)
    if generated:
        print(f"cinegpu serve: token {token} (generated): send 'Authorization: Bearer {token}', or open "
              f"{url}/#token={token} in a browser; choose one with $CINEGPU_SERVE_TOKEN or --token-file "
              "(mode 600), or --no-token on loopback", file=out, flush=True)


def load_at_start(engine, library, settings: ServeSettings) -> None:
    """Queue the load of ``settings.load`` (a playlist; ValueError naming the ids not in the
    library), then play and loop as ``settings`` say."""
    entries = [library.find(i) for i in settings.load]
    missing = [i for i, e in zip(settings.load, entries) if e is None]
    if missing:
        raise ValueError(f"--load: no composition {', '.join(missing)} in {library.root}")
    engine.submit("load", entries=entries, loop=settings.loop, play=settings.play)
