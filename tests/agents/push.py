"""A watcher with ``--ingest`` for the real-client tests: it serves the ingest routes on a
free port and follows its runs directory from one background thread, as ``watch`` does.
As ``watch --ingest`` does by default, it makes a token in a file only its user reads
(``live.pushtoken``); the agents are given it as a user would, from that file."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from streameval.live.abort.engine import AbortEngine, attach, parse_policies
from streameval.live.ingest import SPOOL_NAME, ingest_routes
from streameval.live.pushtoken import push_token
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher


class PushWatcher:
    """``with PushWatcher(setup) as pw: ... pw.url`` -> the base URL agents push to."""

    def __init__(self, setup, abort_toml: str | None = None):
        self.setup = setup
        #: the token ``watch --ingest --ingest-token-file FILE`` makes (FILE is new)
        self.token_file = setup.root / "ingest-token"
        self.token = push_token(None, self.token_file).value
        self.w = Watcher(WatchConfig(root=setup.runs, idle_timeout=3600, patch_grace=0.0,
                                     rescan_interval=0.0), setup.resources())
        self.engine = attach(self.w, AbortEngine(parse_policies(abort_toml, "t.toml"))) \
            if abort_toml else None
        self.app = ingest_routes(self.w, self.token)
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self) -> PushWatcher:
        self.setup.runs.mkdir(parents=True, exist_ok=True)
        self.server, _reg, self.port = serve(self.w.table, "127.0.0.1", 0, ingest=self.app)
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.step()
            time.sleep(0.02)

    def step(self) -> None:
        with self._lock:
            self.w.scan()
            self.w.poll_all()
            self.app.settle()   # the tick hook watch's ticker calls: transcripts read once more

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        self.server.close()
        if self.engine is not None:
            self.engine.close()

    def finish(self) -> list[dict]:
        """End every run as the watcher would once the agent is gone; their records."""
        with self._lock:
            self.w.scan()
            self.w.poll_all()
            self.w.tick(now=time.time() + 2 * self.w.cfg.idle_timeout)
            return [r.session.record() for r in self.w.table.runs.values()]

    def traces(self, source: str) -> list[Path]:
        return sorted((self.setup.runs / SPOOL_NAME / source).glob("*/trace.jsonl"))
