"""``abort-backtest --outcomes``: each policy judged by whether the runs it stops solved
their tasks (docs/outcomes.md §7), every figure checked by hand on runs the test makes
(``outcome_fleet``: one Read per call, 100 tokens per call, no gold).

- a1 (alpha, resolved): f1 f2 f3 f4 f5 f6 — a new file every step;
- a2 (alpha, failed): f1, then f2 nine times (10 calls; f2's Read is made at calls 2-10);
- b1 (beta, resolved): f1 f2 f3 f1 f1 f4 f5 — f1's Read made again at calls 4 and 5;
- b2 (beta, failed): f1 twelve times;
- c1 (gamma, no outcome): f1 four times.

``repeats`` (times 3) stops a2 at call 4 (its third f2), b1 at call 5 (its third f1),
b2 at call 3 and c1 at call 3; ``max_steps`` (8) stops a2 and b2 at step 8;
``no_new_files`` (5) stops a2 at step 7 (last new file at step 2) and b2 at step 6
(step 1); b1's longest gap is 2 steps. ``max_steps`` (6) fires on a1 at step 6, its last
call: stopping it there changes nothing.
"""

from __future__ import annotations

import json

import pytest
from outcome_fleet import files, write_fleet

from streameval.commands.main import main

POLICIES = """
[[policy]]
name = "rep"
kind = "repeats"
times = 3

[[policy]]
name = "steps"
kind = "max_steps"
limit = 8

[[policy]]
name = "stale"
kind = "no_new_files"
steps = 5

[[policy]]
name = "steps-6"
kind = "max_steps"
limit = 6
"""

