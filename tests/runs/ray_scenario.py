"""Run inside a private network namespace (``unshare -n``): loopback up, a real Ray
cluster of a head and a second worker node on 127.0.0.1, then the real fixture corpus
replayed with ``--engine local`` and ``--engine ray``, then once more with ``--engine
ray`` while a worker is killed in the middle of a task. Writes what it saw as JSON.

    unshare --net --pid --fork --mount --mount-proc python ray_scenario.py OUT_DIR

In a PID namespace of its own, ``ray stop`` and the worker search see only this
cluster's processes, and every Ray daemon ends with this script. Inside a network
namespace of its own Ray advertises and dials 127.0.0.1 only (outside one it
picks the machine's interface address even with ``--node-ip-address 127.0.0.1``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from streameval import config

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real"
GOLD = ROOT / "tests" / "fixtures" / "data" / "verified_test.parquet"
EXAMPLE = ROOT / "streameval" / "examples"
BIN = Path(sys.executable).parent
TASK_TITLE = b"ray::evaluate_chunk"


def sh(*argv: str, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("timeout", 300)
    return subprocess.run(list(argv), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          **kw)


def replay(out: Path, *extra: str, background: bool = False):
    """The real fixture corpus (against this machine's mirrors when it has them, else
    every run is an error record), then the bundled example (scored in full)."""
    repos = str(config.local_path(config.REPOS_ENV) or ROOT)
    argv = [sys.executable, "-m", "streameval", "replay", str(REAL), "--gold", str(GOLD),
            "--repos", repos, "--quiet", "--out", str(out), *extra]
    if out.stem.endswith("-example"):
        argv = [sys.executable, "-m", "streameval", "replay", str(EXAMPLE / "predictions.jsonl"),
                str(EXAMPLE / "runs"), "--gold", str(EXAMPLE / "gold.jsonl"), "--repo",
                str(EXAMPLE / "repo"), "--quiet", "--out", str(out), *extra]
    if background:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)
    return sh(*argv)


def task_workers() -> list[int]:
    """Worker processes running one of our tasks now (Ray titles them by the task)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "cmdline").read_bytes().startswith(TASK_TITLE):
                    pids.append(int(p.name))
            except OSError:
                continue
    return pids


def kill_one_mid_task(proc: subprocess.Popen, seconds: float = 120.0) -> dict:
    """Freeze a worker that is running a task, check (frozen) that it still is, kill it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        for pid in task_workers():
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            try:
                still = Path(f"/proc/{pid}/cmdline").read_bytes().startswith(TASK_TITLE)
            except OSError:
                still = False
            if still:
                os.kill(pid, signal.SIGKILL)
                return {"killed": pid}
            os.kill(pid, signal.SIGCONT)
        time.sleep(0.002)
    return {"killed": None}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    seen: dict = {}
    up = sh("ip", "link", "set", "lo", "up")
    seen["lo"] = up.returncode
    # Ray's unix sockets live under its temp dir, and a socket path is at most 107 bytes:
    # a short folder of our own, not the test's deep one
    temp = Path(tempfile.mkdtemp(prefix="se-ray-"))
    ray = str(BIN / "ray")
    # token authentication, as Ray 2.5x+ enables it: one token for the head, the second
    # node and the drivers (the replays inherit this environment)
    os.environ.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                       "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    env = dict(os.environ)
    head = sh(ray, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", "6390",
              "--num-cpus", "1", "--include-dashboard", "false", "--temp-dir", str(temp),
              "--disable-usage-stats", env=env)
    seen["head"] = [head.returncode, head.stderr[-1500:]]
    node = sh(ray, "start", "--address", "127.0.0.1:6390", "--node-ip-address", "127.0.0.1",
              "--num-cpus", "1", env=env)
    seen["node"] = [node.returncode, node.stderr[-1500:]]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:   # the second node registers a moment later
            status = sh(ray, "status", "--address", "127.0.0.1:6390", env=env)
            seen["nodes"] = status.stdout.split("Pending:")[0].count(" node_")
            if seen["nodes"] >= 2:
                break
            time.sleep(0.5)
        for name in ("real", "real-example"):
            local = replay(out / f"local-{name}.jsonl")
            seen[f"local-{name}"] = [local.returncode, local.stderr[-2000:]]
            ray_run = replay(out / f"ray-{name}.jsonl", "--engine", "ray", "--ray-address",
                             "127.0.0.1:6390")
            seen[f"ray-{name}"] = [ray_run.returncode, ray_run.stderr[-3000:]]
        proc = replay(out / "killed.jsonl", "--engine", "ray", "--ray-address",
                      "127.0.0.1:6390", background=True)
        seen.update(kill_one_mid_task(proc))
        _stdout, stderr = proc.communicate(timeout=600)
        seen["killed_run"] = [proc.returncode, stderr[-3000:]]
        after = sh(ray, "status", "--address", "127.0.0.1:6390", env=env)
        seen["status_after"] = after.stdout
    finally:
        stop = sh(ray, "stop", "--force", env=env)
        seen["stop"] = stop.returncode
        shutil.rmtree(temp, ignore_errors=True)
    (out / "seen.json").write_text(json.dumps(seen, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
