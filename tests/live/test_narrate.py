"""The watcher says what it is doing: its INFO lines for runs and files, its start line and
exit summary, ``-q`` and ``-v``, and the ``*.jsonl``/``*.json`` files it follows for their
content (a Claude Code session ``<uuid>.jsonl``) or leaves with one debug line."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from claude_run import APP, UTIL, Claude, append, make_setup, watcher

from streameval.live.narrate import record_figures, start_line
from streameval.runs.resources import load_resources

PATCH = ("--- a/src/app.py\n+++ b/src/app.py\n@@ -4,3 +4,3 @@\n def f2(x):\n"
         "-    return x + 2\n+    return x * 2\n \n")


def messages(caplog, level=logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("streameval") and r.levelno == level]


def run_dir(runs: Path, name: str, meta: dict | None) -> Path:
    d = runs / name
    d.mkdir()
    if meta is not None:
        (d / "meta.json").write_text(json.dumps(meta))
    return d


@pytest.fixture
def loud(caplog):
    caplog.set_level(logging.DEBUG, logger="streameval")
    return caplog


def test_a_run_is_said_from_start_to_record(env, tmp_path, loud):
    s, runs, res = env
    d = run_dir(runs, "r1", {"instance_id": s.instance, "run_id": "r1", "agent": "claude-code"})
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    info = messages(loud)
    assert info == [f"run r1 started: claude trace of claude-code (model claude-test), instance "
                    f"{s.instance}, trace r1/trace.jsonl"]
    append(d / "trace.jsonl", *c.read("src/util.py", UTIL, 1, 5), c.result())
    w.changed(d / "trace.jsonl")
    (d / "patch.diff").write_text(PATCH)
    w.changed(d / "patch.diff")
    w.tick()
    info = messages(loud)[1:]
    assert info[0] == "run r1: patch landed (patch beside the trace); EditLoc is now final"
    assert info[1] == "run r1 ended (the trace says it ended: success): 2 tool calls, 2 steps"
    assert info[2].startswith(f"record of run r1 written to {tmp_path / 'out.jsonl'}: 2 steps; "
                              "coverage file 1.00 symbol 1.00 span 1.00 line 1.00; "
                              "line precision 0.24; editloc 1.00")
    # -v: every call, with its step and coverage
    calls = [m for m in messages(loud, logging.DEBUG) if m.startswith("run r1 call")]
    assert calls[0] == ("run r1 call 1: Read /workspace/demo/src/app.py [read] -> step 1, "
                        "coverage file 0.50 symbol 1.00 span 0.45 line 1.00")
    assert len(calls) == 2
    summary = w.narration.summary(w)
    assert "1 trace file(s) followed" in summary
    assert ("runs: 1 started, 1 ended (1 by the trace's end event); 0 active and 1 finished in "
            "memory; not scored: none") in summary
    assert f"records written: 1 to {tmp_path / 'out.jsonl'}; patches landed: 1" in summary


def test_files_read_again_and_runs_without_gold_are_said(env, tmp_path, loud):
    s, runs, res = env
    d = run_dir(runs, "nogold", {"instance_id": "no__such-1", "run_id": "n1"})
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    assert not messages(loud, logging.WARNING)   # a run without gold is no error
    with open(d / "trace.jsonl", "r+b") as fh:
        fh.truncate(0)
    append(d / "trace.jsonl", c.init())
    w.changed(d / "trace.jsonl")
    assert f"{d / 'trace.jsonl'} was truncated: read again from its first byte" in messages(loud)
    w.tick(now=time.time() + 10_000)   # idle: it ends, its error record is written
    said = messages(loud)
    assert "run n1 ended (no growth for the idle timeout): 0 tool calls, 0 steps" in said
    assert any(m.startswith("record of run n1 written") and "no gold (no_gold: no gold row" in m
               for m in said)
    # said once, however many runs have no gold; the summary counts them
    warnings = messages(loud, logging.WARNING)
    assert len(warnings) == 1 and "is measured against no gold (no_gold:" in warnings[0]
    assert "runs: 2 started" in w.narration.summary(w)
    assert "not scored: none" in w.narration.summary(w)
    assert "measured against no gold: no_gold 1" in w.narration.summary(w)
    assert "files read again: 1 truncated" in w.narration.summary(w)


def test_a_claude_session_named_by_its_uuid_is_followed_and_other_json_is_not(env, tmp_path, loud):
    s, runs, res = env
    d = run_dir(runs, s.instance, None)
    c = Claude()
    session = d / "2f1c9a3e-0b7d-4e55-9d3c-6a1f0e2b7c44.jsonl"
    append(session, c.init(), *c.read("src/app.py", APP, 1, 20))
    (runs / "config.json").write_text(json.dumps({"name": "not a trace", "version": 3}))
    (runs / "notes.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(12)))
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    w.tick(now=time.time() + 10_000)   # idle: the short config.json is decided at its end
    assert [r.session.identity.trace for r in w.table.runs.values()] == [
        f"{s.instance}/{session.name}"]
    said = messages(loud)   # at INFO: a file named like a trace is not skipped silently
    for name in ("config.json", "notes.jsonl"):
        assert said.count(f"{runs / name}: skipped, not a trace (its content is no trace "
                          "format streameval reads)") == 1
    assert messages(loud, logging.WARNING) == []   # no warning, no error record, no counter
    assert sum(w.table.stats.bad_lines.values()) == 0
    assert [json.loads(x)["trace"] for x in (tmp_path / "out.jsonl").read_text().splitlines()] == [
        f"{s.instance}/{session.name}"]
    # once found not to be a trace, a file is not looked at again, unless replaced
    w.scan()
    w.poll_all()
    assert runs / "config.json" not in w.followers
    assert messages(loud).count(
        f"{runs / 'config.json'}: skipped, not a trace (its content is no trace format "
        "streameval reads)") == 1
    assert "files skipped, not traces: 2" in w.narration.summary(w)


def test_given_patterns_replace_the_sniffing(env, tmp_path):
    s, runs, res = env
    d = run_dir(runs, s.instance, None)
    c = Claude()
    append(d / "2f1c9a3e.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    w = watcher(runs, res, tmp_path, globs=("trace.jsonl",), sniff=())
    w.scan()
    assert w.followers == {}


def test_the_start_line_says_what_was_loaded_and_what_is_followed(tmp_path):
    s = make_setup(tmp_path)
    repos = tmp_path / "repos"
    repos.mkdir()
    (repos / "demo__demo").symlink_to(s.repo)
    gold = tmp_path / "two.jsonl"
    row = json.loads(s.gold.read_text())
    gold.write_text(json.dumps(row) + "\n" + json.dumps(
        {**row, "instance_id": "other__lib-2", "original_inst_id": "other__lib-2",
         "repo": "other/lib"}) + "\n")
    res = load_resources(str(gold), str(repos), None)
    w = watcher(tmp_path, res, tmp_path)
    line = start_line(w.cfg, res, str(gold))
    assert line.startswith(f"watching {tmp_path}: gold: 2 row(s) from {gold}; repositories: "
                           f"1 of the 2 the gold names found in {repos} (missing: other__lib); "
                           "following ")
    from streameval.live.paths import DEFAULT_GLOBS

    followed = line.split("; following ", 1)[1]
    assert all(g in followed.split(", ") for g in DEFAULT_GLOBS), followed
    assert line.endswith("and any *.jsonl, *.json whose content is a known trace format")
    one = load_resources(str(s.gold), None, str(s.repo))
    assert f"repository: {s.repo} for every run" in start_line(w.cfg, one, str(s.gold))


def test_record_figures_of_an_error_record():
    assert record_figures({"instance_id": "x", "error": "missing_repo: no clone"}) == \
        "not scored (missing_repo: no clone)"


def _watch(runs: Path, s, *flags: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
         "--repo", str(s.repo), "--port", "0", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline()


def _until_running(first: str, run_id: str) -> None:
    """Until the watcher's loop has scanned and listed ``run_id`` (its signal handling is
    set up once the loop runs; a hang guard, not a speed assertion)."""
    base = first[first.index("http://"):].split("/metrics")[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/api/runs", timeout=10) as r:
                if run_id in {row["id"] for row in json.loads(r.read())["runs"]}:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("the watcher never listed its run")


@pytest.mark.slow
def test_the_command_prints_its_start_line_and_summary_and_q_silences_them(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    d = run_dir(runs, "r1", {"instance_id": s.instance, "run_id": "r1"})
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    for flags, quiet in (((), False), (("-q",), True)):
        proc, first = _watch(runs, s, *flags)
        assert "serving metrics on http://127.0.0.1:" in first and "the page on" in first
        if not quiet:
            assert proc.stdout.readline().startswith(f"streameval watch: watching {runs.resolve()}: gold: 1 row(s)")
        _until_running(first, "r1")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        if quiet:
            assert out == "" and err == ""
        else:
            assert out.startswith("streameval watch: stopped; ran ")
            assert "runs: 1 started" in out and "records written: 0 (no --out)" in out, err
            assert "INFO streameval.watch: run r1 started: claude trace" in err


@pytest.mark.slow
def test_the_summary_says_how_runs_ended_and_files_that_are_no_trace_are_said(tmp_path):
    """Issue 32: the summary said "ended 1 end", and a ``*.jsonl`` that is no trace was
    skipped in silence unless -v."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    d = run_dir(runs, "r1", {"instance_id": s.instance, "run_id": "r1"})
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    notes = runs / "notes.jsonl"   # as many lines as detection reads: decided at once
    notes.write_text("".join(json.dumps({"n": i}) + "\n" for i in range(12)))
    proc, first = _watch(runs, s)
    base = first[first.index("http://"):].split("/metrics")[0]
    deadline = time.monotonic() + 60   # a hang guard
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{base}/api/runs", timeout=10) as r:
            if [row["state"] for row in json.loads(r.read())["runs"]] == ["finished"]:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "runs: 1 started, 1 ended (1 by the trace's end event); " in out
    assert "files skipped, not traces: 1" in out
    assert (f"INFO streameval.watch: {notes}: skipped, not a trace (its content is no "
            "trace format streameval reads)") in err


