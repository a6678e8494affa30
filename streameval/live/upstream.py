"""The paths the front does not serve itself, passed to the watchers' own servers on
their private Unix sockets: as they came to one watcher's (``Upstream``), or, to the
workers of ``watch --workers N``, each asked of the worker that can answer it
(``Fanout``): the page's fleet is every worker's runs, a run's page its owner's.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlencode

import orjson

from streameval.live.asgi import PROTECTED, App, Refused, Request, Response, read_only

#: connections the front keeps open to a watcher's server at once
UPSTREAM_CONNECTIONS = 8
#: request headers not passed upstream (hop by hop, or set again)
_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"te",
        b"upgrade", b"proxy-connection", b"expect"}
#: seconds a request passed to the watcher's server may take (then 504)
UPSTREAM_TIMEOUT = 30.0


class Upstream:
    """Every path the front does not serve, passed to the watcher's server as it came
    (a few keep-alive connections on its Unix socket; no thread)."""

    def __init__(self, path: str):
        self.path = path
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._slots: asyncio.Semaphore | None = None

    async def __call__(self, request: Request) -> Response:
        read_only(request)   # before a byte of a body is read
        scope = request.scope
        target = scope.get("raw_path") or request.path.encode()
        if scope.get("query_string"):
            target += b"?" + scope["query_string"]
        return await self.send(request.method, target, scope["headers"])

    async def send(self, method: str, target: bytes, headers: list[tuple[bytes, bytes]],
                   body: bytes = b"") -> Response:
        """``method target`` with ``headers`` (hop-by-hop ones left out) and ``body``,
        answered by the watcher's server."""
        head = [f"{method} ".encode() + target + b" HTTP/1.1"]
        head += [k + b": " + v for k, v in headers if k.lower() not in _HOP]
        head.append(b"content-length: " + str(len(body)).encode())
        data = b"\r\n".join(head) + b"\r\n\r\n" + body
        if self._slots is None:
            self._slots = asyncio.Semaphore(UPSTREAM_CONNECTIONS)
        async with self._slots:
            for attempt in (0, 1):   # a kept connection the watcher closed: once more
                writer = None
                try:
                    reader, writer = self._idle.pop() if self._idle and attempt == 0 else \
                        await asyncio.open_unix_connection(self.path, limit=1 << 24)
                    writer.write(data)
                    response, keep = await asyncio.wait_for(
                        self._response(reader, method == "HEAD"), UPSTREAM_TIMEOUT)
                except asyncio.TimeoutError:
                    writer.close()
                    raise Refused(504, "the watcher did not answer in time", "upstream") from None
                except (OSError, asyncio.IncompleteReadError, ValueError):
                    if writer is not None:
                        writer.close()
                    if attempt:
                        raise Refused(502, "the watcher did not answer", "upstream") from None
                    continue
                if keep:
                    self._idle.append((reader, writer))
                else:
                    writer.close()
                return response
        raise Refused(502, "the watcher did not answer", "upstream")   # pragma: no cover

    @staticmethod
    async def _response(reader: asyncio.StreamReader, head_only: bool) -> tuple[Response, bool]:
        while True:   # an interim 1xx answer is not the answer
            status_line = await reader.readline()
            if not status_line:
                raise ValueError("closed")
            status = int(status_line.split(b" ", 2)[1])
            if status >= 200:
                break
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
        headers, ctype, length, keep = [], "application/octet-stream", None, True
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip()
            if name == b"content-type":
                ctype = value.decode("latin-1")
            elif name == b"content-length":
                length = int(value)
            elif name == b"connection":
                keep = b"close" not in value.lower()
            elif name not in _HOP:
                headers.append((name, value))
        if head_only:
            body = b""
        elif length is not None:
            body = await reader.readexactly(length)
        else:
            body, keep = await reader.read(), False
        return Response(status, body, ctype, headers), keep


def _target(request: Request) -> bytes:
    scope = request.scope
    target = scope.get("raw_path") or request.path.encode()
    if scope.get("query_string"):
        target += b"?" + scope["query_string"]
    return target


class Fanout:
    """The page over several workers' servers (``watch --workers N``).

    ``/api/runs`` is the fleet of all workers: each is asked for the rows changed since
    its own part of the page's generation (``<gen of worker 0>~<gen of worker 1>...``),
    and when one answers in full (it was started again) the others are asked in full
    too, so the page replaces its rows once. A run's page (``/api/runs/ID``,
    ``/api/run?id=ID``) is the answer of the worker that has the run (the others say
    404). Everything else (the shell, its assets) is any worker's: all answer the same.
    """

    SEP = "~"

    def __init__(self, upstreams: list[Upstream]):
        self.upstreams = upstreams

    def mount(self, app: App) -> None:
        app.route("/api/runs", self.fleet, lane=PROTECTED)
        app.route("/api/runs/", self.run, lane=PROTECTED, prefix=True)
        app.route("/api/run", self.run, lane=PROTECTED)
        app.route("/", self.any, lane=PROTECTED, prefix=True)

    async def any(self, request: Request) -> Response:
        """Worker 0's answer, or the next one's while it is being started again."""
        for upstream in self.upstreams[:-1]:
            try:
                return await upstream(request)
            except Refused as exc:
                if exc.status != 502:
                    raise
        return await self.upstreams[-1](request)

    async def run(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return await self.any(request)
        target, headers = _target(request), request.scope["headers"]
        answers = await asyncio.gather(*(u.send(request.method, target, headers)
                                         for u in self.upstreams), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, Response) and answer.status != 404:
                return answer
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        return answers[0]

    async def fleet(self, request: Request) -> Response:
        if request.method not in ("GET", "HEAD"):
            return await self.any(request)
        n = len(self.upstreams)
        since = request.query.get("since") or ""
        parts: list[str | None] = since.split(self.SEP) if since.count(self.SEP) == n - 1 else [None] * n
        headers = [(k, v) for k, v in request.scope["headers"] if k.lower() != b"if-none-match"]
        answers = await asyncio.gather(*(self._fleet(u, p, headers)
                                         for u, p in zip(self.upstreams, parts)))
        if any(a["full"] for a in answers) and not all(a["full"] for a in answers):
            answers = [a if a["full"] else await self._fleet(u, None, headers)
                       for u, a in zip(self.upstreams, answers)]
        gen = self.SEP.join(a["gen"] for a in answers)
        merged = {"gen": gen, "full": answers[0]["full"],
                  "runs": [row for a in answers for row in a["runs"]],
                  "removed": [rid for a in answers for rid in a["removed"]]}
        first = answers[0]["_headers"]
        etag = f'"{gen}"'.encode()
        headers_out = [(k, v) for k, v in first if k != b"etag"] + [(b"etag", etag)]
        if etag.decode() in (t.strip() for t in request.header("if-none-match").split(",")):
            return Response(304, b"", "application/json", headers_out)
        body = b"" if request.method == "HEAD" else orjson.dumps(merged)
        return Response(200, body, "application/json", headers_out)

    @staticmethod
    async def _fleet(upstream: Upstream, since: str | None,
                     headers: list[tuple[bytes, bytes]]) -> dict:
        target = b"/api/runs" + (b"?" + urlencode({"since": since}).encode() if since else b"")
        answer = await upstream.send("GET", target, headers)
        if answer.status != 200:
            raise Refused(503 if answer.status >= 500 else answer.status,
                          "a worker did not give its runs", "upstream",
                          [(b"retry-after", b"1")] if answer.status >= 500 else None)
        data = orjson.loads(answer.body)
        data["_headers"] = answer.headers
        return data
