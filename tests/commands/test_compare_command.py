"""``streameval compare`` end to end: records files (or traces scored on the fly) in,
the table, JSON, markdown and HTML out, the gate's exit code. Each case of issue 29
that f53415f got wrong is a test here, named for the failure, run through the command
as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from compare_records import error, rec, write

from streameval.commands.main import main

EX = Path(__file__).resolve().parents[2] / "examples"


def run(tmp_path: Path, a: list[dict], b: list[dict], *extra: str) -> tuple[int, dict]:
    fa, fb = write(tmp_path / "a.jsonl", a), write(tmp_path / "b.jsonl", b)
    out = tmp_path / "c.json"
    code = main(["compare", "--arm", f"base={fa}", "--arm", f"new={fb}", "--json", str(out),
                 "--metrics", "line.coverage,tokens", *extra])
    return code, json.loads(out.read_text()) if out.exists() else {}


def row(doc: dict, name: str = "line.coverage") -> dict:
    return next(m for m in doc["comparisons"][0]["metrics"] if m["metric"] == name)


def test_the_gate_exits_1_naming_the_metric(tmp_path, capsys):
    rng = np.random.default_rng(0)
    a = [rec(f"r{i % 12}__p-{i}", 0.5, tokens=1000) for i in range(120)]
    b = [rec(f"r{i % 12}__p-{i}", 0.4 + rng.normal(0, 0.05), tokens=1000) for i in range(120)]
    assert run(tmp_path, a, b, "--fail-if-worse", "line.coverage:0.3")[0] == 0
    assert run(tmp_path, a, b, "--fail-if-worse", "line.coverage")[0] == 1
    err = capsys.readouterr().err
    assert "--fail-if-worse: line.coverage: new is worse than base: B-A -0.09" in err
    assert "one-sided p 0.000244 that it is below +0" in err
    # tokens are the same in both arms: no failure
    assert run(tmp_path, a, b, "--fail-if-worse", "tokens")[0] == 0
    assert run(tmp_path, a, b, "--fail-if-worse", "file.f1")[0] == 2   # not among --metrics


def test_b_failing_90_of_100_instances_fails_the_gate(tmp_path, capsys):
    a = [rec(f"r{i % 12}__p-{i}", 0.5) for i in range(100)]
    b = [rec(f"r{i % 12}__p-{i}", 0.5) for i in range(10)] + \
        [error(f"r{i % 12}__p-{i}") for i in range(10, 100)]
    code, doc = run(tmp_path, a, b, "--fail-if-worse", "line.coverage")
    assert code == 1
    assert "new has no score for 90 of 100 instances, base for 0" in capsys.readouterr().err
    assert row(doc)["trusted"] is False and "90 points apart" in row(doc)["reason"]
    assert len(doc["comparisons"][0]["lost_b"]) == 90


def test_one_repository_of_30_pairs_is_not_trusted_and_gates_only_with_unit_instance(
        tmp_path, capsys):
    rng = np.random.default_rng(1)
    a = [rec(f"django__django-{i}", 0.5) for i in range(30)]
    b = [rec(f"django__django-{i}", 0.3 + rng.normal(0, 0.05)) for i in range(30)]
    code, doc = run(tmp_path, a, b, "--fail-if-worse", "line.coverage")
    assert code == 0
    r = row(doc)
    assert (r["unit"], r["clusters"], r["trusted"]) == ("instance", 1, False)
    assert r["reason"].startswith("1 repository: no repository-level interval")
    assert "note: line.coverage: new vs base: not judged" in capsys.readouterr().err
    code, doc = run(tmp_path, a, b, "--fail-if-worse", "line.coverage", "--unit", "instance")
    assert code == 1 and row(doc)["unit"] == "instance"


def test_unit_instance_rows_are_never_trusted_but_still_gate(tmp_path, capsys):
    """12 repositories of 10 pairs, B clearly worse: trusted over repositories; asked
    for instances, every row speaks for these repositories' tasks only and says so (it
    came out trusted), and the gate still judges it."""
    rng = np.random.default_rng(4)
    a = [rec(f"r{i % 12}__p-{i}", 0.5, tokens=1000) for i in range(120)]
    b = [rec(f"r{i % 12}__p-{i}", 0.4 + rng.normal(0, 0.05), tokens=1000) for i in range(120)]
    code, doc = run(tmp_path, a, b)
    assert code == 0 and row(doc)["trusted"] is True and row(doc)["unit"] == "repository"
    code, doc = run(tmp_path, a, b, "--unit", "instance", "--fail-if-worse", "line.coverage")
    assert code == 1
    for name in ("line.coverage", "tokens"):
        r = row(doc, name)
        assert (r["unit"], r["units"], r["trusted"]) == ("instance", 120, False)
        assert r["reason"].startswith("instance-level, as asked: it speaks for these "
                                      "repositories' tasks, not for others")
    out, err = capsys.readouterr()
    assert "line.coverage: new is worse than base" in err
    assert "instance-level, as asked" in out


def test_the_solve_rate_counts_runs_that_could_not_be_scored(tmp_path, capsys):
    """12 repositories of 10 instances; both arms solve the even ones, and B also the
    odd ones of its last 60, whose context it could not score (error records with their
    outcome). The solve rate takes every known outcome: 120 pairs, B +0.25 (it was 60
    pairs and no difference); coverage keeps to the 60 instances both scored."""
    a = [rec(f"r{i % 12}__p-{i}", 0.5, resolved=i % 2 == 0) for i in range(120)]
    b = [rec(f"r{i % 12}__p-{i}", 0.5, resolved=i % 2 == 0) for i in range(60)] + \
        [error(f"r{i % 12}__p-{i}", resolved=True) for i in range(60, 120)]
    code, doc = run(tmp_path, a, b, "--metrics", "resolved,line.coverage")
    r = row(doc, "resolved")
    assert (r["pairs"], r["mean_a"], r["mean_b"]) == (120, 0.5, 0.75)
    assert r["difference"] == 0.25
    assert row(doc)["pairs"] == 60
    c = doc["comparisons"][0]
    assert c["pairs"] == 60 and len(c["outcome_only"]) == 60 and len(c["lost_b"]) == 60
    assert "60 more paired on their outcome alone" in capsys.readouterr().out


def test_three_identical_differences_get_no_interval_and_no_small_p(tmp_path):
    a = [rec(f"r{i}__p-{i}", 0.5) for i in range(3)]
    b = [rec(f"r{i}__p-{i}", 0.51) for i in range(3)]
    r = row(run(tmp_path, a, b)[1])
    assert r["low"] is None and r["high"] is None
    assert r["p"] >= 0.25 and r["trusted"] is False


def test_five_repositories_with_positive_means_stay_above_the_flip_floor(tmp_path):
    rng = np.random.default_rng(3)
    a, b = [], []
    for j, n in enumerate((120, 60, 45, 40, 40)):
        for i in range(n):
            a.append(rec(f"o{j}__r-{i}", 0.5))
            b.append(rec(f"o{j}__r-{i}", 0.55 + 0.01 * j + rng.normal(0, 0.02)))
    r = row(run(tmp_path, a, b)[1])
    assert r["p"] >= 0.0625 and r["unit"] == "repository" and r["clusters"] == 5


def test_the_header_says_the_unit_it_used(tmp_path, capsys):
    a = [rec(f"django__django-{i}", 0.5) for i in range(12)]
    b = [rec(f"django__django-{i}", 0.5 + 0.01 * (i % 4)) for i in range(12)]
    run(tmp_path, a, b)
    out = capsys.readouterr().out
    assert "bootstrap resamples of repositories" not in out
    line = next(x for x in out.splitlines() if x.strip().startswith("line.coverage"))
    assert line.split()[-2] == "instance"


def test_ids_without_a_repository_are_named(tmp_path, capsys):
    a = [rec(f"task-{i}", 0.5) for i in range(12)]
    b = [rec(f"task-{i}", 0.5 + 0.01 * (i % 4)) for i in range(12)]
    r = row(run(tmp_path, a, b)[1])
    assert r["unit"] == "instance" and "no pair names its repository" in r["reason"]
    out = capsys.readouterr().out
    assert "12 name no repository and count as one each: task-0, task-1, task-10, task-11," \
           " task-2, ..." in out


def test_nan_on_the_first_line_is_still_a_records_file(tmp_path):
    """Python's json writes NaN; f53415f's reader took such a file for traces."""
    a = [rec(f"r{i % 12}__p-{i}", float("nan") if i == 0 else 0.5) for i in range(24)]
    b = [rec(f"r{i % 12}__p-{i}", 0.6) for i in range(24)]
    fa, fb = tmp_path / "a.jsonl", write(tmp_path / "b.jsonl", b)
    fa.write_text("".join(json.dumps(r) + "\n" for r in a))
    assert "NaN" in fa.read_text().splitlines()[0]
    out = tmp_path / "c.json"
    assert main(["compare", "--arm", f"base={fa}", "--arm", f"new={fb}", "--quiet",
                 "--metrics", "line.coverage", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["comparisons"][0]["metrics"][0]["pairs"] == 23


def test_one_nan_among_repeated_runs_keeps_the_pair(tmp_path):
    a = [rec(f"r{i % 12}__p-{i}", 0.5) for i in range(24)]
    b = [rec(f"r{i % 12}__p-{i}", 0.6) for i in range(24)] + [rec("r0__p-0", float("nan"))]
    fa, fb = write(tmp_path / "a.jsonl", a), tmp_path / "b.jsonl"
    fb.write_text("".join(json.dumps(r) + "\n" for r in b))
    out = tmp_path / "c.json"
    assert main(["compare", "--arm", f"base={fa}", "--arm", f"new={fb}", "--quiet",
                 "--metrics", "line.coverage", "--json", str(out)]) == 0
    m = json.loads(out.read_text())["comparisons"][0]["metrics"][0]
    assert m["pairs"] == 24 and abs(m["difference"] - 0.1) < 1e-9


def test_resamples_1_with_a_metric_in_2_of_10_repositories(tmp_path):
    """f53415f raised IndexError when its one resample of the 10 repositories drew
    neither of the two with tokens (seed 2 does)."""
    a = [rec(f"r{i % 10}__p-{i}", 0.5, tokens=1000 + i if i % 10 < 2 else None)
         for i in range(40)]
    b = [rec(f"r{i % 10}__p-{i}", 0.6, tokens=900 + i if i % 10 < 2 else None)
         for i in range(40)]
    code, doc = run(tmp_path, a, b, "--resamples", "1", "--seed", "2")
    assert code == 0
    tokens = row(doc, "tokens")
    assert (tokens["pairs"], tokens["clusters"], tokens["unit"]) == (8, 2, "instance")


def test_missing_worst_scores_the_lost_instances_as_the_worst(tmp_path, capsys):
    a = [rec(f"r{i % 12}__p-{i}", 0.5 + 0.01 * (i % 5)) for i in range(60)]
    b = [rec(f"r{i % 12}__p-{i}", 0.52 + 0.01 * (i % 5) if i else 0.0) for i in range(48)] + \
        [error(f"r{i % 12}__p-{i}") for i in range(48, 60)]
    dropped = row(run(tmp_path, a, b)[1])
    code, doc = run(tmp_path, a, b, "--missing", "worst")
    worst = row(doc)
    assert (dropped["pairs"], worst["pairs"]) == (48, 60)
    assert dropped["difference"] > 0 > worst["difference"]
    assert doc["comparisons"][0]["imputed_b"] == 12
    assert "--missing worst: 12 of B's and 0 of A's scored as the worst value" in \
        capsys.readouterr().out


def test_compare_by_experiment_from_records_and_outputs(tmp_path):
    records = [rec(f"r{i % 3}__p-{i}", 0.4 + 0.1 * (k == "b") + 0.01 * (i % 4), experiment=k)
               for k in ("a", "b") for i in range(10)]
    f = write(tmp_path / "all.jsonl", records)
    out = tmp_path / "o"
    code = main(["compare", str(f), "--by", "experiment", "--quiet", "--metrics", "line.*",
                 "--json", f"{out}.json", "--markdown", f"{out}.md", "--html", f"{out}.html"])
    assert code == 0
    doc = json.loads(Path(f"{out}.json").read_text())
    assert doc["baseline"] == "a" and doc["comparisons"][0]["pairs"] == 10
    assert Path(f"{out}.md").read_text().startswith("# streameval compare: baseline a")
    assert Path(f"{out}.html").read_text().startswith("<!DOCTYPE html>")


def test_compare_replays_traces_on_the_fly(tmp_path, capsys):
    code = main(["compare", "--arm", f"late={EX / 'backtest' / 'late-find-1'}",
                 "--arm", f"example={EX / 'runs'}", "--gold", str(EX / "gold.jsonl"),
                 "--repo", str(EX / "repo"), "--metrics", "line.*"])
    assert code == 0
    out = capsys.readouterr().out
    assert "B = example  vs  A = late (baseline)" in out
    assert "fewer than 10 pairs (1)" in out
    # one pair: a mean, and no interval or p-value
    line = next(x for x in out.splitlines() if x.strip().startswith("line.coverage"))
    assert line.split()[1:5] == ["1.000", "1.000", "0.000", "-"]


def test_usage_errors(tmp_path, capsys):
    f = write(tmp_path / "x.jsonl", [rec("i__j-1", 1.0)])
    assert main(["compare", str(f)]) == 2
    assert main(["compare", str(f), "--by", "agent"]) == 2     # one arm only
    assert main(["compare", "--arm", f"a={f}", "--arm", f"b={f}", "--metrics", "nope"]) == 2
    assert main(["compare", "--arm", f"a={f}", "--arm", f"b={f}", "--missing-margin", "x"]) == 2
    assert main(["compare", "--arm", f"a={f}", "--arm", f"b={EX / 'runs'}"]) == 2  # no repo
    err = capsys.readouterr().err
    assert "give --repos DIR or --repo DIR" in err
