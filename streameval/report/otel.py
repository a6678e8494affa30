"""Scores out as OpenTelemetry: a ``streameval.evaluate`` span per evaluated run, with one
``gen_ai.evaluation.result`` event per metric (docs/otel.md).

Teams that watch agents in Phoenix, Langfuse or any OTLP backend see the agent's traces
there; these spans put next to them whether the agent read the right code. The event and
its attributes are the OpenTelemetry GenAI semantic conventions' (``gen_ai.evaluation.name``,
``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label``,
``gen_ai.evaluation.explanation``, ``gen_ai.response.id``, ``error.type``), so a backend that
knows them shows them as evaluations; everything streameval adds is ``streameval.*``. The
span carries ``gen_ai.conversation.id`` (the session id the trace states) so the scores
can be joined to the agent's own session.

The encoding is the OpenTelemetry SDK's and its OTLP/HTTP exporters' (protobuf, or JSON
through ``opentelemetry-exporter-otlp-json-http``), installed by ``streameval[otel]``; they
are imported only when an endpoint is given, so ``import streameval`` stays cheap. The
events can go out as OTLP log records too (``signals`` with ``logs``): each is then an
event-named log record in the span's trace, for backends (and streameval's own
``/v1/logs`` route) that take logs.

Reads ``Record``s (a finished run) and ``RunSnapshot``s (a running run, live updates);
knows nothing of the watcher or the batch that produced them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streameval import __version__
from streameval.scoring.snapshot import TOKEN_KINDS, RunSnapshot

log = logging.getLogger(__name__)

#: the event name and attribute keys of the GenAI semantic conventions (development status)
EVENT = "gen_ai.evaluation.result"
NAME = "gen_ai.evaluation.name"
VALUE = "gen_ai.evaluation.score.value"
LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
RESPONSE_ID = "gen_ai.response.id"
CONVERSATION_ID = "gen_ai.conversation.id"
SESSION_ID = "session.id"
ERROR_TYPE = "error.type"
SPAN_NAME = "streameval.evaluate"
PROTOCOLS = ("http/protobuf", "http/json")
SIGNALS = ("traces", "logs")
GRANULARITIES = ("file", "symbol", "span", "line")
#: the label of every metric of a run an abort policy stopped (a dry run: would have)
ABORTED, WOULD_ABORT = "aborted", "would_abort"

INSTALL_HINT = "--otlp-endpoint needs the OpenTelemetry SDK: pip install 'streameval[otel]'"


class OtelUnavailable(ImportError):
    """The ``otel`` extra is not installed; the message says what to install."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One evaluation: a metric's name, its value, and what it counts."""

    name: str
    value: float | None
    explanation: str


