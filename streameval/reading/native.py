"""Agents' own file tools: Claude Code's Read/Grep/Glob/LS/Edit/MultiEdit/Write/Notebook*,
Codex's ``file_change``, and the edit records agents attach to shell results.

Claude's Read shows numbered lines (``   12→text`` before Code 2.1, ``12\\ttext`` since);
its result's ``toolUseResult.file`` says which lines (``startLine``, ``numLines``). An
``offset`` past the end shows only a warning. Grep prints what ripgrep prints (files,
counts, or ``path:N:text`` content). Edits carry their text (``old_string`` /
``new_string``) and, in a result's ``structuredPatch``, the hunks they made. Since Code
2.1, a Bash result's ``bashEditDiff`` holds the hunks of every file the command changed
(``files[].hunks``, same shape; ``changedFiles`` names them all, also those whose hunks
were left out as too large): an exact record of edits no command parser can follow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from streameval import sane
from streameval.errors import Reason
from streameval.model import Edit, Read, ToolCall
from streameval.reading.diffs import changed_runs, hunk_from_lines
from streameval.reading.editor import numbered_reads
from streameval.reading.output import grep as grep_out
from streameval.reading.output.listing import claude_ls
from streameval.reading.output.numbered import has_numbered_lines, parse_numbered
from streameval.reading.shell.search import grep_reads

__all__ = ["NativeResult", "claude_read", "claude_grep", "claude_glob", "claude_ls_call",
           "claude_edit", "file_change", "structured_hunks", "bash_edit_diff",
           "CLAUDE_READ_LIMIT"]

#: Claude Code's Read shows at most this many lines when no ``limit`` is given
CLAUDE_READ_LIMIT = 2000
_PAST_END = "shorter than the provided offset"
_COUNT_TAIL = re.compile(r":\d+$")


@dataclass(slots=True)
class NativeResult:
    reads: list[Read] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    problems: list[tuple[Reason, str]] = field(default_factory=list)


def _int(value: Any) -> int | None:
    """A line number or count from a tool's record; one beyond any file (a hunk that
    claims a billion lines) is no number at all, counted (``sane.MAX_LINE``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        if abs(value) > sane.MAX_LINE:
            sane.clamped("line_number")
            return None
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,9}\s*", value):
        return int(value)
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def claude_path(inp: dict[str, Any]) -> str | None:
    return _str(inp.get("file_path")) or _str(inp.get("notebook_path")) or _str(inp.get("path"))


# --------------------------------------------------------------------------- Read


def _file_info(call: ToolCall) -> dict | None:
    """``toolUseResult.file`` of a Claude Read: which lines the result really showed."""
    st = call.structured
    file = st.get("file") if isinstance(st, dict) else None
    return file if isinstance(file, dict) else None


def _past_end(call: ToolCall) -> bool:
    """An ``offset`` past the file's last line: Claude shows only a warning, no line of
    the file (``file.numLines`` 0 from a ``startLine`` after ``totalLines``). That reads
    nothing (docs/metrics.md §6); an empty file (``startLine`` 1) is still a file shown."""
    file = _file_info(call)
    if file is not None:
        start, num = _int(file.get("startLine")), _int(file.get("numLines"))
        total = _int(file.get("totalLines"))
        if num == 0 and start is not None and start > 1 and (total is None or start > total):
            return True
    return isinstance(call.output, str) and _PAST_END in call.output[:400] \
        and not has_numbered_lines(call.output)


def claude_read(call: ToolCall, path: str) -> NativeResult:
    res = NativeResult()
    inp = call.input
    if call.tool.lower() == "notebookread" or path.endswith(".ipynb"):
        res.reads.append(Read(path))
        return res
    if _past_end(call):
        res.problems.append((Reason.BAD_LINE_RANGE,
                             f"{path}: offset {inp.get('offset')} is past the end of the file"))
        return res
    if isinstance(call.output, str):
        parsed = parse_numbered(call.output)
        end = _ends_past_last_newline(call, parsed.numbers, parsed.lines) \
            if parsed.numbers else False
        if end is True:
            # Code 2.1 numbers the empty "line" after a final newline (a 3-line file
            # shows 1-4, line 4 empty): the file has no such line
            parsed.numbers.pop()
            parsed.lines.pop()
        if parsed.numbers:
            res.reads.extend(numbered_reads(path, parsed.numbers, parsed.lines,
                                            end_piece=end is None))
            return res
        shown = _shown_by_structure(call, path)
        if shown is not None:
            res.reads.extend(shown)
        elif call.output.strip():
            res.reads.append(Read(path, listing=True))
        else:
            res.reads.append(Read(path, listing=True))   # an empty file, shown
        return res
    if call.interrupted:
        return res
    offset, limit = _int(inp.get("offset")), _int(inp.get("limit"))
    start = offset if offset and offset > 0 else 1
    count = limit if limit and limit > 0 else CLAUDE_READ_LIMIT
    res.reads.append(Read(path, start, start + count - 1))
    return res


