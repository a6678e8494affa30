"""``watch --workers N``: N scoring processes, a front, and their supervisor.

One CPython process scores on one core. With N workers, each a watcher of its own
(``live.watch``, ``live.shard`` says which traces are its), the scoring of many runs
takes N cores; one run is on one worker for life. The front (``live.front``) serves the
port as for one watcher, and joins what the workers send. This process, the one
``streameval watch`` started, starts them all and keeps them going:

- it binds the public port and hands it to the front; starts the front again should it
  die, its counters going on from where they were;
- it starts the workers, each told the options of the command and its part (``Plan``);
  answers what they must agree on (run ids, who follows a path: ``live.arbiter``);
- it starts a worker that died again at once, with its runs: the new one reads its
  checkpoint (``resume.part``) and every trace of its own again, as a restarted watcher
  does, and takes over the run ids and paths of the one before. After ``MAX_STARTS``
  starts of one worker within ``RESTART_WINDOW`` seconds it stops everything: a worker
  that cannot stay up leaves runs no one scores;
- on SIGTERM or SIGINT it stops the workers (each saves its checkpoint and sends its
  counts), then the front; the exit summary adds up the workers' (``narrate.Tally``).

Every child dies with it (``PR_SET_PDEATHSIG``): a SIGKILL of this process stops them
all, and ``watch`` started again resumes them all.
"""

from __future__ import annotations

import logging
import os
import pickle
import selectors
import signal
import socket
import struct
import subprocess
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from streameval import config
from streameval.live.arbiter import Arbiter
from streameval.live.link import COUNTERS, FrontProcess, frame, lines
from streameval.live.narrate import Tally

log = logging.getLogger("streameval.watch")


@dataclass
class Plan:
    """What worker ``index`` of ``count`` is told when it starts, beside the options."""

    index: int
    count: int
    #: the front's socket, which the worker links to (``link.FrontSocket``)
    links: str
    #: where the worker serves its page and its own scrape, for the front
    upstream: str
    #: its own checkpoint (``resume.part``), and those it reads too (``resume.foreign``)
    checkpoint: str | None = None
    foreign: list[str] = field(default_factory=list)
    #: started again after it died
    again: bool = False


def send_start(sock: socket.socket, args: Any, plan: Plan) -> None:
    """The options and the plan, to a worker: the options as ``argparse`` made them,
    pickled (both ends are this program, on a socket pair no one else holds)."""
    blob = pickle.dumps({"args": args, "plan": asdict(plan)})
    sock.sendall(struct.pack("!I", len(blob)) + blob)


