"""A real Prometheus (Debian's /usr/bin/prometheus) for integration tests.

Started on 127.0.0.1 with a scrape config pointing at the exporter under test;
queried over its HTTP API. Tests that use it are marked ``prometheus``.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def require_prometheus() -> None:
    """Skip (on a developer machine) or fail (in CI) when Debian's prometheus is absent."""
    import os

    import pytest

    if Path(PROMETHEUS).exists():
        return
    msg = f"{PROMETHEUS} not found: `apt-get install -y prometheus` (.ci/run does this)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    def __init__(self, workdir: Path, targets: list[str], scrape_interval: str = "1s",
                 rule_files: list[Path] | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "scrape_configs": [{"job_name": "streameval",
                                "static_configs": [{"targets": targets}]}],
        }
        if rule_files:
            config["rule_files"] = [str(p) for p in rule_files]
        self.config = self.workdir / "prometheus.yml"
        self.config.write_text(json.dumps(config))  # JSON is valid YAML
        self.proc: subprocess.Popen | None = None
        self.log = self.workdir / "prometheus.log"

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        require_prometheus()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=1h", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready after {timeout}s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def query(self, expr: str) -> list[dict]:
        """Instant query; returns the ``data.result`` vector."""
        q = urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=5) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise AssertionError(f"query {expr!r} failed: {body}")
        return body["data"]["result"]

    def wait_for(self, expr: str, predicate, timeout: float = 30.0) -> list[dict]:
        """Poll ``expr`` until ``predicate(result)`` holds; fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        last: list[dict] = []
        while time.monotonic() < deadline:
            last = self.query(expr)
            if predicate(last):
                return last
            time.sleep(0.25)
        raise AssertionError(f"{expr!r} did not reach the expected value in {timeout}s; last: {last}")
