"""``streameval abort-backtest`` on the bundled example runs, numbers checked by hand.

``examples/backtest/runaway-1`` re-reads README.md (7 lines), stock.py (76),
cart.js (56), stock.py 40-69, __init__.py (14) and cart.js 20-49 in a cycle for 30
steps and never sees the gold; ``late-find-1`` wanders for 10 steps, then reads
billing.py (gold) at step 11 and fixes the bug. Each Claude message carries
4 input + 300 cache-creation + (15000 + 400 n) cache-read + 80 output tokens.
"""

from __future__ import annotations

import json
import shutil

import pytest
from fixture_paths import ROOT

from streameval.commands.main import main
from streameval.live.abort.backtest import backtest_trace, find_traces, summarize
from streameval.live.abort.engine import AbortEngine, attach, parse_policies
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

EX = ROOT / "examples"

POLICIES = """
[[policy]]
name = "stagnation"
kind = "stagnation"
steps = 8
granularity = "line"

[[policy]]
name = "steps-20"
kind = "max_steps"
limit = 20

[[policy]]
name = "re-reading"
kind = "redundancy"
above = 0.5
after_steps = 10

[[policy]]
name = "cost"
kind = "cost"
limit_usd = 0.5
"""


def tokens_after(n: int) -> int:
    """Tokens of the first ``n`` messages of the generated runs."""
    return sum(4 + 300 + 15000 + 400 * i + 80 for i in range(1, n + 1))


@pytest.fixture(scope="module")
def res():
    return load_resources(str(EX / "gold.jsonl"), None, str(EX / "repo"))


@pytest.fixture(scope="module")
def summary(res):
    config = parse_policies(POLICIES)
    engine = AbortEngine(config, dry_run=True)
    outcomes = []
    for trace in find_traces([EX / "runs", EX / "backtest"]):
        outcomes.extend(backtest_trace(trace, res, engine))
    return summarize(config, outcomes, 0.8, "line")


def by_policy(summary: dict, name: str) -> dict:
    return next(p for p in summary["policies"] if p["policy"] == name)


def stops(p: dict) -> dict[str, int]:
    return {r["run_id"]: r["step"] for r in p["stopped_runs"]}


def stagnation_stop(record: dict, n: int, g: str = "line") -> int | None:
    """The first step at which coverage, still below 1.0, has not grown for ``n`` steps,
    from the record."""
    last, grew_at = 0.0, 0
    for row in record["trajectory"]["steps"]:
        c = row["coverage"][g]
        if c > last:
            last, grew_at = c, row["step"]
        if last < 1.0 and row["step"] - grew_at >= n:
            return row["step"]
    return None


def test_the_three_example_runs_are_found(summary):
    ids = sorted(r["run_id"] for r in summary["runs"])
    assert ids == ["example-run-1", "late-find-1", "runaway-1"]
    assert summary["judged_by"] == "proxy" and summary["outcomes"] is None
    good = {r["run_id"]: r["good_proxy"] for r in summary["runs"]}
    assert good == {"example-run-1": True, "late-find-1": True, "runaway-1": False}


def test_stagnation_stops_and_its_wrongful_stops(summary, res):
    p = by_policy(summary, "stagnation")
    example = evaluate_trace(EX / "runs" / "example-run-1" / "trace.jsonl", res)[0]
    expected = {"runaway-1": 8, "late-find-1": 8}  # nothing of the gold before step 8
    ex_stop = stagnation_stop(example, 8)
    assert ex_stop is None   # its line coverage is complete from step 4: nothing to find
    if ex_stop is not None:
        expected["example-run-1"] = ex_stop
    assert stops(p) == expected
    # late-find-1 goes on to full coverage and a correct fix: stopping it was wrong
    assert "late-find-1" in p["wrongful_proxy_runs"] and "runaway-1" not in p["wrongful_proxy_runs"]
    assert p["wrongful_proxy"] == len(p["wrongful_proxy_runs"]) == 1 + (ex_stop is not None)
    assert p["saved"]["steps"] == (30 - 8) + (12 - 8) + ((example["num_steps"] - ex_stop)
                                                         if ex_stop is not None else 0)


def test_step_budget_saves_steps_tokens_and_estimated_cost(summary):
    p = by_policy(summary, "steps-20")
    assert stops(p) == {"runaway-1": 20}
    assert p["stop_step"] == {"median": 20, "min": 20, "max": 20}
    assert p["saved"]["steps"] == 10
    assert p["saved"]["tokens"] == tokens_after(30) - tokens_after(20) == 255840
    # the trace states its cost (0.61) only at the end: the stop's share is by tokens
    assert p["saved"]["cost_estimated"] is True
    assert p["saved"]["cost_usd"] == pytest.approx(0.61 * (1 - tokens_after(20) / tokens_after(30)))
    assert p["saved"]["tool_calls"] == 10   # one Read per step
    assert p["wrongful_proxy"] == 0


def test_redundancy_stops_only_the_runaway(summary):
    p = by_policy(summary, "re-reading")
    # at step 10 runaway-1 has read 382 lines, 153 distinct: redundancy 0.6 > 0.5;
    # late-find-1 is at 1 - 153/249 = 0.39 and falls afterwards
    assert stops(p) == {"runaway-1": 10}
    assert p["saved"]["steps"] == 20 and p["wrongful_proxy"] == 0


