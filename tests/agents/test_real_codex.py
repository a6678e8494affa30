"""The real Codex CLI (``codex exec``) against the scripted model, scored by replay and
by watch.

Codex offers ``exec_command {cmd}`` and, for model names it knows, the freeform
``apply_patch`` tool. Both of its traces are checked: the ``exec --json`` events,
followed live while it writes them (its ``file_change`` items name the file but not
the change, so alignment finds the edits), and the session rollout under
``$CODEX_HOME/sessions`` (which holds the patch itself). The run is killed while its
last command (a 30-second wait) runs.
"""

from __future__ import annotations

import subprocess

import pytest
from clis import BASE_PATH, CODEX, codex, missing
from scenario import (
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
AGENT = "codex"

PLAN = ["read_head", "sed_window", "nl_window", "grep_eps", "grep_dir", "missing", "own_edit",
        "script_edit", "sed_after", "read_after", "head_big", "interrupted"]
PATCH = ("*** Begin Patch\n*** Update File: pkg/mod.py\n@@\n"
         f"-{EDIT_OLD.rstrip()}\n+{EDIT_NEW.rstrip()}\n*** End Patch\n")


def turns() -> list:
    def sh(cmd: str) -> Call:
        return Call("exec_command", {"cmd": cmd})
    calls = {
        "read_head": sh("sed -n '1,12p' pkg/mod.py"),
        "sed_window": sh("sed -n '30,40p' pkg/mod.py"),
        "nl_window": sh("nl -ba pkg/mod.py | sed -n '8,12p'"),
        "grep_eps": sh("grep -n 'def eps' pkg/mod.py"),
        "grep_dir": sh("grep -rn 'def ' pkg"),
        "missing": sh("cat pkg/missing.py"),
        "own_edit": Call("apply_patch", {"input": PATCH}),
        "script_edit": sh(SCRIPT),
        "sed_after": sh("sed -n '30,40p' pkg/mod.py"),
        "read_after": sh("nl -ba pkg/mod.py | sed -n '8,15p'"),
        "head_big": sh("head -n 5 pkg/big.txt"),
        "interrupted": sh(WAIT),
    }
    return [calls[name] for name in PLAN] + [Say("Done.")]


@pytest.fixture(scope="module")
def codex_run(tmp_path_factory):
    why = missing(codex(), "Codex", CODEX)
    if why:
        pytest.fail(why)
    tmp = tmp_path_factory.mktemp("codex")
    setup = make_setup(tmp)
    trace = setup.run_dir / "trace.jsonl"
    with ScriptedModel(turns()) as model:
        (setup.home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "scripted"\n'
            "[model_providers.scripted]\n"
            f'name = "scripted"\nbase_url = "{model.url}/v1"\n'
            'env_key = "SCRIPTED_KEY"\nwire_api = "responses"\n')
        env = {"PATH": BASE_PATH, "HOME": str(setup.home), "CODEX_HOME": str(setup.home),
               "SCRIPTED_KEY": "scripted"}
        run = run_cli([str(codex()), "exec", "--json", "--skip-git-repo-check",
                       "--dangerously-bypass-approvals-and-sandbox", "-C", str(setup.repo),
                       "Fix the module."], env, setup.repo, setup, stdout_trace=trace,
                      kill_when="time.sleep(30)")
    rollouts = sorted((setup.home / "sessions").rglob("rollout-*.jsonl"))
    return setup, trace, run, rollouts, tmp


def test_the_cli_is_the_pinned_version():
    out = subprocess.run([str(codex()), "--version"], capture_output=True, text=True)
    assert out.stdout.split()[-1] == CODEX


def _check(summary: dict) -> None:
    assert shown_by_call(summary) == expected_reads(PLAN, AGENT), \
        f"Codex {CODEX}: base lines per call differ"
    assert max(r["agent"] for r in summary["first_reads"]) == 3


def test_exec_json_scored_live_equals_replay(codex_run):
    setup, trace, run, _, tmp = codex_run
    assert run.stdout, f"Codex {CODEX} wrote nothing: {run.stderr[-2000:]}"
    record = replayed(trace, setup)
    assert run.watched is not None and same_record(run.watched, record)
    _check(inspected(trace, setup, tmp))
    reads = [n for n in PLAN if expected_for(AGENT).get(n)]
    assert record["num_steps"] == len(reads)
    assert record["edits"] == 2      # the file_change and the script, found by reading
    shown = shown_count(PLAN, AGENT)
    assert record["shown_lines"] == {"aligned": shown, "agent_written": agent_lines(AGENT),
                                     "unaligned": 0}
    assert record["agent"] == "codex"


def test_rollout_gives_the_same_numbers(codex_run):
    setup, trace, _, rollouts, tmp = codex_run
    assert rollouts, "no rollout under $CODEX_HOME/sessions"
    (rollout,) = rollouts
    _check(inspected(rollout, setup, tmp))
    a, b = replayed(rollout, setup), replayed(trace, setup)
    for key in ("final", "trajectory", "num_steps", "shown_lines"):
        assert a[key] == b[key], key
    assert a["edits"] == 2 and a["problems"].get("edit_not_located", 0) == 0
