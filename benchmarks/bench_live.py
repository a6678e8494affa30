"""How fast one ``streameval watch`` process keeps up with agents writing traces.

Four measurements and a check, each in a fresh child process so they do not share memory or caches
(the parent only prints):

(a) ``single``  one Claude stream-json trace of ``--lines`` lines (default 100,000) is
    appended in chunks of ``--chunk`` lines by a separate writer process, as fast as it
    can, while the watcher's real async loop (watchfiles + ticker, as ``streameval
    watch`` runs it) follows it. Figure: trace lines / (time the last line was processed
    - time the first chunk was written). Baseline: ``session.evaluate_trace`` of the
    finished file in the same process (plain replay), and the ratio of the two.
(b) ``many``    ``--traces`` run directories (default 1,000; each with ``meta.json`` and
    ``trace.jsonl``); the writer appends one tool call (tool_use + tool_result lines)
    per trace, round-robin, ``--calls`` calls per trace, as fast as it can. Same figure,
    and plain replay of the 1,000 finished files as baseline.
(c) ``latency`` the same 1,000 traces, but the writer paces itself at ``--rate`` lines/s
    (several rates may be given). For every tool_result line (it completes a step) the
    writer records ``time.time()`` just *before* the write, in a side file. Two
    latencies per step:
      - *visible*: until the watcher released the run table's lock after the batch that
        held that line (taken in a ``Watcher.listeners`` callback; from that instant any
        scrape sees the step);
      - *scraped*: until a scraper process (a separate process, like Prometheus, with
        Prometheus' Accept and Accept-Encoding headers, so OpenMetrics + gzip), which
        scrapes the real ``/metrics`` endpoint every ``--scrape-interval`` seconds,
        received the first response in which the run's ``streameval_tool_calls_total``
        (summed over categories) counts that call. This includes up to one scrape
        interval of waiting plus the scrape's own duration.
(d) ``memory``  ``--mem-traces`` traces of ``--mem-calls`` calls each are written, then
    the watcher follows all of them (sessions stay alive: no end event, long idle
    timeout). Per session = (RSS after - RSS before) / N, where "before" is after one
    warm-up trace over the same files was scored (repo file, line-index and symbol
    caches full). A second child does the same under ``tracemalloc``.
``exposition``  the exporter's ``/metrics`` rendering of ``--traces`` runs compared
    byte for byte with prometheus_client's, for several Accept headers, and timed.

Traces are Claude Code stream-json lines (system/init, assistant tool_use, user
tool_result) over real-size files (four CPython standard-library modules, 1,400-3,500
lines each, committed to a temporary git repository): Read windows with numbered
output, Grep content output, ``grep -n`` and ``sed -n`` through Bash. An "event" is
one trace line (one JSON event); tool calls/s is half that.

    python benchmarks/bench_live.py                 # all phases, default sizes
    python benchmarks/bench_live.py --quick         # small sizes, a smoke run
    python benchmarks/bench_live.py --phases single,many --lines 200000 --traces 500
    python benchmarks/bench_live.py --phases single,many --lines 60000 --traces 400 \\
        --calls 30 --old f53415f --rounds 3 [--workers 1,2,N] [--json FILE]

``--old REV`` (or a checkout; ``older.py``) runs (a) and (b) in that version too, this
script's workload and that version's streameval, the versions alternating within each of
``--rounds``. ``--workers 1,2,N`` (N: the cores) runs (a) and (b) through the real
command line instead, ``streameval watch --workers N`` (``watchproc.py``), each count in
turn and, with ``--old``, the older version's one watcher (``--workers 1`` where it has
them) between them, alternating within each round.

No pytest: wall-clock numbers belong here, not in tests.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from machine import machine
from older import Version, add_arguments, current, head, label, versions

WORKSPACE = "/workspace/bench"
INSTANCE = "bench__bench-1"
STDLIB_FILES = {"lib/argparse.py": "argparse.py", "lib/typing.py": "typing.py",
                "lib/subprocess.py": "subprocess.py", "lib/pathlib.py": "pathlib.py"}
GOLD_SPANS = [("lib/argparse.py", 1100, 1180), ("lib/typing.py", 2000, 2060),
              ("lib/subprocess.py", 750, 820), ("lib/pathlib.py", 300, 330)]
TARGET_EVENTS = 20_000
TARGET_P99 = 0.250
TARGET_MB = 2.0


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# ---------------------------------------------------------------------- repo + gold


def make_setup(root: Path) -> tuple[Path, Path]:
    """A git repository of real files and a one-row gold file over it."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    std = Path(sysconfig.get_paths()["stdlib"])
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    for rel, name in STDLIB_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(std / name, repo / rel)
    git("add", "-A")
    git("commit", "-q", "-m", "real files")
    sha = git("rev-parse", "HEAD")
    gold = root / "gold.jsonl"
    gold.write_text(json.dumps({
        "instance_id": INSTANCE, "original_inst_id": INSTANCE, "repo": "bench/bench",
        "base_commit": sha, "language": "python",
        "init_ctx": [{"file": f, "start_line": a, "end_line": b} for f, a, b in GOLD_SPANS[:2]],
        "add_ctx": [{"file": f, "start_line": a, "end_line": b} for f, a, b in GOLD_SPANS[2:]],
    }) + "\n")
    return repo, gold


