"""The watcher's one ASGI application, and its two lanes.

Every route is on a lane:

- the **protected lane** (``/metrics``, and the page when it comes): its blocking work
  runs on its own small thread pool, and none of the ingest limits apply to it, so no
  number of pushing clients can queue a scrape behind them;
- the **ingest lane** (``/v1/...``): a request's body is admitted only while the bytes
  of every body in flight stay within ``Limits.inflight_bytes`` (else 503 with
  ``Retry-After``), must arrive within its deadline (else 408), and is stored on the
  ingest thread pool; waiting for the watcher costs no thread (``scorewait``).

Every request is first held to the server's ``Host`` rule (``hosts``: on a loopback
bind, loopback names only), and every answer carries ``nosniff`` and a
Content-Security-Policy (``guard.BASELINE_HEADERS``) unless its route set its own.

Handlers are ``async def handler(request) -> Response``. A later page mounts its
routes with ``App.route(path, handler, lane=PROTECTED, prefix=True)``; a
``StreamResponse`` serves server-sent events without holding a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qs

import orjson

from streameval.live.guard import BASELINE_HEADERS, Guard, Limits
from streameval.live.hosts import HostRule
from streameval.live.lanes import Lane

log = logging.getLogger(__name__)

PROTECTED = "protected"
INGEST = "ingest"
#: bytes of an answer's body handed to the server at a time: it waits until the client
#: has read the previous ones (below the transport's high-water mark) before the next,
#: so a client that reads nothing holds a chunk, not a whole 8 MB scrape (``guard``)
SEND_CHUNK = 256 << 10
T = TypeVar("T")


class Refused(Exception):
    """A request answered with an error: ``status``, a message, the counter's reason
    and extra headers (``Retry-After``)."""

    def __init__(self, status: int, message: str, reason: str = "refused",
                 headers: list[tuple[bytes, bytes]] | None = None, **extra: Any):
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.headers = headers or []
        #: more fields of the JSON answer (the offset a client should send from)
        self.extra = extra


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)

    @classmethod
    def json(cls, value: Any, status: int = 200, headers=None) -> Response:
        return cls(status, orjson.dumps(value), "application/json", headers or [])


@dataclass
class StreamResponse:
    """A response whose body is written as ``chunks`` yields it (server-sent events)."""

    chunks: AsyncIterator[bytes]
    status: int = 200
    content_type: str = "text/event-stream"
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)


class Request:
    """One request's scope, its client's budget share and its body, read once."""

    def __init__(self, app: App, scope: dict, receive: Callable[[], Awaitable[dict]]):
        self.app = app
        self.scope = scope
        self._receive = receive
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.client: str = str((scope.get("client") or ("?",))[0])
        self.headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            self.headers[name] = value   # a repeated header: the last one
        self._params: dict[str, list[str]] | None = None

    def _parsed(self) -> dict[str, list[str]]:
        if self._params is None:
            self._params = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        return self._params

    @property
    def query(self) -> dict[str, str]:
        """Each query parameter's last value."""
        return {k: v[-1] for k, v in self._parsed().items()}

    def query_all(self, name: str) -> list[str]:
        """Every value of a query parameter given more than once (``name[]``)."""
        return self._parsed().get(name, [])

    def header(self, name: str) -> str:
        return self.headers.get(name.encode(), b"").decode("latin-1")

    def content_length(self, limit: int) -> int:
        """The declared body length: 411 without one, 400 when it is no number, 413
        over ``limit``. A chunked body has none (the budget needs it up front)."""
        raw = self.headers.get(b"content-length")
        if raw is None:
            raise Refused(411, "Content-Length required", "no_length")
        try:
            n = int(raw)
        except ValueError:
            raise Refused(400, "Content-Length is not a number", "bad_length") from None
        if n < 0 or n > limit:
            raise Refused(413, f"body of {n} bytes; the limit is {limit}", "too_large")
        return n

    async def body(self, length: int) -> bytearray:
        """The body, admitted into the in-flight budget (503 + Retry-After when it is
        full) and read within its deadline (408). The bytes stay reserved until the
        request is answered (``App`` releases them)."""
        self.app.budget.reserve(self, length)
        buf = bytearray(length)
        got = 0
        loop = asyncio.get_running_loop()
        seconds = self.app.limits.body_deadline(length)
        task = asyncio.current_task()
        late = [False]

        def too_late() -> None:
            late[0] = True
            if task is not None:
                task.cancel()

        timer = loop.call_later(seconds, too_late)   # one timer for the whole body
        more = True
        try:
            while more:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    raise Refused(400, "client went away mid-body", "disconnected")
                chunk = message.get("body", b"")
                if got + len(chunk) > length:
                    raise Refused(400, "body longer than its Content-Length", "bad_length")
                buf[got:got + len(chunk)] = chunk
                got += len(chunk)
                more = message.get("more_body", False)
        except asyncio.CancelledError:
            if not late[0]:
                raise
            raise Refused(408, f"body not received within {seconds:.0f} s", "body_timeout") from None
        finally:
            timer.cancel()
        if got != length:
            raise Refused(400, "body shorter than its Content-Length", "bad_length")
        return buf


def read_only(request: Request) -> None:
    """Refused unless a GET or HEAD without a body (the page: read-only), before a byte of
    a body is read. A body read on the protected lane, where no per-client limit applies,
    holds a connection slot as long as its sender dribbles it: one client holding every
    slot so starved ``/metrics`` (the front read such bodies for the page, 102ce86). A
    request that declared a body is answered and closed, its body unread."""
    body = request.headers.get(b"content-length", b"0").strip() not in (b"0", b"") \
        or b"transfer-encoding" in request.headers
    if request.method not in ("GET", "HEAD"):
        raise Refused(405, f"the page is read-only: use GET, not {request.method[:20]}", "method",
                      [(b"allow", b"GET, HEAD"), *([(b"connection", b"close")] if body else [])])
    if body:
        raise Refused(413, "the page takes no request body", "too_large")   # closed (413)


