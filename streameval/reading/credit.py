"""One read -> the base-commit lines it credits, and how sure that is.

With a repository and the shown text, the text decides (``align``): the read proposes
where its lines are (its window or printed numbers, through the edit map), alignment
says which base line each shown line is, and the map then follows what was seen
(``EditMap.observe``). A line is credited only when the agent was shown it: a blank
line a harness trimmed from the edge of an output (Claude Code drops leading blank lines
and trailing white space) was printed, but never shown, and credits nothing.

Without the text (a format that keeps no results) or without a repository (``inspect``
alone), the window the command asked for is credited, clamped to the file, and those
lines are counted as *unaligned*, so users can see how much of a run was read by text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import TYPE_CHECKING

from streameval.errors import Reason
from streameval.intervals import merge_ranges
from streameval.model import Read, Shown
from streameval.reading.align import align, as_expected
from streameval.reading.editmap import EditMap, MapChange
from streameval.reading.output.numbered import numbered_runs
from streameval.sources.basetext import BaseText, BaseTexts

if TYPE_CHECKING:
    from streameval.sources.repo import RepoView

__all__ = ["Credit", "Creditor"]


@dataclass(slots=True)
class Credit:
    """What one read credits: base ranges, and its shown lines by outcome. (Not frozen:
    made for every read and read once; a frozen dataclass costs three times as much
    to make.)"""

    #: the window(s) proposed, in current numbers: one range, or the runs of printed
    #: numbers (grep hits); empty when the text alone says where
    current: list[tuple[int, int]]
    base: list[tuple[int, int]]
    aligned: int = 0          # shown lines placed on a base line
    agent: int = 0            # shown lines with no base counterpart (the agent's own)
    unaligned: int = 0        # lines credited from the window, without text
    change: MapChange = MapChange.NONE  # what the read did to the edit map
    nothing: bool = False      # the read showed no line of the file at all
    by_text: bool = False      # the shown text was compared with the base text


class Creditor:
    """Credits reads of one run against the base commit, keeping its edit map honest."""

    def __init__(self, view: RepoView | None, edits: EditMap, texts: BaseTexts | None = None):
        self.view = view
        self.edits = edits
        self.texts = texts if texts is not None else BaseTexts(16 << 20)
        #: called with (repo path, read, shown lines, base line of each, base text) after
        #: every alignment: benchmarks and audits check the credit against the text
        self.audit: Callable[[str, Read, list[str], list[int | None], BaseText], None] | None = None
        #: credit every read by its window, never by its text (what a reader that trusts
        #: the commands would do: the benchmarks' baseline)
        self.window_only = False

    # ------------------------------------------------------------------ entry
    def credit(self, read: Read, repo: str, lengths: dict[str, int], printed: bool,
               problems: list[tuple[Reason, str]]) -> Credit | None:
        """``lengths``: the call's files' current lengths as the map has them, looked up
        here when a read needs one (most reads of text do not); ``printed``: the call
        printed something. None when the read showed nothing of the file."""
        if read.shown is not None and read.shown.end_piece:
            read = _end_piece(read, self._length(repo, lengths) if self.view is not None else None)
        shown = read.shown
        base = self.texts.get(self.view, repo) if (
            shown is not None and self.view is not None and not self.window_only) else None
        if shown is None or base is None:
            return self._window(read, repo, self._length(repo, lengths), printed, problems)
        return self._aligned(read, shown, repo, base, lengths)

    def _length(self, repo: str, lengths: dict[str, int]) -> int:
        n = lengths.get(repo)
        if n is None:
            n = lengths[repo] = self.edits.num_lines(repo) or 0
        return n

    # ------------------------------------------------------------------ by text
    def _aligned(self, read: Read, shown: Shown, repo: str, base: BaseText,
                 lengths: dict[str, int]) -> Credit | None:
        if self.audit is None:
            usual = self._as_printed(shown, repo, base) if shown.numbers is not None else \
                self._as_window(read, shown, repo, base)
            if usual is not None:
                return usual
        lines = list(shown.lines)
        if not lines:
            # an empty output: a file of no lines was shown; any other showed nothing
            return Credit([], [], nothing=len(base) > 0, by_text=True)
        numbers = list(shown.numbers) if shown.numbers is not None else None
        first = self._first_line(read, shown, repo, lengths)
        # the text the lines are aligned with: the file as the edits made it (positions
        # are current numbers, each with its base line), or the base text itself
        ref, ref_ids = base, None
        if not shown.base:
            current = self.edits.reference(repo)
            if current is not None:
                ref, ref_ids = current
        if numbers is not None:
            expect: list[int | None] | None = list(numbers)
        elif shown.gaps or first is None:
            expect = None
        else:
            expect = list(range(first, first + len(lines)))
        exact = expect is not None and as_expected(lines, ref, expect, shown.cut_head,
                                                   shown.cut_tail)
        if exact:
            pos: list[int | None] = list(expect)   # every line where expected
        else:
            pos = align(lines, ref, expect, _adjacent(numbers, shown, len(lines)),
                        shown.cut_head, shown.cut_tail)
        if not exact and expect and numbers is None and not shown.gaps and not shown.cut_head \
                and first is not None:
            # the output began after blank lines a harness trimmed: they were not shown
            # (no credit), but the shown lines are numbered from after them
            first += _trimmed_head(ref, pos, expect[0])
        ids = pos if ref_ids is None else \
            [ref_ids[p - 1] if p is not None else None for p in pos]
        exact = exact and None not in ids
        if self.audit is not None:
            self.audit(repo, read, lines, ids, base)
        changed = MapChange.NONE
        if not shown.base and not shown.loose and not shown.gaps:
            changed = self._observe(repo, read, numbers, first, ids, lines)
        placed = ids if exact else [b for b in ids if b is not None]
        shown_count = len(lines)
        agent = 0 if shown.loose or exact else ids[:shown_count].count(None)
        current = self._current(read, numbers, first, shown_count)
        if not placed and shown.loose:
            return None    # a guessed file whose text is nowhere in the output
        if placed and placed == list(range(placed[0], placed[-1] + 1)):
            ranges, aligned = [(placed[0], placed[-1])], len(placed)   # the usual read
        else:
            ranges, aligned = merge_ranges((b, b) for b in placed), len(set(placed))
        return Credit(current, ranges, aligned=aligned, agent=agent, change=changed,
                      by_text=True)

    def _as_printed(self, shown: Shown, repo: str, base: BaseText) -> Credit | None:
        """The usual numbered read, or None: printed numbers of a file that no edit and
        no read has moved, every line the base text's own at its number (a window, or
        grep's hits). It credits what the path below would (every line where expected,
        remembered by the map as agreeing), without its copies of the lines, in C
        where it can; most of a live trace's calls."""
        numbers, lines = shown.numbers, shown.lines
        k = len(lines)
        if not k or numbers is None or len(numbers) != k or shown.loose or shown.gaps \
                or shown.base or self.edits.is_mapped(repo):
            return None
        first = numbers[0]
        last = first + k - 1
        raw = base.raw_lines
        if numbers[-1] == last and (k == 1 or numbers == tuple(range(first, last + 1))):
            if first < 1 or last > len(raw) or raw[first - 1:last] != list(lines):
                return None
            self.edits.observe_numbered(repo, numbers, numbers, lines)
            return Credit([(first, last)], [(first, last)], aligned=k, by_text=True)
        if min(numbers) < 1 or max(numbers) > len(raw) or \
                itemgetter(*[b - 1 for b in numbers])(raw) != tuple(lines):
            return None
        self.edits.observe_numbered(repo, numbers, numbers, lines)
        runs = numbered_runs(numbers)
        return Credit(runs, list(runs), aligned=len(set(numbers)), by_text=True)

    def _as_window(self, read: Read, shown: Shown, repo: str, base: BaseText) -> Credit | None:
        """The usual unnumbered read, or None: a run of lines from a known first line
        (``sed -n a,bp``, ``head``), of a file that no edit and no read has moved, every
        line the base text's own. It credits what the path below would, without its
        copies. (Not a whole file: there the map takes the read in whole.)"""
        lines = shown.lines
        k = len(lines)
        start = read.start
        if not k or shown.gaps or shown.loose or shown.base or shown.cut_head or \
                shown.cut_tail or (start is None and read.end is None) or \
                (start is not None and start < 1) or self.edits.is_mapped(repo):
            return None
        first = 1 if start is None else start
        last = first + k - 1
        if last > len(base.raw_lines) or base.raw_lines[first - 1:last] != list(lines):
            return None
        self.edits.observe(repo, first, list(range(first, last + 1)), list(lines))
        return Credit([(first, last)], [(first, last)], aligned=k, by_text=True)

    def _first_line(self, read: Read, shown: Shown, repo: str,
                    lengths: dict[str, int]) -> int | None:
        """Current number of the first shown line of a run of lines, when known (not
        for a text other output may be mixed into: it says nothing of where it starts)."""
        if shown.numbers is not None or shown.gaps or (shown.loose and read.start is None):
            return None
        start = read.start
        if start is None:
            return None if shown.cut_head else 1
        if start < 0:
            n = self._length(repo, lengths)
            return max(1, n + start + 1) if n else None
        return start

    def _observe(self, repo: str, read: Read, numbers: list[int] | None, first: int | None,
                 ids: list[int | None], lines: list[str]) -> MapChange:
        """Let the map follow what the read showed (runs of known current numbers)."""
        if numbers is not None:
            return self.edits.observe_numbered(repo, numbers, ids, lines)
        if first is None:
            return MapChange.NONE
        whole = read.start is None and read.end is None and not (
            read.shown and (read.shown.cut_head or read.shown.cut_tail))
        return self.edits.observe(repo, first, ids[:len(lines)], lines, whole=whole)

    @staticmethod
    def _current(read: Read, numbers: list[int] | None, first: int | None,
                 k: int) -> list[tuple[int, int]]:
        if numbers:
            return numbered_runs(numbers)
        if first is not None:
            return [(first, first + k - 1)]
        if read.start is not None and read.end is not None and read.start > 0:
            return [(read.start, read.end)]
        return []

    # ------------------------------------------------------------------ by window
    def _window(self, read: Read, repo: str, n: int, printed: bool,
                problems: list[tuple[Reason, str]]) -> Credit | None:
        """The window as asked (no text, or no repository): clamped, mapped, unaligned.
        Printed numbers (grep hits) are the windows when the text cannot be checked."""
        numbers = read.shown.numbers if read.shown is not None else None
        asked = numbered_runs(numbers) if numbers else [(read.start, read.end)]
        if self.view is None:   # nothing to clamp to: a window without an end is no range
            base = [(a or 1, b) for a, b in asked if b is not None]
            return Credit(base, base, unaligned=sum(b - a + 1 for a, b in base))
        current = [w for w in (_clamp(a, b, repo, n, problems) for a, b in asked) if w]
        if not current and n and not printed:
            return None
        base = merge_ranges(r for w in current for r in self.edits.to_base(repo, *w))
        return Credit(current, base, unaligned=sum(b - a + 1 for a, b in base))