def _ends_past_last_newline(call: ToolCall, numbers: list[int], lines: list[str]) -> bool | None:
    """Is the last numbered line the empty one after the file's final newline? None:
    it may be, and the file's text decides (``Shown.end_piece``).

    Claude Code 2.1 numbers the pieces of the file's text split at newlines, so a read
    that reaches the end of a file ending in a newline shows one more, empty, line: the
    file has no such line. The structured result says whether the read reached the
    end. Without one (sub-agent transcripts, older stream-json), an empty last line of
    a read that showed fewer lines than its limit (2,000 when none was given) may be
    that piece, or a real empty line of a file (an older Code, which does not number
    the piece): a line is the file's when the file has a line of that number."""
    if lines[-1] != "":
        return False
    file = _file_info(call)
    if file is None:
        limit = _int(call.input.get("limit"))
        return None if len(numbers) < (limit if limit and limit > 0 else CLAUDE_READ_LIMIT) \
            else False
    total, content = _int(file.get("totalLines")), file.get("content")
    return total == numbers[-1] and isinstance(content, str) and (
        content.endswith("\n") or content == "")


def _shown_by_structure(call: ToolCall, path: str) -> list[Read] | None:
    """Lines named by ``toolUseResult.file`` when the text itself is not numbered."""
    file = _file_info(call)
    if file is None:
        return None
    start, num = _int(file.get("startLine")), _int(file.get("numLines"))
    content = file.get("content")
    if start is None or num is None or num <= 0:
        return None
    start = max(start, 1)
    if isinstance(content, str):
        lines = content.split("\n")[:num]
        return numbered_reads(path, list(range(start, start + len(lines))), lines)
    return [Read(path, start, start + num - 1)]


# --------------------------------------------------------------------------- Grep / Glob / LS


def _output_lines(call: ToolCall) -> list[str]:
    if not isinstance(call.output, str):
        return []
    return [ln for ln in call.output.splitlines() if ln.strip()]


def _listed(call: ToolCall) -> list[str]:
    st = call.structured
    names = st.get("filenames") if isinstance(st, dict) else None
    if isinstance(names, list) and names:
        return [n for n in names if isinstance(n, str) and n]
    return [ln.strip() for ln in _output_lines(call)
            if not re.match(r"^(Found \d+ files?|No files found|\(Results are truncated)", ln)]


def claude_grep(call: ToolCall) -> NativeResult:
    res = NativeResult()
    inp = call.input
    st = call.structured if isinstance(call.structured, dict) else {}
    mode = _str(st.get("mode")) or _str(inp.get("output_mode")) or "files_with_matches"
    path = _str(inp.get("path"))
    if mode == "content":
        lines = _output_lines(call)
        numbered = bool(inp.get("-n")) or any(grep_out.looks_like_hit(ln, True) for ln in lines[:20])
        single = path if path and _single_file(lines, path) else None
        hits = grep_out.parse_grep(lines, grep_out.GrepShape("rg", numbered, single))
        res.reads.extend(grep_reads(hits, lambda raw: raw))
    elif mode == "count":
        for ln in _output_lines(call):
            name = ln.rsplit(":", 1)[0] if _COUNT_TAIL.search(ln) else None
            if name:
                res.reads.append(Read(name, listing=True))
            elif path:
                res.reads.append(Read(path, listing=True))
                break
    else:
        res.reads.extend(Read(p, listing=True) for p in _listed(call))
    return res


#: a Grep content line of one file: ``N:text`` / ``N-text``
_NUMBER_FIRST = re.compile(r"\d+[:-]")


def _single_file(lines: list[str], path: str) -> bool:
    """Did Grep search one file (its lines carry no path)? The majority of lines decides;
    a named single path wins ties."""
    if "." not in path.rsplit("/", 1)[-1]:
        return False    # a directory (as a rule): no line needs looking at
    numbered = [_NUMBER_FIRST.match(ln) is not None for ln in lines]
    single = sum(numbered)
    multi = sum(1 for ln, num in zip(lines, numbered)
                if not num and grep_out.looks_like_hit(ln, False))
    return single >= multi


