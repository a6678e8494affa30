"""Many short runs through one ``streameval watch --max-runs 1000``: does the cost of a
run, the memory and the checkpoint stay flat however many runs passed (issue 18)?
This checkout against 648f216, on the same machine, in one run.

A writer keeps ``--ahead`` runs written and not yet recorded: each a run directory with
``meta.json`` and a Claude stream-json ``trace.jsonl`` (init, ``--calls`` tool calls over
real standard-library files, the result line that ends it), as bench_live.py writes
them. The watcher (``--out``, ``--checkpoint``, ``--idle-timeout 5``, ``--patch-grace 0``)
scores them and writes one record each. At every 1,000 records: the time those 1,000
took, the watcher's RSS, the checkpoint's size, and three scrapes of /metrics (their
time and size). Throughout, a prober scrapes /metrics every ``--probe-every`` seconds:
the time of every scrape, and the age of the numbers it served
(``streameval_metrics_age_seconds``, with the default ``--front process``).

    python benchmarks/bench_soak.py                         # 50,000 runs, new and base
    python benchmarks/bench_soak.py --impl new --runs 10000
    python benchmarks/bench_soak.py --impl new,new-thread   # the front process, or none
    python benchmarks/bench_soak.py --summarize soak.json   # a saved run's figures again
    python benchmarks/bench_soak.py --impl new --runs 15000 --gc-log   # its full collections

Loopback only; each implementation stops at ``--runs`` or after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench_live import INSTANCE, CallPool, init_line, make_setup
from loadgen import Watch, add_impl_options, impls, pct
from machine import machine

RESULT = b'{"type": "result", "subtype": "success", "is_error": false, "session_id": "bench"}\n'


def write_run(runs: Path, i: int, pool: CallPool, calls: int) -> None:
    d = runs / f"{i // 1000:03d}" / f"r{i:06d}"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": INSTANCE, "run_id": f"r{i:06d}",
                                             "agent": "claude-code", "model": "claude-bench"}))
    body = init_line() + b"".join(pool.call(i * calls + j, f"{i}-{j}") for j in range(calls)) + RESULT
    (d / "trace.jsonl").write_bytes(body)


def scrape(port: int) -> tuple[float, bytes]:
    """One GET of /metrics: its time and its body."""
    t = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        body = r.read()
    return time.perf_counter() - t, body


class Prober(threading.Thread):
    """/metrics scraped every ``every`` seconds: each scrape's time, and the age of
    the numbers it served."""

    def __init__(self, port: int, every: float):
        super().__init__(daemon=True)
        self.port, self.every = port, every
        self.stop = threading.Event()
        self.times: list[float] = []
        self.at: list[float] = []   # when each scrape began, seconds after the first
        self.ages: list[float] = []
        self.failed = 0

    def run(self) -> None:
        start = time.perf_counter()
        while not self.stop.wait(self.every):
            began = time.perf_counter() - start
            try:
                took, body = scrape(self.port)
            except OSError:
                self.failed += 1
                continue
            self.times.append(took)
            self.at.append(began)
            at = body.find(b"\nstreameval_metrics_age_seconds ")
            if at >= 0:
                self.ages.append(float(body[at:body.index(b"\n", at + 1)].split()[1]))

    def summary(self) -> dict:
        ms = sorted(t * 1000 for t in self.times)
        if not ms:
            return {"scrapes": 0, "failed": self.failed}
        return {"scrapes": len(ms), "failed": self.failed, "p50_ms": round(pct(ms, 0.5), 1),
                "p99_ms": round(pct(ms, 0.99), 1), "max_ms": round(ms[-1], 1),
                "over_100ms": sum(m > 100 for m in ms),
                # when the slow ones happened: a burst of the machine's other work, or a pattern
                "over_100ms_at_s": [round(a) for a, t in zip(self.at, self.times) if t > 0.1],
                "age_max_s": round(max(self.ages), 3) if self.ages else None}


def checkpoint_kb(cp: Path) -> float:
    """The checkpoint's size: one watcher's file, or the workers' parts (``CP.wI``)
    added up."""
    return round(sum(p.stat().st_size for p in [cp, *cp.parent.glob(cp.name + ".w*")]
                     if p.exists()) / 1e3, 1)


def count_lines(path: Path, state: dict) -> int:
    """Records in --out so far (read incrementally)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(state.get("pos", 0))
            data = fh.read()
    except FileNotFoundError:
        return 0
    state["pos"] = state.get("pos", 0) + len(data)
    state["n"] = state.get("n", 0) + data.count(b"\n")
    return state["n"]


