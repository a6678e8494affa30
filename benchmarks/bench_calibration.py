"""Is ``streameval compare`` calibrated? Simulated comparisons with a known truth.

    python benchmarks/bench_calibration.py [--datasets 300] [--old-datasets 300] [--json OUT]

Two arms run on the same instances; the paired difference d of one metric is
``delta + u_repo + e_instance`` with normal parts: ``u`` is shared by a repository's pairs
(its share of the variance is the ICC) and ``e`` is the pair's own. The sd of d is 0.25
(a line-F1 difference between two agents is about that). Repository sizes are equal,
or skewed: from 40 to 300 pairs, spaced geometrically (the largest holds 88% of the pairs
at 2 repositories, 18% at 12); equal sizes have the skewed sizes' mean.

For every cell (repositories, sizes, ICC, delta) and method the script reports
- coverage: the share of 95% intervals that hold delta;
- rejections: the share of p < 0.05 (under delta = 0 the false-positive rate, else power);
- gate: the share of ``--fail-if-worse METRIC`` failures (margin 0, nominal 2.5% under
  delta = 0: the one-sided test of "B is worse");
- width: the mean width of the interval.

The old method is f53415f's ``streameval compare`` itself (its tree exported from git
into a temporary directory, run in a worker process on records files it writes: the
command's own code path). Not run in CI; the figures go in docs/compare.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OLD_COMMIT = "f53415f"
#: the sd of one pair's difference
SD = 0.25
REPOSITORIES = (2, 3, 5, 8, 12, 30)
ICCS = (0.0, 0.2, 0.5)
DELTA = 0.05


@dataclass(frozen=True)
class Cell:
    repos: int
    sizes: str          # "equal" | "skewed"
    icc: float
    delta: float

    def label(self) -> str:
        return f"{self.repos} {self.sizes} icc={self.icc:g} delta={self.delta:g}"


def repo_sizes(repos: int, kind: str) -> np.ndarray:
    """Pairs per repository: skewed from 40 to 300, geometric; equal at their mean."""
    skewed = np.round(40 * (300 / 40) ** (np.arange(repos) / (repos - 1))).astype(int)[::-1]
    if kind == "skewed":
        return skewed
    return np.full(repos, int(round(skewed.mean())))


def simulate(cell: Cell, datasets: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pairs x datasets) differences and baseline values, and each pair's repository."""
    n = repo_sizes(cell.repos, cell.sizes)
    idx = np.repeat(np.arange(cell.repos), n)
    rng = np.random.default_rng([seed, cell.repos, cell.sizes == "skewed",
                                 int(cell.icc * 100), int(cell.delta * 1000)])
    u = rng.normal(0, SD * np.sqrt(cell.icc), (cell.repos, datasets))
    e = rng.normal(0, SD * np.sqrt(1 - cell.icc), (len(idx), datasets))
    d = cell.delta + u[idx] + e
    a = rng.uniform(0.2, 0.8, d.shape)
    return d, a, idx


# --------------------------------------------------------------------------- the command


def records(values: np.ndarray, idx: np.ndarray) -> list[dict]:
    """One scored record per pair: line F1 is the value, the repository is named."""
    return [{"instance_id": f"repo{j}__x-{i}", "repo": f"o/repo{j}", "num_steps": 1,
             "final": {"line": {"coverage": 0.0, "precision": 0.0, "f1": float(v)}}}
            for i, (j, v) in enumerate(zip(idx.tolist(), values.tolist()))]


def run_command(cells: list[dict], resamples: int) -> list[dict]:
    """Each dataset through ``streameval compare`` (whichever tree is imported): records
    files written, ``main`` called with ``--json`` and ``--fail-if-worse line.f1``."""
    import orjson

    from streameval.commands.main import main

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        fa, fb, fj = (Path(tmp) / x for x in ("a.jsonl", "b.jsonl", "c.json"))
        for spec in cells:
            cell = Cell(**spec["cell"])
            d, a, idx = simulate(cell, spec["datasets"], spec["seed"])
            rows = []
            for r in range(d.shape[1]):
                for path, v in ((fa, a[:, r]), (fb, a[:, r] + d[:, r])):
                    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in records(v, idx)))
                code = main(["compare", "--arm", f"A={fa}", "--arm", f"B={fb}", "--quiet",
                             "--metrics", "line.f1", "--resamples", str(resamples),
                             "--seed", str(r), "--json", str(fj), "--fail-if-worse", "line.f1"])
                m = orjson.loads(fj.read_bytes())["comparisons"][0]["metrics"][0]
                rows.append((m["low"], m["high"], m["p"], code == 1, m["trusted"]))
            out.append({"cell": spec["cell"], "rows": rows})
    return out


def old_command(cells: list[Cell], datasets: int, seed: int, resamples: int) -> list[dict]:
    """``run_command`` under f53415f's tree, exported from git into a temporary directory
    and imported first in a worker process."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", OLD_COMMIT, "streameval"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": tmp}
        spec = json.dumps({"resamples": resamples, "cells": [
            {"cell": c.__dict__, "datasets": datasets, "seed": seed} for c in cells]})
        proc = subprocess.run([sys.executable, __file__, "--worker"], input=spec, env=env,
                              cwd=tmp, check=True, capture_output=True, text=True)
    return json.loads(proc.stdout)


def worker() -> None:
    import streameval

    spec = json.loads(sys.stdin.read())
    sys.stderr.write(f"worker: streameval from {streameval.__file__}\n")
    json.dump(run_command(spec["cells"], spec["resamples"]), sys.stdout)


def summarise(cell: Cell, rows: list) -> dict:
    low = np.array([np.nan if r[0] is None else r[0] for r in rows], dtype=float)
    high = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float)
    p = np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=float)
    return {"coverage": float(np.mean((low <= cell.delta) & (cell.delta <= high))),
            "reject": float(np.mean(p < 0.05)),
            "gate": float(np.mean([r[3] for r in rows])),
            "width": float(np.nanmean(high - low)) if np.isfinite(high - low).any() else None,
            "trusted": float(np.mean([bool(r[4]) for r in rows])),
            "datasets": len(rows)}


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--old-datasets", type=int, default=300)
    ap.add_argument("--old-resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.worker:
        worker()
        return 0
    cells = [Cell(c, "skewed", 0.2, 0.0) for c in REPOSITORIES] + [Cell(12, "skewed", 0.2, DELTA)]
    t = time.perf_counter()
    old = old_command(cells, args.old_datasets, args.seed, args.old_resamples)
    print(f"old method ({OLD_COMMIT}, {args.old_datasets} datasets per row, "
          f"{args.old_resamples} resamples): {time.perf_counter() - t:.0f} s")
    print("| repositories | delta | coverage | p < 0.05 | gate fails | width | trusted |")
    print("|---|---|---|---|---|---|---|")
    result = []
    for c, o in zip(cells, old):
        s = summarise(c, o["rows"])
        result.append({"cell": c.__dict__, "old": s})
        print(f"| {c.repos} | {c.delta:g} | {pct(s['coverage'])} | {pct(s['reject'])} | "
              f"{pct(s['gate'])} | {s['width']:.3f} | {pct(s['trusted'])} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
