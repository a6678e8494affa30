"""OpenHands ``output.jsonl`` (one instance per line): golden summary and framing.

Expected file comes from jq over the raw trace (``tests/traces/formats/expected/VERIFIED.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_miniswe import run_adapter, summarize

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, Usage
from streameval.traces.formats import detect_format
from streameval.traces.formats.openhands import OpenHandsAdapter

EXPECTED = Path(__file__).resolve().parent / "expected"
NAME = "openhands__nunu0404__Python_OpenHands__multi_swe_bench-examples-output.jsonl"


@pytest.fixture(scope="module")
def fixture_bytes(real_fixtures: Path) -> bytes:
    return (real_fixtures / "openhands" / NAME).read_bytes()


@pytest.fixture(scope="module")
def events(fixture_bytes: bytes) -> list:
    return run_adapter(OpenHandsAdapter(), fixture_bytes)


def test_golden_summary(events: list):
    assert summarize(events, NAME) == json.loads((EXPECTED / f"{NAME}.json").read_text())


def test_detects_real_fixture(fixture_bytes: bytes):
    head = [line for line in fixture_bytes.split(b"\n") if line.strip()][:8]
    assert detect_format(head) == "openhands"


def test_each_instance_is_framed_by_run_info_and_run_end(events: list):
    frames = [(type(e).__name__, getattr(e, "instance_id", None), e.lineno) for e in events
              if isinstance(e, (RunInfo, RunEnd))]
    assert frames == [
        ("RunInfo", "ponylang__ponyc-4595", 1), ("RunEnd", None, 1),
        ("RunInfo", "ponylang__ponyc-4593", 2), ("RunEnd", None, 2),
        ("RunInfo", "ponylang__ponyc-4588", 3), ("RunEnd", None, 3)]
    # every event of line N sits between line N's RunInfo and RunEnd
    assert [e.lineno for e in events] == sorted(e.lineno for e in events)
    infos = [e for e in events if isinstance(e, RunInfo)]
    assert {i.model for i in infos} == {"openai/openrouter-llama-4-maverick"}
    assert infos[0].cwd == "/workspace/ponylang__ponyc__0.1"
    assert infos[0].agent == "openhands/CodeActAgent"


def test_run_end_reasons_and_patches(events: list):
    ends = [e for e in events if isinstance(e, RunEnd)]
    assert [e.reason for e in ends[:2]] == ["finished", "finished"]
    assert ends[2].reason.startswith("error: RuntimeError: Agent reached maximum iteration")
    assert all(e.patch.startswith("diff --git a/") for e in ends)


def test_failed_edit_is_an_error_with_its_message(events: list):
    edits = [e for e in events if isinstance(e, ToolCall) and e.tool == "edit"
             and e.call_id == "ponylang__ponyc-4593:50"]
    assert len(edits) == 1
    edit = edits[0]
    assert edit.is_error
    assert edit.output.startswith("ERROR:\nNo replacement was performed")
    assert edit.input["command"] == "str_replace"
    assert edit.input["path"] == "/workspace/ponylang__ponyc__0.1/packages/cli/command_parser.pony"
    assert "thought" not in edit.input
    assert edit.started_at < edit.ended_at


def test_read_call_input_and_times(events: list):
    read = next(e for e in events if isinstance(e, ToolCall) and e.tool == "read"
                and e.input.get("view_range") == [650, 700])
    assert read.input["path"].endswith("src/libponyc/ast/parser.c")
    assert (read.input["start"], read.input["end"]) == (0, -1)
    assert read.output.startswith("Here's the result of running `cat -n`")
    assert read.structured["observation"] == "read" and not read.is_error


def test_orphan_error_observation_and_unanswered_finish(events: list):
    calls = [e for e in events if isinstance(e, ToolCall) and e.call_id.startswith("ponylang__ponyc-4593:")]
    orphan = next(c for c in calls if c.tool == "error")
    assert orphan.is_error and orphan.output.startswith("Parameter 'command' is expected")
    finish = calls[-1]
    assert finish.tool == "finish" and finish.output is None and not finish.is_error


def test_usage_is_one_cumulative_total_per_instance(events: list):
    usages = [e for e in events if isinstance(e, Usage)]
    assert [u.tokens.input_tokens for u in usages] == [565158, 410169, 938015]
    assert all(u.cumulative for u in usages)


# --------------------------------------------------------------------------- hand-made lines


def _line(history: list, **extra) -> bytes:
    obj = {"instance_id": "a__b-1", "history": history,
           "test_result": {"git_patch": ""}, "metadata": {"agent_class": "CodeActAgent"}, **extra}
    return json.dumps(obj).encode()


def test_cwd_follows_the_shell_and_failed_commands():
    history = [
        {"id": 1, "action": "message", "args": {"content": "<uploaded_files>\n/workspace/r\n</uploaded_files>"}},
        {"id": 2, "timestamp": "2025-01-01T00:00:00", "action": "run", "args": {"command": "cd sub && ls nope", "thought": "t"}},
        {"id": 3, "timestamp": "2025-01-01T00:00:02", "cause": 2, "observation": "run",
         "content": "ls: cannot access 'nope': No such file or directory",
         "extras": {"metadata": {"exit_code": 2, "working_dir": "/workspace/r/sub"}}},
        {"id": 4, "action": "run", "args": {"command": "grep -n x a.c"}},
        {"id": 5, "cause": "4", "observation": "run", "content": "",
         "extras": {"metadata": {"exit_code": 1}}},
    ]
    events = run_adapter(OpenHandsAdapter(), _line(history))
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.cwd for c in calls] == ["/workspace/r", "/workspace/r/sub"]
    assert [c.is_error for c in calls] == [True, False]
    assert calls[0].input == {"command": "cd sub && ls nope"}
    assert calls[0].ended_at - calls[0].started_at == pytest.approx(2.0)
    assert calls[0].structured["exit_code"] == 2
    end = events[-1]
    assert end.reason == "stopped" and end.patch is None  # no finish, empty patch


def test_bad_lines_between_instances_do_not_stop_the_file():
    adapter = OpenHandsAdapter()
    events = []
    lines = [_line([{"id": 1, "action": "think", "args": {"thought": "x"}}]), b'{"instance_id": "c',
             b"", b'{"instance_id": "x", "history": 3}', b"7",
             _line([{"id": 1, "action": "read", "args": {"path": "/a"}}, "junk"], instance_id="d__e-2")]
    for n, line in enumerate(lines, 1):
        events += adapter.feed(line, n)
    events += adapter.close()
    assert [e.reason for e in events if isinstance(e, BadLine)] == [
        Reason.MALFORMED_JSON.value, Reason.MISSING_FIELD.value, Reason.NOT_AN_OBJECT.value,
        Reason.NOT_AN_OBJECT.value]
    assert [e.instance_id for e in events if isinstance(e, RunInfo)] == ["a__b-1", "d__e-2"]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.tool, c.output) for c in calls] == [("think", None), ("read", None)]


def test_wrong_types_inside_an_instance():
    history = [{"id": [1], "action": 5}, {"id": 2, "action": "edit", "args": "nope"},
               {"id": 3, "cause": 2, "observation": "edit", "content": None, "extras": []},
               {"observation": "error", "content": "boom"}]
    events = run_adapter(OpenHandsAdapter(), _line(history, metrics="x", error=""))
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.tool, c.input, c.output, c.is_error) for c in calls] == [
        ("edit", {}, None, False), ("error", {}, "boom", True)]
    assert not any(isinstance(e, Usage) for e in events)


#: (folder, fixture, format) of the other OpenHands shapes: the resolver's output, the
#: runtime's saved trajectories (public, All-Hands-AI/OpenHands), and the agent SDK's
#: events written by the real SDK 1.58.0 in tests/agents (as JSON lines, and the files
#: it persisted itself, as one array)
OTHERS = [
    ("openhands", "openhands-resolver__All-Hands-AI__OpenHands__mock_output.jsonl", "openhands"),
    ("openhands-events", "openhands-events__All-Hands-AI__OpenHands__runtime-trajs-basic.json",
     "openhands-events"),
    ("openhands-events",
     "openhands-events__All-Hands-AI__OpenHands__runtime-trajs-wrong_initial_state.json",
     "openhands-events"),
    ("openhands-sdk", "openhands-sdk__streameval__scripted-1.58.0.events.jsonl", "openhands-sdk"),
    ("openhands-sdk", "openhands-sdk__streameval__scripted-1.58.0.saved-events.json",
     "openhands-events"),
    # the SDK's evaluation harness (OpenHands/benchmarks): output.jsonl lines whose history
    # holds SDK events (2025; observations with their text in ``output``)
    ("openhands", "openhands-v1__OpenHands__benchmarks__openagentsafety-gpt-4o-output.jsonl",
     "openhands"),
    ("openhands", "openhands-v1__OpenHands__benchmarks__openagentsafety-gpt-4o-output."
     "critic_attempt_1.lines-3-8-12.jsonl", "openhands"),
]


@pytest.mark.parametrize(("folder", "name", "fmt"), OTHERS, ids=[o[1] for o in OTHERS])
def test_other_shapes_detected_and_golden(real_fixtures: Path, folder: str, name: str, fmt: str):
    from streameval.traces.formats import adapter_class

    data = (real_fixtures / folder / name).read_bytes()
    head = [line for line in data.split(b"\n") if line.strip()][:8]
    assert detect_format(head) == fmt
    got = summarize(run_adapter(adapter_class(fmt)(), data), name)
    assert got == json.loads((EXPECTED / f"{name}.json").read_text())


def test_resolver_runs_are_named_by_their_issue(real_fixtures: Path):
    name = OTHERS[0][1]
    events = run_adapter(OpenHandsAdapter(), (real_fixtures / "openhands" / name).read_bytes())
    infos = [e.instance_id for e in events if isinstance(e, RunInfo)]
    assert infos == ["neubig__pr-viewer-5", "neubig__pr-viewer-1"]
    ends = [e for e in events if isinstance(e, RunEnd)]
    assert [e.reason for e in ends] == ["finished", "finished"] and all(e.patch for e in ends)
