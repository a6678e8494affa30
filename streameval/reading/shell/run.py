"""Interpreting one command line: pipes run stage by stage, then the output is settled.

Every stage's handler says what it prints (a ``Stream``) and what it changes (edits on
``ctx.res``). Visible pipes are remembered in execution order; once the whole command is
read, the output is split between them (``attribute``), error lines are handed to the
commands that failed, and each file stream's share of the text becomes its ``Shown``.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from typing import Any

from streameval.model import Read, Shown
from streameval.reading import categories
from streameval.reading.output.errors import ERROR_LINE, error_paths
from streameval.reading.output.harness import cut_parts, output_lines
from streameval.reading.output.numbered import numbered_read, parse_numbered
from streameval.reading.shell import git as git_mod
from streameval.reading.shell import search, writers
from streameval.reading.shell.attribute import attribute, one_line
from streameval.reading.shell.context import EMPTY, Ctx, Seg, ShellAnalysis, Stream, path_of
from streameval.reading.shell.programs import command_category, program
from streameval.reading.shell.scan import scan_commands, scanned_category, unwrap
from streameval.reading.shell.segment import Lookup, Part, Printout
from streameval.reading.shell.syntax import Group, Simple, parse
from streameval.tools import wrapped_script

__all__ = ["analyze"]

_GREP_PREFIX = re.compile(r"^(\d+)[:-]")
#: a message a reading program writes to stderr (``/usr/bin/grep: ...: cannot execute``)
_COMPLAINT = re.compile(r"^(?:\S*/)?(?:grep|egrep|fgrep|rg|sed|cat|head|tail|nl|awk|gawk|ls"
                        r"|find|bash|sh|wc|sort|xargs): ")
_NL_PREFIX = re.compile(r"^ *\d*\t")
_NUMBERED_LINE = re.compile(r"^ *\d{1,9}\t")


def _run_simple(ctx: Ctx, st: Simple, stdin: Stream | None) -> Stream:
    argv, via_xargs = unwrap(st.argv)
    if not argv:
        writers.redirect_io(ctx, st, EMPTY)
        return EMPTY
    name = posixpath.basename(argv[0].text) if argv[0].static else argv[0].text
    words = [w.text for w in argv]
    if wrapped_script([name, *words[1:]]) is None:
        ctx.res.programs.append(argv[0].text)   # `bash -lc '...'` only wraps the inner ones
    stdin = _stdin_of(ctx, st, stdin)
    writers.note_writes(ctx, st.redirects)
    before, reverts = len(ctx.res.edits), len(ctx.vcs_edits)
    entry = program(name)
    if via_xargs:
        out = search.xargs(ctx, name, argv, st)
    elif entry is not None and entry.handler is not None:
        out = entry.handler(ctx, argv, st, stdin)
    else:
        out = EMPTY
    if not out.prints() and not (entry is not None and entry.silent):
        out = Stream(opaque=True, nlines=one_line(name, words[1:]))
    writers.redirect_io(ctx, st, out)
    # a revert (`git checkout -- f`) stays version control in the categories: it undoes
    # the agent's edits rather than making one
    edited = len(ctx.res.edits) - before > len(ctx.vcs_edits) - reverts
    if edited:
        ctx.cats.append("edit")
    elif name == "cat" and writers.stdout_hidden(st.redirects) and all(
            w.text.startswith("-") for w in argv[1:]):
        ctx.cats.append("other")   # `cat > /tmp/x.py <<EOF`: writes a scratch file, reads none
    elif name != "tee":   # tee into a log or /tmp changed nothing worth calling an edit
        ctx.cats.append(command_category(words))
    return EMPTY if writers.stdout_hidden(st.redirects) else out


def _stdin_of(ctx: Ctx, st: Simple, stdin: Stream | None) -> Stream | None:
    for r in st.redirects:
        if r.op == "<" and r.target is not None:
            p = path_of(ctx, r.target, "input file")
            if p is None:
                return EMPTY
            known = ctx.scripts.get(ctx.absolute(p))   # a file the run wrote: its text
            return Stream(segs=[Seg(p, r.target.text)], text=known)
    if st.heredoc is not None:
        return Stream(text=st.heredoc if st.heredoc_exact else None)
    return stdin


def _run_pipe(ctx: Ctx, stages: list[Any], shown: bool) -> None:
    if len(stages) == 1 and isinstance(stages[0], Simple) and stages[0].argv \
            and stages[0].argv[0].text in ("cd", "pushd"):
        ctx.res.programs.append(stages[0].argv[0].text)
        ctx.cats.append("other")
        args = [w for w in stages[0].argv[1:] if not w.text.startswith("-") or w.text == "-"]
        git_mod.cd(ctx, args[0] if args else None)
        return
    stream: Stream | None = None
    for i, st in enumerate(stages):
        last = i == len(stages) - 1
        if isinstance(st, Group):
            inner = ctx if not st.subshell else ctx.sub(ctx.depth)
            writers.note_writes(ctx, st.redirects)
            visible = shown and last and not writers.stdout_hidden(st.redirects)
            for pipe in st.body:
                _run_pipe(inner, pipe, visible)
            if writers.redirect_io(ctx, Simple([], st.redirects), EMPTY):
                ctx.cats.append("edit")
            stream = None
        else:
            n = len(ctx.cats)
            stream = _run_simple(ctx, st, stream)
            if i > 0 and ctx.cats[n:] and ctx.cats[-1] in ("read", "search"):
                del ctx.cats[n:]   # a filter (| head, | grep) does not make it a read
    if shown and stream is not None:
        ctx.events.append(("show", stream, bool(stages) and stages[0].or_else))


def _run_source(ctx: Ctx, source: str) -> None:
    pipes, broken = parse(source)
    if broken:
        ctx.note("shell syntax error: reads and edits not taken")
        for argv, target in scan_commands(source):
            ctx.res.programs.append(argv[0])
            ctx.cats.append(scanned_category(argv, target))
        return
    for pipe in pipes:
        _run_pipe(ctx, pipe, True)


# --------------------------------------------------------------------------- settling


def _spend(errors: Counter[str], *names: str | None) -> bool:
    """Use up one error line naming any of ``names``; True if there was one."""
    for n in names:
        if n is not None and errors[n] > 0:
            errors[n] -= 1
            return True
    return False


def _settle(ctx: Ctx) -> list[Read]:
    """Reads of the visible pipes, each given its share of the output lines.

    Error lines are handed out in execution order: the n-th "No such file" line for a
    path belongs to the n-th command that used the path, so ``echo x > d/f; mkdir d;
    ... > d/f; cat d/f`` keeps the read (the failing first redirect used the error up).
    """
    shows = [e[1] for e in ctx.events if e[0] == "show"]
    printers = [s for s in shows if s.prints()]
    legacy = _by_look(ctx, shows)
    if ctx.lines is None or not (len(printers) > 1 or any(
            len(s.segs) > 1 or (s.segs and (s.segs[0].keep or s.segs[0].program
                                            or s.segs[0].lead))
            for s in printers)):
        return legacy
    # several printers: each gets its own lines once the files' text is known
    # a program's complaints on stderr are no part's lines
    lines = [ln for ln in ctx.lines if not (ERROR_LINE.match(ln) or _COMPLAINT.match(ln))]
    ctx.res.pending.append(Printout(lines, _parts(ctx), legacy))
    return []


def _parts(ctx: Ctx) -> list[Part]:
    """The printers of the command in execution order, as parts of its output; a file
    an error line says could not be read printed nothing."""
    errors = Counter(ctx.errors)
    parts: list[Part] = []
    for ev in ctx.events:
        if ev[0] == "write":
            _spend(errors, ev[1], ev[2])
            continue
        stream: Stream = ev[1]
        if not stream.prints():
            continue
        failed: set[str] = set()
        segs = []
        for s in stream.segs:
            if s.path in failed or _spend(errors, s.raw, s.path):
                failed.add(s.path)
            else:
                segs.append(s)
        mine = _stream_parts(stream, segs, errors)
        if mine and len(ev) > 2 and ev[2]:
            mine[0].or_else = True    # `a || b`: b ran only if a failed
        parts.extend(mine)
    for k, part in enumerate(parts):   # cat -n / nl -ba number several files as one
        if part.follows is not None:
            part.follows = k - part.follows
    return parts


def _stream_parts(stream: Stream, segs: list[Seg], errors: Counter[str]) -> list[Part]:
    parts: list[Part] = []
    if any(s.partial for s in segs):
        # lines made of the files' text (fields, counts): printed, nothing to align
        parts.append(Part("other", fallback=[Read(s.path, listing=True) for s in segs
                                             if s.partial]))
        segs = [s for s in segs if not s.partial]
    if len(segs) > 1 and all(s.path == segs[0].path and s.start and s.start > 0
                             and s.end and not s.lead for s in segs):
        return parts + [Part("file", segs=segs)]   # one program's windows, in file order
    if segs:
        before: int | None = None     # the stream's previous file part (its distance)
        for s in segs:
            if s.lead:   # `==> f <==` headers of head/tail over several files
                parts.append(Part("text", text=list(s.lead)))
            follows = len(parts) - before if before is not None and \
                s.numbered == "exact" else None
            parts.append(Part("file", segs=[s], follows=follows))
            before = len(parts) - 1
        return parts
    if stream.segs:
        return parts       # every file failed
    if stream.text is not None:
        text = stream.text.split("\n")
        return [Part("text", text=text[:-1] if text[-1] == "" else text)]
    fallback = [r for r in stream.fallback if not _spend(errors, r.path)]
    if stream.fmt is not None:
        return [Part("parsed", parse=stream.fmt, fallback=fallback, accepts=stream.accepts,
                     prints_if_ok=stream.prints_if_ok)]
    return [Part("other", fallback=fallback)]


def _by_look(ctx: Ctx, shows: list[Stream]) -> list[Read]:
    """The reads when each printer finds its own lines by how they look (one printer:
    all of them)."""
    blocks = attribute(ctx.lines, shows, ctx) if ctx.lines is not None else None
    errors = Counter(ctx.errors)
    reads: list[Read] = []
    k = 0
    for ev in ctx.events:
        if ev[0] == "write":
            _spend(errors, ev[1], ev[2])
            continue
        reads.extend(_materialize(ev[1], blocks[k] if blocks is not None else None, errors))
        k += 1
    return reads


def _materialize(stream: Stream, block: tuple[list[str], bool] | None,
                 errors: Counter[str]) -> list[Read]:
    reads: list[Read] = []
    failed: set[str] = set()    # one error line fails every range of that file here
    for s in stream.segs:
        if s.path in failed or _spend(errors, s.raw, s.path):
            failed.add(s.path)
            continue
        if s.partial:
            reads.append(Read(s.path, listing=True))
        elif block is not None and len(stream.segs) == 1:
            reads.extend(shown_reads(s, block[0], block[1]))
        elif block is not None:
            continue   # several runs in one text: shared out below
        elif s.guess:
            continue   # a file a script may print: without its output, nothing says so
        elif s.filtered or s.loose:
            reads.append(Read(s.path, listing=True))   # some lines, which ones unknown
        else:
            # no output kept, or several files in one stream: the window as asked
            reads.append(Read(s.path, s.start, s.end))
    if block is not None and len(stream.segs) > 1:
        live = [s for s in stream.segs if s.path not in failed and not s.partial]
        reads.extend(_shared_text(live, block[0], block[1]))
    if stream.fmt is not None and block is not None:
        reads.extend(stream.fmt(block[0]))
    else:
        reads.extend(r for r in stream.fallback if not _spend(errors, r.path))
    return reads


def shown_reads(seg: Seg, lines: list[str], shared: bool = False, cut_head: bool = False,
                cut_tail: bool = False) -> list[Read]:
    """The reads one file's printed text makes: one per part a harness cut apart, each
    with the window it proposes and the text that decides. ``cut_head``/``cut_tail``:
    the lines are a piece of a longer output that a harness cut just before (after)."""
    parts = cut_parts(lines)
    out: list[Read] = []
    for k, part in enumerate(parts):
        head, tail = k > 0 or cut_head, k < len(parts) - 1 or cut_tail
        if k < len(parts) - 1 and part and part[-1] == "":
            part = part[:-1]   # the cut fell at a line start: that line was not shown
        numbers, text = _text_of(seg, part)
        if numbers is not None:
            if numbers:       # a numbered output with no numbered line showed nothing
                if seg.numbered == "exact":
                    numbers, text = _cut_numbered(part, numbers, text, head, tail)
                out.append(numbered_read(seg.path, numbers, text, seg.base,
                                         seg.loose or shared, head, tail))
            continue
        runs = None
        if seg.groups:   # grep -A/-B/-C: runs of consecutive lines, `--` between them
            text, runs = _groups(text)
        shown = Shown(tuple(text), None, gaps=seg.filtered, cut_head=head, cut_tail=tail,
                      base=seg.base, loose=seg.loose or shared, runs=runs)
        start, end = seg.start, seg.end
        if seg.filtered:
            start = end = None   # the text alone says where
        elif head:
            start = (end - len(text) + 1) if end is not None else -len(text)
        elif tail:
            first = start if start is not None and start > 0 else 1
            start, end = first, first + len(text) - 1
        out.append(Read(seg.path, start, end, shown=shown))
    return out


def _cut_numbered(part: list[str], numbers: list[int], text: list[str], head: bool,
                  tail: bool) -> tuple[list[int], list[str]]:
    """A harness cut through a numbered output (``cat -n``, ``nl -ba``): the piece of a
    line after the cut has lost its number (it is the line before the first numbered
    one), and a piece before the cut that is only the start of a number is the line
    after the last numbered one, none of its text shown. Both were shown (touched)."""
    if head and part and _NUMBERED_LINE.match(part[0]) is None and numbers[0] > 1:
        numbers, text = [numbers[0] - 1, *numbers], [part[0], *text]
    piece = part[-1].strip() if tail and part else None
    if piece is not None and _NUMBERED_LINE.match(part[-1]) is None and \
            (not piece or piece.isdigit()):
        numbers, text = [*numbers, numbers[-1] + 1], [*text, ""]
    return numbers, text


def _groups(lines: list[str]) -> tuple[list[str], tuple[int, ...]]:
    """grep's context groups: the lines without the ``--`` between groups, and the
    length of each group."""
    text: list[str] = []
    runs: list[int] = [0]
    for ln in lines:
        if ln == "--":
            if runs[-1]:
                runs.append(0)
            continue
        text.append(ln)
        runs[-1] += 1
    return text, tuple(r for r in runs if r)


def _shared_text(segs: list[Seg], lines: list[str], shared: bool) -> list[Read]:
    """One text printed for several runs: the windows of one file in order (``sed -n
    'a,bp;c,dp' f``), or several files one after the other (``cat a b``)."""
    if not segs:
        return []
    one_file = all(s.path == segs[0].path for s in segs)
    if one_file and all(s.start and s.start > 0 and s.end and not s.filtered for s in segs):
        if segs[0].numbered == "exact":
            return shown_reads(segs[0], lines, shared)   # the numbers say where
        out: list[Read] = []
        rest = [ln for ln in lines]
        while rest and not rest[-1].strip():
            rest.pop()
        for s in segs:
            size = s.end - s.start + 1
            part, rest = rest[:size], rest[size:]
            if part:
                out.extend(shown_reads(s, part, shared))
        return out
    # several files (or windows we cannot size): each finds its own lines in the text
    out = []
    for s in segs:
        seg = Seg(s.path, s.raw, None, None, None, filtered=False, base=s.base, loose=True)
        text = _text_of(s, lines)[1] if s.numbered == "approx" else lines
        out.extend(shown_reads(seg, _strip_numbers(text) if s.numbered == "exact" else text))
    return out


def _strip_numbers(lines: list[str]) -> list[str]:
    """``cat -n a b`` numbers the files as one stream: only the text is the files'."""
    return [_NUMBERED_LINE.sub("", ln, count=1) for ln in lines]


