"""``/metrics`` of several workers (``watch --workers N``), joined in the front as one
watcher's.

Each worker scores its own runs (``live.shard``) and knows only them, while ``/metrics``
holds numbers over all runs: the per-run series cap (``--per-run-series``: the newest
runs of all), the fleet's means and counts (``fleet``), the label sets admitted, the
counters about streameval itself. A worker that folded its own fleet would give a mean
of its runs, and two workers two series with the same labels. So each worker sends its
parts (``JoinFeed``) and the front makes the whole (``Joined``) with the code one
watcher uses:

- each run's samples, the very strings one watcher joins (``exposition.run_text``), sent
  once and then named by a number, with what the cap ranks it by, for the runs its own
  cap keeps (the cap of all runs keeps none that a worker's own cap leaves out);
- each run's fleet entry (``fleet.FleetEntry``), for every run, as it changes;
- its statistics (``EvaluatorStats.message``), added up in the front.

Runs are listed as one watcher lists them, by ``order_key``: those found at the start in
the order of the walk that found them, those met later in the order they were met. So
the joined text equals one watcher's, byte for byte, but for the series that say how a
process fares (lag, caches, stale runs, backlog: docs/watch.md, "Workers").
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from streameval.live import exposition
from streameval.live.exporter import (
    LOCK_WAIT,
    RUN_FAMILIES,
    _Families,
    _held,
    cache_counts,
    cap_families,
    process_families,
)
from streameval.live.fleet import Fleet, FleetEntry
from streameval.live.link import COUNTERS
from streameval.live.mirror import AGE, _header
from streameval.live.table import EvaluatorStats, LiveRun

#: a run key's index part: ``trace#n`` (``table.run_key``)
_INDEXED = re.compile(r"(.*)#(\d+)")


def walk_key(path: Path, root: Path, directory: bool = False) -> list:
    """Where ``walk_files`` meets ``path`` under ``root``: a folder's files (sorted)
    before its folders (sorted, each walked in turn). A trace that is a folder (an SDK
    conversation) is met with its first event file, in its folder."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
    if not parts:
        return []
    last = 1 if directory else 0
    return [*([1, p] for p in parts[:-1]), [last, parts[-1]]]


def order_key(run: LiveRun, root: Path, started_through: float, directory: bool) -> list:
    """Where ``run`` is in one watcher's table: the runs found at the start in walk order
    (each file's runs in file order), then the runs met later in the order they were met."""
    if run.first_seen > started_through:
        return [1, run.first_seen, run.key]
    m = _INDEXED.fullmatch(run.key)
    path, index = (m.group(1), int(m.group(2))) if m else (run.key, 0)
    return [0, walk_key(Path(path), root, directory), index]


def newest(runs: list, limit: int) -> list:
    """The ``limit`` runs whose per-run series are exported, of ``runs`` (each
    ``[text, order, finished, finished_at, ...]``): active ones first, the most recently
    met first, then the most recently finished, as ``exporter.newest_first`` ranks one
    watcher's. Met is told by the order (one watcher meets its runs in it): times of
    workers that read at once would tell another story."""
    if len(runs) <= limit:
        return runs
    active = sorted((r for r in runs if not r[2]), key=lambda r: r[1], reverse=True)
    ended = sorted((r for r in runs if r[2]), key=lambda r: (-r[3], r[1]))
    return (active + ended)[:limit]


