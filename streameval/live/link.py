"""The watcher's end of its link to the front (``live.front``).

A watcher tells the front what only it knows: each spooled trace's bytes scored and
the reason a policy stopped its run (the score waits and the steering denies are
answered from them), and the pieces of a scrape (``mirror``, ``join``). The front
tells the watcher which scrapes it wants answered, and its counters.

Two kinds of front are at the other end (``FrontEnd``):

- ``FrontProcess``: one watcher's own front, started as its child (``watch``, one
  worker) and started again should it die;
- ``FrontSocket``: the front of several workers (``watch --workers N``), started by the
  supervisor (``live.workers``); the worker connects to its socket, and connects again
  to the front started in its place.

What is sent is state, not events, so a sender thread sends the latest of it: the
watcher's thread only merges into an outbox and never blocks on a front slow to read.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Protocol

import orjson

from streameval import config
from streameval.live import mirror

log = logging.getLogger("streameval.live.front")

#: seconds between the front's counter reports and its transcript settling
TICK = 0.2
#: the counters the front keeps for the watcher's ``/metrics`` (``EvaluatorStats``)
COUNTERS = ("ingest_requests", "ingest_rejected", "ingest_duplicates", "http_refused")


# ---------------------------------------------------------------------- framing


def frame(message: dict) -> bytes:
    """A message on a link: one JSON line."""
    return orjson.dumps(message) + b"\n"


def send(sock: socket.socket, message: dict) -> None:
    sock.sendall(frame(message))


def lines(sock: socket.socket, buf: bytearray) -> list[dict] | None:
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


def die_with_parent() -> None:
    """SIGKILL when the parent dies, however it dies (Linux). The parent is the thread
    that started this process: a long-lived one (the link's reader, the supervisor's)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):   # pragma: no cover - not glibc
        pass


#: a link just made: its socket, the bytes read past its first messages, those messages
Connected = tuple[socket.socket, bytearray, list[dict]]


class FrontEnd(Protocol):
    """Where a ``Link`` gets its socket, and what it does when the link breaks."""

    def connect(self) -> Connected: ...

    given_up: bool

    def lost(self) -> bool:
        """The link broke: True when a new one is to be made (``connect``), False to stop."""

    def give_up(self) -> None:
        """No new link could be made: nothing more is tried."""

    def close(self) -> None: ...


def spawn_front(public: socket.socket, settings: dict) -> tuple[subprocess.Popen, Connected]:
    """A front process serving ``public``, told ``settings`` on its private socket (the
    token is on no command line and in no environment of the front's:
    ``config.without_secrets``), once it said it is ready."""
    mine, theirs = socket.socketpair()
    try:
        fds = (public.fileno(), theirs.fileno())
        proc = subprocess.Popen([sys.executable, "-m", "streameval.live.front",
                                 *map(str, fds)], pass_fds=fds, stdin=subprocess.DEVNULL,
                                env=config.without_secrets())
    except OSError as exc:
        mine.close()
        raise RuntimeError(f"the front did not start ({exc})") from None
    finally:
        theirs.close()
    try:
        send(mine, settings)
        mine.settimeout(60)
        buf, first = bytearray(), []
        while not first:
            first = lines(mine, buf)
            if first is None or (first and not first[0].get("ready")):
                raise OSError("no ready message")
        mine.settimeout(None)
    except (OSError, ValueError) as exc:
        proc.kill()
        proc.wait()
        mine.close()
        raise RuntimeError(f"the front did not start ({exc})") from None
    return proc, (mine, buf, first[1:])


class FrontProcess:
    """One watcher's front, its child: started again should it die, up to
    ``MAX_STARTS`` times within ``RESTART_WINDOW`` seconds; then the port is closed,
    so that clients are refused at once rather than left waiting in its queue."""

    MAX_STARTS = 5
    RESTART_WINDOW = 60.0

    def __init__(self, public: socket.socket, settings: dict):
        self.public = public          # kept: a front started again serves the same port
        self.settings = settings
        self.starts: list[float] = []
        self.proc: subprocess.Popen | None = None
        self.closed = False
        self.given_up = False
        #: a folder of the caller's to remove once the front is gone (its socket's)
        self.private_dir: Path | None = None

    def connect(self) -> Connected:
        now = time.monotonic()
        self.starts = [t for t in self.starts if now - t < self.RESTART_WINDOW] + [now]
        self.proc, connected = spawn_front(self.public, self.settings)
        return connected

    def lost(self) -> bool:
        try:
            again = not self.closed and self._again()
        except Exception:   # noqa: BLE001 - said, and the port given up below
            log.exception("the front could not be started again")
            again = False
        if not again:
            self.give_up()
        return again

    def _again(self) -> bool:
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
        return True

    def give_up(self) -> None:
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
        proc = self.proc
        if proc is not None:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.public.close()
        if self.private_dir is not None:
            shutil.rmtree(self.private_dir, ignore_errors=True)


