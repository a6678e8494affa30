"""One tool call in words: its most telling input, and what each read was credited.

``inspect`` prints these per call, and ``replay --live``'s table ends each row with one.
"""

from __future__ import annotations

from streameval.model import ToolCall
from streameval.reading.steps import ResolvedRead


def fmt_ranges(ranges) -> str:
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def describe_read(r: ResolvedRead) -> str:
    """``file lines <proposed> -> base <credited>`` and what the text said: shown lines
    that are the agent's own, or lines credited from the window alone."""
    name = r.repo_path or f"{r.trace_path} (not in repo)"
    if r.repo_path is None:
        return name
    shown = fmt_ranges(r.current) if r.current else "?"
    base = fmt_ranges(r.base) if r.base else "-"
    text = f"{name} lines {shown}" + (f" -> base {base}" if base != shown else "")
    notes = []
    if r.agent:
        notes.append(f"{r.agent} shown line(s) the agent's own")
    if r.unaligned:
        notes.append("window as asked, text not checked")
    elif not r.base and r.by_text and not r.agent:
        notes.append("text matched no line")
    elif not r.base and not r.by_text:
        notes.append("which lines is not known without the repository")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def describe_call(call: ToolCall | None, width: int) -> str:
    """The call's most telling input on one line: command, path or pattern
    (also the last column of ``replay --live``'s table)."""
    if call is None:
        return ""
    inp = call.input or {}
    text = ""
    # what the call does before where: a Grep is its pattern (then its path)
    for key in ("command", "cmd", "pattern", "query", "file_path", "absolute_path", "path",
                "input"):
        value = inp.get(key)
        if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
            value = " ".join(value)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            path = inp.get("path")
            if key in ("command", "pattern", "query") and isinstance(path, str) \
                    and path not in text:
                text = f"{text} {path}"   # editor calls: "view /testbed/x.py"
            break
    return cut(text, width)


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, a cut one ending in an ellipsis. A text
    cut to a width, then to a smaller one, is the text cut to the smaller one."""
    return text if len(text) <= width else text[: width - 1] + "…"
