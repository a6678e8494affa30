"""File bytes and line offsets, cached: what every metric needs of a repository file.

``LineIndex`` is docs/metrics.md §3's "line range -> bytes" for one file's bytes;
``FileCache`` keeps file bytes and line indexes for every repository of a process in
LRUs bounded by weight, keyed by what makes an entry valid (repository, commit, path,
version), so an entry is never served for another commit or a changed file.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from itertools import accumulate, count
from operator import add
from typing import Generic, TypeVar

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_OFFSETS", "FileCache", "LineIndex", "LRU"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024      # file bytes kept in memory, all repos together
DEFAULT_MAX_OFFSETS = 8 * 1024 * 1024     # line starts kept in LineIndex caches (8 bytes each)


# --------------------------------------------------------------------------- line index

class LineIndex:
    """Line starts of one file's bytes (docs/metrics.md §3, "Line range -> bytes").

    ``off[k]`` is the byte where line k starts (line 1 at 0; a line starts after
    every ``\\n``). ``size`` is the file's length in bytes.
    """

    __slots__ = ("_off", "_size")

    def __init__(self, data: bytes):
        self._size = len(data)
        parts = data.split(b"\n")
        parts.pop()  # the text after the last "\n" starts a line but ends none
        # off[k] = bytes of the k lines before it + their k newlines; all C-level loops.
        self._off = array("q", [0])
        self._off.extend(map(add, accumulate(map(len, parts)), count(1)))

    @property
    def size(self) -> int:
        return self._size

    @property
    def num_lines(self) -> int:
        """Lines a reader sees: ``b"a\\nb"`` and ``b"a\\nb\\n"`` both have 2; ``b""`` has 0."""
        # The "line" that starts at ``size`` after a final newline holds no byte.
        return len(self._off) - (1 if self._off[-1] == self._size else 0)

    def byte_range(self, start: int, end: int) -> tuple[int, int] | None:
        """Inclusive byte interval of lines ``start..end`` per docs/metrics.md §3.

        ``start = max(1, start)``, ``end = max(start, end)``; a start past the last
        line start gives None; an empty file gives ``(0, 0)``.

        A file ending in ``\\n`` has a formal line start at ``size`` (``b"a\\nb\\n"``:
        line 3 starts at byte 4). That line holds no byte, so it does not count as a
        line start here: ``byte_range(3, 3)`` is None, not the inverted ``(4, 3)`` the
        formula would give. Ranges that merely *end* past the file run to its last byte.
        """
        if self._size == 0:
            return (0, 0)
        start = max(1, start)
        end = max(start, end)
        off = self._off
        n = len(off)
        if start > n or off[start - 1] >= self._size:
            return None
        last = off[end] - 1 if end < n else self._size - 1
        return (off[start - 1], last)

    def byte_ranges(self, ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """``byte_range`` of each ordered line range (start <= end), those that hold a
        byte of the file: a whole step's ranges in one call."""
        size = self._size
        if size == 0:
            return [(0, 0) for _ in ranges]
        off = self._off
        n = len(off)
        out: list[tuple[int, int]] = []
        for start, end in ranges:
            if start < 1:
                start = 1
                if end < 1:
                    end = 1
            if start > n or off[start - 1] >= size:
                continue
            out.append((off[start - 1], off[end] - 1 if end < n else size - 1))
        return out

    def byte_runs(self, starts: list[int], ends: list[int]) -> tuple[list[int], list[int]] | None:
        """``byte_ranges`` of line ranges that are sorted, apart (a line between each
        two) and start at line 1 or later, as the starts and ends of byte ranges that
        are so too (every line before the last holds its newline); None when the last
        range reaches past the last line, or the file is empty."""
        off = self._off
        if not self._size or ends[-1] >= len(off) or off[starts[-1] - 1] >= self._size:
            return None
        if len(starts) == 1:
            return [off[starts[0] - 1]], [off[ends[0]] - 1]
        return [off[a - 1] for a in starts], [off[b] - 1 for b in ends]

    def byte_window(self, start: int, end: int) -> tuple[int, int] | None:
        """``byte_runs`` of the one range ``start..end`` (1 <= start <= end) as a pair:
        a step's usual read of one window, without the lists of several."""
        off = self._off
        if end >= len(off) or off[start - 1] >= self._size:   # (an empty file: 0 >= 0)
            return None
        return off[start - 1], off[end] - 1

    def line_of(self, byte: int) -> int:
        """1-based line holding ``byte``; bytes before 0 / past the end clamp to the first / last line."""
        return max(1, min(bisect_right(self._off, byte), self.num_lines))

    def line_start(self, line: int) -> int | None:
        """Byte where ``line`` starts, or None past the last line a reader sees."""
        if 1 <= line <= self.num_lines:
            return self._off[line - 1]
        return None

    @property
    def weight(self) -> int:
        return len(self._off)


# --------------------------------------------------------------------------- caches

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """Least-recently-used map bounded by the total weight of its values; thread-safe."""

    def __init__(self, max_weight: int, weigh: Callable[[V], int]):
        self._max = max_weight
        self._weigh = weigh
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()
        self.hits = 0     # read by the exporter (streameval_cache_hits_total)
        self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self.hits += 1
            self._items.move_to_end(key)
            return hit[0]

    def peek(self, key: K) -> V | None:
        """The value if present, without counting a hit or a miss or touching its age."""
        hit = self._items.get(key)
        return None if hit is None else hit[0]

    def put(self, key: K, value: V) -> None:
        w = self._weigh(value)
        if w > self._max:
            return  # larger than the whole cache: serve it, don't keep it
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= old[1]
            self._items[key] = (value, w)
            self._total += w
            while self._total > self._max:
                _, (_, ow) = self._items.popitem(last=False)
                self._total -= ow

    @property
    def total(self) -> int:
        return self._total

    def __len__(self) -> int:
        return len(self._items)


class FileCache:
    """File bytes and line indexes, shared by every repository of a RepoCache.

    Keys carry (repo identity, commit, path, version) so an entry can never be served
    for another commit or a changed file of a plain directory.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, max_offsets: int = DEFAULT_MAX_OFFSETS):
        self.data: LRU[tuple, bytes] = LRU(max_bytes, lambda b: len(b) + 1)
        self.lines: LRU[tuple, LineIndex] = LRU(max_offsets, lambda li: li.weight)


