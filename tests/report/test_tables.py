"""Aggregates over records: macro vs micro with numbers worked out by hand."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from streameval.report.columns import write_parquet
from streameval.report.fields import METRICS
from streameval.report.tables import (
    BENCHKIT_COLUMNS,
    COLUMNS,
    aggregate,
    benchkit_row,
    format_table,
    write_benchkit_csv,
)


def _g(inter: int, gold: int, pred: int) -> dict:
    return {"coverage": inter / gold if gold else 1.0, "precision": inter / pred if pred else 1.0,
            "intersection": inter, "gold_size": gold, "pred_size": pred}


def _record(iid: str, file: tuple, line: tuple, auc: float, red: float,
            editloc: tuple | None = None) -> dict:
    rec = {"instance_id": iid, "num_steps": 2,
           "final": {"file": _g(*file), "symbol": _g(0, 0, 0), "span": _g(*line),
                     "line": _g(*line)},
           "trajectory": {"steps": [],
                          "auc_coverage": {g: auc for g in ("file", "symbol", "span", "line")},
                          "redundancy": {g: red for g in ("file", "symbol", "span", "line")}}}
    if editloc is not None:
        hits, deleted = editloc
        rec["editloc"] = {"recall": hits / deleted if deleted else 0.0,
                          "precision": hits / deleted if deleted else 0.0,
                          "intersection": hits, "gold_size": 10, "pred_size": deleted}
    return rec


# a: file 1/1 gold, 1/4 pred; lines 1/2 gold, 1/1 pred; EditLoc 1 hit of 1 deleted
# b: file 3/9 gold, 3/3 pred; lines 9/10 gold, 9/30 pred; EditLoc 0 hits of 3 deleted
# c: no patch (no EditLoc); file 0/2 gold, 0/0 pred (precision 1.0 by convention)
RECORDS = [
    _record("a", (1, 1, 4), (1, 2, 1), auc=0.2, red=0.5, editloc=(1, 1)),
    _record("b", (3, 9, 3), (9, 10, 30), auc=0.8, red=0.1, editloc=(0, 3)),
    _record("c", (0, 2, 0), (0, 0, 0), auc=0.5, red=0.0),
    {"instance_id": "d", "error": "missing_gold: no gold row for 'd'"},
    {"instance_id": None, "error": "malformed_json: p.jsonl:4: not valid JSON"},
    {"instance_id": "e", "error": "no_context_extracted"},
]


def test_counts_and_error_reasons():
    agg = aggregate(RECORDS)
    assert (agg["instances"], agg["evaluated"], agg["errors"]) == (6, 3, 3)
    assert agg["errors_by_reason"] == {"malformed_json": 1, "missing_gold": 1,
                                       "no_context_extracted": 1}


def test_final_macro_is_the_mean_of_instances_micro_sums_first():
    f = aggregate(RECORDS)["final"]["file"]
    # macro coverage: (1 + 1/3 + 0) / 3; micro: (1 + 3 + 0) / (1 + 9 + 2)
    assert f["macro"]["coverage"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert f["micro"]["coverage"] == pytest.approx(4 / 12)
    # macro precision: (1/4 + 1 + 1.0) / 3; micro: 4 / (4 + 3 + 0)
    assert f["macro"]["precision"] == pytest.approx((0.25 + 1 + 1) / 3)
    assert f["micro"]["precision"] == pytest.approx(4 / 7)
    line = aggregate(RECORDS)["final"]["line"]
    assert line["macro"]["coverage"] == pytest.approx((0.5 + 0.9 + 1.0) / 3)
    assert line["micro"]["coverage"] == pytest.approx(10 / 12)
    assert line["micro"]["precision"] == pytest.approx(10 / 31)
    # empty G and P everywhere: the 1.0 conventions hold for sums too
    assert aggregate(RECORDS)["final"]["symbol"]["micro"] == {"coverage": 1.0, "precision": 1.0,
                                                              "f1": 1.0}


def test_f1_macro_is_the_mean_of_the_runs_f1_micro_is_the_f1_of_the_sums():
    f = aggregate(RECORDS)["final"]["file"]
    # per run: a 2·1·(1/4)/(1 + 1/4) = 0.4; b 2·(1/3)·1/(4/3) = 0.5; c coverage 0: 0
    assert f["macro"]["f1"] == pytest.approx((0.4 + 0.5 + 0.0) / 3)
    # micro: coverage 4/12, precision 4/7 -> 2·(1/3)(4/7) / (1/3 + 4/7) = 8/19
    assert f["micro"]["f1"] == pytest.approx(8 / 19)


def test_f1_of_a_run_that_found_and_read_nothing_is_0():
    rec = _record("z", (0, 3, 5), (0, 4, 9), auc=0.0, red=0.0)
    assert aggregate([rec])["final"]["file"]["macro"]["f1"] == 0.0


def test_trajectory_is_macro():
    agg = aggregate(RECORDS)
    assert agg["auc_coverage"]["span"] == pytest.approx(0.5)
    assert agg["redundancy"]["file"] == pytest.approx(0.2)


def test_editloc_only_over_instances_with_a_patch():
    e = aggregate(RECORDS)["editloc"]
    assert e["instances"] == 2
    assert e["macro"]["recall"] == pytest.approx(0.5)        # (1 + 0) / 2
    assert e["micro"]["recall"] == pytest.approx(1 / 4)      # hits / deleted lines, summed
    assert e["micro"]["precision"] == e["micro"]["recall"]   # not hits / gold size (1/20)


def test_nothing_evaluated_gives_no_numbers():
    agg = aggregate([{"instance_id": "x", "error": "missing_repo: no clone"}])
    assert agg["final"]["file"]["macro"]["coverage"] is None
    assert agg["final"]["file"]["micro"]["coverage"] is None
    assert agg["editloc"]["micro"]["recall"] is None
    table = format_table(agg)
    assert "missing_repo 1" in table and "-" in table


def test_table_labels_macro_and_micro():
    table = format_table(aggregate(RECORDS))
    assert "instances: 6  evaluated: 3  errors: 3" in table
    lines = table.splitlines()
    file_row = next(line for line in lines if line.startswith("file "))
    # macro coverage, micro coverage, macro precision, micro precision, macro F1, micro F1,
    # then the runs averaged and (in brackets) those flagged; c predicted no file: its
    # precision 1.0 is averaged in, so the macro precision is marked
    assert file_row.split()[1:] == ["0.444", "0.333", "0.750*", "0.571", "0.300", "0.421",
                                    "3", "(0)"]
    assert any(line.startswith("macro") for line in lines)
    assert any(line.startswith("micro") for line in lines)
    assert "EditLoc over 2 instance(s)" in table


def test_benchkit_csv(tmp_path: Path):
    path = tmp_path / "out.csv"
    write_benchkit_csv(RECORDS, path)
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    # Benchkit's columns first, in its order; then the identity and every other number
    assert tuple(rows[0]) == COLUMNS and COLUMNS[:len(BENCHKIT_COLUMNS)] == BENCHKIT_COLUMNS
    assert [r["instance_id"] for r in rows] == ["a", "b", "c", "d", "", "e"]
    assert float(rows[0]["contextbench_final_file_precision"]) == 0.25
    assert float(rows[1]["contextbench_final_line_coverage"]) == 0.9
    assert float(rows[1]["contextbench_traj_auc_symbol"]) == 0.8
    assert rows[2]["contextbench_editloc_recall"] == ""
    assert rows[3]["error"] == "missing_gold: no gold row for 'd'"
    assert all(rows[3][c] == "" for c in BENCHKIT_COLUMNS if c.startswith("contextbench_"))


def _traced(rec: dict, **extra) -> dict:
    return {**rec, "run_id": rec["instance_id"] + "-r", "agent": "mini-swe-agent",
            "model": "gemini", "tool_calls": 7, "first_gold_file_step": 3,
            "tokens": {"input": 10, "output": 5, "cache_read": 0, "cache_creation": 0},
            "cost_usd": 0.25, "experiment": "agents-md", "labels": {"prompt": "B"},
            "gold_source": {"kind": "patch", "file": "p.jsonl", "context": 0}, **extra}


def test_csv_has_who_the_run_is_and_every_number(tmp_path: Path):
    path = tmp_path / "out.csv"
    write_benchkit_csv([_traced(RECORDS[0]), RECORDS[3]], path)
    with open(path, newline="") as fh:
        a, d = list(csv.DictReader(fh))
    assert (a["agent"], a["model"], a["experiment"]) == ("mini-swe-agent", "gemini", "agents-md")
    assert a["labels"] == '{"prompt":"B"}'
    assert a["gold_source"] == '{"context":0,"file":"p.jsonl","kind":"patch"}'
    assert (a["steps"], a["tool_calls"], a["tokens"], a["cost_usd"]) == ("2", "7", "15", "0.25")
    assert a["contextbench_final_file_f1"] == repr(2 * 1 * 0.25 / 1.25)
    assert a["first_gold_file_step"] == "3"
    assert a["file_mrr"] == ""          # a record without localisation: empty, never 0
    assert d["error"].startswith("missing_gold") and all(d[m.column] == "" for m in METRICS)


def test_parquet_columns_are_typed(tmp_path: Path):
    import pyarrow.parquet as pq

    path = tmp_path / "out.parquet"
    write_parquet([_traced(RECORDS[0]), RECORDS[3]], path)
    table = pq.read_table(path)
    assert tuple(table.column_names) == COLUMNS
    assert str(table.schema.field("tokens").type) == "int64"
    assert str(table.schema.field("contextbench_final_line_f1").type) == "double"
    assert str(table.schema.field("labels").type) == "string"
    rows = table.to_pylist()
    assert rows[0]["tokens"] == 15 and rows[0]["cost_usd"] == 0.25
    assert rows[0]["experiment"] == "agents-md" and rows[1]["tokens"] is None


def test_each_row_names_its_runs_the_flagged_ones_and_marks_empty_predictions():
    """docs/replay.md, "The summary table": what a row averaged is on the row."""
    flagged = dict(RECORDS[2], problems={"nothing_read": 1, "unparsed_command": 4})
    outside = dict(RECORDS[0], problems={"mostly_outside_repo": 1, "path_outside_repo": 9})
    records = [outside, RECORDS[1], flagged, *RECORDS[3:]]
    agg = aggregate(records)
    assert (agg["flagged"], agg["flags_by_reason"]) == (2, {"mostly_outside_repo": 1,
                                                            "nothing_read": 1})
    f = agg["final"]["file"]
    assert (f["runs"], f["flagged"], f["nothing_predicted"]) == (3, 2, 1)
    # symbols: no run predicted any, so micro precision (Σ 0 / Σ 0) is the convention too
    assert agg["final"]["symbol"]["nothing_predicted"] == 3
    assert agg["editloc"]["flagged"] == 1 and agg["trajectory_runs"] == {"runs": 3, "flagged": 2}
    table = format_table(agg)
    assert "flagged runs: 2 of 3 (mostly_outside_repo 1, nothing_read 1)" in table
    final = table.split("trajectory")[0].splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in final
            if line.split() and line.split()[0] in ("file", "symbol", "span")}
    assert rows["symbol"][2:4] == ["1.000*", "1.000*"] and rows["file"][3] == "0.571"
    assert rows["file"][-2:] == ["3", "(2)"]
    assert table.count("* includes runs that predicted nothing there") == 1
    assert "EditLoc over 2 instance(s) with a patch (1 flagged)" in table


def test_no_mark_and_no_footnote_when_every_run_predicted_something():
    records = [dict(r, final=dict(r["final"], symbol=_g(1, 2, 3))) for r in RECORDS[:2]]
    table = format_table(aggregate(records))
    assert "*" not in table and "flagged runs" not in table


def test_runs_without_gold_and_outcomes_are_counted_and_never_averaged_in():
    """docs/metrics.md §5b: a run measured against no gold is evaluated, in no gold row of
    the table; the solve rate is over the runs whose outcome is known."""
    free = {"instance_id": "f", "num_steps": 3, "gold_missing": "no_repo: no clone of x/y",
            "final": None, "trajectory": None, "problems": {"no_repo": 1}, "resolved": True,
            "signals": {"files_read": 2, "reread_share": None}}
    nogold = {**free, "instance_id": "g", "gold_missing": "no_gold: no gold row",
              "problems": {"no_gold": 1}, "resolved": False}
    solved = {**RECORDS[0], "resolved": True}
    agg = aggregate([solved, RECORDS[1], free, nogold, RECORDS[3]])
    assert (agg["evaluated"], agg["errors"], agg["without_gold"]) == (4, 1, 2)
    assert agg["without_gold_by_reason"] == {"no_gold": 1, "no_repo": 1}
    assert agg["final"]["file"]["runs"] == 2 and agg["flagged"] == 0
    assert agg["outcomes"] == {"known": 3, "resolved": 2, "solve_rate": 2 / 3}
    text = format_table(agg)
    assert ("measured against no gold: 2 of 4 (no_gold 1, no_repo 1): gold-free signals only, "
            "gold metrics null") in text
    assert "outcomes: 3 of 5 known, 2 resolved (solve rate 0.667)" in text
    row = benchkit_row(free)
    assert (row["resolved"], row["gold_missing"], row["files_read"]) == (
        "true", "no_repo: no clone of x/y", "2")
    assert row["reread_share"] == row["contextbench_final_line_coverage"] == ""
