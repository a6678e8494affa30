"""One tool call -> what it showed (Reads) and what it changed (Edits). Pure: no repo.

METRICS.md section 6: a call's reads are what its *result* showed whenever the trace has
the result (numbered lines in the output, Claude's ``toolUseResult.file``), and what
was asked only when it does not. Failed calls read and edit nothing. Paths stay as the
trace wrote them; ``paths.PathMapper`` turns them into repo paths and
``steps.StepBuilder`` clamps the lines and maps them to the base commit.

Tools are recognised by the trace's own names (INTERFACES.md): Claude Code ``Read``,
``Grep``, ``Glob``, ``LS``, ``Edit``, ``MultiEdit``, ``Write``, ``Notebook*``, ``Bash``;
Codex ``shell``/``command_execution``/``file_change``/``apply_patch``; mini-swe-agent
and SWE-agent ``bash``; SWE-agent ``str_replace_editor``; OpenHands ``run``, ``read``,
``edit``. Shell commands go to ``shell.analyze``; categories to ``categories``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import Reason
from ..intervals import merge_ranges
from ..model import CATEGORIES, Edit, Read, ToolCall
from .categories import categorize
from .shell import ShellAnalysis, analyze

__all__ = ["Inference", "infer", "numbered_runs", "CLAUDE_READ_LIMIT"]

#: Claude Code's Read shows at most this many lines when no ``limit`` is given
CLAUDE_READ_LIMIT = 2000

_SHELL_TOOLS = frozenset({
    "bash", "shell", "command_execution", "run", "execute_bash", "exec_command",
    "local_shell", "local_shell_call", "terminal", "cmd_run", "run_command",
})
_EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "editor",
                           "file_editor"})
_EDITOR_PREFIXES = tuple(_EDITOR_TOOLS)
_LOOKS_LIKE_READ = re.compile(r"read|view|open|grep|search", re.I)
#: tools known to show no repo code although their names look like reads
_NOT_READS = frozenset({"todoread", "websearch", "webfetch", "bashoutput", "read_mcp_resource",
                        "listmcpresourcestool", "readmcpresourcetool", "tasklist"})

# "   12→text" (Claude), "    12\ttext" (cat -n, str_replace_editor), "    12 text"
# (SWE-agent's abbreviated view of a large file). Anchored at line start.
_NUMBERED = re.compile(r"^[ \t]*(\d{1,9})(?:→|\t)", re.M)
_NUMBERED_LOOSE = re.compile(r"^[ \t]*(\d{1,9})(?:→|\t| )", re.M)

_FAILED_OUTPUT = re.compile(
    r"^\s*(?:<tool_use_error>|Error:|ERROR:|usage: |File does not exist|"
    r"EISDIR|ENOENT|No such file or directory|Invalid `|The path .* does not exist|"
    r"No replacement was performed|The user doesn't want to proceed|User rejected)",
    re.I)


@dataclass(slots=True)
class Inference:
    """What one call showed and changed, in the trace's own paths and current lines."""

    category: str
    reads: list[Read] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    problems: list[tuple[Reason, str]] = field(default_factory=list)
    #: working directory after the call (a ``cd`` inside a shell command), if known
    cwd_after: str | None = None
    #: the call failed: nothing it shows counts, nothing it edits happened
    failed: bool = False
    #: files put back to the base commit (``git checkout -- f``, ``git restore f``)
    reverted: list[str] = field(default_factory=list)
    #: ``git stash`` operations ("push", "pop", "apply"), in order (``ShellAnalysis.stash``)
    stash: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,9}\s*", value):
        return int(value)
    return None


def _failed(call: ToolCall, shell: bool = False) -> bool:
    """METRICS.md section 6: a failed call (``is_error`` or an error result) shows nothing.

    Shell output is the program's own text, so only ``is_error`` counts there; which
    files a command failed on (``cat: x: No such file``) is for ``shell.analyze``.
    """
    if call.is_error:
        return True
    if shell:
        return False
    out = call.output
    return isinstance(out, str) and bool(_FAILED_OUTPUT.match(out[:500]))


def _target(call: ToolCall, inf: Inference, path: str | None) -> str | None:
    """The file a read/edit tool names, or None when there is nothing to record: no
    path (a counted problem, even for a failed call) or a failed call (METRICS.md 6)."""
    if path is None:
        inf.problems.append((Reason.MISSING_FIELD, f"{call.tool} call {call.call_id} has no path"))
        return None
    return None if inf.failed else path


