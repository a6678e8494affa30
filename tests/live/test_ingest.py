"""The ingest endpoints over real HTTP: pushed lines, the real Claude Code hook payloads
and OTLP exports captured from the real CLIs (JSON, and the same as protobuf), steering,
and every refusal a clear 4xx while the watcher goes on."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, Claude
from fixture_paths import PUSH
from served import Served

from streameval.live.ingest import SPOOL_NAME
from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.record import record_line


@pytest.fixture
def served(env, tmp_path):
    from claude_run import watcher

    s, runs, res = env
    w = watcher(runs, res, tmp_path)
    srv = Served(w)
    yield s, runs, res, w, srv
    srv.close()


def _poll(w):
    w.scan()
    w.poll_all()


def test_pushed_lines_are_scored_as_the_same_file_replayed(served, tmp_path):
    s, runs, res, w, srv = served
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 5), c.result()]
    own = tmp_path / "own.jsonl"
    own.write_bytes(b"\n".join(lines) + b"\n")
    q = f"?instance_id={s.instance}"
    assert srv.post(f"/v1/runs/r-1/lines{q}", b"\n".join(lines[:3]), "application/x-ndjson") == \
        (200, {"accepted": 3})
    _poll(w)
    assert srv.post(f"/v1/runs/r-1/lines{q}", b"\n".join(lines[3:]) + b"\n")[0] == 200
    _poll(w)
    w.tick()
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    pushed = runs / SPOOL_NAME / "lines" / "r-1" / "trace.jsonl"
    assert line + b"\n" == record_line(evaluate_trace(pushed, res, root=runs)[0])
    rec, mine = orjson.loads(line), evaluate_trace(own, res, instance=s.instance)[0]
    assert rec["fidelity"] == "full" and rec["run_id"] == "r-1"
    assert rec["final"] == mine["final"] and rec["num_steps"] == mine["num_steps"] == 2


def _hooks() -> list[dict]:
    return [json.loads(x) for x in (PUSH / "claude-code-2.1.328.hooks.jsonl").read_text().splitlines()]


def test_real_claude_code_hook_payloads_become_its_calls(served):
    """The payloads Claude Code 2.1.328 sent (Read 1-12, sed -n 30,40p, Edit of line 4)."""
    s, runs, res, w, srv = served
    for hook in _hooks():
        status, answer = srv.post(f"/v1/hooks/claude?instance_id={s.instance}", json.dumps(hook).encode())
        assert (status, answer) == (200, {})
    sid = _hooks()[0]["session_id"]
    trace = runs / SPOOL_NAME / "claude-hooks" / sid / "trace.jsonl"
    from streameval.model import RunEnd, ToolCall
    from streameval.traces.formats.claude import ClaudeAdapter

    adapter = ClaudeAdapter()
    events = [e for i, ln in enumerate(trace.read_bytes().splitlines(), 1) for e in adapter.feed(ln, i)]
    events += adapter.close()
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.tool for c in calls] == ["Read", "Bash", "Edit"]
    assert calls[0].output.split("\n")[0] == '1\t"""A module."""'
    assert calls[0].output.split("\n")[-1] == "12\t    if value:"
    assert calls[1].output.startswith("def eps(x):")
    assert isinstance(calls[2].structured, dict) and "structuredPatch" in calls[2].structured
    assert any(isinstance(e, RunEnd) for e in events)   # SessionEnd ends the run
    meta = json.loads((trace.parent / "meta.json").read_text())
    assert meta == {"run_id": sid, "agent": "claude-code", "fidelity": "full", "instance_id": s.instance}


def _otlp_json(name: str) -> bytes:
    return (PUSH / name).read_bytes()


def _as_protobuf(body: bytes) -> bytes:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    return ParseDict(json.loads(body), ExportLogsServiceRequest()).SerializeToString()


@pytest.mark.parametrize("name,source,fidelity", [
    ("claude-code-2.1.328.otlp-logs.json", "claude-otel", "inputs"),
    ("codex-0.169.0.otlp-logs.json", "codex-otel", "full")])
def test_otlp_json_and_protobuf_give_the_same_trace(env, tmp_path, name, source, fidelity):
    from claude_run import watcher

    s, runs, res = env
    traces = []
    for kind in ("json", "protobuf"):
        root = tmp_path / kind
        root.mkdir()
        w = watcher(root, res, tmp_path / f"{kind}-out")
        srv = Served(w)
        try:
            body = _otlp_json(name)
            if kind == "protobuf":
                # an empty ExportLogsServiceResponse is zero bytes (read back as {})
                assert srv.post("/v1/logs", _as_protobuf(body), "application/x-protobuf") == (200, {})
            else:
                assert srv.post("/v1/logs", body) == (200, {})
        finally:
            srv.close()
        (trace,) = sorted((root / SPOOL_NAME / source).glob("*/trace.jsonl"))
        traces.append(trace)
        assert json.loads((trace.parent / "meta.json").read_text())["fidelity"] == fidelity
    assert traces[0].read_bytes() == traces[1].read_bytes()
    lines = traces[0].read_bytes().splitlines()
    # the pushed tokens (api_request, sse_event: traces.ingest.otlp) are lines of their own
    usage = [ln for ln in lines if b'"usageSource"' in ln or b'"session_meta"' in ln
             or b'"turn_context"' in ln]
    assert usage
    lines = [ln for ln in lines if ln not in usage]
    assert len(lines) >= 4 and len(lines) % 2 == 0     # a call and its answer, per tool_result


def test_refusals_are_clear_4xx_and_the_watcher_goes_on(env, tmp_path):
    from claude_run import watcher

    s, runs, res = env
    w = watcher(runs, res, tmp_path)
    srv = Served(w, token="s3cret", max_runs=2, max_body=4096)
    auth = {"Authorization": "Bearer s3cret"}
    try:
        assert srv.post("/v1/runs/a/lines", b"{}")[0] == 401
        assert srv.post("/v1/runs/a/lines", b"{}", headers={"Authorization": "Bearer nope"})[0] == 401
        assert srv.post("/v1/runs/a/lines", b"x" * 5000, headers=auth)[0] == 413
        assert srv.post("/v1/runs/..%2f..%2fetc/lines", b"{}", headers=auth)[0] in (400, 404)
        assert srv.post("/v1/runs/bad%20name/lines", b"{}", headers=auth)[0] == 400
        assert srv.post("/v1/nothing", b"{}", headers=auth)[0] == 404
        assert srv.post("/v1/hooks/claude", b"not json", headers=auth)[0] == 400
        assert srv.post("/v1/hooks/claude", b'{"session_id": "../x", "hook_event_name": "Stop"}',
                        headers=auth)[0] == 400
        assert srv.post("/v1/logs", b"{}", "text/plain", headers=auth)[0] == 415
        assert srv.post("/v1/logs", b"\xff\x00garbage", "application/x-protobuf", headers=auth)[0] == 400
        for run in ("one", "two"):
            assert srv.post(f"/v1/runs/{run}/lines", b"{}", headers=auth)[0] == 200
        status, answer = srv.post("/v1/runs/three/lines", b"{}", headers=auth)
        assert status == 429 and "runs" in answer["error"]
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        conn.request("GET", "/v1/logs", headers=auth)
        assert conn.getresponse().status == 405
        conn.close()
        text = srv.metrics()          # the server and the watcher go on
        assert 'streameval_ingest_requests_total{route="lines",status="401"} 2.0' in text
    finally:
        srv.close()
    assert not any(p.name == "etc" for p in Path(runs).rglob("*"))


def test_steering_answer_for_a_run_a_policy_stopped(served):
    s, runs, res, w, srv = served
    from streameval.live.abort.engine import AbortEngine, attach, parse_policies

    engine = attach(w, AbortEngine(parse_policies(
        '[[policy]]\nname = "budget"\nkind = "max_steps"\nlimit = 1\naction = "file"\n', "t.toml")))
    pre = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Read",
           "tool_use_id": "t2", "tool_input": {}, "cwd": "/workspace/demo"}
    assert srv.post("/v1/hooks/claude", json.dumps(pre).encode()) == (200, {})
    post = {**pre, "hook_event_name": "PostToolUse", "tool_use_id": "t1",
            "tool_input": {"file_path": "/workspace/demo/src/app.py"},
            "tool_response": {"type": "text", "file": {"content": APP.rstrip("\n"), "startLine": 1}}}
    assert srv.post(f"/v1/hooks/claude?instance_id={s.instance}", json.dumps(post).encode())[0] == 200
    _poll(w)
    status, answer = srv.post("/v1/hooks/claude", json.dumps(pre).encode())
    assert status == 200
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "policy budget" in out["permissionDecisionReason"]
    engine.close()


def test_the_next_pre_tool_use_waits_until_the_calls_before_it_are_scored(served):
    """The PostToolUse that trips a policy is answered once stored; the session's next
    PreToolUse waits until that call is scored and is denied, even when it arrives before
    the watcher has read the call (here: while nothing drives the watcher)."""
    from concurrent.futures import ThreadPoolExecutor

    from streameval.live.abort.engine import AbortEngine, attach, parse_policies

    s, runs, res, w, _srv = served
    srv = Served(w, scored=True)
    engine = attach(w, AbortEngine(parse_policies(
        '[[policy]]\nname = "budget"\nkind = "max_steps"\nlimit = 1\naction = "file"\n', "t.toml")))
    try:
        pre = {"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Read",
               "tool_use_id": "t1", "tool_input": {}, "cwd": "/workspace/demo"}
        post = {**pre, "hook_event_name": "PostToolUse",
                "tool_input": {"file_path": "/workspace/demo/src/app.py"},
                "tool_response": {"type": "text", "file": {"content": APP.rstrip("\n"), "startLine": 1}}}
        q = f"?instance_id={s.instance}"
        assert srv.post(f"/v1/hooks/claude{q}", json.dumps(pre).encode()) == (200, {})
        assert srv.post(f"/v1/hooks/claude{q}", json.dumps(post).encode()) == (200, {})
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(srv.post, f"/v1/hooks/claude{q}",
                                 json.dumps({**pre, "tool_use_id": "t2"}).encode())
            while len(srv.app.waits) == 0 and not answer.done():
                time.sleep(0.005)
            assert not answer.done()           # waiting for the watcher, not answered
            _poll(w)                           # the watcher reads and scores the call
            status, out = answer.result(timeout=30)
        assert status == 200
        hook = out["hookSpecificOutput"]
        assert hook["permissionDecision"] == "deny" and "policy budget" in hook["permissionDecisionReason"]
    finally:
        engine.close()
        srv.close()


def test_watch_ingest_on_the_command_line(tmp_path):
    """``streameval watch --ingest`` as users start it: lines pushed over HTTP become a
    record in --out equal to replay of the pushed file; /metrics counts the request."""
    import signal

    from claude_run import bearer, make_setup, wait_until, watch_process

    from streameval.runs.resources import load_resources

    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    out = tmp_path / "out.jsonl"
    proc, port = watch_process([str(runs), "--gold", str(s.gold), "--repo", str(s.repo), "--port", "0",
                                "--out", str(out), "--ingest", "--idle-timeout", "1",
                                "--patch-grace", "0", "--ingest-token-file",
                                str(tmp_path / "token")], tmp_path / "watch.log")
    try:
        c = Claude()
        body = b"\n".join([c.init(), *c.read("src/app.py", APP, 1, 20), c.result()]) + b"\n"
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/runs/cli-1/lines?instance_id={s.instance}",
                                     body, {"Content-Type": "application/x-ndjson",
                                            **bearer(tmp_path / "token")})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert json.loads(r.read()) == {"accepted": 4}
        wait_until(lambda: out.exists() and out.read_bytes().endswith(b"\n"), what="record")

        def counted() -> bool:   # the front's counters reach the watcher every 0.2 s
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return 'streameval_ingest_requests_total{route="lines",status="200"} 1.0' \
                    in r.read().decode()

        wait_until(counted, what="the push counted in /metrics")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    pushed = runs / SPOOL_NAME / "lines" / "cli-1" / "trace.jsonl"
    res = load_resources(str(s.gold), None, str(s.repo))
    [line] = out.read_bytes().splitlines()
    assert line + b"\n" == record_line(evaluate_trace(pushed, res, root=runs)[0])


def test_one_big_body_is_decoded_at_a_time(tmp_path):
    # decoding holds the interpreter lock: a second big decode at once is no sooner,
    # only another ~40 MB of objects at the peak (8 MiB of OTLP JSON)
    from streameval.live.ingest import HEAVY, IngestRoutes
    from streameval.traces.ingest.spool import Spool

    routes = IngestRoutes(Spool(tmp_path / "spool"))
    calls = []

    def store_now(route, path, request, body):
        calls.append(routes._heavy.acquire(blocking=False))   # another big one now?
        return route

    routes._store_now = store_now
    with routes._heavy:   # a big body being decoded
        assert routes._store("logs", "/v1/logs", None, bytearray(HEAVY - 1)) == "logs"
    assert routes._store("logs", "/v1/logs", None, bytearray(HEAVY)) == "logs"
    assert calls == [False, False]


_PUSHES = [("/v1/runs/x/lines", b'{"type": "system"}\n'),
           ("/v1/hooks/claude", b'{"session_id": "s1", "hook_event_name": "Stop"}'),
           ("/v1/logs", b'{"resourceLogs": []}')]


@pytest.mark.parametrize("token", [None, "s3cret"], ids=["no-token", "token"])
def test_a_web_pages_push_is_refused_token_or_not(env, tmp_path, token):
    """f53415f stored what a page of another origin sent through its visitor's browser:
    a no-cors fetch or a form can send text/plain (OTLP took ``text/plain;charset=json``)
    and carries the browser's Origin and Sec-Fetch-Site. Refused whatever the token."""
    from claude_run import watcher

    _s, runs, res = env
    w = watcher(runs, res, tmp_path)
    srv = Served(w, token=token)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    own = f"http://127.0.0.1:{srv.port}"
    try:
        for path, body in _PUSHES:
            for ctype in ("text/plain", "text/plain;charset=json", "text/plain; charset=utf-8",
                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
                assert srv.post(path, body, ctype, auth)[0] == 415, (path, ctype)
            for browser in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                            {"Origin": "http://127.0.0.1:1"},   # another port: another origin
                            {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}):
                assert srv.post(path, body, None, {**auth, **browser})[0] == 403, (path, browser)
        # a page of the server's own origin, and a request a user typed, may
        assert srv.post("/v1/runs/x/lines", b'{"a": 1}\n', None,
                        {**auth, "Origin": own, "Sec-Fetch-Site": "same-origin"})[0] == 200
        assert srv.post("/v1/runs/y/lines", b'{"a": 1}\n', "application/x-ndjson; charset=utf-8",
                        {**auth, "Sec-Fetch-Site": "none"})[0] == 200
    finally:
        srv.close()
    assert sorted(p.parent.name for p in runs.rglob("trace.jsonl")) == ["x", "y"]
    assert w.table.stats.http_refused["cross_site"] == 15
    assert w.table.stats.http_refused["content_type"] == 15


