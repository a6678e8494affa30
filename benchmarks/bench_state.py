"""How the incremental state scales with the length of a run.

Replays synthetic traces of 1,000 and 10,000 steps over a few real-size Python files
(2,000-5,000 lines each, in a temporary git repository read through ``git cat-file``)
through ``state.InstanceState`` and prints steps per second for both. DESIGN.md promises
that a step costs what it adds, never the length of the run so far, so the 10,000-step
run must take about 10x the 1,000-step one; the script checks the ratio is at most 12.

It also times a recompute-every-step baseline at 1,000 steps: at every step t a fresh
``InstanceState`` is fed steps 1..t again (what a non-incremental evaluator does to get
a per-step curve), and prints the speedup of the incremental state over it.

    python benchmarks/bench_state.py [--seed N] [--baseline-steps N]

No pytest: wall-clock numbers belong here, not in tests.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

from streameval.model import Step
from streameval.scoring.state import InstanceState
from streameval.sources.gold import GoldInstance, GoldSpan
from streameval.sources.repo import GitRepo
from streameval.sources.symbols import SymbolIndex

FILE_LINES = {"pkg/core.py": 4800, "pkg/models.py": 3600, "pkg/views.py": 2400,
              "pkg/utils.py": 2000}


def python_file(n_lines: int, rng: random.Random, tag: str) -> str:
    """Classes of methods and top-level functions until ``n_lines`` lines."""
    out: list[str] = [f'"""Synthetic module {tag}."""', "", "import os", ""]
    k = 0
    while len(out) < n_lines - 12:
        k += 1
        if rng.random() < 0.3:
            out += ["", f"class Thing{k}:", f'    """Thing number {k}."""', ""]
            for m in range(rng.randint(2, 6)):
                out += [f"    def method_{m}(self, x):",
                        f"        y = x * {m + 1}",
                        "        if y > 10:",
                        "            return y - 1",
                        "        return y", ""]
        else:
            body = rng.randint(3, 12)
            out += ["", f"def function_{k}(a, b):"]
            out += [f"    a = a + {i}  # step {i}" for i in range(body)]
            out += ["    return a + b", ""]
    while len(out) < n_lines:
        out.append(f"# padding line {len(out) + 1}")
    return "\n".join(out[:n_lines]) + "\n"


def make_repo(root: Path, rng: random.Random) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, env=env,
                              capture_output=True, text=True).stdout.strip()

    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main")
    for path, n in FILE_LINES.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(python_file(n, rng, path))
        git("add", path)
    git("commit", "-q", "-m", "synthetic files")
    return git("rev-parse", "HEAD")


def make_gold(commit: str, rng: random.Random) -> GoldInstance:
    spans = []
    for path, n in FILE_LINES.items():
        for _ in range(3):
            a = rng.randint(1, n - 60)
            spans.append(GoldSpan(path, a, a + rng.randint(5, 60)))
    return GoldInstance("bench__synthetic-1", repo="bench/synthetic", base_commit=commit,
                        language="python", init_ctx=spans[::2], add_ctx=spans[1::2])


def make_steps(count: int, rng: random.Random) -> list[Step]:
    """Reads like an agent's: windows of 1-120 lines, some files listed, some grep hits."""
    paths = list(FILE_LINES)
    steps = []
    for _ in range(count):
        path = rng.choice(paths)
        n = FILE_LINES[path]
        kind = rng.random()
        if kind < 0.1:  # a listing: file level only
            steps.append(Step(files=tuple(rng.sample(paths, 2))))
        elif kind < 0.3:  # grep hits: a few single lines
            lines = sorted(rng.sample(range(1, n + 1), 4))
            steps.append(Step(files=(path,), spans={path: [(x, x) for x in lines]}))
        else:  # a read window
            a = rng.randint(1, n)
            steps.append(Step(files=(path,), spans={path: [(a, min(n, a + rng.randint(0, 120)))]}))
    return steps


def incremental(gold, view, symbols, steps: list[Step]) -> float:
    t0 = time.perf_counter()
    state = InstanceState(gold, view, symbols)
    for step in steps:
        state.add_step(step)
    state.record()
    return time.perf_counter() - t0


def recompute_every_step(gold, view, symbols, steps: list[Step]) -> float:
    t0 = time.perf_counter()
    for t in range(1, len(steps) + 1):
        state = InstanceState(gold, view, symbols)
        for step in steps[:t]:
            state.add_step(step)
        state.record()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--baseline-steps", type=int, default=1000)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    print(f"machine: {describe()}")
    with tempfile.TemporaryDirectory(prefix="streameval-bench-") as tmp:
        commit = make_repo(Path(tmp) / "repo", rng)
        repo = GitRepo(Path(tmp) / "repo")
        view = repo.at(commit)
        symbols = SymbolIndex()
        gold = make_gold(commit, rng)
        total = sum(FILE_LINES.values())
        print(f"repo: {len(FILE_LINES)} Python files, {total} lines; gold: "
              f"{len(gold.init_ctx)} init + {len(gold.add_ctx)} add spans")
        steps = make_steps(10_000, rng)
        incremental(gold, view, symbols, steps[:50])  # warm caches: file bytes, parse trees
        times = {}
        for n in (1_000, 10_000):
            times[n] = min(incremental(gold, view, symbols, steps[:n]) for _ in range(3))
            print(f"incremental {n:>6} steps: {times[n]:7.3f} s  ({n / times[n]:9.0f} steps/s)")
        ratio = times[10_000] / times[1_000]
        verdict = "linear (ok)" if ratio <= 12 else "NOT linear"
        print(f"time ratio 10,000 / 1,000 steps: {ratio:.2f}  (must be <= 12: {verdict})")
        n = args.baseline_steps
        base = recompute_every_step(gold, view, symbols, steps[:n])
        inc = min(incremental(gold, view, symbols, steps[:n]) for _ in range(3))
        print(f"recompute-every-step baseline {n} steps: {base:7.3f} s; incremental "
              f"{inc:.3f} s; speedup {base / inc:.0f}x")
        repo.close()
    return 0 if ratio <= 12 else 1


if __name__ == "__main__":
    sys.exit(main())