def numbered_runs(output: str, loose: bool = False) -> list[tuple[int, int]]:
    """Contiguous runs of the line numbers an output shows (``cat -n`` / Claude style).

    Runs rather than first..last: SWE-agent's abbreviated view of a large file skips
    bodies, so only the lines really shown count.
    """
    pattern = _NUMBERED_LOOSE if loose else _NUMBERED
    found = pattern.findall(output)
    if not found:
        return []
    numbers = list(map(int, found))
    first, last = numbers[0], numbers[-1]
    if 0 < first <= last and last - first + 1 == len(numbers) \
            and numbers == list(range(first, last + 1)):
        return [(first, last)]  # the common case: a window of a file, in order
    return _runs(numbers)


def _runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Positive line numbers -> sorted runs of consecutive numbers."""
    return merge_ranges((n, n) for n in numbers if n > 0)


def _reads_from_runs(path: str, runs: list[tuple[int, int]]) -> list[Read]:
    """The lines shown, or the file at file level when no line of it could be placed."""
    return [Read(path, a, b) for a, b in runs] if runs else [Read(path, listing=True)]


def _category(call: ToolCall, shell: ShellAnalysis | None, default: str) -> str:
    """``categories.categorize`` decides; ``default`` if it trips or says nothing."""
    try:
        found = categorize(call, shell)
    except (AttributeError, TypeError, ValueError):
        found = None
    return found if found in CATEGORIES else default


# --------------------------------------------------------------------------- Claude Read


def _claude_path(call: ToolCall, inf: Inference) -> str | None:
    inp = call.input
    path = _str(inp.get("file_path")) or _str(inp.get("notebook_path")) or _str(inp.get("path"))
    return _target(call, inf, path)


def _claude_read(call: ToolCall, inf: Inference) -> None:
    inp = call.input
    path = _claude_path(call, inf)
    if path is None:
        return
    if call.tool.lower() == "notebookread" or path.endswith(".ipynb"):
        inf.reads.append(Read(path))
        return
    if _claude_past_end(call):
        inf.problems.append((Reason.BAD_LINE_RANGE,
                             f"{path}: offset {inp.get('offset')} is past the end of the file"))
        return
    shown = _claude_shown(call)
    if shown is not None:
        inf.reads.extend(_reads_from_runs(path, shown))
        return
    offset = _int(inp.get("offset"))
    limit = _int(inp.get("limit"))
    start = offset if offset and offset > 0 else 1
    count = limit if limit and limit > 0 else CLAUDE_READ_LIMIT
    inf.reads.append(Read(path, start, start + count - 1))


_PAST_END = "shorter than the provided offset"


def _claude_file(call: ToolCall) -> dict | None:
    """``toolUseResult.file`` of a Claude Read: which lines the result really showed."""
    st = call.structured
    file = st.get("file") if isinstance(st, dict) else None
    return file if isinstance(file, dict) else None


def _claude_past_end(call: ToolCall) -> bool:
    """An ``offset`` past the file's last line: Claude shows only a warning, no line of
    the file (``file.numLines`` 0 from a ``startLine`` after ``totalLines``). That reads
    nothing (METRICS.md 6); an empty file (``startLine`` 1) is still a file shown."""
    file = _claude_file(call)
    if file is not None:
        start, num = _int(file.get("startLine")), _int(file.get("numLines"))
        total = _int(file.get("totalLines"))
        if num == 0 and start is not None and start > 1 and (total is None or start > total):
            return True
    return isinstance(call.output, str) and _PAST_END in call.output[:400] \
        and not _NUMBERED.search(call.output)


def _claude_shown(call: ToolCall) -> list[tuple[int, int]] | None:
    """Lines the result showed: ``toolUseResult.file`` first, else the numbered output.

    None = the trace does not say (asked range applies); ``[]`` = a file with no lines
    shown (empty, or offset past its end).
    """
    file = _claude_file(call)
    if file is not None:
        start, num = _int(file.get("startLine")), _int(file.get("numLines"))
        if start is not None and num is not None:
            return [(max(start, 1), max(start, 1) + num - 1)] if num > 0 else []
    if isinstance(call.output, str):
        runs = numbered_runs(call.output)
        if runs:
            return runs
        if call.output.strip():
            return []
    return None


# --------------------------------------------------------------------------- Grep / Glob / LS

_GREP_NOISE = re.compile(r"^(?:Found \d+ (?:files?|lines?|matches)|No (?:files|matches) found|"
                         r"\[Showing results|\(Results are truncated|--$)")
_COUNT_TAIL = re.compile(r":\d+$")              # Grep count mode: ``path:N``
_LS_ENTRY = re.compile(r"^(\s*)- (.+)$")         # Claude's LS tree: ``  - name``


def _output_lines(call: ToolCall) -> list[str]:
    if not isinstance(call.output, str):
        return []
    return [ln for ln in call.output.splitlines() if ln.strip() and not _GREP_NOISE.match(ln)]


def _listed_files(call: ToolCall) -> list[str]:
    st = call.structured
    names = st.get("filenames") if isinstance(st, dict) else None
    if isinstance(names, list) and names:
        return [n for n in names if isinstance(n, str) and n]
    return [ln.strip() for ln in _output_lines(call)]


def _grep(call: ToolCall, inf: Inference) -> None:
    if inf.failed:
        return
    inp = call.input
    st = call.structured if isinstance(call.structured, dict) else {}
    mode = _str(st.get("mode")) or _str(inp.get("output_mode")) or "files_with_matches"
    if mode == "content":
        inf.reads.extend(grep_content_reads(call.output or "", _str(inp.get("path"))))
    elif mode == "count":
        for ln in _output_lines(call):
            name = ln.rsplit(":", 1)[0] if _COUNT_TAIL.search(ln) else None
            if name:
                inf.reads.append(Read(name, listing=True))
            elif _str(inp.get("path")):
                inf.reads.append(Read(inp["path"], listing=True))
                break
    else:
        inf.reads.extend(Read(p, listing=True) for p in _listed_files(call))


_MATCH_LINE = re.compile(r"^(.+?):(\d+):")
_SINGLE_LINE = re.compile(r"^(\d+)[:-]")
_DASH_NUM = re.compile(r"-(\d+)-")


def grep_content_reads(output: str, single_path: str | None) -> list[Read]:
    """Lines shown by ``grep -n``-style content output, per file, as runs.

    Multi-file output is ``path:N:text`` (matches) and ``path-N-text`` (``-A/-B/-C``
    context); a single file searched gives ``N:text`` / ``N-text``. Context lines are
    matched against the file names seen on match lines, since names may contain ``-``.
    Output without numbers shows lines we cannot place: the files count, not the lines.
    """
    lines = [ln for ln in output.splitlines() if ln and not _GREP_NOISE.match(ln)]
    # Which layout? A single file's ``12:x = 'a:3:b'`` also looks like ``path:N:``;
    # the majority of lines decides, and a named single path wins ties.
    multi_votes = sum(1 for ln in lines if _path_match(ln))
    single_votes = sum(1 for ln in lines if _SINGLE_LINE.match(ln))
    multi = multi_votes > single_votes or (multi_votes > 0 and not single_path)
    per_file: dict[str, set[int]] = {}
    if multi:
        names: list[str] = []
        for ln in lines:
            m = _path_match(ln)
            if m:
                if m.group(1) not in per_file:
                    names.append(m.group(1))
                per_file.setdefault(m.group(1), set()).add(int(m.group(2)))
        for ln in lines:
            hit = _context_hit(ln, names)
            if hit:
                per_file.setdefault(hit[0], set()).add(hit[1])
    elif single_path:
        nums = {int(m.group(1)) for ln in lines if (m := _SINGLE_LINE.match(ln))}
        if nums or lines:
            per_file[single_path] = nums
    reads: list[Read] = []
    for path, nums in per_file.items():
        reads.extend(_reads_from_runs(path, _runs(nums)))
    if not per_file:
        reads.extend(_unnumbered_files(lines))
    return reads


def _path_match(line: str) -> re.Match[str] | None:
    """``path:N:`` where ``path`` looks like a path (not a number, no white space)."""
    m = _MATCH_LINE.match(line)
    if m is None:
        return None
    name = m.group(1)
    if name.isdigit() or len(name.split()) != 1 or name != name.strip():
        return None
    return m


def _context_hit(line: str, names: list[str]) -> tuple[str, int] | None:
    for name in names:
        if line.startswith(name) and len(line) > len(name) and line[len(name)] == "-":
            m = _DASH_NUM.match(line, len(name))
            if m:
                return name, int(m.group(1))
    return None


def _unnumbered_files(lines: list[str]) -> list[Read]:
    """``path:text`` lines without numbers: the files were shown, lines unknown."""
    seen: dict[str, None] = {}
    for ln in lines:
        head = ln.split(":", 1)[0]
        if ":" in ln and head and " " not in head and ("/" in head or "." in head):
            seen[head] = None
    return [Read(p, listing=True) for p in seen]


def _glob(call: ToolCall, inf: Inference) -> None:
    if not inf.failed:
        inf.reads.extend(Read(p, listing=True) for p in _listed_files(call))


def _ls(call: ToolCall, inf: Inference) -> None:
    """Claude's old ``LS`` tool prints a tree: ``- /dir/`` then indented ``- name``."""
    if inf.failed or not isinstance(call.output, str):
        return
    stack: list[tuple[int, str]] = []
    for ln in call.output.splitlines():
        m = _LS_ENTRY.match(ln)
        if not m:
            continue
        depth, name = len(m.group(1)), m.group(2).strip()
        while stack and stack[-1][0] >= depth:
            stack.pop()
        full = name if not stack or name.startswith("/") else stack[-1][1].rstrip("/") + "/" + name
        if name.endswith("/"):
            stack.append((depth, full))
        else:
            inf.reads.append(Read(full, listing=True))


