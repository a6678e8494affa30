"""``replay --fail-under``: the gate's arithmetic, and the exit code with the metric named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streameval.commands.main import main
from streameval.report.gate import GateError, fail_under, parse_thresholds

EX = Path(__file__).resolve().parents[2] / "examples"


def rec(cov: float, prec: float, **extra) -> dict:
    block = {"coverage": cov, "precision": prec, "intersection": 0, "gold_size": 1,
             "pred_size": 1}
    return {"instance_id": "i", "num_steps": 1,
            "final": {g: block for g in ("file", "symbol", "span", "line")}, **extra}


def test_parse():
    [a, b] = parse_thresholds("line.coverage=0.6, file.f1=0.5")
    assert (a.metric.name, a.limit, b.metric.name, b.limit) == ("line.coverage", 0.6, "file.f1", 0.5)
    for bad in ("line.coverage", "line.coverage=x", "nope=1", "", "line.coverage=nan"):
        with pytest.raises(GateError):
            parse_thresholds(bad)


def test_mean_over_scored_runs_each_once():
    records = [rec(1.0, 1.0), rec(0.2, 1.0), {"instance_id": "e", "error": "missing_repo: x"}]
    # line coverage (1.0 + 0.2) / 2 = 0.6: not below 0.6; errors are not averaged in
    assert fail_under(records, parse_thresholds("line.coverage=0.6")) == []
    [why] = fail_under(records, parse_thresholds("line.coverage=0.61"))
    assert why.startswith("line.coverage: mean 0.6 over 2 run(s) is below 0.61")
    # F1: 1.0 and 2·0.2·1/1.2 = 1/3 -> mean 2/3
    assert fail_under(records, parse_thresholds("file.f1=0.66")) == []
    assert fail_under(records, parse_thresholds("file.f1=0.67"))


def test_the_solve_rate_gate_counts_runs_that_could_not_be_scored():
    """Two scored runs, one solved; two error records, both solved: the solve rate is
    3/4 (the summary table's), not 1/2."""
    records = [rec(1.0, 1.0, resolved=True), rec(0.2, 1.0, resolved=False),
               {"instance_id": "e", "error": "missing_repo: x", "resolved": True},
               {"instance_id": "f", "error": "missing_repo: x", "resolved": True}]
    assert fail_under(records, parse_thresholds("resolved=0.75")) == []
    [why] = fail_under(records, parse_thresholds("resolved=0.76"))
    assert why.startswith("resolved: mean 0.75 over 4 run(s)")


def test_a_metric_no_run_has_fails_the_gate():
    [why] = fail_under([rec(1.0, 1.0)], parse_thresholds("editloc.recall=0.1"))
    assert "no scored run has it" in why


def test_replay_exits_1_naming_the_failing_metric(tmp_path, capsys):
    base = ["replay", str(EX / "runs"), "--gold", str(EX / "gold.jsonl"), "--repo",
            str(EX / "repo"), "--quiet", "--out", str(tmp_path / "o.jsonl")]
    # the example run: line coverage 1.0; file coverage 2/2, precision 2/6: F1 0.5
    assert main([*base, "--fail-under", "line.coverage=0.6,file.f1=0.5"]) == 0
    assert main([*base, "--fail-under", "line.coverage=0.6,file.f1=0.9"]) == 1
    err = capsys.readouterr().err
    assert "--fail-under: file.f1: mean 0.5 over 1 run(s) is below 0.9" in err
    assert "line.coverage" not in err
    assert main([*base, "--fail-under", "line.coverag=0.6"]) == 2


# --------------------------------------------------------------------------- compare


def _arms(diffs, repos, errors_b: int = 0, metrics=None):
    from compare_records import error, rec

    from streameval.report.arms import reduce_arm
    from streameval.report.fields import select_metrics

    metrics = metrics or select_metrics(["file.coverage", "line.coverage"])
    a = [rec(f"i-{k}", 0.5, repo=repos[k]) for k in range(len(diffs))]
    b = [rec(f"i-{k}", 0.5 + d, repo=repos[k]) for k, d in enumerate(diffs)]
    b += [error(f"e-{k}") for k in range(errors_b)]
    a += [rec(f"e-{k}", 0.5, repo=repos[k % len(repos)]) for k in range(errors_b)]
    return [reduce_arm("base", a, metrics), reduce_arm("new", b, metrics)], metrics


def _gate(text, arms, metrics, **kw):
    from streameval.report.compare import compare_arms
    from streameval.report.gate import fail_if_worse, parse_worse

    return fail_if_worse(compare_arms(arms, metrics, **kw), parse_worse(text))


def test_several_gates_are_holm_corrected_together():
    """12 repositories; B's drop is set so that one gate's one-sided p is between 1.25%
    and 2.5%: one gate fails, two gates on metrics with the same differences (file and
    line coverage are equal in these records) do not: Holm doubles each p."""
    from streameval.report.inference import clustered_mean

    rng = np.random.default_rng(12)
    repos = [f"o/r{k % 12}" for k in range(120)]
    noise = rng.normal(0, 0.1, 120) + np.repeat(rng.normal(0, 0.03, 12), 10)
    lo, hi = -0.2, 0.0
    for _ in range(60):
        shift = (lo + hi) / 2
        p = clustered_mean(noise + shift, repos).p_below
        lo, hi = (shift, hi) if p < 0.018 else (lo, shift)
    assert 0.0125 < clustered_mean(noise + shift, repos).p_below < 0.025
    arms, metrics = _arms(noise + shift, repos)
    [one] = _gate("line.coverage", arms, metrics).failures
    assert "line.coverage: new is worse than base" in one and "Holm over 1 gate test(s)" in one
    assert _gate("line.coverage,file.coverage", arms, metrics).failures == []


def test_a_gate_over_two_repositories_is_not_judged_unless_unit_instance():
    """One repository of 30 pairs, B clearly worse: f53415f failed the gate on it. The
    repository-level question has no answer; the instance-level one does, when asked."""
    rng = np.random.default_rng(1)
    arms, metrics = _arms(-0.2 + rng.normal(0, 0.05, 30), ["o/one"] * 30)
    verdict = _gate("line.coverage", arms, metrics)
    assert verdict.failures == []
    [note] = verdict.notes
    assert "not judged (1 repository: no repository-level interval" in note
    assert "--unit instance judges these repositories' instances" in note
    [failure] = _gate("line.coverage", arms, metrics, unit="instance").failures
    assert "new is worse than base" in failure and "30 instances" in failure


def test_a_gate_whose_units_include_ids_with_no_repository_cannot_fail():
    """One named repository of 10 pairs and 12 instances that name none: 13 units, each
    unnamed instance counted as a repository of its own, and B clearly worse. The gate
    failed on it; the units are not repositories, so it cannot fail, and says why
    (--unit instance judges the instances, and fails)."""
    rng = np.random.default_rng(3)
    repos = ["o/one"] * 10 + [None] * 12
    arms, metrics = _arms(-0.2 + rng.normal(0, 0.05, 22), repos)
    verdict = _gate("line.coverage", arms, metrics)
    assert verdict.failures == []
    [note] = verdict.notes
    assert note.startswith("line.coverage: new vs base: 12 pairs name no repository")
    assert "this gate cannot fail" in note and "13 units" in note
    [failure] = _gate("line.coverage", arms, metrics, unit="instance").failures
    assert "new is worse than base" in failure and "22 instances" in failure
    # twelve named repositories and 3 unnamed instances: the same
    many = [f"o/r{k % 12}" for k in range(120)] + [None] * 3
    arms, metrics = _arms(-0.2 + rng.normal(0, 0.05, 123), many)
    verdict = _gate("line.coverage", arms, metrics)
    assert verdict.failures == [] and "3 pairs name no repository" in verdict.notes[0]


def test_an_arm_that_lost_more_instances_fails_the_gate_and_says_how_many():
    """B failed on 90 of 100 instances: on the 10 it scored it is no worse, and
    f53415f's gate passed."""
    repos = [f"o/r{k % 12}" for k in range(10)]
    arms, metrics = _arms([0.0] * 10, repos, errors_b=90)
    [failure] = _gate("line.coverage", arms, metrics).failures
    assert "new vs base: new has no score for 90 of 100 instances, base for 0" in failure
    assert "(90% against 0%, more than 5 points apart)" in failure
    assert _gate("line.coverage", arms, metrics, missing_margin=95).failures == []


def test_a_gate_that_cannot_fail_says_so():
    rng = np.random.default_rng(2)
    repos = [f"o/r{k % 5}" for k in range(100)]
    arms, metrics = _arms(-0.3 + rng.normal(0, 0.05, 100), repos)
    verdict = _gate("line.coverage", arms, metrics)
    assert verdict.failures == []
    assert "with 5 repositories this gate cannot fail (the exact test's smallest one-sided p is 0.0312" \
        in verdict.notes[0]


def test_a_gate_with_too_few_random_flips_says_it_cannot_fail():
    """20 repositories and B clearly worse, but ``--resamples 10``: the random flip
    test's p cannot go below 1/11, so the gate cannot fail; it said nothing of it (the
    note knew only the exact test's floor, 1/2^20 here)."""
    rng = np.random.default_rng(3)
    repos = [f"o/r{k % 20}" for k in range(200)]
    arms, metrics = _arms(-0.3 + rng.normal(0, 0.05, 200), repos)
    verdict = _gate("line.coverage", arms, metrics, flips=10)
    assert verdict.failures == []
    assert "with 10 random sign flips this gate cannot fail (the flip test's smallest " \
        "one-sided p is 0.0909, above 0.025)" in verdict.notes[0]
    assert _gate("line.coverage", arms, metrics).failures != []


def test_gates_that_holm_leaves_no_chance_say_so():
    """Six repositories, B 0.3 worse on both gated metrics: each exact one-sided p can
    reach 1/64 = 0.0156, below 2.5%, so one gate alone fails; but Holm's correction over
    two gates asks the first for p below 0.0125, which no test over six repositories can
    give: neither gate can fail, and nothing said so."""
    rng = np.random.default_rng(6)
    repos = [f"o/r{k % 6}" for k in range(120)]
    arms, metrics = _arms(-0.3 + rng.normal(0, 0.05, 120), repos)
    assert _gate("line.coverage", arms, metrics).failures != []
    both = _gate("line.coverage,file.coverage", arms, metrics)
    assert both.failures == []
    assert ("with 2 gate tests Holm's correction asks the first for a one-sided p below "
            "0.0125; none of them can go below 0.0156: no gate can fail") in both.notes


def test_a_gate_on_a_metric_no_pair_has_fails():
    from streameval.report.fields import select_metrics

    repos = [f"o/r{k % 12}" for k in range(24)]
    arms, metrics = _arms([0.0] * 24, repos, metrics=select_metrics(["line.*"]))
    [failure] = _gate("line.auc", arms, metrics).failures
    assert failure == "line.auc: new vs base: no pair has it; the gate cannot pass"
