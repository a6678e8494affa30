"""The table of runs a process is watching, shared by the watcher and the exporter.

The watcher mutates sessions on its event loop; the exporter reads them from the
HTTP server's thread at scrape time. One lock, held per processed batch and per
scrape, keeps a scrape from seeing half a step.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streameval.scoring.session import RunSession
from streameval.traces.identity import RunIds

log = logging.getLogger(__name__)


def run_key(trace, index: int) -> str:
    """The table key of a trace file's ``index``-th run: the file's path, suffixed
    ``#n`` after the first (OpenHands ``output.jsonl`` holds one run per line)."""
    return str(trace) if index == 0 else f"{trace}#{index}"


@dataclass(slots=True)
class LiveRun:
    """One watched run: its session plus what only the live side knows."""

    key: str                      # stable key: trace path (+ "#n" for multi-run files)
    session: RunSession
    first_seen: float = field(default_factory=time.time)
    finished_at: float | None = None   # when the run was judged ended (end event / idle)
    record_written: bool = False
    #: session version whose record was last written or found already written
    checked_version: int | None = None
    aborted: dict[str, str] = field(default_factory=dict)  # policy -> action, once each
    #: the run as the last scrape exported it (``exporter.Exported``): reused while
    #: the run does not move, served again when a long batch holds the lock
    exported: Any = None
    #: why a policy stopped this run: a hook-connected agent's next call is denied with it
    steer: str | None = None

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class EvaluatorStats:
    """Counters about streameval itself (not about the agents)."""

    LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

    def __init__(self) -> None:
        self.lines_processed = 0
        self.bad_lines: Counter = Counter()
        self.events: Counter = Counter()   # restarts, truncations, replacements, deletions...
        self.aborts: Counter = Counter()   # (policy, action) -> n
        self.abort_outcomes: Counter = Counter()   # (action, outcome) -> n
        self.unscored: Counter = Counter()  # reason -> runs that could not be scored
        self.clamped: Counter = Counter()  # reason -> values from traces clamped (``sane``)
        self.output_errors: Counter = Counter()  # output (out, checkpoint...) -> failed writes
        self.ingest_requests: Counter = Counter()  # (route, status) -> pushed requests
        #: reason -> HTTP requests and connections refused (slow, too big, busy, ...)
        self.http_refused: Counter = Counter()
        #: (route, reason) -> pushed entries not stored (OTLP records without a usable
        #: session id, ...) although the request was answered
        self.ingest_rejected: Counter = Counter()
        #: route -> pushed entries already stored (a client's retry), answered again
        self.ingest_duplicates: Counter = Counter()
        self.lag_counts = [0] * (len(self.LAG_BUCKETS) + 1)
        self.lag_sum = 0.0
        self.lag_count = 0
        self.backlog_bytes = 0   # written, not yet processed (summed at every tick)

    #: the counters by label (all but the lag histogram and the two plain numbers)
    LABELLED = ("bad_lines", "events", "aborts", "abort_outcomes", "unscored", "clamped",
                "output_errors", "ingest_requests", "http_refused", "ingest_rejected",
                "ingest_duplicates")

    def message(self) -> dict:
        """The counters as JSON values (a tuple key as a list), for the front of several
        workers to add up (``add``)."""
        return {"lines_processed": self.lines_processed, "backlog_bytes": self.backlog_bytes,
                "lag": [self.lag_counts, self.lag_sum, self.lag_count],
                **{name: [[list(k) if isinstance(k, tuple) else k, n]
                           for k, n in dict(getattr(self, name)).items()]
                   for name in self.LABELLED}}

    def add(self, message: dict) -> None:
        """Add the counters of ``message`` (``message()`` of another's)."""
        self.lines_processed += message["lines_processed"]
        self.backlog_bytes += message["backlog_bytes"]
        counts, total, n = message["lag"]
        self.lag_counts = [a + b for a, b in zip(self.lag_counts, counts)]
        self.lag_sum += total
        self.lag_count += n
        for name in self.LABELLED:
            counter = getattr(self, name)
            for key, value in message.get(name, ()):
                counter[tuple(key) if isinstance(key, list) else key] += value

    def observe_lag(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        for i, bound in enumerate(self.LAG_BUCKETS):
            if seconds <= bound:
                self.lag_counts[i] += 1
                break
        else:
            self.lag_counts[-1] += 1
        self.lag_sum += seconds
        self.lag_count += 1


class RunTable:
    """Runs by key, with the lock and the evaluator's own statistics."""

    def __init__(self, keep_finished_seconds: float = 3600.0):
        self.lock = threading.RLock()
        self.runs: dict[str, LiveRun] = {}
        self.stats = EvaluatorStats()
        self.keep_finished_seconds = keep_finished_seconds
        self.caches: list[tuple[str, Any]] = []  # (name, object with .hits/.misses)
        self.on_add: list = []  # called with each new run (abort policies track it)
        #: called with a run whose record was just written, under the lock (the
        #: exporter renders its series then, once, instead of at the next scrape)
        self.on_settled: list = []

        self.run_ids = RunIds()   # no two runs share a run id (their label sets)
        self._unscored: set[str] = set()
        self._over_warned = False

    def unscored(self, key: str, identity: Any, error: str) -> None:
        """A run that cannot be scored (no gold row, no repository...): said once per
        run, and counted by reason (``streameval_unscored_runs_total``)."""
        if key in self._unscored:
            return   # the same run read again (a restart of its file)
        self._unscored.add(key)
        reason = error.split(":", 1)[0]
        self.stats.unscored[reason] += 1
        log.warning("run %s (%s, %s) cannot be scored: %s", identity.run_id,
                    identity.instance_id, identity.trace or key, error)

    def add(self, run: LiveRun) -> None:
        with self.lock:
            self.runs[run.key] = run
        for hook in self.on_add:
            hook(run)

    def settled(self, run: LiveRun) -> None:
        for hook in self.on_settled:
            hook(run)

    def remove(self, key: str) -> LiveRun | None:
        with self.lock:
            run = self.runs.pop(key, None)
            if run is not None:
                self._left(run)
            return run

    def _left(self, run: LiveRun) -> None:
        """A run left the table: nothing of it stays (its run id, its unscored mark)."""
        self.run_ids.release(run.session.identity.run_id)
        self._unscored.discard(run.key)

    def expire(self, now: float | None = None, hold=None, max_runs: int | None = None) -> list[str]:
        """Drop finished runs older than ``keep_finished_seconds``, except those
        ``hold(run)`` keeps for now; then, past ``max_runs``, the finished ones that
        finished first (content can make runs without end: an ``output.jsonl`` naming a
        new instance on every line). Returns their keys."""
        now = time.time() if now is None else now
        with self.lock:
            old = [k for k, r in self.runs.items()
                   if r.finished_at is not None and now - r.finished_at > self.keep_finished_seconds
                   and not (hold is not None and hold(r))]
            for k in old:
                self._left(self.runs.pop(k))
            over = len(self.runs) - max_runs if max_runs is not None else 0
            if over > 0:
                done = sorted((r.finished_at, k) for k, r in self.runs.items()
                              if r.finished_at is not None and not (hold is not None and hold(r)))
                evicted = [k for _, k in done[:over]]
                for k in evicted:
                    self._left(self.runs.pop(k))
                self.stats.events["evicted"] += len(evicted)
                if len(evicted) < over and not self._over_warned:
                    self._over_warned = True
                    log.warning("%d runs in memory, over --max-runs %d: the rest are still "
                                "active or owe their record", len(self.runs), max_runs)
                old += evicted
        return old

    def counts(self) -> tuple[int, int]:
        """(active, finished) runs."""
        with self.lock:
            finished = sum(1 for r in self.runs.values() if r.finished)
            return len(self.runs) - finished, finished