def soak(impl, work: Path, args) -> dict:
    runs = work / f"runs-{impl.name}"
    runs.mkdir()
    out, cp = work / f"out-{impl.name}.jsonl", work / f"cp-{impl.name}.json"
    w = Watch(impl, [str(runs), "--gold", str(work / "gold.jsonl"), "--repo", str(work / "repo"),
                     "--port", "0", "--out", str(out), "--checkpoint", str(cp),
                     "--max-runs", "1000", "--idle-timeout", "5", "--patch-grace", "0",
                     # the watcher's default unless asked (older versions have no --workers)
                     *(["--workers", str(args.workers)] if args.workers and impl.name.startswith("new") else [])],
              work / f"watch-{impl.name}.log",
              gc_log=work / f"gc-{impl.name}.log" if args.gc_log else None)
    pool = CallPool(work / "repo")
    prober = Prober(w.port, args.probe_every)
    prober.start()
    written, state, rows = 0, {}, []
    start = last = time.monotonic()
    next_mark = 1000
    try:
        while True:
            done = count_lines(out, state)
            while written < args.runs and written - done < args.ahead:
                write_run(runs, written, pool, args.calls)
                written += 1
            if done >= next_mark:
                now = time.monotonic()
                scrapes = [scrape(w.port) for _ in range(3)]
                rows.append({"runs": next_mark, "s_per_1000": round(now - last, 2),
                             "rss_mb": round(w.status("VmRSS") / 1e6, 1),
                             "checkpoint_kb": checkpoint_kb(cp),
                             "metrics_ms": round(max(s for s, _ in scrapes) * 1000, 1),
                             "metrics_kb": round(len(scrapes[-1][1]) / 1e3)})
                print(impl.name, json.dumps(rows[-1]), flush=True)
                last = now
                next_mark += 1000
            if done >= args.runs or time.monotonic() - start > args.max_seconds:
                break
            time.sleep(0.05)
    finally:
        prober.stop.set()
        prober.join(60)
        w.stop()
    res = {"runs_recorded": state.get("n", 0), "seconds": round(time.monotonic() - start, 1),
           "every_1000": rows, **flatness(rows), "probe": prober.summary()}
    if args.gc_log:
        res["full_gc"] = gc_summary(work / f"gc-{impl.name}.log")
    return res


def gc_summary(log: Path) -> dict:
    """The full garbage collections (``gchook``) after the first minute, of the
    processes that score (``worker-N``; the watcher itself with ``--workers 1``, or in a
    log of before issue 27, which names no process): how many, how long each held its
    process (and the CPU time each took), and how often they came; then the same for
    each process apart."""
    rows, census = [], {}
    for line in log.read_text().splitlines():
        if line.startswith("# census "):   # gchook's BENCH_GC_CENSUS: each process's last
            census[line.split()[2]] = line[len("# census "):]
            continue
        if line.startswith("#"):   # gchook's other notes (BENCH_GC_LONG)
            continue
        f = line.split()
        rows.append((float(f[0]), float(f[1]), float(f[2]) if len(f) > 2 else None,
                     f[3] if len(f) > 3 else "watch", int(f[4]) if len(f) > 4 else None,
                     int(f[5]) if len(f) > 5 and f[5] != "-" else None))
    if not rows:
        return {"collections": 0}
    start = min(r[0] for r in rows)
    rows = [r for r in rows if r[0] >= start + 60] or rows
    roles = sorted({r[3] for r in rows})
    scoring = [r for r in rows if r[3].startswith("worker-")] or [r for r in rows if r[3] == "watch"]
    out = _gc_figures(scoring)
    out["processes"] = {role: _gc_figures([r for r in rows if r[3] == role]) for role in roles}
    if census:
        out["census"] = census
    return out


