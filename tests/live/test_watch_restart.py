"""A real `streameval watch` process killed with SIGKILL mid-run and restarted loses
nothing and counts nothing twice: its final record equals the replayed one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, Claude, make_setup, wait_until

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

pytestmark = pytest.mark.slow


def start_watch(tmp: Path, runs: Path, s) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(tmp / "out.jsonl"),
           "--checkpoint", str(tmp / "cp.json"), "--checkpoint-interval", "0.1",
           "--idle-timeout", "3600", "--patch-grace", "0"]
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


def test_sigkill_in_the_middle_then_restart_gives_the_replayed_record(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "demo__demo-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "kill-9"}))
    trace = d / "trace.jsonl"
    c = Claude()
    first = [c.init(), *c.read("src/app.py", APP, 1, 10), *c.read("src/util.py", UTIL, 1, 3)]
    trace.write_bytes(b"\n".join(first) + b"\n")

    proc = start_watch(tmp_path, runs, s)
    try:
        size = trace.stat().st_size
        wait_until(lambda: checkpoint_offset(tmp_path / "cp.json", trace) == size, what="checkpoint")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    rest = [*c.read("src/app.py", APP, 5, 30), *c.read("src/app.py", APP, 1, 10), c.result()]
    with open(trace, "ab") as fh:
        fh.write(b"\n".join(rest) + b"\n")
    (d / "patch.diff").write_text("--- a/src/app.py\n+++ b/src/app.py\n@@ -7,1 +7,1 @@\n"
                                  "-def f3(x):\n+def f3(y):\n")
    proc = start_watch(tmp_path, runs, s)
    try:
        out = tmp_path / "out.jsonl"
        wait_until(lambda: out.exists() and out.read_bytes().endswith(b"\n"), what="record")
        # one more checkpoint round must not write it again
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc = start_watch(tmp_path, runs, s)  # and a third start after everything was written
    try:
        time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)

    lines = out.read_bytes().splitlines()
    assert len(lines) == 1, lines
    replayed = evaluate_trace(trace, load_resources(str(s.gold), None, str(s.repo)))
    assert lines[0] == orjson.dumps(replayed[0])
    rec = json.loads(lines[0])
    assert rec["num_steps"] == 4 and rec["tool_calls"] == 4 and "editloc" in rec
