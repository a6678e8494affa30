"""Tools streameval does not know by name that show repository code: a small map.

Context engines and file servers reach agents as MCP tools (``mcp__<server>__<tool>`` in
Claude Code, ``mcp_tool_call`` items in Codex), under names no list here can foresee.
A tool map says, per tool name (a shell-style pattern, any case), what the tool shows:

```toml
[[tool]]
match = "mcp__serena__read_file"   # or "mcp__*__read_text_file"
shows = "file"                     # file | lines | matches | names
path = "relative_path"             # the input field that names the file
start = "start_line"               # optional: first line shown (input field)
end = "end_line"                   # optional: last line shown, or
count = ""                         # optional: how many lines
zero_based = true                  # the line fields count from 0
```

``shows``: ``file`` is the file's text (all of it, or start..end): the text decides which
base lines, as for ``cat``; ``lines`` is numbered lines (``12\\ttext``, ``12→``, ``12:``,
``12|text``); ``matches`` is grep-like output (``path:12:text``); ``names`` is one path
per line (file level). A call that failed shows nothing. Reads are counted per tool in
the record (``reads_by_tool``), so a context engine's share of what was read is visible.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streameval.config import read_text_file, toml_loads
from streameval.errors import StreamevalError
from streameval.model import Read, Shown, ToolCall
from streameval.reading.output import grep as grep_out
from streameval.reading.output.numbered import PIPE_LINE, numbered_read, parse_numbered
from streameval.reading.shell.search import grep_reads

__all__ = ["ToolMap", "ToolRule", "ToolMapError", "load_tool_map", "mapped_reads"]

_SHOWS = ("file", "lines", "matches", "names")
_COLON_LINE = re.compile(r"^\s*\d{1,9}:", re.M)


class ToolMapError(StreamevalError):
    """A tool map that cannot be used: its path and what is wrong, one line."""


@dataclass(frozen=True, slots=True)
class ToolRule:
    match: str
    shows: str
    path: str | None = None
    start: str | None = None
    end: str | None = None
    count: str | None = None
    zero_based: bool = False

    def category(self) -> str:
        return "search" if self.shows in ("matches", "names") else "read"


@dataclass(frozen=True, slots=True)
class ToolMap:
    rules: tuple[ToolRule, ...] = ()

    def match(self, tool: str) -> ToolRule | None:
        name = tool.strip().lower()
        return next((r for r in self.rules if fnmatch.fnmatchcase(name, r.match.lower())), None)


def load_tool_map(path: str | Path) -> ToolMap:
    """A tool map from a TOML file; any mistake is a ToolMapError naming the entry."""
    p = Path(path)
    text = read_text_file(p, "tool map", ToolMapError)
    doc = toml_loads(text, f"tool map {p}", ToolMapError)
    entries = doc.get("tool", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ToolMapError(f"tool map {p}: expected [[tool]] tables")
    return ToolMap(tuple(_rule(p, n, e) for n, e in enumerate(entries, 1)))


def _rule(p: Path, n: int, e: dict[str, Any]) -> ToolRule:
    where = f"tool map {p}, [[tool]] #{n}"
    unknown = set(e) - {"match", "shows", "path", "start", "end", "count", "zero_based"}
    if unknown:
        raise ToolMapError(f"{where}: unknown keys {sorted(unknown)}")
    match, shows = e.get("match"), e.get("shows")
    if not isinstance(match, str) or not match.strip():
        raise ToolMapError(f"{where}: 'match' (a tool name or pattern) is required")
    if shows not in _SHOWS:
        raise ToolMapError(f"{where}: 'shows' must be one of {', '.join(_SHOWS)}")
    fields = {k: e.get(k) for k in ("path", "start", "end", "count")}
    for k, v in fields.items():
        if v is not None and (not isinstance(v, str) or not v.strip()):
            raise ToolMapError(f"{where}: {k!r} must name an input field")
    if shows in ("file", "lines") and fields["path"] is None:
        raise ToolMapError(f"{where}: shows = {shows!r} needs 'path' (the input field)")
    zero = e.get("zero_based", False)
    if not isinstance(zero, bool):
        raise ToolMapError(f"{where}: 'zero_based' is true or false")
    return ToolRule(match.strip(), shows, fields["path"], fields["start"], fields["end"],
                    fields["count"], zero)


def mapped_reads(call: ToolCall, rule: ToolRule) -> list[Read]:
    """What a mapped call showed (nothing when it failed or never answered)."""
    if call.is_error or call.interrupted or not isinstance(call.output, str):
        return []
    inp = call.input if isinstance(call.input, dict) else {}
    out = call.output
    if rule.shows == "names":
        return [Read(line.strip(), listing=True) for line in out.splitlines() if line.strip()]
    if rule.shows == "matches":
        hits = grep_out.parse_grep(out.splitlines(), grep_out.GrepShape("rg", True, None))
        return grep_reads(hits, lambda raw: raw)
    path = inp.get(rule.path) if rule.path else None
    if not isinstance(path, str) or not path.strip():
        return []
    if rule.shows == "lines":
        numbered = _numbered(out)
        return [numbered_read(path, *numbered)] if numbered[0] else [Read(path, listing=True)]
    start, end = _window(inp, rule)
    lines = out.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return [Read(path, start, end, shown=Shown(tuple(lines)))]


def _numbered(out: str) -> tuple[list[int], list[str]]:
    pipe = PIPE_LINE.findall(out)
    if pipe:
        return [int(n) for n, _ in pipe], [t for _, t in pipe]
    parsed = parse_numbered(out, "colon" if _COLON_LINE.search(out) and "\t" not in out else "tab")
    return parsed.numbers, parsed.lines


def _window(inp: dict, rule: ToolRule) -> tuple[int | None, int | None]:
    def number(field: str | None) -> int | None:
        v = inp.get(field) if field else None
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            return None
        try:
            return int(v)
        except ValueError:
            return None
    shift = 1 if rule.zero_based else 0
    start, end, count = number(rule.start), number(rule.end), number(rule.count)
    first = start + shift if start is not None and start + shift > 0 else None
    last = end + shift if end is not None and end + shift > 0 else None
    if last is None and count and count > 0:
        last = (first or 1) + count - 1
    return first, last