# ---------------------------------------------------------------------- trace lines


def _j(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)


#: the kinds of call a pool can hold; ``mix`` is the live benchmark's share of each
KINDS = ("read", "grep", "grep_n", "sed", "cat", "edit")
#: (kind, upper bound of ``rng.random()``) of the mix: 50% Read windows, 20% Grep
#: content, 15% ``grep -n``, 15% ``sed -n`` (no ``cat``, no edit)
MIX = (("read", 0.5), ("grep", 0.7), ("grep_n", 0.85), ("sed", 1.0))
WORDS = ["def ", "return", "self", "class ", "import", "raise", "if "]


class CallPool:
    """Pre-serialized tool calls; ``@ID@`` is replaced per use so ids stay unique.

    ``kind`` None draws each call's kind from ``MIX``; one of ``KINDS`` makes every call
    of that kind (the per-kind figures of ``bench_reading.py --kinds``):

    - ``read``: a Claude ``Read`` window of 20-150 lines (numbered output);
    - ``grep``: Claude ``Grep`` in content mode with ``-n`` over a directory (<= 30 hits);
    - ``grep_n``: ``grep -n WORD FILE | head -40`` through ``Bash``;
    - ``sed``: ``sed -n 'a,bp' FILE`` through ``Bash`` (10-80 lines);
    - ``cat``: ``cat FILE`` through ``Bash`` (the whole file: 1,400-3,500 lines);
    - ``edit``: a Claude ``Edit`` of one line, and the next call puts it back, so the
      pool replayed in a loop always finds its text.
    """

    def __init__(self, repo: Path, size: int = 600, seed: int = 7, kind: str | None = None):
        rng = random.Random(seed)
        self.files = {rel: (repo / rel).read_text().split("\n") for rel in STDLIB_FILES}
        if kind == "edit":
            self.calls = [c for _ in range(size // 2) for c in self._edit_pair(rng)]
        else:
            self.calls = [self._one(rng, kind) for _ in range(size)]

    def _one(self, rng: random.Random, kind: str | None) -> tuple[str, str]:
        rel = rng.choice(list(self.files))
        lines = self.files[rel]
        if kind is None:
            x = rng.random()
            kind = next(k for k, top in MIX if x < top)
        if kind == "read":     # Read of a window, Claude's numbered output
            start = rng.randint(1, len(lines) - 200)
            limit = rng.randint(20, 150)
            out = "\n".join(f"{n:>6}\u2192{lines[n - 1]}" for n in range(start, start + limit))
            return _use("Read", {"file_path": f"{WORKSPACE}/{rel}", "offset": start,
                                 "limit": limit}), _result(out)
        if kind == "cat":
            return _use("Bash", {"command": f"cat {rel}", "description": "show"}), \
                _result("\n".join(lines).rstrip("\n"))
        word = rng.choice(WORDS)
        if kind == "grep":     # Grep tool, content mode with line numbers, over a directory
            hits = [f"{rel}:{n}:{t}" for n, t in enumerate(lines, 1) if word in t]
            hits = hits[rng.randint(0, max(0, len(hits) - 30)):][:30]
            return _use("Grep", {"pattern": word.strip(), "path": "lib", "output_mode": "content",
                                 "-n": True}), _result("\n".join(hits))
        if kind == "grep_n":   # grep -n through Bash on one file
            hits = [f"{n}:{t}" for n, t in enumerate(lines, 1) if word in t][:40]
            return _use("Bash", {"command": f"grep -n '{word.strip()}' {rel} | head -40",
                                 "description": "search"}), _result("\n".join(hits))
        if kind == "sed":
            start = rng.randint(1, len(lines) - 100)
            end = start + rng.randint(10, 80)
            out = "\n".join(lines[start - 1:end])
            return _use("Bash", {"command": f"sed -n '{start},{end}p' {rel}",
                                 "description": "show"}), _result(out)
        raise ValueError(f"unknown kind of call {kind!r}: one of {', '.join(KINDS)}")

    def _edit_pair(self, rng: random.Random) -> list[tuple[str, str]]:
        """An ``Edit`` of a line whose text occurs once in its file, and its undoing."""
        rel = rng.choice(list(self.files))
        lines = self.files[rel]
        while True:
            text = lines[rng.randrange(len(lines))]
            if text.strip() and lines.count(text) == 1:
                break
        path = f"{WORKSPACE}/{rel}"
        done = _result(f"The file {path} has been updated successfully.")
        return [(_use("Edit", {"file_path": path, "old_string": text,
                               "new_string": text + "  # edited"}), done),
                (_use("Edit", {"file_path": path, "old_string": text + "  # edited",
                               "new_string": text}), done)]

    def call(self, i: int, uid: str) -> bytes:
        """Both lines of call ``i`` (newline-terminated), ids made unique by ``uid``."""
        use, res = self.calls[i % len(self.calls)]
        return (use.replace("@ID@", uid) + "\n" + res.replace("@ID@", uid) + "\n").encode()


def _use(tool: str, inp: dict) -> str:
    return _j({"type": "assistant", "message": {
        "id": "msg_@ID@", "role": "assistant", "model": "claude-bench",
        "content": [{"type": "tool_use", "id": "toolu_@ID@", "name": tool, "input": inp}],
        "usage": {"input_tokens": 100, "output_tokens": 20}}, "session_id": "bench"})


def _result(text: str) -> str:
    return _j({"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": "toolu_@ID@", "type": "tool_result", "content": text}]},
        "session_id": "bench"})


