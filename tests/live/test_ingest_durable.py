"""Acknowledged means durable, and a retry is stored once (issue 18), on all three routes.

The kill test forks a real server process and SIGKILLs it at each durable step of the
spool in turn (the ``Spool.step_hook`` seam: before every mkdir, write, fsync, rename
and answer); the client retries what went unanswered against a restarted server, as
real clients do. Whatever the step, the spool ends as a run without kills leaves it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import time

import orjson
import pytest
from fixture_paths import PUSH
from served import SPOOL_NAME, Served

from streameval.live.watch import WatchConfig, Watcher

HOOK = {"session_id": "h1", "cwd": "/workspace/demo", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_response": {"stdout": "app.py", "stderr": ""}}
LINES_A = b'{"type": "system", "subtype": "init", "session_id": "l1"}\n{"a": 1}\n'
LINES_B = b'{"b": 2}\n{"c": 3}\n'


def _hook(event: str, call: str | None = None) -> bytes:
    return json.dumps({**HOOK, "hook_event_name": event,
                       **({"tool_use_id": call} if call else {})}).encode()


def _otlp() -> bytes:
    return (PUSH / "codex-0.169.0.otlp-logs.json").read_bytes()


#: (path, body, content type): new runs, appends, and deliberate repeats of answered ones
SCRIPT = [
    ("/v1/runs/l1/lines?offset=0", LINES_A, "application/x-ndjson"),
    ("/v1/hooks/claude", _hook("PostToolUse", "t1"), "application/json"),
    ("/v1/logs", _otlp(), "application/json"),
    (f"/v1/runs/l1/lines?offset={len(LINES_A)}", LINES_B, "application/x-ndjson"),
    ("/v1/hooks/claude", _hook("PostToolUse", "t2"), "application/json"),
    ("/v1/hooks/claude", _hook("PostToolUse", "t1"), "application/json"),
    ("/v1/logs", _otlp(), "application/json"),
    ("/v1/runs/l1/lines?offset=0", LINES_A + LINES_B, "application/x-ndjson"),
    ("/v1/hooks/claude", _hook("SessionEnd"), "application/json"),
]


def spool_content(root) -> dict:
    """Every spooled file, lines without the time a hook was stored."""
    out = {}
    for path in sorted((root / SPOOL_NAME).rglob("*")):
        if path.is_file() and ".staging" not in path.parts:
            lines = []
            for line in path.read_bytes().splitlines():
                obj = orjson.loads(line)
                if isinstance(obj, dict):
                    obj.pop("timestamp", None) if "sessionId" in obj else None
                lines.append(obj)
            out[str(path.relative_to(root))] = lines
    return out


def _post(port: int, path: str, body: bytes, ctype: str) -> int | None:
    """The status, or None when the server went away before answering."""
    import http.client

    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", path, body=body, headers={"Content-Type": ctype})
        status = conn.getresponse().status
        conn.close()
        return status
    except (OSError, http.client.HTTPException):
        return None


def _serve_in_child(runs, res, kill_at: int, conn) -> None:
    from streameval.traces.ingest.spool import Spool

    steps = [0]

    def step(_name: str) -> None:
        steps[0] += 1
        if steps[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    Spool.step_hook = staticmethod(step)
    w = Watcher(WatchConfig(root=runs), res)
    srv = Served(w)
    conn.send(srv.port)
    while True:
        time.sleep(60)


class Child:
    """A server process over ``runs``, killed at its ``kill_at``-th durable step (0: never)."""

    def __init__(self, runs, res, kill_at: int):
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve_in_child, args=(runs, res, kill_at, child), daemon=True)
        self.proc.start()
        assert parent.poll(30), "the server process did not start"
        self.port = parent.recv()

    def stop(self) -> None:
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join(10)


def _run_script(runs, res, kill_at: int) -> int:
    """The script against a server killed at ``kill_at``, every unanswered request sent
    again to a fresh server until answered; returns how many servers died."""
    child, deaths = Child(runs, res, kill_at), 0
    try:
        for path, body, ctype in SCRIPT:
            while True:
                status = _post(child.port, path, body, ctype)
                if status is not None:
                    assert status == 200, (path, status)
                    break
                child.stop()
                deaths += 1
                assert deaths < 3
                child = Child(runs, res, 0)
    finally:
        child.stop()
    return deaths


def _steps(runs, res) -> int:
    """Durable steps of a run of the script without kills."""
    from streameval.traces.ingest.spool import Spool

    count = [0]
    Spool.step_hook = staticmethod(lambda _name: count.__setitem__(0, count[0] + 1))
    try:
        w = Watcher(WatchConfig(root=runs), res)
        srv = Served(w)
        try:
            for path, body, ctype in SCRIPT:
                assert srv.post(path, body, ctype)[0] == 200
        finally:
            srv.close()
    finally:
        Spool.step_hook = None
    return count[0]


def test_no_acknowledged_loss_or_duplicate_when_killed_at_any_durable_step(env, tmp_path):
    _s, _runs, res = env
    clean = tmp_path / "clean"
    clean.mkdir()
    n = _steps(clean, res)
    expected = spool_content(clean)
    assert len(expected[f"{SPOOL_NAME}/claude-hooks/h1/trace.jsonl"]) == 5   # 2 calls, an end
    assert expected[f"{SPOOL_NAME}/lines/l1/trace.jsonl"] == [
        orjson.loads(x) for x in (LINES_A + LINES_B).splitlines()]
    killed = 0
    for k in range(1, n + 1):
        runs = tmp_path / f"k{k}"
        runs.mkdir()
        killed += _run_script(runs, res, k)
        assert spool_content(runs) == expected, f"killed at durable step {k} of {n}"
        assert not any((runs / SPOOL_NAME / ".staging").glob("*"))
    assert killed == n   # every step was reached and killed once


@pytest.mark.parametrize("route", ["lines", "claude", "logs"])
def test_a_request_retried_after_its_answer_was_lost_is_stored_once(env, tmp_path, route):
    """The client sends, the server stores, the answer never reaches the client (it
    hung up), and the client sends again: one copy (648f216 stored 389 lines twice)."""
    from claude_run import watcher

    _s, runs, res = env
    w = watcher(runs, res, tmp_path)
    srv = Served(w)
    path, body, ctype = {"lines": SCRIPT[0], "claude": SCRIPT[1], "logs": SCRIPT[2]}[route]
    request = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)   # hang up without reading the answer
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (
            [p for p in (runs / SPOOL_NAME).rglob("trace.jsonl") if ".staging" not in p.parts]
            and not any((runs / SPOOL_NAME / ".staging").glob("*"))):
        time.sleep(0.02)
    time.sleep(0.1)   # an append in flight lands
    once = spool_content(runs)
    assert srv.post(path, body, ctype)[0] == 200     # the retry
    srv.close()
    assert spool_content(runs) == once
    (trace,) = [k for k in once if k.endswith("trace.jsonl")]
    assert once[trace]


def test_a_half_made_run_left_by_a_crash_is_repaired(env, tmp_path):
    """A crash between the run directory's mkdir and its meta.json's rename (2 of 200
    runs in the campaign) left a directory and a temporary file: 648f216 took the run
    for known and never wrote meta.json, so every later answer was 200 and the run's
    record a missing_gold error. The next request for it writes meta.json."""
    from claude_run import watcher

    s, runs, res = env
    half = runs / SPOOL_NAME / "lines" / "r1"
    half.mkdir(parents=True)
    (half / ".meta.json.k2j4d8.tmp").write_text('{"run_id": "r1", "instance')
    w = watcher(runs, res, tmp_path)
    srv = Served(w)
    assert srv.post(f"/v1/runs/r1/lines?instance_id={s.instance}", LINES_A, "application/x-ndjson")[0] == 200
    srv.close()
    meta = json.loads((half / "meta.json").read_text())
    assert meta["instance_id"] == s.instance and meta["run_id"] == "r1"
    assert [p.name for p in half.iterdir() if p.name.endswith(".tmp")] == []


def test_runs_of_before_a_restart_do_not_count_against_max_runs(env, tmp_path):
    """648f216 counted every run directory on disk: after a restart it answered 429 to
    5 of 5 new runs. Only runs open now (pushed to within the idle timeout) count."""
    from claude_run import watcher

    _s, runs, res = env
    for i in range(3):
        old = runs / SPOOL_NAME / "lines" / f"old-{i}"
        old.mkdir(parents=True)
        (old / "meta.json").write_text(json.dumps({"run_id": f"old-{i}"}))
        (old / "trace.jsonl").write_bytes(LINES_A)
    w = watcher(runs, res, tmp_path)
    srv = Served(w, max_runs=3)
    try:
        for i in range(3):
            assert srv.post(f"/v1/runs/new-{i}/lines", LINES_A, "application/x-ndjson")[0] == 200
        status, answer = srv.post("/v1/runs/new-3/lines", LINES_A, "application/x-ndjson")
        assert status == 429 and "open" in answer["error"]   # the bound still holds
    finally:
        srv.close()


def test_otlp_records_that_cannot_be_stored_are_said_and_counted(env, tmp_path):
    """648f216 dropped a record with an invalid session id silently, answering 200."""
    from claude_run import watcher

    _s, runs, res = env
    body = json.loads(_otlp())
    records = [rec for rl in body["resourceLogs"] for sl in rl["scopeLogs"] for rec in sl["logRecords"]]
    for rec in records:
        for attr in rec["attributes"]:
            if attr["key"] == "conversation.id":
                attr["value"] = {"stringValue": "../not a session"}
                break
    w = watcher(runs, res, tmp_path)
    srv = Served(w)
    status, answer = srv.post("/v1/logs", json.dumps(body).encode())
    srv.close()
    def stored(rec: dict) -> bool:   # a tool result, or a completion with its token counts
        attrs = {a["key"]: a["value"].get("stringValue") for a in rec["attributes"]}
        return attrs.get("event.name") == "codex.tool_result" or (
            attrs.get("event.name") == "codex.sse_event" and "input_token_count" in attrs
            and attrs.get("event.kind") == "response.completed")

    n = sum(1 for rec in records if stored(rec))
    assert status == 200 and n > 0
    assert answer["partialSuccess"]["rejectedLogRecords"] == str(n)
    assert "invalid_session_id" in answer["partialSuccess"]["errorMessage"]
    assert w.table.stats.ingest_rejected[("logs", "invalid_session_id")] == n
