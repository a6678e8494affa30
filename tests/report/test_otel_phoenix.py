"""Scores reach a real Arize Phoenix: ``streameval replay --otlp-endpoint`` sends a run's
evaluation, and Phoenix's own REST API gives back the ``streameval.evaluate`` span and its
``gen_ai.evaluation.result`` events, attribute for attribute.

Phoenix runs from its own virtual environment (``STREAMEVAL_PHOENIX``, default
``~/.cache/streameval/phoenix/bin/phoenix``; .ci/run installs it), bound to 127.0.0.1 on
free ports, with its telemetry off and its database in the test's folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from otel_expect import expected_events, expected_span_attributes

from streameval import config

pytestmark = [pytest.mark.phoenix, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "streameval" / "examples"
PHOENIX = config.local_path(config.PHOENIX_ENV) or config.CACHE / "phoenix" / "bin" / "phoenix"
#: the session id the example's Claude Code trace states
SESSION = "3f6c2a0e-5b1d-4c8e-9a57-1e2f0c9d7b41"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _until(pred, seconds: float, what: str):
    """A hang guard, not a timing assertion: poll until ``pred`` gives a value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = pred()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"{what} within {seconds:.0f} s")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    if not PHOENIX.is_file():
        pytest.fail(f"no Phoenix at {PHOENIX}: python3 -m venv ~/.cache/streameval/phoenix && "
                    "~/.cache/streameval/phoenix/bin/pip install arize-phoenix (see .ci/run)")
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {**os.environ, "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(_free_port()), "PHOENIX_WORKING_DIR": str(work),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = open(work / "phoenix.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: proc.poll() is None and _get(f"{url}/v1/projects"), 120,
               f"Phoenix did not answer (log: {work / 'phoenix.log'})")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _spans(url: str) -> list[dict]:
    return _get(f"{url}/v1/projects/default/spans?limit=100")["data"]


def test_a_replayed_run_reaches_phoenix_as_a_span_with_its_evaluations(phoenix, tmp_path):
    out = tmp_path / "records.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "streameval", "replay", str(EXAMPLE / "runs"),
         "--gold", str(EXAMPLE / "gold.jsonl"), "--repo", str(EXAMPLE / "repo"),
         "--out", str(out), "--quiet", "--otlp-endpoint", phoenix,
         "--otlp-header", "x-streameval-test=1"],
        capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "failed" not in run.stderr, run.stderr
    (record,) = [json.loads(x) for x in out.read_text().splitlines()]
    spans = _until(lambda: [s for s in _spans(phoenix) if s["name"] == "streameval.evaluate"
                            and s["attributes"].get("streameval.run_id") == record["run_id"]],
                   60, "the span did not reach Phoenix")
    (span,) = spans
    attrs = span["attributes"]
    for key, value in expected_span_attributes(record, SESSION).items():
        assert attrs.get(key) == value, (key, attrs.get(key), value)
    assert span["parent_id"] is None
    events = [e for e in span["events"] if e["name"] == "gen_ai.evaluation.result"]
    want = expected_events(record, SESSION)
    got = {e["attributes"]["gen_ai.evaluation.name"]: e["attributes"] for e in events}
    assert list(got) == list(want)              # one event per metric, in the record's order
    assert len(events) == len(want) == 18       # 4 x (coverage, precision, AUC, redundancy) + EditLoc
    for name, attrs in want.items():
        explanation = got[name].pop("gen_ai.evaluation.explanation")
        assert explanation and isinstance(explanation, str)
        assert got[name] == attrs, name
    # no label where no abort policy fired; no error on a scored run
    assert not any("gen_ai.evaluation.score.label" in a or "error.type" in a for a in got.values())


def test_an_unscorable_run_reaches_phoenix_with_its_error_type(phoenix, tmp_path):
    """A run whose gold row is damaged: every metric's event says ``error.type`` and no
    value. (A run with no gold row at all is no error: docs/metrics.md §5b.)"""
    runs = tmp_path / "runs" / "lost-run"
    runs.mkdir(parents=True)
    trace = (EXAMPLE / "runs" / "example-run-1" / "trace.jsonl").read_bytes()
    (runs / "trace.jsonl").write_bytes(trace)
    (runs / "meta.json").write_text(json.dumps({"instance_id": "no__such-1", "run_id": "lost-1"}))
    gold = tmp_path / "gold.jsonl"
    gold.write_text((EXAMPLE / "gold.jsonl").read_text() + json.dumps(
        {"instance_id": "no__such-1", "gold_context": "[not json"}) + "\n")
    run = subprocess.run(
        [sys.executable, "-m", "streameval", "replay", str(tmp_path / "runs"),
         "--gold", str(gold), "--repo", str(EXAMPLE / "repo"), "--quiet",
         "--otlp-endpoint", phoenix + "/v1/traces"],
        capture_output=True, text=True, cwd=tmp_path)
    (record,) = [json.loads(x) for x in run.stdout.splitlines()]
    assert record["error"].startswith("bad_gold")
    (span,) = _until(lambda: [s for s in _spans(phoenix)
                              if s["attributes"].get("streameval.run_id") == "lost-1"],
                     60, "the error span did not reach Phoenix")
    assert span["status_code"] == "ERROR"
    assert span["attributes"]["error.type"] == "bad_gold"
    assert span["attributes"]["gen_ai.conversation.id"] == SESSION
    events = span["events"]
    assert len(events) == 16
    for e in events:
        a = e["attributes"]
        assert a["error.type"] == "bad_gold"
        assert a["gen_ai.evaluation.explanation"] == record["error"]
        assert "gen_ai.evaluation.score.value" not in a
