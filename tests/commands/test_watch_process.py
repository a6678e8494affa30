"""A real ``streameval watch`` process over a directory where every run is hostile at
once: it stays up, ``/metrics`` answers within 2 s throughout, its records equal
``replay``, and nothing outside the places it was given changes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest
from claude_run import APP, UTIL, Claude, make_setup, wait_until

from streameval.runs.evaluate import evaluate_trace
from streameval.runs.resources import load_resources
from streameval.scoring.record import record_line

pytestmark = pytest.mark.slow


def _lines(c: Claude) -> list[bytes]:
    return [c.init(), *c.read("src/app.py", APP, 1, 20), *c.read("src/util.py", UTIL, 1, 5), c.result()]


def _hostile_runs(runs: Path, s, victim: Path) -> None:
    def run(name: str, meta: dict | None = None) -> Path:
        d = runs / name
        d.mkdir(parents=True)
        if meta is not None:
            (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": name, **meta}))
        return d

    # absurd numbers everywhere
    d = run("numbers", {"pid": 2**40})
    lines = [json.loads(x) for x in _lines(Claude())]
    lines[-1]["usage"] = {"input_tokens": 10**20, "output_tokens": 1e308}
    lines[-1]["total_cost_usd"] = -1e300
    (d / "trace.jsonl").write_bytes(b"\n".join(json.dumps(x).encode() for x in lines) + b"\n")
    # a FIFO for meta.json, /dev/zero for the patch, a planted ABORT temp symlink
    d = run("fifo")
    os.mkfifo(d / "meta.json")
    (d / "patch.diff").symlink_to("/dev/zero")
    (d / f".ABORT.{os.getpid()}.tmp").symlink_to(victim)
    (d / "trace.jsonl").write_bytes(b"\n".join(_lines(Claude())) + b"\n")
    # a huge model name, a BOM, a junk first line
    run("label", {"model": "m" * 300_000}).joinpath("trace.jsonl").write_bytes(
        b"\xef\xbb\xbf" + b"\n".join(_lines(Claude())) + b"\n")
    run("junk", {}).joinpath("trace.jsonl").write_bytes(
        b"starting...\n" + b"\n".join(_lines(Claude())) + b"\n")
    # one 70 MB line between good calls
    d = run("huge", {})
    c = Claude()
    with open(d / "trace.jsonl", "wb") as fh:
        fh.write(b"\n".join([c.init(), *c.read("src/app.py", APP, 1, 20)]) + b"\n")
        fh.write(b'{"type": "user", "pad": "' + b"x" * (70 << 20) + b'"}\n')
        fh.write(b"\n".join([*c.read("src/util.py", UTIL, 1, 5), c.result()]) + b"\n")
    # a file no adapter knows
    run("unknown", {}).joinpath("trace.jsonl").write_bytes(b"hello\nworld\n")


def _tree(root: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        st = os.lstat(p)
        out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns) if not p.is_dir() else "dir"
    return out


def test_hostile_runs_all_at_once(tmp_path):
    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    _hostile_runs(runs, s, victim)
    abort = tmp_path / "abort.toml"
    abort.write_text('[[policy]]\nname = "steps"\nkind = "max_steps"\nlimit = 1\naction = "file"\n')
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "records.jsonl"
    out.write_bytes(b'{"instance_id": "earlier"}\n{"instance_id": "torn')   # a crash mid-write
    (out_dir / "cp.json").write_text('{"version": 1, "files": [1, 2]}')      # wrong shape
    before = {k: v for k, v in _tree(tmp_path).items() if not k.startswith(str(out_dir))}

    cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(s.gold),
           "--repo", str(s.repo), "--port", "0", "--out", str(out),
           "--checkpoint", str(out_dir / "cp.json"), "--checkpoint-interval", "0.2",
           "--idle-timeout", "2", "--patch-grace", "0", "--abort-config", str(abort)]
    log = tmp_path / "watch.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: b"serving metrics on http://127.0.0.1:" in log.read_bytes()
                   or proc.poll() is not None, what="watch to start")
        assert proc.poll() is None, log.read_text()[-3000:]
        port = int(log.read_text().split("serving metrics on http://127.0.0.1:")[1].split("/")[0])
        deadline = time.monotonic() + 60
        records: list[dict] = []
        while time.monotonic() < deadline:
            # answered at all while the hostile runs are read (how fast: benchmarks/)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                body = r.read()
            assert b"streameval_lines_processed_total" in body
            assert proc.poll() is None, log.read_text()[-3000:]
            # whole lines only: until the watcher has started, the torn line is still there
            records = [orjson.loads(x) for x in out.read_bytes().split(b"\n")[:-1][1:]]
            if len(records) >= 6:
                break
            time.sleep(0.3)
        assert len(records) == 6, log.read_text()[-3000:]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)

    assert out.read_bytes().startswith(b'{"instance_id": "earlier"}\n{')   # torn line cut
    res = load_resources(str(s.gold), None, str(s.repo))
    for rec in records:
        trace = runs / rec["trace"]
        assert orjson.dumps(rec) + b"\n" == record_line(evaluate_trace(trace, res, root=runs)[0]), rec["trace"]
    by_dir = {Path(r["trace"]).parent.name: r for r in records}
    assert "could not detect" in by_dir["unknown"]["error"]
    assert by_dir["huge"]["bad_lines"] == {"line_too_long": 1}
    assert victim.read_text() == "precious\n"
    after = {k: v for k, v in _tree(tmp_path).items() if not k.startswith(str(out_dir))}
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    # only the ABORT files the policy wrote, each in its own run directory, and the log
    assert {Path(k).name for k in changed} <= {"ABORT", "watch.log"}, changed
    assert all(Path(k).parent.parent == runs for k in changed if Path(k).name == "ABORT")


def test_values_from_traces_and_requests_cannot_forge_or_flood_the_log(tmp_path):
    """f53415f wrote a request's decoded path, a meta.json run id and a 100 KB run id
    into its log as they were (a terminal escape, a forged line), and a line per refused
    request. Now each value is escaped and cut, and refused requests are a few lines."""
    import hashlib
    import socket

    from claude_run import trace_in, watch_process

    s = make_setup(tmp_path)
    runs = tmp_path / "runs"
    runs.mkdir()
    forged = "\x1b]0;X\x07\n2026 INFO streameval.watch: all good"
    for name, run_id in (("esc", "r" + forged), ("long", "L" * 100_000)):
        trace = trace_in(runs, s, name)
        meta = json.loads((trace.parent / "meta.json").read_text())
        (trace.parent / "meta.json").write_text(json.dumps({**meta, "run_id": run_id}))
        trace.write_bytes(b"\n".join(_lines(Claude())) + b"\n")
    log = tmp_path / "watch.log"
    proc, port = watch_process([str(runs), "--gold", str(s.gold), "--repo", str(s.repo),
                                "--port", "0", "--ingest", "--ingest-token-file",
                                str(tmp_path / "token"), "--idle-timeout", "1",
                                "--patch-grace", "0"], log)
    try:
        path = b"/v1/%1b]0;X%07%0a2026%20INFO%20streameval.watch:%20all%20good"
        for _ in range(300):   # no token: each a 401
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 401")
        wait_until(lambda: log.read_bytes().count(b" ended (") >= 2, what="both runs ended")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    text = log.read_bytes()
    assert b"\x1b" not in text and b"\x07" not in text
    lines = text.decode().splitlines()
    assert not [ln for ln in lines if ln.startswith("2026 INFO streameval.watch: all good")]
    assert any("r\\x1b]0;X\\x07\\n2026 INFO streameval.watch: all good started" in ln
               for ln in lines)
    assert any("POST /v1/\\x1b]0;X\\x07\\n2026 INFO streameval.watch: all good: 401" in ln
               for ln in lines)
    digest = hashlib.sha1(("L" * 100_000).encode()).hexdigest()[:10]
    assert any(f"~{digest} started" in ln for ln in lines)
    assert max(map(len, lines)) < 3000
    assert 1 <= sum(": 401 " in ln for ln in lines) <= 10   # 300 refused, a few said
