"""Claude Code traces: ``claude -p --output-format stream-json`` and saved session files.

Both shapes are JSON lines of the same messages: assistant lines carry ``tool_use``
blocks, user lines carry the matching ``tool_result`` blocks (by ``tool_use_id``), so one
adapter reads both. Differences that matter:

- sessions (``~/.claude/projects/<slug>/<id>.jsonl``) put ``cwd``, ``sessionId``,
  ``isSidechain`` and an ISO ``timestamp`` on every line and the tool's structured
  result in ``toolUseResult``; the stream has ``system``/``init`` (cwd, model),
  ``parent_tool_use_id`` for sub-agent lines, ``tool_use_result`` (newer versions),
  no timestamps, and a final ``result`` line with run totals and cost.
- One API message may be written as several lines (one per content block) that repeat
  the same ``message.id`` and ``usage``; the later copies may carry a larger
  ``output_tokens`` (the stream grew). Usage is therefore counted per message id as the
  field-wise maximum seen: the first line emits its numbers, later copies emit only the
  growth, so the sum of all non-cumulative Usage events is each message counted once.
- A stream may hold several sessions (a wrapper restarting ``claude``: init -> result,
  init -> result). Every init gives a RunInfo and every result a RunEnd; the session
  treats the last RunEnd it has seen as the end of the run. Calls still waiting at a
  ``result`` are flushed there (that process is gone, so no result will come).

Sub-agents (the Task/Agent tool) run in a sidechain. Code 1.0 wrote their lines into the
session file (``isSidechain: true``); Code 2.1 writes each to its own transcript,
``<session>/subagents/agent-<id>.jsonl`` (every line ``isSidechain: true`` with an
``agentId``), and echoes each of its messages into the parent session as a ``progress``
line (``data.type: "agent_progress"``, ``data.message``). So:

- a parent session's sub-agent calls, inline or echoed, are the run's sidechain calls
  (kept apart, and scored with ``--include-sidechain``); the sub-agent transcript beside
  a present parent is part of that run (``traces.parts``), not a run of its own;
- a sub-agent transcript read alone (its first message line is a sidechain line with an
  ``agentId``) is a run of its own: its calls are that run's calls, and its session id
  is ``<parent session>/agent-<id>``, so it never takes the parent's run id.

Lines that are known to carry no tool call (``summary``, ``file-history-snapshot``,
other ``progress``, ``system`` subtypes other than init, compact summaries,
local-command echoes...) yield nothing and count nothing. Unknown ``type`` values are a
``BadLine(UNKNOWN_EVENT)``; assistant/user lines without a ``message`` object are
``BadLine(MISSING_FIELD)``. Sub-agent (sidechain) messages count toward the run's
tokens: they were spent by the run.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, ClassVar

from streameval.model import RunEnd, RunInfo, ToolCall, TraceEvent, Usage
from streameval.traces.formats.head import head_objects
from streameval.traces.formats.jsonl import (
    TypedJsonlAdapter,
    as_cost,
    as_dict,
    as_list,
    as_str,
    bad_shape,
    parse_timestamp,
    token_usage,
    unread_action,
)

#: Line types that exist in real traces but never carry a tool call or tokens.
_IGNORED_TYPES = frozenset({
    "summary", "file-history-snapshot", "queue-operation", "attachment",
    "custom-title", "rate_limit_event", "stream_event", "tool_progress", "auth_status",
    "control_request", "control_response", "control_cancel_request", "keep_alive",
    # session transcripts of Code 2.1 (seen in 2.1.328): the API requests it made, cost
    # and prompt bookkeeping, titles
    "api-request", "api-request-blob", "api-request-shape", "atis-latch", "cost-state",
    "last-prompt", "tools-used", "ai-title", "pr-link", "mode", "permission-mode",
    "agent-name", "bridge-session", "file-history-delta",
    # bookkeeping written at the top of newer transcripts (a renamed session, its
    # permission mode, a session teleported from the web; 2.1.x)
    "teleported-from", "teleport-skipped-branch", "worktree-state",
})
_DETECT_TYPES = frozenset({"system", "assistant", "user", "result", "summary",
                           "file-history-snapshot", "progress", "queue-operation",
                           "api-request", "attachment", "last-prompt", "cost-state"})
_DETECT_KEYS = ("message", "session_id", "sessionId", "uuid", "leafUuid", "snapshot",
                "parentUuid")
#: bookkeeping lines a session transcript may open with before its first message: the
#: detector looks past them. Each carries one of ``_LEADING_KEYS`` (a file of nothing
#: else, such as a ``teleported-from`` stub, is still Claude Code's).
_LEADING_TYPES = frozenset({
    "custom-title", "permission-mode", "teleported-from", "teleport-skipped-branch",
    "ai-title", "agent-name", "last-prompt", "pr-link", "mode", "worktree-state",
    "cost-state", "summary", "file-history-snapshot", "queue-operation", "tools-used",
    "atis-latch", "bridge-session",
})
_LEADING_KEYS = ("sessionId", "leafUuid", "remoteSessionId", "customTitle", "permissionMode",
                 "aiTitle", "agentName", "messageId", "snapshot")

#: Split API messages are adjacent lines; remembering the last few ids is enough.
_USAGE_MEMORY = 512
_ANSWERED_MEMORY = 4096

_Counts = tuple[int, int, int, int]


class ClaudeAdapter(TypedJsonlAdapter):
    """Claude Code stream-json and session transcripts (see the module docstring)."""

    format: ClassVar[str] = "claude"

    def __init__(self) -> None:
        super().__init__()
        #: ids already answered, so a block written twice does not become a second call
        self._answered: OrderedDict[str, None] = OrderedDict()
        self._usage_seen: OrderedDict[str, _Counts] = OrderedDict()
        self._stream_cwd: str | None = None
        self._session_id: str | None = None
        #: the session's model was told (a RunInfo naming it went out)
        self._model_told = False
        #: decided at the first message line: the file is a sub-agent's own transcript
        #: (its sidechain lines are this run's), or None while not known
        self._subagent_file: bool | None = None
        self._agent_id: str | None = None

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        """The first line that is not opening bookkeeping (``_LEADING_TYPES``) decides:
        a Claude line type with a Claude key. A head of bookkeeping alone is Claude's
        when one of its lines carries a Claude key."""
        leading = False
        for obj in head_objects(head):
            kind = obj.get("type")
            if isinstance(kind, str) and kind in _DETECT_TYPES \
                    and any(key in obj for key in _DETECT_KEYS):
                return True
            if not isinstance(kind, str) or kind not in _LEADING_TYPES:
                return False
            leading = leading or any(key in obj for key in _LEADING_KEYS)
        return leading

    # ----------------------------------------------------------------- line kinds

    def _system(self, obj: dict, lineno: int) -> list[TraceEvent]:
        if obj.get("subtype") != "init":
            return []  # compact_boundary, stop_hook_summary, api_error, task_*...
        self.shape = "stream-json"   # only ``claude -p`` writes an init line
        self._stream_cwd = as_str(obj.get("cwd"))
        self._session_id = as_str(obj.get("session_id"))
        self._model_told = as_str(obj.get("model")) is not None
        return [RunInfo(session_id=self._session_id, agent="claude-code",
                        model=as_str(obj.get("model")), cwd=self._stream_cwd,
                        timestamp=parse_timestamp(obj.get("timestamp")), lineno=lineno)]

    def _result(self, obj: dict, lineno: int) -> list[TraceEvent]:
        events = self._flush_pending()
        usage = as_dict(obj.get("usage"))
        cost = obj.get("total_cost_usd")
        if usage or isinstance(cost, (int, float)):
            events.append(Usage(tokens=_tokens_of(usage),
                                cost_usd=as_cost(cost),
                                cumulative=True, lineno=lineno))
        reason = as_str(obj.get("subtype")) or ("error" if obj.get("is_error") else "result")
        events.append(RunEnd(reason=reason, timestamp=parse_timestamp(obj.get("timestamp")),
                             lineno=lineno))
        return events

    def _assistant(self, obj: dict, lineno: int) -> list[TraceEvent]:
        message = obj.get("message")
        if not isinstance(message, dict):
            return [bad_shape(lineno, "assistant line without a message object")]
        events: list[TraceEvent] = []
        self._first_message(obj)
        info = self._session_info(obj, message, lineno)
        if info is not None:
            events.append(info)
            self._model_told = info.model is not None
        elif not self._model_told and self._session_id is not None \
                and (obj.get("isSidechain") is not True or self._subagent_file) \
                and (model := as_str(message.get("model"))) is not None:
            # the session's first assistant line named no model (a pushed run's hook
            # lines carry none): the first line that names one tells it
            events.append(RunInfo(session_id=self._session_id, model=model, lineno=lineno))
            self._model_told = True
        usage = self._pushed_usage(message, obj, lineno) if "usageSource" in obj \
            else self._usage_increment(message, obj, lineno)
        if usage is not None:
            events.append(usage)
        content = message.get("content")
        if isinstance(content, list):
            context = _LineContext.of(obj, self._stream_cwd)
            if self._subagent_file and obj.get("isSidechain") is True:
                context.sidechain = False   # a sub-agent read alone: its calls are the run's
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    problem = self._start_call(block, context, lineno)
                    if problem is not None:
                        events.append(problem)
        return events

    def _user(self, obj: dict, lineno: int) -> list[TraceEvent]:
        message = obj.get("message")
        if not isinstance(message, dict):
            return [bad_shape(lineno, "user line without a message object")]
        self._first_message(obj)
        content = message.get("content")
        if not isinstance(content, list):
            return []  # a prompt, a compact summary, a local-command echo
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if not results:
            return []
        structured = obj.get("toolUseResult", obj.get("tool_use_result"))
        # The line-level structured result belongs to a single tool_result block.
        structured = structured if isinstance(structured, dict) and len(results) == 1 else None
        ended = parse_timestamp(obj.get("timestamp"))
        events: list[TraceEvent] = []
        for block in results:
            call = self._pending.pop(str(block.get("tool_use_id")), None)
            if call is None:
                continue  # answer to a call we never saw (trace started mid-way)
            self._remember_answered(call.call_id)
            # ``"content": null``: what was shown is not recorded (a pushed OpenTelemetry
            # event, streameval.traces.ingest); a missing key is an empty result, as before
            call.output = None if "content" in block and block["content"] is None \
                else _result_text(block.get("content"))
            call.is_error = block.get("is_error") is True
            call.ended_at = ended
            call.structured = structured
            call.lineno = lineno
            events.append(call)
        return events

    def _progress(self, obj: dict, lineno: int) -> list[TraceEvent]:
        """A sub-agent's message echoed into its parent session (2.1: ``agent_progress``)
        is read as a sidechain line of the parent; other progress carries no call."""
        data = obj.get("data")
        if not isinstance(data, dict) or data.get("type") != "agent_progress":
            return []
        inner = data.get("message")
        if not isinstance(inner, dict) or inner.get("type") not in ("assistant", "user"):
            return []
        line = {k: v for k, v in inner.items() if k not in ("sessionId", "isSidechain")}
        line["isSidechain"] = True
        line.setdefault("cwd", obj.get("cwd"))
        line.setdefault("timestamp", obj.get("timestamp"))
        handler = ClaudeAdapter._assistant if inner["type"] == "assistant" else ClaudeAdapter._user
        return handler(self, line, lineno)

    # ----------------------------------------------------------------- pieces

    def _first_message(self, obj: dict) -> None:
        if self._subagent_file is None:
            agent = obj.get("agentId")
            self._subagent_file = obj.get("isSidechain") is True and isinstance(agent, str)
            self._agent_id = agent if self._subagent_file else None

    def _start_call(self, block: dict, context: _LineContext, lineno: int):
        call_id, name = block.get("id"), block.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            return unread_action(lineno, "a tool_use block without a string id and name")
        if call_id in self._pending or call_id in self._answered:
            return None  # the same block written twice
        tool_input = block.get("input")
        self._pending[call_id] = ToolCall(
            call_id=call_id, tool=name,
            input=tool_input if isinstance(tool_input, dict) else {},
            started_at=context.timestamp, cwd=context.cwd, sidechain=context.sidechain,
            lineno=lineno, cwd_persists=context.cwd_persists)
        return None

    def _remember_answered(self, call_id: str) -> None:
        self._answered[call_id] = None
        if len(self._answered) > _ANSWERED_MEMORY:
            self._answered.popitem(last=False)

    def _session_info(self, obj: dict, message: dict, lineno: int) -> RunInfo | None:
        """A session file has no init line: its first assistant line (or a new
        ``sessionId`` on the main chain) stands in for one."""
        session_id = as_str(obj.get("sessionId"))
        if session_id is not None and self._subagent_file:
            session_id = f"{session_id}/agent-{self._agent_id}"
        if session_id is None or session_id == self._session_id:
            return None
        if self._session_id is not None and obj.get("isSidechain") is True:
            return None
        self._session_id = session_id
        return RunInfo(session_id=session_id, agent="claude-code",
                       model=as_str(message.get("model")), cwd=as_str(obj.get("cwd")),
                       timestamp=parse_timestamp(obj.get("timestamp")), lineno=lineno)

    def _pushed_usage(self, message: dict, obj: dict, lineno: int) -> Usage | None:
        """A usage line the ingest wrote for a pushed run (``traces.ingest``): one API
        request's tokens and cost (``claude_code.api_request``), or the run's totals read
        from its transcript (``usageCumulative``). ``usageSource`` says which; a request
        delivered twice (an exporter's retry) counts once, by its id."""
        source = as_str(obj.get("usageSource"))
        tokens = _tokens_of(as_dict(message.get("usage")))
        cost = as_cost(obj.get("costUSD"))
        ts = parse_timestamp(obj.get("timestamp"))
        if obj.get("usageCumulative") is True:
            return Usage(tokens=tokens, cost_usd=cost, cumulative=True, timestamp=ts,
                         lineno=lineno, source=source)
        message_id = as_str(message.get("id"))
        if message_id is not None:
            if message_id in self._usage_seen:
                return None
            self._usage_seen[message_id] = (0, 0, 0, 0)
            if len(self._usage_seen) > _USAGE_MEMORY:
                self._usage_seen.popitem(last=False)
        return Usage(tokens=tokens, cost_usd=cost, cumulative=False, timestamp=ts,
                     lineno=lineno, source=source)

    def _usage_increment(self, message: dict, obj: dict, lineno: int) -> Usage | None:
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return None
        tokens = _tokens_of(usage)
        counts = (tokens.input_tokens, tokens.output_tokens,
                  tokens.cache_read_tokens, tokens.cache_creation_tokens)
        message_id = as_str(message.get("id"))
        own = True   # ``counts`` are this line's numbers, which ``tokens`` holds
        if message_id is not None:
            before = self._usage_seen.pop(message_id, None)
            if before is None:   # the message's first line (as a rule, its only one)
                self._usage_seen[message_id] = counts
            else:
                self._usage_seen[message_id] = tuple(map(max, before, counts))  # type: ignore[assignment]
                counts = tuple(max(now - was, 0) for now, was in zip(counts, before))
                own = False
            if len(self._usage_seen) > _USAGE_MEMORY:
                self._usage_seen.popitem(last=False)
        if not any(counts):
            return None
        return Usage(tokens=tokens if own else token_usage(*counts), cumulative=False,
                     timestamp=parse_timestamp(obj.get("timestamp")), lineno=lineno)


class _LineContext:
    """Where and when a tool_use line happened."""

    __slots__ = ("cwd", "timestamp", "sidechain", "cwd_persists")

    def __init__(self, cwd: str | None, timestamp: float | None, sidechain: bool,
                 cwd_persists: bool = False):
        self.cwd, self.timestamp, self.sidechain = cwd, timestamp, sidechain
        self.cwd_persists = cwd_persists

    @classmethod
    def of(cls, obj: dict, stream_cwd: str | None) -> _LineContext:
        sidechain = obj.get("isSidechain") is True or obj.get("parent_tool_use_id") is not None
        own = as_str(obj.get("cwd"))  # session transcripts record the shell's cwd per line
        return cls(own or stream_cwd, parse_timestamp(obj.get("timestamp")), sidechain,
                   cwd_persists=own is None)


def _tokens_of(usage: dict):
    return token_usage(usage.get("input_tokens"), usage.get("output_tokens"),
                       usage.get("cache_read_input_tokens"),
                       usage.get("cache_creation_input_tokens"))


def _result_text(content: Any) -> str:
    """What the agent was shown: a string, or the text blocks of a list joined by
    newlines. Images carry no text and are left out."""
    if isinstance(content, str):
        return content
    parts = [block["text"] for block in as_list(content)
             if isinstance(block, dict) and block.get("type") == "text"
             and isinstance(block.get("text"), str)]
    return "\n".join(parts)


ClaudeAdapter.handlers = {
    "system": ClaudeAdapter._system,
    "result": ClaudeAdapter._result,
    "progress": ClaudeAdapter._progress,
    "assistant": ClaudeAdapter._assistant,
    "user": ClaudeAdapter._user,
}
ClaudeAdapter.ignored_types = _IGNORED_TYPES
