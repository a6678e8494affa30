"""Issue 31's scenario, as an operator meets it: runs written into a watched directory
while ``streameval watch --out`` follows them, every ``meta.json`` with the same
``run_id`` (a harness's template copied), each run's ``patch.diff`` copied 0.2 s after
its trace ends, the watcher killed with SIGKILL at a random point and started again at
once, with its default checkpoint.

``play`` runs it for one seed (which decides when each run starts, the pace of its
lines and the moment of the kill) and returns what the runs were called everywhere
(the watchers' logs, ``/metrics``, the records, the ``ABORT`` files' decisions) and the
records; ``check`` compares them with ``streameval replay`` of the finished files.
Used by tests/live/test_watch_restart_scenario.py (a few seeds, the real Claude Code
trace of tests/fixtures) and benchmarks/bench_restart.py (20 seeds, and runs of the
public evaluator's instances).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from claude_run import whole_lines
from fixture_paths import REAL, TESTS

RUN_ID = "hidden-claude"
#: the abort policy every run trips (at its second step): its decision names the run
ABORT_TOML = '[[policy]]\nname = "two"\nkind = "max_steps"\naction = "file"\nlimit = 2\n'


@dataclass
class Run:
    """One run: its directory's name, its trace's lines, the patch copied after its end."""

    name: str
    instance: str
    lines: list[bytes]
    patch: str


@dataclass
class Outcome:
    seed: int
    #: writes (lines and patch copies, in order) done when the watcher was killed
    killed_after: int
    writes: int
    records: list[dict]
    #: trace (relative to the root) -> every run id it was seen under, and where
    names: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _running(checkout: Path | None) -> dict:
    """How a command runs ``checkout``'s streameval (None: this one): its folder first on
    the path, and as the working directory (``python -m`` puts that first)."""
    if checkout is None:
        return {}
    return {"cwd": checkout, "env": {**os.environ, "PYTHONPATH": str(checkout)}}


def _watch(argv: list[str], log: Path, checkout: Path | None) -> tuple[subprocess.Popen, int]:
    with open(log, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "streameval", "watch", *argv],
                                stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                **_running(checkout))
    deadline = time.monotonic() + 60
    while b"serving metrics on" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"watch did not start: {log.read_text()[-3000:]}")
        time.sleep(0.02)
    return proc, int(log.read_text().split("http://127.0.0.1:")[1].split("/")[0])


class _Scraper(threading.Thread):
    """Scrapes ``/metrics`` of whichever watcher runs: (instance, run id) of each run."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.port: int | None = None
        self.seen: set[tuple[str, str]] = set()
        self.scrapes = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            port = self.port
            if port is None:
                continue
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                continue   # killed, or not serving yet
            self.scrapes += 1
            for line in text.splitlines():
                if line.startswith("streameval_run_info{"):
                    labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
                    self.seen.add((labels["instance_id"], labels["run_id"]))


def _plan(runs_spec: list[Run], rng: random.Random) -> list[tuple[float, Run, bytes | None]]:
    """Every write of the scenario (a line, or ``None``: the patch), when it is made: each
    run starts within 1.5 s, writes a line every 10-80 ms, and its patch is copied 0.2 s
    after its last line."""
    plan = []
    for r in runs_spec:
        at = rng.uniform(0.0, 1.5)
        for line in r.lines:
            at += rng.uniform(0.01, 0.08)
            plan.append((at, r, line))
        plan.append((at + 0.2, r, None))
    return sorted(plan, key=lambda p: p[0])


