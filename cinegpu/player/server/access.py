"""Who may drive the server: the bearer token, the Host and Origin checks, JSON-only requests.

A web page the operator opens in a browser can send requests to the server (its address is
known: 127.0.0.1:8080).  The defences, all in :class:`Guard` (ASGI middleware, before routing):

- a bearer token on every request (``Authorization: Bearer <token>``; RFC 6750 2.1) except the
  static page at ``/`` and its script and style (:data:`OPEN_PATHS`).  A browser sends that header cross-site only after a CORS preflight,
  which this server never grants.  The token is generated at start (``secrets.token_urlsafe``)
  unless given by ``$CINEGPU_SERVE_TOKEN`` or a file of mode 0600 (:func:`read_token_file`);
  ``--no-token`` (loopback only) goes without.  It is compared as bytes: the UTF-8 of the token
  against the header's raw bytes, in constant time.
- ``Host`` must name the listening address (or, on loopback, a loopback name; on a wildcard
  address, any IP literal) or a name given with ``--allow-host``: a DNS-rebinding page sends its
  own name (RFC 9110 7.2).
- ``Origin``, when present, must be this server's own origin (``http://`` + the Host) or one given
  with ``--allow-origin``; ``Origin: null`` (sandboxed frames, file pages) is refused.
- every request other than GET/HEAD, and every request with a body, must be
  ``Content-Type: application/json`` (parameters allowed, a charset only utf-8): form, text and
  multipart bodies are what a page sends without a preflight (Fetch standard, CORS-safelisted
  request headers).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import stat
from pathlib import Path

from starlette.responses import JSONResponse

__all__ = ["Guard", "TokenError", "generate_token", "read_token_file", "check_token", "LOOPBACK_NAMES"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD"})
#: GET without a token: the control page and its script and style (no data, no action)
OPEN_PATHS = frozenset({"/", "/static/app.js", "/static/style.css"})
MAX_TOKEN_FILE = 4096                  # bytes


class TokenError(ValueError):
    """A token source that cannot be used (the message says why and what to do)."""


def generate_token() -> str:
    """A fresh random token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def check_token(token: str, where: str) -> str:
    """``token`` if it can be sent in a header: not empty, no spaces or control characters."""
    if not token:
        raise TokenError(f"the token from {where} is empty")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in token):
        raise TokenError(f"the token from {where} has a space or control character")
    return token


def read_token_file(path) -> str:
    """The token in file ``path`` (one line; a final newline is dropped).  The file must be a
    regular file that neither group nor others may read or write (mode 0600 or stricter)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)     # a FIFO must not block
    except OSError as exc:
        raise TokenError(f"cannot open token file {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TokenError(f"token file {path} is not a regular file")
        if st.st_mode & 0o077:
            raise TokenError(f"token file {path} has mode {stat.S_IMODE(st.st_mode):04o}: group or others may "
                             f"read it; make it private with: chmod 600 {path}")
        data = os.read(fd, MAX_TOKEN_FILE + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE:
        raise TokenError(f"token file {path} is over {MAX_TOKEN_FILE} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TokenError(f"token file {path} is not UTF-8 text") from None
    return check_token(text.rstrip("\r\n"), f"file {path}")


def _split_host(value: str) -> tuple[str, str | None]:
    """(name, port) of a Host header or an authority; name lower-case, IPv6 without brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else None
    name, sep, port = value.rpartition(":")
    return (name, port) if sep else (value, None)


