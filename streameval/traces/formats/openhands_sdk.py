"""OpenHands agent SDK (V1) events: one JSON object per event, ``kind`` naming its type.

The SDK persists a conversation as one file per event (``events/event-00003-<id>.json``)
and hands each event to callbacks as it happens; streameval reads them as JSON lines
(one event per line: ``model_dump_json()`` in a callback, or the files concatenated)
or as one JSON array. Seen from ``openhands-sdk`` 1.58:

- ``ActionEvent``: ``tool_name``, ``tool_call_id``, ``action`` (``{"kind":
  "TerminalAction", "command": ...}``, ``{"kind": "FileEditorAction", "command": "view",
  "path", "view_range"}``...), ``timestamp``;
- ``ObservationEvent``: the same ``tool_call_id``, ``observation`` (``content``: text
  parts, ``is_error``, and for the terminal ``exit_code`` and ``metadata.working_dir``);
- ``AgentErrorEvent`` (a call the tool refused: ``error``) and ``UserRejectObservation``
  (a call the user refused) answer a call with nothing run;
- ``SystemPromptEvent``, ``MessageEvent``, state updates: no tool call.

A call is emitted when its answer arrives; one never answered is ``interrupted``. The
answered ``finish`` call ends the run.
"""

from __future__ import annotations

from typing import Any, ClassVar

from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, TraceEvent
from streameval.traces.formats.base import Adapter
from streameval.traces.formats.jsonl import (
    as_dict,
    as_list,
    as_str,
    decode_object,
    first_object,
    never_answered,
    parse_timestamp,
)

__all__ = ["OpenHandsSdkAdapter", "sdk_events"]

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


class _SdkReader:
    def __init__(self) -> None:
        self.pending: dict[str, ToolCall] = {}
        self.cwd: str | None = None
        self.started = False

    def event(self, obj: dict, lineno: int) -> list[TraceEvent]:
        kind = obj.get("kind")
        out: list[TraceEvent] = []
        if not self.started:
            self.started = True
            out.append(RunInfo(agent="openhands-sdk", timestamp=parse_timestamp(obj.get("timestamp")),
                               lineno=lineno))
        if kind == "ActionEvent":
            call = _action(obj, self.cwd, lineno)
            if call is not None:
                self.pending[call.call_id] = call
        elif kind in _ANSWERS:
            key = as_str(obj.get("tool_call_id")) or as_str(obj.get("action_id")) or ""
            call = self.pending.pop(key, None)
            if call is not None:
                self._answer(call, obj, kind, lineno)
                out.append(call)
                if call.tool == "finish" and not call.is_error:
                    out.append(RunEnd("finished", timestamp=call.ended_at, lineno=lineno))
        return out

    def _answer(self, call: ToolCall, obj: dict, kind: str, lineno: int) -> None:
        call.ended_at, call.lineno = parse_timestamp(obj.get("timestamp")), lineno
        if kind != "ObservationEvent":
            call.output = as_str(obj.get("error")) or as_str(obj.get("rejection_reason")) or ""
            call.is_error = True
            return
        obs = as_dict(obj.get("observation"))
        call.output = _text(obs.get("content"))
        code = obs.get("exit_code")
        call.is_error = obs.get("is_error") is True or (
            isinstance(code, int) and not isinstance(code, bool) and code not in (0, -1))
        call.structured = {"observation": obs.get("kind"), "exit_code": code}
        workdir = as_str(as_dict(obs.get("metadata")).get("working_dir"))
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


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text") or "" for part in as_list(content)
                   if isinstance(part, dict) and part.get("type", "text") == "text")
