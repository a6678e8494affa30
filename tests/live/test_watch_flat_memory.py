"""Runs that passed through leave nothing behind (issue 18): on 648f216 every trace
ever seen kept a follower and a checkpoint entry, every run id its claim, so memory,
the checkpoint and the time of a tick grew with the runs seen (RSS 72.6 -> 162.9 MB and
the checkpoint 0.18 -> 1.99 MB from 1,000 to 11,000 runs with --max-runs 1000).
Their sizes are counted here; RSS and time per run are measured in benchmarks/."""

from __future__ import annotations

import json
import time

import orjson
from claude_run import APP, Claude, append, watcher


def _run(runs, i: int, instance: str) -> None:
    d = runs / f"r{i}"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": f"r{i}"}))
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1 + i % 20, 5), c.result())


def test_runs_that_passed_through_leave_nothing_and_are_not_scored_again(env, tmp_path):
    s, runs, res = env
    cp = tmp_path / "cp.json"
    w = watcher(runs, res, tmp_path, max_runs=5, keep_finished=0.0, checkpoint=cp)
    out = tmp_path / "out.jsonl"
    sizes = []
    for i in range(40):
        _run(runs, i, s.instance)
        w.scan()
        w.poll_all()
        w.tick(now=time.time() + 1)
        w.save_checkpoint()
        sizes.append((len(w.followers), len(json.loads(cp.read_text())["files"]),
                      len(w.table.runs)))
    assert max(f for f, _c, _r in sizes[10:]) <= 10          # not one per run seen
    assert max(c for _f, c, _r in sizes[10:]) <= 10
    assert max(r for _f, _c, r in sizes[10:]) <= 10
    ids = [orjson.loads(x)["run_id"] for x in out.read_bytes().splitlines()]
    assert ids == [f"r{i}" for i in range(40)]               # each record once
    for _ in range(3):                                       # rescans find nothing new
        w.scan()
        w.poll_all()
        w.tick(now=time.time() + 1)
    assert out.read_bytes().count(b"\n") == 40
    assert len(w.table.run_ids) <= 10


def _walked() -> tuple[int, int]:
    """What a full garbage collection walks now: tracked objects, and the references it
    follows from them (``gc.get_referents`` is the collector's own traversal)."""
    import gc
    from types import ModuleType

    for _ in range(3):   # a tuple of plain values stops being walked once a pass saw it
        gc.collect()
    objects = gc.get_objects()
    # a module's referents are left out: on CPython 3.12.0-3.12.5 and 3.13.0 those of
    # ``_asyncio`` include its free list of future iterators, memory already freed, and
    # the next collection loops for ever in C (python/cpython#122695), out of reach of
    # pytest-timeout's signal; this walk hung CI's Python 3.12.1 run for an hour
    refs = sum(len(gc.get_referents(o)) for o in objects if not isinstance(o, ModuleType))
    return len(objects), refs


def test_a_kept_finished_run_holds_few_objects_for_the_collector(env, tmp_path, caplog):
    """f53415f kept a finished run's whole scoring state: its sets of intervals, the
    gold's, the ranking's files, the journal's rows and trails, the adapter; with
    --max-runs 1000 a full collection walked 178,000 objects and took 150-200 ms every
    ~2.5 s of a 50,000-run soak. A run whose record is written now keeps its session
    and its journal as bytes until something reads them (issue 27)."""
    import logging

    from streameval.live.exposition import prerender
    from streameval.live.pages import LivePages

    # the run lines an INFO log makes are kept by the test's log capture, not the watcher
    caplog.set_level(logging.WARNING, logger="streameval")
    s, runs, res = env
    w = watcher(runs, res, tmp_path, max_runs=100_000, keep_finished=3600.0)
    w.table.on_settled.append(prerender)             # /metrics renders a run once, as served
    pages = LivePages(w.table, res, keep_calls=0)    # the page's journals, calls let go

    def batch(first: int, n: int) -> None:
        for i in range(first, first + n):
            _run(runs, i, s.instance)
        w.scan()
        w.poll_all()
        w.tick(now=time.time() + 1)
        pages.prune(now=time.time() + 10 * (first + n))

    batch(0, 20)                                     # caches warm
    before = _walked()
    batch(20, 200)
    after = _walked()
    assert sum(r.record_written for r in w.table.runs.values()) == 220
    per_run = [(a - b) / 200 for a, b in zip(after, before)]
    # f53415f: 98 objects and 446 references a run; now 24 and 165
    assert per_run[0] <= 30, per_run                 # tracked objects
    assert per_run[1] <= 200, per_run                # references walked
