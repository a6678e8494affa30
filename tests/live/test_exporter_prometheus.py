"""End to end: traces appended in a temp dir -> watcher -> exporter -> a real
Prometheus scraping it; the expected coverage must show up in its query API."""

from __future__ import annotations

import anyio
import pytest
from anyio.from_thread import start_blocking_portal
from claude_run import APP, UTIL, Claude, append, make_setup
from prom import PrometheusServer

from streameval.live.loop import run_watcher
from streameval.live.server import serve
from streameval.live.watch import WatchConfig, Watcher
from streameval.runs.resources import load_resources

pytestmark = pytest.mark.prometheus



class BackgroundWatcher:
    """The watcher's real async loop (watchfiles + ticker) in a blocking portal's thread."""

    def __init__(self, w: Watcher):
        self.w = w

    def __enter__(self):
        self._cm = start_blocking_portal()
        self.portal = self._cm.__enter__()
        self.stop = self.portal.call(anyio.Event)
        self.future, _ = self.portal.start_task(run_watcher, self.w, self.stop)
        return self

    def __exit__(self, *exc):
        self.portal.call(self.stop.set)
        self.future.result(timeout=30)
        self._cm.__exit__(*exc)


def test_coverage_reaches_prometheus_as_lines_are_appended(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    d = runs / "demo__demo-1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text('{"instance_id": "demo__demo-1", "run_id": "live-1", '
                                 '"agent": "claude-code", "model": "m"}')
    trace = d / "trace.jsonl"
    c = Claude()
    append(trace, c.init())
    w = Watcher(WatchConfig(root=runs, idle_timeout=3600, rescan_interval=1.0),
                load_resources(str(s.gold), None, str(s.repo)))
    server, _reg, port = serve(w.table, "127.0.0.1", 0)
    try:
        with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{port}"], "1s") as prom, \
                BackgroundWatcher(w):
            sel = 'streameval_coverage_ratio{run_id="live-1",granularity="%s"}'
            prom.wait_for(sel % "file", lambda r: r and float(r[0]["value"][1]) == 0.0, 60)
            append(trace, *c.read("src/app.py", APP, 1, 20))
            prom.wait_for(sel % "file", lambda r: r and float(r[0]["value"][1]) == 0.5, 30)
            prom.wait_for(sel % "line", lambda r: r and float(r[0]["value"][1]) == 1.0, 30)
            append(trace, *c.read("src/util.py", UTIL, 1, 5))
            prom.wait_for(sel % "file", lambda r: r and float(r[0]["value"][1]) == 1.0, 30)
            prom.wait_for('streameval_steps_total{run_id="live-1"}',
                          lambda r: r and float(r[0]["value"][1]) == 2.0, 30)
            prom.wait_for("streameval_lines_processed_total",
                          lambda r: r and float(r[0]["value"][1]) == 5.0, 30)
    finally:
        server.shutdown()
