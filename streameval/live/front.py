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
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import orjson

from streameval import config
from streameval.live import mirror
from streameval.live.asgi import PROTECTED, Refused, Request, Response, read_only
from streameval.live.mirror import Feed

log = logging.getLogger(__name__)

#: seconds between the front's counter reports and its transcript settling
TICK = 0.2
#: connections the front keeps open to the watcher's server at once
UPSTREAM_CONNECTIONS = 8
#: the counters the front keeps for the watcher's ``/metrics`` (``EvaluatorStats``)
COUNTERS = ("ingest_requests", "ingest_rejected", "ingest_duplicates", "http_refused")
#: request headers not passed upstream (hop by hop, or set again)
_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"te",
        b"upgrade", b"proxy-connection", b"expect"}
#: seconds a request passed to the watcher's server may take (then 504)
UPSTREAM_TIMEOUT = 30.0


# ---------------------------------------------------------------------- the link


def _frame(message: dict) -> bytes:
    """A message on the link: one JSON line."""
    return orjson.dumps(message) + b"\n"


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall(_frame(message))


def _lines(sock: socket.socket, buf: bytearray) -> list[dict] | None:
    """The whole messages received so far (None: the other end closed). A message of
    megabytes (the first metrics) is searched for its end once, not at every chunk."""
    chunk = sock.recv(1 << 20)
    if not chunk:
        return None
    start = len(buf)
    buf += chunk
    out = []
    while True:
        nl = buf.find(b"\n", start)
        if nl < 0:
            return out
        out.append(orjson.loads(bytes(buf[:nl])))
        del buf[:nl + 1]
        start = 0


