"""CodexAdapter on the real Codex fixtures (exec --json and rollout) and hand-made lines."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from test_claude import EXPECTED, run, run_file, summarize

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, Usage
from streameval.traces.files import read_head
from streameval.traces.formats import detect_format
from streameval.traces.formats.codex import CodexAdapter


def line(obj: dict) -> bytes:
    return orjson.dumps(obj)


def calls_of(events: list) -> list[ToolCall]:
    return [e for e in events if isinstance(e, ToolCall)]


def command_item(event: str, item_id: str, command: str, output: str = "",
                 exit_code=None, status="in_progress") -> bytes:
    return line({"type": event, "item": {
        "id": item_id, "type": "command_execution", "command": command,
        "aggregated_output": output, "exit_code": exit_code, "status": status}})


def rollout(kind: str, payload: dict, ts: str = "2025-09-25T01:22:25.361Z") -> bytes:
    return line({"timestamp": ts, "type": kind, "payload": payload})


def function_call(call_id: str, arguments: dict | str, name: str = "shell") -> bytes:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return rollout("response_item", {"type": "function_call", "name": name,
                                     "arguments": args, "call_id": call_id})


def function_output(call_id: str, output, ts: str = "2025-09-25T01:22:26.000Z") -> bytes:
    return rollout("response_item", {"type": "function_call_output", "call_id": call_id,
                                     "output": output}, ts)


def fixture(real: Path, pattern: str) -> Path:
    return next(real.glob(f"codex-*/*{pattern}*"))


# --------------------------------------------------------------------------- golden


FIXTURE_NAMES = sorted(p.name[: -len(".json")] for p in EXPECTED.glob("codex-*.jsonl.json"))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_golden_summary_of_real_trace(real_fixtures: Path, name: str):
    path = next(real_fixtures.glob(f"*/{name}"))
    expected = json.loads((EXPECTED / f"{name}.json").read_text())
    assert summarize(run_file(CodexAdapter(), path)) == expected


def test_every_codex_fixture_has_a_golden_file(real_fixtures: Path):
    names = {p.name for p in real_fixtures.glob("codex-*/*.jsonl")}
    assert names == set(FIXTURE_NAMES) and len(names) == 9   # 7 public, 2 from the real CLI 0.169.0


def test_detect_accepts_both_codex_shapes_and_nothing_else(real_fixtures: Path):
    for path in sorted(real_fixtures.glob("*/*")):
        head = read_head(path, 5)   # a conversation directory: its first events
        assert CodexAdapter.detect(head) == path.name.startswith("codex-"), path.name
    rollout_head = fixture(real_fixtures, "rollout").read_bytes().split(b"\n")[:5]
    assert detect_format(rollout_head) == "codex"
    assert not CodexAdapter.detect([b'{"type": "error"}'])


# --------------------------------------------------------------------------- exec --json


def test_exec_stream_starting_mid_way(real_fixtures: Path):
    events = run_file(CodexAdapter(), fixture(real_fixtures, "issue-729"))
    calls = calls_of(events)
    assert calls[0].input == {"command": "nl -ba src/claude.lib.mjs | sed -n '1080,1140p'"}
    assert calls[0].output.startswith("  1080\t")
    ends = [e.reason for e in events if isinstance(e, RunEnd)]
    assert ends == ["completed"] + ["failed"] * 10
    assert not [e for e in events if isinstance(e, BadLine)]


def test_truncated_exec_stream(real_fixtures: Path):
    adapter = CodexAdapter()
    events = run_file(adapter, fixture(real_fixtures, "multi-1"))
    assert [type(e) for e in events] == [RunInfo]
    assert events[0].session_id == "019a2d7b-c0ed-75a0-8908-de832785d47f"
    assert events[0].agent == "codex"


def test_exec_command_paired_and_unwrapped_with_error_from_exit_code():
    events = run(CodexAdapter(), [
        line({"type": "thread.started", "thread_id": "th1"}),
        command_item("item.started", "item_1", "bash -lc \"sed -n '1,20p' a.py\""),
        command_item("item.completed", "item_1", "bash -lc \"sed -n '1,20p' a.py\"",
                     "x = 1\n", 0, "completed"),
        command_item("item.completed", "item_2", "bash -lc 'cat nope'", "No such file", 1,
                     "failed"),
        line({"type": "turn.completed", "usage": {"input_tokens": 100,
                                                  "cached_input_tokens": 60,
                                                  "output_tokens": 7}}),
    ])
    first, second = calls_of(events)
    assert first.tool == "shell" and first.input == {"command": "sed -n '1,20p' a.py"}
    assert first.output == "x = 1\n" and not first.is_error and first.call_id == "item_1"
    assert second.is_error and second.input == {"command": "cat nope"}
    (usage,) = [e for e in events if isinstance(e, Usage)]
    assert (usage.tokens.input_tokens, usage.tokens.cache_read_tokens,
            usage.tokens.output_tokens, usage.cumulative) == (40, 60, 7, False)


def test_exec_item_started_but_never_completed_is_flushed():
    adapter = CodexAdapter()
    assert adapter.feed(command_item("item.started", "item_0", "bash -lc 'sleep 99'"), 1) == []
    (call,) = adapter.close()
    assert call.output is None and call.input == {"command": "sleep 99"}


def test_new_thread_flushes_the_previous_threads_open_items():
    events = run(CodexAdapter(), [
        line({"type": "thread.started", "thread_id": "a"}),
        command_item("item.started", "item_0", "ls"),
        line({"type": "thread.started", "thread_id": "b"}),
        command_item("item.started", "item_0", "pwd"),
        command_item("item.completed", "item_0", "pwd", "/w", 0, "completed"),
    ])
    calls = calls_of(events)
    assert [(c.input["command"], c.output) for c in calls] == [("ls", None), ("pwd", "/w")]


def test_exec_file_change_mcp_and_web_search_items():
    events = run(CodexAdapter(), [
        line({"type": "item.completed", "item": {
            "id": "i1", "type": "file_change", "status": "completed",
            "changes": [{"path": "/w/a.py", "kind": "update"}]}}),
        line({"type": "item.completed", "item": {
            "id": "i2", "type": "mcp_tool_call", "server": "docs", "tool": "search_docs",
            "arguments": {"q": "x"}, "status": "completed",
            "result": {"content": [{"type": "text", "text": "hit"}]}}}),
        line({"type": "item.completed", "item": {"id": "i3", "type": "web_search",
                                                 "query": "codex json"}}),
        line({"type": "item.completed", "item": {"id": "i4", "type": "reasoning", "text": "."}}),
        line({"type": "item.updated", "item": {"id": "i5", "type": "todo_list", "items": []}}),
    ])
    calls = calls_of(events)
    assert [c.tool for c in calls] == ["file_change", "search_docs", "web_search"]
    assert calls[0].input == {"changes": [{"path": "/w/a.py", "kind": "update"}]}
    assert calls[1].input == {"q": "x", "server": "docs"} and calls[1].output == "hit"
    assert calls[2].input == {"query": "codex json"}


#: two lines of a real rollout (Tdub206/PeeDom at 122a56e, Apache-2.0,
#: PeeDom-thread-export/transcripts/archived/rollout-2026-03-19T02-42-20-019d0579-....jsonl):
#: web searches with no id at all
PEEDOM_SEARCHES = [
    b'{"timestamp":"2026-03-19T09:44:24.202Z","type":"response_item","payload":{"type":'
    b'"web_search_call","status":"completed","action":{"type":"search","query":"site:openai.com'
    b' Codex MCP config.toml remote_mcp_client_enabled mcp add"}}}',
    b'{"timestamp":"2026-03-19T09:44:25.366Z","type":"response_item","payload":{"type":'
    b'"web_search_call","status":"completed","action":{"type":"open_page","url":'
    b'"https://platform.openai.com/docs/docs-mcp"}}}',
]


def test_rollout_web_searches_without_an_id_are_calls_named_by_their_line():
    """The wild survey counted 189 such searches as actions read as no call."""
    adapter = CodexAdapter()
    events = [e for n, raw in enumerate(PEEDOM_SEARCHES, 7) for e in adapter.feed(raw, n)]
    calls = calls_of(events)
    assert [(c.call_id, c.tool) for c in calls] == [
        ("web_search_call@7", "web_search"), ("web_search_call@8", "web_search")]
    assert calls[0].input["query"].startswith("site:openai.com Codex MCP")
    assert calls[1].input["action"] == "open_page"
    assert not [e for e in events if isinstance(e, BadLine)]


def test_exec_error_event_yields_nothing_and_turn_failed_ends_the_run():
    adapter = CodexAdapter()
    assert adapter.feed(line({"type": "error", "message": "usage limit"}), 1) == []
    (end,) = adapter.feed(line({"type": "turn.failed", "error": {"message": "x"}}), 2)
    assert isinstance(end, RunEnd) and end.reason == "failed"


# --------------------------------------------------------------------------- rollout


def test_rollout_function_calls_pair_by_call_id_in_any_order():
    events = run(CodexAdapter(), [
        rollout("turn_context", {"cwd": "/repo", "model": "gpt-5-codex"}),
        function_call("c1", {"command": ["bash", "-lc", "cat a.py"]}),
        function_call("c2", {"command": ["bash", "-lc", "cat b.py"], "workdir": "/repo/sub"}),
        function_output("c2", json.dumps({"output": "B", "metadata": {"exit_code": 0}})),
        function_output("c1", json.dumps({"output": "A", "metadata": {"exit_code": 1}})),
    ])
    c2, c1 = calls_of(events)
    assert (c1.input["command"], c1.output, c1.is_error, c1.cwd) == ("cat a.py", "A", True, "/repo")
    assert (c2.input, c2.output, c2.is_error, c2.cwd) == (
        {"command": "cat b.py", "workdir": "/repo/sub"}, "B", False, "/repo/sub")
    assert c1.started_at == pytest.approx(1758763345.361) and c1.ended_at > c1.started_at


def test_bash_lc_unwrapping_and_other_argv_joined():
    events = run(CodexAdapter(), [
        function_call("c1", {"command": ["bash", "-lc", "rg -n 'def x' src | head -5"]}),
        function_call("c2", {"command": ["rg", "-n", "two words", "src"]}),
        function_call("c3", {"command": "/bin/zsh -lc 'ls -la'"}),
        function_call("c4", {"cmd": "nl -ba f.py", "workdir": "/w"}, name="exec_command"),
    ])
    commands = [c.input["command"] for c in calls_of(events)]
    assert commands == ["rg -n 'def x' src | head -5", "rg -n 'two words' src", "ls -la",
                        "nl -ba f.py"]


def test_apply_patch_command_is_kept_verbatim(real_fixtures: Path):
    path = fixture(real_fixtures, "rollout")
    raw_scripts = {}
    for raw in path.read_bytes().split(b"\n"):
        if b"apply_patch" in raw and b'"function_call"' in raw:
            payload = json.loads(raw)["payload"]
            raw_scripts[payload["call_id"]] = json.loads(payload["arguments"])["command"][2]
    calls = {c.call_id: c for c in calls_of(run_file(CodexAdapter(), path))}
    assert len(raw_scripts) >= 5
    for call_id, script in raw_scripts.items():
        assert calls[call_id].input["command"] == script
        assert script.startswith("apply_patch <<'PATCH'\n*** Begin Patch\n")


def test_plain_text_outputs_give_is_error(real_fixtures: Path):
    events = run(CodexAdapter(), [
        function_call("c1", {"command": ["bash", "-lc", "sed -n 1p a(b)"]}),
        function_output("c1", "failed in sandbox MacosSeatbelt with execution error: sandbox "
                              "denied exec error, exit code: 2, stdout: , stderr: syntax"),
        function_call("c2", {"plan": [{"step": "s", "status": "pending"}]}, name="update_plan"),
        function_output("c2", "Plan updated"),
        function_call("c3", {"command": ["bash", "-lc", "apply_patch <<'P'\nP"]}),
        function_output("c3", "patch rejected by user"),
        function_call("c4", {"command": ["bash", "-lc", "true"]}),
        function_output("c4", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\n"),
    ])
    assert [(c.call_id, c.is_error) for c in calls_of(events)] == [
        ("c1", True), ("c2", False), ("c3", True), ("c4", False)]


def test_custom_tool_call_and_list_output():
    events = run(CodexAdapter(), [
        rollout("response_item", {"type": "custom_tool_call", "name": "apply_patch",
                                  "call_id": "k1", "input": "*** Begin Patch\n*** End Patch\n"}),
        rollout("response_item", {"type": "custom_tool_call_output", "call_id": "k1",
                                  "output": [{"type": "input_text", "text": "Success"}]}),
    ])
    (call,) = calls_of(events)
    assert call.tool == "apply_patch" and call.input == {"input": "*** Begin Patch\n*** End Patch\n"}
    assert call.output == "Success"


def test_token_count_is_cumulative_and_null_info_is_skipped(real_fixtures: Path):
    adapter = CodexAdapter()
    assert adapter.feed(rollout("event_msg", {"type": "token_count", "info": None}), 1) == []
    (usage,) = adapter.feed(rollout("event_msg", {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 6636, "cached_input_tokens": 5632,
                              "output_tokens": 324},
        "last_token_usage": {"input_tokens": 3741, "cached_input_tokens": 3072,
                             "output_tokens": 78}}}), 2)
    assert usage.cumulative and usage.tokens.output_tokens == 324
    assert (usage.tokens.input_tokens, usage.tokens.cache_read_tokens) == (1004, 5632)


def test_session_meta_and_turn_context_give_run_info_and_cwd(real_fixtures: Path):
    events = run_file(CodexAdapter(), fixture(real_fixtures, "rollout"))
    infos = [e for e in events if isinstance(e, RunInfo)]
    assert infos[0].session_id == "01997e76-d124-7592-9cac-2ec05abbca08"
    assert infos[-1].model == "gpt-5-codex" and infos[-1].cwd.endswith("monorepo-v2")
    assert all(c.cwd and c.started_at and c.ended_at for c in calls_of(events))


def test_turn_context_cwd_applies_to_later_calls_without_workdir():
    events = run(CodexAdapter(), [
        rollout("session_meta", {"id": "s", "cwd": "/first"}),
        function_call("c1", {"command": ["bash", "-lc", "ls"]}),
        function_output("c1", "a"),
        rollout("turn_context", {"cwd": "/second", "model": "m"}),
        function_call("c2", {"command": ["bash", "-lc", "ls"]}),
        function_output("c2", "b"),
    ])
    assert [c.cwd for c in calls_of(events)] == ["/first", "/second"]


def test_rollout_ignored_and_unknown_lines():
    adapter = CodexAdapter()
    for payload in ({"type": "turn_aborted", "reason": "interrupted"},
                    {"type": "agent_reasoning", "text": "."}, {"type": "user_message"}):
        assert adapter.feed(rollout("event_msg", payload), 1) == []
    assert adapter.feed(rollout("response_item", {"type": "reasoning", "summary": []}), 2) == []
    (bad,) = adapter.feed(line({"type": "thread.exploded"}), 3)
    assert bad.reason == Reason.UNKNOWN_EVENT.value
    (bad,) = adapter.feed(line({"type": "response_item", "payload": [1]}), 4)
    assert bad.reason == Reason.MISSING_FIELD.value


def test_unparseable_arguments_are_kept_raw():
    events = run(CodexAdapter(), [function_call("c1", "{not json"),
                                  function_output("c1", "x")])
    (call,) = calls_of(events)
    assert call.input == {"arguments": "{not json"} and call.output == "x"


def test_exec_command_header_of_codex_0_169_is_not_output():
    """0.169's exec_command result: a header (chunk id, wall time, exit code, token
    count), then ``Output:`` and what the command printed."""
    from streameval.traces.formats.codex import _output_of

    text = ("Chunk ID: 3a6159\nWall time: 0.0000 seconds\nProcess exited with code 0\n"
            "Original token count: 6\nOutput:\nprint(1)\nb = 2\n")
    assert _output_of(text) == ("print(1)\nb = 2\n", False)
    failed = text.replace("code 0", "code 2")
    assert _output_of(failed) == ("print(1)\nb = 2\n", True)
