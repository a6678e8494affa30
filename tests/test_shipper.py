"""The shipper under deploy/ against a real watcher with --ingest endpoints: the
trace it follows arrives whole, and the record equals replay of the file it shipped."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from claude_run import APP, UTIL, Claude, append, make_setup, watcher  # noqa: E402

from streameval.live.ingest import SPOOL_NAME, ingest_routes  # noqa: E402
from streameval.live.server import serve  # noqa: E402
from streameval.runs.evaluate import evaluate_trace  # noqa: E402
from streameval.runs.resources import load_resources  # noqa: E402

SHIP = Path(__file__).resolve().parents[1] / "deploy" / "shipper" / "ship.py"


def test_the_shipper_pushes_a_growing_trace_whole(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    res = load_resources(str(s.gold), None, str(s.repo))
    w = watcher(runs, res, tmp_path)
    app = ingest_routes(w, "tok")
    server, _reg, port = serve(w.table, "127.0.0.1", 0, ingest=app)
    sandbox = tmp_path / "sandbox" / "trace.jsonl"
    sandbox.parent.mkdir()
    c = Claude()
    append(sandbox, c.init(), *c.read("src/app.py", APP, 1, 20))
    proc = subprocess.Popen([sys.executable, str(SHIP), str(sandbox), "sbx-1", "--url",
                             f"http://127.0.0.1:{port}", "--instance", s.instance, "--idle", "1.5"],
                            env={"STREAMEVAL_INGEST_TOKEN": "tok", "PATH": "/usr/bin:/bin"})
    try:
        time.sleep(0.5)
        append(sandbox, *c.read("src/util.py", UTIL, 1, 5))
        with open(sandbox, "ab") as fh:
            fh.write(c.result())          # the last line, never ended by a newline
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        server.close()
    shipped = runs / SPOOL_NAME / "lines" / "sbx-1" / "trace.jsonl"
    assert shipped.read_bytes() == sandbox.read_bytes() + b"\n"
    (rec,) = evaluate_trace(shipped, res, root=runs)
    (own,) = evaluate_trace(sandbox, res, instance=s.instance)
    assert rec["final"] == own["final"] and rec["num_steps"] == own["num_steps"] == 2
