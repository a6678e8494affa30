"""``streameval outcomes``: every figure by hand, on records the test writes (the
analysis, ``report.outcomes``) and on runs it makes and replays (the command)."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser

import pytest
from outcome_fleet import files, write_fleet

from streameval.commands.main import main
from streameval.report.outcomes import analyse, default_steps, direction
from streameval.scoring.signals import GOLD_SIGNALS, SIGNALS


def record(run_id: str, repo: str, resolved, steps: int, at: dict[int, dict],
           end: dict, gold: dict | None = None) -> dict:
    """A record as replay writes it, with only what the analysis reads: ``at`` the
    values kept at each checkpoint, ``end`` the final ones (0 for signals not given);
    ``gold``: line coverage and the first gold file step, at the end and at each step."""
    final = {name: 0 for name in SIGNALS} | {"steps": steps} | end
    block: dict = dict(final)
    ks = sorted(at)
    block["at_step"] = {"step": ks} | {
        name: [at[k].get(name, 0) for k in ks] for name in SIGNALS if name != "steps"}
    rec = {"run_id": run_id, "instance_id": f"{repo}__{repo}-{run_id}", "repo": f"{repo}/{repo}",
           "resolved": resolved, "num_steps": steps, "signals": block}
    if gold is not None:
        block["at_step"].update({name: [at[k].get(name) for k in ks] for name in GOLD_SIGNALS})
        rec["final"] = {g: {"coverage": gold["line.coverage"] if g == "line" else 0.5,
                            "precision": 0.5, "f1": 0.5} for g in ("file", "symbol", "span", "line")}
        rec["trajectory"] = {"auc_coverage": dict.fromkeys(("file", "symbol", "span", "line"), 0.5)}
        rec["first_gold_file_step"] = gold.get("first_gold_file_step")
    return rec


#: r1-r5 of three repositories; r6 has no outcome; r7 is an error record
RECORDS = [
    record("r1", "alpha", True, 12, {5: {"tokens": 100}, 10: {"tokens": 200}}, {"tokens": 300},
           gold={"line.coverage": 0.9, "first_gold_file_step": 3}),
    record("r2", "alpha", False, 12, {5: {"tokens": 400}, 10: {"tokens": 500}}, {"tokens": 900},
           gold={"line.coverage": 0.2, "first_gold_file_step": None}),
    record("r3", "beta", True, 7, {5: {"tokens": 350}}, {"tokens": 250}),
    record("r4", "beta", False, 4, {}, {"tokens": 50}),
    record("r5", "gamma", False, 10, {5: {"tokens": 300}, 10: {"tokens": 350}}, {"tokens": 600}),
    record("r6", "gamma", None, 10, {5: {"tokens": 1}}, {"tokens": 1}),
    {"run_id": "r7", "instance_id": "gamma__gamma-7", "resolved": True, "error": "x: y"},
]
# the gold signals at checkpoints of r1 and r2
RECORDS[0]["signals"]["at_step"].update({"line.coverage": [0.5, 0.9], "first_gold_file_step": [3, 3]})
RECORDS[1]["signals"]["at_step"].update({"line.coverage": [0.1, 0.2],
                                         "first_gold_file_step": [None, None]})


@pytest.fixture(scope="module")
def report():
    return analyse(RECORDS, steps=[5, 10], bins=2)


def cell(report, signal: str, step):
    return next(c for c in report.cells[signal] if c.step == step)


def test_the_runs_studied(report):
    assert (report.records, report.runs, report.no_outcome, report.no_signals) == (7, 5, 1, 1)
    assert report.repositories == 3
    # step 5: r1, r2, r3, r5 (r4 ended at step 4); step 10: r1, r2, r5
    assert [(r.step, r.runs, r.failed) for r in report.rows] == [(5, 4, 2), (10, 3, 2),
                                                                 (None, 5, 3)]
    assert report.solve_rate.estimate == pytest.approx(2 / 5)


def test_auroc_at_step_k_uses_only_the_runs_that_reached_it(report):
    """Step 5: failed 400, 300 against resolved 100, 350: 400 beats both, 300 beats 100
    only: 3/4. Step 10: failed 500, 350 against 200: 1. End: failed 900, 50, 600
    against 300, 250: 900 and 600 beat both, 50 neither: 4/6."""
    assert cell(report, "tokens", 5).auroc.estimate == pytest.approx(3 / 4)
    assert cell(report, "tokens", 10).auroc.estimate == pytest.approx(1.0)
    assert cell(report, "tokens", None).auroc.estimate == pytest.approx(4 / 6)
    assert (cell(report, "tokens", 5).runs, cell(report, "tokens", 5).failed) == (4, 2)
    # every run's steps at step k is k: no figure there, only at the end
    assert [c.step for c in report.cells["steps"]] == [None]


def test_gold_signals_are_read_in_their_direction_over_runs_with_gold(report):
    """r2 (failed) covered 0.2 of the gold lines, r1 (resolved) 0.9: lower coverage
    foretells failure, so the AUROC is 1. r2 had read no gold file by step 5 ("not
    yet": above every step), r1 at step 3: 1 too."""
    assert direction("line.coverage") == -1 and direction("first_gold_file_step") == 1
    c = cell(report, "line.coverage", None)
    assert (c.runs, c.failed, c.auroc.estimate) == (2, 1, 1.0)
    assert cell(report, "line.coverage", 5).auroc.estimate == 1.0
    first = cell(report, "first_gold_file_step", 5)
    assert (first.runs, first.auroc.estimate) == (2, 1.0)
    assert [b.high_value for b in first.bins] == [3, math.inf]
    assert any("gold signals are over the 2 run(s)" in w for w in report.warnings)


def test_bins_of_the_end(report):
    """Tokens at the end, two bins: 50, 250, 300 | 600, 900 (edge: the 3rd of 5 values)."""
    bins = cell(report, "tokens", None).bins
    assert [(b.low_value, b.high_value, b.rate.runs, b.resolved) for b in bins] == [
        (50, 300, 3, 2), (600, 900, 2, 0)]
    assert bins[0].rate.estimate == pytest.approx(2 / 3)


def test_every_figure_says_the_data_are_too_few(report):
    iv = cell(report, "tokens", None).auroc
    assert "fewer than 10 failed runs (3)" in iv.reasons
    assert any("fewer than 10 of either" in w for w in report.warnings)


def test_every_run_resolved_is_no_instance_level_warning():
    """Twelve repositories, every run resolved: the solve rate's interval is the exact
    binomial one (no spread to cluster), not an instance-level one for want of
    repositories; the report said "12 repositories: every interval is instance-level"."""
    records = [record(f"x{i}", f"r{i % 12}", True, 6, {5: {"tokens": i}}, {"tokens": i})
               for i in range(36)]
    report = analyse(records, steps=[5])
    assert report.repositories == 12
    assert not any("instance-level" in w for w in report.warnings)
    two = analyse([record(f"y{i}", f"r{i % 2}", i % 3 == 0, 6, {5: {"tokens": i}},
                          {"tokens": i}) for i in range(30)], steps=[5])
    assert any(w.startswith("2 repositories: every interval is instance-level")
               for w in two.warnings)


def test_a_nan_signal_is_no_value():
    """A records file written by Python's json can hold NaN (compare reads such files:
    issue 29). A NaN signal was counted among the runs, sorted anywhere among the ranks
    (moving the AUROC from 0.558 to 0.542 here) and fell in no bin."""
    def fleet(nan: bool) -> list[dict]:
        return [record(f"x{i}", f"r{i % 12}", i % 3 == 0, 6, {5: {"tokens": i}},
                       {"tokens": float("nan") if nan and i == 4 else i * 10})
                for i in range(36) if nan or i != 4]
    with_nan = cell(analyse(fleet(True), steps=[5]), "tokens", None)
    without = cell(analyse(fleet(False), steps=[5]), "tokens", None)
    assert with_nan.runs == without.runs == 35
    assert with_nan.auroc.estimate == pytest.approx(without.auroc.estimate)
    assert sum(b.rate.runs for b in with_nan.bins) == 35


def test_default_steps_double_while_ten_runs_reach_them():
    assert default_steps([12] * 10 + [25] * 10 + [45] * 9) == [5, 10, 20]
    assert default_steps([3, 4]) == [5]


def test_a_step_that_is_no_checkpoint_is_refused():
    with pytest.raises(ValueError, match="25.*not checkpoints"):
        analyse(RECORDS, steps=[5, 25])


# --------------------------------------------------------------------------- the command

FLEET = {
    # resolved: a new file every step; failed: the same file again and again
    **{f"a{i}": (f"alpha__alpha-{i}", True, files(*[f"f{j}" for j in range(6 + i)]))
       for i in range(3)},
    **{f"b{i}": (f"beta__beta-{i}", False, files("f1", ("f2", 8 + i))) for i in range(3)},
    "c0": ("gamma__gamma-0", True, files(*[f"f{j}" for j in range(12)])),
    "c1": ("gamma__gamma-1", False, files(("f1", 12))),
}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots: list[str] = []
        self.aurocs: dict[tuple[str, str], float] = {}
        self._signal = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "div" and "data-signal" in a:
            self._signal = a["data-signal"]
        if tag == "svg":
            self.plots.append(a.get("data-plot"))
        if tag == "g" and "data-auroc" in a:
            self.aurocs[(self._signal, a["data-step"])] = float(a["data-auroc"])


def test_the_command_on_runs_it_replays(tmp_path, capsys):
    """steps_since_new_file at step 5: 0 for every resolved run (a new file each step),
    3 for every failed one (last new file at step 2; c1's at step 1, so 4): AUROC 1."""
    runs = write_fleet(tmp_path, FLEET)
    records = tmp_path / "records.jsonl"
    assert main(["replay", str(runs), "--out", str(records)]) == 0
    out_json, out_html = tmp_path / "o.json", tmp_path / "o.html"
    assert main(["outcomes", str(records), "--outcomes", str(tmp_path / "outcomes.csv"),
                 "--steps", "5,10", "--json", str(out_json), "--html", str(out_html)]) == 0
    text = capsys.readouterr().out
    assert "8 with an outcome and signals" in text and "solve rate 0.500" in text
    data = json.loads(out_json.read_text())
    by = {(c["signal"], c["step"]): c for cells in data["signals"].values() for c in cells}
    stale = by[("steps_since_new_file", 5)]
    assert (stale["runs"], stale["failed"], stale["auroc"]["estimate"]) == (8, 4, 1.0)
    assert by[("files_read", None)]["auroc"]["estimate"] == 0.0   # failed runs read 1-2 files
    page = _Page()
    page.feed(out_html.read_text())
    assert page.plots.count("auroc") == len(SIGNALS) + len(GOLD_SIGNALS)
    assert page.aurocs[("steps_since_new_file", "5")] == 1.0
    assert "bins" in page.plots


def test_the_command_needs_outcomes(tmp_path, capsys):
    runs = write_fleet(tmp_path, {"a0": ("alpha__alpha-0", None, files("f1"))})
    records = tmp_path / "records.jsonl"
    assert main(["replay", str(runs), "--out", str(records)]) == 0
    assert main(["outcomes", str(records)]) == 2
    assert "none of the 1 run(s) has an outcome" in capsys.readouterr().err
    capsys.readouterr()
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("instance_id,resolved\nalpha__alpha-0,true\n")
    assert main(["outcomes", str(records), "--outcomes", str(outcomes), "--steps", "25"]) == 2
    assert "[25] are not checkpoints" in capsys.readouterr().err
    other = tmp_path / "other.csv"
    other.write_text("instance_id,resolved\nnobody__nothing-1,true\n")
    assert main(["outcomes", str(records), "--outcomes", str(other)]) == 2
    assert "names none of the 1 run(s)" in capsys.readouterr().err
