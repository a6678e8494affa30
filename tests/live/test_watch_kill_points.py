"""A watcher killed at every point between a trace's end and its record, with the patch
written before the kill, while the watcher is down, or while the restarted watcher starts
(issue 31): the last record is always the replayed one, with EditLoc.

The points are exact: the watcher stops itself there (``STREAMEVAL_HALT_AT``,
live/halt.py) and the test kills it while it is stopped, so nothing depends on timing.
"While it starts" is the restarted watcher stopped at ``started``: it has read its
checkpoint and every trace, and does not watch for file events yet, so the patch's event
is never seen. On f53415f that case lost its EditLoc at every point (the record came
``--patch-grace`` seconds after the run's end, without a patch, and stayed so).

With two workers (``--workers 2``) the worker that follows the trace stops there, and is
the one killed; its supervisor starts it again ("while down": the supervisor is held
with SIGSTOP meanwhile; "while it starts": the worker started again stops at
``started``, as ``STREAMEVAL_HALT_AGAIN_AT`` says).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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
    trace_in,
    wait_until,
    whole_lines,
    worker_pids,
)

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

pytestmark = pytest.mark.slow

PATCH = "--- a/src/app.py\n+++ b/src/app.py\n@@ -7,1 +7,1 @@\n-def f3(x):\n+def f3(y):\n"


def _start(tmp: Path, runs: Path, s, n: int, grace: float, halt: str | None = None,
           workers: int = 1, again: str | None = None):
    cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(tmp / "out.jsonl"),
           "--idle-timeout", "3600", "--patch-grace", str(grace), "--workers", str(workers)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("STREAMEVAL_HALT_AT", "STREAMEVAL_HALT_AGAIN_AT")}
    if halt:
        env["STREAMEVAL_HALT_AT"] = halt
    if again:
        env["STREAMEVAL_HALT_AGAIN_AT"] = again
    log = tmp / f"watch-{n}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env)
    wait_until(lambda: b"serving metrics on" in log.read_bytes() or proc.poll() is not None,
               60, "watch to start")
    assert proc.poll() is None, log.read_text()[-3000:]
    return proc, log


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def _stopped(proc) -> bool:
    """The process stopped itself (or was stopped): its state is T."""
    return _state(proc.pid) in ("T", "t")


def _wait_stopped(proc, log: Path, what: str) -> None:
    wait_until(lambda: _stopped(proc) or proc.poll() is not None, 60, what)
    assert proc.poll() is None, log.read_text()[-3000:]


def _records(out: Path) -> list[bytes]:
    return whole_lines(out)


#: where the first watcher is killed: (halt point, its --patch-grace, records before the
#: one with the patch). "end-unread" is stopped by the test before the end is written;
#: "record-no-patch" writes its record without a patch (no grace) and is stopped there;
#: "checkpointed" is killed once the checkpoint holds that record.
POINTS = {
    "end-unread": (None, 3600, 0),
    "end-read": ("end-read", 3600, 0),
    "run-ended": ("run-ended", 3600, 0),
    "record-no-patch": ("record-written", 0, 1),
    "checkpointed": (None, 0, 1),
}
#: where it is killed after it saw the patch: landed, or in the record just appended
SEEN = {"patch-landed": ("patch-landed", 3600, 0), "record-with-patch": ("record-written", 3600, 0)}
#: when the patch is written: while the first watcher is stopped (before the kill), while
#: no watcher runs, or while the restarted one starts
WHEN = ("before_kill", "while_down", "while_starting")


def _check(log: Path, out: Path, expected: bytes, before: int) -> None:
    """The last record is the replayed one, with the patch, after ``before`` others."""
    said = log.read_text()
    records = _records(out)
    assert records[-1] == expected, said[-3000:]
    assert len(records) == before + 1, said[-3000:]   # nothing twice, nothing without cause
    assert json.loads(records[-1])["patch_source"] == "file"
    assert "patches landed: 1" in said


def _run(tmp_path):
    """A run's first calls, before its end: (setup, root, trace, its writer, --out)."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    trace = trace_in(runs, s, "r1")
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 10), *c.read("src/util.py", UTIL, 1, 3))
    return s, runs, trace, c, tmp_path / "out.jsonl"