@dataclass(frozen=True, slots=True)
class Abort:
    """An abort decision that fired for a run: the label its metrics carry."""

    policy: str
    action: str
    reason: str | None = None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What one span says: who the run is, whether it is over, and its metrics (or the
    error that kept it from being scored)."""

    instance_id: str | None
    run_id: str | None
    session_id: str | None
    final: bool
    metrics: tuple[Metric, ...]
    error: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    aborts: tuple[Abort, ...] = ()
    response_id: str | None = None


# ----------------------------------------------------------------------------- metrics


def _ratio_text(hit: Any, of: Any, what: str) -> str:
    return f"{hit} of {of} {what}" if isinstance(hit, int) and isinstance(of, int) else what


_UNITS = {"file": "files", "symbol": "symbols", "span": "bytes", "line": "lines"}


def record_metrics(record: Mapping[str, Any]) -> tuple[Metric, ...]:
    """The metrics of a scored record (docs/metrics.md §5), in its order: final coverage
    and precision, then AUC-coverage and redundancy, per granularity, then EditLoc."""
    out: list[Metric] = []
    final = record.get("final") or {}
    traj = record.get("trajectory") or {}
    steps = record.get("num_steps")
    for g in GRANULARITIES:
        f = final.get(g) or {}
        unit = _UNITS[g]
        out.append(Metric(f"contextbench.{g}.coverage", _num(f.get("coverage")),
                          _ratio_text(f.get("intersection"), f.get("gold_size"),
                                      f"gold {unit} in the final context")))
        out.append(Metric(f"contextbench.{g}.precision", _num(f.get("precision")),
                          _ratio_text(f.get("intersection"), f.get("pred_size"),
                                      f"{unit} of the final context are gold")))
    for g in GRANULARITIES:
        out.append(Metric(f"contextbench.{g}.auc_coverage",
                          _num((traj.get("auc_coverage") or {}).get(g)),
                          f"{g} coverage averaged over {steps} steps"))
        out.append(Metric(f"contextbench.{g}.redundancy",
                          _num((traj.get("redundancy") or {}).get(g)),
                          f"share of {unit} shown again over {steps} steps"))
    edit = record.get("editloc")
    if isinstance(edit, Mapping):
        out.append(Metric("contextbench.editloc.recall", _num(edit.get("recall")),
                          _ratio_text(edit.get("intersection"), edit.get("gold_size"),
                                      "gold edit lines the patch touched")))
        out.append(Metric("contextbench.editloc.precision", _num(edit.get("precision")),
                          _ratio_text(edit.get("intersection"), edit.get("pred_size"),
                                      "patch lines on gold edit lines")))
    return tuple(out)


def snapshot_metrics(snap: RunSnapshot) -> tuple[Metric, ...]:
    """The same metrics of a running run, now (a live update)."""
    if snap.scores is None:
        return ()
    out: list[Metric] = []
    grans = snap.scores.granularities
    for g in GRANULARITIES:
        n, unit = grans[g], _UNITS[g]
        out.append(Metric(f"contextbench.{g}.coverage", float(n.coverage),
                          f"{n.intersection} of {n.gold_size} gold {unit} shown so far"))
        out.append(Metric(f"contextbench.{g}.precision", float(n.precision),
                          f"{n.intersection} of {n.pred_size} {unit} shown so far are gold"))
    for g in GRANULARITIES:
        n = grans[g]
        out.append(Metric(f"contextbench.{g}.auc_coverage", float(n.auc_coverage),
                          f"{g} coverage averaged over {snap.num_steps} steps so far"))
        out.append(Metric(f"contextbench.{g}.redundancy", float(n.redundancy),
                          f"share of {_UNITS[g]} shown again over {snap.num_steps} steps so far"))
    if snap.editloc:
        for key in ("recall", "precision"):
            if key in snap.editloc:
                out.append(Metric(f"contextbench.editloc.{key}", _num(snap.editloc[key]),
                                  "on the landed patch" if snap.editloc_final
                                  else "on the edits seen so far"))
    return tuple(out)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


_RECORD_ATTRIBUTES = ("instance_id", "gold_instance_id", "run_id", "trace", "agent", "model",
                      "format", "fidelity", "grammars", "num_steps", "cost_usd",
                      "tokens_source", "end_reason", "gold_missing", "resolved")


def from_record(record: Mapping[str, Any], aborts: Iterable[Abort] = ()) -> Evaluation:
    """A finished run's evaluation, from its record (the bytes ``--out`` has)."""
    attrs: dict[str, Any] = {f"streameval.{k}": record[k] for k in _RECORD_ATTRIBUTES
                             if record.get(k) is not None}
    tokens = record.get("tokens")
    if isinstance(tokens, Mapping):
        attrs.update({f"streameval.tokens.{k}": int(v) for k, v in tokens.items()
                      if isinstance(v, int)})
    error = record.get("error") if isinstance(record.get("error"), str) else None
    return Evaluation(
        instance_id=record.get("instance_id"), run_id=record.get("run_id"),
        session_id=getattr(record, "session_id", None), final=True,
        # measured against no gold (docs/metrics.md §5b): no gold metric has a value
        metrics=() if error or record.get("gold_missing") else record_metrics(record),
        error=error,
        attributes=attrs, aborts=tuple(aborts))


