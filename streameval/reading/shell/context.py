"""What flows through a pipe, and the state of one command's interpretation.

A stage's output is a ``Stream``: runs of one file's lines (``Seg``), or text that a
parser reads reads from (``fmt``: grep hits, listings), or exact text (``echo``, a
heredoc), or something opaque (``python x.py``). Filters narrow segments (``head``,
``sed -n a,bp``) or mark them filtered (``grep``): the shown text then decides which
lines were seen. ``Ctx`` holds one command's working directory, the events in
execution order, and the results. A ``Program`` is what the interpreter knows of one
program: its category and, when it reads or writes files, its ``Handler``.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from streameval.model import Edit, Read, TreeOp
from streameval.reading.shell.syntax import Simple, Word

__all__ = ["ShellAnalysis", "Seg", "Stream", "Ctx", "EMPTY", "WHOLE_TREE", "MAX_DEPTH",
           "Handler", "Rule", "Program", "path_of", "whole", "split_opts", "val",
           "apply_range", "filtered"]

#: the whole work tree, whatever the cwd (git's own pathspec for the top directory)
WHOLE_TREE = ":/"
#: nested ``bash -c`` strings deeper than this are not followed (a guard, not a rule)
MAX_DEPTH = 4


@dataclass(slots=True)
class ShellAnalysis:
    """What one shell command showed (reads) and changed (edits).

    ``cwd`` is the working directory after the command's top-level ``cd``s (the
    call's cwd when there were none); ``unparsed`` holds short reasons for parts
    that were seen but not interpreted.

    ``tree_ops`` are the git operations that move files back (``TreeOp``), each with
    the number of ``edits`` made before it, so ``changes()`` gives them in command
    order. A revert (``git checkout -- f``, ``git checkout HEAD f``, ``git restore
    f``) also appears in ``edits`` as a bare ``Edit(f)`` (the file changed, content
    unknown here); the inference resets that file's line mapping to the base commit,
    taking HEAD as the base (agents work on an uncommitted tree). A revert to another
    commit is only the bare edit.
    """

    reads: list[Read] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    category: str = "other"
    cwd: str | None = None
    unparsed: list[str] = field(default_factory=list)
    tree_ops: list[tuple[int, TreeOp]] = field(default_factory=list)
    #: outputs of several printers, split once the files' current text is known
    #: (``segment.Printout``; ``Any``: that module builds on this one)
    pending: list[Any] = field(default_factory=list)

    def tree_op(self, op: TreeOp) -> None:
        self.tree_ops.append((len(self.edits), op))

    @property
    def reverted(self) -> list[str]:
        """Paths put back at the base commit, in order."""
        return [op.path for _, op in self.tree_ops if op.kind == "revert" and op.path]

    @property
    def stash(self) -> list[str]:
        """``git stash`` operations ("push", "pop", "apply"), in order."""
        return [op.kind for _, op in self.tree_ops if op.kind != "revert"]

    def changes(self) -> list[Edit | TreeOp]:
        """Edits and tree operations in the order the command made them; the bare
        edit a revert is reported as stays out (the revert says more)."""
        out: list[Edit | TreeOp] = []
        ops = iter(self.tree_ops)
        pending = next(ops, None)
        reverts = {id(self.edits[at - 1]) for at, op in self.tree_ops
                   if op.kind == "revert" and at > 0}
        for i, edit in enumerate(self.edits):
            while pending is not None and pending[0] <= i:
                out.append(pending[1])
                pending = next(ops, None)
            if id(edit) not in reverts:
                out.append(edit)
        while pending is not None:
            out.append(pending[1])
            pending = next(ops, None)
        return out


@dataclass(slots=True)
class Seg:
    """A run of one file's lines flowing through a pipe, and how its text looks.

    ``start``/``end``: the window asked for, in current line numbers (None = open; a
    negative start counts from the end). ``numbered``: ``"exact"`` when each line
    carries its line number (``cat -n``, ``nl -ba``), ``"approx"`` for ``nl``'s count
    of non-blank lines. ``partial``: some unknown lines, perhaps transformed (``awk
    '{print $2}'``, ``cut``): no text to match, file level only. ``filtered``: only
    the lines a filter let through (``grep``, ``awk '/re/'``, ``sed -n '/a/,/b/p'``),
    in file order, gaps unknown. ``grep_numbers``: each printed line starts with
    ``grep -n``'s number: ``"lines"`` when it counts the file's lines from the window's
    first line, ``"strip"`` when it counts something else (an earlier filter) and is
    only taken off the text. ``base``: the text
    of the base commit (``git show HEAD:f``), not of the current file. ``loose``: the
    text may be changed on the way (``sed s/x/y/``) or mixed with a script's own prints.
    """

    path: str
    raw: str
    start: int | None = None
    end: int | None = None
    numbered: str | None = None
    partial: bool = False
    filtered: bool = False
    grep_numbers: str | None = None
    base: bool = False
    loose: bool = False
    #: a file proposed by a script's code (``open("f")``): only its output can say
    guess: bool = False
    #: ``grep -A/-B/-C`` filtered it: groups of consecutive lines, ``--`` between them
    groups: bool = False
    #: lines the program prints before this file's (``head``'s ``==> f <==`` header)
    lead: tuple[str, ...] = ()
    #: ``filtered`` by grep(s) whose pattern says which lines it keeps (by their text)
    keep: Callable[[str], bool] | None = None
    #: ``filtered`` by a ``sed -n`` program of ``p`` commands (scripts, -E) that says
    #: which lines it prints (``sed.printed_lines``)
    program: tuple[tuple[str, ...], bool] | None = None
    #: then a window over the lines the filter let through (``| tail -n +50``, ``| head``):
    #: (a, b) as ``_narrow`` takes them
    then: tuple[int | None, int | None] | None = None


@dataclass(slots=True)
class Stream:
    """What flows out of a stage: file lines, or text that a parser can read reads from."""

    segs: list[Seg] = field(default_factory=list)
    fmt: Callable[[list[str]], list[Read]] | None = None
    fallback: list[Read] = field(default_factory=list)
    text: str | None = None         # exact text when known (heredoc, echo)
    #: which output lines ``fmt`` could have printed, when several commands share one
    #: output: 2 = only this tool prints such a line (``ls -l``, ``grep -n``), 1 = could be
    #: its line, 0 = not its line (see ``attribute``)
    shape: Callable[[str], int] | None = None
    opaque: bool = False            # prints something we cannot interpret (git log, python)
    nlines: int | None = None       # how many lines an opaque printer prints, when known
    #: could this output line be this printer's? (a grep's: its pattern selects it)
    accepts: Callable[[str], bool] | None = None
    #: the program's status says it printed something (grep: 0 when a line matched), so
    #: ``a || b`` ran ``b`` only when ``a`` printed nothing
    prints_if_ok: bool = False

    def prints(self) -> bool:
        return bool(self.segs or self.fmt or self.opaque or self.fallback or self.text)


EMPTY = Stream()


@dataclass
class Ctx:
    """One command line being interpreted (nested contexts for subshells, ``bash -c``)."""

    cwd: str | None
    output: str | None
    lines: list[str] | None
    errors: Counter[str]           # error path -> how many error lines name it
    res: ShellAnalysis
    cats: list[str] = field(default_factory=list)
    prefix: str | None = None       # from cd, relative to the call's cwd (or absolute)
    lost: bool = False              # a cd we could not follow
    moved: bool = False
    depth: int = 0
    #: edits made by git checkout/restore (shared with nested contexts): not the agent's
    vcs_edits: list[Edit] = field(default_factory=list)
    #: in execution order: ("write", raw, path) for redirect targets, ("show", stream) for
    #: what a visible pipe printed; settled against the output once the command is read
    events: list[tuple[Any, ...]] = field(default_factory=list)
    #: exact text of files written so far in the run (``cat > fix.py <<EOF``), by path:
    #: what a later ``python fix.py`` runs
    scripts: dict[str, str] = field(default_factory=dict)

    #: the interpreter itself, for handlers whose program runs a script string
    #: (``bash -c``): ``run_source(ctx, script)``
    run_source: Callable[[Ctx, str], None] | None = None

    def sub(self, depth: int) -> Ctx:
        """A nested context (subshell, ``bash -c``): own cd state, shared results."""
        return Ctx(self.cwd, self.output, self.lines, self.errors, self.res, self.cats,
                   self.prefix, self.lost, False, depth, vcs_edits=self.vcs_edits,
                   events=self.events, scripts=self.scripts, run_source=self.run_source)

    def join(self, p: str) -> str | None:
        if p.startswith("/") or p.startswith("~"):
            return p
        if self.lost:
            return None
        if not self.prefix:
            return p
        return posixpath.normpath(posixpath.join(self.prefix, p))

    def absolute(self, p: str) -> str:
        """A joined path made absolute with the call's cwd, when that is known."""
        if p.startswith("/") or not self.cwd:
            return p
        return posixpath.normpath(posixpath.join(self.cwd, p))

    def note(self, why: str) -> None:
        if why not in self.res.unparsed:
            self.res.unparsed.append(why)