# --------------------------------------------------------------------------- Claude edits


def _claude_edit(call: ToolCall, inf: Inference) -> None:
    inp = call.input
    path = _claude_path(call, inf)
    if path is None:
        return
    tool = call.tool.lower()
    if tool == "write":
        content = inp.get("content")
        inf.edits.append(Edit(path, content=content) if isinstance(content, str) else Edit(path))
    elif tool == "multiedit":
        edits = inp.get("edits")
        for e in edits if isinstance(edits, list) else [None]:
            if isinstance(e, dict) and isinstance(e.get("old_string"), str):
                inf.edits.append(Edit(path, old=e["old_string"], new=_text(e.get("new_string")),
                                      replace_all=bool(e.get("replace_all"))))
            else:
                inf.edits.append(Edit(path))
    elif tool == "edit" and isinstance(inp.get("old_string"), str):
        inf.edits.append(Edit(path, old=inp["old_string"], new=_text(inp.get("new_string")),
                              replace_all=bool(inp.get("replace_all")),
                              hunks=structured_hunks(call.structured)))
    else:   # NotebookEdit, or an Edit without its text
        inf.edits.append(Edit(path))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def structured_hunks(structured: Any) -> tuple[tuple[int, int, int, int], ...] | None:
    """Claude's ``structuredPatch`` -> hunks of changed lines only.

    Each hunk carries ~3 context lines on each side; they are cut away (and a hunk is
    split at inner context) so that only lines the agent changed are located by number.
    Unified-diff convention: a hunk with 0 old lines starts *after* ``old_start``.
    """
    patch = structured.get("structuredPatch") if isinstance(structured, dict) else None
    if not isinstance(patch, list) or not patch:
        return None
    out: list[tuple[int, int, int, int]] = []
    for h in patch:
        if not isinstance(h, dict):
            return None
        os_, on, ns, nn = (_int(h.get(k)) for k in ("oldStart", "oldLines", "newStart", "newLines"))
        if None in (os_, on, ns, nn):
            return None
        lines = h.get("lines")
        if isinstance(lines, list) and all(isinstance(x, str) for x in lines):
            out.extend(_split_hunk(os_, ns, lines))
        else:
            out.append((os_, on, ns, nn))
    return tuple(out) or None


