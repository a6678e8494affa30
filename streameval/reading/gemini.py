"""Gemini CLI's own file tools: what ``read_file``, ``read_many_files``,
``list_directory``, ``search_file_content``, ``write_file`` and ``replace`` showed and
changed (docs/metrics.md §6). Their names and answers, from the Gemini CLI's tool docs
and real sessions (``traces.formats.gemini``):

- ``read_file {absolute_path|file_path, offset (0-based), limit}``: the file's text,
  unnumbered; a slice starts with a note naming it (``Status: Showing lines 11-20 of
  300 total lines.`` then ``--- FILE CONTENT (truncated) ---``, or in older releases
  ``[File content truncated: showing lines 1-100 of 500 total lines...]``);
- ``read_many_files {paths}``: each file after a ``--- <path> ---`` line;
- ``list_directory {path}``: ``Directory listing for <path>:`` then one name per line,
  ``[DIR] `` before directories (``Directory <path> is empty.``);
- ``search_file_content {pattern, path, include}``: ``File: <path>`` blocks of
  ``L<n>: <text>`` lines, paths relative to the searched directory;
- ``write_file {file_path, content}`` writes the whole file; ``replace {file_path,
  old_string, new_string, expected_replacements}`` replaces text.

The text a read showed is kept, so the reading layer aligns it with the base commit,
as for ``cat``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from streameval.model import Edit, Read, Shown, ToolCall
from streameval.reading.editor import numbered_reads

__all__ = ["gemini_read", "gemini_read_many", "gemini_ls", "gemini_grep", "gemini_edit",
           "gemini_path"]

_SLICE = re.compile(r"(?:Status: Showing lines|\[File content truncated: showing lines) "
                    r"(\d+)-(\d+) of (\d+) total lines")
_CONTENT_MARK = "--- FILE CONTENT (truncated) ---\n"
_MANY_HEAD = re.compile(r"^--- (.+?) ---$", re.MULTILINE)
_HIT = re.compile(r"^L(\d+): ?(.*)$")
_NOT_TEXT = ("Cannot display content of binary file", "File not found", "Error")


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def gemini_path(inp: dict[str, Any]) -> str | None:
    """The file a call names: ``absolute_path`` (before 0.9), ``file_path`` or ``path``."""
    return _str(inp.get("absolute_path")) or _str(inp.get("file_path")) or _str(inp.get("path"))


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text_read(path: str, text: str, start: int) -> Read:
    """The text of ``path`` from line ``start`` on, as shown (a final newline is no line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return Read(path, listing=True)   # an empty file, shown
    return Read(path, start, start + len(lines) - 1, shown=Shown(tuple(lines)))


def gemini_read(call: ToolCall, path: str) -> list[Read]:
    """``read_file``: the whole file, or the slice its note names."""
    out = call.output
    if not isinstance(out, str):
        offset, limit = _as_int(call.input.get("offset")), _as_int(call.input.get("limit"))
        start = (offset or 0) + 1
        return [Read(path, start, start + limit - 1 if limit else None)]
    if out.startswith(_NOT_TEXT):
        return []
    note = _SLICE.search(out[:1000])
    if note is None:
        offset = _as_int(call.input.get("offset"))
        return [_text_read(path, out, (offset or 0) + 1)]
    start = int(note.group(1))
    at = out.find(_CONTENT_MARK)
    if at >= 0:
        body = out[at + len(_CONTENT_MARK):]
    else:   # the older note: one line, then the text
        body = out[out.find("\n", note.end()) + 1:] if "\n" in out[note.end():] else ""
    return [_text_read(path, body, start)]


def gemini_read_many(call: ToolCall) -> list[Read]:
    """``read_many_files``: every ``--- <path> ---`` section is that file's text."""
    out = call.output if isinstance(call.output, str) else ""
    marks = list(_MANY_HEAD.finditer(out))
    reads: list[Read] = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(out)
        body = out[mark.end():end].lstrip("\n").rstrip("\n")
        if mark.group(1).strip() and not mark.group(1).startswith("End of content"):
            reads.append(_text_read(mark.group(1).strip(), body + "\n", 1))
    return reads


def gemini_ls(call: ToolCall) -> list[Read]:
    """``list_directory``: the files named (directories are not files)."""
    out = call.output if isinstance(call.output, str) else ""
    lines = out.split("\n")
    first = lines[0] if lines else ""
    head = re.match(r"Directory listing for (.+?):$", first)
    where = head.group(1) if head else gemini_path(call.input)
    if head is None or where is None:
        return []
    return [Read(posixpath.join(where, name.strip()), listing=True)
            for name in lines[1:] if name.strip() and not name.startswith("[DIR] ")
            and not name.startswith("(")]


def gemini_grep(call: ToolCall) -> list[Read]:
    """``search_file_content``: the numbered hits of each ``File:`` block."""
    out = call.output if isinstance(call.output, str) else ""
    base = _str(call.input.get("path"))
    hits: dict[str, tuple[list[int], list[str]]] = {}
    current: str | None = None
    for line in out.split("\n"):
        if line.startswith("File: "):
            name = line[6:].strip()
            current = posixpath.join(base, name) if base and not name.startswith("/") else name
            hits.setdefault(current, ([], []))
            continue
        m = _HIT.match(line)
        if m is not None and current is not None:
            hits[current][0].append(int(m.group(1)))
            hits[current][1].append(m.group(2))
    reads: list[Read] = []
    for path, (numbers, texts) in hits.items():
        reads.extend(numbered_reads(path, numbers, texts))
    return reads


def gemini_edit(call: ToolCall, path: str) -> list[Edit]:
    """``write_file`` (the whole text) and ``replace`` (old text by new)."""
    inp = call.input
    if call.tool.strip().lower() == "write_file":
        content = inp.get("content")
        return [Edit(path, content=content) if isinstance(content, str) else Edit(path)]
    old, new = inp.get("old_string"), inp.get("new_string")
    if not isinstance(old, str):
        return [Edit(path)]
    if old == "":   # an empty old text creates the file
        return [Edit(path, content=new if isinstance(new, str) else "")]
    expected = _as_int(inp.get("expected_replacements"))
    return [Edit(path, old=old, new=new if isinstance(new, str) else "",
                 replace_all=bool(expected and expected > 1))]
