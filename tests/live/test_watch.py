"""The watcher over real files: partial lines, truncation, replacement, deletion,
late files, huge and non-UTF-8 lines, meta.json rules, and watched == replayed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from claude_run import APP, UTIL, Claude, append, started, watcher

from streameval.live.watch import Watcher
from streameval.runs.evaluate import evaluate_trace


def run_dir(runs: Path, name: str = "demo__demo-1", meta: dict | None = None) -> Path:
    d = runs / name
    d.mkdir()
    if meta is not None:
        (d / "meta.json").write_text(json.dumps(meta))
    return d



def only_run(w: Watcher):
    runs = list(w.table.runs.values())
    assert len(runs) == 1, [r.key for r in runs]
    return runs[0]


def coverage(w: Watcher, g: str) -> float:
    return only_run(w).session.state.snapshot().granularities[g].coverage


def test_steps_arrive_and_coverage_grows(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs, meta={"instance_id": s.instance, "run_id": "r1", "agent": "claude-code",
                                "model": "m"}) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    assert coverage(w, "line") == 1.0
    assert coverage(w, "file") == 0.5
    append(trace, *c.read("src/util.py", UTIL, 1, 3))
    w.changed(trace)
    assert coverage(w, "file") == 1.0
    run = only_run(w)
    assert run.session.identity.run_id == "r1" and run.session.num_steps == 2


def test_partial_line_written_in_two_pieces_is_not_scored_until_whole(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    use, result = c.read("src/app.py", APP, 1, 20)
    append(trace, c.init(), use)
    with open(trace, "ab") as fh:
        fh.write(result[:40])
    w = started(runs, res, tmp_path)
    assert only_run(w).session.num_steps == 0
    assert sum(w.table.stats.bad_lines.values()) == 0
    with open(trace, "ab") as fh:
        fh.write(result[40:] + b"\n")
    w.changed(trace)
    assert only_run(w).session.num_steps == 1
    assert sum(w.table.stats.bad_lines.values()) == 0


def test_truncated_trace_restarts_its_session(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL))
    w = started(runs, res, tmp_path)
    assert only_run(w).session.num_steps == 2
    with open(trace, "r+b") as fh:
        fh.truncate(0)
    c2 = Claude()
    append(trace, c2.init(), *c2.read("src/util.py", UTIL, 1, 2))
    w.changed(trace)
    assert w.table.stats.events["truncated"] == 1
    assert only_run(w).session.num_steps == 1
    assert coverage(w, "line") == 0.0


def test_replaced_trace_restarts_its_session(env, tmp_path):
    s, runs, res = env
    d = run_dir(runs)
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    new = d / "trace.new"
    c2 = Claude()
    append(new, c2.init(), *c2.read("src/util.py", UTIL, 1, 30), *c2.read("src/util.py", UTIL, 1, 30))
    os.replace(new, trace)
    w.changed(trace)
    assert w.table.stats.events["replaced"] == 1
    run = only_run(w)
    assert run.session.num_steps == 2
    assert run.session.state.snapshot().granularities["file"].coverage == 0.5


def test_deleted_trace_ends_its_session_and_writes_its_record(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    trace.unlink()
    w.changed(trace, deleted=True)
    assert w.table.stats.events["deleted"] == 1
    assert only_run(w).finished
    recs = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(recs) == 1 and recs[0]["num_steps"] == 1 and recs[0]["end_reason"] == "deleted"


def test_trace_that_appears_after_start_is_followed(env, tmp_path):
    s, runs, res = env
    w = watcher(runs, res, tmp_path)
    w.scan()
    assert not w.table.runs
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w.tick()  # rescan_interval=0: finds the new file
    assert only_run(w).session.num_steps == 1


def test_one_megabyte_line_and_non_utf8_line_do_not_stop_the_stream(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    big = json.dumps({"type": "assistant", "message": {"id": "big", "role": "assistant", "content": [
        {"type": "text", "text": "x" * (1 << 20)}]}}).encode()
    append(trace, c.init(), big, b'{"type": "user", "bad": "\xff\xfe"}', b"{not json",
           *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    run = only_run(w)
    assert run.session.num_steps == 1
    assert coverage(w, "line") == 1.0
    assert sum(w.table.stats.bad_lines.values()) >= 2  # the non-UTF-8 line and the broken one
    assert w.table.stats.lines_processed == 6


@pytest.mark.parametrize("meta", [None, "{not json", "[1, 2]"])
def test_missing_or_malformed_meta_falls_back_to_the_directory_name(env, tmp_path, meta):
    s, runs, res = env
    d = run_dir(runs)
    if meta is not None:
        (d / "meta.json").write_text(meta)
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    run = only_run(w)
    assert run.session.identity.instance_id == "demo__demo-1"
    assert run.session.error is None
    assert run.session.num_steps == 1


def test_record_after_end_event_and_patch_equals_replay(env, tmp_path):
    s, runs, res = env
    d = run_dir(runs, meta={"instance_id": s.instance, "run_id": "r-eq", "agent": "a", "model": "m"})
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 2, 4))
    w = started(runs, res, tmp_path, grace=3600.0)
    append(trace, c.result())
    w.changed(trace)
    w.tick()
    assert not (tmp_path / "out.jsonl").exists()  # ended, but waiting for the patch
    patch = ("--- a/src/app.py\n+++ b/src/app.py\n@@ -4,2 +4,2 @@\n-def f2(x):\n-    return x + 2\n"
             "+def f2(x):\n+    return x - 2\n")
    (d / "patch.diff").write_text(patch)
    w.changed(d / "patch.diff")
    w.tick()
    lines = (tmp_path / "out.jsonl").read_bytes().splitlines()
    assert len(lines) == 1
    watched = lines[0]
    replayed = evaluate_trace(trace, res)
    import orjson
    assert watched == orjson.dumps(replayed[0])
    rec = json.loads(watched)
    assert rec["editloc"]["recall"] == 1.0 and rec["patch_source"] == "file"


def _different_trace(first: str) -> list[bytes]:
    """A trace whose first line equals the usual one (same init) but whose reads differ."""
    c = Claude()
    return [c.init(), *c.read(first, APP if first == "src/app.py" else UTIL, 1, 3),
            *c.read("src/util.py", UTIL, 4, 30), *c.read("src/util.py", UTIL, 1, 30)]


def test_truncated_and_rewritten_past_our_offset_while_busy_is_read_again(env, tmp_path):
    """Truncated, then written longer than before, between two polls: the size never
    shrank as seen, the inode is the same; the bytes already read changed."""
    s, runs, res = env
    d = run_dir(runs, meta={"instance_id": s.instance, "run_id": "rw"})
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    with open(trace, "r+b") as fh:
        fh.truncate(0)
    append(trace, *_different_trace("src/util.py"))
    w.changed(trace)
    assert w.table.stats.events["rewritten"] == 1
    append(trace, c.result())
    w.changed(trace)
    w.tick()
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    [replayed] = evaluate_trace(trace, res, root=runs)
    assert json.loads(line) == replayed


def test_same_size_rewrite_of_a_document_is_read_again(env, tmp_path):
    """A .traj document saved again at exactly the same size with other content."""
    from fixture_paths import REAL

    s, runs, res = env
    d = run_dir(runs, meta={"instance_id": s.instance, "run_id": "doc"})
    trace = d / "run.traj.json"
    src = (REAL / "mini-swe-agent" / "mini-swe-agent2__streameval__scripted-text-2.4.6.traj.json").read_bytes()
    assert b'"openai/scripted"' in src
    trace.write_bytes(src)
    w = started(runs, res, tmp_path)
    assert only_run(w).session.record()["model"] == "openai/scripted"
    changed = src.replace(b'"openai/scripted"', b'"openai/rewrote!"')
    assert len(changed) == len(src)
    trace.write_bytes(changed)
    st = trace.stat()
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    w.changed(trace)
    w.tick(now=time.time() + 7200)
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    rec = json.loads(line)
    assert rec["model"] == "openai/rewrote!"
    assert rec == evaluate_trace(trace, res, root=runs)[0]


def test_a_touch_is_not_a_rewrite(env, tmp_path):
    s, runs, res = env
    trace = run_dir(runs) / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    w = started(runs, res, tmp_path)
    st = trace.stat()
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    w.changed(trace)
    assert not w.table.stats.events["rewritten"] and not w.table.stats.events["truncated"]


@pytest.mark.parametrize("size_mb", [40, 70])
def test_a_huge_line_is_the_same_bad_line_in_watch_and_replay(env, tmp_path, size_mb):
    """40 MB: read, and refused by the adapter's limit; 70 MB: skipped by the tail
    without being held. Either way one line_too_long, and the calls around it scored,
    the same in watch and replay."""
    from streameval.scoring.record import record_line

    s, runs, res = env
    d = run_dir(runs, meta={"instance_id": s.instance, "run_id": "huge"})
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 20))
    with open(trace, "ab") as fh:
        fh.write(b'{"type": "user", "pad": "' + b"x" * (size_mb << 20) + b'"}\n')
    append(trace, *c.read("src/util.py", UTIL, 1, 5), c.result())
    w = started(runs, res, tmp_path)
    w.tick()
    [line] = (tmp_path / "out.jsonl").read_bytes().splitlines()
    [replayed] = evaluate_trace(trace, res, root=runs)
    assert line + b"\n" == record_line(replayed)
    assert replayed["num_steps"] == 2 and replayed["bad_lines"] == {"line_too_long": 1}
    assert w.table.stats.bad_lines["line_too_long"] == 1