def test_cost_known_only_at_the_end_fires_after_the_last_call_and_stops_nothing(summary):
    """The trace states its cost only at its end: the budget fires there, after the
    run's last call, where stopping changes nothing. It is counted apart, not as a stop
    (before, runaway-1 was 'stopped' at step 30 with nothing saved)."""
    p = by_policy(summary, "cost")
    assert stops(p) == {} and p["stopped"] == 0 and p["stop_step"] is None
    assert p["after_last_call"] == 1
    assert [(r["run_id"], r["step"]) for r in p["after_last_call_runs"]] == [("runaway-1", 30)]
    assert p["saved"] == {"steps": 0, "tool_calls": 0, "tokens": 0, "tokens_estimated": False,
                          "cost_usd": None, "cost_estimated": False}
    assert p["wrongful_proxy"] == 0


def test_backtest_decides_at_the_same_steps_as_the_live_watcher(tmp_path, res):
    runs = tmp_path / "runs"
    shutil.copytree(EX / "backtest" / "runaway-1", runs / "runaway-1")
    shutil.copytree(EX / "backtest" / "late-find-1", runs / "late-find-1")
    config = parse_policies(POLICIES)
    w = Watcher(WatchConfig(root=runs, idle_timeout=3600, patch_grace=0), res)
    live = attach(w, AbortEngine(config, dry_run=True))
    w.scan()
    w.poll_all()  # each trace arrives whole, in one batch
    engine = AbortEngine(config, dry_run=True)
    for trace in find_traces([runs]):
        backtest_trace(trace, res, engine)
    seen = sorted((d.run_id, d.policy, d.step) for d in live.decisions)
    assert seen == sorted((d.run_id, d.policy, d.step) for d in engine.decisions)
    assert ("runaway-1", "steps-20", 20) in seen


def test_command_prints_the_table_and_writes_json(tmp_path, capsys):
    config = tmp_path / "abort.toml"
    config.write_text(POLICIES)
    out = tmp_path / "bt.json"
    code = main(["abort-backtest", str(config), str(EX / "backtest"), "--gold",
                 str(EX / "gold.jsonl"), "--repo", str(EX / "repo"), "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "steps-20" in text and "wrongful stops (proxy) by stagnation: late-find-1" in text
    assert "wrongful (proxy)" in text
    data = json.loads(out.read_text())
    assert by_policy(data, "steps-20")["stopped"] == 1
    assert {r["run_id"] for r in data["runs"]} == {"runaway-1", "late-find-1"}


def test_command_reports_a_bad_policy_file(tmp_path, capsys):
    config = tmp_path / "abort.toml"
    config.write_text("[[policy]]\nname = 'x'\nkind = 'max_steps'\n")
    code = main(["abort-backtest", str(config), str(EX / "backtest"), "--gold",
                 str(EX / "gold.jsonl"), "--repo", str(EX / "repo")])
    assert code == 2
    assert "missing ['limit']" in capsys.readouterr().err


def test_runs_without_gold_have_no_coverage_and_are_never_wrongful(tmp_path, res):
    """No gold row names the run: it is a run (no error, docs/metrics.md §5b), measured on
    its gold-free signals; coverage policies never fire on it, and the proxy never calls
    its stop wrongful."""
    d = tmp_path / "orphan-1"
    shutil.copytree(EX / "backtest" / "late-find-1", d)
    (d / "meta.json").write_text(json.dumps({"instance_id": "nobody__nothing-1",
                                             "run_id": "orphan-1"}))
    config = parse_policies(POLICIES)
    engine = AbortEngine(config, dry_run=True)
    (o,) = backtest_trace(d / "trace.jsonl", res, engine)
    assert o.error is None and o.coverage is None and o.editloc_recall is None
    summary = summarize(config, [o])
    assert summary["runs"][0]["good_proxy"] is False
    assert all(p["wrongful_proxy"] == 0 for p in summary["policies"])
    # coverage policies need gold; a cost budget does not
    assert by_policy(summary, "stagnation")["stopped"] == 0


def test_a_run_with_complete_coverage_is_never_stuck(tmp_path, res):
    """Stagnation means no new gold for N steps *while some of it is still unread*:
    example-run-1 has all its gold lines from step 4, and 8 quiet steps after that are
    not a reason to stop it (before this rule the backtest stopped it at step 9)."""
    example = evaluate_trace(EX / "runs" / "example-run-1" / "trace.jsonl", res)[0]
    full_at = next(r["step"] for r in example["trajectory"]["steps"]
                   if r["coverage"]["line"] == 1.0)
    assert full_at == 4 and example["num_steps"] - full_at >= 5
    cfg = tmp_path / "stuck.toml"
    cfg.write_text('[[policy]]\nname = "stuck"\nkind = "stagnation"\nsteps = 5\n'
                   'granularity = "line"\naction = "file"\n')
    out = tmp_path / "bt.json"
    assert main(["abort-backtest", str(cfg), str(EX / "runs"), str(EX / "backtest"),
                 "--gold", str(EX / "gold.jsonl"), "--repo", str(EX / "repo"),
                 "--json", str(out)]) == 0
    stopped = stops(by_policy(json.loads(out.read_text()), "stuck"))
    assert "example-run-1" not in stopped and stopped["runaway-1"] == 5
