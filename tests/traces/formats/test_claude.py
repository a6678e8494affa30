"""ClaudeAdapter on the real Claude Code fixtures and on hand-made lines for each rule."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import orjson
import pytest

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, Usage
from streameval.traces.files import read_head
from streameval.traces.formats import detect_format
from streameval.traces.formats.claude import ClaudeAdapter

EXPECTED = Path(__file__).resolve().parent / "expected"
FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens")


# --------------------------------------------------------------------------- helpers


def run(adapter, lines: list[bytes]) -> list:
    events = []
    for lineno, line in enumerate(lines, 1):
        events.extend(adapter.feed(line, lineno))
    return events + adapter.close()


def run_file(adapter, path: Path) -> list:
    return run(adapter, path.read_bytes().split(b"\n"))


def short(tool_input: dict) -> str:
    return json.dumps(tool_input, sort_keys=True, ensure_ascii=False)[:80]


def summarize(events: list) -> dict:
    """The golden summary of an adapter's events (same shape as expected/*.json)."""
    calls = [e for e in events if isinstance(e, ToolCall)]
    increments = [e.tokens for e in events if isinstance(e, Usage) and not e.cumulative]
    finals = [e for e in events if isinstance(e, Usage) and e.cumulative]
    final = None
    if finals:
        final = {f: getattr(finals[-1].tokens, f) for f in FIELDS}
        final["cost_usd"] = finals[-1].cost_usd
    return {
        "tool_calls": dict(sorted(Counter(c.tool for c in calls).items())),
        "sidechain": sum(c.sidechain for c in calls),
        "errors": sum(c.is_error for c in calls),
        "unanswered": sum(c.output is None for c in calls),
        "first_calls": [[c.tool, short(c.input)] for c in calls[:5]],
        "usage_increments": {f: sum(getattr(t, f) for t in increments) for f in FIELDS},
        "usage_final": final,
        "bad_lines": dict(Counter(e.reason for e in events if isinstance(e, BadLine))),
        "run_info": sum(isinstance(e, RunInfo) for e in events),
        "run_ends": [e.reason for e in events if isinstance(e, RunEnd)],
    }


def line(obj: dict) -> bytes:
    return orjson.dumps(obj)


def assistant(*blocks, msg_id="msg_1", usage=None, **extra) -> bytes:
    message = {"id": msg_id, "role": "assistant", "content": list(blocks),
               "usage": usage or {"input_tokens": 1, "output_tokens": 1}}
    return line({"type": "assistant", "message": message, **extra})


def tool_use(call_id: str, name: str = "Read", **tool_input) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def user_result(call_id: str, content, is_error: bool | None = None, **extra) -> bytes:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return line({"type": "user", "message": {"role": "user", "content": [block]}, **extra})


def claude_fixtures(real: Path) -> list[Path]:
    return sorted(real.glob("claude-session/*.jsonl")) + sorted(real.glob("claude-stream/*.jsonl"))


# --------------------------------------------------------------------------- golden


FIXTURE_NAMES = sorted(p.name[: -len(".json")] for p in EXPECTED.glob("claude-*.jsonl.json"))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_golden_summary_of_real_trace(real_fixtures: Path, name: str):
    path = next(real_fixtures.glob(f"*/{name}"))
    expected = json.loads((EXPECTED / f"{name}.json").read_text())
    assert summarize(run_file(ClaudeAdapter(), path)) == expected


def test_every_claude_fixture_has_a_golden_file(real_fixtures: Path):
    assert {p.name for p in claude_fixtures(real_fixtures)} == set(FIXTURE_NAMES)
    assert len(FIXTURE_NAMES) == 12   # 10 public, 2 from the real CLI 2.1.328 (tests/agents)


def test_detect_accepts_claude_and_rejects_other_formats(real_fixtures: Path):
    for path in sorted(real_fixtures.glob("*/*")):
        head = read_head(path, 5)   # a conversation directory: its first events
        assert ClaudeAdapter.detect(head) == path.name.startswith("claude-"), path.name
    assert not ClaudeAdapter.detect([b"not json", b"[1, 2]"])
    assert not ClaudeAdapter.detect([])


