"""A shell command line -> what it showed the agent (METRICS.md section 6).

Agents read code through ``cat``, ``sed -n``, ``grep``... inside a shell tool, so the
command text is the only record of what they looked at. We parse it with
tree-sitter-bash (pipes, lists, quotes, heredocs, redirections) and interpret a small,
known set of programs. Nothing is ever executed: the parser only builds a syntax tree.

Where the call's ``output`` is known, what was shown wins over what was asked: grep
and listing outputs are parsed line by line, and files that errored ("No such file
or directory") count as not read. Error lines are matched to commands in execution
order, one line per failure, so a redirect that failed before ``mkdir`` made its
directory does not cancel a later, successful read of the same file. When several
commands print into one output, each listing/grep parser only gets the lines that are
recognizably its own (``_attribute``); when that cannot be told, fewer names are
listed rather than another command's text taken for file names.

A command we cannot interpret is categorized but never guessed into a read; the
reason goes to ``ShellAnalysis.unparsed``. Text the parser rejects (a syntax error)
gives no reads or edits; its category comes from every program a plain scan of the
text finds (``_scan_commands``), so ``cat >f <<PY ... python f`` is ``run``, not
``read`` from its first word. ``git checkout -- f`` / ``git restore f`` (a file or a
directory; ``git reset --hard`` is the whole tree, ``:/``) are reported as a bare
``Edit(f)`` plus ``ShellAnalysis.reverted``; ``git stash`` / ``stash pop`` go to
``ShellAnalysis.stash``. ``sed -i`` with one command at fixed line numbers (``12a\\
text``, ``5,7d``, ``3s/x/y/``) is an Edit with its lines; other ``sed -i`` a bare one.

Line numbers are those of the file as it is when the command runs (current numbers);
mapping them back to the base commit is the inference step's job.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..intervals import merge_ranges
from ..model import Edit, Read
from . import categories as _cat

__all__ = ["ShellAnalysis", "analyze"]

#: nested ``bash -c`` strings deeper than this are not followed (a guard, not a rule)
_MAX_DEPTH = 4


@dataclass(slots=True)
class ShellAnalysis:
    """What one shell command showed (reads) and changed (edits).

    ``cwd`` is the working directory after the command's top-level ``cd``s (the
    call's cwd when there were none); ``unparsed`` holds short reasons for parts
    that were seen but not interpreted.

    ``reverted`` names files put back as they are at HEAD (``git checkout -- f``,
    ``git checkout HEAD f``, ``git restore f``), in order. Each also appears in
    ``edits`` as a bare ``Edit(f)`` (the file changed, content unknown here); the
    inference resets that file's line mapping to the base commit, taking HEAD as the
    base (agents work on an uncommitted tree). A revert to another commit is only the
    bare edit.
    """

    reads: list[Read] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    category: str = "other"
    cwd: str | None = None
    unparsed: list[str] = field(default_factory=list)
    #: ``git stash`` ("push": the work tree is back at HEAD, edits saved) and ``git stash
    #: pop``/``apply`` ("pop"/"apply": the saved edits are back), in order
    stash: list[str] = field(default_factory=list)


# =========================================================================== syntax


@dataclass(slots=True)
class _Word:
    text: str
    static: bool = True   # no $var / $(...) inside
    glob: bool = False    # unquoted * or ?


@dataclass(slots=True)
class _Redirect:
    op: str
    fd: str | None
    target: _Word | None


@dataclass(slots=True)
class _Simple:
    argv: list[_Word]
    redirects: list[_Redirect] = field(default_factory=list)
    heredoc: str | None = None      # body text fed on stdin
    heredoc_exact: bool = True      # quoted delimiter or no expansions in the body


@dataclass(slots=True)
class _Group:
    body: list[list[Any]]           # pipes
    redirects: list[_Redirect] = field(default_factory=list)
    subshell: bool = False


@lru_cache(maxsize=1)
def _parser() -> Any:
    """One tree-sitter parser, built on first use (keeps ``import streameval`` cheap)."""
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace")


_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
           "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v", "?": "?"}
_DYNAMIC = {"simple_expansion", "expansion", "command_substitution", "process_substitution",
            "arithmetic_expansion", "brace_expression"}


def _word(node: Any) -> _Word:
    """The value of one shell word, with quotes removed."""
    t = node.type
    raw = _text(node)
    if t == "command_name" and node.named_child_count == 1:
        return _word(node.named_children[0])
    if t == "word":
        return _Word(re.sub(r"\\(.)", r"\1", raw.replace("\\\n", "")),
                     glob=bool(re.search(r"(?<!\\)[*?]", raw)))
    if t in ("number", "heredoc_start"):
        return _Word(raw)
    if t == "raw_string":
        return _Word(raw[1:-1])
    if t in ("string", "translated_string"):
        inner = raw[raw.index('"') + 1:-1] if '"' in raw else raw
        static = not any(c.type in _DYNAMIC for c in node.named_children)
        return _Word(re.sub(r'\\([\\"$`])', r"\1", inner.replace("\\\n", "")), static=static)
    if t == "ansi_c_string":
        body = raw[2:-1]
        return _Word(re.sub(r"\\(.)", lambda m: _ANSI_C.get(m.group(1), m.group(0)), body))
    if t == "concatenation":
        parts = [_word(c) for c in node.named_children]
        return _Word("".join(p.text for p in parts), all(p.static for p in parts),
                     any(p.glob for p in parts))
    return _Word(raw, static=False)


_REDIRECTS = {"file_redirect", "heredoc_redirect", "herestring_redirect"}
_COMPOUND = {"compound_statement", "for_statement", "c_style_for_statement", "while_statement",
             "if_statement", "elif_clause", "else_clause", "case_statement", "case_item",
             "do_group"}
_SKIP = {"function_definition", "comment", "test_command", "variable_assignment",
         "variable_assignments", "ERROR", "heredoc_body", "heredoc_start", "heredoc_end"}


def _convert(node: Any) -> list[list[Any]]:
    """tree-sitter node -> list of pipes (a pipe is a list of stages)."""
    t = node.type
    if t == "command":
        return [[_simple(node)]]
    if t == "pipeline":
        return _pipeline(node)
    if t in ("list", "program", "negated_command"):
        return _children(node)
    if t == "redirected_statement":
        return _redirected(node)
    if t == "subshell":
        return [[_Group(_children(node), subshell=True)]]
    if t in _COMPOUND:
        return [[_Group(_children(node))]]
    if t == "declaration_command":
        words = [_word(c) for c in node.children if c.type not in ("variable_assignment",)]
        return [[_Simple(words[:1])]]
    return []


def _children(node: Any) -> list[list[Any]]:
    out: list[list[Any]] = []
    for c in node.named_children:
        if c.type not in _SKIP:
            out.extend(_convert(c))
    return out


def _simple(node: Any) -> _Simple:
    st = _Simple([])
    for c in node.named_children:
        if c.type in ("variable_assignment", "comment"):
            continue   # FOO=1 cmd: an environment prefix, not an argument
        if c.type == "file_redirect":
            st.redirects.append(_redirect(c))
        elif c.type == "herestring_redirect":
            st.heredoc = (_word(c.named_children[0]).text + "\n") if c.named_child_count else ""
        elif c.type != "heredoc_redirect":
            st.argv.append(_word(c))
    return st


def _pipeline(node: Any) -> list[list[Any]]:
    stages: list[Any] = []
    extra: list[list[Any]] = []
    for c in node.named_children:
        pipes = _convert(c)
        if pipes:
            stages.extend(pipes[0])
            extra.extend(pipes[1:])
    return ([stages] if stages else []) + extra


def _redirect(node: Any) -> _Redirect:
    fd = op = None
    target = None
    for c in node.children:
        if c.type == "file_descriptor":
            fd = _text(c)
        elif not c.is_named:
            op = op or _text(c)
        elif target is None:
            target = _word(c)
    return _Redirect(op or ">", fd, target)


def _redirected(node: Any) -> list[list[Any]]:
    body = next((c for c in node.named_children if c.type not in _REDIRECTS), None)
    pipes = _convert(body) if body is not None else []
    if not pipes or not pipes[-1]:
        pipes.append([_Simple([])])
    target = pipes[-1][-1]
    for c in node.named_children:
        if c.type == "file_redirect":
            target.redirects.append(_redirect(c))
        elif c.type == "herestring_redirect" and isinstance(target, _Simple):
            target.heredoc = (_word(c.named_children[0]).text + "\n") if c.named_child_count else ""
        elif c.type == "heredoc_redirect":
            _heredoc(c, target, pipes)
    return pipes


def _heredoc(node: Any, target: Any, pipes: list[list[Any]]) -> None:
    """Attach a heredoc body to its command; tree-sitter nests the rest of the line
    (``| tee f``, ``&& ls``, ``> f``) inside the heredoc node, so unfold it here."""
    after_op = False
    for c in node.children:
        if c.type == "heredoc_body" and isinstance(target, _Simple):
            target.heredoc = _text(c)
            delim = next((_text(d) for d in node.children if d.type == "heredoc_start"), "")
            quoted = delim[:1] in ("'", '"') or "\\" in delim
            target.heredoc_exact = quoted or not re.search(r"[$`]", target.heredoc)
        elif c.type == "file_redirect":
            target.redirects.append(_redirect(c))
        elif c.type == "pipeline" and c.children and c.children[0].type in ("|", "|&"):
            rest = _children(c)
            if rest:
                pipes[-1].extend(rest[0])
                pipes.extend(rest[1:])
        elif c.type in ("&&", "||", ";"):
            after_op = True
        elif after_op and c.is_named and c.type not in _SKIP:
            pipes.extend(_convert(c))


# =========================================================================== streams


@dataclass(slots=True)
class _Seg:
    """A run of one file's lines flowing through a pipe."""

    path: str
    raw: str
    start: int | None = None
    end: int | None = None
    numbered: str | None = None     # "exact" (cat -n, nl -ba) or "approx" (nl)
    partial: bool = False           # only some unknown lines of the run are shown
    grep: bool = False              # only lines a grep let through: none when it printed none


