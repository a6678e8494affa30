"""The connection guard: what a client may hold before the application sees a request.

uvicorn's httptools protocol parses HTTP (llhttp refuses ``Transfer-Encoding`` together
with ``Content-Length``, duplicate lengths and unknown codings: 400) and hands requests
to the ASGI app; this subclass adds what a service open to agents needs:

- **whole-request header deadline**: from the connection's start (or the end of the
  previous response) the request line and headers must be complete within
  ``Limits.header_timeout`` seconds, whatever the pace of the bytes (a client sending a
  byte a second is cut off, not kept alive by each byte);
- **header size**: the request line and headers together are at most
  ``Limits.max_header_bytes`` (431), counted as they arrive (an endless header is cut
  off) and measured again once they are complete (one 70 KB header sent at once, or
  10,000 small ones, are refused too);
- **connection slots**: all clients hold at most ``max_connections``. Connections that
  carry pushes (the ingest lane: ``/v1/...``, told from the request line) hold at most
  ``per_client`` per client address and ``max_connections - protected_connections`` in
  all, so ``/metrics`` and the page keep slots of their own: every local agent, hook
  and Prometheus share 127.0.0.1, and no number of slow pushes from it can starve a
  scrape. When every slot is held, a new connection takes the slot of the connection
  that has waited longest for its request's headers (a slow or idle client), else of
  the one whose client has read nothing of its answer for longest, so slow clients
  cannot hold the server either;
- **unread answers**: a client that reads nothing of an answer (the server's writing
  paused on it) is cut off after ``Limits.send_timeout`` seconds, and a connection cut
  off or timed out with bytes still unsent is aborted, those bytes dropped. Closed
  gently, it kept its socket and its unsent answer (a ``/metrics`` of 8 MB) for as long
  as its client chose: 64 clients that read nothing held 280 MB of the server's memory
  after their slots were taken (102ce86). Bodies are handed over a chunk at a time
  (``asgi.SEND_CHUNK``), so such a client holds a chunk, not the whole answer;
- every refusal is counted by reason in ``Guard.refused``
  (``streameval_http_refused_total``) and never logged per connection; every answer
  written here carries ``nosniff`` and a Content-Security-Policy, as the app's do.

The body's deadline and the in-flight byte budget are the application's (``asgi``):
only it knows which lane a request is on.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """The server's limits (docs/ingest.md "Limits and answers")."""

    #: seconds for a request's line and headers, from connection or previous response
    header_timeout: float = 5.0
    #: bytes of request line and headers
    max_header_bytes: int = 64 << 10
    #: connections carrying pushes (the ingest lane) one client address may hold at once
    per_client: int = 256
    #: connections in all (file descriptors are the bound)
    max_connections: int = 4096
    #: of those, slots pushes never take: ``/metrics`` and the page always have them
    protected_connections: int = 256
    #: seconds a client may leave an answer unread (the server's writing paused on it)
    send_timeout: float = 30.0
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

    def __init__(self, limits: Limits, is_ingest: Callable[[str], bool] = lambda _path: False):
        self.limits = limits
        #: whether a request's path is on the ingest lane (the app's routes say)
        self.is_ingest = is_ingest
        self.connections = 0
        #: connections carrying pushes: per client address, and in all
        self.by_client: Counter = Counter()
        self.ingest = 0
        #: connections waiting for a request's headers, the longest waiting first
        self.waiting: dict[GuardedProtocol, None] = {}
        #: connections whose client reads none of its answer, the longest stalled first
        self.stalled: dict[GuardedProtocol, None] = {}
        #: reason -> refusals (header_timeout, header_too_large, per_client_limit,
        #: connection_limit, send_timeout, bad_framing; the app adds its own)
        self.refused: Counter = Counter()

    def admit(self) -> bool:
        """Whether a new connection may open: a slot is free, or the connection that
        has waited longest for its headers gives its slot up, else the one whose client
        has read nothing of its answer for longest."""
        if self.connections >= self.limits.max_connections:
            if self.waiting:
                next(iter(self.waiting)).evict()
            elif self.stalled:
                next(iter(self.stalled)).evict()
            else:
                return False
        self.connections += 1
        return True

    def enter_ingest(self, client: str) -> str | None:
        """None when a connection of ``client`` may carry a push, else the refusal."""
        if self.ingest >= self.limits.max_connections - self.limits.protected_connections:
            return "connection_limit"
        if self.by_client[client] >= self.limits.per_client:
            return "per_client_limit"
        self.ingest += 1
        self.by_client[client] += 1
        return None

    def leave_ingest(self, client: str) -> None:
        self.ingest -= 1
        self.by_client[client] -= 1
        if self.by_client[client] <= 0:
            del self.by_client[client]


#: headers every answer carries unless its route set its own (the page sets a policy
#: that lets it load its scripts): error answers, ``/metrics``, ``/v1`` included
BASELINE_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
)


