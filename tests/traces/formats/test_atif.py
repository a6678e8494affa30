"""Harbor's ATIF trajectories: detection, and the same calls as the native logs they
were converted from (by Harbor 0.24's own converters, tests/agents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.model import RunInfo, ToolCall, Usage
from streameval.traces.formats import detect_format
from streameval.traces.formats.atif import AtifAdapter

NAMES = ["harbor-atif__streameval__claude-code-2.1.328.trajectory.json",
         "harbor-atif__streameval__codex-0.169.0.trajectory.json"]


def _events(path: Path) -> list:
    adapter = AtifAdapter()
    out = []
    for n, line in enumerate(path.read_bytes().split(b"\n"), 1):
        out.extend(adapter.feed(line, n))
    return out + adapter.close()


@pytest.mark.parametrize("name", NAMES)
def test_detected_and_every_call_read(real_fixtures: Path, name: str):
    path = real_fixtures / "harbor-atif" / name
    head = [line for line in path.read_bytes().split(b"\n") if line.strip()][:8]
    assert detect_format(head) == "atif"
    doc = json.loads(path.read_text())
    calls = [e for e in _events(path) if isinstance(e, ToolCall)]
    asked = [tc for s in doc["steps"] for tc in s.get("tool_calls") or []]
    assert [c.call_id for c in calls] == [tc["tool_call_id"] for tc in asked]
    answered = {r["source_call_id"] for s in doc["steps"]
                for r in (s.get("observation") or {}).get("results") or []}
    assert [c.interrupted for c in calls] == [tc["tool_call_id"] not in answered for tc in asked]


def test_what_the_model_saw_not_harbors_sections(real_fixtures: Path):
    """Harbor adds ``[stdout]``/``[metadata]`` sections to Claude's results; the output
    is the tool result the model got (``raw_tool_result``)."""
    calls = [e for e in _events(real_fixtures / "harbor-atif" / NAMES[0])
             if isinstance(e, ToolCall)]
    nl = next(c for c in calls if "nl -ba" in c.input.get("command", ""))
    assert "[stdout]" not in nl.output and nl.output.startswith("8\t")
    script = next(c for c in calls if "fix_mod.py" in c.input.get("command", ""))
    assert "bashEditDiff" in script.structured          # Claude's structured result kept
    assert calls[-1].interrupted                         # the killed call


def test_codex_exec_header_and_run_identity(real_fixtures: Path):
    events = _events(real_fixtures / "harbor-atif" / NAMES[1])
    info = next(e for e in events if isinstance(e, RunInfo))
    assert info.agent == "codex" and info.model
    first = next(e for e in events if isinstance(e, ToolCall))
    assert first.tool == "exec_command" and not first.output.startswith("Chunk ID")
    usage = [e for e in events if isinstance(e, Usage)]
    assert usage and usage[-1].cumulative and usage[-1].tokens.output_tokens > 0
