"""500 real runs with their outcomes: Gemini 3 Pro's SWE-bench Verified trajectories
(mini-swe-agent 1.15) replayed with ``--outcomes`` and the gold that can be had.

Source: gruckion/mini-swe-agent, ``swebench_results/20251118_gemini-3-pro-74pct``: 500
trajectories, the official harness's ``logs/<instance>/report.json`` of each, and
``results_summary.json`` (371 resolved). The script:

1. extracts them from the local mirror (``git archive``) into ``OUT/src``, and puts each
   trajectory in ``OUT/runs/<instance>/``;
2. links the mirrored repositories into ``OUT/repos/<owner>__<name>`` (astropy, xarray,
   sphinx, seaborn, flask, requests, pylint, pytest, sympy are mirrored; django,
   matplotlib and scikit-learn are not: their runs keep gold-free signals only);
3. gathers the reference patches: the ContextBench rows where they hold the instance,
   else the pull request's source changes rebuilt from the upstream mirror from the
   instance's base commit (``compare_real.rebuilt_patch``: the PR's merge commit; for a
   repository that squashes its pull requests, the commit "... (#N)" whose parent's
   files are the base commit's), and checks the rebuild against every ContextBench
   reference patch of a mirrored repository, hunk for hunk;
4. replays all 500 with ``--gold`` (ContextBench, where it names the instance),
   ``--gold-from-patch`` (the rest), ``--repos`` and ``--outcomes OUT/src/.../logs``;
5. checks that every record carries ``resolved``, equal to ``results_summary.json``, and
   counts the runs by the gold they got (``OUT/summary.json``).

Reads local mirrors only (``--mirrors``, the ``fetch`` layout); never the network; nothing
it writes is committed; not run in CI.

    python benchmarks/outcomes_real.py OUT [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from compare_real import (
    _NOT_SOURCE,
    _TEST,
    CONTEXTBENCH,
    _hunks,
    base_commits,
    contextbench_patches,
    git,
)

from streameval import config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = ("gruckion+mini-swe-agent", "HEAD", "swebench_results/20251118_gemini-3-pro-74pct")
#: the repositories of SWE-bench Verified the fetch layout may hold
MIRRORED = ("astropy/astropy", "pydata/xarray", "sphinx-doc/sphinx", "mwaskom/seaborn",
            "pallets/flask", "psf/requests", "pylint-dev/pylint", "pytest-dev/pytest",
            "sympy/sympy", "django/django", "matplotlib/matplotlib",
            "scikit-learn/scikit-learn")


def extract(mirrors: Path, out: Path) -> tuple[Path, Path]:
    """The trajectories under ``OUT/runs/<id>/`` and the harness logs' folder."""
    name, rev, folder = SOURCE
    gitdir = mirrors / name / "repo"
    src = out / "src"
    if not (src / folder / "results_summary.json").is_file():
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "--git-dir", str(gitdir), "archive", rev, folder],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    runs = out / "runs"
    for traj in sorted((src / folder / "trajs").glob("*/*.traj.json")):
        dest = runs / traj.parent.name / traj.name
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.hardlink_to(traj)
    return runs, src / folder


def link_repos(mirrors: Path, out: Path) -> dict[str, bool]:
    """``OUT/repos/<owner>__<name>`` -> the mirror's git directory, where there is one."""
    repos = out / "repos"
    repos.mkdir(exist_ok=True)
    found = {}
    for repo in MIRRORED:
        gitdir = mirrors / repo.replace("/", "+") / "repo"
        link = repos / repo.replace("/", "__")
        found[repo] = gitdir.is_dir()
        if found[repo] and not link.exists():
            link.symlink_to(gitdir)
    return found


def squashed_patch(clone: Path, iid: str, base: str) -> str | None:
    """A squash-merged pull request's source changes: the one-parent commit whose subject
    ends ``(#N)``, when the files it changes are at its parent as at ``base`` (so its
    hunks are numbered as the base commit's lines)."""
    number = iid.rsplit("-", 1)[1]
    for line in git(clone, "log", "--all", "-F", f"--grep=(#{number})",
                    "--format=%H %P %s").splitlines():
        sha, parent, *subject = line.split()
        if " ".join(subject).endswith(f"(#{number})") and len(parent) == 40 and \
                not subject[0].startswith("Merge"):
            files = [f for f in git(clone, "diff", "--name-only", f"{sha}^", sha).split()
                     if not _TEST.search(f) and not _NOT_SOURCE.search(f)]
            if files and not git(clone, "diff", "--name-only", base, f"{sha}^", "--", *files):
                return git(clone, "diff", f"{sha}^", sha, "--", *files)
    return None


def merged_patch(clone: Path, iid: str, base: str) -> str | None:
    """A merged pull request's source changes from ``base``: the diff to the merge's
    second parent (the PR's head) of the files the PR's own commits changed (not what
    its branch took from elsewhere, such as another release branch's version bump)."""
    number = iid.rsplit("-", 1)[1]
    for line in git(clone, "log", "--all", "--format=%H %P",
                    f"--grep=Merge pull request #{number} ").splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        own = git(clone, "log", "--no-merges", "--format=", "--name-only",
                  f"{parts[1]}..{parts[2]}").split()
        files = sorted({f for f in own if not _TEST.search(f) and not _NOT_SOURCE.search(f)})
        if files:
            return git(clone, "diff", base, parts[2], "--", *files) or None
    return None


def rebuild(clone: Path, iid: str, base: str) -> str | None:
    return merged_patch(clone, iid, base) or squashed_patch(clone, iid, base)


