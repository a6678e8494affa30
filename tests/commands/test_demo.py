"""`streameval demo` (docs/getting-started.md) plays the example run live, prints
the table, and serves the same numbers on /metrics."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request

import orjson
from fixture_paths import ROOT

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources


def test_demo_plays_the_example_and_serves_its_metrics(tmp_path):
    out_file = tmp_path / "records.jsonl"
    log = tmp_path / "demo.out"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streameval", "demo", "--port", "0", "--speed", "40",
             "--linger", "20", "--out", str(out_file)],
            stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT)
    try:
        deadline = time.monotonic() + 90
        while b"final:" not in log.read_bytes():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        text = log.read_text()
        url = re.search(r"metrics on (http://127\.0\.0\.1:\d+/metrics)", text).group(1)
        with urllib.request.urlopen(url, timeout=5) as r:
            metrics = r.read().decode()
    finally:
        proc.terminate()
        proc.wait(20)
    assert "final: example-run-1: 14 steps" in text
    # the live table printed coverage rows as steps arrived
    assert len(re.findall(r"^example-run-1\s+\d+\s+\d+", text, re.M)) >= 10
    # the last column names the tool, then what it was asked (a Grep: its pattern)
    assert re.search(r"^example-run-1 .*  Grep bulk_discount$", text, re.M), text
    assert re.search(r"^example-run-1 .*  Read /workspace/inventory/README\.md$", text, re.M)
    assert text.index("metrics on") < text.index("last tool call")
    # the first call (a Glob) read no line: its line precision is no score, and says so
    assert re.search(r"^example-run-1\s+1\s+1\s.*\s1\.00\*  Glob ", text, re.M), text
    assert text.count("* nothing read at the line level yet") == 1
    line_cov = re.search(r'streameval_coverage_ratio\{[^}]*granularity="line"[^}]*\} (\S+)', metrics)
    assert line_cov and float(line_cov.group(1)) == 1.0
    assert 'streameval_editloc_recall_ratio{' in metrics and 'final="true"' in metrics
    # the record it wrote is the one replay gives for the same recorded trace
    ex = ROOT / "examples"
    replayed = evaluate_trace(ex / "runs" / "example-run-1" / "trace.jsonl",
                              load_resources(str(ex / "gold.jsonl"), None, str(ex / "repo")))
    assert out_file.read_bytes().splitlines()[-1] == orjson.dumps(replayed[0])