class FrontSocket:
    """The front several workers share, on a Unix socket: connected to, and connected
    to again while the supervisor starts another in its place. ``hello`` is the first
    message, which names the worker."""

    RETRY = 0.05

    def __init__(self, path: str, hello: dict):
        self.path = path
        self.hello = hello
        self.closed = False
        self.given_up = False
        self._stop = threading.Event()

    def connect(self) -> Connected:
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.path)
                send(sock, self.hello)
                return sock, bytearray(), []
            except OSError:
                sock.close()
                if self._stop.wait(self.RETRY):
                    raise RuntimeError("stopped") from None

    def lost(self) -> bool:
        return not self.closed

    def give_up(self) -> None:
        self.given_up = True

    def close(self) -> None:
        self.closed = True
        self._stop.set()


class Link:
    """The watcher's end: sends the front what the watcher scored, answers its scrapes
    with ``feed``'s pieces (``mirror.Feed``, ``join.JoinFeed``), and takes its counters
    into the watcher's ``/metrics``."""

    def __init__(self, watcher, front: FrontEnd, spool_dir: Path | None, *, feed):
        self.watcher = watcher
        self.front = front
        self.prefix = str(spool_dir) + os.sep if spool_dir is not None else None
        self.feed = feed   # the scrape's pieces the front serves /metrics from
        #: what the front was told (or is about to be): path -> (bytes scored, steering)
        self._sent: dict[Path, tuple[int, str | None]] = {}
        self._outbox: dict[str, tuple[int, str | None] | None] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()   # two threads send: whole messages, in turn
        self._wake = threading.Event()
        self._asks: queue.SimpleQueue = queue.SimpleQueue()   # scrapes the front asks about
        self.closed = False
        #: the counts the current front last reported (it counts from 0 when started)
        self._last = {name: Counter() for name in COUNTERS}
        self.sock, buf, first = front.connect()
        self._after_ready = (buf, first)
        if self.prefix is not None:
            watcher.listeners.append(self.scored)
            # steering decided at a tick (time budgets) reaches the front without a batch
            watcher.tick_hooks.append(lambda _w, _now: self.scored())
        self._reader = threading.Thread(target=self._read, name="front-link", daemon=True)
        self._reader.start()
        self._sender = threading.Thread(target=self._send_loop, name="front-send", daemon=True)
        self._sender.start()
        threading.Thread(target=self._metrics_loop, name="front-metrics", daemon=True).start()

    @property
    def given_up(self) -> bool:
        return self.front.given_up

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
                send(sock, message)
            return True
        except OSError:
            return False   # the front is gone: the reader makes another link, which gets all

    def _metrics_loop(self) -> None:
        """The pieces of a scrape for each question of the front, and unasked every
        ``PUSH_EVERY`` seconds while a format was scraped in the last ``PUSH_FOR``: a
        front whose question the watcher cannot answer in time serves recent ones."""
        asked: dict[bool, float] = {}   # format -> when last scraped
        primed = None
        while not (self.closed or self.given_up):
            with self._lock:
                sock = self.sock
            if sock is not primed:
                # a front new to the pieces (started, or started again) gets both formats
                # now: its first scrape is served from them, not after the watcher's
                # first answer (145.5 ms in a soak: data/issue18-mirror/soak-new-unprimed)
                primed, questions = sock, []
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
                if asker is sock:   # a question of a link gone (made again) is not this one's
                    answers.append(m["scrape"])
            if not questions:
                todo = {om: [] for om, at in asked.items() if now - at < mirror.PUSH_FOR}
            for om, numbers in todo.items():
                try:
                    pieces = self.feed.pieces(om, sock)
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
                messages = lines(self.sock, buf)
            except OSError:
                messages = None
            except ValueError:   # not a message of ours: a front gone wrong
                log.error("the front sent a line that is not a message; stopping it")
                self._kill()
                messages = None
            if messages is None:
                if not self._again():
                    return
                buf, messages = self._after_ready
            self._take(messages)

    def _kill(self) -> None:
        proc = getattr(self.front, "proc", None)
        if proc is not None:
            proc.kill()
        else:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _again(self) -> bool:
        """A new link in place of the broken one (a front started again, or connected
        to again); False when there is none to be had."""
        if self.closed or not self.front.lost():
            return False
        for last in self._last.values():
            last.clear()
        try:
            sock, buf, first = self.front.connect()
        except Exception:   # noqa: BLE001 - said, and given up
            if not self.closed:
                log.exception("the front could not be started again")
            self.front.give_up()
            return False
        self._after_ready = (buf, first)
        with self._lock:
            old, self.sock = self.sock, sock
            # the new front knows nothing scored yet: all of it, now
            self._outbox = {str(p): v for p, v in self._sent.items()}
        old.close()
        self._wake.set()
        if self.closed:   # stopped meanwhile
            self._kill()
            return False
        return True

    def _take(self, messages: list[dict]) -> None:
        for m in messages:
            if "scrape" in m:   # a question of this front's: answered to it only
                self._asks.put((self.sock, m))
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

    def close(self) -> None:
        self.closed = True
        self._wake.set()
        self._asks.put(None)
        with self._lock:
            sock = self.sock
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.front.close()
        self._reader.join(5)
        sock.close()
