"""The front: the public port served by a process of its own (``watch``, ``--front
process``, the default).

One CPython process has one interpreter lock: with the HTTP front, the spool's writes
and the watcher's scoring in one process, 1,000 hooks a second took all of one core
and the answers queued behind the scoring, and a scrape waited for every garbage
collection of the watcher's heap (benchmarks/README.md, "Ingest and soak"). Here the
front (the public socket, ``/metrics``, with ``--ingest`` every ``/v1/`` route and the
spool) runs in a child process on the other core, and the watcher's process keeps
what only it knows:

- ``/metrics`` is joined from the pieces the watcher sends (``mirror``);
- the front answers a hook's score wait and its steering deny from what the watcher
  sends after every batch it processed: each spooled trace's bytes scored, and the
  reason a policy stopped its run (``Link``);
- every other path (the page, its API) is passed to the watcher's own server on a
  Unix socket only the two processes share (``Upstream``), on the front's protected
  lane;
- the front's counters reach the watcher's ``/metrics`` every ``TICK`` seconds.

The child dies with the watcher (``PR_SET_PDEATHSIG``, and the end of the link). The
spool is the seam, as in one process: a 200 means stored and fsync'd; the watcher
finds the files as it finds any trace.

With ``watch --workers N`` the front is the supervisor's child (``live.workers``), and
the workers link to it on a Unix socket of its own, each naming itself first: their
pieces are joined into one watcher's ``/metrics`` (``join``), what each scored answers
the waits on the traces it follows (each trace is followed by one worker), and the page
is asked of each (``upstream.Fanout``). The watcher's end is ``live.link``.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from streameval.live.link import TICK, die_with_parent, frame, lines, send

log = logging.getLogger(__name__)


class _Scored:
    """What the watchers last said they scored: bytes per spooled trace, and steering.
    Each trace is followed by one worker, so their messages never name one path twice."""

    def __init__(self):
        self.bytes: dict[Path, int] = {}
        self.steer: dict[Path, str] = {}

    def processed(self, path: Path) -> int:
        return self.bytes.get(path, -1)

    def reason(self, path: Path) -> str | None:
        return self.steer.get(path)

    def take(self, message: dict) -> None:
        for text, (n, reason) in message.get("scored", {}).items():
            path = Path(text)
            # the reason first: a wait settled by these bytes answers with it
            if reason:
                self.steer[path] = reason
            else:
                self.steer.pop(path, None)
            self.bytes[path] = n
        for text in message.get("gone", []):
            self.bytes.pop(Path(text), None)
            self.steer.pop(Path(text), None)


class _Outbox:
    """The front's messages to a watcher, sent by a thread of their own: neither the
    server's loop (a scrape's question) nor the main loop (the counters) ever blocks on
    a watcher that does not read, stopped or busy. Counters are state: the latest
    report replaces one not sent yet."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._asks: list[dict] = []
        self._counts: dict | None = None
        self._cv = threading.Condition()
        self.closed = False
        threading.Thread(target=self._run, name="front-out", daemon=True).start()

    def ask(self, message: dict) -> None:
        with self._cv:
            self._asks.append(message)
            self._cv.notify()

    def counts(self, message: dict) -> None:
        with self._cv:
            self._counts = message
            self._cv.notify()

    def close(self) -> None:
        with self._cv:
            self.closed = True
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._asks and self._counts is None and not self.closed:
                    self._cv.wait()
                if self.closed:
                    return
                out = self._asks + ([self._counts] if self._counts is not None else [])
                self._asks, self._counts = [], None
            try:
                self.sock.sendall(b"".join(map(frame, out)))
            except OSError:
                return   # the watcher is gone: the main loop sees it too


class _Workers:
    """The workers' links (``watch --workers N``): accepted on the front's own socket,
    each named by its first message; a worker started again links anew, in place of
    its old link."""

    def __init__(self, path: str, sel: selectors.BaseSelector, joined):
        self.sel = sel
        self.joined = joined
        try:
            os.unlink(path)   # a front started again binds its predecessor's path
        except FileNotFoundError:
            pass
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        sel.register(self.listener, selectors.EVENT_READ)
        #: connection -> (its read buffer, the worker it named: None until it did)
        self._conns: dict[socket.socket, list] = {}
        self._outboxes: dict[int, tuple[socket.socket, _Outbox]] = {}
        self._lock = threading.Lock()

    def accept(self) -> None:
        conn, _ = self.listener.accept()
        self._conns[conn] = [bytearray(), None]
        self.sel.register(conn, selectors.EVENT_READ)

    def read(self, conn: socket.socket) -> tuple[int | None, list[dict]]:
        """(its worker, the messages it sent); a closed link is forgotten."""
        held = self._conns[conn]
        try:
            messages = lines(conn, held[0])
        except (OSError, ValueError):
            messages = None
        if messages is None:
            self._drop(conn, held[1])
            return None, []
        if held[1] is None and messages and "hello" in messages[0]:
            held[1] = worker = int(messages[0]["hello"])
            with self._lock:
                old = self._outboxes.get(worker)
                self._outboxes[worker] = (conn, _Outbox(conn))
            if old is not None:
                old[1].close()
            self.joined.linked.add(worker)
            messages = messages[1:]
        return held[1], messages

    def _drop(self, conn: socket.socket, worker: int | None) -> None:
        self.sel.unregister(conn)
        del self._conns[conn]
        with self._lock:
            held = self._outboxes.get(worker)
            if held is not None and held[0] is conn:
                del self._outboxes[worker]
                held[1].close()
                self.joined.linked.discard(worker)
        conn.close()

    def ask(self, message: dict) -> list[int]:
        """Ask every linked worker (a scrape's question); returns which were asked."""
        with self._lock:
            linked = list(self._outboxes.items())
        for _worker, (_conn, outbox) in linked:
            outbox.ask(message)
        return [worker for worker, _held in linked]


