"""OpenAI Codex CLI traces: ``codex exec --json`` event streams and session rollouts.

The two shapes never share a line type (exec events are dotted: ``thread.started``,
``item.completed``; rollout lines are ``session_meta``/``response_item``/``event_msg``/
``turn_context``), so one adapter dispatches on the line's ``type`` and reads either.

exec --json:
  ``thread.started`` -> RunInfo; ``item.started`` of a tool item opens a call that
  ``item.completed`` answers (so a stream cut short still flushes it at close);
  ``command_execution`` -> ToolCall("shell", {"command": ...}), ``file_change`` ->
  ToolCall("file_change", {"changes": [...]}), ``mcp_tool_call`` -> the MCP tool's
  name, ``web_search`` -> "web_search"; ``turn.completed`` -> Usage (per turn) and
  RunEnd("completed"); ``turn.failed`` -> RunEnd("failed") (one ``codex exec`` is one
  turn, so its end is the run's end; the session takes the last RunEnd). ``error``
  events yield nothing: the ``turn.failed`` that follows says it. Item ids restart at
  ``item_0`` in every thread, so a new ``thread.started`` flushes the previous
  thread's unanswered calls. A stream that starts mid-way needs nothing special.

rollout:
  ``session_meta`` -> RunInfo; ``turn_context`` sets the cwd of later calls and gives a
  RunInfo when the model is first known or changes; ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` open calls that the ``*_output`` items
  answer by ``call_id``; ``token_count`` -> cumulative Usage (its run totals).

Shell commands arrive as argv (``["bash", "-lc", X]``) or as one string
(``bash -lc "X"``); both are reduced to the script ``X`` the agent wrote, because that
is what the shell analysis must parse (``apply_patch <<'PATCH' ...`` stays verbatim).
OpenAI's ``input_tokens`` include the cached ones; TokenUsage keeps them apart
(``input_tokens`` = uncached, ``cache_read_tokens`` = cached), as Claude reports them.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import orjson

from streameval.model import RunEnd, RunInfo, ToolCall, TraceEvent, Usage
from streameval.tools import command_text
from streameval.traces.formats.jsonl import (
    TypedJsonlAdapter,
    as_dict,
    as_list,
    as_str,
    bad_shape,
    first_object,
    parse_timestamp,
    token_usage,
    unread_action,
)

_EXEC_TYPES = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed",
                         "item.started", "item.updated", "item.completed"})
_ROLLOUT_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context"})
#: Known rollout line types that say nothing about tools or tokens we use (0.169 adds
#: ``world_state`` snapshots and per-response ``token_usage_record``s; ``token_count``
#: events carry the run totals).
_IGNORED_TYPES = frozenset({"compacted", "error", "world_state", "token_usage_record"})
#: 0.16x ``exec_command`` results, and 0.11x ``shell_command`` ones (``Exit code: N``,
#: ``Wall time: ...``): a header, then ``Output:`` and what the command printed
_EXEC_HEADER = re.compile(
    r"\A(?:(?:Exit code|Chunk ID|Wall time|Process exited with code|"
    r"Process running with session ID|Original token count|Total output lines)[^\n]*\n)+"
    r"Output:\r?\n?", re.MULTILINE)
_EXEC_EXIT = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)", re.MULTILINE)
#: Codex's own notice before what a command printed until it was stopped
_TIMED_OUT = re.compile(r"\Acommand timed out after \d+ milliseconds\r?\n")
#: a call the user stopped: Codex kept no output
_ABORTED = re.compile(r"\A(?:Wall time: [^\n]*\n)?aborted by user\s*\Z")
#: Response items of the old rollout format (before the ``response_item`` wrapper).
_BARE_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output",
                         "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                         "web_search_call"})

_EXIT_CODE = re.compile(r"(?:exit code|exited with code)[:\s]+(-?\d+)", re.IGNORECASE)
_FAILURE_TEXT = re.compile(r"^\s*(?:failed|error|patch rejected|aborted|execution error)",
                           re.IGNORECASE)


class CodexAdapter(TypedJsonlAdapter):
    """Codex ``exec --json`` streams and rollout files (see the module docstring)."""

    format: ClassVar[str] = "codex"
    patterns: ClassVar[tuple[str, ...]] = ("rollout-*.jsonl",)   # $CODEX_HOME/sessions/...
    shapes: ClassVar[dict[str, str]] = {**dict.fromkeys(_EXEC_TYPES, "exec"),
                                        **dict.fromkeys(_ROLLOUT_TYPES, "rollout")}

    def __init__(self) -> None:
        super().__init__()
        self._session_id: str | None = None
        self._cwd: str | None = None
        self._model: str | None = None

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        obj = first_object(head)
        if obj is None:
            return False
        kind = obj.get("type")
        if not isinstance(kind, str):
            return False
        if kind in _EXEC_TYPES:
            return kind in ("thread.started", "turn.started") or isinstance(obj.get("item"), dict) \
                or isinstance(obj.get("usage"), dict) or isinstance(obj.get("error"), dict)
        return kind in _ROLLOUT_TYPES and isinstance(obj.get("payload"), dict)

    # ----------------------------------------------------------------- feeding

    def fallback_handler(self, kind: str):
        # old rollouts wrote response items without the ``response_item`` wrapper
        return CodexAdapter._bare_item if kind in _BARE_ITEMS else None

    # ----------------------------------------------------------------- exec --json

    def _thread_started(self, obj: dict, lineno: int) -> list[TraceEvent]:
        events = self._flush_pending()
        self._session_id = as_str(obj.get("thread_id"))
        events.append(RunInfo(session_id=self._session_id, agent="codex", lineno=lineno))
        return events

    def _turn_started(self, obj: dict, lineno: int) -> list[TraceEvent]:
        return []

    def _turn_completed(self, obj: dict, lineno: int) -> list[TraceEvent]:
        events: list[TraceEvent] = []
        usage = obj.get("usage")
        if isinstance(usage, dict):
            events.append(Usage(tokens=_openai_tokens(usage), cumulative=False, lineno=lineno))
        events.append(RunEnd(reason="completed", lineno=lineno))
        return events

    def _turn_failed(self, obj: dict, lineno: int) -> list[TraceEvent]:
        return [RunEnd(reason="failed", lineno=lineno)]

    def _item_event(self, obj: dict, lineno: int) -> list[TraceEvent]:
        item = obj.get("item")
        if not isinstance(item, dict):
            return [bad_shape(lineno, f"{obj.get('type')} without an item object")]
        item_type = item.get("type")
        describe = _ITEM_TOOLS.get(item_type) if isinstance(item_type, str) else None
        if describe is None:
            return []  # agent_message, reasoning, todo_list, error items
        key = f"item:{item.get('id')}"
        call = self._pending.pop(key, None)
        tool, tool_input, output, is_error = describe(item)
        if call is None:
            call = ToolCall(call_id=str(item.get("id")), tool=tool, input=tool_input,
                            cwd=self._cwd, lineno=lineno)
        if obj.get("type") != "item.completed":
            self._pending[key] = call
            return []
        call.input, call.output, call.is_error, call.lineno = tool_input, output, is_error, lineno
        return [call]

    # ----------------------------------------------------------------- rollout

    def _session_meta(self, obj: dict, lineno: int) -> list[TraceEvent]:
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return [bad_shape(lineno, f"{obj['type']} line without a payload object")]
        self._session_id = as_str(payload.get("id")) or self._session_id
        self._cwd = as_str(payload.get("cwd")) or self._cwd
        self._model = as_str(payload.get("model")) or self._model
        return [RunInfo(session_id=self._session_id, agent="codex", model=self._model,
                        cwd=self._cwd, timestamp=_when(obj, payload), lineno=lineno)]

    def _turn_context(self, obj: dict, lineno: int) -> list[TraceEvent]:
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return [bad_shape(lineno, f"{obj['type']} line without a payload object")]
        self._cwd = as_str(payload.get("cwd")) or self._cwd
        model = as_str(payload.get("model"))
        if model is None or model == self._model:
            return []
        self._model = model
        return [RunInfo(session_id=self._session_id, agent="codex", model=model,
                        cwd=self._cwd, timestamp=_when(obj, payload), lineno=lineno)]

    def _event_msg(self, obj: dict, lineno: int) -> list[TraceEvent]:
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return [bad_shape(lineno, f"{obj['type']} line without a payload object")]
        if payload.get("type") != "token_count":
            return []  # agent_message, user_message, turn_aborted, exec_command_end...
        total = as_dict(payload.get("info")).get("total_token_usage")
        if not isinstance(total, dict) and isinstance(payload.get("usageSource"), str):
            # a pushed run's one response (``codex.sse_event``, traces.ingest): an increment
            last = as_dict(payload.get("info")).get("last_token_usage")
            return [Usage(tokens=_openai_tokens(as_dict(last)), cumulative=False,
                          timestamp=_when(obj, payload), lineno=lineno,
                          source=payload["usageSource"])]
        if not isinstance(total, dict):
            return []  # the first token_count of a turn may have info: null
        return [Usage(tokens=_openai_tokens(total), cumulative=True,
                      timestamp=_when(obj, payload), lineno=lineno)]

    def _response_item(self, obj: dict, lineno: int) -> list[TraceEvent]:
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            return [bad_shape(lineno, "response_item line without a payload object")]
        return self._item(payload, parse_timestamp(obj.get("timestamp")), lineno)

    def _bare_item(self, obj: dict, lineno: int) -> list[TraceEvent]:
        return self._item(obj, parse_timestamp(obj.get("timestamp")), lineno)

    def _item(self, payload: dict, ts: float | None, lineno: int) -> list[TraceEvent]:
        kind = payload.get("type")
        if not isinstance(kind, str):
            return [bad_shape(lineno, "response item without a string type")]
        if kind in ("function_call_output", "custom_tool_call_output"):
            return self._call_output(payload, ts, lineno)
        opener = _CALL_INPUTS.get(kind)
        if opener is None:
            return []  # message, reasoning, and items we do not use
        call_id = payload.get("call_id", payload.get("id"))
        if call_id is None and kind == "web_search_call":
            # rollouts of 2026 write web searches with no id at all; answered inline, they
            # pair with nothing, so the line names the call (the same in replay and watch)
            call_id = f"web_search_call@{lineno}"
        if not isinstance(call_id, str):
            return [unread_action(lineno, f"a {kind} without a call_id")]
        tool, tool_input = opener(payload)
        workdir = as_str(tool_input.get("workdir"))
        call = ToolCall(call_id=call_id, tool=tool, input=tool_input, started_at=ts,
                        cwd=workdir or self._cwd, lineno=lineno)
        if kind == "web_search_call":
            return [call]  # answered inline, no output item follows
        self._pending[call_id] = call
        return []

    def _call_output(self, payload: dict, ts: float | None, lineno: int) -> list[TraceEvent]:
        call = self._pending.pop(str(payload.get("call_id")), None)
        if call is None:
            return []  # answer to a call we never saw
        call.output, call.is_error = _output_of(payload.get("output"))
        call.ended_at, call.lineno = ts, lineno
        return [call]


# --------------------------------------------------------------------------- exec items


def _command_item(item: dict) -> tuple[str, dict, str | None, bool]:
    command = item.get("command")
    script = _script_of(command) if command is not None else ""
    exit_code = item.get("exit_code")
    failed = item.get("status") == "failed" or _nonzero_exit(exit_code)
    return "shell", {"command": script}, as_str(item.get("aggregated_output")), failed


def _file_change_item(item: dict) -> tuple[str, dict, str | None, bool]:
    changes = [c for c in as_list(item.get("changes")) if isinstance(c, dict)]
    status = as_str(item.get("status"))
    return "file_change", {"changes": changes}, status, status == "failed"


def _mcp_item(item: dict) -> tuple[str, dict, str | None, bool]:
    tool = as_str(item.get("tool")) or "mcp_tool_call"
    arguments = item.get("arguments")
    tool_input = dict(arguments) if isinstance(arguments, dict) else {"arguments": arguments}
    tool_input["server"] = item.get("server")
    error = item.get("error")
    output = _text_of(as_dict(item.get("result")).get("content"))
    if error is not None:
        output = as_str(as_dict(error).get("message")) or as_str(error) or output
    return tool, tool_input, output, error is not None or item.get("status") == "failed"


def _web_search_item(item: dict) -> tuple[str, dict, str | None, bool]:
    return "web_search", {"query": item.get("query")}, None, item.get("status") == "failed"


_ITEM_TOOLS = {
    "command_execution": _command_item,
    "file_change": _file_change_item,
    "mcp_tool_call": _mcp_item,
    "web_search": _web_search_item,
}


# --------------------------------------------------------------------------- rollout items


def _function_call(payload: dict) -> tuple[str, dict]:
    name = as_str(payload.get("name")) or "function_call"
    raw = payload.get("arguments")
    args: Any = raw
    if isinstance(raw, str):
        try:
            args = orjson.loads(raw)
        except ValueError:
            return name, {"arguments": raw}
    if not isinstance(args, dict):
        return name, {"arguments": args}
    tool_input = dict(args)
    command = args.get("command", args.get("cmd"))
    if command is not None:
        tool_input.pop("cmd", None)
        tool_input["command"] = _script_of(command)
    return name, tool_input


def _custom_tool_call(payload: dict) -> tuple[str, dict]:
    name = as_str(payload.get("name")) or "custom_tool_call"
    return name, {"input": payload.get("input")}


def _local_shell_call(payload: dict) -> tuple[str, dict]:
    action = as_dict(payload.get("action"))
    return "shell", {"command": _script_of(action.get("command", "")),
                     "workdir": as_str(action.get("working_directory"))}


def _web_search_call(payload: dict) -> tuple[str, dict]:
    action = as_dict(payload.get("action"))
    return "web_search", {"query": action.get("query"), "action": action.get("type")}


_CALL_INPUTS = {
    "function_call": _function_call,
    "custom_tool_call": _custom_tool_call,
    "local_shell_call": _local_shell_call,
    "web_search_call": _web_search_call,
}


# --------------------------------------------------------------------------- helpers


def _script_of(command: Any) -> str:
    """The shell script a command stands for (``reading.tools.command_text``):
    ``["bash", "-lc", X]`` and ``bash -lc "X"`` are X; any other argv is joined with
    shell quoting."""
    text = command_text(command)
    if text is not None:
        return text
    return "" if command is None else str(command)


def _output_of(output: Any) -> tuple[str | None, bool]:
    """(text shown, is_error) of a call output: a JSON string ``{"output",
    "metadata": {"exit_code"}}``, plain text (``Exit code: N`` / sandbox failures), a
    list of ``input_text`` items, or (0.16x ``exec_command``) a ``Chunk ID`` / ``Wall
    time`` / ``Process exited with code N`` header and the command's output after
    ``Output:`` (the header is not the command's output)."""
    if isinstance(output, list):
        return _text_of(output), False
    if isinstance(output, dict):
        return _structured_output(output)
    if not isinstance(output, str):
        return None, False
    if _EXEC_HEADER.match(output):
        return exec_output(output)
    if _ABORTED.match(output):
        return None, True
    if output.startswith("{"):
        try:
            decoded = orjson.loads(output)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict) and "output" in decoded:
            return _structured_output(decoded)
    return output, _text_says_failed(output)


