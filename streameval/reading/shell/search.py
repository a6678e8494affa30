"""Programs that search or list: grep/rg/ag/git grep, find/fd, ls, tree, and xargs grep.

A search over files prints hits whose text is kept (``output.grep``); a grep reading a
pipe narrows what flows through it; a listing names files (file level only).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from streameval.model import Read, Shown
from streameval.reading.output import grep as grep_out
from streameval.reading.output.listing import (
    ls_parser,
    ls_shape,
    path_shape,
    paths_parser,
    tree_parser,
    tree_shape,
)
from streameval.reading.output.numbered import numbered_read
from streameval.reading.shell.context import (
    EMPTY,
    Ctx,
    Program,
    Seg,
    Stream,
    filtered,
    path_of,
    split_opts,
    val,
)
from streameval.reading.shell.patterns import grep_matcher
from streameval.reading.shell.syntax import Simple, Word

__all__ = ["PROGRAMS", "grep", "grep_reads"]

_GREP_VALUES = {
    "grep": ({"--regexp", "--file", "--max-count", "--after-context", "--before-context",
              "--context", "--include", "--exclude", "--exclude-dir", "--label", "--binary-files",
              "--devices", "--directories", "--exclude-from", "--group-separator"}, "efmABCdD"),
    "rg": ({"--regexp", "--file", "--glob", "--iglob", "--type", "--type-not", "--max-count",
            "--max-depth", "--replace", "--after-context", "--before-context", "--context",
            "--type-add", "--max-columns", "--sort", "--sortr", "--colors", "--pre",
            "--pre-glob", "--ignore-file", "--max-filesize", "--threads", "--encoding",
            "--context-separator", "--path-separator", "--field-match-separator"},
           "efgmMrABCtTjEd"),
    "ag": ({"--ignore", "--ignore-dir", "--file-search-regex", "--depth", "--max-count",
            "--after", "--before", "--context", "--pager"}, "ABCGgmp"),
}


#: options that print context lines around each match (``-NUM`` is ``-C NUM``)
_CONTEXT_OPTS = {"-A", "-B", "-C", "--after-context", "--before-context", "--context", "-NUM",
                 "--after", "--before"}


def grep_reads(hits: grep_out.GrepHits, join: Callable[[str], str | None]) -> list[Read]:
    """One read per file: numbered hits by their numbers (each with its text);
    unnumbered ones as text in file order with unknown gaps between them."""
    reads: list[Read] = []
    for raw, rows in hits.lines.items():
        path = join(raw)
        if path is None:
            continue
        at = hits.cuts.get(raw, ())
        if at:   # a harness cut the output: each side alone, its edge line a piece
            bounds = [0, *at, len(rows)]
            for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
                reads.extend(_hit_reads(path, rows[a:b], None, k > 0, k < len(at)))
            continue
        runs = hits.runs.get(raw) if hits.runs is not None else None
        reads.extend(_hit_reads(path, rows, runs, False, False))
    return reads


def _hit_reads(path: str, rows: list[tuple[int | None, str]], runs: list[int] | None,
               cut_head: bool, cut_tail: bool) -> list[Read]:
    if rows:
        numbers, texts = zip(*rows)
        if None not in numbers:   # every hit numbered (the usual case): no loop of ours
            return [numbered_read(path, numbers, texts, cut_head=cut_head, cut_tail=cut_tail)]
    numbered = [(n, t) for n, t in rows if n is not None]
    if numbered:
        return [numbered_read(path, [n for n, _ in numbered], [t for _, t in numbered],
                              cut_head=cut_head, cut_tail=cut_tail)]
    if rows:
        return [Read(path, shown=Shown(tuple(t for _, t in rows), gaps=True,
                                       runs=tuple(runs) if runs else None,
                                       cut_head=cut_head, cut_tail=cut_tail))]
    return []


def grep(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None,
         tool: str = "grep", from_stdin_files: bool = False) -> Stream:
    longs, shorts = _GREP_VALUES.get(tool, _GREP_VALUES["grep"])
    flags, valued, ops = split_opts(argv, longs, shorts)
    fl = set(flags)
    has_pattern_opt = any(k in ("-e", "-f", "--regexp", "--file") for k, _ in valued)
    list_files = "--files" in fl or (tool == "ag" and val(valued, "-g") is not None)
    pattern = ops[0] if not has_pattern_opt and ops and not list_files else None
    if pattern is not None:
        ops = ops[1:]
    if list_files:
        return Stream(fmt=paths_parser(ctx.join), shape=path_shape)
    files_only = bool(fl & {"l", "L", "--files-with-matches", "--files-without-match"})
    count = bool(fl & {"c", "--count", "--count-matches"})
    numbered = bool(fl & {"n", "--line-number", "--vimgrep"}) and not (fl & {"N"})
    context = any(k in _CONTEXT_OPTS for k, _ in valued)
    if "q" in fl or "--quiet" in fl:
        return EMPTY
    # which lines it prints (no context, no -o/-c/-l): those its pattern selects
    keep = None if context or files_only or count or "o" in fl else \
        _matcher(argv[0].text, tool, fl, valued, pattern)
    if not ops and not from_stdin_files and stdin is not None and tool != "git-grep" \
            and not fl & {"r", "R", "--recursive"}:
        return _filter(stdin, numbered, files_only or count, "o" in fl, context, keep)
    out = _search(ctx, tool, ops, fl, numbered, files_only, count, from_stdin_files, context)
    if out.fmt is not None and not (files_only or count):
        out.accepts = keep
        out.prints_if_ok = True     # grep's status: 0 when it printed a line
    return out


def _matcher(name: str, tool: str, fl: set[str], valued: list[tuple[str, str]],
             pattern: Word | None) -> Callable[[str], bool] | None:
    """The line predicate of a grep's pattern(s) (``patterns.grep_matcher``)."""
    if any(k in ("-f", "--file") for k, _ in valued) or tool not in ("grep", "git-grep", "rg"):
        return None
    pats = [v for k, v in valued if k in ("-e", "--regexp")]
    if pattern is not None:
        if not pattern.static:
            return None
        pats.append(pattern.text)
    base = posixpath.basename(name)
    return grep_matcher(
        pats, extended=tool == "rg" or base == "egrep" or bool(fl & {"E", "P",
                                                                   "--extended-regexp"}),
        fixed=base == "fgrep" or bool(fl & {"F", "--fixed-strings"}),
        icase=bool(fl & {"i", "--ignore-case"}), word=bool(fl & {"w", "--word-regexp"}),
        whole_line=bool(fl & {"x", "--line-regexp"}), invert=bool(fl & {"v", "--invert-match"}))