def _text_of(seg: Seg, lines: list[str]) -> tuple[list[int] | None, list[str]]:
    """(current numbers or None, file text) of the lines a stream printed."""
    numbers: list[int] | None = None
    if seg.grep_numbers:
        rel: list[int] = []
        body: list[str] = []
        for ln in lines:
            m = _GREP_PREFIX.match(ln)
            if m is None:
                continue   # a `--` group separator, or another command's line
            rel.append(int(m.group(1)))
            body.append(ln[m.end():])
        lines = body
        first = seg.start if seg.start is not None and seg.start > 0 else 1
        if seg.grep_numbers == "lines" and not seg.numbered:
            numbers = [first + r - 1 for r in rel]
    if seg.numbered == "exact":
        parsed = parse_numbered("\n".join(lines))
        if parsed.numbers or not lines:
            return parsed.numbers, parsed.lines
        # numbers asked for but none printed (a wrapper took them off): plain text
    if seg.numbered == "approx":
        return None, [_NL_PREFIX.sub("", ln, count=1) for ln in lines]
    if numbers is None and lines and _mostly_numbered(lines):
        # a file printed with numbers by something we took for plain text (an alias,
        # a pager): the numbers are the file's, the text follows them
        parsed = parse_numbered("\n".join(lines))
        return parsed.numbers, parsed.lines
    return numbers, lines