def _end_piece(read: Read, n: int | None) -> Read:
    """A read whose last numbered line is empty and may be the piece after the final
    newline (``Shown.end_piece``): a line of the file when the file, ``n`` lines long
    now, has one of that number; else no line, and left out. Without the file's length
    (no repository) it is taken for the piece: a read that stopped short of its limit
    reached the file's end."""
    shown = read.shown
    assert shown is not None and shown.numbers
    if n is not None and shown.numbers[-1] <= n:
        return replace(read, shown=replace(shown, end_piece=False))
    numbers, lines = shown.numbers[:-1], shown.lines[:-1]
    if not numbers:   # an empty file: it showed no line
        return replace(read, end=0, shown=replace(shown, lines=(), numbers=(), end_piece=False))
    return replace(read, start=min(numbers), end=max(numbers),
                   shown=replace(shown, lines=lines, numbers=numbers, end_piece=False))


def _trimmed_head(base: BaseText, ids: list[int | None], start: int | None) -> int:
    """How many blank lines at the start of the window a harness trimmed before the
    first shown line (Claude Code drops leading blank lines): the window's first base
    line ``start`` up to the first shown line, when every one of them is blank."""
    if start is None or not ids or ids[0] is None or ids[0] <= start:
        return 0
    gap = range(start, ids[0])
    return len(gap) if all(base.line(b) == "" for b in gap) else 0


