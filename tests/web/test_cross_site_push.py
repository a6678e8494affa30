"""A web page of another origin tries to push runs through the browser, in the real
Chromium, against a real ``streameval watch --ingest`` (issue 27).

f53415f took pushes without a token on loopback and looked at neither ``Origin`` nor
``Content-Type``: a page on any origin stored runs with a no-cors ``fetch`` of
``text/plain`` bodies on the hooks and lines routes (OTLP took
``text/plain;charset=json``), and with a plain ``<form enctype=text/plain>``; 1,000
forged sessions filled ``--ingest-max-runs`` in 6.5 s. Here the page is served on
another port of 127.0.0.1 (another origin), every attempt reaches the watcher, and each
is refused as a web page's push (403), before any token is looked at.
"""

from __future__ import annotations

import http.server
import json
import threading
import urllib.request

import pytest
from claude_run import make_setup, wait_until
from web_process import watch

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" enctype="text/plain" action="{target}/v1/hooks/claude?instance_id=x">
<input type="hidden" name='{{"session_id":"formed","hook_event_name":"SessionEnd","x":"' value='"}}'>
</form>
<script>
const target = "{target}";
const push = (path, body, type) => fetch(target + path, {{method: "POST", mode: "no-cors",
  headers: {{"Content-Type": type}}, body}});
Promise.all([
  push("/v1/runs/forged/lines", '{{"type":"system","subtype":"init","session_id":"forged"}}\\n',
       "text/plain"),
  push("/v1/hooks/claude", JSON.stringify({{session_id: "forged-hook", hook_event_name: "SessionEnd"}}),
       "text/plain"),
  push("/v1/logs", JSON.stringify({{resourceLogs: []}}), "text/plain;charset=json"),
]).then(() => {{ document.title = "sent"; }}, (e) => {{ document.title = "failed " + e; }});
</script></body></html>"""


class _Attacker(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args):
        pass


def _refused(base: str) -> dict[str, float]:
    """The watcher's pushed requests by route, status 403."""
    with urllib.request.urlopen(base + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("streameval_ingest_requests_total{") and 'status="403"' in line:
            route = line.split('route="')[1].split('"')[0]
            out[route] = float(line.rsplit(" ", 1)[1])
    return out


def test_a_page_of_another_origin_cannot_push_runs(tmp_path, page):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    w = watch(runs, s, tmp_path, "--ingest", "--ingest-token-file", str(tmp_path / "token"))
    _Attacker.page = ATTACK.format(target=w.base).encode()
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        page.tab.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
        page.tab.wait_for_function("() => document.title === 'sent'")
        with page.tab.expect_navigation():
            page.tab.evaluate("() => document.getElementById('f').submit()")
        wait_until(lambda: _refused(w.base) == {"lines": 1.0, "claude": 2.0, "logs": 1.0},
                   what="every attempt refused as a web page's")
        body = page.tab.evaluate("() => document.body.innerText")
        assert "another origin" in json.loads(body)["error"]   # the form's answer
    finally:
        attacker.shutdown()
        attacker.server_close()
        w.stop()
    assert not (runs / "ingest").exists() or not list((runs / "ingest").rglob("trace.jsonl"))
