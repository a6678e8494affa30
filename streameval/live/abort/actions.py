"""What an abort decision does: a file beside the trace, a webhook POST, a signal.

None blocks evaluation: the file is one small atomic write, a signal one syscall, and
webhooks go through a bounded queue to one worker thread with a timeout and a bounded
number of retries.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import queue
import socket
import threading
import urllib.parse
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path

from streameval.fileio import read_limited, write_atomic
from streameval.live.abort.policy import ABORT_NAME, Decision, WebhookConfig

log = logging.getLogger(__name__)



class WebhookSender:
    """One daemon worker posting JSON, with a deadline and bounded retries per item.

    ``submit`` never blocks: a full queue drops the item (counted). A dead or trickling
    endpoint costs the worker at most ``(retries + 1) * timeout`` plus backoff per item
    (``timeout`` bounds a whole attempt), never the evaluator.
    """

    def __init__(self, cfg: WebhookConfig):
        self.cfg = cfg
        self.queue: queue.Queue = queue.Queue(maxsize=cfg.queue_size)
        self.counts: Counter = Counter()   # sent, gave_up, dropped, attempts
        self.results: deque = deque(maxlen=200)
        self._cond = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: told "delivered" or "failed" once per queued decision (the exporter's counts)
        self.on_outcome: Callable[[str], None] | None = None

    def submit(self, url: str, payload: dict) -> bool:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="streameval-webhook",
                                                daemon=True)
                self._thread.start()
            try:
                self.queue.put_nowait((url, payload))
            except queue.Full:
                self.counts["dropped"] += 1
                log.warning("abort webhook queue full; dropped the decision for %s", url)
                return False
            self._pending += 1
        return True

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                url, payload = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._deliver(url, payload)
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()

    def _deliver(self, url: str, payload: dict) -> None:
        body = json.dumps(payload).encode()
        error = ""
        for attempt in range(1, self.cfg.retries + 2):
            self.counts["attempts"] += 1
            try:
                status = post_json(url, body, self.cfg.timeout)
                if 200 <= status < 300:
                    self._done("delivered", url, payload, attempt)
                    return
                error = f"HTTP {status}"
                if 400 <= status < 500 and status != 429:
                    break  # the endpoint refuses this payload: retrying will not help
            except (OSError, ValueError) as exc:
                error = str(exc) or type(exc).__name__
            if attempt <= self.cfg.retries and self._stop.wait(self.cfg.backoff * attempt):
                break
        self._done("failed", url, payload, attempt, error)
        log.warning("abort webhook %s gave up after %d attempt(s): %s", url, attempt, error)

    def _done(self, outcome: str, url: str, payload: dict, attempt: int, error: str = "") -> None:
        self.counts["sent" if outcome == "delivered" else "gave_up"] += 1
        self.results.append({"url": url, "ok": outcome == "delivered", "attempts": attempt,
                             "policy": payload.get("policy"), **({"error": error} if error else {})})
        if self.on_outcome is not None:
            self.on_outcome(outcome)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted item was delivered or given up (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def post_json(url: str, body: bytes, deadline: float) -> int:
    """POST ``body``; the HTTP status. ``deadline`` bounds the whole exchange, not each
    socket operation: an endpoint that answers one byte a second is cut off at the
    deadline (a watchdog shuts the socket), so it cannot wedge the worker."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=deadline)
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(deadline, cut)
    timer.daemon = True
    timer.start()
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read(1 << 16)
        if expired.is_set():
            raise TimeoutError(f"no whole answer within {deadline:g} s")
        return resp.status
    except (OSError, http.client.HTTPException) as exc:
        # the watchdog's cut, or the socket's own timeout (the same deadline) when it
        # fires first: either way the endpoint did not answer in time
        if expired.is_set() or isinstance(exc, TimeoutError):
            raise TimeoutError(f"no whole answer within {deadline:g} s") from exc
        raise OSError(str(exc) or type(exc).__name__) from exc
    finally:
        timer.cancel()
        conn.close()


def write_abort_file(directory: Path, decision: Decision) -> str:
    """Write ``ABORT`` beside the trace atomically (tmp + rename); returns the outcome.

    The file holds the latest decision plus every earlier one for that directory,
    so a harness reading it sees why. A decision already in the file (a restarted
    watcher re-reading the trace) is not written again.
    """
    target = directory / ABORT_NAME
    previous: list = []
    try:
        old = json.loads(read_limited(target) or b"null")
        previous = list(old.get("decisions", [])) if isinstance(old, dict) else []
    except (OSError, ValueError):   # a FIFO, a symlink, junk: written anew
        previous = []
    if any(isinstance(d, dict) and d.get("run_id") == decision.run_id
           and d.get("policy") == decision.policy for d in previous):
        return "exists"
    mine = {**decision.to_json(), "outcome": "written"}  # what the file says once it exists
    doc = {**mine, "decisions": [*previous, mine]}
    try:
        # a fresh O_EXCL name, never a predictable one an agent could plant a symlink at
        write_atomic(target, (json.dumps(doc, indent=1) + "\n").encode())
    except OSError as exc:
        log.error("cannot write %s: %s", target, exc)
        return "failed"
    return "written"


def send_signal(pid: int | None, signum: int, noted_at: float | None = None) -> str:
    """Signal the agent's process; the outcome names why nothing happened, if so.

    The pid comes from a file the agent can write, so it is checked first: never init,
    never this watcher or a process it runs under (``refused``), and never a process
    that started after ``noted_at`` (when ``meta.json`` named the pid): that pid was
    reused by another program since (``pid_reused``).
    """
    if pid is None:
        return "no_pid"
    if pid <= 1 or pid in _ancestors():
        return "refused"
    started = process_started_at(pid)
    if started is not None and noted_at is not None and started > noted_at + _CLOCK_SLACK:
        log.warning("pid %d started at %.0f, after meta.json named it (%.0f): a reused pid; "
                    "not signalled", pid, started, noted_at)
        return "pid_reused"
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return "no_process"
    except PermissionError:
        return "not_permitted"
    return "signalled"


#: clock ticks of /proc start times and mtime granularity: a second is plenty
_CLOCK_SLACK = 2.0


def _ancestors() -> set[int]:
    """This process and every process above it (Linux /proc; just us elsewhere)."""
    out, pid = {os.getpid()}, os.getppid()
    while pid > 1 and pid not in out:
        out.add(pid)
        stat = _proc_stat(pid)
        if stat is None:
            break
        pid = int(stat[1])
    return out


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state is [0], ppid [1])."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            text = fh.read(4096).decode("ascii", "replace")
    except OSError:
        return None
    # the name is in parentheses and may hold spaces and ')': cut at the last one
    return text[text.rfind(")") + 2:].split()


def process_started_at(pid: int) -> float | None:
    """Epoch seconds when ``pid`` started (Linux /proc), None when unknown."""
    stat = _proc_stat(pid)
    if stat is None or len(stat) < 20:
        return None
    try:
        with open("/proc/stat", "rb") as fh:
            btime = next(int(line.split()[1]) for line in fh if line.startswith(b"btime "))
        return btime + int(stat[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return None
