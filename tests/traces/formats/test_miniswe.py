"""mini-swe-agent ``.traj.json``: golden summaries of the real fixtures, and the edge cases.

The expected files were derived from the raw traces with jq, not from this adapter
(``tests/traces/formats/expected/VERIFIED.md``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import orjson
import pytest
from fixture_paths import REAL  # noqa: E402

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, StatedContext, ToolCall, Usage
from streameval.traces.formats import detect_format
from streameval.traces.formats.miniswe import (
    ELIDED_MARKER,
    DocumentBuffer,
    MiniSweAdapter,
    looks_like_diff,
    parse_context_block,
    shell_failed,
)

EXPECTED = Path(__file__).resolve().parent / "expected"
FIXTURES = sorted(p.name for p in (REAL / "mini-swe-agent").glob("*.traj.json"))
_KEYED_BY_PATH = {"str_replace_editor", "read", "edit"}


def run_adapter(adapter, data: bytes) -> list:
    events = []
    for lineno, line in enumerate(data.split(b"\n"), 1):
        events += adapter.feed(line, lineno)
    return events + adapter.close()


def summarize(events: list, name: str) -> dict:
    """The golden summary (same shape for the miniswe, sweagent and openhands tests)."""
    runs: list[dict] = []
    bad: Counter = Counter()
    for ev in events:
        if isinstance(ev, BadLine):
            bad[ev.reason] += 1
            continue
        if isinstance(ev, RunInfo) or not runs:
            runs.append({"instance_id": ev.instance_id if isinstance(ev, RunInfo) else None,
                         "tool_calls": 0, "by_tool": Counter(), "by_command": Counter(),
                         "errors": 0, "first_calls": [], "stated_steps": 0,
                         "stated_final": False, "end_reason": None, "patch_files": [],
                         "usage": None})
        run = runs[-1]
        if isinstance(ev, ToolCall):
            run["tool_calls"] += 1
            run["by_tool"][ev.tool] += 1
            if ev.tool in ("str_replace_editor", "edit"):
                run["by_command"][f"{ev.tool} {ev.input.get('command')}"] += 1
            run["errors"] += ev.is_error
            if len(run["first_calls"]) < 5:
                key = ev.input.get("path" if ev.tool in _KEYED_BY_PATH else "command") or ""
                run["first_calls"].append([ev.tool, key[:60], ev.input.get("view_range")])
        elif isinstance(ev, StatedContext):
            if ev.final:
                run["stated_final"] = True
            else:
                run["stated_steps"] += 1
        elif isinstance(ev, RunEnd):
            run["end_reason"] = ev.reason
            run["patch_files"] = re.findall(r"diff --git a/(\S+)", ev.patch or "")
        elif isinstance(ev, Usage) and ev.cumulative:
            t = ev.tokens
            run["usage"] = {"input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
                            "cache_read_tokens": t.cache_read_tokens, "cost_usd": ev.cost_usd}
    for run in runs:
        run["by_tool"] = dict(run["by_tool"])
        run["by_command"] = dict(run["by_command"])
    return {"fixture": name, "runs": runs, "bad_lines": dict(bad)}


@pytest.mark.parametrize("name", FIXTURES)
def test_golden_summary(real_fixtures: Path, name: str):
    data = (real_fixtures / "mini-swe-agent" / name).read_bytes()
    got = summarize(run_adapter(MiniSweAdapter(), data), name)
    expected = json.loads((EXPECTED / f"{name}.json").read_text())
    assert got == expected


def test_fixtures_are_all_covered(real_fixtures: Path):
    # five 1.x runs from gruckion/mini-swe-agent, two 2.4.6 runs (text and tool mode), two
    # pre-1.0 bare message lists (the agent's own test data, at two commits)
    assert len(FIXTURES) == 9
    assert sum(name.startswith("mini-swe-agent2") for name in FIXTURES) == 2
    assert sum(name.startswith("mini-swe-agent0") for name in FIXTURES) == 2


@pytest.mark.parametrize("name", FIXTURES)
def test_detects_real_fixture(real_fixtures: Path, name: str):
    lines = (real_fixtures / "mini-swe-agent" / name).read_bytes().split(b"\n")
    head = [line for line in lines if line.strip()][:8]
    assert MiniSweAdapter.detect(head)
    assert detect_format(head) == "miniswe"


def test_does_not_claim_a_swe_agent_traj(real_fixtures: Path):
    path = next((real_fixtures / "swe-agent-traj").glob("*4075.traj"))
    head = [line for line in path.read_bytes().split(b"\n") if line.strip()][:8]
    assert not MiniSweAdapter.detect(head)


def test_observation_text_and_timestamps_of_a_real_turn(real_fixtures: Path):
    path = next((real_fixtures / "mini-swe-agent").glob("*django-11603*"))
    calls = [e for e in run_adapter(MiniSweAdapter(), path.read_bytes()) if isinstance(e, ToolCall)]
    first = calls[0]
    assert first.input == {"command": "ls -la"}
    assert first.output.startswith("total 176\n")
    assert "<output>" not in first.output and "</output>" not in first.output
    assert first.cwd == "/testbed"
    assert first.started_at == 1763509602.0  # extra.response.created
    assert first.structured == {"returncode": 0}
    # the final `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` turn gets the bare diff, no result
    assert calls[-1].input["command"].startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    assert calls[-1].output is None


def test_each_response_states_what_the_run_had_spent_before_its_action(real_fixtures: Path):
    """Every response's usage is summed as the run goes and stated before the turn's
    action, so the run's tokens and cost at a step are known (docs/outcomes.md §3); the
    run's own ``instance_cost`` comes last. django-11603: 21 responses, no cached tokens;
    after response 3 the run had spent 1371+240 + 2281+147 + 2476+113 = 6,628 tokens and
    $0.005622 + 0.006326 + 0.006308 = $0.018256."""
    path = next((real_fixtures / "mini-swe-agent").glob("*django-11603*"))
    events = run_adapter(MiniSweAdapter(), path.read_bytes())
    usages = [e for e in events if isinstance(e, Usage)]
    assert len(usages) == 21 + 1 and all(u.cumulative for u in usages)
    calls_before = [e for e in events[:events.index(usages[2])] if isinstance(e, ToolCall)]
    assert len(calls_before) == 2   # stated before call 3 runs
    assert usages[2].tokens.total == 6628
    assert usages[2].cost_usd == pytest.approx(0.018256, abs=1e-9)
    assert usages[2].timestamp is not None
    assert usages[-1].tokens.total == usages[-2].tokens.total == 181_278
    assert usages[-1].cost_usd == 0.177621   # info.model_stats.instance_cost


def test_long_output_keeps_head_and_tail_with_a_marker(real_fixtures: Path):
    path = next((real_fixtures / "mini-swe-agent").glob("*astropy-13579*"))
    calls = [e for e in run_adapter(MiniSweAdapter(), path.read_bytes()) if isinstance(e, ToolCall)]
    long = [c for c in calls if c.structured and "elided_chars" in c.structured]
    assert len(long) == 1
    call = long[0]
    assert call.input["command"] == "cat astropy/wcs/wcsapi/wrappers/sliced_wcs.py"
    assert call.structured["elided_chars"] == 1481
    assert ELIDED_MARKER.format(n=1481) in call.output
    assert call.output.startswith("import numbers\n")
    assert "<output_tail>" not in call.output and "<warning>" not in call.output
    assert not call.is_error


# --------------------------------------------------------------------------- hand-made documents


def _doc(messages: list, info: dict | None = None, **extra) -> bytes:
    base = {"info": info if info is not None else {
        "exit_status": "Submitted", "submission": "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n",
        "model_stats": {"instance_cost": 0.5, "api_calls": 2},
        "config": {"model": {"model_name": "m1"}, "environment": {"cwd": "/testbed"}}},
        "messages": messages, "trajectory_format": "mini-swe-agent-1", **extra}
    return json.dumps(base, indent=2, ensure_ascii=False).encode()


def _turn(text: str) -> dict:
    return {"role": "assistant", "content": text}


def _obs(rc: int, out: str) -> dict:
    return {"role": "user", "content": f"<returncode>{rc}</returncode>\n<output>\n{out}\n</output>"}


EXPLORE_TURN = """THOUGHT: read two places.

