"""A watched run's scores leave as OpenTelemetry, to streameval's own OTLP route.

A watcher with ``--ingest`` serves ``/v1/logs``; a second watcher (the one being tested)
sends its runs' evaluations there as log records (``--otlp-signals logs``), in both
encodings. The test reads what that real route was sent and answered: one
``gen_ai.evaluation.result`` log record per metric, in the ``streameval.evaluate`` span's
trace, attributes as the record says; a run an abort policy stopped carries the label;
``--otlp-live`` sends a running run's scores before its record.
"""

from __future__ import annotations

import base64
import json
import time

import pytest
from claude_run import Claude, append, policy, reads, trace_in

from streameval.live.abort.engine import AbortEngine, attach, parse_policies
from streameval.live.ingest import ingest_routes
from streameval.live.otel_feed import attach as attach_otel
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher
from streameval.report.otel import EvaluationEmitter

GRANULARITIES = ("file", "symbol", "span", "line")


class Receiver:
    """A watcher's real ingest routes (token ``t0k``), with every request's body and
    answer kept."""

    def __init__(self, tmp_path, res):
        root = tmp_path / "receiver"
        root.mkdir()
        self.w = Watcher(WatchConfig(root=root, idle_timeout=3600), res)
        routes = ingest_routes(self.w, "t0k")
        self.seen: list[tuple[str, str, bytes, str]] = []
        inner = routes.handle

        async def handle(request):
            """The real route, with the body it read and its answer's status kept."""
            read, kept = request.body, {}

            async def body(n):
                data = await read(n)
                kept["body"] = bytes(data)
                return data

            request.body = body
            response = await inner(request)
            self.seen.append((request.path, request.header("content-type"),
                              kept.get("body", b""), str(response.status)))
            return response

        routes.handle = handle
        self.server, _reg, port = serve(self.w.table, "127.0.0.1", 0, ingest=routes)
        self.url = f"http://127.0.0.1:{port}"

    def log_records(self) -> list[dict]:
        """Every log record posted, as plain dicts (protobuf decoded by its own module)."""
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )
        out = []
        for path, ctype, body, status in self.seen:
            assert path == "/v1/logs" and status.startswith("200"), (path, status)
            if "protobuf" in ctype:
                msg = ExportLogsServiceRequest()
                msg.ParseFromString(body)
                data = MessageToDict(msg)
            else:
                data = json.loads(body)
            for rl in data["resourceLogs"]:
                resource = _attrs(rl["resource"]["attributes"])
                for sl in rl["scopeLogs"]:
                    for rec in sl["logRecords"]:
                        out.append({"resource": resource, "eventName": rec.get("eventName"),
                                    "traceId": _hex(rec.get("traceId")),
                                    "spanId": _hex(rec.get("spanId")),
                                    "attributes": _attrs(rec.get("attributes", []))})
        return out


def _hex(v: str | None) -> str | None:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping as base64."""
    if not v:
        return None
    try:
        int(v, 16)
        return v.lower()
    except ValueError:
        return base64.b64decode(v).hex()


def _attrs(items: list) -> dict:
    out = {}
    for kv in items:
        v = kv["value"]
        (kind, value), = v.items()
        out[kv["key"]] = int(value) if kind == "intValue" else \
            [list(x.values())[0] for x in value.get("values", [])] if kind == "arrayValue" else value
    return out


def _flush(em: EvaluationEmitter, rx: Receiver) -> None:
    assert em.close()
    assert em.failed == 0, rx.seen[-1:]


@pytest.mark.parametrize("protocol", ["http/protobuf", "http/json"])
def test_a_finished_run_reaches_streamevals_own_otlp_route_as_log_records(env, tmp_path, protocol):
    s, runs, res = env
    rx = Receiver(tmp_path, res)
    try:
        trace = trace_in(runs, s)
        c = Claude()
        append(trace, c.init(), *reads(c, ("src/util.py", 20, 24), ("src/app.py", 1, 3)),
               c.result())
        w = Watcher(WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0), res)
        em = EvaluationEmitter(rx.url, {"Authorization": "Bearer t0k"}, protocol, ("logs",))
        attach_otel(w, em)
        w.scan()
        w.poll_all()
        w.tick()
        (run,) = w.table.runs.values()
        record = run.session.record()
        w.tick()                       # nothing new: nothing sent twice
        _flush(em, rx)
    finally:
        rx.server.close()
    logs = rx.log_records()
    assert len(logs) == 16             # no patch: no EditLoc
    assert {r["eventName"] for r in logs} == {"gen_ai.evaluation.result"}
    assert len({r["traceId"] for r in logs}) == 1 and len({r["spanId"] for r in logs}) == 1
    assert logs[0]["traceId"] and logs[0]["spanId"]
    assert logs[0]["resource"]["service.name"] == "streameval"
    by_name = {r["attributes"]["gen_ai.evaluation.name"]: r["attributes"] for r in logs}
    for g in GRANULARITIES:
        f = record["final"][g]
        cov = by_name[f"contextbench.{g}.coverage"]
        assert cov["gen_ai.evaluation.score.value"] == f["coverage"]
        assert by_name[f"contextbench.{g}.precision"]["gen_ai.evaluation.score.value"] == f["precision"]
        assert by_name[f"contextbench.{g}.auc_coverage"]["gen_ai.evaluation.score.value"] == \
            record["trajectory"]["auc_coverage"][g]
        assert by_name[f"contextbench.{g}.redundancy"]["gen_ai.evaluation.score.value"] == \
            record["trajectory"]["redundancy"][g]
        assert cov["gen_ai.evaluation.explanation"].startswith(
            f"{f['intersection']} of {f['gold_size']} gold")
    for attrs in by_name.values():
        assert attrs["streameval.run_id"] == "r1"
        assert attrs["streameval.instance_id"] == s.instance
        assert attrs["gen_ai.conversation.id"] == record.session_id == "s1"
        assert "gen_ai.evaluation.score.label" not in attrs


def test_a_run_an_abort_policy_stopped_is_labelled_and_live_updates_come_first(env, tmp_path,
                                                                              monkeypatch):
    s, runs, res = env
    # the auth header from the environment, not the command line (docs/otel.md)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20t0k")
    rx = Receiver(tmp_path, res)
    try:
        trace = trace_in(runs, s)
        c = Claude()
        append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
        w = Watcher(WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0), res)
        engine = attach(w, AbortEngine(parse_policies(policy("budget", "max_steps", limit=2),
                                                      "t.toml")))
        em = EvaluationEmitter(rx.url, {}, "http/json", ("logs",))
        attach_otel(w, em, live_interval=0.001, engine=engine)
        w.scan()
        w.poll_all()
        w.tick()                                     # running, 1 step: a live update
        append(trace, *reads(c, ("src/util.py", 22, 23), ("src/app.py", 1, 2)), c.result())
        time.sleep(0.01)
        w.poll_all()
        w.tick()                                     # ended: the record
        _flush(em, rx)
        engine.close()
    finally:
        rx.server.close()
    logs = rx.log_records()
    spans = []
    for r in logs:
        if not spans or spans[-1][0] != r["spanId"]:
            spans.append((r["spanId"], []))
        spans[-1][1].append(r["attributes"])
    assert len(spans) == 2
    (_live, first), (_final, last) = spans
    assert "gen_ai.evaluation.score.label" not in first[0]      # nothing fired yet
    assert first[0]["gen_ai.evaluation.explanation"].endswith("shown so far")
    assert all(a["gen_ai.evaluation.score.label"] == "aborted" for a in last)
    assert all("policy budget -> file" in a["gen_ai.evaluation.explanation"] for a in last)
