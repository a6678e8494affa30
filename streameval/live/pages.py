"""The page's data for a watcher: its runs as fleet rows, one run's detail, and the
journal of every run kept while the run is in the table.

``LivePages`` is told of every new run (``RunTable.on_add``) and gives its session a
``RunJournal``; the watcher's tick calls ``prune`` (``Watcher.tick_hooks``), which drops
the journals of runs that left the table and keeps call rows for the most recently
finished ``keep_calls`` runs only: a watcher of 10,000 finished runs holds their curves
and gold strips, not their calls. From the moment a run's record is written its journal
is kept as one bytes object (``settled``), read back when a page asks.

Everything is read under the table lock, a slice of runs at a time (as a scrape does):
the watcher is never held up for a whole fleet, and a page request never sees half a
step. The rows and answers are built on the page's threads (``live/page.py``).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Hashable
from typing import Any

from streameval.live.page import PageRoutes
from streameval.live.table import LiveRun, RunTable
from streameval.report.journal import RunJournal
from streameval.report.page_data import LiveState, fleet_row, last_text
from streameval.report.page_fleet import FleetCache
from streameval.report.page_session import session_detail
from streameval.runs.resources import Resources

__all__ = ["LivePages", "mount_live_page"]

#: runs read per hold of the table lock while rows are built
SLICE = 64
#: finished runs whose call rows are kept (the newest); older ones keep curve and strips
KEEP_CALLS = 200
#: seconds between two prunes (the tick comes every 0.2 s)
PRUNE_EVERY = 2.0


#: the run page's note when the watcher has no ``--out``
NO_OUT = "this watcher writes no records (no --out): the numbers here are the only ones"


class PageJournal(RunJournal):
    """A run's journal, which also keeps its last call as the fleet shows it: a finished
    run's session lets its last call go (``release_reading``), its row keeps saying it."""

    last = ""

    def __call__(self, session: Any, outcome: Any, call: Any) -> None:
        super().__call__(session, outcome, call)
        rows = self._calls
        # the call's row, when kept, has described it already (wider): cut, not again
        self.last = last_text(call, rows[-1].text if rows and rows[-1].n == self.n else None)


class LivePages:
    """The ``PageSource`` of a watcher's ``RunTable``."""

    def __init__(self, table: RunTable, res: Resources | None, keep_calls: int = KEEP_CALLS,
                 writes_records: bool = True):
        self.table = table
        self.res = res
        self.keep_calls = keep_calls
        #: with no ``--out`` a run is settled (``record_written``) but nothing is written:
        #: the page must not say "record written"
        self.writes_records = writes_records
        self.cache = FleetCache()
        #: run key -> (the session it was made for, its journal)
        self._journals: dict[str, tuple[Any, PageJournal]] = {}
        self._pruned = 0.0
        table.on_add.append(self.track)
        table.on_settled.append(self.settled)

    # ------------------------------------------------------------------ journals
    def track(self, run: LiveRun) -> None:
        """A new run: its session gets a journal (before its first event)."""
        journal = PageJournal()
        run.session.listeners.append(journal)
        self._journals[run.key] = (run.session, journal)

    def settled(self, run: LiveRun) -> None:
        """A run whose record was just written (the table lock held): its journal is
        kept as bytes until a page asks (``RunJournal.settle``)."""
        journal = self.journal(run)
        if journal is not None:
            journal.settle()

    def journal(self, run: LiveRun) -> PageJournal | None:
        held = self._journals.get(run.key)
        return held[1] if held is not None and held[0] is run.session else None

    def prune(self, _watcher: Any = None, now: float | None = None) -> None:
        """Drop the journals of runs gone from the table; keep call rows for the newest
        ``keep_calls`` finished runs. A tick hook (watcher thread)."""
        now = time.time() if now is None else now
        if now - self._pruned < PRUNE_EVERY:
            return
        self._pruned = now
        with self.table.lock:
            runs = self.table.runs
            for key in [k for k, (s, _j) in self._journals.items()
                        if k not in runs or runs[k].session is not s]:
                del self._journals[key]
            finished = sorted((r.finished_at, k) for k, r in runs.items() if r.finished)
            for _at, key in finished[: max(0, len(finished) - self.keep_calls)]:
                journal = self.journal(runs[key])
                if journal is not None and not journal.calls_forgotten:
                    journal.forget_calls()

    # ------------------------------------------------------------------ answers
    def _live(self, run: LiveRun) -> LiveState:
        return LiveState(run.finished, run.record_written and self.writes_records,
                         tuple(sorted(run.aborted.items())))

    def _sig(self, run: LiveRun) -> Hashable:
        journal = self.journal(run)
        return (id(run.session), run.session.version, run.finished, run.record_written,
                len(run.aborted), journal is not None and journal.calls_forgotten)

    def _row(self, run: LiveRun) -> dict[str, Any]:
        row = fleet_row(run.session.snapshot(), self._live(run))
        journal = self.journal(run)
        if not row["last"] and journal is not None:
            row["last"] = journal.last
        return row

    def fleet(self, since: str | None) -> dict[str, Any]:
        """Rows changed since ``since`` (``FleetCache.answer``), rebuilt where stale."""
        with self.cache.lock:
            with self.table.lock:
                runs = list(self.table.runs.items())
                sigs = {key: self._sig(run) for key, run in runs}
            stale = [(k, r) for k, r in runs if self.cache.stale(k, sigs[k])]
            built: dict[Hashable, tuple[Hashable, dict]] = {}
            for start in range(0, len(stale), SLICE):
                with self.table.lock:
                    for key, run in stale[start:start + SLICE]:
                        if self.table.runs.get(key) is run:
                            built[key] = (self._sig(run), self._row(run))
            self.cache.apply(sigs, built)
            return self.cache.answer(since)

    def run(self, run_id: str, calls_from: int) -> tuple[str, Callable[[], dict]] | None:
        """(ETag, builder) of the run named ``run_id``; None when no run has that id."""
        with self.cache.lock:
            key = self.cache.key_of(run_id)
        if key is None:
            self.fleet(None)   # a page opened on a run before the fleet was asked for
            with self.cache.lock:
                key = self.cache.key_of(run_id)
        with self.table.lock:
            run = self.table.runs.get(key) if key is not None else None
            if run is None or run.session.identity.run_id != run_id:
                return None
            sig = self._sig(run)
        digest = hashlib.sha1(repr((key, sig[1:], calls_from)).encode("utf-8", "replace"))
        etag = f'"{self.cache.nonce}.{id(run.session):x}.{digest.hexdigest()[:16]}"'

        def build() -> dict:
            with self.table.lock:
                detail = session_detail(run.session, self.journal(run), self.res, self._live(run),
                                        calls_from=calls_from, row=self._row(run))
            if not self.writes_records:
                detail["notes"].append(NO_OUT)
            return detail

        return etag, build


def mount_live_page(app: Any, watcher: Any) -> LivePages:
    """The page over ``watcher``'s runs, on ``app`` (the metrics port's ``App``): every run
    added from now on gets a journal, pruned at the watcher's ticks."""
    pages = LivePages(watcher.table, watcher.res, writes_records=watcher.cfg.out is not None)
    watcher.tick_hooks.append(pages.prune)
    PageRoutes(pages).mount(app)
    return pages
