"""Who a run is: meta.json, then --instance, then the directory, the trace, the file name."""

import json
import logging

from streameval.model import RunIdentity
from streameval.runs.evaluate import run_identity
from streameval.runs.resources import Resources
from streameval.sources.gold import load_gold
from streameval.traces.identity import identify, instance_candidates, patch_beside, walk_files


def gold_set(tmp_path, *ids):
    p = tmp_path / "gold.jsonl"
    p.write_text("".join(json.dumps({"instance_id": i, "base_commit": "x", "init_ctx": [
        {"file": "a.py", "start_line": 1, "end_line": 2}]}) + "\n" for i in ids))
    return Resources(load_gold(p), None)


def test_meta_json_wins_then_instance_then_directory(tmp_path):
    d = tmp_path / "run-7"
    d.mkdir()
    trace = d / "trace.jsonl"
    assert identify(trace).instance_id == "run-7"
    assert identify(trace, "inst-1").instance_id == "inst-1"
    (d / "meta.json").write_text(json.dumps({"instance_id": "i9", "run_id": "r9", "agent": "a",
                                             "model": "m", "pid": 42}))
    ident = identify(trace, "inst-1")
    assert (ident.instance_id, ident.run_id, ident.agent, ident.model, ident.pid) == \
        ("i9", "r9", "a", "m", 42)


def test_malformed_meta_is_reported_and_falls_back(tmp_path):
    d = tmp_path / "run-8"
    d.mkdir()
    (d / "meta.json").write_text("{oops")
    problems: list[str] = []
    assert identify(d / "trace.jsonl", problems=problems).instance_id == "run-8"
    assert problems and "not valid JSON" in problems[0]


def test_patch_beside_the_trace(tmp_path):
    (tmp_path / "model.patch").write_text("--- a/x\n+++ b/x\n")
    assert patch_beside(tmp_path / "trace.jsonl").startswith("--- a/x")


def test_ids_in_file_names():
    name = "sweagent__anonymousUser2026__ContextBench__verified__pydata__xarray-4075.checkpoints.jsonl"
    assert "pydata__xarray-4075" in instance_candidates(name)
    assert "django__django-11603" in instance_candidates(
        "mini-swe-agent__gruckion__mini-swe-agent__gemini-3-pro__django__django-11603.traj.json")


def test_run_identity_rules(tmp_path):
    res = gold_set(tmp_path, "pydata__xarray-4075", "owner__repo-1")
    base = RunIdentity("swe-agent-traj", "swe-agent-traj")
    trace = tmp_path / "sweagent__x__pydata__xarray-4075.traj"
    # nothing names a gold row but the file name does
    assert run_identity(base, None, 0, res, trace=trace).instance_id == "pydata__xarray-4075"
    # an explicit identity is never second-guessed
    assert run_identity(base, None, 0, res, explicit=True, trace=trace).instance_id == "swe-agent-traj"
    # the trace's own instance beats the file name
    assert run_identity(base, "owner__repo-1", 0, res, trace=trace).instance_id == "owner__repo-1"
    # later runs in one file (OpenHands) get their own ids, run ids suffixed
    later = run_identity(base, "owner__repo-1", 2, res)
    assert (later.instance_id, later.run_id) == ("owner__repo-1", "swe-agent-traj/owner__repo-1")


def test_unreadable_patch_beside_is_skipped_not_raised(tmp_path, caplog):
    (tmp_path / "patch.diff").symlink_to("patch.diff")   # a loop: OSError(ELOOP) on open
    trace = tmp_path / "trace.jsonl"
    with caplog.at_level(logging.WARNING, logger="streameval.traces.identity"):
        assert patch_beside(trace) is None
    # skipped, but said: the warning names the file that could not be read
    assert any(str(tmp_path / "patch.diff") in r.getMessage() for r in caplog.records)
    (tmp_path / "model.patch").write_text("--- a/x\n+++ b/x\n")
    assert patch_beside(trace) == "--- a/x\n+++ b/x\n"


def test_walk_files_skips_hidden_directories_and_side_files_in_sorted_order(tmp_path):
    for rel in ("b/trace.jsonl", "b/meta.json", "b/patch.diff", "a/z.traj", "a/ABORT",
                ".git/x.jsonl", "a/.hidden/y.jsonl", "top.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in walk_files(tmp_path)]
    assert found == ["top.jsonl", "a/z.traj", "b/trace.jsonl"]
