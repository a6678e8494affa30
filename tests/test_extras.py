"""Each extra installed alone, in a fresh virtual environment, as its users install it
(``pip install 'streameval[ray]'``), then its feature run through the command line.

CI installs ``.[dev,otel,ray]`` together, where one extra's dependencies can hide what
another lacks: ``opentelemetry-proto`` (a dependency) makes ``opentelemetry`` an
importable namespace, and with ``ray`` alone Ray's dashboard agent took its metrics API
for installed, died on ``from opentelemetry import metrics``, and a local Ray never
started ("The current node timed out during startup"; issue 32). Each venv installs from
a copy of the package's own files (no build left in the checkout); pip's cache makes the
installs a matter of seconds after the first.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fixture_paths import ROOT

EXAMPLES = ROOT / "streameval" / "examples"
pytestmark = [pytest.mark.extras, pytest.mark.slow, pytest.mark.timeout(900)]


def installed(tmp: Path, extra: str) -> Path:
    """A fresh venv holding ``streameval[extra]`` and nothing else; its ``bin``."""
    src = tmp / "src"
    shutil.copytree(ROOT / "streameval", src / "streameval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                          f"{src}[{extra}]"], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv / "bin"


def example(bin_: Path, out: Path, *extra: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_ / "streameval"), "replay", str(EXAMPLES / "runs"), "--gold",
         str(EXAMPLES / "gold.jsonl"), "--repo", str(EXAMPLES / "repo"), "--quiet",
         "--out", str(out), *extra], capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL, **kw)


@pytest.mark.ray
def test_ray_alone_starts_a_local_ray_and_replays_as_local_does(tmp_path):
    assert shutil.which("unshare") and shutil.which("ip"), "needs util-linux unshare and iproute2"
    bin_ = installed(tmp_path, "ray")
    local = example(bin_, tmp_path / "local.jsonl")
    assert local.returncode == 0, local.stderr
    # a network namespace with loopback only and a PID namespace of its own, as the
    # cluster test runs Ray: its daemons end with the command
    script = (f"ip link set lo up && exec {bin_ / 'streameval'} replay {EXAMPLES / 'runs'} "
              f"--gold {EXAMPLES / 'gold.jsonl'} --repo {EXAMPLES / 'repo'} --quiet "
              f"--out {tmp_path / 'ray.jsonl'} --engine ray")
    ray = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount", "--mount-proc",
                          "sh", "-c", script], capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert ray.returncode == 0, ray.stderr[-3000:]
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()


class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that keeps the paths it was sent to."""

    seen: list[str] = []

    def do_POST(self):  # noqa: N802 - the handler's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_otel_alone_sends_the_scores_out(tmp_path):
    bin_ = installed(tmp_path, "otel")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        run = example(bin_, tmp_path / "out.jsonl", "--otlp-endpoint",
                      f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert run.returncode == 0, run.stderr
    assert "/v1/traces" in _Collector.seen, (_Collector.seen, run.stderr)
