"""Prometheus exposition of the live runs: a custom collector over ``RunTable``.

Families are built from the sessions at scrape time (the ``gc_collector`` pattern of
client_python): no per-step ``Gauge.labels()`` churn on the hot path, and a run's
series disappear by themselves once the table drops it. The registry is passed in;
tests build a fresh ``CollectorRegistry()``.

Names follow Prometheus conventions: ``streameval_`` prefix, base units, ``_ratio``
for 0..1 values, ``_total`` for counters. The README lists every family.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from streameval.live import fleet
from streameval.live.fleet import Fleet, FleetEntry, FleetNumbers, fleet_entry
from streameval.live.table import EvaluatorStats, LiveRun, RunTable
from streameval.model import CATEGORIES, GRANULARITIES
from streameval.scoring.snapshot import RunSnapshot, token_counts
from streameval.untrusted import bounded

RUN_LABELS = ("run_id", "instance_id", "agent", "model")
GATHER_SLICE = 64   # runs read per lock hold during a scrape
#: characters of a label value exported (run_id, instance_id, agent, model, experiment)
MAX_LABEL = 200
LOCK_WAIT = 0.05    # seconds a scrape waits for the table lock before serving cached rows
#: runs whose per-run series are exported at most (``watch --per-run-series``)
PER_RUN_SERIES = 1000

# family name -> help; kept in one place so the README table can be generated from it
HELP: dict[str, str] = {
    "streameval_coverage_ratio": "Coverage |G∩P|/|G| of the context read so far (docs/metrics.md §3).",
    "streameval_precision_ratio": "Precision |G∩P|/|P| of the context read so far.",
    "streameval_f1_ratio": "F1 = 2PR/(P+R) of coverage and precision so far, 0 when both are 0 (docs/metrics.md §3).",
    "streameval_auc_coverage_ratio": "Mean per-step coverage so far (AUC-coverage).",
    "streameval_redundancy_ratio": "1 - |union of steps| / Σ|step| so far.",
    "streameval_gold_size": "|G|: gold files, symbols, bytes or lines of the instance.",
    "streameval_steps_total": "Retrieval steps (tool calls that showed repo code).",
    "streameval_tool_calls_total": "Tool calls by category (read, search, edit, test, git, env, build, quality, run, other).",
    "streameval_sidechain_tool_calls_total": "Tool calls made by sub-agents (kept apart, not scored).",
    "streameval_shown_lines_total": "Lines of repo files the run was shown, by outcome: aligned (placed on a base line), agent_written (no base counterpart), unaligned (credited from the command's window, text not compared).",
    "streameval_read_lines": "Distinct base-commit lines read so far.",
    "streameval_read_bytes": "Distinct base-commit bytes read so far.",
    "streameval_editloc_recall_ratio": "EditLoc recall; final=\"false\" while provisional (edits seen so far).",
    "streameval_editloc_precision_ratio": "EditLoc precision; final=\"false\" while provisional.",
    "streameval_first_gold_read_steps": "Steps until the first read of a gold file / gold line.",
    "streameval_first_gold_read_seconds": "Trace seconds until the first read of a gold file / gold line.",
    "streameval_context_file_reads_total": "Reads of agent context files (AGENTS.md, CLAUDE.md, ...).",
    "streameval_tokens_total": "Tokens the agent used, by kind, where the trace carries them.",
    "streameval_cost_usd_total": "Cost in US dollars, where the trace carries it.",
    "streameval_run_info": "1 per run; labels carry the trace format and whether it finished.",
    "streameval_run_last_event_timestamp_seconds": "Trace time of the run's last event.",
    "streameval_run_bad_lines_total": "Trace lines of this run that could not be used, by reason.",
    "streameval_run_problems": "Problems of this run so far, by reason: per-call counts (unparsed_command, path_outside_repo, ...) and run-level ones, 1 while they hold (nothing_read, mostly_outside_repo, no_end_event, repo_mismatch, truncated_trace, no_calls_read; docs/metrics.md §5b).",
    "streameval_lines_processed_total": "Trace lines processed by this evaluator.",
    "streameval_bad_lines_total": "Trace lines that could not be used, by reason.",
    "streameval_watch_events_total": "File events handled: appeared, truncated, replaced, rewritten, deleted, evicted, reopened, reidentified, restored, patch_landed, moved.",
    "streameval_lag_seconds": "Processing time minus the line's write time (file mtime).",
    "streameval_sessions": "Runs in memory, by state (active, finished).",
    "streameval_stale_runs": "Runs this scrape served from the previous one: a long batch held the table lock.",
    "streameval_metrics_age_seconds": "Seconds since the watcher made the numbers this scrape serves (the front "
                                      "process serves the last ones when the watcher is busy; docs/operate.md).",
    "streameval_clamped_values_total": "Values from traces brought into range or dropped, by reason (tokens, cost, timestamp, line_number, pid, record).",
    "streameval_output_errors_total": "Failed writes of streameval's own files, by output (out, checkpoint, claims, abort_file); retried.",
    "streameval_ingest_requests_total": "Pushed requests (watch --ingest) by route (claude, logs, lines) and HTTP status.",
    "streameval_http_refused_total": "HTTP requests and connections refused, by reason (header_timeout, body_timeout, busy, per_client_limit, connection_limit, too_deep, bad_framing, ...).",
    "streameval_ingest_rejected_total": "Pushed entries answered but not stored, by route and reason (invalid_session_id, missing_id, too_deep).",
    "streameval_ingest_duplicates_total": "Pushed entries already stored (a client's retry), acknowledged and not stored again, by route.",
    "streameval_unscored_runs_total": "Runs that cannot be scored, by reason (missing_gold, missing_repo, ...).",
    "streameval_cache_hits_total": "Cache hits by cache (files, line_index, symbols).",
    "streameval_cache_misses_total": "Cache misses by cache.",
    "streameval_backlog_bytes": "Bytes written to followed traces and not yet processed (a catch-up in progress).",
    "streameval_aborts_total": "Early-abort decisions by policy and action.",
    "streameval_abort_actions_total": "What abort actions did, by action and outcome (webhook: delivered, failed, dropped; file: written, exists, failed; signal: signalled, refused, no_pid, ...).",
    **fleet.HELP,
}


#: Per-run families in exposition order: (name, type, labels beyond RUN_LABELS).
RUN_FAMILIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("streameval_coverage_ratio", "gauge", ("granularity",)),
    ("streameval_precision_ratio", "gauge", ("granularity",)),
    ("streameval_f1_ratio", "gauge", ("granularity",)),
    ("streameval_auc_coverage_ratio", "gauge", ("granularity",)),
    ("streameval_redundancy_ratio", "gauge", ("granularity",)),
    ("streameval_gold_size", "gauge", ("granularity",)),
    ("streameval_steps", "counter", ()),
    ("streameval_tool_calls", "counter", ("category",)),
    ("streameval_sidechain_tool_calls", "counter", ()),
    ("streameval_shown_lines", "counter", ("outcome",)),
    ("streameval_read_lines", "gauge", ()),
    ("streameval_read_bytes", "gauge", ()),
    ("streameval_editloc_recall_ratio", "gauge", ("final",)),
    ("streameval_editloc_precision_ratio", "gauge", ("final",)),
    ("streameval_first_gold_read_steps", "gauge", ("level",)),
    ("streameval_first_gold_read_seconds", "gauge", ("level",)),
    ("streameval_context_file_reads", "counter", ()),
    ("streameval_tokens", "counter", ("kind",)),
    ("streameval_cost_usd", "counter", ()),
    ("streameval_run_info", "gauge", ("format", "state")),
    ("streameval_run_last_event_timestamp_seconds", "gauge", ()),
    ("streameval_run_bad_lines", "counter", ("reason",)),
    ("streameval_run_problems", "gauge", ("reason",)),
)

#: One sample of a run: (family name, values of the family's extra labels, value).
Row = tuple[str, tuple[str, ...], float]


@dataclass(slots=True)
class Exported:
    """A run as its last scrape exported it: kept on its ``LiveRun`` (it leaves with the
    run), reused while ``sig`` says nothing moved. ``text`` is its samples as exposition
    lines, one string per family of ``RUN_FAMILIES``, made at the first render;
    ``fleet`` is what the fleet families fold of it."""

    sig: tuple
    base: tuple[str, ...]
    rows: tuple[Row, ...]
    fleet: FleetEntry
    text: tuple[str, ...] | None = None

    @property
    def finished(self) -> bool:
        return self.fleet.values is not None


def _signature(run: LiveRun) -> tuple:
    """What a run's exported numbers depend on: its session (a restart from byte 0
    makes a new one), the session's version (bumped by every event and patch), its
    state and end reason, and the abort policies that decided on it."""
    s = run.session
    return (id(s), s.version, run.finished_at is not None, s.end_reason, len(run.aborted))


def export(run: LiveRun) -> Exported:
    """The run's export, from a snapshot taken now (the table lock held)."""
    sig = _signature(run)
    snap = run.session.snapshot()
    base = _base(snap)
    group = (base[2], base[3], label_value(snap.identity.experiment or ""))
    # a tuple of tuples of strings and floats: the garbage collector stops walking it
    # once it has seen it (a kept run has ~50 rows; a watcher keeps thousands of runs)
    return Exported(sig, base, tuple(_run_rows(run, snap)),
                    fleet_entry(snap, group, run.finished, run.aborted))


