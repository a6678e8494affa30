"""What the workers of ``watch --workers N`` share, kept by their supervisor: the run
ids handed out, and which worker follows which path (``live.shard`` gives the rule).

**Run ids.** Two runs asking for one id (a harness's ``meta.json`` template copied) get
it bare and suffixed (``traces.identity.RunIds``), and a restart gives each the id it
had (issue 31, ``live.claims``). With several workers one keeper decides for all, so no
two workers give one id twice; its claims go to ``<checkpoint>.claims``, written afresh
from time to time (``ClaimLog.compact``), which a watcher of one worker reads too. Who
asks first must not decide the bare id: workers read their traces at once, at the pace
of each, where one watcher reads them in the order of the walk. So at the start each
worker first says which id the first run of each of its traces will ask for
(``live.declare``), and is answered once all have: each id two traces ask for is kept
bare for the first of them in walk order, as one watcher gives it. Runs that appear
later take their ids as they come, as with one watcher.

**Paths.** A worker asks before it follows a new file (``hold``) and says when it let
one go or followed it to a new path. A worker that died has its claims and paths kept
for its successor, which asks again for those it still has; the rest go once it has
started.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from streameval.live.claims import ClaimLog
from streameval.live.join import walk_key
from streameval.live.outputs import read_checkpoint
from streameval.traces.identity import RunIds

log = logging.getLogger(__name__)


class Arbiter:
    """The keeper: answers the workers' questions (``handle``), told when a worker
    died (``lost``) and when one has started."""

    def __init__(self, checkpoint: Path | None, root: Path, workers: int):
        self.root = root
        self.workers = workers
        self.ids = RunIds()
        self.errors: Counter = Counter()
        self.log = ClaimLog(self.ids, checkpoint, root, self.errors)
        self.checkpoint = checkpoint
        self._by: dict[tuple[str, str, str], int] = {}
        self.files: dict[str, int] = {}
        #: worker -> what its predecessor held, not asked for again yet
        self._pending: dict[int, tuple[set, set]] = {}
        self._started: set[int] = set()
        self._first_start = True
        #: worker -> what the first runs of its traces ask for (``declare``), at the start
        self._declarations: dict[int, list] = {}
        self._declared_all = False
        self.changed = False

    def restore(self) -> None:
        """The claims of before: a checkpoint of one watcher's, then the claims file."""
        if self.checkpoint is not None:
            journal = read_checkpoint(self.checkpoint, self.root).journals.get("run_ids")
            if journal is not None:
                self.log.restore_journal(journal)
            self.log.read_since()

    def handle(self, worker: int, m: dict) -> list[tuple[int, dict]]:
        """A worker's message; the answers to send, to whom."""
        if "claim" in m:
            key = tuple(m["claim"])
            got = self.ids.claim(*key)
            self._by[key] = worker
            self._pending.get(worker, (set(), set()))[0].discard(key)
            self.changed = True
            return [(worker, {"id": got})]
        if "hold" in m:
            path = m["hold"]
            holder = self.files.setdefault(path, worker)
            if holder == worker:
                self._pending.get(worker, (set(), set()))[1].discard(path)
            return [(worker, {"ok": holder == worker})]
        if "declare" in m:
            return self._declared(worker, m["declare"])
        if "release" in m:
            self._release(m["release"])
        elif "let_go" in m:
            if self.files.get(m["let_go"]) == worker:
                del self.files[m["let_go"]]
        elif "moved" in m:
            old, new = m["moved"]
            if self.files.get(old) == worker:
                del self.files[old]
            self.files[new] = worker
        elif "started" in m:
            self._worker_started(worker)
        return []

    def _declared(self, worker: int, entries: list) -> list[tuple[int, dict]]:
        """A worker's first runs' ids; once every worker of the first start has said its
        own, the ids two traces ask for are kept for the first in walk order, and all are
        answered. A worker started again is answered at once: the others are reading."""
        if self._declared_all:
            return [(worker, {"ok": True})]
        self._declarations[worker] = entries
        if len(self._declarations) < self.workers:
            return []
        self._declared_all = True
        given = {got for _key, got in self.ids.claims()}
        first: dict[str, tuple[list, str]] = {}
        twice: set[str] = set()
        for entries in self._declarations.values():
            for run_id, trace, directory in entries:
                key = walk_key(Path(trace), Path(), directory)
                if run_id in first:
                    twice.add(run_id)
                    if key >= first[run_id][0]:
                        continue
                first[run_id] = (key, trace)
        for run_id in twice - given:
            self.ids.reserve(run_id, first[run_id][1])
        return [(w, {"ok": True}) for w in sorted(self._declarations)]

    def _release(self, got: str) -> None:
        key = self.ids.asker(got)
        self.ids.release(got)
        if key is not None:
            self._by.pop(key, None)
        self.changed = True

    def lost(self, worker: int) -> None:
        """``worker`` died: what it held waits for its successor."""
        self._started.discard(worker)
        self._pending[worker] = ({k for k, w in self._by.items() if w == worker},
                                 {p for p, w in self.files.items() if w == worker})

    def _worker_started(self, worker: int) -> None:
        self._started.add(worker)
        claims, paths = self._pending.pop(worker, (set(), set()))
        for key in claims:
            got = self.ids.given(key)
            if got is not None:
                self._release(got)
        for path in paths:
            if self.files.get(path) == worker:
                del self.files[path]
        if self._first_start and len(self._started) == self.workers:
            # every worker has read what it had: ids kept for runs that did not come
            # back, or for traces that never asked, are free again
            self._first_start = False
            self.ids.drop_restored()
            self.ids.drop_reservations()
            self.changed = True

    def save(self) -> None:
        """The claims file written afresh, when claims changed since."""
        if self.changed:
            self.changed = False
            self.log.compact()

    def close(self) -> None:
        self.save()
        self.log.close()
