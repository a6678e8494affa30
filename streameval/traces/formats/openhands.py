"""OpenHands (V0) traces: evaluation ``output.jsonl``, the resolver's ``output.jsonl``, and
the runtime's saved trajectories (a JSON array of events).

The agent SDK's evaluation harness (OpenHands/benchmarks, 2025) writes the same lines
with a history of SDK events (``kind``: ``ActionEvent``, ``ObservationEvent``...): such
a line is read by ``openhands_sdk.sdk_instance``, framed the same way.

An evaluation line is a whole finished run: ``{"instance_id", "history": [events...],
"test_result": {"git_patch"}, "metadata": {agent_class, llm_config, ...}, "metrics",
"error"}``. History events are actions (``action``: read/edit/run/run_ipython/browse/
think/finish/message/recall/system...; ``args``; ``id``; ``timestamp``) and
observations (``observation``, ``cause`` = the action's ``id``, ``content``,
``extras``). The resolver's lines (``{"issue", "instruction", "base_commit",
"git_patch", "history", ...}``) hold older, flat events: an action's arguments beside
its ``action`` key (``{"action": "run", "command": ...}``), observations without ids
(each answers the action before it), the exit code at the top. A saved trajectory is
the event list alone (``[{"id", "source", "action", "args"}, {"cause", "observation",
...}]``): one run. Since an output file holds several runs, every line is framed:

    RunInfo(instance_id=...)  ToolCall...  Usage(cumulative)  RunEnd(reason, patch)

and a caller splits runs on ``RunInfo.instance_id`` (``session.TraceRunner`` does). A
line is emitted whole from ``feed``; nothing waits for ``close``.
"""

from __future__ import annotations

import re
from typing import Any

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, TraceEvent, Usage
from streameval.traces.formats.base import Adapter
from streameval.traces.formats.document import DocumentAdapter
from streameval.traces.formats.jsonl import (
    as_dict,
    as_str,
    decode_object,
    first_object,
    head_text,
    parse_timestamp,
    shell_failed,
    unread_action,
)
from streameval.traces.formats.openhands_sdk import (
    is_sdk_history,
    metrics_usage,
    sdk_events,
    sdk_instance,
)

__all__ = ["OpenHandsAdapter", "OpenHandsEventsAdapter"]

#: Actions that are conversation or bookkeeping, not tool calls of the agent
_NOT_TOOLS = frozenset({
    "system", "message", "recall", "condensation", "condensation_request",
    "change_agent_state", "null", "agent_state_changed",
})
#: Arguments that are the model's prose, not the call (kept out of ToolCall.input)
_PROSE_ARGS = frozenset({"thought", "final_thought"})
#: Keys of a flat (resolver) action that are the event's, not the call's arguments
_EVENT_KEYS = frozenset({"id", "timestamp", "source", "message", "action", "args", "cause",
                         "tool_call_metadata", "llm_metrics", "is_confirmed", "keep_prompt",
                         "action_risk", "security_risk", "confirmation_state", "blocking",
                         "hidden", "wait_for_response", "image_urls"})
_UPLOADED_RE = re.compile(r"<uploaded_files>\s*(\S+)\s*</uploaded_files>")
_EDIT_FAILED = ("ERROR:", "No replacement was performed")
_SNIPPET = 80


class OpenHandsAdapter(Adapter):
    """OpenHands ``output.jsonl``: per line, one instance's framed events.

    ``ToolCall``: ``tool`` = the action name (read, edit, run, think, finish...),
    ``input`` = its ``args`` without the model's prose, ``output`` = the observation's
    ``content``, ``started_at``/``ended_at`` = action/observation timestamps (naive
    ISO times read as UTC), ``cwd`` = the shell's working directory before the call.
    ``is_error``: an ``error`` observation, a result starting "ERROR:" (failed edit,
    unreadable path), or a failed shell command (``jsonl.shell_failed``).
    An ``error`` observation that answers no action (a tool call the runtime refused
    before running it) is a ``ToolCall(tool="error", is_error=True)``; an action never
    answered (``finish``) is emitted at the end of its instance with ``output=None``.
    ``RunEnd.reason``: "error: <error>" when the line has one, else "finished" when
    the agent called finish, else "stopped".
    """

    format = "openhands"
    patterns = ("output.jsonl",)
    run_per_line = True

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        obj = first_object(head)
        return obj is not None and "history" in obj and any(
            k in obj for k in ("instance_id", "test_result", "metadata", "issue", "git_patch"))

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        obj = decode_object(line, lineno)
        if obj is None:
            return []
        if isinstance(obj, BadLine):
            return [obj]
        if not isinstance(obj.get("history"), list):
            return [BadLine(lineno, Reason.MISSING_FIELD.value,
                            f"line {lineno}: OpenHands instance has no 'history' list; skipped")]
        try:
            if is_sdk_history(obj["history"]):
                return sdk_instance(obj, lineno, f"line-{lineno}")
            return _Instance(obj, lineno, f"line-{lineno}").events()
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
            return [BadLine(lineno, Reason.MISSING_FIELD.value,
                            f"line {lineno}: OpenHands instance has an unexpected shape: "
                            f"{type(exc).__name__}: {str(exc)[:_SNIPPET]}")]


