"""Which base-commit lines a tool result showed: its text, aligned with the base text.

The command proposes the file and the window; the text decides (docs/metrics.md,
"Alignment"). Each shown line is given the base line it is, or none: a line whose text
has no base counterpart at the aligned place is the agent's own and credits nothing.

How, for k shown lines (cost about O(k log k) plus the index of the file, built once):

1. **Expected places first.** The edit map says where each shown line should be
   (``expect``: its current number mapped to the base). When every shown line has that
   text there, that is the answer: the common case costs k string comparisons.
2. **Anchors.** Otherwise every line whose text occurs once in the base file is an
   anchor candidate, and so is every line found at its expected place. The longest chain
   of candidates increasing in both shown order and base line (a longest increasing
   subsequence) is kept: lines that moved together stay together, a stray match far
   away is dropped.
3. **Between anchors**, lines are matched with the base lines between them: one to one
   when the counts agree and the texts match, else by a longest-common-subsequence
   match of the two short runs. Repeated lines (blank lines, braces, ``return None``)
   are placed here, in order, between distinctive neighbours.
4. **Before the first and after the last anchor** the run is extended outwards in the
   same way, over a bounded stretch of the base file.
5. **Cut edges.** A first (last) line a harness cut is the end (start) of the base
   line next to its aligned neighbour.

Without any anchor, lines with an expected place are matched near it, and lines of
scattered output (``grep`` without ``-n``) are placed in order at their first possible
base line.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from streameval.sources.basetext import BaseText, norm

__all__ = ["align", "as_expected"]

#: base lines searched beyond an edge anchor (insertions and deletions near the edge)
_SLACK = 64
#: a gap larger than this (shown x base lines) is matched greedily from both ends
_MAX_GAP_WORK = 250_000


def align(lines: Sequence[str], base: BaseText, expect: Sequence[int | None] | None = None,
          adjacent: Sequence[bool] | None = None, cut_head: bool = False,
          cut_tail: bool = False) -> list[int | None]:
    """The base line of each shown line, or None.

    ``expect[i]``: where the edit map says line i is in the base (None: not known);
    ``adjacent[i]``: line i directly follows line i-1 in the file (``adjacent[0]`` is
    ignored); None means all lines are one run.
    """
    k = len(lines)
    if not k:
        return []
    if expect is not None and as_expected(lines, base, expect, cut_head, cut_tail):
        return list(expect)
    texts = [norm(x) for x in lines]
    if adjacent is None:
        adjacent = [True] * k
    out: list[int | None] = [None] * k
    chain = _anchors(texts, base, expect)
    for i, b in chain:
        out[i] = b
    bounds = [(-1, 0)] + chain + [(k, len(base) + 1)]
    for (i1, b1), (i2, b2) in zip(bounds, bounds[1:]):
        if i2 - i1 > 1:
            _fill(texts, base, out, i1, i2, b1, b2, expect, adjacent, bool(chain))
    _cut_edges(texts, base, out, adjacent, cut_head, cut_tail)
    return out


def as_expected(lines: Sequence[str], base: BaseText, expect: Sequence[int | None],
                cut_head: bool = False, cut_tail: bool = False) -> bool:
    """Is every shown line the text of the base line it is expected at? (Step 1: the
    common case, k string comparisons; raw text first, normalized only when it differs.)"""
    last = len(lines) - 1
    if len(expect) <= last:
        return False
    raw = base.raw_lines
    n = len(raw)
    first = expect[0]
    if first is not None and 1 <= first and first + last <= n and \
            expect[last] == first + last and raw[first - 1:first + last] == list(lines) \
            and list(expect) == list(range(first, first + last + 1)):
        return True        # one run, the file's own text: compared at C speed
    for i, (shown, e) in enumerate(zip(lines, expect)):
        if e is None or not 1 <= e <= n:
            return False
        if raw[e - 1] == shown:
            continue
        t = norm(shown)
        if base.line(e) == t:
            continue
        if i == 0 and _first_trimmed(base.line(e), t):
            continue
        if (i == 0 and cut_head and base.ends_with(e, t)) or (
                i == last and cut_tail and base.starts_with(e, t)):
            continue
        return False
    return True


def _anchors(texts: list[str], base: BaseText, expect: Sequence[int | None] | None,
             ) -> list[tuple[int, int]]:
    """Anchor candidates (unique texts, confirmed expected places), then the longest
    chain increasing in both coordinates.

    A line found at its expected place is a candidate only when the nearest unique
    line agrees with that place (same offset between shown and base lines): a repeated
    line (a blank, ``return None``) matching where a wrong proposal put it must not
    outvote the distinctive lines around it (a harness that trimmed a leading blank
    line shifts the whole proposal by one). A repeated line is one only beside another
    line found where expected: a blank line alone at its expected place after an edit
    nobody recorded moved its neighbours is a coincidence, not evidence."""
    unique: list[tuple[int, int]] = []
    for i, t in enumerate(texts):
        if t.strip():
            pos = base.positions(t)
            if len(pos) == 1:
                unique.append((i, pos[0]))
    if expect is not None:
        # a unique line far from where the map expects it is a line the agent wrote
        # with the text of one elsewhere (a copied block), unless nothing is near
        reach = max(_SLACK, len(texts))
        near = [(i, b) for i, b in unique if expect[i] is None or abs(b - expect[i]) <= reach]
        if near:
            unique = near
    cands = dict(unique)
    if expect is not None:
        firsts = [j for j, _ in unique]
        found: dict[int, int] = {}
        for i, t in enumerate(texts):
            e = expect[i]
            if i in cands or e is None or base.line(e) != t:
                continue
            if unique and not _agrees(i, e, unique, firsts):
                continue
            found[i] = e
        for i, e in found.items():
            beside = any(j in (i - 1, i + 1) and b == e + j - i
                         for j, b in (*found.items(), *cands.items()))
            if beside or len(base.positions(texts[i])) == 1:
                cands[i] = e
    return _increasing_chain(sorted(cands.items()))


def _agrees(i: int, e: int, unique: list[tuple[int, int]], firsts: list[int]) -> bool:
    """Does the nearest unique anchor put shown line ``i`` at base line ``e``?"""
    k = bisect_left(firsts, i)
    near = [unique[x] for x in (k - 1, k) if 0 <= x < len(unique)]
    j, b = min(near, key=lambda p: abs(p[0] - i))
    return e - b == i - j


def _increasing_chain(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest subsequence strictly increasing in both coordinates (pairs come sorted by
    the first, which is distinct): patience sorting on the second, O(n log n)."""
    tails: list[int] = []          # smallest end value of a chain of each length
    tail_at: list[int] = []        # index (in pairs) of that end
    back: list[int] = [-1] * len(pairs)
    for n, (_, b) in enumerate(pairs):
        j = bisect_left(tails, b)
        if j > 0:
            back[n] = tail_at[j - 1]
        if j == len(tails):
            tails.append(b)
            tail_at.append(n)
        else:
            tails[j] = b
            tail_at[j] = n
    chain: list[tuple[int, int]] = []
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    chain.reverse()
    return chain


