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
from collections.abc import Iterator
from typing import Any

from ..model import CATEGORIES, GRANULARITIES
from .runs import LiveRun, RunTable

RUN_LABELS = ("run_id", "instance_id", "agent", "model")

# family name -> help; kept in one place so the README table can be generated from it
HELP: dict[str, str] = {
    "streameval_coverage_ratio": "Coverage |G∩P|/|G| of the context read so far (METRICS.md §3).",
    "streameval_precision_ratio": "Precision |G∩P|/|P| of the context read so far.",
    "streameval_auc_coverage_ratio": "Mean per-step coverage so far (AUC-coverage).",
    "streameval_redundancy_ratio": "1 - |union of steps| / Σ|step| so far.",
    "streameval_gold_size": "|G|: gold files, symbols, bytes or lines of the instance.",
    "streameval_steps_total": "Retrieval steps (tool calls that showed repo code).",
    "streameval_tool_calls_total": "Tool calls by category (read, search, edit, test, git, env, build, quality, run, other).",
    "streameval_sidechain_tool_calls_total": "Tool calls made by sub-agents (kept apart, not scored).",
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
    "streameval_lines_processed_total": "Trace lines processed by this evaluator.",
    "streameval_bad_lines_total": "Trace lines that could not be used, by reason.",
    "streameval_watch_events_total": "File events handled: truncated, replaced, deleted, appeared, restored.",
    "streameval_lag_seconds": "Processing time minus the line's write time (file mtime).",
    "streameval_sessions": "Runs in memory, by state (active, finished).",
    "streameval_cache_hits_total": "Cache hits by cache (files, line_index, symbols).",
    "streameval_cache_misses_total": "Cache misses by cache.",
    "streameval_queue_depth": "Trace lines read but not yet processed.",
    "streameval_aborts_total": "Early-abort decisions by policy and action.",
}