def init_line() -> bytes:
    return (_j({"type": "system", "subtype": "init", "cwd": WORKSPACE, "session_id": "bench",
                "tools": ["Read", "Bash", "Grep"], "model": "claude-bench"}) + "\n").encode()


def make_run_dirs(runs: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        d = runs / f"r{i:04d}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"instance_id": INSTANCE, "run_id": f"r{i:04d}",
                                                 "agent": "claude-code", "model": "claude-bench"}))
        paths.append(d / "trace.jsonl")
    return paths


# ---------------------------------------------------------------------- writer process


def writer_main(repo: str, paths: list[str], calls: int, chunk_calls: int, rate: float,
                side: str, go, started) -> None:
    """Append ``calls`` tool calls to every path, round-robin, ``chunk_calls`` per visit.

    ``rate`` > 0 paces the writes at that many trace lines per second. For every call
    the time just before its write goes to ``side`` as ``trace_index call_no time``.
    """
    pool = CallPool(Path(repo))
    fds = [os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) for p in paths]
    log: list[str] = []
    go.wait()
    t0 = time.time()
    started.value = t0
    interval = (2 * chunk_calls / rate) if rate > 0 else 0.0
    visit = 0
    for k0 in range(0, calls, chunk_calls):
        k1 = min(calls, k0 + chunk_calls)
        for i, fd in enumerate(fds):
            if interval:
                due = t0 + visit * interval
                delay = due - time.time()
                if delay > 0.001:
                    time.sleep(delay)
            visit += 1
            data = b"".join(pool.call(i * 7919 + k, f"{i}_{k}") for k in range(k0, k1))
            t = time.time()
            os.write(fd, data)
            log.append(f"{i} {k1} {t:.6f}")
    for fd in fds:
        os.close(fd)
    Path(side).write_text("\n".join(log) + "\n")


def start_writer(repo: Path, paths: list[Path], calls: int, chunk_calls: int, rate: float,
                 side: Path):
    ctx = mp.get_context("spawn")
    go, started = ctx.Event(), ctx.Value("d", 0.0)
    p = ctx.Process(target=writer_main, args=(str(repo), [str(x) for x in paths], calls,
                                              chunk_calls, rate, str(side), go, started))
    p.start()
    return p, go, started


def read_side(side: Path) -> list[tuple[int, int, float]]:
    out = []
    for line in side.read_text().splitlines():
        i, k, t = line.split()
        out.append((int(i), int(k), float(t)))
    return out


# ---------------------------------------------------------------------- the watcher


class Probe:
    """Watcher instrumentation: when each (run, call count) became visible to a scrape.

    A session listener notes each tool call as it is consumed (inside the batch, under
    the table lock); the watcher's after-batch listener stamps them all with the time
    the batch ended and the lock was free again.
    """

    def __init__(self, total_lines: int):
        self.pending: list[tuple[str, int]] = []
        self.visible: dict[tuple[str, int], float] = {}
        self.total_lines = total_lines
        self.done = threading.Event()
        self.done_at = 0.0
        self.batches = 0

    def on_call(self, session, outcome, call) -> None:
        self.pending.append((session.identity.run_id, session.extras.tool_calls))

    def after_batch(self, w) -> None:
        t = time.time()
        self.batches += 1
        for key in self.pending:
            self.visible[key] = t
        self.pending.clear()
        if w.table.stats.lines_processed >= self.total_lines and not self.done.is_set():
            self.done_at = t
            self.done.set()


def make_watcher(runs: Path, repo: Path, gold: Path, probe: Probe | None, args=None):
    from streameval.live.table import RunTable
    from streameval.live.watch import WatchConfig, Watcher
    from streameval.runs.resources import load_resources

    class ProbedTable(RunTable):
        def add(self, run) -> None:
            if probe is not None:
                run.session.listeners.append(probe.on_call)
            super().add(run)

    res = load_resources(str(gold), None, str(repo))
    cfg = WatchConfig(root=runs, idle_timeout=3600, patch_grace=3600, rescan_interval=5.0)
    if args is not None and args.debounce_ms is not None:
        cfg.debounce_ms = args.debounce_ms
    if args is not None and args.step_ms is not None:
        cfg.step_ms = args.step_ms
    w = Watcher(cfg, res, table=ProbedTable())
    if probe is not None:
        w.listeners.append(probe.after_batch)
    return w, res


