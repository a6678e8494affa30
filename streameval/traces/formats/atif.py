"""Harbor's Agent Trajectory Interchange Format (ATIF): one JSON document per run.

``{"schema_version": "ATIF-v1.x", "session_id", "agent": {name, version, model_name,
extra: {cwds}}, "steps": [...], "final_metrics": {total_prompt_tokens, ...}}``. A step
(``source`` user/agent/system) may carry ``tool_calls`` (``tool_call_id``,
``function_name``, ``arguments``) and an ``observation`` whose ``results`` answer them
by ``source_call_id``. Harbor converts many agents' native logs into it; the tool names
and arguments stay the agent's own (Claude Code's ``Read``/``Bash``, Codex's
``exec_command {cmd}``), so the reader reads them as it reads the native traces.

What the model saw is a result's ``extra.raw_tool_result.content`` when Harbor kept it:
its ``content`` may add sections of its own (``[stdout]``, ``[metadata] {...}``,
``[error] tool reported failure``), which are cut off otherwise. A result's
``extra.tool_result_metadata.tool_use_result`` is the agent's structured result (Claude's
``bashEditDiff``...). Codex's ``exec_command`` header is read as in a Codex rollout. A
call no result answers showed nothing (``interrupted``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from streameval.model import BadLine, RunInfo, ToolCall, TraceEvent, Usage
from streameval.traces.formats.codex import exec_output
from streameval.traces.formats.document import DocumentAdapter
from streameval.traces.formats.jsonl import (
    as_cost,
    as_count,
    as_dict,
    as_list,
    as_str,
    head_text,
    parse_timestamp,
    token_usage,
    unread_action,
)

__all__ = ["AtifAdapter"]

_START = re.compile(r'\s*\{\s*"schema_version"\s*:\s*"ATIF-v\d')
#: sections Harbor appends to a result's content
_HARBOR_SECTIONS = re.compile(r"\n\n\[(?:stdout|stderr|metadata|error)\][ \n]")


class AtifAdapter(DocumentAdapter):
    format: ClassVar[str] = "atif"
    patterns: ClassVar[tuple[str, ...]] = ("trajectory.json",)   # Harbor's agent/ directory
    label: ClassVar[str] = "ATIF"

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        return _START.match(head_text(head)) is not None

    def parse(self, doc: dict, lineno: int) -> list[TraceEvent]:
        agent = as_dict(doc.get("agent"))
        cwds = as_list(as_dict(agent.get("extra")).get("cwds"))
        cwd = as_str(cwds[0]) if cwds else None
        steps = [s for s in as_list(doc.get("steps")) if isinstance(s, dict)]
        out: list[TraceEvent] = [RunInfo(
            session_id=as_str(doc.get("session_id")), agent=as_str(agent.get("name")) or "atif",
            model=as_str(agent.get("model_name")), cwd=cwd,
            timestamp=parse_timestamp(steps[0].get("timestamp")) if steps else None,
            lineno=lineno)]
        for step in steps:
            out.extend(_calls(step, cwd, lineno))
        usage = _usage(as_dict(doc.get("final_metrics")), lineno)
        if usage is not None:
            out.append(usage)
        return out


def _calls(step: dict, cwd: str | None, lineno: int) -> list[ToolCall | BadLine]:
    results = {as_str(r.get("source_call_id")): r
               for r in as_list(as_dict(step.get("observation")).get("results"))
               if isinstance(r, dict)}
    ts = parse_timestamp(step.get("timestamp"))
    out: list[ToolCall | BadLine] = []
    for tc in as_list(step.get("tool_calls")):
        if not isinstance(tc, dict):
            out.append(unread_action(lineno, f"step {step.get('step_id')}: a tool call "
                                     "that is not an object"))
            continue
        call_id = as_str(tc.get("tool_call_id")) or f"step-{step.get('step_id')}-{len(out)}"
        name = as_str(tc.get("function_name")) or "tool"
        args = tc.get("arguments")
        call = ToolCall(call_id=call_id, tool=name, input=dict(args) if isinstance(args, dict) else {},
                        started_at=ts, cwd=cwd, lineno=lineno)
        result = results.get(call_id)
        if result is None:
            call.interrupted = True
        else:
            _answer(call, result)
        out.append(call)
    return out


def _answer(call: ToolCall, result: dict) -> None:
    extra = as_dict(result.get("extra"))
    raw = as_dict(extra.get("raw_tool_result"))
    text = _text(raw.get("content")) if "content" in raw else None
    if text is None:
        text = _text(result.get("content")) or ""
        cut = _HARBOR_SECTIONS.search(text)
        text = text[:cut.start()] if cut else text
    failed = extra.get("tool_result_is_error") is True or raw.get("is_error") is True
    if call.tool == "exec_command":
        body, exec_failed = exec_output(text)
        text, failed = body, failed or exec_failed
    call.output, call.is_error = text, failed
    structured = as_dict(extra.get("tool_result_metadata")).get("tool_use_result")
    call.structured = structured if isinstance(structured, dict) else None


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict))
    return None


def _usage(metrics: dict, lineno: int) -> Usage | None:
    if not metrics:
        return None
    prompt = as_count(metrics.get("total_prompt_tokens"))
    cached = min(as_count(metrics.get("total_cached_tokens")), prompt)
    return Usage(token_usage(prompt - cached, metrics.get("total_completion_tokens"), cached),
                 cost_usd=as_cost(metrics.get("total_cost_usd")), cumulative=True, lineno=lineno)
