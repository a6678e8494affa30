"""The custom collector, read through a fresh CollectorRegistry (no global state)."""

from __future__ import annotations

import json

import pytest
from claude_run import APP, UTIL, Claude, edit_lines, make_setup
from prometheus_client import CollectorRegistry, generate_latest

from streameval.live.exporter import RunsCollector
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.resources import load_resources


def setup(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "demo__demo-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r1",
                                             "agent": "claude-code", "model": "m"}))
    c = Claude()
    lines = [c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 3),
             *edit_lines(c, "src/app.py", "def f2(x):\n    return x + 2\n", "def f2(x):\n    return x * 2\n")]
    (d / "trace.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    w = Watcher(WatchConfig(root=runs, keep_finished=10.0), load_resources(str(s.gold), None, str(s.repo)))
    w.scan()
    w.poll_all()
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    return w, reg, d


LABELS = {"run_id": "r1", "instance_id": "demo__demo-1", "agent": "claude-code", "model": "m"}


def test_run_series_carry_the_state_numbers(tmp_path):
    w, reg, _ = setup(tmp_path)
    get = reg.get_sample_value
    assert get("streameval_coverage_ratio", {**LABELS, "granularity": "file"}) == 1.0
    assert get("streameval_coverage_ratio", {**LABELS, "granularity": "line"}) == 1.0
    # line gold is init_ctx only (6 lines); predicted: app.py 1-20 and util.py 1-3
    assert get("streameval_precision_ratio", {**LABELS, "granularity": "line"}) == 6 / 23
    # F1 = 2PR/(P+R) = 2 · (6/23) · 1 / (6/23 + 1) = 12/29
    assert get("streameval_f1_ratio", {**LABELS, "granularity": "line"}) == pytest.approx(12 / 29)
    assert get("streameval_f1_ratio", {**LABELS, "granularity": "file"}) == pytest.approx(
        2 * get("streameval_precision_ratio", {**LABELS, "granularity": "file"})
        / (1 + get("streameval_precision_ratio", {**LABELS, "granularity": "file"})))
    assert get("streameval_steps_total", LABELS) == 2.0
    assert get("streameval_tool_calls_total", {**LABELS, "category": "read"}) == 2.0
    assert get("streameval_tool_calls_total", {**LABELS, "category": "edit"}) == 1.0
    assert get("streameval_read_lines", LABELS) == 23.0
    # both reads' text is the base text: every shown line placed by its text
    assert get("streameval_shown_lines_total", {**LABELS, "outcome": "aligned"}) == 23.0
    assert get("streameval_shown_lines_total", {**LABELS, "outcome": "agent_written"}) == 0.0
    assert get("streameval_shown_lines_total", {**LABELS, "outcome": "unaligned"}) == 0.0
    assert get("streameval_gold_size", {**LABELS, "granularity": "line"}) == 6.0
    # the edit deleted base lines 4-5 of src/app.py, inside init_ctx 4-9: provisional 1.0
    assert get("streameval_editloc_recall_ratio", {**LABELS, "final": "false"}) == 1.0
    assert get("streameval_editloc_recall_ratio", {**LABELS, "final": "true"}) is None
    assert get("streameval_first_gold_read_steps", {**LABELS, "level": "line"}) == 1.0
    assert get("streameval_run_info", {**LABELS, "format": "claude", "state": "active"}) == 1.0
    assert get("streameval_sessions", {"state": "active"}) == 1.0
    assert get("streameval_lines_processed_total") == 7.0
    # the trace was written before the watcher started: backlog, not lag
    assert get("streameval_lag_seconds_count") == 0.0
    assert get("streameval_cache_misses_total", {"cache": "files"}) >= 1.0
    text = generate_latest(reg).decode()
    assert "# TYPE streameval_steps_total counter" in text


def test_patch_landing_makes_editloc_final(tmp_path):
    w, reg, d = setup(tmp_path)
    (d / "patch.diff").write_text("--- a/src/app.py\n+++ b/src/app.py\n@@ -1,1 +1,1 @@\n"
                                  "-def f1(x):\n+def f1(y):\n")
    w.changed(d / "patch.diff")
    get = reg.get_sample_value
    assert get("streameval_editloc_recall_ratio", {**LABELS, "final": "true"}) == 0.0
    assert get("streameval_editloc_recall_ratio", {**LABELS, "final": "false"}) is None


def test_finished_runs_are_dropped_after_the_keep_time(tmp_path):
    w, reg, d = setup(tmp_path)
    f = next(iter(w.followers.values()))
    f.finish("end", now=1000.0)
    assert reg.get_sample_value("streameval_sessions", {"state": "finished"}) == 1.0
    assert reg.get_sample_value("streameval_run_info",
                                {**LABELS, "format": "claude", "state": "finished"}) == 1.0
    w.table.expire(now=1005.0)
    assert reg.get_sample_value("streameval_steps_total", LABELS) == 2.0
    w.table.expire(now=1011.0)
    assert reg.get_sample_value("streameval_steps_total", LABELS) is None
    assert reg.get_sample_value("streameval_sessions", {"state": "finished"}) == 0.0


def test_served_metrics_are_the_bytes_prometheus_client_would_write(tmp_path):
    """/metrics is rendered by the exporter's own fast path; it must stay byte-equal to
    prometheus_client's encoders, tricky label values included."""
    import urllib.request

    from prometheus_client.exposition import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_om

    from streameval.live.server import serve

    w, reg, d = setup(tmp_path)
    odd = tmp_path / "runs" / "odd"
    odd.mkdir()
    (odd / "meta.json").write_text(json.dumps({"instance_id": "demo__demo-1",
                                               "run_id": 'q"b\\s\nn', "agent": "ägent",
                                               "model": "m"}))
    (odd / "trace.jsonl").write_bytes((d / "trace.jsonl").read_bytes() + b"{broken\n")
    w.scan()
    w.poll_all()
    server, _sreg, port = serve(w.table, "127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read()
        om_req = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        with urllib.request.urlopen(om_req, timeout=10) as r:
            om = r.read()
    finally:
        server.close()
    # quotes and backslashes escaped; a control character (the newline) exported as '?'
    assert 'run_id="q\\"b\\\\s?n"' in text.decode()
    assert text == generate_latest(reg)
    assert om == generate_om(reg)


def test_a_huge_label_value_is_capped_and_long_values_stay_distinct(tmp_path):
    from streameval.live.exporter import MAX_LABEL, label_value

    w, reg, d = setup(tmp_path)
    # 300 KB each: meta.json itself is capped at 1 MiB (sidefiles.SMALL)
    for name, model in (("big1", "m" * 300_000), ("big2", "m" * 300_000 + "x")):
        run = tmp_path / "runs" / name
        run.mkdir()
        (run / "meta.json").write_text(json.dumps({"instance_id": "demo__demo-1", "run_id": name,
                                                   "agent": "a", "model": model}))
        (run / "trace.jsonl").write_bytes((d / "trace.jsonl").read_bytes())
    w.scan()
    w.poll_all()
    text = generate_latest(reg).decode()
    assert len(text) < 200_000, len(text)   # 300 KB per series would be ~15 MB
    models = {line.split('model="')[1].split('"')[0] for line in text.splitlines()
              if line.startswith("streameval_run_info{") and 'run_id="big' in line}
    assert len(models) == 2 and all(len(m) <= MAX_LABEL for m in models)
    assert label_value("plain-model") == "plain-model"


def test_a_scrape_does_not_wait_behind_a_long_batch(tmp_path):
    """A tool call that takes long to process holds the table lock while its run moves:
    the scrape is served within the wait, from the previous scrape's rows, and says
    how many. (A run that did not move is served from its rows without the lock.)"""
    import threading

    w, reg, d = setup(tmp_path)
    first = generate_latest(reg)
    held, release = threading.Event(), threading.Event()

    def long_batch():
        with w.table.lock:
            for run in w.table.runs.values():
                run.session.version += 1   # mid-way through a line of this run
            held.set()
            release.wait(30)

    t = threading.Thread(target=long_batch)
    t.start()
    held.wait()
    try:
        # it cannot wait for the lock: the lock goes only after it returns, and a
        # scrape that took the lock late would show no stale run
        during = generate_latest(reg)
    finally:
        release.set()
        t.join()
    stale = [ln for ln in during.decode().splitlines() if ln.startswith("streameval_stale_runs ")]
    assert stale == ["streameval_stale_runs 1.0"]
    runs_rows = [ln for ln in during.decode().splitlines() if ln.startswith("streameval_coverage_ratio")]
    assert runs_rows == [ln for ln in first.decode().splitlines() if ln.startswith("streameval_coverage_ratio")]


def test_a_runs_problems_are_a_gauge_by_reason_and_a_flag_goes_when_it_stops_holding(tmp_path):
    """docs/metrics.md §5b: per-call problems count up; a run-level flag is 1 while it
    holds (``nothing_read`` until the first read), so the family is a gauge."""
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "demo__demo-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "r1",
                                             "agent": "claude-code", "model": "m"}))
    c = Claude()
    outside = c.read("x", "127.0.0.1 localhost\n", 1, 5)
    use = json.loads(outside[0])
    use["message"]["content"][0]["input"]["file_path"] = "/etc/hosts"
    trace = d / "trace.jsonl"
    trace.write_bytes(b"\n".join([c.init(), json.dumps(use).encode(), outside[1]]) + b"\n")
    w = Watcher(WatchConfig(root=runs), load_resources(str(s.gold), None, str(s.repo)))
    w.scan()
    w.poll_all()
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    get = reg.get_sample_value
    assert get("streameval_run_problems", {**LABELS, "reason": "nothing_read"}) == 1.0
    assert get("streameval_run_problems", {**LABELS, "reason": "mostly_outside_repo"}) == 1.0
    assert get("streameval_run_problems", {**LABELS, "reason": "path_outside_repo"}) == 1.0
    with open(trace, "ab") as fh:
        fh.write(b"\n".join([*c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 3)])
                 + b"\n")
    w.changed(trace)
    assert get("streameval_run_problems", {**LABELS, "reason": "nothing_read"}) is None
    assert get("streameval_run_problems", {**LABELS, "reason": "mostly_outside_repo"}) is None
    assert get("streameval_run_problems", {**LABELS, "reason": "path_outside_repo"}) == 1.0


def test_a_filtered_scrape_serves_every_name_asked_and_only_those(tmp_path):
    """``name[]`` as prometheus_client's handler takes it: the library's restricted
    registry found no collector of ours (they describe no names), so it came back empty."""
    import urllib.request

    from streameval.live.server import serve

    w, _reg, _d = setup(tmp_path)
    server, _sreg, port = serve(w.table, "127.0.0.1", 0)
    try:
        url = (f"http://127.0.0.1:{port}/metrics?name[]=streameval_coverage_ratio"
               "&name[]=streameval_lines_processed_total")
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
    finally:
        server.close()
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if not line.startswith("#")}
    assert names == {"streameval_coverage_ratio", "streameval_lines_processed_total"}
    assert 'run_id="r1"' in text