def test_registry_detects_claude_stream(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-stream/*issue-724*"))
    assert detect_format(path.read_bytes().split(b"\n")[:5]) == "claude"


# --------------------------------------------------------------------------- usage


def test_split_api_message_usage_is_counted_once():
    usage = {"input_tokens": 9, "output_tokens": 8, "cache_read_input_tokens": 100,
             "cache_creation_input_tokens": 23}
    grown = dict(usage, output_tokens=231)  # the last copy of a streamed message grew
    events = run(ClaudeAdapter(), [
        assistant({"type": "thinking", "thinking": "..."}, msg_id="m1", usage=usage),
        assistant(tool_use("t1", "Write", file_path="/w/a.py", content="x"), msg_id="m1",
                  usage=usage),
        assistant({"type": "text", "text": "done"}, msg_id="m1", usage=grown),
        assistant({"type": "text", "text": "next"}, msg_id="m2", usage=usage),
    ])
    increments = [e for e in events if isinstance(e, Usage)]
    assert all(not u.cumulative for u in increments)
    assert sum(u.tokens.input_tokens for u in increments) == 18  # m1 once + m2 once
    assert sum(u.tokens.output_tokens for u in increments) == 231 + 8
    assert sum(u.tokens.cache_read_tokens for u in increments) == 200
    assert sum(u.tokens.cache_creation_tokens for u in increments) == 46


def test_split_message_in_real_session_counts_each_message_once(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-session/*sample_main_transcript*"))
    lines = [json.loads(x) for x in path.read_bytes().split(b"\n") if x.strip()]
    per_line = sum(o["message"]["usage"]["input_tokens"] for o in lines
                   if o["type"] == "assistant")
    events = run_file(ClaudeAdapter(), path)
    counted = sum(e.tokens.input_tokens for e in events if isinstance(e, Usage))
    # 28 assistant lines are 12 API messages: summing per line would count 9/12 twice.
    assert counted < per_line
    assert counted == sum({o["message"]["id"]: o["message"]["usage"]["input_tokens"]
                           for o in lines if o["type"] == "assistant"}.values())


def test_stream_result_gives_cumulative_usage_with_cost_and_run_end(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-stream/*issue-724*"))
    events = run_file(ClaudeAdapter(), path)
    final = [e for e in events if isinstance(e, Usage) and e.cumulative]
    assert len(final) == 1 and final[0].cost_usd is not None and final[0].cost_usd > 0
    assert final[0].tokens.output_tokens > 0
    ends = [e for e in events if isinstance(e, RunEnd)]
    assert [e.reason for e in ends] == ["success"] and ends[0].lineno == 184
    info = [e for e in events if isinstance(e, RunInfo)]
    assert info[0].model == "claude-sonnet-4-5-20250929" and info[0].agent == "claude-code"
    assert info[0].cwd == "/tmp/gh-issue-solver-1763150450915"


# --------------------------------------------------------------------------- calls


def test_tool_use_without_result_is_flushed_at_close():
    adapter = ClaudeAdapter()
    fed = adapter.feed(assistant(tool_use("t1", file_path="/r/a.py")), 1)
    assert not [e for e in fed if isinstance(e, ToolCall)]
    flushed = adapter.close()
    assert len(flushed) == 1 and isinstance(flushed[0], ToolCall)
    assert flushed[0].output is None and flushed[0].call_id == "t1"
    assert adapter.close() == []


def test_result_is_emitted_when_it_arrives_with_its_output():
    adapter = ClaudeAdapter()
    adapter.feed(assistant(tool_use("t1", file_path="/r/a.py", offset=5, limit=2)), 1)
    events = adapter.feed(user_result("t1", "     5→a\n     6→b"), 2)
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.tool == "Read" and call.input == {"file_path": "/r/a.py", "offset": 5, "limit": 2}
    assert call.output == "     5→a\n     6→b" and not call.is_error and call.lineno == 2
    assert adapter.close() == []


def test_is_error_comes_from_the_result_block():
    events = run(ClaudeAdapter(), [
        assistant(tool_use("t1", "Bash", command="cat nope"), tool_use("t2", "Bash", command="ls")),
        user_result("t1", "Exit code 1\ncat: nope: No such file", is_error=True),
        user_result("t2", "a.py", is_error=False),
    ])
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    assert calls["t1"].is_error and not calls["t2"].is_error


def test_result_content_as_list_of_text_and_image_blocks():
    content = [{"type": "text", "text": "first"},
               {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
               {"type": "text", "text": "second"}]
    events = run(ClaudeAdapter(), [assistant(tool_use("t1", file_path="/r/p.png")),
                                   user_result("t1", content)])
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.output == "first\nsecond"


def test_list_content_in_real_session(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-session/*d-kimuson*"))
    calls = [e for e in run_file(ClaudeAdapter(), path) if isinstance(e, ToolCall)]
    # 5 Task results are lists of text blocks; their text must come through.
    tasks = [c for c in calls if c.tool == "Task"]
    assert len(tasks) == 5 and all(c.output for c in tasks)


def test_sidechain_from_is_sidechain_and_from_parent_tool_use_id():
    events = run(ClaudeAdapter(), [
        assistant(tool_use("main", "Task", prompt="go")),
        assistant(tool_use("sub1", file_path="/r/a.py"), msg_id="m2", isSidechain=True),
        user_result("sub1", "x", isSidechain=True),
        assistant(tool_use("sub2", "Grep", pattern="x"), msg_id="m3",
                  parent_tool_use_id="main"),
        user_result("sub2", "a.py", parent_tool_use_id="main"),
        user_result("main", "report"),
    ])
    calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
    assert calls["sub1"].sidechain and calls["sub2"].sidechain and not calls["main"].sidechain


def test_structured_result_from_session_and_stream(real_fixtures: Path):
    session = next(real_fixtures.glob("claude-session/*full-session-four*"))
    calls = [e for e in run_file(ClaudeAdapter(), session) if isinstance(e, ToolCall)]
    reads = [c for c in calls if c.tool == "Read" and c.structured]
    assert reads and all("startLine" in c.structured["file"] for c in reads)
    edits = [c for c in calls if c.tool == "Edit" and not c.is_error]
    assert edits and all("structuredPatch" in c.structured for c in edits)
    stream = next(real_fixtures.glob("claude-stream/*issue-759*"))
    calls = [e for e in run_file(ClaudeAdapter(), stream) if isinstance(e, ToolCall)]
    assert any(c.tool == "Read" and c.structured and "numLines" in c.structured["file"]
               for c in calls)


def test_rejected_edit_has_no_structured_result(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-session/*edit-permission-dialog*"))
    calls = [e for e in run_file(ClaudeAdapter(), path) if isinstance(e, ToolCall)]
    (edit,) = [c for c in calls if c.tool == "Edit"]
    assert edit.is_error and edit.structured is None  # toolUseResult is a plain string


def test_cwd_follows_the_session_line_and_the_stream_init(real_fixtures: Path):
    session = next(real_fixtures.glob("claude-session/*full-session-four*"))
    calls = [e for e in run_file(ClaudeAdapter(), session) if isinstance(e, ToolCall)]
    assert len({c.cwd for c in calls}) == 2  # repo root and apps/app
    assert any(c.cwd.endswith("/apps/app") for c in calls)
    stream = next(real_fixtures.glob("claude-stream/*issue-724*"))
    calls = [e for e in run_file(ClaudeAdapter(), stream) if isinstance(e, ToolCall)]
    assert {c.cwd for c in calls} == {"/tmp/gh-issue-solver-1763150450915"}


def test_session_timestamps_and_stream_without_them(real_fixtures: Path):
    session = next(real_fixtures.glob("claude-session/*sample_main_transcript*"))
    calls = [e for e in run_file(ClaudeAdapter(), session) if isinstance(e, ToolCall)]
    assert all(c.started_at is not None and c.ended_at >= c.started_at for c in calls)
    assert calls[0].started_at == pytest.approx(1767381514.422)  # 2026-01-02T19:18:34.422Z
    stream = next(real_fixtures.glob("claude-stream/*issue-724*"))
    calls = [e for e in run_file(ClaudeAdapter(), stream) if isinstance(e, ToolCall)]
    assert all(c.started_at is None and c.ended_at is None for c in calls)


# --------------------------------------------------------------------------- ignored lines


def test_compact_lines_are_ignored_and_not_bad(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-session/*compact-command*"))
    events = run_file(ClaudeAdapter(), path)
    assert not [e for e in events if isinstance(e, (BadLine, ToolCall))]
    adapter = ClaudeAdapter()
    for kind in ({"type": "system", "subtype": "compact_boundary", "content": "compacted"},
                 {"type": "user", "isCompactSummary": True,
                  "message": {"role": "user", "content": "This session is being continued"}},
                 {"type": "summary", "summary": "s", "leafUuid": "u"},
                 {"type": "file-history-snapshot", "snapshot": {}},
                 {"type": "progress", "data": {"type": "hook_progress"}},
                 {"type": "system", "subtype": "stop_hook_summary"}):
        assert adapter.feed(line(kind), 1) == [], kind


def test_unknown_type_is_a_bad_line_not_an_exception():
    adapter = ClaudeAdapter()
    (bad,) = adapter.feed(b'{"type": "brand_new_kind", "x": 1}', 7)
    assert isinstance(bad, BadLine) and bad.reason == Reason.UNKNOWN_EVENT.value
    assert bad.lineno == 7 and "brand_new_kind" in bad.message


def test_malformed_line_between_good_lines_is_counted_and_skipped():
    events = run(ClaudeAdapter(), [
        assistant(tool_use("t1", file_path="/r/a.py")),
        b'{"type": "user", "message": {"content": [',
        b"\xff\xfe not utf8",
        b"[1, 2, 3]",
        b"",
        user_result("t1", "text"),
    ])
    bad = [e.reason for e in events if isinstance(e, BadLine)]
    assert bad == [Reason.MALFORMED_JSON.value, Reason.NOT_UTF8.value, Reason.NOT_AN_OBJECT.value]
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.output == "text"


def test_tool_use_without_id_is_an_unread_action():
    """An action seen and not read is said as such (docs/metrics.md §5b): a run of only
    these is ``no_calls_read``, never a run that read nothing."""
    events = ClaudeAdapter().feed(assistant({"type": "tool_use", "name": "Read", "input": {}}), 3)
    (bad,) = [e for e in events if isinstance(e, BadLine)]
    assert bad.reason == Reason.UNREAD_ACTION.value


def test_result_for_unknown_call_is_ignored():
    assert run(ClaudeAdapter(), [user_result("never-seen", "x")]) == []


# --------------------------------------------------------------------------- two sessions


def test_two_sessions_in_one_stream(real_fixtures: Path):
    path = next(real_fixtures.glob("claude-stream/*issue-759*"))
    events = run_file(ClaudeAdapter(), path)
    infos = [e for e in events if isinstance(e, RunInfo)]
    ends = [e for e in events if isinstance(e, RunEnd)]
    assert [i.lineno for i in infos] == [1, 115] and [e.lineno for e in ends] == [114, 172]
    assert infos[0].session_id != infos[1].session_id
    assert len([e for e in events if isinstance(e, Usage) and e.cumulative]) == 2


def test_a_pushed_runs_model_comes_from_the_first_line_that_names_one():
    """Hook lines carry no model. When the first hook came before Claude Code had written
    its first response to the transcript, the session's first assistant line named none,
    and the record said ``unknown`` although later usage lines named it (the real-CLI
    push test, about 2 runs in 3 under load)."""
    from streameval.traces.ingest.claude_lines import usage_line

    adapter = ClaudeAdapter()
    events = run(adapter, [
        assistant(tool_use("t1", file_path="/w/a.py"), sessionId="s1"),
        usage_line("s1", "transcript", {"input_tokens": 5}, model="claude-x", cumulative=True),
        usage_line("s1", "transcript", {"input_tokens": 9}, model="claude-y", cumulative=True),
    ])
    infos = [e for e in events if isinstance(e, RunInfo)]
    assert [(i.session_id, i.model) for i in infos] == [("s1", None), ("s1", "claude-x")]


def test_result_line_flushes_calls_of_the_finished_process():
    adapter = ClaudeAdapter()
    adapter.feed(line({"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/w"}), 1)
    adapter.feed(assistant(tool_use("t1", file_path="/w/a.py")), 2)
    events = adapter.feed(line({"type": "result", "subtype": "error_max_turns",
                                "usage": {"input_tokens": 5}, "total_cost_usd": 0.5}), 3)
    assert isinstance(events[0], ToolCall) and events[0].output is None
    assert isinstance(events[-1], RunEnd) and events[-1].reason == "error_max_turns"
    assert adapter.close() == []


def test_assistant_or_user_line_without_message_is_missing_field():
    adapter = ClaudeAdapter()
    for kind in ("assistant", "user"):
        (bad,) = adapter.feed(line({"type": kind, "message": ["not", "a", "dict"]}), 4)
        assert bad.reason == Reason.MISSING_FIELD.value and kind in bad.message


def test_timestamp_parsing_of_the_shared_jsonl_helper():
    from streameval.traces.formats.jsonl import parse_timestamp

    assert parse_timestamp("2026-01-02T19:18:34.422Z") == pytest.approx(1767381514.422)
    assert parse_timestamp("2026-01-02T20:18:34.422+01:00") == pytest.approx(1767381514.422)
    assert parse_timestamp("2026-01-02T19:18:34") == pytest.approx(1767381514.0)
    assert parse_timestamp(1767381514422) == pytest.approx(1767381514.422)  # milliseconds
    for junk in ("yesterday", "2025-99-99T99:99:99Z", None, True, [1], float("nan")):
        assert parse_timestamp(junk) is None


def test_stream_calls_carry_their_cwd_forward_session_calls_record_it(real_fixtures):
    """stream-json stamps only the init cwd (the shell's `cd`s must be carried forward);
    session transcripts write the shell's cwd on every line."""
    from streameval.model import ToolCall
    from streameval.traces.formats.claude import ClaudeAdapter

    def calls(path):
        a = ClaudeAdapter()
        out = []
        for n, line in enumerate(path.read_bytes().split(b"\n"), 1):
            out += a.feed(line, n)
        return [e for e in out + a.close() if isinstance(e, ToolCall)]

    stream = calls(next((real_fixtures / "claude-stream").glob("*issue-724*")))
    session = calls(next((real_fixtures / "claude-session").glob("*full-session-four*")))
    assert stream and all(c.cwd_persists for c in stream)
    assert session and not any(c.cwd_persists for c in session)
