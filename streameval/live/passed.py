"""What the watcher keeps of runs that passed through: as little as a rescan needs.

A run that finished, whose record is written and which left the table (``--max-runs``,
``--keep-finished``) leaves nothing in memory: its follower, checkpoint entry, run id
and counters go. Its file stays on disk, so two things keep a rescan from taking it
for new (and scoring it, and writing its record, again):

- the **rescan horizon**: after the first scan, a rescan looks only at files changed
  (mtime) or created, renamed or linked (ctime, which nothing but the kernel sets)
  since the previous rescan began, less a margin: a file that passed through long ago
  is not even stat'ed twice... it is skipped on its times;
- ``Passed``: the files forgotten *within* that margin, by (device, inode), with their
  size and mtime when forgotten; kept only while the horizon may still reach them, so
  its size follows the rate of runs, not their number.

A file that did change since (grown, rewritten, its patch landed) is followed anew;
the lines it had are not counted again (``lines``).

The rescan itself walks the tree: its interval grows with what the walk costs, so the
safety net never takes more than a tenth of the watcher's time, however many runs the
tree holds.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict

#: seconds a rescan looks back before the previous one began (mtime granularity,
#: clocks of network file systems, a file written while the walk went by)
MARGIN = 10.0
#: the rescan's share of the watcher's time at most
SCAN_SHARE = 0.1


class Passed:
    """Files whose runs left memory, while a rescan may still come across them."""

    def __init__(self, limit: int = 200_000):
        self.limit = limit
        #: (device, inode) -> (size, mtime_ns, lines counted, when forgotten)
        self._files: OrderedDict[tuple[int, int], tuple[int, int, int, float]] = OrderedDict()

    def remember(self, key: tuple[int, int] | None, path: str, lines: int,
                 now: float | None = None) -> None:
        if key is None:
            return
        try:
            st = os.stat(path)
        except OSError:
            return
        if (st.st_dev, st.st_ino) != key:
            return
        self._files[key] = (st.st_size, st.st_mtime_ns, lines, time.time() if now is None else now)
        self._files.move_to_end(key)
        while len(self._files) > self.limit:
            self._files.popitem(last=False)

    def unchanged(self, st: os.stat_result) -> bool:
        """True when the file is one that passed through, as it was then."""
        entry = self._files.get((st.st_dev, st.st_ino))
        return entry is not None and entry[:2] == (st.st_size, st.st_mtime_ns)

    def lines(self, key: tuple[int, int] | None) -> int:
        """Lines of the file already counted when it passed through (0: none known)."""
        entry = self._files.pop(key, None) if key is not None else None
        return entry[2] if entry is not None else 0

    def prune(self, horizon: float) -> None:
        """Forget what the rescan horizon no longer reaches."""
        while self._files:
            key, entry = next(iter(self._files.items()))
            if entry[3] >= horizon:
                break
            del self._files[key]

    def __len__(self) -> int:
        return len(self._files)


class Rescans:
    """When to rescan and how far back: ``due(now)``, then ``begin()``/``end()`` around
    the walk; ``horizon`` is None before the first walk (it takes every file)."""

    def __init__(self, interval: float):
        self.interval = interval
        self.horizon: float | None = None
        self._last = 0.0
        self._next_gap = interval
        self._began = 0.0
        self._began_mono = 0.0

    def due(self, now: float) -> bool:
        return now - self._last >= self._next_gap

    def begin(self, now: float) -> None:
        self._last = now
        self._began = time.time()
        self._began_mono = time.monotonic()

    def end(self) -> None:
        took = time.monotonic() - self._began_mono
        # a walk of a few milliseconds keeps the configured interval (0: every tick)
        self._next_gap = max(self.interval, took / SCAN_SHARE) if took > 0.05 else self.interval
        # the next walk looks back to this one's start, less the margin (and less the
        # gap itself when the walks grow apart: nothing created between them is missed)
        self.horizon = self._began - MARGIN