def _status(code: int, reason: str, text: str, *extra: str) -> bytes:
    """A whole answer written by the guard (``connection: close``), with the headers
    every answer carries (the app's answers take them from here too)."""
    body = text.encode()
    head = [f"HTTP/1.1 {code} {reason}", "content-type: text/plain", *extra,
            *(f"{k.decode()}: {v.decode()}" for k, v in BASELINE_HEADERS),
            "connection: close", f"content-length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_REFUSED = _status(503, "Service Unavailable", "too many connections", "retry-after: 1")


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the guard above (``guarded`` binds a Guard)."""

    guard: Guard

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        peer = transport.get_extra_info("peername")
        self._peer = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        self._stall_timer: asyncio.TimerHandle | None = None
        self._admitted = self.guard.admit()
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._in_headers = True
        self._heard = False
        self._served = 0
        self._pushing = False     # this connection holds an ingest slot
        self._lane_known = False  # the current request's path was looked at
        self._opened = False      # uvicorn's protocol was told of the connection
        if not self._admitted:
            self.guard.refused["connection_limit"] += 1
            transport.write(_REFUSED)
            transport.close()
            self.transport = transport
            self.parser = None  # type: ignore[assignment]
            return
        super().connection_made(transport)
        self._opened = True
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._admitted:
            self._give_up_slot()
        if self._opened:
            self._opened = False
            super().connection_lost(exc)

    def _give_up_slot(self) -> None:
        self._admitted = False
        self.guard.connections -= 1
        if self._pushing:
            self._pushing = False
            self.guard.leave_ingest(self._peer)
        self._disarm()
        self._unstall()

    def evict(self) -> None:
        """Give this connection's slot to a new one: it has waited longest for its
        request's headers (a request begun is answered 503; an idle one closed), or its
        client has read nothing of its answer for longest (cut off)."""
        if self.transport.get_write_buffer_size():
            self.guard.refused["connection_limit"] += 1
        elif self._heard or not self._served:
            self.guard.refused["connection_limit"] += 1
            self.transport.write(_REFUSED)
        self._give_up_slot()
        self._close()

    def _close(self) -> None:
        """Closed; aborted when bytes are left unsent: closed gently, a connection whose
        client reads nothing keeps its socket and those bytes until the client reads."""
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()

    # ------------------------------------------------------------------ answers unread
    def pause_writing(self) -> None:
        super().pause_writing()
        if self._admitted and self._stall_timer is None:
            self.guard.stalled[self] = None
            self._stall_timer = self.loop.call_later(self.guard.limits.send_timeout,
                                                     self._send_timeout)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

    def _unstall(self) -> None:
        self.guard.stalled.pop(self, None)
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _send_timeout(self) -> None:
        self._stall_timer = None
        self.guard.refused["send_timeout"] += 1
        self.transport.abort()   # its slot is given up when the loss is told

    # ------------------------------------------------------------------ headers
    def _arm(self) -> None:
        self._disarm()
        self._in_headers = True
        self._header_bytes = 0
        self._heard = False
        self.guard.waiting[self] = None
        self._header_timer = self.loop.call_later(self.guard.limits.header_timeout,
                                                  self._header_timeout)

    def _disarm(self) -> None:
        self.guard.waiting.pop(self, None)
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
        self._close()   # else an idle keep-alive connection: closed quietly

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

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._lane_known = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self._lane_known:   # the request line is whole once a header is
            self._take_lane()
        super().on_header(name, value)

    def _take_lane(self) -> None:
        """The request's path is known: a push takes an ingest slot (503 past the
        limits), any other request gives one back."""
        self._lane_known = True
        try:
            raw = httptools.parse_url(self.url).path.decode("ascii")
        except (httptools.HttpParserInvalidURLError, UnicodeDecodeError):
            return   # uvicorn refuses it too
        pushing = self.guard.is_ingest(urllib.parse.unquote(raw) if "%" in raw else raw)
        if pushing and not self._pushing:
            refusal = self.guard.enter_ingest(self._peer)
            if refusal is not None:
                self.guard.refused[refusal] += 1
                self.transport.write(_REFUSED)
                self.transport.close()
                return
            self._pushing = True
        elif not pushing and self._pushing:
            self._pushing = False
            self.guard.leave_ingest(self._peer)

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._disarm()
        if not self._lane_known:
            self._take_lane()
        # the whole block as the client sent it: many small headers count too
        size = len(self.url) + 16 + sum(len(k) + len(v) + 4 for k, v in self.headers)
        if size > self.guard.limits.max_header_bytes:
            self._too_large()
        if self.transport.is_closing():
            return   # refused above: no request for the app
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self.transport.is_closing():
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self.transport.is_closing():
            super().on_message_complete()

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
        self.transport.write(_status(400, "Bad Request", msg))
        self.transport.close()


def guarded(guard: Guard) -> type[GuardedProtocol]:
    """A protocol class bound to ``guard`` (uvicorn instantiates the class it is given)."""
    return type("Guarded", (GuardedProtocol,), {"guard": guard})