def _fill(texts: list[str], base: BaseText, out: list[int | None], i1: int, i2: int,
          b1: int, b2: int, expect: Sequence[int | None] | None, adjacent: Sequence[bool],
          anchored: bool) -> None:
    """Shown lines strictly between i1 and i2 against base lines strictly between b1 and
    b2 (the chain's neighbours, or the file's ends with the edges' slack)."""
    lo_i, hi_i = i1 + 1, i2            # shown lines lo_i .. hi_i-1
    run = all(adjacent[i] for i in range(lo_i + 1, hi_i))
    attached = (i1 >= 0 and adjacent[lo_i]) or (i2 < len(texts) and adjacent[i2])
    if not run or (not attached and (anchored or expect is None)):
        # groups of lines with unknown gaps between them (grep hits, grep -A groups):
        # each group is placed whole, anywhere between its neighbours
        lo_b, hi_b = (b1 + 1, b2) if anchored else \
            _unanchored_range(texts, base, expect, lo_i, hi_i, b1, b2)
        _place_runs(texts, base, out, lo_i, hi_i, lo_b, hi_b, expect, adjacent, (i1, b1),
                    (i2, b2))
        return
    if not anchored:
        lo_b, hi_b = _unanchored_range(texts, base, expect, lo_i, hi_i, b1, b2)
    else:
        lo_b, hi_b = b1 + 1, b2        # base lines lo_b .. hi_b-1
        if i1 < 0:
            lo_b = max(lo_b, b2 - (hi_i - lo_i) - _SLACK)
        if i2 >= len(texts):
            hi_b = min(hi_b, b1 + (hi_i - lo_i) + _SLACK + 1)
    if hi_b <= lo_b:
        return
    _match_run(texts, base, out, lo_i, hi_i, lo_b, hi_b, i1 < 0 and anchored,
               anchored and (i1 < 0 or i2 >= len(texts)), expect)


