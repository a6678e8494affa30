"""Sets of integers kept as sorted, disjoint, closed intervals.

Every granularity below "file" is a set of integers per file (bytes or line
numbers). Keeping them as merged intervals makes a step cost proportional to the
intervals it touches, and ``add`` returning the *newly* covered pieces is what lets
``state.InstanceState`` update |P| and |G ∩ P| without recomputing anything.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence

__all__ = ["IntervalSet", "canonical", "interval", "merge_ranges"]


def canonical(ranges: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]] | None:
    """The starts and ends of ``ranges`` when they already are what ``merge_ranges``
    makes (sorted, each ``a <= b``, none touching the next), else None. A step's ranges
    are, as a rule, and the sets of a step are then made without a sort."""
    if len(ranges) == 1:   # a step's one window of the file (the usual read)
        a, b = ranges[0]
        return ([a], [b]) if a <= b else None
    if not ranges:
        return None
    prev = None
    for a, b in ranges:
        if a > b or (prev is not None and a <= prev + 1):
            return None
        prev = b
    starts, ends = map(list, zip(*ranges))
    return starts, ends


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint, non-touching closed ranges covering exactly ``ranges``
    (``a > b`` ranges are empty)."""
    starts, ends, _total = _merged(ranges)
    return list(zip(starts, ends))


