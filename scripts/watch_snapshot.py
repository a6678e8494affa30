"""What ``streameval watch`` gives on a fixed set of traces, written to a folder, so that
watchers run differently (``--workers 1`` and ``--workers N``, two versions) can be
checked byte for byte:

    python scripts/watch_snapshot.py OUT_1 --workers 1 [--mirrors DIR] [--corpus GITDIR]
    python scripts/watch_snapshot.py OUT_2 --workers 2 [--mirrors DIR] [--corpus GITDIR]
    diff -r OUT_1 OUT_2

It goes through the command line only. Each group of traces is copied to the same
scratch folder every time (records and run ids name traces by their path), all of it
there before the watcher starts, and watched until every run has ended (``--idle-timeout
1``) and its record is written; then ``/metrics`` is scraped in both formats, the page's
fleet asked for, and the watcher stopped. Written per group:

- ``records.jsonl``: ``--out``'s lines, sorted (workers append them as their runs end);
- ``metrics.txt``, ``metrics.om``: the scrapes, but for the series that say how a
  process fares, which differ from run to run and between workers (``PROCESS``: the lag
  histogram, the caches' hits and misses, each worker's own; runs served stale, the
  backlog; the numbers' age);
- ``fleet.json``: the page's rows, sorted by run id (its generation is a process's);
- ``summary.txt``: the exit summary, but for how long it ran.

Groups: the bundled example (its gold and repository); every real trace under
``tests/fixtures/real`` (``--gold``, default the fixtures' ContextBench rows; with
``--mirrors``, the repositories of a ``<owner>+<name>/repo`` mirror folder, else none:
the runs are followed unscored); with ``--corpus`` (the ``gruckion/mini-swe-agent``
git directory), its mini-swe-agent trajectories whose repository is mirrored, side by
side in one folder: every one ``--gold`` has a row for (a parquet file:
ContextBench's ``verified_test.parquet`` has 50), then others up to
``--limit``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REAL = ROOT / "tests" / "fixtures" / "real"
GOLD = ROOT / "tests" / "fixtures" / "data" / "verified_test.parquet"
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"
#: series about the processes, not the runs: excluded from the comparison
PROCESS = ("streameval_metrics_age_seconds", "streameval_lag_seconds", "streameval_cache_hits",
           "streameval_cache_misses", "streameval_stale_runs", "streameval_backlog_bytes")
OPENMETRICS = "application/openmetrics-text;version=1.0.0"


SCRATCH = Path(tempfile.gettempdir()) / "streameval-watch-snapshot"


def scratch(group: str) -> Path:
    """The group's folder: the same every time, emptied."""
    root = SCRATCH / group
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root


def example_group() -> tuple[Path, list[str]]:
    root = scratch("example")
    shutil.copytree(EXAMPLES / "runs", root / "runs")
    return root / "runs", ["--gold", str(EXAMPLES / "gold.jsonl"), "--repo", str(EXAMPLES / "repo")]


def repos_of(mirrors: Path | None) -> list[str]:
    """``--repos``: a folder of links ``owner__name`` to the mirrors' repositories."""
    folder = SCRATCH / "repos"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for repo in sorted(mirrors.glob("*+*/repo")) if mirrors else []:
        (folder / repo.parent.name.replace("+", "__", 1)).symlink_to(repo)
    return ["--repos", str(folder)]


def real_group(gold: Path, mirrors: Path | None) -> tuple[Path, list[str]]:
    root = scratch("real") / "runs"
    shutil.copytree(REAL, root, ignore=shutil.ignore_patterns("SOURCES.md"))
    return root, ["--gold", str(gold), *repos_of(mirrors)]


def corpus_group(corpus: Path, limit: int, gold: Path, mirrors: Path | None) -> tuple[Path, list[str]]:
    root = scratch("corpus") / "runs"
    root.mkdir()
    names = subprocess.run(["git", "--git-dir", str(corpus), "ls-tree", "-r", "--name-only",
                            "HEAD", TRAJS], capture_output=True, text=True, check=True).stdout
    known = gold_ids(gold)
    mirrored, scored = [], []
    for rel in sorted(n for n in names.splitlines() if n.endswith(".traj.json")):
        iid = Path(rel).name[:-len(".traj.json")]
        owner, rest = iid.split("__", 1)
        if mirrors is None or (mirrors / f"{owner}+{rest.rsplit('-', 1)[0]}").exists():
            (scored if iid in known else mirrored).append(rel)
    # those that can be scored (a gold row, a repository), then others up to the limit
    for rel in scored + mirrored[:max(0, limit - len(scored))]:
        (root / Path(rel).name).write_bytes(subprocess.run(
            ["git", "--git-dir", str(corpus), "show", f"HEAD:{rel}"], capture_output=True,
            check=True).stdout)
    return root, ["--gold", str(gold), *repos_of(mirrors)]


