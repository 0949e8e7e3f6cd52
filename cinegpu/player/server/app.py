"""The HTTP API (Starlette, ASGI): JSON under ``/api/v1``, served by uvicorn on a background thread.

Handlers validate a request, then either read the engine's published status or queue a command
and await its future (asynchronously: the event loop keeps serving others, and the display
thread never waits for HTTP).  Every error is JSON ``{"error": ..., "status": ...}`` with a 4xx
status; 5xx only for a bug (500) or shutdown (503).

Access (:mod:`.access`): a bearer token on every request (generated at start unless given, or
none with ``--no-token`` on loopback), ``Host`` naming this server (no DNS rebinding), no foreign
or ``null`` ``Origin``, and ``Content-Type: application/json`` on every POST and every body, so
that no web page the operator visits can drive the player.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from cinegpu.media.errors import KdmRefused, MediaError
from cinegpu.media.security.kdm import parse_kdm

from .access import Guard
from .engine import CommandError, Engine
from .library import Library
from .openapi import openapi

__all__ = ["create_app"]

MAX_BODY = 64 << 10                 # bytes
MAX_KDM_BODY = (1 << 20) + (64 << 10)   # bytes: a KDM (media.kdm.MAX_KDM_BYTES) in a JSON string
COMMAND_TIMEOUT = 10.0              # seconds a command may wait for the display thread
LOAD_TIMEOUT = 180.0                # seconds a load may take (worker processes start)
BODY_TIMEOUT = 10.0                 # seconds a request body may take to arrive
BOM = b"\xef\xbb\xbf"
MAX_GAIN = 2.0                      # linear gain, the volume's and each routing gain's bound
MAX_CHANNELS = 64                   # rows and columns of a routing matrix at most

#: The control page's files (``static/``), served at ``/`` and ``/static/NAME``, without a token
#: (:data:`~.access.OPEN_PATHS`: they hold no data and do nothing until given the token).
PAGE_FILES = {"/": ("index.html", "text/html; charset=utf-8"),
              "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
              "/static/style.css": ("style.css", "text/css; charset=utf-8")}
#: What the page may do (CSP Level 3): its own scripts, styles, requests and preview blobs; no
#: inline script, no framing (clickjacking), no referrer (a ``?token=`` address must not leak).
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                                           "connect-src 'self'; img-src 'self' blob: data:; base-uri 'none'; "
                                           "form-action 'self'; frame-ancestors 'none'",
                "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
                "Cache-Control": "no-cache"}
PREVIEW_MAX_WIDTH = 1920    # pixels: the widest ?width= a preview request may ask for


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_json(request: Request, *, required: bool, limit: int = MAX_BODY) -> dict:
    """The JSON object in the body ({} when empty and not ``required``), at most ``limit`` bytes of
    UTF-8 without a byte order mark (RFC 8259 8.1), arriving within BODY_TIMEOUT seconds.  The
    Content-Type was checked by the Guard (application/json)."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise BadRequest(413 if length.isdigit() else 400, f"body over {limit} bytes" if length.isdigit()
                         else "bad Content-Length")

    async def read() -> bytes:
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise BadRequest(413, f"body over {limit} bytes")
        return bytes(body)

    try:
        body = await asyncio.wait_for(read(), BODY_TIMEOUT)
    except asyncio.TimeoutError:
        raise BadRequest(408, f"body not received within {BODY_TIMEOUT:g} s") from None
    if body.startswith(BOM):
        raise BadRequest(400, "a JSON body must not start with a byte order mark")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"body is not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        if required:
            raise BadRequest(400, "a JSON body is required")
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(400, f"body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(422, "body must be a JSON object")
    return value


def _int(value, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(422, f"{name} must be an integer")
    if not lo <= value <= hi:
        raise BadRequest(422, f"{name} must be in {lo}..{hi}")
    return value


def _number(value, name: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadRequest(422, f"{name} must be a number")
    if not lo <= value <= hi:
        raise BadRequest(422, f"{name} must be in {lo:g}..{hi:g}")
    return float(value)


def _routing(value) -> list[list[float]] | None:
    """None (the default downmix) or a matrix of gains: a list of 1..MAX_CHANNELS rows (source
    channels), each a list of the same 1..MAX_CHANNELS numbers in -MAX_GAIN..MAX_GAIN (one per
    sink channel); its shape is checked against the sound by the engine."""
    if value is None:
        return None
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_CHANNELS or \
            not all(isinstance(r, list) and 1 <= len(r) <= MAX_CHANNELS for r in value):
        raise BadRequest(422, f"routing must be null or a list of 1..{MAX_CHANNELS} rows (source channels), "
                              f"each a list of 1..{MAX_CHANNELS} gains (sink channels)")
    if len({len(r) for r in value}) != 1:
        raise BadRequest(422, "routing rows must all have the same length (the sink's channels)")
    return [[_number(g, f"routing[{i}][{j}]", -MAX_GAIN, MAX_GAIN) for j, g in enumerate(r)]
            for i, r in enumerate(value)]


def _only(body: dict, allowed: set[str]) -> None:
    extra = set(body) - allowed
    if extra:
        raise BadRequest(422, f"unknown field(s): {', '.join(sorted(map(str, extra)))}")


def _flag(body: dict, name: str) -> bool:
    v = body.get(name, False)
    if not isinstance(v, bool):
        raise BadRequest(422, f"{name} must be true or false")
    return v


def _id(value) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 200:
        raise BadRequest(422, "ids are strings of 1..200 characters")
    return value


def wants_html(request: Request) -> bool:
    """A client that asks for a page (DCP-o-matic's player API): answer 303 to / as DCP-o-matic does."""
    return "text/html" in request.headers.get("accept", "")


def guarded(handler):
    """``handler`` answering a :class:`BadRequest` with its JSON error."""
    async def wrapper(*args):
        try:
            return await handler(*args)
        except BadRequest as exc:
            return error(exc.status, str(exc))
    wrapper.__name__ = handler.__name__
    return wrapper


class Commands:
    """Queues a command on the engine and awaits it: the JSON status after it, the engine's
    :class:`CommandError` as its status, or 503 when it is not done within ``timeout``
    seconds (the command is then cancelled: still queued, the engine skips it)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, name: str, timeout: float = COMMAND_TIMEOUT, **args) -> JSONResponse:
        future = self.engine.submit(name, **args)
        try:
            status = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except CommandError as exc:
            return error(exc.status, str(exc))
        except asyncio.TimeoutError:
            future.cancel()         # still queued: the engine skips it
            return error(503, f"{name} not done within {timeout:g} s")
        return JSONResponse(status)


def page_routes(document: dict, folder: Path | None = None) -> list[Route]:
    """``GET /``, the control page, its script and style (:data:`PAGE_FILES`, read once from
    ``folder``, default ``static/`` beside this module) and ``GET /api/v1/openapi.json``, ``document``."""
    folder = Path(__file__).with_name("static") if folder is None else folder
    routes = []
    for path, (name, media_type) in PAGE_FILES.items():
        body = (folder / name).read_bytes()

        async def page(request: Request, body=body, media_type=media_type):
            return Response(body, media_type=media_type, headers=PAGE_HEADERS)
        routes.append(Route(path, page, methods=["GET"]))

    async def get_openapi(request: Request):
        return JSONResponse(document)

    return [*routes, Route("/api/v1/openapi.json", get_openapi, methods=["GET"])]


def kdm_state(keys, cpl_id: str) -> dict:
    """Whether an encrypted composition can be played now: ``state`` "valid" (a KDM or key file
    held opens it; ``not_after``, the end of its KDMs' windows, ISO 8601), "not-valid-now" (its
    KDMs are held but outside their windows), "missing" (none for it) or "no-keys" (the server
    holds no keys: no ``--key``/``--kdm-dir``); ``message`` says why when it cannot be played."""
    if keys is None:
        return {"state": "no-keys", "message": "this server holds no keys (start it with --key and --kdm-dir)"}
    mine = [k for k in keys.kdms() if k.cpl_id == cpl_id]
    try:
        keys.for_composition(cpl_id)
    except KdmRefused as exc:
        return {"state": "not-valid-now" if mine else "missing", "message": exc.reason}
    ends = [k.not_after for k in mine]
    return {"state": "valid", "not_after": max(ends).isoformat() if ends else None}


class StatusRoutes:
    """What is playing and what could: ``GET /api/v1/status``, ``/library`` (scanned again for
    every request) and ``/events`` (server-sent events, one ``status`` event per change)."""

    def __init__(self, engine: Engine, library: Library, keys=None) -> None:
        self.engine, self.library, self.keys = engine, library, keys

    def routes(self) -> list[Route]:
        return [Route("/api/v1/status", self.get_status, methods=["GET"]),
                Route("/api/v1/library", self.get_library, methods=["GET"]),
                Route("/api/v1/events", self.get_events, methods=["GET"]),
                Route("/api/v1/preview", self.get_preview, methods=["GET"])]

    async def get_status(self, request: Request):
        return JSONResponse(self.engine.snapshot())

    async def get_library(self, request: Request):
        def listing() -> dict:
            doc = self.library.rescan(time.time()).to_json()
            for comp in doc["compositions"]:
                comp["kdm"] = kdm_state(self.keys, comp["id"]) if comp["encrypted"] else None
            return doc
        return JSONResponse(await run_in_threadpool(listing))

    @guarded
    async def get_preview(self, request: Request):
        """The picture on screen as a JPEG (:mod:`.preview`), at most ``?width=`` pixels wide;
        encoded here (a worker thread), at most every 0.1 s, never on the display thread."""
        q = request.query_params
        extra = set(q.keys()) - {"width"}
        if extra:
            raise BadRequest(422, f"unknown query parameter(s): {', '.join(sorted(extra))[:200]}")
        width = None
        if "width" in q:
            if not q["width"].isdigit() or not 16 <= int(q["width"]) <= PREVIEW_MAX_WIDTH:
                raise BadRequest(422, f"width must be an integer in 16..{PREVIEW_MAX_WIDTH}")
            width = int(q["width"])
        store = self.engine.preview
        shot = await run_in_threadpool(store.encode, width)
        if shot is None:        # nothing loaded, or nothing shown yet: a page polling it logs no error
            return Response(status_code=204, headers={"Cache-Control": "no-cache"})
        headers = {"ETag": shot.etag, "Cache-Control": "no-cache", "X-Preview-Serial": str(shot.serial),
                   "X-Preview-Source-Size": f"{shot.source_width}x{shot.source_height}",
                   "X-Preview-Copy-Cost": store.cost.header()}
        if request.headers.get("if-none-match") == shot.etag:
            return Response(status_code=304, headers=headers)
        return Response(shot.data, media_type="image/jpeg", headers=headers)

    @guarded
    async def get_events(self, request: Request):
        q = request.query_params
        extra = set(q.keys()) - {"max_events", "max_seconds"}
        if extra:
            raise BadRequest(422, f"unknown query parameter(s): {', '.join(sorted(extra))[:200]}")
        try:
            limit = int(q["max_events"]) if "max_events" in q else None
            seconds = float(q["max_seconds"]) if "max_seconds" in q else None
        except ValueError:
            raise BadRequest(422, "max_events is an integer, max_seconds a number") from None
        if (limit is not None and not 1 <= limit <= 100_000) or \
                (seconds is not None and not (0 < seconds <= 86400 and math.isfinite(seconds))):
            raise BadRequest(422, "max_events in 1..100000, max_seconds in (0, 86400]")
        return StreamingResponse(self.events(limit, seconds), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def events(self, limit: int | None, seconds: float | None):
        """A ``status`` event per new snapshot version (polled every 50 ms), a keep-alive
        comment after 15 s of quiet; ends after ``limit`` events, ``seconds`` or at shutdown."""
        engine = self.engine
        loop = asyncio.get_running_loop()
        end = None if seconds is None else loop.time() + seconds
        last, sent, quiet = None, 0, loop.time()
        while not engine.quitting and (limit is None or sent < limit) and (end is None or loop.time() < end):
            snap = engine.snapshot()
            if snap.get("version") != last:
                last, sent, quiet = snap.get("version"), sent + 1, loop.time()
                yield f"event: status\nid: {last}\ndata: {json.dumps(snap, separators=(',', ':'))}\n\n"
            elif loop.time() - quiet > 15:
                quiet = loop.time()
                yield ": keep-alive\n\n"
            await asyncio.sleep(0.05)


class TransportRoutes:
    """The commands: ``POST /api/v1/load``, ``play``, ``pause``, ``stop``, ``step``, ``seek``,
    ``audio``, ``loop`` and ``subtitles``, each body checked here and the command run by the engine (:class:`Commands`)."""

    def __init__(self, library: Library, command: Commands) -> None:
        self.library, self.command = library, command

    def routes(self) -> list[Route]:
        return [Route("/api/v1/load", self.post_load, methods=["POST"]),
                Route("/api/v1/play", self.simple("play", compat=True), methods=["POST"]),
                Route("/api/v1/pause", self.simple("pause"), methods=["POST"]),
                Route("/api/v1/stop", self.simple("stop", compat=True), methods=["POST"]),
                Route("/api/v1/step", self.post_step, methods=["POST"]),
                Route("/api/v1/seek", self.post_seek, methods=["POST"]),
                Route("/api/v1/audio", self.post_audio, methods=["POST"]),
                Route("/api/v1/loop", self.post_loop, methods=["POST"]),
                Route("/api/v1/subtitles", self.post_subtitles, methods=["POST"])]

    @guarded
    async def post_load(self, request: Request):
        body = await read_json(request, required=True)
        _only(body, {"cpl", "playlist", "loop", "play"})
        if ("cpl" in body) == ("playlist" in body):
            raise BadRequest(422, "give either cpl or playlist")
        if "cpl" in body:
            ids = [_id(body["cpl"])]
        else:
            ids = body["playlist"]
            if not isinstance(ids, list) or not 1 <= len(ids) <= 100:
                raise BadRequest(422, "playlist must be a list of 1..100 ids")
            ids = [_id(i) for i in ids]
        loop, play = _flag(body, "loop"), _flag(body, "play")
        entries = []
        for i in ids:
            entry = await run_in_threadpool(self.library.find, i)
            if entry is None:
                return error(404, f"no composition {i!r} in the library")
            entries.append(entry)
        return await self.command("load", LOAD_TIMEOUT, entries=entries, loop=loop, play=play)

    def simple(self, name: str, compat: bool = False):
        """The handler of a command without arguments; ``compat``: DCP-o-matic's player API,
        a client that wants a page gets 303 to / instead of the status."""
        @guarded
        async def handler(request: Request):
            body = await read_json(request, required=False)
            _only(body, set())
            response = await self.command(name)
            if compat and wants_html(request) and response.status_code == 200:
                return RedirectResponse("/", status_code=303)
            return response
        handler.__name__ = f"post_{name}"
        return handler

    @guarded
    async def post_step(self, request: Request):
        body = await read_json(request, required=False)
        _only(body, {"frames"})
        return await self.command("step", frames=_int(body.get("frames", 1), "frames", -1_000_000, 1_000_000))

    @guarded
    async def post_seek(self, request: Request):
        body = await read_json(request, required=True)
        _only(body, {"frame", "timecode"})
        if ("frame" in body) == ("timecode" in body):
            raise BadRequest(422, "give either frame or timecode")
        if "frame" in body:
            return await self.command("seek", frame=_int(body["frame"], "frame", 0, 2**62))
        tc = body["timecode"]
        if not isinstance(tc, str) or len(tc) > 32:
            raise BadRequest(422, "timecode must be a string hh:mm:ss:ff")
        return await self.command("seek", timecode=tc)

    @guarded
    async def post_loop(self, request: Request):
        body = await read_json(request, required=True)
        _only(body, {"loop"})
        if not isinstance(body.get("loop"), bool):
            raise BadRequest(422, "loop must be true or false")
        return await self.command("loop", loop=body["loop"])

    @guarded
    async def post_subtitles(self, request: Request):
        body = await read_json(request, required=True)
        _only(body, {"on"})
        if not isinstance(body.get("on"), bool):
            raise BadRequest(422, "on must be true or false")
        return await self.command("subtitles", on=body["on"])

    @guarded
    async def post_audio(self, request: Request):
        body = await read_json(request, required=True)
        _only(body, {"volume", "mute", "routing"})
        args: dict = {}
        if "volume" in body:
            args["volume"] = _number(body["volume"], "volume", 0.0, MAX_GAIN)
        if "mute" in body:
            if not isinstance(body["mute"], bool):
                raise BadRequest(422, "mute must be true or false")
            args["mute"] = body["mute"]
        if "routing" in body:
            args["set_routing"], args["routing"] = True, _routing(body["routing"])
        return await self.command("audio", **args)


class KdmRoutes:
    """``GET /api/v1/kdms``, the public fields of the KDMs held, and ``POST /api/v1/kdms``, one
    more, opened with the private key of ``keys`` (a
    :class:`~cinegpu.media.security.key_ring.KeyRing`; None: no encrypted content)."""

    def __init__(self, keys) -> None:
        self.keys = keys

    def routes(self) -> list[Route]:
        return [Route("/api/v1/kdms", self.get_kdms, methods=["GET"]),
                Route("/api/v1/kdms", self.post_kdm, methods=["POST"])]

    async def get_kdms(self, request: Request):
        keys = self.keys
        return JSONResponse({"kdms": [k.to_json() for k in keys.kdms()] if keys is not None else []})

    @guarded
    async def post_kdm(self, request: Request):
        keys = self.keys
        body = await read_json(request, required=True, limit=MAX_KDM_BODY)
        _only(body, {"kdm"})
        text = body.get("kdm")
        if not isinstance(text, str) or not text.strip():
            raise BadRequest(422, "kdm must be the KDM's XML document, as a string")
        if keys is None or not keys.can_open_kdms:
            return error(409, "this server holds no private key to open KDMs with (start it with --key)")

        def add():
            return keys.add_kdm(parse_kdm(text.encode("utf-8"), "uploaded KDM"))
        try:
            info = await run_in_threadpool(add)
        except MediaError as exc:       # not a KDM, or one that does not hold: says which and why
            return error(422, str(exc))
        return JSONResponse(info.to_json(), status_code=201)


async def not_found(request: Request, exc: HTTPException):
    return error(exc.status_code, exc.detail if isinstance(exc.detail, str) else "error")


async def server_error(request: Request, exc: Exception):
    return error(500, f"{type(exc).__name__}: {exc}")


def create_app(engine: Engine, library: Library, *, token: str | None = None, listen_host: str = "127.0.0.1",
               hosts=(), origins=(), keys=None) -> Starlette:
    """The ASGI application over ``engine`` and ``library``, behind :class:`~.access.Guard` (``token``,
    ``listen_host``, more allowed ``hosts`` and ``origins``).  ``keys``: the server's
    :class:`~cinegpu.media.security.key_ring.KeyRing` (None: no encrypted content), which ``POST /kdms``
    adds KDMs to when it holds the recipient's private key."""
    routes = [*page_routes(openapi(token=token is not None)),
              *StatusRoutes(engine, library, keys).routes(),
              *TransportRoutes(library, Commands(engine)).routes(),
              *KdmRoutes(keys).routes()]
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found, Exception: server_error})
    app.add_middleware(Guard, token=token, listen_host=listen_host, hosts=tuple(hosts), origins=tuple(origins))
    return app