<EXPLORE_CONTEXT>
File: /testbed/src/a.py
Lines: 10-40

File: /testbed/src/b.py
Lines: 160-120
</EXPLORE_CONTEXT>

```bash
(nl -ba /testbed/src/a.py | sed -n '10,40p' && nl -ba /testbed/src/b.py | sed -n '120,160p')
```"""

PATCH_TURN = """THOUGHT: Providing code context used for patch generation.

<PATCH_CONTEXT>
File: /testbed/src/a.py
Lines: 12-20
Lines: 30-31

File: /testbed/src/c.py
Lines: oops
</PATCH_CONTEXT>

```bash
echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached
```"""


def test_explore_and_patch_context_blocks_become_stated_contexts():
    data = _doc([
        {"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
        _turn(EXPLORE_TURN), _obs(0, "    10\tdef f():"),
        _turn(PATCH_TURN),
        {"role": "user", "content": "<context_received>\nContext received and recorded (80 characters).\n</context_received>"},
        {"role": "user", "content": "diff --git a/a.py b/a.py"},
    ], instance_id="x__y-1")
    events = run_adapter(MiniSweAdapter(), data)
    stated = [e for e in events if isinstance(e, StatedContext)]
    assert [s.final for s in stated] == [False, True]
    step = stated[0].step
    assert step.files == ("/testbed/src/a.py", "/testbed/src/b.py")
    assert step.spans == {"/testbed/src/a.py": [(10, 40)], "/testbed/src/b.py": [(120, 160)]}
    final = stated[1].step
    assert final.files == ("/testbed/src/a.py",)  # c.py has no usable range
    assert final.spans == {"/testbed/src/a.py": [(12, 20), (30, 31)]}
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 2
    # the stated step comes right before the tool call of its turn, which is flagged
    assert events.index(stated[0]) == events.index(calls[0]) - 1
    assert calls[0].structured["stated_context"] is True
    assert calls[0].call_id == step.call_id
    assert calls[0].output == "    10\tdef f():\n"
    assert calls[1].output is None  # confirmation and bare diff are no observation
    info = next(e for e in events if isinstance(e, RunInfo))
    assert (info.instance_id, info.model, info.agent) == ("x__y-1", "m1", "mini-swe-agent")
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "Submitted" and end.patch.startswith("diff")


def test_context_block_parsing_rules():
    files, spans = parse_context_block(
        "File: /t/a.py\nLines: 5-3\nLines: 0-2\nLines: -4--1\nnoise\nFile: /t/b.py\n")
    assert files == ["/t/a.py"]
    assert spans == {"/t/a.py": [(3, 5), (1, 2)]}
    assert parse_context_block("Lines: 1-2") == ([], {})


def test_turn_with_two_bash_blocks_ran_nothing():
    two = "THOUGHT\n\n```bash\nls\n```\n\n```bash\npwd\n```"
    data = _doc([_turn(two), {"role": "user", "content": "Please always provide EXACTLY ONE action"},
                 _turn("```bash\nls\n```"), _obs(0, "a.py")])
    calls = [e for e in run_adapter(MiniSweAdapter(), data) if isinstance(e, ToolCall)]
    assert [c.input["command"] for c in calls] == ["ls"]
    assert calls[0].output == "a.py\n"


@pytest.mark.parametrize(("rc", "out", "error"), [
    (0, "x", False),
    (1, "", False),  # grep found nothing
    (1, "Traceback (most recent call last):", False),  # a failing script still showed output
    (1, "cat: nope.py: No such file or directory", True),
    (2, "grep: nope: No such file or directory", True),
    (127, "bash: foo: command not found", True),
    (-9, "", True),
])
def test_shell_error_rule(rc: int, out: str, error: bool):
    assert shell_failed(rc, out) is error
    data = _doc([_turn("```bash\ncmd\n```"), _obs(rc, out)])
    call = next(e for e in run_adapter(MiniSweAdapter(), data) if isinstance(e, ToolCall))
    assert call.is_error is error
    assert call.structured["returncode"] == rc


def test_timeout_is_an_error():
    text = ("The last command <command>sleep 100</command> timed out and has been killed.\n"
            "The output of the command was:\n<output>\n\n</output>\nPlease try another command")
    data = _doc([_turn("```bash\nsleep 100\n```"), {"role": "user", "content": text}])
    call = next(e for e in run_adapter(MiniSweAdapter(), data) if isinstance(e, ToolCall))
    assert call.is_error and call.structured["timed_out"]


def test_unfinished_run_and_non_diff_submission():
    data = _doc([_turn("```bash\nls\n```")],
                info={"exit_status": None, "submission": "No context provided.", "model_stats": "bad"})
    events = run_adapter(MiniSweAdapter(), data)
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == "unfinished" and end.patch is None
    assert not any(isinstance(e, Usage) for e in events)  # model_stats unusable, no tokens
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call.output is None and not call.is_error  # never answered


def test_list_content_and_compact_one_line_document():
    doc = {"info": {"exit_status": "Submitted"}, "messages": [
        {"role": "assistant", "content": [{"type": "text", "text": "```bash\nls -la\n```"}]},
        {"role": "user", "content": [{"type": "text", "text": "<returncode>0</returncode>\n<output>\nx\n</output>"}]}]}
    events = run_adapter(MiniSweAdapter(), orjson.dumps(doc))
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call.input == {"command": "ls -la"} and call.output == "x\n"


def test_document_cut_in_half_is_a_partial_line_not_an_exception(real_fixtures: Path):
    data = next((real_fixtures / "mini-swe-agent").glob("*django-11603*")).read_bytes()
    half = data[: len(data) // 2]
    events = run_adapter(MiniSweAdapter(), half)
    assert len(events) == 1
    bad = events[0]
    assert isinstance(bad, BadLine) and bad.reason == Reason.PARTIAL_LINE.value
    assert "ends before the JSON document does" in bad.message


def test_garbage_inside_the_document_is_malformed_json():
    data = _doc([_turn("```bash\nls\n```")]).replace(b'"messages"', b'"messages" oops', 1)
    events = run_adapter(MiniSweAdapter(), data)
    assert [e.reason for e in events] == [Reason.MALFORMED_JSON.value]
    assert events[0].lineno > 1  # points at the line of the damage


def test_document_over_the_limit_is_given_up_once():
    adapter = MiniSweAdapter()
    adapter.buffer = DocumentBuffer(limit=100)
    events = []
    for n in range(1, 20):
        events += adapter.feed(b'    "padding padding padding padding",', n)
    events += adapter.close()
    assert [e.reason for e in events] == [Reason.LINE_TOO_LONG.value]


def test_non_utf8_bytes_are_counted_and_the_rest_is_kept():
    data = _doc([_turn("```bash\nls\n```"), _obs(0, "caf\u00e9")]).replace("é".encode(), b"\xe9")
    events = run_adapter(MiniSweAdapter(), data)
    assert [e.reason for e in events if isinstance(e, BadLine)] == [Reason.NOT_UTF8.value]
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call.output == "caf\ufffd\n"


def test_not_an_object_and_empty_input():
    assert [e.reason for e in run_adapter(MiniSweAdapter(), b"[1, 2]")] == [Reason.NOT_AN_OBJECT.value]
    assert run_adapter(MiniSweAdapter(), b"\n\n") == []


def test_looks_like_diff():
    assert looks_like_diff("diff --git a/x b/x\n")
    assert looks_like_diff("--- a/x\n+++ b/x\n")
    assert not looks_like_diff("")
    assert not looks_like_diff(None)
    assert not looks_like_diff("Exit due to error")


def test_detect_looks_only_at_the_start_of_a_document(real_fixtures: Path):
    assert MiniSweAdapter.detect([b'{"info": {"exit_status": null}, "messages": []}'])
    assert MiniSweAdapter.detect([b"{", b'  "messages": ['])
    assert not MiniSweAdapter.detect([b'{"instance_id": "x", "note": "\\"mini_version\\": mini-swe-agent"}'])
    assert not MiniSweAdapter.detect([b"{", b'  "trajectory": ['])
    assert not MiniSweAdapter.detect([b"{", b'  "info": {', b'    "swe_agent_version": "1.1.0",'])
    assert not MiniSweAdapter.detect([])
    oh = next((real_fixtures / "openhands").glob("*.jsonl")).read_bytes().split(b"\n")[:1]
    assert not MiniSweAdapter.detect(oh)


def test_the_same_adapter_can_reread_a_rewritten_document(real_fixtures: Path):
    """The live watcher re-reads a document trace whole each time it changes."""
    data = next((real_fixtures / "mini-swe-agent").glob("*django-11603*")).read_bytes()
    adapter = MiniSweAdapter()
    first = run_adapter(adapter, data)
    assert run_adapter(adapter, b"") == []  # nothing fed since: nothing, no BadLine
    again = run_adapter(adapter, data)
    assert summarize(first, "x") == summarize(again, "x")