def test_ids_beginning_with_a_dot_are_refused(served):
    """f53415f took ``.hidden`` and ``...``: stored, but never scored, shown or stopped
    (the watcher skips hidden names), so a run could hide from the page and from abort."""
    s, runs, res, w, srv = served
    for run_id in (".hidden", "...", ".", ".."):
        assert srv.post(f"/v1/runs/{run_id}/lines", b'{"a": 1}\n')[0] in (400, 404), run_id
    status, answer = srv.post("/v1/hooks/claude",
                              b'{"session_id": ".hidden", "hook_event_name": "Stop"}')
    assert status == 400 and "not beginning with '.'" in answer["error"]
    logs = json.loads(_otlp_json("codex-0.169.0.otlp-logs.json"))
    for scope in logs["resourceLogs"][0]["scopeLogs"]:
        for record in scope["logRecords"]:
            for attr in record["attributes"]:
                if attr["key"] == "conversation.id":
                    attr["value"]["stringValue"] = ".hidden"
    status, answer = srv.post("/v1/logs", json.dumps(logs).encode())
    assert status == 200 and answer["partialSuccess"]["rejectedLogRecords"] != "0"
    assert not [p for p in runs.rglob("*") if p.name.startswith(".") and p.name != ".staging"]
    assert srv.post("/v1/runs/a.b-c_d/lines", b'{"a": 1}\n')[0] == 200   # a dot inside: fine
