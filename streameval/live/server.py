"""The watcher's HTTP server: the ASGI ``App`` on uvicorn, in a thread of its own.

uvicorn is a maintained ASGI server whose httptools protocol parses with llhttp (strict
framing, C speed); its connections are asyncio protocols, so a slow or idle client
costs a socket and a few kilobytes, never a thread. ``guard`` adds the limits it lacks.
The server's event loop runs in its own thread: the watcher's scoring, on the main
thread, never delays an answer, and the answers never delay scoring.

The socket is bound here, before the thread starts, so a bad ``--host`` or a port in
use is a usage error naming them, and ``port=0`` reports the port really bound.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import threading

from streameval.config import DEFAULT_HOST, DEFAULT_PORT
from streameval.errors import UsageError
from streameval.live.asgi import App
from streameval.live.guard import guarded
from streameval.live.hosts import HostRule

log = logging.getLogger(__name__)


def backlog(limits) -> int:
    """The kernel's listen queue for a server with ``limits``."""
    return min(limits.max_connections, 4096)


def bind(host: str, port: int, backlog: int, serving: str = "metrics") -> socket.socket:
    """A listening socket on ``host:port``; UsageError naming them, and what was to be
    served there (``serving``), when it cannot be."""
    try:
        family, kind, proto, _, sockaddr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"cannot serve {serving} on {host}:{port}: no such address "
                         f"({getattr(exc, 'strerror', None) or exc}); check --host") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        hint = ("pick another --port (0 = any free port)" if exc.errno == errno.EADDRINUSE
                else "check --host and --port")
        raise UsageError(f"cannot serve {serving} on {host}:{port}: "
                         f"{exc.strerror or exc}; {hint}") from None
    sock.setblocking(False)
    return sock


class HttpServer:
    """``app`` served on ``host:port`` from a background thread until ``close()``."""

    def __init__(self, app: App, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 sock: socket.socket | None = None, serving: str = "metrics"):
        import uvicorn

        self.app = app
        # the kernel's listen queue: a burst of agents' hooks must not wait for a SYN
        # retry (socketserver's default of 5 made the 6th wait a second or more)
        self._sock = sock if sock is not None else \
            bind(host, port, backlog=backlog(app.limits), serving=serving)
        name = self._sock.getsockname()
        # one Host rule for every path, from the address really bound (``hosts``)
        app.hosts = HostRule.of(self._sock)
        self.port: int = name[1] if isinstance(name, tuple) else 0   # 0: a Unix socket
        #: the collector ``serve`` registered: what a front's metrics are made from
        #: (``mirror.Feed``)
        self.collector = None
        self.host = host
        config = uvicorn.Config(
            app, http=guarded(app.guard), lifespan="off", loop="asyncio", log_config=None,
            access_log=False, server_header=False, date_header=False,
            timeout_keep_alive=int(app.limits.header_timeout) or 1,
            timeout_graceful_shutdown=1, ws="none",
            # the client address is the socket's: a pushed X-Forwarded-For must not
            # move a client out of its per-address limits
            proxy_headers=False)
        self._server = uvicorn.Server(config)
        # hostile clients are counted (streameval_http_refused_total), not logged one
        # line per connection
        logging.getLogger("uvicorn.error").setLevel(logging.ERROR)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="http", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("the HTTP server did not start")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self.loop = loop
        loop.call_soon(self._started.set)
        try:
            loop.run_until_complete(self._server.serve(sockets=[self._sock]))
        except Exception:   # noqa: BLE001 - logged; the watcher goes on without a server
            log.exception("the HTTP server stopped")
        finally:
            loop.close()

    def close(self) -> None:
        """Stop serving, free the port, stop the lanes' threads."""
        self._server.should_exit = True
        self._server.force_exit = True
        self._thread.join(timeout=5)
        self.app.close()
        try:
            self._sock.close()
        except OSError:
            pass

    shutdown = close


def serve(table, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, registry=None,
          ingest=None, limits=None, per_run_series: int | None = None,
          fleet_groups: int | None = None, sock: socket.socket | None = None):
    """Serve ``/metrics`` for ``table`` (and the ingest routes of ``ingest``, an
    ``IngestRoutes``); returns (server, registry, port).

    ``port=0`` picks a free port (tests); the bound port is returned so the caller can
    print the URL it really serves on. Binds 127.0.0.1 unless told otherwise. The
    server's ``app`` takes more routes (``App.route``) while it runs.
    ``per_run_series`` and ``fleet_groups`` bound the series (``exporter``'s defaults
    when None).
    """
    from prometheus_client import CollectorRegistry

    from streameval.live.exporter import RunsCollector
    from streameval.live.exposition import MetricsRoute, prerender

    own = registry is None
    registry = registry if registry is not None else CollectorRegistry()
    bounds = {k: v for k, v in (("per_run_series", per_run_series),
                                ("fleet_groups", fleet_groups)) if v is not None}
    collector = RunsCollector(table, **bounds)
    registry.register(collector)
    app = App(limits, refused=table.stats.http_refused)
    app.route("/metrics", MetricsRoute(app, registry, collector if own else None))
    if own:
        table.on_settled.append(prerender)
    if ingest is not None:
        ingest.mount(app)
    try:
        server = HttpServer(app, host, port, sock=sock)
    except BaseException:
        registry.unregister(collector)
        app.close()
        raise
    server.collector = collector
    return server, registry, server.port
