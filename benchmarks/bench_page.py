"""The page left open: does its memory stay flat while the runs keep moving?

Starts ``streameval watch`` over N runs (a small real repository and gold, Claude Code
traces), keeps appending tool calls to random runs (and one run that grows all along),
opens the fleet and that run's page in Debian's chromium (Playwright, the system
browser), and every ``--sample`` seconds measures, after a forced garbage collection:
each tab's JS heap and DOM node count (Chrome DevTools Protocol), the watcher's RSS, and
how long ``/api/runs`` (in full) and ``/metrics`` take while the page polls.

    python benchmarks/bench_page.py --runs 200 --minutes 5

A figure, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "live"), str(ROOT / "tests" / "web")]

import importlib.util  # noqa: E402

from claude_run import APP, UTIL, Claude, append, make_setup  # noqa: E402
from web_process import Streameval  # noqa: E402

# the browser and its flags, as the browser tests launch it (tests/web/conftest.py)
_spec = importlib.util.spec_from_file_location("web_conftest", ROOT / "tests/web/conftest.py")
_web = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_web)
ARGS, CHROMIUM = _web.ARGS, _web.CHROMIUM


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        r.read()
    return time.perf_counter() - start


def tab_memory(cdp) -> tuple[float, int]:
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return metrics["JSHeapUsedSize"] / 2**20, int(metrics["Nodes"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--sample", type=float, default=30.0)
    ap.add_argument("--calls-per-second", type=float, default=20.0)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-page-"))
    s = make_setup(tmp)
    runs = tmp / "runs"
    claudes = []
    for i in range(args.runs):
        d = runs / f"r{i:04d}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text(f'{{"instance_id": "{s.instance}", "run_id": "r{i:04d}"}}')
        c = Claude()
        append(d / "trace.jsonl", c.init(), *c.read("src/app.py", APP, 1, 1 + i % 40))
        claudes.append(c)
    w = Streameval("watch", str(runs), "--gold", str(s.gold), "--repo", str(s.repo),
                   "--idle-timeout", "86400", "-q", cwd=tmp)
    stop = threading.Event()

    def writer() -> None:
        rng = random.Random(7)
        while not stop.wait(1.0 / args.calls_per_second):
            i = 0 if rng.random() < 0.05 else rng.randrange(args.runs)
            text, n = (APP, 60) if rng.random() < 0.5 else (UTIL, 30)
            start = rng.randrange(1, n)
            append(runs / f"r{i:04d}" / "trace.jsonl",
                   *claudes[i].read("src/app.py" if text is APP else "src/util.py", text, start, 5))

    threading.Thread(target=writer, daemon=True).start()
    profile = tmp / "profile"
    rows = []
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM,
                                                       headless=True, args=ARGS)
            fleet, run = ctx.new_page(), ctx.new_page()
            fleet.goto(w.base + "/")
            run.goto(w.base + "/runs/r0000")
            cdps = [ctx.new_cdp_session(t) for t in (fleet, run)]
            for cdp in cdps:
                cdp.send("Performance.enable")
            start = time.monotonic()
            print(f"{'minute':>7} {'fleet MB':>9} {'nodes':>7} {'run MB':>8} {'nodes':>7} "
                  f"{'watch RSS MB':>13} {'/api/runs s':>12} {'/metrics s':>11} {'run steps':>10}")
            while time.monotonic() - start < args.minutes * 60:
                time.sleep(args.sample)
                (fh, fn), (rh, rn) = (tab_memory(c) for c in cdps)
                steps = run.get_attribute('polyline[data-granularity="line"]', "data-points")
                row = ((time.monotonic() - start) / 60, fh, fn, rh, rn, rss_mb(w.proc.pid),
                       timed_get(w.base + "/api/runs"), timed_get(w.base + "/metrics"), steps)
                rows.append(row)
                print(f"{row[0]:>7.1f} {row[1]:>9.1f} {row[2]:>7} {row[3]:>8.1f} {row[4]:>7} "
                      f"{row[5]:>13.0f} {row[6]:>12.3f} {row[7]:>11.3f} {row[8]:>10}", flush=True)
            ctx.close()
    finally:
        stop.set()
        w.stop()
    if len(rows) >= 2:
        first, last = rows[0], rows[-1]
        print(f"fleet tab heap {first[1]:.1f} -> {last[1]:.1f} MB, run tab heap {first[3]:.1f} -> "
              f"{last[3]:.1f} MB over {last[0]:.1f} minutes ({args.runs} runs, "
              f"{args.calls_per_second:g} calls/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