def _filter(stdin: Stream, numbered: bool, summary: bool, only: bool,
            context: bool = False, keep: Callable[[str], bool] | None = None) -> Stream:
    """grep reading a pipe: narrows what flows, keeps how its text looks (with context,
    groups of consecutive lines between ``--`` separators)."""
    if stdin.segs:
        out = []
        for s in stdin.segs:
            if summary or only:
                out.append(Seg(s.path, s.raw, s.start, s.end, partial=True, base=s.base))
                continue
            seg = filtered(s)
            # grep -A over a file's run of lines (a window, or a sed -n range, whose lines
            # are consecutive): each group is consecutive lines of the file
            seg.groups = context and not s.partial and (not s.filtered or s.program is not None)
            # lines it keeps of a text whose lines are known: computable (segment)
            seg.keep = None if keep is None or (s.filtered and s.keep is None) or \
                s.then is not None else \
                keep if s.keep is None else _both(s.keep, keep)
            if numbered:
                counts_lines = not (s.filtered or s.partial or s.grep_numbers or s.numbered)
                seg.grep_numbers = "lines" if counts_lines else "strip"
            out.append(seg)
        return Stream(segs=out)
    if stdin.fmt is not None and not (numbered or summary or only):
        return stdin
    return EMPTY


def _both(a: Callable[[str], bool], b: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda text: a(text) and b(text)


def _search(ctx: Ctx, tool: str, ops: list[Word], fl: set[str], numbered: bool,
            files_only: bool, count: bool, from_stdin_files: bool,
            context: bool = False) -> Stream:
    recursive = tool != "grep" or bool(fl & {"r", "R", "--recursive", "--dereference-recursive"})
    paths = [(w.text, path_of(ctx, w, "grep operand")) for w in ops]
    no_name = bool(fl & {"h", "--no-filename"}) if tool == "grep" else "I" in fl
    single = None
    if len(ops) == 1 and not from_stdin_files and not (fl & {"H", "--with-filename"}) \
            and not _looks_dir(ops[0].text, recursive) and not ops[0].glob:
        single = ops[0].text
    if no_name and single is None:
        ctx.note(f"{tool} without file names: lines not attributable")
        return EMPTY
    fallback = []
    for raw, p in paths:
        if p is None or raw in (".", "..") or raw.endswith("/") or _looks_dir(raw, recursive):
            continue
        fallback.append(Read(p, listing=True))
    shape = grep_out.GrepShape(tool, numbered, single, context)
    join = ctx.join if single is None else (lambda raw: paths[0][1] if raw == single
                                            else ctx.join(raw))
    if files_only:
        return Stream(fmt=paths_parser(ctx.join), fallback=fallback, shape=path_shape)
    if count:
        return Stream(fmt=_count_parser(single and paths[0][1], ctx.join), fallback=fallback,
                      shape=lambda ln: 1 if _count_line(ln) else 0)
    return Stream(fmt=lambda lines: grep_reads(grep_out.parse_grep(lines, shape), join),
                  fallback=fallback, shape=_hit_shape(shape))


def _count_line(line: str) -> tuple[str | None, int] | None:
    s = line.strip()
    head, sep, tail = s.rpartition(":")
    if tail.isdecimal():
        return (head if sep else None), int(tail)
    return None


def _count_parser(single: str | None, join: Callable[[str], str | None]):
    def parse(lines: list[str]) -> list[Read]:
        files = []
        for ln in lines:
            found = _count_line(ln)
            if found is None or found[1] == 0:
                continue
            p = single if found[0] is None else join(found[0])
            if p:
                files.append(Read(p, listing=True))
        return files
    return parse


def _hit_shape(shape: grep_out.GrepShape) -> Callable[[str], int]:
    """How surely an output line is this search's (for output shared by commands)."""
    def fits(line: str) -> int:
        if shape.numbered:
            if grep_out.looks_like_hit(line, shape.single is not None):
                return 2
            return 1 if line == "--" else 0
        return 1 if ":" in line or shape.single else 0
    return fits


def _looks_dir(raw: str, recursive: bool) -> bool:
    """A recursive search operand without an extension is most likely a directory."""
    return raw in (".", "..") or raw.endswith("/") or (
        recursive and "." not in posixpath.basename(raw))


def _rg(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    return grep(ctx, argv, st, stdin, "rg")


def _ag(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    return grep(ctx, argv, st, stdin, "ag")


def _find(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    texts = [w.text for w in argv]
    for flag in ("-exec", "-execdir", "-ok"):
        if flag in texts:
            inner = argv[texts.index(flag) + 1:]
            inner = [w for w in inner if w.text not in ("{}", ";", "+", "\\;")]
            if inner and posixpath.basename(inner[0].text) in ("grep", "egrep", "rg"):
                inner = inner + [Word("--with-filename" if inner[0].text != "rg" else "-H")]
                return grep(ctx, inner, st, None, "grep" if "grep" in inner[0].text else "rg",
                            from_stdin_files=True)
            ctx.note(f"find {flag} not interpreted")
            return EMPTY
    if "-delete" in texts:
        ctx.note("find -delete: deleted files unknown")
    return Stream(fmt=paths_parser(ctx.join), shape=path_shape)


def _fd(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    return Stream(fmt=paths_parser(ctx.join), shape=path_shape)


def _ls(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, _, ops = split_opts(argv, {"--format", "--sort", "--time-style", "--color", "--ignore",
                                  "--hide", "--width", "--block-size", "--quoting-style"}, "ITw")
    good = [(w.text, p) for w in ops if (p := path_of(ctx, w)) is not None]
    return Stream(fmt=ls_parser([r for r, _ in good], ctx.join),
                  fallback=[Read(p, listing=True) for _, p in good], shape=ls_shape)


def _tree(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, _, ops = split_opts(argv, {"--filelimit", "--charset", "--sort", "--timefmt"}, "LIPHTo")
    root = ops[0].text if ops and ops[0].static else "."
    return Stream(fmt=tree_parser(root, ctx.join), shape=tree_shape)


def xargs(ctx: Ctx, name: str, argv: list[Word], st: Simple) -> Stream:
    """``... | xargs grep -n foo``: grep's files come from the pipe, so the output says."""
    if name in ("grep", "egrep", "fgrep", "rg", "ag"):
        tool = {"egrep": "grep", "fgrep": "grep"}.get(name, name)
        return grep(ctx, argv, st, None, tool, from_stdin_files=True)
    if name == "sed" and any(w.text.startswith("-i") for w in argv):
        ctx.note("xargs sed -i: edited files unknown")
    else:
        ctx.note(f"xargs {name}: files come from the pipe")
    return EMPTY


#: the programs this module reads, with their category (``shell.programs`` holds them all)
PROGRAMS = {
    **dict.fromkeys(("grep", "egrep", "fgrep"), Program("search", grep)),
    "rg": Program("search", _rg), **dict.fromkeys(("ag", "ack"), Program("search", _ag)),
    "find": Program("search", _find), **dict.fromkeys(("fd", "fdfind"), Program("search", _fd)),
    "ls": Program("search", _ls), "tree": Program("search", _tree),
}
