"""One tool call -> what it showed (Reads) and what it changed (Edits). Pure: no repo.

docs/metrics.md §6: a call's reads are what its *result* showed whenever the trace has
the result, and what was asked only when the trace never keeps results. A call that
never got its result (``interrupted``) showed nothing. A failed native tool call
(``is_error``, an error result) showed and changed nothing. A shell command is not
all-or-nothing: in ``a && b`` where ``b`` failed, what ``a`` printed was shown and what
``a`` edited was edited, so a failing command keeps its edits and its output decides its
reads (a read that failed printed no line of the file).

Paths stay as the trace wrote them; ``paths.PathMapper`` turns them into repo paths and
``steps.StepBuilder`` aligns the shown text with the base commit.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from typing import Any

from streameval.errors import Reason
from streameval.model import Edit, Read, ToolCall, TreeOp
from streameval.reading import editor, gemini, native
from streameval.reading.categories import categorize
from streameval.reading.ipython import ipython_call
from streameval.reading.powershell import analyze_powershell, powershell_script
from streameval.reading.shell import Printout, ShellAnalysis, analyze
from streameval.reading.toolmap import ToolMap, mapped_reads
from streameval.tools import (
    EDITOR_COMMANDS,
    SHOWS_NO_CODE,
    command_text,
    kind_of,
    parse_editor_command,
)

__all__ = ["Inference", "ReaderState", "infer"]

_LOOKS_LIKE_READ = re.compile(r"read|view|open|grep|search", re.I)
_FAILED_OUTPUT = re.compile(
    r"^\s*(?:<tool_use_error>|Error:|ERROR:|usage: |File does not exist|"
    r"EISDIR|ENOENT|No such file or directory|Invalid `|The path .* does not exist|"
    r"No replacement was performed|The user doesn't want to proceed|User rejected)",
    re.I)


@dataclass(slots=True)
class ReaderState:
    """What one run's reader remembers between calls."""

    #: the file SWE-agent 0.x has open (``goto``/``edit`` act on it)
    open_file: str | None = None
    #: exact text of files the agent wrote (``cat > fix.py <<EOF``), by absolute path
    scripts: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Inference:
    """What one call showed and changed, in the trace's own paths and current lines."""

    category: str
    reads: list[Read] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    problems: list[tuple[Reason, str]] = field(default_factory=list)
    #: outputs several printers of a shell command shared, split once the files' current
    #: text is known (``shell.settle``, by the step builder after the call's edits)
    pending: list[Printout] = field(default_factory=list)
    #: what an edit's result printed of the edited file (its snippet, new numbers): shown
    #: like a read's lines, but a file the agent made is no read outside the repository
    snippets: list[Read] = field(default_factory=list)
    #: working directory after the call (a ``cd`` inside a shell command), if known
    cwd_after: str | None = None
    #: the call failed: nothing it shows counts, nothing it edits happened
    failed: bool = False
    #: edits and git tree operations in the order a shell command made them
    #: (``ShellAnalysis.changes``); None: ``edits`` is the whole story
    changes: list[Edit | TreeOp] | None = None

    def in_order(self) -> list[Edit | TreeOp]:
        return self.changes if self.changes is not None else self.edits


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _refused(call: ToolCall) -> bool:
    """A shell call its harness refused before running it: Claude Code answers such a
    call (a sibling call failed, an input it rejects) with an error result wrapped in
    ``<tool_use_error>``, which is not what the command printed."""
    return call.is_error and isinstance(call.output, str) \
        and call.output.lstrip().startswith("<tool_use_error>")


def _failed(call: ToolCall) -> bool:
    """docs/metrics.md §6: a failed call (``is_error`` or an error result) shows nothing."""
    if call.is_error:
        return True
    out = call.output
    return isinstance(out, str) and bool(_FAILED_OUTPUT.match(out[:500]))


# --------------------------------------------------------------------------- shell