#: one stage of a pipe: what the program prints (its ``Stream``); edits go to ``ctx.res``
Handler = Callable[[Ctx, list[Word], Simple, Stream | None], Stream]
#: a program's category from its arguments (``sed -i``, ``git grep``, ``npm test``); the
#: third argument categorizes another command line (``npx eslint .``, ``uv run pytest``)
Rule = Callable[[str, list[str], Callable[[list[str]], str]], str]


@dataclass(frozen=True, slots=True)
class Program:
    """What streameval knows of one shell program, stated once (``shell.programs``).

    ``category``: the category of a command running it (docs/metrics.md §7), unless its
    ``rule`` says otherwise from the arguments. ``handler``: how it reads or writes files
    (None: it prints something we do not read, or nothing). ``silent``: prints nothing
    on success, so no output line is its. ``lines``: how many lines it prints, when that
    is fixed (``pwd``).
    """

    category: str
    handler: Handler | None = None
    rule: Rule | None = None
    silent: bool = False
    lines: int | None = None


def path_of(ctx: Ctx, w: Word, what: str = "path") -> str | None:
    """A file operand as a path, or None (with a reason) when it cannot be one."""
    if not w.static:
        ctx.note(f"dynamic {what}: {w.text[:60]}")
        return None
    if w.glob:
        ctx.note(f"glob {what}: {w.text[:60]}")
        return None
    if not w.text or w.text == "-":
        return None
    p = ctx.join(w.text)
    if p is None:
        ctx.note(f"relative {what} after an unknown cd: {w.text[:60]}")
    return p


