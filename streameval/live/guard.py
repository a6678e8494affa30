"""The connection guard: what a client may hold before the application sees a request.

uvicorn's httptools protocol parses HTTP (llhttp refuses ``Transfer-Encoding`` together
with ``Content-Length``, duplicate lengths and unknown codings: 400) and hands requests
to the ASGI app; this subclass adds what a service open to agents needs:

- **whole-request header deadline**: from the connection's start (or the end of the
  previous response) the request line and headers must be complete within
  ``Limits.header_timeout`` seconds, whatever the pace of the bytes (a client sending a
  byte a second is cut off, not kept alive by each byte); header bytes are capped at
  ``Limits.max_header_bytes`` (431);
- **connections per client address** (``per_client``) and in all (``max_connections``):
  past either, the connection is answered 503 and closed at once;
- every refusal is counted by reason in ``Guard.refused``
  (``streameval_http_refused_total``) and never logged per connection.

The body's deadline and the in-flight byte budget are the application's (``asgi``):
only it knows which lane a request is on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """The server's limits (docs/ingest.md "Limits and answers")."""

    #: seconds for a request's line and headers, from connection or previous response
    header_timeout: float = 5.0
    #: bytes of request line and headers
    max_header_bytes: int = 64 << 10
    #: connections one client address may hold at once
    per_client: int = 256
    #: connections in all (file descriptors are the bound)
    max_connections: int = 4096
    #: bytes of one request body
    max_body: int = 8 << 20
    #: body bytes held by requests in flight, in all; past it: 503 + Retry-After
    inflight_bytes: int = 64 << 20
    #: a body must arrive within ``body_grace`` + its length at ``body_rate`` bytes/s
    body_grace: float = 5.0
    body_rate: float = 1 << 20
    #: threads storing pushed requests (their fsyncs overlap)
    ingest_workers: int = 8

    def body_deadline(self, length: int) -> float:
        return self.body_grace + length / self.body_rate


class Guard:
    """Per-server connection accounting, shared by every connection's protocol (all on
    the server's one event loop thread: no lock)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.by_client: Counter = Counter()
        self.connections = 0
        #: reason -> refusals (header_timeout, header_too_large, per_client_limit,
        #: connection_limit, bad_framing; the app adds its own)
        self.refused: Counter = Counter()

    def admit(self, client: str) -> str | None:
        """None when a connection from ``client`` may open, else the refusal reason."""
        if self.connections >= self.limits.max_connections:
            return "connection_limit"
        if self.by_client[client] >= self.limits.per_client:
            return "per_client_limit"
        self.connections += 1
        self.by_client[client] += 1
        return None

    def leave(self, client: str) -> None:
        self.connections -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
            b"retry-after: 1\r\nconnection: close\r\ncontent-length: 20\r\n\r\n"
            b"too many connections")


def _status(code: int, reason: str, text: str) -> bytes:
    body = text.encode()
    return (f"HTTP/1.1 {code} {reason}\r\ncontent-type: text/plain\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the guard above (``guarded`` binds a Guard)."""

    guard: Guard

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        peer = transport.get_extra_info("peername")
        self._peer = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        refusal = self.guard.admit(self._peer)
        self._admitted = refusal is None
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._in_headers = True
        self._heard = False
        self._served = 0
        if refusal is not None:
            self.guard.refused[refusal] += 1
            transport.write(_REFUSED)
            transport.close()
            self.transport = transport
            self.parser = None  # type: ignore[assignment]
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._admitted:
            return
        self._admitted = False
        self.guard.leave(self._peer)
        self._disarm()
        super().connection_lost(exc)

    # ------------------------------------------------------------------ headers
    def _arm(self) -> None:
        self._disarm()
        self._in_headers = True
        self._header_bytes = 0
        self._heard = False
        self._header_timer = self.loop.call_later(self.guard.limits.header_timeout,
                                                  self._header_timeout)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport is None or self.transport.is_closing():
            return
        if self._heard or not self._served:   # a request not finished in time: a slow client
            self.guard.refused["header_timeout"] += 1
            self.transport.write(_status(408, "Request Timeout", "headers not complete in time"))
        self.transport.close()   # else an idle keep-alive connection: closed quietly

    def data_received(self, data: bytes) -> None:
        if not self._admitted or self.parser is None:
            return
        if self._in_headers:
            self._heard = True
            self._header_bytes += len(data)
        super().data_received(data)
        # httptools buffers a header until its end: an endless one is cut off here
        if self._in_headers and self._header_bytes > self.guard.limits.max_header_bytes:
            self._too_large()

    def _too_large(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.guard.refused["header_too_large"] += 1
            self.transport.write(_status(431, "Request Header Fields Too Large",
                                         "request line and headers over the limit"))
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        self._served += 1
        super().on_response_complete()
        self._unset_keepalive_if_required()   # our own timer bounds the idle time
        if self.transport is not None and not self.transport.is_closing() and not self.pipeline:
            self._arm()

    def send_400_response(self, msg: str) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        self.guard.refused["bad_framing"] += 1
        super().send_400_response(msg)


def guarded(guard: Guard) -> type[GuardedProtocol]:
    """A protocol class bound to ``guard`` (uvicorn instantiates the class it is given)."""
    return type("Guarded", (GuardedProtocol,), {"guard": guard})
