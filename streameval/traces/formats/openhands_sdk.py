"""OpenHands agent SDK (V1) events: one JSON object per event, ``kind`` naming its type.

The SDK persists a conversation as one file per event (``events/event-00003-<id>.json``)
and hands each event to callbacks as it happens; streameval reads them as JSON lines
(one event per line: ``model_dump_json()`` in a callback, or the files concatenated)
or as one JSON array. Seen from ``openhands-sdk`` 1.58:

- ``ActionEvent``: ``tool_name``, ``tool_call_id``, ``action`` (``{"kind":
  "TerminalAction", "command": ...}``, ``{"kind": "FileEditorAction", "command": "view",
  "path", "view_range"}``...), ``timestamp``;
- ``ObservationEvent``: the same ``tool_call_id``, ``observation`` (``content``: text
  parts, ``is_error``, and for the terminal ``exit_code`` and ``metadata.working_dir``).
  Earlier releases (September-November 2025: ``ExecuteBashObservation``,
  ``FileEditorObservation``) put the text in ``output``, an error in ``error`` (a string,
  or ``false``), and the exit code in ``metadata.exit_code`` only;
- ``AgentErrorEvent`` (a call the tool refused: ``error``) and ``UserRejectObservation``
  (a call the user refused) answer a call with nothing run;
- ``SystemPromptEvent``, ``MessageEvent``, state updates: no tool call.

A call is emitted when its answer arrives (parallel calls: both actions, then both
observations, paired by ``tool_call_id``); one never answered is ``interrupted``. The
answered ``finish`` call ends the run.

The evaluation harness of the same SDK (OpenHands/benchmarks) writes one instance per
line of an ``output.jsonl`` with these events as its ``history``: ``sdk_instance`` reads
such a line as one framed run, for the ``openhands`` adapter.
"""

from __future__ import annotations

from typing import Any, ClassVar

from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, TraceEvent, Usage
from streameval.traces.formats.base import Adapter
from streameval.traces.formats.jsonl import (
    as_cost,
    as_count,
    as_dict,
    as_list,
    as_str,
    decode_object,
    first_object,
    looks_like_diff,
    never_answered,
    parse_timestamp,
    token_usage,
    unread_action,
)

__all__ = ["OpenHandsSdkAdapter", "sdk_events", "sdk_instance", "is_sdk_history", "metrics_usage"]

#: event kinds that answer a tool call
_ANSWERS = frozenset({"ObservationEvent", "AgentErrorEvent", "UserRejectObservation"})
_KNOWN = frozenset({"ActionEvent", "SystemPromptEvent", "MessageEvent", "PauseEvent",
                    "ConversationStateUpdateEvent", "CondensationRequest", "Condensation",
                    "CondensationSummaryEvent", "HookExecutionEvent", *_ANSWERS})


class OpenHandsSdkAdapter(Adapter):
    """SDK events as JSON lines (see the module docstring)."""

    format: ClassVar[str] = "openhands-sdk"
    patterns: ClassVar[tuple[str, ...]] = ("events.jsonl",)   # a callback's JSON lines

    def __init__(self) -> None:
        self._reader = _SdkReader()

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        obj = first_object(head)
        return obj is not None and obj.get("kind") in _KNOWN and "id" in obj

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        obj = decode_object(line, lineno)
        if obj is None:
            return []
        if isinstance(obj, BadLine):
            return [obj]
        return self._reader.event(obj, lineno)

    def close(self) -> list[TraceEvent]:
        return self._reader.flush()


def sdk_events(events: list, lineno: int) -> list[TraceEvent]:
    """A whole list of SDK events (a saved array)."""
    reader = _SdkReader()
    out: list[TraceEvent] = []
    for event in events:
        if isinstance(event, dict):
            out.extend(reader.event(event, lineno))
    return out + reader.flush()


def is_sdk_history(history: list) -> bool:
    """A history whose first event is an SDK event (``kind``), not a V0 one (whose
    ``action``/``observation`` are strings)."""
    first = next((e for e in history if isinstance(e, dict)), None)
    return first is not None and isinstance(first.get("kind"), str) \
        and not isinstance(first.get("action"), str)


def sdk_instance(obj: dict, lineno: int, fallback_id: str) -> list[TraceEvent]:
    """One line of an SDK evaluation's ``output.jsonl`` (``instance_id``, ``history`` of
    SDK events, ``metadata.llm.model``, ``metrics``, ``error``, ``test_result``) as one
    run, framed as the V0 lines are: RunInfo, calls, Usage, RunEnd."""
    history = as_list(obj.get("history"))
    iid = as_str(obj.get("instance_id")) or fallback_id
    meta = as_dict(obj.get("metadata"))
    model = as_str(as_dict(meta.get("llm")).get("model")) or \
        as_str(as_dict(meta.get("llm_config")).get("model"))
    first = next((e for e in history if isinstance(e, dict)), {})
    last = next((e for e in reversed(history) if isinstance(e, dict)), {})
    out: list[TraceEvent] = [RunInfo(agent="openhands-sdk", model=model, instance_id=iid,
                                     timestamp=parse_timestamp(first.get("timestamp")),
                                     lineno=lineno)]
    reader = _SdkReader(framed=True, prefix=f"{iid}:")
    for event in history:
        if isinstance(event, dict):
            out.extend(reader.event(event, lineno))
    out.extend(reader.flush())
    usage = metrics_usage(as_dict(obj.get("metrics")), lineno)
    if usage is not None:
        out.append(usage)
    error = obj.get("error")
    reason = f"error: {str(error)[:500]}" if error else (
        "finished" if reader.finished else "stopped")
    patch = as_str(as_dict(obj.get("test_result")).get("git_patch"))
    out.append(RunEnd(reason, patch if looks_like_diff(patch) else None,
                      timestamp=parse_timestamp(last.get("timestamp")), lineno=lineno))
    return out