def play(runs_spec: list[Run], work: Path, seed: int, resources: list[str],
         checkout: Path | None = None, workers: int = 1) -> Outcome:
    """The scenario for ``seed`` in ``work``; ``resources``: watch's --gold/--repo(s);
    ``checkout``: another checkout whose streameval to run. With ``workers`` > 1 the
    kill is of one worker (which, the seed says), started again by its supervisor."""
    t0 = time.monotonic()
    rng = random.Random(seed)
    root = work / "runs"
    root.mkdir(parents=True)
    (work / "abort.toml").write_text(ABORT_TOML)
    for r in runs_spec:
        (root / r.name).mkdir()
        (root / r.name / "meta.json").write_text(json.dumps({
            "instance_id": r.instance, "run_id": RUN_ID, "agent": "claude-code",
            "model": "claude-sonnet-4-5"}))
    plan = _plan(runs_spec, rng)
    killed_after = rng.randint(1, len(plan))
    argv = [str(root), *resources, "--port", "0", "--out", str(work / "out.jsonl"),
            "--abort-config", str(work / "abort.toml"), "--workers", str(workers)]
    victim = rng.randrange(workers)
    scraper = _Scraper()
    scraper.start()
    logs = [work / "watch-0.log", work / "watch-1.log"]
    proc, scraper.port = _watch(argv, logs[0], checkout)
    try:
        start = time.monotonic()
        for i, (at, r, line) in enumerate(plan, 1):
            time.sleep(max(0.0, start + at - time.monotonic()))   # the agents' pace
            if line is None:
                (root / r.name / "patch.diff").write_text(r.patch)
            else:
                with open(root / r.name / "trace.jsonl", "ab") as fh:
                    fh.write(line + b"\n")
            if i == killed_after and workers > 1:
                from claude_run import worker_pids

                os.kill(worker_pids(proc.pid)[victim], signal.SIGKILL)
                logs.pop()   # one watch, one log
            elif i == killed_after:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                scraper.port = None
                proc, scraper.port = _watch(argv, logs[1], checkout)   # started again at once
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _settled(work / "out.jsonl", runs_spec):
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        scraper.stop.set()
        scraper.join()
    records = [json.loads(x) for x in (work / "out.jsonl").read_bytes().splitlines()]
    texts = [p.read_text() for p in logs if p.exists()]
    return Outcome(seed, killed_after, len(plan), records,
                   _names(runs_spec, root, texts, scraper.seen, records), texts,
                   time.monotonic() - t0)


def _names(runs_spec: list[Run], root: Path, logs: list[str], scraped: set[tuple[str, str]],
           records: list[dict]) -> dict[str, dict[str, set[str]]]:
    """Trace -> each run id it was seen under -> where: the watchers' "run ... started"
    lines, ``/metrics`` (by instance), the records, the ``ABORT`` decisions."""
    names: dict[str, dict[str, set[str]]] = {f"{r.name}/trace.jsonl": {} for r in runs_spec}
    by_instance = {r.instance: f"{r.name}/trace.jsonl" for r in runs_spec}

    def saw(trace: str, run_id: str, where: str) -> None:
        names.setdefault(trace, {}).setdefault(run_id, set()).add(where)

    for n, text in enumerate(logs):
        for m in re.finditer(r"run (\S+) started: .* trace (\S+)$", text, re.M):
            saw(m.group(2), m.group(1), f"log {n}")
    for instance, run_id in scraped:
        saw(by_instance[instance], run_id, "/metrics")
    for rec in records:
        saw(rec["trace"], rec["run_id"], "records")
    for r in runs_spec:
        abort = root / r.name / "ABORT"
        if abort.exists():
            for dec in json.loads(abort.read_text())["decisions"]:
                saw(f"{r.name}/trace.jsonl", dec["run_id"], "ABORT")
    return names


def _settled(out: Path, runs_spec: list[Run]) -> bool:
    """Every run's last record carries its patch. Read while watch writes, so a line
    not yet ended is left for the next look."""
    last = {}
    for line in whole_lines(out):
        rec = json.loads(line)
        last[rec["trace"]] = rec
    return all(last.get(f"{r.name}/trace.jsonl", {}).get("patch_source") == "file"
               for r in runs_spec)


