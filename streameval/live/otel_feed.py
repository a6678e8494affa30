"""The watcher's runs out as OpenTelemetry evaluations (``watch --otlp-endpoint``).

Wired like the abort engine (``abort.engine.attach``): a tick hook on the watcher sends
each finished run's record, once per record written (a record rewritten for a late patch
is sent again: the last one counts), and, with ``--otlp-live``, a running run's scores
whenever they changed and at most every ``live_interval`` seconds. A run an abort policy
stopped carries the decision as its metrics' label (``report.otel``).

Runs on the watcher's loop thread; the emitter only queues (its exporter thread sends).
"""

from __future__ import annotations

import logging
from typing import Any

from streameval.report.otel import Abort, EvaluationEmitter, from_record, from_snapshot

log = logging.getLogger(__name__)


class OtelFeed:
    """What was sent per run, so each record and each live change is sent once."""

    def __init__(self, emitter: EvaluationEmitter, live_interval: float | None = None,
                 engine: Any = None):
        self.emitter = emitter
        self.live_interval = live_interval
        #: the abort engine, when one is attached: its decisions give the labels
        self.engine = engine
        #: run key -> session version whose record was sent
        self._final: dict[str, int] = {}
        #: run key -> (session version, when) of the last live update sent
        self._live: dict[str, tuple[int, float]] = {}

    def on_tick(self, watcher, now: float) -> None:
        with watcher.table.lock:
            runs = list(watcher.table.runs.values())
        for run in runs:
            session = run.session
            if run.record_written:
                version = run.checked_version
                if version is not None and self._final.get(run.key) != version:
                    self._final[run.key] = version
                    self.emitter.emit(from_record(session.record(), self._aborts(run)))
            elif self.live_interval is not None and not run.finished:
                last = self._live.get(run.key)
                if last is not None and (last[0] == session.version
                                         or now - last[1] < self.live_interval):
                    continue
                self._live[run.key] = (session.version, now)
                self.emitter.emit(from_snapshot(session.snapshot(), self._aborts(run)))
        live = {run.key for run in runs}
        for seen in (self._final, self._live):
            for key in [k for k in seen if k not in live]:
                del seen[key]

    def _aborts(self, run) -> list[Abort]:
        """The decisions that fired for ``run`` (its policies; the reason and dry-run
        flag from the engine's recent decisions when it still has them)."""
        if not run.aborted:
            return []
        known = {}
        if self.engine is not None:
            ident = run.session.identity
            for d in self.engine.decisions:
                if d.run_key == run.key and d.run_id == ident.run_id:
                    known[d.policy] = d
        out = []
        for policy, action in run.aborted.items():
            d = known.get(policy)
            out.append(Abort(policy, action, d.reason if d else None,
                             bool(d.dry_run) if d else False))
        return out


def attach(watcher, emitter: EvaluationEmitter, live_interval: float | None = None,
           engine: Any = None) -> OtelFeed:
    """Send ``watcher``'s evaluations through ``emitter`` from its ticks."""
    feed = OtelFeed(emitter, live_interval, engine)
    watcher.tick_hooks.append(feed.on_tick)
    return feed


__all__ = ["OtelFeed", "attach"]
