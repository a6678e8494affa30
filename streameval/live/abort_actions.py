"""What an abort decision does: a file beside the trace, a webhook POST, a signal.

None blocks evaluation: the file is one small atomic write, a signal one syscall, and
webhooks go through a bounded queue to one worker thread with a timeout and a bounded
number of retries.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import urllib.error
import urllib.request
from collections import Counter, deque
from pathlib import Path

from ..sidefiles import read_limited, write_atomic
from .abort_policy import ABORT_NAME, Decision, WebhookConfig

log = logging.getLogger(__name__)



class WebhookSender:
    """One daemon worker posting JSON, with a timeout and bounded retries per item.

    ``submit`` never blocks: a full queue drops the item (counted). A dead endpoint
    costs the worker ``(retries + 1) * timeout`` plus backoff per item, never the
    evaluator.
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
                req = urllib.request.Request(url, data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=self.cfg.timeout) as resp:
                    resp.read(1 << 16)
                self.counts["sent"] += 1
                self.results.append({"url": url, "ok": True, "attempts": attempt,
                                     "policy": payload.get("policy")})
                return
            except urllib.error.HTTPError as exc:
                error = f"HTTP {exc.code}"
                exc.close()  # it holds the response's socket
                if 400 <= exc.code < 500 and exc.code != 429:
                    break  # the endpoint refuses this payload: retrying will not help
            except (OSError, ValueError) as exc:
                error = str(exc)
            if attempt <= self.cfg.retries and self._stop.wait(self.cfg.backoff * attempt):
                break
        self.counts["gave_up"] += 1
        self.results.append({"url": url, "ok": False, "attempts": attempt, "error": error,
                             "policy": payload.get("policy")})
        log.warning("abort webhook %s gave up after %d attempt(s): %s", url, attempt, error)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted item was delivered or given up (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


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


def send_signal(pid: int | None, signum: int) -> str:
    """Signal the agent's process; the outcome names why nothing happened, if so."""
    if pid is None:
        return "no_pid"
    if pid <= 1 or pid == os.getpid():
        return "refused"
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return "no_process"
    except PermissionError:
        return "not_permitted"
    return "signalled"
