"""The fleet's rows between two answers: each row stamped with the generation it last
changed at, so a page asks for what changed since the generation it holds.

A page polling a watcher of 1,000 active runs every two seconds gets the rows of the
runs that moved, not 1,000 rows; the runs that left are named in ``removed``. The
generation is a number per process, shown with a nonce (``<nonce>.<gen>``): a page
that outlived its watcher (a restart) is answered in full, never merged into stale
rows. It is the ETag too, so an unchanged fleet is a 304.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any

__all__ = ["FleetCache"]

#: removals remembered; a page further behind is answered in full
KEEP_REMOVED = 20_000


class FleetCache:
    """Rows by run key: (signature, generation, row). Thread-safe (its own lock)."""

    def __init__(self, keep_removed: int = KEEP_REMOVED):
        self.nonce = os.urandom(4).hex()
        self.gen = 0
        self._rows: dict[Hashable, tuple[Hashable, int, dict[str, Any]]] = {}
        self._ids: dict[str, Hashable] = {}
        self._removed: deque[tuple[int, str]] = deque(maxlen=keep_removed)
        #: removals before this generation may have been forgotten
        self._floor = 0
        self.lock = threading.Lock()

    def tag(self) -> str:
        return f"{self.nonce}.{self.gen}"

    def stale(self, key: Hashable, sig: Hashable) -> bool:
        """True when ``key``'s row must be built again (new, or its signature moved)."""
        held = self._rows.get(key)
        return held is None or held[0] != sig

    def apply(self, present: Iterable[Hashable],
              built: dict[Hashable, tuple[Hashable, dict[str, Any]]]) -> None:
        """The keys now present, and the rows built for those that were stale: the
        generation moves once if anything changed. Call with ``lock`` held."""
        gen = self.gen + 1
        changed = False
        for key, (sig, row) in built.items():
            old = self._rows.get(key)
            if old is not None and old[2]["id"] != row["id"]:
                self._forget(gen, key, old[2]["id"])   # the key's run was renamed
            self._rows[key] = (sig, gen, row)
            self._ids[row["id"]] = key
            changed = True
        keep = set(present)
        for key in [k for k in self._rows if k not in keep]:
            self._forget(gen, key, self._rows.pop(key)[2]["id"])
            changed = True
        if changed:
            self.gen = gen

    def _forget(self, gen: int, key: Hashable, run_id: str) -> None:
        if self._ids.get(run_id) == key:
            del self._ids[run_id]
        if len(self._removed) == self._removed.maxlen:
            self._floor = self._removed[0][0]
        self._removed.append((gen, run_id))

    def key_of(self, run_id: str) -> Hashable | None:
        """The key of the run named ``run_id`` (as last built)."""
        return self._ids.get(run_id)

    def row(self, key: Hashable) -> dict[str, Any] | None:
        held = self._rows.get(key)
        return held[2] if held is not None else None

    def answer(self, since: str | None) -> dict[str, Any]:
        """What changed since the generation ``since`` (``<nonce>.<gen>``), or all of it
        (``full``) when ``since`` is absent, of another process, or too old."""
        start = _generation(since, self.nonce)
        full = start is None or start > self.gen or start < self._floor
        if full:
            runs = [row for _s, _g, row in self._rows.values()]
            removed: list[str] = []
        else:
            runs = [row for _s, g, row in self._rows.values() if g > start]
            # a run that left and came back is a row, not a removal
            removed = [rid for g, rid in self._removed if g > start and rid not in self._ids]
        return {"gen": self.tag(), "full": full, "runs": runs, "removed": removed}


def _generation(since: str | None, nonce: str) -> int | None:
    if not since or "." not in since:
        return None
    given, _, number = since.partition(".")
    if given != nonce or not number.isdigit():
        return None
    return int(number)


def build_all(cache: FleetCache, items: Iterable[tuple[Hashable, Hashable, Callable[[], dict]]]) -> None:
    """Refresh ``cache`` from (key, signature, build) triples, building only stale rows
    (for sources whose rows are all at hand, like ``view``'s records)."""
    with cache.lock:
        present, built = [], {}
        for key, sig, build in items:
            present.append(key)
            if cache.stale(key, sig):
                built[key] = (sig, build())
        cache.apply(present, built)
