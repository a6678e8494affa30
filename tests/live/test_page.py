"""The page's HTTP side on a real server over a real watcher: its policy headers, read-only
methods, the loopback Host check, ETag/304 and deltas of the fleet, a run's detail equal
to its record, journals pruned, and ``/metrics`` answered while page requests hang."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from pathlib import Path

import pytest
from claude_run import APP, UTIL, Claude, append, started, watcher

from streameval.live.page import PageRoutes
from streameval.live.pages import NO_OUT, mount_live_page
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher
from streameval.report.page_html import CSP_LIVE
from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.web import SCRIPTS, asset


class Page:
    """A watcher driven by hand, served with its page on a free port."""

    def __init__(self, w):
        self.w = w
        self.server, _reg, self.port = serve(w.table, "127.0.0.1", 0)
        self.pages = mount_live_page(self.server.app, w)

    def get(self, path: str, headers: dict | None = None, method: str = "GET"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body

    def json(self, path: str, headers: dict | None = None):
        status, h, body = self.get(path, headers)
        assert status == 200, (status, body)
        return h, json.loads(body)

    def close(self):
        self.server.close()


def run_dir(runs: Path, run_id: str, instance: str = "demo__demo-1") -> Path:
    d = runs / run_id
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": run_id}))
    return d / "trace.jsonl"


@pytest.fixture
def page(env, tmp_path):
    s, runs, res = env
    c = Claude()
    trace = run_dir(runs, "one")
    append(trace, c.init(), *c.read("src/util.py", UTIL, 1, 3), *c.read("src/app.py", APP, 1, 12))
    w = watcher(runs, res, tmp_path, keep_finished=0.0)
    p = Page(w)   # mounted first: every run gets its journal from its first event
    p.trace, p.claude, p.runs = trace, c, runs
    w.scan()
    w.poll_all()
    try:
        yield p
    finally:
        p.close()


def test_every_page_answer_carries_the_policy(page):
    for path in ("/", "/runs/one", "/static/app.js", "/api/runs", "/api/runs/one"):
        status, h, _b = page.get(path)
        assert status == 200, path
        assert h["content-security-policy"] == CSP_LIVE
        assert h["x-content-type-options"] == "nosniff"
        assert h["referrer-policy"] == "no-referrer" and h["x-frame-options"] == "DENY"
    assert "'unsafe-inline'" not in CSP_LIVE and "'unsafe-eval'" not in CSP_LIVE
    status, h, body = page.get("/")
    assert h["content-type"].startswith("text/html")
    html = body.decode()
    assert "<script>" not in html and "style=" not in html   # nothing inline
    assert [f"/static/{n}" for n in SCRIPTS] == [
        line.split('"')[1] for line in html.splitlines() if line.startswith("<script src=")]


def test_the_page_is_read_only(page):
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, h, _b = page.get("/api/runs", method=method)
        assert status == 405 and h["allow"] == "GET, HEAD"


def test_assets_are_the_package_files_and_nothing_else(page):
    status, h, body = page.get("/static/fleet.js")
    assert status == 200 and body == asset("fleet.js")[0]
    assert h["content-type"].startswith("text/javascript")
    status, _h, _b = page.get("/static/fleet.js", {"If-None-Match": h["etag"]})
    assert status == 304
    for bad in ("/static/../__init__.py", "/static/__init__.py", "/static/", "/static/x.js"):
        assert page.get(bad)[0] == 404, bad


def test_a_foreign_host_header_is_refused_on_a_loopback_bind(page):
    """DNS rebinding: a web site whose name resolves to 127.0.0.1 cannot read the page."""
    assert page.get("/api/runs", {"Host": "evil.example"})[0] == 403
    assert page.get("/", {"Host": f"attacker.test:{page.port}"})[0] == 403
    for host in (f"127.0.0.1:{page.port}", f"localhost:{page.port}", "[::1]", "localhost"):
        assert page.get("/api/runs", {"Host": host})[0] == 200, host


def test_the_fleet_is_a_304_until_a_run_moves_then_only_that_run(page):
    c2 = Claude()
    append(run_dir(page.runs, "two"), c2.init(), *c2.read("src/util.py", UTIL, 1, 5))
    page.w.scan()
    page.w.poll_all()
    h, full = page.json("/api/runs")
    assert full["full"] is True and sorted(r["id"] for r in full["runs"]) == ["one", "two"]
    tag = full["gen"]
    assert h["etag"] == f'"{tag}"'
    status, _h, _b = page.get(f"/api/runs?since={tag}", {"If-None-Match": h["etag"]})
    assert status == 304
    append(page.trace, *page.claude.read("src/app.py", APP, 13, 20))
    page.w.changed(page.trace)
    _h, delta = page.json(f"/api/runs?since={tag}", {"If-None-Match": h["etag"]})
    assert delta["full"] is False and [r["id"] for r in delta["runs"]] == ["one"]
    assert delta["runs"][0]["steps"] == 3 and delta["removed"] == []
    # a run that leaves the table is named in `removed`
    (page.runs / "two" / "trace.jsonl").unlink()
    page.w.changed(page.runs / "two" / "trace.jsonl", deleted=True)
    page.w.tick(now=page.w.started_at + 10)
    _h, gone = page.json(f"/api/runs?since={delta['gen']}")
    assert gone["removed"] == ["two"] and gone["runs"] == []
    # a page of another process (a restarted watcher), or no page at all: in full
    _h, other = page.json("/api/runs?since=0000.1")
    assert other["full"] is True and [r["id"] for r in other["runs"]] == ["one"]


def test_a_run_answer_is_its_record_and_a_304_while_it_stands(page, env):
    _s, _runs, res = env
    h, detail = page.json("/api/runs/one")
    record = evaluate_trace(page.trace, res, root=page.runs)[0]
    assert detail["curve"]["n"] == record["num_steps"] == 2
    assert [p[1:] for p in detail["curve"]["points"]] == [
        [s["coverage"][g] for g in ("file", "symbol", "span", "line")]
        for s in record["trajectory"]["steps"]]
    for g in ("file", "symbol", "span", "line"):
        assert detail["run"]["final"][g]["coverage"] == record["final"][g]["coverage"]
        assert detail["run"]["final"][g]["precision"] == record["final"][g]["precision"]
        assert detail["run"]["auc"][g] == record["trajectory"]["auc_coverage"][g]
    assert [c["n"] for c in detail["calls"]["rows"]] == [1, 2]
    assert detail["calls"]["rows"][1]["coverage"] == [
        record["trajectory"]["steps"][1]["coverage"][g] for g in ("file", "symbol", "span", "line")]
    app_py = next(f for f in detail["gold"] if f["file"] == "src/app.py")
    assert app_py["init"] == [[4, 9]] and app_py["read"] == [[1, 12, 2]] and app_py["lines"] == 60
    assert page.get("/api/runs/one", {"If-None-Match": h["etag"]})[0] == 304
    append(page.trace, *page.claude.read("src/app.py", APP, 13, 20))
    page.w.changed(page.trace)
    assert page.get("/api/runs/one", {"If-None-Match": h["etag"]})[0] == 200


def test_unknown_runs_and_bad_queries(page):
    assert page.get("/api/runs/nobody")[0] == 404
    assert page.get("/api/runs/one?calls_from=x")[0] == 400
    quoted = urllib.parse.quote("one/../one", safe="")
    assert page.get(f"/api/runs/{quoted}")[0] == 404


def test_a_run_is_named_by_a_query_as_well_as_by_its_path(page):
    """``.`` and ``..`` are resolved away in a path by every browser: a query names any run."""
    h_path, by_path = page.json("/api/runs/one")
    h_query, by_query = page.json("/api/run?id=one&calls_from=0")
    assert by_query == by_path and h_query["etag"] == h_path["etag"]
    assert page.get("/api/run")[0] == 400
    assert page.get("/api/run?id=nobody")[0] == 404
    assert page.get("/api/run?id=one&calls_from=x")[0] == 400
    status, h, _b = page.get("/runs?id=..")
    assert status == 200 and h["content-type"].startswith("text/html")


def finished_row(p: Page) -> dict:
    p.w.followers[p.trace].finish("idle")
    p.w.tick(now=p.w.started_at + 1)   # settles the run: its record is due (grace 0)
    _h, fleet = p.json("/api/runs")
    (row,) = fleet["runs"]
    assert row["state"] == "finished"
    return row


@pytest.mark.parametrize("writes", [True, False], ids=["out", "no-out"])
def test_a_record_is_said_written_only_when_it_is(env, tmp_path, writes):
    """A watcher with no --out settles a run as if its record were written: the page said
    "record written ✓" of a run of which nothing was written."""
    _s, runs, res = env
    c = Claude()
    trace = run_dir(runs, "one")
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 12))
    out = tmp_path / "out.jsonl" if writes else None
    w = Watcher(WatchConfig(root=runs, out=out, idle_timeout=3600, patch_grace=0.0,
                            rescan_interval=0.0, keep_finished=3600), res)
    p = Page(w)
    p.trace = trace
    try:
        w.scan()
        w.poll_all()
        assert finished_row(p)["record"] is writes
        assert w.table.runs[str(trace)].record_written   # settled either way
        assert (NO_OUT in p.json("/api/runs/one")[1]["notes"]) is not writes
        if writes:
            assert out.read_text().count("\n") == 1
    finally:
        p.close()


def test_a_finished_runs_row_still_says_its_last_call(page):
    """A finished run's session lets its last call go (release_reading): its row said
    nothing in the fleet's last column."""
    run = page.w.table.runs[str(page.trace)]
    run.session.release_reading()
    run.session.version += 1   # the row is built again
    _h, fleet = page.json("/api/runs")
    assert [r["last"] for r in fleet["runs"]] == ["Read /workspace/demo/src/app.py"]


