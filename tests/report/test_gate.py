"""``replay --fail-under``: the gate's arithmetic, and the exit code with the metric named."""

from __future__ import annotations

from pathlib import Path

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