def from_snapshot(snap: RunSnapshot, aborts: Iterable[Abort] = ()) -> Evaluation:
    """A running run's evaluation now (``--otlp-live``)."""
    attrs: dict[str, Any] = {
        "streameval.instance_id": snap.instance_id, "streameval.run_id": snap.run_id,
        "streameval.agent": snap.agent, "streameval.model": snap.model,
        "streameval.format": snap.fmt, "streameval.num_steps": snap.num_steps}
    if snap.identity.trace:
        attrs["streameval.trace"] = snap.identity.trace
    if snap.identity.fidelity:
        attrs["streameval.fidelity"] = snap.identity.fidelity
    attrs.update({f"streameval.tokens.{k}": getattr(snap.tokens, f"{k}_tokens")
                  for k in TOKEN_KINDS})
    if snap.cost_usd is not None:
        attrs["streameval.cost_usd"] = snap.cost_usd
    if snap.tokens_source:
        attrs["streameval.tokens_source"] = snap.tokens_source
    return Evaluation(
        instance_id=snap.instance_id, run_id=snap.run_id, session_id=snap.session_id,
        final=False, metrics=snapshot_metrics(snap), error=snap.error,
        attributes=attrs, aborts=tuple(aborts))


def event_attributes(ev: Evaluation, metric: Metric) -> dict[str, Any]:
    """One ``gen_ai.evaluation.result`` event's attributes: the convention's keys, then
    the ``streameval.*`` ones that name the run (a log record has no span to ask)."""
    attrs: dict[str, Any] = {NAME: metric.name}
    if ev.error is not None:
        reason = ev.error.split(":", 1)[0]
        attrs[ERROR_TYPE] = reason
        attrs[EXPLANATION] = ev.error
    else:
        if metric.value is not None:
            attrs[VALUE] = metric.value
        attrs[EXPLANATION] = metric.explanation
    if ev.aborts:
        attrs[LABEL] = WOULD_ABORT if all(a.dry_run for a in ev.aborts) else ABORTED
        attrs[EXPLANATION] = f"{attrs[EXPLANATION]}; " + "; ".join(
            f"policy {a.policy} -> {a.action}" + (f": {a.reason}" if a.reason else "")
            for a in ev.aborts)
    if ev.response_id:
        attrs[RESPONSE_ID] = ev.response_id
    if ev.session_id:
        attrs[CONVERSATION_ID] = ev.session_id
    for key in ("instance_id", "run_id"):
        value = getattr(ev, key)
        if value is not None:
            attrs[f"streameval.{key}"] = value
    return attrs


def metric_names_of_error() -> tuple[str, ...]:
    """The metrics a run that cannot be scored reports as failed: the eight final and
    eight trajectory numbers (EditLoc is only ever there with a patch)."""
    return tuple(m.name for m in record_metrics({}))


def span_attributes(ev: Evaluation) -> dict[str, Any]:
    attrs = dict(ev.attributes)
    attrs["streameval.final"] = ev.final
    if ev.session_id:
        attrs[CONVERSATION_ID] = ev.session_id
        # OpenTelemetry's general session attribute: Langfuse and Phoenix group by it
        attrs[SESSION_ID] = ev.session_id
    if ev.response_id:
        attrs[RESPONSE_ID] = ev.response_id
    if ev.error is not None:
        attrs[ERROR_TYPE] = ev.error.split(":", 1)[0]
    if ev.aborts:
        attrs["streameval.abort.policies"] = [a.policy for a in ev.aborts]
    return attrs


# ----------------------------------------------------------------------------- sending


def signal_url(endpoint: str, signal: str) -> str:
    """``endpoint`` is the OTLP/HTTP base (as ``OTEL_EXPORTER_OTLP_ENDPOINT``): each
    signal goes to ``/v1/<signal>`` below it; a URL already naming a signal's path has
    it replaced."""
    base = endpoint.rstrip("/")
    for known in SIGNALS:
        if base.endswith(f"/v1/{known}"):
            base = base[: -len(f"/v1/{known}")]
    return f"{base}/v1/{signal}"


