"""Tool calls -> Steps in repo terms: repo paths and base-commit line ranges (docs/metrics.md §6).

Per call: ``infer`` says what the result showed and what it changed; edits are
replayed on the ``EditMap`` in call order; every read's path is mapped to the repo and
its shown text is aligned with the base commit (``credit``), or, without text, its
window is clamped to what the file really had and mapped through the edits. A call is a
*step* only when it showed at least one repo file: edits, failed calls, test runs and
reads outside the repo are counted (category, problems) but are not steps.

Within one shell command, edits are applied *before* its reads are mapped: a command
that both edits and shows a file (``sed -i ... && sed -n 1,20p f``) usually shows the
result of its own edit, whose numbers are current after the edit.

Context files (AGENTS.md, CLAUDE.md, ... by ``categories.is_context_file``) are
reported whenever a call showed one, in the repo or not: ``~/.claude/CLAUDE.md`` is a
context file the agent read even though it is no repo file. A listing (``ls``) is not
a read of a context file. Repo paths are reported as such, others as written.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import repeat
from typing import TYPE_CHECKING

from streameval.errors import Reason
from streameval.intervals import merge_ranges
from streameval.model import Edit, Read, Step, ToolCall
from streameval.reading.categories import is_context_file
from streameval.reading.credit import Creditor
from streameval.reading.editmap import EditMap, MapChange
from streameval.reading.infer import Inference, ReaderState, infer
from streameval.reading.paths import PathMapper
from streameval.reading.shell import WHOLE_TREE, Lookup, Seg, settle
from streameval.reading.toolmap import ToolMap
from streameval.sources.basetext import BaseTexts

if TYPE_CHECKING:
    from streameval.sources.repo import RepoView

log = logging.getLogger(__name__)

__all__ = ["CallOutcome", "ResolvedRead", "StepBuilder"]


@dataclass(slots=True)
class ResolvedRead:
    """One read as ``inspect`` prints it: trace path, repo path, the window proposed (in
    current lines), the base lines credited, and the shown lines by outcome. (Not frozen,
    as ``Credit``: one per read, and a frozen one costs three times as much to make.)"""

    trace_path: str
    repo_path: str | None
    current: list[tuple[int, int]]
    base: list[tuple[int, int]]
    listing: bool
    aligned: int = 0
    agent: int = 0
    unaligned: int = 0
    by_text: bool = False
    #: a read naming no repo file names a directory of it (inside, not outside, it)
    directory: bool = False
    #: its text was compared with the repository's at the lines it names, in a file no
    #: recorded edit of the run had touched: what it showed is the repository's text
    #: there, or the repository is not the one the agent read (``repo_mismatch``)
    checked: bool = False
    #: checked, and the text was not there: lines the file does not have, or lines found
    #: elsewhere in it (an edit the trace never recorded, or another repository)
    mismatch: bool = False


@dataclass(slots=True)
class CallOutcome:
    """Everything one tool call contributed; ``step`` is None when it showed no repo file."""

    category: str
    step: Step | None = None
    reads: list[ResolvedRead] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    problems: list[tuple[Reason, str]] = field(default_factory=list)
    context_files: list[str] = field(default_factory=list)
    #: files a read showed changed by something the trace did not record
    found_edits: list[str] = field(default_factory=list)


#: cached: a grep over a tree names the same few files hundreds of times
_is_context_file = lru_cache(maxsize=4096)(is_context_file)
#: the scripts a run wrote that are remembered for a later ``python fix.py`` (bounded)
_MAX_SCRIPTS = 64
_MAX_SCRIPT_CHARS = 1 << 20


class StepBuilder:
    """Turns a run's tool calls, in order, into Steps (one builder per run).

    ``view`` is the repository at the base commit (None: no repo, paths are only
    normalized and lines not mapped, for ``inspect``); ``roots`` are absolute
    directories known to be the repo root in the run (``add_root`` adds more later);
    ``texts`` the process's cache of base-commit texts.
    """

    def __init__(self, view: RepoView | None = None, roots: Iterable[str] = (),
                 texts: BaseTexts | None = None, tools: ToolMap | None = None):
        self.view = view
        self.tools = tools
        self.paths = PathMapper(view, roots)
        self.edits = EditMap(view)
        self.creditor = Creditor(view, self.edits, texts)
        self.state = ReaderState()
        self._cwd: str | None = None
        #: where an earlier `cd` left the agent's persistent shell (ToolCall.cwd_persists)
        self._shell_cwd: str | None = None
        #: repository files a recorded edit of the run touched (whether it could be
        #: replayed or not): their text may differ from the repository's by the agent's doing
        self._written: set[str] = set()

    def add_root(self, root: str | None) -> None:
        self.paths.add_root(root)

    def provisional_patch(self) -> str:
        """Unified diff base -> current of the edits seen so far (docs/metrics.md §7)."""
        return self.edits.provisional_patch()

    def consume(self, call: ToolCall) -> CallOutcome:
        """One call, in trace order. Never raises on bad input: problems are returned.

        A bug met on one call's text (a parser path no test reached) must not stop the
        stream or lose the calls around it: the call credits nothing, and the problem is
        an ``internal_error`` counted like any other, with the traceback in the log.
        """
        try:
            return self._consume(call)
        except Exception as exc:  # noqa: BLE001 - the stream outlives any one call
            log.exception("internal error on call %s (%s); it credits nothing",
                          call.call_id, call.tool)
            return CallOutcome(category="other", problems=[(
                Reason.INTERNAL_ERROR,
                f"call {call.call_id} ({call.tool}): {type(exc).__name__}: {exc}"[:300])])

    def _consume(self, call: ToolCall) -> CallOutcome:
        if call.cwd_persists and self._shell_cwd and call.cwd != self._shell_cwd:
            # a `cd` in an earlier call still holds in the agent's shell
            call = replace(call, cwd=self._shell_cwd)
        if call.cwd:
            self._cwd = call.cwd
        cwd = call.cwd or self._cwd
        inf = infer(call, self.state, self.tools)
        if self.state.scripts:
            self._bound_scripts()
        if call.cwd_persists and inf.cwd_after and inf.cwd_after.startswith("/"):
            self._shell_cwd = inf.cwd_after
        out = CallOutcome(category=inf.category, problems=list(inf.problems))
        if inf.edits or inf.changes:
            self._apply_changes(inf, cwd, out)
        files: dict[str, list[tuple[int, int]]] = {}
        # a file's length, looked up when a read needs it, once per call (edits of this
        # call are already applied)
        lengths: dict[str, int] = {}
        # with no output (or an empty one) lines past the end were not shown at all; a
        # non-empty output that our file is too short for means our copy is off
        output = call.output
        printed = isinstance(output, str) and bool(output) and not output.isspace()
        reads = inf.reads
        if inf.pending:   # outputs several printers shared: split now the edits are in
            reads = list(reads)
            lookup = self._current_lines(cwd)
            for printout in inf.pending:
                reads.extend(settle(printout, lookup))
        pairs = zip(reads, repeat(False)) if not inf.snippets else \
            [*((r, True) for r in inf.snippets), *((r, False) for r in reads)]
        for read, snippet in pairs:
            resolved = self._resolve_read(read, cwd, out, lengths, printed, snippet)
            if resolved is None:
                continue   # nothing of the file was shown
            out.reads.append(resolved)
            if resolved.repo_path is not None:
                files.setdefault(resolved.repo_path, []).extend(resolved.base)
            if not read.listing and _is_context_file(read.path):
                name = resolved.repo_path or read.path
                if name not in out.context_files:
                    out.context_files.append(name)
        if files:
            out.step = Step(files=tuple(files),
                            spans={p: merge_ranges(r) for p, r in files.items() if r},
                            call_id=call.call_id,
                            timestamp=call.started_at if call.started_at is not None
                            else call.ended_at)
        return out

    def _apply_changes(self, inf: Inference, cwd: str | None, out: CallOutcome) -> None:
        """The call's edits, reverts and stashes, in the order it made them, before
        its reads.

        A file one command edited several times (``sed -i '165,206d' f && sed -i '164r
        new.py' f``) is compared as it was before the command with what it became: a
        line the command deleted and wrote again is the line it was (docs/metrics.md
        §6c), as for one edit."""
        changes = inf.in_order()
        repeated = self._edited_twice(changes, cwd)
        before = {repo: self.edits.snapshot(repo) for repo in repeated}
        for change in changes:
            if isinstance(change, Edit):
                self._apply_edit(change, cwd, out)
            elif change.kind == "revert":
                if change.path:
                    self._revert(change.path, cwd)
            elif change.kind == "push":
                self.edits.stash()
            else:
                self.edits.unstash(keep=change.kind == "apply")
        for repo, snap in before.items():
            if snap is not None:
                self.edits.rediff(repo, *snap)

    def _edited_twice(self, changes: list, cwd: str | None) -> list[str]:
        """Repository files the call edits more than once, and never puts back or
        stashes in between (then the file's state before the call is another story)."""
        if sum(isinstance(c, Edit) for c in changes) < 2 or \
                any(not isinstance(c, Edit) for c in changes):
            return []
        seen: dict[str, int] = {}
        for c in changes:
            repo, _ = self.paths.lookup(c.path, cwd, count=False)
            if repo is not None:
                seen[repo] = seen.get(repo, 0) + 1
        return [r for r, n in seen.items() if n > 1]

    def _current_lines(self, cwd: str | None) -> Lookup:
        """A file's lines as they are now (the base commit's for ``git show HEAD:f``),
        by the path a shell command gave, for splitting a shared output."""
        def lines(seg: Seg) -> list[str] | None:
            repo, _ = self.paths.lookup(seg.path, cwd, count=False)
            if repo is None or self.view is None:
                return None
            if not seg.base:
                current = self.edits.reference(repo)
                if current is not None:
                    return current[0].raw_lines
            text = self.creditor.texts.get(self.view, repo)
            return text.raw_lines if text is not None else None
        return lines

    def _bound_scripts(self) -> None:
        scripts = self.state.scripts
        while len(scripts) > _MAX_SCRIPTS or sum(map(len, scripts.values())) > _MAX_SCRIPT_CHARS:
            scripts.pop(next(iter(scripts)))

    # ------------------------------------------------------------------ pieces
    def _apply_edit(self, edit: Edit, cwd: str | None, out: CallOutcome) -> None:
        repo, _reason = self.paths.lookup(edit.path, cwd, count=False)
        if repo is None:
            return   # a new file, or outside the repo: nothing of the base to map
        self._written.add(repo)
        if self.view is not None and not self.edits.apply(repo, edit):
            out.problems.append(self.edits.last_problem or
                                (Reason.EDIT_NOT_LOCATED, f"{repo}: edit not located"))
        if repo not in out.edits:
            out.edits.append(repo)

    def _revert(self, path: str, cwd: str | None) -> None:
        """``git checkout -- f`` / ``-- dir`` / ``.`` / ``git reset --hard`` (``:/``):
        every edited file at or under the path is at its base lines again."""
        repo, _reason = self.paths.lookup(path, cwd, count=False)
        if repo is not None:
            self.edits.revert(repo)
            return
        for edited in self.edits.edited_files():
            if path == WHOLE_TREE or self._under(edited, path, cwd):
                self.edits.revert(edited)

    def _under(self, repo_path: str, directory: str, cwd: str | None) -> bool:
        """Is the repo file under ``directory`` (as the trace wrote it, from ``cwd``)?"""
        if not directory.startswith("/") and cwd:
            directory = posixpath.join(cwd, directory)
        d = posixpath.normpath(directory)
        if not d.startswith("/"):          # relative with no cwd: from the repo root
            return d == "." or repo_path.startswith(d + "/")
        roots = self.paths.roots or ((posixpath.normpath(cwd),) if cwd else ())
        return any(d == r or f"{r}/{repo_path}".startswith(d + "/") for r in roots)

    def _resolve_read(self, read: Read, cwd: str | None, out: CallOutcome,
                      lengths: dict[str, int], printed: bool = True,
                      snippet: bool = False) -> ResolvedRead | None:
        """None when the read showed nothing of the file (an empty output of a non-empty
        file, or lines wholly past its end with nothing printed)."""
        # an edit's snippet of a file the agent made is no read outside the repository
        repo, reason = self.paths.lookup(read.path, cwd, count=not snippet)
        if repo is None:
            # Listings name directories and build output too; only a read of file
            # contents outside the repo is worth a counted problem.
            if reason is not None and not read.listing and not snippet:
                out.problems.append((reason, read.path))
            directory = not read.listing and self.paths.names_directory(read.path, cwd)
            return ResolvedRead(read.path, None, [], [], read.listing, directory=directory)
        if read.listing:
            return ResolvedRead(read.path, repo, [], [], True)
        credit = self.creditor.credit(read, repo, lengths, printed, out.problems)
        if credit is None or credit.nothing:
            return None
        if credit.change:
            lengths.pop(repo, None)
        if credit.change is MapChange.FOUND:
            if repo not in out.found_edits:
                out.found_edits.append(repo)
        shown = read.shown
        checked = credit.by_text and bool(credit.current) and repo not in self._written \
            and shown is not None and not (shown.loose or shown.gaps)
        return ResolvedRead(read.path, repo, credit.current, credit.base, False,
                            credit.aligned, credit.agent, credit.unaligned, credit.by_text,
                            checked=checked, mismatch=checked and bool(
                                credit.agent or credit.change is not MapChange.NONE))
