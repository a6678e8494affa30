"""What a backtest's stop saves, checked by hand (``live.abort.savings``).

- The bundled example (``examples/backtest/runaway-1``, a Claude Code stream): every
  message reports its usage as it goes, 4 input + 300 cache-creation + (15000 + 400 n)
  cache-read + 80 output tokens for message n, each asking for one read (one step);
  the cost, $0.61, comes only with the final ``result`` line.
- A real mini-swe-agent run (Gemini 3 Pro on django__django-11603, from
  gruckion/mini-swe-agent): 21 tool calls, of which calls 1, 2, 3, 9, 16, 17 and 18 are
  steps (``streameval inspect``), one per model response; each response states its usage
  (``extra.response.usage``: prompt and completion tokens, no cached ones, and its cost),
  so the run had spent, after call k, the sum over responses 1..k: 6,628 tokens and
  $0.018256 after call 3, 81,968 and $0.107057 after call 13, 102,793 and $0.117248 after
  call 15; 181,278 tokens and ``instance_cost`` $0.177621 in all (the responses' costs
  sum to it).
- The same run with its responses' usage taken out: the trajectory states its cost once,
  for the whole run (``info.model_stats``), and no tokens; and with only the responses'
  costs taken out: tokens as the run went, the cost at the end.
"""

from __future__ import annotations

import json
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


REAL = ROOT / "tests/fixtures/real/mini-swe-agent"
REAL_POLICIES = ('[[policy]]', 'name = "steps"', 'kind = "max_steps"', 'limit = 3',
                 '[[policy]]', 'name = "tok"', 'kind = "tokens"', 'limit = 100000',
                 '[[policy]]', 'name = "usd"', 'kind = "cost"', 'limit_usd = 0.1')


@pytest.fixture(scope="module")
def real_res():
    return load_resources(str(ROOT / "tests/fixtures/data/verified_test.parquet"), None, None)


@pytest.fixture(scope="module")
def real(real_res):
    trace = next(REAL.glob("*django-11603*"))
    return run(trace, real_res, policies(*REAL_POLICIES))


def _without(real_res, tmp_path_factory, keys: tuple[str, ...]) -> dict:
    """The real run with ``keys`` taken out of every response's usage (``usage`` itself:
    the whole of it)."""
    real = next(REAL.glob("*django-11603*"))
    doc = json.loads(real.read_text())
    for msg in doc["messages"]:
        response = msg.get("extra", {}).get("response", {})
        for key in keys:
            (response if key == "usage" else response.get("usage", {})).pop(key, None)
    trace = tmp_path_factory.mktemp("stated") / real.name
    trace.write_text(json.dumps(doc, indent=1))
    return run(trace, real_res, policies(*REAL_POLICIES))


@pytest.fixture(scope="module")
def stated_at_end(real_res, tmp_path_factory):
    """The cost stated once, at the end (and no tokens at all)."""
    return _without(real_res, tmp_path_factory, ("usage",))


@pytest.fixture(scope="module")
def cost_at_end(real_res, tmp_path_factory):
    """Tokens as the run went, the cost only at the end."""
    return _without(real_res, tmp_path_factory, ("cost",))


def test_real_run_savings_are_measured_from_the_responses_usage(real):
    """Step 3 is call 3 of 21: the run had spent 6,628 tokens and $0.018256 by then."""
    [row] = real["runs"]
    assert (row["steps"], row["tool_calls"], row["tokens"]) == (7, 21, 181_278)
    assert row["cost_usd"] == pytest.approx(0.177621)
    [s] = policy(real, "steps")["stopped_runs"]
    assert (s["step"], s["step_estimated"], s["final_steps"]) == (3, False, 7)
    assert s["saved_tokens"] == 181_278 - 6_628
    assert s["saved_cost_usd"] == pytest.approx(0.177621 - 0.018256, abs=1e-6)
    assert not s["saved_tokens_estimated"] and not s["saved_cost_estimated"]


def test_real_run_budgets_fire_at_the_call_that_crosses_them(real):
    """100,000 tokens are first reached after call 15 (102,793), $0.10 after call 13
    ($0.107057); both after 4 steps (calls 1, 2, 3, 9)."""
    tok, usd = policy(real, "tok"), policy(real, "usd")
    [s] = tok["stopped_runs"]
    assert (s["step"], s["step_estimated"]) == (4, False)
    assert s["saved_tokens"] == 181_278 - 102_793
    assert s["saved_cost_usd"] == pytest.approx(0.177621 - 0.117248, abs=1e-6)
    [s] = usd["stopped_runs"]
    assert (s["step"], s["step_estimated"]) == (4, False)
    assert s["saved_tokens"] == 181_278 - 81_968
    assert s["saved_cost_usd"] == pytest.approx(0.177621 - 0.107057, abs=1e-6)
    assert not tok["stop_estimated"] and not usd["stop_estimated"]


def test_cost_stated_at_the_end_is_saved_in_proportion_to_the_calls_after_the_stop(
        stated_at_end):
    """Step 3 is call 3 of 21: the 18 calls after it spent 18/21 of the run's cost (the
    old report called the whole total saved)."""
    [row] = stated_at_end["runs"]
    assert (row["steps"], row["tool_calls"]) == (7, 21)
    assert row["cost_usd"] == pytest.approx(0.177621)
    [s] = policy(stated_at_end, "steps")["stopped_runs"]
    assert (s["step"], s["step_estimated"], s["final_steps"]) == (3, False, 7)
    assert s["saved_cost_usd"] == pytest.approx(0.177621 * 18 / 21)
    assert s["saved_cost_estimated"]


def test_cost_stated_at_the_end_budget_fires_where_even_spending_crosses_it(stated_at_end):
    """The trajectory keeps only its total, so a replay sees no cost before the end; live,
    the watcher re-reads the document after every step. $0.10 of $0.177621 is call
    ceil(0.10 / 0.177621 x 21) = ceil(11.82) = 12, after which the run had made 4 steps
    (calls 1, 2, 3, 9)."""
    p = policy(stated_at_end, "usd")
    [s] = p["stopped_runs"]
    assert (s["step"], s["step_estimated"]) == (4, True)
    assert s["saved_cost_usd"] == pytest.approx(0.177621 * 9 / 21)
    assert p["saved"]["steps"] == 3 and p["stop_estimated"]


def test_cost_stated_at_the_end_with_tokens_as_it_went_is_saved_by_token_share(cost_at_end):
    """Tokens measured (6,628 of 181,278 spent by call 3), the cost by their share."""
    [s] = policy(cost_at_end, "steps")["stopped_runs"]
    assert s["saved_tokens"] == 181_278 - 6_628 and not s["saved_tokens_estimated"]
    assert s["saved_cost_usd"] == pytest.approx(0.177621 * (181_278 - 6_628) / 181_278)
    assert s["saved_cost_estimated"]


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
