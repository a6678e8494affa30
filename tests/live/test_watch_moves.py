"""Runs follow their file, not their path (issue 18): a run directory renamed mid-run
gave 648f216 two records, a partial one ended ``deleted`` and the rest as
``<run_id>~hash``. Now: one record, the numbers of replaying the file where it ends up,
its run id and name as first given, and ``trace_moved_to`` saying where it lives."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

import orjson
from claude_run import APP, UTIL, Claude, append, make_setup, started, wait_until, watcher


def _steps(port: int, run_id: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("streameval_steps_total{") and f'run_id="{run_id}"' in line:
                return float(line.rsplit(" ", 1)[1])
    return -1.0


def test_a_run_directory_renamed_mid_run_is_one_record_equal_to_replay(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    first = runs / "r1"
    first.mkdir(parents=True)
    (first / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r1"}))
    c = Claude()
    append(first / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    out, log = tmp_path / "out.jsonl", tmp_path / "watch.log"
    cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(out), "--idle-timeout", "60",
           "--patch-grace", "0"]   # the run ends by its end event: no idle end under load
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: b"serving metrics on" in log.read_bytes() or proc.poll() is not None)
        port = int(log.read_text().split("http://127.0.0.1:")[1].split("/")[0])
        wait_until(lambda: _steps(port, "r1") == 1.0, what="the first read scored")
        moved = runs / "later" / "r1-renamed"
        moved.parent.mkdir()
        first.rename(moved)
        time.sleep(0.3)
        append(moved / "trace.jsonl", *c.read("src/util.py", UTIL, 1, 5), c.result())
        wait_until(lambda: out.exists() and out.read_bytes().count(b"\n") >= 1, 60, "a record")
        time.sleep(3)   # any second record (the old path ended as deleted) would be out by now
    finally:
        proc.terminate()
        proc.wait(20)
    records = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert [r["run_id"] for r in records] == ["r1"]
    (rec,) = records
    from streameval.runs.evaluate import evaluate_trace
    from streameval.runs.resources import load_resources

    res = load_resources(str(s.gold), None, str(s.repo))
    (replayed,) = evaluate_trace(moved / "trace.jsonl", res, root=runs)
    assert rec.pop("trace_moved_to") == "later/r1-renamed/trace.jsonl"
    assert rec["trace"] == "r1/trace.jsonl"
    assert rec["num_steps"] == 2 and rec["end_reason"] != "deleted"
    assert rec == {**replayed, "trace": "r1/trace.jsonl"}


def test_a_renamed_trace_keeps_its_run_id_and_key_across_a_restart(env, tmp_path):
    """No meta.json: the trace is named by the path first seen; after the rename and a
    restart from the checkpoint it still is, and the record is not written again."""
    _s, runs, res = env
    d = runs / "a"
    d.mkdir()
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    cp = tmp_path / "cp.json"
    w = watcher(runs, res, tmp_path, checkpoint=cp)
    w.scan()
    w.poll_all()
    d.rename(runs / "b")
    w.handle_changes([(str(d), True), (str(runs / "b"), False)])   # as inotify tells it
    assert list(w.followers) == [runs / "b" / "trace.jsonl"]
    w.tick(now=time.time() + 10)
    w.save_checkpoint()
    out = tmp_path / "out.jsonl"
    (rec,) = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert rec["run_id"] == "s1" and rec["trace"] == "a/trace.jsonl"
    assert rec["trace_moved_to"] == "b/trace.jsonl"
    again = watcher(runs, res, tmp_path, checkpoint=cp)
    again.restore_checkpoint()
    again.scan()
    again.tick(now=time.time() + 10)
    assert out.read_bytes().count(b"\n") == 1


def test_lines_whose_file_event_never_came_are_read_before_the_run_ends_idle(tmp_path):
    """The watcher above lost the read appended just after the rename about 1 run in 8:
    no event came for it, and the run ended idle without it. A run is read once more
    before it ends as idle."""
    from streameval.runs.resources import load_resources

    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    (runs / "r1").mkdir(parents=True)
    (runs / "r1" / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r1"}))
    trace = runs / "r1" / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    res = load_resources(str(s.gold), None, str(s.repo))
    w = started(runs, res, tmp_path, idle=10.0, rescan=3600.0)
    (run,) = w.table.runs.values()
    assert run.session.num_steps == 1
    append(trace, *c.read("src/util.py", UTIL, 1, 5))    # and no event tells the watcher
    w.tick(now=w.followers[trace].last_growth + 60.0)
    assert run.session.num_steps == 2 and not w.followers[trace].closed
    w.tick(now=w.followers[trace].last_growth + 60.0)      # now it is idle: it ends
    (rec,) = [orjson.loads(x) for x in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    assert rec["num_steps"] == 2 and rec["run_id"] == "r1"
