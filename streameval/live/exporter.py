"""Prometheus exposition of the live runs: a custom collector over ``RunTable``.

Families are built from the sessions at scrape time (the ``gc_collector`` pattern of
client_python): no per-step ``Gauge.labels()`` churn on the hot path, and a run's
series disappear by themselves once the table drops it. The registry is passed in;
tests build a fresh ``CollectorRegistry()``.

Names follow Prometheus conventions: ``streameval_`` prefix, base units, ``_ratio``
for 0..1 values, ``_total`` for counters. The README lists every family.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from streameval.config import DEFAULT_HOST, DEFAULT_PORT
from streameval.errors import UsageError
from streameval.live.httpbound import BoundedServer, QuietHandler
from streameval.live.table import LiveRun, RunTable
from streameval.model import CATEGORIES, GRANULARITIES
from streameval.scoring.snapshot import RunSnapshot, token_counts

RUN_LABELS = ("run_id", "instance_id", "agent", "model")
GATHER_SLICE = 64   # runs read per lock hold during a scrape
#: characters of a label value exported (run_id, instance_id, agent, model)
MAX_LABEL = 200
LOCK_WAIT = 0.25    # seconds a scrape waits for the table lock before serving cached rows

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
    "streameval_run_problems": "Problems of this run so far, by reason: per-call counts (unparsed_command, path_outside_repo, ...) and run-level ones, 1 while they hold (nothing_read, mostly_outside_repo, truncated_trace, no_calls_read; docs/metrics.md §5b).",
    "streameval_lines_processed_total": "Trace lines processed by this evaluator.",
    "streameval_bad_lines_total": "Trace lines that could not be used, by reason.",
    "streameval_watch_events_total": "File events handled: appeared, truncated, replaced, rewritten, deleted, evicted, reopened, reidentified, restored, patch_landed.",
    "streameval_lag_seconds": "Processing time minus the line's write time (file mtime).",
    "streameval_sessions": "Runs in memory, by state (active, finished).",
    "streameval_stale_runs": "Runs this scrape served from the previous one: a long batch held the table lock.",
    "streameval_clamped_values_total": "Values from traces brought into range or dropped, by reason (tokens, cost, timestamp, line_number, pid, record).",
    "streameval_output_errors_total": "Failed writes of streameval's own files, by output (out, checkpoint, abort_file); retried.",
    "streameval_ingest_requests_total": "Pushed requests (watch --ingest) by route (claude, logs, lines) and HTTP status.",
    "streameval_unscored_runs_total": "Runs that cannot be scored, by reason (missing_gold, missing_repo, ...).",
    "streameval_cache_hits_total": "Cache hits by cache (files, line_index, symbols).",
    "streameval_cache_misses_total": "Cache misses by cache.",
    "streameval_backlog_bytes": "Bytes written to followed traces and not yet processed (a catch-up in progress).",
    "streameval_aborts_total": "Early-abort decisions by policy and action.",
    "streameval_abort_actions_total": "What abort actions did, by action and outcome (webhook: delivered, failed, dropped; file: written, exists, failed; signal: signalled, refused, no_pid, ...).",
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
    than ``MAX_LABEL`` keeps its start and a hash of the whole, so one 1 MiB ``model``
    in a trace cannot make every scrape megabytes, and long values stay distinct.
    Sane values (the usual case) are exported exactly as records give them."""
    if len(value) <= MAX_LABEL and value.isprintable():
        return value
    clean = "".join(ch if ch.isprintable() else "?" for ch in value[:MAX_LABEL * 2])
    if len(value) <= MAX_LABEL:
        return clean
    digest = hashlib.sha1(value.encode("utf-8", "replace")).hexdigest()[:10]
    return f"{clean[:MAX_LABEL - 12]}~{digest}"


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


