"""Arms: repeated runs averaged first, repositories found (or not), arms split, instances
paired, each arm's losses counted, and ``--missing worst``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from compare_records import error, rec

from streameval.report.arms import cluster_of, pair_arms, reduce_arm, split_records
from streameval.report.fields import select_metrics

LINE = select_metrics(["line.coverage", "tokens"])


def test_repeated_runs_are_averaged_before_pairing():
    arm = reduce_arm("b", [rec("x__y-1", 0.2), rec("x__y-1", 0.6), rec("x__y-2", 1.0),
                           error("x__y-3")], LINE)
    assert arm.rows["x__y-1"].values["line.coverage"] == pytest.approx(0.4)
    assert arm.rows["x__y-1"].runs == 2
    assert (arm.runs, arm.errors, arm.errors_only) == (4, 1, ["x__y-3"])
    # no usage in the record: tokens is not 0, it is unknown
    assert arm.rows["x__y-2"].values["tokens"] is None
    # curves: the mean of the runs' curves, a run that stopped keeping its last value
    two = reduce_arm("c", [rec("i", 0.5, steps=[0.0, 0.5]), rec("i", 1.0, steps=[1.0])], LINE)
    assert two.rows["i"].curve["line"] == [0.5, 0.75]


def test_one_nan_among_repeated_runs_does_not_drop_the_instance():
    """f53415f averaged NaN in: the instance's mean was NaN and its pair was lost."""
    arm = reduce_arm("b", [rec("x__y-1", 0.4), rec("x__y-1", float("nan")),
                           rec("x__y-1", float("inf"))], LINE)
    assert arm.rows["x__y-1"].values["line.coverage"] == pytest.approx(0.4)


def test_clusters_and_where_they_were_read():
    assert cluster_of({"instance_id": "x", "repo": "Django/Django.git"}) == \
        ("django/django", "repo")
    assert cluster_of({"instance_id": "django__django-11099"}) == ("django/django", "id")
    assert cluster_of({"instance_id": "scikit-learn__scikit-learn-25232"}) == \
        ("scikit-learn/scikit-learn", "id")
    assert cluster_of({"instance_id": "odd-id"}) == (None, "none")


def test_split_by_agent_and_label():
    records = [rec("i", 1, agent="x"), rec("i", 1, agent="y"), rec("i", 1, agent="unknown"),
               rec("i", 1, labels={"prompt": "B"})]
    by_agent, unnamed = split_records(records, "agent")
    assert list(by_agent) == ["x", "y", "a"] and unnamed == 1
    by_label, unnamed = split_records(records, "label:prompt")
    assert list(by_label) == ["B"] and unnamed == 3
    with pytest.raises(ValueError):
        split_records(records, "colour")


def arms():
    """A scored 1-4, failed 5; B scored 1-3 and 5, failed 4 and 6."""
    a = reduce_arm("A", [rec(f"o__r-{i}", 0.1 * i, tokens=100 * i) for i in (1, 2, 3, 4)]
                   + [error("o__r-5")], LINE)
    b = reduce_arm("B", [rec(f"o__r-{i}", 0.1 * i + 0.05, tokens=90 * i) for i in (1, 2, 3, 5)]
                   + [error("o__r-4"), error("o__r-6")], LINE)
    return a, b


def test_pairs_and_losses():
    p = pair_arms(*arms(), LINE)
    assert p.keys == ["o__r-1", "o__r-2", "o__r-3"]
    assert (p.only_a, p.only_b) == (["o__r-4"], ["o__r-5"])
    assert (p.lost_a, p.lost_b, p.instances) == (["o__r-5", "o__r-6"], ["o__r-4", "o__r-6"], 6)
    assert p.clusters == ["o/r"] * 3 and p.sources == ["id"] * 3
    assert (p.b - p.a)[:, 0] == pytest.approx([0.05] * 3)
    assert (p.imputed_a, p.imputed_b) == (0, 0)


