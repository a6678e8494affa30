"""A real ``streameval watch`` (or ``view``) process for the browser tests: started on a
free port, its URL read from its first line, stopped with SIGINT by its own pid."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from claude_run import Claude

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


def run_dir(runs: Path, name: str, instance: str = "demo__demo-1", **meta) -> Path:
    """A run's folder ``name``, whose meta.json names the run ``name`` too; ``meta`` adds
    to it or overrides it (a ``run_id`` no folder could be named)."""
    d = runs / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": instance, "run_id": name,
                                             "agent": "claude-code", "model": "m", **meta}))
    return d / "trace.jsonl"


def tool_call(c: Claude, tool: str, tool_input: dict, output: str) -> list[bytes]:
    """A tool call and its result, as Claude Code writes them."""
    c.n += 1
    tid = f"toolu_{c.n:04d}"
    use = {"type": "assistant", "session_id": "s1", "message": {
        "id": f"msg_{c.n}", "role": "assistant", "model": "claude-test",
        "content": [{"type": "tool_use", "id": tid, "name": tool, "input": tool_input}]}}
    result = {"type": "user", "session_id": "s1", "message": {"role": "user", "content": [
        {"tool_use_id": tid, "type": "tool_result", "content": output}]}}
    return [json.dumps(use).encode(), json.dumps(result).encode()]


def bash(c: Claude, command: str, output: str) -> list[bytes]:
    return tool_call(c, "Bash", {"command": command}, output)


def wait_for_run(w: Streameval, run_id: str, timeout: float = 60.0) -> None:
    """Until the watcher has read the run (a run page opened before would say "no such
    run" first, and the browser logs the 404)."""
    deadline = time.monotonic() + timeout   # a hang guard
    while time.monotonic() < deadline:
        status, _h, _b = w.get("/api/runs/" + urllib.parse.quote(run_id, safe=""))
        if status == 200:
            return
        time.sleep(0.05)
    raise AssertionError(f"the watcher never had run {run_id!r}")