def test_a_run_not_scored_has_no_steps_nor_editloc_as_its_record(env, tmp_path):
    """A run whose gold names no file of the repository given: its record is an error
    record, and its row carries no number beside the error (not 14 steps and EditLoc 1.00
    beside a curve of no steps)."""
    s, runs, _res = env
    with s.gold.open("a") as f:
        f.write(json.dumps({"instance_id": "nowhere__nowhere-1", "repo": "demo/demo",
                            "base_commit": s.sha, "language": "python",
                            "init_ctx": [{"file": "src/nowhere.py", "start_line": 1, "end_line": 3}]}) + "\n")
    res = load_resources(str(s.gold), None, str(s.repo))
    c = Claude()
    trace = run_dir(runs, "one", instance="nowhere__nowhere-1")
    append(trace, c.init(), *c.read("src/app.py", APP, 1, 12), *c.read("src/util.py", UTIL, 1, 5))
    p = Page(watcher(runs, res, tmp_path, keep_finished=3600))
    p.trace = trace
    try:
        p.w.scan()
        p.w.poll_all()
        row = finished_row(p)
        assert row["error"].startswith("gold_not_in_repo")
        assert row["steps"] is None and row["editloc"] is None and row["final"] is None
        assert row["redundancy"] is None and row["calls"] == 2
        _h, detail = p.json("/api/runs/one")
        assert detail["curve"]["n"] == 0
    finally:
        p.close()


