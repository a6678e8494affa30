"""Gemini CLI sessions: ``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json``.

One JSON document, saved again after every message (a document adapter: the watcher
re-reads it whole when it changes): ``{"sessionId", "projectHash", "startTime",
"lastUpdated", "messages": [...]}``. A message has a ``type`` (``user``, ``gemini``,
``info``, ``error``), a ``timestamp`` and ``content``; a ``gemini`` message names its
``model``, counts its ``tokens`` (``input``, ``output``, ``cached``, ``thoughts``...) and
holds the ``toolCalls`` it made, each with its answer: ``{"id", "name", "args",
"status": "success"|"error"|"cancelled", "timestamp", "result": [{"functionResponse":
{"response": {"output"} or {"error"}}}]}``. Seen from Gemini CLI 0.10-0.11 (October 2025).

The tools keep Gemini's names (``read_file``, ``list_directory``, ``write_file``,
``replace``, ``glob``, ``search_file_content``, ``run_shell_command``...; what each shows
is ``reading.gemini``'s). A ``run_shell_command`` answer wraps what the command printed
(``Command: ...\\nDirectory: ...\\nOutput: ...\\nError: ...\\nExit Code: N``...): the
call's output is the ``Output`` part, and the exit code says whether it failed. A
cancelled call never ran (``interrupted``). The session has no end event: a run ends
when its file stops changing (watch) or is read to its end (replay).

The session does not name its working directory, but its ``projectHash`` is the SHA-256
of the project's root path (Gemini CLI's ``getProjectHash``): the one directory among
the absolute paths the calls name, and their parents, whose hash it is, is the run's
root. None matches: the root stays unknown.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Any, ClassVar

from streameval.model import RunInfo, ToolCall, TraceEvent, Usage
from streameval.traces.formats.document import DocumentAdapter
from streameval.traces.formats.jsonl import (
    as_dict,
    as_list,
    as_str,
    head_text,
    parse_timestamp,
    shell_failed,
    token_usage,
    unread_action,
)

__all__ = ["GeminiAdapter", "shell_answer"]

_START = re.compile(r'\s*\{\s*"sessionId"\s*:\s*"[^"\n]*"\s*,\s*"projectHash"\s*:')
#: the sections of a ``run_shell_command`` answer, each on its own line
_SHELL_FIELDS = re.compile(
    r"^(Command|Directory|Stdout|Output|Stderr|Error|Exit Code|Signal|Background PIDs|"
    r"Process Group PGID): ?", re.MULTILINE)
_NOTHING = ("(empty)", "(none)")


class GeminiAdapter(DocumentAdapter):
    """Gemini CLI session files (see the module docstring)."""

    format: ClassVar[str] = "gemini"
    patterns: ClassVar[tuple[str, ...]] = ("session-*.json",)
    label: ClassVar[str] = "Gemini CLI session"

    @classmethod
    def detect(cls, head: list[bytes]) -> bool:
        return _START.match(head_text(head)) is not None

    def parse(self, doc: dict, lineno: int) -> list[TraceEvent]:
        messages = [m for m in as_list(doc.get("messages")) if isinstance(m, dict)]
        model = next((as_str(m.get("model")) for m in messages if as_str(m.get("model"))), None)
        out: list[TraceEvent] = [RunInfo(
            session_id=as_str(doc.get("sessionId")), agent="gemini-cli", model=model,
            cwd=_project_root(as_str(doc.get("projectHash")), messages),
            timestamp=parse_timestamp(doc.get("startTime")), lineno=lineno)]
        for message in messages:
            if message.get("type") != "gemini":
                continue
            usage = _usage(as_dict(message.get("tokens")), message, lineno)
            if usage is not None:
                out.append(usage)
            when = parse_timestamp(message.get("timestamp"))
            for tc in as_list(message.get("toolCalls")):
                call = _call(tc, when, lineno) if isinstance(tc, dict) else None
                out.append(call if call is not None else unread_action(
                    lineno, "a toolCalls entry without a string name and id"))
        return out


def _call(tc: dict, when: float | None, lineno: int) -> ToolCall | None:
    name, call_id = as_str(tc.get("name")), as_str(tc.get("id"))
    if name is None or call_id is None:
        return None
    args = as_dict(tc.get("args"))
    status = as_str(tc.get("status"))
    response = next((as_dict(as_dict(r.get("functionResponse")).get("response"))
                     for r in as_list(tc.get("result")) if isinstance(r, dict)), {})
    output = _text(response.get("output"))
    error = _text(response.get("error"))
    failed = status == "error" or (error is not None and output is None)
    cwd = None
    if name == "run_shell_command" and output is not None:
        output, code, cwd = shell_answer(output)
        failed = failed or shell_failed(code, output)
        directory = as_str(args.get("directory"))
        cwd = cwd or directory
    return ToolCall(call_id=call_id, tool=name, input=args,
                    output=output if output is not None else error,
                    is_error=failed, started_at=parse_timestamp(tc.get("timestamp")) or when,
                    ended_at=parse_timestamp(tc.get("timestamp")), cwd=cwd, lineno=lineno,
                    interrupted=status == "cancelled" or (status is None and not response))


def _project_root(digest: str | None, messages: list[dict]) -> str | None:
    """The directory whose SHA-256 is the session's ``projectHash``, among the absolute
    paths the calls name and their parents."""
    if not digest:
        return None
    seen: set[str] = set()
    for message in messages:
        for tc in as_list(message.get("toolCalls")):
            for value in as_dict(as_dict(tc).get("args")).values():
                if not isinstance(value, str) or not value.startswith("/"):
                    continue
                path = posixpath.normpath(value)
                while path not in seen and path != "/":
                    seen.add(path)
                    if hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest() \
                            == digest:
                        return path
                    path = posixpath.dirname(path)
    return None


def shell_answer(text: str) -> tuple[str, int | None, str | None]:
    """(what the command printed, its exit code, the directory it ran in when not the
    project root) of a ``run_shell_command`` answer. Text without the sections is
    taken as the command's output."""
    marks = list(_SHELL_FIELDS.finditer(text))
    if not marks or marks[0].group(1) != "Command":
        return text, None, None
    fields: dict[str, str] = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        fields.setdefault(mark.group(1), text[mark.end():end].rstrip("\n"))
    printed = fields.get("Output", fields.get("Stdout", ""))
    printed = "" if printed.strip() in _NOTHING else printed
    code_text = fields.get("Exit Code", "").strip()
    code = int(code_text) if re.fullmatch(r"-?\d+", code_text) else None
    directory = fields.get("Directory", "").strip()
    return printed, code, (None if directory in ("", "(root)") else directory)


def _usage(tokens: dict, message: dict, lineno: int) -> Usage | None:
    """One message's tokens: ``input`` counts the cached ones too; ``thoughts`` are
    output the model spent thinking."""
    if not tokens:
        return None
    cached = tokens.get("cached") or 0
    cached = cached if isinstance(cached, int) and not isinstance(cached, bool) else 0
    prompt = tokens.get("input") or 0
    prompt = prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else 0
    output = tokens.get("output") or 0
    thoughts = tokens.get("thoughts") or 0
    spent = sum(v for v in (output, thoughts) if isinstance(v, int) and not isinstance(v, bool))
    return Usage(token_usage(max(prompt - cached, 0), spent, min(cached, prompt)),
                 cumulative=False, timestamp=parse_timestamp(message.get("timestamp")),
                 lineno=lineno)


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") for p in value if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None
