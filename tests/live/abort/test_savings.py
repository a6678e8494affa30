"""What a backtest's stop saves, checked by hand (``live.abort.savings``).

- The bundled example (``examples/backtest/runaway-1``, a Claude Code stream): every
  message reports its usage as it goes, 4 input + 300 cache-creation + (15000 + 400 n)
  cache-read + 80 output tokens for message n, each asking for one read (one step);
  the cost, $0.61, comes only with the final ``result`` line.
- A real mini-swe-agent run (Gemini 3 Pro on django__django-11603, from
  gruckion/mini-swe-agent): 21 tool calls, of which calls 1, 2, 3, 9, 16, 17 and 18 are
  steps (``streameval inspect``); its trajectory states the usage once, for the whole run:
  47,699 + 4,704 + 128,875 = 181,278 tokens (uncached input, output, cache read, summed
  over the 21 responses) and ``instance_cost`` $0.177621.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import ROOT

from streameval.live.abort.backtest import backtest_trace, summarize
from streameval.live.abort.engine import AbortEngine, parse_policies
from streameval.live.abort.savings import UsagePoint, crossing_point, saving
from streameval.runs.resources import load_resources
from streameval.scoring.snapshot import UsageSoFar

EX = ROOT / "examples"


def tokens_after(n: int) -> int:
    return sum(4 + 300 + 15000 + 400 * i + 80 for i in range(1, n + 1))


def policies(*lines: str):
    return parse_policies("\n".join(lines))


def run(trace: Path, res, config) -> dict:
    engine = AbortEngine(config, dry_run=True)
    return summarize(config, backtest_trace(trace, res, engine))


def policy(summary: dict, name: str) -> dict:
    return next(p for p in summary["policies"] if p["policy"] == name)


@pytest.fixture(scope="module")
def example_res():
    return load_resources(str(EX / "gold.jsonl"), None, str(EX / "repo"))


def test_example_token_budget_fires_on_the_step_that_crosses_it(example_res):
    # 15,384 n + 200 n (n + 1) tokens after message n: 195,624 after 11, 215,808 after 12
    assert tokens_after(11) < 200_000 <= tokens_after(12)
    config = policies('[[policy]]', 'name = "tok"', 'kind = "tokens"', 'limit = 200000')
    p = policy(run(EX / "backtest" / "runaway-1" / "trace.jsonl", example_res, config), "tok")
    [stopped] = p["stopped_runs"]
    assert (stopped["step"], stopped["step_estimated"]) == (12, False)
    # measured: what messages 13-30 reported
    assert stopped["saved_tokens"] == tokens_after(30) - tokens_after(12) == 431_712
    assert stopped["saved_tokens_estimated"] is False
    # the cost is stated only at the end: the share of the tokens spent after the stop
    assert stopped["saved_cost_usd"] == pytest.approx(0.61 * 431_712 / tokens_after(30))
    assert stopped["saved_cost_estimated"] is True
    assert p["saved"]["steps"] == 30 - 12


@pytest.fixture(scope="module")
def real():
    res = load_resources(str(ROOT / "tests/fixtures/data/verified_test.parquet"), None, None)
    trace = next((ROOT / "tests/fixtures/real/mini-swe-agent").glob("*django-11603*"))
    config = policies(
        '[[policy]]', 'name = "steps"', 'kind = "max_steps"', 'limit = 3',
        '[[policy]]', 'name = "tok"', 'kind = "tokens"', 'limit = 100000',
        '[[policy]]', 'name = "usd"', 'kind = "cost"', 'limit_usd = 0.1')
    return run(trace, res, config)


def test_real_run_step_budget_saves_in_proportion_to_the_calls_after_it(real):
    """Step 3 is call 3 of 21: the 18 calls after it spent 18/21 of the run's total (the
    old report called the whole total, 181,278 tokens, saved)."""
    [row] = real["runs"]
    assert (row["steps"], row["tool_calls"], row["tokens"]) == (7, 21, 181_278)
    assert row["cost_usd"] == pytest.approx(0.177621)
    [s] = policy(real, "steps")["stopped_runs"]
    assert (s["step"], s["step_estimated"], s["final_steps"]) == (3, False, 7)
    assert s["saved_tokens"] == round(181_278 * 18 / 21) == 155_381
    assert s["saved_cost_usd"] == pytest.approx(0.177621 * 18 / 21)
    assert s["saved_tokens_estimated"] and s["saved_cost_estimated"]


def test_real_run_budgets_fire_where_even_spending_crosses_them(real):
    """The trajectory keeps only its total, so a replay sees no usage before the end;
    live, the watcher re-reads the document after every step. 100,000 of 181,278 tokens
    is call ceil(100,000 / 181,278 x 21) = ceil(11.58) = 12, after which the run had
    made 4 steps (calls 1, 2, 3, 9); $0.10 of $0.177621 is call ceil(11.82) = 12 too."""
    for name in ("tok", "usd"):
        p = policy(real, name)
        [s] = p["stopped_runs"]
        assert (s["step"], s["step_estimated"]) == (4, True), name
        assert s["saved_tokens"] == round(181_278 * 9 / 21) == 77_691
        assert s["saved_cost_usd"] == pytest.approx(0.177621 * 9 / 21)
        assert p["saved"]["steps"] == 3 and p["stop_estimated"]


def test_cumulative_fields_are_differences_never_sums():
    at = UsagePoint(3, 2, UsageSoFar(cumulative_tokens=1000, cumulative_cost=0.5))
    end = UsagePoint(9, 6, UsageSoFar(incremental_tokens=5000, cumulative_tokens=4000,
                                      cumulative_cost=2.0))
    s = saving(at, end)
    assert (s.tokens, s.tokens_estimated, s.cost_usd, s.cost_estimated) == (3000, False, 1.5,
                                                                               False)
    # increments known at the stop, a run total only at the end: compared as increments
    at = UsagePoint(3, 2, UsageSoFar(incremental_tokens=900))
    end = UsagePoint(9, 6, UsageSoFar(incremental_tokens=3000, cumulative_tokens=3100,
                                      cumulative_cost=1.0))
    s = saving(at, end)
    assert (s.tokens, s.tokens_estimated) == (2100, False)
    assert (s.cost_usd, s.cost_estimated) == (pytest.approx(0.7), True)
    # nothing known: nothing claimed
    assert saving(at, UsagePoint(9, 6, UsageSoFar())) == saving(
        UsagePoint(1, 1, UsageSoFar()), UsagePoint(9, 6, UsageSoFar()))
    assert saving(UsagePoint(1, 1, UsageSoFar()), UsagePoint(9, 6, UsageSoFar())).tokens is None


def test_crossing_point():
    timeline = [UsagePoint(k, k // 2, UsageSoFar()) for k in range(1, 11)]
    end = timeline[-1]
    assert crossing_point(timeline, end, 1000.0, 250.0) == timeline[2]   # ceil(2.5) = 3
    assert crossing_point(timeline, end, 1000.0, 1000.0) == end
    assert crossing_point(timeline, end, 1000.0, 1001.0) is None
