"""Tokens and cost of pushed runs: the real OTLP exports of Claude Code 2.1.328 and Codex
0.169 (tests/fixtures/push) become the run's tokens, cost and model, and the record says
where they came from; a hook's ``transcript_path`` is read only where it may be."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixture_paths import PUSH

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.traces.ingest import claude_lines, otlp, transcript
from streameval.traces.ingest.spool import Spool

EXAMPLE = Path(__file__).resolve().parents[2] / "streameval" / "examples"


def _records(name: str) -> list[tuple[dict, dict]]:
    body = json.loads((PUSH / name).read_text())
    out = []
    for req in body if isinstance(body, list) else [body]:
        out += otlp.decode(json.dumps(req).encode(), "application/json")
    return out


def _spooled(tmp_path: Path, records, times: int = 1) -> list[dict]:
    spool = Spool(tmp_path / "ingest")
    for _ in range(times):
        for run in otlp.runs(records):
            spool.append(run.source, run.session_id, run.entries,
                         {"agent": run.agent, "fidelity": run.fidelity,
                          "instance_id": "example__inventory-1"})
    res = load_resources(str(EXAMPLE / "gold.jsonl"), None, str(EXAMPLE / "repo"))
    out = []
    for trace in sorted((tmp_path / "ingest").rglob("trace.jsonl")):
        snap_records = evaluate_trace(trace, res, root=tmp_path)
        out += snap_records
    return out


def test_claude_code_api_requests_are_the_runs_tokens_cost_and_model(tmp_path):
    records = _records("claude-code-2.1.328.otlp-logs.json")
    reqs = [a for _r, a in records if a.get("event.name") == "api_request"]
    assert reqs
    (rec,) = _spooled(tmp_path, records)
    assert rec["tokens"] == {
        "input": sum(int(a["input_tokens"]) for a in reqs),
        "output": sum(int(a["output_tokens"]) for a in reqs),
        "cache_read": sum(int(a["cache_read_tokens"]) for a in reqs),
        "cache_creation": sum(int(a["cache_creation_tokens"]) for a in reqs)}
    assert abs(rec["cost_usd"] - sum(float(a["cost_usd"]) for a in reqs)) < 1e-12
    assert rec["tokens_source"] == "claude_code.api_request"
    assert rec["model"] == reqs[0]["model"]


def test_an_export_delivered_twice_counts_its_requests_once(tmp_path):
    records = _records("claude-code-2.1.328.otlp-logs.json")
    (once,) = _spooled(tmp_path / "a", records)
    (twice,) = _spooled(tmp_path / "b", records, times=2)
    assert twice["tokens"] == once["tokens"] and twice["cost_usd"] == once["cost_usd"]


def test_codex_sse_events_are_the_runs_tokens_and_model(tmp_path):
    records = _records("codex-0.169.0.otlp-logs.json")
    done = [a for _r, a in records if a.get("event.name") == "codex.sse_event"
            and a.get("event.kind") == "response.completed" and "input_token_count" in a]
    assert done
    (rec,) = _spooled(tmp_path, records)
    cached = sum(int(a["cached_token_count"]) for a in done)
    assert rec["tokens"] == {
        "input": sum(int(a["input_token_count"]) for a in done) - cached,
        "output": sum(int(a["output_token_count"]) for a in done),
        "cache_read": cached, "cache_creation": 0}
    assert rec["cost_usd"] is None                   # Codex states no cost
    assert rec["tokens_source"] == "codex.sse_event"
    assert rec["model"] == done[0]["model"]


def test_a_trace_files_record_has_no_tokens_source():
    res = load_resources(str(EXAMPLE / "gold.jsonl"), None, str(EXAMPLE / "repo"))
    (rec,) = evaluate_trace(EXAMPLE / "runs" / "example-run-1" / "trace.jsonl", res)
    assert "tokens_source" not in rec and rec["tokens"]["output"] > 0


# ---------------------------------------------------------------------- transcript_path


def _transcript(root: Path, sid: str, lines: list[dict]) -> Path:
    path = root / "proj" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _assistant(sid: str, mid: str, out: int, model: str = "m1") -> dict:
    return {"type": "assistant", "sessionId": sid, "message": {
        "id": mid, "model": model, "usage": {"input_tokens": 10, "output_tokens": out,
                                              "cache_read_input_tokens": 1,
                                              "cache_creation_input_tokens": 2}}}


def test_a_transcript_under_the_roots_gives_the_sessions_totals(tmp_path):
    sid = "abc-1"
    path = _transcript(tmp_path, sid, [
        _assistant(sid, "msg_1", 5), _assistant(sid, "msg_1", 7),   # one message, grown
        _assistant(sid, "msg_2", 3), _assistant("other", "msg_9", 999)])
    (line,) = claude_lines.transcript_usage_lines(
        {"session_id": sid, "transcript_path": str(path)}, [tmp_path])
    obj = json.loads(line)
    assert obj["usageCumulative"] is True and obj["usageSource"] == "transcript"
    assert obj["message"]["usage"] == {"input_tokens": 20, "output_tokens": 10,
                                       "cache_read_input_tokens": 2,
                                       "cache_creation_input_tokens": 4}


def test_a_transcript_path_an_agent_could_abuse_is_not_read(tmp_path):
    sid = "abc-1"
    roots = [tmp_path / "root"]
    good = _transcript(roots[0], sid, [_assistant(sid, "m", 5)])
    outside = _transcript(tmp_path / "elsewhere", sid, [_assistant(sid, "m", 5)])
    link_dir = roots[0] / "escape"
    link_dir.symlink_to(outside.parent)            # a folder symlink out of the root
    final_link = roots[0] / "proj2" / f"{sid}.jsonl"
    final_link.parent.mkdir()
    final_link.symlink_to(outside)                 # the file itself a symlink
    fifo = roots[0] / "proj3" / f"{sid}.jsonl"
    fifo.parent.mkdir()
    os.mkfifo(fifo)                                # would block a plain open()
    for path in ["/etc/passwd", "/proc/self/environ", str(outside), "relative/abc-1.jsonl",
                 str(link_dir / f"{sid}.jsonl"), str(roots[0] / "proj" / "other.jsonl"),
                 str(final_link), str(fifo), 42, None]:
        assert claude_lines.transcript_usage_lines(
            {"session_id": sid, "transcript_path": path}, roots) == [], path
    assert claude_lines.transcript_usage_lines(
        {"session_id": sid, "transcript_path": str(good)}, roots)
    assert transcript.allowed(str(good), sid, []) is None      # no roots: nothing is read


def test_a_transcript_is_read_on_from_where_the_last_hook_left_it(tmp_path):
    """Each hook asks for the run's totals; the reader reads only what was appended
    since, holds a half-written last line back, and starts over when the file is
    rewritten (smaller), so the totals are always those of the whole file's lines."""
    def line(mid, n, sid="s1"):
        return json.dumps({"type": "assistant", "sessionId": sid, "message": {
            "id": mid, "model": "m", "usage": {"input_tokens": n, "output_tokens": 1}}}) + "\n"

    path = tmp_path / "s1.jsonl"
    reader = transcript.UsageReader()
    path.write_text(line("a", 10) + line("b", 20))
    assert reader.usage_of(path, "s1")[0]["input_tokens"] == 30
    half = line("c", 40)
    with open(path, "a") as fh:
        fh.write(line("a", 10) + half[:15])          # a repeated message, a torn line
    assert reader.usage_of(path, "s1")[0]["input_tokens"] == 30
    with open(path, "a") as fh:
        fh.write(half[15:] + line("x", 99, sid="other"))
    assert reader.usage_of(path, "s1")[0]["input_tokens"] == 70
    assert reader.usage_of(path, "s1") == transcript.usage_of(path, "s1")
    path.write_text(line("z", 5))                     # rewritten: read from its start
    assert reader.usage_of(path, "s1")[0]["input_tokens"] == 5
