"""A run's experiment and labels: meta.json, then the path template, then --label."""

from __future__ import annotations

import json
import shutil

import orjson
import pytest
from fixture_paths import EXAMPLES

from streameval.commands.main import main
from streameval.model import RunIdentity
from streameval.traces.identity import identify
from streameval.traces.labels import LabelError, LabelRules, PathTemplate, parse_label

EX = EXAMPLES


def test_parse_label():
    assert parse_label("experiment=with-agents-md") == ("experiment", "with-agents-md")
    assert parse_label("prompt = B ") == ("prompt", "B")
    assert parse_label("k=") == ("k", "")
    for bad in ("novalue", "=x", "a b=c", "1k=v"):
        with pytest.raises(LabelError):
            parse_label(bad)


def test_template_matches_the_end_of_the_directory_then_of_the_path():
    t = PathTemplate("runs/{experiment}/{instance}")
    assert t.match("runs/baseline/django__django-1/trace.jsonl") == {
        "experiment": "baseline", "instance": "django__django-1"}
    assert t.match("/abs/where/runs/agents-md/i-2/trace.jsonl") == {
        "experiment": "agents-md", "instance": "i-2"}
    assert t.match("elsewhere/baseline/i-1/trace.jsonl") is None
    # a template naming the file: the directory alone does not match, the path does
    f = PathTemplate("{model}/{instance}.traj.json")
    assert f.match("out/gemini/django__django-1.traj.json") == {
        "model": "gemini", "instance": "django__django-1"}
    # literal text around a placeholder, and * for text not kept
    g = PathTemplate("{experiment}-seed*")
    assert g.match("x/ablation-seed3/trace.jsonl") == {"experiment": "ablation"}


def test_bad_templates_are_usage_errors():
    for bad in ("", "runs/x", "{a}/{a}", "{bad name}"):
        with pytest.raises(LabelError):
            PathTemplate(bad)


def test_later_sources_override_key_by_key(tmp_path):
    d = tmp_path / "runs" / "from-path" / "inst-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({
        "instance_id": "inst-1", "experiment": "from-meta",
        "labels": {"prompt": "A", "seed": 3, "bad key": "x", "nested": {"no": 1}}}))
    trace = d / "trace.jsonl"
    ident = identify(trace)
    assert (ident.experiment, ident.run_labels) == ("from-meta", {"prompt": "A", "seed": "3"})
    path_only = LabelRules.from_options(None, "runs/{experiment}/{case}")
    got = path_only.apply(ident, trace)
    assert got.experiment == "from-path"
    assert got.run_labels == {"case": "inst-1", "prompt": "A", "seed": "3"}
    both = LabelRules.from_options(["prompt=B", "experiment=cli"], "runs/{experiment}/{case}")
    got = both.apply(ident, trace)
    assert got.experiment == "cli" and got.run_labels["prompt"] == "B"
    # no rules: the identity as meta.json gave it
    assert LabelRules().apply(ident, trace) is ident


def test_no_labels_anywhere():
    ident = RunIdentity("i", "r")
    assert (ident.experiment, ident.run_labels) == (None, {})


def test_replay_records_carry_experiment_and_labels(tmp_path, capsys):
    runs = tmp_path / "runs" / "agents-md"
    shutil.copytree(EX / "runs" / "example-run-1", runs / "example-run-1")
    out = tmp_path / "out.jsonl"
    code = main(["replay", str(tmp_path / "runs"), "--gold", str(EX / "gold.jsonl"),
                 "--repo", str(EX / "repo"), "--out", str(out), "--quiet",
                 "--label-from-path", "runs/{experiment}/{run}", "--label", "model_family=claude"])
    assert code == 0
    [rec] = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert rec["experiment"] == "agents-md"
    assert rec["labels"] == {"model_family": "claude", "run": "example-run-1"}


def test_a_bad_label_is_a_usage_error(capsys):
    code = main(["replay", str(EX / "runs"), "--gold", str(EX / "gold.jsonl"),
                 "--repo", str(EX / "repo"), "--label", "no-equals-sign"])
    assert code == 2
    assert "--label wants key=value" in capsys.readouterr().err


def test_unified_predictions_get_labels_from_their_file_path(tmp_path):
    preds = tmp_path / "preds" / "prompt-b"
    preds.mkdir(parents=True)
    shutil.copy(EX / "predictions.jsonl", preds / "predictions.jsonl")
    out = tmp_path / "out.jsonl"
    assert main(["replay", str(preds / "predictions.jsonl"), "--gold", str(EX / "gold.jsonl"),
                 "--repo", str(EX / "repo"), "--out", str(out), "--quiet",
                 "--label-from-path", "preds/{experiment}"]) == 0
    [rec] = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert rec["experiment"] == "prompt-b" and rec["labels"] == {}