@dataclass(slots=True)
class _Stream:
    """What flows out of a stage: file lines, or text that a parser can read reads from."""

    segs: list[_Seg] = field(default_factory=list)
    fmt: Callable[[list[str]], list[Read]] | None = None
    fallback: list[Read] = field(default_factory=list)
    text: str | None = None         # exact text when known (heredoc, echo)
    #: which output lines ``fmt`` could have printed, when several commands share one
    #: output: 2 = only this tool prints such a line (``ls -l``, ``grep -n``), 1 = could be
    #: its line, 0 = not its line (see ``_attribute``)
    shape: Callable[[str], int] | None = None
    opaque: bool = False            # prints something we cannot interpret (git log, python)
    nlines: int | None = None       # how many lines an opaque printer prints, when known


_EMPTY = _Stream()


@dataclass
class _Ctx:
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

    def sub(self, depth: int) -> _Ctx:
        """A nested context (subshell, ``bash -c``): own cd state, shared results."""
        return _Ctx(self.cwd, self.output, self.lines, self.errors, self.res, self.cats,
                    self.prefix, self.lost, False, depth, vcs_edits=self.vcs_edits,
                    events=self.events)

    def join(self, p: str) -> str | None:
        if p.startswith("/") or p.startswith("~"):
            return p
        if self.lost:
            return None
        if not self.prefix:
            return p
        return posixpath.normpath(posixpath.join(self.prefix, p))

    def note(self, why: str) -> None:
        if why not in self.res.unparsed:
            self.res.unparsed.append(why)


def _path(ctx: _Ctx, w: _Word, what: str = "path") -> str | None:
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


def _whole(ctx: _Ctx, operands: list[_Word], numbered: str | None = None) -> _Stream:
    segs = []
    for w in operands:
        p = _path(ctx, w)
        if p is not None:
            segs.append(_Seg(p, w.text, numbered=numbered))
    return _Stream(segs=segs)


def _listing(paths: list[str]) -> list[Read]:
    return [Read(p, listing=True) for p in paths]


def _joined(join: Callable[[str], str | None], names: Iterable[str]) -> list[Read]:
    """Listed names as file-level reads, each joined with the cwd (None: unknown, dropped)."""
    return _listing([p for p in map(join, names) if p])


def _split_opts(argv: list[_Word], with_value: set[str], short_value: str = "",
                ) -> tuple[list[str], list[tuple[str, str]], list[_Word]]:
    """Split argv[1:] into flags (short letters / long names), valued options, operands."""
    flags: list[str] = []
    valued: list[tuple[str, str]] = []
    operands: list[_Word] = []
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
            name, eq, val = a.partition("=")
            if eq:
                valued.append((name, val))
            elif name in with_value and i < len(args):
                valued.append((name, args[i].text))
                i += 1
            else:
                flags.append(name)
        elif a.startswith("-") and len(a) > 1 and w.static and not a[1].isdigit():
            for j, ch in enumerate(a[1:], 1):
                if ch in short_value:
                    val = a[j + 1:]
                    if not val and i < len(args):
                        val = args[i].text
                        i += 1
                    valued.append(("-" + ch, val))
                    break
                flags.append(ch)
        elif a.startswith("-") and len(a) > 1 and a[1:].isdigit():
            valued.append(("-NUM", a[1:]))
        else:
            operands.append(w)
    return flags, valued, operands


def _val(valued: list[tuple[str, str]], *names: str) -> str | None:
    found = None
    for k, v in valued:
        if k in names:
            found = v
    return found


# =========================================================================== ranges


def _narrow(seg: _Seg, a: int | None, b: int | None) -> _Seg:
    """Lines a..b (1-based, None = open, a<0 = from the end) of the run ``seg``."""
    if seg.partial:
        return seg
    s = seg.start or 1
    if s < 0:
        return _Seg(seg.path, seg.raw, seg.start, seg.end, seg.numbered, True)
    if a is not None and a < 0:
        if seg.end is None:
            return _Seg(seg.path, seg.raw, a, None, seg.numbered)
        return _Seg(seg.path, seg.raw, max(s, seg.end + a + 1), seg.end, seg.numbered)
    start = s + (a or 1) - 1
    end = None if b is None else s + b - 1
    if seg.end is not None:
        end = seg.end if end is None else min(end, seg.end)
    return _Seg(seg.path, seg.raw, start, end, seg.numbered)


def _apply_range(ctx: _Ctx, stream: _Stream, ranges: list[tuple[int | None, int | None]] | None,
                 what: str) -> _Stream:
    """Narrow a content stream to line ranges (None ranges = unknown lines: file level)."""
    if not stream.segs:
        return _Stream(fmt=stream.fmt, fallback=stream.fallback, shape=stream.shape) \
            if stream.fmt else _EMPTY
    if ranges is None:
        ctx.note(f"{what}: lines not known, file level only")
        return _Stream(segs=[_partial(s) for s in stream.segs])
    if len(stream.segs) > 1:
        ctx.note(f"{what} over several files: file level only")
        return _Stream(segs=[_partial(s) for s in stream.segs])
    seg = stream.segs[0]
    return _Stream(segs=[_narrow(seg, a, b) for a, b in ranges])


def _partial(seg: _Seg, grep: bool = False) -> _Seg:
    return _Seg(seg.path, seg.raw, seg.start, seg.end, seg.numbered, True, grep or seg.grep)


_SED_CMD = re.compile(r"(\d+|\$)(?:\s*,\s*(\d+|\$|\+\d+))?\s*([pq])")


def _sed_ranges(scripts: list[str], quiet: bool) -> list[tuple[int | None, int | None]] | None:
    """Line ranges printed by simple sed scripts ('a,bp', 'ap', '10,$p', 'Nq'); None if other."""
    cmds = [c.strip() for s in scripts for c in re.split(r"[;\n]", s) if c.strip()]
    if not quiet:
        if len(cmds) == 1 and re.fullmatch(r"\d+q", cmds[0]):
            return [(1, int(cmds[0][:-1]))]
        if cmds and all(c.startswith("s") for c in cmds):
            return [(None, None)]
        return None
    ranges: list[tuple[int | None, int | None]] = []
    for c in cmds:
        m = _SED_CMD.fullmatch(c)
        if not m:
            return None
        a, b, op = m.groups()
        if op == "q":
            continue
        start = -1 if a == "$" else int(a)
        if b is None:
            end = None if a == "$" else start
        elif b == "$":
            end = None
        elif b.startswith("+"):
            end = start + int(b[1:])
        else:
            end = int(b)
        ranges.append((start, end))
    return ranges or None


_AWK_TERM = re.compile(r"(NR|FNR)\s*(==|>=|<=|>|<)\s*(\d+)|(\d+)\s*(==|>=|<=|>|<)\s*(NR|FNR)")
_FLIP = {"==": "==", ">=": "<=", "<=": ">=", ">": "<", "<": ">"}


def _awk_ranges(prog: str) -> list[tuple[int | None, int | None]] | None:
    """``NR>=a && NR<=b``, ``NR==5``, ``NR==a,NR==b`` with an optional print of $0."""
    cond, brace, action = prog.strip().partition("{")
    if brace:
        act = action.rstrip().rstrip("}").strip().rstrip(";").strip()
        if not re.fullmatch(r"print(\s+\$0)?|print\s+(F?NR)\s*(,|\"[^\"]*\")?\s*\$0", act):
            return None
    cond = cond.strip()
    if not cond:
        return [(None, None)] if brace else None
    if "," in cond and "&&" not in cond:
        parts = [_awk_ranges(p) for p in cond.split(",", 1)]
        if parts[0] and parts[1] and parts[0][0][0] and parts[1][0][1]:
            return [(parts[0][0][0], parts[1][0][1])]
        return None
    lo: int | None = None
    hi: int | None = None
    for term in cond.split("&&"):
        m = _AWK_TERM.fullmatch(term.strip().strip("()").strip())
        if not m:
            return None
        op, n = (m.group(2), int(m.group(3))) if m.group(1) else (_FLIP[m.group(5)], int(m.group(4)))
        if op in ("==", ">=", ">"):
            v = n + (op == ">")
            lo = v if lo is None else max(lo, v)
        if op in ("==", "<=", "<"):
            v = n - (op == "<")
            hi = v if hi is None else min(hi, v)
    return [(lo, hi)]


# =========================================================================== output parsing

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")
_WRAPPER = re.compile(r"^(?:<returncode>-?\d+</returncode>|</?output>|\[The command completed.*\]"
                      r"|\[Python Interpreter: .*\]|\[Command finished with exit code.*\])$")
_ERR = re.compile(
    r"^(?:[\w.+-]+: )+(?:line \d+: )?(?:cannot open (?:file )?|can't read |cannot access "
    r"|read error on |couldn't edit |cannot stat )?[`'‘\"]?(?P<p>[^`'’\":]+?)[`'’\"]?"
    r"(?: for reading)?(?:: (?:IO error[^:]*: )?| \()(?:No such file or directory|Is a directory"
    r"|Permission denied|Not a directory|not a regular file)")


def _clean(output: str) -> list[str]:
    """Output lines without ANSI escapes, CR, or the trace tool's own wrapper lines."""
    text = _ANSI.sub("", output).replace("\r\n", "\n").replace("\r", "\n")
    return [ln for ln in text.split("\n") if not _WRAPPER.match(ln)]


