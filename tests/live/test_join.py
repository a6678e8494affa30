"""``/metrics`` of several workers joined in the front (live/join.py) is one watcher's:
byte for byte what one watcher's own registry gives over the same traces, in both
formats, with the per-run series cap choosing among all runs, and the fleet's means,
counts and label sets over all runs (not a mean of each worker's), but for the
series about the processes (lag, caches)."""

from __future__ import annotations

import json
import re

import orjson
import pytest
from claude_run import APP, UTIL, Claude, make_setup
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_om

from streameval.live.arbiter import Arbiter
from streameval.live.exporter import RunsCollector
from streameval.live.join import Joined, JoinFeed
from streameval.live.mirror import AGE
from streameval.live.shard import Shard
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.resources import load_resources

#: the series about a process: each worker's own
PROCESS = re.compile(rb"^(streameval_lag_seconds|streameval_cache_(hits|misses))\S* .*\n", re.M)
AGE_LINES = re.compile(rb"^(# (HELP|TYPE) )?" + AGE.encode() + rb"\b.*\n", re.M)


class _Local:
    """A worker's line to an in-process supervisor (the start's declarations answered
    at once: the workers here start one after the other)."""

    def __init__(self, arbiter: Arbiter, index: int):
        self.arbiter, self.index = arbiter, index

    def ask(self, m: dict) -> dict:
        if "declare" in m:
            return {"ok": True}
        [(_to, answer)] = self.arbiter.handle(self.index, m)
        return answer

    def tell(self, m: dict) -> None:
        self.arbiter.handle(self.index, m)


def _runs(tmp_path, s, n: int) -> None:
    """``n`` runs of three agents and models, two experiments, half of them ended."""
    runs = tmp_path / "runs"
    for i in range(n):
        d = runs / f"r{i:02d}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({
            "instance_id": s.instance, "run_id": f"run-{i}", "agent": f"agent{i % 3}",
            "model": f"model{i % 2}", **({"experiment": "b"} if i % 4 == 0 else {})}))
        c = Claude()
        lines = [c.init(), *c.read("src/app.py", APP, 1, 5 + i), *c.read("src/util.py", UTIL, 1, 2)]
        if i % 2:
            lines.append(c.result())
        (d / "trace.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def _watch(tmp_path, s, shard=None) -> Watcher:
    w = Watcher(WatchConfig(root=tmp_path / "runs"), load_resources(str(s.gold), None, str(s.repo)),
                shard=shard)
    w.start()
    w.tick()
    return w


@pytest.mark.parametrize("per_run_series", [1000, 5])
def test_two_workers_joined_are_one_watchers_scrape(tmp_path, per_run_series):
    s = make_setup(tmp_path)
    _runs(tmp_path, s, 12)
    one = _watch(tmp_path, s)
    registry = CollectorRegistry()
    registry.register(RunsCollector(one.table, per_run_series=per_run_series))
    arbiter = Arbiter(None, tmp_path / "runs", 2)
    workers = [_watch(tmp_path, s, Shard(i, 2, _Local(arbiter, i))) for i in range(2)]
    assert sorted(len(w.table.runs) for w in workers) != [0, 12]   # both have runs
    assert sum(len(w.table.runs) for w in workers) == 12
    joined = Joined(2, per_run_series, 100, dict)
    feeds = [JoinFeed(RunsCollector(w.table, per_run_series=per_run_series), w) for w in workers]
    for om, encode in ((False, generate_latest), (True, generate_om)):
        for i, feed in enumerate(feeds):
            joined.take(orjson.loads(orjson.dumps(feed.pieces(om, joined))), i)
        got = AGE_LINES.sub(b"", joined.render(om))
        want = encode(registry)
        assert PROCESS.sub(b"", got) == PROCESS.sub(b"", want)
        assert got.count(b"streameval_run_info{") == min(12, per_run_series)
    finished = [float(line.split()[-1]) for line in got.splitlines()
                if line.startswith(b"streameval_fleet_runs{") and b'state="finished"' in line]
    assert sum(finished) == 6   # over both workers' finished runs


def test_a_worker_started_again_replaces_what_it_sent_and_its_counts_go_on(tmp_path):
    s = make_setup(tmp_path)
    _runs(tmp_path, s, 4)
    arbiter = Arbiter(None, tmp_path / "runs", 1)
    w = _watch(tmp_path, s, Shard(0, 1, _Local(arbiter, 0)))
    joined = Joined(1, 1000, 100, dict)
    first = JoinFeed(RunsCollector(w.table), w).pieces(False, joined)
    joined.take(orjson.loads(orjson.dumps(first)), 0)
    lines = int(re.search(rb"^streameval_lines_processed_total (\S+)$", joined.render(False),
                          re.M).group(1).split(b".")[0])
    # its successor: its runs read again (not counted again), sent whole
    again = dict(first, pid=first["pid"] + 1, stats={**first["stats"], "lines_processed": 0})
    joined.take(orjson.loads(orjson.dumps(again)), 0)
    body = joined.render(False)
    assert body.count(b"streameval_run_info{") == 4
    assert f"streameval_lines_processed_total {lines}.0".encode() in body