class BackgroundWatcher:
    """``run_watcher`` (watchfiles + ticker) on its own thread, as the CLI runs it."""

    def __init__(self, w):
        self.w = w

    def __enter__(self):
        import anyio
        from anyio.from_thread import start_blocking_portal

        from streameval.live.loop import run_watcher

        self._cm = start_blocking_portal()
        self.portal = self._cm.__enter__()
        self.stop = self.portal.call(anyio.Event)
        self.future, _ = self.portal.start_task(run_watcher, self.w, self.stop)
        return self

    def __exit__(self, *exc):
        self.portal.call(self.stop.set)
        self.future.result(timeout=60)
        self._cm.__exit__(*exc)


def replay_files(paths: list[Path], res) -> tuple[float, int]:
    from streameval.runs.evaluate import evaluate_trace

    t = time.perf_counter()
    calls = 0
    for p in paths:
        for rec in evaluate_trace(p, res):
            calls += rec.get("tool_calls", 0)
    return time.perf_counter() - t, calls


def count_lines(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            n += sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    return n


# ---------------------------------------------------------------------- phases


def phase_throughput(args, work: Path, n_traces: int, calls: int, chunk_calls: int) -> dict:
    repo, gold = make_setup(work)
    runs = work / "runs"
    paths = make_run_dirs(runs, n_traces)
    for p in paths:
        p.write_bytes(init_line())
    total = n_traces * (1 + 2 * calls)
    probe = Probe(total)
    w, res = make_watcher(runs, repo, gold, probe, args)
    side = work / "side.txt"
    proc, go, started = start_writer(repo, paths, calls, chunk_calls, 0.0, side)
    with BackgroundWatcher(w):
        time.sleep(0.5)   # initial scan done; sessions exist for every trace
        go.set()
        ok = probe.done.wait(args.timeout)
        proc.join()
    if not ok:
        raise SystemExit(f"watcher processed {w.table.stats.lines_processed} of {total} lines "
                         f"in {args.timeout}s")
    t0 = started.value
    watched = probe.done_at - t0
    writes = read_side(side)
    write_span = max(t for _, _, t in writes) - t0
    processed = w.table.stats.lines_processed - n_traces   # the init lines came before t0
    size = sum(p.stat().st_size for p in paths)
    tool_calls = sum(r.session.extras.tool_calls for r in w.table.runs.values())
    steps = sum(r.session.num_steps for r in w.table.runs.values())
    replay_s, replay_calls = replay_files(paths, res)
    return {"traces": n_traces, "lines": processed, "bytes": size, "tool_calls": tool_calls,
            "steps": steps, "watch_seconds": watched, "writer_seconds": write_span,
            "events_per_s": processed / watched, "calls_per_s": tool_calls / watched,
            "mb_per_s": size / watched / 1e6, "batches": probe.batches,
            "replay_seconds": replay_s, "replay_events_per_s": total / replay_s,
            "replay_calls": replay_calls, "watch_over_replay": (processed / watched) / (total / replay_s)}


#: what Prometheus 2.x/3.x sends when it scrapes (OpenMetrics preferred, gzip)
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
              "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
}