def _merged(ranges: Iterable[tuple[int, int]]) -> tuple[list[int], list[int], int]:
    """``merge_ranges`` as the starts and ends of the merged ranges, and the integers
    they hold: what an ``IntervalSet`` keeps, made without a tuple per range."""
    starts: list[int] = []
    ends: list[int] = []
    total = 0
    cur_a = cur_b = 0
    open_ = False
    for a, b in sorted(ranges):
        if a > b:
            continue
        if open_ and a <= cur_b + 1:
            if b > cur_b:
                cur_b = b
            continue
        if open_:
            starts.append(cur_a)
            ends.append(cur_b)
            total += cur_b - cur_a + 1
        cur_a, cur_b, open_ = a, b, True
    if open_:
        starts.append(cur_a)
        ends.append(cur_b)
        total += cur_b - cur_a + 1
    return starts, ends, total


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
    def of_canonical(cls, starts: list[int], ends: list[int]) -> IntervalSet:
        """The set of ranges ``canonical`` said are merged already (its lists, kept)."""
        out = cls.__new__(cls)
        out._starts, out._ends = starts, ends
        out._total = ends[0] - starts[0] + 1 if len(starts) == 1 else \
            sum(ends) - sum(starts) + len(starts)
        return out

    @classmethod
    def from_ranges(cls, ranges: Iterable[tuple[int, int]]) -> IntervalSet:
        """A set built in one pass (sort, then merge): what a step's own ranges need,
        without the bisect-and-splice of ``add`` per range. ``a > b`` ranges are empty."""
        out = cls()
        out._starts, out._ends, out._total = _merged(ranges)
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

    def single(self) -> tuple[int, int] | None:
        """The one interval of a set of one (a step's window of a file), else None."""
        return (self._starts[0], self._ends[0]) if len(self._starts) == 1 else None

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

    def add_set(self, other: IntervalSet) -> tuple[list[tuple[int, int]], int]:
        """Add every interval of ``other``; return the newly covered pieces (sorted,
        disjoint) and how many integers they hold.

        One pass for a whole step instead of one ``add`` each: a bisect per interval of
        ``other`` skips the stretch of this set before it, only the intervals it touches
        are visited, and the lists are spliced once. The set becomes what the ``add`` of
        each interval would make it, and the pieces hold the same integers.
        """
        a_s, a_e = other._starts, other._ends
        if not a_s:
            return [], 0
        starts, ends = self._starts, self._ends
        first, last = a_s[0], a_e[-1]
        i = bisect_right(starts, first) - 1
        if i >= 0 and ends[i] >= last:
            # all of ``other`` inside one interval: read again, nothing new (most steps
            # of a long run), found with one bisect
            return [], 0
        lo = bisect_left(ends, first - 1)
        hi = bisect_right(starts, last + 1)
        if lo == hi:   # nothing of this set touches the span of ``other``: an insert
            starts[lo:lo] = a_s
            ends[lo:lo] = a_e
            self._total += other._total
            return list(zip(a_s, a_e)), other._total
        if len(a_s) > 1:
            # the intervals of ``other`` inside one of this set's change nothing and add
            # nothing: a search step's hits read again, most of a long run's. A bisect
            # each finds them; the merge walks only the rest.
            kept_s: list[int] = []
            kept_e: list[int] = []
            for a, b in zip(a_s, a_e):
                j = bisect_right(starts, a, lo, hi) - 1
                if j < lo or ends[j] < b:
                    kept_s.append(a)
                    kept_e.append(b)
            if not kept_s:
                return [], 0
            if len(kept_s) < len(a_s):
                a_s, a_e = kept_s, kept_e
                lo = bisect_left(ends, a_s[0] - 1, lo, hi)
                hi = bisect_right(starts, a_e[-1] + 1, lo, hi)
        return self._merge(a_s, a_e, lo, hi)

    def _merge(self, a_s: list[int], a_e: list[int], lo: int, hi: int
               ) -> tuple[list[tuple[int, int]], int]:
        """``add_set`` where intervals ``lo .. hi-1`` of this set touch those given."""
        starts, ends = self._starts, self._ends
        out_s: list[int] = []
        out_e: list[int] = []
        new: list[tuple[int, int]] = []
        added = 0
        i = lo
        for a, b in zip(a_s, a_e):
            j = bisect_left(ends, a - 1, i, hi)
            if j > i:   # intervals of this set wholly before [a, b], untouched
                out_s += starts[i:j]
                out_e += ends[i:j]
                i = j
            if out_e and out_e[-1] >= a - 1:
                # the interval made so far reaches [a, b]: all of it up to there is held
                ms, me = out_s.pop(), out_e.pop()
                cursor = me + 1
                if b > me:
                    me = b
            else:
                ms, me, cursor = a, b, a
            while i < hi and starts[i] <= b + 1:
                s, e = starts[i], ends[i]
                if s > cursor:
                    new.append((cursor, s - 1))
                    added += s - cursor
                if e >= cursor:
                    cursor = e + 1
                if s < ms:
                    ms = s
                if e > me:
                    me = e
                i += 1
            if cursor <= b:
                new.append((cursor, b))
                added += b - cursor + 1
            out_s.append(ms)
            out_e.append(me)
        if i < hi:
            out_s += starts[i:hi]
            out_e += ends[i:hi]
        starts[lo:hi] = out_s
        ends[lo:hi] = out_e
        self._total += added
        return new, added

    def overlap_sorted(self, pieces: Iterable[tuple[int, int]]) -> int:
        """How many integers of ``pieces`` (sorted, disjoint) are in the set: ``overlap``
        of each, summed, in one pass."""
        starts, ends = self._starts, self._ends
        if not starts:
            return 0
        n = len(starts)
        i = n_in = 0
        for a, b in pieces:
            i = bisect_left(ends, a, i)   # the first interval that ends at or after a
            k = i
            while k < n and starts[k] <= b:
                lo = starts[k] if starts[k] > a else a
                hi = ends[k] if ends[k] < b else b
                n_in += hi - lo + 1
                k += 1
            if i == n:
                break
        return n_in

    def copy(self) -> IntervalSet:
        c = IntervalSet()
        c._starts = list(self._starts)
        c._ends = list(self._ends)
        c._total = self._total
        return c


def interval(a: int, b: int) -> IntervalSet:
    """The set of ``a..b`` (``a <= b``): a step's one window of a file, made without the
    class call and the lists ``canonical`` would make for it."""
    out = _new(IntervalSet)
    out._starts = [a]
    out._ends = [b]
    out._total = b - a + 1
    return out


_new = object.__new__
