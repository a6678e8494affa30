"""What the workers of ``watch --workers N`` share, kept by their supervisor: the run
ids handed out, and which worker follows which path (``live.shard`` gives the rule).

**Run ids.** Two runs asking for one id (a harness's ``meta.json`` template copied) get
it bare and suffixed (``traces.identity.RunIds``), and a restart gives each the id it
had (issue 31, ``live.claims``). With several workers one keeper decides for all, so no
two workers give one id twice; its claims go to ``<checkpoint>.claims``, written afresh
from time to time (``ClaimLog.compact``), which a watcher of one worker reads too. Who
asks first must not decide the bare id: workers read their traces at once, at the pace
of each, where one watcher reads them in the order of the walk. So the ids that
``meta.json`` files under the root give twice are looked up before any worker starts
(``colliding_ids``), and each is kept bare for the first of its traces in walk order,
as one watcher gives it. Runs that appear later take their ids as they come, as with
one watcher.

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
from streameval.live.outputs import read_checkpoint
from streameval.live.paths import is_trace
from streameval.traces.identity import MetaError, RunIds, read_meta, trace_name, walk_files
from streameval.traces.parts import trace_of

log = logging.getLogger(__name__)


def colliding_ids(root: Path, globs: tuple[str, ...]) -> dict[str, str]:
    """Run id -> the first trace (named relative to ``root``, as runs are) in walk
    order, for each id the ``meta.json`` of two traces or more give."""
    first: dict[str, str] = {}
    twice: dict[str, str] = {}
    metas: dict[Path, str | None] = {}
    for p in walk_files(root):
        if trace_of(p) != p or not is_trace(p, globs):
            continue
        if p.parent not in metas:
            try:
                meta = read_meta(p) or {}
            except MetaError:
                meta = {}
            given = meta.get("run_id")
            metas[p.parent] = str(given) if isinstance(given, (str, int)) and str(given) else None
        run_id = metas[p.parent]
        if run_id is None:
            continue
        if run_id in first:
            twice.setdefault(run_id, first[run_id])
        else:
            first[run_id] = trace_name(p, root)
    return twice


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
        self.changed = False

    def restore(self, globs: tuple[str, ...]) -> None:
        """The claims of before (a checkpoint of one watcher, then the claims file), and
        the ids to keep for the first of their traces."""
        if self.checkpoint is not None:
            journal = read_checkpoint(self.checkpoint, self.root).journals.get("run_ids")
            if journal is not None:
                self.log.restore_journal(journal)
            self.log.read_since()
        given = {got for _key, got in self.ids.claims()}
        for run_id, trace in colliding_ids(self.root, globs).items():
            if run_id not in given:
                self.ids.reserve(run_id, trace)

    def handle(self, worker: int, m: dict) -> dict | None:
        """A worker's message; the answer to an ask."""
        if "claim" in m:
            key = tuple(m["claim"])
            got = self.ids.claim(*key)
            self._by[key] = worker
            self._pending.get(worker, (set(), set()))[0].discard(key)
            self.changed = True
            return {"id": got}
        if "hold" in m:
            path = m["hold"]
            holder = self.files.setdefault(path, worker)
            if holder == worker:
                self._pending.get(worker, (set(), set()))[1].discard(path)
            return {"ok": holder == worker}
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
        return None

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