def scraper_main(url: str, interval: float, out: str, stop, run_ids: list[str]) -> None:
    """Scrape ``/metrics`` until ``stop``; per scrape, each run's tool calls counted."""
    pat = re.compile(r'^streameval_tool_calls_total\{([^}]*)\} ([0-9.e+]+)$', re.M)
    rid = re.compile(r'run_id="([^"]*)"')
    index = {r: i for i, r in enumerate(run_ids)}
    rows = []
    while not stop.is_set():
        t_start = time.time()
        req = urllib.request.Request(url, headers=PROMETHEUS_HEADERS)
        with urllib.request.urlopen(req, timeout=60) as resp:
            raw = resp.read()
            if resp.headers.get("Content-Encoding") == "gzip":
                raw = gzip.decompress(raw)
        t_end = time.time()
        body = raw.decode()
        counts = [0] * len(run_ids)
        for m in pat.finditer(body):
            r = rid.search(m.group(1))
            if r and r.group(1) in index:
                counts[index[r.group(1)]] += int(float(m.group(2)))
        rows.append({"start": t_start, "end": t_end, "bytes": len(body), "counts": counts})
        delay = interval - (time.time() - t_start)
        if delay > 0:
            stop.wait(delay)
    Path(out).write_text(json.dumps(rows))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def phase_latency(args, work: Path, rate: float) -> dict:
    from streameval.live.server import serve

    repo, gold = make_setup(work)
    runs = work / "runs"
    n = args.traces
    paths = make_run_dirs(runs, n)
    for p in paths:
        p.write_bytes(init_line())
    calls = args.latency_calls
    total = n * (1 + 2 * calls)
    probe = Probe(total)
    w, _res = make_watcher(runs, repo, gold, probe, args)
    registry = None
    if args.library_exposition:   # a registry of our own: prometheus_client renders
        from prometheus_client import CollectorRegistry
        registry = CollectorRegistry()
    server, _reg, port = serve(w.table, "127.0.0.1", 0, registry=registry)
    side = work / "side.txt"
    ctx = mp.get_context("spawn")
    stop_scrape = ctx.Event()
    scrapes = work / "scrapes.json"
    run_ids = [f"r{i:04d}" for i in range(n)]
    try:
        proc, go, started = start_writer(repo, paths, calls, 1, rate, side)
        with BackgroundWatcher(w):
            time.sleep(0.5)
            scraper = ctx.Process(target=scraper_main, args=(
                f"http://127.0.0.1:{port}/metrics", args.scrape_interval, str(scrapes),
                stop_scrape, run_ids))
            scraper.start()
            time.sleep(1.0)
            go.set()
            ok = probe.done.wait(args.timeout)
            proc.join()
            time.sleep(args.scrape_interval + 0.5)   # let the last steps be scraped
            stop_scrape.set()
            scraper.join()
    finally:
        server.shutdown()
    if not ok:
        raise SystemExit(f"latency run at {rate}/s did not finish in {args.timeout}s")
    writes = read_side(side)
    t0 = started.value
    duration = max(t for _, _, t in writes) - t0
    rows = json.loads(scrapes.read_text())
    windows = [(r["start"] - 0.05, r["end"]) for r in rows]
    visible, quiet = [], []
    for i, k, t in writes:
        v = probe.visible.get((run_ids[i], k))
        if v is not None:
            visible.append(v - t)
            if not any(a <= t <= b or a <= v <= b for a, b in windows):
                quiet.append(v - t)   # no scrape in flight while it waited
    scraped = scraped_latency(writes, rows)
    durations = [r["end"] - r["start"] for r in rows]
    return {"rate": rate, "interval": args.scrape_interval, "achieved_rate": 2 * len(writes) / duration, "traces": n,
            "calls": len(writes), "matched_visible": len(visible),
            "visible_p50": pct(visible, 0.5), "visible_p99": pct(visible, 0.99),
            "visible_max": max(visible) if visible else None,
            "quiet_n": len(quiet), "quiet_p50": pct(quiet, 0.5), "quiet_p99": pct(quiet, 0.99),
            "matched_scraped": len(scraped), "scraped_p50": pct(scraped, 0.5),
            "scraped_p99": pct(scraped, 0.99),
            "scrapes": len(rows), "scrape_p50": pct(durations, 0.5),
            "scrape_max": max(durations) if durations else None,
            "scrape_bytes": rows[-1]["bytes"] if rows else 0}


def scraped_latency(writes: list[tuple[int, int, float]], rows: list[dict]) -> list[float]:
    """Per call: end of the first scrape whose count for its run reached the call."""
    out = []
    by_run: dict[int, list[tuple[int, float]]] = {}
    for i, k, t in writes:
        by_run.setdefault(i, []).append((k, t))
    for i, items in by_run.items():
        j = 0   # counts only grow (no restarts here): one pass per run
        for k, t in sorted(items):
            while j < len(rows) and rows[j]["counts"][i] < k:
                j += 1
            if j < len(rows):
                out.append(rows[j]["end"] - t)
    return out


def phase_memory(args, work: Path, use_tracemalloc: bool) -> dict:
    import tracemalloc

    repo, gold = make_setup(work)
    n, calls = args.mem_traces, args.mem_calls
    pool = CallPool(repo)
    warm = work / "warm"
    runs = work / "runs"
    for root, count in ((warm, 1), (runs, n)):
        for i, p in enumerate(make_run_dirs(root, count)):
            with open(p, "wb") as fh:
                fh.write(init_line())
                for k in range(calls):
                    fh.write(pool.call(i * 7919 + k, f"{i}_{k}"))
    # warm-up over the same files: repo bytes, line indexes and symbols cached
    ww, res = make_watcher(warm, repo, gold, None)
    ww.scan()
    ww.poll_all()
    for r in ww.table.runs.values():
        r.session.state.snapshot()
    w, _ = make_watcher(runs, repo, gold, None)
    w.res = res   # the same shared caches the warm-up filled
    gc.collect()
    before = rss_bytes()
    if use_tracemalloc:
        tracemalloc.start()
    t = time.perf_counter()
    from streameval.live.follow import TraceFollower

    for p in sorted(runs.glob("*/trace.jsonl")):
        w.followers[p] = TraceFollower(p, w.table, res)
    w.poll_all()
    elapsed = time.perf_counter() - t
    gc.collect()
    after = rss_bytes()
    traced = tracemalloc.get_traced_memory()[0] if use_tracemalloc else None
    if use_tracemalloc:
        tracemalloc.stop()
    sessions = len(w.table.runs)
    active, _fin = w.table.counts()
    return {"sessions": sessions, "active": active, "calls_per_session": calls,
            "steps": sum(r.session.num_steps for r in w.table.runs.values()),
            "rss_before": before, "rss_after": after,
            "per_session_rss": (after - before) / max(1, sessions),
            "per_session_traced": (traced / max(1, sessions)) if traced is not None else None,
            "load_seconds": elapsed}