class RunsCollector:
    """Builds every streameval family from a ``RunTable`` at scrape time."""

    def __init__(self, table: RunTable):
        self.table = table

    def describe(self) -> list:
        # Returning no descriptions keeps registration from calling collect() early.
        return []

    def _gather(self) -> tuple[list[tuple[tuple[str, ...], list[Row]]], list]:
        """Per-run rows and the process-wide families, read under the lock."""
        runs, states = self._gather_runs()
        # the lock was busy for the runs: the counters are read without waiting again
        with _held(self.table.lock, 0.0 if states["stale"] else LOCK_WAIT):
            return runs, self._process_families(states)

    def _gather_runs(self) -> tuple[list[tuple[tuple[str, ...], list[Row]]], Counter]:
        """Runs are read in slices of ``GATHER_SLICE``, the lock released in between:
        a trace line never lands half-way through one run's numbers (each line is
        processed under the lock), but with 1,000 runs the watcher no longer waits
        for the whole table to be read (benchmarks/live.md). When a long tool call
        holds the lock, the slice's runs are served from the previous scrape."""
        lock = self.table.lock
        # a copy of the dict's values is one step under the GIL: no lock needed
        table = list(self.table.runs.values())
        runs = []
        states: Counter = Counter()
        for start in range(0, len(table), GATHER_SLICE):
            if start:
                time.sleep(0)   # let the watcher thread take the GIL and the lock
            with _held(lock) as fresh:
                for run in table[start:start + GATHER_SLICE]:
                    states["finished" if run.finished else "active"] += 1
                    if fresh:
                        snap = run.session.snapshot()
                        run.exported_rows = (_base(snap), _run_rows(run, snap))
                    elif run.exported_rows is None:
                        continue   # never exported yet: it appears at the next scrape
                    else:
                        states["stale"] += 1
                    runs.append(run.exported_rows)
        return runs, states

    def _process_families(self, states: Counter) -> list:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        st = self.table.stats

        def by(name: str, labels: list[str], counts: Counter) -> CounterMetricFamily:
            fam = CounterMetricFamily(name, HELP[name + "_total"], labels=labels)
            # copied first: the webhook worker adds abort outcomes from its own thread
            for key, n in sorted(dict(counts).items()):
                fam.add_metric([str(k) for k in key] if isinstance(key, tuple) else [str(key)], n)
            return fam

        families = [
            CounterMetricFamily("streameval_lines_processed", HELP["streameval_lines_processed_total"],
                                value=st.lines_processed),
            by("streameval_bad_lines", ["reason"], st.bad_lines),
            by("streameval_watch_events", ["event"], st.events),
            by("streameval_unscored_runs", ["reason"], st.unscored),
            by("streameval_clamped_values", ["reason"], st.clamped),
            by("streameval_output_errors", ["output"], st.output_errors),
            by("streameval_aborts", ["policy", "action"], st.aborts),
            by("streameval_abort_actions", ["action", "outcome"], st.abort_outcomes),
            by("streameval_ingest_requests", ["route", "status"], st.ingest_requests),
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
        for name, cache in self.table.caches:
            hits.add_metric([name], float(getattr(cache, "hits", 0)))
            misses.add_metric([name], float(getattr(cache, "misses", 0)))
        return [*families, lag, sessions,
                GaugeMetricFamily("streameval_stale_runs", HELP["streameval_stale_runs"], value=states["stale"]),
                GaugeMetricFamily("streameval_backlog_bytes", HELP["streameval_backlog_bytes"], value=st.backlog_bytes),
                hits, misses]

    def collect(self) -> Iterator[Any]:
        runs, process = self._gather()
        fam = _families()
        for base, rows in runs:
            labels = list(base)
            for name, extra, value in rows:
                fam[name].add_metric(labels + list(extra), value)
        yield from fam.values()
        yield from process

    def render(self, encoder: Callable[[Any], bytes], openmetrics: bool) -> bytes:
        """The bytes ``encoder(registry)`` would give for a registry holding only this
        collector, without building a prometheus_client Sample per run sample.

        ``encoder`` is prometheus_client's (text 0.0.4 or OpenMetrics, names escaped
        with a scheme that leaves legal names as they are); it still renders the
        process-wide families, so their format is its own. Per-run samples are
        written here: the same lines, a tenth of the time with 1,000 runs.
        """
        from prometheus_client.utils import floatToGoString

        runs, process = self._gather()
        by_family: dict[str, list[str]] = {name: [] for name, _, _ in RUN_FAMILIES}
        extras = {name: extra for name, _, extra in RUN_FAMILIES}
        inf = math.inf
        for base, rows in runs:
            esc = [_escape_value(v) for v in base]
            templates: dict[tuple[str, ...], tuple[list[str], list[int]]] = {}
            for name, extra, value in rows:
                names = extras[name]
                tmpl = templates.get(names)
                if tmpl is None:
                    tmpl = templates[names] = _template(names, esc)
                segs, idx = tmpl
                if not idx:
                    labels = segs[0]
                elif len(idx) == 1:
                    labels = segs[0] + _escape_value(extra[idx[0]]) + segs[1]
                else:
                    labels = "".join(seg + (_escape_value(extra[j]) if k < len(idx) else "")
                                     for k, (seg, j) in enumerate(zip(segs, [*idx, -1])))
                v = float(value)
                # floatToGoString only differs from repr for NaN, infinities and >= 1e6
                text = repr(v) if -inf < v < 1e6 else floatToGoString(v)
                by_family[name].append(f"{{{labels}}} {text}\n")
        out: list[str] = []
        for name, kind, _extra in RUN_FAMILIES:
            sample = name + "_total" if kind == "counter" else name
            header = name if openmetrics else sample
            doc = _help(name, kind).replace("\\", r"\\").replace("\n", r"\n")
            if openmetrics:
                doc = doc.replace('"', r'\"')
            out.append(f"# HELP {header} {doc}\n# TYPE {header} {kind}\n")
            out.extend(sample + line for line in by_family[name])
        return "".join(out).encode("utf-8") + encoder(_Families(process))


def _template(extra: tuple[str, ...], esc: list[str]) -> tuple[list[str], list[int]]:
    """One run's label string for a family, cut where the extra labels' values go.

    Labels are written sorted by name (as prometheus_client writes them); ``segs``
    are the fixed pieces and ``idx`` the index into the extra values of each gap.
    """
    names = [*RUN_LABELS, *extra]
    segs: list[str] = []
    idx: list[int] = []
    acc = ""
    nb = len(RUN_LABELS)
    for pos, (name, i) in enumerate(sorted((n, i) for i, n in enumerate(names))):
        sep = "," if pos else ""
        if i < nb:
            acc += f'{sep}{name}="{esc[i]}"'
        else:
            segs.append(f'{acc}{sep}{name}="')
            idx.append(i - nb)
            acc = '"'
    segs.append(acc)
    return segs, idx


def _escape_value(v: str) -> str:
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


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


def _fast_encoding(encoder) -> bool | None:
    """None when ``encoder`` may rename metrics; else True for OpenMetrics."""
    from prometheus_client import exposition, openmetrics

    func = getattr(encoder, "func", encoder)
    escaping = getattr(encoder, "keywords", {}).get("escaping", openmetrics.exposition.UNDERSCORES)
    if escaping == openmetrics.exposition.DOTS:   # the only scheme that rewrites legal names
        return None
    if func is openmetrics.exposition.generate_latest:
        return True
    if func is exposition.generate_latest:
        return False
    return None


def metrics_app(registry, collector: RunsCollector | None = None) -> Callable:
    """WSGI app serving ``registry`` as prometheus_client's ``make_wsgi_app`` does.

    With ``collector`` (the registry holds nothing else) a plain scrape is rendered
    by ``RunsCollector.render``: same bytes, headers and compression, much cheaper.
    Anything else (``name[]`` filters, unusual escaping) takes the library's path.
    """
    import gzip
    from urllib.parse import parse_qs

    from prometheus_client.exposition import choose_encoder, gzip_accepted, make_wsgi_app

    fallback = make_wsgi_app(registry)

    def app(environ, start_response):
        if environ["REQUEST_METHOD"] != "GET" or environ["PATH_INFO"] == "/favicon.ico" \
                or collector is None:
            return fallback(environ, start_response)
        params = parse_qs(environ.get("QUERY_STRING", ""))
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT"))
        om = _fast_encoding(encoder)
        if "name[]" in params or om is None:
            return fallback(environ, start_response)
        output = collector.render(encoder, om)
        headers = [("Content-Type", content_type)]
        if gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING")):
            output = gzip.compress(output)
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [output]

    return app


def serve(table: RunTable, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, registry=None,
          wrap: Callable[[Callable], Callable] | None = None):
    """Register the collector and serve ``/metrics``; returns (server, registry, port).

    ``port=0`` picks a free port (tests); the bound port is returned so the caller
    can print the URL it really serves on. Binds 127.0.0.1 unless told otherwise.
    ``wrap`` puts another app in front (the ingest endpoints, ``watch --ingest``).
    """
    import errno
    import socket
    import threading
    from wsgiref.simple_server import make_server

    from prometheus_client import CollectorRegistry


    try:
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                       flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"cannot serve metrics on {host}:{port}: no such address "
                         f"({getattr(exc, 'strerror', None) or exc}); check --host") from None
    own = registry is None
    registry = registry if registry is not None else CollectorRegistry()
    collector = RunsCollector(table)
    registry.register(collector)

    class Server(BoundedServer):
        address_family = family

    try:
        app = metrics_app(registry, collector if own else None)
        httpd = make_server(sockaddr[0], port, wrap(app) if wrap is not None else app,
                            Server, handler_class=QuietHandler)
    except OSError as exc:
        registry.unregister(collector)
        hint = ("pick another --port (0 = any free port)" if exc.errno == errno.EADDRINUSE
                else "check --host and --port")
        raise UsageError(f"cannot serve metrics on {host}:{port}: "
                         f"{exc.strerror or exc}; {hint}") from None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    ms = MetricsServer(httpd, thread, registry)
    return ms, registry, ms.port