def _event_id(value: Any) -> Any:
    """Ids are ints in the files, but compare them as text so "5" and 5 are one id."""
    return None if value is None or isinstance(value, (dict, list)) else str(value)


class _Instance:
    """One line: one run of one instance."""

    def __init__(self, obj: dict, lineno: int, fallback_id: str | None = None):
        self.obj = obj
        self.lineno = lineno
        issue = as_dict(obj.get("issue"))
        self.iid = as_str(obj.get("instance_id")) or (
            f"{issue.get('owner')}__{issue.get('repo')}-{issue.get('number')}"
            if issue.get("repo") else fallback_id)
        self.pending: dict[Any, tuple[dict, str | None]] = {}  # action id -> (event, cwd)
        self.order: list[Any] = []
        self.cwd: str | None = None
        self.finished = False
        self.last_metrics: dict = {}
        self.out: list[TraceEvent] = []

    def events(self) -> list[TraceEvent]:
        history = self.obj["history"]
        self.out.append(self._run_info(history))
        for n, event in enumerate(history):
            if not isinstance(event, dict):
                self.out.append(BadLine(self.lineno, Reason.NOT_AN_OBJECT.value,
                                        f"line {self.lineno}: history event {n} is not an "
                                        "object; skipped"))
            elif "action" in event:
                self._action(event, n)
            elif "observation" in event:
                self._observation(event, n)
        for key in self.order:  # actions never answered (finish, a cut-off run)
            if key in self.pending:
                action, cwd = self.pending.pop(key)
                self.out.append(self._call(action, None, cwd))
        usage = self._usage()
        if usage is not None:
            self.out.append(usage)
        self.out.append(self._run_end(history))
        return self.out

    # ------------------------------------------------------------------ framing
    def _run_info(self, history: list) -> RunInfo:
        meta = as_dict(self.obj.get("metadata"))
        llm = meta.get("llm_config")
        model = as_str(as_dict(llm).get("model")) or as_str(meta.get("model_name"))
        agent = as_str(meta.get("agent_class"))
        for event in history[:5]:
            if isinstance(event, dict) and event.get("action") == "message":
                m = _UPLOADED_RE.search(as_str(as_dict(event.get("args")).get("content"))
                                        or as_str(event.get("message")) or "")
                if m:
                    self.cwd = m.group(1)
                    break
        # the first event's time, not metadata.start_time (when the whole eval began)
        start = None
        if history and isinstance(history[0], dict):
            start = parse_timestamp(history[0].get("timestamp"))
        return RunInfo(agent=f"openhands/{agent}" if agent else "openhands", model=model,
                       cwd=self.cwd, instance_id=self.iid, timestamp=start, lineno=self.lineno)

    def _run_end(self, history: list) -> RunEnd:
        error = self.obj.get("error")
        if error:
            reason = f"error: {str(error)[:500]}"
        else:
            reason = "finished" if self.finished else "stopped"
        patch = as_str(as_dict(self.obj.get("test_result")).get("git_patch")) \
            or as_str(self.obj.get("git_patch"))    # the resolver's lines
        ts = None
        if history and isinstance(history[-1], dict):
            ts = parse_timestamp(history[-1].get("timestamp"))
        return RunEnd(reason, patch if patch and patch.strip() else None, timestamp=ts,
                      lineno=self.lineno)

    def _usage(self) -> Usage | None:
        return metrics_usage(as_dict(self.obj.get("metrics")) or self.last_metrics, self.lineno)

    # ------------------------------------------------------------------ events
    def _action(self, event: dict, n: int) -> None:
        name = event.get("action")
        if isinstance(event.get("llm_metrics"), dict):
            self.last_metrics = event["llm_metrics"]
        if not isinstance(name, str):
            if name is not None:   # an object where V0 names the action: another format
                self.out.append(unread_action(self.lineno, f"history event {n}: an action "
                                              f"that is a JSON {type(name).__name__}, not a name"))
            return
        if name in _NOT_TOOLS:
            return
        if name == "finish":
            self.finished = True
        key = _event_id(event.get("id"))
        if key is None:
            key = f"#{n}"
        self.pending[key] = (event, self.cwd)
        self.order.append(key)

    def _observation(self, event: dict, n: int) -> None:
        key = _event_id(event.get("cause"))
        if key is None and "id" not in event and self.order and self.order[-1] in self.pending:
            key = self.order[-1]    # a flat (resolver) event answers the action before it
        if key is not None and key in self.pending:
            action, cwd = self.pending.pop(key)
            self.out.append(self._call(action, event, cwd))
        elif event.get("observation") == "error":
            self.out.append(self._orphan_error(event, n))
        workdir = as_str(as_dict(as_dict(event.get("extras")).get("metadata")).get("working_dir"))
        if workdir:
            self.cwd = workdir

    def _call(self, action: dict, obs: dict | None, cwd: str | None) -> ToolCall:
        name = action["action"]
        raw = action.get("args") if isinstance(action.get("args"), dict) else \
            {k: v for k, v in action.items() if k not in _EVENT_KEYS}
        args = {k: v for k, v in raw.items() if k not in _PROSE_ARGS}
        output = None
        is_error = False
        ended = None
        if obs is not None:
            content = obs.get("content")
            output = content if isinstance(content, str) else None
            is_error = _failed(name, obs, output)
            ended = parse_timestamp(obs.get("timestamp"))
        return ToolCall(call_id=f"{self.iid or 'run'}:{action.get('id', len(self.out))}",
                        tool=name, input=args,
                        output=output, is_error=is_error,
                        started_at=parse_timestamp(action.get("timestamp")), ended_at=ended,
                        cwd=cwd, structured=_structured(obs), lineno=self.lineno)

    def _orphan_error(self, event: dict, n: int) -> ToolCall:
        content = event.get("content")
        ts = parse_timestamp(event.get("timestamp"))
        return ToolCall(call_id=f"{self.iid}:{event.get('id', f'#{n}')}", tool="error",
                        input={}, output=content if isinstance(content, str) else None,
                        is_error=True, started_at=ts, ended_at=ts, cwd=self.cwd,
                        lineno=self.lineno)


