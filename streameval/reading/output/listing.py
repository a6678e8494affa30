"""Listings: ``ls``, ``find``/``fd``/``rg --files``/``grep -l``, ``tree``, Claude's old LS.

A listing shows file *names*, never file lines: each name is a file-level read. Each
parser also has a ``shape`` function saying how surely an output line is its own
(2: only this tool prints such a line, 1: could be its line, 0: not its line), which the
shell's output attribution uses when several commands print into one output.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

from streameval.model import Read
from streameval.reading.output.errors import ERROR_LINE

__all__ = ["joined", "ls_parser", "paths_parser", "tree_parser", "claude_ls", "ls_shape",
           "path_shape", "tree_shape"]

_LOOKS_GREP = re.compile(r":\d+[:-]")
_LONG = re.compile(r"^[-dlcbpsD?][rwxsStT-]{9}[.+@]?\s+")
_TOTAL = re.compile(r"^total \d+(?:[.,]\d+)?[KMGTP]?$")
_COLUMNS = re.compile(r"\s{2,}|\t")                     # ls's multi-column layout
_SPACE = re.compile(r"\s")
_TREE = re.compile(r"^((?:[│|]\s{2,3}|\s{4})*)(?:[├└|`][─-]{2}\s)(.*)$")
_CLAUDE_LS = re.compile(r"^(\s*)- (.+)$")               # Claude's LS tree: ``  - name``

Parser = Callable[[list[str]], list[Read]]


def joined(join: Callable[[str], str | None], names: Iterable[str]) -> list[Read]:
    """Listed names as file-level reads, each joined with the cwd (None: unknown, dropped)."""
    return [Read(p, listing=True) for p in map(join, names) if p]


def paths_parser(join: Callable[[str], str | None]) -> Parser:
    """find / fd / rg --files / grep -l output: one path per line."""
    def parse(lines: list[str]) -> list[Read]:
        return joined(join, (s for s in map(str.strip, lines) if _path_line(s)))
    return parse


def _path_line(s: str) -> bool:
    """A stripped output line that names a path, not an error, a grep hit or a note."""
    return not (not s or ERROR_LINE.match(s) or _LOOKS_GREP.search(s) or s.endswith("/")
                or s == "Error" or s.startswith("Error: ")
                or (s.startswith("[") and s.endswith("]")))


def ls_parser(raw: list[str], join: Callable[[str], str | None]) -> Parser:
    """``ls`` output: names relative to the listed directory; ``dir:`` headers; -l lines."""
    def parse(lines: list[str]) -> list[Read]:
        out: list[str] = []
        cur = raw[0] if len(raw) == 1 else None
        for ln in lines:
            s = ln.rstrip()
            if not s or s.startswith("total ") or ERROR_LINE.match(s) or _LOOKS_GREP.search(s):
                continue
            long = _LONG.match(s)
            if s.endswith(":") and not long:
                cur = s[:-1]
                continue
            if long and s[0] == "d":
                continue   # a directory is not a file the agent could read
            names = [s[long.end():].split(None, 7)[-1].split(" -> ")[0]] if long \
                else _COLUMNS.split(s.strip())
            for name in names:
                if name in (".", "..") or name.endswith("/") or not name:
                    continue
                out.append(name if (name in raw or cur is None or cur in (".", "./"))
                           else posixpath.join(cur, name))
        return joined(join, out)
    return parse


def tree_parser(root: str, join: Callable[[str], str | None]) -> Parser:
    def parse(lines: list[str]) -> list[Read]:
        stack: list[str] = []
        out = []
        for ln in lines:
            m = _TREE.match(ln)
            if not m:
                continue
            depth = len(m.group(1)) // 4
            name = m.group(2).split(" -> ")[0].strip()
            del stack[depth:]
            stack.append(name)
            out.append(name if "/" in name else posixpath.join(root, *stack))
        return joined(join, out)
    return parse


def claude_ls(output: str) -> list[Read]:
    """Claude's old ``LS`` tool prints a tree: ``- /dir/`` then indented ``- name``."""
    stack: list[tuple[int, str]] = []
    reads: list[Read] = []
    for ln in output.splitlines():
        m = _CLAUDE_LS.match(ln)
        if not m:
            continue
        depth, name = len(m.group(1)), m.group(2).strip()
        while stack and stack[-1][0] >= depth:
            stack.pop()
        full = name if not stack or name.startswith("/") else stack[-1][1].rstrip("/") + "/" + name
        if name.endswith("/"):
            stack.append((depth, full))
        else:
            reads.append(Read(full, listing=True))
    return reads


# --------------------------------------------------------------------------- shapes


def path_shape(line: str) -> int:
    """One path per line (find, rg --files, grep -l): no ``ls -l`` columns, no prose."""
    s = line.strip()
    if not s or _LONG.match(s) or _TOTAL.match(s) or ": " in s:
        return 0
    return 1 if ("/" in s or not _SPACE.search(s)) else 0


def ls_shape(line: str) -> int:
    """``ls -l`` lines and ``total N`` are ls's alone; bare names could be anyone's."""
    s = line.rstrip()
    if _LONG.match(s) or _TOTAL.match(s):
        return 2
    if s.endswith(":") and " " not in s:
        return 1
    names = _COLUMNS.split(s.strip())
    return 1 if all(n and not _SPACE.search(n) for n in names) else 0


def tree_shape(line: str) -> int:
    return 2 if _TREE.match(line) else 0
