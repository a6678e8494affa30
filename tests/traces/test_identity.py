"""Who a run is: meta.json, then --instance, then the directory, the trace, the file name."""

import json
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from streameval.model import RunIdentity
from streameval.runs.evaluate import run_identity
from streameval.runs.resources import Resources
from streameval.sources.gold import load_gold
from streameval.traces.identity import (
    RunIds,
    identify,
    instance_candidates,
    patch_beside,
    suffixed,
    walk_files,
)


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


# ------------------------------------------------------------------ run ids (issue 31)

def test_a_colliding_id_is_suffixed_by_the_trace_path_in_any_order():
    """Before issue 31 the suffix hashed the trace and the instance; it is the trace path
    alone now (as docs/metrics.md §5 says), so whoever asks second gets the same id."""
    import hashlib

    runs = [("hidden-claude", f"{i}/trace.jsonl", i) for i in ("astropy-1", "svelte-2", "xarray-3")]
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        ids = RunIds()
        got = {runs[i][1]: ids.claim(*runs[i]) for i in order}
        first = runs[order[0]][1]
        assert got[first] == "hidden-claude"
        for trace, rid in got.items():
            if trace != first:
                assert rid == "hidden-claude~" + hashlib.sha1(trace.encode()).hexdigest()[:6]
                assert rid == suffixed("hidden-claude", trace, "any instance")


def test_a_suffix_already_taken_takes_more_of_the_hash():
    ids = RunIds()
    taken = suffixed("x", "b/trace.jsonl", "i")
    assert ids.claim(taken, "elsewhere/trace.jsonl", "i") == taken   # a meta.json said so
    assert ids.claim("x", "a/trace.jsonl", "i") == "x"
    longer = ids.claim("x", "b/trace.jsonl", "i")
    assert longer.startswith(taken) and len(longer) == len(taken) + 4
    assert len({taken, longer, "x"}) == 3


_RUNS = [(f"id{i % 3}", f"r{i}/trace.jsonl", f"inst{i % 2}") for i in range(6)]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.tuples(st.just("ask"), st.integers(0, 5)),
                          st.tuples(st.just("release"), st.integers(0, 5)),
                          st.tuples(st.just("restart"), st.randoms(use_true_random=False))),
                max_size=30))
def test_a_restart_changes_no_run_id(ops):
    """Runs ask (three ids between six runs), leave memory, and the ids are handed to a
    new ``RunIds`` (a restarted watcher) which hears the runs again in any order: a run
    held across a restart keeps its id, and no two runs held share one."""
    ids, held = RunIds(), {}
    for op, arg in ops:
        if op == "ask":
            got = ids.claim(*_RUNS[arg])
            assert held.setdefault(arg, got) == got
        elif op == "release" and arg in held:
            ids.release(held.pop(arg))
        elif op == "restart":
            claims = ids.claims()
            ids = RunIds()
            for key, got in claims:
                ids.restore(key, got)
            again = sorted(held)
            arg.shuffle(again)
            for i in again:
                assert ids.claim(*_RUNS[i]) == held[i]
            assert ids.drop_restored() == 0
        assert len(set(held.values())) == len(held)


def test_claims_restored_that_nobody_asks_for_again_are_dropped():
    ids = RunIds()
    assert ids.claim("x", "a/trace.jsonl", "i") == "x"
    claims = ids.claims()
    again = RunIds()
    for key, got in claims:
        again.restore(key, got)
    assert again.claim("x", "b/trace.jsonl", "i") != "x"   # a/ is still held
    assert again.drop_restored() == 1                      # a/ never came back
    assert again.claim("x", "c/trace.jsonl", "i") == "x"


def test_a_later_claim_of_the_same_id_wins_when_restored():
    """A journal lists claims in the order they were made: a run that left memory and
    a run that then took its id, or a run given a new id when it came back."""
    ids = RunIds()
    ids.restore(("x", "a/trace.jsonl", "i"), "x")
    ids.restore(("x", "b/trace.jsonl", "i"), "x")          # a/ left, b/ took x
    ids.restore(("x", "a/trace.jsonl", "i"), suffixed("x", "a/trace.jsonl", "i"))
    assert ids.claim("x", "b/trace.jsonl", "i") == "x"
    assert ids.claim("x", "a/trace.jsonl", "i") == suffixed("x", "a/trace.jsonl", "i")
    assert len(ids) == 2


def test_an_id_kept_for_a_trace_goes_bare_to_it_whoever_asks_first():
    """``reserve`` (watch --workers N): the bare id is the first trace's in walk order,
    as one watcher gives it, though another worker's run asks first."""
    ids = RunIds()
    ids.reserve("hidden-claude", "a/trace.jsonl")
    late = ids.claim("hidden-claude", "b/trace.jsonl", "i2")
    assert late == suffixed("hidden-claude", "b/trace.jsonl", "i2")
    assert ids.claim("hidden-claude", "a/trace.jsonl", "i1") == "hidden-claude"
    assert ids.claim("hidden-claude", "a/trace.jsonl", "i1") == "hidden-claude"   # the same again


def test_an_id_kept_for_a_trace_that_never_asked_is_free_once_dropped():
    ids = RunIds()
    ids.reserve("x", "gone/trace.jsonl")
    ids.drop_reservations()
    assert ids.claim("x", "b/trace.jsonl", "i") == "x"