def _help(name: str, kind: str) -> str:
    return HELP[name + "_total" if kind == "counter" else name]


def _families() -> dict[str, Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    cls = {"gauge": GaugeMetricFamily, "counter": CounterMetricFamily}
    return {name: cls[kind](name, _help(name, kind), labels=[*RUN_LABELS, *extra])
            for name, kind, extra in RUN_FAMILIES}


def _base(snap: RunSnapshot) -> tuple[str, ...]:
    """The run's labels: agent and model as the record gives them (meta.json, else the
    trace), so a watched run is labelled as its replayed record."""
    return tuple(label_value(v) for v in (snap.run_id, snap.instance_id, snap.agent, snap.model))


def label_value(value: str) -> str:
    """A label value as exported: control characters become ``?`` and a value longer
    than ``MAX_LABEL`` keeps its start and a hash of the whole (``untrusted.bounded``),
    so one 1 MiB ``model`` in a trace cannot make every scrape megabytes, and long
    values stay distinct. Sane values (the usual case) are exported exactly as records
    give them."""
    return bounded(value, MAX_LABEL)


def _run_rows(run: LiveRun, snap: RunSnapshot) -> list[Row]:
    """Every sample of one run, from its snapshot (taken while the table lock is held).

    Plain tuples, so the lock is held only for taking the snapshot; families and text
    are built after it is released (a scrape of 1,000 runs must not stall the watcher
    for the whole exposition).
    """
    state = "finished" if run.finished else "active"
    rows: list[Row] = [("streameval_run_info", (snap.fmt or "unknown", state), 1.0),
                       ("streameval_steps", (), float(snap.num_steps)),
                       ("streameval_sidechain_tool_calls", (), float(snap.sidechain_calls))]
    rows += [("streameval_tool_calls", (cat,), float(snap.categories.get(cat, 0)))
             for cat in CATEGORIES]
    rows.append(("streameval_context_file_reads", (),
                 float(sum(snap.context_file_reads.values()))))
    rows += [("streameval_shown_lines", (outcome,), float(n))
             for outcome, n in snap.shown_lines.items()]
    rows += [("streameval_run_bad_lines", (reason,), float(n))
             for reason, n in snap.bad_lines.items()]
    rows += [("streameval_run_problems", (reason,), float(n))
             for reason, n in snap.problems.items()]
    rows += [("streameval_tokens", (kind,), float(n))
             for kind, n in token_counts(snap.tokens).items()]
    if snap.cost_usd is not None:
        rows.append(("streameval_cost_usd", (), float(snap.cost_usd)))
    if snap.last_event_at is not None:
        rows.append(("streameval_run_last_event_timestamp_seconds", (), snap.last_event_at))
    first = snap.first_gold
    for level, step, secs in (("file", first.file_step, first.file_seconds),
                              ("line", first.line_step, first.line_seconds)):
        if step is not None:
            rows.append(("streameval_first_gold_read_steps", (level,), float(step)))
        if secs is not None:
            rows.append(("streameval_first_gold_read_seconds", (level,), secs))
    scores = snap.scores
    if scores is None:
        return rows
    rows.append(("streameval_read_lines", (), float(scores.lines_read)))
    rows.append(("streameval_read_bytes", (), float(scores.bytes_read)))
    for g in GRANULARITIES:
        n = scores.granularities[g]
        rows += [("streameval_coverage_ratio", (g,), n.coverage),
                 ("streameval_precision_ratio", (g,), n.precision),
                 ("streameval_f1_ratio", (g,), n.f1),
                 ("streameval_auc_coverage_ratio", (g,), n.auc_coverage),
                 ("streameval_redundancy_ratio", (g,), n.redundancy),
                 ("streameval_gold_size", (g,), float(n.gold_size))]
    if snap.editloc is not None:
        final = "true" if snap.editloc_final else "false"
        rows.append(("streameval_editloc_recall_ratio", (final,), snap.editloc["recall"]))
        rows.append(("streameval_editloc_precision_ratio", (final,), snap.editloc["precision"]))
    return rows


@contextmanager
def _held(lock, wait: float = LOCK_WAIT) -> Iterator[bool]:
    """The table lock if it comes within ``wait`` seconds (True), else nothing (False):
    a scrape never waits behind one long tool call; it serves each run's numbers from
    the previous scrape instead (counted in ``streameval_stale_runs``)."""
    got = lock.acquire(timeout=wait)
    try:
        yield got
    finally:
        if got:
            lock.release()


class _Families:
    """A ``registry``-like object over a fixed list of families (for the encoders)."""

    def __init__(self, families: list) -> None:
        self.families = families

    def collect(self) -> list:
        return self.families


def newest_first(pairs: list[tuple[LiveRun, Exported]], limit: int
                 ) -> tuple[list[Exported], Counter]:
    """The runs whose per-run series are exported, in the order given, and how many
    of each state are not: at most ``limit``, active runs first, the most recently
    seen first, then the most recently finished. Active runs are the ones a dashboard
    and the per-run alerts follow; a finished run's numbers are also in its record
    and in the fleet means. A run left out lets its rendered text go (~7 KB a run,
    made again if it comes back)."""
    dropped: Counter = Counter()
    if len(pairs) <= limit:
        return [e for _run, e in pairs], dropped

    ranks = [(e.finished, -((run.finished_at or 0.0) if e.finished else run.first_seen))
             for run, e in pairs]
    keep = set(sorted(range(len(pairs)), key=ranks.__getitem__)[:limit])
    kept = []
    for i, (_run, e) in enumerate(pairs):
        if i in keep:
            kept.append(e)
        else:
            e.text = None
            dropped["finished" if e.finished else "active"] += 1
    return kept, dropped


def cap_families(limit: int, dropped: Counter) -> list:
    from prometheus_client.core import GaugeMetricFamily

    name = "streameval_per_run_series_dropped_runs"
    fam = GaugeMetricFamily(name, HELP[name], labels=["state"])
    for state in ("active", "finished"):
        fam.add_metric([state], dropped[state])
    return [GaugeMetricFamily("streameval_per_run_series_limit",
                              HELP["streameval_per_run_series_limit"], value=limit), fam]


def cache_counts(caches: list[tuple[str, Any]]) -> list[tuple[str, float, float]]:
    """(name, hits, misses) of each cache (``RunTable.caches``)."""
    return [(name, float(getattr(cache, "hits", 0)), float(getattr(cache, "misses", 0)))
            for name, cache in caches]


def counter_family(name: str, labels: list[str], counts: Counter):
    """A counter family of ``counts`` (a label value, or a tuple of them, -> n), its
    samples in the order of their keys."""
    from prometheus_client.core import CounterMetricFamily

    fam = CounterMetricFamily(name, HELP[name + "_total"], labels=labels)
    # copied first: the webhook worker adds abort outcomes from its own thread
    for key, n in sorted(dict(counts).items()):
        fam.add_metric([str(k) for k in key] if isinstance(key, tuple) else [str(key)], n)
    return fam


def process_families(st: EvaluatorStats, states: Counter,
                     caches: list[tuple[str, float, float]]) -> list:
    """The families about streameval itself, from its statistics ``st``, the runs in
    memory by state (and ``stale``: served from the previous scrape) and ``caches``
    (``cache_counts``). The front of several workers makes them from their sums."""
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    families = [
        CounterMetricFamily("streameval_lines_processed", HELP["streameval_lines_processed_total"],
                            value=st.lines_processed),
        counter_family("streameval_bad_lines", ["reason"], st.bad_lines),
        counter_family("streameval_watch_events", ["event"], st.events),
        counter_family("streameval_unscored_runs", ["reason"], st.unscored),
        counter_family("streameval_clamped_values", ["reason"], st.clamped),
        counter_family("streameval_output_errors", ["output"], st.output_errors),
        counter_family("streameval_aborts", ["policy", "action"], st.aborts),
        counter_family("streameval_abort_actions", ["action", "outcome"], st.abort_outcomes),
        counter_family("streameval_ingest_requests", ["route", "status"], st.ingest_requests),
        counter_family("streameval_ingest_rejected", ["route", "reason"], st.ingest_rejected),
        counter_family("streameval_ingest_duplicates", ["route"], st.ingest_duplicates),
        counter_family("streameval_http_refused", ["reason"], st.http_refused),
    ]
    lag = HistogramMetricFamily("streameval_lag_seconds", HELP["streameval_lag_seconds"], labels=[])
    cum, buckets = 0, []
    for bound, n in zip((*st.LAG_BUCKETS, math.inf), st.lag_counts):
        cum += n
        buckets.append(("+Inf" if bound == math.inf else repr(bound), cum))
    lag.add_metric([], buckets, st.lag_sum)
    sessions = GaugeMetricFamily("streameval_sessions", HELP["streameval_sessions"], labels=["state"])
    sessions.add_metric(["active"], states["active"])
    sessions.add_metric(["finished"], states["finished"])
    hits = CounterMetricFamily("streameval_cache_hits", HELP["streameval_cache_hits_total"], labels=["cache"])
    misses = CounterMetricFamily("streameval_cache_misses", HELP["streameval_cache_misses_total"], labels=["cache"])
    for name, hit, miss in caches:
        hits.add_metric([name], hit)
        misses.add_metric([name], miss)
    return [*families, lag, sessions,
            GaugeMetricFamily("streameval_stale_runs", HELP["streameval_stale_runs"], value=states["stale"]),
            GaugeMetricFamily("streameval_backlog_bytes", HELP["streameval_backlog_bytes"], value=st.backlog_bytes),
            hits, misses]


class RunsCollector:
    """Builds every streameval family from a ``RunTable`` at scrape time."""

    def __init__(self, table: RunTable, per_run_series: int = PER_RUN_SERIES,
                 fleet_groups: int = fleet.MAX_GROUPS):
        if per_run_series < 0:
            raise ValueError("per_run_series must be >= 0")
        self.table = table
        self.per_run_series = per_run_series
        self.fleet = Fleet(fleet_groups)

    def describe(self) -> list:
        # Returning no descriptions keeps registration from calling collect() early.
        return []

    def _gather(self) -> tuple[list[Exported], FleetNumbers, list]:
        """The runs whose per-run series are exported (``per_run_series`` of them at
        most), the fleet over every run in memory, and the process-wide families."""
        pairs, states = self._gather_runs()
        kept, dropped = newest_first(pairs, self.per_run_series)
        fleet_now = self.fleet.numbers(e.fleet for _run, e in pairs)
        # the lock was busy for the runs: the counters are read without waiting again
        with _held(self.table.lock, 0.0 if states["stale"] else LOCK_WAIT):
            process = process_families(self.table.stats, states, cache_counts(self.table.caches))
        return kept, fleet_now, [*process, *fleet_now.scalar_families(),
                                 *cap_families(self.per_run_series, dropped)]

    def _gather_runs(self) -> tuple[list[tuple[LiveRun, Exported]], Counter]:
        """Every run's rows, incrementally: a run whose session has not moved since the
        last scrape (its version and state) is served from that scrape's rows without
        the lock or a snapshot, so a scrape costs what changed, not what is exported.

        Changed runs are read in slices of ``GATHER_SLICE``, the lock released in
        between: a trace line never lands half-way through one run's numbers (each line
        is processed under the lock), and the watcher never waits for the whole table.
        When a long tool call holds the lock, the slice's runs are served from the
        previous scrape (``streameval_stale_runs``); the rest of the scrape does not
        wait again."""
        lock = self.table.lock
        # a copy of the dict's values is one step under the GIL: no lock needed
        table = list(self.table.runs.values())
        out: list[tuple[LiveRun, Exported]] = []
        states: Counter = Counter()
        changed: list = []
        for run in table:
            states["finished" if run.finished else "active"] += 1
            cached = run.exported
            if cached is not None and cached.sig == _signature(run):
                out.append((run, cached))
            else:
                changed.append(run)
        wait = LOCK_WAIT
        for start in range(0, len(changed), GATHER_SLICE):
            if start:
                time.sleep(0)   # let the watcher thread take the GIL and the lock
            with _held(lock, wait) as fresh:
                for run in changed[start:start + GATHER_SLICE]:
                    if fresh:
                        run.exported = export(run)
                    elif run.exported is None:
                        continue   # never exported yet: it appears at the next scrape
                    else:
                        states["stale"] += 1
                    out.append((run, run.exported))
            if not fresh:
                wait = 0.0
        return out, states

    def collect(self) -> Iterator[Any]:
        runs, fleet_now, process = self._gather()
        fam = _families()
        for run in runs:
            labels = list(run.base)
            for name, extra, value in run.rows:
                fam[name].add_metric(labels + list(extra), value)
        yield from fam.values()
        yield from fleet_now.families()
        yield from process
