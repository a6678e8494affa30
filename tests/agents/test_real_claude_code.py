"""The real Claude Code CLI against the scripted model, scored by replay and by watch.

Both traces it writes are checked: the ``--output-format stream-json`` stdout, followed
live while the CLI writes it, and the session transcript under
``$HOME/.claude/projects``. The run is killed while its last call (a 30-second wait) runs,
so that call never gets a result.
"""

from __future__ import annotations

import pytest
from clis import BASE_PATH, CLAUDE_CODE, claude, missing
from scenario import (
    AGENT_LINES,
    EDIT_NEW,
    EDIT_OLD,
    SCRIPT,
    WAIT,
    agent_lines,
    expected_for,
    expected_reads,
    inspected,
    make_setup,
    replayed,
    run_cli,
    same_record,
    shown_by_call,
    shown_count,
)
from scripted_model import Call, Say, ScriptedModel

pytestmark = pytest.mark.agents
#: the agent as its records name it (scenario.expected_for: what its harness shows)
AGENT = "claude-code"

PLAN = ["read_head", "sed_window", "nl_window", "grep_eps", "grep_dir", "missing", "own_edit",
        "script_edit", "sed_after", "read_after", "head_big", "interrupted"]


def turns(repo) -> list:
    mod = f"{repo}/pkg/mod.py"

    def bash(cmd: str) -> Call:
        return Call("Bash", {"command": cmd, "description": "step"})
    calls = {
        "read_head": Call("Read", {"file_path": mod, "offset": 1, "limit": 12}),
        "sed_window": bash("sed -n '30,40p' pkg/mod.py"),
        "nl_window": bash("nl -ba pkg/mod.py | sed -n '8,12p'"),
        "grep_eps": bash("grep -n 'def eps' pkg/mod.py"),
        "grep_dir": bash("grep -rn 'def ' pkg"),
        "missing": bash("cat pkg/missing.py"),
        "own_edit": Call("Edit", {"file_path": mod, "old_string": EDIT_OLD,
                                  "new_string": EDIT_NEW}),
        "script_edit": bash(SCRIPT),
        "sed_after": bash("sed -n '30,40p' pkg/mod.py"),
        "read_after": Call("Read", {"file_path": mod, "offset": 8, "limit": 8}),
        "head_big": bash("head -n 5 pkg/big.txt"),
        "interrupted": bash(WAIT),
    }
    return [calls[name] for name in PLAN] + [Say("Done.")]


@pytest.fixture(scope="module")
def claude_run(tmp_path_factory):
    why = missing(claude(), "Claude Code", CLAUDE_CODE)
    if why:
        pytest.fail(why)
    tmp = tmp_path_factory.mktemp("claude")
    setup = make_setup(tmp)
    trace = setup.run_dir / "trace.jsonl"
    with ScriptedModel(turns(setup.repo)) as model:
        env = {"PATH": BASE_PATH, "HOME": str(setup.home), "ANTHROPIC_BASE_URL": model.url,
               "ANTHROPIC_API_KEY": "scripted", "IS_SANDBOX": "1",
               "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        run = run_cli([str(claude()), "-p", "Fix the module.", "--output-format", "stream-json",
                       "--verbose", "--permission-mode", "bypassPermissions"],
                      env, setup.repo, setup, stdout_trace=trace, kill_when="time.sleep(30)")
    sessions = sorted((setup.home / ".claude" / "projects").glob("*/*.jsonl"))
    return setup, trace, run, sessions, tmp


def _check_reads(run_summary: dict) -> None:
    assert shown_by_call(run_summary) == expected_reads(PLAN, AGENT), \
        f"Claude Code {CLAUDE_CODE}: base lines per call differ"
    agent = {r["call"]: r["agent"] for r in run_summary["first_reads"]}
    assert sorted(agent.values(), reverse=True)[:1] == [AGENT_LINES["read_after"]]


def test_stream_json_scored_live_equals_replay(claude_run):
    setup, trace, run, _, tmp = claude_run
    assert run.stdout, f"Claude Code {CLAUDE_CODE} wrote nothing: {run.stderr[-2000:]}"
    record = replayed(trace, setup)
    assert run.watched is not None and same_record(run.watched, record), \
        "the record watch built while the CLI wrote the trace differs from replay"
    _check_reads(inspected(trace, setup, tmp))
    reads = [n for n in PLAN if expected_for(AGENT).get(n)]
    assert record["num_steps"] == len(reads)
    assert record["edits"] == 2                     # its own Edit and the heredoc script
    shown = shown_count(PLAN, AGENT)
    assert record["shown_lines"] == {"aligned": shown, "agent_written": agent_lines(AGENT),
                                     "unaligned": 0}
    assert record["agent"] == "claude-code"


def test_the_interrupted_call_showed_nothing(claude_run):
    setup, trace, run, _, tmp = claude_run
    summary = inspected(trace, setup, tmp)
    assert summary["tool_calls"] == len(PLAN)       # the killed call is still a call
    assert max(r["call"] for r in summary["first_reads"]) < len(PLAN)


def test_bash_edit_diff_is_used_for_the_script_edit(claude_run):
    """The heredoc script's edit is in the Bash result's bashEditDiff; with it the map
    knows the insert before any read shows it (no edit found by reading)."""
    setup, trace, *_ = claude_run
    text = trace.read_text()
    assert '"bashEditDiff"' in text
    record = replayed(trace, setup)
    assert record["problems"].get("edit_not_located", 0) == 0


def test_session_transcript_gives_the_same_numbers(claude_run):
    setup, trace, _, sessions, tmp = claude_run
    assert sessions, "no session transcript under $HOME/.claude/projects"
    main = max(sessions, key=lambda p: p.stat().st_size)
    _check_reads(inspected(main, setup, tmp))
    a, b = replayed(main, setup), replayed(trace, setup)
    for key in ("final", "trajectory", "num_steps", "edits", "shown_lines"):
        assert a[key] == b[key], key