def _errors(lines: list[str]) -> Counter[str]:
    """Paths named by "No such file"-like lines, with how many times (one per failure)."""
    bad: Counter[str] = Counter()
    for ln in lines:
        if ": " in ln and ("No such" in ln or "directory" in ln or "denied" in ln
                           or "regular file" in ln):
            m = _ERR.match(ln)
            if m:
                bad[m.group("p").strip()] += 1
    return bad


def _line_reads(hits: dict[str, list[int]], files: list[str]) -> list[Read]:
    reads: list[Read] = []
    for p, nums in hits.items():
        reads.extend(Read(p, a, b) for a, b in merge_ranges((n, n) for n in nums))
    seen = set(hits)
    for p in files:
        if p not in seen:
            seen.add(p)
            reads.append(Read(p, listing=True))
    return reads


_LOOKS_GREP = re.compile(r":\d+[:-]")
_NUM_HEAD = re.compile(r"^(\d+)([:-])")
_NUMBERED_LINE = re.compile(r"^(?:\d+[:-])?\s*(\d+)\t")
# per-line patterns of the output parsers, compiled once
_COUNT_LINE = re.compile(r"^(?:(.*):)?(\d+)$")         # grep -c: ``path:N`` or ``N``
_AFTER_PATH = re.compile(r"([:-])(\d+)\1")             # ``:N:`` / ``-N-`` after a known path
_DASH_NUM = re.compile(r"-(\d+)-")                      # ``-N-``: a context line's number
_COLUMNS = re.compile(r"\s{2,}|\t")                     # ls's multi-column layout
_SPACE = re.compile(r"\s")


def _numbered_fmt(path: str) -> Callable[[list[str]], list[Read]]:
    """Output of ``cat -n f``/``nl -ba f`` after a filter: the numbers name f's lines."""
    def parse(lines: list[str]) -> list[Read]:
        nums = [int(m.group(1)) for m in map(_NUMBERED_LINE.match, lines) if m]
        return _line_reads({path: nums}, []) if nums else []
    return parse


@dataclass(slots=True)
class _GrepShape:
    tool: str
    numbered: bool
    files_only: bool
    count: bool
    single: str | None          # the one file operand (output has no path prefix)
    single_raw: str | None
    join: Callable[[str], str | None]


def _grep_fmt(shape: _GrepShape) -> Callable[[list[str]], list[Read]]:
    def parse(lines: list[str]) -> list[Read]:
        if shape.files_only:
            return _joined(shape.join, (ln.strip() for ln in lines
                                        if ln.strip() and not _is_err(ln, shape.tool)))
        if shape.count:
            return _grep_counts(shape, lines)
        return _grep_lines(shape, lines)
    return parse


def _is_err(line: str, tool: str) -> bool:
    return line.startswith((f"{tool}: ", "grep: ", "rg: ", "Binary file "))


def _grep_counts(shape: _GrepShape, lines: list[str]) -> list[Read]:
    files = []
    for ln in lines:
        m = _COUNT_LINE.match(ln.strip())
        if not m or int(m.group(2)) == 0:
            continue
        p = shape.single if m.group(1) is None else shape.join(m.group(1))
        if p:
            files.append(p)
    return _listing(files)


def _grep_lines(shape: _GrepShape, lines: list[str]) -> list[Read]:
    """``path:N:text`` matches, ``path-N-text`` context, ``N:text`` for one file,
    rg's heading mode (a path line, then ``N:text`` lines)."""
    hits: dict[str, list[int]] = {}
    files: list[str] = []
    cur: str | None = None
    heading: str | None = None
    pending: list[str] = []   # context lines before their file's first match
    for ln in lines:
        if not ln.strip() or ln == "--":
            _flush(pending, cur, hits)
            heading = None if not ln.strip() else heading
            continue
        if _is_err(ln, shape.tool):
            continue
        if (shape.numbered and heading is None and (
                shape.single_raw is None or ln.startswith(shape.single_raw + "/"))
                and not _MATCH.match(ln) and not (cur and ln.startswith(cur))
                and _CONTEXT.match(ln)):
            pending.append(ln)
            continue
        path, num = _grep_line(shape, ln, cur, heading)
        if path is None:
            heading = ln.strip() if shape.numbered and not shape.single_raw else heading
            continue
        cur = path
        _flush(pending, cur, hits)
        if num is None:
            files.append(path)
        else:
            hits.setdefault(path, []).append(num)
    _flush(pending, cur, hits)
    out: list[Read] = []
    for r in _line_reads(hits, files):
        p = shape.join(r.path)
        if p is not None:
            out.append(Read(p, r.start, r.end, r.listing))
    return out


_MATCH = re.compile(r"^(.+?):(\d+):")
_CONTEXT = re.compile(r"^(.+?)-(\d+)-")


def _flush(pending: list[str], cur: str | None, hits: dict[str, list[int]]) -> None:
    """Context lines belong to the file of the match next to them."""
    for ln in pending:
        m = _DASH_NUM.match(ln, len(cur)) if cur and ln.startswith(cur) else None
        if m and cur:
            hits.setdefault(cur, []).append(int(m.group(1)))
            continue
        m = _CONTEXT.match(ln)
        if m:
            hits.setdefault(m.group(1), []).append(int(m.group(2)))
    pending.clear()


def _grep_line(shape: _GrepShape, ln: str, cur: str | None, heading: str | None,
               ) -> tuple[str | None, int | None]:
    """(raw path, line number) of one output line; (None, None) = maybe a heading."""
    single = shape.single_raw
    prefixed = single is not None and ln.startswith(single + "/")
    if single is not None and not prefixed:
        m = _NUM_HEAD.match(ln)
        if shape.numbered and m:
            return single, int(m.group(1))
        return single, None
    if shape.numbered:
        if heading is not None:
            m = _NUM_HEAD.match(ln)
            if m:
                return heading, int(m.group(1))
        if cur is not None and ln.startswith(cur):
            m = _AFTER_PATH.match(ln, len(cur))
            if m:
                return cur, int(m.group(2))
        m = _MATCH.match(ln) or _CONTEXT.match(ln)
        if m:
            return m.group(1), int(m.group(2))
        return None, None
    p = ln.split(":", 1)[0] if ":" in ln else None
    if not p or (_SPACE.search(p) and "/" not in p):
        return None, None   # not a path: a message from the tool or its wrapper
    return p, None


def _paths_fmt(join: Callable[[str], str | None]) -> Callable[[list[str]], list[Read]]:
    """find / fd / rg --files / grep -l output: one path per line."""
    def parse(lines: list[str]) -> list[Read]:
        return _joined(join, (s for s in map(str.strip, lines) if _path_line(s)))
    return parse


def _path_line(s: str) -> bool:
    """A stripped output line that names a path, not an error, a grep hit or a note."""
    return not (not s or _ERR.match(s) or _LOOKS_GREP.search(s) or s.endswith("/")
                or s == "Error" or s.startswith("Error: ")
                or (s.startswith("[") and s.endswith("]")))


_LONG = re.compile(r"^[-dlcbpsD?][rwxsStT-]{9}[.+@]?\s+")


def _ls_fmt(raw: list[str], join: Callable[[str], str | None],
            ) -> Callable[[list[str]], list[Read]]:
    """``ls`` output: names relative to the listed directory; ``dir:`` headers; -l lines."""
    def parse(lines: list[str]) -> list[Read]:
        out: list[str] = []
        cur = raw[0] if len(raw) == 1 else None
        for ln in lines:
            s = ln.rstrip()
            if not s or s.startswith("total ") or _ERR.match(s) or _LOOKS_GREP.search(s):
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
        return _joined(join, out)
    return parse


_TREE = re.compile(r"^((?:[│|]\s{2,3}|\s{4})*)(?:[├└|`][─-]{2}\s)(.*)$")


def _tree_fmt(root: str, join: Callable[[str], str | None]) -> Callable[[list[str]], list[Read]]:
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
        return _joined(join, out)
    return parse


_TOTAL = re.compile(r"^total \d+(?:[.,]\d+)?[KMGTP]?$")


def _path_shape(line: str) -> int:
    """One path per line (find, rg --files, grep -l): no ``ls -l`` columns, no prose."""
    s = line.strip()
    if not s or _LONG.match(s) or _TOTAL.match(s) or ": " in s:
        return 0
    return 1 if ("/" in s or not _SPACE.search(s)) else 0


def _ls_shape(line: str) -> int:
    """``ls -l`` lines and ``total N`` are ls's alone; bare names could be anyone's."""
    s = line.rstrip()
    if _LONG.match(s) or _TOTAL.match(s):
        return 2
    if s.endswith(":") and " " not in s:
        return 1
    names = _COLUMNS.split(s.strip())
    return 1 if all(n and not _SPACE.search(n) for n in names) else 0


def _grep_shape(shape: _GrepShape) -> Callable[[str], int]:
    def fits(line: str) -> int:
        if shape.files_only:
            return _path_shape(line)
        if shape.count:
            return 1 if _COUNT_LINE.match(line.strip()) else 0
        if shape.numbered:
            if _MATCH.match(line) or _CONTEXT.match(line) or (
                    shape.single_raw and _NUM_HEAD.match(line)):
                return 2
            return 1 if line == "--" else 0
        return 1 if ":" in line else 0
    return fits


# =========================================================================== attribution

#: programs that print nothing on success (their output needs no owner)
_SILENT = {"cd", "mkdir", "touch", "cp", "mv", "rm", "rmdir", "ln", "chmod", "chown", "export",
           "unset", "set", "true", "false", ":", "sleep", "source", ".", "test", "[", "[[",
           "wait", "exit", "return", "shift", "local", "declare", "alias", "trap", "umask",
           "ulimit", "shopt", "read"}


