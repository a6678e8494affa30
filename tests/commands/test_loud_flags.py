"""Runs scored with numbers that may be wrong, said loudly (docs/metrics.md §5b): in the
record, the summary table, ``/metrics`` and replay's exit code.

Both ran silently before (issue 32): ``--repo`` given the example's repository with its
patch applied scored line coverage 0.929 and span 0.945 instead of 1.0, exit 0, nothing
flagged (``repo_mismatch``); the example's trace cut after 24 of its 49 lines, at a
line's end, so that its ``result`` is gone, scored 7 steps with line coverage 1.0, exit 0
(``no_end_event``).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest
from fixture_paths import EXAMPLES, REAL

from streameval.commands.main import main

TRACE = EXAMPLES / "runs" / "example-run-1" / "trace.jsonl"
GOLD = EXAMPLES / "gold.jsonl"


def replay(tmp_path: Path, *args: str) -> tuple[int, list[dict]]:
    out = tmp_path / "out.jsonl"
    rc = main(["replay", *args, "--gold", str(GOLD), "--out", str(out)])
    return rc, [orjson.loads(x) for x in out.read_bytes().splitlines()]


def patched_repo(tmp_path: Path) -> Path:
    """The example's repository after its run's own patch: the fix and a new test."""
    repo = tmp_path / "post-patch"
    shutil.copytree(EXAMPLES / "repo", repo)
    subprocess.run(["git", "apply", str(TRACE.parent / "patch.diff")], cwd=repo, check=True)
    return repo


def cut_trace(tmp_path: Path) -> Path:
    """The example's trace cut after its 24th line: whole lines, no ``result``."""
    run = tmp_path / "cut" / "example-run-1"
    run.mkdir(parents=True, exist_ok=True)
    shutil.copy(TRACE.parent / "meta.json", run / "meta.json")
    lines = TRACE.read_bytes().splitlines(keepends=True)
    assert len(lines) == 49 and b'"type":"result"' in lines[-1]
    (run / "trace.jsonl").write_bytes(b"".join(lines[:24]))
    return run / "trace.jsonl"


def test_the_repository_after_the_patch_is_a_loud_repo_mismatch(tmp_path, capsys):
    rc, [rec] = replay(tmp_path, str(TRACE), "--repo", str(patched_repo(tmp_path)))
    assert rc == 1
    # the numbers are kept (the run is scored), and said to be doubtful
    assert (round(rec["final"]["line"]["coverage"], 3), round(rec["final"]["span"]["coverage"], 3)) \
        == (0.929, 0.945)
    assert rec["problems"]["repo_mismatch"] == 1
    # 12 reads were checked against files the run had not edited; 3 did not find their
    # text where they said: the full Read and the grep hit of billing.py's line 17 (the
    # patch's `>=`), and the Read of test_billing.py 1-33 (4 lines inserted at 20)
    assert rec["repo_mismatch"] == {"reads_checked": 12, "reads_mismatching": 3}
    table, err = capsys.readouterr()   # the summary table on stdout (--out given)
    assert "flagged runs: 1 of 1 (repo_mismatch 1)" in table
    assert ("1 of 1 run(s) scored, but their numbers may be wrong (repo_mismatch 1; "
            "docs/metrics.md §5b): run example-run-1: 3 of 12 reads did not find their text "
            "where they say it is in the repository given") in err

    rc, [rec] = replay(tmp_path, str(TRACE), "--repo", str(EXAMPLES / "repo"))
    assert rc == 0 and rec["final"]["line"]["coverage"] == 1.0
    assert "repo_mismatch" not in rec["problems"] and "repo_mismatch" not in rec