class EvaluationEmitter:
    """Sends evaluations to one OTLP/HTTP endpoint; ``close()`` flushes what is queued.

    Spans and log records are batched by the SDK's processors (a background thread):
    emitting never waits for the network, and a backend that is down costs log lines,
    not the watcher's loop or a batch's records.
    """

    def __init__(self, endpoint: str, headers: Mapping[str, str] | None = None,
                 protocol: str = "http/protobuf", signals: Iterable[str] = ("traces",),
                 timeout: float = 10.0):
        if protocol not in PROTOCOLS:
            raise ValueError(f"OTLP protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")
        signals = tuple(signals)
        bad = [s for s in signals if s not in SIGNALS]
        if bad or not signals:
            raise ValueError(f"OTLP signals {bad or signals!r}; use {' and/or '.join(SIGNALS)}")
        try:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise OtelUnavailable(INSTALL_HINT) from exc
        span_exporter, log_exporter = _exporters(protocol)
        headers = dict(headers or {})
        #: export calls the backend refused or that failed (the SDK logs each one)
        self.failed = 0
        self.endpoint, self.protocol, self.signals = endpoint, protocol, signals
        # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES still apply (Resource.create reads them)
        resource = Resource.create({"service.name": "streameval",
                                    "service.version": __version__})
        # spans are made whatever the signals: log records take their trace context
        self._tracer_provider = TracerProvider(resource=resource)
        self._traces = "traces" in signals
        if self._traces:
            self._tracer_provider.add_span_processor(BatchSpanProcessor(_Counted(span_exporter(
                endpoint=signal_url(endpoint, "traces"), headers=headers, timeout=timeout),
                self)))
        self._tracer = self._tracer_provider.get_tracer("streameval", __version__)
        self._logger = None
        self._logger_provider = None
        if "logs" in signals:
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

            self._logger_provider = LoggerProvider(resource=resource)
            self._logger_provider.add_log_record_processor(BatchLogRecordProcessor(_Counted(
                log_exporter(endpoint=signal_url(endpoint, "logs"), headers=headers,
                             timeout=timeout), self)))
            self._logger = self._logger_provider.get_logger("streameval", __version__)
        #: spans (evaluations) emitted, final and live
        self.sent = 0

    def emit(self, ev: Evaluation) -> None:
        """One span with its events (and their log records, when asked)."""
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        metrics = ev.metrics
        if ev.error is not None:
            metrics = tuple(Metric(n, None, "") for n in metric_names_of_error())
        now = time.time_ns()
        span = self._tracer.start_span(SPAN_NAME, kind=SpanKind.INTERNAL,
                                       attributes=span_attributes(ev), start_time=now)
        ctx = trace.set_span_in_context(span)
        for metric in metrics:
            attrs = event_attributes(ev, metric)
            if self._traces:
                span.add_event(EVENT, attributes=attrs, timestamp=now)
            if self._logger is not None:
                self._logger.emit(event_name=EVENT, attributes=attrs, context=ctx,
                                  timestamp=now, observed_timestamp=now)
        if ev.error is not None:
            span.set_status(Status(StatusCode.ERROR, ev.error[:200]))
        span.end(end_time=now)
        self.sent += 1

    def close(self, timeout_millis: int = 30_000) -> bool:
        """Flush and stop; True when everything queued was handed to the exporter."""
        ok = self._tracer_provider.force_flush(timeout_millis)
        self._tracer_provider.shutdown()
        if self._logger_provider is not None:
            ok = self._logger_provider.force_flush(timeout_millis) and ok
            self._logger_provider.shutdown()
        return bool(ok)


class _Counted:
    """An exporter whose failed exports are counted on the emitter (``failed``), so
    the command can say that the backend did not take them."""

    def __init__(self, exporter: Any, owner: EvaluationEmitter):
        self._exporter, self._owner = exporter, owner

    def export(self, batch: Any) -> Any:
        result = self._exporter.export(batch)
        if getattr(result, "name", "SUCCESS") != "SUCCESS":
            self._owner.failed += 1
        return result

    def __getattr__(self, name: str) -> Any:   # shutdown, force_flush
        return getattr(self._exporter, name)


def _exporters(protocol: str):
    """The SDK's OTLP/HTTP span and log exporters for ``protocol``."""
    try:
        if protocol == "http/json":
            from opentelemetry.exporter.otlp.json.http._log_exporter import OTLPLogExporter
            from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise OtelUnavailable(INSTALL_HINT) from exc
    return OTLPSpanExporter, OTLPLogExporter


def parse_header(text: str) -> tuple[str, str]:
    """``K=V`` (``--otlp-header``) -> (K, V); ValueError without ``=`` or a key."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--otlp-header wants KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


__all__ = ["Abort", "Evaluation", "EvaluationEmitter", "Metric", "OtelUnavailable",
           "from_record", "from_snapshot", "parse_header", "record_metrics",
           "signal_url", "snapshot_metrics"]
