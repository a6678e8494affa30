"""A real comparison: two models' public mini-swe-agent trajectories on the same
SWE-bench Verified instances, through ``streameval replay`` and ``streameval compare``.

- arm ``gemini-3-pro``: gruckion/mini-swe-agent, ``swebench_results/20251118_gemini-3-pro-
  74pct/trajs`` (mini-swe-agent 1.15, Gemini 3 Pro preview, 500 Verified instances);
- arm ``deepseek-chat``: SWE-agent/mini-swe-agent at 41a1e33, ``output/deepseek_bench1``
  (mini-swe-agent 2.2.7, deepseek-chat, the first 100 SWE-bench Lite instances).

The pairs are the instances both ran. Two comparisons:

1. **gold-free**, on every pair: tool calls, tokens and cost, read from the traces alone
   by the session engine (no gold, no repository: these numbers need neither);
2. **with gold**, on the pairs whose repository is mirrored and whose reference patch is
   known: every metric of ``streameval compare``, gold from the reference patch
   (``--gold-from-patch``, docs/metrics.md §1b). Reference patches come from the
   ContextBench rows in ``tests/fixtures/data`` where they hold the instance, else they
   are rebuilt from the upstream repository's mirror: the pull request's diff from the
   instance's base commit, without test files and non-source files (what SWE-bench's
   ``patch`` holds); the rebuild is checked against a ContextBench patch first.

Reads local mirrors only (``--mirrors``, the ``fetch`` layout; ``--repos``, clones named
``owner__name``; or ``$STREAMEVAL_MIRRORS`` and ``$STREAMEVAL_REPOS``: benchmarks/README.md
"Folders"); never the network; not run in CI.

    python benchmarks/compare_real.py --out OUT [--mirrors DIR] [--repos DIR] [--resamples 10000]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from streameval import config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GEMINI = ("gruckion+mini-swe-agent", "HEAD", "swebench_results/20251118_gemini-3-pro-74pct/trajs")
DEEPSEEK = ("SWE-agent+mini-swe-agent", "41a1e33ba94bbf7a0d2410dec46f99a8690113c0",
            "output/deepseek_bench1")
CONTEXTBENCH = ROOT / "tests" / "fixtures" / "data" / "verified_test.parquet"
BASE_COMMITS = HERE / "data" / "swebench_verified_base_commits.tsv"
#: a path part that makes a file a test (SWE-bench's split) or not source code
_TEST = re.compile(r"(^|/)(tests?|testing)/|(^|/)test_[^/]*$|_tests?\.py$|(^|/)conftest\.py$")
_NOT_SOURCE = re.compile(r"(^|/)(docs?|changelog|changes)/|\.(rst|md|txt)$|^CHANGES")


def git(gitdir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], check=True,
                          capture_output=True, text=True).stdout


def trajectories(mirrors: Path, spec: tuple[str, str, str]) -> dict[str, str]:
    """instance id -> path of its trajectory in the mirror."""
    name, rev, folder = spec
    gitdir = mirrors / name / "repo"
    out = {}
    for path in git(gitdir, "ls-tree", "-r", "--name-only", rev, folder + "/").splitlines():
        if path.endswith(".traj.json"):
            out[path.rsplit("/", 2)[-2]] = path
    return out


def extract(mirrors: Path, spec: tuple[str, str, str], paths: dict[str, str], ids: list[str],
            arm: str, out: Path) -> Path:
    name, rev, _ = spec
    gitdir = mirrors / name / "repo"
    root = out / "runs" / arm
    for iid in ids:
        d = root / iid
        d.mkdir(parents=True, exist_ok=True)
        data = subprocess.run(["git", "--git-dir", str(gitdir), "show", f"{rev}:{paths[iid]}"],
                              check=True, capture_output=True).stdout
        (d / f"{iid}.traj.json").write_bytes(data)
        (d / "meta.json").write_text(json.dumps({"instance_id": iid, "run_id": f"{arm}/{iid}"}))
    return root


def base_commits() -> dict[str, str]:
    rows = (line.split("\t") for line in BASE_COMMITS.read_text().splitlines() if "\t" in line)
    return {iid: sha.strip() for iid, sha in rows}


def contextbench_patches() -> dict[str, dict]:
    import pyarrow.parquet as pq

    out = {}
    for r in pq.read_table(CONTEXTBENCH).to_pylist():
        if r.get("patch") and r.get("original_inst_id"):
            out[r["original_inst_id"]] = r
    return out


def rebuilt_patch(repo_dir: Path, iid: str, base: str) -> str | None:
    """The pull request's source changes from ``base``: the second parent of the merge
    commit "Merge pull request #N" is the PR's head."""
    number = iid.rsplit("-", 1)[1]
    merges = git(repo_dir, "log", "--all", "--format=%H %P",
                 f"--grep=Merge pull request #{number} ").split("\n")
    for line in merges:
        parts = line.split()
        if len(parts) == 3:
            files = [f for f in git(repo_dir, "diff", "--name-only", base, parts[2]).split()
                     if not _TEST.search(f) and not _NOT_SOURCE.search(f)]
            if files:
                return git(repo_dir, "diff", base, parts[2], "--", *files)
    return None


def _hunks(patch: str) -> list[str]:
    """The changed lines and hunk ranges (git's section heading after ``@@`` differs
    between diff tools and versions, so it is left out)."""
    return [line.split(" @@")[0] if line.startswith("@@") else line
            for line in patch.splitlines()
            if line[:1] in "+-@" and not line.startswith(("+++", "---"))]


