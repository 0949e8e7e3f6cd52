"""``serve()``: the process of ``cinegpu serve``: window and engine on the main thread, HTTP beside it.

The main thread opens the GL window (EGL when headless) and runs :meth:`Engine.run`; uvicorn
serves the ASGI app from a background thread with its own asyncio loop, on a socket bound here
(so ``--listen 127.0.0.1:0`` picks a free port and the line ``listening on http://HOST:PORT``
says which).  A token is required unless ``no_token`` (loopback only): without one given, it is
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

import ipaddress
import logging
import signal
import socket
import sys
import threading

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
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(library_dir, *, listen: str = "127.0.0.1:8080", token: str | None = None, no_token: bool = False,
          hosts=(), origins=(), max_connections: int = 256, head_timeout: float = 5.0, headless: bool = True,
          backend: str = "auto", interop: str = "auto", colour: str = "auto", primaries: str = "p3d65",
          workers: int | None = None, processes: bool = True, fps=None, preroll: int = 2,
          window_size: tuple[int, int] = (1280, 720), load: list[str] | None = None, play: bool = False,
          loop: bool = False, audio: str = "auto", subtitles: bool = True, keys=None, out=sys.stdout) -> int:
    """Run the server until SIGTERM/SIGINT (or the window closes); the exit status.

    ``token``: the bearer token (None: generate one, unless ``no_token``); ``hosts``, ``origins``:
    more Host names and Origins to accept; ``max_connections`` open at once; ``head_timeout``:
    seconds a request head (or the next one on a keep-alive connection) may take.  ``audio``:
    the sound sink, "auto" (the output device if there is one, else the null sink; headless:
    null), "null" or "off". ``subtitles``: draw the compositions' subtitles.  ``keys``: the
    :class:`~cinegpu.media.security.key_ring.KeyRing` encrypted compositions open with (KDMs added at
    start, and through ``POST /api/v1/kdms`` when it holds the private key)."""
    import uvicorn  # noqa: PLC0415

    from cinegpu.decode.shm import unlink_own  # noqa: PLC0415
    from cinegpu.interop import TARGETS, choose_target  # noqa: PLC0415
    from cinegpu.media.source import open_package, open_source  # noqa: PLC0415

    from ..presenter import Presenter  # noqa: PLC0415
    from ..source import DecodeAheadSource, PipelineSource  # noqa: PLC0415
    from ..window import open_window  # noqa: PLC0415
    from .app import create_app  # noqa: PLC0415
    from .engine import Engine  # noqa: PLC0415
    from .library import Library  # noqa: PLC0415

    from .access import check_token, generate_token  # noqa: PLC0415
    from .protocol import bounded_protocol  # noqa: PLC0415

    host, port = parse_listen(listen)
    if not (1 <= max_connections <= 100_000 and 0.1 <= head_timeout <= 3600):
        raise ValueError("--max-connections wants 1..100000, --head-timeout 0.1..3600 seconds")
    if no_token and token:
        raise ValueError("--no-token and a token (--token-file, $CINEGPU_SERVE_TOKEN) exclude each other")
    if no_token and not is_loopback(host):
        raise ValueError(f"listening on {host} (not loopback) needs a token: --no-token is for loopback only")
    generated = not no_token and not token
    token = None if no_token else check_token(token, "--token") if token else generate_token()
    library = Library(library_dir)

    def open_media(entry):
        library.check(entry)                # still inside the library (links may have changed)
        if entry.package is None:
            return open_source(entry.path, keys=keys)
        return open_package(entry.package, cpl=entry.path, keys=keys)

    def make_source(media):
        if processes:       # a shutdown does not wait for the workers to start
            return PipelineSource(media, backend=backend, colour=colour, primaries=primaries, workers=workers,
                                  cancelled=lambda: engine.quitting)
        n = workers or 2
        return DecodeAheadSource(media, backend=backend, colour=colour, primaries=primaries, workers=n,
                                 depth=max(8, preroll, 2 * n))

    def make_target(source_backend):
        return choose_target(source_backend) if interop == "auto" else TARGETS[interop]()

    window = open_window(*window_size, headless=headless, title="cinegpu serve")
    engine = Engine(window, open_media=open_media, make_source=make_source, make_target=make_target,
                    make_presenter=Presenter, headless=headless, fps=fps, preroll=preroll, backend=backend,
                    audio="null" if headless and audio == "auto" else audio, subtitles=subtitles)
    sock = bind(host, port)
    app = create_app(engine, library, token=token, listen_host=host, hosts=hosts, origins=origins, keys=keys)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", ws="none",
                            http=bounded_protocol(head_timeout=head_timeout, max_connections=max_connections),
                            timeout_graceful_shutdown=HTTP_GRACE,
                            timeout_keep_alive=max(1, min(5, round(head_timeout))),
                            h11_max_incomplete_event_size=16 << 10, backlog=128)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="http", daemon=True)

    def on_signal(signum, frame):
        engine.request_quit()
        server.should_exit = True       # HTTP winds down while the engine does

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        thread.start()
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
        if load:
            entries = [library.find(i) for i in load]
            missing = [i for i, e in zip(load, entries) if e is None]
            if missing:
                raise ValueError(f"--load: no composition {', '.join(missing)} in {library.root}")
            engine.submit("load", entries=entries, loop=loop, play=play)
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
