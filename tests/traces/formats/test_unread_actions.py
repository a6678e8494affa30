"""Every adapter says when it saw an action it could not turn into a call: one
``unread_action`` bad line per action, so a run of only such actions is an error
(``no_calls_read``, docs/metrics.md §5b) and never a run that read nothing. Each case
beside its control: the same action in the shape the adapter reads is a call."""

from __future__ import annotations

import json

import pytest

from streameval.errors import Reason
from streameval.model import BadLine, ToolCall
from streameval.traces.formats import adapter_class


def events(fmt: str, text: str) -> list:
    adapter = adapter_class(fmt)()
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        out += adapter.feed(line.encode(), n)
    return out + adapter.close()


def unread(evs: list) -> list[BadLine]:
    return [e for e in evs if isinstance(e, BadLine) and e.reason == Reason.UNREAD_ACTION.value]


def calls(evs: list) -> list[ToolCall]:
    return [e for e in evs if isinstance(e, ToolCall)]


def claude(block: dict) -> str:
    return json.dumps({"type": "assistant", "message": {"role": "assistant",
                                                       "content": [block]}})


def codex(item: dict) -> str:
    return json.dumps({"type": "response_item", "payload": item})


def miniswe(assistant: dict) -> str:
    return json.dumps({"info": {}, "messages": [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "assistant", "content": "THOUGHT", **assistant}]}, indent=1)


def sweagent(action) -> str:
    return json.dumps({"trajectory": [{"action": action, "observation": "x"}]}, indent=1)


def openhands(action) -> str:
    return json.dumps({"instance_id": "a__b-1", "history": [
        {"id": 1, "action": action, "args": {"command": "ls"}}]})


def sdk(event: dict) -> str:
    return json.dumps({"kind": "ActionEvent", "id": "e1", "timestamp": "2025-01-01T00:00:00",
                       "action": {"kind": "ExecuteBashAction", "command": "ls"}, **event})


def gemini(tc: dict) -> str:
    return json.dumps({"sessionId": "s", "projectHash": "h", "messages": [
        {"type": "gemini", "content": "", "toolCalls": [tc]}]}, indent=1)


def atif(tc) -> str:
    return json.dumps({"schema_version": "ATIF-v1.2", "session_id": "s",
                       "agent": {"name": "a"}, "steps": [{"step_id": 1, "tool_calls": [tc]}]})


CASES = {
    # format: (unread input, its control)
    "claude": (claude({"type": "tool_use", "name": "Read", "input": {}}),
               claude({"type": "tool_use", "id": "t1", "name": "Read", "input": {}})),
    "codex": (codex({"type": "function_call", "name": "shell", "arguments": "{}"}),
              codex({"type": "function_call", "name": "shell", "arguments": "{}",
                     "call_id": "c1"})),
    "miniswe": (miniswe({"extra": {"actions": [{"cmd": "ls"}, {"cmd": "pwd"}]}}),
                miniswe({"extra": {"actions": [{"command": "ls"}, {"command": "pwd"}]}})),
    "sweagent": (sweagent({"command": "ls"}), sweagent("ls")),
    "openhands": (openhands({"kind": "CmdRunAction"}), openhands("run")),
    "openhands-sdk": (sdk({"tool": "terminal", "tool_call_id": "c1"}),
                      sdk({"tool_name": "terminal", "tool_call_id": "c1"})),
    "gemini": (gemini({"id": "c1", "args": {}}), gemini({"id": "c1", "name": "ls", "args": {}})),
    "atif": (atif("ls"), atif({"tool_call_id": "c1", "function_name": "bash",
                               "arguments": {"command": "ls"}})),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_an_action_no_call_is_made_of_is_said(fmt):
    bad, good = CASES[fmt]
    seen = events(fmt, bad)
    assert unread(seen) and not calls(seen), seen
    assert all("line" in b.message for b in unread(seen))
    control = events(fmt, good)
    assert calls(control) and not unread(control), control


def test_each_unread_action_is_counted_once():
    assert len(unread(events("miniswe", CASES["miniswe"][0]))) == 2


def test_a_mini_swe_agent_turn_the_agent_refused_is_no_unread_action():
    """Zero or several fenced blocks: mini-swe-agent ran nothing (its format error), so
    there was no action to read."""
    two = miniswe({"content": "```bash\nls\n```\n```bash\npwd\n```"})
    assert events("miniswe", two) and not unread(events("miniswe", two))