ACCEPTS = (None, PROMETHEUS_HEADERS["Accept"], "application/openmetrics-text",
           "text/plain;version=1.0.0;escaping=allow-utf-8", "text/plain; version=0.0.4")


def phase_exposition(args, work: Path) -> dict:
    """The exporter's own /metrics rendering vs prometheus_client's, same table.

    Checks the bytes are identical for every Accept header a client may send, and
    times both (the collector is the exporter's; only who writes the text differs).
    """
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder

    from streameval.live.exporter import RunsCollector
    from streameval.live.exposition import _fast_encoding, render

    repo, gold = make_setup(work)
    pool = CallPool(repo)
    runs = work / "runs"
    for i, p in enumerate(make_run_dirs(runs, args.traces)):
        with open(p, "wb") as fh:
            fh.write(init_line())
            for k in range(5):
                fh.write(pool.call(i * 7919 + k, f"{i}_{k}"))
            if i % 3 == 0:
                fh.write(b"{not json\n")
    (runs / "r0001" / "meta.json").write_text(json.dumps(
        {"instance_id": INSTANCE, "run_id": 'odd"id\\x\ny', "agent": "ag\u00e9nt", "model": "m"}))
    w, _res = make_watcher(runs, repo, gold, None)
    w.scan()
    w.poll_all()
    collector = RunsCollector(w.table)
    registry = CollectorRegistry()
    registry.register(collector)
    out = {"runs": len(w.table.runs), "identical": True, "cases": []}
    for accept in ACCEPTS:
        encoder, _ctype = choose_encoder(accept)
        t0 = time.perf_counter()
        lib = encoder(registry)
        t1 = time.perf_counter()
        fast = render(collector, encoder, _fast_encoding(encoder))
        t2 = time.perf_counter()
        same = lib == fast
        out["identical"] &= same
        out["cases"].append({"accept": accept or "(none)", "same": same, "bytes": len(lib),
                             "library_s": t1 - t0, "render_s": t2 - t1})
    return out


# ---------------------------------------------------------------------- driver


PHASES = ("single", "many", "latency", "memory", "exposition")


