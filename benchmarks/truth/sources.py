"""Where runs come from: the mini-swe-agent corpus, and the project's real CLI runs.

- **corpus**: ``gruckion/mini-swe-agent``'s Gemini 3 Pro trajectories on SWE-bench
  Verified (a git directory, read with ``git show``), base commits from
  ``benchmarks/data/swebench_verified_base_commits.tsv``, repositories from a directory
  of mirrors (``<owner>+<name>/repo``, as ``fetch`` lays them out): the same as
  ``bench_reading.py``.
- **fixtures**: ``tests/fixtures/real/*/*streameval__scripted*``, the real CLI runs of
  ``tests/agents/scenario.py``'s plan; its repository is rebuilt with the scenario's own
  code (``make_setup``), and each trace is replayed at the directory the agent worked in
  (the trace's cwd, else found from the absolute paths its tools named).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from streameval.model import RunInfo, ToolCall, TraceEvent
from streameval.traces.files import iter_lines, open_adapter
from streameval.traces.formats.miniswe import MiniSweAdapter
from truth.runner import RunSpec
from truth.score import line_ranges

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"
CORPUS_GROUP = "mini-swe-agent 1.x (Gemini 3 Pro) / miniswe"


def base_commits() -> dict[str, str]:
    out = {}
    tsv = HERE.parent / "data" / "swebench_verified_base_commits.tsv"
    for line in tsv.read_text().splitlines():
        if line and not line.startswith("#"):
            iid, sha = line.split("\t")
            out[iid] = sha
    return out


def mirror_for(mirrors: Path, iid: str) -> Path | None:
    owner, rest = iid.split("__", 1)
    name = rest.rsplit("-", 1)[0]
    for cand in (mirrors / f"{owner}+{name}" / "repo",
                 *(p / "repo" for p in mirrors.glob(f"*+{name}"))):
        if cand.is_dir():
            return cand
    return None


def corpus_runs(corpus: Path, mirrors: Path, skipped: Counter[str],
                only: set[str] | None = None) -> Iterator[RunSpec]:
    """The corpus's trajectories whose repository and base commit are here."""
    commits = base_commits()
    names = subprocess.run(["git", "--git-dir", str(corpus), "ls-tree", "-r", "--name-only",
                            "HEAD", TRAJS], check=True, capture_output=True,
                           text=True).stdout.split()
    for name in sorted(n for n in names if n.endswith(".traj.json")):
        iid = Path(name).parent.name
        if only and iid not in only:
            continue
        mirror = mirror_for(mirrors, iid)
        repo_name = iid.split("__")[0] + "/" + iid.split("__", 1)[1].rsplit("-", 1)[0]
        if mirror is None:
            skipped[f"no mirror of {repo_name}"] += 1
            continue
        if iid not in commits:
            skipped["no base commit listed"] += 1
            continue
        if subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "-e",
                           commits[iid] + "^{commit}"], capture_output=True).returncode:
            skipped["base commit not in the mirror"] += 1
            continue
        data = subprocess.run(["git", "--git-dir", str(corpus), "show", f"HEAD:{name}"],
                              check=True, capture_output=True).stdout
        adapter = MiniSweAdapter()
        for lineno, line in enumerate(data.split(b"\n"), 1):
            adapter.feed(line, lineno)
        events = list(adapter.close())
        yield RunSpec(iid, CORPUS_GROUP, "miniswe", events, mirror, commits[iid], "/testbed")


def read_events(path: Path) -> tuple[str, list[TraceEvent]]:
    fmt, adapter = open_adapter(path)
    events: list[TraceEvent] = []
    for line, lineno in iter_lines(path):
        if line is not None:
            events.extend(adapter.feed(line, lineno) or [])
    events.extend(adapter.close())
    return fmt, events


def fixture_runs(work: Path, pattern: str = "*streameval__scripted*") -> Iterator[RunSpec]:
    """The scripted real CLI runs, each against the scenario's repository."""
    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "tests" / "agents"))
    from scenario import make_setup  # the scenario's own code builds its repository

    setup = make_setup(work)
    files = [p for p in sorted((REPO / "tests" / "fixtures" / "real").glob(f"*/{pattern}"))]
    tree = set(subprocess.run(["git", "-C", str(setup.repo), "ls-files"], check=True,
                              capture_output=True, text=True).stdout.split())
    for path in files:
        fmt, events = read_events(path)
        if not any(isinstance(e, ToolCall) for e in events):
            continue
        label = path.name.split("scripted-")[-1].removesuffix(".jsonl").removesuffix(".json")
        group = f"{path.parent.name}: {label.removesuffix('.traj')} ({fmt})"
        yield RunSpec(path.name, group, fmt, events, setup.repo / ".git", setup.sha,
                      root_of(events, tree))


#: the agent each scripted fixture's name starts with (``scenario.expected_for``)
_AGENTS = {"claude": "claude-code", "codex": "codex", "mini-swe-agent": "mini-swe-agent",
           "openhands-sdk": "openhands-sdk"}


def scenario_expected(run_name: str) -> list[dict[str, set[int]]]:
    """``tests/agents/scenario.py``'s hand-made truth, in plan order, for the calls that
    showed lines (the scripted runs follow that plan), as the run's agent showed them."""
    from scenario import expected_for

    agent = next((a for prefix, a in _AGENTS.items() if run_name.startswith(prefix)), "")
    return [v for v in expected_for(agent).values() if v]


def agreement(records: list[dict], expected: list[dict[str, set[int]]]) -> list[dict]:
    """The harness's truth beside the scenario's, call by call, in order: the calls that
    showed lines (reads, and an edit whose result printed a snippet of the file)."""
    reads = [r for r in records if r["kind"] in ("shell", "read", "edit") and r.get("truth")]
    out = []
    for r, exp in zip(reads, expected):
        want = {p: line_ranges(sorted(ns)) for p, ns in exp.items()}
        out.append({"call": r["call"], "command": r["command"][:80], "harness": r["truth"],
                    "scenario": want, "agree": r["truth"] == want})
    return out


def root_of(events: list[TraceEvent], tree: set[str]) -> str:
    """The agent's working directory: the trace's cwd, else the most common call cwd,
    else the prefix of an absolute path a tool named that ends in a repository file."""
    for e in events:
        if isinstance(e, RunInfo) and e.cwd:
            return e.cwd.rstrip("/") or "/"
    cwds = Counter(e.cwd for e in events if isinstance(e, ToolCall) and e.cwd)
    if cwds:
        return cwds.most_common(1)[0][0].rstrip("/")
    for e in events:
        if not isinstance(e, ToolCall) or not isinstance(e.input, dict):
            continue
        for key in ("file_path", "path"):
            p = e.input.get(key)
            if isinstance(p, str) and p.startswith("/"):
                for f in tree:
                    if p.endswith("/" + f):
                        return p[:-len(f) - 1]
    return "/testbed"
