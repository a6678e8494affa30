"""A real `streameval watch` process killed with SIGKILL mid-run and restarted loses
nothing and counts nothing twice: its final record equals the replayed one. With two
workers (``--workers 2``), the worker scoring the run is the one killed, and its
supervisor starts it again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, Claude, make_setup, owner, wait_until, worker_pids

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

pytestmark = pytest.mark.slow


def start_watch(tmp: Path, runs: Path, s, workers: int = 1) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(tmp / "out.jsonl"),
           "--checkpoint", str(tmp / "cp.json"), "--checkpoint-interval", "0.1",
           "--idle-timeout", "3600", "--patch-grace", "0", "--workers", str(workers)]
    n = len(list(tmp.glob("watch-*.out")))
    out, err = tmp / f"watch-{n}.out", tmp / f"watch-{n}.err"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(cmd, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
    wait_until(lambda: b"serving metrics on http://127.0.0.1:" in out.read_bytes()
               or proc.poll() is not None, what="watch to start")
    assert proc.poll() is None, err.read_text()
    return proc


def checkpoint_offset(cp: Path, trace: Path) -> int:
    try:
        data = json.loads(cp.read_text())
    except (OSError, ValueError):
        return -1
    return data["files"].get(str(trace), {}).get("offset", -1)


class _Killer:
    """Kills what scores the run: the watch (started again by the test), or the worker
    that follows the trace (started again by its supervisor)."""

    def __init__(self, tmp: Path, runs: Path, s, trace: Path, workers: int):
        self.tmp, self.runs, self.s, self.trace, self.workers = tmp, runs, s, trace, workers
        self.proc = start_watch(tmp, runs, s, workers)
        self.cp = tmp / "cp.json" if workers == 1 else tmp / f"cp.json.w{owner(trace, workers)}"

    def kill(self) -> None:
        if self.workers == 1:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            return
        index = owner(self.trace, self.workers)
        pid = worker_pids(self.proc.pid)[index]
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: worker_pids(self.proc.pid).get(index) not in (None, pid),
                   what="the worker started again")

    def again(self) -> None:
        if self.workers == 1:
            self.proc = start_watch(self.tmp, self.runs, self.s)

    def stop(self, sig=signal.SIGTERM) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(30)


@pytest.mark.parametrize("workers", [1, 2])
def test_sigkill_in_the_middle_then_restart_gives_the_replayed_record(tmp_path, workers):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "demo__demo-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "kill-9"}))
    trace = d / "trace.jsonl"
    c = Claude()
    first = [c.init(), *c.read("src/app.py", APP, 1, 10), *c.read("src/util.py", UTIL, 1, 3)]
    trace.write_bytes(b"\n".join(first) + b"\n")

    w = _Killer(tmp_path, runs, s, trace, workers)
    try:
        size = trace.stat().st_size
        wait_until(lambda: checkpoint_offset(w.cp, trace) == size, what="checkpoint")
    finally:
        w.kill()

    rest = [*c.read("src/app.py", APP, 5, 30), *c.read("src/app.py", APP, 1, 10), c.result()]
    with open(trace, "ab") as fh:
        fh.write(b"\n".join(rest) + b"\n")
    (d / "patch.diff").write_text("--- a/src/app.py\n+++ b/src/app.py\n@@ -7,1 +7,1 @@\n"
                                  "-def f3(x):\n+def f3(y):\n")
    w.again()
    try:
        out = tmp_path / "out.jsonl"
        wait_until(lambda: out.exists() and out.read_bytes().endswith(b"\n"), what="record")
        # one more checkpoint round must not write it again
        time.sleep(0.5)
    finally:
        w.kill()
    w.again()   # and a third start after everything was written
    try:
        time.sleep(1.0)
    finally:
        w.stop()

    lines = out.read_bytes().splitlines()
    assert len(lines) == 1, lines
    replayed = evaluate_trace(trace, load_resources(str(s.gold), None, str(s.repo)))
    assert lines[0] == orjson.dumps(replayed[0])
    rec = json.loads(lines[0])
    assert rec["num_steps"] == 4 and rec["tool_calls"] == 4 and "editloc" in rec