def reference_patches(ids: list[str], repos: Path, out: Path) -> tuple[Path, dict[str, str]]:
    """The reference patches this script can get, and where each came from."""
    cb = contextbench_patches()
    bases = base_commits()
    rows, source = [], {}
    for iid in ids:
        owner_name = iid.rsplit("-", 1)[0]
        if iid in cb:
            patch, src = cb[iid]["patch"], "ContextBench row"
        elif (repos / owner_name).exists() and iid in bases:
            patch, src = rebuild(repos / owner_name, iid, bases[iid]), "rebuilt"
        else:
            continue
        if patch:
            rows.append({"instance_id": iid, "patch": patch,
                         "repo": owner_name.replace("__", "/"),
                         "base_commit": bases.get(iid) or cb[iid]["base_commit"]})
            source[iid] = src
    path = out / "reference_patches.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, source


def check_rebuild(repos: Path) -> list[str]:
    """Every ContextBench reference patch of a mirrored repository against the rebuild,
    hunk for hunk: the rebuild is used only where it reproduces every one it makes."""
    bases = base_commits()
    lines = []
    for iid, row in sorted(contextbench_patches().items()):
        clone = repos / iid.rsplit("-", 1)[0]
        if not clone.exists() or iid not in bases:
            continue
        rebuilt = rebuild(clone, iid, bases[iid])
        if rebuilt is None:
            lines.append(f"{iid}: not rebuilt (its reference patch is ContextBench's)")
            continue
        same = _hunks(rebuilt) == _hunks(row["patch"])
        lines.append(f"{iid}: rebuilt patch {'equals' if same else 'DIFFERS FROM'} "
                     "ContextBench's reference patch")
        if not same:
            sys.exit("\n".join(lines) + "\nthe rebuild does not reproduce the reference: stopped")
    return lines


def replay(runs: Path, refs: Path, repos: Path, logs: Path, out: Path, workers: int) -> int:
    cmd = [sys.executable, "-m", "streameval", "replay", str(runs), "--gold", str(CONTEXTBENCH),
           "--gold-from-patch", str(refs), "--repos", str(repos), "--outcomes", str(logs),
           "--out", str(out / "records.jsonl"), "--csv", str(out / "records.csv"),
           "--parquet", str(out / "records.parquet"), "--workers", str(workers)]
    print("$", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def check(out: Path, logs_root: Path) -> dict:
    """Records against ``results_summary.json``, and the gold each run got."""
    import pyarrow.parquet as pq

    summary = json.loads((logs_root / "results_summary.json").read_text())
    truth = {r["instance_id"]: r["resolved"] for r in summary["instances"]}
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    by_id = {r["instance_id"]: r for r in records}
    differ = sorted(i for i in truth if by_id.get(i, {}).get("resolved") is not truth[i])
    table = pq.read_table(out / "records.parquet").to_pylist()
    parquet_ok = sum(row["resolved"] is truth.get(row["instance_id"]) for row in table)
    kinds: Counter = Counter()
    by_repo: dict[str, Counter] = {}
    for r in records:
        kind = ("error: " + r["error"].split(":", 1)[0] if "error" in r else
                r["gold_missing"].split(":", 1)[0] if r.get("gold_missing") else
                f"gold: {r['gold_source']['kind']}")
        kinds[kind] += 1
        by_repo.setdefault(r.get("repo") or "?", Counter())[kind] += 1
    return {
        "records": len(records), "instances_in_summary": len(truth),
        "resolved_in_summary": sum(truth.values()),
        "resolved_in_records": sum(r.get("resolved") is True for r in records),
        "records_with_resolved": sum(isinstance(r.get("resolved"), bool) for r in records),
        "resolved_differs_from_summary": differ,
        "parquet_rows_equal_to_summary": parquet_ok,
        "gold": dict(sorted(kinds.items())),
        "gold_by_repo": {k: dict(sorted(v.items())) for k, v in sorted(by_repo.items())},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for the extracted runs and the records")
    ap.add_argument("--mirrors", type=Path, default=None,
                    help=f"the fetched mirrors (default ${config.MIRRORS_ENV}; "
                         'benchmarks/README.md "Folders")')
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    args.mirrors = config.local_path(config.MIRRORS_ENV, args.mirrors)
    if args.mirrors is None:
        ap.error(f"give --mirrors DIR or set {config.MIRRORS_ENV}")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    runs, logs_root = extract(args.mirrors, out)
    ids = sorted(p.name for p in runs.iterdir())
    print(f"{len(ids)} trajectories in {runs}")
    found = link_repos(args.mirrors, out)
    print("repositories mirrored: " + ", ".join(r for r, ok in found.items() if ok)
          + "; not: " + ", ".join(r for r, ok in found.items() if not ok))
    for line in check_rebuild(out / "repos"):
        print(line)
    refs, sources = reference_patches(ids, out / "repos", out)
    print(f"reference patches: {len(sources)} ("
          + ", ".join(f"{n} {k}" for k, n in Counter(sources.values()).items()) + f") in {refs}")
    code = replay(runs, refs, out / "repos", logs_root / "logs", out, args.workers)
    result = check(out, logs_root)
    result["replay_exit_code"] = code
    result["reference_patches"] = sources
    (out / "summary.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "reference_patches"}, indent=2))
    ok = (result["records_with_resolved"] == result["records"] == 500
          and not result["resolved_differs_from_summary"]
          and result["parquet_rows_equal_to_summary"] == 500)
    print("records carry resolved for all 500, equal to results_summary.json" if ok
          else "MISMATCH: see summary.json")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
