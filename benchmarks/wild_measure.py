"""What streameval makes of one real trace today, measured in-process.

The survey wants the failures that give no error: a file read as the wrong format,
a reader that takes no call from a file full of actions. So besides what streameval
says (format, calls, reads, problems), each file is also scanned with a crude,
format-independent count of *actions* (tool_use blocks, function calls,
``ActionEvent``s, SWE-agent ``action`` strings...). A file with actions and 0 calls
is then visible even though streameval reports nothing wrong.

Everything runs in this process and every exception is caught: a crash is a figure
of the survey, never the end of it. Nothing from a trace is ever executed.
"""

from __future__ import annotations

import json
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streameval.errors import TraceFormatError
from streameval.model import RunIdentity
from streameval.runs.reader import TraceReader
from streameval.scoring.session import RunSession
from streameval.traces.files import iter_lines, read_head
from streameval.traces.formats import adapter_class, detect_format

#: format-independent signs of an agent action; the largest count is the file's
#: "actions" (they overlap, so they are never added up)
ACTION_PATTERNS: dict[str, re.Pattern[bytes]] = {
    "tool_use": re.compile(rb'"type"\s*:\s*"tool_use"'),
    "function_call": re.compile(
        rb'"type"\s*:\s*"(?:function_call|custom_tool_call|local_shell_call)"'),
    "command_execution": re.compile(rb'"type"\s*:\s*"command_execution"'),
    "ActionEvent": re.compile(rb'"kind"\s*:\s*"ActionEvent"'),
    "action": re.compile(
        rb'"action"\s*:\s*"(?!(?:message|system|finish|recall|think|null|)")'),
    "tool_calls": re.compile(rb'"tool_calls"\s*:\s*\[\s*\{'),
    "toolCalls": re.compile(rb'"toolCalls"\s*:\s*\[\s*\{'),  # Gemini CLI sessions
}
#: a shell block the *model* wrote (mini-swe-agent, SWE-agent text mode); counted only
#: in assistant messages, since prompts show example blocks too
_BASH_BLOCK = re.compile(r"```(?:bash|sh|mswea_bash_command)\s*\n")
_VERSION = re.compile(
    rb'"(cli_version|mini_version|version|swe_agent_version)"\s*:\s*"([0-9][0-9A-Za-z.+-]{0,24})"')
_TOOL_NAME = re.compile(r"tool '([^']+)'|tool \"([^\"]+)\"")


@dataclass
class Measure:
    """One trace's figures (``as_dict`` for JSON)."""

    detected: str | None = None          # format detected with no --format
    undetected_reason: str | None = None
    forced: str | None = None            # the --format hint tried when not detected
    runs: int = 0
    calls: int = 0
    sidechain_calls: int = 0
    reads: int = 0                       # calls that credited lines of a file
    listings: int = 0                    # calls that only named files
    problems: Counter = field(default_factory=Counter)
    bad_lines: Counter = field(default_factory=Counter)
    unknown_tools: Counter = field(default_factory=Counter)
    unparsed_examples: list[str] = field(default_factory=list)
    crash: str | None = None
    actions: int = 0
    action_kind: str | None = None
    version: str | None = None
    first_type: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("problems", "bad_lines", "unknown_tools"):
            d[k] = dict(sorted(d[k].items()))
        return d


class _Counter:
    """A RunSession listener: counts calls that credited lines, and names unknown tools."""

    def __init__(self, m: Measure):
        self.m = m

    def __call__(self, _session, outcome, _call) -> None:
        if any(not r.listing for r in outcome.reads):
            self.m.reads += 1
        elif outcome.reads:
            self.m.listings += 1
        for reason, msg in outcome.problems:
            value = getattr(reason, "value", reason)
            if value == "unknown_tool":
                hit = _TOOL_NAME.search(msg)
                self.m.unknown_tools[(hit.group(1) or hit.group(2)) if hit else msg] += 1
            elif value == "unparsed_command" and len(self.m.unparsed_examples) < 3:
                self.m.unparsed_examples.append(msg[:160])