def _adjacent(numbers: list[int] | None, shown: Shown, k: int) -> list[bool]:
    """Does shown line i directly follow line i-1 in the file? (By the printed numbers,
    else by grep's context groups, else all or none.)"""
    if numbers is not None:
        return [True] + [b == a + 1 for a, b in zip(numbers, numbers[1:])]
    if shown.gaps and shown.runs and sum(shown.runs) == k:
        out: list[bool] = []
        for r in shown.runs:
            out.extend([False] + [True] * (r - 1))
        return out
    return [not shown.gaps] * k


def _clamp(start: int | None, end: int | None, repo: str, n: int,
           problems: list[tuple[Reason, str]]) -> tuple[int, int] | None:
    """Lines the file really had (``n`` now; docs/metrics.md §6): None end or past EOF ->
    last line; negative start counts from the end; start > end is swapped (4b)."""
    if start is not None and end is not None and start > 0 and end > 0 and start > end:
        start, end = end, start
    if start is None or start == 0:
        start = 1
    elif start < 0:
        start = max(1, n + start + 1)
    if end is not None and end < 0:
        end = n + end + 1
    if end is None or end > n:
        end = n
    if start > end:
        if n and start > n:
            problems.append((Reason.BAD_LINE_RANGE,
                             f"{repo}: line {start} is past the end ({n} lines)"))
        return None
    return start, end