def test_missing_worst_scores_what_an_arm_lacks_as_the_worst_value_either_had():
    p = pair_arms(*arms(), LINE, missing="worst")
    assert p.keys == ["o__r-1", "o__r-2", "o__r-3", "o__r-4", "o__r-5"]
    # B lacks r-4: its coverage is the lowest either arm scored (A's 0.1), its tokens
    # the most (B's 450 on r-5); A lacks r-5: the same worst values
    assert p.b[3] == pytest.approx([0.1, 450])
    assert p.a[4] == pytest.approx([0.1, 450])
    assert (p.imputed_a, p.imputed_b) == (1, 1)
    # r-6 failed in both: nothing to pair
    assert "o__r-6" not in p.keys


OUTCOME = select_metrics(["line.coverage", "resolved"])


def test_an_error_record_keeps_its_outcome():
    """Whether a task was solved does not depend on whether its context could be
    scored: r-1 has a scored run (unsolved) and an unscorable one (solved), r-2 only an
    unscorable solved one. The solve rate takes every known outcome (it took only the
    scored runs'); coverage only the scored runs; r-2 is still an instance the arm has
    no score for."""
    arm = reduce_arm("B", [rec("o__r-1", 0.4, resolved=False), error("o__r-1", resolved=True),
                           error("o__r-2", resolved=True), error("o__r-3")], OUTCOME)
    assert arm.rows["o__r-1"].values == {"line.coverage": 0.4, "resolved": 0.5}
    assert arm.rows["o__r-1"].runs == 1
    r2 = arm.rows["o__r-2"]
    assert (r2.runs, r2.values, r2.cluster) == (0, {"line.coverage": None, "resolved": 1.0},
                                                "o/r")
    assert "o__r-3" not in arm.rows       # no outcome, no score: nothing to pair
    assert arm.scored == {"o__r-1"}
    assert (arm.errors, arm.errors_only) == (3, ["o__r-2", "o__r-3"])


def test_outcomes_of_error_records_are_paired_and_the_losses_stay():
    """A scored r-1..r-4; B scored r-1 and r-2, and could not score r-3 (solved) or
    r-4 (unknown outcome). resolved is paired on r-1..r-3, coverage on r-1 and r-2; B
    still lost r-3 and r-4. Under --missing worst B's r-3 keeps its known outcome and
    takes the worst coverage; r-4 takes the worst of both."""
    a = reduce_arm("A", [rec(f"o__r-{i}", 0.1 * i, resolved=i % 2 == 0) for i in (1, 2, 3, 4)],
                   OUTCOME)
    b = reduce_arm("B", [rec("o__r-1", 0.5, resolved=True), rec("o__r-2", 0.5, resolved=True),
                         error("o__r-3", resolved=True), error("o__r-4")], OUTCOME)
    p = pair_arms(a, b, OUTCOME)
    assert p.keys == ["o__r-1", "o__r-2", "o__r-3"] and p.outcome_only == ["o__r-3"]
    assert (p.only_a, p.lost_b, p.lost_a) == (["o__r-3", "o__r-4"], ["o__r-3", "o__r-4"], [])
    d = p.b - p.a
    assert np.isnan(d[2, 0]) and d[:, 1] == pytest.approx([1, 0, 1])
    worst = pair_arms(a, b, OUTCOME, missing="worst")
    assert worst.keys == ["o__r-1", "o__r-2", "o__r-3", "o__r-4"] and worst.outcome_only == []
    assert worst.b[2] == pytest.approx([0.1, 1.0]) and worst.b[3] == pytest.approx([0.1, 0.0])
    assert (worst.imputed_a, worst.imputed_b) == (0, 2)


def test_a_metric_no_arm_has_stays_missing_under_worst():
    a = reduce_arm("A", [rec("o__r-1", 0.5)], LINE)
    b = reduce_arm("B", [rec("o__r-2", 0.5)], LINE)
    p = pair_arms(a, b, LINE, missing="worst")
    assert all(math.isnan(x) for x in np.concatenate([p.a[:, 1], p.b[:, 1]]))
    with pytest.raises(ValueError):
        pair_arms(a, b, LINE, missing="best")
