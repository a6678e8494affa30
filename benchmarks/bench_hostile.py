"""Work per line stays bounded on hostile traces (issue: hostile input and faults).

Three measurements, one run, printed with the machine:

1. parsing a search output that names 2,000 files x 10 hits, as Claude's ``Grep``
   (content mode) and as the same text from ``grep -rn`` in a Bash call, and at 1,000 and
   4,000 files to show the cost is linear in the output;
2. replaying one trace with a 100 MB line between two tool calls: time and peak memory
   of ``iter_lines`` against the line splitter it replaced (``rest + data`` per chunk);
3. scrape latency of ``/metrics`` (the exporter's collector) while the watcher processes
   one tool call whose output is a 4,000-file grep result;
4. naming paths in a plain-directory repository of 4,000 files, half unknown, against
   one realpath check per path (the old lookup made about three).

    python benchmarks/bench_hostile.py
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "live"), str(ROOT / "benchmarks")]

from gitrepo import make_repo  # noqa: E402
from machine import machine  # noqa: E402

from streameval.model import ToolCall  # noqa: E402
from streameval.reading.steps import StepBuilder  # noqa: E402
from streameval.sources.repo import GitRepo  # noqa: E402


def _repo(tmp: Path, n: int):
    files = {f"pkg/m{i % 40}/f{i}.py": "".join(f"x = {j}  # hit\n" for j in range(40)) for i in range(n)}
    sha = make_repo(tmp / f"r{n}", files)[-1]
    return GitRepo(tmp / f"r{n}").at(sha)


def _grep_text(n: int, prefix: str = "") -> str:
    return "\n".join(f"{prefix}pkg/m{i % 40}/f{i}.py:{j * 3 + 1}:x = {j * 3}  # hit"
                     for i in range(n) for j in range(10))


def bench_grep(tmp: Path) -> dict:
    out = {}
    for n in (1000, 2000, 4000):
        view = _repo(tmp, n)
        b = StepBuilder(view, roots=["/w"])
        # warm: every blob read once, so the timings below are parsing and crediting
        b.consume(ToolCall(call_id="warm", tool="Bash", input={"command": "grep -rn hit ."},
                           output=_grep_text(n, "./"), cwd="/w"))
        times = {}
        for name, tool, inp, text in (
                ("claude_grep", "Grep", {"pattern": "hit", "output_mode": "content", "-n": True}, _grep_text(n)),
                ("grep_rn", "Bash", {"command": "grep -rn hit ."}, _grep_text(n, "./"))):
            best = float("inf")
            for k in range(3):
                call = ToolCall(call_id=f"{name}{k}", tool=tool, input=inp, output=text, cwd="/w")
                start = time.perf_counter()
                res = b.consume(call)
                best = min(best, time.perf_counter() - start)
            assert len(res.reads) == n, (name, len(res.reads))
            times[name] = round(best, 3)
        # the same Grep with the garbage collector off: what parsing alone costs
        gc.disable()
        try:
            call = ToolCall(call_id="nogc", tool="Grep", output=_grep_text(n), cwd="/w",
                            input={"pattern": "hit", "output_mode": "content", "-n": True})
            start = time.perf_counter()
            b.consume(call)
            times["claude_grep_gc_off"] = round(time.perf_counter() - start, 3)
        finally:
            gc.enable()
        out[n] = times
    return out


def _old_iter_lines(path: Path, chunk: int = 1 << 20):
    """The splitter replay used before: the unfinished line copied at every chunk."""
    lineno, rest = 0, b""
    with open(path, "rb") as fh:
        while True:
            data = fh.read(chunk)
            if not data:
                break
            data = rest + data
            parts = data.split(b"\n")
            rest = parts.pop()
            for part in parts:
                lineno += 1
                yield part.rstrip(b"\r"), lineno
    if rest:
        yield rest.rstrip(b"\r"), lineno + 1


def bench_long_line(tmp: Path) -> dict:
    from streameval.traces.files import iter_lines

    trace = tmp / "huge.jsonl"
    with open(trace, "wb") as fh:
        fh.write(b'{"type": "system", "subtype": "init"}\n')
        fh.write(b'{"type": "user", "pad": "' + b"x" * (100 << 20) + b'"}\n')
        fh.write(b'{"type": "result"}\n')
    out = {}
    for name, fn in (("iter_lines", iter_lines), ("old_splitter", _old_iter_lines)):
        tracemalloc.start()
        start = time.perf_counter()
        n = sum(1 for _ in fn(trace))
        took = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out[name] = {"seconds": round(took, 2), "peak_mb": round(peak / 2**20, 1), "lines": n}
    trace.unlink()
    return out


def bench_scrape_during_grep(tmp: Path) -> dict:
    from claude_run import Claude, make_setup
    from prometheus_client import CollectorRegistry, generate_latest

    from streameval.live.exporter import RunsCollector
    from streameval.live.watch import WatchConfig, Watcher
    from streameval.runs.resources import load_resources

    n = 4000
    s = make_setup(tmp / "live")
    view_repo = tmp / "live" / "repo"
    files = {f"pkg/m{i % 40}/f{i}.py": "".join(f"x = {j}  # hit\n" for j in range(40)) for i in range(n)}
    files.update({"src/app.py": "def f1(x):\n    return x\n", "src/util.py": "# util\n"})
    sha = make_repo(view_repo, files)[-1]
    gold = json.loads(s.gold.read_text())
    gold["base_commit"] = sha
    s.gold.write_text(json.dumps(gold) + "\n")
    res = load_resources(str(s.gold), None, str(view_repo))
    runs = tmp / "live" / "runs"
    d = runs / s.instance
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": s.instance, "run_id": "grep"}))
    c = Claude()
    lines = [c.init()]
    for _ in range(40):   # a run with some history: a scrape has rows to build
        lines += c.read("src/app.py", "def f1(x):\n    return x\n", 1, 2)
    use = {"type": "assistant", "message": {"id": "g", "role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_grep", "name": "Grep",
         "input": {"pattern": "hit", "output_mode": "content", "-n": True}}]}}
    result = {"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "toolu_grep", "type": "tool_result", "content": _grep_text(n)}]}}
    trace = d / "trace.jsonl"
    trace.write_bytes(b"\n".join(lines) + b"\n")
    w = Watcher(WatchConfig(root=runs, idle_timeout=3600, rescan_interval=3600), res)
    w.scan()
    w.poll_all()
    reg = CollectorRegistry()
    reg.register(RunsCollector(w.table))
    generate_latest(reg)
    with open(trace, "ab") as fh:
        fh.write(json.dumps(use).encode() + b"\n" + json.dumps(result).encode() + b"\n")
    latencies: list[float] = []
    done = threading.Event()

    def scraper():
        while not done.is_set():
            start = time.perf_counter()
            generate_latest(reg)
            latencies.append(time.perf_counter() - start)
            time.sleep(0.05)

    t = threading.Thread(target=scraper)
    t.start()
    start = time.perf_counter()
    w.changed(trace)
    took = time.perf_counter() - start
    done.set()
    t.join()
    return {"processing_seconds": round(took, 2), "scrapes": len(latencies),
            "scrape_max_seconds": round(max(latencies), 3),
            "scrape_median_seconds": round(statistics.median(latencies), 3)}


def bench_directory_paths(tmp: Path) -> dict:
    """Per-path cost of naming paths in a plain-directory repository of 4,000 files
    (half of them unknown), against the per-path realpath check it replaced."""
    import os

    from streameval.reading.paths import PathMapper
    from streameval.sources.repodir import DirectoryRepo

    root = tmp / "plain"
    for i in range(4000):
        f = root / f"pkg/sub{i % 50}/deep/er/m{i}.py"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x\n")
    paths = [f"other/place{i}/n{i}.py" for i in range(2000)] + \
            [f"pkg/sub{i % 50}/deep/er/m{i}.py" for i in range(2000)]
    mapper = PathMapper(DirectoryRepo(root).at(), ["/w"])
    mapper.to_repo("warm.py", "/w")   # the one walk of the directory
    start = time.perf_counter()
    for p in paths:
        mapper.to_repo(p, "/w")
    listing = (time.perf_counter() - start) / len(paths)
    real_root = os.path.realpath(root) + os.sep
    start = time.perf_counter()
    for p in paths:
        real = os.path.realpath(os.path.join(real_root, p))
        real.startswith(real_root) and os.path.isfile(real)
    realpath = (time.perf_counter() - start) / len(paths)
    return {"listing_ms_per_path": round(listing * 1e3, 4),
            "one_realpath_check_ms_per_path": round(realpath * 1e3, 4)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        report = {"machine": machine(), "grep_seconds": bench_grep(tmp),
                  "long_line": bench_long_line(tmp), "scrape_during_grep": bench_scrape_during_grep(tmp),
                  "directory_paths": bench_directory_paths(tmp)}
    g = report["grep_seconds"]
    report["grep_ratios"] = {
        "claude_grep_over_grep_rn_at_2000": round(g[2000]["claude_grep"] / g[2000]["grep_rn"], 2),
        "claude_grep_4000_over_1000": round(g[4000]["claude_grep"] / g[1000]["claude_grep"], 2),
        "grep_rn_4000_over_1000": round(g[4000]["grep_rn"] / g[1000]["grep_rn"], 2),
        "claude_grep_gc_off_4000_over_1000": round(g[4000]["claude_grep_gc_off"]
                                                   / g[1000]["claude_grep_gc_off"], 2),
        "quadratic_would_be": 16.0, "linear_would_be": 4.0}
    ll = report["long_line"]
    report["long_line_ratios"] = {
        "time_old_over_new": round(ll["old_splitter"]["seconds"] / max(ll["iter_lines"]["seconds"], 1e-3), 1),
        "memory_old_over_new": round(ll["old_splitter"]["peak_mb"] / max(ll["iter_lines"]["peak_mb"], 0.1), 1)}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