def gold_ids(gold: Path) -> set[str]:
    """The instances a parquet gold file has rows for (empty: any, not parquet)."""
    if gold.suffix != ".parquet":
        return set()
    import pyarrow.parquet as pq

    table = pq.read_table(gold, columns=["instance_id", "original_inst_id"])
    return {x for name in table.column_names for x in table.column(name).to_pylist() if x}


def scrape(port: int, accept: str | None = None, path: str = "/metrics") -> bytes:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def settled(text: str) -> bool:
    """No run active, and every run exported."""
    active = re.search(r'^streameval_sessions\{state="active"\} (\S+)$', text, re.M)
    return active is not None and float(active.group(1)) == 0 and "streameval_run_info{" in text


def watch(root: Path, resources: list[str], workers: int, out: Path, timeout: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    records = root.parent / "records.jsonl"
    log = root.parent / "watch.log"
    cmd = [sys.executable, "-m", "streameval", "watch", str(root), *resources, "--port", "0",
           "--out", str(records), "--workers", str(workers), "--idle-timeout", "1",
           "--patch-grace", "0", "--checkpoint-interval", "0.2"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + timeout
        while b"serving metrics on" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"watch did not start: {log.read_text()[-3000:]}")
            time.sleep(0.1)
        port = int(log.read_text().split("http://127.0.0.1:")[1].split("/")[0])
        last, same = None, 0
        while same < 3:   # settled, and nothing moved for three looks in a row
            if time.monotonic() > deadline:
                raise SystemExit(f"watch did not settle in {timeout} s: {log.read_text()[-3000:]}")
            time.sleep(0.5)
            text = scrape(port).decode()
            now = (text.count("\n"), records.stat().st_size if records.exists() else 0)
            same = same + 1 if settled(text) and now == last else 0
            last = now
        metrics = {"txt": scrape(port), "om": scrape(port, OPENMETRICS)}
        fleet = json.loads(scrape(port, path="/api/runs"))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    for kind, body in metrics.items():
        kept = [line for line in body.decode().splitlines(keepends=True)
                if line.startswith("#") or not line.startswith(PROCESS)]
        (out / f"metrics.{kind}").write_text("".join(kept))
    (out / "records.jsonl").write_bytes(b"".join(sorted(records.read_bytes().splitlines(keepends=True))))
    fleet.pop("gen")
    fleet["runs"].sort(key=lambda row: row["id"])
    (out / "fleet.json").write_text(json.dumps(fleet, indent=1, sort_keys=True) + "\n")
    said = log.read_text().split("streameval watch: stopped; ", 1)[-1]
    (out / "summary.txt").write_text(re.sub(r"^ran \S+: ", "", said))


def main() -> int:
    global SCRATCH
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--gold", type=Path, default=GOLD)
    ap.add_argument("--mirrors", type=Path, help="folder of <owner>+<name>/repo mirrors")
    ap.add_argument("--corpus", type=Path, help="git directory of gruckion/mini-swe-agent")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--groups", default="example,real,corpus")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--scratch", type=Path, default=None,
                    help="where the traces are copied (the same for the runs compared)")
    args = ap.parse_args()
    SCRATCH = args.scratch or SCRATCH
    groups = args.groups.split(",")
    if "example" in groups:
        watch(*example_group(), args.workers, args.out / "example", args.timeout)
    if "real" in groups:
        watch(*real_group(args.gold, args.mirrors), args.workers, args.out / "real", args.timeout)
    if "corpus" in groups and args.corpus is not None:
        watch(*corpus_group(args.corpus, args.limit, args.gold, args.mirrors), args.workers,
              args.out / "corpus", args.timeout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