def read_start(sock: socket.socket) -> tuple[Any, Plan]:
    def exactly(n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the supervisor is gone")
            data += chunk
        return bytes(data)

    blob = exactly(struct.unpack("!I", exactly(4))[0])
    start = pickle.loads(blob)   # noqa: S301 - our own supervisor, over a private socket pair
    return start["args"], Plan(**start["plan"])


class _Worker:
    """A worker process and its end of the control socket."""

    def __init__(self, plan: Plan, proc: subprocess.Popen, sock: socket.socket):
        self.plan = plan
        self.proc = proc
        self.sock = sock
        self.buf = bytearray()
        self.ready = False
        self.tally: Tally | None = None


class Supervisor:
    """Starts the front and ``count`` workers running ``command`` (a worker's program),
    and keeps them going until a signal."""

    MAX_STARTS = 5
    RESTART_WINDOW = 60.0
    #: seconds the workers have to stop (their checkpoint saved) before they are killed
    STOP_WAIT = 60.0

    def __init__(self, command: list[str], args: Any, plans: list[Plan], arbiter: Arbiter,
                 public: socket.socket, front_settings: dict, save_every: float = 5.0):
        self.command = command
        self.args = args
        self.plans = plans
        self.arbiter = arbiter
        self.save_every = save_every
        self.sel = selectors.DefaultSelector()
        self.workers: dict[int, _Worker] = {}
        self.starts: dict[int, list[float]] = {p.index: [] for p in plans}
        self.stopping = False
        self.failed: str | None = None
        self.front = FrontProcess(public, front_settings)
        #: the front's counters: those of the fronts before the current one, and its own
        self._front_base: dict[str, Counter] = {name: Counter() for name in COUNTERS}
        self._front_now: dict[str, Counter] = {name: Counter() for name in COUNTERS}
        self._front_thread: threading.Thread | None = None
        self._front_sock: socket.socket | None = None

    # ------------------------------------------------------------------ starting
    def start(self) -> str | None:
        """The front, then every worker; waits until each has loaded what it needs.
        Returns worker 0's start line; a ``RuntimeError`` (the front) or a
        ``WorkerError`` (a worker's usage error, with its exit code)."""
        sock, _buf, _first = self.front.connect()
        self._front_sock = sock
        self._front_thread = threading.Thread(target=self._front_loop, args=(sock,),
                                              name="front-link", daemon=True)
        self._front_thread.start()
        for plan in self.plans:
            self._spawn(plan)
        firsts = {index: self._first(self.workers[index]) for index in sorted(self.workers)}
        for first in firsts.values():
            if "error" in first:
                self.stop()
                raise WorkerError(first["error"], first.get("code", 2))
        return firsts[0].get("ready")

    def _spawn(self, plan: Plan) -> None:
        mine, theirs = socket.socketpair()
        self.starts[plan.index].append(time.monotonic())
        env = config.restarted_env() if plan.again else dict(os.environ)
        try:
            proc = subprocess.Popen([*self.command, str(theirs.fileno()), f"worker-{plan.index}"],
                                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env)
        finally:
            theirs.close()
        send_start(mine, self.args, plan)
        worker = self.workers[plan.index] = _Worker(plan, proc, mine)
        self.sel.register(mine, selectors.EVENT_READ, worker)

    def _first(self, worker: _Worker) -> dict:
        """A worker's first message: ``ready`` (its start line) or ``error``."""
        while True:
            got = lines(worker.sock, worker.buf)
            if got is None:
                code = worker.proc.wait()
                return {"error": f"worker {worker.plan.index} stopped as it started "
                                 f"(exit {code})", "code": 1}
            if got:
                worker.ready = True
                for m in got[1:]:
                    self._answer(worker, m)
                return got[0]

    # ------------------------------------------------------------------ running
    def run(self) -> int:
        """Until SIGTERM or SIGINT (or a worker that keeps dying: exit 1)."""
        def stop(_signum, _frame) -> None:
            self.stopping = True

        old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        saved = time.monotonic()
        try:
            while not self.stopping:
                self._serve(0.2)
                if time.monotonic() - saved >= self.save_every:
                    saved = time.monotonic()
                    self.arbiter.save()
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
        return 1 if self.failed else 0

    def _serve(self, timeout: float) -> None:
        for key, _mask in self.sel.select(timeout):
            worker: _Worker = key.data
            try:
                got = lines(worker.sock, worker.buf)
            except (OSError, ValueError):
                got = None
            if got is None:
                self._died(worker)
                continue
            for m in got:
                if not worker.ready:   # a worker started again: its first message
                    worker.ready = True
                    if "error" in m:
                        if not self.stopping:
                            log.error("worker %d could not start again: %s", worker.plan.index,
                                      m["error"])
                        continue
                self._answer(worker, m)

    def _answer(self, worker: _Worker, m: dict) -> None:
        if "summary" in m:
            worker.tally = Tally(**m["summary"])
            return
        if "ready" in m:
            return
        if "started" in m and worker.plan.again:
            log.info("worker %d started again has read its checkpoint and its traces; it "
                     "scores its runs from where they were", worker.plan.index)
        for index, answer in self.arbiter.handle(worker.plan.index, m):
            to = self.workers.get(index)
            try:
                to.sock.sendall(frame(answer))
            except (OSError, AttributeError):
                pass   # it died: its socket says so next

    def _died(self, worker: _Worker) -> None:
        self.sel.unregister(worker.sock)
        worker.sock.close()
        code = worker.proc.wait()
        index = worker.plan.index
        if self.stopping:
            return
        self.arbiter.lost(index)
        now = time.monotonic()
        recent = [t for t in self.starts[index] if now - t < self.RESTART_WINDOW]
        self.starts[index] = recent
        if len(recent) >= self.MAX_STARTS:
            self.failed = (f"worker {index} stopped (exit {code}) for the {self.MAX_STARTS}(th) "
                           f"time within {self.RESTART_WINDOW:.0f} s; stopping: its runs would "
                           "not be scored")
            log.error("%s", self.failed)
            self.stopping = True
            return
        log.error("worker %d stopped (exit %s); starting it again with its runs (it reads its "
                  "checkpoint and its traces again: nothing is lost or counted twice)", index, code)
        plan = Plan(**{**asdict(worker.plan), "again": True})
        self._spawn(plan)

    # ------------------------------------------------------------------ the front
    def _front_loop(self, sock: socket.socket) -> None:
        """The front's counters, kept across its restarts; a front that died started
        again (from this long-lived thread: the front dies with the thread that
        started it)."""
        buf = bytearray()
        while True:
            try:
                got = lines(sock, buf)
            except (OSError, ValueError):
                got = None
            if got is None:
                for name in COUNTERS:   # what the dead front counted goes on
                    self._front_base[name] += self._front_now[name]
                    self._front_now[name] = Counter()
                self.front.settings["counter_base"] = {
                    name: [[list(k) if isinstance(k, tuple) else k, n] for k, n in c.items()]
                    for name, c in self._front_base.items()}
                if self.stopping or not self.front.lost():
                    return
                try:
                    sock, buf, _first = self.front.connect()
                    self._front_sock = sock
                except Exception:   # noqa: BLE001 - said; the port is closed
                    log.exception("the front could not be started again")
                    self.front.give_up()
                    return
                continue
            for m in got:
                for name in COUNTERS:
                    if name in m:
                        self._front_now[name] = Counter(
                            {tuple(k) if isinstance(k, list) else k: n for k, n in m[name]})

    # ------------------------------------------------------------------ stopping
    def stop(self) -> Tally | None:
        """Stop the workers (each saves its checkpoint and sends its counts), then the
        front; the workers' counts added up (None: none sent any)."""
        self.stopping = True
        for worker in self.workers.values():
            if worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.STOP_WAIT
        while self.sel.get_map() and time.monotonic() < deadline:
            self._serve(0.2)   # their last words: releases, and their counts
        for worker in self.workers.values():
            if worker.proc.poll() is None:
                worker.proc.kill()
                worker.proc.wait()
        self.arbiter.close()
        self.front.closed = True
        sock = self._front_sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)   # the front stops when its link ends
            except OSError:
                pass
        self.front.close()
        if self._front_thread is not None:
            self._front_thread.join(5)
        if sock is not None:
            sock.close()
        tally = None
        for index in sorted(self.workers):
            t = self.workers[index].tally
            if t is None:
                # never a silent short count: the summary below leaves its runs out
                log.warning("worker %d sent no counts before it stopped: the summary leaves "
                            "its runs out", index)
            elif tally is None:
                tally = t
            else:
                tally.add(t)
        return tally


class WorkerError(Exception):
    """A worker could not start: its message and the exit code it asks for."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code
