"""replay --live: a whole-document trace is re-enacted save by save (its calls arrive as
the agent made them, not all at the end), and a played run keeps the run id replay and
watch give the same file under the same root; the live table shows run ids whole."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import orjson
import pytest
from claude_run import APP, Claude, append, make_setup, watcher

from streameval.commands.main import main
from streameval.live.watch import WatchConfig, Watcher
from streameval.playback.documents import saves
from streameval.playback.player import stage_run
from streameval.playback.reenact import LiveTable, traces_of
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
MINI = REAL / "mini-swe-agent" / \
    "mini-swe-agent__gruckion__mini-swe-agent__gemini-3-pro__pydata__xarray-4075.traj.json"
SWE = REAL / "swe-agent-traj" / "sweagent0__SWE-agent__SWE-agent__pydicom__pydicom-1458.traj"


@pytest.mark.parametrize("recorded, fmt", [(MINI, "miniswe"), (SWE, "sweagent")])
def test_a_document_is_re_enacted_save_by_save(tmp_path, recorded, fmt):
    res = load_resources(None, None, None)
    runs = tmp_path / "runs"
    _run_dir, target = stage_run(recorded, runs, f"trajs/{recorded.name}")
    w = Watcher(WatchConfig(root=runs, rescan_interval=0.0, idle_timeout=3600), res)
    w.scan()
    seen: list[tuple[int, bool]] = []
    for data in saves(recorded.read_bytes(), fmt):
        with open(target, "r+b") as fh:   # in place, as the agents save
            fh.truncate(0)
            fh.write(data)
        w.changed(target)
        (run,) = w.table.runs.values()
        snap = run.session.snapshot()
        seen.append((snap.tool_calls, snap.ended))
    calls = [n for n, _ended in seen]
    assert calls == sorted(calls) and calls[0] < calls[-1]
    assert len(set(calls)) > len(calls) // 4   # the calls arrive a few at a time
    assert [ended for _n, ended in seen] == [False] * (len(seen) - 1) + [True]
    # the last save is the recorded file: the numbers replay gives it
    assert target.read_bytes() == recorded.read_bytes()
    (record,) = evaluate_trace(target, res, root=runs)
    (run,) = w.table.runs.values()
    assert run.session.record() == record


def test_documents_of_unknown_growth_are_played_whole():
    assert saves(b'{"steps": [1, 2]}', "atif") is None
    assert saves(b"[1, 2]", "miniswe") is None and saves(b"{", "miniswe") is None


def test_the_same_file_under_the_same_root_has_one_run_id_everywhere(tmp_path):
    """watch ROOT, replay ROOT and replay --live ROOT name each run alike (the issue saw
    `run-a/...` in watch and `trajs/...` in replay for one file)."""
    s = make_setup(tmp_path)
    root = tmp_path / "root"
    (root / "trajs").mkdir(parents=True)
    shutil.copyfile(MINI, root / "trajs" / MINI.name)
    (root / "run-a" / "deep").mkdir(parents=True)
    c = Claude()
    append(root / "run-a" / "deep" / "2f1c.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    gold = ["--gold", str(s.gold), "--repo", str(s.repo)]
    out = tmp_path / "replayed.jsonl"
    assert main(["replay", str(root), *gold, "--out", str(out), "--quiet"]) in (0, 1)
    replayed = sorted(orjson.loads(x)["run_id"] for x in out.read_bytes().splitlines())
    w = watcher(root, load_resources(str(s.gold), None, str(s.repo)), tmp_path)
    w.scan()
    w.poll_all()
    watched = sorted(r.session.identity.run_id for r in w.table.runs.values())
    live = tmp_path / "live.jsonl"
    assert main(["replay", str(root), *gold, "--live", "--speed", "1000", "--port", "0",
                 "--linger", "0", "--out", str(live), "--quiet"]) in (0, 1)   # no gold: unscored
    played = sorted(orjson.loads(x)["run_id"] for x in live.read_bytes().splitlines())
    # the Claude session names itself (its session id, as everywhere); the document by path
    assert replayed == watched == played == ["s1", f"trajs/{MINI.name[:-len('.traj.json')]}"]
    assert [name for _p, name in traces_of([root])] == ["run-a/deep/2f1c.jsonl", f"trajs/{MINI.name}"]


def test_the_live_table_shows_run_ids_whole(env, tmp_path):
    s, runs, res = env
    long_id = "experiment-2026-11/with-agents-md/seed-3/" + "x" * 30
    d = runs / "r"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": long_id}))
    c = Claude()
    append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 20))
    w = watcher(runs, res, tmp_path)
    w.scan()
    w.poll_all()
    out = io.StringIO()
    LiveTable(out)(w)
    header, row = out.getvalue().splitlines()
    assert row.startswith(long_id + " ") and header.index("step") == len(long_id) + 1 + 1
