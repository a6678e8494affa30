"""``streameval view``: the page over replay's records, as one self-contained file, and the
pictures of docs/getting-started.md made by the command itself (byte for byte the files it
shows)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from fixture_paths import ROOT

from streameval.commands.main import main

EX = ROOT / "examples"


def replay(inputs: Path, out: Path) -> Path:
    assert main(["replay", str(inputs), "--gold", str(EX / "gold.jsonl"), "--repo", str(EX / "repo"),
                 "--out", str(out), "--quiet"]) == 0
    return out


def test_the_getting_started_pictures_are_the_view_command_output(tmp_path):
    readme = (ROOT / "docs" / "getting-started.md").read_text()
    for runs, run_id, picture, title in (
            ("runs", "example-run-1", "example-run.svg", "example-run-1 (examples/runs): coverage per step"),
            ("backtest", "late-find-1", "late-find-run.svg", "late-find-1 (examples/backtest): coverage per step")):
        records = replay(EX / runs, tmp_path / f"{runs}.jsonl")
        out = tmp_path / picture
        assert main(["view", str(records), "--svg", str(out), "--run", run_id, "--title", title]) == 0
        assert out.read_bytes() == (ROOT / "docs" / picture).read_bytes(), picture
        assert f"--svg docs/{picture} --run {run_id}" in readme


def test_view_html_holds_every_run_with_its_calls_and_strips(tmp_path):
    records = replay(EX / "backtest", tmp_path / "r.jsonl")
    out = tmp_path / "page.html"
    assert main(["view", str(records), "--gold", str(EX / "gold.jsonl"), "--repo", str(EX / "repo"),
                 "--traces", str(EX / "backtest"), "--html", str(out)]) == 0
    html = out.read_text()
    data = orjson.loads(re.search(r'id="se-data">(.*?)</script>', html, re.S).group(1))
    ids = [r["id"] for r in data["fleet"]["runs"]]
    assert ids == ["late-find-1", "runaway-1"]
    detail = dict(data["runs"])["late-find-1"]
    record = orjson.loads(records.read_bytes().splitlines()[0])
    assert [p[1:] for p in detail["curve"]["points"]] == [
        [s["coverage"][g] for g in ("file", "symbol", "span", "line")]
        for s in record["trajectory"]["steps"]]
    assert len(detail["calls"]["rows"]) == record["tool_calls"]
    assert {f["file"] for f in detail["gold"]} == {"inventory/billing.py", "tests/test_billing.py"}
    assert detail["notes"] == ["edited lines: the patch (file)"]


def test_view_without_gold_shows_the_records_and_says_what_more_needs(tmp_path):
    records = replay(EX / "runs", tmp_path / "r.jsonl")
    out = tmp_path / "page.html"
    assert main(["view", str(records), "--html", str(out)]) == 0
    data = orjson.loads(re.search(r'id="se-data">(.*?)</script>', out.read_text(), re.S).group(1))
    (run_id, detail), = data["runs"]
    assert run_id == "example-run-1" and detail["curve"]["n"] == 14
    assert detail["gold"] is None and detail["calls"]["rows"] == []
    assert "give --gold and --repos" in detail["notes"][0]


def test_a_trace_that_scores_differently_today_is_said_and_the_record_kept(tmp_path):
    records = replay(EX / "runs", tmp_path / "r.jsonl")
    rec = orjson.loads(records.read_bytes())
    rec["final"]["line"]["coverage"] = 0.5
    records.write_bytes(orjson.dumps(rec) + b"\n")
    out = tmp_path / "page.html"
    assert main(["view", str(records), "--gold", str(EX / "gold.jsonl"), "--repo", str(EX / "repo"),
                 "--traces", str(EX / "runs"), "--html", str(out)]) == 0
    data = orjson.loads(re.search(r'id="se-data">(.*?)</script>', out.read_text(), re.S).group(1))
    detail = dict(data["runs"])["example-run-1"]
    assert detail["run"]["final"]["line"]["coverage"] == 0.5
    assert any("scores differently today (line coverage 0.5 -> 1.0)" in n for n in detail["notes"])


def test_view_usage_errors(tmp_path, capsys):
    assert main(["view", str(tmp_path / "none.jsonl")]) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["view", str(empty), "--html", str(tmp_path / "x.html")]) == 1
    records = replay(EX / "runs", tmp_path / "r.jsonl")
    assert main(["view", str(records), "--svg", str(tmp_path / "x.svg"), "--run", "nobody"]) == 2
    assert "no run 'nobody'" in capsys.readouterr().err


def test_view_serves_the_page_over_the_records(tmp_path):
    """Served: the same routes and policy as the watcher's page, the records' numbers."""
    import json
    import signal
    import subprocess
    import sys
    import urllib.request

    records = replay(EX / "backtest", tmp_path / "r.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "streameval", "view", str(records), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        base = first[first.index("http://"):].split("/ ")[0]
        with urllib.request.urlopen(base + "/api/runs", timeout=30) as r:
            fleet = json.loads(r.read())
            assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        assert [row["id"] for row in fleet["runs"]] == ["late-find-1", "runaway-1"]
        with urllib.request.urlopen(base + "/api/runs/late-find-1", timeout=30) as r:
            detail = json.loads(r.read())
        assert detail["curve"]["n"] == 12 and detail["run"]["state"] == "finished"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
