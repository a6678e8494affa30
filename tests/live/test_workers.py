"""``watch --workers 2``: two scoring processes, the front, and their supervisor
(live/workers.py), through the real command line.

A worker killed with SIGKILL mid-run is started again with its runs: every record is
the replayed one, none is written twice, and ``/metrics`` never holds a run twice; a
worker stopped with SIGSTOP leaves ``/metrics`` answered with its numbers' age; the page
lists the runs of both workers and opens each; the children die with the supervisor;
a worker that keeps dying stops the watch.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
from claude_run import (
    APP,
    UTIL,
    Claude,
    append,
    make_setup,
    owner,
    wait_until,
    watch_process,
    worker_pids,
)

from streameval.commands.watch_worker import NICE
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

RUNS = 6


def _runs(runs: Path, s) -> list[tuple[Path, Claude]]:
    """Six runs, each a call read so far, their traces' owners both workers."""
    out = []
    for i in range(RUNS):
        d = runs / f"r{i}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": f"r{i}",
                                                 "agent": "claude-code", "model": f"m{i % 2}"}))
        c = Claude()
        append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 10 + i))
        out.append((d / "trace.jsonl", c))
    while len({owner(t) for t, _c in out}) < 2:   # each worker its runs: a new inode
        trace = out[-1][0]
        copy = trace.with_name("copy")
        copy.write_bytes(trace.read_bytes())
        copy.replace(trace)
    return out


def _scrape(port: int, path: str = "/metrics") -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.read()


def _status(port: int, path: str, headers: dict | None = None) -> int:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


def _run_ids(body: bytes) -> list[str]:
    return re.findall(r'^streameval_run_info\{[^}]*run_id="([^"]*)"', body.decode(), re.M)


def _nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _start(tmp_path: Path, s, runs: Path, *more: str):
    return watch_process([str(runs), "--gold", str(s.gold), "--repo", str(s.repo), "--port", "0",
                          "--workers", "2", "--out", str(tmp_path / "out.jsonl"),
                          "--checkpoint-interval", "0.1", "--idle-timeout", "3600",
                          "--patch-grace", "0", *more], tmp_path / "watch.log")


def _watched(tmp_path: Path, with_runs: bool = True):
    """The runs written (or an empty folder) and two workers watching them: (setup, the
    runs' folder, the traces, the watch process, its port)."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    traces = _runs(runs, s) if with_runs else []
    if not with_runs:
        runs.mkdir()
    proc, port = _start(tmp_path, s, runs)
    return s, runs, traces, proc, port


def test_a_killed_worker_is_started_again_with_its_runs(tmp_path):
    s, runs, traces, proc, port = _watched(tmp_path)
    try:
        wait_until(lambda: sorted(_run_ids(_scrape(port))) == [f"r{i}" for i in range(RUNS)],
                   what="every run in /metrics")
        pids = worker_pids(proc.pid)
        victim = owner(traces[0][0])
        part = Path(f"{tmp_path / 'out.jsonl'}.checkpoint.json.w{victim}")
        wait_until(lambda: part.exists() and len(orjson.loads(part.read_bytes())["files"]) ==
                   sum(owner(t) == victim for t, _c in traces), what="its checkpoint")
        os.kill(pids[victim], signal.SIGKILL)
        for trace, c in traces:   # the rest of every run, while one worker is down
            append(trace, *c.read("src/util.py", UTIL, 1, 5), c.result())
        out = tmp_path / "out.jsonl"
        wait_until(lambda: out.exists() and out.read_bytes().count(b"\n") >= RUNS, 60,
                   "every record")
        again = worker_pids(proc.pid)
        assert again[victim] != pids[victim] and again[1 - victim] == pids[1 - victim]
        # the worker started again sends its pieces once it has read its runs again (its
        # records may come first): each run once, and the fleet's count, when they come
        finished = b'streameval_fleet_runs{agent="claude-code",experiment="",model="m0",state="finished"} 3.0'
        wait_until(lambda: sorted(_run_ids(body := _scrape(port))) ==
                   [f"r{i}" for i in range(RUNS)] and finished in body, 60,
                   "every run once in /metrics")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    said = (tmp_path / "watch.log").read_text()
    assert f"worker {victim} stopped (exit -9); starting it again" in said
    records = out.read_bytes().splitlines()
    assert len(records) == RUNS, said[-3000:]   # nothing twice
    res = load_resources(str(s.gold), None, str(s.repo))
    assert sorted(records) == sorted(orjson.dumps(evaluate_trace(t, res, root=runs)[0])
                                     for t, _c in traces)
    assert proc.returncode == 0
    assert "records written: " in said and "runs: " in said   # the summary, added up


def test_max_runs_bounds_the_runs_of_every_worker_together(tmp_path):
    """--max-runs 2 with two workers: two finished runs stay in memory in all, one per
    worker (each worker keeping two would keep four)."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    traces = _runs(runs, s)
    for trace, c in traces:
        append(trace, c.result())
    proc, port = _start(tmp_path, s, runs, "--max-runs", "2")
    try:
        out = tmp_path / "out.jsonl"
        wait_until(lambda: out.exists() and out.read_bytes().count(b"\n") >= RUNS, 60, "every record")
        wait_until(lambda: len(_run_ids(_scrape(port))) == 2, 60, "two runs kept in all")
        assert len(_run_ids(_scrape(port))) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def test_a_stopped_worker_leaves_metrics_answered_with_their_age(tmp_path):
    _s, _runs_dir, _traces, proc, port = _watched(tmp_path)
    try:
        wait_until(lambda: len(_run_ids(_scrape(port))) == RUNS, what="every run in /metrics")
        stopped = worker_pids(proc.pid)[0]
        os.kill(stopped, signal.SIGSTOP)
        try:
            def age() -> float:
                return float(re.search(rb"^streameval_metrics_age_seconds (\S+)$", _scrape(port),
                                       re.M).group(1))

            first = age()
            wait_until(lambda: age() > first + 1.0, what="the age to grow")
            assert len(_run_ids(_scrape(port))) == RUNS   # the stopped worker's, as last sent
        finally:
            os.kill(stopped, signal.SIGCONT)
        wait_until(lambda: age() < 1.0, what="fresh numbers")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def test_the_page_lists_both_workers_runs_and_opens_each(tmp_path):
    _s, _runs_dir, _traces, proc, port = _watched(tmp_path)
    try:
        wait_until(lambda: len(json.loads(_scrape(port, "/api/runs"))["runs"]) == RUNS,
                   what="every run on the page")
        fleet = json.loads(_scrape(port, "/api/runs"))
        assert fleet["full"] and sorted(r["id"] for r in fleet["runs"]) == [f"r{i}" for i in range(RUNS)]
        # nothing changed since: no rows, and the same generation (a 304 with its ETag)
        since = json.loads(_scrape(port, f"/api/runs?since={fleet['gen']}"))
        assert not since["full"] and since["runs"] == [] and since["gen"] == fleet["gen"]
        assert _status(port, "/api/runs", {"If-None-Match": f'"{fleet["gen"]}"'}) == 304
        for i in range(RUNS):   # each from the worker that has it
            assert json.loads(_scrape(port, f"/api/run?id=r{i}"))["run"]["id"] == f"r{i}"
        assert _status(port, "/api/run?id=nobody") == 404
        assert b"<html" in _scrape(port, "/").lower()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def test_the_workers_and_the_front_die_with_the_supervisor(tmp_path):
    _s, _runs_dir, _traces, proc, port = _watched(tmp_path, with_runs=False)
    children = list(worker_pids(proc.pid).values())
    assert len(children) == 2
    # the workers score at a lower CPU priority than the supervisor and the front serve
    assert [_nice(pid) - _nice(proc.pid) for pid in children] == [NICE, NICE]
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)

    def gone(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    wait_until(lambda: all(gone(pid) for pid in children), what="the workers to end")


def test_a_worker_that_keeps_dying_stops_the_watch(tmp_path):
    from streameval.live.workers import Supervisor

    _s, _runs_dir, _traces, proc, _port = _watched(tmp_path, with_runs=False)
    try:
        for _ in range(Supervisor.MAX_STARTS):   # counting its first start
            wait_until(lambda: 1 in worker_pids(proc.pid), what="worker 1")
            pid = worker_pids(proc.pid)[1]
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda pid=pid: worker_pids(proc.pid).get(1) != pid
                       or proc.poll() is not None, what="worker 1 to go")
        assert proc.wait(60) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "worker 1 stopped (exit -9) for the 5(th) time" in (tmp_path / "watch.log").read_text()


