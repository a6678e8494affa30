"""Sets of integers kept as sorted, disjoint, closed intervals.

Every granularity below "file" is a set of integers per file (bytes or line
numbers). Keeping them as merged intervals makes a step cost proportional to the
intervals it touches, and ``add`` returning the *newly* covered pieces is what lets
``state.InstanceState`` update |P| and |G ∩ P| without recomputing anything.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

__all__ = ["IntervalSet", "merge_ranges"]


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-touching closed ranges covering exactly ``ranges``
    (``a > b`` ranges are empty)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[0] <= r[1]):
        if out and a <= out[-1][1] + 1:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


class IntervalSet:
    """Disjoint closed integer intervals ``[a, b]``; touching ones are merged.

    ``[1, 3]`` and ``[4, 6]`` merge into ``[1, 6]`` because the set holds integers.
    """

    __slots__ = ("_starts", "_ends", "_total")

    def __init__(self, intervals: Iterable[tuple[int, int]] = ()):
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._total = 0
        for a, b in intervals:
            self.add(a, b)

    @classmethod
    def from_ranges(cls, ranges: Iterable[tuple[int, int]]) -> IntervalSet:
        """A set built in one pass (sort, then merge): what a step's own ranges need,
        without the bisect-and-splice of ``add`` per range. ``a > b`` ranges are empty."""
        out = cls()
        merged = merge_ranges(ranges)
        out._starts = [a for a, _ in merged]
        out._ends = [b for _, b in merged]
        out._total = sum(b - a + 1 for a, b in merged)
        return out

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        """Number of disjoint intervals (not of integers: see ``total``)."""
        return len(self._starts)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(zip(self._starts, self._ends))

    def __repr__(self) -> str:
        return f"IntervalSet({list(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IntervalSet):
            return NotImplemented
        return self._starts == other._starts and self._ends == other._ends

    @property
    def total(self) -> int:
        """How many integers the set holds."""
        return self._total

    def __contains__(self, x: int) -> bool:
        i = bisect_right(self._starts, x) - 1
        return i >= 0 and self._ends[i] >= x

    def overlap(self, a: int, b: int) -> int:
        """How many integers of ``[a, b]`` are in the set (0 when ``a > b``)."""
        if a > b or not self._starts:
            return 0
        starts, ends = self._starts, self._ends
        # first interval that could reach a: the one starting at or before a, else the next
        i = bisect_right(starts, a) - 1
        if i < 0 or ends[i] < a:
            i += 1
        n = 0
        while i < len(starts) and starts[i] <= b:
            lo = starts[i] if starts[i] > a else a
            hi = ends[i] if ends[i] < b else b
            n += hi - lo + 1
            i += 1
        return n

    def intersection_total(self, other: IntervalSet) -> int:
        """``|self ∩ other|`` by a linear merge of the two interval lists."""
        i = j = n = 0
        s1, e1, s2, e2 = self._starts, self._ends, other._starts, other._ends
        while i < len(s1) and j < len(s2):
            lo = max(s1[i], s2[j])
            hi = min(e1[i], e2[j])
            if lo <= hi:
                n += hi - lo + 1
            if e1[i] < e2[j]:
                i += 1
            else:
                j += 1
        return n

    # ------------------------------------------------------------------ update
    def add(self, a: int, b: int) -> list[tuple[int, int]]:
        """Add ``[a, b]``; return the pieces of it that were not in the set before.

        The pieces are disjoint, sorted, and together hold exactly the integers that
        this call added. ``a > b`` adds nothing.
        """
        if a > b:
            return []
        starts, ends = self._starts, self._ends
        # intervals that overlap or touch [a, b]: those with start <= b+1 and end >= a-1
        lo = bisect_left(ends, a - 1)
        hi = bisect_right(starts, b + 1)
        if lo == hi:  # nothing touches: a plain insert
            starts.insert(lo, a)
            ends.insert(lo, b)
            self._total += b - a + 1
            return [(a, b)]
        new: list[tuple[int, int]] = []
        cursor = a
        for k in range(lo, hi):
            s, e = starts[k], ends[k]
            if s > cursor:
                new.append((cursor, min(s - 1, b)))
            cursor = max(cursor, e + 1)
        if cursor <= b:
            new.append((cursor, b))
        merged_start = min(a, starts[lo])
        merged_end = max(b, ends[hi - 1])
        starts[lo:hi] = [merged_start]
        ends[lo:hi] = [merged_end]
        self._total += sum(y - x + 1 for x, y in new)
        return new

    def update(self, intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Add several intervals; return every newly covered piece."""
        out: list[tuple[int, int]] = []
        for a, b in intervals:
            out.extend(self.add(a, b))
        return out

    def copy(self) -> IntervalSet:
        c = IntervalSet()
        c._starts = list(self._starts)
        c._ends = list(self._ends)
        c._total = self._total
        return c
