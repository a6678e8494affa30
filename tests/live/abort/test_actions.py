"""Abort actions an agent cannot turn against anyone: a signal or webhook fires once
per run even across watcher restarts, a pid from ``meta.json`` is checked before it is
signalled, and a trickling webhook cannot wedge the worker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from claude_run import Claude, append, policy, reads, trace_in

from streameval.live.abort.actions import process_started_at, send_signal
from streameval.live.abort.engine import AbortEngine, attach, parse_policies
from streameval.live.watch import WatchConfig, Watcher

# counts SIGUSR1s into a file, one byte each, and says it is ready
_COUNTER = """
import signal, sys, time
out = sys.argv[1]
def hit(*_):
    with open(out, "ab") as fh:
        fh.write(b"x")
signal.signal(signal.SIGUSR1, hit)
open(out + ".ready", "w").close()
while True:
    time.sleep(0.05)
"""


def _watcher(runs: Path, res, toml: str, cp: Path) -> tuple[Watcher, AbortEngine]:
    cfg = WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0, rescan_interval=3600,
                      checkpoint=cp)
    w = Watcher(cfg, res)
    engine = attach(w, AbortEngine(parse_policies(toml, "test.toml")))
    return w, engine


def _wait(pred, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def counter_process(tmp_path):
    hits = tmp_path / "hits"
    child = subprocess.Popen([sys.executable, "-c", _COUNTER, str(hits)])
    assert _wait(lambda: Path(str(hits) + ".ready").exists())
    yield child, hits
    child.kill()
    child.wait()


def test_a_signal_fires_once_across_three_watcher_restarts(env, tmp_path, counter_process):
    child, hits = counter_process
    s, runs, res = env
    trace = trace_in(runs, s, pid=child.pid)
    c = Claude()
    append(trace, c.init(), *reads(c, ("src/util.py", 20, 21), ("src/util.py", 22, 23)))
    toml = "allow_signals = true\n" + policy("steps", "max_steps", action="signal", limit=1,
                                             signal="SIGUSR1")
    cp = tmp_path / "cp.json"
    outcomes = []
    for _restart in range(3):
        w, engine = _watcher(runs, res, toml, cp)
        w.restore_checkpoint()
        w.scan()
        w.poll_all()
        outcomes.append([d.outcome for d in engine.decisions])
        w.close()
        engine.close()
    assert outcomes == [["signalled"], [], []]
    assert _wait(lambda: hits.exists() and hits.read_bytes() == b"x")
    time.sleep(0.3)
    assert hits.read_bytes() == b"x"


def test_a_pid_that_started_after_meta_named_it_is_not_signalled(env, counter_process):
    """A reused pid: meta.json says the agent had this pid an hour before the process
    now holding it started."""
    child, hits = counter_process
    s, runs, res = env
    trace = trace_in(runs, s, pid=child.pid)
    hour_ago = time.time() - 3600
    os.utime(trace.parent / "meta.json", (hour_ago, hour_ago))
    c = Claude()
    append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
    cfg = WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0, rescan_interval=3600)
    w = Watcher(cfg, res)
    engine = attach(w, AbortEngine(parse_policies(
        "allow_signals = true\n" + policy("steps", "max_steps", action="signal", limit=1,
                                          signal="SIGUSR1"), "t.toml")))
    w.scan()
    w.poll_all()
    assert [d.outcome for d in engine.decisions] == ["pid_reused"]
    assert w.table.stats.abort_outcomes[("signal", "pid_reused")] == 1
    time.sleep(0.2)
    assert not hits.exists()


def test_never_the_watcher_its_parents_or_init():
    for pid in (os.getpid(), os.getppid(), 1, 0, -1):
        assert send_signal(pid, signal.SIGUSR1) in ("refused",), pid


def test_process_start_time_is_read_from_proc():
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc")
    started = process_started_at(os.getpid())
    assert started is not None and time.time() - 600 < started <= time.time() + 1
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert process_started_at(child.pid) >= started - 1
    finally:
        child.kill()
        child.wait()


# ------------------------------------------------------------------ webhooks


@pytest.fixture
def trickle_server():
    """Accepts, reads the request, then answers one byte a second, forever."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(32)
    stop = threading.Event()

    def serve(conn):
        with conn:
            conn.settimeout(1)
            try:
                conn.recv(65536)
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100:
                    if stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(1)
            except OSError:
                return

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.getsockname()[1]}/hook"
    stop.set()
    t.join()
    srv.close()


def test_a_trickling_webhook_is_cut_at_its_deadline_and_every_decision_is_counted(env, trickle_server):
    s, runs, res = env
    for i in range(5):
        trace = trace_in(runs, s, name=f"r{i}")
        c = Claude()
        append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
    toml = (f'[webhook]\nurl = "{trickle_server}"\ntimeout = 1\nretries = 0\nbackoff = 0\n'
            + policy("steps", "max_steps", action="webhook", limit=1))
    cfg = WatchConfig(root=runs, idle_timeout=3600, patch_grace=0.0, rescan_interval=3600)
    w = Watcher(cfg, res)
    engine = attach(w, AbortEngine(parse_policies(toml, "t.toml")))
    w.scan()
    w.poll_all()
    assert [d.outcome for d in engine.decisions] == ["queued"] * 5
    # five attempts of at most ~1 s each; a trickle of 1 byte/s would take 140 s each
    assert engine.webhook.flush(timeout=30)
    assert engine.webhook.counts["gave_up"] == 5 and engine.webhook.counts["sent"] == 0
    assert all("within" in r["error"] for r in engine.webhook.results)
    assert w.table.stats.abort_outcomes == {("webhook", "failed"): 5}
    engine.close()


def test_the_journal_in_a_checkpoint_edited_by_hand_is_ignored_not_fatal(env, tmp_path, caplog):
    s, runs, res = env
    trace = trace_in(runs, s)
    c = Claude()
    append(trace, c.init(), *reads(c, ("src/util.py", 20, 21)))
    cp = tmp_path / "cp.json"
    cp.write_text(json.dumps({"version": 1, "root": str(runs), "files": {},
                              "journals": {"aborts": [["k", 3], "junk", None]}}))
    w, engine = _watcher(runs, res, policy("steps", "max_steps", limit=1), cp)
    w.restore_checkpoint()
    w.scan()
    w.poll_all()
    assert [d.outcome for d in engine.decisions] == ["written"]
    engine.close()