def test_a_trace_cut_at_a_line_end_is_a_loud_no_end_event(tmp_path, capsys):
    rc, [rec] = replay(tmp_path, str(cut_trace(tmp_path)), "--repo", str(EXAMPLES / "repo"))
    assert rc == 1
    assert rec["num_steps"] == 7 and rec["final"]["line"]["coverage"] == 1.0
    assert rec["problems"] == {"no_end_event": 1} and rec["end_reason"] is None
    table, err = capsys.readouterr()
    assert "flagged runs: 1 of 1 (no_end_event 1)" in table
    assert "(no_end_event 1; docs/metrics.md §5b): run example-run-1: the trace ends " \
           "without the end event its format always writes last" in err

    rc, _ = replay(tmp_path, str(cut_trace(tmp_path)), "--repo", str(EXAMPLES / "repo"),
                   "--allow-partial")
    assert rc == 0   # flagged runs are scored: --allow-partial takes them
    rc, [rec] = replay(tmp_path, str(TRACE), "--repo", str(EXAMPLES / "repo"))
    assert rc == 0 and rec["problems"] == {} and rec["end_reason"] == "success"


def _inspected(tmp_path: Path, trace: Path) -> dict:
    out = tmp_path / f"{trace.name}.json"
    assert main(["inspect", str(trace), "--quiet", "--json", str(out)]) == 0
    (run,) = json.loads(out.read_text())["runs"]
    return run["problems"]


XARRAY = "mini-swe-agent__gruckion__mini-swe-agent__gemini-3-pro__pydata__xarray-4075.traj.json"


@pytest.mark.parametrize("trace, flagged", [
    # Claude Code: `claude -p` stream-json ends with `result` (this one was killed)...
    ("claude-stream/claude-stream__streameval__scripted-claude-code-2.1.328.jsonl", True),
    ("claude-stream/claude-stream__link-assistant__hive-mind__issue-759-uploaded-log.extracted.jsonl", False),
    # ... a session transcript never has one
    ("claude-session/claude-session__streameval__scripted-claude-code-2.1.328.jsonl", False),
    # Codex: `codex exec --json` ends with `turn.completed` (these two were cut), a rollout never
    ("codex-exec-json/codex-exec__jnarowski__agentcmd__stream-output-multi-1.jsonl", True),
    ("codex-exec-json/codex-exec__streameval__scripted-codex-0.169.0.jsonl", True),
    ("codex-exec-json/codex-exec__jnarowski__agentcmd__stream-output-3.jsonl", False),
    ("codex-rollout/codex-rollout__streameval__scripted-codex-0.169.0.jsonl", False),
    # mini-swe-agent: a trajectory has its exit status; a pre-1.0 message list has none
    (f"mini-swe-agent/{XARRAY}", False),
    ("mini-swe-agent/mini-swe-agent0__SWE-agent__mini-swe-agent__github_issue.traj.json", False),
])
def test_only_shapes_that_always_end_with_an_end_event_are_flagged(tmp_path, trace, flagged):
    assert ("no_end_event" in _inspected(tmp_path, REAL / trace)) is flagged


def test_a_trajectory_saved_before_its_exit_status_is_flagged(tmp_path):
    doc = json.loads((REAL / "mini-swe-agent" / XARRAY).read_text())
    doc["info"].pop("exit_status")
    saved = tmp_path / "pydata__xarray-4075.traj.json"
    saved.write_text(json.dumps(doc, indent=2))
    assert _inspected(tmp_path, saved).get("no_end_event") == 1


def _scrape(base: str) -> str:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
        return r.read().decode()


@pytest.mark.slow
def test_both_flags_reach_metrics_live(tmp_path):
    """``replay --live`` (a watcher and its exporter): the cut trace, against the
    repository after the patch, carries both flags in ``streameval_run_problems``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streameval", "replay", "--live", str(cut_trace(tmp_path)),
         "--gold", str(GOLD), "--repo", str(patched_repo(tmp_path)), "--port", "0",
         "--speed", "100", "--linger", "600", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        base = first[first.index("http://"):].split("/metrics")[0]
        want = ['streameval_run_problems{agent="claude-code",instance_id="example__inventory-1",'
                f'model="claude-sonnet-4-5-20250929",reason="{reason}",run_id="example-run-1"}} 1.0'
                for reason in ("no_end_event", "repo_mismatch")]
        deadline = time.monotonic() + 120   # a hang guard, not a speed assertion
        while time.monotonic() < deadline:
            text = _scrape(base)
            if all(w in text for w in want):
                break
            time.sleep(0.2)
        assert all(w in text for w in want), [ln for ln in text.splitlines()
                                              if ln.startswith("streameval_run_problems")]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted: played to the end" in err, err
