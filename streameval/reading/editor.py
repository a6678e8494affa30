"""File editors agents call as tools: the Anthropic-style text editor and SWE-agent 0.x.

``str_replace_editor`` (SWE-agent 1.x, OpenHands' ``read``/``edit``, Claude's API tool):
``view`` shows a file as ``cat -n`` (or an abbreviated view of a large one, whose
``... eliding lines a-b ...`` markers show nothing) or a directory listing;
``create``/``str_replace``/``insert`` edit. SWE-agent runs it as a shell command
(``str_replace_editor view /p --view_range 1 20``): ``tools.parse_editor_command`` is
the one reader of that command line, for the SWE-agent adapter and for us.

SWE-agent 0.x has commands of its own in its shell: ``open f [line]``, ``goto``,
``scroll_up/down`` print a window ``[File: /p (N lines total)]`` of ``N:text`` lines;
``search_file`` prints ``Line N:text``; ``search_dir``/``find_file`` list files;
``edit a:b`` replaces lines a..b of the open file with the text that follows, up to
``end_of_edit``; ``create f`` makes a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from streameval.model import Edit, Read, ToolCall
from streameval.reading.output.numbered import FILE_WINDOW, numbered_read, parse_numbered
from streameval.tools import as_int as _int
from streameval.tools import category_of, parse_editor_command, split_words

__all__ = ["editor_call", "editor_category", "editor_input", "sweagent_call", "view_reads",
           "EditorResult"]

_LISTING = "files and directories up to"
_SEARCH_LINE = re.compile(r"^Line (\d+):(.*)$")
_EDIT_RANGE = re.compile(r"^edit\s+(\d+):(\d+)\s*\n(.*?)(?:\nend_of_edit\s*)?$", re.S)


@dataclass(slots=True)
class EditorResult:
    """What an editor call showed and changed, paths as written."""

    reads: list[Read] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    category: str = "other"
    #: the file SWE-agent 0.x now has open (its window's header), if the call says
    open_file: str | None = None
    #: lines an edit's result printed (the edited snippet, in the new numbers): shown to
    #: the agent, so credited like a read's (docs/metrics.md §6a)
    snippets: list[Read] = field(default_factory=list)


def editor_input(call: ToolCall) -> dict[str, Any]:
    """The editor's arguments: as given (function calling), or parsed from a command line."""
    inp = call.input if isinstance(call.input, dict) else {}
    command = inp.get("command")
    if "path" not in inp and isinstance(command, str) and " " in command.strip():
        return parse_editor_command(command)
    return inp


# --------------------------------------------------------------------------- views


def view_reads(path: str, output: str) -> list[Read]:
    """What a ``view`` result showed: numbered lines (runs, with their text), or the
    names of a directory listing (a name ending in ``/`` is a directory: the OpenHands
    editor of 2025 marks them so; no file)."""
    if _LISTING in output[:300]:
        return [Read(name.strip(), listing=True) for name in output.splitlines()[1:]
                if name.strip() and not name.strip().startswith(("<", "Here's"))
                and not name.strip().endswith("/")]
    abbreviated = any(mark in output[:600] for mark in ("too large to display", "abbreviated")) \
        or "eliding lines" in output
    parsed = parse_numbered(output, "loose" if abbreviated else "tab")
    return numbered_reads(path, parsed.numbers, parsed.lines)


def numbered_reads(path: str, numbers: list[int], lines: list[str],
                   end_piece: bool = False) -> list[Read]:
    """Numbered lines as one read, text kept; the file at file level when no line was
    shown. ``end_piece``: see ``model.Shown``."""
    if not numbers:
        return [Read(path, listing=True)]
    return [numbered_read(path, numbers, lines, end_piece=end_piece)]


def _editor_command(call: ToolCall, inp: dict[str, Any]) -> str | None:
    """The editor's sub-command; OpenHands' ``read`` gives none, and views."""
    command = inp.get("command") if isinstance(inp.get("command"), str) else None
    if command is None and call.tool.strip().lower() == "read":
        return "view"
    return command


def editor_category(call: ToolCall) -> str:
    """An editor call's category: ``view`` reads, every other sub-command edits."""
    return "read" if _editor_command(call, editor_input(call)) == "view" else "edit"


def editor_call(call: ToolCall, inp: dict[str, Any], failed: bool) -> EditorResult:
    """``str_replace_editor`` / OpenHands ``read``/``edit`` (``oh_aci``)."""
    res = EditorResult()
    path = inp.get("path") if isinstance(inp.get("path"), str) and inp["path"].strip() else None
    command = _editor_command(call, inp)
    res.category = "read" if command == "view" else "edit"
    if path is None or failed:
        return res
    if command == "view":
        if isinstance(call.output, str):
            res.reads.extend(view_reads(path, call.output))
        elif not call.interrupted:
            res.reads.append(_asked_view(path, inp))
    elif command == "create":
        text = inp.get("file_text")
        res.edits.append(Edit(path, content=text) if isinstance(text, str) else Edit(path))
    elif command == "str_replace" and isinstance(inp.get("old_str"), str):
        new = inp.get("new_str")
        res.edits.append(Edit(path, old=inp["old_str"], new=new if isinstance(new, str) else ""))
    elif command == "insert" and _int(inp.get("insert_line")) is not None:
        new = inp.get("new_str")
        res.edits.append(Edit(path, insert_line=_int(inp.get("insert_line")),
                              new=new if isinstance(new, str) else ""))
    else:   # undo_edit, OpenHands LLM-based edit, anything we cannot replay
        res.edits.append(Edit(path))
    res.snippets.extend(edited_snippet(path, call.output))
    return res