def test_journals_leave_with_their_runs_and_old_calls_are_dropped(page):
    pages = page.pages
    run = page.w.table.runs[str(page.trace)]
    assert pages.journal(run) is not None and pages.journal(run).n == 2
    pages.keep_calls = 0
    page.w.followers[page.trace].finish("idle")
    pages.prune(now=1e12)
    assert pages.journal(run).calls_forgotten and pages.journal(run).calls == []
    _h, detail = page.json("/api/runs/one")
    assert detail["calls"]["forgotten"] is True
    assert any("streameval inspect" in n for n in detail["notes"])
    assert detail["curve"]["n"] == 2   # the curve and strips stay
    page.w.table.remove(run.key)
    pages.prune(now=2e12)
    assert pages.journal(run) is None and pages._journals == {}


class Stuck:
    """A page source whose answers hang until released."""

    def __init__(self):
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def fleet(self, since):
        self.entered.release()
        self.release.wait(30)
        return {"gen": "x.0", "full": True, "runs": [], "removed": []}

    def run(self, run_id, calls_from):
        return None


def test_metrics_answer_while_page_requests_hang(env, tmp_path):
    _s, runs, res = env
    w = started(runs, res, tmp_path)
    server, _reg, port = serve(w.table, "127.0.0.1", 0)
    source = Stuck()
    PageRoutes(source).mount(server.app)
    results: list[int] = []

    def ask() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/api/runs")
        results.append(conn.getresponse().status)
        conn.close()

    askers = [threading.Thread(target=ask) for _ in range(6)]   # more than the page's threads
    try:
        for t in askers:
            t.start()
        for _ in range(2):
            assert source.entered.acquire(timeout=30)   # both page threads are held
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        assert resp.status == 200 and b"streameval_lines_processed_total" in resp.read()
        conn.close()
        assert results == []   # the page requests were still hanging meanwhile
    finally:
        source.release.set()
        for t in askers:
            t.join(60)
        server.close()
    assert results == [200] * 6
