"""Every layout ``--outcomes`` reads (docs/outcomes.md §1), written here with known
verdicts, read back by hand; and the files it refuses, each with what it says."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from streameval.model import RunIdentity
from streameval.sources.outcomes import Outcome, OutcomeError, load_outcomes, parse_resolved

#: the verdicts every layout below states
TRUTH = {"astropy__astropy-1": True, "django__django-2": False, "sympy__sympy-3": True}


def report(resolved: bool) -> dict:
    """The harness's report of one instance (swebench.harness.grading), trimmed."""
    return {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
            "resolved": resolved, "tests_status": {"FAIL_TO_PASS": {"success": [], "failure": []}}}


def verdicts(outcomes) -> dict[str, bool | None]:
    return {iid: o.resolved for iid, o in outcomes.by_instance.items()}


def test_the_harness_log_directory_nested(tmp_path):
    """``logs/run_evaluation/<run>/<model>/<instance>/report.json``, each keyed by its id."""
    for iid, ok in TRUTH.items():
        d = tmp_path / "logs" / "run_evaluation" / "run1" / "gemini" / iid
        d.mkdir(parents=True)
        (d / "report.json").write_text(json.dumps({iid: report(ok)}))
        (d / "run_instance.log").write_text("not a report")
    assert verdicts(load_outcomes(tmp_path / "logs")) == TRUTH


def test_the_harness_log_directory_flattened_and_unwrapped(tmp_path):
    """``<instance>/report.json`` holding the report itself (as gruckion/mini-swe-agent
    keeps them): the folder names the instance."""
    for iid, ok in TRUTH.items():
        (tmp_path / iid).mkdir()
        (tmp_path / iid / "report.json").write_text(json.dumps(report(ok)))
    outcomes = load_outcomes(tmp_path)
    assert verdicts(outcomes) == TRUTH and outcomes.source == tmp_path.name
    # one report given alone
    one = load_outcomes(tmp_path / "django__django-2" / "report.json")
    assert verdicts(one) == {"django__django-2": False}


def test_the_harness_run_summary(tmp_path):
    """``resolved_ids`` true; ``unresolved_ids``, ``error_ids``, ``empty_patch_ids`` false
    (the harness counts them as not resolved); ids in no list are not known."""
    f = tmp_path / "gemini.run1.json"
    f.write_text(json.dumps({"total_instances": 5, "resolved_ids": ["a__a-1", "b__b-2"],
                             "unresolved_ids": ["c__c-3"], "error_ids": ["d__d-4"],
                             "empty_patch_ids": ["e__e-5"], "incomplete_ids": ["f__f-6"],
                             "schema_version": 2}))
    assert verdicts(load_outcomes(f)) == {"a__a-1": True, "b__b-2": True, "c__c-3": False,
                                          "d__d-4": False, "e__e-5": False}


@pytest.mark.parametrize("shape", ["list", "under_a_key", "mapping", "jsonl"])
def test_json_rows(tmp_path, shape):
    rows = [{"instance_id": i, "resolved": ok} for i, ok in TRUTH.items()]
    f = tmp_path / ("o.jsonl" if shape == "jsonl" else "o.json")
    text = {"list": json.dumps(rows),
            "under_a_key": json.dumps({"total": 3, "passed": 2, "instances": rows}),
            "mapping": json.dumps(TRUTH),
            "jsonl": "".join(json.dumps(r) + "\n" for r in rows)}[shape]
    f.write_text(text)
    assert verdicts(load_outcomes(f)) == TRUTH


def test_csv_with_extra_columns_kept_as_labels(tmp_path):
    """As ``results_summary.csv``: ``True``/``False`` text; other columns are labels."""
    f = tmp_path / "results_summary.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["instance_id", "resolved", "patch_applied", "bad key!"])
        for iid, ok in TRUTH.items():
            w.writerow([iid, str(ok), "True", "x"])
        w.writerow(["pytest-dev__pytest-4", "", "False", "y"])   # not evaluated: unknown
    outcomes = load_outcomes(f)
    assert verdicts(outcomes) == {**TRUTH, "pytest-dev__pytest-4": None}
    assert outcomes.get("django__django-2") == Outcome(False, {"patch_applied": "True"})


