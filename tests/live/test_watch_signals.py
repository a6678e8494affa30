"""A SIGTERM while the watcher reads what was there at its start (the supervisor stopping
its workers, a service manager stopping ``watch``) stops it cleanly once that start is
done: checkpoint saved, counts given. Before, the signal's receiver began only after the
start, so the default action killed the process, and ``watch --workers N``'s summary left
that worker's runs out (a CI run caught it: "worker 1 sent no counts before it stopped").

At a terminal (``say`` given: the single-process ``watch``) the first signal is said and
kept, and a second stops the watch at once, as Ctrl-C did.

The signals are sent by the watcher's own start (``Watcher.start`` wrapped), in a process of
its own: the moment is exact, not a race, and the old code's death cannot take pytest with it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import orjson
import pytest
from claude_run import APP, Claude, append, make_setup

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path

    import anyio, orjson
    from streameval.live.loop import run_until_signal
    from streameval.live.watch import WatchConfig, Watcher
    from streameval.runs.resources import load_resources

    runs, gold, repo, checkpoint = map(Path, sys.argv[1:5])
    kills, person = int(sys.argv[5]), sys.argv[6] == "person"
    res = load_resources(str(gold), None, str(repo))
    w = Watcher(WatchConfig(root=runs, port=0, checkpoint=checkpoint, idle_timeout=3600), res)
    started = w.start

    def start_then_stopped():
        started()
        for _ in range(kills):   # as the supervisor's stop does (and a terminal's Ctrl-C)
            os.kill(os.getpid(), signal.SIGTERM)

    w.start = start_then_stopped
    say = (lambda text: print("said:", text, file=sys.stderr, flush=True)) if person else None
    try:
        anyio.run(run_until_signal, w, say)
    except KeyboardInterrupt:
        print(orjson.dumps({"interrupted": True}).decode())
        sys.exit(0)
    counts = w.narration.counts(w)
    print(orjson.dumps({"runs_started": counts.runs_started, "lines": counts.lines}).decode())
""")


def _setup(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "r1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(orjson.dumps({"instance_id": s.instance, "run_id": "r1"}).decode())
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    return s, runs


def _watch(tmp_path, kills: int, who: str):
    s, runs = _setup(tmp_path)
    checkpoint = tmp_path / "checkpoint.json"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(runs), str(s.gold), str(s.repo),
                           str(checkpoint), str(kills), who],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != -signal.SIGTERM, "killed by the SIGTERM sent during its start"
    return proc, checkpoint


@pytest.mark.parametrize("kills, who", [(1, "worker"), (2, "worker"), (1, "person")])
def test_a_signal_during_the_start_stops_the_watch_cleanly_after_it(tmp_path, kills, who):
    """A worker (no one to tell) keeps every signal for after the start, however many;
    at a terminal the first is said and kept."""
    proc, checkpoint = _watch(tmp_path, kills, who)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = orjson.loads(proc.stdout.strip().splitlines()[-1])
    assert counts["runs_started"] == 1 and counts["lines"] == 3, counts
    saved = orjson.loads(checkpoint.read_bytes())   # saved by the stop, not lost with it
    assert "r1/trace.jsonl" in orjson.dumps(saved).decode()
    said = [x for x in proc.stderr.splitlines() if x.startswith("said:")]
    assert said == (["said: stopping once the traces already there are read (again to stop "
                     "now)"] if who == "person" else []), proc.stderr[-2000:]


def test_at_a_terminal_a_second_signal_during_the_start_stops_it_at_once(tmp_path):
    proc, _checkpoint = _watch(tmp_path, 2, "person")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert orjson.loads(proc.stdout.strip().splitlines()[-1]) == {"interrupted": True}