def whole(ctx: Ctx, operands: list[Word], numbered: str | None = None) -> Stream:
    """Each operand file, whole."""
    segs = []
    for w in operands:
        p = path_of(ctx, w)
        if p is not None:
            segs.append(Seg(p, w.text, numbered=numbered))
    return Stream(segs=segs)


def split_opts(argv: list[Word], with_value: set[str], short_value: str = "",
               ) -> tuple[list[str], list[tuple[str, str]], list[Word]]:
    """Split argv[1:] into flags (short letters / long names), valued options, operands."""
    flags: list[str] = []
    valued: list[tuple[str, str]] = []
    operands: list[Word] = []
    args = argv[1:]
    i = 0
    while i < len(args):
        w = args[i]
        a = w.text
        i += 1
        if a == "--":
            operands.extend(args[i:])
            break
        if a.startswith("--") and w.static:
            name, eq, value = a.partition("=")
            if eq:
                valued.append((name, value))
            elif name in with_value and i < len(args):
                valued.append((name, args[i].text))
                i += 1
            else:
                flags.append(name)
        elif a.startswith("-") and len(a) > 1 and w.static and not a[1].isdecimal():
            for j, ch in enumerate(a[1:], 1):
                if ch in short_value:
                    value = a[j + 1:]
                    if not value and i < len(args):
                        value = args[i].text
                        i += 1
                    valued.append(("-" + ch, value))
                    break
                flags.append(ch)
        elif a.startswith("-") and len(a) > 1 and a[1:].isdecimal():
            valued.append(("-NUM", a[1:]))
        else:
            operands.append(w)
    return flags, valued, operands


def val(valued: list[tuple[str, str]], *names: str) -> str | None:
    found = None
    for k, v in valued:
        if k in names:
            found = v
    return found


# --------------------------------------------------------------------------- ranges


def _narrow(seg: Seg, a: int | None, b: int | None) -> Seg:
    """Lines a..b (1-based, None = open, a<0 = from the end) of the run ``seg``."""
    if seg.filtered and (seg.keep is not None or seg.program is not None) \
            and not seg.grep_numbers and seg.then is None:
        # a filter whose lines are computable, then a window over what it let through
        return replace(seg, then=(a, b))
    if seg.partial or seg.filtered or seg.grep_numbers:
        return seg   # what survived is in the output; the text says which lines
    s = seg.start or 1
    if s < 0:
        return filtered(seg)
    if a is not None and a < 0:
        if seg.end is None:
            return Seg(seg.path, seg.raw, a, None, seg.numbered, base=seg.base)
        return Seg(seg.path, seg.raw, max(s, seg.end + a + 1), seg.end, seg.numbered,
                   base=seg.base)
    start = s + (a or 1) - 1
    end = None if b is None else s + b - 1
    if seg.end is not None:
        end = seg.end if end is None else min(end, seg.end)
    return Seg(seg.path, seg.raw, start, end, seg.numbered, base=seg.base)


def filtered(seg: Seg, loose: bool = False) -> Seg:
    """``seg`` after a filter that keeps some of its lines (in order); ``loose`` when
    the filter may also change them."""
    return Seg(seg.path, seg.raw, seg.start, seg.end, seg.numbered, seg.partial, True,
               seg.grep_numbers, seg.base, seg.loose or loose, seg.guess)


def apply_range(ctx: Ctx, stream: Stream, ranges: list[tuple[int | None, int | None]] | None,
                what: str) -> Stream:
    """Narrow a content stream to line ranges; ``None`` ranges = lines picked by a rule
    we do not follow (a regex address): the lines are the ones the text shows."""
    if not stream.segs:
        return Stream(fmt=stream.fmt, fallback=stream.fallback, shape=stream.shape) \
            if stream.fmt else EMPTY
    if ranges is None:
        return Stream(segs=[filtered(s) for s in stream.segs])
    if len(stream.segs) > 1:
        ctx.note(f"{what} over several files: which lines of which file is not known")
        return Stream(segs=[filtered(s) for s in stream.segs])
    seg = stream.segs[0]
    return Stream(segs=[_narrow(seg, a, b) for a, b in ranges])