def _mostly_numbered(lines: list[str]) -> bool:
    head = lines[:50]
    if "".join(head).count("\t") < 2:
        return False   # fewer tabs than the two numbered lines it takes (counted in C)
    sample = [ln for ln in head if ln.strip()]
    if not sample:
        return False
    hits = sum(1 for ln in sample if _NUMBERED_LINE.match(ln))
    return hits >= max(2, len(sample) * 0.9)


# --------------------------------------------------------------------------- entry


def _dedupe(reads: list[Read]) -> list[Read]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for r in reads:
        key = (r.path, r.start, r.end, r.listing, r.shown)
        if r.path and key not in seen:
            seen.add(key)
            out.append(r)
    return out


def analyze(command: str, output: str | None = None, cwd: str | None = None,
            scripts: dict[str, str] | None = None, defer: bool = False) -> ShellAnalysis:
    """Reads, edits, programs and category of one shell command (docs/metrics.md sections 6-7).

    ``output`` is what the command printed, when the trace has it; ``cwd`` the
    directory it ran in. Paths in the result are as written, joined with any ``cd``
    inside the command (relative paths stay relative to ``cwd``). ``scripts`` holds the
    text of files written earlier in the run (absolute path -> text), so ``python fix.py``
    is read as the script it is; files this command writes with known text are added.
    ``defer``: an output several printers share is left in ``pending`` for the caller
    to ``settle`` once it knows the files' current text (after the command's own
    edits); without it, it is split here by what the command alone says.
    """

    res = ShellAnalysis(cwd=cwd)
    lines = output_lines(output) if output is not None else None
    errors = error_paths(lines) if lines is not None else Counter()
    ctx = Ctx(cwd, output, lines, errors, res, scripts=scripts if scripts is not None else {},
              run_source=_run_source)
    ran = command
    if output is not None and "syntax error near unexpected token" in output:
        ran = _before_syntax_error(command, output)
        shadow = Ctx(cwd, None, None, Counter(), ShellAnalysis(), ctx.cats,
                     run_source=_run_source)
        _run_source(shadow, command)
        res.programs = shadow.res.programs
        if ran is None:
            ctx.note("the shell rejected the command (syntax error)")
        else:   # what ran is interpreted whole: the rest never ran, nothing is missed
            ctx.cats.clear()
            res.programs = []
    if ran is not None:
        try:
            _run_source(ctx, ran)
            res.reads.extend(_settle(ctx))
        except RecursionError:
            res.reads, res.edits, res.tree_ops = [], [], []
            ctx.note("command nested too deeply: not interpreted")
    if not defer:
        for printout in res.pending:
            res.reads.extend(settle(printout, None))
        res.pending = []
    res.reads = _dedupe(res.reads)
    res.category = categories.most_significant(ctx.cats)
    if ctx.moved:
        res.cwd = _after_cd(ctx, cwd)
    return res