class JoinFeed:
    """A worker's end (``link.Link`` asks it): its parts of a scrape, with only what
    the front does not have yet. Called from one thread at a time."""

    def __init__(self, collector, watcher):
        self.collector = collector
        self.watcher = watcher
        self._front: object = None
        self._texts: dict[int, tuple[str, ...]] = {}   # text's number -> text (kept alive)
        self._entries: dict[str, FleetEntry] = {}      # run key -> entry the front has
        self._orders: dict[str, tuple[float, list]] = {}   # run key -> (first_seen, order)

    def _order(self, run: LiveRun) -> list:
        held = self._orders.get(run.key)
        if held is not None and held[0] == run.first_seen:
            return held[1]
        w = self.watcher
        f = w.followers.get(Path(_INDEXED.sub(r"\1", run.key)))
        order = order_key(run, w.cfg.root, w.started_through,
                          f is not None and f.path.is_dir())
        self._orders[run.key] = (run.first_seen, order)
        return order

    def pieces(self, om: bool, front: object) -> dict[str, Any]:
        """What ``front`` needs (``om`` is one watcher's question: the parts serve both
        formats); a front new to this worker (started again) is sent everything."""
        full = front is not self._front
        if full:
            self._front, self._texts, self._entries = front, {}, {}
        c = self.collector
        pairs, states = c._gather_runs()
        ranked = [[e, self._order(run), e.finished, run.finished_at or 0.0] for run, e in pairs]
        kept = newest(ranked, c.per_run_series)
        if len(kept) < len(ranked):
            chosen = {id(r[0]) for r in kept}
            for r in ranked:   # left out: its text goes (made again if it comes back)
                if id(r[0]) not in chosen:
                    r[0].text = None
        texts = [exposition.run_text(r[0]) for r in kept]
        runs = [[id(text), *r[1:]] for text, r in zip(texts, kept)]
        entries: dict[str, list | None] = {}
        for run, e in pairs:
            f = e.fleet
            if self._entries.get(run.key) is not f:
                entries[run.key] = [self._order(run), list(f.group), list(f.aborted),
                                    None if f.values is None else list(f.values)]
        now = {run.key: e.fleet for run, e in pairs}
        entries.update((key, None) for key in self._entries if key not in now)
        for key in [k for k in self._orders if k not in now]:
            del self._orders[key]
        table = c.table
        with _held(table.lock, 0.0 if states["stale"] else LOCK_WAIT):
            stats = table.stats.message()
            caches = cache_counts(table.caches)
        message = {"full": full, "pid": os.getpid(), "at": time.monotonic(), "runs": runs,
                   "texts": [[id(t), t] for t in texts if id(t) not in self._texts],
                   "entries": entries, "states": dict(states), "stats": stats,
                   "caches": caches}
        self._texts = {id(t): t for t in texts}   # once the whole message is made
        self._entries = now
        return message

    def forget(self) -> None:
        """The last parts did not reach the front: everything next time."""
        self._front, self._texts, self._entries = None, {}, {}


