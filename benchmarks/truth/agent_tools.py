"""The agents' own tools, done again on the plain copy (edits) or checked (reads).

A shell command is re-executed; an agent's own tool is not a program we can run, so
its effect is redone here in Python, from the call's recorded input:

- edits: Claude Code ``Edit``/``MultiEdit``/``Write``, the ``str_replace_editor``
  family (OpenHands ``file_editor``, SWE-agent): ``create``/``str_replace``/``insert``/
  ``undo_edit``, Codex ``apply_patch`` (its ``*** Begin Patch`` text). A Codex
  ``file_change`` item without the patch text cannot be redone: the run's copy is off
  from there for that file, and the reads that follow show it (they stop matching).
- reads: Claude ``Read`` and the editor's ``view`` print numbered lines (``N\\tline``,
  ``N→line``). The recorded numbered lines are checked against the plain file at those
  numbers, and the tagged file at the same numbers gives their origin. Edits whose
  result prints a numbered snippet (the editor's ``str_replace``) are read the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SHELL_TOOLS = {"bash", "shell", "exec_command", "terminal", "execute_bash",
               "run_shell_command", "local_shell", "run_command"}
EDITOR_TOOLS = {"str_replace_editor", "file_editor", "edit_file", "str_replace_based_edit_tool"}
CLAUDE_EDITS = {"edit", "multiedit", "write"}
_NUMBERED = re.compile(r"^\s*(\d+)(?:\t|→)(.*)$")


@dataclass(frozen=True)
class Action:
    """What a call is, for replay: ``kind`` is shell, read, edit, or other."""

    kind: str
    command: str = ""
    path: str | None = None
    input: dict[str, Any] | None = None
    tool: str = ""


def action_of(tool: str, inp: dict[str, Any]) -> Action:
    name = tool.lower()
    if name in SHELL_TOOLS:
        cmd = inp.get("command", inp.get("cmd"))
        if isinstance(cmd, list):
            cmd = cmd[2] if len(cmd) == 3 and cmd[1] in ("-lc", "-c") else " ".join(cmd)
        return Action("shell", command=cmd if isinstance(cmd, str) else "", tool=tool)
    if name == "read":
        return Action("read", path=inp.get("file_path"), input=inp, tool=tool)
    if name in CLAUDE_EDITS:
        return Action("edit", path=inp.get("file_path"), input=inp, tool=tool)
    if name in EDITOR_TOOLS:
        sub = inp.get("command")
        return Action("read" if sub == "view" else "edit", path=inp.get("path"), input=inp,
                      tool=tool)
    if name in ("apply_patch", "file_change"):
        return Action("edit", input=inp, tool=tool)
    return Action("other", tool=tool)


def numbered_lines(output: str) -> list[tuple[int, str]]:
    """(number, text) of every numbered line of a read tool's output."""
    out = []
    for line in output.split("\n"):
        m = _NUMBERED.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


def same_line(recorded: str, ours: str) -> bool:
    """Read tools expand tabs or strip line ends; a long line may be cut by the tool."""
    if recorded == ours:
        return True
    a, b = recorded.expandtabs(8).rstrip(), ours.expandtabs(8).rstrip()
    return a == b or (len(a) >= 1000 and b.startswith(a.rstrip(".").rstrip()))


# --------------------------------------------------------------------------- edits


class EditFailed(Exception):
    """The recorded edit does not apply to our copy (it is off, or the tool refused)."""