def _counts(counters: dict[str, Counter]) -> dict:
    return {name: [[list(k) if isinstance(k, tuple) else k, n] for k, n in list(c.items())]
            for name, c in counters.items()}


def _counter(pairs: list) -> Counter:
    """A counter of ``_counts``' pairs (a key sent as a list is a tuple again)."""
    return Counter({tuple(k) if isinstance(k, list) else k: n for k, n in pairs})


class _Joined:
    """The front of several workers (``config["workers"]`` > 1): their links, their
    pieces joined, the page asked of each; its own counters go on from those of the
    fronts before it (``counter_base``), as told to the supervisor."""

    def __init__(self, config: dict, app, counters: dict[str, Counter], sel):
        from streameval.live.join import Joined, join_filtered
        from streameval.live.upstream import Fanout, Upstream

        base = {name: _counter(pairs) for name, pairs in config.get("counter_base", {}).items()}
        self.counters = counters
        #: the counts last told to the supervisor (every TICK)
        self.reported: dict[str, Counter] = {}

        def own() -> dict[str, Counter]:
            # a front killed now and started again goes on from the numbers shown
            return {name: base.get(name, Counter()) + self.reported.get(name, Counter())
                    for name in counters}

        self.store = Joined(config["workers"], config["per_run_series"], config["fleet_groups"], own)
        self.workers = _Workers(config["links"], sel, self.store)
        self.upstream = lambda request: join_filtered(app, self.store, request)
        self.page = Fanout([Upstream(path) for path in config["upstreams"]])

    def told(self, counts: dict) -> None:
        now = {name: _counter(pairs) for name, pairs in counts.items()}
        if now != self.reported:
            self.reported.update(now)
            self.store.counted()


def main(argv: list[str]) -> int:
    """The front: ``python -m streameval.live.front PUBLIC_FD LINK_FD``."""
    from streameval.live import heap
    from streameval.live.asgi import PROTECTED, App
    from streameval.live.guard import Limits
    from streameval.live.ingest import IngestRoutes
    from streameval.live.mirror import Mirror, MirrorRoute
    from streameval.live.server import HttpServer
    from streameval.live.upstream import Upstream
    from streameval.traces.ingest.spool import Spool
    from streameval.untrusted import log_to_stderr

    die_with_parent()
    public = socket.socket(fileno=int(argv[0]))
    link = socket.socket(fileno=int(argv[1]))
    buf = bytearray()
    config = (lines(link, buf) or [None])[0]
    if config is None:
        return 1
    log_to_stderr("streameval watch (front): %(message)s", config.get("verbose") or logging.WARNING)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the watcher's to handle
    # the server's loop and the scrape's render get the interpreter within 1 ms of
    # asking while this thread decodes the watcher's pieces, not 5 (as in the watcher)
    sys.setswitchinterval(0.001)
    heap.fix_mmap_threshold()
    app = App(Limits(**config["limits"]))
    counters = {"http_refused": app.refused}
    routes = None
    scored = _Scored()
    if config["spool"] is not None:
        spool = Spool(Path(config["spool"]), config["max_runs"], idle=config["idle"])
        routes = IngestRoutes(spool, token=config["token"], processed=scored.processed,
                              steer=scored.reason)
        routes.mount(app)
        counters.update(ingest_requests=routes.counts, ingest_rejected=routes.rejected,
                        ingest_duplicates=routes.duplicates)
    sel = selectors.DefaultSelector()
    sel.register(link, selectors.EVENT_READ)
    joined = _Joined(config, app, counters, sel) if config.get("workers", 1) > 1 else None
    # ready before the server takes its first request, so no message can come first
    send(link, {"ready": True})
    outbox = _Outbox(link)
    if joined is None:
        store, page = Mirror(), Upstream(config["upstream"])
        metrics = MirrorRoute(app, store, outbox.ask, page)
        app.route("/", page, lane=PROTECTED, prefix=True)
    else:
        store = joined.store
        metrics = MirrorRoute(app, store, joined.workers.ask, joined.upstream)
        joined.page.mount(app)
    app.route("/metrics", metrics)
    server = HttpServer(app, sock=public)

    def take(worker: int | None, messages: list[dict]) -> None:
        for m in messages:
            if "metrics" in m:
                store.take(m["metrics"], worker)
                metrics.answered(m["answers"], worker)
            else:
                scored.take(m)

    try:
        return _serve(link, buf, sel, joined, take, routes, outbox, counters)
    except OSError:
        return 0
    finally:
        server.close()


def _serve(link: socket.socket, buf: bytearray, sel, joined: _Joined | None, take, routes,
           outbox: _Outbox, counters: dict[str, Counter]) -> int:
    """Until the watcher (the supervisor) stops: the watchers' messages as they come
    (``take``), the counters told every ``TICK``."""
    last = time.monotonic()
    while True:
        events = sel.select(TICK)
        for key, _mask in events:
            if key.fileobj is link:
                messages = lines(link, buf)
                if messages is None:
                    return 0
                if joined is None:
                    take(0, messages)
            elif key.fileobj is joined.workers.listener:
                joined.workers.accept()
            else:
                take(*joined.workers.read(key.fileobj))
        if events and routes is not None and routes.waits is not None:
            routes.waits.notify()
        if time.monotonic() - last >= TICK:
            last = time.monotonic()
            if routes is not None:
                routes.settle()
            counts = _counts(counters)
            outbox.counts(counts)
            if joined is not None:
                joined.told(counts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