def _shell(call: ToolCall, inf: Inference, state: ReaderState) -> ShellAnalysis | None:
    """A shell command: its analysis, or None when it is no command we can read."""
    command = command_text(call.input.get("command", call.input.get("cmd")))
    patch = call.input.get("input", call.input.get("patch"))
    if command is None and isinstance(patch, str):   # Codex apply_patch as its own tool
        command = f"apply_patch <<'STREAMEVAL_PATCH'\n{patch.rstrip()}\nSTREAMEVAL_PATCH"
    if command is None:
        inf.problems.append((Reason.MISSING_FIELD, f"{call.tool} call {call.call_id} has no command"))
        return None
    stripped = command.strip()
    if stripped.split(None, 1)[:1] and stripped.split(None, 1)[0] in EDITOR_COMMANDS:
        # SWE-agent's editor run through its shell
        inf.failed = _failed(call)
        _editor(call, inf, parse_editor_command(stripped))
        return None
    refused = _refused(call)
    output = None if call.interrupted or refused else call.output
    script = powershell_script(call.input.get("command", call.input.get("cmd")), call.cwd,
                               call.tool)
    if script is not None:   # PowerShell: parsed for reading, never run
        analysis = analyze_powershell(
            script, output, call.cwd,
            lambda text, out, cwd: analyze(text, out, cwd, state.scripts))
    else:
        analysis = analyze(command, output, call.cwd, state.scripts, defer=True)
    if refused:
        # the agent's harness refused the call before running it: the command is
        # categorized by what it would have run, but it showed and changed nothing
        inf.failed = True
        return analysis
    inf.cwd_after = analysis.cwd
    inf.changes = _recorded(analysis.changes(), native.bash_edit_diff(call.structured), call.cwd)
    inf.edits.extend(c for c in inf.changes if isinstance(c, Edit))
    if not call.interrupted:
        inf.reads.extend(analysis.reads)
        inf.pending.extend(analysis.pending)
    for part in analysis.unparsed:
        inf.problems.append((Reason.UNPARSED_COMMAND, str(part)[:200]))
    return analysis


def _recorded(changes: list[Edit | TreeOp], diff: dict[str, Edit] | None,
              cwd: str | None) -> list[Edit | TreeOp]:
    """The command's changes, where the agent recorded what they did (Claude Code's
    ``bashEditDiff``): the record replaces what the command parser inferred for the
    files it names, whatever edited them (a script, ``sed -i``, a redirect). A file the
    command also put back at the base (``git checkout f && ...``) keeps the parsed
    changes, which say which lines are the base's again."""
    if not diff:
        return changes

    def absolute(p: str) -> str:
        return posixpath.normpath(p if p.startswith("/") or not cwd else posixpath.join(cwd, p))

    reverted = {absolute(c.path) for c in changes
                if isinstance(c, TreeOp) and c.kind == "revert" and c.path}
    recorded = {absolute(p): e for p, e in diff.items()}
    kept = [c for c in changes if not (isinstance(c, Edit) and absolute(c.path) in recorded
                                       and absolute(c.path) not in reverted)]
    return kept + [e for p, e in recorded.items() if p not in reverted]


def _editor(call: ToolCall, inf: Inference, inp: dict[str, Any]) -> None:
    if _str(inp.get("path")) is None:
        inf.problems.append((Reason.MISSING_FIELD, f"{call.tool} call {call.call_id} has no path"))
    res = editor.editor_call(call, inp, inf.failed)
    inf.reads.extend(res.reads)
    inf.edits.extend(res.edits)
    inf.snippets.extend(res.snippets)
    inf.category = res.category


# --------------------------------------------------------------------------- dispatch

