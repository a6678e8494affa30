"""A late patch is owed across restarts (issue 18): a record written without EditLoc
before a kill -9 gets its corrected record once the patch lands, whenever that is:
before the kill, while the watcher is down, after the restart, or after the run left
memory. 648f216, without --checkpoint (then the default), wrote 2 of 5 records owed an
EditLoc without one, and no correction followed. A real ``streameval watch`` process,
with its default checkpoint."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import orjson
import pytest
from claude_run import APP, UTIL, Claude, make_setup, wait_until

PATCH = "--- a/src/app.py\n+++ b/src/app.py\n@@ -7,1 +7,1 @@\n-def f3(x):\n+def f3(y):\n"


def _start(tmp, runs, s, n: int) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(tmp / "out.jsonl"),
           "--idle-timeout", "1", "--patch-grace", "0.2", "--keep-finished", "1",
           "--checkpoint-interval", "0.2"]
    log = tmp / f"watch-{n}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait_until(lambda: b"serving metrics on" in log.read_bytes() or proc.poll() is not None)
    assert proc.poll() is None, log.read_text()[-3000:]
    return proc


def _records(out) -> list[dict]:
    return [orjson.loads(x) for x in out.read_bytes().splitlines()] if out.exists() else []


@pytest.mark.parametrize("when", ["before_kill", "while_down", "after_restart", "after_release"])
def test_a_patch_landing_around_a_kill_gets_its_corrected_record(tmp_path, when):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "r1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r1"}))
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 10), *c.read("src/util.py", UTIL, 1, 3)]
    (d / "trace.jsonl").write_bytes(b"\n".join(lines) + b"\n")   # a transcript: ends when idle
    out = tmp_path / "out.jsonl"
    proc = _start(tmp_path, runs, s, 0)
    try:
        wait_until(lambda: len(_records(out)) == 1, 60, "the record without a patch")
        assert _records(out)[0]["patch_source"] is None
        if when == "before_kill":
            (d / "patch.diff").write_text(PATCH)
        if when == "after_release":
            time.sleep(2.5)   # past --keep-finished: the run left memory
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    if when == "while_down":
        (d / "patch.diff").write_text(PATCH)
    proc = _start(tmp_path, runs, s, 1)
    try:
        if when in ("after_restart", "after_release"):
            time.sleep(2.5 if when == "after_release" else 1.0)
            (d / "patch.diff").write_text(PATCH)
        wait_until(lambda: _records(out)[-1]["patch_source"] == "file", 60, "the corrected record")
        time.sleep(1.0)   # nothing more follows
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    records = _records(out)
    assert [r["patch_source"] for r in records] == [None, "file"]
    assert records[-1]["editloc"] is not None and records[-1]["run_id"] == "r1"
