"""The HTTP/1.1 connection protocol of ``cinegpu serve``: uvicorn's h11 protocol with bounds.

uvicorn closes an idle keep-alive connection after ``timeout_keep_alive`` seconds, but a
connection that never completes a request head (slowloris: a header line every few seconds)
stays open for ever, holding a file descriptor.  This protocol adds, per connection:

- a head deadline: a complete request head must arrive within ``head_timeout`` seconds of the
  connection's start or of the previous response's end, else the connection is closed (with
  ``408 Request Timeout`` when part of a head had arrived);
- a cap of ``max_connections`` open connections: one more evicts the connection that has waited
  longest for a head, or is refused when every connection is inside a request (an event stream);
- ``TCP_NODELAY``: a response goes out in two writes (head, body), which Nagle's algorithm with
  the client's delayed ACK would hold back about 40 ms on a keep-alive connection.  asyncio sets
  it only on sockets made with ``proto=IPPROTO_TCP``.

A request head is at most ``h11_max_incomplete_event_size`` bytes (uvicorn's config; h11 answers
400 beyond it).  :func:`bounded_protocol` makes the class for given limits.
"""

from __future__ import annotations

import socket
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["bounded_protocol"]

TIMEOUT_408 = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def bounded_protocol(*, head_timeout: float = 5.0, max_connections: int = 256) -> type[H11Protocol]:
    """An :class:`H11Protocol` subclass with a ``head_timeout`` (seconds) and ``max_connections``."""

    class BoundedH11Protocol(_Bounded):
        HEAD_TIMEOUT = float(head_timeout)
        MAX_CONNECTIONS = int(max_connections)

    return BoundedH11Protocol


class _Bounded(H11Protocol):
    HEAD_TIMEOUT = 5.0                  # seconds
    MAX_CONNECTIONS = 256

    _head_timer = None
    waiting_since: float | None = None  # time.monotonic() since a head is awaited; None inside a request

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self._await_head()
        if len(self.connections) > self.MAX_CONNECTIONS:
            self._evict()

    def _evict(self) -> None:
        """Close the connection waiting longest for a head (this one if none other waits)."""
        waiting = [c for c in self.connections if c is not self and c.waiting_since is not None
                   and isinstance(c, _Bounded) and not c.transport.is_closing()]
        victim = min(waiting, key=lambda c: c.waiting_since) if waiting else self
        victim._close(partial=False)

    def _await_head(self) -> None:
        self._cancel_head_timer()
        self.waiting_since = time.monotonic()
        self._head_timer = self.loop.call_later(self.HEAD_TIMEOUT, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.waiting_since is not None and not self.transport.is_closing():
            self._close(partial=bool(self.conn.trailing_data[0]))

    def _close(self, *, partial: bool) -> None:
        self._cancel_head_timer()
        self.waiting_since = None
        if partial:
            self.transport.write(TIMEOUT_408)
        try:
            self.conn.send(h11.ConnectionClosed())
        except h11.LocalProtocolError:
            pass
        self.transport.close()

    def handle_events(self) -> None:
        before = self.cycle
        super().handle_events()
        if self.cycle is not before and self.waiting_since is not None:    # a complete head arrived
            self._cancel_head_timer()
            self.waiting_since = None

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._await_head()
        super().on_response_complete()          # may start a pipelined request (handle_events)

    def connection_lost(self, exc) -> None:
        self._cancel_head_timer()
        self.waiting_since = None
        super().connection_lost(exc)
