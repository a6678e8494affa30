"""SWE-agent trajectories (``*.traj``) and ContextBench's ``*.checkpoints.jsonl`` side-file.

A ``.traj`` is one pretty-printed JSON document rewritten after every step
(``{"trajectory": [{action, observation, thought, state, ...}], "history": [...],
"info": {exit_status, submission, model_stats}, "replay_config", "environment"}``), so
``SweAgentAdapter`` is a document adapter (buffer in ``feed``, parse in ``close``).
The checkpoints file written by ContextBench's fork has one JSON line per step
(``{tool, action, state, observation, step}``) and is read line by line.

An action is the command line the agent's tool ran. ``str_replace_editor`` actions are
parsed by ``tools.parse_editor_command`` (the one reader of that command line),
as the tool's own argument parser would see them after the shell: quoted arguments may
span lines, and SWE-agent escapes a quote inside single quotes as ``'"'"'``. A malformed call (``view f [1060, 1220]``) still is a tool call: its
``input`` keeps the stray words in ``extra_args`` and its output is the usage error
(``is_error=True``). Nothing is ever executed.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, ToolCall, TraceEvent, Usage
from streameval.tools import SWE_AGENT_COMMANDS, parse_editor_command
from streameval.traces.formats.base import Adapter
from streameval.traces.formats.document import DocumentAdapter
from streameval.traces.formats.jsonl import (
    as_cost,
    as_dict,
    as_list,
    as_str,
    decode_object,
    first_object,
    head_text,
    looks_like_diff,
    token_usage,
    unread_action,
)

__all__ = ["SweAgentAdapter", "SweAgentCheckpointsAdapter", "parse_action", "editor_error"]

_EDITOR = "str_replace_editor"
#: How str_replace_editor (and argparse, in front of it) report a call that did nothing
_EDITOR_ERROR_RE = re.compile(
    r"^(?:usage: str_replace_editor|str_replace_editor: error|ERROR|Error|"
    r"No replacement was performed|The path \S.* does not exist|Invalid `|"
    r"Parameter `|File already exists|No edit history found|The `view_range` parameter|"
    r"The `file_text` parameter|Invalid \w+ parameter)")


# --------------------------------------------------------------------------- actions


def parse_action(action: str) -> tuple[str, dict[str, Any]]:
    """(tool, input) of one SWE-agent action string."""
    text = action.strip()
    first = text.split(None, 1)[0] if text else ""
    if first == _EDITOR:
        return _EDITOR, parse_editor_command(text)
    if first in SWE_AGENT_COMMANDS:
        return first, {"command": text}
    return "bash", {"command": _strip_tool_word(text)}


def _strip_tool_word(text: str) -> str:
    """ContextBench's SWE-agent fork records a bash-tool call as ``bash <command>``.

    The leading word names the tool, not a program: ``bash grep -Rn x dir`` ran
    ``grep``. ``bash script.sh`` / ``bash -c ...`` really run bash and are kept.
    """
    head, _, rest = text.partition(" ")
    if head != "bash" or not rest.strip():
        return text
    nxt = rest.lstrip().split(None, 1)[0]
    if nxt.startswith("-") or nxt.endswith(".sh") or "/" in nxt:
        return text
    return rest.lstrip()


def editor_error(observation: str | None) -> bool:
    """Whether a str_replace_editor result says the call did nothing."""
    return bool(observation) and _EDITOR_ERROR_RE.match(observation.lstrip()) is not None


def _tool_call(call_id: str, action: str, observation: Any, cwd: str | None, lineno: int,
               structured: dict | None = None) -> ToolCall:
    tool, tool_input = parse_action(action)
    output = observation if isinstance(observation, str) else None
    is_error = tool == _EDITOR and editor_error(output)
    return ToolCall(call_id=call_id, tool=tool, input=tool_input, output=output,
                    is_error=is_error, cwd=cwd, structured=structured, lineno=lineno)


def _working_dir(state: Any, observation: Any = None) -> str | None:
    """The shell's directory after a step: the entry's state, or (0.x, where a document
    may have none) the ``(Current directory: /repo)`` footer of the observation."""
    if isinstance(state, str):  # older SWE-agent wrote the state as a JSON string
        try:
            state = orjson.loads(state)
        except ValueError:
            state = None
    found = as_str(as_dict(state).get("working_dir"))
    if found is None and isinstance(observation, str):
        m = _CURRENT_DIR.search(observation[-400:])
        found = m.group(1).strip() if m else None
    return found


_CURRENT_DIR = re.compile(r"\(Current directory: (/[^)\n]*)\)")


# --------------------------------------------------------------------------- .traj


#: how a ``.traj`` opens: 1.x writes ``trajectory`` first; 0.x wrote ``environment``
#: (the container's name) first; some demonstrations start with the chat ``history``
_TRAJ_START = re.compile(
    r'\s*\{\s*(?:"environment"\s*:\s*"[^"\n]*"\s*,\s*)?"trajectory"\s*:\s*\['
    r'|\s*\{\s*"history"\s*:\s*\[\s*\{\s*"role"\s*:')
#: ``environment`` values that name SWE-agent's container, not an instance
_DEFAULT_ENVIRONMENTS = frozenset({"main", "swe_main"})


class SweAgentAdapter(DocumentAdapter):
    """SWE-agent ``.traj``: a whole document, parsed at ``close``.

    Events: ``RunInfo`` (agent "swe-agent", model from ``replay_config``, instance id
    from ``environment`` unless it is the default "main"); one ``ToolCall`` per
    trajectory entry with a non-empty action (an empty action is a turn whose output
    could not be parsed or an exit on error: nothing ran); a cumulative ``Usage``
    from ``info.model_stats``; ``RunEnd(reason=info.exit_status or "unfinished",
    patch=info.submission if a diff)``. ``cwd`` of a call is the working directory
    of the state *before* it (SWE-agent records the state after each action).
    """

    format = "sweagent"
    patterns = ("*.traj",)
    label = "SWE-agent"

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        text = head_text(head)
        return '"swe_agent_version"' in text or _TRAJ_START.match(text) is not None

    def parse(self, doc: dict, lineno: int) -> list[TraceEvent]:
        return _parse_traj(doc, lineno)


def _model_name(replay_config: Any) -> str | None:
    if isinstance(replay_config, str):
        try:
            replay_config = orjson.loads(replay_config)
        except ValueError:
            return None
    model = as_dict(as_dict(as_dict(replay_config).get("agent")).get("model"))
    return as_str(model.get("name")) or as_str(model.get("model_name"))


def _from_history(history: list) -> list[dict]:
    """Trajectory entries rebuilt from the chat ``history`` (a document without a
    ``trajectory``, as some demonstrations are): each assistant ``action`` with the
    observation message that follows it."""
    entries: list[dict] = []
    for k, msg in enumerate(history):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        action = msg.get("action")
        if not isinstance(action, str):
            continue
        obs = next((m.get("content") for m in history[k + 1:k + 3] if isinstance(m, dict)
                    and m.get("message_type") == "observation"), None)
        entries.append({"action": action, "observation": obs if isinstance(obs, str) else ""})
    return entries


def _parse_traj(doc: dict, lineno: int) -> list[TraceEvent]:
    info = as_dict(doc.get("info"))
    entries = as_list(doc.get("trajectory"))
    if not entries and isinstance(doc.get("history"), list) and "trajectory" not in doc:
        entries = _from_history(doc["history"])
    env = as_str(doc.get("environment"))
    # each entry's state is read once (older files store it as a JSON string)
    dirs = [_working_dir(e.get("state"), e.get("observation")) if isinstance(e, dict) else None
            for e in entries]
    first_cwd = next(filter(None, dirs), None)
    events: list[TraceEvent] = [RunInfo(
        agent="swe-agent", model=_model_name(doc.get("replay_config")), cwd=first_cwd,
        instance_id=env if env and env not in _DEFAULT_ENVIRONMENTS else None, lineno=lineno)]
    if not isinstance(doc.get("trajectory"), list) and not entries:
        events.append(BadLine(lineno, Reason.MISSING_FIELD.value,
                              "SWE-agent document has no 'trajectory' list"))
    cwd = first_cwd
    for n, (entry, entry_cwd) in enumerate(zip(entries, dirs), 1):
        if not isinstance(entry, dict):
            events.append(BadLine(lineno, Reason.NOT_AN_OBJECT.value,
                                  f"trajectory entry {n} is not an object; skipped"))
            continue
        action = entry.get("action")
        if isinstance(action, str) and action.strip():
            events.append(_tool_call(f"step-{n}", action, entry.get("observation"), cwd, lineno))
        elif action is not None and not isinstance(action, str):
            events.append(unread_action(lineno, f"trajectory entry {n}: an action that is a "
                                        f"JSON {type(action).__name__}, not a command"))
        cwd = entry_cwd or cwd
    usage = _usage(info.get("model_stats"), lineno)
    if usage is not None:
        events.append(usage)
    submission = info.get("submission")
    status = as_str(info.get("exit_status"))
    # saved after every step: no exit status yet means the run goes on
    events.append(RunEnd(status or "unfinished",
                         submission if looks_like_diff(submission) else None, lineno=lineno,
                         ends=bool(status)))
    return events


def _usage(stats: Any, lineno: int) -> Usage | None:
    if not isinstance(stats, dict):
        return None
    return Usage(token_usage(stats.get("tokens_sent"), stats.get("tokens_received")),
                 cost_usd=as_cost(stats.get("instance_cost")), cumulative=True, lineno=lineno)


# --------------------------------------------------------------------------- checkpoints


class SweAgentCheckpointsAdapter(Adapter):
    """ContextBench's ``.checkpoints.jsonl``: one ``ToolCall`` per line, from ``feed``.

    The file carries no run identity, usage or end; ``step`` goes into
    ``structured["step"]`` (it restarts when a later run appended to the same file).
    """

    format = "sweagent-checkpoints"
    patterns = ("*.checkpoints.jsonl",)

    def __init__(self) -> None:
        self.cwd: str | None = None

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        obj = first_object(head)
        return obj is not None and "action" in obj and "observation" in obj and (
            "step" in obj or "tool" in obj)

    def feed(self, line: bytes, lineno: int) -> list[TraceEvent]:
        obj = decode_object(line, lineno)
        if obj is None:
            return []
        if isinstance(obj, BadLine):
            return [obj]
        action = obj.get("action")
        if not isinstance(action, str):
            return [BadLine(lineno, Reason.MISSING_FIELD.value,
                            f"line {lineno}: checkpoint has no 'action' string; skipped")]
        if not action.strip():
            return []
        state_cwd = _working_dir(obj.get("state"))
        cwd = self.cwd or state_cwd
        self.cwd = state_cwd or self.cwd
        step = obj.get("step")
        structured = {"step": step} if isinstance(step, int) and not isinstance(step, bool) else None
        return [_tool_call(f"line-{lineno}", action, obj.get("observation"), cwd, lineno,
                           structured)]
