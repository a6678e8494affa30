"""Regression tests from a review of the live side: each test is named for the
failure it guards against."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import orjson
import pytest
from claude_run import APP, PATCH, UTIL, Claude, append, started, watcher
from gitrepo import gold_stub

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import Resources
from streameval.sources.gold import load_gold
from streameval.sources.repocache import RepoCache

MINISWE = "mini-swe-agent__gruckion__mini-swe-agent__gemini-3-pro__django__django-11603.traj.json"



def out_lines(tmp_path: Path) -> list[bytes]:
    out = tmp_path / "out.jsonl"
    return out.read_bytes().splitlines() if out.exists() else []


@pytest.fixture
def doc_env(tmp_path, real_fixtures, gold_parquet):
    gold = load_gold(str(gold_parquet))
    stub = gold_stub(tmp_path / "stubrepo", gold, "django__django-11603")
    res = Resources(gold, RepoCache(None, str(stub)), None)
    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    trace = runs / "a" / MINISWE
    shutil.copyfile(real_fixtures / "mini-swe-agent" / MINISWE, trace)
    return res, runs, trace


def test_document_trace_already_complete_at_start_is_scored_and_recorded(doc_env, tmp_path):
    res, runs, trace = doc_env
    w = started(runs, res, tmp_path, idle=10.0)
    assert len(w.table.runs) == 1  # the document was parsed, not only buffered
    w.tick(now=w.followers[trace].last_growth + 60.0)  # idle: the run ends
    lines = out_lines(tmp_path)
    assert lines == [orjson.dumps(r) for r in evaluate_trace(trace, res)]


def test_document_trace_restored_from_a_checkpoint_is_scored(doc_env, tmp_path):
    res, runs, trace = doc_env
    cp = tmp_path / "cp.json"
    w = started(runs, res, tmp_path, checkpoint=cp)
    w.save_checkpoint()
    w2 = watcher(runs, res, tmp_path, checkpoint=cp, idle=10.0)
    assert w2.restore_checkpoint() == 1
    assert len(w2.table.runs) == 1
    w2.tick(now=w2.followers[trace].last_growth + 60.0)
    assert out_lines(tmp_path) == [orjson.dumps(r) for r in evaluate_trace(trace, res)]


def test_document_trace_rewritten_by_truncation_is_reparsed(doc_env, tmp_path):
    res, runs, trace = doc_env
    data = trace.read_bytes()
    w = started(runs, res, tmp_path)
    first = w.table.runs[str(trace)].session
    with open(trace, "r+b") as fh:  # rewritten in place, as mini-swe-agent does
        fh.truncate(0)
    w.changed(trace)
    trace.write_bytes(data)
    w.changed(trace)
    run = w.table.runs[str(trace)]
    assert run.session is not first and run.session.state is not None
    assert run.session.record() == evaluate_trace(trace, res)[0]


def run_dir(runs: Path, s, name: str = "demo__demo-1", run_id: str = "r1") -> Path:
    d = runs / name
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": run_id}))
    return d


def test_stale_deleted_event_does_not_end_the_run_of_a_recreated_trace(env, tmp_path):
    s, runs, res = env
    d = run_dir(runs, s)
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    trace.rename(d / "trace.jsonl.1")  # rotated away, a new run starts at the same path
    c2 = Claude()
    append(trace, c2.init(), *c2.read("src/util.py", UTIL, 1, 3))
    # watchfiles hands over {(added, trace), (deleted, trace)} as an unordered set
    w.changed(trace)
    w.changed(trace, deleted=True)
    assert trace in w.followers
    run = w.table.runs[str(trace)]
    assert not run.finished and run.session.num_steps == 1
    assert w.table.stats.events["deleted"] == 0
    assert out_lines(tmp_path) == []


def test_expired_finished_runs_release_their_sessions(env, tmp_path):
    import gc
    import weakref

    s, runs, res = env
    traces = []
    for i in range(3):
        trace = run_dir(runs, s, f"run{i}", f"r{i}") / "trace.jsonl"
        c = Claude()
        append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
        traces.append(trace)
    w = started(runs, res, tmp_path, keep_finished=10.0, rescan=3600.0)
    refs = [weakref.ref(r.session) for r in w.table.runs.values()]
    assert len(refs) == 3
    t0 = max(f.last_growth for f in w.followers.values())
    w.tick(now=t0 + 1)       # ended by the trace: records written
    assert len(out_lines(tmp_path)) == 3
    w.tick(now=t0 + 100)     # past keep_finished: dropped from the table
    assert not w.table.runs
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
    # nothing is written twice, and a file growing later is scored anew
    w.poll_all(now=t0 + 101)
    w.tick(now=t0 + 102)
    assert len(out_lines(tmp_path)) == 3
    more = Claude()
    more.n = 10  # new tool ids
    append(traces[0], *more.read("src/util.py", UTIL, 1, 3))
    w.changed(traces[0], now=t0 + 103)
    assert w.table.runs[str(traces[0])].session.num_steps == 2


def test_trace_growing_after_its_run_finished_does_not_count_old_lines_twice(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs, s) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), b"{not json", c.result())
    w = started(runs, res, tmp_path)
    w.tick()
    assert w.table.runs[str(trace)].finished
    st = w.table.stats
    assert st.lines_processed == 5 and sum(st.bad_lines.values()) == 1
    lag_before = st.lag_count
    append(trace, *c.read("src/util.py", UTIL, 1, 3))  # the agent went on (auto-continue)
    w.changed(trace)
    assert st.events["reopened"] == 1
    assert w.table.runs[str(trace)].session.num_steps == 2
    assert st.lines_processed == 7            # 5 old lines + 2 new ones, each once
    assert sum(st.bad_lines.values()) == 1    # the broken line is still one bad line
    assert st.lag_count == lag_before + 2




def test_finished_runs_records_are_not_rebuilt_at_every_tick(env, tmp_path):
    s, runs, res = env
    d = run_dir(runs, s)
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    w = started(runs, res, tmp_path)
    w.tick()
    assert len(out_lines(tmp_path)) == 1
    session = w.table.runs[str(trace)].session
    built = []
    original = session.record
    session.record = lambda: built.append(1) or original()
    for _ in range(20):   # an hour of keep_finished is 18,000 ticks of 0.2 s
        w.tick()
    assert built == []
    (d / "patch.diff").write_text(PATCH)   # a late patch: one corrected record
    w.changed(d / "patch.diff")
    w.tick()
    w.tick()
    assert built == [1]
    lines = out_lines(tmp_path)
    assert len(lines) == 2 and json.loads(lines[1])["patch_source"] == "file"
    assert lines[1] == orjson.dumps(evaluate_trace(trace, res)[0])


def test_multi_run_output_jsonl_growing_by_instance_is_not_reread_whole(tmp_path, real_fixtures,
                                                                        gold_parquet):
    empty = tmp_path / "emptyrepo"
    empty.mkdir()
    res = Resources(load_gold(str(gold_parquet)), RepoCache(None, str(empty)), None)
    runs = tmp_path / "runs"
    (runs / "oh").mkdir(parents=True)
    src = next((real_fixtures / "openhands").glob("*.jsonl")).read_bytes().splitlines()
    assert len(src) >= 3
    trace = runs / "oh" / "output.jsonl"
    trace.write_bytes(b"")
    w = watcher(runs, res, tmp_path, idle=100.0, rescan=1e9)
    w.scan()
    t = w.followers[trace].last_growth
    for i, line in enumerate(src):
        append(trace, line)
        w.changed(trace, now=t + i)
        w.tick(now=t + i + 0.5)
        assert len(out_lines(tmp_path)) == i + 1  # each instance's record once it ended
    assert w.table.stats.events["reopened"] == 0
    assert w.table.stats.lines_processed == len(src)
    w.tick(now=t + 1000)   # idle: the file is closed, nothing changes
    assert out_lines(tmp_path) == [orjson.dumps(r) for r in evaluate_trace(trace, res)]


def test_meta_json_written_after_the_trace_gives_the_replayed_identity(env, tmp_path):
    s, runs, res = env
    d = runs / "job-17"          # the directory name is no gold instance
    d.mkdir()
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    assert w.table.runs[str(trace)].session.gold_missing is not None   # no gold so far
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "late-meta"}))
    w.changed(d / "meta.json")
    run = w.table.runs[str(trace)]
    assert run.session.error is None and run.session.gold_missing is None
    assert run.session.state is not None and run.session.num_steps == 1
    assert w.table.stats.lines_processed == 3   # re-scored, not re-counted
    append(trace, c.result())
    w.changed(trace)
    w.tick()
    assert out_lines(tmp_path) == [orjson.dumps(evaluate_trace(trace, res)[0])]


def test_patch_beside_a_multi_run_file_is_not_given_to_its_runs(tmp_path, real_fixtures,
                                                                 gold_parquet):
    empty = tmp_path / "emptyrepo"
    empty.mkdir()
    res = Resources(load_gold(str(gold_parquet)), RepoCache(None, str(empty)), None)
    runs = tmp_path / "runs"
    d = runs / "oh"
    d.mkdir(parents=True)
    src = next((real_fixtures / "openhands").glob("*.jsonl")).read_bytes().splitlines()
    (d / "patch.diff").write_text(PATCH)
    trace = d / "output.jsonl"
    append(trace, *src)
    w = started(runs, res, tmp_path, idle=10.0)
    (d / "patch.diff").write_text(PATCH + "\n")   # the patch changes while watched
    w.changed(d / "patch.diff")
    w.tick(now=w.followers[trace].last_growth + 60)
    replayed = [orjson.dumps(r) for r in evaluate_trace(trace, res)]
    assert len(replayed) == len(src)
    assert out_lines(tmp_path) == replayed
    assert all(r.session.patch_source != "file" for r in w.table.runs.values())


def test_backlog_of_traces_older_than_the_watcher_is_not_reported_as_lag(env, tmp_path):
    import os

    s, runs, res = env
    trace = run_dir(runs, s) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    day_ago = trace.stat().st_mtime - 86400
    os.utime(trace, (day_ago, day_ago))   # a trace from yesterday
    w = started(runs, res, tmp_path)
    st = w.table.stats
    assert st.lines_processed == 3
    assert st.lag_count == 0 and st.lag_counts[-1] == 0   # not "a day behind"
    append(trace, *c.read("src/util.py", UTIL, 1, 3))     # written now: this is lag
    # stamped explicitly after the watcher's start: the file system's coarse clock may
    # otherwise date a write made within a few ms of it just before it (a flaky test)
    later = w.started_at + 1.0
    os.utime(trace, (later, later))
    w.changed(trace, now=later + 0.02)
    assert st.lag_count == 2 and sum(st.lag_counts[:3]) == 2  # both within 25 ms


def test_predictions_file_whose_event_was_missed_is_read_by_the_rescan(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs, s) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    preds = tmp_path / "preds.jsonl"
    w = watcher(runs, res, tmp_path, predictions=preds, grace=3600.0)
    w.poll_predictions()   # not there yet
    w.scan()
    w.poll_all()
    preds.write_text(json.dumps({"instance_id": s.instance, "model_patch": PATCH}) + "\n")
    w.tick()   # no file event for preds.jsonl: the periodic rescan is the safety net
    w.tick()
    lines = out_lines(tmp_path)
    assert len(lines) == 1 and json.loads(lines[0])["patch_source"] == "predictions"
    assert json.loads(lines[0])["editloc"]["recall"] == 1.0


def test_many_runs_ending_in_one_tick_save_the_checkpoint_once(env, tmp_path):
    s, runs, res = env
    for i in range(6):
        trace = run_dir(runs, s, f"run{i}", f"r{i}") / "trace.jsonl"
        c = Claude()
        append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    cp = tmp_path / "cp.json"
    w = started(runs, res, tmp_path, checkpoint=cp, checkpoint_interval=1e12, rescan=1e12)
    saves = []
    original = w.save_checkpoint
    w.save_checkpoint = lambda: saves.append(1) or original()
    w.tick()
    assert len(out_lines(tmp_path)) == 6
    assert saves == [1]
    written = {k: v["written"] for k, v in json.loads(cp.read_text())["files"].items()}
    assert all(len(v) == 1 for v in written.values()) and len(written) == 6


def test_unreadable_patch_file_does_not_stop_the_watcher(env, tmp_path):
    s, runs, res = env
    d = run_dir(runs, s)
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    (d / "patch.diff").symlink_to("patch.diff")   # a symlink loop: open() raises ELOOP
    w.changed(d / "patch.diff")
    append(trace, *c.read("src/util.py", UTIL, 1, 3), c.result())
    w.changed(trace)
    w.tick()
    assert w.table.runs[str(trace)].session.num_steps == 2
    assert len(out_lines(tmp_path)) == 1


@pytest.mark.timeout(60)
def test_fifo_or_symlink_loop_named_like_a_trace_neither_hangs_nor_stops_the_watcher(env, tmp_path):
    import os

    s, runs, res = env
    os.mkfifo(run_dir(runs, s, "fifo", "f") / "trace.jsonl")
    (run_dir(runs, s, "loop", "l") / "trace.jsonl").symlink_to("trace.jsonl")
    trace = run_dir(runs, s) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    w = started(runs, res, tmp_path)
    w.tick()
    w.changed(runs / "loop" / "trace.jsonl")
    w.changed(runs / "fifo" / "trace.jsonl")
    w.tick()
    assert list(w.table.runs) == [str(trace)]
    assert len(out_lines(tmp_path)) == 1


def test_patch_grace_longer_than_keep_finished_still_writes_the_record(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs, s) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), c.result())
    w = started(runs, res, tmp_path, grace=120.0, keep_finished=60.0, rescan=1e12)
    t0 = w.followers[trace].last_growth
    for dt in (1, 61, 100, 121, 200):
        w.tick(now=t0 + dt)
    lines = out_lines(tmp_path)
    assert len(lines) == 1 and lines[0] == orjson.dumps(evaluate_trace(trace, res)[0])


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_file_of_unknown_format_rewritten_as_a_trace_is_scored(env, tmp_path, how):
    import os

    s, runs, res = env
    d = run_dir(runs, s)
    trace = d / "trace.jsonl"
    append(trace, *[json.dumps({"hello": i}).encode() for i in range(10)])
    w = started(runs, res, tmp_path)
    assert not w.table.runs and w.table.stats.bad_lines["unknown_format"] == 1
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 20)]
    if how == "truncated":
        with open(trace, "r+b") as fh:
            fh.truncate(0)
        w.changed(trace)
        append(trace, *lines)
    else:
        append(d / "trace.new", *lines)
        os.replace(d / "trace.new", trace)
    w.changed(trace)
    assert w.table.stats.events[how] == 1
    assert w.table.runs[str(trace)].session.num_steps == 1


def test_trace_without_end_event_ended_by_idle_timeout_equals_replay(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs, s) / "trace.jsonl"
    c = Claude()   # a Claude session file: no "result" line ever comes
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 3))
    w = started(runs, res, tmp_path, idle=30.0)
    w.tick(now=w.followers[trace].last_growth + 60)
    assert w.table.runs[str(trace)].finished
    assert out_lines(tmp_path) == [orjson.dumps(evaluate_trace(trace, res)[0])]


def test_multi_run_file_closing_after_its_runs_expired_releases_its_sessions(
        tmp_path, real_fixtures, gold_parquet):
    import gc
    import weakref

    empty = tmp_path / "emptyrepo"
    empty.mkdir()
    res = Resources(load_gold(str(gold_parquet)), RepoCache(None, str(empty)), None)
    runs = tmp_path / "runs"
    (runs / "oh").mkdir(parents=True)
    trace = runs / "oh" / "output.jsonl"
    append(trace, *next((real_fixtures / "openhands").glob("*.jsonl")).read_bytes().splitlines())
    # runs end by their own end events; the file closes only at the idle timeout
    w = started(runs, res, tmp_path, idle=100.0, keep_finished=10.0, rescan=1e12)
    refs = [weakref.ref(r.session) for r in w.table.runs.values()]
    t0 = w.followers[trace].last_growth
    w.tick(now=t0 + 1)
    w.tick(now=t0 + 50)     # runs expired, the file is not closed yet
    assert not w.table.runs
    w.tick(now=t0 + 200)    # idle: closed, nothing expires any more
    gc.collect()
    assert refs and all(r() is None for r in refs)


def test_a_batch_of_many_changed_files_notifies_listeners_once(env, tmp_path):
    s, runs, res = env
    traces = []
    for i in range(5):
        trace = run_dir(runs, s, f"run{i}", f"r{i}") / "trace.jsonl"
        c = Claude()
        append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
        traces.append(trace)
    w = watcher(runs, res, tmp_path)
    calls = []
    w.listeners.append(lambda watcher: calls.append(len(watcher.table.runs)))
    # abort policies check every run per notification: per file, a batch of
    # n files would cost n x runs checks
    w.handle_changes([(str(t), False) for t in traces])
    assert calls == [5]
    assert all(r.session.num_steps == 1 for r in w.table.runs.values())


def test_document_replaced_by_a_jsonl_trace_is_then_followed_line_by_line(doc_env, tmp_path):
    res, runs, trace = doc_env
    w = started(runs, res, tmp_path)
    assert w.followers[trace].fmt == "miniswe"
    new = trace.with_name("new.tmp")
    c = Claude()
    append(new, c.init(), *c.read("src/app.py", APP, 1, 20))
    os.replace(new, trace)
    w.changed(trace)
    assert w.followers[trace].fmt == "claude"
    before = w.table.stats.lines_processed
    append(trace, *c.read("src/util.py", UTIL, 1, 3))
    w.changed(trace)
    # read as appended lines (counted), not re-read whole as a document (not counted)
    assert w.table.stats.lines_processed == before + 2
    assert w.table.stats.events["replaced"] == 1


def test_a_trace_replaced_by_a_directory_does_not_stop_the_watcher(env, tmp_path):
    """102ce86: the next poll raised IsADirectoryError out of the watcher, which exited
    (seen with ``streameval watch``: exit 1); the run keeps the lines it had."""
    s, runs, res = env
    trace = runs / "r" / "trace.jsonl"
    trace.parent.mkdir()
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 5))
    w = started(runs, res, tmp_path, idle=0.0)
    trace.unlink()
    trace.mkdir()
    (trace / "x").write_text("y\n")
    w.changed(trace)
    w.poll_all()
    w.tick()
    (run,) = w.table.runs.values()
    assert run.finished and run.session.num_steps == 1