def run_phase(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench_live_"))
    try:
        if args.phase == "single":
            calls = (args.lines - 1) // 2
            return phase_throughput(args, work, 1, calls, max(1, args.chunk // 2))
        if args.phase == "many":
            return phase_throughput(args, work, args.traces, args.calls, 1)
        if args.phase == "latency":
            return phase_latency(args, work, args.rate_one)
        if args.phase == "memory":
            return phase_memory(args, work, False)
        if args.phase == "exposition":
            return phase_exposition(args, work)
        if args.phase == "memory-traced":
            return phase_memory(args, work, True)
        raise SystemExit(f"unknown phase {args.phase}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def child(argv: list[str], phase: str, extra: list[str] = (), version: Version | None = None) -> dict:
    """One phase in a fresh process of ``version`` (default: this checkout): this
    script's workload, that version's streameval."""
    version = version or current()
    out = version.run([__file__, *argv, "--phase", phase, *extra], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{version.name}: phase {phase} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare_throughput(args, passthrough: list[str], wanted: list[str], results: dict) -> None:
    """(a) and (b) in one watcher of every version, the versions alternating within each
    round (new, old; then old, new), so both see the same machine state."""
    vs = versions(args)
    titles = {"single": "(a) one trace", "many": f"(b) {args.traces} concurrent traces"}
    for phase in (ph for ph in ("single", "many") if ph in wanted):
        rows = results.setdefault("compare", {}).setdefault(phase, [])
        for r in range(args.rounds):
            order = vs if r % 2 == 0 else vs[::-1]
            got = {v.name: child(passthrough, phase, version=v) for v in order}
            rows.append(got)
            report_round(f"{titles[phase]}, round {r + 1}", got)
        report_summary(titles[phase], rows)


def parse_workers(text: str) -> list[int]:
    """``1,2,N``: N is the cores this process may use."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [cores or 1 if w.strip().upper() == "N" else int(w) for w in text.split(",") if w.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phases", default=",".join(PHASES), help="comma list of " + ", ".join(PHASES))
    p.add_argument("--lines", type=int, default=100_000, help="(a) lines of the single trace")
    p.add_argument("--chunk", type=int, default=1000, help="(a) lines per append")
    p.add_argument("--traces", type=int, default=1000, help="(b, c) concurrent traces")
    p.add_argument("--calls", type=int, default=50, help="(b) tool calls per trace")
    p.add_argument("--rates", default="1000,2000,4000", help="(c) writer lines/s, comma list")
    p.add_argument("--latency-calls", type=int, default=30, help="(c) tool calls per trace")
    p.add_argument("--scrape-interval", type=float, default=1.0, help="(c) seconds between scrapes")
    p.add_argument("--mem-traces", type=int, default=1000, help="(d) sessions alive")
    p.add_argument("--mem-calls", type=int, default=50, help="(d) tool calls per session")
    p.add_argument("--debounce-ms", type=int, help="watchfiles debounce (default: WatchConfig's)")
    p.add_argument("--step-ms", type=int, help="watchfiles step (default: WatchConfig's)")
    p.add_argument("--library-exposition", action="store_true",
                   help="(c) let prometheus_client render /metrics (the exporter's old path)")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    add_arguments(p)
    p.add_argument("--rounds", type=int, default=1,
                   help="(a, b) with --old: rounds of both versions, alternating")
    p.add_argument("--workers", help="(a, b) comma list of worker counts (N: the cores): the "
                                     "phases run through `streameval watch --workers N` "
                                     "(watchproc.py)")
    p.add_argument("--json", type=Path, help="also write every figure as JSON")
    p.add_argument("--phase", help=argparse.SUPPRESS)
    p.add_argument("--rate-one", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.lines, args.traces, args.calls, args.mem_traces = 10_000, 100, 20, 100
        args.rates, args.latency_calls, args.mem_calls = "2000", 5, 20
    if args.phase:
        print(json.dumps(run_phase(args)))
        return 0
    passthrough = [f"--lines={args.lines}", f"--chunk={args.chunk}", f"--traces={args.traces}",
                   f"--calls={args.calls}", f"--latency-calls={args.latency_calls}",
                   f"--scrape-interval={args.scrape_interval}", f"--mem-traces={args.mem_traces}",
                   f"--mem-calls={args.mem_calls}", f"--timeout={args.timeout}"]
    passthrough += ["--library-exposition"] if args.library_exposition else []
    passthrough += [f"--{k.replace('_', '-')}={v}" for k, v in
                    (("debounce_ms", args.debounce_ms), ("step_ms", args.step_ms)) if v is not None]
    m = machine()
    print("machine:", ", ".join(f"{k}={v}" for k, v in m.items()), flush=True)
    wanted = [x.strip() for x in args.phases.split(",") if x.strip()]
    results: dict = {"machine": m}
    if args.workers or args.old or args.rounds > 1:
        results["old"] = label(args)
        if args.old:
            print(f"old: {results['old']}; new: {head()}", flush=True)
        if args.workers:
            results["workers"] = by_workers(args, wanted)
        else:
            compare_throughput(args, passthrough, wanted, results)
        wanted = [w for w in wanted if w not in ("single", "many")]
    if "single" in wanted:
        r = results["single"] = child(passthrough, "single")
        report_throughput("(a) one trace", r)
    if "many" in wanted:
        r = results["many"] = child(passthrough, "many")
        report_throughput(f"(b) {r['traces']} concurrent traces", r)
    if "latency" in wanted:
        results["latency"] = []
        for rate in [float(x) for x in args.rates.split(",") if x.strip()]:
            r = child(passthrough, "latency", [f"--rate-one={rate}"])
            results["latency"].append(r)
            report_latency(r)
    if "memory" in wanted:
        r = results["memory"] = child(passthrough, "memory")
        t = results["memory_traced"] = child(passthrough, "memory-traced")
        report_memory(r, t)
    if "exposition" in wanted:
        r = results["exposition"] = child(passthrough, "exposition")
        report_exposition(r)
    print("json:", json.dumps(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def by_workers(args, wanted: list[str]) -> dict:
    """(a) and (b) through ``watch --workers N`` for each N of ``--workers`` and, with
    ``--old``, the older version's one watcher, in turn within each of ``--rounds`` (the
    order reversed every other round, so each sees the same machine state)."""
    import watchproc

    vs = versions(args)
    runs = [(vs[0], n) for n in parse_workers(args.workers)] + [(v, 1) for v in vs[1:]]
    out: dict = {}
    for phase, traces, calls, chunk in (("single", 1, (args.lines - 1) // 2, max(1, args.chunk // 2)),
                                        ("many", args.traces, args.calls, 1)):
        if phase not in wanted:
            continue
        title = "(a) one trace" if phase == "single" else f"(b) {traces} traces"
        rounds = out[phase] = []
        for r in range(args.rounds):
            rows = []
            for version, n in (runs if r % 2 == 0 else runs[::-1]):
                work = Path(tempfile.mkdtemp(prefix="bench_live_workers_"))
                try:
                    rows.append(watchproc.throughput(work, traces, calls, chunk, n, args.timeout,
                                                     version))
                finally:
                    shutil.rmtree(work, ignore_errors=True)
            rounds.append(rows)
            watchproc.report(f"{title}, round {r + 1}", rows)
        watchproc.summary(title, rounds)
    return out


def report_throughput(title: str, r: dict) -> None:
    ok = "meets" if r["events_per_s"] >= TARGET_EVENTS else "MISSES"
    print(f"{title}: {r['lines']:,} lines ({r['bytes'] / 1e6:.0f} MB, {r['tool_calls']:,} tool "
          f"calls, {r['steps']:,} steps) watched in {r['watch_seconds']:.2f} s "
          f"(writer done after {r['writer_seconds']:.2f} s, {r['batches']:,} batches)")
    print(f"    watch: {r['events_per_s']:,.0f} events/s, {r['calls_per_s']:,.0f} tool calls/s, "
          f"{r['mb_per_s']:.1f} MB/s  [{ok} target {TARGET_EVENTS:,}/s "
          f"({r['events_per_s'] / TARGET_EVENTS:.2f}x)]")
    same = "same tool calls" if r["replay_calls"] == r["tool_calls"] else "TOOL CALLS DIFFER"
    print(f"    plain replay of the same files: {r['replay_events_per_s']:,.0f} events/s "
          f"({r['replay_seconds']:.2f} s); watch/replay = {r['watch_over_replay']:.2f} ({same})",
          flush=True)


def report_round(title: str, got: dict[str, dict]) -> None:
    cells = ", ".join(f"{name} {r['events_per_s']:,.0f} events/s (replay {r['replay_events_per_s']:,.0f})"
                      for name, r in sorted(got.items(), key=lambda kv: kv[0] != "new"))
    ratio = (f"; new/old {got['new']['events_per_s'] / got['old']['events_per_s']:.2f}"
             if "old" in got else "")
    print(f"{title}: {cells}{ratio}", flush=True)


def report_summary(title: str, rows: list[dict[str, dict]]) -> None:
    for name in sorted(rows[0], key=lambda n: n != "new"):
        figures = [r[name]["events_per_s"] for r in rows]
        print(f"    {title}, {name}: median {statistics.median(figures):,.0f} events/s "
              f"({', '.join(f'{x:,.0f}' for x in figures)})")
    if "old" in rows[0]:
        ratios = [r["new"]["events_per_s"] / r["old"]["events_per_s"] for r in rows]
        print(f"    {title}, new/old: median {statistics.median(ratios):.2f} "
              f"({', '.join(f'{x:.2f}' for x in ratios)})", flush=True)


def report_latency(r: dict) -> None:
    ok = "meets" if r["visible_p99"] < TARGET_P99 else "MISSES"
    print(f"(c) latency, {r['traces']} traces, writer at {r['rate']:,.0f} lines/s "
          f"(achieved {r['achieved_rate']:,.0f}), {r['calls']:,} steps:")
    print(f"    write -> visible to a scrape: p50 {r['visible_p50'] * 1e3:.1f} ms, p99 "
          f"{r['visible_p99'] * 1e3:.1f} ms, max {r['visible_max'] * 1e3:.1f} ms "
          f"[{ok} p99 < {TARGET_P99 * 1e3:.0f} ms]")
    print(f"      of which {r['quiet_n']:,} steps saw no scrape in flight: p50 "
          f"{r['quiet_p50'] * 1e3:.1f} ms, p99 {r['quiet_p99'] * 1e3:.1f} ms")
    print(f"    write -> in a /metrics response (scrape every {r.get('interval', '')}s): p50 "
          f"{r['scraped_p50'] * 1e3:.0f} ms, p99 {r['scraped_p99'] * 1e3:.0f} ms "
          f"({r['matched_scraped']:,} steps matched; {r['scrapes']} scrapes, p50 "
          f"{r['scrape_p50'] * 1e3:.0f} ms / max {r['scrape_max'] * 1e3:.0f} ms each, "
          f"{r['scrape_bytes'] / 1e6:.1f} MB)", flush=True)


def report_exposition(r: dict) -> None:
    verdict = "byte-identical" if r["identical"] else "DIFFERENT"
    print(f"exposition of {r['runs']:,} runs: exporter's rendering vs prometheus_client's: {verdict}")
    for c in r["cases"]:
        print(f"    Accept {c['accept'][:48]!s:48}  {c['bytes'] / 1e6:.1f} MB  library "
              f"{c['library_s'] * 1e3:5.0f} ms  exporter {c['render_s'] * 1e3:5.0f} ms  "
              f"{'same' if c['same'] else 'DIFFERENT'}", flush=True)


def report_memory(r: dict, t: dict) -> None:
    mb = r["per_session_rss"] / 1e6
    ok = "meets" if mb <= TARGET_MB else "MISSES"
    print(f"(d) memory: {r['sessions']:,} sessions alive ({r['active']:,} active, "
          f"{r['calls_per_session']} tool calls / {r['steps'] / max(1, r['sessions']):.0f} steps "
          f"each), loaded in {r['load_seconds']:.1f} s")
    print(f"    RSS {r['rss_before'] / 1e6:.0f} MB -> {r['rss_after'] / 1e6:.0f} MB: "
          f"{mb:.3f} MB per session [{ok} <= {TARGET_MB} MB]; tracemalloc: "
          f"{t['per_session_traced'] / 1e6:.3f} MB per session", flush=True)


if __name__ == "__main__":
    sys.exit(main())