def settle(printout: Printout, lookup: Lookup | None) -> list[Read]:
    """The reads of an output several printers shared (``ShellAnalysis.pending``), each
    printer given its own lines; ``lookup`` gives a file's current lines."""
    return _dedupe(printout.settle(lookup, _piece_reads))


def _piece_reads(seg: Seg, lines: list[str], cut_head: bool, cut_tail: bool) -> list[Read]:
    return shown_reads(seg, lines, False, cut_head, cut_tail)


_SYNTAX_AT = re.compile(r"line (\d+): syntax error near unexpected token")


def _before_syntax_error(command: str, output: str) -> str | None:
    """The commands bash ran before the line its syntax error names: bash reads and runs
    a script one complete command at a time, so ``python - <<'PY' ... PY`` followed by
    a line that starts with ``&& python`` ran the script, then failed (return code 2). A
    command that the bad line would have continued did not run. None: nothing ran
    (the error is on the first line, or no message says where)."""
    m = _SYNTAX_AT.search(output)
    if m is None:
        return None
    lines = command.split("\n")
    for cut in range(min(int(m.group(1)), len(lines) + 1) - 1, 0, -1):
        head = "\n".join(lines[:cut])
        if head.strip() and not parse(head)[1]:
            return head
    return None


def _after_cd(ctx: Ctx, cwd: str | None) -> str | None:
    if ctx.lost:
        return None
    if ctx.prefix is None or ctx.prefix.startswith("/") or cwd is None:
        return ctx.prefix if ctx.prefix is not None else cwd
    return posixpath.normpath(posixpath.join(cwd, ctx.prefix))
