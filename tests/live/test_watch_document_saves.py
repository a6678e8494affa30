"""A ``.traj`` document that its agent saves again after every step (SWE-agent,
mini-swe-agent): the run stays active until the document says it ended, gets one
record, is never counted as bad lines while half-written, and its lines are counted once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
from claude_run import watcher
from gitrepo import gold_stub

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import Resources
from streameval.sources.gold import load_gold
from streameval.sources.repocache import RepoCache

TRAJ = "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.traj"


def _saves(doc: dict, exit_status: str | None) -> list[bytes]:
    """The document as saved after step 1, 2, ... n: the last one as it ends."""
    steps = doc["trajectory"]
    out = []
    for k in range(1, len(steps) + 1):
        d = json.loads(json.dumps(doc))
        d["trajectory"] = steps[:k]
        info = d.setdefault("info", {})
        info.pop("submission", None)
        info.pop("exit_status", None)
        if k == len(steps) and exit_status:
            info["exit_status"] = exit_status
        out.append(json.dumps(d, indent=2).encode() + b"\n")
    return out


def _setup(tmp_path: Path, real_fixtures: Path, gold_parquet: Path):
    gold = load_gold(str(gold_parquet))
    stub = gold_stub(tmp_path / "repo", gold, "pydata__xarray-4075")
    res = Resources(gold, RepoCache(None, str(stub)), None)
    runs = tmp_path / "runs"
    (runs / "pydata__xarray-4075").mkdir(parents=True)
    doc = json.loads((real_fixtures / "swe-agent-traj" / TRAJ).read_text())
    return res, runs, runs / "pydata__xarray-4075" / "run.traj", doc


def _save(w, trace: Path, data: bytes, now: float) -> None:
    """Saved in place as the agents do: truncated, half written (a read may land
    there), then whole."""
    with open(trace, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        w.changed(trace, now=now)
        fh.write(data[len(data) // 2:])
    w.changed(trace, now=now)


def test_a_document_saved_after_every_step_is_active_until_it_ends(tmp_path, real_fixtures,
                                                                   gold_parquet):
    res, runs, trace, doc = _setup(tmp_path, real_fixtures, gold_parquet)
    saves = _saves(doc, "submitted")
    trace.write_bytes(b"")
    w = watcher(runs, res, tmp_path, grace=30.0, idle=3600.0)
    w.scan()
    now, seen = 1_000_000.0, 0
    for n, data in enumerate(saves, 1):
        now += 60.0   # each step outlasts --patch-grace
        _save(w, trace, data, now)
        w.tick(now=now)
        [run] = w.table.runs.values()
        if n < len(saves):
            assert run.finished_at is None, n        # state="active" while it runs
            assert not (tmp_path / "out.jsonl").exists(), n
            calls = run.session.extras.tool_calls      # the save as it stands
            assert 0 < calls <= n and calls >= seen
            seen = calls
    w.tick(now=now + 60.0)   # the patch grace passes
    records = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert records == [orjson.dumps(r) for r in evaluate_trace(trace, res)]  # one, as replay
    assert sum(w.table.stats.bad_lines.values()) == 0   # half-written reads are not bad
    assert w.table.stats.lines_processed == saves[-1].count(b"\n")   # each line once


def test_a_document_without_an_exit_status_ends_when_idle(tmp_path, real_fixtures, gold_parquet):
    res, runs, trace, doc = _setup(tmp_path, real_fixtures, gold_parquet)
    saves = _saves(doc, None)
    shutil.copyfile(real_fixtures / "swe-agent-traj" / TRAJ, trace)
    trace.write_bytes(saves[0])
    w = watcher(runs, res, tmp_path, grace=0.0, idle=300.0)
    w.scan()
    w.poll_all()
    now = w.followers[trace].last_growth
    for data in saves[1:]:
        now += 100.0
        _save(w, trace, data, now)
        w.tick(now=now)
        assert next(iter(w.table.runs.values())).finished_at is None
    w.tick(now=now + 301.0)
    records = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert records == [orjson.dumps(r) for r in evaluate_trace(trace, res)]
    assert orjson.loads(records[0])["end_reason"] == "unfinished"