def _gc_figures(rows: list[tuple]) -> dict:
    if not rows:
        return {"collections": 0}
    ms = sorted(r[1] for r in rows)
    at = sorted(r[0] for r in rows)
    gaps = [b - a for a, b in zip(at, at[1:])]
    out = {"collections": len(ms), "median_ms": round(statistics.median(ms), 1),
           "max_ms": ms[-1], "median_every_s": round(statistics.median(gaps), 2) if gaps else None}
    cpu = sorted(r[2] for r in rows if r[2] is not None)   # logs of before issue 27 have none
    if cpu:
        out.update(cpu_median_ms=round(statistics.median(cpu), 1), cpu_max_ms=cpu[-1])
    freed = sorted(r[4] for r in rows if r[4] is not None)   # logs of before this stop have none
    if freed:
        out.update(freed_median=statistics.median(freed), freed_max=freed[-1])
    # objects frozen (``live.freezer``), after the first minute and at the end: one that
    # died in a cycle after its freeze is never freed, so a leak would show as growth
    frozen = [r[5] for r in sorted(rows) if r[5] is not None]
    if frozen:
        out.update(frozen_first=frozen[0], frozen_last=frozen[-1], frozen_max=max(frozen))
    return out


def flatness(rows: list[dict]) -> dict:
    """After the first 5,000 runs: the spread of the time per 1,000 runs and of RSS,
    as (max - min) / min, and their trend."""
    after = [r for r in rows if r["runs"] > 5000]
    if len(after) < 2:
        return {}

    def spread(key: str) -> float:
        vals = [r[key] for r in after]
        return round((max(vals) - min(vals)) / min(vals), 3)

    # the trend: a least-squares line through every row, its value at the last row
    # against its value at the first. Rows of a shared machine scatter by +-30%; the
    # five first and five last rows alone moved by 10-14% from run to run with no trend
    def trend(key: str) -> float:
        x, y = [r["runs"] for r in after], [r[key] for r in after]
        slope, at0 = statistics.linear_regression(x, y)
        return round((at0 + slope * x[-1]) / (at0 + slope * x[0]) - 1, 3)

    # the five first rows against the five last, medians: the ends alone, for comparison
    def ends(key: str) -> float:
        vals = [r[key] for r in after]
        k = min(5, len(vals) // 2) or 1
        return round(statistics.median(vals[-k:]) / statistics.median(vals[:k]) - 1, 3)

    return {"after_5000": {"time_spread": spread("s_per_1000"), "time_trend": trend("s_per_1000"),
                           "time_ends": ends("s_per_1000"),
                           "rss_spread": spread("rss_mb"), "rss_trend": trend("rss_mb"),
                           "rss_ends": ends("rss_mb"),
                           "checkpoint_kb_max": max(r["checkpoint_kb"] for r in after),
                           "metrics_ms_max": max(r["metrics_ms"] for r in after)}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_impl_options(p)
    p.add_argument("--runs", type=int, default=50_000)
    p.add_argument("--calls", type=int, default=4, help="tool calls per run")
    p.add_argument("--ahead", type=int, default=300, help="runs written and not yet recorded")
    p.add_argument("--max-seconds", type=float, default=900.0)
    p.add_argument("--workers", type=int, default=None,
                   help="watch --workers (this checkout only; default: the watcher's own, the "
                        "cores; the figures of before issue 27's second stop in "
                        "benchmarks/README.md gave 1)")
    p.add_argument("--gc-log", action="store_true",
                   help="log the full garbage collections of the watcher and of each process it "
                        "starts (gchook/), after the first minute")
    p.add_argument("--probe-every", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between the prober's scrapes of /metrics")
    p.add_argument("--json", type=Path)
    p.add_argument("--summarize", type=Path, metavar="JSON",
                   help="print the flatness of a saved run (its rows, today's definitions)")
    args = p.parse_args()
    if args.summarize:
        for name, res in json.loads(args.summarize.read_text())["impls"].items():
            print(name, json.dumps({**flatness(res["every_1000"]), "probe": res.get("probe")}))
        return
    results = {"machine": machine(), "args": vars(args) | {"json": str(args.json)}, "impls": {}}
    print(json.dumps(results["machine"]), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        work = Path(tmp)
        make_setup(work)
        for impl in impls(args.impl, args.base):
            res = soak(impl, work, args)
            results["impls"][impl.name] = res
            if args.gc_log and args.json:   # every collection, beside the figures
                log = work / f"gc-{impl.name}.log"
                args.json.with_name(f"{args.json.stem}.gc-{impl.name}.log").write_bytes(log.read_bytes())
            print(impl.name, json.dumps({k: v for k, v in res.items() if k != "every_1000"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