def _ip(name: str):
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class Guard:
    """ASGI middleware: the checks of the module docstring, then the application.

    ``listen_host``: the address the server is bound to; ``token``: None for none;
    ``hosts``/``origins``: more Host names and Origins to accept.
    """

    def __init__(self, app, *, token: str | None, listen_host: str = "127.0.0.1", hosts=(), origins=()) -> None:
        self.app = app
        self.token = None if token is None else token.encode("utf-8")
        self.listen = _ip(listen_host.strip("[]")) if listen_host != "localhost" else ipaddress.ip_address("127.0.0.1")
        named = () if self.listen is not None else (listen_host,)      # bound to a name: that name
        self.hosts = frozenset(h.lower().rstrip(".") for h in (*hosts, *named))
        self.origins = frozenset(o.lower().rstrip("/") for o in origins)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        problem = self.check(scope)
        if problem is not None:
            status, message = problem
            extra = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            response = JSONResponse({"error": message, "status": status}, status_code=status, headers=extra)
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)

    def check(self, scope) -> tuple[int, str] | None:
        """(status, reason) of the first check that fails, or None."""
        headers: dict[bytes, list[bytes]] = {}
        for k, v in scope.get("headers", []):
            headers.setdefault(k.lower(), []).append(v)
        hosts = headers.get(b"host", [])
        if len(hosts) != 1:
            return 400, "exactly one Host header is required"
        host = hosts[0].decode("latin-1")
        if not self.host_allowed(host):
            return 403, f"Host {host[:100]!r} is not this server's address (see --allow-host)"
        for origin in headers.get(b"origin", []):
            if not self.origin_allowed(origin.decode("latin-1"), host, scope.get("scheme", "http")):
                return 403, f"requests from origin {origin.decode('latin-1')[:100]!r} are refused (see --allow-origin)"
        method = scope.get("method", "GET")
        if self.token is not None and not (method in SAFE_METHODS and scope.get("path") in OPEN_PATHS):
            auth = headers.get(b"authorization", [])
            if len(auth) != 1 or not self._token_matches(auth[0]):
                return 401, "a valid 'Authorization: Bearer <token>' header is required"
        has_body = any(v.strip() not in (b"", b"0") for v in headers.get(b"content-length", [])) \
            or b"transfer-encoding" in headers
        if method not in SAFE_METHODS or has_body:
            ctype = headers.get(b"content-type", [])
            problem = json_content_type(ctype[0].decode("latin-1") if len(ctype) == 1 else None)
            if problem is not None:
                return 415, problem
        return None

    def _token_matches(self, value: bytes) -> bool:
        scheme, _, given = value.strip(b" \t").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(b" \t"), self.token)

    def host_allowed(self, host: str) -> bool:
        name, port = _split_host(host)
        name = name.rstrip(".")
        if not name or (port is not None and not port.isdigit()):
            return False
        if name in self.hosts:
            return True
        ip = _ip(name)
        if self.listen is None:                 # bound to a name: only the names given
            return False
        if self.listen.is_unspecified:          # 0.0.0.0 / ::: any address of this machine
            return ip is not None or name == "localhost"
        if self.listen.is_loopback:
            return name == "localhost" or (ip is not None and ip.is_loopback)
        return ip == self.listen

    def origin_allowed(self, origin: str, host: str, scheme: str) -> bool:
        origin = origin.strip().lower().rstrip("/")
        if origin in self.origins:
            return True
        o_scheme, sep, o_authority = origin.partition("://")
        if not sep or o_scheme != scheme or "/" in o_authority or "@" in o_authority:
            return False                        # includes "null"
        default = "443" if scheme == "https" else "80"
        o_name, o_port = _split_host(o_authority)
        h_name, h_port = _split_host(host)
        return o_name == h_name.rstrip(".") and (o_port or default) == (h_port or default)


def json_content_type(value: str | None) -> str | None:
    """None if ``value`` is ``application/json`` (a charset only utf-8); else why not."""
    if value is None:
        return "Content-Type: application/json is required"
    media, *params = value.split(";")
    media = media.strip().lower()
    if media != "application/json":
        return f"Content-Type must be application/json, not {media[:100]!r}"
    for p in params:
        key, _, val = p.partition("=")
        if key.strip().lower() == "charset" and val.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return f"charset must be utf-8, not {val.strip()[:40]!r}"
    return None