def test_patches_landed_counts_runs_given_a_patch_and_a_restart_counts_what_it_read(env, tmp_path):
    """On f53415f a patch already beside a trace when its run started was never counted,
    so a restarted watcher said "0 lines read" and "patches landed: 0" after reading every
    run again and applying their patches (issues 31 and 32)."""
    s, runs, res = env
    cp = tmp_path / "cp.json"
    lines = 0
    for name in ("r1", "r2", "r3"):
        d = run_dir(runs, name, {"instance_id": s.instance, "run_id": name})
        c = Claude()
        append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
        lines += 4
        if name != "r3":
            (d / "patch.diff").write_text(PATCH)   # there before the watcher starts
    w = watcher(runs, res, tmp_path, checkpoint=cp)
    w.start()
    (runs / "r1" / "patch.diff").write_text(PATCH.replace("x * 2", "x * 3"))   # rewritten
    w.changed(runs / "r1" / "patch.diff")
    w.tick()
    summary = w.narration.summary(w)
    assert f"{lines} lines read (0 bad)" in summary
    assert "records written: 3" in summary and "patches landed: 2" in summary
    w.close()
    again = watcher(runs, res, tmp_path, checkpoint=cp)
    again.start()
    again.tick()
    summary = again.narration.summary(again)
    assert f"{lines} lines read (0 bad; {lines} read again after a restart)" in summary
    assert "records written: 0" in summary and "patches landed: 2" in summary
