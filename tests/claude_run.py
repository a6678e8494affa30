"""Build a small real repo, its gold, and Claude stream-json trace lines over it.

The lines are what `claude -p --output-format stream-json` writes (system/init,
assistant tool_use, user tool_result, result), so the live tests exercise the real
adapter, inference and state, not stand-ins.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from gitrepo import make_repo

APP = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(1, 21))  # 60 lines
UTIL = "".join(f"# util line {i}\n" for i in range(1, 31))                     # 30 lines
WORKSPACE = "/workspace/demo"


@dataclass
class Setup:
    repo: Path
    sha: str
    gold: Path
    instance: str = "demo__demo-1"


def make_setup(tmp: Path) -> Setup:
    repo = tmp / "repo"
    sha = make_repo(repo, {"src/app.py": APP, "src/util.py": UTIL})[-1]
    gold = tmp / "gold.jsonl"
    gold.write_text(json.dumps({
        "instance_id": "demo__demo-1", "original_inst_id": "demo__demo-1", "repo": "demo/demo",
        "base_commit": sha, "language": "python",
        "init_ctx": [{"file": "src/app.py", "start_line": 4, "end_line": 9}],
        "add_ctx": [{"file": "src/util.py", "start_line": 1, "end_line": 5}],
    }) + "\n")
    return Setup(repo, sha, gold)


#: a model patch over APP (lines 4-5), as a run's ``patch.diff`` holds one
PATCH = ("--- a/src/app.py\n+++ b/src/app.py\n@@ -4,2 +4,2 @@\n-def f2(x):\n-    return x + 2\n"
         "+def f2(x):\n+    return x - 2\n")


def numbered(text: str, start: int, end: int) -> str:
    lines = text.split("\n")
    return "\n".join(f"{n:>6}→{lines[n - 1]}" for n in range(start, min(end, len(lines)) + 1))


class Claude:
    """Generates consecutive tool calls as stream-json lines."""

    def __init__(self) -> None:
        self.n = 0

    def init(self) -> bytes:
        return _j({"type": "system", "subtype": "init", "cwd": WORKSPACE, "session_id": "s1",
                   "tools": ["Read", "Bash"], "model": "claude-test"})

    def read(self, path: str, text: str, offset: int = 1, limit: int = 2000) -> list[bytes]:
        self.n += 1
        tid = f"toolu_{self.n:04d}"
        use = {"type": "assistant", "message": {
            "id": f"msg_{self.n}", "role": "assistant", "model": "claude-test",
            "content": [{"type": "tool_use", "id": tid, "name": "Read",
                         "input": {"file_path": f"{WORKSPACE}/{path}", "offset": offset, "limit": limit}}],
            "usage": {"input_tokens": 10, "output_tokens": 5}}, "session_id": "s1"}
        result = {"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result",
             "content": numbered(text, offset, offset + limit - 1)}]}, "session_id": "s1"}
        return [_j(use), _j(result)]

    def bash(self, command: str, output: str) -> list[bytes]:
        """One Bash call and its output."""
        self.n += 1
        tid = f"toolu_{self.n:04d}"
        use = {"type": "assistant", "message": {
            "id": f"msg_{self.n}", "role": "assistant", "model": "claude-test",
            "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}],
            "usage": {"input_tokens": 10, "output_tokens": 5}}, "session_id": "s1"}
        result = {"type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": output}]}, "session_id": "s1"}
        return [_j(use), _j(result)]

    def result(self) -> bytes:
        return _j({"type": "result", "subtype": "success", "is_error": False, "num_turns": self.n,
                   "session_id": "s1", "total_cost_usd": 0.01,
                   "usage": {"input_tokens": 100, "output_tokens": 50}})


def _j(obj) -> bytes:
    return json.dumps(obj).encode()


def append(path: Path, *lines: bytes) -> None:
    """Lines appended as an agent writes them: each whole, newline-terminated."""
    with open(path, "ab") as fh:
        for line in lines:
            fh.write(line + b"\n")


def watcher(runs: Path, res, tmp_path: Path, **kw):
    """A watcher writing records to ``tmp_path/out.jsonl``; the tests drive it by hand."""
    from streameval.live.watch import WatchConfig, Watcher

    cfg = WatchConfig(root=runs, out=tmp_path / "out.jsonl", idle_timeout=kw.pop("idle", 3600),
                      patch_grace=kw.pop("grace", 0.0), rescan_interval=kw.pop("rescan", 0.0), **kw)
    return Watcher(cfg, res)


def started(runs: Path, res, tmp_path: Path, **kw):
    """``watcher(...)`` that has already found and read every trace written so far."""
    w = watcher(runs, res, tmp_path, **kw)
    w.scan()
    w.poll_all()
    return w


# ---------------------------------------------------------------------- shared by the live tests


def whole_lines(path: Path) -> list[bytes]:
    """The lines of a file another process is writing, the one not yet ended left out
    (a reader can see a record half written); none while the file does not exist."""
    data = path.read_bytes() if path.exists() else b""
    return data[:data.rfind(b"\n") + 1].splitlines()


def wait_until(pred, timeout=30.0, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def watch_process(argv: list[str], log: Path, env: dict | None = None):
    """``streameval watch ARGV`` in a process of its own, its output in ``log``, once it
    serves: (the process, its port)."""
    import subprocess
    import sys

    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "streameval", "watch", *argv],
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env)
    wait_until(lambda: b"serving metrics on" in log.read_bytes() or proc.poll() is not None,
               what="watch to start")
    assert proc.poll() is None, log.read_text()[-2000:]
    return proc, int(log.read_text().split("http://127.0.0.1:")[1].split("/")[0])


def bearer(token_file: Path) -> dict[str, str]:
    """The header a push carries: the token ``watch --ingest`` made in ``token_file``."""
    return {"Authorization": "Bearer " + token_file.read_text().strip()}


def trace_in(runs: Path, s, name: str = "r1", **meta) -> Path:
    d = runs / name
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": name,
                                             "agent": "claude-code", "model": "m", **meta}))
    return d / "trace.jsonl"


def edit_lines(c: Claude, path: str, old: str, new: str) -> list[bytes]:
    """An Edit of ``path`` (old -> new) and its answer, as Claude Code writes them."""
    c.n += 1
    tid = f"toolu_e{c.n}"
    use = {"type": "assistant", "message": {"id": f"m{c.n}", "role": "assistant", "content": [
        {"type": "tool_use", "id": tid, "name": "Edit",
         "input": {"file_path": f"/workspace/demo/{path}", "old_string": old, "new_string": new}}]}}
    res = {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": tid, "type": "tool_result", "content": "The file has been updated."}]}}
    return [json.dumps(use).encode(), json.dumps(res).encode()]


def bash(c: Claude, command: str, output: str) -> list[bytes]:
    """A Bash call and its answer, as Claude Code writes them."""
    c.n += 1
    tid = f"toolu_b{c.n}"
    use = {"type": "assistant", "message": {"id": f"mb{c.n}", "role": "assistant", "content": [
        {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command}}]},
        "session_id": "s1"}
    res = {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": tid, "type": "tool_result", "content": output}]}, "session_id": "s1"}
    return [json.dumps(use).encode(), json.dumps(res).encode()]


def reads(c: Claude, *specs: tuple[str, int, int]) -> list[bytes]:
    out: list[bytes] = []
    for path, a, b in specs:
        text = APP if path == "src/app.py" else UTIL
        out.extend(c.read(path, text, a, b - a + 1))
    return out


def policy(name: str, kind: str, action: str = "file", **kw) -> str:
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in kw.items())
    return f'[[policy]]\nname = "{name}"\nkind = "{kind}"\naction = "{action}"\n{body}\n'


# ---------------------------------------------------------------------- watch --workers N


def worker_pids(supervisor: int) -> dict[int, int]:
    """The live workers of a ``watch --workers N`` process: index -> pid."""
    import os

    out = {}
    for task in os.listdir(f"/proc/{supervisor}/task"):
        try:
            with open(f"/proc/{supervisor}/task/{task}/children") as fh:
                children = fh.read().split()
        except OSError:
            continue
        for pid in children:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
                with open(f"/proc/{pid}/stat") as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if b"streameval.commands.watch_worker" in argv and state != "Z":
                out[int(argv[-2].split(b"-")[1]) if argv[-1] == b"" else
                    int(argv[-1].split(b"-")[1])] = int(pid)
    return out


def owner(path: Path, workers: int = 2) -> int:
    """The worker that follows the trace at ``path`` (live/shard.py)."""
    from streameval.live.shard import owner_of

    return owner_of(path.stat().st_ino, workers)