def test_parquet_with_run_ids(tmp_path):
    """A row naming a run is that run's alone: two arms of one instance differ."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "o.parquet"
    pq.write_table(pa.table({"instance_id": ["x__x-1", "x__x-1", "y__y-2"],
                             "run_id": ["a/x", "b/x", None],
                             "resolved": [True, False, None],
                             "difficulty": ["easy", "easy", None]}), f)
    outcomes = load_outcomes(f)
    assert outcomes.get("x__x-1", "a/x") == Outcome(True, {"difficulty": "easy"})
    assert outcomes.get("x__x-1", "b/x").resolved is False
    assert outcomes.get("x__x-1", "c/x") is None        # no row for that run, none by instance
    assert outcomes.get("y__y-2") == Outcome(None, {})


@pytest.mark.parametrize("text, want", [
    ("true", True), ("False", False), ("1", True), ("0", False), (" yes ", True),
    ("no", False), ("RESOLVED", True), ("unresolved", False), ("", None), ("null", None),
    ("NaN", None), (True, True), (0, False), (None, None), (float("nan"), None)])
def test_a_verdict_as_files_write_it(text, want):
    assert parse_resolved(text, "here") is want


@pytest.mark.parametrize("value", ["maybe", 2, 0.5, [True]])
def test_a_verdict_that_is_none_is_refused(value):
    with pytest.raises(OutcomeError, match="here: resolved is"):
        parse_resolved(value, "here")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("make, needle", [
    (lambda d: d / "nothing", "no such file or directory"),
    (lambda d: (d / "logs").mkdir() or d / "logs", "no report.json under it"),
    (lambda d: _write(d / "o.json", json.dumps([{"id": "x", "resolved": True}])),
     "the row has no instance_id"),
    (lambda d: _write(d / "o.jsonl", '{"instance_id": "x", "patch": "diff"}\n'),
     "no row has a resolved column"),
    (lambda d: _write(d / "o.jsonl", '{"instance_id": "x", "resolved": "maybe"}\n'),
     r"o\.jsonl:1: resolved is 'maybe'"),
    (lambda d: _write(d / "o.jsonl", '{"instance_id": "x", "resolved": true}\n'
                                     '{"instance_id": "x", "resolved": false}\n'),
     "x has another row that says otherwise"),
    (lambda d: _write(d / "s.json", json.dumps({"resolved_ids": ["x"], "unresolved_ids": ["x"]})),
     "x is in unresolved_ids and in another list"),
    (lambda d: _write(d / "o.json", json.dumps({"version": 2})), "no outcome in it"),
    (lambda d: _write(d / "a" / "x__x-1" / "report.json", json.dumps(report(True)))
     and _write(d / "b" / "x__x-1" / "report.json", json.dumps(report(False))) and d,
     "x__x-1 is resolved=True in .* and resolved=False in .*; point --outcomes at one run"),
])
def test_a_file_that_cannot_be_used_says_why(tmp_path, make, needle):
    with pytest.raises(OutcomeError, match=needle):
        load_outcomes(make(tmp_path))


def test_applied_to_a_run_the_file_wins_and_fills_labels_the_run_lacks():
    outcomes = load_outcomes_from({"a__a-1": Outcome(True, {"team": "x", "arm": "file"}),
                                   "b__b-2": Outcome(None, {"experiment": "from-file"})})
    run = RunIdentity("a__a-1", "r1", run_labels={"arm": "meta"}, resolved=False)
    got = outcomes.apply(run)
    assert got.resolved is True and got.run_labels == {"arm": "meta", "team": "x"}
    # the file says nothing of b's verdict: meta.json's stays; its experiment fills in
    got = outcomes.apply(RunIdentity("b__b-2", "r2", resolved=True))
    assert got.resolved is True and got.experiment == "from-file"
    assert outcomes.apply(RunIdentity("c__c-3", "r3")) == RunIdentity("c__c-3", "r3")


def test_joined_to_records_and_counted():
    outcomes = load_outcomes_from({"a__a-1": Outcome(True), "b__b-2": Outcome(False),
                                   "z__z-9": Outcome(True)})
    records = [{"instance_id": "a__a-1", "run_id": "1", "labels": {}},
               {"instance_id": "b__b-2", "run_id": "2", "error": "bad_gold: x"},
               {"instance_id": "c__c-3", "run_id": "3", "resolved": True}]
    assert [outcomes.join(r) for r in records] == [True, True, False]
    assert [r["resolved"] for r in records] == [True, False, True]   # c keeps its own
    match = outcomes.match(records)
    assert (match.matched, match.runs, match.rows, match.unused) == (2, 3, 3, 1)
    assert match.message("o.csv") == ("--outcomes o.csv: 2 of 3 run(s) have an outcome (1 have "
                                      "none: their resolved is null); 1 of its 3 row(s) name no run")


def load_outcomes_from(table: dict[str, Outcome]):
    from streameval.sources.outcomes import Outcomes

    return Outcomes("t", table)