class Link:
    """The watcher's end: starts the front (again, should it die), sends it what the
    watcher scored, and takes its counters into the watcher's ``/metrics``.

    What is sent is state, not events (each spooled trace's scored bytes and steering),
    so a sender thread sends the latest of it: the watcher's thread only merges into an
    outbox and never blocks on a front that is slow to read."""

    #: starts of the front within ``RESTART_WINDOW`` seconds before the watcher gives up
    MAX_STARTS = 5
    RESTART_WINDOW = 60.0

    def __init__(self, watcher, public: socket.socket, upstream: str, spool_dir: Path | None, *,
                 token: str | None, max_runs: int, feed: Feed, limits=None):
        self.watcher = watcher
        self.public = public          # kept: a front started again serves the same port
        self.prefix = str(spool_dir) + os.sep if spool_dir is not None else None
        self.feed = feed   # the scrape's pieces the front serves /metrics from (``mirror``)
        # sent on the private socket pair: the token is on no command line and in no
        # environment of the front's (``config.without_secrets``)
        self._config = {"spool": str(spool_dir) if spool_dir is not None else None,
                        "upstream": upstream, "max_runs": max_runs,
                        "idle": watcher.cfg.idle_timeout, "token": token,
                        "limits": vars(limits) if limits is not None else {},
                        "verbose": logging.getLogger().getEffectiveLevel()}
        #: what the front was told (or is about to be): path -> (bytes scored, steering)
        self._sent: dict[Path, tuple[int, str | None]] = {}
        self._outbox: dict[str, tuple[int, str | None] | None] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()   # two threads send: whole messages, in turn
        self._wake = threading.Event()
        self._asks: queue.SimpleQueue = queue.SimpleQueue()   # scrapes the front asks about
        self.closed = False
        self.starts: list[float] = []
        #: the counts the current front last reported (it counts from 0 when started)
        self._last = {name: Counter() for name in COUNTERS}
        #: a folder of the caller's to remove once the front is gone (its socket's)
        self.private_dir: Path | None = None
        self.proc, self.sock, self._after_ready = self._spawn()
        self.given_up = False
        if self.prefix is not None:
            watcher.listeners.append(self.scored)
            # steering decided at a tick (time budgets) reaches the front without a batch
            watcher.tick_hooks.append(lambda _w, _now: self.scored())
        self._reader = threading.Thread(target=self._read, name="front-link", daemon=True)
        self._reader.start()
        self._sender = threading.Thread(target=self._send_loop, name="front-send", daemon=True)
        self._sender.start()
        threading.Thread(target=self._metrics_loop, name="front-metrics", daemon=True).start()

    def _spawn(self) -> tuple[subprocess.Popen, socket.socket, tuple[bytearray, list[dict]]]:
        """A front started, and what it sent after its ready message (the reader's)."""
        now = time.monotonic()
        self.starts = [t for t in self.starts if now - t < self.RESTART_WINDOW] + [now]
        mine, theirs = socket.socketpair()
        try:
            fds = (self.public.fileno(), theirs.fileno())
            proc = subprocess.Popen([sys.executable, "-m", "streameval.live.front",
                                     *map(str, fds)], pass_fds=fds, stdin=subprocess.DEVNULL,
                                    env=config.without_secrets())
        except OSError as exc:
            mine.close()
            raise RuntimeError(f"the front did not start ({exc})") from None
        finally:
            theirs.close()
        try:
            _send(mine, self._config)
            mine.settimeout(60)
            buf, first = bytearray(), []
            while not first:
                first = _lines(mine, buf)
                if first is None or (first and not first[0].get("ready")):
                    raise OSError("no ready message")
            mine.settimeout(None)
        except (OSError, ValueError) as exc:
            proc.kill()
            proc.wait()
            mine.close()
            raise RuntimeError(f"the front did not start ({exc})") from None
        return proc, mine, (buf, first[1:])

    def scored(self, _watcher=None) -> None:
        """After a batch (and at every tick): each spooled trace whose scored bytes or
        steering changed, and each one the watcher let go, into the outbox."""
        w = self.watcher
        changed: dict[str, tuple[int, str | None] | None] = {}
        followers = w.followers
        with self._lock:   # held for memory only: the sender thread does the I/O
            for path, f in list(followers.items()):
                if not str(path).startswith(self.prefix):
                    continue
                now = (f.tail.offset - f.tail.pending, w.steer_reason(path))
                if self._sent.get(path) != now:
                    self._sent[path] = now
                    changed[str(path)] = now
            for path in [p for p in self._sent if p not in followers]:
                del self._sent[path]
                changed[str(path)] = None   # let go by the watcher: the front forgets it
            self._outbox.update(changed)
        if changed:
            self._wake.set()

    def _send_loop(self) -> None:
        while not self.closed:
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                out, self._outbox = self._outbox, {}
                sock = self.sock
            if not out:
                continue
            self._post(sock, {"scored": {k: v for k, v in out.items() if v is not None},
                              "gone": [k for k, v in out.items() if v is None]})

    def _post(self, sock: socket.socket, message: dict) -> bool:
        try:
            with self._send_lock:
                _send(sock, message)
            return True
        except OSError:
            return False   # the front is gone: the reader starts another, which gets all

    def _metrics_loop(self) -> None:
        """The pieces of a scrape for each question of the front, and unasked every
        ``PUSH_EVERY`` seconds while a format was scraped in the last ``PUSH_FOR``: a
        front whose question the watcher cannot answer in time serves recent ones."""
        asked: dict[bool, float] = {}   # format -> when last scraped
        primed = None
        while not (self.closed or self.given_up):
            with self._lock:
                front, sock = self.proc, self.sock
            if front is not primed:
                # a front new to the pieces (started, or started again) gets both formats
                # now: its first scrape is served from them, not after the watcher's
                # first answer (145.5 ms in a soak: data/issue18-mirror/soak-new-unprimed)
                primed, questions = front, []
                asked = dict.fromkeys((False, True), time.monotonic())
            else:
                try:
                    questions = [self._asks.get(timeout=mirror.PUSH_EVERY)]
                except queue.Empty:
                    questions = []
            while not self._asks.empty():   # a burst: one answer per format
                questions.append(self._asks.get())
            now = time.monotonic()
            todo: dict[bool, list[int]] = {}
            for q in questions:
                if q is None:
                    return
                asker, m = q
                asked[m["om"]] = now
                answers = todo.setdefault(m["om"], [])
                if asker is front:   # a question of a front gone (started again) is not this one's
                    answers.append(m["scrape"])
            if not questions:
                todo = {om: [] for om, at in asked.items() if now - at < mirror.PUSH_FOR}
            for om, numbers in todo.items():
                try:
                    pieces = self.feed.pieces(om, front)
                    sent = self._post(sock, {"metrics": pieces, "answers": numbers})
                except Exception:   # noqa: BLE001 - a scrape's failure, said; the link goes on
                    log.exception("the metrics for the front could not be made")
                    sent = False
                if not sent:
                    self.feed.forget()   # whatever it has, the next pieces carry every text

    def _read(self) -> None:
        buf, messages = self._after_ready
        self._take(messages)
        while True:
            try:
                messages = _lines(self.sock, buf)
            except OSError:
                messages = None
            except ValueError:   # not a message of ours: a front gone wrong, started again
                log.error("the front sent a line that is not a message; stopping it")
                self.proc.kill()
                messages = None
            if messages is None:
                try:
                    again = not self.closed and self._restart()
                except Exception:   # noqa: BLE001 - said, and the port given up below
                    log.exception("the front could not be started again")
                    again = False
                if not again:
                    self._give_up()
                    return
                buf, messages = self._after_ready
            self._take(messages)

    def _take(self, messages: list[dict]) -> None:
        for m in messages:
            if "scrape" in m:   # a question of this front's: answered to it only
                self._asks.put((self.proc, m))
            else:
                self._count(m)

    def _count(self, message: dict) -> None:
        """Add what the front counted since its last report (the watcher's own server
        counts into the same counters)."""
        stats = self.watcher.table.stats
        for name in COUNTERS:
            counter: Counter = getattr(stats, name)
            last = self._last[name]
            for key, n in message.get(name, []):
                key = tuple(key) if isinstance(key, list) else key
                counter[key] += n - last[key]
                last[key] = n

    def _restart(self) -> bool:
        code = self.proc.wait()
        if self.closed or code == -signal.SIGTERM:
            return False   # stopping, or stopped on purpose (a service's stop)
        now = time.monotonic()
        if len([t for t in self.starts if now - t < self.RESTART_WINDOW]) >= self.MAX_STARTS:
            log.error("the front stopped (exit %s) for the %d(th) time within %.0f s; "
                      "the port is closed", code, self.MAX_STARTS, self.RESTART_WINDOW)
            return False
        log.error("the front stopped (exit %s); starting it again (acknowledged "
                  "pushes are on disk; unanswered ones are retried by their clients)", code)
        for last in self._last.values():
            last.clear()
        proc, sock, self._after_ready = self._spawn()
        with self._lock:
            old, self.proc, self.sock = self.sock, proc, sock
            # the new front knows nothing scored yet: all of it, now
            self._outbox = {str(p): v for p, v in self._sent.items()}
        old.close()
        self._wake.set()
        if self.closed:   # stopped meanwhile
            proc.kill()
            return False
        return True

    def _give_up(self) -> None:
        """No front serves the port: close it, so that clients are refused at once
        rather than left waiting in its queue."""
        self.given_up = True
        if not self.closed:
            try:
                self.public.close()
            except OSError:
                pass

    def close(self) -> None:
        self.closed = True
        self._wake.set()
        self._asks.put(None)
        with self._lock:
            sock, proc = self.sock, self.proc
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self._reader.join(5)
        sock.close()
        self.public.close()
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)



