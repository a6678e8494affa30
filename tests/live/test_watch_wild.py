"""Issue 17's live formats through ``watch``, each on its real file written into the
watched directory the way its agent writes it: a Gemini CLI session saved whole after
every message, a Codex rollout (PowerShell, Windows) appended line by line, and a
Claude Code session beside its sub-agent's transcript. Each gives one run whose record is
the same bytes replay writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from claude_run import append, watcher
from fixture_paths import REAL

from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.record import record_line

GEMINI = REAL / "gemini-session" / \
    "gemini-session__jnarowski__agentcmd__session-2025-10-27T19-55-981c87cb.json"
PEEDOM = REAL / "codex-rollout" / \
    "codex-rollout__Tdub206__PeeDom__rollout-2026-03-29T03-21-31-019d391c.lines-1-72.jsonl"
PARENT = REAL / "claude-session" / "claude-session__marot__spotter__8463c716.lines-1-7-947-988.jsonl"
SUBAGENT = REAL / "claude-session" / "claude-session__marot__spotter__subagent-agent-a7be2f0.jsonl"
SESSION = "8463c716-a2ea-4c14-9efa-87158ebd9f20"


def _run_dir(runs: Path, instance: str, name: str = "run") -> Path:
    d = runs / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": name}))
    return d


def _finish(w, tmp_path: Path) -> list[bytes]:
    w.cfg.idle_timeout = 0.0
    w.tick()
    w.close()
    out = tmp_path / "out.jsonl"
    return out.read_bytes().splitlines() if out.exists() else []


def _replayed(trace: Path, res, runs: Path) -> list[bytes]:
    return [record_line(r).rstrip(b"\n") for r in evaluate_trace(trace, res, root=runs)]


def _calls(w) -> list[int]:
    return [r.session.extras.tool_calls for r in w.table.runs.values()]


def test_gemini_session_saved_after_every_message(env, tmp_path):
    s, runs, res = env
    trace = _run_dir(runs, s.instance) / "session-2025-10-27T19-55-981c87cb.json"
    doc = json.loads(GEMINI.read_text())
    w = watcher(runs, res, tmp_path)
    seen = []
    for k in range(1, len(doc["messages"]) + 1):
        # Gemini CLI rewrites the whole session file after each message
        trace.write_text(json.dumps({**doc, "messages": doc["messages"][:k]}, indent=2))
        w.changed(trace)
        seen.append(sum(_calls(w)))
    assert len(w.table.runs) == 1
    assert seen[-1] == 13 and seen == sorted(seen)   # the calls arrive message by message
    assert _finish(w, tmp_path) == _replayed(trace, res, runs)


def test_codex_windows_rollout_appended_line_by_line(env, tmp_path):
    s, runs, res = env
    trace = _run_dir(runs, s.instance) / "rollout-2026-03-29T03-21-31-019d391c.jsonl"
    w = watcher(runs, res, tmp_path)
    trace.touch()
    w.scan()
    for line in PEEDOM.read_bytes().splitlines():
        append(trace, line)
        w.changed(trace)
    assert _calls(w) == [23]
    assert _finish(w, tmp_path) == _replayed(trace, res, runs)


def test_claude_session_beside_its_subagent_is_one_run(env, tmp_path):
    s, runs, res = env
    project = _run_dir(runs, s.instance, "project")
    session = project / f"{SESSION}.jsonl"
    sub = project / SESSION / "subagents" / "agent-a7be2f0.jsonl"
    sub.parent.mkdir(parents=True)
    w = watcher(runs, res, tmp_path, globs=("*.jsonl",))
    # the sub-agent's transcript is written while its session is: both grow together
    parent_lines = PARENT.read_bytes().splitlines()
    append(session, *parent_lines[:8])
    w.changed(session)
    for line in SUBAGENT.read_bytes().splitlines():
        append(sub, line)
        w.changed(sub)
    append(session, *parent_lines[8:])
    w.changed(session)
    w.scan()
    assert list(w.followers) == [session]   # the sub-agent's file is no run of its own
    (run,) = w.table.runs.values()
    assert (run.session.extras.tool_calls, run.session.extras.sidechain_calls) == (1, 19)
    assert _finish(w, tmp_path) == _replayed(session, res, runs)


def test_claude_subagent_watched_alone_is_its_own_run(env, tmp_path):
    s, runs, res = env
    trace = _run_dir(runs, s.instance) / "agent-a7be2f0.jsonl"
    shutil.copy(SUBAGENT, trace)
    w = watcher(runs, res, tmp_path, globs=("*.jsonl",))
    w.scan()
    w.poll_all()
    assert _calls(w) == [19]
    assert _finish(w, tmp_path) == _replayed(trace, res, runs)