def reference_patches(ids: list[str], repos: Path, out: Path) -> tuple[Path, dict[str, str]]:
    """The reference patches this script can get, and where each came from."""
    cb = contextbench_patches()
    bases = base_commits()
    rows, source = [], {}
    # the rebuild is checked on an instance whose reference patch ContextBench holds
    check = "astropy__astropy-13579"
    rebuilt = rebuilt_patch(repos / "astropy__astropy", check, bases[check])
    if rebuilt is None or _hunks(rebuilt) != _hunks(cb[check]["patch"]):
        sys.exit(f"the rebuilt patch of {check} differs from ContextBench's: not used")
    for iid in ids:
        owner_name = iid.rsplit("-", 1)[0]
        repo = owner_name.replace("__", "/")
        if iid in cb:
            patch, src = cb[iid]["patch"], "ContextBench row"
        elif (repos / owner_name).exists() and iid in bases:
            patch = rebuilt_patch(repos / owner_name, iid, bases[iid])
            src = f"rebuilt from {repo} pull request #{iid.rsplit('-', 1)[1]}"
        else:
            continue
        if patch:
            rows.append({"instance_id": iid, "patch": patch, "repo": repo,
                         "base_commit": bases.get(iid) or cb[iid]["base_commit"]})
            source[iid] = src
    path = out / "reference_patches.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, source


def streameval(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "streameval", *args], cwd=ROOT).returncode


def gold_free(arms: dict[str, Path], resamples: int) -> str:
    """Tool calls, tokens and cost of every run, from its trace alone, compared."""
    from streameval.model import RunIdentity
    from streameval.report.arms import reduce_arm
    from streameval.report.compare import compare_arms
    from streameval.report.compare_text import format_terminal
    from streameval.report.fields import select_metrics
    from streameval.runs.reader import TraceReader
    from streameval.scoring.session import RunSession
    from streameval.scoring.snapshot import token_counts
    from streameval.traces.files import iter_lines, open_adapter

    metrics = select_metrics(["tool_calls", "tokens", "cost_usd"])
    reduced = []
    for arm, root in arms.items():
        records = []
        for trace in sorted(root.glob("*/*.traj.json")):
            iid = trace.parent.name
            fmt, adapter = open_adapter(trace, None)
            reader = TraceReader(adapter, lambda _i, _s, iid=iid, fmt=fmt: RunSession(
                RunIdentity(iid, iid), fmt=fmt))
            for line, n in iter_lines(trace):
                reader.feed_line(line, n)
            [session] = reader.close()[:1]
            snap = session.snapshot()
            records.append({"instance_id": iid, "num_steps": None,
                            "tool_calls": snap.tool_calls, "tokens": token_counts(snap.tokens),
                            "cost_usd": snap.cost_usd})
        reduced.append(reduce_arm(arm, records, metrics, curves=False))
    return format_terminal(compare_arms(reduced, metrics, flips=resamples))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mirrors", type=Path, help=f"default ${config.MIRRORS_ENV}")
    ap.add_argument("--repos", type=Path, help=f"default ${config.REPOS_ENV}")
    ap.add_argument("--resamples", type=int, default=10_000)
    args = ap.parse_args()
    args.mirrors = config.local_path(config.MIRRORS_ENV, args.mirrors)
    args.repos = config.local_path(config.REPOS_ENV, args.repos)
    if args.mirrors is None or args.repos is None:
        ap.error(f"give --mirrors DIR and --repos DIR, or set {config.MIRRORS_ENV} and "
                 f"{config.REPOS_ENV}")
    args.out.mkdir(parents=True, exist_ok=True)
    gem = trajectories(args.mirrors, GEMINI)
    ds = trajectories(args.mirrors, DEEPSEEK)
    ids = sorted(set(gem) & set(ds))
    print(f"instances run by both: {len(ids)}")
    arms = {"gemini-3-pro": extract(args.mirrors, GEMINI, gem, ids, "gemini-3-pro", args.out),
            "deepseek-chat": extract(args.mirrors, DEEPSEEK, ds, ids, "deepseek-chat", args.out)}

    print("\n== 1. gold-free, every pair: tool calls, tokens, cost (from the traces alone)\n")
    text = gold_free(arms, args.resamples)
    print(text)
    (args.out / "gold_free.txt").write_text(text)

    refs, sources = reference_patches(ids, args.repos, args.out)
    print("== 2. with gold from reference patches where the repository is mirrored\n")
    for iid, src in sorted(sources.items()):
        print(f"  {iid}: {src}")
    for arm, root in arms.items():
        streameval("replay", str(root), "--gold-from-patch", str(refs), "--repos",
                   str(args.repos), "--out", str(args.out / f"{arm}.jsonl"), "--quiet",
                   "--label", f"experiment={arm}")
    return streameval("compare", "--arm", f"gemini-3-pro={args.out / 'gemini-3-pro.jsonl'}",
                      "--arm", f"deepseek-chat={args.out / 'deepseek-chat.jsonl'}",
                      "--resamples", str(args.resamples),
                      "--json", str(args.out / "compare.json"),
                      "--markdown", str(args.out / "compare.md"),
                      "--html", str(args.out / "compare.html"))


if __name__ == "__main__":
    sys.exit(main())
