"""``bench_live.py --workers 1,2,N``: the throughput phases through the real command
line, ``streameval watch --workers N``, so that the scoring of one and of N worker
processes is measured the same way (the in-process phases of bench_live.py measure one
watcher in the benchmark's own process).

The writer is bench_live.py's (the same traces, the same pace). The watch is told
to checkpoint every 0.05 s; a trace's bytes are processed once its worker's checkpoint
says so (``offset``), so the end is seen within a checkpoint's interval of the last
line scored, without scraping the workers while they work. Figures: events/s (trace
lines after the first of each trace, over the time from the writer's first write to
the last byte processed), and the CPU seconds of each process meanwhile: the workers,
the front and the supervisor (on 2 cores with 2 workers, the front's share matters).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class WatchProcess:
    """``streameval watch RUNS --workers N`` with a checkpoint in ``work``."""

    def __init__(self, work: Path, runs: Path, gold: Path, repo: Path, workers: int,
                 version=None):
        self.workers = workers
        self.cp = work / f"cp-{workers}.json"
        self.log = work / f"watch-{workers}.log"
        cmd = [sys.executable, "-m", "streameval", "watch", str(runs), "--gold", str(gold),
               "--repo", str(repo), "--port", "0", "--quiet",
               "--checkpoint", str(self.cp), "--checkpoint-interval", "0.05",
               "--idle-timeout", "3600", "--patch-grace", "3600"]
        # an older version (``older.Version``) before --workers scores in one process; one
        # that has it (f1cbdb0 and later) is given 1 here: its default is the cores
        if version is None or version.name == "new" or _has_workers(version.checkout):
            cmd += ["--workers", str(workers)]
        where = dict(cwd=ROOT) if version is None else \
            dict(cwd=version.checkout, env=version.env)
        if version is not None:
            cmd[0] = version.python
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, **where)
        deadline = time.monotonic() + 300
        while b"serving metrics on" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"watch did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def processed(self) -> int:
        """Bytes of the traces processed, as the checkpoints say."""
        parts = [self.cp] if self.workers == 1 else \
            [Path(f"{self.cp}.w{i}") for i in range(self.workers)]
        total = 0
        for part in parts:
            try:
                files = json.loads(part.read_bytes())["files"]
            except (OSError, ValueError, KeyError):
                continue
            total += sum(f.get("offset", 0) for f in files.values())
        return total

    def cpu(self) -> dict[str, float]:
        """CPU seconds of each process: ``watch`` (supervisor, or the one watcher),
        ``front``, ``worker-I``."""
        out: dict[str, float] = {}
        pids = [self.proc.pid]
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*"):
            try:
                pids += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                pass
        for pid in pids:
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if not any(b"streameval" in a for a in argv):
                continue   # git
            role = ("front" if b"streameval.live.front" in argv else
                    next((a.decode() for a in argv if a.startswith(b"worker-")), None) or "watch")
            out[role] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return out

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _has_workers(checkout: Path) -> bool:
    """Whether the version in ``checkout`` knows ``watch --workers``."""
    try:
        return '"--workers"' in (checkout / "streameval" / "commands" / "watch.py").read_text()
    except OSError:
        return False


def throughput(work: Path, n_traces: int, calls: int, chunk_calls: int, workers: int,
               timeout: float, version=None) -> dict:
    """bench_live's ``single``/``many`` phase, watched by ``watch --workers workers``."""
    from bench_live import init_line, make_run_dirs, make_setup, start_writer

    repo, gold = make_setup(work)
    runs = work / "runs"
    paths = make_run_dirs(runs, n_traces)
    for p in paths:
        p.write_bytes(init_line())
    first = sum(p.stat().st_size for p in paths)
    w = WatchProcess(work, runs, gold, repo, workers, version)
    try:
        deadline = time.monotonic() + timeout
        while w.processed() < first:   # every trace found and its first line read
            if time.monotonic() > deadline:
                raise SystemExit("the watch did not read the traces' first lines")
            time.sleep(0.02)
        proc, go, started = start_writer(repo, paths, calls, chunk_calls, 0.0, work / "side.txt")
        before = w.cpu()
        go.set()
        proc.join()
        total = sum(p.stat().st_size for p in paths)
        while w.processed() < total:
            if time.monotonic() > deadline:
                raise SystemExit(f"processed {w.processed()} of {total} bytes in {timeout} s")
            time.sleep(0.01)
        done = time.time()
        after = w.cpu()
    finally:
        w.stop()
    lines = n_traces * 2 * calls
    seconds = done - started.value
    cpu = {k: round(after.get(k, 0.0) - before.get(k, 0.0), 2) for k in sorted(after)}
    return {"version": getattr(version, "name", "new"), "workers": workers, "traces": n_traces, "lines": lines, "bytes": total,
            "watch_seconds": seconds, "events_per_s": lines / seconds, "cpu_s": cpu,
            "front_cpu_share": cpu.get("front", 0.0) / max(1e-9, sum(cpu.values()))}


def report(title: str, rows: list[dict]) -> None:
    """One round: each run's events/s, its ratio to the new version's one worker, and to
    the old version where there is one, with each process's CPU seconds."""
    base = next((r["events_per_s"] for r in rows if r["version"] == "new" and r["workers"] == 1),
                None)
    old = next((r["events_per_s"] for r in rows if r["version"] == "old"), None)
    for r in rows:
        scale = f", {r['events_per_s'] / base:.2f}x one worker" if base else ""
        scale += f", {r['events_per_s'] / old:.2f}x old" if old and r["version"] == "new" else ""
        cpu = ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_s"].items())
        print(f"{title}, {r['version']}, {r['workers']} worker(s): {r['events_per_s']:,.0f} "
              f"events/s ({r['lines']:,} lines in {r['watch_seconds']:.2f} s{scale}); CPU s: "
              f"{cpu} (front {r['front_cpu_share']:.0%})", flush=True)


def summary(title: str, rounds: list[list[dict]]) -> None:
    """Medians over the rounds of each (version, workers), and of the ratios within a round."""
    import statistics

    keys = sorted({(r["version"], r["workers"]) for rows in rounds for r in rows},
                  key=lambda k: (k[0] != "new", k[1]))
    for key in keys:
        figures = [r["events_per_s"] for rows in rounds for r in rows
                   if (r["version"], r["workers"]) == key]
        ratios = []
        for rows in rounds:
            by = {(r["version"], r["workers"]): r["events_per_s"] for r in rows}
            if key[0] == "new" and ("old", 1) in by:
                ratios.append(by[key] / by[("old", 1)])
        vs_old = f"; new/old median {statistics.median(ratios):.2f}" if ratios else ""
        print(f"    {title}, {key[0]} {key[1]} worker(s): median "
              f"{statistics.median(figures):,.0f} events/s "
              f"({', '.join(f'{x:,.0f}' for x in figures)}){vs_old}", flush=True)
