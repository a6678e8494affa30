"""SWE-agent ``.traj`` and ContextBench ``.checkpoints.jsonl``: golden summaries and edge cases.

Expected files come from jq over the raw traces (``tests/traces/formats/expected/VERIFIED.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_miniswe import run_adapter, summarize

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, Usage
from streameval.traces.formats import detect_format
from streameval.traces.formats.sweagent import (
    SweAgentAdapter,
    SweAgentCheckpointsAdapter,
    editor_error,
    parse_action,
    parse_editor_command,
)

EXPECTED = Path(__file__).resolve().parent / "expected"
TRAJS = ["sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.traj",
         "sweagent__anonymousUser2026__ContextBench__verified__django__django-12125.exit_error.traj"]
CHECKPOINTS = "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.checkpoints.jsonl"
#: SWE-agent 0.x: ``environment`` is the first key, its value the container ("swe_main")
TRAJ_0X = "sweagent0__SWE-agent__SWE-agent__pydicom__pydicom-1458.traj"


def _head(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line.strip()][:8]


@pytest.mark.parametrize("name", TRAJS)
def test_golden_summary_traj(real_fixtures: Path, name: str):
    data = (real_fixtures / "swe-agent-traj" / name).read_bytes()
    got = summarize(run_adapter(SweAgentAdapter(), data), name)
    assert got == json.loads((EXPECTED / f"{name}.json").read_text())


def test_golden_summary_checkpoints(real_fixtures: Path):
    data = (real_fixtures / "swe-agent-traj" / CHECKPOINTS).read_bytes()
    got = summarize(run_adapter(SweAgentCheckpointsAdapter(), data), CHECKPOINTS)
    assert got == json.loads((EXPECTED / f"{CHECKPOINTS}.json").read_text())


@pytest.mark.parametrize(("name", "fmt"), [(TRAJS[0], "sweagent"), (TRAJS[1], "sweagent"),
                                           (TRAJ_0X, "sweagent"),
                                           (CHECKPOINTS, "sweagent-checkpoints")])
def test_detects_real_fixtures(real_fixtures: Path, name: str, fmt: str):
    assert detect_format(_head(real_fixtures / "swe-agent-traj" / name)) == fmt


def test_0x_traj_names_no_instance_for_its_container(real_fixtures: Path):
    events = run_adapter(SweAgentAdapter(), (real_fixtures / "swe-agent-traj" / TRAJ_0X).read_bytes())
    (info,) = [e for e in events if isinstance(e, RunInfo)]
    assert info.instance_id is None          # "swe_main" is the container, not a task
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.tool for c in calls][:5] == ["create", "edit", "bash", "find_file", "open"]
    # 0.x commands stay command lines: reading.editor.sweagent_call reads them
    assert calls[4].input == {"command": "open pydicom/pixel_data_handlers/numpy_handler.py 293"}


def test_malformed_view_range_is_a_call_with_a_usage_error(real_fixtures: Path):
    data = (real_fixtures / "swe-agent-traj" / TRAJS[0]).read_bytes()
    calls = [e for e in run_adapter(SweAgentAdapter(), data) if isinstance(e, ToolCall)]
    bad = calls[4]  # step 5: `view /testbed/xarray/core/computation.py [1060, 1220]`
    assert bad.call_id == "step-5"
    assert bad.input["command"] == "view" and bad.input["view_range"] is None
    assert bad.input["extra_args"] == ["[1060,", "1220]"]
    assert bad.is_error and bad.output.startswith("usage: str_replace_editor")
    good = calls[8]  # step 9: the same view with --view_range 1060 1220
    assert good.input["view_range"] == [1060, 1220] and not good.is_error
    assert good.cwd == "/testbed"
    # the two empty actions (steps 10 and 12) ran nothing and are not calls
    assert [c.call_id for c in calls].count("step-10") == 0
    assert len(calls) == 14


def test_failed_run_with_one_empty_step(real_fixtures: Path):
    events = run_adapter(SweAgentAdapter(), (real_fixtures / "swe-agent-traj" / TRAJS[1]).read_bytes())
    assert [type(e) for e in events] == [RunInfo, Usage, RunEnd]
    assert events[0].instance_id == "django__django-12125" and events[0].model == "openai/gpt-5"
    assert events[-1].reason == "exit_error" and events[-1].patch is None


def test_unfinished_traj_has_usage_and_no_patch(real_fixtures: Path):
    events = run_adapter(SweAgentAdapter(), (real_fixtures / "swe-agent-traj" / TRAJS[0]).read_bytes())
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.cumulative and usage.cost_usd == pytest.approx(0.31157625)
    assert (usage.tokens.input_tokens, usage.tokens.output_tokens) == (147019, 2016)
    assert events[-1].reason == "unfinished"


# --------------------------------------------------------------------------- action parsing


def test_multiline_single_quoted_create_with_escaped_quotes(real_fixtures: Path):
    lines = (real_fixtures / "swe-agent-traj" / CHECKPOINTS).read_bytes().split(b"\n")
    action = json.loads(lines[5])["action"]
    args = parse_editor_command(action)
    assert args["command"] == "create" and args["path"] == "/testbed/repro_weighted_bool.py"
    text = args["file_text"]
    assert text.startswith("import numpy as np\nimport sys\n")
    assert "sys.path.insert(0, '/testbed')" in text  # '"'"' became a plain quote
    assert "extra_args" not in args and "parse_error" not in args


def test_multiline_str_replace_in_single_and_double_quotes():
    action = ("str_replace_editor str_replace /t/a.py   --old_str '    x = 1\n    y = '\"'\"'s'\"'\"'\n'"
              " --new_str \"    x = 2\\n\"\n")
    args = parse_editor_command(action)
    assert args["old_str"] == "    x = 1\n    y = 's'\n"
    assert args["new_str"] == "    x = 2\\n"  # a backslash-n inside double quotes stays two chars
    assert (args["command"], args["path"], args["view_range"]) == ("str_replace", "/t/a.py", None)


def test_insert_view_range_and_odd_shapes():
    assert parse_editor_command("str_replace_editor insert /a --insert_line 7 --new_str 'z'")[
        "insert_line"] == 7
    assert parse_editor_command("str_replace_editor view /a --view_range 730 -1")["view_range"] == [730, -1]
    quoted = parse_editor_command('str_replace_editor view /a "[1060, 1220]"')
    assert quoted["extra_args"] == ["[1060, 1220]"] and quoted["view_range"] is None
    half = parse_editor_command("str_replace_editor view /a --view_range 5")
    assert half["view_range"] is None and half["extra_args"] == ["--view_range", "5"]
    broken = parse_editor_command("str_replace_editor str_replace /a --old_str 'never closed")
    assert broken["path"] == "/a" and "parse_error" in broken
    assert parse_editor_command("str_replace_editor")["command"] is None


def test_other_actions():
    assert parse_action("grep -Rn foo /testbed\n") == ("bash", {"command": "grep -Rn foo /testbed"})
    assert parse_action("submit") == ("submit", {"command": "submit"})
    tool, args = parse_action("open /testbed/a.py 120")
    assert tool == "open" and args["command"] == "open /testbed/a.py 120"


def test_editor_error_messages():
    assert editor_error("usage: str_replace_editor [-h]")
    assert editor_error("No replacement was performed, old_str `x` did not appear verbatim")
    assert editor_error("The path /x/y.py does not exist. Please provide a valid path.")
    assert editor_error("Invalid `view_range`. It should be a list of two integers.")
    assert not editor_error("Here's the result of running `cat -n` on /t/a.py:")
    assert not editor_error(None)


# --------------------------------------------------------------------------- damage


def test_traj_cut_in_half_is_partial_not_an_exception(real_fixtures: Path):
    data = (real_fixtures / "swe-agent-traj" / TRAJS[0]).read_bytes()
    events = run_adapter(SweAgentAdapter(), data[: len(data) // 2])
    assert [e.reason for e in events] == [Reason.PARTIAL_LINE.value]


def test_traj_with_wrong_types_still_parses():
    doc = {"trajectory": [{"action": "ls", "observation": 5, "state": "not json"}, "junk",
                          {"action": None}, {"action": "str_replace_editor view /a",
                                             "observation": "x", "state": '{"working_dir": "/w"}'}],
           "info": {"exit_status": 3, "model_stats": "n/a", "submission": ["x"]},
           "replay_config": "{not json", "environment": "main"}
    events = run_adapter(SweAgentAdapter(), json.dumps(doc).encode())
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [c.tool for c in calls] == ["bash", "str_replace_editor"]
    assert calls[0].output is None
    assert [e.reason for e in events if isinstance(e, BadLine)] == [Reason.NOT_AN_OBJECT.value]
    assert events[0].instance_id is None and events[0].model is None
    assert events[-1].reason == "unfinished" and events[-1].patch is None


def test_traj_without_trajectory_list():
    events = run_adapter(SweAgentAdapter(), b'{"info": {"exit_status": "submitted"}}')
    assert [e.reason for e in events if isinstance(e, BadLine)] == [Reason.MISSING_FIELD.value]
    assert events[-1].reason == "submitted"


def test_checkpoints_bad_lines_are_counted_and_the_stream_goes_on():
    good = json.dumps({"tool": "str_replace_editor", "action": "str_replace_editor view /t/a.py",
                       "state": {"working_dir": "/t"}, "observation": "ok", "step": 1})
    adapter = SweAgentCheckpointsAdapter()
    events = []
    for n, line in enumerate([b"{not json", b"", b"[1]", b'{"tool": "x"}', good.encode(),
                              b'{"action": ""}', b"\xff\xfe"], 1):
        events += adapter.feed(line, n)
    events += adapter.close()
    assert [e.reason for e in events if isinstance(e, BadLine)] == [
        Reason.MALFORMED_JSON.value, Reason.NOT_AN_OBJECT.value, Reason.MISSING_FIELD.value,
        Reason.NOT_UTF8.value]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 1 and calls[0].lineno == 5 and calls[0].cwd == "/t"
    assert calls[0].structured == {"step": 1}
