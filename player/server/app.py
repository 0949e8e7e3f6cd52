"""The HTTP API (Starlette, ASGI): JSON under ``/api/v1``, served by uvicorn on a background thread.

Handlers validate a request, then either read the engine's published status or queue a command
and await its future (asynchronously: the event loop keeps serving others, and the display
thread never waits for HTTP).  Every error is JSON ``{"error": ..., "status": ...}`` with a 4xx
status; 5xx only for a bug (500) or shutdown (503).

Access: with a token every request needs ``Authorization: Bearer <token>`` (compared with
:func:`hmac.compare_digest`).  Without one (loopback only), the Host header must name a loopback
address (no DNS rebinding) and a browser's cross-origin ``Origin`` is refused (no cross-site
form posts to the DCP-o-matic paths).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, StreamingResponse
from starlette.routing import Route

from .engine import CommandError, Engine
from .library import Library
from .openapi import openapi

__all__ = ["create_app", "LOOPBACK_HOSTS"]

MAX_BODY = 64 << 10                 # bytes
COMMAND_TIMEOUT = 10.0              # seconds a command may wait for the display thread
LOAD_TIMEOUT = 180.0                # seconds a load may take (worker processes start)
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}

INDEX = """<!doctype html><html><head><meta charset="utf-8"><title>cinegpu</title></head>
<body><h1>cinegpu playback server</h1><p id="s">...</p>
<form method="post" action="/api/v1/play"><button>Play</button></form>
<form method="post" action="/api/v1/stop"><button>Stop</button></form>
<p><a href="/api/v1/openapi.json">API (OpenAPI)</a></p>
<script>async function t(){try{const r=await fetch('/api/v1/status');const j=await r.json();
document.getElementById('s').textContent=j.state+' '+(j.dcp_name||'')+' '+(j.timecode||'')}catch(e){}}
setInterval(t,500);t();</script></body></html>"""


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_json(request: Request, *, required: bool) -> dict:
    """The JSON object in the body ({} when empty and not ``required``), at most MAX_BODY bytes."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
        raise BadRequest(413 if length.isdigit() else 400, f"body over {MAX_BODY} bytes" if length.isdigit()
                         else "bad Content-Length")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise BadRequest(413, f"body over {MAX_BODY} bytes")
    if not body.strip():
        if required:
            raise BadRequest(400, "a JSON body is required")
        return {}
    ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    lenient = ctype == "application/x-www-form-urlencoded" and body.lstrip()[:1] == b"{"   # curl -d '{...}'
    if ctype in ("application/x-www-form-urlencoded", "multipart/form-data") and not required and not lenient:
        return {}                   # a browser form (DCP-o-matic's page): no arguments
    if ctype != "application/json" and not ctype.endswith("+json") and not lenient:
        raise BadRequest(415, f"body must be application/json, not {ctype}")
    try:
        value = json.loads(bytes(body))
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
    """A browser form post or page (DCP-o-matic's web page): answer 303 to / as DCP-o-matic does."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return "text/html" in request.headers.get("accept", "") or ctype in (
        "application/x-www-form-urlencoded", "multipart/form-data")


class Guard:
    """ASGI middleware: bearer token, or loopback Host and same-origin requests without one."""

    def __init__(self, app, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        problem = self._check(headers)
        if problem is not None:
            status, message = problem
            extra = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            response = JSONResponse({"error": message, "status": status}, status_code=status, headers=extra)
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)

    def _check(self, headers: dict) -> tuple[int, str] | None:
        if self.token is not None:
            auth = headers.get("authorization", "")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
                return 401, "a valid 'Authorization: Bearer <token>' header is required"
            return None
        host = headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        if name.lower() not in LOOPBACK_HOSTS:
            return 403, f"Host {host!r} is not a loopback name"
        origin = headers.get("origin")
        if origin and origin != "null":
            try:
                o = urlsplit(origin)
            except ValueError:
                return 403, "bad Origin header"
            if o.netloc.lower() != host.lower():
                return 403, f"cross-origin request from {origin!r} refused"
        return None


def create_app(engine: Engine, library: Library, *, token: str | None = None) -> Starlette:
    """The ASGI application over ``engine`` and ``library``."""
    document = openapi(token=token is not None)

    async def command(name: str, timeout: float = COMMAND_TIMEOUT, **args) -> JSONResponse:
        future = engine.submit(name, **args)
        try:
            status = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except CommandError as exc:
            return error(exc.status, str(exc))
        except asyncio.TimeoutError:
            future.cancel()         # still queued: the engine skips it
            return error(503, f"{name} not done within {timeout:g} s")
        return JSONResponse(status)

    def guarded(handler):
        async def wrapper(request: Request):
            try:
                return await handler(request)
            except BadRequest as exc:
                return error(exc.status, str(exc))
        wrapper.__name__ = handler.__name__
        return wrapper

    async def index(request: Request):
        return HTMLResponse(INDEX)

    async def get_openapi(request: Request):
        return JSONResponse(document)

    async def get_status(request: Request):
        return JSONResponse(engine.snapshot())

    async def get_library(request: Request):
        import time  # noqa: PLC0415
        scan = await run_in_threadpool(library.rescan, time.time())
        return JSONResponse(scan.to_json())

    @guarded
    async def post_load(request: Request):
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
            entry = await run_in_threadpool(library.find, i)
            if entry is None:
                return error(404, f"no composition {i!r} in the library")
            entries.append(entry)
        return await command("load", LOAD_TIMEOUT, entries=entries, loop=loop, play=play)

    def simple(name: str, compat: bool = False):
        @guarded
        async def handler(request: Request):
            body = await read_json(request, required=False)
            _only(body, set())
            response = await command(name)
            if compat and wants_html(request) and response.status_code == 200:
                return RedirectResponse("/", status_code=303)
            return response
        handler.__name__ = f"post_{name}"
        return handler

    @guarded
    async def post_step(request: Request):
        body = await read_json(request, required=False)
        _only(body, {"frames"})
        return await command("step", frames=_int(body.get("frames", 1), "frames", -1_000_000, 1_000_000))

    @guarded
    async def post_seek(request: Request):
        body = await read_json(request, required=True)
        _only(body, {"frame", "timecode"})
        if ("frame" in body) == ("timecode" in body):
            raise BadRequest(422, "give either frame or timecode")
        if "frame" in body:
            return await command("seek", frame=_int(body["frame"], "frame", 0, 2**62))
        tc = body["timecode"]
        if not isinstance(tc, str) or len(tc) > 32:
            raise BadRequest(422, "timecode must be a string hh:mm:ss:ff")
        return await command("seek", timecode=tc)

    @guarded
    async def get_events(request: Request):
        q = request.query_params
        try:
            limit = int(q["max_events"]) if "max_events" in q else None
            seconds = float(q["max_seconds"]) if "max_seconds" in q else None
        except ValueError:
            raise BadRequest(422, "max_events is an integer, max_seconds a number") from None
        if (limit is not None and not 1 <= limit <= 100_000) or \
                (seconds is not None and not (0 < seconds <= 86400 and math.isfinite(seconds))):
            raise BadRequest(422, "max_events in 1..100000, max_seconds in (0, 86400]")
        return StreamingResponse(events(limit, seconds), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def events(limit: int | None, seconds: float | None):
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

    async def not_found(request: Request, exc: HTTPException):
        return error(exc.status_code, exc.detail if isinstance(exc.detail, str) else "error")

    async def server_error(request: Request, exc: Exception):
        return error(500, f"{type(exc).__name__}: {exc}")

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/api/v1/openapi.json", get_openapi, methods=["GET"]),
        Route("/api/v1/status", get_status, methods=["GET"]),
        Route("/api/v1/library", get_library, methods=["GET"]),
        Route("/api/v1/events", get_events, methods=["GET"]),
        Route("/api/v1/load", post_load, methods=["POST"]),
        Route("/api/v1/play", simple("play", compat=True), methods=["POST"]),
        Route("/api/v1/pause", simple("pause"), methods=["POST"]),
        Route("/api/v1/stop", simple("stop", compat=True), methods=["POST"]),
        Route("/api/v1/step", post_step, methods=["POST"]),
        Route("/api/v1/seek", post_seek, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: not_found, Exception: server_error})
    app.add_middleware(Guard, token=token)
    return app
