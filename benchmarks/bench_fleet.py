"""5,000 runs of 24 agent/model/experiment label sets through one ``streameval watch``:
does the number of series on /metrics stay fixed while the runs pass (issue 20, item 5)?

A writer keeps ``--ahead`` runs written and not yet recorded, as bench_soak.py does:
each a run directory with ``meta.json`` (agent, model, experiment) and a Claude
stream-json ``trace.jsonl`` (init, a Read of a gold span, ``--calls - 1`` tool calls
over real standard-library files, the result line with a cost). The watcher runs with
its defaults for ``--per-run-series`` (1,000) and ``--max-runs`` (10,000: every run
stays in memory, the fleet folds all of them at every scrape) and a dry-run abort
policy (max_steps 3). At every ``--every`` records, three scrapes of /metrics (the
slowest one's time, the size) while the watcher scores, and the samples of the last one
counted by kind: fleet families (``streameval_fleet_*``), per-run families (a ``run_id``
label), the rest. At the end, with every run recorded, seven scrapes of a quiet watcher.

``--rogue-every K`` makes every K-th run name a model no other run names (a trace
putting a new model per run in its labels): the fleet must stay within its label-set
limit, folding the rest into ``other``.

    python benchmarks/bench_fleet.py --json fleet.json
    python benchmarks/bench_fleet.py --rogue-every 10 --json fleet-rogue.json
    git archive main | tar -x -C /tmp/main && python benchmarks/bench_fleet.py --src /tmp/main
    python benchmarks/bench_fleet.py --micro   # the fold, the fleet's text, the cap, alone

Loopback only; stops at ``--runs`` or after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_live import (
    INSTANCE,
    STDLIB_FILES,
    WORKSPACE,
    CallPool,
    _j,
    _result,
    init_line,
    make_setup,
)
from bench_soak import count_lines
from loadgen import Impl, Watch, impls
from machine import machine
from prometheus_client.parser import text_string_to_metric_families

AGENTS = ("claude-code", "codex", "openhands")
MODELS = ("model-a", "model-b", "model-c", "model-d")
EXPERIMENTS = ("baseline", "agents-md")
POLICY = '[[policy]]\nname = "steps-3"\nkind = "max_steps"\nlimit = 3\n'
RESULT = (b'{"type": "result", "subtype": "success", "is_error": false, "session_id": "bench", '
          b'"total_cost_usd": 0.05, "usage": {"input_tokens": 400, "output_tokens": 80}}\n')


def gold_read(repo: Path, uid: str) -> bytes:
    """A Read of lib/argparse.py 1100-1180 (init_ctx gold): every run reads gold at step 1."""
    rel = next(iter(STDLIB_FILES))
    lines = (repo / rel).read_text().split("\n")
    out = "\n".join(f"{n:>6}\u2192{lines[n - 1]}" for n in range(1100, 1181))
    use = _j({"type": "assistant", "message": {
        "id": f"msg_g{uid}", "role": "assistant", "model": "claude-bench",
        "content": [{"type": "tool_use", "id": f"toolu_g{uid}", "name": "Read",
                     "input": {"file_path": f"{WORKSPACE}/{rel}", "offset": 1100, "limit": 81}}],
        "usage": {"input_tokens": 100, "output_tokens": 20}}, "session_id": "bench"})
    return (use + "\n" + _result(out).replace("@ID@", f"g{uid}") + "\n").encode()


def labels(i: int, rogue_every: int) -> dict[str, str]:
    """Run ``i``'s agent, model and experiment: the 24 label sets in turn, or a model of
    its own for every ``rogue_every``-th run."""
    k = i % (len(AGENTS) * len(MODELS) * len(EXPERIMENTS))
    model = MODELS[k // len(EXPERIMENTS) % len(MODELS)]
    if rogue_every and i % rogue_every == rogue_every - 1:
        model = f"rogue-{i:06d}"
    return {"agent": AGENTS[k % len(AGENTS)], "model": model,
            "experiment": EXPERIMENTS[k % len(EXPERIMENTS)]}


def write_run(runs: Path, repo: Path, i: int, pool: CallPool, calls: int, rogue_every: int) -> None:
    d = runs / f"{i // 1000:03d}" / f"r{i:06d}"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"instance_id": INSTANCE, "run_id": f"r{i:06d}",
                                             **labels(i, rogue_every)}))
    body = (init_line() + gold_read(repo, str(i))
            + b"".join(pool.call(i * calls + j, f"{i}-{j}") for j in range(calls - 1)) + RESULT)
    (d / "trace.jsonl").write_bytes(body)


def scrape(port: int) -> tuple[float, bytes]:
    t = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        body = r.read()
    return time.perf_counter() - t, body


def census(text: str) -> dict[str, int]:
    """Samples (series) of one scrape by kind, and the runs with per-run series."""
    out = {"series": 0, "fleet": 0, "per_run": 0, "process": 0}
    runs: set[str] = set()
    values: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out["series"] += 1
            if s.name.startswith("streameval_fleet_"):
                out["fleet"] += 1
            elif "run_id" in s.labels:
                out["per_run"] += 1
                runs.add(s.labels["run_id"])
            else:
                out["process"] += 1
            if not s.labels:
                values[s.name] = s.value
    out["runs_with_series"] = len(runs)
    for name in ("streameval_fleet_groups", "streameval_fleet_folded_runs",
                 "streameval_fleet_folded_groups"):
        out[name.removeprefix("streameval_")] = int(values.get(name, 0))
    return out


def run(impl, work: Path, args) -> dict:
    runs = work / "runs"
    runs.mkdir()
    out, cp = work / "out.jsonl", work / "cp.json"
    policy = work / "abort.toml"
    policy.write_text(POLICY)
    w = Watch(impl, [str(runs), "--gold", str(work / "gold.jsonl"), "--repo", str(work / "repo"),
                     "--port", "0", "--out", str(out), "--checkpoint", str(cp),
                     "--idle-timeout", "5", "--patch-grace", "0",
                     "--abort-config", str(policy), "--dry-run", *args.watch_args],
              work / "watch.log")
    pool = CallPool(work / "repo")
    written, state, rows = 0, {}, []
    start = time.monotonic()
    next_mark = args.every
    try:
        while True:
            done = count_lines(out, state)
            while written < args.runs and written - done < args.ahead:
                write_run(runs, work / "repo", written, pool, args.calls, args.rogue_every)
                written += 1
            last = done >= args.runs or time.monotonic() - start > args.max_seconds
            if done >= next_mark or last:
                scrapes = [scrape(w.port) for _ in range(3)]
                row = {"runs": done, "written": written,
                       "metrics_ms": round(max(s for s, _ in scrapes) * 1000, 1),
                       "metrics_kb": round(len(scrapes[-1][1]) / 1e3),
                       "rss_mb": round(w.status("VmRSS") / 1e6, 1),
                       **census(scrapes[-1][1].decode())}
                rows.append(row)
                print(json.dumps(row), flush=True)
                while next_mark <= done:
                    next_mark += args.every
            if last:
                break
            time.sleep(0.05)
        seconds = round(time.monotonic() - start, 1)
        # all recorded, nothing scoring: what a scrape itself costs with every run in memory
        time.sleep(2.0)
        quiet = sorted(scrape(w.port)[0] * 1000 for _ in range(7))
    finally:
        w.stop()
    return {"runs_recorded": state.get("n", 0), "seconds": seconds,
            "quiet_metrics_ms": {"min": round(quiet[0], 1), "median": round(quiet[3], 1),
                                 "max": round(quiet[-1], 1)},
            "every": rows, **summary(rows)}


def summary(rows: list[dict]) -> dict:
    """The distinct series counts seen, and from which mark on each stayed fixed."""
    def fixed_from(key: str) -> int | None:
        if not rows:
            return None
        last = rows[-1][key]
        first = len(rows)
        while first > 0 and rows[first - 1][key] == last:
            first -= 1
        return rows[first]["runs"]

    out = {}
    for key in ("series", "fleet", "per_run", "process", "runs_with_series", "fleet_groups"):
        vals = [r[key] for r in rows]
        out[key] = {"min": min(vals, default=None), "max": max(vals, default=None),
                    "last": vals[-1] if vals else None, "fixed_from_runs": fixed_from(key)}
    out["metrics_ms_max"] = max((r["metrics_ms"] for r in rows), default=None)
    return out


def micro(runs: int = 10_000, rogue_every: int = 0, repeat: int = 7) -> dict:
    """What the fleet and the cap cost one scrape, alone (median of ``repeat``): ``runs``
    finished runs' entries folded, the fleet's text written, the cap's ranking."""
    import random
    import statistics
    from types import SimpleNamespace

    from prometheus_client.exposition import generate_latest

    from streameval.live.exporter import Exported, _Families, newest_first
    from streameval.live.exposition import fleet_text
    from streameval.live.fleet import FLEET_METRICS, Fleet, FleetEntry

    rng = random.Random(1)
    entries = [FleetEntry(tuple(labels(i, rogue_every).values()), ("steps-3",),
                          tuple(rng.random() for _ in FLEET_METRICS)) for i in range(runs)]
    pairs = [(SimpleNamespace(first_seen=rng.random(), finished_at=rng.random()),
              Exported((), (), [], e)) for e in entries]
    fleet = Fleet()

    def ms(fn) -> float:
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1000)
        return round(statistics.median(times), 1)

    numbers = fleet.numbers(entries)
    return {"runs": runs, "rogue_every": rogue_every, "label_sets": numbers.groups,
            "fleet_samples": sum(len(v) for v in numbers.samples.values()),
            "fold_ms": ms(lambda: fleet.numbers(entries)),
            "text_ms": ms(lambda: fleet_text(numbers, False)),
            # the same bytes through prometheus_client (the collect() path)
            "encoders_ms": ms(lambda: generate_latest(_Families(numbers.families()))),
            "cap_ms": ms(lambda: newest_first(pairs, 1000))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5000)
    p.add_argument("--every", type=int, default=250, help="records between measurements")
    p.add_argument("--calls", type=int, default=4, help="tool calls per run (the first reads gold)")
    p.add_argument("--ahead", type=int, default=300, help="runs written and not yet recorded")
    p.add_argument("--rogue-every", type=int, default=0,
                   help="every K-th run names a model of its own (0: none)")
    p.add_argument("--max-seconds", type=float, default=900.0)
    p.add_argument("--src", type=Path,
                   help="run the watcher of another source tree (e.g. `git archive main` "
                        "unpacked) with this interpreter: the same load, for comparison")
    p.add_argument("--micro", action="store_true",
                   help="only time the fleet's fold, its text and the cap on 10,000 runs "
                        "(in this process, no watcher)")
    p.add_argument("--json", type=Path)
    p.add_argument("watch_args", nargs="*", help="more watch options, after --")
    args = p.parse_args()
    if args.micro:
        print(json.dumps(machine()))
        for rogue in (0, 10):
            print(json.dumps(micro(rogue_every=rogue)), flush=True)
        return
    results = {"machine": machine(),
               "args": vars(args) | {"json": str(args.json), "src": str(args.src or "")}}
    print(json.dumps(results["machine"]), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        work = Path(tmp)
        make_setup(work)
        impl = impls("new")[0] if args.src is None else Impl("src", sys.executable, args.src)
        res = run(impl, work, args)
    results["result"] = res
    print(json.dumps({k: v for k, v in res.items() if k != "every"}, indent=1), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