class Budget:
    """Body bytes held by requests in flight: in all, and per client address (half of
    it: one client cannot hold the whole budget with slow bodies). Used from the event
    loop thread only."""

    def __init__(self, total: int):
        self.total = total
        self.held = 0
        self.by_client: Counter = Counter()
        self._held_by: dict[int, tuple[str, int]] = {}

    def reserve(self, request: Request, n: int) -> None:
        """Hold ``n`` bytes for ``request`` (once: a request reserved already holds them)."""
        if id(request) in self._held_by:
            return
        share = max(self.total // 2, 1)
        if self.held + n > self.total or self.by_client[request.client] + n > share:
            raise Refused(503, f"{self.held} body bytes in flight (limit {self.total}); "
                               "retry shortly", "busy", [(b"retry-after", b"1")])
        self.held += n
        self.by_client[request.client] += n
        self._held_by[id(request)] = (request.client, n)

    def release(self, request: Request) -> None:
        held = self._held_by.pop(id(request), None)
        if held is None:
            return
        client, n = held
        self.held -= n
        self.by_client[client] -= n
        if self.by_client[client] <= 0:
            del self.by_client[client]


Handler = Callable[[Request], Awaitable["Response | StreamResponse"]]


class App:
    """The ASGI application: routes on lanes, limits, pools, counters."""

    def __init__(self, limits: Limits | None = None, refused: Counter | None = None):
        self.limits = limits or Limits()
        self.guard = Guard(self.limits, is_ingest=lambda path: self.lane_of(path) == INGEST)
        if refused is not None:
            self.guard.refused = refused
        self.budget = Budget(self.limits.inflight_bytes)
        #: which Host headers are answered (the server sets it from the address it bound)
        self.hosts = HostRule(loopback_only=False)
        self._exact: dict[str, tuple[str, Handler]] = {}
        self._prefixes: list[tuple[str, str, Handler]] = []
        self._pools: dict[str, Lane] = {}

    @property
    def refused(self) -> Counter:
        """reason -> requests and connections refused (``streameval_http_refused_total``)."""
        return self.guard.refused

    def route(self, path: str, handler: Handler, lane: str = PROTECTED, prefix: bool = False) -> None:
        """Serve ``path`` (every path under it with ``prefix``) with ``handler`` on ``lane``."""
        if prefix:
            self._prefixes.append((path, lane, handler))
            self._prefixes.sort(key=lambda item: -len(item[0]))
        else:
            self._exact[path] = (lane, handler)

    def pool(self, lane: str) -> Lane:
        """The lane's threads: two for the protected lane, ``ingest_workers`` for ingest."""
        pool = self._pools.get(lane)
        if pool is None:
            workers = self.limits.ingest_workers if lane == INGEST else 2
            pool = self._pools[lane] = Lane(workers, f"http-{lane}")
        return pool

    async def run(self, lane: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on ``lane``'s threads (the event loop never blocks)."""
        return await self.pool(lane).run(fn, *args)

    def close(self) -> None:
        for pool in list(self._pools.values()):
            pool.close()

    def lane_of(self, path: str) -> str | None:
        """The lane of the route serving ``path`` (None: no route)."""
        hit = self._find(path)
        return hit[0] if hit is not None else None

    def _find(self, path: str) -> tuple[str, Handler] | None:
        hit = self._exact.get(path)
        if hit is not None:
            return hit
        for prefix, lane, handler in self._prefixes:
            if path.startswith(prefix):
                return lane, handler
        return None

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] != "http":
            return
        request = Request(self, scope, receive)
        hit = self._find(request.path)
        try:
            refusal = self.hosts.refusal(scope["headers"])
            if refusal is not None:
                raise Refused(*refusal)
            if hit is None:
                raise Refused(404, f"no such endpoint {request.path[:80]!r}", "not_found")
            response = await hit[1](request)
        except Refused as exc:
            if exc.reason not in ("not_found",):
                self.refused[exc.reason] += 1
            close = exc.status in (408, 413, 503) or exc.reason in ("bad_length", "disconnected")
            response = Response.json({"error": str(exc), **exc.extra}, exc.status,
                                     [*exc.headers, *([(b"connection", b"close")] if close else [])])
        except Exception:   # noqa: BLE001 - a bug: said once per request, answered 500
            log.exception("%s %s failed", request.method, request.path[:120])
            self.refused["internal_error"] += 1
            response = Response.json({"error": "internal error; see the watcher's log"}, 500,
                                     [(b"connection", b"close")])
        finally:
            self.budget.release(request)
        await _send(send, response)


async def _send(send, response: Response | StreamResponse) -> None:
    headers = [(b"content-type", response.content_type.encode()), *response.headers]
    given = {name.lower() for name, _v in response.headers}
    headers += [h for h in BASELINE_HEADERS if h[0] not in given]
    if isinstance(response, StreamResponse):
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        async for chunk in response.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    body = response.body
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    if len(body) > SEND_CHUNK:
        view = memoryview(body)
        for at in range(0, len(body), SEND_CHUNK):
            await send({"type": "http.response.body", "body": bytes(view[at:at + SEND_CHUNK]),
                        "more_body": at + SEND_CHUNK < len(body)})
        return
    await send({"type": "http.response.body", "body": body, "more_body": False})