def _case(tmp_path, point: str, when: str | None) -> None:
    s, runs, trace, c, out = _run(tmp_path)
    d = trace.parent
    cp = Path(f"{out}.checkpoint.json")
    halt, grace, before = {**POINTS, **SEEN}[point]
    proc, log = _start(tmp_path, runs, s, 0, grace, halt)
    try:
        wait_until(lambda: b"run r1 started" in log.read_bytes(), 60, "the run to start")
        if point == "end-unread":
            proc.send_signal(signal.SIGSTOP)
        if point == "record-with-patch":
            (d / "patch.diff").write_text(PATCH)   # its event lands it before the end
        append(trace, c.result())
        if point == "patch-landed":
            wait_until(lambda: b"run r1 ended" in log.read_bytes(), 60, "the run to end")
            (d / "patch.diff").write_text(PATCH)   # landed by its event, then stopped
        if point == "checkpointed":
            wait_until(lambda: len(_records(out)) == 1 and orjson.loads(cp.read_bytes())
                       ["files"][str(trace)]["written"], 60, "the record checkpointed")
        else:
            _wait_stopped(proc, log, f"the watcher to stop at {point}")
        if when == "before_kill":
            (d / "patch.diff").write_text(PATCH)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    if when == "while_down":
        (d / "patch.diff").write_text(PATCH)
    # a short grace: a watcher that missed the patch writes its record without it at once
    # the restarted watcher stops itself once it has read its runs again, so that what it
    # says of them is said before it is told to end (a record already there is no sign)
    proc, log = _start(tmp_path, runs, s, 1, 2, "started")
    try:
        _wait_stopped(proc, log, "the restarted watcher to stop before it watches")
        if when == "while_starting":
            (d / "patch.diff").write_text(PATCH)   # its file event is never seen
        proc.send_signal(signal.SIGCONT)
        expected = orjson.dumps(evaluate_trace(trace, load_resources(str(s.gold), None,
                                                                      str(s.repo)))[0])
        wait_until(lambda: len(_records(out)) > before, 60, "the record")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    _check(log, out, expected, before)


def _case_workers(tmp_path, point: str, when: str | None) -> None:
    """``_case`` with two workers: the trace's worker is the one stopped and killed."""
    s, runs, trace, c, out = _run(tmp_path)
    d = trace.parent
    index = owner(trace)
    cp = Path(f"{out}.checkpoint.json.w{index}")
    halt, grace, before = {**POINTS, **SEEN}[point]
    proc, log = _start(tmp_path, runs, s, 0, grace, halt, workers=2,
                       again="started" if when == "while_starting" else None)
    try:
        wait_until(lambda: b"run r1 started" in log.read_bytes(), 60, "the run to start")
        pid = worker_pids(proc.pid)[index]
        if point == "end-unread":
            os.kill(pid, signal.SIGSTOP)
        if point == "record-with-patch":
            (d / "patch.diff").write_text(PATCH)
        append(trace, c.result())
        if point == "patch-landed":
            wait_until(lambda: b"run r1 ended" in log.read_bytes(), 60, "the run to end")
            (d / "patch.diff").write_text(PATCH)
        if point == "checkpointed":
            wait_until(lambda: len(_records(out)) == 1 and cp.exists() and orjson.loads(
                cp.read_bytes())["files"][str(trace)]["written"], 60, "the record checkpointed")
        else:
            wait_until(lambda: _state(pid) in ("T", "t"), 60, f"the worker to stop at {point}")
        if when == "before_kill":
            (d / "patch.diff").write_text(PATCH)
        if when == "while_down":
            os.kill(proc.pid, signal.SIGSTOP)   # no worker started again meanwhile
        os.kill(pid, signal.SIGKILL)
        if when == "while_down":
            wait_until(lambda: _state(pid) in ("Z", ""), 60, "the worker to die")
            (d / "patch.diff").write_text(PATCH)
            os.kill(proc.pid, signal.SIGCONT)
        if when == "while_starting":
            wait_until(lambda: worker_pids(proc.pid).get(index) not in (None, pid) and
                       _state(worker_pids(proc.pid)[index]) in ("T", "t"), 60,
                       "the worker started again to stop before it watches")
            (d / "patch.diff").write_text(PATCH)   # its file event is never seen
            os.kill(worker_pids(proc.pid)[index], signal.SIGCONT)
        expected = orjson.dumps(evaluate_trace(trace, load_resources(str(s.gold), None,
                                                                      str(s.repo)))[0])
        wait_until(lambda: len(_records(out)) > before and _records(out)[-1] == expected,
                   60, "the record")
        wait_until(lambda: f"worker {index} started again has read".encode() in log.read_bytes(),
                   60, "the worker started again to have read its runs")
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    _check(log, out, expected, before)


#: one watcher killed and started again, or the worker of the run (its supervisor starts it)
CASES = {1: _case, 2: _case_workers}


@pytest.mark.parametrize("workers", list(CASES))
@pytest.mark.parametrize("when", WHEN)
@pytest.mark.parametrize("point", list(POINTS))
def test_a_kill_between_a_runs_end_and_its_record_keeps_its_patch(tmp_path, point, when, workers):
    CASES[workers](tmp_path, point, when)


@pytest.mark.parametrize("workers", list(CASES))
@pytest.mark.parametrize("point", list(SEEN))
def test_a_kill_after_the_patch_landed_keeps_it(tmp_path, point, workers):
    """The patch was seen before the kill: landed (its record not written yet), or in
    the record appended (the checkpoint does not say so yet): one record, with it."""
    CASES[workers](tmp_path, point, None)