def test_pushed_runs_on_both_workers_are_steered_and_lose_nothing_to_a_killed_worker(tmp_path):
    """Hooks of six sessions: each session's spool file is followed by the worker its
    inode hashes to, and the front answers its PreToolUse from that worker's scored
    bytes (the deny of the policy its first call trips). The worker of one session is
    killed: what was acknowledged is scored again by its successor, one record each."""
    from test_front import Watch

    from streameval.live.ingest import SPOOL_NAME
    from streameval.scoring.record import record_line

    watch = Watch(tmp_path, workers=2)
    sessions = [f"s{i}" for i in range(RUNS)]
    spool = watch.runs / SPOOL_NAME / "claude-hooks"
    try:
        for session in sessions:
            assert watch.read_call("t1", session=session) == {}
        # scored (a PreToolUse waits at most 2 s: not timed on workers still starting)
        wait_until(lambda: sorted(_run_ids(_scrape(watch.port))) == sessions, what="every run")
        for session in sessions:
            answer = watch.hook("PreToolUse", "t2", session=session)["hookSpecificOutput"]
            assert answer["permissionDecision"] == "deny", session
        victim = owner(spool / "s0" / "trace.jsonl")
        pid = worker_pids(watch.proc.pid)[victim]
        os.kill(pid, signal.SIGKILL)
        assert watch.read_call("t2", session="s0") == {}   # acknowledged: stored
        wait_until(lambda: worker_pids(watch.proc.pid).get(victim) not in (None, pid),
                   what="the worker started again")
        for session in sessions:
            assert watch.hook("SessionEnd", "end", session=session) == {}
        wait_until(lambda: watch.out.exists() and watch.out.read_bytes().count(b"\n") >= RUNS,
                   60, "every record")
    finally:
        watch.stop()
    res = load_resources(str(watch.s.gold), None, str(watch.s.repo))
    records = sorted(watch.out.read_bytes().splitlines(keepends=True))
    assert records == sorted(record_line(evaluate_trace(spool / s / "trace.jsonl", res,
                                                        root=watch.runs)[0]) for s in sessions)
    assert b'"tool_calls":2' in next(r for r in records if b'"run_id":"s0"' in r)
