"""Run identity (docs/metrics.md §5 "Identity"): no two traces share a label set, the
run id comes from the trace, records and the CSV name the trace, agent and model are read
from the trace by ``watch`` as by ``replay``, and runs that cannot be scored are said."""

from __future__ import annotations

import csv
import logging
import re
import shutil
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from streameval.commands.main import main
from streameval.live.exporter import RunsCollector
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.resources import load_resources

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "claude-session"


def _runs(tmp_path: Path) -> Path:
    """Nine real Claude Code transcripts flat under runs/ (two pairs of a main transcript and
    its sub-agent's, sharing a session id: flat, the sub-agent's is no part of its session,
    whose file is not at ``<session>.jsonl``) and one copied under seed1/ and seed2/."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for src in sorted(REAL.glob("*.jsonl")):
        shutil.copyfile(src, runs / src.name.split("__")[-1])
    for seed in ("seed1", "seed2"):
        (runs / seed / "inst").mkdir(parents=True)
        shutil.copyfile(REAL / "claude-session__jnarowski__agentcmd__full-session-four.jsonl",
                        runs / seed / "inst" / "session.jsonl")
    return runs


def _info_series(text: str) -> list[dict[str, str]]:
    out = []
    for line in text.splitlines():
        if line.startswith("streameval_run_info{"):
            out.append(dict(re.findall(r'(\w+)="([^"]*)"', line)))
    return out


def test_no_two_traces_share_a_label_set_and_ids_come_from_the_trace(tmp_path, caplog):
    runs = _runs(tmp_path)
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"instance_id": "other", "gold_context": []}\n')
    res = load_resources(str(gold), None, str(tmp_path))
    w = Watcher(WatchConfig(root=runs, globs=("*.jsonl",)), res)
    with caplog.at_level(logging.WARNING, logger="streameval.live.table"):
        w.scan()
        w.poll_all()
        w.poll_all()   # read again: said and counted once per run
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    text = generate_latest(reg).decode()
    series = _info_series(text)
    assert len(series) == 11
    labels = {(s["run_id"], s["instance_id"], s["agent"], s["model"]) for s in series}
    assert len(labels) == 11                            # eleven runs, eleven label sets
    ids = {s["run_id"] for s in series}
    assert "fe5e1c67-53e7-4862-81ae-d0e013e3270b" in ids  # the session id, not "watch5"
    # a sub-agent's transcript read alone is named for its session and its agent; two
    # copies of one session share its id, and the second is told apart
    assert sum(i.startswith("c45af7b1-cb7c-4e51-93db-8cbb250a877a") for i in ids) == 2
    assert "c45af7b1-cb7c-4e51-93db-8cbb250a877a/agent-af1ff21" in ids
    assert "8463c716-a2ea-4c14-9efa-87158ebd9f20/agent-a7be2f0" in ids
    assert sum(i.startswith("2d984148-cddb-4605-aac1-13e720fe613c") for i in ids) == 3
    # agent and model from the trace (no meta.json anywhere)
    assert {s["agent"] for s in series} == {"claude-code"}
    assert "claude-sonnet-4-20250514" in {s["model"] for s in series}
    # no gold row names any: each is a run measured on its gold-free signals, flagged
    assert 'streameval_unscored_runs_total{reason="missing_gold"}' not in text
    assert len(re.findall(r'streameval_run_problems\{[^}]*reason="no_gold"[^}]*\} 1\.0', text)) == 11
    assert not [r for r in caplog.records if "cannot be scored" in r.getMessage()]


def test_replay_names_runs_as_watch_does_with_trace_and_csv_columns(tmp_path):
    runs = _runs(tmp_path)
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"instance_id": "other", "gold_context": []}\n')
    out, table = tmp_path / "records.jsonl", tmp_path / "records.csv"
    code = main(["replay", str(runs), "--gold", str(gold), "--repo", str(tmp_path),
                 "--out", str(out), "--csv", str(table), "--quiet"])
    assert code == 1   # nothing could be scored, every run has its error record
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len({r["run_id"] for r in records}) == len(records) == 11
    traces = {r["trace"] for r in records}
    assert "seed1/inst/session.jsonl" in traces and "seed2/inst/session.jsonl" in traces
    # the watcher hands out the same ids, in the same order
    res = load_resources(str(gold), None, str(tmp_path))
    w = Watcher(WatchConfig(root=runs, globs=("*.jsonl",)), res)
    w.scan()
    w.poll_all()
    watched = {r.session.identity.trace: r.session.identity.run_id for r in w.table.runs.values()}
    assert watched == {r["trace"]: r["run_id"] for r in records}
    with table.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(row["run_id"], row["trace"]) for row in rows] == \
        [(r["run_id"], r["trace"]) for r in records]


# ------------------------------------------------------------------ across a restart (issue 31)

def _colliding_run(runs: Path, s, name: str, lines: bool = True) -> Path:
    """A run whose meta.json says ``run_id: hidden-claude`` (a harness's template copied),
    one call long so far (or an empty file, not started yet)."""
    import json

    from claude_run import APP, Claude, append

    d = runs / name
    d.mkdir(exist_ok=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "hidden-claude"}))
    (d / "trace.jsonl").touch()
    if lines:
        c = Claude()
        append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 10))
    return d / "trace.jsonl"


@pytest.mark.parametrize("saved", ["never", "before_the_last", "after_all"])
def test_colliding_run_ids_survive_a_kill_whatever_order_traces_are_read_again(env, tmp_path, saved):
    """The run that started first keeps the bare id; a restart reads its checkpoint's
    files (in the order they appeared) and then the rest (in path order). On f53415f
    the first of those to ask took the bare id: astropy's file appeared first but its
    run started after svelte's, and svelte's run became ``hidden-claude~d4ac62`` (as in
    the issue)."""
    from claude_run import watcher

    s, runs, res = env
    cp = tmp_path / "cp.json"
    w = watcher(runs, res, tmp_path, checkpoint=cp)
    w.changed(_colliding_run(runs, s, "astropy", lines=False))   # appears, no line yet
    for name in ("svelte", "astropy", "xarray"):
        w.changed(_colliding_run(runs, s, name))
        if saved == "before_the_last" and name == "astropy":
            w.save_checkpoint()
    if saved == "after_all":
        w.save_checkpoint()
    given = {Path(r.key).parent.name: r.session.identity.run_id for r in w.table.runs.values()}
    assert given["svelte"] == "hidden-claude"
    w.claims.close()   # killed: what is on disk is all that is left
    again = watcher(runs, res, tmp_path, checkpoint=cp)
    again.start()
    ids = {Path(r.key).parent.name: r.session.identity.run_id for r in again.table.runs.values()}
    assert ids == given
