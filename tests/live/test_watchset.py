"""Trace files that are links to outside the watched directory (issue 27).

f53415f followed ``DIR/r/trace.jsonl -> ../../elsewhere/trace.jsonl``: a file outside DIR
was read, scored and its calls shown on the page, while directory links were refused.
Now such a link is not followed and said once; ``--follow-outside-links`` follows it; a
link whose target is under DIR is followed as before.
"""

from __future__ import annotations

import json
import logging
import os

from claude_run import APP, Claude, append, watcher


def _trace_at(path):
    """A Claude Code trace of one read at ``path`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    c = Claude()
    append(path, c.init(), *c.read("src/app.py", APP, 1, 20))
    return path


def _outside_trace(tmp_path):
    return _trace_at(tmp_path / "elsewhere" / "trace.jsonl")


def _linked_run(runs, s, name, target):
    d = runs / name
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": name}))
    (d / "trace.jsonl").symlink_to(os.path.relpath(target, d))
    return d / "trace.jsonl"


def test_a_trace_linked_to_outside_the_root_is_not_followed_and_said_once(env, tmp_path, caplog):
    s, runs, res = env
    link = _linked_run(runs, s, "r", _outside_trace(tmp_path))
    w = watcher(runs, res, tmp_path)
    with caplog.at_level(logging.WARNING, "streameval.live.watchset"):
        for _ in range(3):
            w.scan()
            w.changed(link)
            w.poll_all()
    assert w.table.runs == {} and link not in w.followers
    said = [r.getMessage() for r in caplog.records if "outside" in r.getMessage()]
    assert len(said) == 1 and "--follow-outside-links" in said[0]


def test_the_flag_follows_it(env, tmp_path):
    s, runs, res = env
    _linked_run(runs, s, "r", _outside_trace(tmp_path))
    w = watcher(runs, res, tmp_path, follow_outside_links=True)
    w.scan()
    w.poll_all()
    assert [r.session.identity.run_id for r in w.table.runs.values()] == ["r"]


def test_a_link_to_a_trace_under_the_root_is_followed(env, tmp_path):
    s, runs, res = env
    _linked_run(runs, s, "r", _trace_at(runs / "store" / "real.jsonl"))
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    assert "r" in [r.session.identity.run_id for r in w.table.runs.values()]


def test_a_followed_trace_replaced_by_a_link_out_of_the_root_is_let_go(env, tmp_path):
    s, runs, res = env
    d = runs / "r"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r"}))
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 5))
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    assert d / "trace.jsonl" in w.followers
    outside = _outside_trace(tmp_path)
    (d / "trace.jsonl").unlink()
    (d / "trace.jsonl").symlink_to(outside)
    w.changed(d / "trace.jsonl")
    assert d / "trace.jsonl" not in w.followers
    (run,) = w.table.runs.values()
    assert run.finished and run.session.num_steps == 1   # the calls outside were not read


def _followed_run(runs, s, steps=1):
    d = runs / "r"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r"}))
    c = Claude()
    append(d / "trace.jsonl", c.init(), *[line for k in range(steps)
                                          for line in c.read("src/app.py", APP, 1, 5 + k)])
    return d


def _outside_of(tmp_path, steps=3):
    """A trace of ``steps`` reads outside the root, its folder with a meta.json."""
    path = tmp_path / "elsewhere" / "trace.jsonl"
    path.parent.mkdir()
    c = Claude()
    append(path, c.init(), *[line for k in range(steps) for line in c.read("src/app.py", APP, 1, 5 + k)])
    return path


def test_a_trace_replaced_by_a_link_out_of_the_root_is_not_read_by_a_rescan(env, tmp_path, caplog):
    """102ce86 asked about links when a file event came: a rescan's poll (or the tick's
    last read before an idle end) opened the path and read the file outside."""
    s, runs, res = env
    d = _followed_run(runs, s)
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    (d / "trace.jsonl").unlink()
    (d / "trace.jsonl").symlink_to(_outside_of(tmp_path))
    with caplog.at_level(logging.WARNING, "streameval.live.watchset"):
        w.poll_all()
        w.poll_all()
    (run,) = w.table.runs.values()
    assert run.session.num_steps == 1   # the three calls outside were not read
    assert len([r for r in caplog.records if "outside" in r.getMessage()]) == 1


def test_a_run_folder_replaced_by_a_link_out_of_the_root_is_not_read(env, tmp_path):
    """The trace itself no link, a folder on its path one: 102ce86 followed it."""
    s, runs, res = env
    d = _followed_run(runs, s)
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    outside = _outside_of(tmp_path)
    (outside.parent / "meta.json").write_text((d / "meta.json").read_text())
    os.rename(d, runs / ".old")
    d.symlink_to(outside.parent)
    w.changed(d / "trace.jsonl")
    w.poll_all()
    (run,) = w.table.runs.values()
    assert run.session.num_steps == 1