def _split_hunk(old_start: int, new_start: int, lines: list[str]) -> list[tuple[int, int, int, int]]:
    out = []
    o, n = old_start, new_start        # next old / new line number
    run: list[int] | None = None       # [old_first, old_count, new_first, new_count]
    for ln in lines:
        tag = ln[:1]
        if tag in ("-", "+"):
            if run is None:
                run = [o, 0, n, 0]
            if tag == "-":
                run[1] += 1
                o += 1
            else:
                run[3] += 1
                n += 1
            continue
        if tag == "\\":
            continue
        if run is not None:
            out.append(_unified(run))
            run = None
        o += 1
        n += 1
    if run is not None:
        out.append(_unified(run))
    return out


def _unified(run: list[int]) -> tuple[int, int, int, int]:
    of, oc, nf, nc = run
    return (of if oc else of - 1, oc, nf if nc else nf - 1, nc)


# --------------------------------------------------------------------------- editors


def parse_editor_command(command: str) -> dict[str, Any] | None:
    """``str_replace_editor view /p --view_range 1 20`` (a SWE-agent action) -> input dict."""
    if not command.lstrip().startswith(_EDITOR_PREFIXES):
        return None  # the usual case: a shell command, not worth a shlex.split
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if len(argv) < 3 or argv[0] not in _EDITOR_TOOLS:
        return None
    out: dict[str, Any] = {"command": argv[1], "path": argv[2]}
    i = 3
    while i < len(argv):
        key = argv[i][2:] if argv[i].startswith("--") else None
        if key == "view_range" and i + 2 < len(argv):
            out[key] = [argv[i + 1], argv[i + 2]]
            i += 3
        elif key and i + 1 < len(argv):
            out[key] = argv[i + 1]
            i += 2
        else:
            out.setdefault("unparsed", []).append(argv[i])
            i += 1
    return out