def _exit_code(obs: dict) -> int | None:
    code = as_dict(as_dict(obs.get("extras")).get("metadata")).get("exit_code",
                                                                   obs.get("exit_code"))
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _failed(action: str, obs: dict, output: str | None) -> bool:
    if obs.get("observation") == "error":
        return True
    text = (output or "").lstrip()
    if text.startswith(_EDIT_FAILED):
        return True
    if obs.get("observation") in ("run", "run_ipython"):
        return shell_failed(_exit_code(obs), output)
    return False


def _structured(obs: dict | None) -> dict | None:
    """The result metadata a reader may want: exit code, edit diff, observation kind."""
    if obs is None:
        return None
    out: dict[str, Any] = {"observation": obs.get("observation")}
    code = _exit_code(obs)
    if code is not None:
        out["exit_code"] = code
    extras = as_dict(obs.get("extras"))
    for key in ("path", "diff", "prev_exist"):
        if key in extras:
            out[key] = extras[key]
    return out


class OpenHandsEventsAdapter(DocumentAdapter):
    """A saved OpenHands trajectory: one JSON array of events, one run. V0 events
    (``action``/``observation``) are read as an output line's history is; the SDK's
    (``kind``: ``ActionEvent``...) by ``openhands_sdk``."""

    format = "openhands-events"
    label = "OpenHands trajectory"
    kinds = (list,)

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        text = head_text(head)
        return _EVENTS_START.match(text) is not None

    def parse(self, doc: list, lineno: int) -> list[TraceEvent]:
        first = next((e for e in doc if isinstance(e, dict)), {})
        if "kind" in first:
            return sdk_events(doc, lineno)
        return _Instance({"history": doc}, lineno).events()


#: a JSON array whose first element is an OpenHands event (V0: ``id`` then ``timestamp``,
#: ``source``...; the SDK's: ``kind`` among its keys), pretty-printed or not
_EVENTS_START = re.compile(
    r'\s*\[\s*\{\s*"(?:id|timestamp|source|kind)"\s*:[^\n]*(?:\n[^\n]*){0,12}?'
    r'"(?:source|kind)"\s*:\s*"(?:user|agent|environment|SystemPromptEvent|MessageEvent|'
    r'ActionEvent|ObservationEvent)"')