def _place_runs(texts: list[str], base: BaseText, out: list[int | None], lo_i: int, hi_i: int,
                lo_b: int, hi_b: int, expect: Sequence[int | None] | None,
                adjacent: Sequence[bool], before: tuple[int, int],
                after: tuple[int, int]) -> None:
    """Shown lines lo_i .. hi_i-1, in runs of consecutive file lines (``adjacent``), in
    order between base lines lo_b and hi_b-1. A run that continues the anchor before it
    (or leads into the one after it) is matched from that anchor; any other is placed
    whole where its text stands, in order, nearest its expected place."""
    (i1, b1), (i2, b2) = before, after
    runs: list[tuple[int, int]] = []
    s = lo_i
    for i in range(lo_i + 1, hi_i):
        if not adjacent[i]:
            runs.append((s, i))
            s = i
    runs.append((s, hi_i))
    floor = lo_b
    for idx, (s, e) in enumerate(runs):
        n = e - s
        if idx == 0 and i1 >= 0 and adjacent[s]:
            _match_run(texts, base, out, s, e, b1 + 1, min(hi_b, b1 + 1 + n + _SLACK), False)
        elif idx == len(runs) - 1 and i2 < len(texts) and adjacent[i2]:
            top = max(floor, b2 - n - _SLACK)
            if top < b2:
                _match_run(texts, base, out, s, e, top, b2, True)
        else:
            _place_block(texts, base, out, s, e, floor, hi_b, expect)
        placed = [b for b in out[s:e] if b is not None]
        if placed:
            floor = max(placed) + 1


#: candidate places tried for one run of lines (the most distinctive line's occurrences)
_MAX_PLACES = 400


def _place_block(texts: list[str], base: BaseText, out: list[int | None], s: int, e: int,
                 lo: int, hi: int, expect: Sequence[int | None] | None) -> None:
    """Lines s..e-1, consecutive in the file: at the place between lo and hi-1 where most
    of them have their text (all, as a rule), nearest the expected place, else the
    first; lines that differ there are left unplaced. No place with half of them: each
    line alone (``_place_each``)."""
    n = e - s
    key = min(range(s, e), key=lambda j: (not texts[j].strip(), len(base.positions(texts[j]))))
    off = key - s
    pos = base.positions(texts[key])
    a = bisect_left(pos, lo + off)
    z = bisect_right(pos, hi - 1 - (n - 1 - off))
    want = next((x - (j - s) for j in range(s, e) if expect is not None
                 and (x := expect[j]) is not None), None)
    best: tuple[int, int, int] | None = None     # (-matches, distance, start)
    for p in pos[a:min(z, a + _MAX_PLACES)]:
        start = p - off
        hits = sum(1 for j in range(n) if base.line(start + j) == texts[s + j])
        cand = (-hits, abs(start - want) if want is not None else 0, start)
        if best is None or cand < best:
            best = cand
    if best is None or -best[0] * 2 < n:
        _place_each(texts, base, out, s, e, lo, hi, expect)
        return
    start = best[2]
    for j in range(n):
        if base.line(start + j) == texts[s + j]:
            out[s + j] = start + j


def _unanchored_range(texts: list[str], base: BaseText, expect: Sequence[int | None] | None,
                      lo_i: int, hi_i: int, b1: int, b2: int) -> tuple[int, int]:
    """Where to look when no line anchors the text: near the expected places, or
    the whole file."""
    known = [e for e in (expect[lo_i:hi_i] if expect is not None else ()) if e is not None]
    if known:
        return max(b1 + 1, min(known) - _SLACK), min(b2, max(known) + _SLACK + 1)
    return b1 + 1, b2


def _match_run(texts: list[str], base: BaseText, out: list[int | None], lo_i: int, hi_i: int,
               lo_b: int, hi_b: int, toward_end: bool, edge: bool = False,
               expect: Sequence[int | None] | None = None) -> None:
    """A run of consecutive shown lines against a stretch of base lines (``edge``: the
    run before the first or after the last anchor, matched outwards from it)."""
    n_s, n_b = hi_i - lo_i, hi_b - lo_b
    if n_s == n_b and all(base.line(lo_b + j) == texts[lo_i + j] for j in range(n_s)):
        for j in range(n_s):
            out[lo_i + j] = lo_b + j
        return
    if n_s * n_b > _MAX_GAP_WORK:
        _greedy_ends(texts, base, out, lo_i, hi_i, lo_b, hi_b)
        return
    shown = texts[lo_i:hi_i]
    stretch = [base.line(b) or "" for b in range(lo_b, hi_b)]
    if toward_end:
        # before the first anchor: match nearest the anchor (reverse, then map back)
        sm = difflib.SequenceMatcher(None, shown[::-1], stretch[::-1], autojunk=False)
        for a, b, size in sm.get_matching_blocks():
            first = hi_i - a - size         # the block's first shown line, its base line
            if edge and _stray(texts, base, first, size, hi_b - b - size, a == 0 and b == 0, expect):
                continue
            for j in range(size):
                out[hi_i - 1 - (a + j)] = hi_b - 1 - (b + j)
        return
    sm = difflib.SequenceMatcher(None, shown, stretch, autojunk=False)
    for a, b, size in sm.get_matching_blocks():
        if edge and _stray(texts, base, lo_i + a, size, lo_b + b, a == 0 and b == 0, expect):
            continue
        for j in range(size):
            out[lo_i + a + j] = lo_b + b + j