def _editor(call: ToolCall, inf: Inference, inp: dict[str, Any] | None = None) -> None:
    """SWE-agent ``str_replace_editor`` / OpenHands ``read``/``edit`` (``oh_aci``)."""
    inp = call.input if inp is None else inp
    path = _target(call, inf, _str(inp.get("path")))
    if path is None:
        return
    command = _str(inp.get("command")) or ("view" if call.tool.lower() == "read" else None)
    if command == "view":
        _editor_view(call, inf, path, inp)
    elif command == "create":
        text = inp.get("file_text")
        inf.edits.append(Edit(path, content=text) if isinstance(text, str) else Edit(path))
    elif command == "str_replace" and isinstance(inp.get("old_str"), str):
        inf.edits.append(Edit(path, old=inp["old_str"], new=_text(inp.get("new_str"))))
    elif command == "insert" and _int(inp.get("insert_line")) is not None:
        inf.edits.append(Edit(path, insert_line=_int(inp.get("insert_line")),
                              new=_text(inp.get("new_str"))))
    else:   # undo_edit, OpenHands LLM-based edit, anything we cannot replay
        inf.edits.append(Edit(path))


def _editor_view(call: ToolCall, inf: Inference, path: str, inp: dict[str, Any]) -> None:
    out = call.output
    if isinstance(out, str) and "files and directories up to" in out[:300]:
        for ln in out.splitlines()[1:]:
            name = ln.strip()
            if name and not name.startswith(("<", "Here's")):
                inf.reads.append(Read(name, listing=True))
        return
    if isinstance(out, str):
        inf.reads.extend(_reads_from_runs(path, numbered_runs(out, loose=True)))
        return
    start, end = _view_range(inp.get("view_range"))
    if start is None and _int(inp.get("start")) and _int(inp.get("start")) > 0:
        start, end = _int(inp.get("start")), _int(inp.get("end"))
    inf.reads.append(Read(path, start, end if end is None or end > 0 else None))


def _view_range(value: Any) -> tuple[int | None, int | None]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        a, b = _int(value[0]), _int(value[1])
        if a is not None and b is not None:
            return max(a, 1), (None if b == -1 else b)
    return None, None


# --------------------------------------------------------------------------- shell


