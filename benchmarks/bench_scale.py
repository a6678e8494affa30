"""Replay throughput by engine: the mini-swe-agent corpus, 1 and 2 local workers, and
Ray with one and two nodes on this machine. Writes ``benchmarks/scale.md``'s table.

    python benchmarks/bench_scale.py --corpus "$STREAMEVAL_MIRRORS/gruckion+mini-swe-agent/repo" \\
        --repos "$STREAMEVAL_REPOS" [--limit N] [--json out.json]

Every trajectory of the corpus (Gemini 3 Pro on SWE-bench Verified) whose repository
clone is under ``--repos`` (``owner__name``) is replayed. ContextBench's gold covers 4
of them, so each gets a stand-in gold row instead: the lines its own submitted patch
changes, at the instance's base commit. The work per run is then what any scored run
costs (reading every call, aligning it with the base text, symbols of the gold files,
EditLoc); only the numbers mean nothing. Each configuration runs ``streameval replay``
as a user would, start to finish (interpreter start, gold, repositories, workers or
cluster connection included), and its records are checked equal to the first's.

Ray needs ``streameval[ray]``; it runs inside a private network namespace with only
loopback up (``unshare``), where Ray advertises 127.0.0.1 (tests/runs/ray_scenario.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? ", re.M)


def corpus(corpus_git: Path, repos: Path, work: Path, limit: int | None) -> Path:
    """The runs (one folder each, meta.json naming the instance) and their gold."""
    commits = dict(line.split("\t") for line in
                   (HERE / "data" / "swebench_verified_base_commits.tsv").read_text().splitlines()
                   if line and not line.startswith("#"))
    names = subprocess.run(["git", "--git-dir", str(corpus_git), "ls-tree", "-r", "--name-only",
                            "HEAD", TRAJS], capture_output=True, text=True, check=True).stdout
    runs = work / "runs"
    gold_rows = []
    for rel in sorted(n for n in names.splitlines() if n.endswith(".traj.json")):
        iid = Path(rel).name[:-len(".traj.json")]
        owner, rest = iid.split("__", 1)
        name = rest.rsplit("-", 1)[0]
        if iid not in commits or not (repos / f"{owner}__{name}").exists():
            continue
        raw = subprocess.run(["git", "--git-dir", str(corpus_git), "show", f"HEAD:{rel}"],
                             capture_output=True, check=True).stdout
        patch = (json.loads(raw).get("info") or {}).get("submission") or ""
        ctx = stand_in_gold(patch)
        if not ctx:
            continue
        d = runs / iid
        d.mkdir(parents=True, exist_ok=True)
        (d / "trace.traj.json").write_bytes(raw)
        (d / "meta.json").write_text(json.dumps({"instance_id": iid, "run_id": iid}))
        gold_rows.append({"instance_id": iid, "original_inst_id": iid, "repo": f"{owner}/{name}",
                          "base_commit": commits[iid], "language": "python", "init_ctx": ctx,
                          "add_ctx": [], "patch": patch})
        if limit and len(gold_rows) >= limit:
            break
    (work / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in gold_rows))
    return runs


def stand_in_gold(patch: str) -> list[dict]:
    """The old-side line ranges the patch's hunks cover, per file."""
    out = []
    for block in re.split(r"^diff --git ", patch, flags=re.M)[1:]:
        m = re.search(r"^--- a/(\S+)", block, re.M)
        if not m:
            continue
        for h in _HUNK.finditer(block):
            start, n = int(h.group(1)), int(h.group(2) or 1)
            if n:
                out.append({"file": m.group(1), "start_line": start, "end_line": start + n - 1})
    return out


def replay(runs: Path, work: Path, repos: Path, out: Path, *extra: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "streameval", "replay", str(runs), "--gold",
                    str(work / "gold.jsonl"), "--repos", str(repos), "--quiet", "--out", str(out),
                    *extra], check=True, capture_output=True)
    return time.perf_counter() - t0


def ray_runs(args, work: Path, runs: Path) -> dict[str, float]:
    """Ray, one node then two (one CPU each), in a namespace of its own (this script
    again, with ``--inside``)."""
    res = subprocess.run(["unshare", "--net", "--pid", "--fork", "--mount", "--mount-proc",
                          sys.executable, __file__, "--inside", str(work), "--repos",
                          str(args.repos), "--corpus", str(args.corpus)],
                         capture_output=True, text=True)
    if res.returncode:
        raise SystemExit(res.stderr[-3000:])
    return json.loads((work / "ray.json").read_text())


def inside(work: Path, repos: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    os.environ.update({"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                       "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    ray = str(Path(sys.executable).parent / "ray")
    temp = tempfile.mkdtemp(prefix="se-ray-")
    times = {}
    try:
        subprocess.run([ray, "start", "--head", "--node-ip-address", "127.0.0.1", "--port",
                        "6391", "--num-cpus", "1", "--include-dashboard", "false",
                        "--temp-dir", temp, "--disable-usage-stats"], check=True,
                       capture_output=True)
        times["ray, 1 node"] = replay(work / "runs", work, repos, work / "ray1.jsonl",
                                      "--engine", "ray", "--ray-address", "127.0.0.1:6391")
        subprocess.run([ray, "start", "--address", "127.0.0.1:6391", "--node-ip-address",
                        "127.0.0.1", "--num-cpus", "1"], check=True, capture_output=True)
        time.sleep(3)   # the second node registers
        times["ray, 2 nodes"] = replay(work / "runs", work, repos, work / "ray2.jsonl",
                                       "--engine", "ray", "--ray-address", "127.0.0.1:6391")
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True)
        shutil.rmtree(temp, ignore_errors=True)
    (work / "ray.json").write_text(json.dumps(times))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--repos", type=Path, required=True)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inside:
        inside(args.inside, args.repos)
        return 0
    work = Path(tempfile.mkdtemp(prefix="se-scale-"))
    runs = corpus(args.corpus, args.repos, work, args.limit)
    n = sum(1 for _ in runs.iterdir())
    times = {"local, 1 worker": replay(runs, work, args.repos, work / "local1.jsonl"),
             "local, 2 workers": replay(runs, work, args.repos, work / "local2.jsonl",
                                        "--workers", "2")}
    times.update(ray_runs(args, work, runs))
    base = (work / "local1.jsonl").read_bytes()
    same = {name: (work / f).read_bytes() == base for name, f in
            [("local, 2 workers", "local2.jsonl"), ("ray, 1 node", "ray1.jsonl"),
             ("ray, 2 nodes", "ray2.jsonl")]}
    scored = sum("error" not in json.loads(x) for x in base.splitlines())
    print(f"{n} runs ({scored} scored), {os.cpu_count()} CPUs")
    print("| engine | seconds | runs/s | speed-up | records equal to local, 1 worker |")
    print("|---|---:|---:|---:|---|")
    one = times["local, 1 worker"]
    for name, t in times.items():
        print(f"| {name} | {t:.1f} | {n / t:.1f} | {one / t:.2f} | "
              f"{'(reference)' if name == 'local, 1 worker' else same[name]} |")
    if args.json:
        args.json.write_text(json.dumps({"runs": n, "scored": scored, "seconds": times,
                                         "equal": same}, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