#: programs that print exactly one line (``pwd && ls``: the listing starts after it)
_ONE_LINE = {"pwd", "date", "whoami", "hostname", "nproc", "arch"}


def _one_line(name: str, args: list[str]) -> int | None:
    if name in _ONE_LINE or (name == "git" and args in (
            ["branch", "--show-current"], ["rev-parse", "HEAD"],
            ["rev-parse", "--abbrev-ref", "HEAD"], ["rev-parse", "--show-toplevel"])):
        return 1
    return None


def _prints(s: _Stream) -> bool:
    return bool(s.segs or s.fmt or s.opaque or s.fallback or s.text)


def _attribute(lines: list[str], shows: list[_Stream], ctx: _Ctx) -> list[list[str]]:
    """Split one output between the visible pipes that printed it, in execution order.

    With one printer it gets every line. With several, a listing/grep parser only gets
    the lines that look like its own: a run starting where the previous known output
    ended, or, after output of unknown length (``git branch``, ``cat f``, ``python``),
    the first run of lines only its tool prints (``ls -l`` lines, ``path:N:``). A tool
    whose lines look like anyone's (``rg --files``, plain ``ls``) after unknown output
    gets nothing: fewer listed names beat another command's text taken for file names.
    """
    printers = [k for k, s in enumerate(shows) if _prints(s)]
    if len(printers) <= 1:
        return [lines for _ in shows]
    blocks: list[list[str]] = [[] for _ in shows]
    cur, unknown = 0, False
    for n, k in enumerate(printers):
        s = shows[k]
        if s.fmt is None:
            cur, unknown = _skip_known(lines, cur, s, unknown)
            continue
        shape = s.shape or (lambda ln: 1)
        block, cur, ok = _block(lines, cur, shape, unknown, n + 1 < len(printers))
        if not ok and any(ln.strip() and shape(ln) for ln in lines[cur:]):
            ctx.note("output shared by several commands: lines that may be a listing's "
                     "not taken")
        blocks[k] = block
        unknown = unknown and not ok   # found nothing of its own: it printed nothing
    return blocks


def _skip_known(lines: list[str], cur: int, s: _Stream, unknown: bool) -> tuple[int, bool]:
    """Step over output we know exactly (``echo``, ``pwd``); anything else has unknown
    length."""
    if s.nlines is not None and not (s.segs or s.fmt or s.fallback) and not unknown:
        return min(cur + s.nlines, len(lines)), False
    if s.text is not None and not (s.segs or s.opaque or s.fallback) and not unknown:
        want = s.text.split("\n")
        if s.text.endswith("\n"):
            want.pop()
        if lines[cur:cur + len(want)] == want:
            return cur + len(want), False
    return cur, True


def _block(lines: list[str], cur: int, shape: Callable[[str], int], unknown: bool,
           later: bool) -> tuple[list[str], int, bool]:
    """(the parser's lines, where the next output starts, attributed?)."""
    n = len(lines)
    i = cur
    while i < n and not lines[i].strip():
        i += 1
    if unknown or (i < n and shape(lines[i]) == 0):
        # not our line where we would start: our first unmistakable one, if any
        first = next((j for j in range(i, n) if shape(lines[j]) == 2), None)
        if first is None:
            return [], cur, False
        i = first
    if not later:
        return lines[i:], n, True
    strong = False
    j = i
    while j < n:
        ln = lines[j]
        if not ln.strip():
            # blank lines stay inside a run only between lines of a recognized tool
            m = j + 1
            while m < n and not lines[m].strip():
                m += 1
            if not strong or m == n or shape(lines[m]) == 0:
                break
            j = m
            continue
        fit = shape(ln)
        if fit == 0 and not _ERR.match(ln):
            break
        strong = strong or fit == 2
        j += 1
    return lines[i:j], j, True


# =========================================================================== patches


def _apply_patch_edits(text: str, ctx: _Ctx) -> list[Edit]:
    """Codex ``apply_patch`` bodies: ``*** Update/Add/Delete File: p`` sections."""
    edits: list[Edit] = []
    path: str | None = None
    mode = ""
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if path is None:
            return
        if mode == "update" and (old or new):
            edits.append(Edit(path, old="\n".join(old), new="\n".join(new)))
        elif mode == "add":
            edits.append(Edit(path, content="".join(x + "\n" for x in new)))
        old.clear()
        new.clear()

    for ln in text.rstrip("\n").split("\n"):
        head = re.match(r"\*\*\* (Update|Add|Delete) File: (.+)$", ln)
        if head:
            flush()
            mode = head.group(1).lower()
            path = ctx.join(head.group(2).strip())
            if mode == "delete" and path:
                edits.append(Edit(path, content=""))
            continue
        if ln.startswith("*** "):
            if ln.startswith("*** Move to: "):
                ctx.note("apply_patch rename not followed")
            if ln.startswith("*** End Patch"):
                flush()
                path = None
            continue
        if ln.startswith("@@"):
            flush()
        elif mode == "add" and ln.startswith("+"):
            new.append(ln[1:])
        elif mode == "update":
            _hunk_line(ln, old, new)
    flush()
    return edits


def _hunk_line(ln: str, old: list[str], new: list[str]) -> None:
    tag, body = ln[:1], ln[1:]
    if tag == "-":
        old.append(body)
    elif tag == "+":
        new.append(body)
    elif tag == " " or ln == "":
        old.append(body)
        new.append(body)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _diff_edits(text: str, strip: int, ctx: _Ctx) -> list[Edit]:
    """A unified diff (``git apply``, ``patch -pN``) -> one Edit per hunk."""
    edits: list[Edit] = []
    src = dst = None
    hunk: tuple[int, int, int, int] | None = None
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if hunk is None or dst is None:
            return
        if src is None:
            edits.append(Edit(dst, content="".join(x + "\n" for x in new)))
        elif dst == "/dev/null":
            edits.append(Edit(src, content=""))
        else:
            edits.append(Edit(dst, old="\n".join(old), new="\n".join(new), hunks=(hunk,)))
        old.clear()
        new.clear()

    for ln in text.split("\n"):
        if ln.startswith("--- ") or ln.startswith("+++ "):
            flush()
            hunk = None
            name = ln[4:].split("\t")[0].strip()
            path = None if name == "/dev/null" else ctx.join("/".join(name.split("/")[strip:]))
            if ln.startswith("---"):
                src = path
            else:
                dst = path if name != "/dev/null" else "/dev/null"
            continue
        m = _HUNK.match(ln)
        if m:
            flush()
            a, b, c, d = m.groups()
            hunk = (int(a), int(b or 1), int(c), int(d or 1))
        elif hunk is not None and not ln.startswith("\\") and (
                len(old) < hunk[1] or len(new) < hunk[3]) and (ln[:1] in " -+" or ln == ""):
            _hunk_line(ln, old, new)
    flush()
    return edits


# =========================================================================== programs

_Handler = Callable[[_Ctx, list[_Word], _Simple, "_Stream | None"], _Stream]


