"""Programs that print a file's lines: cat, nl, less/bat, head, tail, sed -n, awk, sort, wc.

Each handler returns the Stream its stage prints: which file's lines, which window of
them was asked for (current line numbers), and how the text looks (numbered, filtered).
A filter we cannot follow (a regex address, an awk pattern) still passes the lines on:
the shown text decides which ones were seen.
"""

from __future__ import annotations

import re
from dataclasses import replace

from streameval.model import Read
from streameval.reading.shell import rules
from streameval.reading.shell.context import (
    EMPTY,
    Ctx,
    Program,
    Seg,
    Stream,
    apply_range,
    filtered,
    path_of,
    split_opts,
    val,
    whole,
)
from streameval.reading.shell.syntax import Simple, Word
from streameval.reading.shell.writers import edit_files, sed_in_place

__all__ = ["PROGRAMS"]


def _cat(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    flags, _, ops = split_opts(argv, set())
    numbered = "exact" if ("n" in flags or "--number" in flags) else None
    if not ops or all(w.text == "-" for w in ops):
        if st.heredoc is not None:
            return Stream(text=st.heredoc if st.heredoc_exact else None)
        if stdin and numbered:
            return Stream(segs=[Seg(s.path, s.raw, s.start, s.end,
                                    numbered if (s.start or 1) == 1 else None, s.partial,
                                    s.filtered, s.grep_numbers, s.base, s.loose)
                                for s in stdin.segs])
        return stdin or EMPTY
    return whole(ctx, ops, numbered)


def _nl(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, valued, ops = split_opts(argv, {"--body-numbering"}, "bdfhilnsvw")
    body = val(valued, "-b", "--body-numbering") or "t"
    numbered = "exact" if body == "a" else "approx"
    if not ops:
        if stdin and stdin.segs:
            return Stream(segs=[Seg(s.path, s.raw, s.start, s.end, numbered, s.partial,
                                    s.filtered, None, s.base, s.loose)
                                for s in stdin.segs])
        return stdin or EMPTY
    return whole(ctx, ops, numbered)


def _pager(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, valued, ops = split_opts(
        argv, {"--line-range", "--language", "--style", "--theme", "--highlight-line",
               "--tabs", "--wrap", "--color", "--paging", "--map-syntax"}, "lrHm")
    if not ops:
        return stdin or EMPTY
    stream = whole(ctx, ops)
    rng = val(valued, "-r", "--line-range")
    if rng and re.fullmatch(r"\d*:\d*", rng):
        a, b = rng.split(":")
        return apply_range(ctx, stream, [(int(a) if a else None, int(b) if b else None)], "bat")
    return stream


def _count(valued: list[tuple[str, str]], default: int) -> tuple[str, int | None]:
    """head/tail count: ("last"|"from"|"bytes"|"allbut", n)."""
    if val(valued, "-c", "--bytes") is not None:
        return "bytes", None
    v = val(valued, "-n", "--lines", "-NUM")
    if v is None:
        return "last", default
    v = v.strip()
    if re.fullmatch(r"\+\d+", v):
        return "from", int(v[1:])
    if re.fullmatch(r"-\d+", v):
        return "allbut", int(v[1:])
    return ("last", int(v)) if v.isdecimal() else ("bytes", None)


def _headers(flags: list[str], ops: list[Word]) -> bool:
    """Do ``head``/``tail`` name each file (``==> f <==``)? With several, unless quiet."""
    quiet = any(f in ("q", "--quiet", "--silent") for f in flags)
    return not quiet and (len(ops) > 1 or any(f in ("v", "--verbose") for f in flags))


def _head(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    flags, valued, ops = split_opts(argv, {"--lines", "--bytes"}, "nc")
    kind, n = _count(valued, 10)
    rng = [(1, n)] if kind == "last" else None
    return filter_each(ctx, ops, stdin, rng, "head", _headers(flags, ops))


def _tail(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    args = [Word("-n" + w.text) if re.fullmatch(r"\+\d+", w.text) and w.static
            and argv[i - 1].text not in ("-n", "--lines", "-c", "--bytes") else w
            for i, w in enumerate(argv)]
    flags, valued, ops = split_opts(args, {"--lines", "--bytes", "--pid", "--sleep-interval",
                                           "--max-unchanged-stats"}, "ncs")
    kind, n = _count(valued, 10)
    rng: list[tuple[int | None, int | None]] | None = None
    if kind == "last" and n:
        rng = [(-n, None)]
    elif kind == "from":
        rng = [(n, None)]
    return filter_each(ctx, ops, stdin, rng, "tail", _headers(flags, ops))


def filter_each(ctx: Ctx, ops: list[Word], stdin: Stream | None,
                rng: list[tuple[int | None, int | None]] | None, what: str,
                headers: bool = False) -> Stream:
    """Apply a line filter to each file operand, or to stdin when there are none.
    ``headers``: ``head``/``tail`` print ``==> f <==`` before each file (a blank line
    before all but the first)."""
    if ops:
        segs: list[Seg] = []
        for j, w in enumerate(ops):
            mine = apply_range(ctx, whole(ctx, [w]), rng, what).segs
            if headers and mine:
                mine[0] = replace(mine[0], lead=(("",) if j else ()) + (f"==> {w.text} <==",))
            segs.extend(mine)
        return Stream(segs=segs)
    if stdin is None:
        return EMPTY
    if stdin.fmt is not None:
        return stdin   # grep/listing text: what survived is in the output
    if what == "head" and len(stdin.segs) > 1 and rng:
        ctx.note("head over several files: first file only")
        return apply_range(ctx, Stream(segs=stdin.segs[:1]), rng, what)
    return apply_range(ctx, stdin, rng, what)


def _sed(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    args = list(argv)
    # BSD `sed -i '' ...`: an empty suffix word after -i
    for i, w in enumerate(args[:-1]):
        if w.text == "-i" and args[i + 1].text == "" and args[i + 1].static:
            del args[i + 1]
            break
    flags, valued, ops = split_opts(args, {"--expression", "--file", "--line-length"}, "efl")
    in_place = any(f == "i" or f.startswith("--in-place") for f in flags) or any(
        w.text.startswith("-i") or w.text.startswith("--in-place") for w in argv[1:]
        if w.static and not w.text.startswith("--e"))
    scripts = [v for k, v in valued if k in ("-e", "--expression")]
    if val(valued, "-f", "--file") is not None:
        scripts = []
    elif not scripts and ops:
        scripts = [ops[0].text]
        ops = ops[1:]
    quiet = "n" in flags or "--quiet" in flags or "--silent" in flags
    extended = "E" in flags or "r" in flags or "--regexp-extended" in flags
    if in_place:
        return sed_in_place(ctx, ops, scripts, quiet, extended)
    rng, loose = _sed_ranges(scripts, quiet) if scripts else (None, True)
    if len(ops) > 1 and rng and rng != [(None, None)] and not (
            "s" in flags or "--separate" in flags):
        # without -s, sed numbers the files' lines as one stream: `sed -n 10,20p a b`
        # shows lines 10-20 of a+b, which lines of which file depends on a's length
        ctx.note("sed line range over several files: which file's lines is not known")
        rng = None
    out = filter_each(ctx, ops, stdin, rng, "sed")
    if rng is None and quiet and not loose and scripts and len(out.segs) == 1 \
            and out.segs[0].filtered and not out.segs[0].numbered:
        # `sed -n '/re/,/re/p' f`: the lines it prints follow from the file's text
        out.segs[0].program = (tuple(scripts), extended)
    return _loose(out) if loose else out


_SED_CMD = re.compile(r"(\d+|\$)(?:\s*,\s*(\d+|\$|\+\d+))?\s*([pq])")


def _sed_ranges(scripts: list[str], quiet: bool,
                ) -> tuple[list[tuple[int | None, int | None]] | None, bool]:
    """(line ranges printed, text changed?) of sed scripts: ``'a,bp'``, ``'ap'``,
    ``'10,$p'``, ``'Nq'`` give ranges; ``s`` commands print everything, changed; other
    scripts (regex addresses) print lines we let the text decide (ranges None)."""
    cmds = [c.strip() for s in scripts for c in re.split(r"[;\n]", s) if c.strip()]
    if not quiet:
        if len(cmds) == 1 and re.fullmatch(r"\d+q", cmds[0]):
            return [(1, int(cmds[0][:-1]))], False
        if cmds and all(c.startswith("s") for c in cmds):
            return [(None, None)], True
        return None, True
    ranges: list[tuple[int | None, int | None]] = []
    for c in cmds:
        m = _SED_CMD.fullmatch(c)
        if not m:
            return None, False
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
    return (ranges or None), False


_AWK_TERM = re.compile(r"(NR|FNR)\s*(==|>=|<=|>|<)\s*(\d+)|(\d+)\s*(==|>=|<=|>|<)\s*(NR|FNR)")
_FLIP = {"==": "==", ">=": "<=", "<=": ">=", ">": "<", "<": ">"}
_AWK_PRINT = re.compile(r"print(\s+\$0)?|print\s+(F?NR)\s*(,|\"[^\"]*\")?\s*\$0")


def _awk_ranges(prog: str) -> tuple[list[tuple[int | None, int | None]] | None, str]:
    """``NR>=a && NR<=b``, ``NR==5``, ``NR==a,NR==b`` with an optional print of $0.

    The second value says what the program prints: ``"lines"`` (whole lines, as they
    are), ``"filter"`` (whole lines picked by a pattern: the text decides which) or
    ``"other"`` (fields, computed text: nothing to match).
    """
    cond, brace, action = prog.strip().partition("{")
    if brace:
        act = action.rstrip().rstrip("}").strip().rstrip(";").strip()
        if not _AWK_PRINT.fullmatch(act):
            return None, "other"
    cond = cond.strip()
    if not cond:
        return ([(None, None)], "lines") if brace else (None, "other")
    if "," in cond and "&&" not in cond:
        parts = [_awk_ranges(p)[0] for p in cond.split(",", 1)]
        if parts[0] and parts[1] and parts[0][0][0] and parts[1][0][1]:
            return [(parts[0][0][0], parts[1][0][1])], "lines"
        return None, "filter"
    lo: int | None = None
    hi: int | None = None
    for term in cond.split("&&"):
        m = _AWK_TERM.fullmatch(term.strip().strip("()").strip())
        if not m:
            return None, "filter"
        op, n = (m.group(2), int(m.group(3))) if m.group(1) else (_FLIP[m.group(5)], int(m.group(4)))
        if op in ("==", ">=", ">"):
            v = n + (op == ">")
            lo = v if lo is None else max(lo, v)
        if op in ("==", "<=", "<"):
            v = n - (op == "<")
            hi = v if hi is None else min(hi, v)
    return [(lo, hi)], "lines"


def _awk(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, valued, ops = split_opts(argv, {"--field-separator", "--assign", "--file"}, "Fvf")
    if val(valued, "-f", "--file") is not None or not ops:
        ctx.note("awk program from a file")
        return _transformed(filter_each(ctx, ops, stdin, None, "awk"))
    prog, files = ops[0].text, ops[1:]
    rng, prints = _awk_ranges(prog)
    if len(files) > 1 and rng and rng != [(None, None)]:
        rng = None
    out = filter_each(ctx, files, stdin, rng, "awk")
    if prints == "other":
        ctx.note("awk prints computed text: file level only")
        return _transformed(out)
    return out


_PERL_LINE_NO = re.compile(r"\$\.\s*(==|>=|<=|>|<)\s*(\d+)")
_PERL_FLIP_RANGE = re.compile(r"print\s+if\s+(\d+)\s*\.\.\s*(\d+)\s*;?")
_PERL_FILTER = re.compile(r"print\s+if\s+(?:/.*/|\$_\s*=~\s*/.*/)[a-z]*\s*;?|print\s+unless\s+/.*/\s*;?")


def _perl(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    """``perl -ne 'PROG' f`` / ``-pe``: a line filter over the files (``print if 3..5``,
    ``print if $. >= a && $. <= b``, ``print if /re/``) or a transform (``-pe
    's/a/b/'``: the text decides which lines are the file's). ``-i``: an in-place edit
    whose result we cannot replay."""

    words = [w.text for w in argv[1:]]
    flags = "".join(t[1:] for t in words if t.startswith("-") and not t.startswith("--"))
    prog: str | None = None
    ops: list[Word] = []
    args = argv[1:]
    i = 0
    while i < len(args):
        t = args[i].text
        if t in ("-e", "-E") and i + 1 < len(args):
            prog = args[i + 1].text if prog is None else prog + ";" + args[i + 1].text
            i += 2
            continue
        if t.startswith("-") and len(t) > 1 and t != "-":
            if t[-1] in "eE" and i + 1 < len(args):      # -ne 'PROG', -lne, -pi -e
                prog = args[i + 1].text if prog is None else prog + ";" + args[i + 1].text
                i += 2
                continue
            i += 1
            continue
        if prog is None:
            prog = t                                      # perl script.pl: not followed
            ops = []
            break
        ops.append(args[i])
        i += 1
    if prog is None or not ("n" in flags or "p" in flags):
        ctx.note("perl script: not followed")
        return EMPTY
    if "i" in flags:
        return edit_files(ctx, ops, "perl -i")
    prog = prog.strip()
    if "p" in flags:
        return _loose(filter_each(ctx, ops, stdin, None, "perl"))
    m = _PERL_FLIP_RANGE.fullmatch(prog)
    if m:
        return filter_each(ctx, ops, stdin, [(int(m.group(1)), int(m.group(2)))], "perl")
    cond = prog.removeprefix("print if").strip().rstrip(";") if prog.startswith("print if") else ""
    terms = [t.strip().strip("()").strip() for t in cond.split("&&")] if cond else []
    if terms and all(_PERL_LINE_NO.fullmatch(t) for t in terms):
        awk_like = " && ".join(t.replace("$.", "NR") for t in terms)
        rng, _ = _awk_ranges(awk_like)
        return filter_each(ctx, ops, stdin, rng, "perl")
    if _PERL_FILTER.fullmatch(prog):
        return filter_each(ctx, ops, stdin, None, "perl")
    ctx.note("perl prints computed text: file level only")
    return _transformed(filter_each(ctx, ops, stdin, None, "perl"))


def _loose(stream: Stream) -> Stream:
    """Lines that may have been changed on the way: the text decides which are the file's."""
    return Stream(segs=[filtered(s, loose=True) for s in stream.segs], fmt=stream.fmt,
                  fallback=stream.fallback, shape=stream.shape, text=stream.text)


def _transformed(stream: Stream) -> Stream:
    """Lines changed into something else (fields, computed text): the files only."""
    return Stream(segs=[Seg(s.path, s.raw, s.start, s.end, partial=True, base=s.base)
                        for s in stream.segs], fmt=stream.fmt, fallback=stream.fallback,
                  shape=stream.shape)


def _passthrough(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    """sort / uniq: the same lines, reordered: shown, but not in file order."""
    _, _, ops = split_opts(argv, {"--key", "--field-separator", "--output"}, "ktoS")
    stream = whole(ctx, ops) if ops else (stdin or EMPTY)
    return Stream(segs=[filtered(s, loose=True) for s in stream.segs], fmt=stream.fmt,
                  fallback=stream.fallback, shape=stream.shape)


def _wc(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    _, _, ops = split_opts(argv, {"--files0-from"})
    return Stream(fallback=[Read(p, listing=True) for p in
                            (path_of(ctx, w) for w in ops) if p is not None])


def _echo(ctx: Ctx, argv: list[Word], st: Simple, stdin: Stream | None) -> Stream:
    args = argv[1:]
    if not args:
        return Stream(text="\n")
    if all(w.static for w in args) and not args[0].text.startswith("-"):
        return Stream(text=" ".join(w.text for w in args) + "\n")
    return EMPTY


#: the programs this module reads, with their category (``shell.programs`` holds them all).
#: ``sort``/``uniq`` reorder what they are given and ``echo`` prints the agent's own text:
#: they add nothing to what a command is (``grep -rn x . | sort`` is a search).
PROGRAMS = {
    "cat": Program("read", _cat), "tac": Program("read", _passthrough),
    "nl": Program("read", _nl), "head": Program("read", _head), "tail": Program("read", _tail),
    **dict.fromkeys(("less", "more", "bat", "batcat"), Program("read", _pager)),
    **dict.fromkeys(("sed", "gsed"), Program("read", _sed, rules.in_place)),
    **dict.fromkeys(("awk", "gawk", "mawk"), Program("read", _awk)),
    "wc": Program("read", _wc),
    "perl": Program("run", _perl, rules.perl),
    **dict.fromkeys(("sort", "uniq"), Program("other", _passthrough)),
    "echo": Program("other", _echo),
}
