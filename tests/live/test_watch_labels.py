"""``watch --label`` and ``--label-from-path``: a watched run's record carries its
experiment and labels, byte for byte as replay writes it."""

from __future__ import annotations

import json

import orjson
from claude_run import APP, Claude, append, make_setup, started

from streameval.commands.main import build_parser
from streameval.commands.options import resources
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources


def test_watch_options_reach_the_runs_resources(tmp_path):
    s = make_setup(tmp_path)
    args = build_parser().parse_args(["watch", str(tmp_path), "--gold", str(s.gold), "--repo",
                                      str(s.repo), "--label", "prompt=B",
                                      "--label-from-path", "{experiment}/{run}"])
    res = resources(args)
    assert res.labels.fixed == {"prompt": "B"}
    assert res.labels.path is not None and res.labels.path.names == ["experiment", "run"]


def test_a_watched_record_carries_its_labels_as_replay(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "agents-md" / "run-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r-1",
                                             "labels": {"seed": 7}}))
    res = load_resources(str(s.gold), None, str(s.repo), labels=("prompt=B",),
                         label_from_path="{experiment}/{run}")
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path, grace=0.0)
    append(trace, c.result())
    w.changed(trace)
    w.tick()
    [watched] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    rec = orjson.loads(watched)
    assert rec["experiment"] == "agents-md"
    assert rec["labels"] == {"prompt": "B", "run": "run-1", "seed": "7"}
    assert watched == orjson.dumps(evaluate_trace(trace, res, root=runs)[0])