def _h_cat(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    flags, _, ops = _split_opts(argv, set())
    numbered = "exact" if ("n" in flags or "--number" in flags) else None
    if not ops or all(w.text == "-" for w in ops):
        if st.heredoc is not None:
            return _Stream(text=st.heredoc if st.heredoc_exact else None)
        if stdin and numbered:
            return _Stream(segs=[_Seg(s.path, s.raw, s.start, s.end,
                                      numbered if (s.start or 1) == 1 else None, s.partial)
                                 for s in stdin.segs])
        return stdin or _EMPTY
    return _whole(ctx, ops, numbered)


def _h_nl(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, valued, ops = _split_opts(argv, {"--body-numbering"}, "bdfhilnsvw")
    body = _val(valued, "-b", "--body-numbering") or "t"
    numbered = "exact" if body == "a" else "approx"
    if not ops:
        if stdin and stdin.segs:
            return _Stream(segs=[_Seg(s.path, s.raw, s.start, s.end, numbered, s.partial)
                                 for s in stdin.segs])
        return stdin or _EMPTY
    return _whole(ctx, ops, numbered)


def _h_pager(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, valued, ops = _split_opts(
        argv, {"--line-range", "--language", "--style", "--theme", "--highlight-line",
               "--tabs", "--wrap", "--color", "--paging", "--map-syntax"}, "lrHm")
    if not ops:
        return stdin or _EMPTY
    stream = _whole(ctx, ops)
    rng = _val(valued, "-r", "--line-range")
    if rng and re.fullmatch(r"\d*:\d*", rng):
        a, b = rng.split(":")
        return _apply_range(ctx, stream, [(int(a) if a else None, int(b) if b else None)], "bat")
    return stream


def _count(valued: list[tuple[str, str]], default: int) -> tuple[str, int | None]:
    """head/tail count: ("last"|"from"|"bytes"|"allbut", n)."""
    if _val(valued, "-c", "--bytes") is not None:
        return "bytes", None
    v = _val(valued, "-n", "--lines", "-NUM")
    if v is None:
        return "last", default
    v = v.strip()
    if re.fullmatch(r"\+\d+", v):
        return "from", int(v[1:])
    if re.fullmatch(r"-\d+", v):
        return "allbut", int(v[1:])
    return ("last", int(v)) if v.isdigit() else ("bytes", None)


def _h_head(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, valued, ops = _split_opts(argv, {"--lines", "--bytes"}, "nc")
    kind, n = _count(valued, 10)
    rng = [(1, n)] if kind == "last" else None
    return _filter_each(ctx, ops, stdin, rng, "head")


def _h_tail(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    args = [_Word("-n" + w.text) if re.fullmatch(r"\+\d+", w.text) and w.static
            and argv[i - 1].text not in ("-n", "--lines", "-c", "--bytes") else w
            for i, w in enumerate(argv)]
    _, valued, ops = _split_opts(args, {"--lines", "--bytes", "--pid", "--sleep-interval",
                                        "--max-unchanged-stats"}, "ncs")
    kind, n = _count(valued, 10)
    rng: list[tuple[int | None, int | None]] | None = None
    if kind == "last" and n:
        rng = [(-n, None)]
    elif kind == "from":
        rng = [(n, None)]
    return _filter_each(ctx, ops, stdin, rng, "tail")


def _filter_each(ctx: _Ctx, ops: list[_Word], stdin: _Stream | None,
                 rng: list[tuple[int | None, int | None]] | None, what: str) -> _Stream:
    """Apply a line filter to each file operand, or to stdin when there are none."""
    if ops:
        segs: list[_Seg] = []
        for w in ops:
            segs.extend(_apply_range(ctx, _whole(ctx, [w]), rng, what).segs)
        return _Stream(segs=segs)
    if stdin is None:
        return _EMPTY
    if stdin.fmt is not None:
        return stdin   # grep/listing text: what survived is in the output
    if what == "head" and len(stdin.segs) > 1 and rng:
        ctx.note("head over several files: first file only")
        return _apply_range(ctx, _Stream(segs=stdin.segs[:1]), rng, what)
    return _apply_range(ctx, stdin, rng, what)


def _h_sed(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    args = list(argv)
    # BSD `sed -i '' ...`: an empty suffix word after -i
    for i, w in enumerate(args[:-1]):
        if w.text == "-i" and args[i + 1].text == "" and args[i + 1].static:
            del args[i + 1]
            break
    flags, valued, ops = _split_opts(args, {"--expression", "--file", "--line-length"}, "efl")
    in_place = any(f == "i" or f.startswith("--in-place") for f in flags) or any(
        w.text.startswith("-i") or w.text.startswith("--in-place") for w in argv[1:]
        if w.static and not w.text.startswith("--e"))
    scripts = [v for k, v in valued if k in ("-e", "--expression")]
    if _val(valued, "-f", "--file") is not None:
        scripts = []
    elif not scripts and ops:
        scripts = [ops[0].text]
        ops = ops[1:]
    quiet = "n" in flags or "--quiet" in flags or "--silent" in flags
    if in_place:   # with -n the file keeps only what is printed: not replayed
        return _edit_files(ctx, ops, "sed -i", None if quiet else _sed_line_edit(scripts))
    rng = _sed_ranges(scripts, quiet) if scripts else None
    if len(ops) > 1 and rng and rng != [(None, None)] and not (
            "s" in flags or "--separate" in flags):
        # without -s, sed numbers the files' lines as one stream: `sed -n 10,20p a b`
        # shows lines 10-20 of a+b, which lines of which file depends on a's length
        ctx.note("sed line range over several files: file level only")
        rng = None
    return _filter_each(ctx, ops, stdin, rng, "sed")


def _edit_files(ctx: _Ctx, ops: list[_Word], what: str,
                how: Callable[[str], Edit] | None = None) -> _Stream:
    for w in ops:
        p = _path(ctx, w, f"{what} target")
        if p is not None:
            ctx.res.edits.append(how(p) if how is not None else Edit(p))
    return _EMPTY


_SED_ADDRESSED = re.compile(r"\s*(\d+)(?:\s*,\s*(\d+))?\s*([iacds])(.*)", re.S)


def _sed_line_edit(scripts: list[str]) -> Callable[[str], Edit] | None:
    """``sed -i`` with ONE command at fixed line numbers, replayable without the file:
    ``Ni\\ text`` / ``Na\\ text`` (insert before / after line N), ``N[,M]d``, ``N[,M]c\\
    text``, ``Ns/x/y/`` (line N rewritten; a ``\\n`` in y adds lines). Anything else
    (several commands, regex or ``$`` addresses) is None: an edit we cannot replay."""
    if len(scripts) != 1:
        return None
    m = _SED_ADDRESSED.fullmatch(scripts[0].strip())
    if m is None:
        return None
    a, b, op, rest = int(m.group(1)), int(m.group(2) or m.group(1)), m.group(3), m.group(4)
    if a < 1 or b < a:
        return None
    count = b - a + 1
    if op == "d":
        if rest.strip():
            return None
        return lambda p: Edit(p, hunks=((a, count, a - 1, 0),))
    if op == "s":
        parts = _sed_s_parts(rest)
        if parts is None or (count > 1 and "\\n" in parts[1]):
            return None
        added = parts[1].count("\\n")
        return lambda p: Edit(p, hunks=((a, count, a, count + added),))
    # `a\<newline>text`, `a\text` (GNU keeps the spaces after the backslash), `a text`
    text = rest.replace("\\\n", "\n", 1) if rest.startswith("\\\n") else rest.lstrip(" \t")
    text = (text[1:] if text.startswith(("\\", "\n")) else text).replace("\\\n", "\n")
    lines = [ln for part in text.split("\n") for ln in part.split("\\n")]
    if op == "c":
        return lambda p: Edit(p, hunks=((a, count, a, len(lines)),))
    if count > 1:
        return None
    new = "".join(ln + "\n" for ln in lines)
    return lambda p: Edit(p, insert_line=a - 1 if op == "i" else a, new=new)


def _sed_s_parts(rest: str) -> tuple[str, str] | None:
    """``/x/y/flags`` -> (x, y) when the delimiters can be told; None otherwise."""
    if not rest or rest[0] in "\\\n ":
        return None
    delim, parts, cur, i = rest[0], [], "", 1
    while i < len(rest):
        ch = rest[i]
        if ch == "\\" and i + 1 < len(rest):
            cur += rest[i:i + 2]
            i += 2
            continue
        if ch == delim:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if len(parts) != 2 or not re.fullmatch(r"[gpiIeM0-9]*\s*", cur):
        return None
    return parts[0], parts[1]


def _h_awk(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, valued, ops = _split_opts(argv, {"--field-separator", "--assign", "--file"}, "Fvf")
    if _val(valued, "-f", "--file") is not None or not ops:
        ctx.note("awk program from a file")
        return _filter_each(ctx, ops, stdin, None, "awk")
    prog, files = ops[0].text, ops[1:]
    rng = _awk_ranges(prog)
    if len(files) > 1 and rng and rng != [(None, None)]:
        rng = None
    return _filter_each(ctx, files, stdin, rng, "awk")


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


def _h_grep(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None,
            tool: str = "grep", from_stdin_files: bool = False) -> _Stream:
    longs, shorts = _GREP_VALUES.get(tool, _GREP_VALUES["grep"])
    flags, valued, ops = _split_opts(argv, longs, shorts)
    fl = set(flags)
    has_pattern_opt = any(k in ("-e", "-f", "--regexp", "--file") for k, _ in valued)
    list_files = "--files" in fl or (tool == "ag" and _val(valued, "-g") is not None)
    if not has_pattern_opt and ops and not list_files:
        ops = ops[1:]
    if list_files:
        return _Stream(fmt=_paths_fmt(ctx.join), shape=_path_shape)
    files_only = bool(fl & {"l", "L", "--files-with-matches", "--files-without-match"})
    count = bool(fl & {"c", "--count", "--count-matches"})
    numbered = bool(fl & {"n", "--line-number", "--vimgrep"}) and not (fl & {"N"})
    if "q" in fl or "--quiet" in fl:
        return _EMPTY
    if not ops and not from_stdin_files and stdin is not None and tool != "git-grep" \
            and not fl & {"r", "R", "--recursive"}:
        return _grep_filter(ctx, stdin, numbered, files_only or count, "o" in fl)
    return _grep_search(ctx, tool, ops, fl, numbered, files_only, count, from_stdin_files)


def _grep_filter(ctx: _Ctx, stdin: _Stream, numbered: bool, summary: bool,
                 only: bool) -> _Stream:
    """grep reading a pipe: narrows what flows, keeps the parser of what flows."""
    if stdin.segs:
        if len(stdin.segs) == 1 and stdin.segs[0].numbered == "exact" and not summary:
            seg = stdin.segs[0]
            return _Stream(fmt=_numbered_fmt(seg.path), fallback=[Read(seg.path, listing=True)],
                           shape=lambda ln: 2 if _NUMBERED_LINE.match(ln) else 0)
        return _Stream(segs=[_partial(s, grep=True) for s in stdin.segs])
    if stdin.fmt is not None and not (numbered or summary or only):
        return stdin
    return _EMPTY


def _grep_search(ctx: _Ctx, tool: str, ops: list[_Word], fl: set[str], numbered: bool,
                 files_only: bool, count: bool, from_stdin_files: bool) -> _Stream:
    recursive = tool != "grep" or bool(fl & {"r", "R", "--recursive", "--dereference-recursive"})
    paths = [(w.text, _path(ctx, w, "grep operand")) for w in ops]
    no_name = bool(fl & {"h", "--no-filename"}) if tool == "grep" else "I" in fl
    single = None
    if len(ops) == 1 and not from_stdin_files and not (fl & {"H", "--with-filename"}) \
            and not _looks_dir(ops[0].text, recursive):
        single = ops[0].text
    if no_name and single is None:
        ctx.note(f"{tool} without file names: lines not attributable")
        return _EMPTY
    shape = _GrepShape(tool, numbered, files_only, count,
                       paths[0][1] if single else None, single, ctx.join)
    fallback = []
    for raw, p in paths:
        if p is None or raw in (".", "..") or raw.endswith("/"):
            continue
        if _looks_dir(raw, recursive):
            continue
        fallback.append(Read(p, listing=True))
    return _Stream(fmt=_grep_fmt(shape), fallback=fallback, shape=_grep_shape(shape))


def _looks_dir(raw: str, recursive: bool) -> bool:
    """A recursive search operand without an extension is most likely a directory."""
    return raw in (".", "..") or raw.endswith("/") or (
        recursive and "." not in posixpath.basename(raw))


def _h_rg(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    return _h_grep(ctx, argv, st, stdin, "rg")


def _h_ag(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    return _h_grep(ctx, argv, st, stdin, "ag")


def _h_find(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    texts = [w.text for w in argv]
    for flag in ("-exec", "-execdir", "-ok"):
        if flag in texts:
            inner = argv[texts.index(flag) + 1:]
            inner = [w for w in inner if w.text not in ("{}", ";", "+", "\\;")]
            if inner and posixpath.basename(inner[0].text) in ("grep", "egrep", "rg"):
                inner = inner + [_Word("--with-filename" if inner[0].text != "rg" else "-H")]
                return _h_grep(ctx, inner, st, None, "grep" if "grep" in inner[0].text else "rg",
                               from_stdin_files=True)
            ctx.note(f"find {flag} not interpreted")
            return _EMPTY
    if "-delete" in texts:
        ctx.note("find -delete: deleted files unknown")
    return _Stream(fmt=_paths_fmt(ctx.join), shape=_path_shape)


def _h_fd(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    return _Stream(fmt=_paths_fmt(ctx.join), shape=_path_shape)


def _h_ls(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, _, ops = _split_opts(argv, {"--format", "--sort", "--time-style", "--color", "--ignore",
                                   "--hide", "--width", "--block-size", "--quoting-style"}, "ITw")
    good = [(w.text, p) for w in ops if (p := _path(ctx, w)) is not None]
    return _Stream(fmt=_ls_fmt([r for r, _ in good], ctx.join),
                   fallback=_listing([p for _, p in good]), shape=_ls_shape)


def _h_tree(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, _, ops = _split_opts(argv, {"--filelimit", "--charset", "--sort", "--timefmt"}, "LIPHTo")
    root = ops[0].text if ops and ops[0].static else "."
    return _Stream(fmt=_tree_fmt(root, ctx.join),
                   shape=lambda ln: 2 if _TREE.match(ln) else 0)


def _h_wc(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, _, ops = _split_opts(argv, {"--files0-from"})
    return _Stream(fallback=[Read(p, listing=True) for p in
                             (_path(ctx, w) for w in ops) if p is not None])


def _h_passthrough(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    """sort / uniq: same lines (reordered), so what was shown stays shown."""
    _, _, ops = _split_opts(argv, {"--key", "--field-separator", "--output"}, "ktoS")
    if ops:
        return _whole(ctx, ops)
    return stdin or _EMPTY


def _h_tee(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    flags, _, ops = _split_opts(argv, set())
    text = stdin.text if stdin else None
    if st.heredoc is not None:
        text = st.heredoc if st.heredoc_exact else None
    for w in ops:
        p = _path(ctx, w, "tee target")
        if p is not None and _writable(p):
            append = "a" in flags or "--append" in flags
            ctx.res.edits.append(Edit(p, content=text) if text is not None and not append
                                 else Edit(p))
    return stdin or _EMPTY


def _h_echo(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    args = argv[1:]
    if not args:
        return _Stream(text="\n")
    if args and all(w.static for w in args) and not args[0].text.startswith("-"):
        return _Stream(text=" ".join(w.text for w in args) + "\n")
    return _EMPTY


def _h_apply_patch(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    body = st.heredoc
    if body is None:
        body = next((w.text for w in argv[1:] if "*** Begin Patch" in w.text), None)
    if body is None and stdin is not None:
        body = stdin.text
    if body is None:
        ctx.note("apply_patch without a visible patch")
        return _EMPTY
    ctx.res.edits.extend(_apply_patch_edits(body, ctx))
    return _EMPTY


def _h_patch(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    _, valued, ops = _split_opts(argv, {"--strip", "--input", "--directory"}, "pidoDrBVYzFg")
    strip = _val(valued, "-p", "--strip")
    n = int(strip) if strip and strip.isdigit() else 0
    return _diff_or_note(ctx, st, stdin, n, "patch")


def _diff_or_note(ctx: _Ctx, st: _Simple, stdin: _Stream | None, strip: int,
                  what: str) -> _Stream:
    body = st.heredoc if st.heredoc is not None else (stdin.text if stdin else None)
    if body is None:
        ctx.note(f"{what}: patch text not visible, edited files unknown")
        return _EMPTY
    ctx.res.edits.extend(_diff_edits(body, strip, ctx))
    return _EMPTY


_GIT_VALUES = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}


def _h_git(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    i = 1
    saved = (ctx.prefix, ctx.lost)
    while i < len(argv) and argv[i].text.startswith("-"):
        if argv[i].text == "-C" and i + 1 < len(argv):
            _cd(ctx, argv[i + 1])
        i += 2 if argv[i].text in _GIT_VALUES else 1
    try:
        return _git_sub(ctx, argv[i:], st, stdin)
    finally:
        ctx.prefix, ctx.lost = saved


def _git_sub(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    sub = argv[0].text if argv else ""
    if sub == "grep":
        return _h_grep(ctx, [_Word("git-grep")] + argv[1:], st, stdin, "git-grep")
    if sub == "show":
        return _git_show(ctx, argv)
    if sub in ("checkout", "restore"):
        _git_revert(ctx, sub, argv)
        return _EMPTY
    if sub == "reset":
        _git_reset(ctx, argv)
        return _EMPTY
    if sub == "stash":
        _git_stash(ctx, argv)
        return _EMPTY
    if sub == "ls-files":
        return _Stream(fmt=_paths_fmt(ctx.join), shape=_path_shape)
    if sub == "apply":
        flags, _, _ = _split_opts(argv, set(), "p")
        if "check" in flags or "--check" in flags or "--stat" in flags:
            return _EMPTY
        return _diff_or_note(ctx, st, stdin, 1, "git apply")
    return _EMPTY


_FILE_LIKE = re.compile(r"(^|/)[^/]*\.[A-Za-z][\w-]*$|^\./")
_CHECKOUT_VALUES = {"-b", "-B", "--orphan", "--conflict", "--pathspec-from-file"}


def _git_revert(ctx: _Ctx, sub: str, argv: list[_Word]) -> None:
    """``git checkout [REV] [--] FILE...`` / ``git restore [--source=REV] FILE...``:
    files put back from a commit (``ShellAnalysis.reverted`` when that is HEAD).

    Without ``--``, ``git checkout X`` is a branch switch unless X looks like a file
    (``a.py``, ``src/x.ts``, ``./f``): branch names rarely end in ``.ext``."""
    args = argv[1:]
    texts = [w.text for w in args]
    dash = texts.index("--") if "--" in texts else None
    head, tail = (args[:dash], args[dash + 1:]) if dash is not None else (args, [])
    flags = [w.text for w in head if w.text.startswith("-")]
    if sub == "checkout" and any(f in _CHECKOUT_VALUES or f.startswith("--orphan")
                                 for f in flags):
        return   # creates or switches a branch
    ops = [w for w in head if not w.text.startswith("-")]
    if sub == "restore":
        if _has_flag(flags, "S", "--staged") and not _has_flag(flags, "W", "--worktree"):
            return   # the index only: the file on disk is unchanged
        source = next((f.split("=", 1)[1] for f in flags if f.startswith("--source=")), None)
        for i, t in enumerate(texts[:len(head)]):
            if t in ("-s", "--source") and i + 1 < len(head):
                source = texts[i + 1]
                ops = [w for w in ops if w is not head[i + 1]]
        rev, paths = source, ops + tail
    elif dash is not None:
        rev, paths = (ops[0].text if ops else None), tail
    else:
        rev = ops[0].text if len(ops) > 1 and not _FILE_LIKE.search(ops[0].text) else None
        paths = [w for w in (ops[1:] if rev else ops) if _FILE_LIKE.search(w.text)
                 or w.text == "."]
    _revert_paths(ctx, paths, rev in (None, "HEAD", "@"), f"git {sub}")


def _git_reset(ctx: _Ctx, argv: list[_Word]) -> None:
    """``git reset --hard [HEAD]``: every file back as at HEAD (the base: agents work on
    an uncommitted tree). Other modes leave the work tree alone."""
    texts = [w.text for w in argv[1:]]
    if "--hard" not in texts:
        return
    revs = [t for t in texts if not t.startswith("-")]
    _revert_paths(ctx, [_Word(WHOLE_TREE)], revs in ([], ["HEAD"], ["@"]), "git reset --hard")


def _git_stash(ctx: _Ctx, argv: list[_Word]) -> None:
    """``git stash [push|save] [-u]`` puts the whole work tree back at HEAD; ``git stash
    pop``/``apply`` brings the saved edits back. A stash of some paths is not followed."""
    words = [w.text for w in argv[1:]]
    verb = next((t for t in words if not t.startswith("-")), "push")
    if verb in ("push", "save"):
        rest = words[words.index(verb) + 1:] if verb in words else words
        if "--" in rest or any(not t.startswith("-") for t in rest[:1] if verb == "push"):
            ctx.note("git stash of some paths: not followed")
            return
        ctx.res.stash.append("push")
    elif verb in ("pop", "apply"):
        ctx.res.stash.append(verb)


def _has_flag(flags: list[str], short: str, long: str) -> bool:
    return any(f == long or re.fullmatch(rf"-[a-zA-Z]*{short}[a-zA-Z]*", f) for f in flags)


#: the whole work tree, whatever the cwd (git's own pathspec for the top directory)
WHOLE_TREE = ":/"


def _revert_paths(ctx: _Ctx, paths: list[_Word], to_head: bool, what: str) -> None:
    """Each path, a file or a directory (``git checkout -- .``): the inference resets
    every edited file at or under it; ``:/`` is the whole tree."""
    for w in paths:
        p = WHOLE_TREE if w.text == WHOLE_TREE else _path(ctx, w, f"{what} path")
        if p is None:
            continue
        if p != WHOLE_TREE and len(p) > 1:
            p = p.rstrip("/")
        ctx.res.edits.append(Edit(p))
        ctx.vcs_edits.append(ctx.res.edits[-1])
        if to_head:
            ctx.res.reverted.append(p)
        else:
            ctx.note(f"{what} from another commit: content unknown")


def _git_show(ctx: _Ctx, argv: list[_Word]) -> _Stream:
    segs = []
    for w in argv[1:]:
        if w.text.startswith("-") or not w.static:
            continue
        rev, colon, path = w.text.partition(":")
        if colon and path and rev and "/" not in rev[:1]:
            # COMMIT:path is relative to the repo root unless written ./path
            p = ctx.join(path) if path.startswith("./") else path
            if p is not None:
                segs.append(_Seg(p, path))
    return _Stream(segs=segs)


_SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
_C_FLAG = re.compile(r"-[a-zA-Z]*c[a-zA-Z]*")


def _h_shell(ctx: _Ctx, argv: list[_Word], st: _Simple, stdin: _Stream | None) -> _Stream:
    """``bash -lc 'STRING'``: the string is parsed as a command of its own."""
    script = None
    for i, w in enumerate(argv[1:], 1):
        if _C_FLAG.fullmatch(w.text) and i + 1 < len(argv):
            script = argv[i + 1]
            break
        if not w.text.startswith("-"):
            break
    if script is None:
        return _EMPTY
    if not script.static:
        ctx.note("bash -c with a dynamic string")
        return _EMPTY
    if ctx.depth >= _MAX_DEPTH:
        ctx.note("bash -c nested too deep")
        return _EMPTY
    _run_source(ctx.sub(ctx.depth + 1), script.text)
    return _EMPTY


_HANDLERS: dict[str, _Handler] = {
    "cat": _h_cat, "tac": _h_cat, "nl": _h_nl, "less": _h_pager, "more": _h_pager,
    "bat": _h_pager, "batcat": _h_pager, "head": _h_head, "tail": _h_tail, "sed": _h_sed,
    "gsed": _h_sed, "awk": _h_awk, "gawk": _h_awk, "mawk": _h_awk, "grep": _h_grep,
    "egrep": _h_grep, "fgrep": _h_grep, "rg": _h_rg, "ag": _h_ag, "ack": _h_ag,
    "find": _h_find, "fd": _h_fd, "fdfind": _h_fd, "ls": _h_ls, "tree": _h_tree, "wc": _h_wc,
    "sort": _h_passthrough, "uniq": _h_passthrough, "tee": _h_tee, "echo": _h_echo,
    "apply_patch": _h_apply_patch, "applypatch": _h_apply_patch, "patch": _h_patch,
    "git": _h_git,
}
_HANDLERS.update({s: _h_shell for s in _SHELLS})

#: programs that run another command given in their arguments, with their valued options
_WRAPPERS: dict[str, tuple[set[str], int]] = {
    "sudo": ({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}, 0),
    "timeout": ({"-s", "-k", "--signal", "--kill-after"}, 1),
    "nohup": (set(), 0), "time": (set(), 0), "nice": ({"-n"}, 0), "exec": ({"-a"}, 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0), "command": (set(), 0), "builtin": (set(), 0),
    "env": ({"-u", "-C", "-S", "--unset", "--chdir"}, 0), "xvfb-run": ({"-a", "-s"}, 0),
}
_XARGS_VALUES = {"-n", "-L", "-P", "-s", "-d", "-E", "-I", "-a", "--max-args", "--max-procs",
                 "--delimiter", "--replace", "--arg-file", "--max-lines", "--max-chars"}


def _unwrap(argv: list[_Word]) -> tuple[list[_Word], bool]:
    """Strip ``sudo``/``timeout 10``/``env X=1``/``nohup``/``time``...; True if via xargs."""
    xargs = False
    for _ in range(8):
        if not argv:
            break
        name = posixpath.basename(argv[0].text)
        if name == "xargs":
            i = 1
            while i < len(argv) and argv[i].text.startswith("-"):
                i += 2 if argv[i].text in _XARGS_VALUES else 1
            argv, xargs = argv[i:], True
            continue
        if name not in _WRAPPERS:
            break
        if name == "command" and len(argv) > 1 and argv[1].text in ("-v", "-V"):
            return [], xargs
        values, positional = _WRAPPERS[name]
        i = 1
        while i < len(argv) and (argv[i].text.startswith("-") or
                                 (name == "env" and "=" in argv[i].text)):
            i += 2 if argv[i].text in values else 1
        argv = argv[i + positional:]
    return argv, xargs


# =========================================================================== running


def _writable(p: str) -> bool:
    """Redirect/tee targets worth reporting as edits: not devices, temp dirs or logs."""
    return not (p.startswith(("/dev/", "/tmp/", "/proc/", "/var/tmp/")) or p.endswith(".log"))


def _cd(ctx: _Ctx, target: _Word | None) -> None:
    ctx.moved = True
    if target is None or not target.static or target.text in ("-", "~") \
            or target.text.startswith("~"):
        ctx.lost = True
        ctx.note("cd to a directory we cannot follow")
        return
    t = target.text
    if t.startswith("/"):
        ctx.prefix, ctx.lost = posixpath.normpath(t), False
    elif not ctx.lost:
        ctx.prefix = posixpath.normpath(posixpath.join(ctx.prefix or "", t))


def _stdout_hidden(redirects: list[_Redirect]) -> bool:
    return any(r.op in (">", ">>", ">|", "&>", "&>>") and r.fd in (None, "1")
               and r.target is not None for r in redirects)


def _redirect_io(ctx: _Ctx, st: _Simple, stream: _Stream) -> bool:
    """Writes through ``>``/``>>``/``&>``: edits. Returns True if any edit was made."""
    edited = False
    for r in st.redirects:
        if r.op not in (">", ">>", ">|", "&>", "&>>") or r.target is None:
            continue
        p = _path(ctx, r.target, "redirect target")
        if p is None or not _writable(p):
            continue
        exact = r.op in (">", ">|") and r.fd in (None, "1") and stream.text is not None
        ctx.res.edits.append(Edit(p, content=stream.text) if exact else Edit(p))
        edited = True
    return edited


def _stdin_of(ctx: _Ctx, st: _Simple, stdin: _Stream | None) -> _Stream | None:
    for r in st.redirects:
        if r.op == "<" and r.target is not None:
            p = _path(ctx, r.target, "input file")
            return _Stream(segs=[_Seg(p, r.target.text)]) if p else _EMPTY
    if st.heredoc is not None:
        return _Stream(text=st.heredoc if st.heredoc_exact else None)
    return stdin


def _run_simple(ctx: _Ctx, st: _Simple, stdin: _Stream | None) -> _Stream:
    argv, via_xargs = _unwrap(st.argv)
    if not argv:
        _redirect_io(ctx, st, _EMPTY)
        return _EMPTY
    name = posixpath.basename(argv[0].text) if argv[0].static else argv[0].text
    if not (name in _SHELLS and any(_C_FLAG.fullmatch(w.text) for w in argv[1:])):
        ctx.res.programs.append(argv[0].text)   # `bash -lc '...'` only wraps the inner ones
    stdin = _stdin_of(ctx, st, stdin)
    _note_writes(ctx, st.redirects)
    before, reverts = len(ctx.res.edits), len(ctx.vcs_edits)
    handler = _HANDLERS.get(name)
    if via_xargs:
        out = _xargs(ctx, name, argv, st)
    elif handler is not None:
        out = handler(ctx, argv, st, stdin)
    else:
        out = _EMPTY
    if not _prints(out) and name not in _SILENT:
        out = _Stream(opaque=True, nlines=_one_line(name, [w.text for w in argv[1:]]))
    _redirect_io(ctx, st, out)
    # a revert (`git checkout -- f`) stays version control in the categories: it undoes
    # the agent's edits rather than making one
    edited = len(ctx.res.edits) - before > len(ctx.vcs_edits) - reverts
    if edited:
        ctx.cats.append("edit")
    elif name == "cat" and _stdout_hidden(st.redirects) and all(
            w.text.startswith("-") for w in argv[1:]):
        ctx.cats.append("other")   # `cat > /tmp/x.py <<EOF`: writes a scratch file, reads none
    elif name != "tee":   # tee into a log or /tmp changed nothing worth calling an edit
        ctx.cats.append(_cat.command_category([w.text for w in argv]))
    return _EMPTY if _stdout_hidden(st.redirects) else out


def _xargs(ctx: _Ctx, name: str, argv: list[_Word], st: _Simple) -> _Stream:
    """``... | xargs grep -n foo``: grep's files come from the pipe, so the output says."""
    if name in ("grep", "egrep", "fgrep", "rg", "ag"):
        tool = {"egrep": "grep", "fgrep": "grep"}.get(name, name)
        return _h_grep(ctx, argv, st, None, tool, from_stdin_files=True)
    if name == "sed" and any(w.text.startswith("-i") for w in argv):
        ctx.note("xargs sed -i: edited files unknown")
    elif name in _HANDLERS:
        ctx.note(f"xargs {name}: files come from the pipe")
    return _EMPTY


def _run_pipe(ctx: _Ctx, stages: list[Any], shown: bool) -> None:
    if len(stages) == 1 and isinstance(stages[0], _Simple) and stages[0].argv \
            and stages[0].argv[0].text in ("cd", "pushd"):
        ctx.res.programs.append(stages[0].argv[0].text)
        ctx.cats.append("other")
        args = [w for w in stages[0].argv[1:] if not w.text.startswith("-") or w.text == "-"]
        _cd(ctx, args[0] if args else None)
        return
    stream: _Stream | None = None
    for i, st in enumerate(stages):
        last = i == len(stages) - 1
        if isinstance(st, _Group):
            inner = ctx if not st.subshell else ctx.sub(ctx.depth)
            _note_writes(ctx, st.redirects)
            visible = shown and last and not _stdout_hidden(st.redirects)
            for pipe in st.body:
                _run_pipe(inner, pipe, visible)
            if _redirect_io(ctx, _Simple([], st.redirects), _EMPTY):
                ctx.cats.append("edit")
            stream = None
        else:
            n = len(ctx.cats)
            stream = _run_simple(ctx, st, stream)
            if i > 0 and ctx.cats[n:] and ctx.cats[-1] in ("read", "search"):
                del ctx.cats[n:]   # a filter (| head, | grep) does not make it a read
    if shown and stream is not None:
        ctx.events.append(("show", stream))


def _note_writes(ctx: _Ctx, redirects: list[_Redirect]) -> None:
    """Remember redirect targets in order: a "No such file" error naming one is the
    redirect's (its directory did not exist yet), not a later read's."""
    for r in redirects:
        if r.op in (">", ">>", ">|", "&>", "&>>") and r.target is not None and r.target.static:
            ctx.events.append(("write", r.target.text, ctx.join(r.target.text)))


def _spend(errors: Counter[str], *names: str | None) -> bool:
    """Use up one error line naming any of ``names``; True if there was one."""
    for n in names:
        if n is not None and errors[n] > 0:
            errors[n] -= 1
            return True
    return False


def _settle(ctx: _Ctx) -> list[Read]:
    """Reads of the visible pipes, each given its share of the output lines.

    Error lines are handed out in execution order: the n-th "No such file" line for a
    path belongs to the n-th command that used the path, so ``echo x > d/f; mkdir d;
    ... > d/f; cat d/f`` keeps the read (the failing first redirect used the error up).
    """
    shows = [e[1] for e in ctx.events if e[0] == "show"]
    blocks = _attribute(ctx.lines, shows, ctx) if ctx.lines is not None else None
    errors = Counter(ctx.errors)
    # `cat f | grep x` that printed nothing showed no line of f (only a grep filter is
    # judged so: an empty output elsewhere may be a trace that did not keep it)
    silent = ctx.lines is not None and not any(ln.strip() for ln in ctx.lines)
    reads: list[Read] = []
    k = 0
    for ev in ctx.events:
        if ev[0] == "write":
            _spend(errors, ev[1], ev[2])
            continue
        reads.extend(_materialize(ev[1], blocks[k] if blocks is not None else None, errors,
                                  silent))
        k += 1
    return reads


def _materialize(stream: _Stream, lines: list[str] | None, errors: Counter[str],
                 silent: bool = False) -> list[Read]:
    reads: list[Read] = []
    failed: set[str] = set()    # one error line fails every range of that file here
    for s in stream.segs:
        if s.grep and silent:
            continue
        if s.path in failed or _spend(errors, s.raw, s.path):
            failed.add(s.path)
            continue
        reads.append(Read(s.path, listing=True) if s.partial else Read(s.path, s.start, s.end))
    if stream.fmt is not None and lines is not None:
        reads.extend(stream.fmt(lines))
    else:
        reads.extend(r for r in stream.fallback if not _spend(errors, r.path))
    return reads


def _run_source(ctx: _Ctx, source: str) -> None:
    tree = _parser().parse(source.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    pipes = _convert(root)
    if root.has_error:
        ctx.note("shell syntax error: reads and edits not taken")
        # error recovery invents commands from the broken part: the syntax tree is not
        # trusted; the programs are found by a plain scan of the text instead
        for argv, writes in _scan_commands(source):
            ctx.res.programs.append(argv[0])
            ctx.cats.append(_scanned_category(argv, writes))
        return
    for pipe in pipes:
        _run_pipe(ctx, pipe, True)


#: command separators; parentheses only at command positions (not ``a/(group)/b.py``)
_SCAN_SPLIT = re.compile(r"&&|\|\||;|\|&?|(?<![<>&])&(?![&>])|`|\$\(|(?:^|(?<=[\s;&|]))[({]"
                         r"|[)}](?=[\s;&|]|$)")
_HEREDOC = re.compile(r"<<-?\s*[\\'\"]*([A-Za-z_]\w*)")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in",
             "case", "esac", "!", "function", "{", "}"}
_REDIRECT_WORD = re.compile(r"^(\d*|&)(>>?\|?|<<<|<<-?|<)(.*)$")


def _scan_commands(source: str, depth: int = 0) -> list[tuple[list[str], str | None]]:
    """(argv, stdout target) of every command one can find in text the parser rejected.

    A best-effort scan for categorizing only (METRICS.md section 7): words at command
    positions (line starts, after ``&&``/``||``/``;``/``|``/``(``), environment
    prefixes and wrappers (``timeout 5``, ``env X=1``) skipped, heredoc bodies skipped.
    A literal ``\\n`` counts as a line break: agents that escape their newlines twice
    are the usual source of these errors (SWE-agent ``bash -lc 'cat >f <<PY\\n...'``).
    """
    found: list[tuple[list[str], str | None]] = []
    heredoc: str | None = None
    for line in source.replace("\\n", "\n").split("\n"):
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        for seg in _SCAN_SPLIT.split(line):
            cmd = _scan_words(seg)
            if cmd is None:
                continue
            argv = cmd[0]
            if posixpath.basename(argv[0]) in _SHELLS and depth < _MAX_DEPTH and len(argv) > 2 \
                    and _C_FLAG.fullmatch(argv[1]):
                found.extend(_scan_commands(argv[2], depth + 1))   # bash -lc 'the script'
            else:
                found.append(cmd)
        m = _HEREDOC.search(line)
        heredoc = m.group(1) if m else None
    return found


def _scan_words(seg: str) -> tuple[list[str], str | None] | None:
    import shlex

    try:
        raw = shlex.split(seg, comments=True)
    except ValueError:
        raw = seg.split()
    words: list[str] = []
    target: str | None = None
    i = 0
    while i < len(raw):
        w = raw[i].strip("'\"\\")
        i += 1
        m = _REDIRECT_WORD.match(w)
        if m:
            fd, op, rest = m.groups()
            if not rest and i < len(raw):
                rest, i = raw[i].strip("'\"\\"), i + 1
            if op[0] == ">" and fd in ("", "1", "&") and not rest.startswith("&"):
                target = rest
            continue
        if not words and (w in _KEYWORDS or re.match(r"^\w+=", w)):
            continue
        words.append(w)
    argv, _ = _unwrap([_Word(w) for w in words])
    return ([w.text for w in argv], target) if argv and argv[0].text else None


def _scanned_category(argv: list[str], target: str | None) -> str:
    """``cat >f`` writes f (an edit when f is a repo file, else nothing); the rest by
    ``categories.command_category``."""
    name = posixpath.basename(argv[0])
    if name in ("cat", "echo", "printf") and target is not None:
        return "edit" if target and _writable(target) else "other"
    if name == "tee":
        ops = [a for a in argv[1:] if not a.startswith("-")]
        return "edit" if any(_writable(a) for a in ops) else "other"
    return _cat.command_category(argv)


def _dedupe(reads: list[Read]) -> list[Read]:
    seen: set[Read] = set()
    out = []
    for r in reads:
        if r.path and r not in seen:
            seen.add(r)
            out.append(r)
    return out


def analyze(command: str, output: str | None = None, cwd: str | None = None) -> ShellAnalysis:
    """Reads, edits, programs and category of one shell command (METRICS.md sections 6-7).

    ``output`` is what the command printed, when the trace has it; ``cwd`` the
    directory it ran in. Paths in the result are as written, joined with any ``cd``
    inside the command (relative paths stay relative to ``cwd``).
    """
    res = ShellAnalysis(cwd=cwd)
    lines = _clean(output) if output is not None else None
    errors = _errors(lines) if lines is not None else Counter()
    ctx = _Ctx(cwd, output, lines, errors, res)
    if output is not None and "syntax error near unexpected token" in output:
        ctx.note("the shell rejected the command (syntax error)")
        shadow = _Ctx(cwd, None, None, Counter(), ShellAnalysis(), ctx.cats)
        _run_source(shadow, command)
        res.programs = shadow.res.programs
    else:
        try:
            _run_source(ctx, command)
            res.reads.extend(_settle(ctx))
        except RecursionError:
            res.reads, res.edits = [], []
            ctx.note("command nested too deeply: not interpreted")
    res.reads = _dedupe(res.reads)
    res.category = _cat.most_significant(ctx.cats)
    if ctx.moved:
        res.cwd = _after_cd(ctx, cwd)
    return res


def _after_cd(ctx: _Ctx, cwd: str | None) -> str | None:
    if ctx.lost:
        return None
    if ctx.prefix is None or ctx.prefix.startswith("/") or cwd is None:
        return ctx.prefix if ctx.prefix is not None else cwd
    return posixpath.normpath(posixpath.join(cwd, ctx.prefix))