def edit_text(action: Action, current: str | None, history: list[str]) -> str | None:
    """The file's new text after ``action`` (None: delete it); raises ``EditFailed``."""
    inp = action.input or {}
    name = action.tool.lower()
    if name == "write":
        return str(inp.get("content", ""))
    if name == "edit":
        return _replace(current, inp.get("old_string"), inp.get("new_string"),
                        bool(inp.get("replace_all")), unique=False)
    if name == "multiedit":
        text = current
        for e in inp.get("edits") or []:
            text = _replace(text, e.get("old_string"), e.get("new_string"),
                            bool(e.get("replace_all")), unique=False)
        return text
    sub = inp.get("command")
    if sub == "create":
        return str(inp.get("file_text") or "")
    if sub == "str_replace":
        return _replace(current, inp.get("old_str"), inp.get("new_str") or "", False,
                        unique=True)
    if sub == "insert":
        if current is None:
            raise EditFailed("insert into a missing file")
        lines = current.split("\n")
        at = int(inp.get("insert_line") or 0)
        if not 0 <= at <= len(lines):
            raise EditFailed("insert_line out of range")
        new = str(inp.get("new_str") or "").split("\n")
        return "\n".join(lines[:at] + new + lines[at:])
    if sub == "undo_edit":
        if not history:
            raise EditFailed("nothing to undo")
        return history.pop()
    raise EditFailed(f"unknown edit {action.tool}/{sub}")


def _replace(text: str | None, old: Any, new: Any, every: bool, unique: bool) -> str:
    if text is None or not isinstance(old, str) or not isinstance(new, str):
        raise EditFailed("missing file or strings")
    n = text.count(old) if old else 0
    if n == 0 or (unique and n > 1):
        raise EditFailed(f"old text found {n} times")
    return text.replace(old, new) if every else text.replace(old, new, 1)


# --------------------------------------------------------------------------- apply_patch


@dataclass
class FilePatch:
    """One file of a Codex patch: ``kind`` add/update/delete, hunks of (old, new) lines."""

    kind: str
    path: str
    move_to: str | None
    hunks: list[tuple[str | None, list[str], list[str]]]
    added: list[str]


def parse_patch(text: str) -> list[FilePatch]:
    """Codex's ``*** Begin Patch`` format; raises ``EditFailed`` on anything else."""
    lines = text.replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != "*** Begin Patch":
        raise EditFailed("not a Codex patch")
    files: list[FilePatch] = []
    cur: FilePatch | None = None
    for line in lines[1:]:
        if line.strip() == "*** End Patch":
            break
        head = re.match(r"^\*\*\* (Add|Update|Delete) File: (.+)$", line)
        if head:
            cur = FilePatch(head.group(1).lower(), head.group(2).strip(), None, [], [])
            files.append(cur)
            continue
        if cur is None:
            raise EditFailed("patch line outside a file")
        if line.startswith("*** Move to: "):
            cur.move_to = line[len("*** Move to: "):].strip()
        elif line.startswith("*** End of File"):
            continue
        elif cur.kind == "add":
            cur.added.append(line[1:] if line.startswith("+") else line)
        elif line.startswith("@@"):
            cur.hunks.append((line[2:].strip() or None, [], []))
        else:
            if not cur.hunks:
                cur.hunks.append((None, [], []))
            _, old, new = cur.hunks[-1]
            tag, body = (line[:1], line[1:]) if line else (" ", "")
            if tag in (" ", "-"):
                old.append(body)
            if tag in (" ", "+"):
                new.append(body)
            if tag not in (" ", "-", "+"):
                raise EditFailed(f"bad patch line {line[:40]!r}")
    return files


def apply_file_patch(fp: FilePatch, current: str | None) -> str | None:
    """The new text of one patched file (None: deleted)."""
    if fp.kind == "delete":
        return None
    if fp.kind == "add":
        return "\n".join(fp.added) + "\n"
    if current is None:
        raise EditFailed("update of a missing file")
    lines = current.split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    pos = 0
    for anchor, old, new in fp.hunks:
        if anchor is not None:
            pos = _find(lines, [anchor], pos, loose=True) + 1
        at = _find(lines, old, pos, loose=False) if old else len(lines)
        lines[at:at + len(old)] = new
        pos = at + len(new)
    return "\n".join(lines) + ("\n" if trailing else "")


def _find(lines: list[str], block: list[str], start: int, loose: bool) -> int:
    for norm in (lambda s: s, lambda s: s.rstrip(), lambda s: s.strip()):
        want = [norm(b) for b in block]
        for k in range(start, len(lines) - len(block) + 1):
            window = lines[k:k + len(block)]
            if [norm(x) for x in window] == want or (
                    loose and len(block) == 1 and want[0] in norm(lines[k])):
                return k
    raise EditFailed("patch context not found")