def replayed(root: Path, resources: list[str], out: Path,
             checkout: Path | None = None) -> list[dict]:
    """``streameval replay`` of the finished files."""
    subprocess.run([sys.executable, "-m", "streameval", "replay", str(root), *resources,
                    "--out", str(out), "--quiet"], capture_output=True, timeout=600,
                   **_running(checkout))
    return [json.loads(x) for x in out.read_bytes().splitlines()]


def check(outcome: Outcome, replay: list[dict]) -> dict[str, list[str]]:
    """What is wrong with the outcome, by kind (all empty: nothing). Each run's last
    record equals replay's on the finished file, EditLoc included (``differ``, ``editloc``),
    but for ``run_id``: the one run that asked first keeps ``hidden-claude`` (replay asks
    in path order, the watcher as the runs started), the others have the suffix of their
    trace path, as in replay (``own_id``). Each run has one id everywhere it was seen
    (``ids``)."""
    from streameval.traces.identity import suffixed

    wrong: dict[str, list[str]] = {"differ": [], "editloc": [], "ids": [], "own_id": []}
    last = {}
    for rec in outcome.records:
        last[rec["trace"]] = rec
    for rep in replay:
        trace = rep["trace"]
        got = last.get(trace)
        if got is None:
            wrong["differ"].append(f"{trace}: no record")
            continue
        if got.get("editloc") is None:
            wrong["editloc"].append(f"{trace}: no EditLoc")
        differ = sorted(k for k in set(rep) | set(got)
                        if k != "run_id" and rep.get(k) != got.get(k))
        if differ:
            wrong["differ"].append(f"{trace}: differs from replay in {differ}")
        if got["run_id"] not in (RUN_ID, suffixed(RUN_ID, trace, rep["instance_id"])):
            wrong["own_id"].append(f"{trace}: run id {got['run_id']} is not its own")
    for trace, ids in outcome.names.items():
        if len(ids) != 1:
            wrong["ids"].append(f"{trace}: {len(ids)} ids: {ids}")
    final = [rec["run_id"] for rec in last.values()]
    if len(set(final)) != len(final) or final.count(RUN_ID) != 1:
        wrong["own_id"].append(f"run ids {final}: not one bare and the rest suffixed")
    return wrong


# ------------------------------------------------------------------ the test suite's runs

TRACE = REAL / "claude-stream" / "claude-stream__streameval__scripted-claude-code-2.1.328.jsonl"
#: each run: the trace's lines it keeps, and the line of pkg/mod.py its patch changes
RUNS = ((9, 4), (11, 11), (13, 18), (17, 32), (21, 46), (23, 53))


def fixture_runs(tmp: Path) -> tuple[list[Run], list[str]]:
    """The six runs, and watch's resources: one gold row per run (the scenario's gold
    under six instance ids, so /metrics tells the runs apart by instance)."""
    sys.path.insert(0, str(TESTS / "agents"))
    from scenario import MOD_LINES, make_setup

    s = make_setup(tmp)
    row = json.loads(s.gold.read_text())
    gold = tmp / "gold6.jsonl"
    lines = TRACE.read_bytes().splitlines()
    session = json.loads(lines[0])["session_id"]
    runs = []
    with gold.open("w") as fh:
        for n, (keep, changed) in enumerate(RUNS, 1):
            instance = f"demo__agents-{n}"
            fh.write(json.dumps({**row, "instance_id": instance, "original_inst_id": instance}) + "\n")
            end = {"type": "result", "subtype": "success", "is_error": False, "num_turns": keep // 2,
                   "result": "done", "session_id": session, "total_cost_usd": 0.01 * n,
                   "usage": {"input_tokens": 1000 * n, "output_tokens": 100 * n}}
            old = MOD_LINES[changed - 1]
            patch = (f"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -{changed},1 +{changed},1 @@\n"
                     f"-{old}\n+{old} + 1\n")
            runs.append(Run(instance, instance, [*lines[:keep], json.dumps(end).encode()], patch))
    return runs, ["--gold", str(gold), "--repo", str(s.repo)]