def _stray(texts: list[str], base: BaseText, i: int, size: int, b: int, beside: bool,
           expect: Sequence[int | None] | None) -> bool:
    """Beyond the last anchor, a matched block of lines with no word in them (blank
    lines, ``)``, ``}``), away from the anchor and from where the map expects them, is a
    coincidence: such lines are everywhere, and an edit between moved them (the agent's
    own, as a diff says). Not when one of them occurs once in the file: then it is where
    it is, as any unique line is."""
    block = texts[i:i + size]
    if beside or size == 0 or any(c.isalnum() for t in block for c in t):
        return False
    if any(len(base.positions(t)) == 1 for t in block):
        return False
    return expect is None or expect[i] != b


def _greedy_ends(texts: list[str], base: BaseText, out: list[int | None], lo_i: int,
                 hi_i: int, lo_b: int, hi_b: int) -> None:
    """Match equal lines forward from the start and backward from the end."""
    i, b = lo_i, lo_b
    while i < hi_i and b < hi_b and base.line(b) == texts[i]:
        out[i] = b
        i, b = i + 1, b + 1
    j, c = hi_i - 1, hi_b - 1
    while j >= i and c >= b and base.line(c) == texts[j]:
        out[j] = c
        j, c = j - 1, c - 1


def _place_each(texts: list[str], base: BaseText, out: list[int | None], lo_i: int, hi_i: int,
                lo_b: int, hi_b: int, expect: Sequence[int | None] | None) -> None:
    """Scattered lines (grep hits): each at a base line with its text, in order,
    nearest its expected place when it has one, else the first free one."""
    floor = lo_b
    for i in range(lo_i, hi_i):
        pos = base.positions(texts[i])
        a = bisect_left(pos, floor)
        z = bisect_right(pos, hi_b - 1)
        if a >= z:
            continue
        e = expect[i] if expect is not None else None
        pick = pos[a] if e is None else min(pos[a:z], key=lambda p: abs(p - e))
        out[i] = pick
        floor = pick + 1


def _first_trimmed(base_line: str | None, shown: str) -> bool:
    """The output's first line lost its leading blanks (a terminal or a harness that
    strips the output: OpenHands' SDK shell does)."""
    return base_line is not None and base_line != shown and bool(shown) \
        and base_line.lstrip() == shown.lstrip() and not shown[:1].isspace()


def _cut_edges(texts: list[str], base: BaseText, out: list[int | None],
               adjacent: Sequence[bool], cut_head: bool, cut_tail: bool) -> None:
    """A line a harness cut in two is the end (start) of its neighbour's base line; a
    first line that only lost its leading blanks is its neighbour's line before."""
    k = len(texts)
    if out[0] is None and k > 1 and out[1] is not None and adjacent[1] \
            and _first_trimmed(base.line(out[1] - 1), texts[0]):
        out[0] = out[1] - 1
    if cut_head and out[0] is None and k > 1 and out[1] is not None and adjacent[1] \
            and base.ends_with(out[1] - 1, texts[0]):
        out[0] = out[1] - 1
    if cut_tail and out[-1] is None and k > 1 and out[-2] is not None and adjacent[-1] \
            and base.starts_with(out[-2] + 1, texts[-1]):
        out[-1] = out[-2] + 1
    if cut_head and out[0] is None and texts[0].strip():
        # not next to a placed line (lines with gaps, in file order): the nearest line
        # before the first placed one that the piece can be the end of
        after = next((b for b in out if b is not None), len(base) + 1)
        out[0] = next((b for b in range(after - 1, 0, -1) if base.ends_with(b, texts[0])),
                      None)
    if cut_tail and out[-1] is None and texts[-1].strip():
        before = next((b for b in reversed(out) if b is not None), 0)
        out[-1] = next((b for b in range(before + 1, len(base) + 1)
                        if base.starts_with(b, texts[-1])), None)