FLEET = {
    "a1": ("alpha__alpha-1", True, files("f1", "f2", "f3", "f4", "f5", "f6")),
    "a2": ("alpha__alpha-2", False, files("f1", ("f2", 9))),
    "b1": ("beta__beta-1", True, files("f1", "f2", "f3", "f1", "f1", "f4", "f5")),
    "b2": ("beta__beta-2", False, files(("f1", 12))),
    "c1": ("gamma__gamma-1", None, files(("f1", 4))),
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    runs = write_fleet(root, FLEET)
    (root / "p.toml").write_text(POLICIES)
    out = root / "bt.json"
    code = main(["abort-backtest", str(root / "p.toml"), str(runs), "--outcomes",
                 str(root / "outcomes.csv"), "--json", str(out)])
    assert code == 0
    return json.loads(out.read_text())


def policy(report: dict, name: str) -> dict:
    return next(p for p in report["policies"] if p["policy"] == name)


def test_the_runs_and_their_outcomes(report):
    assert report["judged_by"] == "outcomes"
    assert report["outcomes"] == {"runs": 5, "known": 4, "resolved": 2, "solve_rate": 0.5}
    runs = {r["run_id"]: r for r in report["runs"]}
    assert {k: (r["repo"], r["resolved"], r["steps"], r["tool_calls"], r["tokens"])
            for k, r in runs.items()} == {
        "a1": ("alpha/alpha", True, 6, 6, 600), "a2": ("alpha/alpha", False, 10, 10, 1000),
        "b1": ("beta/beta", True, 7, 7, 700), "b2": ("beta/beta", False, 12, 12, 1200),
        "c1": ("gamma/gamma", None, 4, 4, 400)}
    # the proxy is gone where outcomes judge
    assert all("good_proxy" not in r for r in report["runs"])
    assert all("wrongful_proxy" not in p for p in report["policies"])


def test_repeats_loses_one_resolved_run_and_catches_both_failures(report):
    p = policy(report, "rep")
    assert {r["run_id"]: r["step"] for r in p["stopped_runs"]} == {"a2": 4, "b1": 5, "b2": 3,
                                                                  "c1": 3}
    j = p["outcomes"]
    assert (j["runs"], j["resolved"], j["unresolved"]) == (4, 2, 2)   # c1 has no outcome
    assert (j["lost"], j["lost_share"], j["lost_runs"]) == (1, 0.5, ["b1"])
    assert (j["caught"], j["caught_share"]) == (2, 1.0)
    # a2 stopped after call 4 of 10, b2 after 3 of 12: 6 + 9 steps, calls, 100 tokens each
    assert j["saved_on_failed"] == {"runs": 2, "steps": 15, "tool_calls": 15, "tokens": 1500,
                                    "tokens_estimated": False, "cost_usd": None,
                                    "cost_estimated": False}
    # b1 after call 5 of 7
    assert j["saved_on_resolved"]["steps"] == 2 and j["saved_on_resolved"]["tokens"] == 200
    assert (j["solve_rate"], j["solve_rate_with"]) == (0.5, 0.25)
    assert j["spend"]["tokens"] == 600 + 1000 + 700 + 1200
    # c1's stop is still a stop, and saved what it saved
    assert p["stopped"] == 4 and p["saved"]["tokens"] == 1500 + 200 + 100


def test_a_step_budget_catches_the_long_failures_only(report):
    j = policy(report, "steps")["outcomes"]
    assert (j["lost"], j["caught"]) == (0, 2)
    assert (j["saved_on_failed"]["steps"], j["saved_on_failed"]["tokens"]) == (2 + 4, 600)
    assert j["saved_on_resolved"] == {"runs": 0, "steps": 0, "tool_calls": 0, "tokens": 0,
                                      "tokens_estimated": False, "cost_usd": 0.0,
                                      "cost_estimated": False}
    assert j["solve_rate_with"] == j["solve_rate"] == 0.5


def test_no_new_files_stops_where_the_last_new_file_is_steps_behind(report):
    p = policy(report, "stale")
    assert {r["run_id"]: r["step"] for r in p["stopped_runs"]} == {"a2": 7, "b2": 6}
    assert p["outcomes"]["saved_on_failed"]["tokens"] == 300 + 600


def test_a_stop_after_the_last_call_is_neither_lost_nor_saved(report):
    """a1 (resolved) ends at step 6, where ``max_steps`` 6 fires: nothing was left to
    stop, so it is counted apart, not as a lost run (before, it was lost with 0 saved)."""
    p = policy(report, "steps-6")
    assert {r["run_id"]: r["step"] for r in p["stopped_runs"]} == {"a2": 6, "b1": 6, "b2": 6}
    assert p["stopped"] == 3 and p["after_last_call"] == 1
    assert [(r["run_id"], r["step"], r["resolved"]) for r in p["after_last_call_runs"]] == [
        ("a1", 6, True)]
    j = p["outcomes"]
    assert (j["lost"], j["lost_runs"], j["caught"]) == (1, ["b1"], 2)
    assert (j["after_last_call"], j["after_last_call_runs"]) == (1, ["a1"])
    assert (j["saved_on_resolved"]["runs"], j["saved_on_resolved"]["steps"]) == (1, 1)
    assert j["solve_rate_with"] == 0.25
    assert p["saved"]["steps"] == 4 + 1 + 6


def test_the_table_says_lost_and_caught_and_names_the_lost_runs(tmp_path, capsys):
    runs = write_fleet(tmp_path, FLEET)
    (tmp_path / "p.toml").write_text(POLICIES)
    assert main(["abort-backtest", str(tmp_path / "p.toml"), str(runs), "--outcomes",
                 str(tmp_path / "outcomes.csv")]) == 0
    out = capsys.readouterr().out
    assert "with an outcome: 4  resolved: 2 (solve rate 0.500)" in out
    assert "1 run(s) have no outcome" in out
    assert "resolved runs stopped by rep: b1" in out
    assert "wrongful" not in out
    rep = next(line for line in out.splitlines() if line.startswith("rep "))
    # stopped, after the last call, steps 4, 5, 3, 3, lost, caught, solve rate with it
    assert rep.split()[2:8] == ["4/5", "0", "3.5/3/5", "1/2", "2/2", "0.250"]
    six = next(line for line in out.splitlines() if line.startswith("steps-6 "))
    assert six.split()[2:8] == ["3/5", "1", "6/6/6", "1/2", "2/2", "0.250"]
    assert "resolved runs stopped by steps-6: b1" in out
    assert "after last call: runs the policy fired on only after their last tool call" in out
