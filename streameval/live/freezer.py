"""A scoring process's garbage collection: what survives is frozen, at every tick.

A full collection walks every object the collector tracks and holds the whole process
meanwhile (scoring, the page's thread). With ``--max-runs 1000`` on two workers, each
worker tracked some 30,000 objects with 200,000 references between them (its kept runs,
settled, ~24 objects each; the live ones; the caches filled since the start): each full
collection took 25-30 ms of CPU, and was held 60-120 ms on busy cores, every ~2.5 s
(``benchmarks/bench_soak.py --gc-log``).

Frozen (``gc.freeze``), an object is never walked again, and is still freed the moment
its last reference goes. What freezing costs is an object that dies in a reference cycle
after it was frozen: that one is never freed. So the freeze comes at a tick or between
two files' reads, where no step is being read (the reading of a shell command makes
short-lived cycles): first a full collection of what is not frozen yet (a tick's
survivors: a few ms), which frees every cycle already dead, then every survivor is
frozen. A run, its session and its follower die by reference counts when the table lets
them go, which ``tests/live/test_freezer.py`` checks by counting what would never be
freed.
"""

from __future__ import annotations

import gc
import time
from typing import Any

__all__ = ["Freezer"]


class Freezer:
    """``start`` once the process has made what it keeps (modules, gold, indexes, the
    server); ``tick`` at the watcher's ticks and between the files of a batch
    (``Watcher.tick_hooks``, ``Watcher.between_files``): a busy watcher's ticks came a
    second or two apart, and one batch of file events held some 150 runs' files."""

    def __init__(self, every: float = 0.2) -> None:
        #: seconds between freezes at least: one tick's. Each object is walked once before
        #: its freeze however often they come (some 0.5-3 us an object walked, most of it
        #: cache misses), so fewer freezes only make each collection longer: 5-45 ms of
        #: CPU with one a second at 90 runs a second
        self.every = every
        self._last = 0.0

    def start(self) -> None:
        self._freeze()

    def tick(self, _watcher: Any = None, _now: float | None = None) -> None:
        if time.monotonic() - self._last >= self.every:
            self._freeze()

    def _freeze(self) -> None:
        gc.collect()
        gc.freeze()
        self._last = time.monotonic()