def metrics_usage(metrics: dict, lineno: int) -> Usage | None:
    """The run's accumulated tokens and cost, when OpenHands' ``metrics`` state them (one
    reading for the SDK's lines and the older evaluation outputs alike)."""
    if not metrics:
        return None
    tokens = as_dict(metrics.get("accumulated_token_usage"))
    prompt = as_count(tokens.get("prompt_tokens"))
    cached = min(as_count(tokens.get("cache_read_tokens")), prompt)
    return Usage(token_usage(prompt - cached, tokens.get("completion_tokens"), cached,
                             tokens.get("cache_write_tokens")),
                 cost_usd=as_cost(metrics.get("accumulated_cost")), cumulative=True,
                 lineno=lineno)


class _SdkReader:
    """Pairs actions with their answers. ``framed``: the caller frames the run (an
    evaluation line), so no RunInfo/RunEnd of its own; ``prefix`` keeps call ids of
    different instances apart."""

    def __init__(self, framed: bool = False, prefix: str = "") -> None:
        self.pending: dict[str, ToolCall] = {}
        self.cwd: str | None = None
        self.started = framed
        self.framed = framed
        self.prefix = prefix
        self.finished = False

    def event(self, obj: dict, lineno: int) -> list[TraceEvent]:
        kind = obj.get("kind")
        out: list[TraceEvent] = []
        if not self.started:
            self.started = True
            out.append(RunInfo(agent="openhands-sdk", timestamp=parse_timestamp(obj.get("timestamp")),
                               lineno=lineno))
        if kind == "ActionEvent":
            call = _action(obj, self.cwd, lineno)
            if call is None:
                out.append(unread_action(lineno, "an ActionEvent without a string tool_name "
                                         "and tool_call_id"))
            else:
                key = call.call_id
                call.call_id = self.prefix + key
                self.pending[key] = call
        elif kind in _ANSWERS:
            key = as_str(obj.get("tool_call_id")) or as_str(obj.get("action_id")) or ""
            call = self.pending.pop(key, None)
            if call is not None:
                self._answer(call, obj, kind, lineno)
                out.append(call)
                if call.tool == "finish" and not call.is_error:
                    self.finished = True
                    if not self.framed:
                        out.append(RunEnd("finished", timestamp=call.ended_at, lineno=lineno))
        return out

    def _answer(self, call: ToolCall, obj: dict, kind: str, lineno: int) -> None:
        call.ended_at, call.lineno = parse_timestamp(obj.get("timestamp")), lineno
        if kind != "ObservationEvent":
            call.output = as_str(obj.get("error")) or as_str(obj.get("rejection_reason")) or ""
            call.is_error = True
            return
        obs = as_dict(obj.get("observation"))
        metadata = as_dict(obs.get("metadata"))
        call.output = _observed_text(obs)
        code = obs.get("exit_code")
        if code is None:
            code = metadata.get("exit_code")   # 2025 terminal observations: only here
        error = obs.get("error")
        call.is_error = obs.get("is_error") is True or (
            isinstance(code, int) and not isinstance(code, bool) and code not in (0, -1)) \
            or (isinstance(error, str) and bool(error.strip()))
        if call.is_error and not call.output and isinstance(error, str):
            call.output = error
        call.structured = {"observation": obs.get("kind"), "exit_code": code}
        workdir = as_str(metadata.get("working_dir"))
        if workdir:
            self.cwd = workdir

    def flush(self) -> list[TraceEvent]:
        return never_answered(self.pending)


def _action(obj: dict, cwd: str | None, lineno: int) -> ToolCall | None:
    tool = as_str(obj.get("tool_name"))
    key = as_str(obj.get("tool_call_id")) or as_str(obj.get("id"))
    if tool is None or key is None:
        return None
    args = {k: v for k, v in as_dict(obj.get("action")).items() if k != "kind"}
    return ToolCall(call_id=key, tool=tool, input=args, cwd=cwd,
                    started_at=parse_timestamp(obj.get("timestamp")), lineno=lineno)


def _observed_text(obs: dict) -> str:
    """What an observation showed: its ``content`` parts (1.x), else its ``output`` text
    (2025 releases), else a finish or think observation's ``message``/``content``."""
    if "content" in obs:
        return _text(obs.get("content"))
    output = obs.get("output")
    if isinstance(output, str):
        return output
    return as_str(obs.get("message")) or ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text") or "" for part in as_list(content)
                   if isinstance(part, dict) and part.get("type", "text") == "text")
