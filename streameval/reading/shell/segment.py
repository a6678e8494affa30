"""One output, several printers: each part of a compound command gets its own lines.

``sed -n '14,51p' a && sed -n '24,84p' a && sed -n '82,145p' b``, ``cat a b``, ``head a b``,
``nl -ba a | sed -n 5,9p && echo --- && grep -n x b``: the output is the parts' outputs
one after the other, in the order the shell ran them. Aligning every part with the whole
output credits one file's braces and blank lines in another (docs/metrics.md §6d). So
the output is cut where the commands imply, and each part's lines go to that part alone:

- a part whose lines are known in advance is matched where it must start: a window of
  a file whose current text is known (``sed -n a,bp``, ``cat``, ``head``, ``tail``,
  numbered as ``cat -n``/``nl -ba`` print it), ``echo`` text, ``head``'s ``==> f <==``
  headers; several windows one program prints of one file come in file order (``sed
  -n '184,208p;31,71p' f`` prints 31-71 first);
- a part whose lines are not (``grep``, a filter, a script) runs up to where the next
  part's known lines start, or up to the lines the parts after it must take;
- when a part's text is not where its window says (an edit nobody recorded moved the
  file), its window's size still says how many lines it printed, and alignment places
  them;
- a harness cut (mini-swe-agent's head and tail) is cut from both sides: parts from the
  start in the head, from the end in the tail; the part the cut went through gets a
  piece of each, a cut edge line each; parts wholly inside the cut showed nothing;
- a harness that trims its output (Claude Code) may have dropped the first part's
  leading blank lines and the last part's trailing ones: never shown, never credited.

Where no file's text is known (no repository), windows give sizes when every part has
one; otherwise each file finds its own lines in the whole text, as before segmentation.
Nothing here reads a repository: ``Lookup`` hands in the file's current lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from streameval.model import Read
from streameval.reading.output.harness import is_cut_line
from streameval.reading.output.numbered import numbered_read
from streameval.reading.sed import printed_lines
from streameval.reading.shell.context import Seg
from streameval.sources.basetext import norm

__all__ = ["Lookup", "Part", "Printout"]

_NUMBER = re.compile(r"^ *\d{1,9}(?:\t|$)")
_GREP_N = re.compile(r"^\d+:")
#: the current lines of a segment's file (the base lines for ``seg.base``), None if unknown
Lookup = Callable[[Seg], "list[str] | None"]


@dataclass(slots=True)
class Part:
    """What one printer contributed to the output, in execution order.

    ``kind``: ``"file"`` (``segs``: one file's window, or several windows one program
    prints of one file in file order), ``"text"`` (``text``: known lines), ``"parsed"``
    (``parse`` reads its lines: grep hits, a listing; ``fallback`` without any),
    ``"other"`` (lines nothing here reads: a script, ``git log``). ``numbered_from``: the
    number ``cat -n``/``nl -ba`` give its first line when it continues another file's
    count (``cat -n a b``)."""

    kind: str
    segs: list[Seg] = field(default_factory=list)
    text: list[str] | None = None
    parse: Callable[[list[str]], list[Read]] | None = None
    fallback: list[Read] = field(default_factory=list)
    follows: int | None = None   # index of the part whose numbering this one continues
    #: could an output line be this part's? (a grep's pattern selects it)
    accepts: Callable[[str], bool] | None = None
    #: the program succeeds exactly when it prints (grep)
    prints_if_ok: bool = False
    #: it ran only if the part before failed (``a || b``)
    or_else: bool = False


@dataclass(slots=True)
class _Plan:
    """A part's expected output: its file's current numbers and printed lines, or only
    how many lines (``count``), or nothing known (None everywhere)."""

    numbers: list[int] | None = None
    lines: list[str] | None = None
    count: int | None = None
    #: the count holds whatever the file's text (a window inside the file): it says
    #: where the part ends even when the text is not where expected
    sure: bool = False


@dataclass(slots=True)
class Printout:
    """A compound command's output and its parts, split once the files' current text is
    known (after the call's own edits: ``StepBuilder``)."""

    lines: list[str]
    parts: list[Part]
    #: the reads when the output cannot be split for sure (two parts of unknown size
    #: side by side, ``grep a f; grep b g``): each part finds its own lines by their look
    unsplit: list[Read] = field(default_factory=list)

    def settle(self, lookup: Lookup | None,
               shown: Callable[[Seg, list[str], bool, bool], list[Read]]) -> list[Read]:
        """The reads of every part; ``shown`` makes a file's reads from its lines
        (``run.shown_reads``), used where the lines' places are not known in advance."""
        plans = _plans(self.parts, lookup)
        blocks = _split(self.lines, self.parts, plans)
        if blocks is None:
            return list(self.unsplit)
        reads: list[Read] = []
        for part, plan, pieces in zip(self.parts, plans, blocks):
            reads.extend(_reads(self.lines, part, plan, pieces, shown))
        return reads


# --------------------------------------------------------------------------- plans


def _plans(parts: list[Part], lookup: Lookup | None) -> list[_Plan]:
    plans: list[_Plan] = []
    for part in parts:
        if part.kind == "text":
            plans.append(_Plan(lines=list(part.text or ()), count=len(part.text or ()),
                               sure=True))
        elif part.kind == "file":
            start = 1
            if part.follows is not None:
                prev = plans[part.follows]
                start = (prev.numbers[-1] if prev.numbers else 0) + 1 \
                    if prev.numbers is not None or prev.count == 0 else 0
            plans.append(_file_plan(part.segs, lookup, start))
        else:
            plans.append(_Plan())
    return plans


def _file_plan(segs: list[Seg], lookup: Lookup | None, first_number: int) -> _Plan:
    """What one file part prints: numbers in print order (sed prints its windows in
    file order, a line in two windows twice), the text as printed."""
    seg = segs[0]
    if len(segs) == 1 and seg.filtered and (seg.keep is not None or seg.program is not None):
        return _filtered_plan(seg, lookup)
    if any(s.partial or s.filtered or s.loose or s.guess or s.grep_numbers
           or s.numbered == "approx" for s in segs):
        return _Plan()
    cur = lookup(seg) if lookup is not None else None
    if cur is None:
        if len(segs) == 1 and seg.start and seg.start > 0 and seg.end:
            # no text known: the window, if the file is long enough
            return _Plan(count=seg.end - seg.start + 1, sure=True)
        return _Plan()
    n = len(cur)
    windows = [_window(s, n) for s in segs]
    sure = all(s.start and s.start > 0 and s.end and s.end <= n for s in segs)
    if len(windows) == 1:
        a, b = windows[0]
        numbers = list(range(a, b + 1))
    else:
        numbers = [k for k in range(1, n + 1) for a, b in windows if a <= k <= b]
    if seg.numbered == "exact":
        if first_number <= 0:
            return _Plan(numbers=numbers, count=len(numbers), sure=sure)
        shift = first_number - 1 if len(segs) == 1 and seg.start is None else 0
        lines = [f"{k + shift:6d}\t{cur[k - 1]}" for k in numbers]
    else:
        lines = [cur[k - 1] for k in numbers]
    return _Plan(numbers=numbers, lines=lines, count=len(numbers), sure=sure)


def _filtered_plan(seg: Seg, lookup: Lookup | None) -> _Plan:
    """A file's lines a filter whose rule is known let through: ``sed -n '/a/,/b/p'``,
    ``cat f | grep x``, ``sed -n 5,40p f | grep -n x`` (grep numbering from the window's
    first line), ``nl -ba f | grep x`` (grep sees the numbered lines)."""
    if seg.loose or seg.partial or seg.guess or seg.groups or seg.grep_numbers == "strip" \
            or seg.numbered == "approx" or lookup is None:
        return _Plan()
    cur = lookup(seg)
    if cur is None:
        return _Plan()
    a, b = _window(seg, len(cur))
    if seg.program is not None:
        got = printed_lines(cur[a - 1:b], *seg.program)
        if got is None:
            return _Plan()
        picked = [a + k - 1 for k in got]
    else:
        picked = list(range(a, b + 1))
    numbers: list[int] = []
    lines: list[str] = []
    for k in picked:
        text = f"{k:6d}\t{cur[k - 1]}" if seg.numbered == "exact" else cur[k - 1]
        if seg.keep is not None and not seg.keep(text):
            continue
        numbers.append(k)
        lines.append(f"{k - a + 1}:{text}" if seg.grep_numbers == "lines" else text)
    if seg.then is not None:     # `| head -n N`, `| tail -n +N` over the filter's lines
        lo, hi = seg.then
        first = len(lines) + lo if lo is not None and lo < 0 else (lo or 1) - 1
        last = len(lines) if hi is None else hi
        numbers, lines = numbers[max(first, 0):last], lines[max(first, 0):last]
    return _Plan(numbers=numbers, lines=lines, count=len(lines))


def _window(seg: Seg, n: int) -> tuple[int, int]:
    start = seg.start if seg.start is not None else 1
    if start < 0:
        start = max(1, n + start + 1)
    end = n if seg.end is None else min(seg.end, n)
    return start, end


# --------------------------------------------------------------------------- splitting


def _same(shown: str, want: str, first: bool = False) -> bool:
    """A printed line as expected (white space at the end and tabs aside; a harness that
    strips its output may have taken the first line's indentation too)."""
    if shown == want:
        return True
    a, b = norm(shown), norm(want)
    return a == b or (first and a.lstrip() == b.lstrip() and bool(a))


@dataclass(slots=True)
class _Piece:
    start: int
    end: int
    cut_head: bool = False      # the harness cut just before this piece
    cut_tail: bool = False      # ... just after it
    offset: int = 0             # the piece starts at this line of the part's plan
    matched: bool = False       # its lines are the plan's (offset .. offset+len)


def _split(lines: list[str], parts: list[Part],
           plans: list[_Plan]) -> list[list[_Piece]] | None:
    """Each part's pieces of the output (two when a harness cut went through it); None
    when where one part ends and the next begins is not known."""
    cut = next((i for i, ln in enumerate(lines) if is_cut_line(ln)), None)
    out: list[list[_Piece]] = [[] for _ in parts]
    if cut is None:
        whole = _forward(lines, 0, len(lines), parts, plans, 0, trimmed=True)
        if whole is None:
            return None
        for k, piece in whole:
            out[k].append(piece)
        return out
    head = lines[:cut]
    if head and head[-1] == "":
        head = head[:-1]          # the cut fell at a line start: that line was not shown
    ahead = _forward(head, 0, len(head), parts, plans, 0, cut_at_end=True)
    if ahead is None:
        return None
    for k, piece in ahead:
        out[k].append(piece)
    # the tail belongs to the parts from the one the cut went through (the last in the
    # head, unless it ended there whole) to the last
    through = 0 if not ahead else ahead[-1][0] + (0 if ahead[-1][1].cut_tail else 1)
    tail = lines[cut + 1:]
    behind = _backward(tail, parts, plans, through)
    if behind is None:
        return None
    for k, piece in behind:
        piece.start += cut + 1
        piece.end += cut + 1
        out[k].append(piece)
    return out


def _forward(lines: list[str], pos: int, stop: int, parts: list[Part], plans: list[_Plan],
             first: int, trimmed: bool = False, cut_at_end: bool = False,
             backwards: bool = False) -> list[tuple[int, _Piece]] | None:
    """Pieces from ``pos`` on, parts ``first``... in order, up to ``stop``; None when a
    part of unknown size is followed by parts nothing places."""
    out: list[tuple[int, _Piece]] = []
    k = first
    while k < len(parts) and pos < stop:
        plan = plans[k]
        want = plan.lines
        if _skipped(parts, k, out, backwards):
            k += 1      # `grep ... || b` where the grep printed: b never ran
            continue
        if parts[k].kind == "text":
            # known text prints there, or it was not printed (`a || echo missing`)
            got = _match(lines, pos, stop, want or [], 0, cut_at_end, pos == 0, backwards)
            done = got == len(want or []) or (cut_at_end and pos + got == stop)
            out.append((k, _Piece(pos, pos + got if done else pos)))
            pos += got if done else 0
            k += 1
            continue
        if want is not None:
            skip = 0
            if trimmed and pos == 0:
                # a harness that trims leading blank lines: they were never shown
                while skip < len(want) and not want[skip].strip() and \
                        not (lines[pos].strip() == "" and want[skip] == ""):
                    skip += 1
            got = _match(lines, pos, stop, want, skip, cut_at_end, pos == 0 and not backwards,
                         backwards)
            complete = skip + got == len(want)
            ends = pos + got == stop
            rest_blank = all(not w.strip() for w in want[skip + got:])
            if complete or (ends and (cut_at_end or rest_blank)) or (got and k == len(parts) - 1
                                                                    and rest_blank):
                piece = _Piece(pos, pos + got, offset=skip, matched=True,
                               cut_tail=cut_at_end and pos + got == stop and not complete)
                out.append((k, piece))
                pos += got
                k += 1
                continue
        end = _end_of(lines, pos, stop, parts, plans, k, backwards)
        if parts[k].accepts is not None:
            # a grep prints only lines its pattern selects: it ended before the first other
            other = next((j for j in range(pos, end if end is not None else stop)
                          if not parts[k].accepts(lines[j]) and not _notice(lines[j])), None)
            end = other if other is not None else end
        if plan.count is not None and plan.sure and end is None:
            end = min(stop, pos + plan.count)
        if end is None:
            rest = parts[k + 1:]
            if rest and rest[0].or_else and parts[k].prints_if_ok and not backwards:
                rest = rest[1:]   # `grep ... || b`: b runs only if the grep printed nothing
            if any(p.kind != "text" or p.text for p in rest):
                return None     # it may end anywhere before the next printer's lines
            end = stop
        out.append((k, _Piece(pos, end, cut_tail=cut_at_end and end == stop)))
        pos = end
        k += 1
    return out


def _match(lines: list[str], pos: int, stop: int, want: list[str], skip: int, cut_at_end: bool,
           at_start: bool, backwards: bool = False) -> int:
    """How many of ``want[skip:]`` are at ``lines[pos:]``; a last line the harness cut
    may be only the start of its line (the end of it, ``backwards``: lines reversed)."""
    n = 0
    while skip + n < len(want) and pos + n < stop:
        shown, exp = lines[pos + n], want[skip + n]
        if _same(shown, exp, at_start and n == 0):
            n += 1
            continue
        if cut_at_end and pos + n == stop - 1 and _piece_of(shown, exp, backwards):
            n += 1
            continue
        break
    return n


def _piece_of(shown: str, line: str, end: bool) -> bool:
    """Is ``shown`` what a cut left of ``line``: its start (its end, ``end``)?"""
    a, b = shown.expandtabs(), line.expandtabs()
    return b.rstrip().endswith(a.rstrip()) if end else b.startswith(a)


def _end_of(lines: list[str], pos: int, stop: int, parts: list[Part], plans: list[_Plan],
            k: int, backwards: bool = False) -> int | None:
    """Where part k's output ends when its lines are not known: where the next part
    with known lines starts (less the sizes of windows of unknown text before it), or
    where the windows after it must start to fit; None when nothing says."""
    between = 0        # lines of windows whose text is unknown, between k and an anchor
    sized = False
    for j in range(k + 1, len(parts)):
        p = plans[j]
        if p.lines == [] or p.count == 0:
            continue      # prints nothing
        if j == k + 1 and not backwards and parts[j].or_else and parts[k].prints_if_ok:
            continue      # `grep ... || b`: b printed only if the grep printed nothing
        if not p.lines:
            if p.count is None or not p.sure:
                return None      # a part of unknown size: where k ends is not known
            between += p.count
            sized = True
            continue
        at = _find(lines, pos, stop, p.lines)
        if at is not None:
            return max(pos, at - between)
        if parts[j].kind != "text":
            return None   # a file's text not where the map has it: its place is unknown
        # known text that is not there was not printed (`|| echo missing`): look further
    return max(pos, stop - between) if sized else None


def _skipped(parts: list[Part], k: int, done: list[tuple[int, _Piece]],
             backwards: bool) -> bool:
    """Did part k not run, being the ``|| b`` of a grep that printed?"""
    if backwards:
        return False
    prev = k - 1
    return parts[k].or_else and prev >= 0 and parts[prev].prints_if_ok and any(
        j == prev and p.end > p.start for j, p in done)


def _notice(line: str) -> bool:
    """grep's notes that are no hit (``grep: f: binary file matches``)."""
    return line.startswith(("grep: ", "Binary file "))


def _find(lines: list[str], pos: int, stop: int, want: list[str]) -> int | None:
    """The first place from ``pos`` where ``want`` is printed whole (or up to ``stop``)."""
    head = norm(want[0])
    for at in range(pos, stop):
        if norm(lines[at]) != head:
            continue
        m = min(len(want), stop - at)
        if all(_same(lines[at + j], want[j]) for j in range(m)):
            return at
    return None


def _backward(tail: list[str], parts: list[Part], plans: list[_Plan],
              last_head: int) -> list[tuple[int, _Piece]] | None:
    """The tail of a cut output: parts from the last one backwards, each matched from
    its end; the one the cut went through gets the tail's first line as its cut edge."""
    rev_lines = tail[::-1]
    order = list(range(len(parts) - 1, last_head - 1, -1))
    rev_plans = [_reverse(plans[k]) for k in order]
    rev_parts = [parts[k] for k in order]
    pieces = _forward(rev_lines, 0, len(rev_lines), rev_parts, rev_plans, 0, cut_at_end=True,
                      backwards=True)
    if pieces is None:
        return None
    out: list[tuple[int, _Piece]] = []
    n = len(tail)
    for j, piece in pieces:
        k = order[j]
        plan = plans[k]
        size = piece.end - piece.start
        total = len(plan.lines) if plan.lines is not None else None
        offset = total - piece.offset - size if total is not None and piece.matched else 0
        out.append((k, _Piece(n - piece.end, n - piece.start, cut_head=piece.cut_tail,
                              offset=offset, matched=piece.matched)))
    return out[::-1]


def _reverse(plan: _Plan) -> _Plan:
    return _Plan(plan.numbers[::-1] if plan.numbers is not None else None,
                 plan.lines[::-1] if plan.lines is not None else None, plan.count, plan.sure)


# --------------------------------------------------------------------------- reads


def _reads(lines: list[str], part: Part, plan: _Plan, pieces: list[_Piece],
           shown: Callable[[Seg, list[str], bool, bool], list[Read]]) -> list[Read]:
    """A part's reads from its pieces: a file's lines by their known numbers where they
    were where expected, else by its window (alignment places them); a parser's hits."""
    if part.kind == "parsed":
        got = [ln for p in pieces for ln in lines[p.start:p.end]]
        if part.parse is not None and got:
            return part.parse(got)
        return list(part.fallback)
    if part.kind != "file":
        return []
    seg = part.segs[0]
    out: list[Read] = []
    for p in pieces:
        block = lines[p.start:p.end]
        if not block:
            continue
        if p.matched and plan.numbers is not None:
            numbers = plan.numbers[p.offset:p.offset + len(block)]
            texts = [_GREP_N.sub("", ln, count=1) for ln in block] \
                if seg.grep_numbers == "lines" else block
            if seg.numbered == "exact":
                texts = [_NUMBER.sub("", ln, count=1) for ln in texts]
            out.append(numbered_read(seg.path, numbers, texts, seg.base, False,
                                     p.cut_head, p.cut_tail))
        elif len(part.segs) == 1:
            out.extend(shown(seg, block, p.cut_head, p.cut_tail))
        else:   # several windows whose text is not where expected: the text says where
            loose = replace(seg, start=None, end=None, loose=seg.numbered != "exact")
            out.extend(shown(loose, block, p.cut_head, p.cut_tail))
    return out