def command_text(value: Any) -> str | None:
    """A shell command from a string or an argv list (Codex ``["bash", "-lc", "..."]``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(x, str) for x in value):
        if len(value) >= 3 and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh") \
                and value[1] in ("-c", "-lc", "-ic"):
            return value[2]
        return shlex.join(value)
    return None


def _bare(edit: Edit) -> bool:
    return (edit.old is None and edit.new is None and edit.content is None
            and edit.hunks is None and edit.insert_line is None)


_ELIDED_SPLIT = re.compile(r"\n\[\.\.\. \d+ characters elided \.\.\.\]\n")


def _elided(call: ToolCall, reads: list[Read]) -> list[Read]:
    """A whole-file read whose output the harness cut (mini-swe-agent keeps a head and
    a tail of long outputs) showed only those lines: the first lines of the head and
    the last lines of the tail, not the whole file (what was shown wins)."""
    if not (call.structured and call.structured.get("elided_chars") and call.output):
        return reads
    whole = [r for r in reads if not r.listing and r.start is None and r.end is None]
    if len(whole) != 1 or len(reads) != 1:
        return reads
    parts = _ELIDED_SPLIT.split(call.output, maxsplit=1)
    if len(parts) != 2:
        return reads
    head, tail = parts
    path = whole[0].path
    out = []
    # a line cut mid-way at either edge was still (partly) shown: it counts
    n_head = head.count("\n") + 1 if head else 0
    if n_head:
        out.append(Read(path, 1, n_head))
    tail = tail.rstrip("\n")
    n_tail = tail.count("\n") + 1 if tail else 0
    if n_tail:
        out.append(Read(path, -n_tail, None))
    return out or [Read(path, listing=True)]


def _shell(call: ToolCall, inf: Inference) -> tuple[ShellAnalysis | None, str | None]:
    """Shell tools: ``(analysis, category)``; the category when it is decided here."""
    command = command_text(call.input.get("command", call.input.get("cmd")))
    patch = call.input.get("input", call.input.get("patch"))
    if command is None and isinstance(patch, str):   # Codex apply_patch as its own tool
        command = f"apply_patch <<'STREAMEVAL_PATCH'\n{patch.rstrip()}\nSTREAMEVAL_PATCH"
    if command is None:
        inf.problems.append((Reason.MISSING_FIELD, f"{call.tool} call {call.call_id} has no command"))
        return None, "other"
    editor = parse_editor_command(command.strip())
    if editor is not None:     # SWE-agent's editor run through the shell tool
        inf.failed = _failed(call)
        _editor(call, inf, editor)
        return None, "read" if editor.get("command") == "view" else "edit"
    analysis = analyze(command, call.output, call.cwd)
    inf.cwd_after = analysis.cwd
    if not inf.failed:   # the category still counts for a failed command; its reads do not
        inf.reads.extend(_elided(call, analysis.reads))
        reverted = set(analysis.reverted)
        inf.reverted.extend(analysis.reverted)
        inf.stash.extend(analysis.stash)
        # a revert is reported by the shell as a bare Edit too; here it is a reset
        inf.edits.extend(e for e in analysis.edits if not (e.path in reverted and _bare(e)))
        for part in analysis.unparsed:
            inf.problems.append((Reason.UNPARSED_COMMAND, str(part)[:200]))
    return analysis, None


# --------------------------------------------------------------------------- Codex file_change


def _file_change(call: ToolCall, inf: Inference) -> None:
    """Codex ``file_change {changes: [{path, kind}]}``: files edited, text not given."""
    if inf.failed:
        return
    changes = call.input.get("changes")
    for change in changes if isinstance(changes, list) else ():
        if isinstance(change, dict) and _str(change.get("path")):
            inf.edits.append(Edit(change["path"]))


# --------------------------------------------------------------------------- dispatch

_DEFAULT_CATEGORY = {
    "read": "read", "notebookread": "read", "grep": "search", "glob": "search", "ls": "search",
    "edit": "edit", "multiedit": "edit", "write": "edit", "notebookedit": "edit",
    "file_change": "edit", "apply_patch": "edit",
}


def infer(call: ToolCall) -> Inference:
    """Reads, edits, category and problems of one tool call (never raises on bad input)."""
    tool = (call.tool or "").strip()
    low = tool.lower()
    is_shell = low in _SHELL_TOOLS or low == "apply_patch"
    inf = Inference(category="other", failed=_failed(call, shell=is_shell))
    if not isinstance(call.input, dict):
        call = replace(call, input={})
    shell = None
    default = _DEFAULT_CATEGORY.get(low, "other")
    if low in ("read", "notebookread") and ("file_path" in call.input or "notebook_path" in call.input):
        _claude_read(call, inf)
    elif low in ("read", "edit") and "path" in call.input:       # OpenHands oh_aci
        _editor(call, inf)
        default = "read" if inf.reads or low == "read" else "edit"
    elif low in _EDITOR_TOOLS:
        _editor(call, inf)
        default = "read" if _str(call.input.get("command")) == "view" else "edit"
    elif low == "grep":
        _grep(call, inf)
    elif low == "glob":
        _glob(call, inf)
    elif low == "ls":
        _ls(call, inf)
    elif low in ("edit", "multiedit", "write", "notebookedit"):
        _claude_edit(call, inf)
    elif low == "file_change":
        _file_change(call, inf)
    elif is_shell:
        shell, decided = _shell(call, inf)
        if decided is not None or shell is None:
            inf.category = decided or ("edit" if low == "apply_patch" else "other")
            return inf
        default = shell.category if shell.category in CATEGORIES else "other"
    elif _LOOKS_LIKE_READ.search(low) and low not in _NOT_READS and not low.startswith("mcp__"):
        inf.problems.append((Reason.UNKNOWN_TOOL, f"tool {tool!r} may read files; not understood"))
    inf.category = _category(call, shell, default)
    return inf