def exec_output(text: str) -> tuple[str, bool]:
    """(what the command printed, failed?) of a 0.16x ``exec_command`` or 0.11x
    ``shell_command`` result: the header (``Exit code: N``, chunk id, wall time,
    ``Process exited with code N``, token count) ends at ``Output:``, and is never the
    command's output. Windows commands print CRLF line ends (the header itself is LF):
    they are plain line ends. A timeout's notice goes too. Text without the header is
    returned as it is."""
    header = _EXEC_HEADER.match(text)
    if header is None:
        return text, False
    code = _EXEC_EXIT.search(header.group(0))
    body = text[header.end():]
    if "\r\n" in body:
        body = body.replace("\r\n", "\n")
    body = _TIMED_OUT.sub("", body, count=1)
    return body, code is not None and code.group(1) != "0"


def _structured_output(decoded: dict) -> tuple[str | None, bool]:
    text = decoded.get("output")
    text = text if isinstance(text, str) else _text_of(text)
    exit_code = as_dict(decoded.get("metadata")).get("exit_code")
    return text, _nonzero_exit(exit_code) or decoded.get("success") is False


def _nonzero_exit(code: Any) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def _text_says_failed(text: str) -> bool:
    head = text[:400]
    match = _EXIT_CODE.search(head)
    if match is not None:
        return match.group(1) != "0"
    return _FAILURE_TEXT.match(head) is not None


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    parts = [block.get("text") for block in as_list(content) if isinstance(block, dict)]
    texts = [part for part in parts if isinstance(part, str)]
    return "\n".join(texts) if texts or isinstance(content, list) else None


def _openai_tokens(usage: dict):
    tokens = token_usage(usage.get("input_tokens"), usage.get("output_tokens"),
                         usage.get("cached_input_tokens"))
    tokens.input_tokens = max(tokens.input_tokens - tokens.cache_read_tokens, 0)
    return tokens


def _when(obj: dict, payload: dict) -> float | None:
    ts = parse_timestamp(obj.get("timestamp"))
    return ts if ts is not None else parse_timestamp(payload.get("timestamp"))


CodexAdapter.ignored_types = _IGNORED_TYPES
CodexAdapter.handlers = {
    "thread.started": CodexAdapter._thread_started,
    "turn.started": CodexAdapter._turn_started,
    "turn.completed": CodexAdapter._turn_completed,
    "turn.failed": CodexAdapter._turn_failed,
    "item.started": CodexAdapter._item_event,
    "item.updated": CodexAdapter._item_event,
    "item.completed": CodexAdapter._item_event,
    "session_meta": CodexAdapter._session_meta,
    "turn_context": CodexAdapter._turn_context,
    "event_msg": CodexAdapter._event_msg,
    "response_item": CodexAdapter._response_item,
}