# ---------------------------------------------------------------------- the front


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
        head = [f"{request.method} ".encode() + target + b" HTTP/1.1"]
        head += [k + b": " + v for k, v in scope["headers"] if k.lower() not in _HOP]
        data = b"\r\n".join(head) + b"\r\n\r\n"
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
                        self._response(reader, request.method == "HEAD"), UPSTREAM_TIMEOUT)
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


class _Scored:
    """What the watcher last said it scored: bytes per spooled trace, and steering."""

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
    """The front's messages to the watcher, sent by a thread of their own: neither the
    server's loop (a scrape's question) nor the main loop (the counters) ever blocks on
    a watcher that does not read, stopped or busy. Counters are state: the latest
    report replaces one not sent yet."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._asks: list[dict] = []
        self._counts: dict | None = None
        self._cv = threading.Condition()
        threading.Thread(target=self._run, name="front-out", daemon=True).start()

    def ask(self, message: dict) -> None:
        with self._cv:
            self._asks.append(message)
            self._cv.notify()

    def counts(self, message: dict) -> None:
        with self._cv:
            self._counts = message
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._asks and self._counts is None:
                    self._cv.wait()
                out = self._asks + ([self._counts] if self._counts is not None else [])
                self._asks, self._counts = [], None
            try:
                self.sock.sendall(b"".join(map(_frame, out)))
            except OSError:
                return   # the watcher is gone: the main loop sees it too


def _die_with_parent() -> None:
    """SIGKILL when the watcher dies, however it dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):   # pragma: no cover - not glibc
        pass


def main(argv: list[str]) -> int:
    """The front: ``python -m streameval.live.front PUBLIC_FD LINK_FD``."""
    from streameval.live import heap
    from streameval.live.asgi import App
    from streameval.live.guard import Limits
    from streameval.live.ingest import IngestRoutes
    from streameval.live.mirror import Mirror, MirrorRoute
    from streameval.live.server import HttpServer
    from streameval.traces.ingest.spool import Spool
    from streameval.untrusted import log_to_stderr

    _die_with_parent()
    public = socket.socket(fileno=int(argv[0]))
    link = socket.socket(fileno=int(argv[1]))
    buf = bytearray()
    config = (_lines(link, buf) or [None])[0]
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
    upstream = Upstream(config["upstream"])
    # ready before the server takes its first request, so no message can come first
    _send(link, {"ready": True})
    outbox = _Outbox(link)
    mirror = Mirror()
    metrics = MirrorRoute(app, mirror, outbox.ask, upstream)
    app.route("/metrics", metrics)
    app.route("/", upstream, lane=PROTECTED, prefix=True)
    server = HttpServer(app, sock=public)
    sel = selectors.DefaultSelector()
    sel.register(link, selectors.EVENT_READ)
    last = time.monotonic()
    try:
        while True:
            if sel.select(TICK):
                messages = _lines(link, buf)
                if messages is None:
                    return 0   # the watcher stopped
                for m in messages:
                    if "metrics" in m:
                        mirror.take(m["metrics"])
                        metrics.answered(m["answers"])
                    else:
                        scored.take(m)
                if routes is not None and routes.waits is not None:
                    routes.waits.notify()
            if time.monotonic() - last >= TICK:
                last = time.monotonic()
                if routes is not None:
                    routes.settle()
                outbox.counts({name: [[list(k) if isinstance(k, tuple) else k, n]
                                      for k, n in list(c.items())] for name, c in counters.items()})
    except OSError:
        return 0
    finally:
        server.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
