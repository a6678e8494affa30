"""The real mini-swe-agent 2.x (``mini``) against the scripted model, in both of its
modes, scored by replay and by watch.

Text mode (``mini_textbased.yaml``) reads one ```` ```mswea_bash_command ```` block per
answer; tool mode (``mini.yaml``) reads ``bash`` tool calls and answers each with a
``role: "tool"`` message. mini-swe-agent has no read or edit tool of its own: the
agent's "own edit" is a ``sed -i`` here. Its trajectory is written when the run ends;
the submission command is never executed (it reads nothing).
"""

from __future__ import annotations

import json

import pytest
from clis import BASE_PATH, MINI_SWE_AGENT, mini, missing
from scenario import (
    SCRIPT,
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
AGENT = "mini-swe-agent"

PLAN = ["read_head", "sed_window", "nl_window", "grep_eps", "grep_dir", "missing", "own_edit",
        "script_edit", "sed_after", "read_after", "head_big", "submit"]
COMMANDS = {
    "read_head": "sed -n '1,12p' pkg/mod.py",
    "sed_window": "sed -n '30,40p' pkg/mod.py",
    "nl_window": "nl -ba pkg/mod.py | sed -n '8,12p'",
    "grep_eps": "grep -n 'def eps' pkg/mod.py",
    "grep_dir": "grep -rn 'def ' pkg",
    "missing": "cat pkg/missing.py",
    "own_edit": "sed -i 's/    value = x \\* 2$/    value = x * 20/' pkg/mod.py",
    "script_edit": SCRIPT,
    "sed_after": "sed -n '30,40p' pkg/mod.py",
    "read_after": "nl -ba pkg/mod.py | sed -n '8,15p'",
    "head_big": "head -n 5 pkg/big.txt",
    "submit": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
}


def turns(mode: str) -> list:
    if mode == "text":
        return [Say(f"THOUGHT: next step.\n\n```mswea_bash_command\n{COMMANDS[n]}\n```")
                for n in PLAN]
    return [Call("bash", {"command": COMMANDS[n]}, text="THOUGHT: next step.") for n in PLAN]


@pytest.fixture(scope="module", params=["text", "tool"])
def mini_run(request, tmp_path_factory):
    why = missing(mini(), "mini-swe-agent", MINI_SWE_AGENT)
    if why:
        pytest.fail(why)
    mode = request.param
    tmp = tmp_path_factory.mktemp(f"mini-{mode}")
    setup = make_setup(tmp)
    trace = setup.run_dir / "demo__agents-1.traj.json"
    config = ["-c", "mini.yaml"] if mode == "tool" else \
        ["-c", "mini_textbased.yaml", "--model-class", "litellm_textbased"]
    with ScriptedModel(turns(mode)) as model:
        env = {"PATH": BASE_PATH, "HOME": str(setup.home), "MSWEA_CONFIGURED": "true",
               "MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(setup.home),
               "MSWEA_COST_TRACKING": "ignore_errors", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "OPENAI_API_KEY": "scripted"}
        run = run_cli([str(mini()), *config, "-c", f"model.model_kwargs.api_base={model.url}/v1",
                       "-m", "openai/scripted", "-t", "Fix the module.", "-y",
                       "--exit-immediately", "-o", str(trace)], env, setup.repo, setup)
    return mode, setup, trace, run, tmp


def test_trajectory_scored_live_equals_replay(mini_run):
    mode, setup, trace, run, tmp = mini_run
    assert trace.exists(), f"mini-swe-agent {MINI_SWE_AGENT} ({mode}) wrote no trajectory: " \
        f"{run.stdout[-20:]} {run.stderr[-2000:]}"
    assert json.loads(trace.read_text())["trajectory_format"] == "mini-swe-agent-1.1"
    record = replayed(trace, setup)
    assert run.watched is not None and same_record(run.watched, record)
    summary = inspected(trace, setup, tmp)
    assert shown_by_call(summary) == expected_reads(PLAN, AGENT), \
        f"mini-swe-agent {MINI_SWE_AGENT} ({mode}): base lines per call differ"
    reads = [n for n in PLAN if expected_for(AGENT).get(n)]
    assert record["num_steps"] == len(reads)
    assert record["edits"] == 2
    shown = shown_count(PLAN, AGENT)
    assert record["shown_lines"] == {"aligned": shown, "agent_written": agent_lines(AGENT),
                                     "unaligned": 0}
    assert summary["tool_calls"] == len(PLAN)
    assert record["agent"] == "mini-swe-agent"
