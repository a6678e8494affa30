"""The real OpenHands agent SDK (V1) against the scripted model, scored by replay and by
watch.

The SDK runs in its own virtualenv (Python >= 3.12), driven by ``openhands_sdk_driver``:
its tools are ``terminal`` and ``file_editor``; every event goes to a JSON-lines file as
it happens (the callback an SDK user writes), which the watcher follows live. The
per-event files the SDK persists itself, turned into one JSON array, must give the same
numbers. Skipped, saying so, where no Python >= 3.12 exists to run the SDK.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clis import OPENHANDS_SDK, missing, openhands_python, python312
from scenario import (
    EDIT_NEW,
    EDIT_OLD,
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
from scripted_model import Call, ScriptedModel

pytestmark = pytest.mark.agents
#: the agent as its records name it (scenario.expected_for: what its harness shows)
AGENT = "openhands-sdk"

DRIVER = Path(__file__).resolve().parent / "openhands_sdk_driver.py"
PLAN = ["read_head", "sed_window", "nl_window", "grep_eps", "grep_dir", "missing", "own_edit",
        "script_edit", "sed_after", "read_after", "head_big", "finish"]


def turns(repo) -> list:
    mod = f"{repo}/pkg/mod.py"

    def sh(cmd: str) -> Call:
        return Call("terminal", {"command": cmd, "is_input": False})
    calls = {
        "read_head": Call("file_editor", {"command": "view", "path": mod, "view_range": [1, 12]}),
        "sed_window": sh("sed -n '30,40p' pkg/mod.py"),
        "nl_window": sh("nl -ba pkg/mod.py | sed -n '8,12p'"),
        "grep_eps": sh("grep -n 'def eps' pkg/mod.py"),
        "grep_dir": sh("grep -rn 'def ' pkg"),
        "missing": sh("cat pkg/missing.py"),
        "own_edit": Call("file_editor", {"command": "str_replace", "path": mod,
                                         "old_str": EDIT_OLD, "new_str": EDIT_NEW}),
        "script_edit": sh(SCRIPT),
        "sed_after": sh("sed -n '30,40p' pkg/mod.py"),
        "read_after": Call("file_editor", {"command": "view", "path": mod, "view_range": [8, 15]}),
        "head_big": sh("head -n 5 pkg/big.txt"),
        "finish": Call("finish", {"message": "Done."}),
    }
    return [calls[name] for name in PLAN]


@pytest.fixture(scope="module")
def sdk_run(tmp_path_factory):
    if python312() is None:
        pytest.skip("no Python >= 3.12 to run the OpenHands SDK on")
    why = missing(openhands_python(), "the OpenHands SDK", OPENHANDS_SDK)
    if why:
        pytest.fail(why)
    tmp = tmp_path_factory.mktemp("openhands")
    setup = make_setup(tmp)
    trace = setup.run_dir / "events.jsonl"
    persist = tmp / "persist"
    with ScriptedModel(turns(setup.repo)) as model:
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(setup.home),
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        run = run_cli([str(openhands_python()), str(DRIVER), model.url, str(setup.repo),
                       str(trace), str(persist)], env, setup.repo, setup)
    files = sorted(persist.glob("*/events/event-*.json"))
    saved = tmp / "saved-events.json"
    saved.write_text(json.dumps([json.loads(f.read_text()) for f in files]))
    return setup, trace, saved, run, tmp


def _check(summary: dict) -> None:
    assert shown_by_call(summary) == expected_reads(PLAN, AGENT), \
        f"OpenHands SDK {OPENHANDS_SDK}: base lines per call differ"
    assert max(r["agent"] for r in summary["first_reads"]) == 3


def test_event_stream_scored_live_equals_replay(sdk_run):
    setup, trace, _, run, tmp = sdk_run
    assert trace.exists() and trace.stat().st_size, \
        f"the OpenHands SDK {OPENHANDS_SDK} wrote no events: {run.stderr[-2000:]}"
    record = replayed(trace, setup)
    assert run.watched is not None and same_record(run.watched, record)
    _check(inspected(trace, setup, tmp))
    reads = [n for n in PLAN if expected_for(AGENT).get(n)]
    assert record["num_steps"] == len(reads)
    assert record["edits"] == 2
    shown = shown_count(PLAN, AGENT)
    assert record["shown_lines"] == {"aligned": shown, "agent_written": agent_lines(AGENT),
                                     "unaligned": 0}
    assert record["agent"] == "openhands-sdk"


def test_persisted_events_give_the_same_numbers(sdk_run):
    setup, trace, saved, _, tmp = sdk_run
    _check(inspected(saved, setup, tmp))
    a, b = replayed(saved, setup), replayed(trace, setup)
    for key in ("final", "trajectory", "num_steps", "edits", "shown_lines"):
        assert a[key] == b[key], key
