"""A real ``streameval watch`` (or ``view``) process for the browser tests: started on a
free port, its URL read from its first line, stopped with SIGINT by its own pid."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Streameval:
    def __init__(self, *args: str, cwd: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streameval", *args, "--port", "0"], cwd=cwd,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        first = self.proc.stdout.readline()
        if "http://" not in first:
            self.proc.kill()
            raise RuntimeError(f"streameval did not start: {first}{self.proc.stdout.read()}")
        start = first.index("http://")
        host_port = first[start + len("http://"):].split("/", 1)[0]
        self.base = f"http://{host_port}"
        self.lines = [first]
        # drained all along: a watcher saying a line per run must never block on a pipe
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def get(self, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
        req = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def stop(self) -> str:
        """SIGINT (Ctrl-C), then what it printed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=30)
        self.proc.stdout.close()
        return self.output


def watch(runs: Path, setup, tmp: Path, *more: str) -> Streameval:
    """``streameval watch RUNS`` over the claude_run setup's gold and repository."""
    return Streameval("watch", str(runs), "--gold", str(setup.gold), "--repo", str(setup.repo),
                      "--out", str(tmp / "out.jsonl"), *more, cwd=tmp)
