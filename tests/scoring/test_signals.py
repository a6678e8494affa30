"""The gold-free signals (docs/outcomes.md §2) and what was known at step k (§3), worked
out by hand on a run the test writes over a real repository, with and without gold."""

from __future__ import annotations

import json

import pytest
from claude_run import APP, UTIL, Claude, append, bash, edit_lines
from hypothesis import given
from hypothesis import strategies as st

from streameval.runs.evaluate import evaluate_trace
from streameval.scoring.signals import (
    GOLD_SIGNALS,
    SIGNALS,
    RunSignals,
    checkpoint_steps,
    is_checkpoint,
    values_at,
)


def write_run(runs, instance: str):
    """Eight calls: five reads (steps 1-5, the first read made three times), two test
    runs (the same command twice), one edit; then the result line (usage 150, $0.01).

    | call | what                    | step | lines shown (new)  | files read |
    |------|-------------------------|------|--------------------|------------|
    | 1    | Read app.py 1-20        | 1    | 20 (20)            | app (new)  |
    | 2    | Read app.py 1-20 again  | 2    | 20 (0)             | app        |
    | 3    | Bash pytest -q          |      |                    |            |
    | 4    | Read util.py 1-10       | 3    | 10 (10)            | util (new) |
    | 5    | Read app.py 11-30       | 4    | 20 (10)            | app        |
    | 6    | Read app.py 1-20, third | 5    | 20 (0)             | app        |
    | 7    | Bash pytest -q again    |      |                    |            |
    | 8    | Edit app.py             |      |                    |            |
    """
    d = runs / "r1"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": "r1"}))
    c = Claude()
    append(d / "trace.jsonl", c.init(),
           *c.read("src/app.py", APP, 1, 20), *c.read("src/app.py", APP, 1, 20),
           *bash(c, "python -m pytest -q", "1 passed"),
           *c.read("src/util.py", UTIL, 1, 10), *c.read("src/app.py", APP, 11, 20),
           *c.read("src/app.py", APP, 1, 20),
           *bash(c, "python -m pytest -q", "1 passed"),
           *edit_lines(c, "src/app.py", "def f1(x):", "def f1(y):"), c.result())
    return d / "trace.jsonl"


#: the table's numbers at step 5 (also the end: no step follows)
AT_5 = {"steps": 5, "files_read": 2, "redundancy": 1 - 2 / 5, "repeated_calls": 2,
        "max_repeats": 3, "steps_since_new_file": 2, "test_runs": 1, "edits": 0,
        "tool_calls": 6, "tokens": 5 * 15, "cost_usd": None}
END = {**AT_5, "repeated_calls": 3, "test_runs": 2, "edits": 1, "tool_calls": 8,
       "tokens": 150, "cost_usd": 0.01}


#: 90 lines shown, 40 of them distinct (app 1-30, util 1-10)
REREAD = 1 - 40 / 90


def test_the_signals_of_a_run_with_gold_worked_out_by_hand(env):
    s, runs, res = env
    (rec,) = evaluate_trace(write_run(runs, s.instance), res)
    sig = rec["signals"]
    assert {k: sig[k] for k in END} == pytest.approx(END)
    assert sig["reread_share"] == pytest.approx(REREAD)
    # the share of the lines shown that were seen before is §4's line redundancy
    assert sig["reread_share"] == rec["trajectory"]["redundancy"]["line"]
    at = values_at(rec, 5)
    assert {k: at[k] for k in AT_5} == pytest.approx(AT_5)
    assert at["reread_share"] == pytest.approx(REREAD)
    # gold at step 5: init_ctx is app.py 4-9 (6 lines) of 40 read; both gold files read,
    # file coverage 1/2 after steps 1-2 and 1 after steps 3-5
    assert at["line.coverage"] == 1.0 and at["line.precision"] == pytest.approx(6 / 40)
    assert at["file.coverage"] == at["file.precision"] == at["file.f1"] == 1.0
    assert at["file.auc"] == pytest.approx((0.5 + 0.5 + 1 + 1 + 1) / 5)
    assert at["line.auc"] == 1.0
    assert at["first_gold_file_step"] == at["first_gold_line_step"] == 1
    # at the end the gold signals are the record's own fields
    end = values_at(rec)
    assert end["line.precision"] == rec["final"]["line"]["precision"]
    assert end["file.auc"] == rec["trajectory"]["auc_coverage"]["file"]
    assert set(end) == set(at) == {*SIGNALS, *GOLD_SIGNALS}
    # the run had no step 10, and step 4 is no checkpoint
    assert values_at(rec, 10) is None and values_at(rec, 4) is None


def test_a_run_without_gold_has_the_gold_free_signals_and_no_reread_share(env):
    """No gold row: no repository either, so the lines are the windows shown, not base
    lines: the re-read share needs the base text and is null; every other signal is the
    gold run's (docs/outcomes.md §2)."""
    s, runs, res = env
    (rec,) = evaluate_trace(write_run(runs, "no__such-1"), res)
    assert rec["gold_missing"].startswith("no_gold") and rec["final"] is None
    sig = rec["signals"]
    assert {k: sig[k] for k in END} == pytest.approx(END)
    assert sig["reread_share"] is None
    at = values_at(rec, 5)
    assert {k: at[k] for k in AT_5} == pytest.approx(AT_5)
    assert at["reread_share"] is None and all(at[g] is None for g in GOLD_SIGNALS)
    assert not set(GOLD_SIGNALS) & set(sig["at_step"])   # nothing to store


def test_a_record_without_signals_has_none():
    assert values_at({"instance_id": "x", "error": "bad_gold: x"}) is None
    assert values_at({"instance_id": "x", "signals": {"at_step": {"step": [5]}}}, 10) is None


def test_release_keeps_the_numbers(env):
    """A finished run's reading is dropped (``RunSession.release_reading``); its signals
    stay what they were."""
    from streameval.runs.evaluate import make_session, run_identity
    from streameval.runs.reader import TraceReader
    from streameval.traces.files import iter_lines, open_adapter
    from streameval.traces.identity import identify

    s, runs, res = env
    trace = write_run(runs, s.instance)
    name, adapter = open_adapter(trace)
    reader = TraceReader(adapter, lambda inst, sid: make_session(
        res, run_identity(identify(trace), inst, 0, res, trace=trace, session_id=sid), name))
    for line, n in iter_lines(trace):
        reader.feed_line(line, n)
    (session,) = reader.close()
    before = session.signal_values()
    session.release_reading()
    assert session.signal_values() == before == session.snapshot().signals


@given(st.integers(1, 5000))
def test_checkpoints_are_5_and_15_times_a_power_of_two(last):
    reference = sorted({b * 2 ** i for b in (5, 15) for i in range(13) if b * 2 ** i <= last})
    assert checkpoint_steps(last) == reference
    assert [k for k in range(1, last + 1) if is_checkpoint(k)] == reference


def test_a_call_repeated_is_the_same_tool_and_input():
    from streameval.model import Step, ToolCall

    sig = RunSignals()
    for tool, cmd in (("Bash", "ls"), ("bash", "ls"), ("Bash", "ls -a"), ("Bash", "ls")):
        sig.on_call(ToolCall("c", tool, {"command": cmd}))
    sig.on_step(Step(files=("a", "b"), spans={"a": [(1, 2)], "b": []}))   # b: only listed
    v = sig.values(type("C", (), {"tool_calls": 4, "edits": 0, "categories": {}})(),
                   None, None, None)
    assert (v.repeated_calls, v.max_repeats, v.files_read, v.redundancy) == (2, 3, 1, 0.0)