def edited_snippet(path: str, output: str | None) -> list[Read]:
    """The numbered snippet an edit tool prints after editing ("Here's the result of
    running `cat -n` on a snippet of ..."): lines of the edited file, in its new numbers,
    shown to the agent like any read's."""
    if not isinstance(output, str) or "snippet" not in output[:400]:
        return []
    parsed = parse_numbered(output)
    return numbered_reads(path, parsed.numbers, parsed.lines) if parsed.numbers else []


def _asked_view(path: str, inp: dict[str, Any]) -> Read:
    """The window asked for, when the trace kept no result."""
    rng = inp.get("view_range")
    start = end = None
    if isinstance(rng, (list, tuple)) and len(rng) == 2:
        a, b = _int(rng[0]), _int(rng[1])
        if a is not None and b is not None:
            start, end = max(a, 1), (None if b == -1 else b)
    elif _int(inp.get("start")) and _int(inp.get("start")) > 0:
        start, end = _int(inp.get("start")), _int(inp.get("end"))
    return Read(path, start, end if end is None or end > 0 else None)


# --------------------------------------------------------------------------- SWE-agent 0.x


#: SWE-agent 0.x's linting ``edit`` refusing a change, and where it shows the original
_LINT_REJECTED = "Your proposed edit has introduced new syntax error"
_LINT_ORIGINAL = "This is the original code before your edit"


def sweagent_call(call: ToolCall, open_file: str | None, failed: bool) -> EditorResult:
    """One SWE-agent 0.x command (``call.tool`` is its name, ``input["command"]`` the
    whole action)."""
    name = call.tool.strip().lower()
    action = call.input.get("command") if isinstance(call.input, dict) else None
    action = action if isinstance(action, str) else ""
    out = call.output if isinstance(call.output, str) else ""
    res = EditorResult(category=category_of(name) or "other")
    header = FILE_WINDOW.search(out)
    res.open_file = header.group(1).strip() if header else None
    if failed or call.interrupted:
        return res
    if name in ("open", "goto", "scroll_up", "scroll_down") and header:
        res.reads.extend(_window(out, header))
    elif name == "search_file":
        target = _search_file_path(action, out) or open_file
        hits = [m for m in map(_SEARCH_LINE.match, out.splitlines()) if m]
        if target and hits:
            res.reads.extend(numbered_reads(target, [int(m.group(1)) for m in hits],
                                            [m.group(2) for m in hits]))
    elif name in ("search_dir", "find_file"):
        for ln in out.splitlines():
            name_part = re.sub(r"\s+\(\d+ matches?\)$", "", ln.strip())
            if name_part.startswith("/") or (name_part.startswith("./") and " " not in name_part):
                res.reads.append(Read(name_part, listing=True))
    elif name == "edit":
        _sweagent_edit(res, action, out, res.open_file or open_file, header)
    elif name == "create":
        words = action.split()
        if len(words) > 1:
            res.edits.append(Edit(words[1], content=""))
    return res


def _window(out: str, header: re.Match[str], path: str | None = None) -> list[Read]:
    """The numbered window under a ``[File: f (N lines total)]`` header, up to a rule."""
    body = out[header.end():].split("\n-----", 1)[0]
    parsed = parse_numbered(body, "colon")
    return numbered_reads(path or header.group(1).strip(), parsed.numbers, parsed.lines)


def _sweagent_edit(res: EditorResult, action: str, out: str, target: str | None,
                   header: re.Match[str] | None) -> None:
    """``edit a:b`` + text: lines a..b replaced. Its output shows the window after the
    edit (new numbers: a read, and the line map follows it). When the linter refused the edit
    nothing changed; the agent was shown the file as it would have looked (not the
    file) and the original lines (a read)."""
    if out.lstrip().startswith(_LINT_REJECTED):
        original = out.find(_LINT_ORIGINAL)
        shown = FILE_WINDOW.search(out, original) if original >= 0 else None
        if shown is not None:
            res.reads.extend(_window(out, shown))
        return
    m = _EDIT_RANGE.match(action.strip())
    replace = _search_replace(action)
    if target and m:
        a, b, text = int(m.group(1)), int(m.group(2)), m.group(3)
        new = text.split("\n") if text else []
        res.edits.append(Edit(target, hunks=((a, b - a + 1, a, len(new)),),
                              hunk_text=(tuple(new),)))
    elif target and replace is not None:
        res.edits.append(Edit(target, old=replace[0], new=replace[1]))
    elif target:
        res.edits.append(Edit(target))
    if header:   # the window after the edit, shown to the agent
        res.snippets.extend(_window(out, header, target or res.open_file))


def _search_replace(action: str) -> tuple[str, str] | None:
    """``edit 'SEARCH' 'REPLACE'`` (SWE-agent's search/replace editing): the two texts."""
    words, problem = split_words(action)
    if problem is None and len(words) == 3 and words[0] == "edit" and words[1]:
        return words[1], words[2]
    return None


def _search_file_path(action: str, output: str) -> str | None:
    m = re.search(r'^Found \d+ matches for ".*?" in (.+?):?$', output, re.M)
    if m:
        return m.group(1).strip()
    words = split_words(action)[0]
    return words[2] if len(words) > 2 else None
