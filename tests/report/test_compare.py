"""Arms and their comparison: repeated runs averaged first, pairing by instance, unpaired
instances listed, the gate's direction, and the outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest

from streameval.commands.main import main
from streameval.report.arms import cluster_of, reduce_arm, split_records
from streameval.report.compare import MIN_PAIRS, compare_arms
from streameval.report.compare_page import format_html
from streameval.report.compare_text import format_markdown, format_terminal
from streameval.report.fields import select_metrics

EX = Path(__file__).resolve().parents[2] / "examples"


def rec(iid: str, cov: float, *, agent: str = "a", tokens: int | None = None,
        steps: list[float] | None = None, repo: str | None = None, **extra) -> dict:
    block = {"coverage": cov, "precision": 1.0, "intersection": 1, "gold_size": 1,
             "pred_size": 1}
    curve = steps if steps is not None else [cov]
    out = {"instance_id": iid, "num_steps": len(curve), "agent": agent,
           "final": {g: block for g in ("file", "symbol", "span", "line")},
           "trajectory": {"steps": [{"step": i + 1, "coverage": {g: c for g in
                                     ("file", "symbol", "span", "line")}}
                                    for i, c in enumerate(curve)],
                          "auc_coverage": {}, "redundancy": {}},
           "tokens": {"input": tokens or 0, "output": 0, "cache_read": 0, "cache_creation": 0},
           "cost_usd": None, **extra}
    if repo is not None:
        out["repo"] = repo
    return out


LINE = select_metrics(["line.coverage", "tokens"])


def test_repeated_runs_are_averaged_before_pairing():
    arm = reduce_arm("b", [rec("x__y-1", 0.2), rec("x__y-1", 0.6), rec("x__y-2", 1.0),
                           {"instance_id": "x__y-3", "error": "missing_repo: x"}], LINE)
    assert arm.rows["x__y-1"].values["line.coverage"] == pytest.approx(0.4)
    assert arm.rows["x__y-1"].runs == 2
    assert (arm.runs, arm.errors, arm.errors_only) == (4, 1, ["x__y-3"])
    # no usage in the record: tokens is not 0, it is unknown
    assert arm.rows["x__y-2"].values["tokens"] is None
    # curves: the mean of the runs' curves, a run that stopped keeping its last value
    two = reduce_arm("c", [rec("i", 0.5, steps=[0.0, 0.5]), rec("i", 1.0, steps=[1.0])], LINE)
    assert two.rows["i"].curve["line"] == [0.5, 0.75]


def test_clusters():
    assert cluster_of({"instance_id": "x", "repo": "Django/Django.git"}) == "django/django"
    assert cluster_of({"instance_id": "django__django-11099"}) == "django/django"
    assert cluster_of({"instance_id": "scikit-learn__scikit-learn-25232"}) == \
        "scikit-learn/scikit-learn"
    assert cluster_of({"instance_id": "odd-id"}) == "instance:odd-id"


def test_split_by_agent_and_label():
    records = [rec("i", 1, agent="x"), rec("i", 1, agent="y"), rec("i", 1, agent="unknown"),
               rec("i", 1, labels={"prompt": "B"})]
    by_agent, unnamed = split_records(records, "agent")
    assert list(by_agent) == ["x", "y", "a"] and unnamed == 1
    by_label, unnamed = split_records(records, "label:prompt")
    assert list(by_label) == ["B"] and unnamed == 3
    with pytest.raises(ValueError):
        split_records(records, "colour")


def _arms(n: int, shift: float):
    a = [rec(f"r{i % 4}__p-{i}", 0.3 + 0.01 * i, tokens=1000 + i) for i in range(n)]
    b = [rec(f"r{i % 4}__p-{i}", 0.3 + 0.01 * i + shift, tokens=900 + i) for i in range(n)]
    b.append(rec("only__b-1", 0.9))
    a.append(rec("only__a-1", 0.1))
    return reduce_arm("A", a, LINE), reduce_arm("B", b, LINE)


def test_pairs_differences_and_unpaired_lists():
    a, b = _arms(12, 0.1)
    report = compare_arms([a, b], LINE, resamples=2000, seed=1)
    [c] = report.comparisons
    assert len(c.pairs) == 12 and c.only_a == ["only__a-1"] and c.only_b == ["only__b-1"]
    cov, tok = c.rows
    # arm means are over the pairs: their difference is the paired difference
    assert cov.estimate.mean == pytest.approx(0.1) == cov.mean_b - cov.mean_a
    assert cov.estimate.low == pytest.approx(0.1) and cov.trusted
    assert tok.estimate.mean == pytest.approx(-100)
    # B uses fewer tokens: not worse; B's line coverage is not worse either
    assert tok.worse_than(0) is False and cov.worse_than(0) is False
    # a margin of 0.2 below: a drop of 0.1 is within it
    worse_a = compare_arms([b, a], LINE, resamples=2000, seed=1).comparisons[0].rows[0]
    assert worse_a.worse_than(0.0) is True and worse_a.worse_than(0.2) is False
    # Holm: two tests, both with p = 2 / 2001
    assert cov.p_holm == pytest.approx(2 * cov.estimate.p)


def test_fewer_than_ten_pairs_say_the_interval_is_not_to_be_trusted():
    a, b = _arms(MIN_PAIRS - 1, 0.1)
    report = compare_arms([a, b], LINE, resamples=500)
    text = format_terminal(report)
    assert "fewer than 10 pairs: the intervals are not to be trusted" in text
    assert not report.comparisons[0].rows[0].trusted
    assert "not to be trusted" in format_markdown(report)
    assert "not to be trusted" in format_html(report)


def test_html_is_self_contained_with_a_curve_and_band_per_arm():
    a, b = _arms(12, 0.1)
    page = format_html(compare_arms([a, b], LINE, resamples=500))
    assert "<script" not in page and "<link" not in page
    assert not re.search(r'(src|href)="https?:', page)
    # four granularities x two arms: a band polygon and a mean polyline each
    assert page.count('data-band="95"') == 8 and page.count("<polyline") == 8


def test_json_report(tmp_path):
    a, b = _arms(12, 0.1)
    from streameval.report.compare import report_json

    doc = json.loads(orjson.dumps(report_json(compare_arms([a, b], LINE, resamples=500))))
    [c] = doc["comparisons"]
    assert (doc["baseline"], c["a"], c["b"], c["pairs"]) == ("A", "A", "B", 12)
    m = c["metrics"][0]
    assert m["metric"] == "line.coverage" and m["better"] == "higher"
    assert set(m) >= {"mean_a", "mean_b", "difference", "low", "high", "p", "p_holm", "pairs"}
    assert doc["curves"]["A"]["line"]["instances"] == 12


def write(path: Path, records: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def test_compare_command_gate_exits_1_naming_the_metric(tmp_path, capsys):
    a = [rec(f"r{i % 4}__p-{i}", 0.5, tokens=1000) for i in range(12)]
    b = [rec(f"r{i % 4}__p-{i}", 0.5 - 0.05 * (1 + i % 3), tokens=1000) for i in range(12)]
    fa, fb = write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)
    base = ["compare", "--arm", f"base={fa}", "--arm", f"new={fb}", "--resamples", "2000",
            "--metrics", "line.coverage,tokens"]
    assert main([*base, "--fail-if-worse", "line.coverage:0.5"]) == 0
    assert main([*base, "--fail-if-worse", "line.coverage"]) == 1
    err = capsys.readouterr().err
    assert "--fail-if-worse: line.coverage: new is worse than base" in err
    # tokens are the same in both arms, but only a "no pair" can make a gate fail there
    assert main([*base, "--fail-if-worse", "tokens"]) == 0
    assert main([*base, "--fail-if-worse", "file.f1"]) == 2   # not among --metrics


def test_compare_by_experiment_from_records_and_outputs(tmp_path):
    records = [rec(f"r{i % 3}__p-{i}", 0.4 + 0.1 * (k == "b"), experiment=k)
               for k in ("a", "b") for i in range(10)]
    f = write(tmp_path / "all.jsonl", records)
    out = tmp_path / "o"
    code = main(["compare", str(f), "--by", "experiment", "--resamples", "1000", "--quiet",
                 "--metrics", "line.*", "--json", f"{out}.json", "--markdown", f"{out}.md",
                 "--html", f"{out}.html"])
    assert code == 0
    doc = json.loads(Path(f"{out}.json").read_text())
    assert doc["baseline"] == "a" and doc["comparisons"][0]["pairs"] == 10
    assert Path(f"{out}.md").read_text().startswith("# streameval compare: baseline a")
    assert Path(f"{out}.html").read_text().startswith("<!DOCTYPE html>")


def test_compare_replays_traces_on_the_fly(tmp_path, capsys):
    code = main(["compare", "--arm", f"late={EX / 'backtest' / 'late-find-1'}",
                 "--arm", f"example={EX / 'runs'}", "--gold", str(EX / "gold.jsonl"),
                 "--repo", str(EX / "repo"), "--resamples", "500", "--metrics", "line.*"])
    assert code == 0
    out = capsys.readouterr().out
    assert "B = example  vs  A = late (baseline)" in out
    assert "fewer than 10 pairs" in out
    # one pair, one repository: a mean, and no interval or p-value
    row = next(line for line in out.splitlines() if line.startswith("line.coverage"))
    assert row.split()[1:5] == ["1.000", "1.000", "0.000", "-"]


def test_usage_errors(tmp_path, capsys):
    f = write(tmp_path / "x.jsonl", [rec("i__j-1", 1.0)])
    assert main(["compare", str(f)]) == 2
    assert main(["compare", str(f), "--by", "agent"]) == 2     # one arm only
    assert main(["compare", "--arm", f"a={f}", "--arm", f"b={f}", "--metrics", "nope"]) == 2
    assert main(["compare", "--arm", f"a={f}", "--arm", f"b={EX / 'runs'}"]) == 2  # no repo
    err = capsys.readouterr().err
    assert "give --repos DIR or --repo DIR" in err
