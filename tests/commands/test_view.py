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


# --------------------------------------------------------------------------- issue 32


def _data(html: Path) -> dict:
    return orjson.loads(re.search(r'id="se-data">(.*?)</script>', html.read_text(), re.S).group(1))


def test_a_trace_given_for_records_is_refused_saying_what_it_is(tmp_path, capsys):
    """Before: ``view trace.jsonl --html`` exited 0, "wrote (49 runs)": a blank row per line."""
    trace = EX / "runs" / "example-run-1" / "trace.jsonl"
    out = tmp_path / "page.html"
    assert main(["view", str(trace), "--html", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"streameval view: {trace} holds no records (it is a claude trace)" in err
    assert f"Score the trace first: streameval replay {trace} --gold GOLD" in err
    assert not out.exists()
    other = tmp_path / "other.jsonl"
    other.write_text('{"name": "not a record"}\n')
    assert main(["view", str(other), "--html", str(out)]) == 2
    assert "holds no records (line 1: an object (keys name))" in capsys.readouterr().err
    # records among other lines: the records are shown, the rest said and skipped
    records = replay(EX / "runs", tmp_path / "r.jsonl")
    records.write_bytes(records.read_bytes() + b'{"name": "not a record"}\n')
    assert main(["view", str(records), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"streameval view: wrote {out} (1 run)"


def test_traces_not_found_are_said_with_the_paths_tried(tmp_path, capsys, monkeypatch):
    """Before: a wrong --traces, or records of two replays (their ``trace`` relative to
    different folders), exited 0 in silence, and each run page said "no trace found for
    it" without the path it tried."""
    monkeypatch.chdir(tmp_path)
    records = tmp_path / "both.jsonl"
    records.write_bytes(replay(EX / "runs", tmp_path / "a.jsonl").read_bytes()
                        + replay(EX / "backtest", tmp_path / "b.jsonl").read_bytes())
    capsys.readouterr()
    out = tmp_path / "page.html"
    sources = ["--gold", str(EX / "gold.jsonl"), "--repo", str(EX / "repo")]
    assert main(["view", str(records), *sources, "--traces", str(EX / "runs"),
                 "--html", str(out)]) == 1
    tried = [EX.resolve() / "runs" / "late-find-1" / "trace.jsonl",
             tmp_path / "late-find-1" / "trace.jsonl"]
    err = capsys.readouterr().err
    assert ("streameval view: the traces of 2 of 3 runs were not found, so their pages show "
            f"no calls and no gold strips (run late-find-1: tried {tried[0]} and {tried[1]}); "
            "--traces DIR is the directory replay was given") in err
    runs = dict(_data(out)["runs"])
    assert runs["example-run-1"]["unavailable"] is None and runs["example-run-1"]["calls"]["rows"]
    why = runs["late-find-1"]["unavailable"]
    assert why.startswith(f"no trace found for it: tried {tried[0]} and {tried[1]}")
    assert runs["late-find-1"]["notes"] == [why] and runs["late-find-1"]["gold"] is None

    assert main(["view", str(tmp_path / "b.jsonl"), *sources, "--traces", str(EX / "backtest"),
                 "--html", str(out)]) == 0
    assert all(d["unavailable"] is None for _, d in _data(out)["runs"])


def test_view_busy_port_and_unknown_run_are_said(tmp_path):
    """Before: a port in use was "cannot serve metrics" (view serves no metrics), and an
    unknown run's answer said "no such run" without the run."""
    import json
    import signal
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    records = replay(EX / "runs", tmp_path / "r.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "streameval", "view", str(records),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        first = proc.stdout.readline()
        assert "(1 run; Ctrl-C stops)" in first
        base = first[first.index("http://"):].split("/ ")[0]
        port = base.rsplit(":", 1)[1]
        again = subprocess.run([sys.executable, "-m", "streameval", "view", str(records),
                                "--port", port], capture_output=True, text=True, timeout=60)
        assert again.returncode == 2
        assert f"streameval view: cannot serve the page on 127.0.0.1:{port}: " in again.stderr
        try:
            urllib.request.urlopen(base + "/api/runs/nobody", timeout=30)
            raise AssertionError("answered")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
            body = json.loads(exc.read())
        assert body["run"] == "nobody"
        assert body["error"].startswith("no run 'nobody' here: the fleet page (/) lists the runs")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
