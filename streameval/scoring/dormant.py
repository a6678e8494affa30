"""A finished run's session kept as one bytes object while nobody reads it.

A watcher keeps up to ``--max-runs`` finished runs, and a full garbage collection walks
every object they hold and holds every thread of the watcher meanwhile: some thirty
objects a session even once compacted (issue 27: 150-200 ms every ~2.5 s of a
50,000-run soak). Settled, a session holds what every scrape, tick and page list reads
(``AWAKE``) and one bytes object; the rest comes back the first time anything else is
read (``__getattr__``), and the watcher settles it again at its next tick. The object
stays the same one: the table, its file's reader and the page hold it as before.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

__all__ = ["AWAKE", "Dormant"]

#: held while a session settles or wakes (either swaps its attributes whole)
_WAKING = threading.Lock()
#: what a settled session keeps as objects: what scrapes (the exporter's signature),
#: ticks (a record owed, a run's id leaving the table) and the page's lists read
AWAKE = ("identity", "version", "end_reason", "ended", "gold", "view", "fmt", "error",
         "states_context", "include_sidechain", "_released", "listeners", "patch",
         "trace_patch", "patch_source")


class Dormant:
    """``RunSession``'s settling: a no-op unless the session is released (its record
    written, ``release_reading``), and when it is settled already."""

    def settle(self) -> None:
        d = self.__dict__
        if not d.get("_released") or "_dormant" in d:
            return
        with _WAKING:
            self._settle(d)

    def _settle(self, d: dict[str, Any]) -> None:
        state = d.get("state")
        awake = {k: d[k] for k in AWAKE if k in d}
        rest = {k: v for k, v in d.items() if k not in AWAKE}
        symbols = state.symbols if state is not None else None
        if state is not None:
            # the gold, the repository view and the symbols are the resources', shared
            # by every run: referred to (the session's own), never copied
            awake["_symbols"] = symbols
            state.gold = state.view = state.symbols = None
        try:
            awake["_dormant"] = pickle.dumps(rest, pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError):
            return   # something not plain was put on it (an observer's): it stays awake
        finally:
            if state is not None:
                state.gold, state.view, state.symbols = d["gold"], d["view"], symbols
        self.__dict__ = awake

    def __getattr__(self, name: str) -> Any:
        """Only for an attribute not found: a settled session wakes. The attributes are
        swapped in one assignment, under a lock: a thread reading the session meanwhile
        sees it settled or awake, never half of it."""
        if name.startswith("__") or "_dormant" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with _WAKING:
            d = dict(self.__dict__)
            if "_dormant" in d:
                rest = pickle.loads(d.pop("_dormant"))   # noqa: S301 - our own bytes (settle)
                symbols = d.pop("_symbols", None)
                state = rest.get("state")
                if state is not None:
                    state.gold, state.view, state.symbols = d["gold"], d["view"], symbols
                # what was set on the settled session is newer than what was kept
                rest.update(d)
                self.__dict__ = rest
        return getattr(self, name)