def infer(call: ToolCall, state: ReaderState | None = None,
          tools: ToolMap | None = None) -> Inference:
    """Reads, edits, category and problems of one tool call (never raises on bad input).
    ``tools``: the user's map of tools that show code (MCP servers), asked first."""
    state = state if state is not None else ReaderState()
    if not isinstance(call.input, dict):
        call = replace(call, input={})
    tool = (call.tool or "").strip()
    rule = tools.match(tool) if tools is not None else None
    if rule is not None:
        inf = Inference(category=rule.category(), failed=_failed(call))
        if not inf.failed:
            inf.reads = mapped_reads(call, rule)
        return inf
    kind = kind_of(tool, call.input)
    inf = Inference(category="other")
    if kind in ("shell", "apply_patch"):
        analysis = _shell(call, inf, state)
        if analysis is None:
            inf.category = inf.category if inf.category != "other" else (
                "edit" if kind == "apply_patch" else "other")
            return inf
        inf.category = categorize(call, analysis.category)
        return inf
    inf.failed = _failed(call)
    if kind == "editor":
        _editor(call, inf, editor.editor_input(call))
        return inf
    if kind == "ipython":
        res = ipython_call(call, inf.failed)
        inf.reads, inf.edits, inf.category = res.reads, res.edits, res.category
        return inf
    if kind == "sweagent":
        res = editor.sweagent_call(call, state.open_file, inf.failed)
        state.open_file = res.open_file or state.open_file
        inf.reads, inf.edits, inf.snippets = res.reads, res.edits, res.snippets
        inf.category = res.category
        return inf
    result = _native(call, kind, inf)
    if result is not None and not inf.failed:
        inf.reads.extend(result.reads)
        inf.edits.extend(result.edits)
        inf.problems.extend(result.problems)
        if kind == "claude_edit":   # the snippet Claude Code 1.x printed after editing
            inf.snippets.extend(editor.edited_snippet(inf.edits[0].path if inf.edits else "",
                                                      call.output))
    elif result is None and kind == "other":
        low = tool.lower()
        if _LOOKS_LIKE_READ.search(low) and low not in SHOWS_NO_CODE \
                and not low.startswith("mcp__"):
            inf.problems.append((Reason.UNKNOWN_TOOL, f"tool {tool!r} may read files; not understood"))
    inf.category = categorize(call)
    return inf


def _native(call: ToolCall, kind: str, inf: Inference) -> native.NativeResult | None:
    if kind == "claude_read" or kind == "claude_edit":
        path = native.claude_path(call.input)
        if path is None:
            inf.problems.append((Reason.MISSING_FIELD,
                                 f"{call.tool} call {call.call_id} has no path"))
            return native.NativeResult()
        if inf.failed:
            return native.NativeResult()
        if call.interrupted and kind == "claude_edit":
            return native.NativeResult()   # never ran: the permission or the run ended first
        return native.claude_read(call, path) if kind == "claude_read" \
            else native.claude_edit(call, path)
    if kind == "grep":
        return native.claude_grep(call)
    if kind == "glob":
        return native.claude_glob(call)
    if kind == "ls":
        return native.claude_ls_call(call)
    if kind == "file_change":
        return native.file_change(call)
    if kind.startswith("gemini_"):
        return _gemini(call, kind, inf)
    return None


def _gemini(call: ToolCall, kind: str, inf: Inference) -> native.NativeResult:
    """Gemini CLI's file tools (``reading.gemini``); a failed one showed nothing."""
    res = native.NativeResult()
    if kind in ("gemini_read", "gemini_edit"):
        path = gemini.gemini_path(call.input)
        if path is None:
            res.problems.append((Reason.MISSING_FIELD,
                                 f"{call.tool} call {call.call_id} has no path"))
        elif not inf.failed and not call.interrupted:
            if kind == "gemini_read":
                res.reads = gemini.gemini_read(call, path)
            else:
                res.edits = gemini.gemini_edit(call, path)
        return res
    if inf.failed or call.interrupted:
        return res
    res.reads = {"gemini_read_many": gemini.gemini_read_many, "gemini_ls": gemini.gemini_ls,
                 "gemini_grep": gemini.gemini_grep}[kind](call)
    return res
