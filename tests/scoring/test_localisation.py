"""Order-aware localisation (docs/metrics.md §7b): the measures against their definitions,
the ranking a run builds, and a recorded run's numbers worked out by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streameval.runs.evaluate import evaluate_trace, run_identity
from streameval.runs.reader import TraceReader
from streameval.runs.resources import load_resources
from streameval.scoring.localisation import (
    FileRanking,
    Milestone,
    ndcg_at,
    precision_at,
    recall_at,
    reciprocal_rank,
)
from streameval.scoring.session import RunSession
from streameval.traces.files import iter_lines, open_adapter
from streameval.traces.identity import identify

EX = Path(__file__).resolve().parents[2] / "examples"

files = st.sampled_from([f"f{i}.py" for i in range(14)])
rankings = st.lists(files, unique=True, max_size=14)
golds = st.frozensets(files, max_size=6)


def test_worked_example():
    ranked = ["a.py", "g1.py", "b.py", "c.py", "g2.py", "d.py"]
    gold = frozenset({"g1.py", "g2.py", "g3.py"})
    assert recall_at(ranked, gold, 1) == 0.0
    assert recall_at(ranked, gold, 3) == pytest.approx(1 / 3)
    assert recall_at(ranked, gold, 5) == pytest.approx(2 / 3)
    assert recall_at(ranked, gold, 10) == pytest.approx(2 / 3)
    assert precision_at(ranked, gold, 3) == pytest.approx(1 / 3)
    assert precision_at(ranked, gold, 10) == pytest.approx(2 / 10)   # over k, not over 6
    assert reciprocal_rank(ranked, gold) == 0.5
    # gains at ranks 2 and 5: 1/log2(3) + 1/log2(6); ideal: ranks 1-3
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranked, gold, 10) == pytest.approx((1 / math.log2(3) + 1 / math.log2(6)) / ideal)


def test_no_gold_file_and_nothing_ranked():
    assert recall_at([], frozenset(), 5) == 1.0          # nothing to find
    assert recall_at([], frozenset({"g"}), 5) == 0.0
    assert precision_at([], frozenset({"g"}), 5) == 0.0
    assert reciprocal_rank([], frozenset({"g"})) == 0.0
    assert ndcg_at(["g"], frozenset(), 10) == 0.0


@given(ranked=rankings, gold=golds, k=st.integers(1, 12))
def test_measures_against_their_definitions(ranked, gold, k):
    top = ranked[:k]
    hits = [f for f in top if f in gold]
    assert recall_at(ranked, gold, k) == (len(hits) / len(gold) if gold else 1.0)
    assert precision_at(ranked, gold, k) == len(hits) / k
    ranks = [r for r, f in enumerate(ranked, 1) if f in gold]
    assert reciprocal_rank(ranked, gold) == (1 / ranks[0] if ranks else 0.0)
    dcg = sum(1 / math.log2(r + 1) for r, f in enumerate(top, 1) if f in gold)
    idcg = sum(1 / math.log2(r + 1) for r in range(1, min(k, len(gold)) + 1))
    assert ndcg_at(ranked, gold, k) == pytest.approx(dcg / idcg if gold else 0.0)
    assert 0.0 <= ndcg_at(ranked, gold, k) <= 1.0 + 1e-12


@given(steps=st.lists(st.lists(files, max_size=5), max_size=8), gold=golds)
def test_ranking_is_first_shown_order_and_keeps_its_milestones(steps, gold):
    ranking = FileRanking(gold)
    for n, step in enumerate(steps, 1):
        ranking.add(step, n, float(10 * n), 100 * n)
    order = list(dict.fromkeys(f for step in steps for f in step))
    got = ranking.numbers()
    assert got["files_ranked"] == len(order)
    for k in (1, 3, 5, 10):
        assert got["recall_at"][str(k)] == recall_at(order, gold, k)
        assert got["precision_at"][str(k)] == precision_at(order, gold, k)
    assert got["mrr"] == reciprocal_rank(order, gold)
    assert got["ndcg_at_10"] == ndcg_at(order, gold, 10)
    first = next((n for n, s in enumerate(steps, 1) if gold & set(s)), None)
    assert (ranking.first_gold.step if ranking.first_gold else None) == first
    seen: set[str] = set()
    full = None
    for n, step in enumerate(steps, 1):
        seen.update(step)
        if gold and gold <= seen:
            full = n
            break
    assert got["full_file_coverage_step"] == full
    assert got["full_file_coverage_tokens"] == (100 * full if full else None)
    assert got["first_gold_file_tokens"] == (100 * first if first else None)


def test_milestone_unknown_tokens_stay_unknown():
    ranking = FileRanking({"g.py"})
    ranking.add(["g.py"], 3, None, None)
    assert ranking.first_gold == Milestone(3, None, None)
    assert ranking.numbers()["first_gold_file_tokens"] is None


def test_example_run_by_hand():
    """The bundled Claude Code run: step 1 is ``Glob **/*.py``, which printed
    ``inventory/__init__.py``, ``inventory/billing.py``, ``inventory/stock.py``,
    ``tests/test_billing.py``. The gold files are ``inventory/billing.py`` (init_ctx) and
    ``tests/test_billing.py`` (add_ctx): ranks 2 and 4, both shown at step 1. The
    message that asked for the Glob reported 4 + 600 + 14,200 + 95 tokens first."""
    res = load_resources(str(EX / "gold.jsonl"), None, str(EX / "repo"))
    [rec] = evaluate_trace(EX / "runs" / "example-run-1" / "trace.jsonl", res)
    loc = rec["localisation"]
    assert loc["gold_files"] == 2 and rec["first_gold_file_step"] == 1
    assert loc["recall_at"] == {"1": 0.0, "3": 0.5, "5": 1.0, "10": 1.0}
    assert loc["precision_at"] == {"1": 0.0, "3": 1 / 3, "5": 2 / 5, "10": 2 / 10}
    assert loc["mrr"] == 1 / 2
    assert loc["ndcg_at_10"] == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert loc["first_gold_file_tokens"] == loc["full_file_coverage_tokens"] == 14899
    assert loc["full_file_coverage_step"] == 1
    # then README.md (step 2) and web/cart.js (step 6) join the ranking
    assert loc["files_ranked"] == 6


def _session_of(trace: Path, gold_parquet) -> RunSession:
    """The session of a mini-swe-agent trajectory, given the gold row alone, as
    ``inspect`` makes one (``make_session`` would measure a run whose repository is
    missing against no gold, docs/metrics.md §5b): steps are built without a repository."""
    res = load_resources(str(gold_parquet), None, None)
    name, adapter = open_adapter(trace, None)
    sessions = []

    def factory(trace_instance, session_id):
        ident = run_identity(identify(trace), trace_instance, 0, res, trace=trace,
                             session_id=session_id)
        sessions.append(RunSession(ident, res.lookup(ident.instance_id), fmt=name))
        return sessions[-1]

    reader = TraceReader(adapter, factory)
    for line, lineno in iter_lines(trace):
        reader.feed_line(line, lineno)
    reader.close()
    [session] = sessions
    return session


def test_mini_swe_agent_tokens_at_the_first_gold_read_are_the_responses_so_far(
        real_fixtures, gold_parquet):
    """mini-swe-agent's trajectory states each model response's usage: what the run had
    spent when it first read gold is the sum over the responses up to that call."""
    trace = next((real_fixtures / "mini-swe-agent").glob("*django-11603*"))
    session = _session_of(trace, gold_parquet)
    # step 2 is `grep -r "class Avg" django && ...`, showing django/db/models/aggregates.py
    # (the one gold file) 6 s into the run; the two responses so far: prompt 1371 +
    # completion 240, prompt 2281 + completion 147 (no cached tokens)
    assert session.ranking.first_gold == Milestone(2, 6.0, 1371 + 240 + 2281 + 147)
    assert session.ranking.all_gold == Milestone(2, 6.0, 4039)


def test_a_format_that_reports_usage_only_at_the_end_has_no_tokens_at_a_step(
        real_fixtures, gold_parquet, tmp_path):
    """A trajectory whose responses state no usage has only the run's total, at its end:
    what the run had spent when it first read gold is not known, and 0 would be a wrong
    number. Its step and trace seconds are known."""
    import json

    real = next((real_fixtures / "mini-swe-agent").glob("*django-11603*"))
    doc = json.loads(real.read_text())
    for msg in doc["messages"]:
        msg.get("extra", {}).get("response", {}).pop("usage", None)
    trace = tmp_path / real.name
    trace.write_text(json.dumps(doc, indent=2))
    session = _session_of(trace, gold_parquet)
    assert session.gold is not None and session.snapshot().cost_usd > 0
    assert session.ranking.first_gold == Milestone(2, 6.0, None)
    assert session.ranking.all_gold == Milestone(2, 6.0, None)
