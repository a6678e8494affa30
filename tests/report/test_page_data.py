"""The page's data from real sessions of the bundled example: the journal's curve and
per-call coverage are the record's, rows flag ratios of an empty denominator, F1 and
experiment appear only when the record carries them, the HTML file's policy names its
one script."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import example as case
from hypothesis import given
from hypothesis import strategies as st

from streameval.model import GRANULARITIES
from streameval.report.journal import RunJournal
from streameval.report.page_data import LiveState, calls_page, fleet_row, record_curve, record_row
from streameval.report.page_html import self_contained, shell
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

EX = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def example():
    res = load_resources(str(EX / "gold.jsonl"), None, str(EX / "repo"))
    found = []

    def attach(session):
        journal = RunJournal()
        session.listeners.append(journal)
        found.append((session, journal))

    (record,) = evaluate_trace(EX / "runs/example-run-1/trace.jsonl", res, root=EX / "runs",
                               on_session=attach)
    return record, found[0][0], found[0][1]


def test_each_step_of_the_journal_is_the_records_step(example):
    record, session, journal = example
    steps = [row for row in journal.calls if row.step is not None]
    assert [row.step for row in steps] == list(range(1, record["num_steps"] + 1))
    assert journal.n == record["tool_calls"] == len(journal.calls)
    # the page's call rows carry the record's coverage after each step
    rows = calls_page(journal, record_curve(record), 0, 100)["rows"]
    for row in rows:
        if row["step"] is not None:
            want = record["trajectory"]["steps"][row["step"] - 1]["coverage"]
            assert row["coverage"] == [want[g] for g in GRANULARITIES]
        else:
            assert row["coverage"] is None


def test_a_journal_keeps_at_most_max_calls_rows(example):
    record = example[0]
    res = load_resources(str(EX / "gold.jsonl"), None, str(EX / "repo"))
    small = RunJournal(max_calls=3)
    evaluate_trace(EX / "runs/example-run-1/trace.jsonl", res,
                   on_session=lambda s: s.listeners.append(small))
    assert [row.n for row in small.calls] == [1, 2, 3]
    assert small.n == record["tool_calls"] and small.dropped == small.n - 3
    assert small.files["inventory/billing.py"].credited.total == 88   # the trails go on


def test_a_fleet_row_is_the_snapshot(example):
    record, session, _journal = example
    snap = session.snapshot()
    row = fleet_row(snap, LiveState(True, True, (("stuck", "file"),)))
    assert row["id"] == record["run_id"] and row["steps"] == record["num_steps"]
    for g in GRANULARITIES:
        assert row["final"][g]["coverage"] == record["final"][g]["coverage"]
        assert row["final"][g]["precision"] == record["final"][g]["precision"]
        assert row["final"][g]["pred_empty"] is False
    assert row["aborts"] == [["stuck", "file"]] and row["state"] == "finished"
    assert row["editloc"]["recall"] == record["editloc"]["recall"] and row["editloc"]["final"]
    assert row["last"].startswith("Bash git diff")


def test_precision_with_nothing_predicted_is_flagged_not_shown_as_a_result():
    rec = {"instance_id": "i", "run_id": "r", "num_steps": 0,
           "final": {g: {"coverage": 0.0, "precision": 1.0, "intersection": 0, "gold_size": 5,
                         "pred_size": 0} for g in GRANULARITIES},
           "trajectory": {"steps": [], "auc_coverage": dict.fromkeys(GRANULARITIES, 0.0)}}
    row = record_row(rec)
    assert all(row["final"][g]["pred_empty"] and not row["final"][g]["gold_empty"]
               for g in GRANULARITIES)


def test_f1_and_experiment_only_when_the_record_carries_them(example):
    record = {**example[0], "experiment": None,   # a record of a version without them
              "final": {g: {k: v for k, v in example[0]["final"][g].items() if k != "f1"}
                        for g in GRANULARITIES}}
    row = record_row(record)
    assert row["experiment"] is None and all(row["final"][g]["f1"] is None for g in GRANULARITIES)
    carried = {**record, "experiment": "with-agents-md",
               "final": {g: {**record["final"][g], "f1": 0.25} for g in GRANULARITIES}}
    row = record_row(carried)
    assert row["experiment"] == "with-agents-md" and row["final"]["line"]["f1"] == 0.25


def test_an_error_record_is_a_row_without_numbers():
    row = record_row({"instance_id": "x", "error": "missing_gold: no gold row"})
    assert row["id"] == "x" and row["error"].startswith("missing_gold") and row["final"] is None


def test_the_file_names_its_one_script_and_style_by_hash():
    html = self_contained({"fleet": {"gen": "a.1", "full": True, "runs": [], "removed": []},
                           "runs": [["</script><script>alert(1)</script>", {}]]})
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1   # the data block is a JSON block, never run
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "connect-src 'none'" in csp
    assert "unsafe" not in csp and "require-trusted-types-for 'script'" in csp
    data = re.search(r'<script type="application/json" id="se-data">(.*?)</script>', html, re.S)
    assert "</script" not in data.group(1).lower()
    assert orjson.loads(data.group(1))["runs"][0][0] == "</script><script>alert(1)</script>"


def test_the_shell_has_no_inline_code():
    html = shell().decode()
    assert "<script>" not in html and "<style" not in html
    assert not re.search(r"\son\w+=", html) and "style=" not in html


_words = st.text(alphabet=st.sampled_from("ab \t\n/…é"), max_size=500)


@given(st.dictionaries(st.sampled_from(["command", "pattern", "path", "file_path", "query"]),
                       st.one_of(_words, st.lists(_words, max_size=3)), max_size=3),
       st.text(max_size=20))
@case({"command": "a" * 119}, "Bash")
@case({"command": "a" * 120}, "Bash")
@case({"command": "a" * 121}, "Bash")
@case({"pattern": "a " * 300, "path": "src"}, "Grep")
def test_the_last_column_cut_from_the_rows_text_is_the_call_described_again(inp, tool):
    """The page's journal cuts the fleet's last column from the text its call row holds
    (wider) instead of describing the call twice: the same text."""
    from streameval.model import ToolCall
    from streameval.reading.describe import describe_call
    from streameval.report.journal import MAX_TEXT
    from streameval.report.page_data import LAST_TEXT, last_text

    assert MAX_TEXT >= LAST_TEXT
    call = ToolCall("c", tool, inp)
    assert last_text(call, describe_call(call, MAX_TEXT)) == last_text(call)
