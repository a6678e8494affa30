"""Every number streameval gives on a fixed set of inputs, written to a folder, so that a
change meant to keep behaviour (a refactor, a speed-up) can be checked byte for byte:

    python scripts/record_snapshot.py OUT [--mirrors DIR] [--corpus GITDIR] [--limit N]
    diff -r OUT_BEFORE OUT_AFTER

It goes through the command line only (``streameval replay`` and ``streameval inspect
--json``), so the same script runs against any version of the package. Inputs:

- the bundled example: its unified predictions and its recorded run (``examples/``);
- every real trace under ``tests/fixtures/real``, replayed against the ContextBench gold
  rows of ``tests/fixtures/data`` (with ``--mirrors``: repositories named
  ``<owner>__<name>`` there) and inspected;
- with ``--corpus`` (the ``gruckion/mini-swe-agent`` git directory) and ``--mirrors``:
  the first ``--limit`` mini-swe-agent trajectories whose repository is mirrored,
  inspected at their base commit (``benchmarks/data/swebench_verified_base_commits.tsv``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REAL = ROOT / "tests" / "fixtures" / "real"
GOLD = ROOT / "tests" / "fixtures" / "data" / "verified_test.parquet"
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"


def streameval(*args: str) -> bytes:
    """Its stdout, with the exit code and stderr's last line appended (both are behaviour)."""
    proc = subprocess.run([sys.executable, "-m", "streameval", *args], capture_output=True,
                          cwd=ROOT)
    tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] if proc.returncode else []
    return proc.stdout + f"\n# exit {proc.returncode} {' '.join(tail)}\n".encode()


def name_of(path: Path) -> str:
    return rel(path).replace("/", "__")


def rel(path: Path) -> str:
    """Inputs are named relative to the checkout: records name their traces, and the
    same checkout elsewhere must give the same bytes."""
    return str(path.relative_to(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mirrors", type=Path, help="folder of <owner>__<name> repositories")
    ap.add_argument("--corpus", type=Path, help="git directory of gruckion/mini-swe-agent")
    ap.add_argument("--limit", type=int, default=40)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    example = ["--gold", rel(EXAMPLES / "gold.jsonl"), "--repo", rel(EXAMPLES / "repo")]
    (args.out / "example.replay.jsonl").write_bytes(streameval(
        "replay", rel(EXAMPLES / "predictions.jsonl"), rel(EXAMPLES / "runs"), *example,
        "--quiet"))
    for trace in sorted((EXAMPLES / "runs").rglob("trace.jsonl")) + \
            sorted((EXAMPLES / "backtest").rglob("trace.jsonl")):
        (args.out / f"{name_of(trace)}.inspect.json").write_bytes(streameval(
            "inspect", rel(trace), *example, "--json", "-", "--quiet"))
    repos = ["--repos", str(args.mirrors)] if args.mirrors else ["--repos", "."]
    for trace in real_traces():
        (args.out / f"{name_of(trace)}.replay.jsonl").write_bytes(streameval(
            "replay", rel(trace), "--gold", rel(GOLD), *repos, "--quiet"))
        (args.out / f"{name_of(trace)}.inspect.json").write_bytes(streameval(
            "inspect", rel(trace), "--json", "-", "--quiet"))
    if args.corpus and args.mirrors:
        corpus_snapshot(args)
    return 0


def real_traces() -> list[Path]:
    """The real fixtures, a trace each: a file, or an OpenHands SDK conversation directory
    (``base_state.json`` beside ``events/``) as one, never its files one by one. Told by
    the file layout alone, so the script needs nothing of the package it snapshots."""
    conversations = sorted(p.parent for p in REAL.rglob("base_state.json")
                           if (p.parent / "events").is_dir())
    files = [p for p in REAL.rglob("*") if p.is_file() and p.name != "SOURCES.md"
             and not any(c in p.parents for c in conversations)]
    return sorted(files + conversations)


def corpus_snapshot(args: argparse.Namespace) -> None:
    commits = dict(line.split("\t") for line in
                   (ROOT / "benchmarks" / "data" / "swebench_verified_base_commits.tsv")
                   .read_text().splitlines() if line and not line.startswith("#"))
    names = subprocess.run(["git", "--git-dir", str(args.corpus), "ls-tree", "-r", "--name-only",
                            "HEAD", TRAJS], capture_output=True, text=True, check=True).stdout
    # one folder for every snapshot: the trace path is part of what inspect prints
    scratch = Path(tempfile.gettempdir()) / "streameval-record-snapshot"
    scratch.mkdir(exist_ok=True)
    done = 0
    for rel in sorted(n for n in names.splitlines() if n.endswith(".traj.json")):
        iid = Path(rel).name[:-len(".traj.json")]
        owner, rest = iid.split("__", 1)
        repo = args.mirrors / f"{owner}__{rest.rsplit('-', 1)[0]}"
        if iid not in commits or not repo.exists():
            continue
        trace = scratch / f"{iid}.traj.json"
        trace.write_bytes(subprocess.run(["git", "--git-dir", str(args.corpus), "show",
                                          f"HEAD:{rel}"], capture_output=True, check=True).stdout)
        (args.out / f"corpus__{iid}.inspect.json").write_bytes(streameval(
            "inspect", str(trace), "--repo", str(repo), "--commit", commits[iid],
            "--json", "-", "--quiet"))
        done += 1
        if done >= args.limit:
            break


if __name__ == "__main__":
    raise SystemExit(main())