def _families() -> dict[str, Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    g = GaugeMetricFamily
    c = CounterMetricFamily
    rl = list(RUN_LABELS)
    return {
        "streameval_coverage_ratio": g("streameval_coverage_ratio", HELP["streameval_coverage_ratio"], labels=rl + ["granularity"]),
        "streameval_precision_ratio": g("streameval_precision_ratio", HELP["streameval_precision_ratio"], labels=rl + ["granularity"]),
        "streameval_auc_coverage_ratio": g("streameval_auc_coverage_ratio", HELP["streameval_auc_coverage_ratio"], labels=rl + ["granularity"]),
        "streameval_redundancy_ratio": g("streameval_redundancy_ratio", HELP["streameval_redundancy_ratio"], labels=rl + ["granularity"]),
        "streameval_gold_size": g("streameval_gold_size", HELP["streameval_gold_size"], labels=rl + ["granularity"]),
        "streameval_steps": c("streameval_steps", HELP["streameval_steps_total"], labels=rl),
        "streameval_tool_calls": c("streameval_tool_calls", HELP["streameval_tool_calls_total"], labels=rl + ["category"]),
        "streameval_sidechain_tool_calls": c("streameval_sidechain_tool_calls", HELP["streameval_sidechain_tool_calls_total"], labels=rl),
        "streameval_read_lines": g("streameval_read_lines", HELP["streameval_read_lines"], labels=rl),
        "streameval_read_bytes": g("streameval_read_bytes", HELP["streameval_read_bytes"], labels=rl),
        "streameval_editloc_recall_ratio": g("streameval_editloc_recall_ratio", HELP["streameval_editloc_recall_ratio"], labels=rl + ["final"]),
        "streameval_editloc_precision_ratio": g("streameval_editloc_precision_ratio", HELP["streameval_editloc_precision_ratio"], labels=rl + ["final"]),
        "streameval_first_gold_read_steps": g("streameval_first_gold_read_steps", HELP["streameval_first_gold_read_steps"], labels=rl + ["level"]),
        "streameval_first_gold_read_seconds": g("streameval_first_gold_read_seconds", HELP["streameval_first_gold_read_seconds"], labels=rl + ["level"]),
        "streameval_context_file_reads": c("streameval_context_file_reads", HELP["streameval_context_file_reads_total"], labels=rl),
        "streameval_tokens": c("streameval_tokens", HELP["streameval_tokens_total"], labels=rl + ["kind"]),
        "streameval_cost_usd": c("streameval_cost_usd", HELP["streameval_cost_usd_total"], labels=rl),
        "streameval_run_info": g("streameval_run_info", HELP["streameval_run_info"], labels=rl + ["format", "state"]),
        "streameval_run_last_event_timestamp_seconds": g("streameval_run_last_event_timestamp_seconds", HELP["streameval_run_last_event_timestamp_seconds"], labels=rl),
        "streameval_run_bad_lines": c("streameval_run_bad_lines", HELP["streameval_run_bad_lines_total"], labels=rl + ["reason"]),
    }


def _run_samples(fam: dict[str, Any], run: LiveRun) -> None:
    s = run.session
    base = [s.identity.run_id, s.identity.instance_id, s.identity.agent, s.identity.model]
    ex = s.extras
    state = "finished" if run.finished else "active"
    fam["streameval_run_info"].add_metric(base + [s.fmt or "unknown", state], 1.0)
    fam["streameval_steps"].add_metric(base, float(s.num_steps))
    fam["streameval_sidechain_tool_calls"].add_metric(base, float(ex.sidechain_calls))
    for cat in CATEGORIES:
        fam["streameval_tool_calls"].add_metric(base + [cat], float(ex.categories.get(cat, 0)))
    fam["streameval_context_file_reads"].add_metric(base, float(sum(ex.context_file_reads.values())))
    for reason, n in ex.bad_lines.items():
        fam["streameval_run_bad_lines"].add_metric(base + [reason], float(n))
    tokens, cost = s.tokens()
    for kind, value in (("input", tokens.input_tokens), ("output", tokens.output_tokens),
                        ("cache_read", tokens.cache_read_tokens),
                        ("cache_creation", tokens.cache_creation_tokens)):
        fam["streameval_tokens"].add_metric(base + [kind], float(value))
    if cost is not None:
        fam["streameval_cost_usd"].add_metric(base, float(cost))
    if ex.last_event_at is not None:
        fam["streameval_run_last_event_timestamp_seconds"].add_metric(base, ex.last_event_at)
    for level, step, secs in (("file", ex.first_gold_file_step, ex.first_gold_file_seconds),
                              ("line", ex.first_gold_line_step, ex.first_gold_line_seconds)):
        if step is not None:
            fam["streameval_first_gold_read_steps"].add_metric(base + [level], float(step))
        if secs is not None:
            fam["streameval_first_gold_read_seconds"].add_metric(base + [level], secs)
    if s.state is None:
        return
    snap = s.state.snapshot()
    fam["streameval_read_lines"].add_metric(base, float(snap.lines_read))
    fam["streameval_read_bytes"].add_metric(base, float(snap.bytes_read))
    for g in GRANULARITIES:
        n = snap.granularities[g]
        labels = base + [g]
        fam["streameval_coverage_ratio"].add_metric(labels, n.coverage)
        fam["streameval_precision_ratio"].add_metric(labels, n.precision)
        fam["streameval_auc_coverage_ratio"].add_metric(labels, n.auc_coverage)
        fam["streameval_redundancy_ratio"].add_metric(labels, n.redundancy)
        fam["streameval_gold_size"].add_metric(labels, float(n.gold_size))
    _editloc_samples(fam, s, base)


def _editloc_samples(fam: dict[str, Any], s, base: list[str]) -> None:
    from ..editloc import editloc

    patch = s.final_patch
    if patch is not None:
        value, final = editloc(patch, s.gold), "true"
    else:
        value, final = s.provisional_editloc(), "false"
    if value is None:
        return
    fam["streameval_editloc_recall_ratio"].add_metric(base + [final], value["recall"])
    fam["streameval_editloc_precision_ratio"].add_metric(base + [final], value["precision"])


class RunsCollector:
    """Builds every streameval family from a ``RunTable`` at scrape time."""

    def __init__(self, table: RunTable):
        self.table = table

    def describe(self) -> list:
        # Returning no descriptions keeps registration from calling collect() early.
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        with self.table.lock:
            fam = _families()
            active = finished = 0
            for run in self.table.runs.values():
                if run.finished:
                    finished += 1
                else:
                    active += 1
                _run_samples(fam, run)
            st = self.table.stats
            lines = CounterMetricFamily("streameval_lines_processed", HELP["streameval_lines_processed_total"], value=st.lines_processed)
            bad = CounterMetricFamily("streameval_bad_lines", HELP["streameval_bad_lines_total"], labels=["reason"])
            for reason, n in sorted(st.bad_lines.items()):
                bad.add_metric([reason], n)
            events = CounterMetricFamily("streameval_watch_events", HELP["streameval_watch_events_total"], labels=["event"])
            for event, n in sorted(st.events.items()):
                events.add_metric([event], n)
            aborts = CounterMetricFamily("streameval_aborts", HELP["streameval_aborts_total"], labels=["policy", "action"])
            for (policy, action), n in sorted(st.aborts.items()):
                aborts.add_metric([policy, action], n)
            lag = HistogramMetricFamily("streameval_lag_seconds", HELP["streameval_lag_seconds"], labels=[])
            cum, buckets = 0, []
            for bound, n in zip((*st.LAG_BUCKETS, math.inf), st.lag_counts):
                cum += n
                buckets.append(("+Inf" if bound == math.inf else repr(bound), cum))
            lag.add_metric([], buckets, st.lag_sum)
            sessions = GaugeMetricFamily("streameval_sessions", HELP["streameval_sessions"], labels=["state"])
            sessions.add_metric(["active"], active)
            sessions.add_metric(["finished"], finished)
            queue = GaugeMetricFamily("streameval_queue_depth", HELP["streameval_queue_depth"], value=st.queue_depth)
            hits = CounterMetricFamily("streameval_cache_hits", HELP["streameval_cache_hits_total"], labels=["cache"])
            misses = CounterMetricFamily("streameval_cache_misses", HELP["streameval_cache_misses_total"], labels=["cache"])
            for name, cache in self.table.caches:
                hits.add_metric([name], float(getattr(cache, "hits", 0)))
                misses.add_metric([name], float(getattr(cache, "misses", 0)))
        yield from fam.values()
        yield from (lines, bad, events, aborts, lag, sessions, queue, hits, misses)


class MetricsServer:
    """The running ``/metrics`` endpoint; ``close()`` stops it and frees its socket."""

    def __init__(self, server, thread, registry):
        self._server, self._thread, self.registry = server, thread, registry
        self.port: int = server.server_port

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    shutdown = close


def serve(table: RunTable, host: str = "127.0.0.1", port: int = 9108, registry=None):
    """Register the collector and serve ``/metrics``; returns (server, registry, port).

    ``port=0`` picks a free port (tests); the bound port is returned so the caller
    can print the URL it really serves on. Binds 127.0.0.1 unless told otherwise.
    """
    from prometheus_client import CollectorRegistry, start_http_server

    registry = registry if registry is not None else CollectorRegistry()
    registry.register(RunsCollector(table))
    server, thread = start_http_server(port, addr=host, registry=registry)
    ms = MetricsServer(server, thread, registry)
    return ms, registry, ms.port
