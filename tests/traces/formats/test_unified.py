"""ContextBench unified predictions: records, detection and adapter events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streameval.errors import Reason
from streameval.model import BadLine, RunEnd, RunInfo, StatedContext, Step
from streameval.traces.formats import detect_format
from streameval.traces.formats.unified import (
    UnifiedAdapter,
    UnifiedError,
    UnifiedRecord,
    iter_unified_records,
    parse_unified,
)

REC = {
    "instance_id": "django__django-12125",
    "traj_data": {
        "pred_steps": [
            {"files": ["/testbed/a.py"], "spans": {"/testbed/a.py": [{"start": 3, "end": 7}]}},
            {"files": [], "spans": {"b.py": [{"start": 9, "end": 2}, [1, 4], {"start": "x"}]},
             "symbols": {"b.py": ["B.run", 7]}},
        ],
        "pred_files": ["a.py", "b.py"],
        "pred_spans": {"a.py": [{"start": 1, "end": 10}]},
        "pred_symbols": {"b.py": ["helper"]},
    },
    "model_patch": "--- a/a.py\n+++ b/a.py\n",
}


def _records(data: bytes) -> list:
    return list(parse_unified(data, "p.jsonl"))


def test_record_steps_final_and_patch_as_written():
    [rec] = _records(json.dumps(REC).encode())
    assert isinstance(rec, UnifiedRecord)
    assert rec.instance_id == "django__django-12125"
    assert rec.has_steps
    assert rec.steps[0] == Step(files=("/testbed/a.py",), spans={"/testbed/a.py": [(3, 7)]})
    # start > end is read as [end, start] (docs/metrics.md §4b); [a, b] pairs are accepted;
    # a range that is not two integers is dropped; so is a symbol name that is not a string
    assert rec.steps[1].spans == {"b.py": [(2, 9), (1, 4)]}
    assert rec.steps[1].symbols == {"b.py": ["B.run"]}
    assert rec.steps[1].files == ()
    assert rec.final == Step(files=("a.py", "b.py"), spans={"a.py": [(1, 10)]},
                             symbols={"b.py": ["helper"]})
    assert rec.patch == "--- a/a.py\n+++ b/a.py\n"


def test_without_pred_steps_and_without_a_final_context():
    [no_steps, no_final] = _records(
        b'{"instance_id": "a", "traj_data": {"pred_files": ["x.py"]}, "model_patch": "  "}\n'
        b'{"instance_id": "b", "pred_steps": [{"files": ["y.py"]}]}\n')
    assert not no_steps.has_steps and no_steps.steps == []
    assert no_steps.final == Step(files=("x.py",), spans={}, symbols=None)
    assert no_steps.patch is None  # a blank patch is no patch
    # keys at the top level (no traj_data) are accepted too; no pred_* keys: final is None
    assert no_final.has_steps and no_final.final is None
    assert no_final.steps == [Step(files=("y.py",))]
    # an empty list is no steps either (the public evaluator tests truthiness)
    [empty] = _records(b'{"instance_id": "e", "pred_steps": [], "pred_files": ["x.py"]}')
    assert not empty.has_steps


def test_adapter_without_pred_steps_states_the_final_context_as_the_one_step():
    adapter = UnifiedAdapter()
    adapter.feed(b'{"instance_id": "a", "pred_files": ["x.py"], "pred_spans": {}}', 1)
    events = adapter.close()
    assert [type(e) for e in events] == [RunInfo, StatedContext, StatedContext, RunEnd]
    assert [e.final for e in events[1:3]] == [False, True]
    assert events[1].step == events[2].step == Step(files=("x.py",), spans={}, symbols=None)


def test_jsonl_bad_lines_are_errors_and_the_file_goes_on():
    items = _records(b'{"instance_id": "a", "pred_files": []}\n'
                     b'{"instance_id": "b", "pred_fi\n'
                     b'\n'
                     b'[1, 2]\n'
                     b'{"traj_data": {"pred_files": ["x"]}}\n'
                     b'{"instance_id": "c", "pred_files": ["z"]}\n')
    kinds = [(type(i).__name__, getattr(i, "reason", None)) for i in items]
    assert kinds == [
        ("UnifiedRecord", None),
        ("UnifiedError", Reason.MALFORMED_JSON.value),
        ("UnifiedError", Reason.NOT_AN_OBJECT.value),
        ("UnifiedError", Reason.MISSING_FIELD.value),
        ("UnifiedRecord", None),
    ]
    assert items[1].position == "p.jsonl:2"
    assert "p.jsonl:2" in items[1].message
    assert items[3].position == "p.jsonl:5"


def test_json_list_and_pretty_printed_object(tmp_path: Path):
    listed = tmp_path / "preds.json"
    listed.write_text(json.dumps([REC, {**REC, "instance_id": "other-1"}], indent=2))
    ids = [r.instance_id for r in iter_unified_records(listed)]
    assert ids == ["django__django-12125", "other-1"]
    single = tmp_path / "one.json"
    single.write_text(json.dumps(REC, indent=2))
    [rec] = list(iter_unified_records(single))
    assert isinstance(rec, UnifiedRecord) and len(rec.steps) == 2


def test_broken_document_and_missing_file_are_one_error_each(tmp_path: Path):
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps([REC], indent=2)[:-5])
    [err] = list(iter_unified_records(broken))
    assert isinstance(err, UnifiedError) and err.reason == Reason.MALFORMED_JSON.value
    [missing] = list(iter_unified_records(tmp_path / "nope.jsonl"))
    assert missing.reason == Reason.UNREADABLE_PREDICTION.value
    assert "nope.jsonl" in missing.message


def test_detect_json_lines_and_pretty_printed_heads():
    assert UnifiedAdapter.detect([json.dumps(REC).encode()])
    assert UnifiedAdapter.detect([b'{"instance_id": "a", "pred_files": ["x.py"]}'])
    pretty = json.dumps([REC], indent=2).encode().splitlines()[:8]
    assert UnifiedAdapter.detect(pretty)
    assert detect_format([json.dumps(REC).encode()]) == "unified"
    # a JSON line whose *text* mentions the keys but has none of them is not unified
    assert not UnifiedAdapter.detect([b'{"type": "user", "message": "see \\"pred_files\\""}'])
    assert not UnifiedAdapter.detect([b"not json at all"])
    assert not UnifiedAdapter.detect([])


@pytest.mark.parametrize("kind", ["claude-stream", "codex-exec-json", "mini-swe-agent",
                                  "swe-agent-traj", "openhands", "claude-session"])
def test_real_traces_of_other_formats_are_not_unified(real_fixtures: Path, kind: str):
    for path in sorted((real_fixtures / kind).iterdir()):
        head = [line for line in path.read_bytes().splitlines() if line.strip()][:8]
        assert not UnifiedAdapter.detect(head), path.name


def test_adapter_events():
    adapter = UnifiedAdapter()
    text = json.dumps(REC, indent=2).encode().splitlines()
    for n, line in enumerate(text, 1):
        assert adapter.feed(line, n) == []  # a document: nothing until close
    events = adapter.close()
    assert [type(e) for e in events] == [RunInfo, StatedContext, StatedContext, StatedContext,
                                         RunEnd]
    assert events[0].instance_id == "django__django-12125"
    assert [e.final for e in events[1:4]] == [False, False, True]
    assert events[3].step.files == ("a.py", "b.py")
    assert events[4].reason == "end" and events[4].patch == REC["model_patch"]


def test_adapter_bad_input_is_a_bad_line_not_an_exception():
    adapter = UnifiedAdapter()
    adapter.feed(b'{"instance_id": "a", "pred_files": ["x"]}', 1)
    adapter.feed(b'{"broken', 2)
    events = adapter.close()
    assert isinstance(events[-1], BadLine)
    assert events[-1].reason == Reason.MALFORMED_JSON.value
    assert events[-1].lineno == 2
    assert isinstance(events[0], RunInfo) and isinstance(events[-2], RunEnd)


def test_unified_through_the_session_reports_no_context_extracted_like_replay(tmp_path):
    """docs/metrics.md §4b: the adapter -> session path gives the same error as replay when a
    unified record's final context resolves to nothing."""
    import json

    from gitrepo import make_repo

    from streameval.runs.evaluate import evaluate_trace
    from streameval.runs.resources import Resources
    from streameval.sources.gold import load_gold
    from streameval.sources.repocache import RepoCache

    sha = make_repo(tmp_path / "r", {"mod.py": "def f():\n    return 1\n"})[-1]
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"instance_id": "i1", "base_commit": sha, "init_ctx": [
        {"file": "mod.py", "start_line": 1, "end_line": 2}]}) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "i1", "traj_data": {
        "pred_files": ["/nowhere/else.py"], "pred_spans": {"/nowhere/else.py": [{"start": 1, "end": 3}]}},
        "model_patch": ""}) + "\n")
    res = Resources(load_gold(gold), RepoCache(None, tmp_path / "r"))
    assert evaluate_trace(preds, res, fmt="unified") == [
        {"instance_id": "i1", "error": "no_context_extracted"}]