class _Parts:
    """What the front holds of one worker. A worker started again (another process)
    reads its runs again without counting their lines again: what the one before it
    counted stays (``base``), so the counters go on."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.base = EvaluatorStats()
        self.texts: dict[int, tuple[bytes, ...]] = {}
        self.runs: list = []
        self.entries: dict[str, tuple[list, FleetEntry]] = {}
        self.states: Counter = Counter()
        self.stats: dict | None = None
        self.caches: list = []
        self.at = -math.inf

    def take(self, m: dict[str, Any]) -> None:
        if m["full"]:   # a worker started (again), or this front: nothing of before holds
            self.texts, self.entries = {}, {}
            if self.pid is not None and m["pid"] != self.pid and self.stats is not None:
                self.base.add(self.stats)
                self.base.backlog_bytes = 0   # a gauge: its successor's own
            self.pid = m["pid"]
        self.texts.update((n, tuple(t.encode("utf-8") for t in text)) for n, text in m["texts"])
        self.runs = m["runs"]
        used = {r[0] for r in self.runs}
        if len(self.texts) > len(used):
            self.texts = {n: t for n, t in self.texts.items() if n in used}
        for key, e in m["entries"].items():
            if e is None:
                self.entries.pop(key, None)
            else:
                order, group, aborted, values = e
                self.entries[key] = (order, FleetEntry(tuple(group), tuple(aborted),
                                                       None if values is None else tuple(values)))
        self.states = Counter(m["states"])
        self.stats, self.caches, self.at = m["stats"], m["caches"], m["at"]


class Joined:
    """The front's copy of every worker's parts, and ``/metrics`` made of them (the
    interface of ``mirror.Mirror``: ``take``, ``has``, ``age``, ``render``).

    ``counters()`` gives the front's own counters (requests pushed and refused), which
    it adds to the workers'."""

    def __init__(self, workers: int, per_run_series: int, fleet_groups: int, counters):
        self.workers = workers
        self.per_run_series = per_run_series
        self.counters = counters
        self.fleet = Fleet(fleet_groups, in_run_order=True)
        self._parts = [_Parts() for _ in range(workers)]
        #: the workers linked now: a worker being started again is not waited for
        self.linked: set[int] = set()
        self._lock = threading.Lock()
        self._version = 0
        self._made: dict[bool, tuple[int, bytes]] = {}
        self._headers = {om: [_header(name, kind, om).encode("utf-8") for name, kind, _e in RUN_FAMILIES]
                         for om in (False, True)}

    def take(self, message: dict[str, Any], worker: int = 0) -> None:
        with self._lock:
            self._parts[worker].take(message)
            self._version += 1

    def counted(self) -> None:
        """The front's own counters moved: the next scrape is made again."""
        with self._lock:
            self._version += 1

    def has(self, om: bool) -> bool:
        """Every worker has sent its parts (once: a worker started again has old ones)."""
        return all(p.stats is not None for p in self._parts)

    def age(self, om: bool) -> float:
        """Seconds since the oldest parts of a linked worker were made."""
        ats = [self._parts[w].at for w in self.linked] or [p.at for p in self._parts]
        return time.monotonic() - min(ats)

    def render(self, om: bool) -> bytes:
        """One watcher's scrape of every worker's runs, and its age."""
        with self._lock:
            version = self._version
            made = self._made.get(om)
            if made is None or made[0] != version:
                made = self._made[om] = (version, self._make(om))
            oldest = min(p.at for p in self._parts)
        body, process = made[1]
        age = max(0.0, time.monotonic() - oldest)
        return b"".join((body, f"{AGE} {age!r}\n".encode(), process))

    def _make(self, om: bool) -> tuple[bytes, bytes]:
        parts = self._parts
        states: Counter = Counter()
        for p in parts:
            states.update(p.states)
        # [text, order, finished, finished_at, worker]; the newest of all
        runs = [[*r, w] for w, p in enumerate(parts) for r in p.runs]
        limit = self.per_run_series
        dropped: Counter = Counter()
        if states["active"] + states["finished"] > limit:
            runs = newest(runs, limit)
            for state in ("active", "finished"):
                dropped[state] = states[state] - sum(1 for r in runs if r[2] == (state == "finished"))
        runs.sort(key=lambda r: r[1])
        texts = [parts[r[4]].texts[r[0]] for r in runs]
        out: list[bytes] = []
        for header, family in zip(self._headers[om], zip(*texts) if texts else
                                  [()] * len(RUN_FAMILIES)):
            out.append(header)
            out.extend(family)
        entries = sorted((e for p in parts for e in p.entries.values()), key=lambda e: e[0])
        numbers = self.fleet.numbers(e for _order, e in entries)
        out += (exposition.fleet_text(numbers, om).encode("utf-8"),
                _header(AGE, "gauge", om).encode())
        stats = EvaluatorStats()
        caches: dict[str, list[float]] = {}
        for p in parts:
            stats.add(p.base.message())
            if p.stats is not None:
                stats.add(p.stats)
            for name, hits, misses in p.caches:
                held = caches.setdefault(name, [0.0, 0.0])
                held[0] += hits
                held[1] += misses
        own = self.counters()
        for name in COUNTERS:
            getattr(stats, name).update(own.get(name, {}))
        process = [*process_families(stats, states, [(n, h, m) for n, (h, m) in caches.items()]),
                   *numbers.scalar_families(), *cap_families(limit, dropped)]
        return b"".join(out), exposition.encoder_for(om)(_Families(process))

    def text(self) -> str:
        """The whole scrape in the text format, for what only the library serves
        (``name[]`` filters, other encoders: ``join_filtered``)."""
        return self.render(False).decode("utf-8")


def parsed_registry(text: str, names: list[str]):
    """A registry-like object over the families of exposition ``text`` (named by
    ``names`` when given), for prometheus_client's encoders."""
    from prometheus_client.parser import text_string_to_metric_families

    families = _Families(list(text_string_to_metric_families(text)))
    return exposition.Only(families, names) if names else families


async def join_filtered(app, joined: Joined, request):
    """A scrape the fast path does not serve (``name[]`` filters, the dots escaping):
    the joined text parsed, filtered and encoded by the library, as one watcher's own
    route does with its registry."""
    from prometheus_client.exposition import choose_encoder

    from streameval.live.asgi import PROTECTED

    encoder, content_type = choose_encoder(request.header("accept"))
    names = request.query_all("name[]")

    def make() -> bytes:
        return encoder(parsed_registry(joined.text(), names))

    output = await app.run(PROTECTED, make)
    return await exposition.encoded(app, request, output, content_type)
