"""``--outcomes`` on replay, view, compare and abort-backtest, and runs measured against no
gold (docs/metrics.md §5b, docs/outcomes.md §1): on runs this test writes over a real
repository, with known verdicts, every record worked out by hand, and the exit codes
that keep a wrong ``--gold`` or ``--outcomes`` loud."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, Claude, append, make_setup

from streameval.commands.main import main

#: run -> (instance, the run reads (path, first, last))
RUNS = {"measured": ("demo__demo-1", [("src/app.py", 1, 20)]),
        "no-repo": ("other__thing-1", [("src/app.py", 1, 20), ("src/util.py", 1, 5)]),
        "no-gold": ("nobody__x-1", [("src/util.py", 1, 30)])}


@pytest.fixture
def world(tmp_path):
    """The demo repository under ``repos/demo__demo``, a gold file with a second row whose
    repository (other/thing) has no clone, three runs and a CSV of two outcomes."""
    s = make_setup(tmp_path)
    repos = tmp_path / "repos"
    repos.mkdir()
    (repos / "demo__demo").symlink_to(s.repo)
    row = json.loads(s.gold.read_text())
    s.gold.write_text(s.gold.read_text() + json.dumps(
        {**row, "instance_id": "other__thing-1", "original_inst_id": "other__thing-1",
         "repo": "other/thing"}) + "\n")
    runs = tmp_path / "runs"
    for name, (instance, reads) in RUNS.items():
        write_run(runs, name, instance, reads)
    outcomes = tmp_path / "o.csv"
    outcomes.write_text("instance_id,resolved,team\ndemo__demo-1,true,a\nother__thing-1,false,b\n"
                        "gone__away-1,true,c\n")
    return {"runs": runs, "gold": s.gold, "repos": repos, "outcomes": outcomes,
            "tmp": tmp_path}


def write_run(runs: Path, name: str, instance: str, reads, **meta) -> Path:
    d = runs / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": name, **meta}))
    c = Claude()
    lines = [c.init()]
    for path, a, b in reads:
        lines += c.read(path, APP if path == "src/app.py" else UTIL, a, b - a + 1)
    append(d / "trace.jsonl", *lines, c.result())
    return d


def replay(w, *extra: str, inputs=None) -> tuple[int, dict[str, dict]]:
    out = w["tmp"] / "records.jsonl"
    code = main(["replay", str(inputs or w["runs"]), "--out", str(out), *extra])
    records = [orjson.loads(x) for x in out.read_bytes().splitlines()] if out.exists() else []
    return code, {r["run_id"]: r for r in records}


def test_runs_without_gold_are_runs_and_outcomes_are_joined(world, capsys):
    w = world
    code, recs = replay(w, "--gold", str(w["gold"]), "--repos", str(w["repos"]),
                        "--outcomes", str(w["outcomes"]), "--csv", str(w["tmp"] / "r.csv"),
                        "--parquet", str(w["tmp"] / "r.parquet"))
    err = capsys.readouterr()
    assert code == 0, err
    m, r, g = recs["measured"], recs["no-repo"], recs["no-gold"]
    # measured: app.py 1-20 holds init_ctx 4-9 (line coverage 1), util.py not read
    assert m["final"]["line"]["coverage"] == 1.0 and m["final"]["file"]["coverage"] == 0.5
    assert m["resolved"] is True and m["labels"] == {"team": "a"} and "gold_missing" not in m
    assert m["signals"]["reread_share"] == 0.0
    # no_repo: a gold row, no clone of other/thing under --repos: gold metrics null, and
    # the re-read share (base lines) too; the rest is scored
    assert r["gold_missing"].startswith("no_repo: no clone of other/thing for other__thing-1")
    assert r["final"] is r["trajectory"] is r["localisation"] is r["gold_source"] is None
    assert r["first_gold_file_step"] is None and "editloc" not in r
    assert r["repo"] == "other/thing" and r["problems"] == {"no_repo": 1}
    assert (r["num_steps"], r["signals"]["files_read"], r["signals"]["reread_share"]) == (2, 2, None)
    assert r["resolved"] is False and r["labels"] == {"team": "b"}
    # no_gold: nothing names its instance; its repository is its id's; no outcome either
    assert g["gold_missing"].startswith("no_gold: no gold row for instance 'nobody__x-1'")
    assert g["repo"] == "nobody/x" and g["resolved"] is None and g["labels"] == {}
    assert g["problems"] == {"no_gold": 1} and g["signals"]["tool_calls"] == 1
    assert "measured against no gold: 2 of 3 (no_gold 1, no_repo 1)" in err.err + err.out
    assert ("--outcomes o.csv: 2 of 3 run(s) have an outcome (1 have none: their resolved is "
            "null); 1 of its 3 row(s) name no run") in err.err
    assert "outcomes: 2 of 3 known, 1 resolved (solve rate 0.500)" in err.err + err.out
    # the CSV and parquet carry the outcome and why a run has no gold
    with open(w["tmp"] / "r.csv", newline="") as fh:
        rows = {row["run_id"]: row for row in csv.DictReader(fh)}
    assert [rows[k]["resolved"] for k in RUNS] == ["true", "false", ""]
    assert rows["no-gold"]["gold_missing"] == g["gold_missing"]
    assert rows["no-repo"]["contextbench_final_line_coverage"] == ""
    assert rows["no-repo"]["files_read"] == "2" and rows["no-repo"]["reread_share"] == ""
    import pyarrow.parquet as pq

    table = pq.read_table(w["tmp"] / "r.parquet")
    assert str(table.schema.field("resolved").type) == "bool"
    got = dict(zip(table.column("run_id").to_pylist(), table.column("resolved").to_pylist()))
    assert got == {"measured": True, "no-repo": False, "no-gold": None}


def test_gold_that_measures_no_run_is_loud(world, capsys):
    """--gold given, and every run no_gold or no_repo: a wrong gold file, wrong ids or a
    wrong --repos; the records are written and the command exits 1."""
    w = world
    only = w["tmp"] / "only"
    only.mkdir()
    for name in ("no-repo", "no-gold"):
        (w["runs"] / name).rename(only / name)
    code, recs = replay(w, "--gold", str(w["gold"]), "--repos", str(w["repos"]), inputs=only)
    err = capsys.readouterr().err
    assert code == 1 and len(recs) == 2 and not any("error" in r for r in recs.values())
    assert re.search(r"gold was given \(.*gold\.jsonl\) but no run was measured against it "
                     r"\(no_gold 1, no_repo 1\): check the instance ids", err)


def test_without_gold_every_run_is_scored_on_its_gold_free_signals(world, capsys):
    """A fleet with no gold: nothing is wrong, nothing needs a repository."""
    code, recs = replay(world)
    assert code == 0 and capsys.readouterr()
    assert {r["gold_missing"] for r in recs.values()} == {
        "no_gold: no --gold or --gold-from-patch given"}
    assert recs["no-repo"]["signals"]["files_read"] == 2


def test_gold_without_a_repository_is_a_usage_error(world, capsys):
    assert main(["replay", str(world["runs"]), "--gold", str(world["gold"])]) == 2
    assert "give --repos DIR and/or --repo DIR" in capsys.readouterr().err


def test_meta_json_states_an_outcome_and_the_file_wins(world, capsys):
    w = world
    for name, resolved in (("no-repo", True), ("no-gold", True)):
        meta = w["runs"] / name / "meta.json"
        meta.write_text(json.dumps({**json.loads(meta.read_text()), "resolved": resolved}))
    code, recs = replay(w, "--outcomes", str(w["outcomes"]))
    assert code == 0
    # the file says no-repo's instance failed; it says nothing of no-gold's: meta.json stands
    assert (recs["no-repo"]["resolved"], recs["no-gold"]["resolved"]) == (False, True)
    code, recs = replay(w)
    assert (recs["no-repo"]["resolved"], recs["measured"]["resolved"]) == (True, None)


def _none_match(w) -> Path:
    f = w["tmp"] / "other.csv"
    f.write_text("instance_id,resolved\nelse__where-1,true\n")
    return f


def test_outcomes_that_name_no_run_are_an_error_everywhere(world, capsys):
    w = world
    bad = _none_match(w)
    code, recs = replay(w, "--outcomes", str(bad))
    assert code == 1 and len(recs) == 3            # the records are written all the same
    assert "--outcomes other.csv names none of the 3 run(s)" in capsys.readouterr().err
    records = w["tmp"] / "records.jsonl"
    assert main(["view", str(records), "--outcomes", str(bad), "--html",
                 str(w["tmp"] / "p.html")]) == 2
    assert main(["compare", str(records), "--by", "label:team", "--outcomes", str(bad)]) == 2
    policies = w["tmp"] / "abort.toml"
    policies.write_text('[[policy]]\nname = "s"\nkind = "max_steps"\nlimit = 1\n')
    assert main(["abort-backtest", str(policies), str(w["runs"]), "--outcomes", str(bad)]) == 1
    assert main(["replay", str(w["runs"]), "--outcomes", str(w["tmp"] / "none.csv")]) == 2


def test_view_shows_the_outcome_of_each_run(world, capsys):
    w = world
    replay(w)   # records with no outcome; view joins them
    out = w["tmp"] / "page.html"
    assert main(["view", str(w["tmp"] / "records.jsonl"), "--outcomes", str(w["outcomes"]),
                 "--html", str(out)]) == 0
    data = orjson.loads(re.search(r'id="se-data">(.*?)</script>', out.read_text(), re.S).group(1))
    rows = {r["id"]: r for r in data["fleet"]["runs"]}
    assert {k: rows[k]["resolved"] for k in RUNS} == {"measured": True, "no-repo": False,
                                                      "no-gold": None}
    assert rows["no-gold"]["gold_missing"].startswith("no_gold") and rows["no-gold"]["error"] is None


def test_compare_joins_the_outcomes_before_it_splits(world, capsys):
    """The file's extra columns are labels: ``--by label:team`` splits on them."""
    w = world
    replay(w)
    capsys.readouterr()
    code = main(["compare", str(w["tmp"] / "records.jsonl"), "--by", "label:team",
                 "--outcomes", str(w["outcomes"]), "--metrics", "tool_calls",
                 "--json", str(w["tmp"] / "c.json")])
    err = capsys.readouterr().err
    assert code == 0, err
    # no-gold has no team: it is in no arm, so not among the runs counted
    assert "--outcomes o.csv: 2 of 2 run(s) have an outcome; 1 of its 3 row(s) name no run" in err
    report = json.loads((w["tmp"] / "c.json").read_text())
    assert "a" in json.dumps(report) and "b" in json.dumps(report)


def test_abort_backtest_carries_each_runs_outcome(world, capsys):
    w = world
    policies = w["tmp"] / "abort.toml"
    policies.write_text('[[policy]]\nname = "s"\nkind = "max_steps"\nlimit = 1\n')
    out = w["tmp"] / "b.json"
    assert main(["abort-backtest", str(policies), str(w["runs"]), "--gold", str(w["gold"]),
                 "--repos", str(w["repos"]), "--outcomes", str(w["outcomes"]),
                 "--json", str(out)]) == 0
    runs = {r["run_id"]: r for r in json.loads(out.read_text())["runs"]}
    assert {k: runs[k]["resolved"] for k in RUNS} == {"measured": True, "no-repo": False,
                                                      "no-gold": None}
    assert runs["no-gold"]["error"] is None and runs["no-gold"]["coverage"] is None
    out = capsys.readouterr().out
    assert "runs: 3  with an outcome: 2  resolved: 1 (solve rate 0.500)" in out
    assert "1 run(s) have no outcome" in out