def _documents(data: bytes) -> list[Any]:
    """The JSON values of a file: the whole document, else one per line."""
    try:
        return [json.loads(data)]
    except ValueError:
        pass
    out = []
    for line in data.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return _text(value.get("text") or value.get("content") or "")
    return ""


def assistant_bash_blocks(data: bytes) -> int:
    """Shell blocks in OpenAI-style messages whose role is ``assistant`` (anywhere in
    the file)."""
    n = 0
    stack = _documents(data)
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            # an Anthropic message ({"type": "message", ...}) shows its actions as
            # tool_use blocks: a fenced block in its text is prose, not a call
            if v.get("role") == "assistant" and v.get("type") != "message":
                n += len(_BASH_BLOCK.findall(_text(v.get("content"))))
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return n


def scan_actions(data: bytes, m: Measure) -> None:
    """Fill ``actions``, ``version`` and ``first_type`` from the raw bytes."""
    best = ("", 0)
    for name, pat in ACTION_PATTERNS.items():
        n = len(pat.findall(data))
        if n > best[1]:
            best = (name, n)
    if best[1] == 0 or best[0] == "action":
        blocks = assistant_bash_blocks(data)
        if blocks > best[1]:
            best = ("bash_block", blocks)
    m.action_kind, m.actions = (best[0] or None), best[1]
    hit = _VERSION.search(data)
    if hit:
        m.version = f"{hit.group(1).decode()}={hit.group(2).decode()}"
    first = data.lstrip()[:1]
    if first == b"{":
        try:
            obj = json.loads(data.lstrip().split(b"\n", 1)[0])
            if isinstance(obj, dict):
                m.first_type = str(obj.get("type") or obj.get("kind") or "-")
        except ValueError:
            m.first_type = "document"
    elif first == b"[":
        m.first_type = "array"


def run_format(path: Path, fmt: str, m: Measure) -> None:
    """Read ``path`` as ``fmt`` through the engine inspect and replay use (no gold, no
    repository) and add up what every run of it gave."""
    adapter = adapter_class(fmt)()
    counter = _Counter(m)

    def factory(_instance: str | None, _session: str | None) -> RunSession:
        s = RunSession(RunIdentity("wild", f"wild-{m.runs}"), fmt=fmt)
        s.listeners.append(counter)
        return s

    reader = TraceReader(adapter, factory)
    for line, lineno in iter_lines(path):
        reader.feed_line(line, lineno)
    for s in reader.close():
        ex = s.extras
        m.runs += 1
        m.calls += ex.tool_calls
        m.sidechain_calls += ex.sidechain_calls
        m.problems.update(ex.problems)
        m.bad_lines.update(ex.bad_lines)


def events_as_jsonl(directory: Path, dest: Path) -> Path:
    """A conversation directory's ``event-*.json`` files, in name order, one compact
    object per line: what a directory reader would feed the SDK adapter."""
    with open(dest, "w", encoding="utf-8") as out:
        for f in sorted(directory.glob("event-*.json")):
            obj = json.loads(f.read_bytes())
            out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    return dest


def measure(path: Path, hint: str = "") -> Measure:
    """Everything streameval says of one trace (a file or a conversation directory)."""
    m = Measure()
    try:
        if path.is_dir():
            data = b"\n".join(f.read_bytes() for f in sorted(path.glob("event-*.json")))
        else:
            data = path.read_bytes()
        scan_actions(data, m)
        try:
            m.detected = detect_format(read_head(path))
        except TraceFormatError as exc:
            m.undetected_reason = str(exc)[:120]
        except OSError as exc:  # a directory that is no SDK conversation, an unreadable file
            m.undetected_reason = f"{type(exc).__name__}: {exc.strerror or exc}"[:120]
        if m.detected:
            run_format(path, m.detected, m)
        elif hint:
            m.forced = hint
            src = events_as_jsonl(path, path.with_suffix(".events.jsonl")) if path.is_dir() \
                else path
            run_format(src, hint, m)
    except Exception as exc:  # noqa: BLE001 - a crash is counted, never stops the survey
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
        m.crash = f"{type(exc).__name__}: {exc} ({where})"[:240]
    return m


__all__ = ["Measure", "measure", "scan_actions", "run_format", "events_as_jsonl",
           "ACTION_PATTERNS"]