def claude_glob(call: ToolCall) -> NativeResult:
    return NativeResult(reads=[Read(p, listing=True) for p in _listed(call)])


def claude_ls_call(call: ToolCall) -> NativeResult:
    return NativeResult(reads=claude_ls(call.output) if isinstance(call.output, str) else [])


# --------------------------------------------------------------------------- edits


def claude_edit(call: ToolCall, path: str) -> NativeResult:
    res = NativeResult()
    inp = call.input
    tool = call.tool.lower()
    if tool == "write":
        content = inp.get("content")
        res.edits.append(Edit(path, content=content) if isinstance(content, str) else Edit(path))
    elif tool == "multiedit":
        edits = inp.get("edits")
        for e in edits if isinstance(edits, list) else [None]:
            if isinstance(e, dict) and isinstance(e.get("old_string"), str):
                res.edits.append(Edit(path, old=e["old_string"], new=_text(e.get("new_string")),
                                      replace_all=bool(e.get("replace_all"))))
            else:
                res.edits.append(Edit(path))
    elif tool == "edit" and isinstance(inp.get("old_string"), str):
        st = call.structured if isinstance(call.structured, dict) else {}
        hunks, texts = structured_hunks(st.get("structuredPatch"))
        res.edits.append(Edit(path, old=inp["old_string"], new=_text(inp.get("new_string")),
                              replace_all=bool(inp.get("replace_all")), hunks=hunks,
                              hunk_text=texts))
    else:   # NotebookEdit, or an Edit without its text
        res.edits.append(Edit(path))
    return res


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def structured_hunks(patch: Any) -> tuple[tuple[tuple[int, int, int, int], ...] | None,
                                          tuple[tuple[str, ...], ...] | None]:
    """Claude's hunk list (``structuredPatch``, a ``bashEditDiff`` file's ``hunks``) ->
    (hunks of changed lines only, their new text).

    Each hunk carries ~3 context lines on each side; they are cut away (and a hunk is
    split at inner context, ``diffs.changed_runs``) so that only lines the agent changed
    are located by number. A hunk without its lines is taken by its numbers alone.
    """
    if not isinstance(patch, list) or not patch:
        return None, None
    hunks: list[tuple[int, int, int, int]] = []
    texts: list[tuple[str, ...]] | None = []
    for h in patch:
        if not isinstance(h, dict):
            return None, None
        nums = [_int(h.get(k)) for k in ("oldStart", "oldLines", "newStart", "newLines")]
        if None in nums:
            return None, None
        os_, on, ns, nn = nums
        lines = h.get("lines")
        if isinstance(lines, list) and all(isinstance(x, str) for x in lines):
            for run in changed_runs(hunk_from_lines(os_, ns, lines)):
                hunks.append((run.old_start, run.old_count, run.new_start, run.new_count))
                if texts is not None:
                    texts.append(tuple(run.new_lines))
        else:
            hunks.append((os_, on, ns, nn))
            texts = None
    return (tuple(hunks) or None), (tuple(texts) if texts else None)


def file_change(call: ToolCall) -> NativeResult:
    """Codex ``file_change {changes: [{path, kind}]}``: files edited, text not given."""
    res = NativeResult()
    changes = call.input.get("changes")
    for change in changes if isinstance(changes, list) else ():
        if isinstance(change, dict) and _str(change.get("path")):
            kind = change.get("kind")
            kind = kind.get("type") if isinstance(kind, dict) else kind
            res.edits.append(Edit(change["path"], content="") if kind == "delete"
                             else Edit(change["path"]))
    return res


def bash_edit_diff(structured: Any) -> dict[str, Edit] | None:
    """A Bash result's ``bashEditDiff``: one exact edit per file it lists with hunks, and
    a bare edit (changed, how not said) per other changed file; None when the result
    has none (older versions, or the setting off). Paths are as Claude printed them
    (absolute)."""
    diff = structured.get("bashEditDiff") if isinstance(structured, dict) else None
    if not isinstance(diff, dict):
        return None
    out: dict[str, Edit] = {}
    files = diff.get("files")
    for f in files if isinstance(files, list) else []:
        path = _str(f.get("filePath")) if isinstance(f, dict) else None
        if path is None:
            continue
        hunks, texts = structured_hunks(f.get("hunks"))
        out[path] = Edit(path, hunks=hunks, hunk_text=texts) if hunks else Edit(path)
    changed = diff.get("changedFiles")
    for path in changed if isinstance(changed, list) else []:
        if isinstance(path, str) and path.strip() and path not in out:
            out[path] = Edit(path)
    return out
